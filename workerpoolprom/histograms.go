package workerpoolprom

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/prometheus/client_golang/prometheus"
)

// defaultBuckets are the classic buckets of both histograms, in seconds:
// one per decade from 10ns to 1000s, as Kubernetes' workqueue metrics use
// for queue_duration and work_duration (ExponentialBuckets(10e-9, 10, 12)),
// written out so that the le labels read 1e-08, 1e-07, ..., 1000 exactly.
// A task handed straight to an idle worker waits 0s (the pool does not
// count the hand-off) and one behind a busy pool minutes; a run takes
// anything from a microsecond to minutes. Twelve buckets cover it all at
// a few series' cost, and the native buckets give the fine resolution
// where it matters. workerpoolotel uses the same boundaries.
var defaultBuckets = []float64{1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10, 100, 1000}

// Native-histogram settings. The factor 1.1 gives 8 buckets per power of
// two, the trade-off client_golang recommends. At most 100 native buckets
// are kept per histogram, as client_golang's example and Cortex do: past
// that the histogram is reset if its last reset is an hour old, and
// otherwise loses resolution until then.
const (
	nativeBucketFactor    = 1.1
	nativeMaxBucketNumber = 100
	nativeMinResetPeriod  = time.Hour
)

// DefaultMaxLabels is the number of distinct task labels a Histograms
// exports by name unless WithMaxLabels says otherwise.
const DefaultMaxLabels = 100

// The task label's reserved values: the label of tasks without one, and
// the label of every task label past the cap (see WithMaxLabels).
const (
	noLabel    = "none"
	otherLabel = "other"
)

// Histograms measure, through the hooks that Hooks returns, every run of
// the tasks of the pools that use them: how long it waited and ran, how
// it failed, whether it was a retry, and, while it runs, how long it has
// been running. One Histograms serves any number of pools: each series
// carries the name given to Hooks for the pool as the label pool, and the
// histograms and counters the task's Label as the label task. Histograms
// is a prometheus.Collector: register it, as the
// Collector, in a registry of your own, once, whatever the number of
// pools.
//
// Its metrics (see the package documentation for their meaning):
//   - workerpool_task_wait_seconds{pool,task} and
//     workerpool_task_run_seconds{pool,task}, histograms: classic, with
//     the buckets of WithWaitBuckets and WithRunBuckets, and native
//     alongside (factor 1.1, at most 100 buckets). A scraper that asks for
//     protobuf, as Prometheus does with native histograms enabled, gets
//     both; one that reads text gets the classic buckets.
//   - workerpool_task_failures_total{pool,task,outcome}, outcome "error"
//     or "panic", and workerpool_task_reruns_total{pool,task}, counters.
//   - workerpool_unfinished_work_seconds{pool} and
//     workerpool_longest_running_processor_seconds{pool}, gauges computed
//     at each scrape from the runs in flight.
//
// The series of a pool, and of a task label, appear with its first run;
// those of a task label start with both outcomes of the failures and the
// reruns at 0, so that rate() sees the first increase.
//
// Unlike the Collector, Histograms cost something per task: see the
// package documentation for the measured cost. It is safe for concurrent
// use, holds no goroutine and needs no cleanup.
type Histograms struct {
	wait     *prometheus.HistogramVec // pool, task; observed by TaskStarted
	run      *prometheus.HistogramVec // pool, task; observed by TaskFinished
	failures *prometheus.CounterVec   // pool, task, outcome; added to by TaskFinished
	reruns   *prometheus.CounterVec   // pool, task; added to by TaskStarted
	// unfinished and longest describe the stuck-work gauges, which Collect
	// computes from each pool's runs in flight.
	unfinished, longest *prometheus.Desc
	maxLabels           int
	// epoch is when NewHistograms was called: a run's start is kept as the
	// time since epoch, read on the monotonic clock.
	epoch time.Time
	// plainRuns holds the runs of plain tasks, reused (see run).
	plainRuns sync.Pool

	// known maps a pool's name and a task's label, as the hooks see them,
	// to their series. Copied on write under mu, so that the hooks read it
	// without a lock; it holds no label past the cap (those take mu, see
	// seriesFor), so its size is bounded by the pools times the cap.
	known atomic.Pointer[map[seriesKey]*series]

	mu       sync.Mutex            // protects admitted, byLabels and pools, and serializes writes of known
	admitted map[string]bool       // the task labels under the cap, "" excluded
	byLabels map[seriesKey]*series // every series made, by exported pool and task labels
	pools    map[string]*inflight  // the runs in flight of each pool, by exported name
	order    []*inflight           // pools in the order of their first run, for Collect
}

