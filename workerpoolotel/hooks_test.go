package workerpoolotel

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// histogram is what one histogram data point says, in short.
type histogram struct {
	Count   uint64
	Sum     float64
	Buckets map[float64]uint64 // count per bucket, by upper bound; +Inf for the last; empty buckets left out
}

// collectHistograms collects from reader and returns each duration
// histogram per pool name. It checks the scope, unit, bounds and kind as it
// goes.
func collectHistograms(t *testing.T, reader *sdkmetric.ManualReader) map[string]map[string]histogram {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(t.Context(), &rm), "Collect")
	pools := make(map[string]map[string]histogram)
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, ScopeName, sm.Scope.Name, "scope name")
		assert.Equal(t, Version, sm.Scope.Version, "scope version")
		for _, m := range sm.Metrics {
			assert.Contains(t, []string{"workerpool.task.wait.duration", "workerpool.task.run.duration"}, m.Name, "instrument")
			assert.Equal(t, "s", m.Unit, "unit of %s", m.Name)
			assert.NotEmpty(t, m.Description, "description of %s", m.Name)
			h, ok := m.Data.(metricdata.Histogram[float64])
			require.True(t, ok, "%s is a float64 histogram, not %T", m.Name, m.Data)
			for _, dp := range h.DataPoints {
				assert.Equal(t, durationBounds, dp.Bounds, "bounds of %s", m.Name)
				assert.Equal(t, 1, dp.Attributes.Len(), "attributes of %s: %v", m.Name, dp.Attributes)
				name, ok := dp.Attributes.Value("workerpool.name")
				require.True(t, ok, "%s has no workerpool.name", m.Name)
				got := histogram{Count: dp.Count, Sum: dp.Sum, Buckets: make(map[float64]uint64)}
				for i, n := range dp.BucketCounts {
					if n == 0 {
						continue
					}
					bound := math.Inf(1)
					if i < len(dp.Bounds) {
						bound = dp.Bounds[i]
					}
					got.Buckets[bound] = n
				}
				if pools[name.AsString()] == nil {
					pools[name.AsString()] = make(map[string]histogram)
				}
				pools[name.AsString()][m.Name] = got
			}
		}
	}
	return pools
}

// TestHooksRecordExactDurations runs, on one worker, a task that runs 2s
// and one that waits 2s behind it and runs 1s, and one that fails twice
// and is retried, 1s later each time, and then runs 0.5s: every run is
// recorded, with its wait since it was due.
func TestHooksRecordExactDurations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		defer func() { assert.NoError(t, mp.Shutdown(context.Background()), "MeterProvider.Shutdown") }()
		hooks, err := NewHooks("timed", WithMeterProvider(mp))
		require.NoError(t, err, "NewHooks")
		assert.Nil(t, hooks.TaskDropped, "TaskDropped")
		p := workerpool.New(1, workerpool.WithName("timed"), workerpool.WithHooks(hooks))
		defer p.Stop()

		p.Submit(func() { time.Sleep(2 * time.Second) })
		p.Submit(func() { time.Sleep(time.Second) })
		time.Sleep(3 * time.Second)
		synctest.Wait()
		assert.Equal(t, map[string]map[string]histogram{"timed": {
			"workerpool.task.wait.duration": {Count: 2, Sum: 2, Buckets: map[float64]uint64{0.000001: 1, 2.5: 1}},
			"workerpool.task.run.duration":  {Count: 2, Sum: 3, Buckets: map[float64]uint64{1: 1, 2.5: 1}},
		}}, collectHistograms(t, reader), "after two tasks")

		runs := 0
		retried := p.Go(t.Context(), func(context.Context) error {
			if runs++; runs < 3 {
				return errors.New("not yet")
			}
			time.Sleep(time.Second / 2)
			return nil
		}, workerpool.Retry(func(int, error) (time.Duration, bool) { return time.Second, true }))
		require.NoError(t, retried.Wait(), "the retried task")
		p.StopWait()
		assert.Equal(t, map[string]map[string]histogram{"timed": {
			"workerpool.task.wait.duration": {Count: 5, Sum: 2, Buckets: map[float64]uint64{0.000001: 4, 2.5: 1}},
			"workerpool.task.run.duration":  {Count: 5, Sum: 3.5, Buckets: map[float64]uint64{0.000001: 2, 0.5: 1, 1: 1, 2.5: 1}},
		}}, collectHistograms(t, reader), "after a task run three times")
	})
}

