package workerpool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ErrStopped reports that work was submitted after Stop, StopWait or
// Shutdown began, or that a task someone waits for (with DoWait, a Task, a
// Future or a Group) was abandoned before it started.
var ErrStopped = errors.New("workerpool: pool stopped")

// The values Submit and SubmitWait panic with; both wrap ErrStopped.
var (
	errSubmitStopped     = fmt.Errorf("%w: Submit called after Stop", ErrStopped)
	errSubmitWaitStopped = fmt.Errorf("%w: SubmitWait task not run", ErrStopped)
)

// A WorkerPool runs submitted tasks on at most maxWorkers goroutines. It is
// safe for concurrent use. The zero value is not usable; New starts a
// dispatcher goroutine, so call Stop, StopWait or Shutdown when the pool is
// no longer needed.
type WorkerPool struct {
	maxWorkers   int
	idleTimeout  time.Duration       // > 0, or < 0 for no retirement
	panicHandler func(recovered any) // nil: a task's panic crashes the program

	// taskQueue carries every message to dispatch: tasks from Submit and
	// Do; DoWait calls, Tasks and group tasks; Pause calls; and idle timer
	// ticks. Unbuffered on purpose: dispatch does the queueing, and a send
	// that completes is the moment a task is accepted. The first Stop,
	// StopWait or Shutdown sends one empty message after closing stopping:
	// dispatch then takes the sends still in flight (see send) and stops
	// receiving. Never closed.
	taskQueue chan message
	// workerQueue hands tasks from dispatch to idle workers. Only dispatch
	// sends; a nil func tells the receiving worker to return. Never closed.
	workerQueue chan func()
	// workerIdle wakes dispatch while a Pause waits for running tasks to
	// finish: a worker that finishes a task while watchIdle is set sends
	// without blocking. Buffered (1), never closed; a stale wake-up is
	// harmless because dispatch re-checks the counters.
	workerIdle chan struct{}
	watchIdle  atomic.Bool
	// sendersGone wakes dispatch while it admits the sends in flight at
	// stop: the last caller to leave send once stopping is closed sends
	// without blocking. Buffered (1), never closed; a stale wake-up is
	// harmless because dispatch re-reads sending.
	sendersGone chan struct{}

	stopOnce    sync.Once
	abandonOnce sync.Once
	stopping    chan struct{} // closed by the first Stop or StopWait: submits, DoWait and Pause calls are rejected from then on
	abandon     chan struct{} // closed by the first Stop, or a Shutdown that gives up: dispatch drops queued tasks, even during a StopWait
	stopped     chan struct{} // closed by dispatch once the last worker took its nil; no pool code runs after it but returns

	waiters    sync.Pool // idle *waiter values for DoWait
	taskRuns   sync.Pool // idle *taskRun values for Go and Call
	groupTasks sync.Pool // idle *groupTask values for Group.Go
	live       liveTasks // the contexts of running Tasks and Groups, for a Shutdown that gives up

	// The fields below are written while tasks flow. Each group sits on its
	// own cache lines so that a write by one side does not evict what the
	// other sides read or write.

	_ cacheLinePad
	// sending counts the calls inside send: between their stopping check
	// and the end of their send. Dispatch reads it only while stopping.
	sending atomic.Int64

	_ cacheLinePad
	// Published by dispatch for observers; no other goroutine writes them.
	workers atomic.Int64 // live workers
	waiting atomic.Int64 // user tasks in the waiting queue
	paused  atomic.Bool  // a Pause is in effect
	counted dispatchCounters

	_   cacheLinePad
	ran workerCounters
	_   cacheLinePad
}

// cacheLinePad keeps the fields before and after it off each other's cache
// lines (128 bytes: two 64-byte lines, as adjacent-line prefetch pairs them).
type cacheLinePad [128]byte

// A message is what travels on taskQueue: a task, or a request for
// something else. Both nil is the stop signal.
type message struct {
	task func()
	req  *request
}

// A request asks dispatch for something other than queueing a plain task;
// exactly one field is set.
type request struct {
	tracked  tracked       // a DoWait call, a Task or a group task
	pause    *pauseRequest // a Pause call
	idleTick bool          // the idle timer fired
}

// A tracked task is one whose caller waits for its outcome: a DoWait call,
// a Task or a group task. Dispatch keeps it while its func is in the queue, so that it
// can skip it once it is canceled and answer its caller if the task is
// abandoned.
type tracked interface {
	// runner is the func that dispatch queues and a worker runs.
	runner() func()
	// skip reports whether the task must not start because it was canceled
	// while it waited; the caller has then been answered. Dispatch calls it
	// before the task leaves the queue. It never blocks.
	skip() bool
	// abandon answers the caller of a task that stop dropped from the
	// queue. It reports true if the task counts as canceled rather than
	// abandoned: it was canceled before it was dropped. It never blocks.
	abandon() (canceled bool)
}

