package workerpool

import "context"

// A Future is the handle of one fn queued by [GoResult]: a [Task] that also
// produces a value of type T. Done is its Task's; Wait also returns the
// value. To cancel it, cancel the ctx given to GoResult. Its methods are
// safe for concurrent use and may be called any number of times. Only
// GoResult makes a usable Future: the methods of a zero Future panic,
// saying so, and so does Wait on a nil *Future; Done, its Task's, reaches
// that Task through the pointer, so on a nil *Future it panics as a nil
// dereference.
type Future[T any] struct {
	Task
	fn    func(ctx context.Context) (T, error)
	value T // fn's last run's, zeroed as each run starts; written by fn's worker before the task settles or runs again
}

// GoResult is [WorkerPool.Go] for a fn that returns a value: it queues fn
// to run on a worker of p exactly as that method does (opts included),
// and returns a handle to its value and error. (It is a function, not a
// method, because a method cannot have type parameters.) It never blocks,
// and panics if ctx, p or fn is nil.
func GoResult[T any](ctx context.Context, p *WorkerPool, fn func(ctx context.Context) (T, error), opts ...TaskOption) *Future[T] {
	if p == nil {
		panic("workerpool: GoResult called with a nil pool")
	}
	mustHave(ctx, fn != nil, "GoResult")
	o := p.parseOptions(opts)
	var f *Future[T]
	var store *jobOptions
	if o.isDefault() {
		f = new(Future[T])
	} else {
		fo := new(futureWithOptions[T]) // one allocation for the handle and its options
		f, store = &fo.Future, &fo.opts
	}
	f.fn = fn
	f.Task.init(p, ctx, f)
	f.Task.job.apply(o, store)
	f.Task.submit()
	return f
}

// futureWithOptions is a Future and the options its job keeps, made in
// one allocation (see GoResult).
type futureWithOptions[T any] struct {
	Future[T]
	opts jobOptions
}

// run is one run of fn, which keeps its value.
func (f *Future[T]) run(ctx context.Context) error {
	var zero T
	f.value = zero // an earlier run's value is not this run's
	v, err := f.fn(ctx)
	f.value = v
	return err
}

// A Future owns its task's job (see jobOwner): it runs fn itself, and
// leaves the rest to its Task.

func (f *Future[T]) call(ctx context.Context) (panicked bool, err error) {
	return f.Task.job.callRecovering(ctx, f.run)
}
func (f *Future[T]) runContext() context.Context { return f.Task.runContext() }
func (f *Future[T]) canceled() error             { return f.Task.canceled() }
func (f *Future[T]) released()                   {}
func (f *Future[T]) ctxDone() bool               { return f.Task.ctxDone() }

// conclude gives the task its outcome. When fn was not called for it (the
// task settled, or its TaskStarted hook ended the run first), the value an
// earlier run left is not the outcome's: Wait returns T's zero value.
func (f *Future[T]) conclude(err error, ran bool) {
	if !ran {
		var zero T
		f.value = zero
	}
	f.Task.conclude(err, ran)
}

// Wait blocks as [Task.Wait] does and returns fn's value and error: the
// value of the run whose outcome Wait reports. The value is T's zero value
// when that run did not return (it panicked or called runtime.Goexit), and
// when the task ended without a last run: it was skipped, canceled,
// abandoned, dropped or expired, before its first run or, under a retry,
// while it waited for its next one.
func (f *Future[T]) Wait() (T, error) {
	f.mustBeMade("Wait")
	err := f.Task.Wait()
	if f.Task.job.settled() { // no run ended the task: a value is an earlier run's
		var zero T
		return zero, err
	}
	return f.value, err
}

// mustBeMade panics, naming method, if f is nil or GoResult did not make it.
func (f *Future[T]) mustBeMade(method string) {
	switch {
	case f == nil:
		panic("workerpool: Future." + method + " called on a nil *Future")
	case f.Task.job.pool == nil:
		panic("workerpool: Future." + method + " called on a Future that GoResult did not make")
	}
}
