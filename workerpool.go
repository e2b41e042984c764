package workerpool

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A WorkerPool runs submitted tasks on at most maxWorkers goroutines. It is
// safe for concurrent use. The zero value is not usable (a call that would
// reach its dispatcher panics, saying to use New); New starts a dispatcher
// goroutine, so call Stop, StopWait or Shutdown when the pool is no longer
// needed.
type WorkerPool struct {
	size  sizeSettings // the most workers and the floor, which Resize and the size schedule change (setting.go)
	cfg   config       // what New's options set, and what New derived from them; never changed
	clock clock        // New's time: the pool's clock counts from it
	obs   observer     // the logger, the hooks and the dead letters: what the pool tells the outside (observer.go)

	// taskQueue carries every message to dispatch: plain tasks from Submit
	// and Do, jobs from DoWait, the handles and group tasks, Pause calls, and
	// idle ticks. Unbuffered on purpose: dispatch does the queueing, and a
	// send that completes is the moment a task is accepted. The first
	// Stop, StopWait or Shutdown sends one empty message after closing
	// stopping: dispatch then takes the sends still in flight (see send)
	// and stops receiving. Never closed.
	taskQueue chan message
	// workerQueue hands work from dispatch to idle workers. Only dispatch
	// sends; the zero work tells the receiving worker to return. Never
	// closed.
	workerQueue chan work
	// lane carries plain tasks from Submit, Do and DoBatch to the workers, past
	// dispatch, while dispatch opens it (lane.go).
	lane       lane
	goroutines sync.WaitGroup // the dispatcher, the workers and the idle clock; stop waits for all of them

	recycled recycled  // idle carriers, kept for the next task
	live     liveTasks // running Tasks' contexts and the groups, for a Shutdown that gives up

	// The fields below are written while tasks flow. Each group sits on its
	// own cache lines so that a write by one side does not evict what the
	// other sides read or write.

	_ cacheLinePad
	// taskSends and controlSends count the sends that passed, or are
	// about to make, their stopping check: taskSends those that carry one
	// task each (a task of any submitting call but DoBatch), controlSends the
	// others (Pause, Resize, WaitIdle, tickets). Each only grows, but for
	// refused sends, which take themselves out. Dispatch reads their sum
	// while stopping (see dispatcher.admitStragglers); Status counts
	// accepted tasks from taskSends alone (see WorkerPool.submitted), so a
	// control send never moves Submitted.
	taskSends    atomic.Int64
	controlSends atomic.Int64
	// room is the waiting queue's free room under Block and Reject, which
	// submitters take before they send: on the line of the send counts,
	// which the same submitters write.
	room room

	counts counts // the counters behind Status, on cache lines of their own (see status.go)

	sig signals // what the other goroutines tell dispatch: wake-ups, settles, mailboxes (signals.go)
	_   cacheLinePad
}

// recycled holds the idle carriers of tasks, so that a task's carrier is
// allocated only when none is idle.
type recycled struct {
	waiters    sync.Pool // *waiter values for DoWait
	plainJobs  sync.Pool // *plainJob values for DoContext with options
	groupTasks sync.Pool // *groupTask values for Group.Go
	tickets    sync.Pool // *ticket values for submits that wait for an answer
}

// cacheLinePad keeps the fields before and after it off each other's cache
// lines (128 bytes: two 64-byte lines, as adjacent-line prefetch pairs them).
type cacheLinePad [128]byte

// New creates a pool that runs tasks on at most maxWorkers goroutines and
// starts its dispatcher. A maxWorkers below 1 means 1. Workers start only as
// tasks arrive and retire after an idle period (see WithIdleTimeout), but
// for those WithMinWorkers keeps: New starts them, so Status().Workers shows
// them when New returns. Call Stop, StopWait or Shutdown to release the
// dispatcher once the pool is not needed. New panics if an option is
// invalid (see WithMaxWaiting).
func New(maxWorkers int, options ...Option) *WorkerPool {
	p, _ := start(maxWorkers, options)
	return p
}

