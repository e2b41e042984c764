// Command benchmarks compares workerpool with the pools its users would
// otherwise pick, one scenario and library per child process, and prints a
// Markdown report. It writes files only when asked: the report with -o, and a
// chart with -chart (or beside -o).
//
//	cd benchmarks && go run .                  # the report on stdout, no files
//	cd benchmarks && go run . -o RESULTS.md    # rewrites the committed report and chart.svg
//
// By default every scenario and pool runs twice in turn, quiet and beside a
// CPU hog (one other process spinning on one CPU); -hog off runs it quiet
// only, -hog on beside the hog only.
//
// Scenario p, the adaptive size against a downstream whose best concurrency
// is known, runs only when named (it takes minutes, on the clock), once and
// quiet, and writes its own section of the report:
//
//	cd benchmarks && go run . -scenarios p -o ADAPTIVE.md
//
// Scenario q, an ordered map of tasks that sleep 10 ms, also runs only
// when named (each of its runs lasts about 25 s at scale 1):
//
//	cd benchmarks && go run . -scenarios q -pools ours,conc,rill -hog off
//
// See README.md for the method and how to read the results.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"time"
)

type options struct {
	out       string
	chart     string
	scenarios []scenario
	libraries []library
	reps      int
	timeout   time.Duration
	hog       string // hogOff, hogOn or hogBoth
	load      bool   // scenario p was asked for (it is not in scenarios: see adaptive.go)
	config
}

func main() {
	log := func(err error) {
		fmt.Fprintln(os.Stderr, "benchmarks:", err)
		os.Exit(1)
	}
	var (
		out       = flag.String("o", "", "write the Markdown report to this `file` (default: print it on stdout)")
		chart     = flag.String("chart", "", "write the chart to this SVG `file` (default: chart.svg beside -o; none without -o)")
		scenarioF = flag.String("scenarios", ids(defaultScenarios()), "comma-separated `list` of scenarios; p (the adaptive size, minutes long) and q (the ordered map, on the clock) run only when named")
		poolF     = flag.String("pools", names(libraries), "comma-separated `list` of pools")
		reps      = flag.Int("reps", 5, "measured repetitions of each scenario and pool, after one warm-up")
		scale     = flag.Float64("scale", 1, "multiply every scenario's task count, and scenario p's durations, by this `factor`")
		timeout   = flag.Duration("timeout", 5*time.Minute, "give up on a child process after this long")
		hogF      = flag.String("hog", hogBoth, "run each scenario and pool quiet (off), beside a CPU hog (on), or both in turn (both)")
		hogChild  = flag.Bool(strings.TrimPrefix(hogFlag, "-"), false, "internal: spin on one CPU until killed")
		childF    = flag.String("child", "", "internal: run one `scenario/pool` in this process and print its result")
		spinF     = flag.Int("spin", 0, "internal: spin rounds per µs of CPU")
		cpuprof   = flag.String("cpuprofile", "", "with -child: write a CPU profile of the run to this `file`")
		tracef    = flag.String("trace", "", "with -child: write an execution trace of the run to this `file`")
	)
	flag.Parse()
	if *hogChild {
		runHog()
	}
	if *scale <= 0 || *reps < 1 {
		log(errors.New("-scale must be > 0 and -reps >= 1"))
	}
	if *childF != "" {
		if err := runChild(*childF, config{scale: *scale, spin: *spinF, cpuProfile: *cpuprof, trace: *tracef}); err != nil {
			log(err)
		}
		return
	}
	o := options{out: *out, chart: chartFile(*out, *chart), reps: *reps, timeout: *timeout, hog: *hogF, config: config{scale: *scale}}
	if _, err := hogModes(o.hog); err != nil {
		log(err)
	}
	var err error
	if o.scenarios, o.load, err = pickScenarios(*scenarioF); err != nil {
		log(err)
	}
	if len(o.scenarios) == 0 {
		o.chart = "" // p alone: nothing to chart
	}
	if o.libraries, err = pick(*poolF, findLibrary); err != nil {
		log(err)
	}
	if err := runParent(o); err != nil {
		log(err)
	}
}