// A seriesKey names a pool and a task label: as the hooks see them in
// known, as they are exported in byLabels.
type seriesKey struct{ pool, label string }

// series are the metrics of one pool and one exported task label, looked
// up once per run by TaskStarted; the run keeps them for TaskFinished.
type series struct {
	wait, run      prometheus.Observer
	errors, panics prometheus.Counter // workerpool_task_failures_total by outcome
	reruns         prometheus.Counter
	runs           *inflight // the pool's runs in flight
}

// A HistogramOption configures NewHistograms.
type HistogramOption func(*histogramConfig)

type histogramConfig struct {
	waitBuckets, runBuckets []float64
	maxLabels               int
}

// WithWaitBuckets sets the classic buckets of workerpool_task_wait_seconds:
// upper bounds in seconds, in strictly increasing order (+Inf is added).
// buckets is copied. An empty or nil buckets means the default.
//
// Default: one per decade from 1e-8 to 1000 (10ns to about 17 minutes),
// the twelve buckets of Kubernetes' workqueue metrics.
func WithWaitBuckets(buckets []float64) HistogramOption {
	return func(c *histogramConfig) {
		c.waitBuckets = slices.Clone(buckets)
	}
}

// WithRunBuckets sets the classic buckets of workerpool_task_run_seconds,
// as WithWaitBuckets does for the wait histogram.
//
// Default: one per decade from 1e-8 to 1000 (10ns to about 17 minutes).
func WithRunBuckets(buckets []float64) HistogramOption {
	return func(c *histogramConfig) {
		c.runBuckets = slices.Clone(buckets)
	}
}

// WithMaxLabels caps the number of distinct task labels the Histograms
// export: the first n labels its hooks see, across all its pools, keep
// their value in the task label; the runs of any later one are counted
// with task="other". Tasks without a label (task="none") do not count
// against the cap. n = 0 exports no label at all: every labelled task
// counts as "other". A negative n means 0.
//
// The cap bounds the series a Histograms can make, which grow with the
// pools times the labels; it is a guard, not a budget: labels are kinds of
// task, never ids. Runs of a label past the cap cost a lock more each
// (see the package documentation).
//
// Default: DefaultMaxLabels.
func WithMaxLabels(n int) HistogramOption {
	return func(c *histogramConfig) {
		c.maxLabels = max(n, 0)
	}
}

// NewHistograms returns Histograms for any number of pools: pass
// Hooks(name) to workerpool.WithHooks of each, with a distinct name for
// each pool. Options apply in order; the last of each kind wins.
//
// Register the result once per registry: it is one collector for all its
// pools, and a second Histograms in the same registry fails to register
// with a [prometheus.AlreadyRegisteredError]. NewHistograms panics if a
// bucket list is not in strictly increasing order, as
// prometheus.NewHistogram does.
func NewHistograms(opts ...HistogramOption) *Histograms {
	c := histogramConfig{maxLabels: DefaultMaxLabels}
	for _, o := range opts {
		o(&c)
	}
	h := &Histograms{
		wait: newHistogramVec("workerpool_task_wait_seconds",
			"Time each run of a task waited before it started, in seconds: from the task's acceptance, or from when it became due (a Delay, a retry), to the start of the run.",
			c.waitBuckets),
		run: newHistogramVec("workerpool_task_run_seconds",
			"Time each run of a task took, in seconds, until its func returned, panicked or called runtime.Goexit. Each retry is a run of its own.",
			c.runBuckets),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "workerpool_task_failures_total",
			Help: `Runs of tasks that failed, by outcome: "panic" for a panic, "error" for an error returned or runtime.Goexit. Each failed run of a retried task counts.`,
		}, []string{"pool", "task", "outcome"}),
		reruns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "workerpool_task_reruns_total",
			Help: "Runs of tasks after their first, under Retry: workerpool_task_retries_total by task.",
		}, []string{"pool", "task"}),
		unfinished: prometheus.NewDesc("workerpool_unfinished_work_seconds",
			"Seconds of work in progress: the sum over the runs in flight of the time since each started. Grows without bound if a run is stuck.",
			[]string{"pool"}, nil),
		longest: prometheus.NewDesc("workerpool_longest_running_processor_seconds",
			"Seconds the longest run in flight has been running; 0 when none is.",
			[]string{"pool"}, nil),
		maxLabels: c.maxLabels,
		epoch:     time.Now(),
		admitted:  map[string]bool{},
		byLabels:  map[seriesKey]*series{},
		pools:     map[string]*inflight{},
	}
	h.known.Store(&map[seriesKey]*series{})
	h.plainRuns.New = func() any {
		return &run{Context: context.Background(), h: h}
	}
	return h
}

