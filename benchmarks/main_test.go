package main

import (
	"bytes"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary stand in for the suite's: run with -child
// or -hog-child, it is a measured child or a CPU hog, as the suite's binary
// is when the parent re-executes itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == "-child" || os.Args[1] == hogFlag) {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// alive reports whether a process with this pid exists (and is not a
// zombie: one that has exited but not been reaped counts as alive).
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	if p.Signal(syscall.Signal(0)) != nil {
		return false
	}
	if runtime.GOOS == "linux" {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
		return err == nil
	}
	return true
}

// A child run beside the hog starts a real hog process, which spins while
// the child runs and is gone (killed and reaped) once the run returns:
// after a run that succeeded, one whose child failed, and one whose child
// timed out.
func TestHogIsGoneAfterAChildRun(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	var pids []int
	hogStarted = func(pid int) {
		assert.True(t, alive(pid), "the hog runs once started")
		pids = append(pids, pid)
	}
	t.Cleanup(func() { hogStarted = func(int) {} })
	sc := func(id string) scenario { s, err := findScenario(id); require.NoError(t, err); return s }
	lib := func(name string) library { l, err := findLibrary(name); require.NoError(t, err); return l }
	r := &run{options: options{timeout: time.Minute, config: config{scale: 0.001, spin: 10}}}

	res, err := r.child(exe, sc("a"), lib("ours"), true)
	require.NoError(t, err)
	assert.Equal(t, 1000, res.Tasks)
	if runtime.GOOS == "linux" {
		assert.True(t, strings.HasPrefix(r.hogNote, "pinned to CPU "), r.hogNote)
	} else {
		assert.Contains(t, r.hogNote, "not pinned")
	}

	_, err = r.child(exe, sc("g"), lib("ants"), true) // n/a: the child exits 1
	assert.ErrorContains(t, err, "g/ants beside the CPU hog")

	r.timeout = time.Millisecond
	_, err = r.child(exe, sc("d1"), lib("ours"), true)
	assert.Error(t, err, "the child timed out")

	require.Len(t, pids, 3)
	for _, pid := range pids {
		assert.False(t, alive(pid), "hog %d outlived its run", pid)
	}

	// A quiet run starts no hog.
	r.timeout = time.Minute
	_, err = r.child(exe, sc("a"), lib("ours"), false)
	require.NoError(t, err)
	assert.Len(t, pids, 3)
}

