package main

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/alitto/pond/v2"
	"github.com/destel/rill"
	"github.com/e86d9661/workerpool"
	gammazero "github.com/gammazero/workerpool"
	"github.com/panjf2000/ants/v2"
	conc "github.com/sourcegraph/conc/pool"
	"github.com/sourcegraph/conc/stream"
	"golang.org/x/sync/errgroup"
)

// A task is one unit of work in the form each library takes, built once per
// run so that no adapter allocates per task: libraries that take func() get
// fn, errgroup gets fnErr, and task handles and groups get fnCtx.
type task struct {
	fn    func()
	fnErr func() error
	fnCtx func(context.Context) error
}

func newTask(fn func()) *task {
	return &task{
		fn:    fn,
		fnErr: func() error { fn(); return nil },
		fnCtx: func(context.Context) error { fn(); return nil },
	}
}

// A pool is one library adapted to the scenarios. Submit and SubmitWait are
// called as each scenario says; SubmitWait only ever by one goroutine at a time.
type pool interface {
	// Submit hands t to the pool. Libraries that queue return at once; the
	// others block until a worker takes t.
	Submit(t *task)
	// SubmitWait returns once t has run.
	SubmitWait(t *task)
	// Close waits for every submitted task and releases the pool's goroutines.
	Close()
}

// A handlePool has task handles that report an error: GoWait runs t.fnCtx
// through one and returns what its Wait returns.
type handlePool interface {
	GoWait(t *task) error
}

// A groupPool has errgroup-style groups: Group runs t.fnCtx n times as one
// group, at most the pool's worker count at once, and returns the first
// error.
type groupPool interface {
	Group(t *task, n int) error
}

// A resizePool changes its most workers while it runs.
type resizePool interface {
	Resize(workers int)
}

// A batchPool queues many tasks in one call. The pool keeps no reference to
// batch once SubmitBatch returns, so the caller may reuse it.
type batchPool interface {
	SubmitBatch(batch []func())
}

// A delayPool runs t once d has passed, without blocking its caller for d.
type delayPool interface {
	SubmitAfter(d time.Duration, t *task)
}

// A keyPool takes a task that belongs to a key: the keyed scenarios (n and
// o) submit through SubmitKey where the pool has it, and drive the other
// pools by hand.
type keyPool interface {
	SubmitKey(key string, t *task)
}

// A mapPool maps a stream of items through fn, at most its workers at
// once, and hands each result to use (scenario q). MapOrdered calls use
// with the results in the order of in, one call at a time; MapUnordered
// calls use once per item in any order, one call at a time. Both return
// once every result has been used. fn does not fail.
type mapPool interface {
	MapOrdered(in iter.Seq[int], fn func(int) int, use func(int))
	MapUnordered(in iter.Seq[int], fn func(int) int, use func(int))
}

// A library is one contestant of the suite.
type library struct {
	name    string
	queues  bool   // Submit returns at once while every worker is busy
	handles bool   // its pool is a handlePool
	groups  bool   // its pool is a groupPool
	resizes bool   // its pool is a resizePool
	batches bool   // its pool is a batchPool
	maps    bool   // its pool is a mapPool
	note    string // how its contract differs, shown in the report
	open    func(workers int) pool
	// only, if set, are the scenarios the library runs (of those it can):
	// a variant measured where it says something.
	only []string

	// bounded opens the pool so that a submitter blocks once bound tasks
	// wait for a worker (or, for a library without a queue, once every
	// worker is busy); nil if the library has no bound. boundNote replaces
	// note where a scenario opens the pool this way (needs "bound"), with
	// waitingBound as the bound.
	bounded   func(workers, bound int) pool
	boundNote string

	// delayed opens the pool as a delayPool for the delayed scenarios
	// (needs "delay"); nil if the library has no delayed submit.
	delayed func(workers int) pool

	// keyed opens the pool as a keyPool for the keyed scenarios (needs
	// "order" and "fair"), each key's tasks at most limit at once (limit
	// < 0: no limit, as for WithKeys); nil if the library has no keys.
	keyed func(workers, limit int) pool
	// byHand says how a key's goroutine submits a task and waits for it
	// in the hand-written answer of scenario n, "" for a library not run
	// there; scenario o runs these libraries, if they queue, without keys.
	byHand string

	// mapNote replaces note in the map scenario (needs "map"): how the
	// library maps in order; mapUnordered, how it maps in any order.
	mapNote, mapUnordered string
}