// dispatchCounters are the totals behind Status that dispatch writes.
type dispatchCounters struct {
	submitted atomic.Uint64 // tasks accepted
	handed    atomic.Uint64 // tasks handed to workers
	abandoned atomic.Uint64 // tasks stop dropped from the queue
	canceled  atomic.Uint64 // tasks dispatch skipped because they were canceled
}

// workerCounters are the totals behind Status that workers write.
type workerCounters struct {
	finished atomic.Uint64 // tasks that came back from a worker: ran, or were skipped there
	skipped  atomic.Uint64 // of finished, the canceled ones a worker skipped without running
	panicked atomic.Uint64
}

// New creates a pool that runs tasks on at most maxWorkers goroutines and
// starts its dispatcher. A maxWorkers below 1 means 1. Workers start only as
// tasks arrive and retire after an idle period (see WithIdleTimeout). Call
// Stop or StopWait to release the dispatcher once the pool is not needed.
func New(maxWorkers int, options ...Option) *WorkerPool {
	cfg := newConfig(options)
	p := &WorkerPool{
		maxWorkers:   max(maxWorkers, 1),
		idleTimeout:  cfg.idleTimeout,
		panicHandler: cfg.panicHandler,
		taskQueue:    make(chan message),
		workerQueue:  make(chan func()),
		workerIdle:   make(chan struct{}, 1),
		sendersGone:  make(chan struct{}, 1),
		stopping:     make(chan struct{}),
		abandon:      make(chan struct{}),
		stopped:      make(chan struct{}),
	}
	go newDispatcher(p).run()
	return p
}

// Submit queues task to run on a worker and returns at once: it never waits
// for a worker, however busy the pool is. Tasks start in the order they were
// submitted. A nil task is ignored.
//
// Submit panics with an error wrapping ErrStopped once Stop or StopWait has
// been called, including from a task that is still running during StopWait;
// use Do to get the error instead. Safe for concurrent use.
func (p *WorkerPool) Submit(task func()) {
	if p.Do(task) != nil {
		panic(errSubmitStopped)
	}
}

// Do queues task like Submit, and returns ErrStopped instead of panicking
// when Stop or StopWait has been called. A Do that races with Stop either
// is accepted, and then the task runs exactly once or Stop abandons it, or
// returns ErrStopped. A nil task is ignored and Do returns nil. Safe for
// concurrent use.
func (p *WorkerPool) Do(task func()) error {
	if task == nil {
		return nil
	}
	return send(p, message{task: task})
}

// send delivers m to dispatch on taskQueue, or returns ErrStopped once
// stopping has begun. A call that starts after Stop is always rejected; one
// that races with Stop is accepted exactly when its send completes.
//
// The send is a plain channel send, not a select with stopping: a caller
// counts itself in sending before it checks stopping, and dispatch, once
// stopping is closed, keeps receiving until sending is zero (see
// dispatcher.admitStragglers). So a send that began before Stop always
// completes, and none can begin after.
func send(p *WorkerPool, m message) error {
	if err := p.beginSend(); err != nil {
		return err
	}
	p.taskQueue <- m
	p.endSend()
	return nil
}

// beginSend counts the caller in sending, then rejects it if stopping has
// begun.
func (p *WorkerPool) beginSend() error {
	p.sending.Add(1)
	if isClosed(p.stopping) {
		p.endSend()
		return ErrStopped
	}
	return nil
}

