package workerpool

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// ErrGoexit is the error a Task or Group reports for a fn that called
// runtime.Goexit (as t.FailNow does) instead of returning.
var ErrGoexit = errors.New("workerpool: task called runtime.Goexit")

// A PanicError is the error a Task or Group reports for a fn that panicked.
// Handles always recover their fn's panics: the caller gets the panic as
// this error, and the pool's panic handler is not called.
type PanicError struct {
	Value any    // what fn panicked with
	Stack []byte // the panicking goroutine's stack, taken before it unwound: it shows fn's frames
}

// Error returns "workerpool: task panicked: " and the panic value.
func (e *PanicError) Error() string {
	return fmt.Sprintf("workerpool: task panicked: %v", e.Value)
}

// Unwrap returns the panic value if it is an error, and nil otherwise, so
// that errors.Is and errors.As see through a panic(err).
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// A Task is the handle of one fn queued by [WorkerPool.Go]: wait for its
// error, watch for its end, or cancel it. Its methods are safe for
// concurrent use and may be called any number of times.
type Task struct {
	pool *WorkerPool
	body taskBody    // what runs; nil once t settled
	ctx  taskContext // what fn receives

	// state moves once, from taskQueued: to taskStarted by the worker that
	// takes t, or to taskCanceled by whoever settles t before it starts
	// (Cancel, the caller's ctx, dispatch, a rejected submit).
	state    atomic.Uint32
	err      error          // t's outcome; written once, by settle
	finished sync.WaitGroup // done once err is set; Wait waits on it

	mu       sync.Mutex    // guards the fields below
	settled  bool          // settle has run
	done     chan struct{} // made on first use, by Done or a Wait with a cancelable ctx; closed by settle
	watching bool          // Done watches the caller's ctx; unwatch stops that
	unwatch  func() bool
}

const (
	taskQueued uint32 = iota
	taskStarted
	taskCanceled
)

// A taskBody is what a task runs: fn for Go and Group.Go, a Future for Call.
type taskBody interface {
	call(ctx context.Context) error
}

// funcBody is the body of Go and Group.Go.
type funcBody func(ctx context.Context) error

func (f funcBody) call(ctx context.Context) error { return f(ctx) }

// Go queues fn to run on a worker, like Submit, and returns its handle. It
// never blocks. fn receives a context that is canceled when ctx is, when
// the handle's Cancel is called, when a Shutdown gives up waiting, and once
// fn has returned.
//
// If ctx is done before fn starts (a deadline covers the time in the queue
// as well as the run), or Cancel is called first, fn never runs and the
// task is counted in Status.Canceled: dispatch drops it when it reaches the
// front of the queue, without taking a worker. (One canceled at the very
// moment dispatch hands it out is skipped by the worker that took it,
// without calling fn.) A panic in
// fn is recovered and reported as a *PanicError; the pool's panic handler is
// not called. On a stopped pool fn never runs and Wait reports ErrStopped.
//
// Go panics if ctx or fn is nil. Safe for concurrent use.
func (p *WorkerPool) Go(ctx context.Context, fn func(ctx context.Context) error) *Task {
	mustHave(ctx, fn != nil, "Go")
	t := new(Task)
	t.init(p, ctx, funcBody(fn))
	p.submitTask(t)
	return t
}

// mustHave panics, naming the method, if ctx is nil or there is no fn.
func mustHave(ctx context.Context, haveFn bool, method string) {
	switch {
	case ctx == nil:
		panic("workerpool: " + method + " called with a nil context")
	case !haveFn:
		panic("workerpool: " + method + " called with a nil func")
	}
}

// init readies t to run body with ctx on p.
func (t *Task) init(p *WorkerPool, ctx context.Context, body taskBody) {
	t.pool, t.body = p, body
	t.ctx.parent, t.ctx.pool = ctx, p
	t.finished.Add(1)
}

// submitTask sends t to dispatch, or settles it with ErrStopped if the pool
// is stopping.
func (p *WorkerPool) submitTask(t *Task) {
	r := p.newTaskRun(t)
	if send(p, message{req: &r.request}) != nil {
		r.release()
		t.cancelQueued(ErrStopped)
	}
}

// Wait blocks until fn has returned, or until it is certain that fn will
// never run, and returns:
//   - fn's error, once fn returned;
//   - a *PanicError if fn panicked, ErrGoexit if it called runtime.Goexit;
//   - ctx's error if ctx was done before fn started, context.Canceled if
//     Cancel was called before fn started; Wait returns as soon as that
//     happens, even while the task is still queued;
//   - ErrStopped if the pool was stopped before fn started: Go was called
//     on a stopped pool, or Stop or Shutdown abandoned the task.
//
// Every Wait returns once the pool has stopped.
func (t *Task) Wait() error {
	if callerDone := t.ctx.parent.Done(); callerDone != nil {
		select {
		case <-t.doneChan(false):
		case <-callerDone:
			t.cancelQueued(t.ctx.parent.Err())
		}
	}
	t.finished.Wait()
	return t.err
}

// Done returns a channel that is closed when Wait would return. It never
// blocks. The first call with a cancelable ctx makes the task watch ctx
// while it is queued, so that the channel closes as soon as ctx is done.
func (t *Task) Done() <-chan struct{} {
	return t.doneChan(true)
}