// blocksAtWorkers opens a library without a queue for the bound scenario:
// its bound is its workers, so bound is not used.
func blocksAtWorkers(open func(int) pool) func(workers, bound int) pool {
	return func(workers, _ int) pool { return open(workers) }
}

var libraries = []library{
	{name: "ours", queues: true, handles: true, groups: true, resizes: true, batches: true, maps: true,
		note: "queues; Submit never blocks; Go returns a Task; Group on the pool; DoContext(ctx, task, TaskOption{Delay: d}) in the delayed scenarios", open: openOurs,
		bounded: openOursBounded, boundNote: fmt.Sprintf("WithMaxWaiting(%d, Block): Submit waits for room while %[1]d tasks wait", waitingBound),
		delayed: openOurs, byHand: "SubmitWait",
		mapNote:      "Map(ctx, New(8), items, f), ranged; the default window (16 items in flight)",
		mapUnordered: "MapUnordered(ctx, New(8), items, f), ranged; the default window"},
	{name: "ours+afterfunc",
		note:    "this library driven by time.AfterFunc(d, func() { Submit(task) }), as users delay tasks without TaskOption.Delay; run in the delayed scenarios only",
		delayed: openOursAfterFunc},
	{name: "ours+hooks", queues: true,
		note: "this library with all three Hooks set to funcs that do nothing: what the hooks cost the pool (two clock reads and two calls per task, a third read for a task that waits in the queue); run where the plain pool runs",
		open: openOursHooked},
	{name: "ours+key",
		note:  "this library with keys: New(8, WithKeys(1, nil)) and DoContext(ctx, task, TaskOption{Key: k}) in n, New(8) and DoContext(ctx, task, TaskOption{Key: tenant}) in o; run in the keyed scenarios only",
		keyed: openOursKeyed},
	{name: "ours+adaptive", queues: true, only: []string{"a"},
		note: "this library choosing its own size: New(n, WithAdaptiveSize(1, n)), in a New(4, WithAdaptiveSize(1, 4)), what measuring and deciding cost the plain path; run in a, and as scenario p's adaptive pool (New(1, WithAdaptiveSize(1, 128)))",
		open: openOursAdaptive},
	{name: floor, queues: true, batches: true,
		note: "reference: the bare relay of this design's shape (two hand-offs per task, one for a batched task, nothing else), not a usable pool; queues; SubmitWait by adapter; a heap and one timer in the delayed scenarios", open: openRelay,
		delayed: func(workers int) pool { return openDelayRelay(workers) }},
	{name: "relay+intake", queues: true, batches: true,
		note: "reference: the relay with a buffered intake (submitters append under a mutex and wake the dispatcher only when it is parked; it takes the whole buffer at once), then the relay's hand-off to a worker; the floor of that mechanism, not a usable pool", open: openIntakeRelay},
	{name: "relay+release", queues: true, batches: true,
		note: "reference: relay+intake whose dispatcher also releases tasks on a channel buffered to the worker count, so a worker that finishes takes the next released task without a rendezvous; the floor of both mechanisms, not a usable pool", open: openReleaseRelay},
	{name: "relay+lane", queues: true, batches: true,
		note: "reference: no hop through the dispatcher per task; submitters append to a mutex-guarded queue that workers take from (pond's mechanism), the dispatcher only starts workers; the floor of that mechanism, not a usable pool", open: openLaneRelay},
	{name: "gammazero", queues: true, note: "queues; Submit never blocks", open: openGammazero, byHand: "SubmitWait"},
	{name: "pond", queues: true, handles: true, groups: true, resizes: true,
		note: "queues (unbounded); Go never blocks; SubmitWait is Submit(f).Wait(); groups on the pool", open: openPond,
		bounded: openPondBounded, boundNote: fmt.Sprintf("WithQueueSize(%d), WithNonBlocking(false): Go waits for room while %[1]d tasks wait", waitingBound),
		byHand: "Submit(f).Wait()"},
	{name: "ants", resizes: true,
		note: "Submit blocks while every worker is busy; SubmitWait by adapter", open: openAnts,
		bounded: blocksAtWorkers(openAnts), boundNote: "no queue; blocking mode (the default): Submit blocks while every worker is busy, so the bound is the workers",
		byHand: "Submit of a wrapper that signals the key's own channel"},
	{name: "conc", groups: true,
		note: "Go blocks while every goroutine is busy; SubmitWait by adapter; a ContextPool per group", open: openConc,
		bounded: blocksAtWorkers(openConc), boundNote: "no queue: Go blocks while every goroutine is busy, so the bound is the workers",
		maps: true, mapNote: "stream.New().WithMaxGoroutines(8): each Go returns a callback, which conc runs in order on its own goroutine; Go blocks while every goroutine is busy",
		mapUnordered: "pool.NewWithResults[int]().WithMaxGoroutines(8): Go blocks while every goroutine is busy; the results used after Wait"},
	{name: "rill", maps: true, only: []string{"q"},
		note:    "github.com/destel/rill: channel pipelines, no pool to submit to; run in q only",
		mapNote: "OrderedMap(FromSeq(items, nil), 8, f), ranged with ToSeq2", mapUnordered: "Map(FromSeq(items, nil), 8, f), ranged with ToSeq2", open: openRill},
	{name: "errgroup", groups: true,
		note: "Go blocks at SetLimit; a goroutine per task; SubmitWait by adapter", open: openErrgroup,
		bounded: blocksAtWorkers(openErrgroup), boundNote: "no queue: Go blocks at SetLimit, so the bound is the workers; a goroutine per task"},
	{name: "semaphore", note: "baseline: a buffered channel bounds a goroutine per task", open: openSemaphore,
		bounded: blocksAtWorkers(openSemaphore), boundNote: "baseline, no queue: blocks while every slot is taken, so the bound is the workers; a goroutine per task"},
	{name: "goroutine", note: "baseline: a goroutine per task, no bound", open: openGoroutine},
}

