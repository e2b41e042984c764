package main

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
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
	needs   string // what the library must have: "queue", "handles", "groups", "bound", "resize", "batch", "delay", "order", "fair", "map", or "" for nothing
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
	{"n", "1,000 keys x 100 tasks of ~1 µs CPU, one at a time and in order per key, interleaved across keys, 8 workers", orderKeys * orderPerKey, "order", fixed(8), runPerKeyOrder},
	{"o", "one tenant's 100,000 queued tasks of ~1 µs CPU, and 99 tenants' 100 each arriving as they drain, 8 workers", fairFlood + fairTenants*fairPerTenant, "fair", fixed(fairWorkers), runFairShare},
	{"q", "10 ms tasks, 8 workers, 10,000 items through an ordered map", 10_000, "map", fixed(mapWorkers), runMap},
}

// namedOnly are the scenarios of the matrices that run only when named in
// -scenarios: each of their runs lasts seconds on the clock (tasks that
// sleep), so they would add minutes to the full suite and say nothing of
// the CPU. (Scenario p, not in scenarios, also runs only when named.)
var namedOnly = []string{"q"}

// defaultScenarios are the scenarios the suite runs when -scenarios is
// not given: all but namedOnly.
func defaultScenarios() []scenario {
	return slices.DeleteFunc(slices.Clone(scenarios), func(s scenario) bool { return slices.Contains(namedOnly, s.id) })
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
	"n": "1,000 keys (the count scales with -scale, 100 tasks each), submitted by one goroutine in the realistic stream, interleaved across keys: task i belongs to key i mod 1,000. " +
		"Each task spins ~1 µs (c's work) and checks that its key's tasks run one at a time and in order; a run where they do not fails. " +
		"ours+key is this library with New(8, WithKeys(1, nil)) and DoContext(ctx, task, TaskOption{Key: k}); ours, gammazero, pond and ants run the usual hand-written answer on a plain pool of 8: " +
		"a goroutine and a channel per key (buffered to hold the key's tasks, so the submitter never blocks, as a queue would not block it), each goroutine taking its key's tasks in order and submitting each with a synchronous call before the next. " +
		"Goroutines and stacks are counted when the last task has been submitted: the hand-written answer's goroutine per key shows there, not in B/task.",
	"o": "Eight tasks that wait for a gate hold the 8 workers while one submitter gives the flooding tenant's 100,000 tasks, which queue; then it opens the gate. " +
		"The 99 trickling tenants' 100 tasks each (task i of tenant i mod 99) arrive while the burst drains: about one flooding task in ten, as it starts, gives the next of them, so each tenant gives one task about every thousand of the burst's. " +
		"Every task spins ~1 µs (c's work). ours+key gives each task with DoContext(ctx, task, TaskOption{Key: tenant}) on New(8), no key limit; ours, gammazero and pond get the same stream without keys (first come, first served). " +
		"A task's wait runs from just before its submit until it starts; the columns give the trickling tenants' p50 and p99 (ants has no queue: its tasks would wait in the blocked submitter, n/a).",
	"q": "The items 0 to n-1 (10,000 at scale 1), given as an iter.Seq, each mapped through a function that sleeps 10 ms and returns its item, at most 8 at once; each result is used in input order and checked to be the next index (a run out of order fails). " +
		"ours: Map on New(8), ranged by the caller, the default window (twice the size: 16 items in flight); conc: stream.New().WithMaxGoroutines(8), each Go returning a callback that uses the result, which conc runs in order on its own goroutine; rill: OrderedMap(FromSeq(items, nil), 8, f), ranged by the caller with ToSeq2. " +
		"The ideal is 10 ms times the items over 8 (12.5 s at scale 1); \"vs ideal\" divides the wall time by it, and items/s is the throughput. " +
		"The same process then maps the same items unordered, each result used once (checked): MapUnordered; conc's result pool, pool.NewWithResults[int]().WithMaxGoroutines(8), whose results come after Wait; rill's Map. Those are the rows marked unordered, which the matrices leave out. " +
		"Pools without an ordered map: n/a. q runs only when named (-scenarios q): at scale 1 each run takes 12.5 s ordered and as long unordered.",
}

