package workerpoolprom

import (
	"sync"

	"github.com/e86d9661/workerpool"
	"github.com/prometheus/client_golang/prometheus"
)

// A Collector is a prometheus.Collector that exports a pool's Status: six
// gauges and nine counters, and for a pool made with WithAdaptiveSize a
// seventh gauge, workerpool_size_reason, each with the const label pool,
// the name given to NewCollector. It calls pool.Status once per scrape, when the registry calls Collect, and
// costs nothing per task. It is safe for concurrent use: a registry may
// collect it for several scrapes at once.
//
// A Collector holds no goroutine and needs no cleanup. It keeps exporting
// the pool's last counts after the pool has stopped; Unregister it when
// the pool is dropped, or keep it to show the final counts.
//
// Prometheus takes any decrease of a counter for a restart of the
// process, and rate would jump by the whole count. Status's counters never
// go back, but for Submitted while the pool stops: a submit that the stop
// refuses counts in it for a moment. So each counter a Collector exports
// is the highest value it has read for that field: it never goes down,
// and workerpool_tasks_submitted_total may stay above the final count by
// the submits a scrape saw in that moment.
type Collector struct {
	pool     *workerpool.WorkerPool
	gauges   [len(gaugeSpecs)]*prometheus.Desc
	counters [len(counterSpecs)]*prometheus.Desc
	reason   *prometheus.Desc // workerpool_size_reason, with the variable label reason

	mu      sync.Mutex                 // protects highest
	highest [len(counterSpecs)]float64 // the value last exported for each counter
}

// gaugeSpec and counterSpec describe one metric: its name, its help text
// (Status's comment on the field) and the field's value.
type gaugeSpec struct {
	name, help string
	value      func(*workerpool.Status) int
}

type counterSpec struct {
	name, help string
	value      func(*workerpool.Status) uint64
}

var gaugeSpecs = [...]gaugeSpec{
	{"workerpool_workers", "Live worker goroutines of the pool, busy or idle.",
		func(s *workerpool.Status) int { return s.Workers }},
	{"workerpool_busy_workers", "Workers of the pool running a task (or being handed one).",
		func(s *workerpool.Status) int { return s.Busy }},
	{"workerpool_max_workers", "The most workers the pool may run: New's maxWorkers, or the last Resize's; under WithAdaptiveSize, the size the pool chose (see workerpool_size_reason).",
		func(s *workerpool.Status) int { return s.MaxWorkers }},
	{"workerpool_waiting_tasks", "Accepted tasks waiting for a worker, including those a Pause holds.",
		func(s *workerpool.Status) int { return s.Waiting }},
	{"workerpool_scheduled_tasks", "Accepted tasks not due yet (a Delay, or waiting for a retry); they join the waiting tasks when due.",
		func(s *workerpool.Status) int { return s.Scheduled }},
	{"workerpool_active_keys", "Keys (see Key) with tasks waiting, scheduled or running; each key counts once, however many tasks it has.",
		func(s *workerpool.Status) int { return s.Keys }},
}

// reasonSpec is the gauge of Status.SizeReason: 1, with the reason as a
// label, for a pool made with WithAdaptiveSize; no series for any other
// pool (its SizeReason is "").
var reasonSpec = struct{ name, help, label string }{
	"workerpool_size_reason",
	"Why the pool chose the size workerpool_max_workers reports, under WithAdaptiveSize: always 1, with its last decision as the label reason (start until the first); no series without WithAdaptiveSize.",
	"reason",
}