// floor names the relay (relay.go), the reference every scenario is also
// measured against: the bare relay of this library's shape.
const floor = "relay"

func findLibrary(name string) (library, error) {
	for _, l := range libraries {
		if l.name == name {
			return l, nil
		}
	}
	return library{}, fmt.Errorf("unknown pool %q", name)
}

// Each adapter calls its library's concrete type directly, so that no
// library pays for an extra interface call per task.

type gammazeroPool struct{ p *gammazero.WorkerPool }

func openGammazero(workers int) pool { return gammazeroPool{gammazero.New(workers)} }

func (a gammazeroPool) Submit(t *task)     { a.p.Submit(t.fn) }
func (a gammazeroPool) SubmitWait(t *task) { a.p.SubmitWait(t.fn) }
func (a gammazeroPool) Close()             { a.p.StopWait() }

// oursPool is this library, with its Tasks and Groups.
type oursPool struct{ wp *workerpool.WorkerPool }

func openOurs(workers int) pool { return oursPool{workerpool.New(workers)} }

// noopHooks are the hooks of ours+hooks: set, so that the pool times every
// task and calls them, and empty, so that only the pool's cost shows.
var noopHooks = workerpool.Hooks{
	TaskStarted:  func(ctx context.Context, _ workerpool.TaskInfo) context.Context { return ctx },
	TaskFinished: func(context.Context, workerpool.TaskInfo) {},
	TaskDropped:  func(workerpool.TaskInfo) {},
}

