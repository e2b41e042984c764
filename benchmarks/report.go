package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A summary is what the report shows of one scenario and library: medians
// over the repetitions, per task.
type summary struct {
	runs          int
	tasks         int     // of the first run (every run of a scenario has as many)
	ns            float64 // wall time per task
	nsMin, nsMax  float64
	cpu           float64 // process CPU time per task
	allocs, bytes float64
	p50, p99      float64 // f and h: round trips; o: the trickling tenants' waits
	queued        float64 // g only: live heap bytes per queued task
	goroutines    float64 // n only: goroutines once the last task was submitted
	stacks        float64 // n only: their stack bytes
}

func summarize(rs []result) (summary, bool) {
	if len(rs) == 0 {
		return summary{}, false
	}
	per := func(f func(result) float64) []float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r) / float64(r.Tasks)
		}
		return v
	}
	ns := per(func(r result) float64 { return r.Wall })
	return summary{
		runs:       len(rs),
		tasks:      rs[0].Tasks,
		ns:         median(ns),
		nsMin:      slices.Min(ns),
		nsMax:      slices.Max(ns),
		cpu:        median(per(func(r result) float64 { return r.CPU })),
		allocs:     median(per(func(r result) float64 { return r.Mallocs })),
		bytes:      median(per(func(r result) float64 { return r.Bytes })),
		p50:        median(field(rs, func(r result) float64 { return r.P50 })),
		p99:        median(field(rs, func(r result) float64 { return r.P99 })),
		queued:     median(field(rs, func(r result) float64 { return r.Queued })),
		goroutines: median(field(rs, func(r result) float64 { return r.Goroutines })),
		stacks:     median(field(rs, func(r result) float64 { return r.Stacks })),
	}, true
}

func field(rs []result, f func(result) float64) []float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	return v
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// has reports whether the run includes the library called name.
func (r *run) has(name string) bool {
	return slices.ContainsFunc(r.libraries, func(l library) bool { return l.name == name })
}

func (r *run) summary(sid, lib string) (summary, bool) {
	return summarize(r.samples[sid][lib])
}

// unordered is the summary of lib's unordered runs in scenario sid (q:
// each run's Unordered), if it has any.
func (r *run) unordered(sid, lib string) (summary, bool) {
	var rs []result
	for _, res := range r.samples[sid][lib] {
		if res.Unordered != nil {
			rs = append(rs, *res.Unordered)
		}
	}
	return summarize(rs)
}

// ratio is lib's median ns/task over base's, or NaN when either is missing.
func (r *run) ratio(sid, lib, base string) float64 {
	a, ok1 := r.summary(sid, lib)
	b, ok2 := r.summary(sid, base)
	if !ok1 || !ok2 || b.ns == 0 {
		return math.NaN()
	}
	return a.ns / b.ns
}

// acrossRatio is lib's median ns/task in scenario sid over its own in
// scenario base, from the same run, or NaN when either is missing.
func (r *run) acrossRatio(lib, sid, base string) float64 {
	a, ok1 := r.summary(sid, lib)
	b, ok2 := r.summary(base, lib)
	if !ok1 || !ok2 || b.ns == 0 {
		return math.NaN()
	}
	return a.ns / b.ns
}

// cannotRun lists the run's scenarios that the library called name cannot
// run, as "h, i and l", or "" if none.
func (r *run) cannotRun(name string) string {
	lib, err := findLibrary(name)
	if err != nil {
		return ""
	}
	var ids []string
	for _, s := range r.scenarios {
		if ok, _ := s.applies(lib); !ok {
			ids = append(ids, s.id)
		}
	}
	switch len(ids) {
	case 0:
		return ""
	case 1:
		return ids[0]
	}
	return strings.Join(ids[:len(ids)-1], ", ") + " and " + ids[len(ids)-1]
}