// endSend uncounts the caller; the last one out while stopping wakes
// dispatch, which may be waiting for it in admitStragglers.
func (p *WorkerPool) endSend() {
	if p.sending.Add(-1) == 0 && isClosed(p.stopping) {
		select {
		case p.sendersGone <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// DoWait queues task and waits until it has finished running: returned,
// called runtime.Goexit, or panicked and the panic handler returned. It
// returns ErrStopped at once when the pool is stopped, and as soon as Stop
// abandons task before it starts; with StopWait, task runs first. A nil
// task is ignored and DoWait returns nil.
//
// DoWait called from inside a task waits forever if every worker is busy
// (always, with one worker), until an external Stop abandons the task.
// Safe for concurrent use.
func (p *WorkerPool) DoWait(task func()) error {
	if task == nil {
		return nil
	}
	w := p.newWaiter(task)
	if err := send(p, message{req: &w.request}); err != nil {
		p.waiters.Put(w)
		return err
	}
	return w.wait()
}

// SubmitWait queues task and waits until it has finished running, like
// DoWait, and panics with an error wrapping ErrStopped where DoWait would
// return it: when the pool is stopped, or Stop abandons task before it
// starts. The same deadlock as DoWait's applies to calls from inside a task.
// Safe for concurrent use.
func (p *WorkerPool) SubmitWait(task func()) {
	if p.DoWait(task) != nil {
		panic(errSubmitWaitStopped)
	}
}

// Pause is a barrier that then holds the pool. It returns once every task
// submitted before the call has finished; tasks submitted after it are
// accepted and queued, and wait until ctx is done. A Pause made while
// another is in effect waits for that one to end, then for its own barrier.
// ctx bounds only how long the pool stays paused: Pause waits for the
// barrier even if ctx is already done.
//
// Stop and StopWait end every pause: a waiting Pause returns as soon as
// stopping begins, and StopWait then runs the held tasks. On a stopped pool
// Pause returns at once. Pause called from inside a task waits forever
// while that task keeps its worker busy, until an external Stop or StopWait.
// Pause panics if ctx is nil. Safe for concurrent use.
func (p *WorkerPool) Pause(ctx context.Context) {
	if ctx == nil {
		panic("workerpool: Pause called with a nil context")
	}
	req := &pauseRequest{end: ctx.Done(), barrierReached: make(chan struct{})}
	if send(p, message{req: &request{pause: req}}) != nil {
		return
	}
	select {
	case <-req.barrierReached:
	case <-p.stopping:
	}
}

// Stop stops the pool: new tasks are rejected, tasks already running finish,
// and queued tasks are abandoned (counted in Status.Abandoned and released
// at once, so whatever they captured can be collected). It returns when the
// dispatcher and every worker have exited; no task starts after that.
//
// Stop is idempotent and safe to call concurrently with itself, StopWait
// and every other method; each caller returns only once the pool has fully
// stopped. Called during a StopWait, Stop abandons the tasks StopWait has
// not yet started. Calling Stop from inside a task deadlocks.
func (p *WorkerPool) Stop() {
	// abandon first: dispatch checks it when it begins to stop.
	p.abandonOnce.Do(func() { close(p.abandon) })
	p.stop()
}

// StopWait stops the pool after running every accepted task: new tasks are
// rejected, then queued and held tasks run to the end, then every worker
// exits. A task's effects happen before StopWait returns.
//
// StopWait is idempotent and safe to call concurrently with itself, Stop and
// every other method; each caller returns only once the pool has fully
// stopped. Calling StopWait from inside a task deadlocks.
func (p *WorkerPool) StopWait() {
	p.stop()
}

// Shutdown stops the pool like StopWait, but only as long as ctx allows:
// new tasks are rejected, and queued tasks keep running until ctx is done.
// Then Shutdown gives up waiting: the rest of the queue is abandoned, as
// Stop does, and the contexts of running Tasks, Futures and Group tasks are
// canceled (with a cause wrapping ErrStopped). Shutdown returns once every
// pool goroutine has exited: nil if every accepted task ran, and ctx's
// error if Shutdown gave up. Plain tasks from Submit and SubmitWait cannot
// be canceled, so Shutdown waits for the running ones to return even after
// ctx is done, as http.Server.Shutdown waits for its handlers.
//
// With a ctx that is never done Shutdown is StopWait; with one that is done
// already it abandons the queue and cancels running tasks at once. Shutdown
// is safe to call concurrently with Stop, StopWait, itself and every other
// method; a Stop during a Shutdown abandons the queue at once, without
// canceling running tasks. Calling Shutdown from inside a task deadlocks.
// Shutdown panics if ctx is nil.
func (p *WorkerPool) Shutdown(ctx context.Context) error {
	if ctx == nil {
		panic("workerpool: Shutdown called with a nil context")
	}
	p.beginStop()
	select {
	case <-p.stopped:
		return nil
	case <-ctx.Done():
	}
	if isClosed(p.stopped) { // both were ready
		return nil
	}
	p.abandonOnce.Do(func() { close(p.abandon) })
	p.live.cutAll()
	<-p.stopped
	return ctx.Err()
}

// stop stops the pool and waits until every pool goroutine has exited.
func (p *WorkerPool) stop() {
	p.beginStop()
	<-p.stopped
}

// beginStop rejects new submits and tells dispatch to stop, once. It
// always receives taskQueue while running, so the message arrives promptly.
func (p *WorkerPool) beginStop() {
	p.stopOnce.Do(func() {
		close(p.stopping)
		p.taskQueue <- message{}
	})
}