func openOursHooked(workers int) pool {
	return oursPool{workerpool.New(workers, workerpool.WithHooks(noopHooks))}
}

func openOursBounded(workers, bound int) pool {
	return oursPool{workerpool.New(workers, workerpool.WithMaxWaiting(bound, workerpool.Block))}
}

// openOursAdaptive lets the pool choose its size between 1 and workers,
// starting at workers.
func openOursAdaptive(workers int) pool {
	return oursPool{workerpool.New(workers, workerpool.WithAdaptiveSize(1, workers))}
}

func (a oursPool) Submit(t *task)     { a.wp.Submit(t.fn) }
func (a oursPool) SubmitWait(t *task) { a.wp.SubmitWait(t.fn) }
func (a oursPool) Close()             { a.wp.StopWait() }

func (a oursPool) Resize(workers int) { a.wp.Resize(workers) }

func (a oursPool) SubmitAfter(d time.Duration, t *task) {
	if err := a.wp.DoContext(context.Background(), t.fn, workerpool.TaskOption{Delay: d}); err != nil {
		panic(err)
	}
}

// afterFuncPool is this library delayed by time.AfterFunc.
type afterFuncPool struct{ oursPool }

func openOursAfterFunc(workers int) pool { return afterFuncPool{oursPool{workerpool.New(workers)}} }

func (a afterFuncPool) SubmitAfter(d time.Duration, t *task) {
	time.AfterFunc(d, func() { a.wp.Submit(t.fn) })
}

func (a oursPool) SubmitBatch(batch []func()) {
	if err := a.wp.DoBatch(batch); err != nil {
		panic(err)
	}
}

// oursKeyed is this library with keys: every task of the keyed scenarios
// is given with Do and its key.
type oursKeyed struct{ oursPool }

func openOursKeyed(workers, limit int) pool {
	return oursKeyed{oursPool{workerpool.New(workers, workerpool.WithKeys(limit, nil))}}
}

func (a oursKeyed) SubmitKey(key string, t *task) {
	if err := a.wp.DoContext(context.Background(), t.fn, workerpool.TaskOption{Key: key}); err != nil {
		panic(err)
	}
}

func (a oursPool) GoWait(t *task) error { return a.wp.Go(context.Background(), t.fnCtx).Wait() }

func (a oursPool) Group(t *task, n int) error {
	g := a.wp.Group(context.Background())
	for range n {
		g.Go(t.fnCtx)
	}
	return g.Wait()
}

type pondPool struct{ p pond.Pool }

func openPond(workers int) pool { return pondPool{pond.NewPool(workers)} }

// openPondBounded gives pond a queue of bound tasks; a full queue blocks
// the submitter (WithNonBlocking(false), pond's default, said explicitly).
func openPondBounded(workers, bound int) pool {
	return pondPool{pond.NewPool(workers, pond.WithQueueSize(bound), pond.WithNonBlocking(false))}
}

func (a pondPool) Submit(t *task) {
	if err := a.p.Go(t.fn); err != nil {
		panic(err)
	}
}
func (a pondPool) SubmitWait(t *task) {
	if err := a.p.Submit(t.fn).Wait(); err != nil {
		panic(err)
	}
}
func (a pondPool) Close()             { a.p.StopAndWait() }
func (a pondPool) Resize(workers int) { a.p.Resize(workers) }

func (a pondPool) GoWait(t *task) error { return a.p.SubmitErr(t.fnErr).Wait() }

func (a pondPool) Group(t *task, n int) error {
	g := a.p.NewGroup()
	ctx := g.Context()
	call := func() error { return t.fnCtx(ctx) }
	for range n {
		g.SubmitErr(call)
	}
	return g.Wait()
}