var counterSpecs = [...]counterSpec{
	{"workerpool_tasks_submitted_total", "Tasks the pool accepted: plain tasks, DoWait calls, Tasks, Futures and group tasks. Each ends completed, abandoned, canceled, dropped or expired.",
		func(s *workerpool.Status) uint64 { return s.Submitted }},
	{"workerpool_tasks_completed_total", "Accepted tasks whose func was called and ended for good (returned, panicked or called runtime.Goexit) and was not retried.",
		func(s *workerpool.Status) uint64 { return s.Completed }},
	{"workerpool_tasks_panicked_total", "Completed tasks whose last run panicked, recovered by the Panic hook or into a *PanicError; earlier runs of a retried task that panicked are not counted.",
		func(s *workerpool.Status) uint64 { return s.Panicked }},
	{"workerpool_tasks_abandoned_total", "Accepted tasks that never started because the pool stopped first (Stop, or a Shutdown that gave up).",
		func(s *workerpool.Status) uint64 { return s.Abandoned }},
	{"workerpool_tasks_canceled_total", "Tasks, Futures and group tasks that never started because their context ended.",
		func(s *workerpool.Status) uint64 { return s.Canceled }},
	{"workerpool_tasks_rejected_total", "Tasks refused because the queue was full or they were heavier than the pool; never accepted, so not counted as submitted.",
		func(s *workerpool.Status) uint64 { return s.Rejected }},
	{"workerpool_tasks_dropped_total", "Accepted tasks dropped from a full queue to make room for newer ones (DropOldest), or heavier than the pool after a Resize.",
		func(s *workerpool.Status) uint64 { return s.Dropped }},
	{"workerpool_tasks_expired_total", "Accepted tasks that waited in the queue longer than WithQueueTimeout and never ran.",
		func(s *workerpool.Status) uint64 { return s.Expired }},
	{"workerpool_task_retries_total", "Runs of tasks after their first, under Retry; a retried task counts once as submitted.",
		func(s *workerpool.Status) uint64 { return s.Retried }},
}

// NewCollector returns a Collector for pool, labelled pool=name: the name
// the pool goes by in the metrics, the same one given to the Histograms'
// Hooks for it (a workerpool.WorkerPool has no name of its own). Give
// pools fixed names, a kind of pool ("images", "mail"), never one per
// request. Register it in a registry of your own
// ([prometheus.NewRegistry]); two pools can share a registry only if their
// names differ: registering a second Collector for a name already
// registered fails with a [prometheus.AlreadyRegisteredError]. A name that
// is not valid UTF-8 makes registration fail too.
//
// NewCollector panics if pool is nil.
func NewCollector(pool *workerpool.WorkerPool, name string) *Collector {
	if pool == nil {
		panic("workerpoolprom: NewCollector called with a nil pool")
	}
	c := &Collector{pool: pool}
	labels := prometheus.Labels{"pool": name}
	for i, s := range gaugeSpecs {
		c.gauges[i] = prometheus.NewDesc(s.name, s.help, nil, labels)
	}
	for i, s := range counterSpecs {
		c.counters[i] = prometheus.NewDesc(s.name, s.help, nil, labels)
	}
	c.reason = prometheus.NewDesc(reasonSpec.name, reasonSpec.help, []string{reasonSpec.label}, labels)
	return c
}

// Describe sends the descriptions of all sixteen metrics to ch,
// workerpool_size_reason's included. It implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.gauges {
		ch <- d
	}
	ch <- c.reason
	for _, d := range c.counters {
		ch <- d
	}
}

// Collect reads the pool's Status once and sends its fifteen metrics to
// ch, and workerpool_size_reason if the pool was made with
// WithAdaptiveSize. It never waits for the pool (Status never blocks),
// also once the pool has stopped. It implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Status()
	for i, spec := range gaugeSpecs {
		ch <- constMetric(c.gauges[i], prometheus.GaugeValue, float64(spec.value(&s)))
	}
	if s.SizeReason != "" {
		ch <- constMetric(c.reason, prometheus.GaugeValue, 1, s.SizeReason)
	}
	counts := c.monotonic(&s)
	for i, v := range counts {
		ch <- constMetric(c.counters[i], prometheus.CounterValue, v)
	}
}

// monotonic returns the counters of s, each raised to the highest value
// exported before, and records them.
func (c *Collector) monotonic(s *workerpool.Status) [len(counterSpecs)]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, spec := range counterSpecs {
		c.highest[i] = max(c.highest[i], float64(spec.value(s)))
	}
	return c.highest
}

// constMetric is prometheus.MustNewConstMetric, but a desc that cannot make
// a metric (a pool name that is not valid UTF-8) yields an invalid metric,
// which fails the scrape, rather than a panic.
func constMetric(d *prometheus.Desc, t prometheus.ValueType, v float64, labelValues ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, t, v, labelValues...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}