// delayedNote is the note of the delayed-task scenarios.
const delayedNote = "Each task is given with a delay drawn uniformly from [0, 1 s) (the same fixed-seed sequence for every pool), and the run lasts until the last has run, so wall time is about a second for everyone: compare CPU ns/task and B/task. " +
	"ours gives a plain task with DoContext(ctx, task, TaskOption{Delay: d}), waiting as it is in the pool's timer heap (one entry, no carrier); ours+afterfunc is the same pool driven the way users do it without Delay, time.AfterFunc(d, func() { Submit(task) }), a runtime timer, a closure and, when it fires, a goroutine per task; " +
	"the relay keeps the tasks in a heap with one timer (relay_delay.go), the floor of this design for delayed tasks. The others have no delayed submit: n/a."

// waitingBound is the bound on waiting tasks in scenario j.
const waitingBound = 64

// The keyed scenarios' sizes at scale 1: n runs orderKeys keys of
// orderPerKey tasks (the count of keys scales with -scale); o runs one
// flooding tenant's fairFlood tasks and fairTenants trickling tenants'
// fairPerTenant each (the tasks scale, the tenants do not) on fairWorkers
// workers.
const (
	orderKeys     = 1000
	orderPerKey   = 100
	fairFlood     = 100_000
	fairTenants   = 99
	fairPerTenant = 100
	fairWorkers   = 8
)

// Scenario q's map: mapWorkers items at once, each taking mapTaskTime.
const (
	mapWorkers  = 8
	mapTaskTime = 10 * time.Millisecond
)

// mapIdeal is the least time n items can take through scenario q's map:
// n/mapWorkers rounds (the last one partly full) of mapTaskTime.
func mapIdeal(n int) time.Duration {
	return time.Duration((n+mapWorkers-1)/mapWorkers) * mapTaskTime
}

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
	if lib.only != nil && !slices.Contains(lib.only, s.id) {
		return false, "n/a: runs " + strings.Join(lib.only, ", ") + " only"
	}
	if s.needs == "order" || s.needs == "fair" {
		switch {
		case lib.keyed != nil:
			return true, ""
		case lib.byHand == "":
			return false, "n/a: the keyed scenarios run this library with keys against ours, gammazero, pond and ants without"
		case s.needs == "fair" && !lib.queues:
			return false, "n/a: has no queue (Submit blocks, so a task would wait in the blocked submitter, not in the pool)"
		}
		return true, ""
	}
	switch {
	case lib.keyed != nil:
		return false, "n/a: runs the keyed scenarios only"
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
	case s.needs == "map" && !lib.maps:
		return false, "n/a: has no ordered map (a stream of results in input order from a bounded pool)"
	case s.needs != "delay" && lib.open == nil:
		return false, "n/a: runs the delayed scenarios only"
	}
	return true, ""
}

// open opens lib's pool as s runs it: with the bound for scenarios that
// need one, with keys for the keyed scenarios where lib has them, else
// plain.
func (s scenario) open(lib library) pool {
	switch s.needs {
	case "bound":
		return lib.bounded(s.workers(), waitingBound)
	case "delay":
		return lib.delayed(s.workers())
	case "order", "fair":
		if lib.keyed != nil {
			limit := -1 // o: no limit
			if s.needs == "order" {
				limit = 1 // n: one at a time
			}
			return lib.keyed(s.workers(), limit)
		}
	}
	return lib.open(s.workers())
}

