package workerpoolotel

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// newMeasured returns hooks, for the pool named pool, that measure with mp
// and trace nothing.
func newMeasured(t *testing.T, mp metric.MeterProvider, pool string, opts ...Option) workerpool.Hooks {
	t.Helper()
	hooks, err := NewHooks(pool, append([]Option{WithMeterProvider(mp), WithTracerProvider(tracenoop.NewTracerProvider())}, opts...)...)
	require.NoError(t, err, "NewHooks")
	return hooks
}

// TestHooksRecordExactMetrics runs, on one worker, tasks of three kinds
// that wait, run, fail, panic and are retried for exact times: each run
// is recorded under its pool and label, each failure under its outcome,
// each retry as a rerun.
func TestHooksRecordExactMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mp, reader := newMetered(t)
		hooks := newMeasured(t, mp, "timed")
		assert.Nil(t, hooks.TaskDropped, "TaskDropped")
		p := workerpool.New(1, workerpool.WithHooks(hooks))
		defer p.Stop()
		ctx := t.Context()
		errFail := errors.New("no luck")
		resize := workerpool.TaskOption{Label: "resize"}

		// No label: waits 0s, runs 2s. resize: waits 2s, runs 1s; waits
		// 3s, runs 0.5s and fails.
		p.Submit(func() { time.Sleep(2 * time.Second) })
		require.NoError(t, p.DoContext(context.Background(), func() { time.Sleep(time.Second) }, resize), "Do")
		failed := p.Go(ctx, func(context.Context) error {
			time.Sleep(time.Second / 2)
			return errFail
		}, resize)
		require.ErrorIs(t, failed.Wait(), errFail, "the failed task")
		assert.Equal(t, hookMetrics{
			Histograms: map[point]histogram{
				"workerpool.task_wait{pool=timed,task=none}":   {Count: 1, Sum: 0, Buckets: map[float64]uint64{1e-8: 1}},
				"workerpool.task_wait{pool=timed,task=resize}": {Count: 2, Sum: 5, Buckets: map[float64]uint64{10: 2}},
				"workerpool.task_run{pool=timed,task=none}":    {Count: 1, Sum: 2, Buckets: map[float64]uint64{10: 1}},
				"workerpool.task_run{pool=timed,task=resize}":  {Count: 2, Sum: 1.5, Buckets: map[float64]uint64{1: 2}},
			},
			Counters: map[point]int64{ // every series's counters start at 0, as workerpoolprom's
				"workerpool.task_failures{outcome=error,pool=timed,task=resize}": 1,
				"workerpool.task_failures{outcome=error,pool=timed,task=none}":   0,
				"workerpool.task_failures{outcome=panic,pool=timed,task=none}":   0,
				"workerpool.task_failures{outcome=panic,pool=timed,task=resize}": 0,
				"workerpool.task_reruns{pool=timed,task=none}":                   0,
				"workerpool.task_reruns{pool=timed,task=resize}":                 0,
			},
			Gauges: map[point]float64{
				"workerpool.unfinished_work{pool=timed}":           0,
				"workerpool.longest_running_processor{pool=timed}": 0,
			},
		}, collectHooks(t, reader), "after three tasks")

		// fetch: fails twice at once, is retried 1s later each time, and
		// then runs 0.25s; then one panics, one calls runtime.Goexit.
		fetch := workerpool.TaskOption{Label: "fetch"}
		runs := 0
		retried := p.Go(ctx, func(context.Context) error {
			if runs++; runs < 3 {
				return errFail
			}
			time.Sleep(time.Second / 4)
			return nil
		}, fetch, workerpool.TaskOption{Retry: func(int, error) (time.Duration, bool) { return time.Second, true }})
		require.NoError(t, retried.Wait(), "the retried task")
		var pe *workerpool.PanicError
		require.ErrorAs(t, p.Go(ctx, func(context.Context) error { panic("boom") }, fetch).Wait(), &pe, "the task that panics")
		require.ErrorIs(t, p.Go(ctx, func(context.Context) error { runtime.Goexit(); return nil }, fetch).Wait(), workerpool.ErrGoexit, "the task that exits")
		p.StopWait()
		assert.Equal(t, hookMetrics{
			Histograms: map[point]histogram{
				"workerpool.task_wait{pool=timed,task=none}":   {Count: 1, Sum: 0, Buckets: map[float64]uint64{1e-8: 1}},
				"workerpool.task_wait{pool=timed,task=resize}": {Count: 2, Sum: 5, Buckets: map[float64]uint64{10: 2}},
				"workerpool.task_wait{pool=timed,task=fetch}":  {Count: 5, Sum: 0, Buckets: map[float64]uint64{1e-8: 5}},
				"workerpool.task_run{pool=timed,task=none}":    {Count: 1, Sum: 2, Buckets: map[float64]uint64{10: 1}},
				"workerpool.task_run{pool=timed,task=resize}":  {Count: 2, Sum: 1.5, Buckets: map[float64]uint64{1: 2}},
				"workerpool.task_run{pool=timed,task=fetch}":   {Count: 5, Sum: 0.25, Buckets: map[float64]uint64{1e-8: 4, 1: 1}},
			},
			Counters: map[point]int64{
				"workerpool.task_failures{outcome=error,pool=timed,task=resize}": 1,
				"workerpool.task_failures{outcome=error,pool=timed,task=none}":   0,
				"workerpool.task_failures{outcome=panic,pool=timed,task=none}":   0,
				"workerpool.task_failures{outcome=panic,pool=timed,task=resize}": 0,
				"workerpool.task_reruns{pool=timed,task=none}":                   0,
				"workerpool.task_reruns{pool=timed,task=resize}":                 0,
				"workerpool.task_failures{outcome=error,pool=timed,task=fetch}":  3,
				"workerpool.task_failures{outcome=panic,pool=timed,task=fetch}":  1,
				"workerpool.task_reruns{pool=timed,task=fetch}":                  2,
			},
			Gauges: map[point]float64{
				"workerpool.unfinished_work{pool=timed}":           0,
				"workerpool.longest_running_processor{pool=timed}": 0,
			},
		}, collectHooks(t, reader), "after a task run three times, a panic and a Goexit")
	})
}

