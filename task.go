package workerpool

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// A PanicError is the error a Task or Group reports for a fn that panicked.
// Handles always recover their fn's panics: the caller gets the panic as
// this error, and the Panic hook is not called.
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
// error, or watch for its end. To cancel it, cancel the ctx given to Go
// (see Go). Its methods are safe for
// concurrent use and may be called any number of times. Only Go makes a
// usable Task: the methods of a zero or nil Task panic, saying so.
type Task struct {
	job job                             // carries the task through the pool; its state says whether it ended
	fn  func(ctx context.Context) error // what Go runs; nil for a Future's task (the Future runs its own), and once the task concluded
	ctx taskContext                     // what fn receives; its mu also guards done and unwatch

	// The outcome: err is written once, by conclude, before finished is
	// done and done is closed. Wait waits on finished; done exists only
	// once someone needs a channel.
	err      error
	finished sync.WaitGroup

	done    chan struct{} // made on first use, by Done or a Wait with a cancelable ctx
	unwatch func() bool   // stops the watch of the caller's ctx (see doneChan); nil if there is none
}

// Go queues fn to run on a worker, like Submit, and returns its handle,
// whose Wait reports fn's error, or why fn never ran. Under Block it waits
// for room until ctx is done; otherwise it never blocks. fn receives a
// context that is canceled when ctx is, when a Shutdown gives up waiting,
// and once fn has returned. opts schedule the task (see TaskOption).
//
// Canceling ctx is how to cancel the task. If ctx is done before fn
// starts (a deadline covers the time in the queue as well as the run), fn
// never runs: the task is counted in Status.Canceled, and no longer in
// Status.Waiting, as soon as Wait or Done reports it (with a bound, as soon
// as ctx is done, so that its room frees at once). Canceled while it
// waits, it never takes a worker; canceled while the dispatcher is handing
// it out, it may still reach a worker, which skips it. A panic in fn is
// recovered and reported as a *PanicError; the Panic hook is not called.
// If the pool stops before fn starts, fn never runs and Wait reports
// ErrStopped.
//
// So that a Shutdown drains a task rather than cancels it, give it a ctx
// that lives as long as the work should (context.Background(), or
// context.WithoutCancel of a request's ctx): Shutdown cancels a task's
// context only once it gives up waiting.
//
// Go panics if ctx or fn is nil. Safe for concurrent use.
func (p *WorkerPool) Go(ctx context.Context, fn func(ctx context.Context) error, opts ...TaskOption) *Task {
	mustHave(ctx, fn != nil, "Go")
	o := p.parseOptions(opts)
	var t *Task
	var store *jobOptions
	if o.isDefault() {
		t = new(Task)
	} else {
		to := new(taskWithOptions) // one allocation for the handle and its options
		t, store = &to.Task, &to.opts
	}
	t.fn = fn
	t.init(p, ctx, t)
	t.job.apply(o, store)
	t.submit()
	return t
}