// start is New, which also returns the dispatcher: a test may look at its
// parts once the pool has stopped.
func start(maxWorkers int, options []Option) (*WorkerPool, *dispatcher) {
	p := &WorkerPool{
		cfg:         newConfig(options),
		taskQueue:   make(chan message),
		workerQueue: make(chan work),
		sig:         newSignals(),
		clock:       clock{epoch: time.Now()},
	}
	p.obs = newObserver(&p.cfg, p.clock, &p.goroutines)
	p.size.max.Store(int64(max(maxWorkers, 1)))
	p.size.floor.Store(int64(p.cfg.minWorkers))
	if r := p.cfg.adaptive; r.max > 0 {
		p.size.lowest = int64(r.min)
		p.size.chosen.Store(min(max(p.size.max.Load(), int64(r.min)), int64(r.max)))
		p.size.max.Store(int64(r.max))
		p.size.reason.Store(&reasonStart)
	}
	var room *room // the bound, for the lane
	if p.cfg.roomed {
		p.room.init(p.cfg.bound)
		room = &p.room
	}
	p.lane.init(p.cfg.timed, p.clock, room, &p.sig, &p.counts.waiting)
	d := newDispatcher(p)
	d.crew.startFloor()
	p.goroutines.Go(d.run)
	if p.cfg.adaptive.max > 0 {
		a := &autoSizer{
			sizer:  newSizer(p.cfg.adaptive.min, int(p.size.chosen.Load()), 0),
			status: p.Status, sizes: &p.size, stopping: p.sig.stopping, clock: p.clock, obs: &p.obs,
			resize: p.tellResize,
		}
		p.goroutines.Go(a.run)
	}
	p.obs.logDebug("pool started", "max_workers", p.Size())
	return p, d
}

// Submit queues task to run on a worker and returns at once: it never waits
// for a worker, however busy the pool is. Tasks start in the order they were
// submitted. A nil task is ignored.
//
// With a bound (WithMaxWaiting) and a full queue, Submit waits for room
// under Block; under Reject it does not queue task but counts it in
// Status.Rejected and gives it to the dead-letter handler with an error
// wrapping ErrQueueFull; under DropOldest it queues task and the oldest
// waiting task is dropped, but with a bound of 0, or while scheduled tasks
// alone fill the bound, where it refuses task as under Reject.
//
// Submit panics with an error wrapping ErrStopped once Stop, StopWait or
// Shutdown has been called, including while it waited for room and from a
// task that is still running during StopWait; use Do to get the error
// instead. Safe for concurrent use.
func (p *WorkerPool) Submit(task func()) {
	// The common cases come first: an append to the open lane, else one send.
	if task == nil || p.lane.append(task) {
		return
	}
	if p.cfg.bounded || send(p, message{task: task}) != nil {
		p.submitRest(task)
	}
}

// submitRest is Submit for a task the lane did not take in a bounded pool,
// and for a send refused by a stop.
func (p *WorkerPool) submitRest(task func()) {
	if !p.cfg.bounded {
		panic(errSubmitStopped)
	}
	switch err := p.doPlain(task, true, nil); {
	case err == nil:
	case err == ErrQueueFull && p.obs.giveUpPlain(task, ErrQueueFull):
		p.counts.rejected.Add(1)
	default:
		panic(errSubmitStopped)
	}
}

// Do queues task like Submit, and returns ErrStopped instead of panicking
// once Stop, StopWait or Shutdown has been called (also while it waited for
// room), and ErrQueueFull where Submit would give the task to the
// dead-letter handler (Reject); then the task is the caller's. A Do that
// races with a stop either is accepted, and then the task runs exactly once
// or the stop abandons it, or returns ErrStopped. A nil task is ignored and
// Do returns nil. Safe for concurrent use.
//
// Do has gammazero/workerpool's signature; DoContext queues a task with
// options (see TaskOption).
func (p *WorkerPool) Do(task func()) error {
	return p.countRejected(p.doPlain(task, true, nil), 1, nil)
}

// doPlain queues a plain task (see sendOne), waiting for room under Block
// only if wait is set. It does not count refusals.
func (p *WorkerPool) doPlain(task func(), wait bool, ctx context.Context) error {
	if task == nil {
		return nil
	}
	return p.sendOne(message{task: task}, wait && p.cfg.overflow == Block, ctx)
}