// signal gives SubmitWait to the libraries that have none: one wrapper, built
// once, runs the current task and signals a reused channel, so the adapter
// adds no allocation. It relies on SubmitWait never being called concurrently.
type signal struct {
	current *task
	done    chan struct{}
	wrapped *task
}

func newSignal() *signal {
	s := &signal{done: make(chan struct{}, 1)}
	s.wrapped = newTask(func() {
		s.current.fn()
		s.done <- struct{}{}
	})
	return s
}

// roundTrip submits t through submit and waits for it.
func (s *signal) roundTrip(t *task, submit func(*task)) {
	s.current = t
	submit(s.wrapped)
	<-s.done
}

// keySubmitWait gives one key's goroutine of the hand-written answer its
// synchronous submit on p: the library's own SubmitWait, which many
// goroutines may call at once, or, for a library whose SubmitWait is the
// adapter's (a signal, for one goroutine at a time), a signal of the key's
// own around p's Submit, built once per key.
func keySubmitWait(p pool) func(*task) {
	if _, adapted := p.(interface{ roundTrip(*task, func(*task)) }); adapted {
		s := newSignal()
		return func(t *task) { s.roundTrip(t, p.Submit) }
	}
	return p.SubmitWait
}

type antsPool struct {
	p *ants.Pool
	*signal
}

func openAnts(workers int) pool {
	p, err := ants.NewPool(workers)
	if err != nil {
		panic(err)
	}
	return antsPool{p, newSignal()}
}

func (a antsPool) Submit(t *task) {
	if err := a.p.Submit(t.fn); err != nil {
		panic(err)
	}
}
func (a antsPool) SubmitWait(t *task) { a.roundTrip(t, a.Submit) }
func (a antsPool) Resize(workers int) { a.p.Tune(workers) }
func (a antsPool) Close() {
	if err := a.p.ReleaseTimeout(time.Minute); err != nil {
		panic(err)
	}
}

type concPool struct {
	p       *conc.Pool
	workers int
	*signal
}

func openConc(workers int) pool {
	return concPool{conc.New().WithMaxGoroutines(workers), workers, newSignal()}
}

func (a concPool) Group(t *task, n int) error {
	g := conc.New().WithContext(context.Background()).WithCancelOnError().WithFirstError().WithMaxGoroutines(a.workers)
	for range n {
		g.Go(t.fnCtx)
	}
	return g.Wait()
}

func (a concPool) Submit(t *task)     { a.p.Go(t.fn) }
func (a concPool) SubmitWait(t *task) { a.roundTrip(t, a.Submit) }
func (a concPool) Close()             { a.p.Wait() }

type errgroupPool struct {
	g       *errgroup.Group
	workers int
	*signal
}

func openErrgroup(workers int) pool {
	g := new(errgroup.Group)
	g.SetLimit(workers)
	return errgroupPool{g, workers, newSignal()}
}

func (a errgroupPool) Group(t *task, n int) error {
	g, ctx := errgroup.WithContext(context.Background())
	g.SetLimit(a.workers)
	call := func() error { return t.fnCtx(ctx) }
	for range n {
		g.Go(call)
	}
	return g.Wait()
}

func (a errgroupPool) Submit(t *task)     { a.g.Go(t.fnErr) }
func (a errgroupPool) SubmitWait(t *task) { a.roundTrip(t, a.Submit) }
func (a errgroupPool) Close() {
	if err := a.g.Wait(); err != nil {
		panic(err)
	}
}

// semaphorePool is the hand-written bound: a goroutine per task, at most
// cap(slots) at once.
type semaphorePool struct {
	slots   chan struct{}
	running *sync.WaitGroup
	*signal
}

func openSemaphore(workers int) pool {
	return semaphorePool{make(chan struct{}, workers), new(sync.WaitGroup), newSignal()}
}