// ratioCell is lib's ratio to base in scenario sid as the report shows it:
// n/a when base cannot run sid (the relay has no handles or groups, for
// example), – when either has no result.
func (r *run) ratioCell(sid, lib, base string) string {
	if s, err := findScenario(sid); err == nil {
		if b, err := findLibrary(base); err == nil {
			if ok, _ := s.applies(b); !ok {
				return "n/a"
			}
		}
	}
	return fmtRatio(r.ratio(sid, lib, base))
}

func fmtRatio(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%.2fx", x)
}

func fmtNs(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}

// quiet is the run's quiet half, or nil if every run had the hog beside it.
func (r *run) quiet() *run {
	if r.hog == hogOn {
		return nil
	}
	return r
}

// beside is the run's half beside the CPU hog, as a run whose samples are
// those, or nil if the hog never ran.
func (r *run) beside() *run {
	if r.hog != hogOn && r.hog != hogBoth {
		return nil
	}
	b := *r
	b.samples, b.hogSamples = r.hogSamples, nil
	return &b
}

// primary is the half the scenario tables, the ratio matrices and the chart
// show: the quiet one, unless the hog ran beside every run.
func (r *run) primary() *run {
	if q := r.quiet(); q != nil {
		return q
	}
	return r.beside()
}

// halves are the run's halves, quiet first, each with the suffix its
// sections' titles take.
func (r *run) halves() []half {
	var hs []half
	if q := r.quiet(); q != nil {
		hs = append(hs, half{q, ""})
	}
	if b := r.beside(); b != nil {
		hs = append(hs, half{b, " beside a CPU hog"})
	}
	return hs
}

type half struct {
	*run
	suffix string
}

// floorPrefix begins the name of every floor (the relay and its variants):
// references, not peers.
const floorPrefix = "relay"

// isPeer reports whether the library called name is a peer: neither one of
// this library's own variants ("ours…") nor a floor ("relay…").
func isPeer(name string) bool {
	return !strings.HasPrefix(name, "ours") && !strings.HasPrefix(name, floorPrefix)
}

// Two measures of a summary: wall and CPU time per task.
var (
	wallNs = func(s summary) float64 { return s.ns }
	cpuNs  = func(s summary) float64 { return s.cpu }
)

// peerRatio divides this library's measure f in scenario sid by the lowest
// of the run's peers, and names that peer. na is set (and the ratio NaN)
// when no peer of the suite can run sid; the ratio is NaN without na when
// this library or every peer has no result in the run.
func (r *run) peerRatio(sid string, f func(summary) float64) (x float64, peer, na string) {
	if why := noPeerRuns(sid); why != "" {
		return math.NaN(), "", why
	}
	o, ok := r.summary(sid, "ours")
	if !ok {
		return math.NaN(), "", ""
	}
	best := math.Inf(1)
	for _, l := range r.libraries {
		if !isPeer(l.name) {
			continue
		}
		if s, ok := r.summary(sid, l.name); ok && f(s) < best {
			best, peer = f(s), l.name
		}
	}
	if peer == "" || best <= 0 {
		return math.NaN(), "", ""
	}
	return f(o) / best, peer, ""
}

// noPeerRuns says why no peer of the suite can run scenario sid, as
// "n/a: no peer runs l (has no batch submit)", or "" if one can. A peer
// that runs only a few scenarios (rill: q) gives no reason for the others.
func noPeerRuns(sid string) string {
	s, err := findScenario(sid)
	if err != nil {
		return ""
	}
	var whys []string
	for _, l := range libraries {
		if !isPeer(l.name) || (l.only != nil && !slices.Contains(l.only, sid)) {
			continue // a library run in a few scenarios says nothing of the others
		}
		ok, why := s.applies(l)
		if ok {
			return ""
		}
		if why = strings.TrimPrefix(why, "n/a: "); !slices.Contains(whys, why) {
			whys = append(whys, why)
		}
	}
	return fmt.Sprintf("n/a: no peer runs %s (%s)", sid, strings.Join(whys, "; "))
}

