package workerpool

import "context"

// A Future is the handle of one fn queued by [Call]: a [Task] that also
// produces a value of type T. Its methods are safe for concurrent use and
// may be called any number of times. Only Call makes a usable Future: the
// methods of a zero or nil Future panic, saying so.
type Future[T any] struct {
	task  Task
	fn    func(ctx context.Context) (T, error)
	value T // fn's last run's, zeroed as each run starts; written by fn's worker before the task settles or runs again
}

// Call queues fn to run on a worker of p, exactly as [WorkerPool.Go] does
// (opts included), and returns a handle to its value and error. It never
// blocks, and panics if ctx, p or fn is nil.
func Call[T any](ctx context.Context, p *WorkerPool, fn func(ctx context.Context) (T, error), opts ...TaskOption) *Future[T] {
	if p == nil {
		panic("workerpool: Call called with a nil pool")
	}
	mustHave(ctx, fn != nil, "Call")
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
	f.task.init(p, ctx, f)
	f.task.job.apply(o, store)
	p.submitTask(&f.task)
	return f
}

// futureWithOptions is a Future and the options its job keeps, made in
// one allocation (see Call).
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
	return f.task.job.pool.callRecovering(&f.task.job, ctx, f.run)
}
func (f *Future[T]) runContext() context.Context { return f.task.runContext() }
func (f *Future[T]) canceled() error             { return f.task.canceled() }
func (f *Future[T]) released()                   {}
func (f *Future[T]) ctxDone() bool               { return f.task.ctxDone() }

// conclude gives the task its outcome. When fn was not called for it (the
// task settled, or its TaskStarted hook ended the run first), the value an
// earlier run left is not the outcome's: Wait returns T's zero value.
func (f *Future[T]) conclude(err error, ran bool) {
	if !ran {
		var zero T
		f.value = zero
	}
	f.task.conclude(err, ran)
}

// Wait blocks as [Task.Wait] does and returns fn's value and error: the
// value of the run whose outcome Wait reports. The value is T's zero value
// when that run did not return (it panicked or called runtime.Goexit), and
// when the task ended without a last run: it was skipped, canceled,
// abandoned, dropped or expired, before its first run or, under Retry,
// while it waited for its next one.
func (f *Future[T]) Wait() (T, error) {
	f.mustBeMade("Wait")
	err := f.task.Wait()
	if f.task.job.settled() { // no run ended the task: a value is an earlier run's
		var zero T
		return zero, err
	}
	return f.value, err
}

// Done returns a channel that is closed when Wait would return, as
// [Task.Done] does.
func (f *Future[T]) Done() <-chan struct{} { f.mustBeMade("Done"); return f.task.Done() }

// Cancel skips fn if it has not started, or cancels its context if it is
// running, as [Task.Cancel] does.
func (f *Future[T]) Cancel() { f.mustBeMade("Cancel"); f.task.Cancel() }

// mustBeMade panics, naming method, if f is nil or Call did not make it.
func (f *Future[T]) mustBeMade(method string) {
	switch {
	case f == nil:
		panic("workerpool: Future." + method + " called on a nil *Future")
	case f.task.job.pool == nil:
		panic("workerpool: Future." + method + " called on a Future that Call did not make")
	}
}