func (a semaphorePool) Submit(t *task) {
	a.slots <- struct{}{}
	a.running.Add(1)
	go func() {
		defer a.running.Done()
		t.fn()
		<-a.slots
	}()
}
func (a semaphorePool) SubmitWait(t *task) { a.roundTrip(t, a.Submit) }
func (a semaphorePool) Close()             { a.running.Wait() }

// goroutinePool starts a goroutine per task and ignores the worker count.
type goroutinePool struct {
	running *sync.WaitGroup
	*signal
}

func openGoroutine(int) pool { return goroutinePool{new(sync.WaitGroup), newSignal()} }

func (a goroutinePool) Submit(t *task) {
	a.running.Go(t.fn)
}
func (a goroutinePool) SubmitWait(t *task) { a.roundTrip(t, a.Submit) }
func (a goroutinePool) Close()             { a.running.Wait() }

func (a oursPool) MapOrdered(in iter.Seq[int], fn func(int) int, use func(int)) {
	a.mapWith(workerpool.Map[int, int], in, fn, use)
}

func (a oursPool) MapUnordered(in iter.Seq[int], fn func(int) int, use func(int)) {
	a.mapWith(workerpool.MapUnordered[int, int], in, fn, use)
}

// mapWith ranges over what mapper (Map or MapUnordered) yields for in.
func (a oursPool) mapWith(mapper func(context.Context, *workerpool.WorkerPool, iter.Seq[int], func(context.Context, int) (int, error), ...workerpool.TaskOption) iter.Seq2[int, error],
	in iter.Seq[int], fn func(int) int, use func(int)) {
	f := func(_ context.Context, i int) (int, error) { return fn(i), nil }
	for v, err := range mapper(context.Background(), a.wp, in, f) {
		if err != nil {
			panic(err)
		}
		use(v)
	}
}

func (a concPool) MapOrdered(in iter.Seq[int], fn func(int) int, use func(int)) {
	s := stream.New().WithMaxGoroutines(a.workers)
	for i := range in {
		s.Go(func() stream.Callback {
			v := fn(i)
			return func() { use(v) }
		})
	}
	s.Wait()
}

func (a concPool) MapUnordered(in iter.Seq[int], fn func(int) int, use func(int)) {
	p := conc.NewWithResults[int]().WithMaxGoroutines(a.workers)
	for i := range in {
		p.Go(func() int { return fn(i) })
	}
	for _, v := range p.Wait() {
		use(v)
	}
}

// rillMapper is rill, a library of channel pipelines: it maps with
// workers goroutines per stage, and has no pool to submit to.
type rillMapper struct{ workers int }

func openRill(workers int) pool { return rillMapper{workers} }

func (m rillMapper) Submit(*task)     { panic("rill has no pool to submit to: it runs q only") }
func (m rillMapper) SubmitWait(*task) { panic("rill has no pool to submit to: it runs q only") }
func (m rillMapper) Close()           {} // each map's goroutines end with its stream, drained to the end

func (m rillMapper) MapOrdered(in iter.Seq[int], fn func(int) int, use func(int)) {
	m.mapWith(rill.OrderedMap[int, int], in, fn, use)
}

func (m rillMapper) MapUnordered(in iter.Seq[int], fn func(int) int, use func(int)) {
	m.mapWith(rill.Map[int, int], in, fn, use)
}

// mapWith ranges over the stream that mapper (OrderedMap or Map) makes of in.
func (m rillMapper) mapWith(mapper func(<-chan rill.Try[int], int, func(int) (int, error)) <-chan rill.Try[int],
	in iter.Seq[int], fn func(int) int, use func(int)) {
	f := func(i int) (int, error) { return fn(i), nil }
	for v, err := range rill.ToSeq2(mapper(rill.FromSeq(in, nil), m.workers, f)) {
		if err != nil {
			panic(err)
		}
		use(v)
	}
}