// peerCell is peerRatio as a cell: "1.25x (pond)", the n/a reason, or –.
func (r *run) peerCell(sid string, f func(summary) float64) string {
	x, peer, na := r.peerRatio(sid, f)
	switch {
	case na != "":
		return na
	case math.IsNaN(x):
		return "–"
	}
	return fmt.Sprintf("%s (%s)", fmtRatio(x), peer)
}

// writeReport writes the Markdown report.
func (r *run) writeReport(w io.Writer) error {
	p := &printer{w: w}
	m := r.machine
	q := r.primary()
	p.f("# Benchmark results\n\n")
	p.f("Written by `go run . %s` in `benchmarks/`. Absolute numbers depend on the machine; compare the ratios, which come from one run.\n\n", strings.Join(os.Args[1:], " "))
	p.f("| | |\n|---|---|\n")
	p.f("| Date | %s |\n", r.started.UTC().Format("2006-01-02 15:04 MST"))
	p.f("| Go | %s %s |\n", m.goVersion, m.platform)
	p.f("| CPU | %s, %d logical CPUs, GOMAXPROCS %d |\n", m.cpu, m.numCPU, m.gomaxprocs)
	p.f("| Load average (1, 5, 15 min) | before: %s; after: %s (the suite's own runs keep up to GOMAXPROCS CPUs busy) |\n", m.loadBefore, r.loadAfter)
	if len(r.scenarios) == 0 { // scenario p alone: its section says how it ran
		p.f("| Method | scenario p: each run once, quiet, in a fresh process; scale %g; %s in all |\n\n", r.scale, r.elapsed.Round(time.Second))
		r.writeLoad(p)
		r.writeFailures(p)
		return p.err
	}
	each := "each in a fresh process"
	if r.hog == hogBoth {
		each = "each quiet and beside a CPU hog in turn, in a fresh process"
	}
	p.f("| Method | %d measured runs per scenario and pool after one warm-up, interleaved across pools, %s; scale %g; %s in all |\n",
		r.reps, each, r.scale, r.elapsed.Round(time.Second))
	p.f("| CPU hog | %s |\n\n", r.hogLine())
	if r.chart != "" {
		p.f("![ns per task, one panel per scenario](%s)\n\n", relative(r.out, r.chart))
	}
	if r.has(floor) {
		p.f("`%s` is a reference, not a usable pool: the bare relay of this library's shape (an unbuffered channel into one dispatcher goroutine with a deque, an unbuffered channel out to the workers, nothing else), so every task makes exactly the two hand-offs this design fixes. No pool of this shape can beat it; its row is the floor.\n\n", floor)
	}
	r.writeTargets(p)
	for _, h := range r.halves() {
		hr := h.run
		title, cpuTitle := "ns per task (median)", "CPU ns per task (median)"
		if h.suffix != "" {
			title, cpuTitle = "ns per task"+h.suffix, "CPU ns per task"+h.suffix
		}
		hr.writeMatrix(p, title, "Wall time from the first submit until the last task finished, divided by the task count (g: Submit time per queued task); medians."+h.caption(),
			func(sid, lib string) string {
				s, ok := hr.summary(sid, lib)
				if !ok {
					return "–"
				}
				return fmtNs(s.ns)
			})
		hr.writeMatrix(p, cpuTitle, "CPU time (user + system, all threads) of the measured process over the same span, divided by the task count; medians. It exceeds the wall time where threads ran in parallel."+h.caption(),
			func(sid, lib string) string {
				s, ok := hr.summary(sid, lib)
				if !ok {
					return "–"
				}
				return fmtNs(s.cpu)
			})
	}
	r.writeFastestPeer(p)
	inHog := ""
	if r.hog == hogOn {
		inHog = " Every run had the CPU hog beside it."
	}
	q.writeMatrix(p, "Ratio to this library", "Median ns/task divided by this library's in the same run: below 1.00x is faster than this library."+inHog,
		func(sid, lib string) string { return q.ratioCell(sid, lib, "ours") })
	q.writeMatrix(p, "Ratio to gammazero/workerpool", "Median ns/task divided by gammazero/workerpool's in the same run; n/a where gammazero/workerpool cannot run the scenario."+inHog,
		func(sid, lib string) string { return q.ratioCell(sid, lib, "gammazero") })
	relayNA := ""
	if ids := r.cannotRun(floor); ids != "" {
		relayNA = fmt.Sprintf(" It is n/a in %s, which the relay cannot run (it has no task handles, groups, bound, resize, batch submit or ordered map; each scenario's table says which).", ids)
	}
	q.writeMatrix(p, "Ratio to the relay floor", "Median ns/task divided by the relay's in the same run: how far each pool is from the bare relay of this library's shape (two hand-offs per task, nothing else)."+relayNA+inHog,
		func(sid, lib string) string { return q.ratioCell(sid, lib, floor) })
	p.f("## Scenarios\n\n")
	if r.hog == hogBoth {
		p.f("From the quiet runs; the matrices above give the runs beside the CPU hog.\n\n")
	} else if r.hog == hogOn {
		p.f("Every run had the CPU hog beside it.\n\n")
	}
	if r.has(floor) {
		p.f("\"vs relay\" divides by the relay floor's median in the same run.%s\n\n", relayNA)
	}
	for _, s := range r.scenarios {
		q.writeScenario(p, s)
	}
	if r.load {
		r.writeLoad(p)
	}
	r.writeFailures(p)
	return p.err
}

