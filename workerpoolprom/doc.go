// Package workerpoolprom exports the metrics of a [workerpool.WorkerPool]
// to Prometheus, through github.com/prometheus/client_golang. It is a
// module of its own, so that the workerpool module does not depend on
// client_golang.
//
// It has two collectors, both labelled pool=the pool's name, for a
// registry of your own (the package registers nothing by itself, in the
// global registry or elsewhere):
//   - [Collector] reads [workerpool.WorkerPool.Status] when scraped and
//     costs nothing per task: the gauges workerpool_workers,
//     workerpool_busy_workers, workerpool_max_workers,
//     workerpool_waiting_tasks and workerpool_scheduled_tasks, and the
//     counters workerpool_tasks_{submitted,completed,panicked,abandoned,
//     canceled,rejected,dropped,expired}_total and
//     workerpool_task_retries_total.
//   - [Histograms], opt-in, observes each run of a task through the
//     pool's [workerpool.Hooks]: workerpool_task_wait_seconds and
//     workerpool_task_run_seconds, classic and native histograms at once.
//
// # Usage
//
// Name the pool with [workerpool.WithName], install the histograms' hooks
// with [workerpool.WithHooks], and register both collectors:
//
//	hists := workerpoolprom.NewHistograms("images")
//	pool := workerpool.New(8,
//		workerpool.WithName("images"),
//		workerpool.WithHooks(hists.Hooks()),
//	)
//	defer pool.StopWait()
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(workerpoolprom.NewCollector(pool), hists)
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// Several pools can share a registry if their names differ; a second
// pool with a name already registered makes Register fail with a
// [prometheus.AlreadyRegisteredError], so give every pool a distinct name.
//
// # Hooks of your own
//
// A pool has one [workerpool.Hooks]. To add hooks of your own, call the
// histograms' hooks from yours:
//
//	h := hists.Hooks()
//	pool := workerpool.New(8,
//		workerpool.WithName("images"),
//		workerpool.WithHooks(workerpool.Hooks{
//			TaskStarted: h.TaskStarted,
//			TaskFinished: func(waited, ran time.Duration, err error) {
//				h.TaskFinished(waited, ran, err)
//				if err != nil {
//					failures.Inc() // a prometheus.Counter of yours
//				}
//			},
//			TaskDropped: func(reason error) { slog.Warn("task given up", "reason", reason) },
//		}),
//	)
//
// # API choices
//
// [NewCollector] takes the pool, which it reads at every scrape.
// [NewHistograms] takes the pool's name instead, because its hooks are an
// option of workerpool.New and so exist before the pool does; pass it the
// name you give WithName. The histograms' classic buckets are set by one
// option each, [WithWaitBuckets] and [WithRunBuckets], so that changing
// one does not mean restating the other. Both constructors return their
// concrete type, which implements prometheus.Collector.
//
// Counters never decrease, as Prometheus requires; see [Collector] for
// the one moment where Status's Submitted could.
package workerpoolprom