// TestHooksReportStuckWork holds two runs, started 1s apart, for 3s and
// 2s: the gauges report the work under way and the longest run, and 0
// once both are done. The runs' start is the span's with the SDK's
// tracer, the clock's with a no-op one.
func TestHooksReportStuckWork(t *testing.T) {
	for _, tc := range []struct {
		name string
		tp   func(t *testing.T) trace.TracerProvider
	}{
		{"tracer=noop", func(*testing.T) trace.TracerProvider { return tracenoop.NewTracerProvider() }},
		{"tracer=sdk", func(t *testing.T) trace.TracerProvider { tp, _ := newRecorded(t); return tp }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mp, reader := newMetered(t)
				hooks, err := NewHooks("stuck", WithMeterProvider(mp), WithTracerProvider(tc.tp(t)))
				require.NoError(t, err, "NewHooks")
				p := workerpool.New(2, workerpool.WithHooks(hooks))
				defer p.Stop()
				release := make(chan struct{})

				p.Submit(func() { <-release })
				time.Sleep(time.Second)
				p.Submit(func() { <-release })
				time.Sleep(2 * time.Second)
				synctest.Wait()
				assert.Equal(t, map[point]float64{
					"workerpool.unfinished_work{pool=stuck}":           5,
					"workerpool.longest_running_processor{pool=stuck}": 3,
				}, collectHooks(t, reader).Gauges, "with two runs under way for 3s and 2s")
				close(release)
				p.StopWait()
				assert.Equal(t, map[point]float64{
					"workerpool.unfinished_work{pool=stuck}":           0,
					"workerpool.longest_running_processor{pool=stuck}": 0,
				}, collectHooks(t, reader).Gauges, "once both are done")
			})
		})
	}
}

