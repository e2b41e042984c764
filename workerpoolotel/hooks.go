package workerpoolotel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/e86d9661/workerpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// durationBounds are the explicit bucket boundaries, in seconds, of the
// duration histograms: from 1µs to 10 minutes, roughly 1-2.5-5 per decade,
// so that both a no-op task's microseconds and a batch job's minutes land
// in a bucket that tells them apart.
var durationBounds = []float64{
	0.000001, 0.0000025, 0.000005,
	0.00001, 0.000025, 0.00005,
	0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005,
	0.01, 0.025, 0.05,
	0.1, 0.25, 0.5,
	1, 2.5, 5,
	10, 30, 60,
	120, 300, 600,
}

// NewHooks returns Hooks, for workerpool.WithHooks, that record each run
// of a task in two float64 histograms, in seconds, with the attribute
// workerpool.name set to poolName:
//   - workerpool.task.wait.duration: the time from the task's acceptance
//     (or from becoming due, for a Delay or At task and for a retry) to the
//     start of its run, recorded by TaskStarted as the run starts;
//   - workerpool.task.run.duration: the time the run took, recorded by
//     TaskFinished as it ends, whatever its error (a panic included).
//
// Each run of a retried task is recorded; a task that never runs (canceled,
// abandoned, dropped, expired) is recorded in neither (see RegisterStatus
// for those). The buckets go from 1µs to 10 minutes; change them with an
// SDK View if they do not suit. poolName should be the name given to the
// pool with workerpool.WithName (the hooks are made before the pool, so
// they cannot ask it). Use WithMeterProvider to choose the provider.
//
// The returned Hooks set TaskStarted and TaskFinished, and leave
// TaskDropped nil. To add hooks of your own, call these from yours (see
// the example). Each hook records one measurement without allocating, and
// is safe for concurrent use, as the pool requires.
//
// It returns an error if the meter refuses a histogram.
func NewHooks(poolName string, opts ...Option) (workerpool.Hooks, error) {
	c := newConfig(opts)
	meter := c.meter()
	wait, waitErr := meter.Float64Histogram("workerpool.task.wait.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Time tasks waited in the queue before a run started."),
		metric.WithExplicitBucketBoundaries(durationBounds...))
	run, runErr := meter.Float64Histogram("workerpool.task.run.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Time task runs took."),
		metric.WithExplicitBucketBoundaries(durationBounds...))
	if err := errors.Join(waitErr, runErr); err != nil {
		return workerpool.Hooks{}, fmt.Errorf("workerpoolotel: NewHooks: %w", err)
	}
	// One slice for every Record, so that passing the option allocates
	// nothing.
	attrs := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String(nameKey, poolName)))}
	ctx := context.Background()
	return workerpool.Hooks{
		TaskStarted: func(waited time.Duration) {
			wait.Record(ctx, waited.Seconds(), attrs...)
		},
		TaskFinished: func(_, ran time.Duration, _ error) {
			run.Record(ctx, ran.Seconds(), attrs...)
		},
	}, nil
}
