package workerpoolotel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/e86d9661/workerpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// The instruments NewHooks makes (see the package documentation). The
// OpenTelemetry Prometheus exporter turns each into workerpoolprom's
// name: dots become underscores, the unit s adds _seconds, and a counter
// gets _total.
const (
	waitName       = "workerpool.task_wait"                 // histogram, s
	runName        = "workerpool.task_run"                  // histogram, s
	failuresName   = "workerpool.task_failures"             // counter, {task}
	rerunsName     = "workerpool.task_reruns"               // counter, {task}
	unfinishedName = "workerpool.unfinished_work"           // observable gauge, s
	longestName    = "workerpool.longest_running_processor" // observable gauge, s
)

// durationBounds are the explicit bucket boundaries, in seconds, of both
// duration histograms: one per decade from 10ns to 1000s, the buckets of
// workerpoolprom's histograms (and of Kubernetes' workqueue metrics), so
// that the two modules' series can be read side by side.
var durationBounds = []float64{1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10, 100, 1000}

// NewHooks returns Hooks, for workerpool.WithHooks of one pool, that trace
// each run of every task with a span and measure it with metrics, by task
// label. name is the pool's name (a workerpool.WorkerPool has none of its
// own): the attribute pool of every span and series the hooks make, as
// RegisterStatus takes it for the same pool. Give each pool its own
// NewHooks and a distinct, fixed name: two pools of one name share their
// series. The package documentation lists the spans' attributes and the
// instruments.
//
// TaskStarted starts the run's span, a child of the span in the ctx the
// pool gives it (the submitter's, for Go, GoResult, Group.Go and DoContext),
// records the run's wait and, for a retry, a rerun, and returns a ctx that
// holds the span: the task runs with it, so the spans the task starts are
// children of the run's. TaskFinished records the run's time and, for a
// failed run, a failure, sets the span's status and ends it. TaskDropped,
// DeadLetter and Panic are left nil: a task that never runs gets no span,
// and RegisterStatus counts it; workerpool.WithHooks merges, so hooks of
// those kinds may be given beside these. To add a TaskStarted or
// TaskFinished of your own, call these from yours (see the package
// documentation), passing TaskFinished the ctx TaskStarted returned, or
// one derived from it, as the pool does.
//
// The hooks also keep the runs under way, for the stuck-work gauges
// workerpool.unfinished_work and workerpool.longest_running_processor,
// which report the pool's runs at every collection for as long as the
// MeterProvider lives; a pool that has stopped reports 0. A run is
// measured and kept only if the meter records at least one of the hooks'
// instruments as the run starts: with a no-op MeterProvider a run costs
// its span alone. The hooks hold no goroutine and need no cleanup; they
// are safe for concurrent use, as the pool requires.
//
// NewHooks returns an error if the meter refuses an instrument or the
// gauges' callback.
func NewHooks(name string, opts ...Option) (workerpool.Hooks, error) {
	c := newConfig(opts)
	h := &hooks{pool: name, epoch: time.Now(), tracer: c.tracer(), series: newSeriesSet(c.maxLabels)}
	if err := h.instruments(c.meter()); err != nil {
		return workerpool.Hooks{}, fmt.Errorf("workerpoolotel: NewHooks: %w", err)
	}
	return workerpool.Hooks{TaskStarted: h.taskStarted, TaskFinished: h.taskFinished}, nil
}

// hooks is what the funcs NewHooks returns share. It never changes once
// made; series locks what it must.
type hooks struct {
	pool             string    // the pool's name, given to NewHooks
	epoch            time.Time // the origin of h.now
	tracer           trace.Tracer
	wait, run        metric.Float64Histogram
	failures, reruns metric.Int64Counter
	series           *seriesSet
}

// instruments makes h's instruments with meter, and registers the
// stuck-work gauges' callback.
func (h *hooks) instruments(meter metric.Meter) error {
	var waitErr, runErr, failuresErr, rerunsErr, unfinishedErr, longestErr error
	h.wait, waitErr = meter.Float64Histogram(waitName,
		metric.WithUnit("s"),
		metric.WithDescription("Time each run of a task waited before it started: from the task's acceptance, or from when it became due (a Delay, a retry), to the start of the run."),
		metric.WithExplicitBucketBoundaries(durationBounds...))
	h.run, runErr = meter.Float64Histogram(runName,
		metric.WithUnit("s"),
		metric.WithDescription("Time each run of a task took, until its func returned, panicked or called runtime.Goexit. Each retry is a run of its own."),
		metric.WithExplicitBucketBoundaries(durationBounds...))
	h.failures, failuresErr = meter.Int64Counter(failuresName,
		metric.WithUnit("{task}"),
		metric.WithDescription("Runs of tasks that failed: returned an error or called runtime.Goexit (outcome error), or panicked (outcome panic)."))
	h.reruns, rerunsErr = meter.Int64Counter(rerunsName,
		metric.WithUnit("{task}"),
		metric.WithDescription("Runs of tasks after their first, under Retry."))
	unfinished, unfinishedErr := meter.Float64ObservableGauge(unfinishedName,
		metric.WithUnit("s"),
		metric.WithDescription("Time the runs under way have run so far, summed: a value that grows while a run is stuck."))
	longest, longestErr := meter.Float64ObservableGauge(longestName,
		metric.WithUnit("s"),
		metric.WithDescription("Time the longest run under way has run so far; 0 when none is."))
	if err := errors.Join(waitErr, runErr, failuresErr, rerunsErr, unfinishedErr, longestErr); err != nil {
		return err
	}
	// The counters of a series start at 0 as it is made, as
	// workerpoolprom's do, so that the first failure or rerun shows in a
	// rate.
	h.series.made = func(s *series) {
		ctx := context.Background()
		h.failures.Add(ctx, 0, s.errored...)
		h.failures.Add(ctx, 0, s.panicked...)
		h.reruns.Add(ctx, 0, s.add...)
	}
	_, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		h.series.observeRunning(o, unfinished, longest, h.now())
		return nil
	}, unfinished, longest)
	return err
}

