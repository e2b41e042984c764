package main

import (
	"fmt"
	"math"
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
	needs   string // what the library must have: "queue", "handles", "groups", or "" for nothing
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
}

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
	}
	return true, ""
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
