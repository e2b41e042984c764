// Package workerpoolprom exports the metrics of a [workerpool.WorkerPool]
// to Prometheus, through github.com/prometheus/client_golang. It is a
// module of its own, so that the workerpool module does not depend on
// client_golang.
//
// It has two collectors, for a registry of your own (the package registers
// nothing by itself, in the global registry or elsewhere):
//   - [Collector] reads one pool's [workerpool.WorkerPool.Status] when
//     scraped and costs nothing per task.
//   - [Histograms], opt-in, observes each run of a task through the pools'
//     [workerpool.Hooks]; one Histograms serves any number of pools.
//
// Served over HTTP:
//
//	hists := workerpoolprom.NewHistograms()
//	pool := workerpool.New(8, workerpool.WithHooks(hists.Hooks("images")))
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(workerpoolprom.NewCollector(pool, "images"), hists)
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// # Metrics
//
// Every series has the label pool, the pool's name: a WorkerPool has none
// of its own, so it is the name given to [NewCollector] and to
// [Histograms.Hooks] for that pool. The histograms and counters of
// Histograms also have task, the task's Label ([workerpool.TaskOption];
// "none" for a task without one, "other" past the cap), and the failures
// counter outcome: "error" or "panic". The names, labels and default buckets are
// those of workerpoolotel, whose instruments the OTel Prometheus exporter
// turns into the same series.
//
// From the Collector, labels pool:
//   - gauges: workerpool_workers, workerpool_busy_workers,
//     workerpool_max_workers, workerpool_waiting_tasks,
//     workerpool_scheduled_tasks and workerpool_active_keys (keys, see
//     TaskOption.Key, with tasks waiting, scheduled or running; a count,
//     never a label: a key is an id);
//   - for a pool made with WithAdaptiveSize, which chooses its own size,
//     the gauge workerpool_size_reason{pool,reason}: one series, always 1,
//     whose label reason is the pool's last decision (Status.SizeReason):
//     "start" from New until the first, then "climb", "backoff", "probe",
//     "fit" or "hold" (see Sizing itself in the workerpool package
//     documentation). workerpool_max_workers is then the size the pool
//     chose. A pool without the option has no series of it, so
//     workerpool_size_reason * ignoring (reason) group_left
//     workerpool_max_workers is the chosen size of each adaptive pool,
//     labelled with the reason;
//   - counters: workerpool_tasks_{submitted,completed,panicked,abandoned,
//     canceled,rejected,dropped,expired}_total and
//     workerpool_task_retries_total.
//
// From Histograms:
//   - workerpool_task_wait_seconds{pool,task}, histogram: each run's wait,
//     from the task's acceptance (or from when it became due: a Delay, a
//     retry) to the run's start; observed as the run starts.
//   - workerpool_task_run_seconds{pool,task}, histogram: each run's time,
//     until its func returned, panicked or called runtime.Goexit.
//   - workerpool_task_failures_total{pool,task,outcome}, counter: runs that
//     failed, "panic" for a [workerpool.PanicError], "error" for any other
//     error, [workerpool.ErrGoexit] included. Each failed run of a retried
//     task counts.
//   - workerpool_task_reruns_total{pool,task}, counter: runs after the
//     first under Retry, the by-task view of workerpool_task_retries_total.
//   - workerpool_unfinished_work_seconds{pool}, gauge: the sum over the
//     runs in flight of the time since each started.
//   - workerpool_longest_running_processor_seconds{pool}, gauge: how long
//     the longest run in flight has been running.
//
// Both histograms are classic histograms with the buckets of
// [WithWaitBuckets] and [WithRunBuckets] (default: one per decade from
// 1e-8 to 1000 seconds), and native histograms alongside (factor 1.1, at
// most 100 buckets).
//
// # Cardinality
//
// Labels are kinds of task, never ids: "resize-image" and "send-mail", not
// a user's or an order's number. Each label makes 33 series per pool with
// the default buckets (15 per classic histogram, three counters), kept
// for the life of the Histograms.
// So the task label is capped ([WithMaxLabels], default
// [DefaultMaxLabels], 100): the first labels the hooks see, across all
// pools, keep their value, and the runs of every later one are counted
// under task="other". A series with task="other" in a dashboard means a
// label that should not be one, or a cap to raise. The values "none" and
// "other" are reserved: a task labelled so shares their series.
//
// Pool names are not capped: give pools fixed names, not one per request.
// A label or pool name that is not valid UTF-8 is exported with U+FFFD in
// place of each invalid byte.
//
// # Stuck work
//
// A run that never returns shows in no histogram. The two gauges of
// Kubernetes' workqueue show it: workerpool_unfinished_work_seconds grows
// by one second per second and per run in flight, and
// workerpool_longest_running_processor_seconds by one second per second,
// until the run ends. Both are computed at each scrape from the runs in
// flight, which the hooks record: TaskStarted adds the run to its pool's
// set and returns it inside the ctx the task runs with; TaskFinished,
// which the pool calls after every run (returned, panicked, ended by
// runtime.Goexit) with that ctx, removes it. So the gauges are exact
// under any number of workers and pools, and a pool that stops leaves no
// run behind: Stop, StopWait and Shutdown return after the last
// TaskFinished. Both gauges are 0 when no run is in flight.
//
// # Cost per task
//
// The Collector costs nothing per task. The hooks of Histograms cost, per
// run: one lock-free map lookup for the run's series; a clock read; two
// histogram observations and, for a failure or a rerun, a counter
// increment (atomic adds); and an append to and a removal from the pool's
// runs in flight, under a lock that no other pool shares. The run record
// that carries the run from TaskStarted to TaskFinished is the ctx
// TaskStarted returns. For a plain task (Submit, Do, DoWait: the pool
// passes context.Background(), and the task never sees the ctx) it is
// reused from a sync.Pool and costs no allocation; for a task with a ctx
// (Go, GoResult, Group.Go, DoContext) it is the task's ctx, which the task
// may keep after it returns, so it is allocated for each run: 48 bytes. The
// run of a label past the cap also takes a lock shared by all pools to
// find its series.
//
// Measured by BenchmarkHooks and BenchmarkSubmit (go test -run '^$'
// -bench 'Hooks|Submit' -count 10, Go 1.26, a 2-core x86-64 virtual
// machine shared with other work, so the spread is wide; median, and the
// fastest of 10 in brackets):
//
//	TaskStarted + TaskFinished, a plain task's run      219ns (164ns)   0 B   0 allocs
//	the same, a failed run                              179ns (168ns)   0 B   0 allocs
//	the same, a task with a ctx                         293ns (217ns)  48 B   1 alloc
//	the same, plain, on 2 goroutines, one pool          186ns (161ns)   0 B   0 allocs
//	two observations alone (the hooks before task        85ns  (77ns)   0 B   0 allocs
//	labels and stuck work)
//	Submit of a no-op task on 4 workers, no hooks       440ns (429ns)
//	the same, with the hooks of Histograms              784ns (699ns)
//
// Of the 340ns the hooks add to a Submit, about 95ns are the pool's own:
// the clock reads and calls that any TaskStarted and TaskFinished cost
// (the root package's BenchmarkSubmitHooks).
//
// # Usage
//
// Give each pool a name, a kind of pool ("images", "mail"): install the
// histograms' hooks for it with [workerpool.WithHooks] and
// [Histograms.Hooks](name), and register a Collector for it under the
// same name; one Histograms serves all the pools.
//
//	hists := workerpoolprom.NewHistograms()
//	pool := workerpool.New(8, workerpool.WithHooks(hists.Hooks("images")))
//	defer pool.StopWait()
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(workerpoolprom.NewCollector(pool, "images"), hists)
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
//	pool.DoContext(ctx, resize, workerpool.TaskOption{Label: "resize-image"})
//
// Several pools can share a registry if their names differ; a second
// Collector with a name already registered makes Register fail with a
// [prometheus.AlreadyRegisteredError], so give every pool a distinct name.
//
// The file dashboard.json next to this package is a Grafana dashboard of
// these metrics; README.md lists its panels.
//
// The package natsfeedprom, in this module, exports the counts of a
// natsfeed feed (natsfeed.Stats) under the same rules, as
// workerpool_feed_* series labelled feed. It is a package of its own so
// that a program that does not import it does not compile nats.go.
//
// # Hooks of your own
//
// [workerpool.WithHooks] merges: each non-nil hook of a later WithHooks
// replaces the earlier one, and nil ones change nothing, so hooks of other
// kinds (TaskDropped, DeadLetter, Panic) go in a WithHooks of their own
// beside the histograms'. A pool has one TaskStarted and one TaskFinished,
// though: to run your own too, call the histograms' from yours,
// TaskFinished once after each TaskStarted, with the ctx that TaskStarted
// returned (or one derived from it), which carries the run in flight. A
// run whose TaskFinished never comes would stay in flight for good.
//
//	h := hists.Hooks("images")
//	pool := workerpool.New(8,
//		workerpool.WithHooks(workerpool.Hooks{
//			TaskStarted: h.TaskStarted,
//			TaskFinished: func(ctx context.Context, t workerpool.TaskInfo) {
//				h.TaskFinished(ctx, t)
//				if t.Err != nil {
//					slog.WarnContext(ctx, "task failed", "task", t.Label, "err", t.Err)
//				}
//			},
//		}),
//		workerpool.WithHooks(workerpool.Hooks{
//			TaskDropped: func(t workerpool.TaskInfo) { slog.Warn("task given up", "reason", t.Err) },
//		}),
//	)
//
// # Migrating from v0.1.0
//
// The pool has no name any more (workerpool.WithName and TaskInfo.Pool
// are gone), so the name goes to this package: replace
// NewCollector(pool) with NewCollector(pool, "images") and Hooks() with
// Hooks("images"), and drop WithName("images") from the pool. The series
// keep their names and labels, pool included.
//
// # API choices
//
// [NewCollector] takes the pool, which it reads at every scrape, and the
// pool's name. [NewHistograms] takes no pool and no name: one Histograms
// serves many pools, and [Histograms.Hooks] takes the name of the pool its
// hooks are for, because those hooks are an option of workerpool.New, so
// exist before the pool does. The histograms' classic buckets are set by
// one option each, [WithWaitBuckets] and [WithRunBuckets], so that
// changing one does not mean restating the other. Both constructors return
// their concrete type, which implements prometheus.Collector.
//
// Counters never decrease, as Prometheus requires; see [Collector] for
// the one moment where Status's Submitted could.
package workerpoolprom