func (r *run) writeFailures(p *printer) {
	if len(r.failures) > 0 {
		p.f("## Failed runs\n\n")
		for _, f := range r.failures {
			p.f("- `%s`\n", strings.ReplaceAll(f, "\n", " "))
		}
		p.f("\n")
	}
}

// caption adds to a matrix's caption what the hog half is.
func (h half) caption() string {
	if h.suffix == "" {
		return ""
	}
	return " Each run had the CPU hog beside it (see the table at the top); the hog's own CPU is not counted."
}

// hogLine describes the CPU hog for the report's header.
func (r *run) hogLine() string {
	note := r.hogNote
	if note == "" {
		note = "it never started"
	}
	what := "one other process of this binary (`" + hogFlag + "`) spinning on one CPU, " + note +
		"; started before the measured process and killed once it ended; its CPU is not in any CPU column (a separate process, not the measured one's child)"
	switch r.hog {
	case hogOn:
		return "every run beside the CPU hog (`-hog on`): " + what
	case hogBoth:
		return "every scenario and pool measured quiet and beside the CPU hog, interleaved (`-hog both`): " + what
	}
	return "none: every run quiet (`-hog off`)"
}

// writeFastestPeer writes this library's ratio to the fastest peer, wall
// and CPU per task, for each half of the run.
func (r *run) writeFastestPeer(p *printer) {
	if !slices.ContainsFunc(r.libraries, func(l library) bool { return l.name == "ours" }) {
		return
	}
	hs := r.halves()
	p.f("## Ratio to the fastest peer\n\n")
	p.f("This library's median divided by the lowest median among the peers in the same scenario, wall time (ns/task) and CPU per task, the peer named in each cell (the fastest in wall time and in CPU may differ). Peers are every pool but this library's own variants (`ours…`) and the floors (`%s…`); below 1.00x this library is ahead of every peer. – where this library or every peer has no result in this run.\n\n", floorPrefix)
	p.f("| scenario |")
	for _, h := range hs {
		p.f(" wall%s | CPU/task%s |", h.suffix, h.suffix)
	}
	p.f("\n|---|%s\n", strings.Repeat("---:|", 2*len(hs)))
	for _, s := range r.scenarios {
		p.f("| %s |", s.id)
		for _, h := range hs {
			p.f(" %s | %s |", h.peerCell(s.id, wallNs), h.peerCell(s.id, cpuNs))
		}
		p.f("\n")
	}
	p.f("\n")
}