// sendOne gives one task to dispatch, a plain task or the job j. A plain
// task goes to the open lane if it can (taking its place under Block and
// Reject). Otherwise, unbounded and under DropOldest, it is one send: the
// dispatcher alone decides. Under Block and Reject it takes room first
// (marking j as holding it), and
// without room it asks the dispatcher (see submitWithoutRoom), waiting for
// room if wait is set, until ctx is done (nil: until the pool stops). A
// task it returns an error for never reached the pool.
func (p *WorkerPool) sendOne(m message, wait bool, ctx context.Context) error {
	j := m.job
	switch {
	case p.sig.stopBegun.Load():
		return ErrStopped // before any check of the bound: a stopping pool refuses as stopped
	case p.cfg.dropsOldest():
		return p.sendDropOldest(m)
	case m.task != nil && m.due == 0 && p.lane.append(m.task): // with its place, under a bound
		return nil
	case !p.cfg.roomed:
		return send(p, m)
	case p.room.take(1):
		if j != nil {
			j.place.Store(true)
		}
		if err := send(p, m); err != nil {
			if j != nil {
				j.place.Store(false)
			}
			p.room.giveBack(1, &p.sig)
			return err
		}
		return nil
	}
	return p.submitWithoutRoom(m, wait, ctx)
}

// countRejected counts n tasks with options o (nil: plain ones) in
// Status.Rejected if err says the queue was full or the task too heavy,
// and tells TaskDropped; it returns err. The submitting call that refuses
// them calls it, in its goroutine.
func (p *WorkerPool) countRejected(err error, n int, o *taskOptions) error {
	if err == ErrQueueFull || err == ErrTooHeavy {
		p.counts.rejected.Add(uint64(n))
		p.obs.refused(err, n, o)
	}
	return err
}

// DoWait queues task and waits until it has finished running: returned,
// called runtime.Goexit, or panicked and the Panic hook returned. It
// returns ErrStopped at once when the pool is stopped, and as soon as Stop
// or a Shutdown that gives up abandons task before it starts; with
// StopWait, task runs first. Under the queue policies it returns why task
// never ran (the package documentation's table of errors). A nil task is
// ignored and DoWait returns nil. The waiter is reused: DoWait allocates
// nothing once the pool is warm.
//
// DoWait called from inside a task waits forever if every worker is busy
// (always, with one worker), until an external Stop abandons the task.
// Safe for concurrent use.
func (p *WorkerPool) DoWait(task func()) error {
	if task == nil {
		return nil
	}
	w := p.newWaiter(task)
	if err := p.sendJob(&w.job, true, nil); err != nil {
		w.recycle()
		return p.countRejected(err, 1, nil)
	}
	return w.wait()
}

// sendJob gives a job to dispatch (see sendOne), waiting for room under
// Block if wait is set. It does not count refusals.
func (p *WorkerPool) sendJob(j *job, wait bool, ctx context.Context) error {
	j.place.Store(false)
	if err := p.refusesAtOnce(j); err != nil {
		return err
	}
	return p.sendOne(message{job: j}, wait && p.cfg.overflow == Block, ctx)
}

// refusesAtOnce returns why the pool refuses j before it is sent, or nil:
// ErrStopped once stopping has begun (first: a task refused because the
// pool stops is neither counted nor reported as too heavy), ErrTooHeavy if
// j weighs more than the pool's size.
func (p *WorkerPool) refusesAtOnce(j *job) error {
	switch {
	case p.sig.stopBegun.Load():
		return ErrStopped
	case p.size.heavierThan(j.weight()):
		p.mustBeNew() // a zero WorkerPool has size 0: every weighted task would seem too heavy
		return ErrTooHeavy
	}
	return nil
}

// SubmitWait queues task and waits until it has finished running, like
// DoWait, and panics where DoWait would return an error, with an error
// that wraps DoWait's (the package documentation's table of errors says
// which means what). The same deadlock as DoWait's applies to calls from
// inside a task. Safe for concurrent use.
func (p *WorkerPool) SubmitWait(task func()) {
	switch err := p.DoWait(task); err {
	case nil:
	case errTaskStartedGoexit:
		panic(err)
	case ErrQueueFull:
		panic(errSubmitWaitQueueFull)
	case errDropped:
		panic(errSubmitWaitDropped)
	case errExpired:
		panic(errSubmitWaitExpired)
	default:
		panic(errSubmitWaitStopped)
	}
}

// A waiter is the owner of a DoWait call's job. The pool side settles it
// (the worker that ran the task, or dispatch or a worker abandoning it) by
// sending on done. Both DoWait and the pool hold it until each is done
// with it (refs); the last to let go puts it back in WorkerPool.recycled.waiters, so
// that DoWait does not allocate. The cache is per pool, not global, because
// done belongs to the synctest bubble (if any) that made it.
type waiter struct {
	job  job
	task func()
	err  error         // written before done is sent: nil, or why the task never ran
	done chan struct{} // buffered (1)
	refs atomic.Int32  // 2 from newWaiter: DoWait's and the pool's
}

