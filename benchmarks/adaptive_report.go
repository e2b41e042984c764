package main

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// runLoadPlan runs scenario p: each run of its plan once, one after
// another, by runOne, which the parent gives a child process per run (see
// loadChild), quiet, and which gives up after timeout. The plan has the
// fixed sizes if the run has the pool ours, the adaptive runs if it has
// ours+adaptive.
func (r *run) runLoadPlan(runOne func(l loadRun, timeout time.Duration) (result, error)) {
	r.loads = map[loadRun]result{}
	for _, l := range loadPlan(r.has("ours"), r.has("ours+adaptive")) {
		t := l.times(r.scale)
		timeout := max(r.timeout, 2*(t.warmUp+t.span+t.grace)+time.Minute)
		res, err := runOne(l, timeout)
		if err == nil && res.Load == nil {
			err = fmt.Errorf("%s: no measurement in the child's output", l.spec())
		}
		if err != nil {
			r.failures = append(r.failures, err.Error())
			fmt.Fprintln(os.Stderr, "FAIL", err)
			continue
		}
		r.loads[l] = res
		fmt.Fprintf(os.Stderr, "p   %-30s %8.0f tasks/s over %s\n", l.spec(), float64(res.Tasks)/t.span.Seconds(), fmtSec(t.span))
	}
}

// loadChild runs l in a child process of exe, quiet.
func (r *run) loadChild(exe string) func(loadRun, time.Duration) (result, error) {
	return func(l loadRun, timeout time.Duration) (result, error) {
		return r.childSpec(exe, l.spec(), false, timeout)
	}
}

// rates is the throughput of each window, tasks per second.
func (l *loadResult) rates() []float64 {
	v := make([]float64, len(l.Done))
	for i, d := range l.Done {
		v[i] = float64(d) / l.Window.Seconds()
	}
	return v
}

// rate is the mean throughput of windows [from, to), tasks per second.
func (l *loadResult) rate(from, to int) float64 {
	to = min(to, len(l.Done))
	if from >= to {
		return math.NaN()
	}
	n := 0
	for _, d := range l.Done[from:to] {
		n += d
	}
	return float64(n) / (l.Window.Seconds() * float64(to-from))
}

// sizes are the size samples taken in windows [from, to).
func (l *loadResult) sizes(from, to int) []int {
	return l.Sizes[min(from*samplesPerWindow, len(l.Sizes)):min(to*samplesPerWindow, len(l.Sizes))]
}

// sizeStats are the mean and the standard deviation of the size samples
// in windows [from, to).
func (l *loadResult) sizeStats(from, to int) (mean, std float64) {
	s := l.sizes(from, to)
	if len(s) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, v := range s {
		mean += float64(v)
	}
	mean /= float64(len(s))
	for _, v := range s {
		std += (float64(v) - mean) * (float64(v) - mean)
	}
	return mean, math.Sqrt(std / float64(len(s)))
}

// reasons counts the SizeReasons of the samples in windows [from, to), as
// "climb 12, hold 30", the reasons in order of first sight.
func (l *loadResult) reasons(from, to int) string {
	rs := l.Reasons[min(from*samplesPerWindow, len(l.Reasons)):min(to*samplesPerWindow, len(l.Reasons))]
	count := map[string]int{}
	var order []string
	for _, reason := range rs {
		if reason == "" {
			reason = `""`
		}
		if count[reason] == 0 {
			order = append(order, reason)
		}
		count[reason]++
	}
	out := make([]string, len(order))
	for i, reason := range order {
		out[i] = fmt.Sprintf("%s %d", reason, count[reason])
	}
	return strings.Join(out, ", ")
}

// staysFrom is the first of rates from which every one is at least limit,
// or -1 if the last is below it.
func staysFrom(rates []float64, limit float64) int {
	i := len(rates)
	for i > 0 && rates[i-1] >= limit {
		i--
	}
	if i == len(rates) {
		return -1
	}
	return i
}

// below counts the rates under limit.
func below(rates []float64, limit float64) int {
	n := 0
	for _, x := range rates {
		if x < limit {
			n++
		}
	}
	return n
}

// A fixedBest is the best fixed size backlogged at some C: the highest
// throughput of the sweep (the smaller size on a tie).
type fixedBest struct {
	workers int
	rate    float64
	latency latency
}