// speedScenarios are the scenarios of the current speed work.
var speedScenarios = []string{"a", "b", "c", "e", "j", "k", "l"}

// writeTargets checks this library against the goals of the current speed
// work, and the allocation and memory targets that still apply, where the
// run has the numbers.
func (r *run) writeTargets(p *printer) {
	q := r.primary()
	p.f("## Targets for this library\n\n| target | limit | measured | met |\n|---|---|---|---|\n")
	check := func(what string, limit, v float64, show func(float64) string, note string) {
		if math.IsNaN(v) {
			return
		}
		met := "yes"
		if v > limit {
			met = "**no**"
		}
		p.f("| %s | ≤ %s | %s%s | %s |\n", what, show(limit), show(v), note, met)
	}
	inRun := func(sid string) bool {
		return slices.ContainsFunc(r.scenarios, func(s scenario) bool { return s.id == sid })
	}
	for _, sid := range speedScenarios {
		if !inRun(sid) {
			continue
		}
		if na := noPeerRuns(sid); na != "" {
			if _, ok := q.summary(sid, "ours"); ok {
				p.f("| %s: ours vs fastest peer, wall and CPU/task | ≤ 1.30x | %s | – |\n", sid, na)
			}
		} else {
			for _, h := range r.halves() {
				suffix := strings.Replace(h.suffix, " a CPU hog", " the hog", 1)
				for _, m := range []struct {
					name string
					f    func(summary) float64
				}{{"wall", wallNs}, {"CPU/task", cpuNs}} {
					x, peer, _ := h.peerRatio(sid, m.f)
					check(fmt.Sprintf("%s: ours vs fastest peer, %s%s", sid, m.name, suffix), 1.30, x, fmtRatio, " ("+peer+")")
				}
			}
		}
		if canRun(sid, "gammazero") {
			check(sid+": ours vs gammazero", 1.00, q.ratio(sid, "ours", "gammazero"), fmtRatio, "")
		}
		if sid == "l" {
			check("l: DoBatch ns/task vs relay floor (its batch)", 1.15, q.ratio("l", "ours", floor), fmtRatio, "")
		}
	}
	of := func(sid string, f func(summary) float64) float64 {
		if s, ok := q.summary(sid, "ours"); ok {
			return f(s)
		}
		return math.NaN()
	}
	// ofBoth divides f of ours by f of base in scenario sid: CPU or bytes,
	// where wall time says nothing (the delayed scenarios last a second
	// for every pool).
	ofBoth := func(sid, base string, f func(summary) float64) float64 {
		o, ok1 := q.summary(sid, "ours")
		b, ok2 := q.summary(sid, base)
		if !ok1 || !ok2 || f(b) <= 0 {
			return math.NaN()
		}
		return f(o) / f(b)
	}
	allocs := func(x float64) string { return fmt.Sprintf("%.4f", x) }
	bytes := func(s summary) float64 { return s.bytes }
	check("a: ours+adaptive vs ours: what WithAdaptiveSize(1, 4) costs New(4)", 1.02, q.ratio("a", "ours+adaptive", "ours"), fmtRatio, "")
	check("a: allocs per Submit", 0.01, of("a", func(s summary) float64 { return s.allocs }), allocs, "")
	check("f: allocs per SubmitWait", 1, of("f", func(s summary) float64 { return s.allocs }), allocs, "")
	check("g: live heap bytes per queued task", 8.5, of("g", func(s summary) float64 { return s.queued }), func(x float64) string { return fmt.Sprintf("%.2f B", x) }, "")
	check("l: allocs per task", 0.01, of("l", func(s summary) float64 { return s.allocs }), allocs, "")
	check("m1: DoContext with Delay, CPU per task vs AfterFunc+Submit", 1.0, ofBoth("m1", "ours+afterfunc", cpuNs), fmtRatio, "")
	check("m1: DoContext with Delay, bytes per task vs AfterFunc+Submit", 0.7, ofBoth("m1", "ours+afterfunc", bytes), fmtRatio, "")
	check("m2: DoContext with Delay, CPU per task vs AfterFunc+Submit", 0.5, ofBoth("m2", "ours+afterfunc", cpuNs), fmtRatio, "")
	check("m2: DoContext with Delay, bytes per task vs AfterFunc+Submit", 0.7, ofBoth("m2", "ours+afterfunc", bytes), fmtRatio, "")
	check("m1: DoContext with Delay, CPU per task vs relay floor (heap and timer)", 1.1, ofBoth("m1", floor, cpuNs), fmtRatio, "")
	for _, peer := range mapPeers {
		atLeast(p, fmt.Sprintf("q: Map throughput vs %s", peer.what), mapTarget, q.throughputRatio("q", peer.name))
	}
	p.f("\n\"Fastest peer\" is the peer with the lowest median in that scenario and measure (see [Ratio to the fastest peer](#ratio-to-the-fastest-peer)), named in brackets. Allocation counts include the run's fixed costs (pool start, queue growth) spread over its tasks, so 0 reads as < 0.01.\n\n")
}