// contract is what the report says of lib's contract in s.
func (s scenario) contract(lib library) string {
	switch {
	case s.needs == "bound" && lib.boundNote != "":
		return lib.boundNote
	case s.needs == "order" && lib.byHand != "":
		return "by hand: a goroutine and a channel per key; each key's goroutine gives its tasks one at a time, in order, by " + lib.byHand
	case s.needs == "fair" && lib.byHand != "" && lib.queues:
		return lib.note + "; no keys: first come, first served"
	case s.needs == "map" && lib.mapNote != "":
		return lib.mapNote
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

	Goroutines float64 `json:"goroutines"` // n: goroutines alive once the last task was submitted, less those before the pool opened
	Stacks     float64 `json:"stacks_b"`   // n: goroutine stack bytes in use then, less those before the run

	Unordered *result `json:"unordered,omitempty"` // q: the same items mapped unordered, after the ordered run

	Load *loadResult `json:"load,omitempty"` // p: what a run of scenario p measured (Tasks: the tasks finished in its measured span)
}

// config is what every child gets from the parent.
type config struct {
	scale float64
	spin  int // iterations of spinWork that take about 1 µs

	goroutines int // the child's goroutines before it opened the pool

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

// runPerKeyOrder runs n tasks that belong to n/orderPerKey keys (at least
// one), given by one goroutine in the realistic stream, interleaved across
// keys: task i belongs to key i mod keys. A keyPool takes each with its
// key; any other pool gets the hand-written answer: a goroutine and a
// channel per key, each goroutine giving its key's tasks to the pool one at
// a time, in order, with a synchronous submit (see keySubmitWait). Each
// task spins about 1 µs and checks its key's order.
func runPerKeyOrder(c *config, p pool, n int) result {
	keys := max(1, n/orderPerKey)
	names := make([]string, keys)
	for k := range names {
		names[k] = "key-" + strconv.Itoa(k)
	}
	order := newKeyOrder(keys)
	var wg sync.WaitGroup
	wg.Add(n)
	tasks := make([]task, n) // built once, before the timing, as every scenario builds its tasks
	for i := range tasks {
		k, seq := i%keys, i/keys
		tasks[i].fn = func() {
			order.started(k, seq)
			spinWork(c.spin)
			order.ended(k)
			wg.Done()
		}
	}
	kp, keyed := p.(keyPool)
	var r result
	goroutines, stacks := 0, stackInUse()
	counted := func() {
		goroutines = runtime.NumGoroutine() - c.goroutines
		stacks = stackInUse() - stacks
	}
	if keyed {
		r = measure(n, func() {
			for i := range tasks {
				kp.SubmitKey(names[i%keys], &tasks[i])
			}
			counted()
			wg.Wait()
		})
	} else {
		r = measure(n, func() {
			var byKey sync.WaitGroup // the keys' goroutines
			queues := make([]chan *task, keys)
			for k := range queues {
				queue, submitWait := make(chan *task, (n+keys-1)/keys), keySubmitWait(p)
				queues[k] = queue
				byKey.Go(func() {
					for t := range queue {
						submitWait(t)
					}
				})
			}
			for i := range tasks {
				queues[i%keys] <- &tasks[i]
			}
			counted()
			for _, queue := range queues {
				close(queue)
			}
			byKey.Wait()
			wg.Wait()
		})
	}
	if err := order.err(n); err != nil {
		panic(err)
	}
	r.Goroutines, r.Stacks = float64(goroutines), float64(stacks)
	return r
}

// A keyOrder checks, as tasks run, that the tasks of each key run one at
// a time and in order (seq 0, 1, 2, …). A task that breaks either rule
// records the first failure, which err reports after the run, and goes on,
// so that the run still ends.
type keyOrder struct {
	running []atomic.Bool // running[k]: a task of key k is between started and ended
	next    []int         // next[k]: the seq of key k's next task; written only by a task of key k
	ran     atomic.Int64
	failure atomic.Pointer[string]
}

func newKeyOrder(keys int) *keyOrder {
	return &keyOrder{running: make([]atomic.Bool, keys), next: make([]int, keys)}
}

// started is called first by task seq of key k.
func (o *keyOrder) started(k, seq int) {
	o.ran.Add(1)
	if o.running[k].Swap(true) {
		o.fail(fmt.Sprintf("key %d: task %d started while another task of the key ran", k, seq))
		return // next[k] belongs to the task that runs
	}
	if o.next[k] != seq {
		o.fail(fmt.Sprintf("key %d: task %d started when task %d was next", k, seq, o.next[k]))
	}
	o.next[k] = seq + 1
}

// ended is called last by a task of key k that started.
func (o *keyOrder) ended(k int) { o.running[k].Store(false) }

func (o *keyOrder) fail(why string) { o.failure.CompareAndSwap(nil, &why) }

// err reports the first failure, or that fewer or more than n tasks ran.
func (o *keyOrder) err(n int) error {
	if why := o.failure.Load(); why != nil {
		return errors.New(*why)
	}
	if ran := o.ran.Load(); ran != int64(n) {
		return fmt.Errorf("%d of %d keyed tasks ran", ran, n)
	}
	return nil
}

func stackInUse() int {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int(m.StackInuse)
}

// runFairShare queues the flooding tenant's share of n tasks while a gate
// holds every worker (fairWorkers tasks that wait for it, not counted),
// then opens the gate. The trickling tenants' tasks (fairTenants tenants,
// interleaved across them) arrive as the burst drains, each given by the
// flooding task whose share of the stream it follows (about one in ten at
// scale 1) as that task starts: the arrivals keep pace with the drain
// whatever the scheduler does with a submitter that sleeps. A keyPool
// takes each task with its tenant as the key (the gate's tasks without
// one); any other pool gets the same stream without keys. Each task spins
// about 1 µs; P50 and P99 are the trickling tenants' waits, from just
// before each one's submit until it starts.
func runFairShare(c *config, p pool, n int) result {
	flood := max(1, n*fairFlood/(fairFlood+fairTenants*fairPerTenant))
	trickle := n - flood
	tenants := make([]string, fairTenants+1) // tenants[0] floods
	tenants[0] = "flood"
	for t := 1; t < len(tenants); t++ {
		tenants[t] = "tenant-" + strconv.Itoa(t)
	}
	submitted, started := make([]time.Duration, n), make([]time.Duration, n)
	epoch := time.Now()
	kp, keyed := p.(keyPool)
	tasks := make([]task, n)
	submit := func(i int) {
		tenant := tenants[0]
		if i >= flood {
			tenant = tenants[1+(i-flood)%fairTenants]
		}
		submitted[i] = time.Since(epoch)
		if keyed {
			kp.SubmitKey(tenant, &tasks[i])
		} else {
			p.Submit(&tasks[i])
		}
	}
	var wg sync.WaitGroup
	wg.Add(n)
	for i := range tasks {
		tasks[i].fn = func() {
			started[i] = time.Since(epoch)
			if i < flood { // the trickling tasks that follow this one in the stream
				for j := i * trickle / flood; j < (i+1)*trickle/flood; j++ {
					submit(flood + j)
				}
			}
			spinWork(c.spin)
			wg.Done()
		}
	}
	gate := make(chan struct{})
	var held sync.WaitGroup
	held.Add(fairWorkers)
	holder := &task{fn: func() { held.Done(); <-gate }}
	for range fairWorkers {
		p.Submit(holder)
	}
	held.Wait()
	r := measure(n, func() {
		for i := range flood {
			submit(i)
		}
		close(gate)
		wg.Wait()
	})
	waits := make([]time.Duration, 0, trickle)
	for i := flood; i < n; i++ {
		waits = append(waits, started[i]-submitted[i])
	}
	if len(waits) > 0 {
		slices.Sort(waits)
		r.P50 = float64(waits[len(waits)*50/100])
		r.P99 = float64(waits[min(len(waits)-1, len(waits)*99/100)])
	}
	return r
}

// runMap maps items 0 to n-1 through a function that sleeps mapTaskTime
// and returns its item, at most the pool's mapWorkers at once, and checks
// each result as it is consumed: in input order, the next index. Then it
// maps the same items unordered, checking that each result comes once;
// that run is the result's Unordered.
func runMap(_ *config, p pool, n int) result {
	mp := p.(mapPool)
	items := func(yield func(int) bool) {
		for i := range n {
			if !yield(i) {
				return
			}
		}
	}
	work := func(i int) int {
		time.Sleep(mapTaskTime)
		return i
	}
	next := 0
	r := measure(n, func() {
		mp.MapOrdered(items, work, func(v int) {
			if v != next {
				panic(fmt.Sprintf("ordered map: result %d came when %d was next", v, next))
			}
			next++
		})
	})
	if next != n {
		panic(fmt.Sprintf("ordered map: %d of %d results came", next, n))
	}
	seen, count := make([]bool, n), 0
	u := measure(n, func() {
		mp.MapUnordered(items, work, func(v int) {
			if v < 0 || v >= n || seen[v] {
				panic(fmt.Sprintf("unordered map: result %d came twice or was never given", v))
			}
			seen[v] = true
			count++
		})
	})
	if count != n {
		panic(fmt.Sprintf("unordered map: %d of %d results came", count, n))
	}
	r.Unordered = &u
	return r
}