func (r *run) bestFixed(slots int) (fixedBest, bool) {
	var best fixedBest
	for _, w := range loadSweep {
		res, ok := r.loads[loadRun{part: partSweep, slots: slots, workers: w}]
		if !ok {
			continue
		}
		if x := res.Load.rate(0, len(res.Load.Done)); x > best.rate {
			best = fixedBest{w, x, res.Load.Latency[0]}
		}
	}
	return best, best.workers > 0
}

// adaptiveRun is the halving run's result, if it ran.
func (r *run) adaptiveRun() (*loadResult, bool) {
	res, ok := r.loads[loadRun{part: partHalve, slots: loadSlots, workers: adaptiveMin, adaptive: true}]
	if !ok {
		return nil, false
	}
	return res.Load, true
}

// openRuns are the open loop's runs that ran: the fixed sizes, then the
// adaptive pool.
func (r *run) openRuns() []loadRun {
	var runs []loadRun
	for _, w := range openSizes {
		runs = append(runs, loadRun{part: partOpen, slots: loadSlots, workers: w})
	}
	runs = append(runs, loadRun{part: partOpen, slots: loadSlots, workers: openAdaptiveStart, adaptive: true})
	return slices.DeleteFunc(runs, func(l loadRun) bool { _, ok := r.loads[l]; return !ok })
}

// bestOpen is the fixed size with the lowest steady-state p99 in the open
// loop.
func (r *run) bestOpen() (loadRun, latency, bool) {
	var best loadRun
	var lat latency
	for _, l := range r.openRuns() {
		if l.adaptive {
			continue
		}
		if s := r.loads[l].Load.Latency[0]; best.workers == 0 || s.P99 < lat.P99 {
			best, lat = l, s
		}
	}
	return best, lat, best.workers > 0
}