// The fastest peer is the peer with the lowest median, in wall time and in
// CPU separately: this library's variants (ours…) and the floors (relay…)
// are not peers, however fast; a scenario no peer can run is n/a, with the
// reason; and the hog half has its own fastest peer.
func TestRatioToTheFastestPeer(t *testing.T) {
	lib := func(name string) library { l, err := findLibrary(name); require.NoError(t, err); return l }
	sc := func(id string) scenario { s, err := findScenario(id); require.NoError(t, err); return s }
	intake := lib(floor)
	intake.name = "relay+intake" // a floor of another name
	r := &run{
		options: options{reps: 1, hog: hogBoth,
			scenarios: []scenario{sc("a"), sc("e"), sc("l")},
			libraries: []library{lib("ours"), lib("ours+hooks"), lib(floor), intake, lib("pond"), lib("conc"), lib("gammazero")},
			config:    config{scale: 1}},
		samples: map[string]map[string][]result{
			"a": {
				"ours":         {{Tasks: 10, Wall: 3000, CPU: 4000}},
				"ours+hooks":   {{Tasks: 10, Wall: 100, CPU: 100}},
				floor:          {{Tasks: 10, Wall: 200, CPU: 200}},
				"relay+intake": {{Tasks: 10, Wall: 300, CPU: 300}},
				"pond":         {{Tasks: 10, Wall: 2000, CPU: 5000}},
				"conc":         {{Tasks: 10, Wall: 2500, CPU: 2000}},
				"gammazero":    {{Tasks: 10, Wall: 4000, CPU: 8000}},
			},
			"e": {"ours": {{Tasks: 10, Wall: 1000, CPU: 1000}}}, // no peer's result
			"l": {"ours": {{Tasks: 10, Wall: 1000, CPU: 1000}}, floor: {{Tasks: 10, Wall: 900, CPU: 900}}},
		},
		hogSamples: map[string]map[string][]result{
			"a": {
				"ours": {{Tasks: 10, Wall: 6000, CPU: 4000}},
				"pond": {{Tasks: 10, Wall: 8000, CPU: 5000}},
				"conc": {{Tasks: 10, Wall: 5000, CPU: 5000}},
			},
		},
		hogNote: "pinned to CPU 0",
	}
	x, peer, na := r.peerRatio("a", wallNs)
	assert.Equal(t, "pond", peer)
	assert.InDelta(t, 1.5, x, 1e-9)
	assert.Empty(t, na)
	x, peer, _ = r.peerRatio("a", cpuNs)
	assert.Equal(t, "conc", peer)
	assert.InDelta(t, 2.0, x, 1e-9)
	x, peer, _ = r.beside().peerRatio("a", wallNs)
	assert.Equal(t, "conc", peer)
	assert.InDelta(t, 1.2, x, 1e-9)
	x, peer, _ = r.beside().peerRatio("a", cpuNs)
	assert.Equal(t, "pond", peer, "pond and conc tie; the first in the run's order")
	assert.InDelta(t, 0.8, x, 1e-9)
	x, _, na = r.peerRatio("e", wallNs)
	assert.True(t, x != x && na == "", "no peer's result: no ratio, not n/a")
	_, _, na = r.peerRatio("l", wallNs)
	assert.Equal(t, "n/a: no peer runs l (has no batch submit)", na)

	var report bytes.Buffer
	require.NoError(t, r.writeReport(&report))
	md := report.String()
	assert.Contains(t, md, "| scenario | wall | CPU/task | wall beside a CPU hog | CPU/task beside a CPU hog |\n|---|---:|---:|---:|---:|\n"+
		"| a | 1.50x (pond) | 2.00x (conc) | 1.20x (conc) | 0.80x (pond) |\n"+
		"| e | – | – | – | – |\n"+
		"| l |"+strings.Repeat(" n/a: no peer runs l (has no batch submit) |", 4)+"\n")
	assert.Contains(t, md, "| a: ours vs fastest peer, wall | ≤ 1.30x | 1.50x (pond) | **no** |\n"+
		"| a: ours vs fastest peer, CPU/task | ≤ 1.30x | 2.00x (conc) | **no** |\n"+
		"| a: ours vs fastest peer, wall beside the hog | ≤ 1.30x | 1.20x (conc) | yes |\n"+
		"| a: ours vs fastest peer, CPU/task beside the hog | ≤ 1.30x | 0.80x (pond) | yes |\n"+
		"| a: ours vs gammazero | ≤ 1.00x | 0.75x | yes |\n")
	assert.Contains(t, md, "| l: ours vs fastest peer, wall and CPU/task | ≤ 1.30x | n/a: no peer runs l (has no batch submit) | – |\n"+
		"| l: DoBatch ns/task vs relay floor (its batch) | ≤ 1.15x | 1.11x | yes |\n")
	assert.Contains(t, md, "## ns per task beside a CPU hog\n")
	assert.Contains(t, md, "## CPU ns per task beside a CPU hog\n")
	assert.Contains(t, md, "| a | 600 | – | – | – | 800 | 500 | – |\n", "the hog's medians")
	assert.Contains(t, md, "| CPU hog | every scenario and pool measured quiet and beside the CPU hog, interleaved (`-hog both`): ")
	assert.Contains(t, md, "pinned to CPU 0;")

	// -hog on: every section from the hog's runs, no quiet half.
	r.hog, r.samples = hogOn, nil
	report.Reset()
	require.NoError(t, r.writeReport(&report))
	md = report.String()
	assert.NotContains(t, md, "## ns per task (median)")
	assert.Contains(t, md, "| scenario | wall beside a CPU hog | CPU/task beside a CPU hog |\n")
	assert.Contains(t, md, "| a | 1.00x | – | – | – | 1.33x | 0.83x | – |\n", "the ratio to this library, from the hog's runs")
}