func pick[T any](list string, find func(string) (T, error)) ([]T, error) {
	var picked []T
	for name := range strings.SplitSeq(list, ",") {
		v, err := find(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		picked = append(picked, v)
	}
	return picked, nil
}

// pickScenarios reads -scenarios: the scenarios of the matrices, and
// whether scenario p is asked for.
func pickScenarios(list string) (ss []scenario, load bool, err error) {
	var rest []string
	for id := range strings.SplitSeq(list, ",") {
		if id = strings.TrimSpace(id); id == "p" {
			load = true
		} else {
			rest = append(rest, id)
		}
	}
	if len(rest) == 0 {
		return nil, load, nil
	}
	ss, err = pick(strings.Join(rest, ","), findScenario)
	return ss, load, err
}

func ids(ss []scenario) string {
	var out []string
	for _, s := range ss {
		out = append(out, s.id)
	}
	return strings.Join(out, ",")
}

func names(ls []library) string {
	var out []string
	for _, l := range ls {
		out = append(out, l.name)
	}
	return strings.Join(out, ",")
}

// runChild runs one scenario with one library and prints the result as JSON.
// It fails if a task did not run or a goroutine outlived the pool.
func runChild(spec string, c config) error {
	sid, lname, ok := strings.Cut(spec, "/")
	if !ok {
		return fmt.Errorf("-child wants scenario/pool, got %q", spec)
	}
	if sid == "p" || strings.HasPrefix(sid, "p:") {
		r, err := runLoadChild(sid, lname, c)
		if err != nil {
			return err
		}
		return json.NewEncoder(os.Stdout).Encode(r)
	}
	s, err := findScenario(sid)
	if err != nil {
		return err
	}
	lib, err := findLibrary(lname)
	if err != nil {
		return err
	}
	if ok, why := s.applies(lib); !ok {
		return errors.New(why)
	}
	stop, err := startDiagnostics(c)
	if err != nil {
		return err
	}
	base := runtime.NumGoroutine()
	c.goroutines = base
	p := s.open(lib)
	r := s.run(&c, p, s.size(c.scale))
	p.Close()
	if err := stop(); err != nil {
		return err
	}
	if n := awaitGoroutines(base, 10*time.Second); n > base {
		return fmt.Errorf("%s/%s: %d goroutines still running after Close", sid, lname, n-base)
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// startDiagnostics starts the CPU profile and execution trace that c asks
// for; stop ends them and closes their files.
func startDiagnostics(c config) (stop func() error, err error) {
	var stops []func() error
	stop = func() error {
		var errs []error
		for _, s := range stops {
			errs = append(errs, s())
		}
		return errors.Join(errs...)
	}
	start := func(name string, begin func(io.Writer) error, end func()) error {
		if name == "" {
			return nil
		}
		f, err := os.Create(name)
		if err != nil {
			return err
		}
		if err := begin(f); err != nil {
			f.Close()
			return err
		}
		stops = append(stops, func() error { end(); return f.Close() })
		return nil
	}
	if err := start(c.cpuProfile, pprof.StartCPUProfile, pprof.StopCPUProfile); err != nil {
		return nil, errors.Join(err, stop())
	}
	if err := start(c.trace, trace.Start, trace.Stop); err != nil {
		return nil, errors.Join(err, stop())
	}
	return stop, nil
}

// A run is every measurement of the suite, in the order the report shows it.
type run struct {
	options
	started    time.Time
	elapsed    time.Duration
	machine    machine
	loadAfter  string
	samples    map[string]map[string][]result // quiet runs: scenario id -> library name -> results
	hogSamples map[string]map[string][]result // the same beside the CPU hog
	loads      map[loadRun]result             // scenario p's runs
	hogNote    string                         // what the hog said of its pinning
	failures   []string
}

// runParent runs the plan: for each scenario, a warm-up of every library, then
// reps rounds that each run every library once (A B C A B C …), every run in
// a fresh child process. With -hog both, each library runs quiet and beside
// the hog in turn (A A' B B' …, the order of the two swapped every round).
func runParent(o options) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	modes, err := hogModes(o.hog)
	if err != nil {
		return err
	}
	o.spin = calibrateSpin()
	r := &run{options: o, started: time.Now(), machine: describeMachine(),
		samples: map[string]map[string][]result{}, hogSamples: map[string]map[string][]result{}}
	for _, s := range o.scenarios {
		r.samples[s.id] = map[string][]result{}
		r.hogSamples[s.id] = map[string][]result{}
		for rep := 0; rep <= o.reps; rep++ { // rep 0 is the warm-up
			for _, lib := range o.libraries {
				if ok, _ := s.applies(lib); !ok {
					continue
				}
				for i := range modes {
					hogged := modes[(i+rep)%len(modes)]
					res, err := r.child(exe, s, lib, hogged)
					if err != nil {
						r.failures = append(r.failures, err.Error())
						fmt.Fprintln(os.Stderr, "FAIL", err)
						continue
					}
					label := "warm-up"
					if rep > 0 {
						label = fmt.Sprintf("rep %d/%d", rep, o.reps)
						set := r.samples
						if hogged {
							set = r.hogSamples
						}
						set[s.id][lib.name] = append(set[s.id][lib.name], res)
					}
					where := ""
					if hogged {
						where = " beside the CPU hog"
					}
					fmt.Fprintf(os.Stderr, "%-3s %-10s %-9s %10.1f ns/task%s\n", s.id, lib.name, label, res.Wall/float64(res.Tasks), where)
				}
			}
		}
	}
	if o.load {
		r.runLoadPlan(r.loadChild(exe))
	}
	r.elapsed = time.Since(r.started)
	r.loadAfter = loadAverage()
	if err := r.emit(os.Stdout); err != nil {
		return err
	}
	if len(r.failures) > 0 {
		where := "the report"
		if o.out != "" {
			where = o.out
		}
		return fmt.Errorf("%d runs failed; see %s", len(r.failures), where)
	}
	return nil
}

// chartFile is where the chart goes: the -chart flag if given, else
// chart.svg beside the -o report, else nowhere ("").
func chartFile(out, chart string) string {
	if chart != "" || out == "" {
		return chart
	}
	return filepath.Join(filepath.Dir(out), "chart.svg")
}

// emit writes the report to r.out, or to stdout when no -o was given, and
// the chart to r.chart if there is one: a run writes no file it was not
// asked for, so that trying the command never overwrites the committed
// RESULTS.md and chart.svg.
func (r *run) emit(stdout io.Writer) error {
	if r.out == "" {
		if err := r.writeReport(stdout); err != nil {
			return err
		}
	} else if err := writeFile(r.out, r.writeReport); err != nil {
		return err
	}
	if r.chart == "" {
		return nil
	}
	return writeFile(r.chart, r.primary().writeChart)
}

// child runs scenario s with lib in a fresh process and returns its result;
// hogged, beside a CPU hog that it starts first and kills (and waits for)
// once the child has returned, failed or timed out.
func (r *run) child(exe string, s scenario, lib library, hogged bool) (result, error) {
	return r.childSpec(exe, s.id+"/"+lib.name, hogged, r.timeout)
}

// childSpec runs the child of spec (scenario/pool, as -child takes it) and
// returns its result, giving up after timeout; hogged, beside a CPU hog, as
// child says.
func (r *run) childSpec(exe, spec string, hogged bool, timeout time.Duration) (result, error) {
	child := spec
	if hogged {
		h, err := startHog(exe)
		if err != nil {
			return result{}, fmt.Errorf("%s beside the CPU hog: %v", spec, err)
		}
		defer h.stop()
		if r.hogNote == "" {
			r.hogNote = h.note
		}
		spec += " beside the CPU hog"
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe,
		"-child", child,
		"-scale", fmt.Sprint(r.scale),
		"-spin", fmt.Sprint(r.spin))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("%s: %v: %s", spec, err, strings.TrimSpace(stderr.String()))
	}
	var res result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return result{}, fmt.Errorf("%s: bad output %q: %v", spec, stdout.String(), err)
	}
	return res, nil
}

func writeFile(name string, write func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return os.WriteFile(name, buf.Bytes(), 0o644)
}