func fmtSec(d time.Duration) string { return fmt.Sprintf("%g s", d.Seconds()) }
func fmtMs(d time.Duration) string  { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

// fmtP99 is a latency's p99 in ms, "≥" before it when some of the span's
// tasks had not finished (their latency counted until the pool stopped).
func fmtP99(l latency) string {
	if l.Unfinished > 0 {
		return "≥ " + fmtMs(l.P99)
	}
	return fmtMs(l.P99)
}

// writeLoad writes scenario p's section.
func (r *run) writeLoad(p *printer) {
	w := loadRun{part: partHalve}.times(r.scale).window
	capacity := float64(loadSlots) / loadServe.Seconds()
	p.f("## p: the pool finds its own size (WithAdaptiveSize)\n\n")
	p.f("A synthetic downstream ([service.go](service.go)) serves calls in C = %d slots for S = %d ms each, first come first served beyond C; "+
		"while more than 2C calls are in it (waiting and served), a call that gets a slot is served for S × (1 + (inflight − 2C)/C). "+
		"Its capacity, C/S = %.0f calls/s, is reached by every fixed size from C to 2C; beyond 2C throughput falls (at 128 workers to 1/7 of it). "+
		"The adaptive pool, `ours+adaptive`, starts at one worker: `New(%d, WithAdaptiveSize(%d, %d))` (in the open loop at max, see there); the fixed sizes are `ours`, `New(size)`. "+
		"Each run ran once, quiet, in a process of its own; throughput is counted in windows of %s, and the adaptive size (`Status().MaxWorkers`, with `SizeReason`) sampled every %s.",
		loadSlots, loadServe.Milliseconds(), capacity, adaptiveMin, adaptiveMin, adaptiveMax, fmtSec(w), fmtSec(w/samplesPerWindow))
	if r.scale != 1 {
		p.f(" **Scale %g**: every duration here is %g times its full length (the targets' too); S and the pool's own clock are not scaled, so the adaptive numbers say little below scale 1.", r.scale, r.scale)
	}
	p.f("\n\n")
	r.writeLoadTargets(p, w)
	r.writeBacklogged(p, w)
	r.writeHalved(p, w)
	r.writeOpen(p)
}

// writeLoadTargets checks the adaptive pool against the targets of issue
// 38, where the run has the numbers.
func (r *run) writeLoadTargets(p *printer, w time.Duration) {
	p.f("### Targets\n\n| target | limit | measured | met |\n|---|---|---|---|\n")
	row := func(what, limit, measured string, met bool) {
		m := "yes"
		if !met {
			m = "**no**"
		}
		p.f("| %s | %s | %s | %s |\n", what, limit, measured, m)
	}
	missing := func(what, limit, why string) { p.f("| %s | %s | – (%s) | – |\n", what, limit, why) }
	within := time.Duration(reachWithin) * w
	a, okA := r.adaptiveRun()
	best, okB := r.bestFixed(loadSlots)
	halvedBest, okH := r.bestFixed(loadSlots / 2)
	const reach = "backlogged: throughput reaches ≥ 0.9x the best fixed size's and stays"
	switch {
	case !okA || !okB:
		missing(reach, "within "+fmtSec(within), "needs ours and ours+adaptive")
	default:
		rates := a.rates()[:halfSpan]
		at := staysFrom(rates, 0.9*best.rate)
		if at < 0 {
			row(reach, "within "+fmtSec(within), "not by the end of "+fmtSec(halfSpan*w), false)
		} else {
			row(reach, "within "+fmtSec(within), fmtSec(time.Duration(at)*w), at <= reachWithin)
		}
		x := float64(a.Latency[0].P99) / float64(best.latency.P99)
		row("backlogged: p99 latency in steady state vs the best fixed size's", "≤ 1.50x",
			fmt.Sprintf("%s (%s / %s ms)", fmtRatio(x), fmtMs(a.Latency[0].P99), fmtMs(best.latency.P99)), x <= 1.5)
	}
	if okA {
		mean, std := a.sizeStats(halfSpan-steadySpan, halfSpan)
		row("backlogged: size std / mean in steady state", "≤ 10%", fmt.Sprintf("%.1f%% (mean %.1f, std %.2f)", 100*std/mean, mean, std), std <= 0.1*mean)
	} else {
		missing("backlogged: size std / mean in steady state", "≤ 10%", "needs ours+adaptive")
	}
	const back = "C halved: back at ≥ 0.9x the new best fixed size's, and stays, after the halving"
	switch {
	case !okA || !okH:
		missing(back, "within "+fmtSec(within), "needs ours and ours+adaptive")
	default:
		at := staysFrom(a.rates()[halfSpan:], 0.9*halvedBest.rate)
		if at < 0 {
			row(back, "within "+fmtSec(within), "not by the end of "+fmtSec(halfSpan*w), false)
		} else {
			row(back, "within "+fmtSec(within), fmtSec(time.Duration(at)*w), at <= reachWithin)
		}
	}
	open, okO := r.loads[loadRun{part: partOpen, slots: loadSlots, workers: openAdaptiveStart, adaptive: true}]
	bestOpen, bestLat, okF := r.bestOpen()
	const openP99 = "open loop at 70%: p99 latency vs the best fixed size's"
	if okO && okF {
		lat := open.Load.Latency[0]
		x := float64(lat.P99) / float64(bestLat.P99)
		row(openP99, "≤ 1.20x", fmt.Sprintf("%s (%s / %s ms, best fixed %d)", fmtRatio(x), fmtP99(lat), fmtMs(bestLat.P99), bestOpen.workers), x <= 1.2)
	} else {
		missing(openP99, "≤ 1.20x", "needs ours and ours+adaptive")
	}
	const openSize = "open loop at 70%: mean size in steady state"
	if okO {
		mean, _ := open.Load.sizeStats(openSpan-steadySpan, openSpan)
		row(openSize, fmt.Sprintf("≤ %d (max/2)", adaptiveMax/2), fmt.Sprintf("%.1f", mean), mean <= adaptiveMax/2)
	} else {
		missing(openSize, fmt.Sprintf("≤ %d (max/2)", adaptiveMax/2), "needs ours+adaptive")
	}
	p.f("\nSteady state is the last %s of each %s half of the backlogged run, and the last %s of the open loop. "+
		"\"Reaches and stays\": from the start of the first window after which no window falls below 0.9x; a probe that dips below in a later window moves it on. "+
		"Scenario a's `ours+adaptive` against `ours` (the cost of the adaptive size) is in the targets of the full report, when it runs a.\n\n",
		fmtSec(steadySpan*w), fmtSec(halfSpan*w), fmtSec(steadySpan*w))
}

// writeSweep writes the fixed sizes' table at C = slots.
func (r *run) writeSweep(p *printer, slots int, w time.Duration) {
	best, ok := r.bestFixed(slots)
	if !ok {
		p.f("No fixed sizes ran (the pool `ours` was not in -pools).\n\n")
		return
	}
	capacity := float64(slots) / loadServe.Seconds()
	p.f("Fixed sizes at C = %d (capacity %.0f calls/s), each in a process of its own: a warm-up of %s, then %s measured.\n\n", slots, capacity, fmtSec(sweepWarmUp*w), fmtSec(sweepSpan*w))
	p.f("| size | tasks/s | x C/S | p50 ms | p99 ms |\n|---:|---:|---:|---:|---:|\n")
	for _, size := range loadSweep {
		res, ok := r.loads[loadRun{part: partSweep, slots: slots, workers: size}]
		if !ok {
			p.f("| %d | failed | | | |\n", size)
			continue
		}
		name := fmt.Sprint(size)
		if size == best.workers {
			name = fmt.Sprintf("**%d** (best)", size)
		}
		x := res.Load.rate(0, len(res.Load.Done))
		p.f("| %s | %.0f | %.2f | %s | %s |\n", name, x, x/capacity, fmtMs(res.Load.Latency[0].P50), fmtMs(res.Load.Latency[0].P99))
	}
	p.f("\n")
}

// writeBacklogged writes the backlogged half of scenario p.
func (r *run) writeBacklogged(p *printer, w time.Duration) {
	p.f("### Backlogged: %d clients, each submitting a call and waiting for it (DoWait), again and again\n\n", loadClients)
	p.f("A task's latency runs from its submit until DoWait returned; it counts in the window in which it returned.\n\n")
	r.writeSweep(p, loadSlots, w)
	a, ok := r.adaptiveRun()
	if !ok {
		p.f("The adaptive pool did not run (`ours+adaptive` was not in -pools, or its run failed).\n\n")
		return
	}
	p.f("The adaptive pool: the first %s of the halving run below (C = %d throughout).\n\n", fmtSec(halfSpan*w), loadSlots)
	r.writeAdaptiveHalf(p, a, 0, loadSlots, w)
}

// writeAdaptiveHalf writes what the adaptive pool did in one half of the
// halving run (half 0 at C, half 1 after the halving), against the best
// fixed size at slots.
func (r *run) writeAdaptiveHalf(p *printer, a *loadResult, half, slots int, w time.Duration) {
	from, to := half*halfSpan, (half+1)*halfSpan
	steady := to - steadySpan
	rates := a.rates()[from:to]
	x := a.rate(steady, to)
	mean, std := a.sizeStats(steady, to)
	lat := a.Latency[half]
	p.f("- steady state (%s to %s): %.0f tasks/s, p50 %s ms, p99 %s ms; size mean %.1f, std %.2f (%.1f%% of the mean)\n",
		fmtSec(time.Duration(steady)*w), fmtSec(time.Duration(to)*w), x, fmtMs(lat.P50), fmtMs(lat.P99), mean, std, 100*std/mean)
	if best, ok := r.bestFixed(slots); ok {
		limit := 0.9 * best.rate
		reached := "never stays there"
		if at := staysFrom(rates, limit); at >= 0 {
			reached = "reaches it and stays from " + fmtSec(time.Duration(at)*w)
			if half > 0 {
				reached += " after the halving"
			}
		}
		p.f("- against the best fixed size at C = %d (%d: %.0f tasks/s, p99 %s ms): throughput %s, p99 %s; 0.9x its throughput is %.0f tasks/s: the adaptive pool %s; %d of the half's %d windows are below it, %d of the steady state's %d\n",
			slots, best.workers, best.rate, fmtMs(best.latency.P99), fmtRatio(x/best.rate), fmtRatio(float64(lat.P99)/float64(best.latency.P99)),
			limit, reached, below(rates, limit), len(rates), below(a.rates()[steady:to], limit), steadySpan)
	}
	p.f("- SizeReason of the half's %d samples: %s\n\n", (to-from)*samplesPerWindow, a.reasons(from, to))
}

// writeHalved writes the halving half of scenario p and the run's windows.
func (r *run) writeHalved(p *printer, w time.Duration) {
	p.f("### C halved mid-run: %d clients as above; at %s the service's slots go from %d to %d\n\n", loadClients, fmtSec(halfSpan*w), loadSlots, loadSlots/2)
	r.writeSweep(p, loadSlots/2, w)
	a, ok := r.adaptiveRun()
	if !ok {
		return
	}
	p.f("The adaptive pool after the halving (%s to %s):\n\n", fmtSec(halfSpan*w), fmtSec(2*halfSpan*w))
	r.writeAdaptiveHalf(p, a, 1, loadSlots/2, w)
	p.f("The whole run, window by window (\"x best\": against the best fixed size at the C of the time):\n\n")
	p.f("| from | C | tasks/s | x best | size mean | size min–max | SizeReason (samples) |\n|---:|---:|---:|---:|---:|---:|---|\n")
	rates := a.rates()
	for i, x := range rates {
		slots := loadSlots
		if i >= halfSpan {
			slots = loadSlots / 2
		}
		ratio := "–"
		if best, ok := r.bestFixed(slots); ok {
			ratio = fmtRatio(x / best.rate)
		}
		mean, _ := a.sizeStats(i, i+1)
		sizes := a.sizes(i, i+1)
		span := "–"
		if len(sizes) > 0 {
			span = fmt.Sprintf("%d–%d", slices.Min(sizes), slices.Max(sizes))
		}
		p.f("| %s | %d | %.0f | %s | %.1f | %s | %s |\n", fmtSec(time.Duration(i)*w), slots, x, ratio, mean, span, a.reasons(i, i+1))
	}
	p.f("\n")
}

// writeOpen writes the open loop of scenario p.
func (r *run) writeOpen(p *printer) {
	t := loadRun{part: partOpen}.times(r.scale)
	rate := loadOpenRate * float64(loadSlots) / loadServe.Seconds()
	p.f("### Open loop at %.0f%% of C/S: %.0f arrivals/s, Poisson (seed %d, the same arrivals for every pool), each a Submit whose task calls the service\n\n", 100*loadOpenRate, rate, loadSeed)
	p.f("%s of arrivals; a task's latency runs from its submit until it finished and counts in the window in which it arrived. "+
		"After the last arrival the pool has %s to finish, then stops: a task still unfinished counts until then, and its span's p99 reads ≥. "+
		"Steady state is %s to %s. The submitter sleeps until each arrival is due; its lag is how late it submitted (a late submitter gives the arrivals due meanwhile in a burst). "+
		"Beyond about 2.4C calls in the service its throughput falls below the arrivals', so a pool that lets that many in can tip into overload after a burst and not come back: "+
		"the fixed size 128 can, 32 cannot, and whether 128 does in a run depends on that run's bursts. "+
		"The adaptive pool starts at max here: the question is whether it finds a size far below max. Started at 1 it would climb as in the backlogged run, "+
		"and the arrivals queued meanwhile (some 2,700 in its first 5 s) would take seconds to drain, into the steady state's tail.\n\n",
		fmtSec(t.span), fmtSec(t.grace), fmtSec(t.steady[0][0]), fmtSec(t.steady[0][1]))
	runs := r.openRuns()
	if len(runs) == 0 {
		p.f("Nothing ran.\n\n")
		return
	}
	p.f("| pool | size mean (steady) | p50 ms (steady) | p99 ms (steady) | p99 ms (all) | unfinished | submit lag p99 / max ms |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, l := range runs {
		res := r.loads[l].Load
		name := fmt.Sprintf("ours, %d", l.workers)
		if l.adaptive {
			name = fmt.Sprintf("ours+adaptive, New(%d, WithAdaptiveSize(%d, %d))", l.workers, adaptiveMin, adaptiveMax)
		}
		mean, _ := res.sizeStats(openSpan-steadySpan, openSpan)
		steady, all := res.Latency[0], res.Latency[1]
		p.f("| %s | %.1f | %s | %s | %s | %d | %s / %s |\n", name, mean, fmtMs(steady.P50), fmtP99(steady), fmtP99(all), all.Unfinished, fmtMs(res.LagP99), fmtMs(res.LagMax))
	}
	p.f("\n")
	if res, ok := r.loads[loadRun{part: partOpen, slots: loadSlots, workers: openAdaptiveStart, adaptive: true}]; ok {
		p.f("SizeReason of the adaptive pool's %d samples: %s.\n\n", len(res.Load.Reasons), res.Load.reasons(0, openSpan))
	}
}
