package workerpoolotel

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// benchProviders returns an SDK TracerProvider that samples every span
// and exports it, synchronously, to an exporter that drops it, and an SDK
// MeterProvider whose reader is never read.
func benchProviders(b *testing.B) (*sdktrace.TracerProvider, *sdkmetric.MeterProvider) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		assert.NoError(b, tp.Shutdown(context.Background()), "TracerProvider.Shutdown")
		assert.NoError(b, mp.Shutdown(context.Background()), "MeterProvider.Shutdown")
	})
	return tp, mp
}

func benchHooks(b *testing.B, tp trace.TracerProvider, mp metric.MeterProvider) workerpool.Hooks {
	hooks, err := NewHooks("bench", WithTracerProvider(tp), WithMeterProvider(mp))
	require.NoError(b, err, "NewHooks")
	return hooks
}

// benchInfo is what the hooks are told of a run in the benchmarks.
func benchInfo() (started, finished workerpool.TaskInfo) {
	started = workerpool.TaskInfo{Label: "resize", Weight: 1, Attempt: 1, Waited: time.Microsecond}
	finished = started
	finished.Ran = time.Millisecond
	return started, finished
}

// benchAttrs are the attributes the hooks give a run's span.
func benchAttrs(t workerpool.TaskInfo) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String(spanPoolKey, "bench"),
		attribute.String(spanLabelKey, t.Label),
		attribute.Int(spanAttemptKey, t.Attempt),
		attribute.Int(spanPriorityKey, t.Priority),
		attribute.Float64(spanWaitKey, t.Waited.Seconds()),
	}
}

// benchmarkHooks calls the hooks as a worker does around a run.
func benchmarkHooks(b *testing.B, hooks workerpool.Hooks) {
	ctx := context.Background()
	started, finished := benchInfo()
	b.ReportAllocs()
	for b.Loop() {
		hooks.TaskFinished(hooks.TaskStarted(ctx, started), finished)
	}
}

// BenchmarkSpan measures what a span per run costs through NewHooks's
// hooks, called directly as a worker calls them, against the SDK's own
// cost for a span, with the same TracerProvider, and metrics off (a no-op
// MeterProvider):
//   - impl=bare: tracer.Start and span.End, no attributes;
//   - impl=bare-attrs: the same with the five attributes the hooks set,
//     given to Start;
//   - impl=bare-setattrs: the same with the five attributes set once the
//     span has started, as the hooks set them: the SDK's cost for the
//     hooks' span;
//   - impl=hooks: TaskStarted and TaskFinished: the span, plus what the
//     hooks do around it.
//
// Compare the columns with benchstat -col /impl.
func BenchmarkSpan(b *testing.B) {
	tp, _ := benchProviders(b)
	tracer := tp.Tracer(ScopeName)
	ctx := context.Background()
	started, _ := benchInfo()
	b.Run("impl=bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, span := tracer.Start(ctx, "resize")
			span.End()
		}
	})
	b.Run("impl=bare-attrs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, span := tracer.Start(ctx, "resize", trace.WithAttributes(benchAttrs(started)...))
			span.End()
		}
	})
	b.Run("impl=bare-setattrs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, span := tracer.Start(ctx, "resize")
			span.SetAttributes(benchAttrs(started)...)
			span.End()
		}
	})
	b.Run("impl=hooks", func(b *testing.B) {
		benchmarkHooks(b, benchHooks(b, tp, metricnoop.NewMeterProvider()))
	})
}

// BenchmarkSpanMetrics is BenchmarkSpan with metrics on, to the SDK's
// MeterProvider:
//   - impl=bare: the span of impl=bare-setattrs, and the two histogram
//     Records the hooks make for a run, with the span's ctx;
//   - impl=hooks: TaskStarted and TaskFinished: the span, the metrics
//     and the runs kept for the stuck-work gauges.
//
// The SDK offers each measurement made with a sampled span in its ctx as
// an exemplar, in both.
func BenchmarkSpanMetrics(b *testing.B) {
	tp, mp := benchProviders(b)
	started, finished := benchInfo()
	b.Run("impl=bare", func(b *testing.B) {
		tracer, meter := tp.Tracer(ScopeName), mp.Meter("bench")
		wait, err := meter.Float64Histogram("wait", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(durationBounds...))
		require.NoError(b, err, "wait")
		run, err := meter.Float64Histogram("run", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(durationBounds...))
		require.NoError(b, err, "run")
		set := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String(poolKey, "bench"), attribute.String(taskKey, "resize")))}
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			ctx, span := tracer.Start(ctx, "resize")
			span.SetAttributes(benchAttrs(started)...)
			wait.Record(ctx, started.Waited.Seconds(), set...)
			run.Record(ctx, finished.Ran.Seconds(), set...)
			span.End()
		}
	})
	b.Run("impl=hooks", func(b *testing.B) {
		benchmarkHooks(b, benchHooks(b, tp, mp))
	})
}

// BenchmarkSpanOff is BenchmarkSpan with a no-op TracerProvider and a
// no-op MeterProvider: what the hooks cost when spans and metrics are
// off, against a no-op tracer's Start and End.
func BenchmarkSpanOff(b *testing.B) {
	tp := tracenoop.NewTracerProvider()
	b.Run("impl=bare", func(b *testing.B) {
		tracer := tp.Tracer(ScopeName)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			_, span := tracer.Start(ctx, "resize")
			span.End()
		}
	})
	b.Run("impl=hooks", func(b *testing.B) {
		benchmarkHooks(b, benchHooks(b, tp, metricnoop.NewMeterProvider()))
	})
}

// BenchmarkPool submits no-op tasks to a pool of 2 workers: without hooks,
// with NewHooks's spans, and with its spans and metrics (the providers of
// BenchmarkSpan). For information: what a task costs end to end. The
// queue holds at most 64 tasks, and Submit waits for room, so the loop
// goes at the pool's pace and the time measured is the tasks' (but the
// last 64 or so).
func BenchmarkPool(b *testing.B) {
	tp, mp := benchProviders(b)
	run := func(b *testing.B, h workerpool.Hooks) {
		p := workerpool.New(2, workerpool.WithHooks(h), workerpool.WithMaxWaiting(64, workerpool.Block))
		wg := new(sync.WaitGroup)
		defer p.StopWait()
		b.ReportAllocs()
		for b.Loop() {
			wg.Add(1)
			p.Submit(wg.Done)
		}
		wg.Wait()
	}
	b.Run("hooks=none", func(b *testing.B) { run(b, workerpool.Hooks{}) })
	b.Run("hooks=spans", func(b *testing.B) { run(b, benchHooks(b, tp, metricnoop.NewMeterProvider())) })
	b.Run("hooks=spans-metrics", func(b *testing.B) { run(b, benchHooks(b, tp, mp)) })
}
