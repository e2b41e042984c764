package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// A scenario is one workload. Its size is scaled by -scale; at least one task
// always runs.
type scenario struct {
	id      string
	title   string
	tasks   int    // at scale 1
	needs   string // what the library must have: "queue", "handles", "groups", "bound", "resize", "batch", "delay", or "" for nothing
	workers func() int
	run     func(c *config, p pool, n int) result
}

var scenarios = []scenario{
	{"a", "1,000,000 no-op tasks, one submitter, 4 workers", 1_000_000, "", fixed(4), runBatch(noop)},
	{"b", "1,000,000 no-op tasks, one submitter, 1,000 workers", 1_000_000, "", fixed(1000), runBatch(noop)},
	{"c", "1,000,000 tasks of ~1 µs CPU, workers = GOMAXPROCS", 1_000_000, "", gomaxprocs, runBatch(spin)},
	{"d1", "100,000 tasks sleeping 1 ms, 1,000 workers", 100_000, "", fixed(1000), runBatch(sleep)},
	{"d2", "100,000 tasks sleeping 1 ms, 10,000 workers", 100_000, "", fixed(10_000), runBatch(sleep)},
	{"e", "8 submitters x 125,000 no-op tasks, 8 workers", 1_000_000, "", fixed(8), runContended},
	{"f", "200,000 sequential SubmitWait round trips, 4 workers", 200_000, "", fixed(4), runRoundTrips},
	{"g", "1,000,000 tasks queued behind one blocked worker", 1_000_000, "queue", fixed(1), runQueued},
	{"h", "200,000 sequential round trips through a task handle that returns an error, 4 workers", 200_000, "handles", fixed(4), runHandleRoundTrips},
	{"i", "1,000 groups of 1,000 no-op tasks returning an error (errgroup semantics), 4 workers", 1_000_000, "groups", fixed(4), runGroups},
	{"j", "8 submitters x 125,000 no-op tasks into a queue bounded at 64 (back-pressure), 8 workers", 1_000_000, "bound", fixed(8), runContended},
	{"k", "1,000,000 no-op tasks, one submitter, resized between 2 and 16 workers every 1,000 tasks", 1_000_000, "resize", fixed(resizeSizes[0]), runResizing},
	{"l", "1,000,000 no-op tasks in batches of 1,000 (DoBatch), 4 workers", 1_000_000, "batch", fixed(4), runBatches},
	{"m1", "10,000 no-op tasks, each delayed by a random delay under 1 s, 4 workers", 10_000, "delay", fixed(4), runDelayed},
	{"m2", "1,000,000 no-op tasks, each delayed by a random delay under 1 s, 4 workers", 1_000_000, "delay", fixed(4), runDelayed},
}

// scenarioNotes are printed under a scenario's heading in the report.
var scenarioNotes = map[string]string{
	"j": "The workload of e, into pools opened with a bound: this library and pond with a queue of 64 waiting tasks that blocks the submitter while it is full; " +
		"ants, conc, errgroup and the semaphore have no queue, so their bound is the 8 workers and their run is the same as in e. " +
		"gammazero and the relay queue without limit, and the bare goroutine has no bound: n/a.",
	"k": "After every 1,000 submitted tasks the submitter hands the next size (16, 2, 16, … from 2 at the start) to a second goroutine, which resizes the pool while the submits go on: " +
		"this library and pond with Resize, ants with Tune. The sizes follow the submit count, not the clock, so every run makes the same resizes. " +
		"The others cannot change their worker count while they run: n/a.",
	"l": "The tasks of a, given to DoBatch 1,000 at a time from one slice built once and reused (DoBatch keeps no reference to it). " +
		"Only this library and the relay (one message per batch, then one hand-off per task) have a batch submit; the line below compares l with a from the same run, for both.",
	"m1": delayedNote,
	"m2": delayedNote,
}

// delayedNote is the note of the delayed-task scenarios.
const delayedNote = "Each task is given with a delay drawn uniformly from [0, 1 s) (the same fixed-seed sequence for every pool), and the run lasts until the last has run, so wall time is about a second for everyone: compare CPU ns/task and B/task. " +
	"ours gives a plain task with Do(task, Delay(d)), waiting as it is in the pool's timer heap (one entry, no carrier); ours+afterfunc is the same pool driven the way users do it without Delay, time.AfterFunc(d, func() { Submit(task) }), a runtime timer, a closure and, when it fires, a goroutine per task; " +
	"the relay keeps the tasks in a heap with one timer (relay_delay.go), the floor of this design for delayed tasks. The others have no delayed submit: n/a."

// waitingBound is the bound on waiting tasks in scenario j.
const waitingBound = 64

// resizeSizes are the sizes scenario k opens its pool with (the first) and
// then alternates between, one resize every resizeEvery submitted tasks.
var resizeSizes = [2]int{2, 16}

const (
	resizeEvery = 1000
	batchSize   = 1000
)

