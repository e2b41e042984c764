// Package workerpoolotel reports a [workerpool.WorkerPool] to
// OpenTelemetry: its state as metrics, the time its tasks wait and run as
// histograms, and each task run by Go or Call as a span. Each of the three
// is opt-in and costs what it says:
//
//   - [RegisterStatus] reads [workerpool.WorkerPool.Status] once per
//     collection, with one callback for all its instruments: nothing per
//     task.
//   - [NewHooks] returns [workerpool.Hooks] that record two histograms:
//     one Record per run start and one per run end.
//   - [NewTracing] returns a [Tracing], whose Go method and the [Call]
//     function queue tasks as the pool's own do, and start a span for each
//     run: a span's cost per task.
//
// Every instrument and span carries the attribute workerpool.name, the
// pool's name (see workerpool.WithName). Usage:
//
//	hooks, err := workerpoolotel.NewHooks("images")
//	if err != nil {
//		return err
//	}
//	pool := workerpool.New(8, workerpool.WithName("images"), workerpool.WithHooks(hooks))
//	defer pool.StopWait()
//	reg, err := workerpoolotel.RegisterStatus(pool)
//	if err != nil {
//		return err
//	}
//	defer reg.Unregister()
//	tracing := workerpoolotel.NewTracing(pool)
//	task := tracing.Go(ctx, "resize", resize)                     // a *workerpool.Task
//	size := workerpoolotel.Call(ctx, tracing, "measure", measure) // a *workerpool.Future[T]
//
// # Metrics
//
// RegisterStatus's instruments are observable, and follow the
// OpenTelemetry semantic conventions: a value that goes up and down and is
// meaningful summed over pools (all the workers of a process) is an
// UpDownCounter, as db.client.connection.count is, not a Gauge; a running
// total is a Counter, reported cumulative; units are annotations such as
// {task}. NewHooks's histograms are in seconds, as float64, with explicit
// buckets from 1µs to 10 minutes (an SDK View can change them).
//
//	instrument                     kind           unit      from
//	workerpool.workers             UpDownCounter  {worker}  Status.Workers: live workers, busy or idle
//	workerpool.workers.busy        UpDownCounter  {worker}  Status.Busy
//	workerpool.workers.max         UpDownCounter  {worker}  Status.MaxWorkers: the pool's size
//	workerpool.tasks.waiting       UpDownCounter  {task}    Status.Waiting
//	workerpool.tasks.scheduled     UpDownCounter  {task}    Status.Scheduled: delayed, or waiting for a retry
//	workerpool.tasks.submitted     Counter        {task}    Status.Submitted
//	workerpool.tasks.completed     Counter        {task}    Status.Completed
//	workerpool.tasks.panicked      Counter        {task}    Status.Panicked
//	workerpool.tasks.abandoned     Counter        {task}    Status.Abandoned
//	workerpool.tasks.canceled      Counter        {task}    Status.Canceled
//	workerpool.tasks.rejected      Counter        {task}    Status.Rejected
//	workerpool.tasks.dropped       Counter        {task}    Status.Dropped
//	workerpool.tasks.expired       Counter        {task}    Status.Expired
//	workerpool.task.retries        Counter        {retry}   Status.Retried
//	workerpool.task.wait.duration  Histogram      s         Hooks.TaskStarted: from acceptance, or from becoming due, to the run's start
//	workerpool.task.run.duration   Histogram      s         Hooks.TaskFinished: the run's duration
//
// The counters count tasks, whatever their retries; the histograms count
// runs, so a task retried twice is three runs. A task that never runs is
// in the counters (Abandoned, Canceled, Dropped, Expired, Rejected), not in
// the histograms.
//
// # Spans
//
// [Tracing.Go] and [Call] trace each run of a task with a span named as the
// caller says, a child of the span in the ctx given to them: the span
// starts as fn starts on its worker, fn's ctx holds it, and it ends as fn
// returns. Its attribute workerpool.task.wait is the wait in seconds, from
// the call to Go or Call (the pool's hooks get no ctx, so the wrapper
// measures it itself), and so, unlike workerpool.task.wait.duration, it
// includes the delay of a Delay or At task; a retried run's counts from
// the end of the run before. workerpool.task.attempt numbers the runs. A run that
// returns an error, panics or calls runtime.Goexit gets the status Error
// and an exception event. A task that never runs (canceled before it
// started, abandoned, dropped, expired or refused) gets no span: its
// handle reports why, and RegisterStatus counts it.
//
// # Combining hooks
//
// A pool takes one Hooks. To add hooks of your own to NewHooks's, set the
// fields you need and call NewHooks's from yours (NewHooks leaves
// TaskDropped nil):
//
//	otelHooks, err := workerpoolotel.NewHooks("images")
//	...
//	hooks := otelHooks
//	hooks.TaskFinished = func(waited, ran time.Duration, err error) {
//		otelHooks.TaskFinished(waited, ran, err)
//		myFinished(waited, ran, err)
//	}
//	hooks.TaskDropped = myDropped
//	pool := workerpool.New(8, workerpool.WithName("images"), workerpool.WithHooks(hooks))
//
// # Providers and the shape of the API
//
// [WithMeterProvider] and [WithTracerProvider] choose the providers, as in
// the OpenTelemetry contrib instrumentations; by default each function uses
// the global ones (otel.GetMeterProvider, otel.GetTracerProvider). The
// meter and the tracer are named [ScopeName], the module path, with
// [Version].
//
// The three parts are separate functions because they are made at
// different moments: hooks must be given to workerpool.New, so NewHooks
// comes first and takes the pool's name rather than the pool; the status
// callback needs the pool, and RegisterStatus returns the
// metric.Registration every OpenTelemetry callback has, to Unregister
// when the pool is gone; spans need the caller's ctx at each call, so
// Tracing wraps the pool's Go and Call. Call is a function, as
// workerpool.Call is, because a method cannot have type parameters, and it
// takes its arguments in workerpool.Call's order.
//
// Bad input panics, as in the workerpool package: a nil pool (RegisterStatus,
// NewTracing), a nil ctx or fn (Tracing.Go, Call) or a nil Tracing (Call).
// Errors from the OpenTelemetry API, such as a refused instrument, are
// returned.
package workerpoolotel