// taskWithOptions is a Task and the options its job keeps, made in one
// allocation (see Go).
type taskWithOptions struct {
	Task
	opts jobOptions
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

// init readies t to run with ctx on p, its job owned by owner: t itself
// for Go, its Future for GoResult.
func (t *Task) init(p *WorkerPool, ctx context.Context, owner jobOwner) {
	t.job.init(p, owner)
	t.ctx.parent, t.ctx.pool = ctx, p
	t.finished.Add(1)
}

// submit gives t to the pool (under Block, waiting for room until the
// caller's ctx is done), or settles it with why it was refused (the
// package documentation's table of errors) or the caller's ctx error. With a bound, a
// delay or a retry policy, an accepted task watches a cancelable ctx at
// once, so that a queued or scheduled task whose ctx ends gives back its
// room and leaves Scheduled then, whether or not anyone waits for it.
func (t *Task) submit() {
	p := t.job.pool
	watch := (p.cfg.bounded || t.job.due() != 0 || t.job.retriable()) && t.ctx.parent.Done() != nil // before the send: then the job is the pool's
	switch err := p.sendJob(&t.job, true, t.ctx.parent); err {
	case nil:
		if watch {
			t.doneChan(true)
		}
	case errWithdrawn:
		t.job.refuse(t.ctx.parent.Err())
	default:
		t.job.refuse(p.countRejected(err, 1, t.job.options()))
	}
}

// Wait blocks until fn has returned, or until it is certain that fn will
// never run, and returns:
//   - fn's error, once fn returned;
//   - a *PanicError if fn panicked, ErrGoexit if it called runtime.Goexit;
//   - ctx's error if ctx was done before fn started; Wait returns as soon
//     as that happens, even while the task is still queued;
//   - ErrStopped if the pool stopped before fn started: Go was called on a
//     stopped pool, or Stop or a Shutdown that gave up abandoned the task,
//     wherever it was.
//
// Every Wait returns once the pool has stopped.
func (t *Task) Wait() error {
	t.mustBeMade("Wait")
	if callerDone := t.ctx.parent.Done(); callerDone != nil {
		select {
		case <-t.doneChan(false):
		case <-callerDone:
			t.cancelIfCallerDone()
		}
	}
	t.finished.Wait()
	return t.err
}

// Done returns a channel that is closed when Wait would return. It never
// blocks. The first call with a cancelable ctx makes the task watch ctx
// while it is queued, so that the channel closes as soon as ctx is done.
func (t *Task) Done() <-chan struct{} {
	t.mustBeMade("Done")
	return t.doneChan(true)
}

// mustBeMade panics, naming method, if t is nil or Go did not make it: a
// zero Task belongs to no pool, and nothing would ever end it.
func (t *Task) mustBeMade(method string) {
	switch {
	case t == nil:
		panic("workerpool: Task." + method + " called on a nil *Task")
	case t.job.pool == nil:
		panic("workerpool: Task." + method + " called on a Task that WorkerPool.Go or GoResult did not make")
	}
}

// doneChan returns t's done channel, made on first use so that a caller
// who only calls Wait with an uncancelable ctx never pays for it. With
// watch set, it also starts watching the caller's ctx, once.
func (t *Task) doneChan(watch bool) <-chan struct{} {
	t.ctx.mu.Lock()
	defer t.ctx.mu.Unlock()
	if t.done == nil {
		t.done = make(chan struct{})
		if t.ctx.closed {
			close(t.done)
		}
	}
	if watch && !t.ctx.watched && !t.ctx.closed {
		t.ctx.watched = true
		if t.ctx.parent.Done() != nil {
			t.unwatch = context.AfterFunc(t.ctx.parent, t.cancelIfCallerDone)
		}
	}
	return t.done
}

// cancel skips fn if it has not started yet: Wait then returns
// context.Canceled at once, and the queued task never takes a worker. If fn
// is running, cancel cancels its context and Wait returns what fn returns
// (a Retry policy does not run it again). If fn waits for its next run
// under a retry, cancel removes it at once: Wait returns context.Canceled
// joined with the last run's error. Once fn has finished, cancel does
// nothing. It never blocks. It is how the pool cancels a task it made for
// itself; a caller cancels a task through the ctx given to Go.
func (t *Task) cancel() {
	if !t.job.settle(jobCanceled, context.Canceled) {
		t.ctx.cancel(context.Canceled)
		// A run that is ending may have been posted for a retry meanwhile:
		// settle it now. (If it is not posted yet, its worker sees the
		// canceled context once it is: see retryLater.)
		t.job.settle(jobCanceled, context.Canceled)
	}
}

// cancelIfCallerDone settles t as canceled if its caller's ctx is done and
// fn has not started. If the ctx ended because the pool stopped, the stop
// abandons t, in queue order (see job.settleIfCanceled).
func (t *Task) cancelIfCallerDone() {
	t.job.settleIfCanceled()
}

// call runs on the worker that started t.
func (t *Task) call(ctx context.Context) (panicked bool, err error) {
	return t.job.callRecovering(ctx, t.fn)
}

// runContext is the Task's context (see taskContext).
func (t *Task) runContext() context.Context { return &t.ctx }

// canceled returns the caller's ctx's error once it is done (see
// canceledBy).
func (t *Task) canceled() error { return canceledBy(t.ctx.parent) }

// canceledBy returns ctx's error once it is done; if its cause is the pool
// stopping (the ctx of another task, cut by a Shutdown that gave up), the
// cause, so that the task counts as abandoned.
func canceledBy(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return nil // before context.Cause, which looks the cause up through every parent
	}
	if cause := context.Cause(ctx); errors.Is(cause, ErrStopped) {
		return cause
	}
	return err
}

// conclude records t's outcome, releases fn and its context, and tells
// whoever waits, through Wait and Done.
func (t *Task) conclude(err error, _ bool) {
	t.err = err
	t.fn = nil
	t.ctx.mu.Lock()
	t.ctx.releaseLocked()
	t.ctx.closed = true
	done, unwatch := t.done, t.unwatch
	t.ctx.mu.Unlock()
	if done != nil {
		close(done)
	}
	if unwatch != nil {
		unwatch()
	}
	t.finished.Done()
}

// released does nothing: a Task is never reused.
func (t *Task) released() {}

// ctxDone reports whether fn's context is done: the caller's ctx, cancel,
// or a Shutdown that gave up.
func (t *Task) ctxDone() bool { return t.ctx.Err() != nil }

// callRecovering runs fn, the task of job j, with ctx and returns its error, or reports that
// it panicked and returns a *PanicError. A runtime.Goexit passes through;
// the job reports it as ErrGoexit.
func (j *job) callRecovering(ctx context.Context, fn func(context.Context) error) (panicked bool, err error) {
	defer func() {
		if r := recover(); r != nil { // recover must be called here, by the deferred func itself
			e := panicErrorFor(r)
			j.pool.obs.logTaskPanic("task", e, j)
			panicked, err = true, e
		}
	}()
	return false, fn(ctx)
}