// The attributes of a run's span.
const (
	spanPoolKey     = "pool"                     // the pool's name, as on the metrics (string)
	spanLabelKey    = "task"                     // the task's label as given, "" if none (string)
	spanAttemptKey  = "workerpool.task.attempt"  // 1, then 2, ... under Retry (int)
	spanPriorityKey = "workerpool.task.priority" // the task's priority (int)
	spanWaitKey     = "workerpool.task.wait"     // the run's wait, in seconds (float64)
	spanKeyKey      = "workerpool.task.key"      // the task's Key, on the spans of keyed tasks only (string)
)

// defaultSpanName names the spans of tasks without a label.
const defaultSpanName = "workerpool.task"

// A run is one run of a task between TaskStarted and TaskFinished: the
// ctx TaskStarted returns, which holds the run's span, and what
// TaskFinished needs of it. It is never reused: a task may keep its ctx.
type run struct {
	context.Context // what the tracer returned: the ctx TaskStarted got, with the span
	hooks           *hooks
	series          *series       // nil for a run not measured (see hooks.measuring)
	start           time.Duration // when a measured run started, on the hooks' clock (see hooks.now)
	prev, next      *run          // in series.pool's list of runs under way, under its mu
}

// A recordingRun is the run of a span that records, made in one
// allocation with the span's attributes (the key's only for a keyed
// task): 440 bytes, which Go's allocator rounds up to its size class of
// 448.
type recordingRun struct {
	run
	attrs [6]attribute.KeyValue
}

// Value is r.Context's, but for the key r.hooks, whose value is r: how
// TaskFinished finds the run it ends.
func (r *run) Value(key any) any {
	if key == any(r.hooks) {
		return r
	}
	return r.Context.Value(key)
}

// now is the time since h was made, on the monotonic clock: when the runs
// under way started, for the stuck-work gauges. (Reading only the
// monotonic clock costs half what time.Now does.)
func (h *hooks) now() time.Duration {
	return time.Since(h.epoch)
}

// measuring reports whether the meter records any of h's instruments for
// a run starting with ctx: with a no-op MeterProvider, or Views that drop
// all four, a run is neither measured nor kept for the stuck-work gauges,
// and costs its span alone.
func (h *hooks) measuring(ctx context.Context) bool {
	return h.wait.Enabled(ctx) || h.run.Enabled(ctx) || h.failures.Enabled(ctx) || h.reruns.Enabled(ctx)
}

// taskStarted is the TaskStarted hook.
func (h *hooks) taskStarted(ctx context.Context, t workerpool.TaskInfo) context.Context {
	name := t.Label
	if name == "" {
		name = defaultSpanName
	}
	ctx, span := h.tracer.Start(ctx, name)
	wait := t.Waited.Seconds()
	var r *run
	if span.IsRecording() {
		rr := &recordingRun{attrs: [...]attribute.KeyValue{
			attribute.String(spanPoolKey, h.pool),
			attribute.String(spanLabelKey, t.Label),
			attribute.Int(spanAttemptKey, t.Attempt),
			attribute.Int(spanPriorityKey, t.Priority),
			attribute.Float64(spanWaitKey, wait),
			attribute.String(spanKeyKey, t.Key),
		}}
		n := len(rr.attrs)
		if t.Key == "" {
			n-- // no key: no key attribute
		}
		// Set once the span has started, not given to Start: the SDK
		// then copies them once, not twice.
		span.SetAttributes(rr.attrs[:n]...)
		r = &rr.run
	} else {
		r = new(run) // no attributes to keep
	}
	r.Context, r.hooks = ctx, h
	if h.measuring(r) {
		r.series = h.series.of(h.pool, t.Label)
		h.wait.Record(r, wait, r.series.record...)
		if t.Attempt > 1 {
			h.reruns.Add(r, 1, r.series.add...)
		}
		r.start = h.now()
		r.series.pool.add(r)
	}
	return r
}

// taskFinished is the TaskFinished hook. ctx is what taskStarted returned,
// or derived from it. If it is not (another TaskStarted hook replaced
// it), the run is measured but has no span to end.
func (h *hooks) taskFinished(ctx context.Context, t workerpool.TaskInfo) {
	r, _ := ctx.Value(h).(*run)
	var s *series
	switch {
	case r == nil:
		s = h.series.of(h.pool, t.Label)
	case r.series != nil:
		if !r.series.pool.remove(r) {
			return // this run was finished already: its ctx came again
		}
		s = r.series
	}
	pe := panicOf(t.Err)
	if s != nil {
		h.run.Record(ctx, t.Ran.Seconds(), s.record...)
		switch {
		case pe != nil:
			h.failures.Add(ctx, 1, s.panicked...)
		case t.Err != nil:
			h.failures.Add(ctx, 1, s.errored...)
		}
	}
	if r != nil {
		endSpan(trace.SpanFromContext(r.Context), t.Err, pe)
	}
}

// panicOf is err's *workerpool.PanicError, if it has one: a run that
// panicked, or that returned an error wrapping a panic's.
func panicOf(err error) *workerpool.PanicError {
	if err == nil {
		return nil // before pe, which errors.As moves to the heap
	}
	var pe *workerpool.PanicError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}