// mapPeers are the peers Map is held to in scenario q, and mapTarget the
// least throughput it must have against each, as a fraction of theirs.
var mapPeers = []struct{ name, what string }{{"conc", "conc's stream"}, {"rill", "rill's OrderedMap"}}

const mapTarget = 0.95

// throughputRatio is this library's throughput in scenario sid (its
// ordered runs) over peer's: peer's median ns per task over ours, or NaN
// when either is missing.
func (r *run) throughputRatio(sid, peer string) float64 {
	x := r.ratio(sid, "ours", peer)
	if math.IsNaN(x) || x == 0 {
		return math.NaN()
	}
	return 1 / x
}

// atLeast writes a row of the targets table whose measure must be at least
// limit (a ratio), unless v is NaN.
func atLeast(p *printer, what string, limit, v float64) {
	if math.IsNaN(v) {
		return
	}
	met := "yes"
	if v < limit {
		met = "**no**"
	}
	p.f("| %s | ≥ %s | %s | %s |\n", what, fmtRatio(limit), fmtRatio(v), met)
}

// canRun reports whether the suite's library called name can run scenario sid.
func canRun(sid, name string) bool {
	s, err1 := findScenario(sid)
	l, err2 := findLibrary(name)
	if err1 != nil || err2 != nil {
		return false
	}
	ok, _ := s.applies(l)
	return ok
}

func (r *run) writeMatrix(p *printer, title, caption string, cell func(sid, lib string) string) {
	p.f("## %s\n\n%s\n\n| scenario |", title, caption)
	for _, l := range r.libraries {
		p.f(" %s |", l.name)
	}
	p.f("\n|---|%s\n", strings.Repeat("---:|", len(r.libraries)))
	for _, s := range r.scenarios {
		p.f("| %s |", s.id)
		for _, l := range r.libraries {
			p.f(" %s |", cell(s.id, l.name))
		}
		p.f("\n")
	}
	p.f("\n")
}

