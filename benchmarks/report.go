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

// writeReport writes the Markdown report.
func (r *run) writeReport(w io.Writer) error {
	p := &printer{w: w}
	m := r.machine
	p.f("# Benchmark results\n\n")
	p.f("Written by `go run . %s` in `benchmarks/`. Absolute numbers depend on the machine; compare the ratios, which come from one run.\n\n", strings.Join(os.Args[1:], " "))
	p.f("| | |\n|---|---|\n")
	p.f("| Date | %s |\n", r.started.UTC().Format("2006-01-02 15:04 MST"))
	p.f("| Go | %s %s |\n", m.goVersion, m.platform)
	p.f("| CPU | %s, %d logical CPUs, GOMAXPROCS %d |\n", m.cpu, m.numCPU, m.gomaxprocs)
	p.f("| Load average (1, 5, 15 min) | before: %s; after: %s (the suite's own runs keep up to GOMAXPROCS CPUs busy) |\n", m.loadBefore, r.loadAfter)
	p.f("| Method | %d measured runs per scenario and pool after one warm-up, interleaved across pools, each in a fresh process; scale %g; %s in all |\n\n",
		r.reps, r.scale, r.elapsed.Round(time.Second))
	if r.chart != "" {
		p.f("![ns per task, one panel per scenario](%s)\n\n", relative(r.out, r.chart))
	}
	if r.has(floor) {
		p.f("`%s` is a reference, not a usable pool: the bare relay of this library's shape (an unbuffered channel into one dispatcher goroutine with a deque, an unbuffered channel out to the workers, nothing else), so every task makes exactly the two hand-offs this design fixes. No pool of this shape can beat it; its row is the floor.\n\n", floor)
	}
	r.writeTargets(p)
	r.writeMatrix(p, "ns per task (median)", "Wall time from the first submit until the last task finished, divided by the task count (g: Submit time per queued task).",
		func(sid, lib string) string {
			s, ok := r.summary(sid, lib)
			if !ok {
				return "–"
			}
			return fmtNs(s.ns)
		})
	r.writeMatrix(p, "Ratio to this library", "Median ns/task divided by this library's in the same run: below 1.00x is faster than this library.",
		func(sid, lib string) string { return r.ratioCell(sid, lib, "ours") })
	r.writeMatrix(p, "Ratio to gammazero/workerpool", "Median ns/task divided by gammazero/workerpool's in the same run; n/a where gammazero/workerpool cannot run the scenario.",
		func(sid, lib string) string { return r.ratioCell(sid, lib, "gammazero") })
	relayNA := ""
	if ids := r.cannotRun(floor); ids != "" {
		relayNA = fmt.Sprintf(" It is n/a in %s, which the relay cannot run (it has no task handles, groups, bound, resize or batch submit; each scenario's table says which).", ids)
	}
	r.writeMatrix(p, "Ratio to the relay floor", "Median ns/task divided by the relay's in the same run: how far each pool is from the bare relay of this library's shape (two hand-offs per task, nothing else). This library's goal is ≤ 1.10x in a and e."+relayNA,
		func(sid, lib string) string { return r.ratioCell(sid, lib, floor) })
	p.f("## Scenarios\n\n")
	if r.has(floor) {
		p.f("\"vs relay\" divides by the relay floor's median in the same run.%s\n\n", relayNA)
	}
	for _, s := range r.scenarios {
		r.writeScenario(p, s)
	}
	if len(r.failures) > 0 {
		p.f("## Failed runs\n\n")
		for _, f := range r.failures {
			p.f("- `%s`\n", strings.ReplaceAll(f, "\n", " "))
		}
		p.f("\n")
	}
	return p.err
}