// TestHooksMeasureOnlyWhatTheMeterRecords drops the hooks' four
// synchronous instruments with a View: the runs are then neither measured
// nor kept for the stuck-work gauges, which report no pool, while the
// spans go on.
func TestHooksMeasureOnlyWhatTheMeterRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader := sdkmetric.NewManualReader()
		drop := sdkmetric.NewView(sdkmetric.Instrument{Name: "workerpool.task_*"}, sdkmetric.Stream{Aggregation: sdkmetric.AggregationDrop{}})
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithView(drop))
		defer func() { assert.NoError(t, mp.Shutdown(context.Background()), "MeterProvider.Shutdown") }()
		tp, rec := newRecorded(t)
		hooks, err := NewHooks("dropped", WithMeterProvider(mp), WithTracerProvider(tp))
		require.NoError(t, err, "NewHooks")
		p := workerpool.New(1, workerpool.WithHooks(hooks))
		defer p.Stop()

		release := make(chan struct{})
		p.Submit(func() { <-release })
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Empty(t, collectHooks(t, reader), "metrics while a run is under way")
		close(release)
		p.StopWait()
		assert.Empty(t, collectHooks(t, reader), "metrics once it is done")
		assert.Len(t, rec.Ended(), 1, "spans")
	})
}

// TestHooksCapLabels gives two pools the hooks of their own, each capped
// at two labels on one MeterProvider: the first two labels each pool's
// hooks see keep their value; later ones count as "other", tasks without
// a label as "none". Spans keep each task's own label.
func TestHooksCapLabels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mp, reader := newMetered(t)
		tp, rec := newRecorded(t)
		hooks1, err := NewHooks("p1", WithMeterProvider(mp), WithTracerProvider(tp), WithMaxLabels(2))
		require.NoError(t, err, "NewHooks(p1)")
		hooks2, err := NewHooks("p2", WithMeterProvider(mp), WithTracerProvider(tp), WithMaxLabels(2))
		require.NoError(t, err, "NewHooks(p2)")
		p1 := workerpool.New(1, workerpool.WithHooks(hooks1))
		defer p1.Stop()
		p2 := workerpool.New(1, workerpool.WithHooks(hooks2))
		defer p2.Stop()

		for _, label := range []string{"a", "b", ""} {
			require.NoError(t, p1.Go(context.Background(), noop, workerpool.TaskOption{Label: label}).Wait(), "Go on p1")
		}
		for _, label := range []string{"b", "c", "d", "c", "e", ""} {
			require.NoError(t, p2.Go(context.Background(), noop, workerpool.TaskOption{Label: label}).Wait(), "Go on p2")
		}
		runs := make(map[point]uint64)
		for name, h := range collectHooks(t, reader).Histograms {
			runs[name] = h.Count
		}
		assert.Equal(t, map[point]uint64{
			"workerpool.task_wait{pool=p1,task=a}":     1,
			"workerpool.task_wait{pool=p1,task=b}":     1,
			"workerpool.task_wait{pool=p1,task=none}":  1,
			"workerpool.task_wait{pool=p2,task=b}":     1,
			"workerpool.task_wait{pool=p2,task=c}":     2,
			"workerpool.task_wait{pool=p2,task=other}": 2,
			"workerpool.task_wait{pool=p2,task=none}":  1,
			"workerpool.task_run{pool=p1,task=a}":      1,
			"workerpool.task_run{pool=p1,task=b}":      1,
			"workerpool.task_run{pool=p1,task=none}":   1,
			"workerpool.task_run{pool=p2,task=b}":      1,
			"workerpool.task_run{pool=p2,task=c}":      2,
			"workerpool.task_run{pool=p2,task=other}":  2,
			"workerpool.task_run{pool=p2,task=none}":   1,
		}, runs, "runs per pool and task")
		var names []string
		for _, s := range rec.Ended() {
			names = append(names, s.Name())
		}
		assert.Equal(t, []string{"a", "b", defaultSpanName, "b", "c", "d", "c", "e", defaultSpanName}, names, "span names")
	})
}