func (r *run) writeScenario(p *printer, s scenario) {
	p.f("### %s: %s\n\n", s.id, s.title)
	if note := scenarioNotes[s.id]; note != "" {
		p.f("%s\n\n", note)
	}
	switch s.id {
	case "l":
		r.writeBatchVsSubmit(p)
	case "n":
		r.writeKeyVsByHand(p)
	case "o":
		r.writeFairShare(p)
	case "q":
		r.writeMapVsPeers(p)
	}
	extra := ""
	switch s.id {
	case "f", "h":
		extra = " p50 ns | p99 ns |"
	case "g":
		extra = " live B per queued task |"
	case "n":
		extra = " goroutines | stacks KiB |"
	case "o":
		extra = " trickling tenants' wait p50 µs | p99 µs |"
	case "q":
		extra = " items/s | vs ideal |"
	}
	p.f("| pool | contract | ns/task median (min–max) | vs ours | vs gammazero | vs relay | CPU ns/task | allocs/task | B/task |%s\n", extra)
	p.f("|---|---|---:|---:|---:|---:|---:|---:|---:|%s\n", strings.Repeat("---:|", strings.Count(extra, "|")))
	for _, l := range r.libraries {
		if ok, why := s.applies(l); !ok {
			p.f("| %s | %s | %s | | | | | | |%s\n", l.name, s.contract(l), why, strings.Repeat(" |", strings.Count(extra, "|")))
			continue
		}
		sm, ok := r.summary(s.id, l.name)
		if !ok {
			p.f("| %s | %s | failed | | | | | | |%s\n", l.name, s.contract(l), strings.Repeat(" |", strings.Count(extra, "|")))
			continue
		}
		p.f("| %s | %s | %s (%s–%s) | %s | %s | %s | %s | %.2f | %.1f |", l.name, s.contract(l),
			fmtNs(sm.ns), fmtNs(sm.nsMin), fmtNs(sm.nsMax),
			r.ratioCell(s.id, l.name, "ours"), r.ratioCell(s.id, l.name, "gammazero"), r.ratioCell(s.id, l.name, floor),
			fmtNs(sm.cpu), sm.allocs, sm.bytes)
		switch s.id {
		case "f", "h":
			p.f(" %s | %s |", fmtNs(sm.p50), fmtNs(sm.p99))
		case "g":
			p.f(" %.2f |", sm.queued)
		case "n":
			p.f(" %.0f | %.0f |", sm.goroutines, sm.stacks/1024)
		case "o":
			p.f(" %s | %s |", fmtNs(sm.p50/1e3), fmtNs(sm.p99/1e3))
		case "q":
			p.f(" %.0f | %s |", 1e9/sm.ns, fmtRatio(sm.ns/mapIdealPerItem(sm.tasks)))
		}
		p.f("\n")
	}
	if s.id == "q" {
		r.writeUnorderedRows(p, s)
	}
	p.f("\n")
}

// mapIdealPerItem is scenario q's ideal time per item, in ns, for n items.
func mapIdealPerItem(n int) float64 {
	return float64(mapIdeal(n)) / float64(max(n, 1))
}

// writeUnorderedRows writes scenario q's unordered rows, one per library
// with unordered runs, below the ordered ones: vs ours divides by this
// library's unordered median.
func (r *run) writeUnorderedRows(p *printer, s scenario) {
	ours, okOurs := r.unordered(s.id, "ours")
	for _, l := range r.libraries {
		sm, ok := r.unordered(s.id, l.name)
		if !ok {
			continue
		}
		vsOurs := "–"
		if okOurs && ours.ns > 0 {
			vsOurs = fmtRatio(sm.ns / ours.ns)
		}
		p.f("| %s, unordered | %s | %s (%s–%s) | %s | n/a | n/a | %s | %.2f | %.1f | %.0f | %s |\n", l.name, l.mapUnordered,
			fmtNs(sm.ns), fmtNs(sm.nsMin), fmtNs(sm.nsMax), vsOurs, fmtNs(sm.cpu), sm.allocs, sm.bytes,
			1e9/sm.ns, fmtRatio(sm.ns/mapIdealPerItem(sm.tasks)))
	}
}