// newHistogramVec returns the histogram name by pool and task, with
// buckets (nil: the default). It panics if buckets are not in strictly
// increasing order, which client_golang would find only as the first
// series is made, in a hook.
func newHistogramVec(name, help string, buckets []float64) *prometheus.HistogramVec {
	if len(buckets) == 0 {
		buckets = defaultBuckets
	}
	for i := 1; i < len(buckets); i++ {
		if !(buckets[i] > buckets[i-1]) {
			panic(fmt.Sprintf("workerpoolprom: buckets not in strictly increasing order: %v then %v", buckets[i-1], buckets[i]))
		}
	}
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:                            name,
		Help:                            help,
		Buckets:                         buckets,
		NativeHistogramBucketFactor:     nativeBucketFactor,
		NativeHistogramMaxBucketNumber:  nativeMaxBucketNumber,
		NativeHistogramMinResetDuration: nativeMinResetPeriod,
	}, []string{"pool", "task"})
}

// Hooks returns the hooks that feed h with the runs of one pool, for
// workerpool.WithHooks: their series carry pool as the label pool (the
// pool's name, as given to its Collector; a workerpool.WorkerPool has no
// name of its own). Give each pool a distinct, fixed name: two pools that
// use the hooks of one name share its series. A name that is not valid
// UTF-8 is exported with U+FFFD in place of each invalid byte.
//
// TaskStarted observes the run's wait (so a run shows up in the wait
// histogram as soon as it starts, even if it runs for minutes), counts a
// rerun, and records the run as in flight in the ctx it returns: the ctx
// the task runs with. TaskFinished observes the run time, counts a
// failure, and removes the run from those in flight. TaskDropped is nil:
// the Collector counts the tasks that never ran.
//
// As the pool does, call TaskFinished once after each TaskStarted, with
// the ctx TaskStarted returned or one derived from it: a run whose
// TaskFinished never comes stays in flight, and its stuck-work gauges
// grow, for good. A TaskFinished whose ctx carries no run of h observes
// the run time and the failure all the same. The ctx may be read after
// TaskFinished returns.
//
// Every call returns hooks that feed the same metrics; any number of pools
// may use them at once. workerpool.WithHooks merges hooks, so the pool may
// also be given hooks of other concerns (a DeadLetter, a Panic); the
// package documentation shows how to chain them with a TaskStarted or
// TaskFinished of your own.
func (h *Histograms) Hooks(pool string) workerpool.Hooks {
	return workerpool.Hooks{
		TaskStarted: func(ctx context.Context, t workerpool.TaskInfo) context.Context {
			return h.taskStarted(ctx, pool, t)
		},
		TaskFinished: func(ctx context.Context, t workerpool.TaskInfo) {
			h.taskFinished(ctx, pool, t)
		},
	}
}

func (h *Histograms) taskStarted(ctx context.Context, pool string, t workerpool.TaskInfo) context.Context {
	s := h.seriesFor(pool, t.Label)
	s.wait.Observe(t.Waited.Seconds())
	if t.Attempt > 1 {
		s.reruns.Inc()
	}
	var r *run
	if ctx == context.Background() {
		r = h.plainRuns.Get().(*run) // a plain task's run: see run
	} else {
		r = &run{Context: ctx, h: h}
	}
	r.s, r.start = s, h.now()
	s.runs.add(r)
	return r
}

func (h *Histograms) taskFinished(ctx context.Context, pool string, t workerpool.TaskInfo) {
	var s *series
	if r := h.runOf(ctx); r != nil {
		s = r.s
		if s.runs.remove(r) && r.reused() {
			h.plainRuns.Put(r)
		}
	} else {
		s = h.seriesFor(pool, t.Label) // TaskStarted was not ours: no run to end
	}
	s.run.Observe(t.Ran.Seconds())
	if t.Err != nil {
		var panicked *workerpool.PanicError // errors.As, not errors.AsType: the module asks for Go 1.25
		if errors.As(t.Err, &panicked) {
			s.panics.Inc()
		} else {
			s.errors.Inc() // workerpool.ErrGoexit included
		}
	}
}