// writeTargets checks this library against the targets of the performance
// issue, where the run has the numbers.
func (r *run) writeTargets(p *printer) {
	type target struct {
		what  string
		value func() (float64, bool)
		show  func(float64) string
		limit float64
	}
	vs := func(sid, base string) func() (float64, bool) {
		return func() (float64, bool) {
			x := r.ratio(sid, "ours", base)
			return x, !math.IsNaN(x)
		}
	}
	vsGammazero := func(sid string) func() (float64, bool) { return vs(sid, "gammazero") }
	of := func(sid string, f func(summary) float64) func() (float64, bool) {
		return func() (float64, bool) {
			s, ok := r.summary(sid, "ours")
			return f(s), ok
		}
	}
	worst := func() (float64, bool) {
		x, any := 0.0, false
		for _, s := range r.scenarios {
			if v := r.ratio(s.id, "ours", "gammazero"); !math.IsNaN(v) {
				x, any = max(x, v), true
			}
		}
		return x, any
	}
	batchVsSubmit := func() (float64, bool) {
		x := r.acrossRatio("ours", "l", "a")
		return x, !math.IsNaN(x)
	}
	allocs := func(x float64) string { return fmt.Sprintf("%.4f", x) }
	// ofBoth divides f of ours by f of base in scenario sid: CPU or bytes,
	// where wall time says nothing (the delayed scenarios last a second
	// for every pool).
	ofBoth := func(sid, base string, f func(summary) float64) func() (float64, bool) {
		return func() (float64, bool) {
			o, ok1 := r.summary(sid, "ours")
			b, ok2 := r.summary(sid, base)
			return f(o) / f(b), ok1 && ok2 && f(b) > 0
		}
	}
	cpu := func(s summary) float64 { return s.cpu }
	bytes := func(s summary) float64 { return s.bytes }
	targets := []target{
		{"a: ns/task vs gammazero", vsGammazero("a"), fmtRatio, 0.8},
		{"e: ns/task vs gammazero", vsGammazero("e"), fmtRatio, 0.7},
		{"f: ns/task vs gammazero", vsGammazero("f"), fmtRatio, 0.8},
		{"worst scenario vs gammazero", worst, fmtRatio, 1.0},
		{"a: ns/task vs relay floor", vs("a", floor), fmtRatio, 1.1},
		{"e: ns/task vs relay floor", vs("e", floor), fmtRatio, 1.1},
		{"g: live heap bytes per queued task", of("g", func(s summary) float64 { return s.queued }), func(x float64) string { return fmt.Sprintf("%.2f B", x) }, 8.5},
		{"a: allocs per Submit", of("a", func(s summary) float64 { return s.allocs }), allocs, 0.01},
		{"f: allocs per SubmitWait", of("f", func(s summary) float64 { return s.allocs }), allocs, 1},
		{"j: ns/task vs pond (bounded queue)", vs("j", "pond"), fmtRatio, 1.0},
		{"j: ns/task vs ants (bounded by its workers)", vs("j", "ants"), fmtRatio, 1.0},
		{"l: DoBatch ns/task vs Submit (l / a, goal 0.50x)", batchVsSubmit, fmtRatio, 0.6},
		{"l: DoBatch ns/task vs relay floor (its batch)", vs("l", floor), fmtRatio, 1.15},
		{"l: allocs per task", of("l", func(s summary) float64 { return s.allocs }), allocs, 0.01},
		{"m1: DoContext with Delay, CPU per task vs AfterFunc+Submit", ofBoth("m1", "ours+afterfunc", cpu), fmtRatio, 1.0},
		{"m1: DoContext with Delay, bytes per task vs AfterFunc+Submit", ofBoth("m1", "ours+afterfunc", bytes), fmtRatio, 0.7},
		{"m2: DoContext with Delay, CPU per task vs AfterFunc+Submit", ofBoth("m2", "ours+afterfunc", cpu), fmtRatio, 0.5},
		{"m2: DoContext with Delay, bytes per task vs AfterFunc+Submit", ofBoth("m2", "ours+afterfunc", bytes), fmtRatio, 0.7},
		{"m1: DoContext with Delay, CPU per task vs relay floor (heap and timer)", ofBoth("m1", floor, cpu), fmtRatio, 1.1},
	}
	p.f("## Targets for this library\n\n| target | limit | measured | met |\n|---|---|---|---|\n")
	for _, t := range targets {
		v, ok := t.value()
		if !ok {
			continue
		}
		met := "yes"
		if v > t.limit {
			met = "**no**"
		}
		p.f("| %s | ≤ %s | %s | %s |\n", t.what, t.show(t.limit), t.show(v), met)
	}
	p.f("\nAllocation counts include the run's fixed costs (pool start, queue growth) spread over its tasks, so 0 reads as < 0.01.\n\n")
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
		}
		p.f("\n")
	}
	p.f("\n")
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