// writeMapVsPeers compares this library's Map with conc's stream and
// rill's OrderedMap in scenario q, and its MapUnordered with their
// unordered maps.
func (r *run) writeMapVsPeers(p *printer) {
	o, ok := r.summary("q", "ours")
	if !ok {
		return
	}
	p.f("**Map, this library:** %s ms per item, %.0f items/s, %s the ideal.", fmtNs(o.ns/1e6), 1e9/o.ns, fmtRatio(o.ns/mapIdealPerItem(o.tasks)))
	for _, peer := range mapPeers {
		if x := r.throughputRatio("q", peer.name); !math.IsNaN(x) {
			p.f(" Throughput against %s: **%s** (wall time %s; target ≥ %s).", peer.what, fmtRatio(x), fmtRatio(1/x), fmtRatio(mapTarget))
		}
	}
	if u, ok := r.unordered("q", "ours"); ok {
		p.f(" MapUnordered: %s ms per item, %s the ideal", fmtNs(u.ns/1e6), fmtRatio(u.ns/mapIdealPerItem(u.tasks)))
		for _, peer := range mapPeers {
			if v, ok := r.unordered("q", peer.name); ok && u.ns > 0 {
				p.f("; throughput against %s's unordered map %s", peer.name, fmtRatio(v.ns/u.ns))
			}
		}
		p.f(".")
	}
	p.f("\n\n")
}

// writeBatchVsSubmit compares this library's DoBatch (l) with its Submit
// (a), both from this run.
func (r *run) writeBatchVsSubmit(p *printer) {
	l, okL := r.summary("l", "ours")
	a, okA := r.summary("a", "ours")
	switch {
	case !okL:
		return
	case !okA:
		p.f("**DoBatch vs Submit, this library:** run scenario a as well for the ratio l / a (target ≤ 0.60x, goal 0.50x).\n\n")
		return
	}
	p.f("**DoBatch vs Submit, this library:** l %s ns/task / a %s ns/task = **%s** (target ≤ 0.60x, goal 0.50x); l allocs per task %.4f (target ≤ 0.01).",
		fmtNs(l.ns), fmtNs(a.ns), fmtRatio(r.acrossRatio("ours", "l", "a")), l.allocs)
	if x := r.acrossRatio(floor, "l", "a"); !math.IsNaN(x) {
		p.f(" The relay's own l / a in this run, the floor of that ratio for this design on this machine: **%s**.", fmtRatio(x))
	}
	p.f("\n\n")
}

// writeKeyVsByHand compares this library's keys (ours+key) with the
// hand-written answer on this library (ours) in scenario n.
func (r *run) writeKeyVsByHand(p *printer) {
	k, okK := r.summary("n", "ours+key")
	h, okH := r.summary("n", "ours")
	if !okK || !okH {
		return
	}
	p.f("**WithKeys(1, nil) vs the hand-written answer, both on this library:** %s / %s ns per task = **%s**; %.1f / %.1f B allocated per task; %.0f / %.0f goroutines (%.0f / %.0f KiB of stacks) once every task is submitted.\n\n",
		fmtNs(k.ns), fmtNs(h.ns), fmtRatio(r.ratio("n", "ours+key", "ours")), k.bytes, h.bytes, k.goroutines, h.goroutines, k.stacks/1024, h.stacks/1024)
}

// writeFairShare compares the trickling tenants' waits in scenario o with
// keys (ours+key) and without (ours).
func (r *run) writeFairShare(p *printer) {
	k, okK := r.summary("o", "ours+key")
	h, okH := r.summary("o", "ours")
	if !okK || !okH || h.p99 == 0 {
		return
	}
	p.f("**The trickling tenants' p99 wait, with Key vs without, on this library:** %s / %s µs = **%.3gx** (p50 %s / %s µs); all tasks, ns per task: %s / %s (%s).\n\n",
		fmtNs(k.p99/1e3), fmtNs(h.p99/1e3), k.p99/h.p99, fmtNs(k.p50/1e3), fmtNs(h.p50/1e3), fmtNs(k.ns), fmtNs(h.ns), fmtRatio(r.ratio("o", "ours+key", "ours")))
}

// relative names target as seen from the directory of from.
func relative(from, target string) string {
	rel, err := filepath.Rel(filepath.Dir(from), target)
	if err != nil {
		return target
	}
	return filepath.ToSlash(rel)
}

// printer keeps the first write error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}