// runOf returns the run of h that ctx is, or carries; nil if none.
func (h *Histograms) runOf(ctx context.Context) *run {
	if r, ok := ctx.(*run); ok && r.h == h {
		return r // as the pool passes it back: no lookup
	}
	r, _ := ctx.Value(runKey{h}).(*run)
	return r
}

// now is the time since h.epoch, on the monotonic clock.
func (h *Histograms) now() int64 { return int64(time.Since(h.epoch)) }

// seriesFor returns the series of the tasks labelled label in the pool
// named pool, making them on first use. Once made they are found without
// a lock, but for labels past the cap, which are never added to known.
func (h *Histograms) seriesFor(pool, label string) *series {
	if s, ok := (*h.known.Load())[seriesKey{pool, label}]; ok {
		return s
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	known := *h.known.Load()
	if s, ok := known[seriesKey{pool, label}]; ok {
		return s
	}
	task, admitted := h.admit(label)
	s := h.seriesLocked(validUTF8(pool), task)
	if admitted {
		next := make(map[seriesKey]*series, len(known)+1)
		for k, v := range known {
			next[k] = v
		}
		next[seriesKey{pool, label}] = s
		h.known.Store(&next)
	}
	return s
}

// admit returns the task label under which the runs of tasks labelled
// label are exported, and whether label is under the cap.
func (h *Histograms) admit(label string) (task string, admitted bool) {
	switch {
	case label == "":
		return noLabel, true
	case h.admitted[label]:
		return validUTF8(label), true
	case len(h.admitted) >= h.maxLabels:
		return otherLabel, false
	}
	h.admitted[label] = true
	return validUTF8(label), true
}

// seriesLocked returns the series exported as pool and task, making them
// (and the pool's runs in flight) on first use. h.mu must be held.
func (h *Histograms) seriesLocked(pool, task string) *series {
	if s, ok := h.byLabels[seriesKey{pool, task}]; ok {
		return s
	}
	runs, ok := h.pools[pool]
	if !ok {
		runs = &inflight{pool: pool}
		h.pools[pool] = runs
		h.order = append(h.order, runs)
	}
	s := &series{
		wait:   h.wait.WithLabelValues(pool, task),
		run:    h.run.WithLabelValues(pool, task),
		errors: h.failures.WithLabelValues(pool, task, "error"),
		panics: h.failures.WithLabelValues(pool, task, "panic"),
		reruns: h.reruns.WithLabelValues(pool, task),
		runs:   runs,
	}
	h.byLabels[seriesKey{pool, task}] = s
	return s
}

// validUTF8 returns s with each run of invalid UTF-8 bytes replaced by
// U+FFFD, as a label value must be valid UTF-8.
func validUTF8(s string) string {
	return strings.ToValidUTF8(s, "\uFFFD")
}

// Describe sends the descriptions of all six metrics to ch. It implements
// prometheus.Collector.
func (h *Histograms) Describe(ch chan<- *prometheus.Desc) {
	h.wait.Describe(ch)
	h.run.Describe(ch)
	h.failures.Describe(ch)
	h.reruns.Describe(ch)
	ch <- h.unfinished
	ch <- h.longest
}

// Collect sends every series to ch, with the stuck-work gauges of each
// pool computed from its runs in flight at this moment. It implements
// prometheus.Collector.
func (h *Histograms) Collect(ch chan<- prometheus.Metric) {
	h.wait.Collect(ch)
	h.run.Collect(ch)
	h.failures.Collect(ch)
	h.reruns.Collect(ch)
	h.mu.Lock()
	pools := slices.Clone(h.order)
	h.mu.Unlock()
	now := h.now()
	for _, p := range pools {
		unfinished, longest := p.stuck(now)
		ch <- prometheus.MustNewConstMetric(h.unfinished, prometheus.GaugeValue, unfinished.Seconds(), p.pool)
		ch <- prometheus.MustNewConstMetric(h.longest, prometheus.GaugeValue, longest.Seconds(), p.pool)
	}
}