// TestHooksCombine shows how to add hooks of one's own to NewHooks's:
// call them from yours.
func TestHooksCombine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		defer func() { assert.NoError(t, mp.Shutdown(context.Background()), "MeterProvider.Shutdown") }()
		otelHooks, err := NewHooks("combined", WithMeterProvider(mp))
		require.NoError(t, err, "NewHooks")
		var mu sync.Mutex
		var mine []string
		hooks := otelHooks
		hooks.TaskFinished = func(waited, ran time.Duration, err error) {
			otelHooks.TaskFinished(waited, ran, err)
			mu.Lock()
			defer mu.Unlock()
			mine = append(mine, "finished: "+ran.String())
		}
		hooks.TaskDropped = func(reason error) {
			mu.Lock()
			defer mu.Unlock()
			mine = append(mine, "dropped: "+reason.Error())
		}
		p := workerpool.New(1, workerpool.WithName("combined"), workerpool.WithHooks(hooks))
		p.Submit(func() { time.Sleep(time.Second) })
		p.Submit(func() {})
		p.Stop()
		assert.Equal(t, []string{"dropped: workerpool: pool stopped", "finished: 1s"}, mine, "my hooks: Stop abandons the queued task at once, and waits for the running one")
		assert.Equal(t, map[string]map[string]histogram{"combined": {
			"workerpool.task.wait.duration": {Count: 1, Sum: 0, Buckets: map[float64]uint64{0.000001: 1}},
			"workerpool.task.run.duration":  {Count: 1, Sum: 1, Buckets: map[float64]uint64{1: 1}},
		}}, collectHistograms(t, reader), "NewHooks's histograms")
	})
}

func TestDurationBoundsAscend(t *testing.T) {
	assert.IsIncreasing(t, durationBounds, "bounds")
	assert.Equal(t, 1e-6, durationBounds[0], "first bound: 1µs")
	assert.Equal(t, 600.0, durationBounds[len(durationBounds)-1], "last bound: 10 minutes")
}

// TestOptionsDefaultToGlobalProviders makes the global providers record,
// and checks that every function uses them by default (and that a nil
// provider or a nil Option means the default). It leaves no-op providers
// as the globals, as good as the default for the tests and examples that
// use them without looking.
func TestOptionsDefaultToGlobalProviders(t *testing.T) {
	t.Cleanup(func() {
		otel.SetTracerProvider(tracenoop.NewTracerProvider())
		otel.SetMeterProvider(metricnoop.NewMeterProvider())
	})
	synctest.Test(t, func(t *testing.T) {
		tp, rec := newRecorded(t)
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		defer func() { assert.NoError(t, mp.Shutdown(context.Background()), "MeterProvider.Shutdown") }()
		otel.SetTracerProvider(tp)
		otel.SetMeterProvider(mp)

		hooks, err := NewHooks("global", WithMeterProvider(nil))
		require.NoError(t, err, "NewHooks")
		p := workerpool.New(1, workerpool.WithName("global"), workerpool.WithHooks(hooks))
		defer p.Stop()
		reg, err := RegisterStatus(p, nil)
		require.NoError(t, err, "RegisterStatus")
		defer func() { assert.NoError(t, reg.Unregister(), "Unregister") }()
		tr := NewTracing(p, WithTracerProvider(nil))
		require.NoError(t, tr.Go(t.Context(), "global", noop).Wait(), "Wait")
		p.StopWait()

		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(t.Context(), &rm), "Collect")
		var names []string
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				names = append(names, m.Name)
			}
		}
		want := []string{"workerpool.task.wait.duration", "workerpool.task.run.duration"}
		for name := range statusInstruments {
			want = append(want, name)
		}
		assert.ElementsMatch(t, want, names, "instruments of the global MeterProvider")
		require.Len(t, rec.Ended(), 1, "spans of the global TracerProvider")
		assert.Equal(t, "global", rec.Ended()[0].Name(), "span name")
	})
}

// benchmarkHooks submits no-op tasks to a pool of 2 workers with hooks h.
func benchmarkHooks(b *testing.B, h workerpool.Hooks) {
	p, wg := workerpool.New(2, workerpool.WithHooks(h)), new(sync.WaitGroup)
	defer p.StopWait()
	b.ReportAllocs()
	for b.Loop() {
		wg.Add(1)
		p.Submit(wg.Done)
	}
	wg.Wait()
}

// BenchmarkHooks measures what NewHooks's histograms, recorded by the
// SDK, add to a task: compare hooks=otel to hooks=none.
func BenchmarkHooks(b *testing.B) {
	b.Run("hooks=none", func(b *testing.B) {
		benchmarkHooks(b, workerpool.Hooks{})
	})
	b.Run("hooks=otel", func(b *testing.B) {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer func() { assert.NoError(b, mp.Shutdown(context.Background()), "MeterProvider.Shutdown") }()
		hooks, err := NewHooks("bench", WithMeterProvider(mp))
		require.NoError(b, err, "NewHooks")
		benchmarkHooks(b, hooks)
	})
}