// doneChan returns t's done channel, made on first use so that a caller
// who only calls Wait with an uncancelable ctx never pays for it. With
// watch set, it also starts watching the caller's ctx, once.
func (t *Task) doneChan(watch bool) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done == nil {
		t.done = make(chan struct{})
		if t.settled {
			close(t.done)
		}
	}
	if watch && !t.watching && !t.settled {
		t.watching = true
		t.watchCaller()
	}
	return t.done
}

// Cancel skips fn if it has not started yet: Wait then returns
// context.Canceled at once, and the queued task never takes a worker. If fn
// is running, Cancel cancels its context and Wait returns what fn returns.
// Once fn has finished, Cancel does nothing. It never blocks.
func (t *Task) Cancel() {
	if !t.cancelQueued(context.Canceled) {
		t.ctx.cancel(context.Canceled)
	}
}

// cancelQueued settles t with err if fn has not started, and reports
// whether it did.
func (t *Task) cancelQueued(err error) bool {
	if !t.state.CompareAndSwap(taskQueued, taskCanceled) {
		return false
	}
	t.settle(err)
	return true
}

// cancelIfCallerDone settles t with its caller's ctx error if that ctx is
// done and fn has not started.
func (t *Task) cancelIfCallerDone() {
	if err := t.ctx.parent.Err(); err != nil {
		t.cancelQueued(err)
	}
}

// watchCaller makes the caller's ctx settle t while it is queued. Wait
// watches ctx itself; Done needs this, as a channel cannot watch. t.mu is
// held; the watch runs in a goroutine of its own.
func (t *Task) watchCaller() {
	if t.ctx.parent.Done() != nil {
		t.unwatch = context.AfterFunc(t.ctx.parent, t.cancelIfCallerDone)
	}
}

// settle records t's outcome, releases fn and its context, and tells
// whoever waits, through Wait and Done. Exactly one party calls it: the one
// that moved t out of taskQueued.
func (t *Task) settle(err error) {
	t.err = err
	t.body = nil
	t.ctx.release()
	t.mu.Lock()
	t.settled = true
	done, unwatch := t.done, t.unwatch
	t.mu.Unlock()
	if done != nil {
		close(done)
	}
	if unwatch != nil {
		unwatch()
	}
	t.finished.Done()
}

// run runs on a worker. A task canceled after dispatch handed it out, or
// whose context is done by now, is skipped.
func (t *Task) run() {
	if !t.state.CompareAndSwap(taskQueued, taskStarted) {
		t.pool.ran.skipped.Add(1)
		return
	}
	if err := t.ctx.Err(); err != nil {
		t.pool.ran.skipped.Add(1)
		t.settle(err)
		return
	}
	t.pool.call(&t.ctx, t.body, t.settle)
}

// call runs body with ctx and passes its outcome to settle: body's error, a
// *PanicError if it panicked, or ErrGoexit if it called runtime.Goexit. The
// deferred func runs in all three cases.
func (p *WorkerPool) call(ctx context.Context, body taskBody, settle func(error)) {
	err := ErrGoexit
	defer func() {
		if r := recover(); r != nil { // recover must be called here, by the deferred func itself
			err = &PanicError{Value: r, Stack: debug.Stack()}
			p.ran.panicked.Add(1)
		}
		settle(err)
	}()
	err = body.call(ctx)
}

// skipQueued is dispatch's check on a queued task: it settles t if its
// caller's ctx is done, and reports whether t is canceled.
func (t *Task) skipQueued() bool {
	t.cancelIfCallerDone()
	return t.state.Load() == taskCanceled
}

// abandon settles a queued t that stop dropped, with ErrStopped. A task
// whose caller's ctx was done first, or that was already canceled, counts
// as canceled instead.
func (t *Task) abandon() (canceled bool) {
	if t.skipQueued() {
		return true
	}
	return !t.cancelQueued(ErrStopped)
}

// A taskRun carries a Task through the pool: it is the tracked value that
// dispatch keeps and its run func is what a worker calls. Each pool reuses
// its taskRuns through WorkerPool.taskRuns, so that Go allocates only the
// Task and its channel. A taskRun goes back to the cache as soon as the
// pool is done with it: when a worker starts it, or dispatch skips or
// abandons it.
type taskRun struct {
	task    *Task
	run     func()  // r.execute, bound once
	request request // {tracked: r}, set once
}

func (p *WorkerPool) newTaskRun(t *Task) *taskRun {
	r, _ := p.taskRuns.Get().(*taskRun)
	if r == nil {
		r = new(taskRun)
		r.run = r.execute
		r.request.tracked = r
	}
	r.task = t
	return r
}

func (r *taskRun) release() {
	p := r.task.pool
	r.task = nil
	p.taskRuns.Put(r)
}

func (r *taskRun) runner() func() { return r.run }

// execute runs on a worker.
func (r *taskRun) execute() {
	t := r.task
	r.release()
	t.run()
}

func (r *taskRun) skip() bool {
	t := r.task
	if !t.skipQueued() {
		return false
	}
	r.release()
	return true
}

func (r *taskRun) abandon() (canceled bool) {
	t := r.task
	r.release()
	return t.abandon()
}