// Every scenario runs with every library it applies to, the relay floor
// included, at a tiny scale, in this process: every task runs (each
// scenario returns only once all its tasks have run), the numbers are sane,
// and no goroutine outlives Close.
func TestEveryScenarioWithEveryLibrary(t *testing.T) {
	c := &config{scale: 0.0005, spin: 10}
	ran := map[string][]string{}     // library -> the scenarios it ran
	runners := map[string][]string{} // scenario -> the libraries that ran it
	for _, s := range scenarios {
		for _, lib := range libraries {
			t.Run(s.id+"/"+lib.name, func(t *testing.T) {
				ok, why := s.applies(lib)
				if !ok {
					if lib.open != nil && lib.only == nil { // a library that runs only the delayed scenarios skips the others
						assert.NotEmpty(t, s.needs, "only scenarios that need something are skipped")
					}
					assert.NotEmpty(t, why)
					return
				}
				ran[lib.name] = append(ran[lib.name], s.id)
				runners[s.id] = append(runners[s.id], lib.name)
				base := runtime.NumGoroutine()
				c.goroutines = base
				p := s.open(lib)
				n := s.size(c.scale)
				switch s.id {
				case "g":
					n = 20_000 // enough queued tasks to stand out from heap noise
				case "k":
					n = 5*resizeEvery + 1 // five resizes, and a task after the last
				case "l":
					n = 2*batchSize + 7 // two full batches and a short one
				case "n":
					n = 20*orderPerKey + 7 // 20 keys, the first seven with a task more
				case "o":
					n = 1099 // the flood's 1,000 tasks and one for each trickling tenant
				case "q":
					n = 3*mapWorkers + 5 // four rounds of 10 ms, the last one part full
				}
				r := s.run(c, p, n)
				p.Close()
				assert.Equal(t, n, r.Tasks)
				assert.Positive(t, r.Wall)
				assert.LessOrEqual(t, awaitGoroutines(base, 10*time.Second), base, "goroutines left after Close")
				switch s.id {
				case "f", "h":
					assert.Positive(t, r.P50)
					assert.GreaterOrEqual(t, r.P99, r.P50)
				case "g":
					assert.Positive(t, r.Queued, "queued tasks hold heap")
				case "n":
					// The count can be off by the goroutines of earlier subtests
					// that end meanwhile; a few, not 20.
					assert.Positive(t, r.Goroutines, "the pool's goroutines at least")
					if lib.keyed == nil {
						assert.GreaterOrEqual(t, r.Goroutines, 16.0, "a goroutine per key by hand: 20")
					} else {
						assert.Less(t, r.Goroutines, 16.0, "with keys: the pool's own, at most 9")
					}
				case "o":
					assert.Positive(t, r.P50, "the trickling tenants waited")
					assert.GreaterOrEqual(t, r.P99, r.P50)
				case "q":
					// At most mapWorkers items at once: no faster than the ideal.
					assert.GreaterOrEqual(t, r.Wall, float64(mapIdeal(n)), "ordered")
					if assert.NotNil(t, r.Unordered, "the unordered run") {
						assert.Equal(t, n, r.Unordered.Tasks)
						assert.GreaterOrEqual(t, r.Unordered.Wall, float64(mapIdeal(n)), "unordered")
					}
				}
			})
		}
	}
	// The relay queues, so it runs g too; it has no handles or groups, but
	// a batch submit (the floor of l), and a delayed one (the floor of m1
	// and m2).
	assert.Equal(t, []string{"a", "b", "c", "d1", "d2", "e", "f", "g", "l", "m1", "m2"}, ran[floor])
	assert.Equal(t, append(slices.DeleteFunc(slices.Clone(ran["gammazero"]), func(id string) bool { return id == "n" || id == "o" }), "l", "m1", "m2"), ran[floor],
		"the relay runs what gammazero runs but the keyed scenarios, l and the delayed scenarios")
	// m1 and m2: this library with Delay, and with AfterFunc, and the relay.
	assert.Equal(t, []string{"ours", "ours+afterfunc", floor}, runners["m1"])
	// j: the pools with a bound (a queue's, or the workers'); k: those that
	// resize while they run; l: only this library and the relays (the
	// relay and the floors of other mechanisms) have a batch submit.
	assert.Equal(t, []string{"ours", "pond", "ants", "conc", "errgroup", "semaphore"}, runners["j"])
	assert.Equal(t, []string{"ours", "pond", "ants"}, runners["k"])
	assert.Equal(t, []string{"ours", floor, "relay+intake", "relay+release", "relay+lane"}, runners["l"])
	// The floors of other mechanisms run what the relay runs but the
	// delayed scenarios.
	for _, name := range []string{"relay+intake", "relay+release", "relay+lane"} {
		assert.Equal(t, slices.DeleteFunc(slices.Clone(ran[floor]), func(id string) bool { return id == "m1" || id == "m2" }), ran[name], name)
	}
	// n: this library with keys, and the hand-written answer on four pools;
	// o: the same but ants, which has no queue. ours+key runs only these.
	assert.Equal(t, []string{"ours", "ours+key", "gammazero", "pond", "ants"}, runners["n"])
	assert.Equal(t, []string{"ours", "ours+key", "gammazero", "pond"}, runners["o"])
	assert.Equal(t, []string{"n", "o"}, ran["ours+key"])
	assert.Equal(t, []string{"a"}, ran["ours+adaptive"], "the cost of the adaptive size: a only")
	// q: the pools with an ordered map; rill runs nothing else.
	assert.Equal(t, []string{"ours", "conc", "rill"}, runners["q"])
	assert.Equal(t, []string{"q"}, ran["rill"])
}

// Scenario q runs only when named, at 10,000 items (scaled) whose ideal
// is 12.5 s at scale 1.
func TestScenarioQIsNamed(t *testing.T) {
	assert.NotContains(t, strings.Split(ids(defaultScenarios()), ","), "q", "not in the default list")
	assert.Equal(t, len(scenarios)-1, len(defaultScenarios()))
	ss, _, err := pickScenarios("q")
	require.NoError(t, err)
	require.Len(t, ss, 1)
	assert.Equal(t, "q", ss[0].id)
	assert.Equal(t, 10_000, ss[0].size(1))
	assert.Equal(t, 100, ss[0].size(0.01))
	assert.Equal(t, 12500*time.Millisecond, mapIdeal(ss[0].size(1)))
	assert.Equal(t, 20*time.Millisecond, mapIdeal(9), "a last round part full takes a round")
}

// fakeMap hands out the results it is given, in that order, without
// calling fn: a map that may break scenario q's rules.
type fakeMap struct {
	pool
	ordered, unordered []int
}

func (f fakeMap) MapOrdered(_ iter.Seq[int], _ func(int) int, use func(int)) {
	for _, v := range f.ordered {
		use(v)
	}
}

