package workerpoolprom

import (
	"slices"
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
// where it matters.
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

// Histograms measure how long a pool's tasks wait and run, fed by the
// hooks that Hooks returns: workerpool_task_wait_seconds and
// workerpool_task_run_seconds, labelled pool=the name given to
// NewHistograms. Each run of a task (each attempt, under Retry) is
// observed once in each histogram. A task handed straight to an idle
// worker waited 0s. Histograms is a prometheus.Collector:
// register it, as the Collector, in a registry of your own.
//
// Both are classic histograms, with the buckets of WithWaitBuckets and
// WithRunBuckets, and native histograms alongside (factor 1.1, at most 100
// buckets): a scraper that asks for protobuf, as Prometheus does with
// native histograms enabled, gets both; one that reads text gets the
// classic buckets.
//
// Unlike the Collector, Histograms cost something per task: with its
// hooks installed the pool reads its clock three times per task, and each
// run makes two Observe calls (a few atomic adds each). See the package's
// benchmarks. It is safe for concurrent use, holds no goroutine and needs
// no cleanup.
type Histograms struct {
	wait prometheus.Histogram // observed by the TaskStarted hook
	run  prometheus.Histogram // observed by the TaskFinished hook
}

// A HistogramOption configures NewHistograms.
type HistogramOption func(*histogramConfig)

type histogramConfig struct {
	waitBuckets, runBuckets []float64
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

// NewHistograms returns the wait and run histograms of the pool named
// poolName: pass the same name to workerpool.WithName, and Hooks' result to
// workerpool.WithHooks. (It takes a name, not the pool, because the hooks
// are an option of New: they exist before the pool does.) Options apply
// in order; the last of each kind wins.
//
// As with the Collector, registering Histograms for a name already
// registered fails with a [prometheus.AlreadyRegisteredError]. NewHistograms
// panics, as prometheus.NewHistogram does, if a bucket list is not in
// strictly increasing order.
func NewHistograms(poolName string, opts ...HistogramOption) *Histograms {
	c := histogramConfig{}
	for _, o := range opts {
		o(&c)
	}
	labels := prometheus.Labels{"pool": poolName}
	return &Histograms{
		wait: newHistogram("workerpool_task_wait_seconds",
			"Time each run of a task waited before it started, in seconds: from the task's acceptance, or from when it became due (Delay, At, a retry), to the start of the run.",
			labels, c.waitBuckets),
		run: newHistogram("workerpool_task_run_seconds",
			"Time each run of a task took, in seconds, until its func returned, panicked or called runtime.Goexit. Each retry is a run of its own.",
			labels, c.runBuckets),
	}
}

func newHistogram(name, help string, labels prometheus.Labels, buckets []float64) prometheus.Histogram {
	if len(buckets) == 0 {
		buckets = defaultBuckets
	}
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:                            name,
		Help:                            help,
		ConstLabels:                     labels,
		Buckets:                         buckets,
		NativeHistogramBucketFactor:     nativeBucketFactor,
		NativeHistogramMaxBucketNumber:  nativeMaxBucketNumber,
		NativeHistogramMinResetDuration: nativeMinResetPeriod,
	})
}

// Hooks returns the hooks that feed h, for workerpool.WithHooks:
// TaskStarted observes the run's wait, so the wait histogram counts the
// runs started (a run shows up as soon as it starts, even if it runs for
// minutes), and TaskFinished observes its run time. TaskDropped is nil.
// Every call returns hooks that feed the same histograms; pools given the
// same Histograms' hooks share them. The package documentation shows how
// to combine them with hooks of your own.
func (h *Histograms) Hooks() workerpool.Hooks {
	return workerpool.Hooks{
		TaskStarted:  h.observeWait,
		TaskFinished: h.observeRun,
	}
}

func (h *Histograms) observeWait(waited time.Duration) {
	h.wait.Observe(waited.Seconds())
}

func (h *Histograms) observeRun(_, ran time.Duration, _ error) {
	h.run.Observe(ran.Seconds())
}

// Describe sends the descriptions of both histograms to ch. It implements
// prometheus.Collector.
func (h *Histograms) Describe(ch chan<- *prometheus.Desc) {
	h.wait.Describe(ch)
	h.run.Describe(ch)
}

// Collect sends both histograms to ch. It implements prometheus.Collector.
func (h *Histograms) Collect(ch chan<- prometheus.Metric) {
	h.wait.Collect(ch)
	h.run.Collect(ch)
}
