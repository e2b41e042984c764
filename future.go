package workerpool

import "context"

// A Future is the handle of one fn queued by [Call]: a [Task] that also
// produces a value of type T. Its methods are safe for concurrent use and
// may be called any number of times.
type Future[T any] struct {
	task  Task
	fn    func(ctx context.Context) (T, error)
	value T // written by fn's worker before the task settles
}

// Call queues fn to run on a worker of p, exactly as [WorkerPool.Go] does
// (opts included), and returns a handle to its value and error. It never
// blocks, and panics if ctx, p or fn is nil.
func Call[T any](ctx context.Context, p *WorkerPool, fn func(ctx context.Context) (T, error), opts ...TaskOption) *Future[T] {
	if p == nil {
		panic("workerpool: Call called with a nil pool")
	}
	mustHave(ctx, fn != nil, "Call")
	f := &Future[T]{fn: fn}
	f.task.init(p, ctx, f)
	f.task.job.apply(p.parseOptions(opts))
	p.submitTask(&f.task)
	return f
}

// call is f's task body.
func (f *Future[T]) call(ctx context.Context) error {
	v, err := f.fn(ctx)
	f.value = v
	return err
}

// Wait blocks as [Task.Wait] does and returns fn's value and error. The
// value is T's zero value when fn did not return: it was skipped,
// abandoned, panicked or called runtime.Goexit.
func (f *Future[T]) Wait() (T, error) {
	err := f.task.Wait()
	return f.value, err
}

// Done returns a channel that is closed when Wait would return, as
// [Task.Done] does.
func (f *Future[T]) Done() <-chan struct{} { return f.task.Done() }

// Cancel skips fn if it has not started, or cancels its context if it is
// running, as [Task.Cancel] does.
func (f *Future[T]) Cancel() { f.task.Cancel() }