func (f fakeMap) MapUnordered(_ iter.Seq[int], _ func(int) int, use func(int)) {
	for _, v := range f.unordered {
		use(v)
	}
}

// Scenario q fails a run whose ordered results come out of order or not
// all, or whose unordered results repeat one.
func TestMapScenarioChecksTheResults(t *testing.T) {
	run := func(ordered, unordered []int) func() {
		return func() { runMap(nil, fakeMap{ordered: ordered, unordered: unordered}, 3) }
	}
	assert.PanicsWithValue(t, "ordered map: result 2 came when 1 was next", run([]int{0, 2, 1}, nil))
	assert.PanicsWithValue(t, "ordered map: 2 of 3 results came", run([]int{0, 1}, nil))
	assert.PanicsWithValue(t, "unordered map: result 1 came twice or was never given", run([]int{0, 1, 2}, []int{2, 1, 1}))
	assert.PanicsWithValue(t, "unordered map: result 3 came twice or was never given", run([]int{0, 1, 2}, []int{2, 3}))
	assert.PanicsWithValue(t, "unordered map: 2 of 3 results came", run([]int{0, 1, 2}, []int{2, 0}))
	assert.NotPanics(t, run([]int{0, 1, 2}, []int{2, 0, 1}))
}

// The order check of scenario n fails a run whose tasks of one key
// overlap, start out of order, or do not all run.
func TestKeyOrderCatchesBrokenOrder(t *testing.T) {
	o := newKeyOrder(2)
	o.started(0, 0)
	o.started(1, 0) // another key may run meanwhile
	o.ended(0)
	o.started(0, 1)
	o.ended(0)
	o.ended(1)
	assert.NoError(t, o.err(3))
	assert.ErrorContains(t, o.err(4), "3 of 4 keyed tasks ran")

	o = newKeyOrder(1)
	o.started(0, 0)
	o.started(0, 1)
	assert.ErrorContains(t, o.err(2), "key 0: task 1 started while another task of the key ran")

	o = newKeyOrder(1)
	o.started(0, 1)
	assert.ErrorContains(t, o.err(1), "key 0: task 1 started when task 0 was next")
	o.ended(0)
	o.started(0, 0)
	assert.ErrorContains(t, o.err(2), "key 0: task 1 started when task 0 was next", "the first failure is kept")
}

// The hand-written answer gives each key's goroutine a synchronous submit
// of its own: on a pool whose SubmitWait is the adapter's signal, made for
// one goroutine at a time, a key's wait ends with its own task, not with
// another key's that finished first (with one shared signal, half the runs
// would fail, and -race would see the signal's task written by both).
func TestKeySubmitWaitIsPerKey(t *testing.T) {
	p := openAnts(2)
	defer p.Close()
	release := make(chan struct{})
	slow, fast := newTask(func() { <-release }), newTask(func() {})
	slowWait, fastWait := keySubmitWait(p), keySubmitWait(p)
	returned := make(chan string, 2)
	go func() { slowWait(slow); returned <- "slow" }()
	require.Eventually(t, func() bool { return p.(antsPool).p.Running() == 1 }, 10*time.Second, time.Millisecond, "the slow task runs")
	go func() { fastWait(fast); returned <- "fast" }()
	assert.Equal(t, "fast", <-returned, "the first wait to end is the fast key's")
	close(release)
	assert.Equal(t, "slow", <-returned)
}

// In scenario j, a pool with a queue blocks the submitter once workers
// tasks run and bound tasks wait, and a pool without one once workers
// tasks run; the submitter goes on when a task finishes. This checks the
// options each adapter passes, not the libraries.
func TestBoundedPoolsBlockTheSubmitterAtTheBound(t *testing.T) {
	const workers, bound = 2, 3
	for _, lib := range libraries {
		if lib.bounded == nil {
			continue
		}
		t.Run(lib.name, func(t *testing.T) {
			base := runtime.NumGoroutine()
			p := lib.bounded(workers, bound)
			release := make(chan struct{})
			var started atomic.Int64
			blocker := newTask(func() {
				started.Add(1)
				<-release
			})
			for range workers {
				p.Submit(blocker)
			}
			require.Eventually(t, func() bool { return started.Load() == workers }, 10*time.Second, time.Millisecond)
			fits := 0
			if lib.queues {
				fits = bound
			}
			var ran atomic.Int64
			count := newTask(func() { ran.Add(1) })
			for range fits {
				p.Submit(count) // returns: there is room
			}
			submitted := make(chan struct{})
			go func() {
				p.Submit(count)
				close(submitted)
			}()
			select {
			case <-submitted:
				t.Fatalf("Submit returned with %d tasks running and %d waiting", workers, fits)
			case <-time.After(50 * time.Millisecond):
			}
			close(release)
			<-submitted
			p.Close()
			assert.Equal(t, int64(fits+1), ran.Load())
			assert.LessOrEqual(t, awaitGoroutines(base, 10*time.Second), base, "goroutines left after Close")
		})
	}
}