func TestMaxLabelsZeroAndNegative(t *testing.T) {
	for _, n := range []int{0, -1} {
		c := newConfig([]Option{WithMaxLabels(n)})
		assert.Equal(t, 0, c.maxLabels, "WithMaxLabels(%d)", n)
	}
	assert.Equal(t, DefaultMaxLabels, newConfig(nil).maxLabels, "default")
	assert.Equal(t, 100, DefaultMaxLabels, "DefaultMaxLabels")
}

// TestHooksCombine adds hooks of one's own to NewHooks's, as the package
// documentation shows: a WithHooks after NewHooks's replaces its
// TaskStarted and TaskFinished with mine, which call NewHooks's, and adds
// a TaskDropped; my TaskStarted puts a value in the ctx that NewHooks's
// returned, and the task and TaskFinished see both it and the run's span.
func TestHooksCombine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mp, reader := newMetered(t)
		tp, rec := newRecorded(t)
		otelHooks, err := NewHooks("combined", WithMeterProvider(mp), WithTracerProvider(tp))
		require.NoError(t, err, "NewHooks")
		type mine struct{}
		var mu sync.Mutex
		var log []string
		mineHooks := workerpool.Hooks{
			TaskStarted: func(ctx context.Context, t workerpool.TaskInfo) context.Context {
				ctx = otelHooks.TaskStarted(ctx, t)
				return context.WithValue(ctx, mine{}, t.Label)
			},
			TaskFinished: func(ctx context.Context, t workerpool.TaskInfo) {
				otelHooks.TaskFinished(ctx, t)
				mu.Lock()
				defer mu.Unlock()
				log = append(log, "finished "+ctx.Value(mine{}).(string)+": "+t.Ran.String())
			},
			TaskDropped: func(t workerpool.TaskInfo) {
				mu.Lock()
				defer mu.Unlock()
				log = append(log, "dropped "+t.Label+": "+t.Err.Error())
			},
		}
		p := workerpool.New(1, workerpool.WithHooks(otelHooks), workerpool.WithHooks(mineHooks))
		var inTask trace.SpanContext
		p.Go(t.Context(), func(ctx context.Context) error {
			inTask = trace.SpanContextFromContext(ctx)
			assert.Equal(t, "first", ctx.Value(mine{}), "my value in the task's ctx")
			time.Sleep(time.Second)
			return nil
		}, workerpool.TaskOption{Label: "first"})
		synctest.Wait() // first runs
		require.NoError(t, p.DoContext(context.Background(), func() {}, workerpool.TaskOption{Label: "second"}), "Do")
		p.Stop()

		assert.Equal(t, []string{"dropped second: workerpool: pool stopped", "finished first: 1s"}, log,
			"my hooks: Stop abandons the queued task at once, and waits for the running one")
		require.Len(t, rec.Ended(), 1, "spans")
		assert.Equal(t, rec.Ended()[0].SpanContext(), inTask, "the span in the task's ctx")
		assert.Equal(t, histogram{Count: 1, Sum: 1, Buckets: map[float64]uint64{1: 1}},
			collectHooks(t, reader).Histograms["workerpool.task_run{pool=combined,task=first}"], "the run histogram")
	})
}

// TestHooksFinishWithoutStart calls TaskFinished with a ctx its
// TaskStarted did not return (as a combination that leaves it out would):
// the run is measured, and there is no span to end.
func TestHooksFinishWithoutStart(t *testing.T) {
	mp, reader := newMetered(t)
	tp, rec := newRecorded(t)
	hooks, err := NewHooks("direct", WithMeterProvider(mp), WithTracerProvider(tp))
	require.NoError(t, err, "NewHooks")
	hooks.TaskFinished(t.Context(), workerpool.TaskInfo{Label: "x", Attempt: 1, Ran: time.Second, Err: errors.New("no luck")})
	got := collectHooks(t, reader)
	assert.Equal(t, map[point]histogram{
		"workerpool.task_run{pool=direct,task=x}": {Count: 1, Sum: 1, Buckets: map[float64]uint64{1: 1}},
	}, got.Histograms, "histograms")
	assert.Equal(t, map[point]int64{
		"workerpool.task_failures{outcome=error,pool=direct,task=x}": 1,
		"workerpool.task_failures{outcome=panic,pool=direct,task=x}": 0,
		"workerpool.task_reruns{pool=direct,task=x}":                 0,
	}, got.Counters, "counters")
	assert.Empty(t, rec.Started(), "spans")
}

