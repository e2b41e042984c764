package workerpoolotel

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/e86d9661/workerpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The attributes of a task's span, besides workerpool.name.
const (
	// waitKey is the time, in seconds, from when the run could have
	// started to when it did (float64).
	waitKey = "workerpool.task.wait"
	// attemptKey is the run's number: 1, then 2, ... under Retry (int).
	attemptKey = "workerpool.task.attempt"
)

// defaultSpanName names the spans of tasks given an empty name.
const defaultSpanName = "workerpool.task"

// A Tracing gives tasks to one pool, as [workerpool.WorkerPool.Go] and
// [workerpool.Call] do, and traces each run of each task with a span. Make
// one with NewTracing. It holds no goroutine and needs no cleanup, and it
// is safe for concurrent use.
type Tracing struct {
	pool     *workerpool.WorkerPool
	tracer   trace.Tracer
	poolName attribute.KeyValue // workerpool.name, on every span
}

// NewTracing returns a Tracing that gives tasks to pool and starts their
// spans with the tracer of this package's scope from the TracerProvider
// (see WithTracerProvider). It never blocks, and panics if pool is nil.
func NewTracing(pool *workerpool.WorkerPool, opts ...Option) *Tracing {
	if pool == nil {
		panic("workerpoolotel: NewTracing called with a nil pool")
	}
	c := newConfig(opts)
	return &Tracing{
		pool:     pool,
		tracer:   c.tracer(),
		poolName: attribute.String(nameKey, pool.Name()),
	}
}

// Go queues fn on t's pool with opts exactly as [workerpool.WorkerPool.Go]
// does, and returns its handle. It blocks only where that does: under a
// Block bound (workerpool.WithMaxWaiting) with a full queue, until there
// is room or ctx is done.
//
// Each run of fn gets a span named name ("" means "workerpool.task"), a
// child of the span in ctx (or a new root if ctx holds none). The span
// starts on the worker as fn starts, fn receives a context derived from
// ctx that holds it, and it ends as fn returns, before the handle's Wait
// returns. Its attributes:
//   - workerpool.name: the pool's Name;
//   - workerpool.task.wait: the seconds (float64) from the call to Go to
//     the start of fn: the time in the queue, including the delay of a
//     Delay or At option; for a run after a retry, from the end of the
//     previous run, so including the retry's delay;
//   - workerpool.task.attempt: 1 for the first run, 2, ... for retries.
//
// A run that fails gets the status Error with the error's message, and an
// exception event (span.RecordError): one that returns a non-nil error,
// one that panics (a *workerpool.PanicError, whose stack the event
// carries; the panic then goes on to the pool, which recovers it as
// usual, and Wait reports it), and one that calls runtime.Goexit
// (workerpool.ErrGoexit). A run that returns nil leaves the status unset,
// as OpenTelemetry asks of instrumentation libraries.
//
// A task that never runs gets no span: one canceled before it started,
// abandoned by a stop, dropped, expired, refused for lack of room, or
// given to a pool that is stopping. Its handle reports why, and Status
// (see RegisterStatus) counts it, but the last.
//
// Go panics if ctx or fn is nil. Safe for concurrent use.
func (t *Tracing) Go(ctx context.Context, name string, fn func(ctx context.Context) error, opts ...workerpool.TaskOption) *workerpool.Task {
	mustHave(ctx, fn != nil, "Go")
	r := t.newRun(name)
	return t.pool.Go(ctx, func(ctx context.Context) (err error) {
		ctx = r.start(ctx)
		defer r.end(&err)
		err = workerpool.ErrGoexit // what end sees unless fn returns
		return fn(ctx)
	}, opts...)
}

// Call queues fn on t's pool with opts exactly as [workerpool.Call] does,
// and returns a handle to its value and error; it blocks only where
// [Tracing.Go] does. It traces each run of fn as Tracing.Go does, with a
// span named name. (It is a function, not a method, because methods cannot
// have type parameters; it takes its arguments in workerpool.Call's order.)
//
// Call panics if ctx, t or fn is nil. Safe for concurrent use.
func Call[T any](ctx context.Context, t *Tracing, name string, fn func(ctx context.Context) (T, error), opts ...workerpool.TaskOption) *workerpool.Future[T] {
	if t == nil {
		panic("workerpoolotel: Call called with a nil Tracing")
	}
	mustHave(ctx, fn != nil, "Call")
	r := t.newRun(name)
	return workerpool.Call(ctx, t.pool, func(ctx context.Context) (v T, err error) {
		ctx = r.start(ctx)
		defer r.end(&err)
		err = workerpool.ErrGoexit // what end sees unless fn returns
		return fn(ctx)
	}, opts...)
}

// mustHave panics, naming the function, if ctx is nil or there is no fn,
// with the messages the workerpool package uses.
func mustHave(ctx context.Context, haveFn bool, function string) {
	switch {
	case ctx == nil:
		panic("workerpoolotel: " + function + " called with a nil context")
	case !haveFn:
		panic("workerpoolotel: " + function + " called with a nil func")
	}
}

// A tracedRun traces the runs of one task. Its runs never overlap, and the
// pool orders each after the one before, so it needs no lock.
type tracedRun struct {
	tracing *Tracing
	name    string
	ready   time.Time  // when the next run could start: the call to Go or Call, then the end of the last run
	attempt int        // runs started so far
	span    trace.Span // the current run's span, between start and end
}

func (t *Tracing) newRun(name string) *tracedRun {
	if name == "" {
		name = defaultSpanName
	}
	return &tracedRun{tracing: t, name: name, ready: time.Now()}
}

// start starts the span of a run about to begin, a child of the span in
// ctx, and returns the context for fn, which holds it.
func (r *tracedRun) start(ctx context.Context) context.Context {
	now := time.Now()
	r.attempt++
	ctx, r.span = r.tracing.tracer.Start(ctx, r.name,
		trace.WithAttributes(
			r.tracing.poolName,
			attribute.Float64(waitKey, now.Sub(r.ready).Seconds()),
			attribute.Int(attemptKey, r.attempt),
		))
	return ctx
}

// end ends the span of a run that ended with *err, or that panicked: then
// end records the panic and panics again with the same value, for the pool
// to recover. It must be deferred, so that its recover sees the panic.
func (r *tracedRun) end(err *error) {
	if v := recover(); v != nil {
		// Still on fn's stack: the pool's own recover, after this
		// panic, sees the same frames.
		e := &workerpool.PanicError{Value: v, Stack: debug.Stack()}
		r.fail(e, trace.WithAttributes(attribute.String("exception.stacktrace", string(e.Stack))))
		r.finish()
		panic(v)
	}
	if *err != nil {
		r.fail(*err)
	}
	r.finish()
}

// fail records err on the current span, and sets its status to Error.
func (r *tracedRun) fail(err error, opts ...trace.EventOption) {
	r.span.RecordError(err, opts...)
	r.span.SetStatus(codes.Error, err.Error())
}

// finish ends the current span, and notes when the next run may be ready
// from.
func (r *tracedRun) finish() {
	r.span.End()
	r.span, r.ready = nil, time.Now()
}