// The resize adapters change the size each library reports.
func TestResizeAdaptersChangeTheSize(t *testing.T) {
	for _, lib := range libraries {
		if !lib.resizes {
			continue
		}
		t.Run(lib.name, func(t *testing.T) {
			p := lib.open(resizeSizes[0])
			defer p.Close()
			size := func() int {
				switch a := p.(type) {
				case oursPool:
					return a.wp.Size()
				case pondPool:
					return a.p.MaxConcurrency()
				case antsPool:
					return a.p.Cap()
				}
				t.Fatalf("no size for %T", p)
				return 0
			}
			assert.Equal(t, resizeSizes[0], size())
			for _, n := range []int{resizeSizes[1], resizeSizes[0], resizeSizes[1]} {
				p.(resizePool).Resize(n)
				assert.Equal(t, n, size())
			}
		})
	}
}

// The cost of the adaptive size in scenario a is a target of the full
// report.
func TestAdaptiveCostTarget(t *testing.T) {
	lib := func(name string) library { l, err := findLibrary(name); require.NoError(t, err); return l }
	sc, err := findScenario("a")
	require.NoError(t, err)
	r := &run{
		options: options{reps: 1, scenarios: []scenario{sc}, libraries: []library{lib("ours"), lib("ours+adaptive")}, config: config{scale: 1}},
		samples: map[string]map[string][]result{"a": {
			"ours":          {{Tasks: 100, Wall: 30000}},
			"ours+adaptive": {{Tasks: 100, Wall: 31200}},
		}},
	}
	var report bytes.Buffer
	require.NoError(t, r.writeReport(&report))
	assert.Contains(t, report.String(), "| a: ours+adaptive vs ours: what WithAdaptiveSize(1, 4) costs New(4) | ≤ 1.02x | 1.04x | **no** |\n")
	ok, _ := sc.applies(lib("ours+adaptive"))
	assert.True(t, ok)
	b, err := findScenario("b")
	require.NoError(t, err)
	ok, why := b.applies(lib("ours+adaptive"))
	assert.False(t, ok)
	assert.Equal(t, "n/a: runs a only", why)
}

func TestScenarioSizeNeverZero(t *testing.T) {
	s, err := findScenario("a")
	require.NoError(t, err)
	assert.Equal(t, 1_000_000, s.size(1))
	assert.Equal(t, 10_000, s.size(0.01))
	assert.Equal(t, 1, s.size(1e-12))
}

func TestUnknownNamesAreErrors(t *testing.T) {
	_, err := pick("a,zz", findScenario)
	assert.ErrorContains(t, err, `unknown scenario "zz"`)
	_, err = pick("ours,nope", findLibrary)
	assert.ErrorContains(t, err, `unknown pool "nope"`)
	assert.Error(t, runChild("a", config{scale: 1}), "child spec without a pool")
	assert.ErrorContains(t, runChild("g/ants", config{scale: 1}), "n/a")
}

func TestMedian(t *testing.T) {
	assert.Equal(t, 2.0, median([]float64{3, 1, 2}))
	assert.Equal(t, 2.5, median([]float64{4, 1, 3, 2}))
}

