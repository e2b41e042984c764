package workerpoolotel

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/e86d9661/workerpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// A statusGauge is one Status field that goes up and down, reported as an
// observable Gauge (workerpoolprom's gauge of the same name).
type statusGauge struct {
	name, unit, description string
	field                   func(workerpool.Status) int
}

// A statusCounter is one Status total, reported as an observable Counter.
type statusCounter struct {
	name, unit, description string
	field                   func(workerpool.Status) uint64
}

// The names follow workerpoolprom's: the OpenTelemetry Prometheus exporter
// turns workerpool.workers into workerpool_workers, and the counter
// workerpool.tasks_submitted into workerpool_tasks_submitted_total (a unit
// such as {task} adds no suffix).
var statusGauges = []statusGauge{
	{"workerpool.workers", "{worker}", "Live worker goroutines of the pool, busy or idle.",
		func(s workerpool.Status) int { return s.Workers }},
	{"workerpool.busy_workers", "{worker}", "Workers of the pool running a task.",
		func(s workerpool.Status) int { return s.Busy }},
	{"workerpool.max_workers", "{worker}", "The most workers the pool may run: its size, which the pool chose under WithAdaptiveSize (see workerpool.size_reason).",
		func(s workerpool.Status) int { return s.MaxWorkers }},
	{"workerpool.waiting_tasks", "{task}", "Accepted tasks waiting for a worker, including those a Pause holds.",
		func(s workerpool.Status) int { return s.Waiting }},
	{"workerpool.scheduled_tasks", "{task}", "Accepted tasks not due yet: delayed, or waiting for a retry.",
		func(s workerpool.Status) int { return s.Scheduled }},
	{"workerpool.active_keys", "{key}", "Keys (see Key) with tasks waiting, scheduled or running; each key counts once, however many tasks it has.",
		func(s workerpool.Status) int { return s.Keys }},
}

// sizeReason is Status.SizeReason, reported as an observable Gauge: 1,
// with the attributes pool and reason (the pool's last decision), for a
// pool made with WithAdaptiveSize only; a pool without the option, whose
// SizeReason is "", gets no data point, as workerpoolprom's
// workerpool_size_reason has no series then. Its unit says what the 1
// counts: a sum by reason is the number of pools whose last decision it
// was.
var sizeReason = struct{ name, unit, description string }{
	"workerpool.size_reason", "{pool}",
	"Why the pool chose the size workerpool.max_workers reports, under WithAdaptiveSize: 1, with its last decision as the attribute reason (start until the first); no data point without WithAdaptiveSize.",
}

var statusCounters = []statusCounter{
	{"workerpool.tasks_submitted", "{task}", "Tasks accepted by the pool.",
		func(s workerpool.Status) uint64 { return s.Submitted }},
	{"workerpool.tasks_completed", "{task}", "Accepted tasks that ran and ended for good: returned, panicked or called runtime.Goexit.",
		func(s workerpool.Status) uint64 { return s.Completed }},
	{"workerpool.tasks_panicked", "{task}", "Completed tasks whose last run panicked (the panic recovered); earlier runs of a retried task that panicked are not counted.",
		func(s workerpool.Status) uint64 { return s.Panicked }},
	{"workerpool.tasks_abandoned", "{task}", "Accepted tasks that never ran because the pool stopped first.",
		func(s workerpool.Status) uint64 { return s.Abandoned }},
	{"workerpool.tasks_canceled", "{task}", "Accepted tasks that never ran because their context ended or they were canceled.",
		func(s workerpool.Status) uint64 { return s.Canceled }},
	{"workerpool.tasks_rejected", "{task}", "Tasks refused because the queue was full or they were heavier than the pool; never accepted.",
		func(s workerpool.Status) uint64 { return s.Rejected }},
	{"workerpool.tasks_dropped", "{task}", "Accepted tasks dropped from a full queue for newer ones, or heavier than the pool after a resize.",
		func(s workerpool.Status) uint64 { return s.Dropped }},
	{"workerpool.tasks_expired", "{task}", "Accepted tasks that waited in the queue longer than the pool allows and never ran.",
		func(s workerpool.Status) uint64 { return s.Expired }},
	{"workerpool.task_retries", "{task}", "Runs of tasks after their first, under a retry policy.",
		func(s workerpool.Status) uint64 { return s.Retried }},
}

// RegisterStatus creates observable instruments that report
// pool.Status() (see the package documentation for their names and
// units), each with the attribute pool set to name, the pool's name (a
// workerpool.WorkerPool has none of its own; give NewHooks the same);
// workerpool.size_reason, observed only for a pool made with
// WithAdaptiveSize, also has the attribute reason. It registers one
// callback for all of them: the pool is read once per collection, when
// the MeterProvider collects, and never per task. Use WithMeterProvider to
// choose the provider.
//
// It never blocks, and never waits for the pool. The callback goes on
// reporting after the pool has stopped (the final, exact counts) until
// the returned Registration's Unregister is called, and until then the
// MeterProvider keeps the pool reachable: call Unregister when the pool is
// no longer needed. Register each pool once, and give the pools you
// register different names: two of the same name report the same series,
// which the SDK cannot tell apart.
//
// It returns an error, and registers nothing, if the meter refuses an
// instrument or the callback. RegisterStatus panics if pool is nil. Safe
// for concurrent use.
func RegisterStatus(pool *workerpool.WorkerPool, name string, opts ...Option) (metric.Registration, error) {
	if pool == nil {
		panic("workerpoolotel: RegisterStatus called with a nil pool")
	}
	c := newConfig(opts)
	meter := c.meter()
	gauges := make([]metric.Int64ObservableGauge, len(statusGauges))
	counters := make([]metric.Int64ObservableCounter, len(statusCounters))
	observables := make([]metric.Observable, 0, len(gauges)+1+len(counters))
	var errs []error
	for i, g := range statusGauges {
		inst, err := meter.Int64ObservableGauge(g.name, metric.WithUnit(g.unit), metric.WithDescription(g.description))
		errs = append(errs, err)
		gauges[i] = inst
		observables = append(observables, inst)
	}
	reason, err := meter.Int64ObservableGauge(sizeReason.name, metric.WithUnit(sizeReason.unit), metric.WithDescription(sizeReason.description))
	errs = append(errs, err)
	observables = append(observables, reason)
	for i, ct := range statusCounters {
		inst, err := meter.Int64ObservableCounter(ct.name, metric.WithUnit(ct.unit), metric.WithDescription(ct.description))
		errs = append(errs, err)
		counters[i] = inst
		observables = append(observables, inst)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("workerpoolotel: RegisterStatus: %w", err)
	}
	poolAttr := attribute.String(poolKey, name)
	attrs := metric.WithAttributeSet(attribute.NewSet(poolAttr))
	reg, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := pool.Status()
		for i, g := range statusGauges {
			o.ObserveInt64(gauges[i], int64(g.field(s)), attrs)
		}
		if s.SizeReason != "" {
			o.ObserveInt64(reason, 1, metric.WithAttributeSet(attribute.NewSet(poolAttr, attribute.String(reasonKey, s.SizeReason))))
		}
		for i, ct := range statusCounters {
			o.ObserveInt64(counters[i], int64(min(ct.field(s), math.MaxInt64)), attrs)
		}
		return nil
	}, observables...)
	if err != nil {
		return nil, fmt.Errorf("workerpoolotel: RegisterStatus: %w", err)
	}
	return reg, nil
}