func (p *WorkerPool) newWaiter(task func()) *waiter {
	w, _ := p.recycled.waiters.Get().(*waiter)
	if w == nil {
		w = &waiter{done: make(chan struct{}, 1)}
		w.job.init(p, w)
	}
	w.task = task
	w.refs.Store(2)
	w.job.reset(taskOptions{weight: 1}, nil)
	return w
}

// call runs the task; it reports and returns a recovered panic as
// callPlain does, which only TaskFinished sees: DoWait returns nil once
// the task ran.
func (w *waiter) call(context.Context) (panicked bool, err error) {
	return w.job.pool.obs.callPlain(w.task, &w.job)
}

// runContext is context.Background(): DoWait has no context.
func (w *waiter) runContext() context.Context { return context.Background() }

// canceled is always nil: DoWait's task has no context.
func (w *waiter) canceled() error { return nil }

// ctxDone is always false: a func() is never retried.
func (w *waiter) ctxDone() bool { return false }

// conclude reports the outcome: DoWait returns nil once the task ran,
// however it ended, and ErrStopped if it was abandoned.
func (w *waiter) conclude(err error, ran bool) {
	if !ran {
		w.err = err
	}
	w.done <- struct{}{}
}

// released drops the pool's reference.
func (w *waiter) released() { w.unref() }

// wait blocks until the job settled, then drops DoWait's reference.
func (w *waiter) wait() error {
	<-w.done
	return w.concluded()
}

// concluded reads the outcome once done was received, and drops DoWait's
// reference.
func (w *waiter) concluded() error {
	err := w.err
	w.unref()
	return err
}

func (w *waiter) unref() {
	if w.refs.Add(-1) == 0 {
		w.recycle()
	}
}

// recycle returns w to the cache; no one refers to it any more.
func (w *waiter) recycle() {
	w.task, w.err = nil, nil
	w.job.pool.recycled.waiters.Put(w)
}

// Pause is a barrier that then holds the pool. It returns once every task
// submitted before the call has finished; tasks submitted after it are
// accepted and queued, and wait until ctx is done. A Pause made while
// another is in effect waits for that one to end, then for its own barrier.
// ctx bounds only how long the pool stays paused: Pause waits for the
// barrier even if ctx is already done.
//
// Stop, StopWait and Shutdown end every pause: a waiting Pause returns as
// soon as stopping begins, and StopWait then runs the held tasks. On a
// stopped pool Pause returns at once. Pause called from inside a task waits
// forever while that task keeps its worker busy, until an external stop.
// Pause panics if ctx is nil. Safe for concurrent use.
func (p *WorkerPool) Pause(ctx context.Context) {
	if ctx == nil {
		panic("workerpool: Pause called with a nil context")
	}
	req := &pauseRequest{end: ctx.Done(), barrierReached: make(chan struct{})}
	if sendControl(p, message{req: &request{pause: req}}) != nil {
		return
	}
	select {
	case <-req.barrierReached:
	case <-p.sig.stopping:
	}
}

// Resize sets the most workers to maxWorkers (below 1 means 1) and returns
// without waiting for running tasks: Size and Status().MaxWorkers show the
// new size when it returns. Growing starts workers for waiting tasks at
// once. Shrinking retires idle workers at once and busy ones as their task
// ends, and no task starts while the running ones are at or above the new
// size. A WithMinWorkers floor above the new size is lowered to it, and
// restored by a Resize back up. Concurrent calls are linearizable: the last
// one wins. After stopping has begun Resize does nothing. Safe for
// concurrent use.
//
// Under a size schedule (see WithMinWorkers), a Resize inside a window
// sets the size for the rest of that window only, and one outside every
// window sets the pool's own size, which windows replace while they last.
// Under WithAdaptiveSize it sets the ceiling of the size the pool chooses
// (see Sizing itself in the package documentation).
func (p *WorkerPool) Resize(maxWorkers int) {
	if p.sig.stopBegun.Load() {
		return
	}
	to := int64(max(maxWorkers, 1))
	if from, ok := p.size.change(&p.size.max, to, p.tellResize); ok {
		p.obs.logResized(from, to)
	}
}