// The report and the chart come out of made-up samples with the sections,
// ratios and the n/a rows they promise.
func TestReportAndChart(t *testing.T) {
	lib := func(name string) library { l, err := findLibrary(name); require.NoError(t, err); return l }
	sc := func(id string) scenario { s, err := findScenario(id); require.NoError(t, err); return s }
	r := &run{
		options: options{out: "out/RESULTS.md", chart: "out/chart.svg", reps: 2,
			scenarios: []scenario{sc("a"), sc("g"), sc("h"), sc("j"), sc("l")},
			libraries: []library{lib("ours"), lib(floor), lib("gammazero"), lib("conc")},
			config:    config{scale: 1}},
		started: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC),
		machine: machine{goVersion: "go1.x", cpu: "test cpu", numCPU: 2, gomaxprocs: 2},
		samples: map[string]map[string][]result{
			"a": {
				"ours":      {{Tasks: 10, Wall: 1000, CPU: 2000}, {Tasks: 10, Wall: 3000, CPU: 2000}},
				"gammazero": {{Tasks: 10, Wall: 4000, CPU: 1200}, {Tasks: 10, Wall: 4000, CPU: 1200}},
				"conc":      {{Tasks: 10, Wall: 1000, CPU: 1500}, {Tasks: 10, Wall: 1000, CPU: 1500}},
				floor:       {{Tasks: 10, Wall: 1600, CPU: 1000}, {Tasks: 10, Wall: 2400, CPU: 1000}},
			},
			"g": {
				"ours":      {{Tasks: 10, Wall: 500, Queued: 8.4}},
				"gammazero": {{Tasks: 10, Wall: 500, Queued: 8.4}},
				floor:       {{Tasks: 10, Wall: 250, Queued: 8.4}},
			},
			"h": {
				"ours": {{Tasks: 10, Wall: 5000, P50: 400, P99: 900}},
			},
			"j": {
				"ours": {{Tasks: 10, Wall: 3000}},
				"conc": {{Tasks: 10, Wall: 1500}},
			},
			"l": {
				"ours": {{Tasks: 10, Wall: 1000, Mallocs: 0.02}},
				floor:  {{Tasks: 10, Wall: 1800}},
			},
		},
	}
	var report bytes.Buffer
	require.NoError(t, r.writeReport(&report))
	md := report.String()
	assert.Contains(t, md, "![ns per task, one panel per scenario](chart.svg)")
	// The targets: this library against the fastest peer (conc in wall
	// time, gammazero in CPU), against gammazero, and the memory targets.
	assert.Contains(t, md, "| a: ours vs fastest peer, wall | ≤ 1.30x | 2.00x (conc) | **no** |\n"+
		"| a: ours vs fastest peer, CPU/task | ≤ 1.30x | 1.67x (gammazero) | **no** |\n"+
		"| a: ours vs gammazero | ≤ 1.00x | 0.50x | yes |\n")
	assert.Contains(t, md, "| g: live heap bytes per queued task | ≤ 8.50 B | 8.40 B | yes |")
	assert.NotContains(t, md, "beside the hog |", "no hog run, no hog targets")
	assert.Contains(t, md, "| a | 200 | 100 | 120 | 150 |", "CPU medians")
	assert.Contains(t, md, "| a | 2.00x (conc) | 1.67x (gammazero) |\n", "the fastest peer, wall and CPU")
	assert.Contains(t, md, "| g | 50.0 | 25.0 | 50.0 | – |", "medians")
	assert.Contains(t, md, "| a | 200 | 200 | 400 | 100 |", "medians")
	assert.Contains(t, md, "| ours | queues; Submit never blocks; Go returns a Task; Group on the pool; DoContext(ctx, task, TaskOption{Delay: d}) in the delayed scenarios | 200 (100–300) | 1.00x | 0.50x | 1.00x |")
	assert.Contains(t, md, "| relay | "+lib(floor).note+" | 200 (160–240) | 1.00x | 0.50x | 1.00x |")
	assert.Contains(t, md, "| ours | queues; Submit never blocks; Go returns a Task; Group on the pool; DoContext(ctx, task, TaskOption{Delay: d}) in the delayed scenarios | 50.0 (50.0–50.0) | 1.00x | 1.00x | 2.00x |", "g runs with the relay")
	assert.Contains(t, md, "| ours | queues; Submit never blocks; Go returns a Task; Group on the pool; DoContext(ctx, task, TaskOption{Delay: d}) in the delayed scenarios | 500 (500–500) | 1.00x | n/a | n/a |", "h: no relay, no gammazero")
	assert.Contains(t, md, "| relay | "+lib(floor).note+" | n/a:")
	assert.Contains(t, md, "| conc | "+lib("conc").note+" | n/a:")
	assert.Contains(t, md, "| g | 2.00x | 1.00x | 2.00x | – |\n| h | n/a | n/a | n/a | n/a |\n", "the relay matrix: n/a where the relay cannot run")
	for _, h := range []string{"## Targets for this library", "## ns per task (median)", "## CPU ns per task (median)", "## Ratio to the fastest peer", "## Ratio to this library", "## Ratio to gammazero/workerpool", "## Ratio to the relay floor", "### a: ", "### g: ", "### h: "} {
		assert.Contains(t, md, "\n"+h)
	}
	assert.Contains(t, md, "`relay` is a reference, not a usable pool")
	assert.Contains(t, md, "It is n/a in h and j, which the relay cannot run")

	// j: the contract column gives the bound each pool was opened with.
	assert.Contains(t, md, "| ours | WithMaxWaiting(64, Block): Submit waits for room while 64 tasks wait | 300 (300–300) | 1.00x | n/a | n/a |")
	assert.Contains(t, md, "| conc | "+lib("conc").boundNote+" | 150 (150–150) | 0.50x | n/a | n/a |")
	assert.Contains(t, md, "| gammazero | "+lib("gammazero").note+" | n/a: has no bound")
	assert.Contains(t, md, scenarioNotes["j"])
	// l: this library and the relay, each with its ratio to its own a.
	assert.Contains(t, md, "| l: ours vs fastest peer, wall and CPU/task | ≤ 1.30x | n/a: no peer runs l (has no batch submit) | – |")
	assert.Contains(t, md, "| l | n/a: no peer runs l (has no batch submit) | n/a: no peer runs l (has no batch submit) |\n")
	assert.Contains(t, md, "| l: allocs per task | ≤ 0.0100 | 0.0020 | yes |")
	assert.Contains(t, md, "**DoBatch vs Submit, this library:** l 100 ns/task / a 200 ns/task = **0.50x** (target ≤ 0.60x, goal 0.50x); l allocs per task 0.0020 (target ≤ 0.01). "+
		"The relay's own l / a in this run, the floor of that ratio for this design on this machine: **0.90x**.")
	assert.Contains(t, md, "| l: DoBatch ns/task vs relay floor (its batch) | ≤ 1.15x | 0.56x | yes |")
	assert.Contains(t, md, "| conc | "+lib("conc").note+" | n/a: has no batch submit")
	assert.Contains(t, md, "| l | 1.00x | 1.80x | – | – |\n", "the ratio to this library in l")

	var chart bytes.Buffer
	require.NoError(t, r.writeChart(&chart))
	assert.Contains(t, chart.String(), "<svg")
	assert.Contains(t, chart.String(), "gammazero")
	assert.Contains(t, chart.String(), "relay (floor)")
}