func fixed(n int) func() int { return func() int { return n } }
func gomaxprocs() int        { return runtime.GOMAXPROCS(0) }

func findScenario(id string) (scenario, error) {
	for _, s := range scenarios {
		if s.id == id {
			return s, nil
		}
	}
	return scenario{}, fmt.Errorf("unknown scenario %q", id)
}

// applies reports whether lib can run s, and why not.
func (s scenario) applies(lib library) (bool, string) {
	switch {
	case s.needs == "queue" && !lib.queues:
		return false, "n/a: has no queue (Submit blocks, or every task gets a goroutine)"
	case s.needs == "handles" && !lib.handles:
		return false, "n/a: has no task handle that returns an error"
	case s.needs == "groups" && !lib.groups:
		return false, "n/a: has no group with a first error"
	case s.needs == "bound" && lib.bounded == nil:
		return false, "n/a: has no bound (its queue has no limit, or every task gets a goroutine)"
	case s.needs == "resize" && !lib.resizes:
		return false, "n/a: cannot change its worker count while it runs"
	case s.needs == "batch" && !lib.batches:
		return false, "n/a: has no batch submit"
	case s.needs == "delay" && lib.delayed == nil:
		return false, "n/a: has no delayed submit"
	case s.needs != "delay" && lib.open == nil:
		return false, "n/a: runs the delayed scenarios only"
	}
	return true, ""
}

// open opens lib's pool as s runs it: with the bound for scenarios that
// need one, else plain.
func (s scenario) open(lib library) pool {
	switch s.needs {
	case "bound":
		return lib.bounded(s.workers(), waitingBound)
	case "delay":
		return lib.delayed(s.workers())
	}
	return lib.open(s.workers())
}

// contract is what the report says of lib's contract in s.
func (s scenario) contract(lib library) string {
	if s.needs == "bound" && lib.boundNote != "" {
		return lib.boundNote
	}
	return lib.note
}

func (s scenario) size(scale float64) int {
	return max(1, int(math.Round(float64(s.tasks)*scale)))
}

// A result is what one child process measured for one scenario and library.
type result struct {
	Tasks   int     `json:"tasks"`
	Wall    float64 `json:"wall_ns"`  // from the first submit until the last task finished (g: the last submit returned)
	CPU     float64 `json:"cpu_ns"`   // user+system CPU time of the process over Wall
	Mallocs float64 `json:"mallocs"`  // heap allocations over Wall
	Bytes   float64 `json:"bytes"`    // heap bytes allocated over Wall
	P50     float64 `json:"p50_ns"`   // f: round-trip latency
	P99     float64 `json:"p99_ns"`   // f: round-trip latency
	Queued  float64 `json:"queued_b"` // g: live heap bytes per queued task
}

// config is what every child gets from the parent.
type config struct {
	scale float64
	spin  int // iterations of spinWork that take about 1 µs

	cpuProfile, trace string // diagnostics of a child run: file names, or ""
}

// A workload builds the function each task runs; done must be called once per task.
type workload func(c *config, done func()) func()

func noop(_ *config, done func()) func() { return done }

func spin(c *config, done func()) func() {
	return func() {
		spinWork(c.spin)
		done()
	}
}

func sleep(_ *config, done func()) func() {
	return func() {
		time.Sleep(time.Millisecond)
		done()
	}
}

// spinWork burns CPU for n rounds of a xorshift generator.
func spinWork(n int) {
	x := uint64(88172645463325252)
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	runtime.KeepAlive(x) // a use of x: keeps the loop from being optimised away
}

// calibrateSpin returns the number of spinWork rounds that take about 1 µs.
func calibrateSpin() int {
	const rounds = 50_000_000
	best := time.Duration(math.MaxInt64)
	for range 3 {
		start := time.Now()
		spinWork(rounds)
		best = min(best, time.Since(start))
	}
	return max(1, int(float64(rounds)*float64(time.Microsecond)/float64(best)))
}

// runBatch submits n tasks from one goroutine and waits until all have run.
func runBatch(work workload) func(*config, pool, int) result {
	return func(c *config, p pool, n int) result {
		var wg sync.WaitGroup
		wg.Add(n)
		t := newTask(work(c, wg.Done))
		return measure(n, func() {
			for range n {
				p.Submit(t)
			}
			wg.Wait()
		})
	}
}

// runDelayed gives n tasks, each with a random delay under a second (the
// same sequence for every pool), and waits until all have run.
func runDelayed(_ *config, p pool, n int) result {
	var wg sync.WaitGroup
	wg.Add(n)
	t := newTask(wg.Done)
	r := rand.New(rand.NewPCG(1, 2))
	delays := make([]time.Duration, n)
	for i := range delays {
		delays[i] = time.Duration(r.Int64N(int64(time.Second)))
	}
	dp := p.(delayPool)
	return measure(n, func() {
		for _, d := range delays {
			dp.SubmitAfter(d, t)
		}
		wg.Wait()
	})
}