// WaitIdle waits for the first moment at which no task runs or waits (tasks
// a Pause holds, and tasks a Group holds back, count as waiting) and
// returns nil; it returns ctx's error if
// ctx is done first, and ErrStopped if stopping began before the pool was
// idle (at once on a stopped pool). It does not hold back new tasks, which
// is Pause's job, and occupies no worker. WaitIdle called from inside a task
// waits for that task: forever, until ctx is done or the pool stops.
// WaitIdle panics if ctx is nil. Safe for concurrent use.
func (p *WorkerPool) WaitIdle(ctx context.Context) error {
	if ctx == nil {
		panic("workerpool: WaitIdle called with a nil context")
	}
	req := &idleRequest{ctxDone: ctx.Done(), done: make(chan struct{})}
	if err := sendControl(p, message{req: &request{idle: req}}); err != nil {
		return err
	}
	select {
	case <-req.done:
		return req.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop stops the pool: new tasks are rejected, tasks already running finish,
// and queued tasks are abandoned (counted in Status.Abandoned and released
// at once, so whatever they captured can be collected; DoWait calls, Tasks
// and groups learn ErrStopped). It returns when the dispatcher and every
// worker have exited; no task starts after that.
//
// Stop is idempotent and safe to call concurrently with itself, StopWait,
// Shutdown and every other method; each caller returns only once the pool
// has fully stopped. Called during a StopWait or Shutdown, Stop abandons
// the tasks that have not started yet. Calling Stop from inside a task
// deadlocks.
func (p *WorkerPool) Stop() {
	p.sig.abandon() // first: then no queued task starts once stopping begins
	p.StopWait()
}

// StopWait stops the pool after running every accepted task: new tasks are
// rejected, then queued and held tasks run to the end, then every worker
// exits. A task's effects happen before StopWait returns. Tasks that a
// Group holds back because of SetLimit have not reached the pool: they are
// dropped, and counted as abandoned (see Group.SetLimit).
//
// StopWait is idempotent and safe to call concurrently with itself, Stop,
// Shutdown and every other method; each caller returns only once the pool
// has fully stopped. Calling StopWait from inside a task deadlocks.
func (p *WorkerPool) StopWait() {
	p.beginStop()
	p.awaitStopped()
}

// Shutdown stops the pool like StopWait, but only as long as ctx allows:
// new tasks are rejected, and queued tasks keep running until ctx is done.
// Then Shutdown gives up waiting: the rest of the queue is abandoned, as
// Stop does, and the contexts of running Tasks, Futures and group tasks are
// canceled (with a cause wrapping ErrStopped). Plain tasks from Submit and
// DoWait cannot be canceled, so Shutdown waits for the running ones to
// return even after ctx is done, as http.Server.Shutdown waits for its
// handlers.
//
// Shutdown returns once every pool goroutine has exited: nil if the stop
// abandoned no accepted task (tasks dropped, expired or canceled for their
// own reasons do not count), ctx's error if Shutdown gave up, and an error
// wrapping ErrStopped if tasks were abandoned all the same: by a Stop, or
// tasks a Group held back because of SetLimit, which every stop drops.
// With a ctx that is never done Shutdown is StopWait; with one that is done
// already it starts no queued task: it abandons the queue and cancels
// running tasks at once.
//
// To drain, the tasks need contexts that the reason for the shutdown does
// not end: a task whose own ctx is canceled is canceled, not drained. A
// program that stops on a signal (signal.NotifyContext) gives its tasks
// context.WithoutCancel of that ctx, or context.Background(), and Shutdown
// a ctx with the deadline it grants them; see the Shutdown examples.
//
// Shutdown is safe to call concurrently with Stop, StopWait, itself and
// every other method; a Stop during a Shutdown abandons the queue at once,
// without canceling running tasks. Calling Shutdown from inside a task
// deadlocks. Shutdown panics if ctx is nil.
func (p *WorkerPool) Shutdown(ctx context.Context) error {
	if ctx == nil {
		panic("workerpool: Shutdown called with a nil context")
	}
	gaveUp := ctx.Err() != nil
	if gaveUp {
		p.cutShort() // before stopping begins, as Stop does
	}
	p.beginStop()
	if !gaveUp {
		select {
		case <-p.sig.stopped:
		case <-ctx.Done():
			if gaveUp = !isClosed(p.sig.stopped); gaveUp { // both may be ready
				p.cutShort()
			}
		}
	}
	p.awaitStopped()
	switch {
	case gaveUp:
		return ctx.Err()
	case p.counts.settled.abandoned.Load() > 0:
		return errTasksAbandoned
	}
	return nil
}

// cutShort ends a Shutdown's wait: the queue is abandoned and the contexts
// of running Tasks and groups are canceled.
func (p *WorkerPool) cutShort() {
	p.obs.logDebug("shutdown gave up")
	p.sig.abandon()
	p.live.cutAll()
}
