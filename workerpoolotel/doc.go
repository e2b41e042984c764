// Package workerpoolotel reports [workerpool.WorkerPool]s to
// OpenTelemetry: a span for every run of every task, metrics of the runs
// by pool and by kind of task, and each pool's Status as metrics. Two
// functions do it, each opt-in:
//
//   - [NewHooks] returns [workerpool.Hooks], for workerpool.WithHooks,
//     that give each run of each task of a pool a span and measure it:
//     whatever call queued the task (Submit, SubmitWait, Do, DoWait,
//     DoContext, DoBatch, Go, GoResult, Group.Go).
//   - [RegisterStatus] reads [workerpool.WorkerPool.Status] once per
//     collection, with one callback for all its instruments: nothing per
//     task.
//
// Usage:
//
//	hooks, err := workerpoolotel.NewHooks("images")
//	if err != nil {
//		return err
//	}
//	pool := workerpool.New(8, workerpool.WithHooks(hooks))
//	defer pool.StopWait()
//	reg, err := workerpoolotel.RegisterStatus(pool, "images")
//	if err != nil {
//		return err
//	}
//	defer reg.Unregister()
//	task := pool.Go(ctx, resize, workerpool.TaskOption{Label: "resize"}) // a span named resize, a child of ctx's
//	pool.Submit(cleanup)                                                  // a root span named workerpool.task
//
// A WorkerPool has no name of its own: give NewHooks and RegisterStatus
// the same name for a pool, its own: it is the attribute pool of its
// spans and series, and two pools of one name share their series.
//
// # Spans
//
// Each run of a task gets one span: a task retried twice has three. The
// span starts on the worker just before the run (TaskStarted) and ends
// just after it (TaskFinished), before the task's Wait, or DoWait,
// returns. Its rules:
//
//   - Name: the task's Label (workerpool.TaskOption), or "workerpool.task"
//     for a task without one. Kind: internal.
//   - Parent: the span in the ctx the pool gives TaskStarted. For Go and
//     GoResult that is the caller's ctx, for Group.Go the group's, for
//     DoContext its ctx (its values, not its cancellation): the span is a
//     child of the submitter's span. Submit, Do, DoWait and the other calls
//     without a ctx give context.Background(): the span is a root.
//   - Retries: each attempt starts from that same ctx, not from the
//     attempt before: the attempts' spans are siblings, numbered by
//     workerpool.task.attempt.
//   - Children: a task given a ctx (Go, GoResult, Group.Go) runs with a ctx
//     that holds the run's span, so the spans it starts with it are the
//     run's children. A plain func has no ctx.
//   - Status: unset for a run that succeeded, as OpenTelemetry asks of
//     instrumentation libraries; Error, with the error's message, for a run
//     that failed, with an exception event. For a returned error, and for
//     runtime.Goexit (workerpool.ErrGoexit), the event is
//     span.RecordError's. For a panic (a *workerpool.PanicError, a plain
//     func's under a Panic hook included) it says what the task
//     panicked with: exception.type is the value's Go type (%T),
//     exception.message the value (fmt.Sprint), and exception.stacktrace
//     the stack the pool took as the task panicked.
//   - A task that never runs (canceled, abandoned, dropped, expired,
//     refused) gets no span: its handle says why, and RegisterStatus counts
//     it.
//
// The attributes of every span:
//
//	attribute                 type     value
//	pool                      string   the pool's name, given to NewHooks, as on the metrics
//	task                      string   the task's Label as given, "" if none (the metrics say none, and other past the cap)
//	workerpool.task.attempt   int      1, then 2, ... under Retry
//	workerpool.task.priority  int      the task's Priority
//	workerpool.task.key       string   the task's Key, on the spans of keyed tasks only (a key is an
//	                                   id: it is never a metric attribute)
//	workerpool.task.wait      float64  the run's wait in seconds: from acceptance, or from when it
//	                                   became due (a Delay, a retry), to the start of the run
//
// The attributes are set once the span has started, and only on a span
// that records: a Sampler sees the span's name, which is the label, but
// not them. With a TracerProvider whose spans do not record (a no-op one,
// or a Sampler that drops the span), the hooks make no attributes.
//
// # Metrics
//
// The instruments are named so that the OpenTelemetry Prometheus exporter
// (go.opentelemetry.io/otel/exporters/prometheus, with its default
// translation) exports them under the names and labels of the
// workerpoolprom module's metrics: dots become underscores, the unit s
// adds _seconds, a Counter gets _total, and a unit in braces adds nothing.
// A dashboard or alert written for one module works for the other.
//
//	instrument                            kind                unit      attributes           Prometheus name                               from
//	workerpool.workers                    observable Gauge    {worker}  pool                 workerpool_workers                            Status.Workers: live workers, busy or idle
//	workerpool.busy_workers               observable Gauge    {worker}  pool                 workerpool_busy_workers                       Status.Busy
//	workerpool.max_workers                observable Gauge    {worker}  pool                 workerpool_max_workers                        Status.MaxWorkers: the pool's size (chosen, under WithAdaptiveSize)
//	workerpool.waiting_tasks              observable Gauge    {task}    pool                 workerpool_waiting_tasks                      Status.Waiting
//	workerpool.scheduled_tasks            observable Gauge    {task}    pool                 workerpool_scheduled_tasks                    Status.Scheduled: delayed, or waiting for a retry
//	workerpool.active_keys                observable Gauge    {key}     pool                 workerpool_active_keys                        Status.Keys: keys with tasks waiting, scheduled or running
//	workerpool.size_reason                observable Gauge    {pool}    pool, reason         workerpool_size_reason                        Status.SizeReason: 1, under WithAdaptiveSize only
//	workerpool.tasks_submitted            observable Counter  {task}    pool                 workerpool_tasks_submitted_total              Status.Submitted
//	workerpool.tasks_completed            observable Counter  {task}    pool                 workerpool_tasks_completed_total              Status.Completed
//	workerpool.tasks_panicked             observable Counter  {task}    pool                 workerpool_tasks_panicked_total               Status.Panicked
//	workerpool.tasks_abandoned            observable Counter  {task}    pool                 workerpool_tasks_abandoned_total              Status.Abandoned
//	workerpool.tasks_canceled             observable Counter  {task}    pool                 workerpool_tasks_canceled_total               Status.Canceled
//	workerpool.tasks_rejected             observable Counter  {task}    pool                 workerpool_tasks_rejected_total               Status.Rejected
//	workerpool.tasks_dropped              observable Counter  {task}    pool                 workerpool_tasks_dropped_total                Status.Dropped
//	workerpool.tasks_expired              observable Counter  {task}    pool                 workerpool_tasks_expired_total                Status.Expired
//	workerpool.task_retries               observable Counter  {task}    pool                 workerpool_task_retries_total                 Status.Retried
//	workerpool.task_wait                  Histogram           s         pool, task           workerpool_task_wait_seconds                  TaskStarted: the run's wait (TaskInfo.Waited)
//	workerpool.task_run                   Histogram           s         pool, task           workerpool_task_run_seconds                   TaskFinished: the run's time (TaskInfo.Ran)
//	workerpool.task_failures              Counter             {task}    pool, task, outcome  workerpool_task_failures_total                TaskFinished: a run that failed
//	workerpool.task_reruns                Counter             {task}    pool, task           workerpool_task_reruns_total                  TaskStarted: a run after the first (Attempt > 1)
//	workerpool.unfinished_work            observable Gauge    s         pool                 workerpool_unfinished_work_seconds            the runs under way: the sum of the times they have run so far
//	workerpool.longest_running_processor  observable Gauge    s         pool                 workerpool_longest_running_processor_seconds  the runs under way: the longest time one has run so far, 0 if none
//
// RegisterStatus makes the first sixteen; NewHooks the last six. The
// package natsfeedotel, in this module, reports the counts of a natsfeed
// feed (natsfeed.Stats) the same way, as workerpool.feed.* instruments
// with the attribute feed; it is a package of its own so that a program
// that does not import it does not compile nats.go. The
// attributes:
//
//   - pool: the pool's name, as given to NewHooks and RegisterStatus. The
//     name "" is allowed, and Prometheus treats it as no label.
//   - task: the task's Label; "none" for a task without one; "other" for a
//     label past the cap: the first WithMaxLabels(n) distinct labels the
//     hooks see keep their value (default DefaultMaxLabels, 100), later ones
//     count as "other", so that each pool has at most n+2 values of task.
//     Labels are kinds of task, never ids.
//   - outcome: "panic" for a run whose error is, or wraps, a
//     *workerpool.PanicError; "error" for any other failure: a returned
//     error, or runtime.Goexit (workerpool.ErrGoexit).
//   - reason, on workerpool.size_reason only: why a pool made with
//     workerpool.WithAdaptiveSize, which chooses its own size, has the
//     size workerpool.max_workers reports: its last decision
//     (Status.SizeReason), "start" from New until the first, then "climb",
//     "backoff", "probe", "fit" or "hold" (see Sizing itself in the
//     workerpool package documentation). Each such pool has one data
//     point, of value 1, with the reason of its last decision (so a sum
//     by reason counts the pools whose last decision it was); a pool
//     without the option has none.
//
// The Status counters count tasks, whatever their retries; the hooks'
// instruments count runs, so a task retried twice is three runs, two
// reruns, and two or three failures. A task that never runs is in the
// counters (Abandoned, Canceled, Dropped, Expired, Rejected), not in the
// histograms. Both histograms have explicit buckets, one per decade from
// 10ns to 1000s (1e-8, 1e-7, ..., 1000), workerpoolprom's; an SDK View can
// change them. The stuck-work gauges are the Kubernetes workqueue's
// unfinished_work_seconds and longest_running_processor_seconds: a run
// that never ends makes the first grow without bound while the second
// tells how long it has been stuck. They are computed at each collection,
// from the runs between TaskStarted and TaskFinished, for the hooks' pool
// once it has run a task, as long as the MeterProvider lives: a pool that
// has stopped reports 0.
//
// A run is measured, and kept for the stuck-work gauges, if the meter
// records any of the hooks' four synchronous instruments as it starts
// (their Enabled method): with a no-op MeterProvider, or Views that drop
// all four, the hooks measure nothing and cost the span alone.
//
// # Prometheus
//
// To read the metrics with Prometheus through OpenTelemetry, give an SDK
// MeterProvider the Prometheus exporter as a reader (see the example). By
// default the exporter also labels every series with the instrumentation
// scope (otel_scope_name, otel_scope_version, ...) and adds a target_info
// family; with its options WithoutScopeInfo and WithoutTargetInfo the
// families and their labels are exactly workerpoolprom's, as a test of
// this package checks.
//
// # Costs
//
// Measured on a 2-core Xeon VM, go1.26, with the benchmarks of this
// package run 10 times in turn (BenchmarkSpan, BenchmarkSpanMetrics,
// BenchmarkSpanOff) and compared with benchstat (medians); the SDK's
// TracerProvider samples every span and exports it synchronously to an
// exporter that drops it, and the hooks are called as a worker calls them:
//
//	per run                                               time     bytes  allocations
//	SDK span, Start and End, no attributes                 635 ns    960  4
//	SDK span, the hooks' 5 attributes given to Start      1391 ns   1960  9
//	SDK span, the same 5 attributes set after Start       1233 ns   1600  6
//	NewHooks's TaskStarted + TaskFinished, metrics off    1312 ns   1664  6
//	SDK span, 5 attributes set, 2 SDK histogram Records   1668 ns   1600  6
//	NewHooks's TaskStarted + TaskFinished, SDK metrics    1776 ns   1664  6
//	no-op tracer, Start and End                             43 ns     48  1
//	NewHooks's, no-op tracer and no-op meter               101 ns    112  2
//
// So a run's span costs what the SDK's span with the same attributes
// costs, plus about 80 ns (against the attributes set after Start, as the
// hooks set them; against the usual way, attributes given to Start, the
// hooks' span costs 80 ns less). With metrics on, the hooks cost about 110
// ns more than the SDK's span and Records alone: they also look up the
// task's series (without hashing, for a label seen before), read the
// monotonic clock, and take a lock twice to keep the run for the
// stuck-work gauges. Through a real pool (Submit of a no-op task to 2
// workers, BenchmarkPool), a task costs 496 ns without hooks, 2.3 µs with
// the spans, 2.9 µs with spans and metrics.
//
// # Combining hooks
//
// workerpool.WithHooks merges: each non-nil hook of a later WithHooks
// replaces the earlier one, and nil ones change nothing. NewHooks leaves
// TaskDropped, DeadLetter and Panic nil, so hooks of those kinds go in a
// WithHooks of their own beside NewHooks's. A pool has one TaskStarted and
// one TaskFinished, though: to run your own too, call NewHooks's from
// yours. Give NewHooks's TaskFinished the ctx its TaskStarted returned, or
// one derived from it, as the pool does: that is how it finds the run.
// (Given another ctx, TaskFinished still measures the run, but cannot end
// its span, and the stuck-work gauges count the run as under way for
// good.)
//
//	otelHooks, err := workerpoolotel.NewHooks("images")
//	...
//	pool := workerpool.New(8,
//		workerpool.WithHooks(otelHooks),
//		workerpool.WithHooks(workerpool.Hooks{
//			TaskStarted: func(ctx context.Context, t workerpool.TaskInfo) context.Context {
//				ctx = otelHooks.TaskStarted(ctx, t)
//				return context.WithValue(ctx, myKey{}, myStart(t))
//			},
//			TaskDropped: myDropped,
//		}),
//	)
//
// # Providers and the shape of the API
//
// [WithMeterProvider] and [WithTracerProvider] choose the providers, as in
// the OpenTelemetry contrib instrumentations; by default each function uses
// the global ones (otel.GetMeterProvider, otel.GetTracerProvider). The
// meter and the tracer are named [ScopeName], the module path, with
// [Version].
//
// The two parts are separate functions because they are made at
// different moments: hooks must be given to workerpool.New, so NewHooks
// comes first, and takes the pool's name, which the pool does not have;
// the status callback needs the pool (and takes the same name), and
// RegisterStatus returns the metric.Registration every OpenTelemetry
// callback has, to Unregister when the pool is gone.
//
// Bad input panics, as in the workerpool package: a nil pool
// (RegisterStatus). Errors from the OpenTelemetry API, such as a refused
// instrument, are returned.
//
// # Migrating from v0.1.0
//
// The pool has no name any more (workerpool.WithName and TaskInfo.Pool
// are gone), so the name goes to this package: replace NewHooks(opts...)
// with NewHooks("images", opts...) and RegisterStatus(pool, opts...) with
// RegisterStatus(pool, "images", opts...), and drop WithName("images")
// from the pool. Give each pool a NewHooks of its own: one Hooks value no
// longer serves several pools, and the cap of WithMaxLabels now counts
// the labels of the one pool. The spans, the instruments and their
// attributes, pool included, are unchanged.
package workerpoolotel