// The keyed scenarios' report: the comparison of keys with the hand-written
// answer (n) and with no keys (o) on this library, their columns, and n/a
// for the pools that do not run them.
func TestKeyedReport(t *testing.T) {
	lib := func(name string) library { l, err := findLibrary(name); require.NoError(t, err); return l }
	sc := func(id string) scenario { s, err := findScenario(id); require.NoError(t, err); return s }
	r := &run{
		options: options{out: "out/RESULTS.md", chart: "out/chart.svg", reps: 1,
			scenarios: []scenario{sc("n"), sc("o")},
			libraries: []library{lib("ours"), lib("ours+key"), lib(floor), lib("ants")},
			config:    config{scale: 1}},
		samples: map[string]map[string][]result{
			"n": {
				"ours":     {{Tasks: 10, Wall: 4000, Bytes: 800, Goroutines: 1009, Stacks: 8 << 20}},
				"ours+key": {{Tasks: 10, Wall: 3000, Bytes: 100, Goroutines: 9, Stacks: 64 << 10}},
				"ants":     {{Tasks: 10, Wall: 5000, Goroutines: 1008, Stacks: 8 << 20}},
			},
			"o": {
				"ours":     {{Tasks: 10, Wall: 1000, P50: 20e6, P99: 40e6}},
				"ours+key": {{Tasks: 10, Wall: 1100, P50: 1e6, P99: 2e6}},
			},
		},
	}
	var report bytes.Buffer
	require.NoError(t, r.writeReport(&report))
	md := report.String()
	assert.Contains(t, md, "**WithKeys(1, nil) vs the hand-written answer, both on this library:** 300 / 400 ns per task = **0.75x**; 10.0 / 80.0 B allocated per task; 9 / 1009 goroutines (64 / 8192 KiB of stacks) once every task is submitted.")
	assert.Contains(t, md, "| ours+key | "+lib("ours+key").note+" | 300 (300–300) | 0.75x | – | n/a | 0.00 | 0.00 | 10.0 | 9 | 64 |")
	assert.Contains(t, md, "| ants | by hand: a goroutine and a channel per key; each key's goroutine gives its tasks one at a time, in order, by "+lib("ants").byHand+" | 500 (500–500) | 1.25x |")
	assert.Contains(t, md, "| relay | "+lib(floor).note+" | n/a: the keyed scenarios")
	assert.Contains(t, md, "**The trickling tenants' p99 wait, with Key vs without, on this library:** 2000 / 40000 µs = **0.05x** (p50 1000 / 20000 µs); all tasks, ns per task: 110 / 100 (1.10x).")
	assert.Contains(t, md, "| ours | "+lib("ours").note+"; no keys: first come, first served | 100 (100–100) | 1.00x | – | n/a | 0.00 | 0.00 | 0.0 | 20000 | 40000 |")
	assert.Contains(t, md, "| ants | "+lib("ants").note+" | n/a: has no queue")
	assert.Contains(t, md, "| n | 400 | 300 | – | 500 |")
}

// Without -o the report goes to stdout and no file is written (so trying
// the command never overwrites the committed RESULTS.md and chart.svg);
// with -o the report and chart.svg beside it are written; -chart alone adds
// the chart and keeps the report on stdout.
func TestWritesFilesOnlyWhenAsked(t *testing.T) {
	sc, err := findScenario("a")
	require.NoError(t, err)
	ours, err := findLibrary("ours")
	require.NoError(t, err)
	newRun := func(out, chart string) *run {
		return &run{
			options: options{out: out, chart: chartFile(out, chart), reps: 1,
				scenarios: []scenario{sc}, libraries: []library{ours}, config: config{scale: 1}},
			samples: map[string]map[string][]result{"a": {"ours": {{Tasks: 10, Wall: 1000}}}},
		}
	}
	files := func(dir string) []string {
		var names []string
		require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(dir, path)
				names = append(names, filepath.ToSlash(rel))
			}
			return err
		}))
		return names
	}

	dir := t.TempDir()
	t.Chdir(dir)
	var stdout bytes.Buffer
	require.NoError(t, newRun("", "").emit(&stdout))
	assert.Contains(t, stdout.String(), "# Benchmark results")
	assert.NotContains(t, stdout.String(), "chart.svg", "no chart, so no link to one")
	assert.Empty(t, files(dir), "files written without -o")

	stdout.Reset()
	require.NoError(t, newRun("out/RESULTS.md", "").emit(&stdout))
	assert.Empty(t, stdout.String(), "the report went to -o")
	assert.Equal(t, []string{"out/RESULTS.md", "out/chart.svg"}, files(dir))
	report, err := os.ReadFile(filepath.Join(dir, "out", "RESULTS.md"))
	require.NoError(t, err)
	assert.Contains(t, string(report), "](chart.svg)", "the report links the chart beside it")

	require.NoError(t, os.RemoveAll(filepath.Join(dir, "out")))
	require.NoError(t, newRun("", "only.svg").emit(&stdout))
	assert.Contains(t, stdout.String(), "# Benchmark results")
	assert.Equal(t, []string{"only.svg"}, files(dir))
}