func TestDurationBounds(t *testing.T) {
	assert.Equal(t, []float64{1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10, 100, 1000}, durationBounds,
		"the buckets of workerpoolprom's histograms")
}

// TestOptionsDefaultToGlobalProviders makes the global providers record,
// and checks that both functions use them by default (and that a nil
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
		mp, reader := newMetered(t)
		otel.SetTracerProvider(tp)
		otel.SetMeterProvider(mp)

		hooks, err := NewHooks("global", WithMeterProvider(nil), WithTracerProvider(nil), nil)
		require.NoError(t, err, "NewHooks")
		p := workerpool.New(1, workerpool.WithHooks(hooks))
		defer p.Stop()
		reg, err := RegisterStatus(p, "global", nil)
		require.NoError(t, err, "RegisterStatus")
		defer func() { assert.NoError(t, reg.Unregister(), "Unregister") }()
		require.NoError(t, p.Go(t.Context(), noop, workerpool.TaskOption{Label: "global"}).Wait(), "Wait")
		p.StopWait()

		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(t.Context(), &rm), "Collect")
		var names []string
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				names = append(names, m.Name)
			}
		}
		want := []string{waitName, runName, unfinishedName, longestName, failuresName, rerunsName} // the counters at 0
		for name := range statusInstruments {
			if name != "workerpool.size_reason" { // no data point, so not collected: p has no WithAdaptiveSize
				want = append(want, name)
			}
		}
		assert.ElementsMatch(t, want, names, "instruments of the global MeterProvider")
		require.Len(t, rec.Ended(), 1, "spans of the global TracerProvider")
		assert.Equal(t, "global", rec.Ended()[0].Name(), "span name")
	})
}

// TestSeriesOfEqualStrings looks series up by strings of equal bytes in
// different places, as labels built at run time are: each kind of task
// has one series, whichever string names it, and a label past the cap is
// never taken for another.
func TestSeriesOfEqualStrings(t *testing.T) {
	s := newSeriesSet(1)
	a := s.of("pool", "a")
	require.Same(t, a, s.of("pool", "a"), "a again")
	require.Same(t, a, s.of(strings.Clone("pool"), strings.Clone("a")), "a, from strings elsewhere")
	other := s.of("pool", "b")
	assert.NotSame(t, a, other, "b, past the cap")
	assert.Same(t, other, s.of("pool", "c"), "c, past the cap")
	assert.Same(t, other, s.of("pool", "b"), "b again")
	assert.Same(t, a, s.of("pool", "a"), "a after them")
	none := s.of("pool", "")
	assert.NotSame(t, other, none, "no label")
	assert.NotSame(t, a, s.of("other pool", "a"), "a in another pool")
}

// A run's ctx given to TaskFinished twice ends it once: the runs still
// under way stay in the stuck-work gauges, and the run is measured once.
func TestHooksFinishTwiceEndsTheRunOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mp, reader := newMetered(t)
		hooks := newMeasured(t, mp, "p")
		info := workerpool.TaskInfo{Label: "x", Attempt: 1}
		a := hooks.TaskStarted(context.Background(), info)
		hooks.TaskStarted(context.Background(), info) // b, still running
		time.Sleep(time.Second)
		info.Ran = time.Second
		hooks.TaskFinished(a, info)
		hooks.TaskFinished(a, info) // a again
		got := collectHooks(t, reader)
		assert.Equal(t, map[point]float64{
			"workerpool.unfinished_work{pool=p}":           1,
			"workerpool.longest_running_processor{pool=p}": 1,
		}, got.Gauges, "b still runs")
		assert.Equal(t, uint64(1), got.Histograms["workerpool.task_run{pool=p,task=x}"].Count, "a measured once")
	})
}