// runContended submits n tasks from 8 goroutines at once.
func runContended(_ *config, p pool, n int) result {
	const submitters = 8
	var wg sync.WaitGroup
	wg.Add(n)
	t := newTask(wg.Done)
	return measure(n, func() {
		var started sync.WaitGroup
		for i := range submitters {
			share := n/submitters + btoi(i < n%submitters)
			started.Go(func() {
				for range share {
					p.Submit(t)
				}
			})
		}
		started.Wait()
		wg.Wait()
	})
}

// runResizing submits n tasks from one goroutine while a second goroutine
// resizes the pool: after every resizeEvery submits, the submitter hands it
// the next size, alternating between resizeSizes, on an unbuffered channel,
// so the resizes follow the submit count and every run makes the same ones.
func runResizing(_ *config, p pool, n int) result {
	rp := p.(resizePool)
	var wg sync.WaitGroup
	wg.Add(n)
	t := newTask(wg.Done)
	sizes := make(chan int)
	resizes := 0 // written by the resizer, read after it returned
	r := measure(n, func() {
		var resizer sync.WaitGroup
		resizer.Go(func() {
			for size := range sizes {
				rp.Resize(size)
				resizes++
			}
		})
		for i := 1; i <= n; i++ {
			p.Submit(t)
			if i%resizeEvery == 0 {
				sizes <- resizeSizes[(i/resizeEvery)%2]
			}
		}
		close(sizes)
		resizer.Wait()
		wg.Wait()
	})
	if resizes != n/resizeEvery {
		panic(fmt.Sprintf("%d of %d resizes made", resizes, n/resizeEvery))
	}
	return r
}

// runBatches submits n tasks from one goroutine in batches of batchSize,
// from one slice built once and reused.
func runBatches(_ *config, p pool, n int) result {
	bp := p.(batchPool)
	var wg sync.WaitGroup
	wg.Add(n)
	t := newTask(wg.Done)
	batch := make([]func(), min(n, batchSize))
	for i := range batch {
		batch[i] = t.fn
	}
	return measure(n, func() {
		for left := n; left > 0; left -= len(batch) {
			bp.SubmitBatch(batch[:min(left, len(batch))])
		}
		wg.Wait()
	})
}

// runRoundTrips makes n sequential SubmitWait calls and records each latency.
func runRoundTrips(_ *config, p pool, n int) result {
	return roundTrips(n, func(t *task) { p.SubmitWait(t) })
}

// runHandleRoundTrips makes n sequential round trips through the pool's
// task handles, each returning an error, and records each latency.
func runHandleRoundTrips(_ *config, p pool, n int) result {
	h := p.(handlePool)
	return roundTrips(n, func(t *task) {
		if err := h.GoWait(t); err != nil {
			panic(err)
		}
	})
}

// roundTrips runs n sequential round trips and records each latency.
func roundTrips(n int, roundTrip func(*task)) result {
	latencies := make([]time.Duration, n)
	ran := 0
	t := newTask(func() { ran++ })
	r := measure(n, func() {
		for i := range n {
			start := time.Now()
			roundTrip(t)
			latencies[i] = time.Since(start)
		}
	})
	if ran != n {
		panic(fmt.Sprintf("%d of %d round trips ran", ran, n))
	}
	slices.Sort(latencies)
	r.P50 = float64(latencies[n*50/100])
	r.P99 = float64(latencies[min(n-1, n*99/100)])
	return r
}

// runGroups runs n tasks as groups of groupSize, one group after another,
// each waited for before the next starts.
func runGroups(_ *config, p pool, n int) result {
	const groupSize = 1000
	g := p.(groupPool)
	var ran atomic.Int64
	t := newTask(func() { ran.Add(1) })
	r := measure(n, func() {
		for left := n; left > 0; left -= groupSize {
			if err := g.Group(t, min(left, groupSize)); err != nil {
				panic(err)
			}
		}
	})
	if int(ran.Load()) != n {
		panic(fmt.Sprintf("%d of %d group tasks ran", ran.Load(), n))
	}
	return r
}

// runQueued blocks the only worker and queues n tasks behind it. Wall, CPU and
// allocations cover the n Submit calls alone; Queued is the live heap the
// queued tasks hold. Then it lets them all run.
func runQueued(_ *config, p pool, n int) result {
	var wg sync.WaitGroup
	wg.Add(n)
	t := newTask(wg.Done)
	release, running := make(chan struct{}), make(chan struct{})
	p.Submit(newTask(func() {
		close(running)
		<-release
	}))
	<-running
	before := liveHeap()
	r := measure(n, func() {
		for range n {
			p.Submit(t)
		}
	})
	r.Queued = float64(liveHeap()-before) / float64(n)
	close(release)
	wg.Wait()
	return r
}

func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