// Scenario q's report: items per second and the ratio to the ideal,
// Map's throughput against conc's stream and rill's OrderedMap (a target
// each), the unordered rows below the ordered ones, and n/a for the pools
// without an ordered map.
func TestMapReport(t *testing.T) {
	lib := func(name string) library { l, err := findLibrary(name); require.NoError(t, err); return l }
	sc, err := findScenario("q")
	require.NoError(t, err)
	const n = 10_000
	sample := func(ordered, unordered float64) result { // wall times in seconds
		u := result{Tasks: n, Wall: unordered * 1e9}
		return result{Tasks: n, Wall: ordered * 1e9, Unordered: &u}
	}
	r := &run{
		options: options{reps: 3, scenarios: []scenario{sc},
			libraries: []library{lib("ours"), lib("conc"), lib("rill"), lib("gammazero")}, config: config{scale: 1}},
		samples: map[string]map[string][]result{"q": {
			"ours": {sample(14, 13.3), sample(13.6, 13.5), sample(15, 13.4)}, // medians 14 and 13.4
			"conc": {sample(13, 13.4), sample(13, 13.4), sample(13, 13.4)},
			"rill": {sample(14.7, 14.74), sample(14.7, 14.74), sample(14.7, 14.74)},
		}},
	}
	var report bytes.Buffer
	require.NoError(t, r.writeReport(&report))
	md := report.String()
	assert.Contains(t, md, "| q: Map throughput vs conc's stream | ≥ 0.95x | 0.93x | **no** |\n"+
		"| q: Map throughput vs rill's OrderedMap | ≥ 0.95x | 1.05x | yes |\n")
	assert.Contains(t, md, "**Map, this library:** 1.40 ms per item, 714 items/s, 1.12x the ideal. "+
		"Throughput against conc's stream: **0.93x** (wall time 1.08x; target ≥ 0.95x). "+
		"Throughput against rill's OrderedMap: **1.05x** (wall time 0.95x; target ≥ 0.95x). "+
		"MapUnordered: 1.34 ms per item, 1.07x the ideal; throughput against conc's unordered map 1.00x; throughput against rill's unordered map 1.10x.\n")
	assert.Contains(t, md, "| pool | contract | ns/task median (min–max) | vs ours | vs gammazero | vs relay | CPU ns/task | allocs/task | B/task | items/s | vs ideal |\n")
	assert.Contains(t, md, "| ours | "+lib("ours").mapNote+" | 1400000 (1360000–1500000) | 1.00x | n/a | n/a | 0.00 | 0.00 | 0.0 | 714 | 1.12x |\n"+
		"| conc | "+lib("conc").mapNote+" | 1300000 (1300000–1300000) | 0.93x | n/a | n/a | 0.00 | 0.00 | 0.0 | 769 | 1.04x |\n"+
		"| rill | "+lib("rill").mapNote+" | 1470000 (1470000–1470000) | 1.05x | n/a | n/a | 0.00 | 0.00 | 0.0 | 680 | 1.18x |\n"+
		"| gammazero | "+lib("gammazero").note+" | n/a: has no ordered map (a stream of results in input order from a bounded pool) |")
	assert.Contains(t, md, "| ours, unordered | "+lib("ours").mapUnordered+" | 1340000 (1330000–1350000) | 1.00x | n/a | n/a | 0.00 | 0.00 | 0.0 | 746 | 1.07x |\n"+
		"| conc, unordered | "+lib("conc").mapUnordered+" | 1340000 (1340000–1340000) | 1.00x | n/a | n/a | 0.00 | 0.00 | 0.0 | 746 | 1.07x |\n"+
		"| rill, unordered | "+lib("rill").mapUnordered+" | 1474000 (1474000–1474000) | 1.10x | n/a | n/a | 0.00 | 0.00 | 0.0 | 678 | 1.18x |\n\n")
	assert.Contains(t, md, "| q | 1.08x (conc) | – |\n", "the fastest peer, from the ordered runs")
	assert.Contains(t, md, "| q | 1400000 | 1300000 | 1470000 | – |\n", "the matrices show the ordered runs")
	assert.Contains(t, md, "It is n/a in q, which the relay cannot run (it has no task handles, groups, bound, resize, batch submit or ordered map;")
}
