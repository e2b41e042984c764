package workerpoolotel

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// statusInstruments is what RegisterStatus promises: each instrument's
// unit, and whether it is a Counter (monotonic) or a Gauge.
var statusInstruments = map[string]struct {
	unit    string
	counter bool
}{
	"workerpool.workers":         {"{worker}", false},
	"workerpool.busy_workers":    {"{worker}", false},
	"workerpool.max_workers":     {"{worker}", false},
	"workerpool.waiting_tasks":   {"{task}", false},
	"workerpool.scheduled_tasks": {"{task}", false},
	"workerpool.active_keys":     {"{key}", false},
	"workerpool.size_reason":     {"{pool}", false},
	"workerpool.tasks_submitted": {"{task}", true},
	"workerpool.tasks_completed": {"{task}", true},
	"workerpool.tasks_panicked":  {"{task}", true},
	"workerpool.tasks_abandoned": {"{task}", true},
	"workerpool.tasks_canceled":  {"{task}", true},
	"workerpool.tasks_rejected":  {"{task}", true},
	"workerpool.tasks_dropped":   {"{task}", true},
	"workerpool.tasks_expired":   {"{task}", true},
	"workerpool.task_retries":    {"{task}", true},
}

// statusValues is what the instruments should report for s, as
// collectStatus writes it: workerpool.size_reason as
// workerpool.size_reason{reason=...}, and only under WithAdaptiveSize.
func statusValues(s workerpool.Status) map[string]int64 {
	values := map[string]int64{
		"workerpool.workers":         int64(s.Workers),
		"workerpool.busy_workers":    int64(s.Busy),
		"workerpool.max_workers":     int64(s.MaxWorkers),
		"workerpool.waiting_tasks":   int64(s.Waiting),
		"workerpool.scheduled_tasks": int64(s.Scheduled),
		"workerpool.active_keys":     int64(s.Keys),
		"workerpool.tasks_submitted": int64(s.Submitted),
		"workerpool.tasks_completed": int64(s.Completed),
		"workerpool.tasks_panicked":  int64(s.Panicked),
		"workerpool.tasks_abandoned": int64(s.Abandoned),
		"workerpool.tasks_canceled":  int64(s.Canceled),
		"workerpool.tasks_rejected":  int64(s.Rejected),
		"workerpool.tasks_dropped":   int64(s.Dropped),
		"workerpool.tasks_expired":   int64(s.Expired),
		"workerpool.task_retries":    int64(s.Retried),
	}
	if s.SizeReason != "" {
		values["workerpool.size_reason{reason="+s.SizeReason+"}"] = 1
	}
	return values
}

// collectStatus collects from reader and returns the value of each status
// instrument per pool name (its pool attribute); workerpool.size_reason's
// under its name and its reason attribute, as
// workerpool.size_reason{reason=start}. It checks the scope, and each
// instrument's unit, kind, description and attributes, as it goes.
func collectStatus(t *testing.T, reader *sdkmetric.ManualReader) map[string]map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(t.Context(), &rm), "Collect")
	pools := make(map[string]map[string]int64)
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, ScopeName, sm.Scope.Name, "scope name")
		assert.Equal(t, Version, sm.Scope.Version, "scope version")
		for _, m := range sm.Metrics {
			want, ok := statusInstruments[m.Name]
			require.True(t, ok, "unexpected instrument %q", m.Name)
			assert.Equal(t, want.unit, m.Unit, "unit of %s", m.Name)
			assert.NotEmpty(t, m.Description, "description of %s", m.Name)
			var points []metricdata.DataPoint[int64]
			if want.counter {
				sum, ok := m.Data.(metricdata.Sum[int64])
				require.True(t, ok, "%s is an int64 sum, not %T", m.Name, m.Data)
				assert.True(t, sum.IsMonotonic, "monotonic %s", m.Name)
				assert.Equal(t, metricdata.CumulativeTemporality, sum.Temporality, "temporality of %s", m.Name)
				points = sum.DataPoints
			} else {
				gauge, ok := m.Data.(metricdata.Gauge[int64])
				require.True(t, ok, "%s is an int64 gauge, not %T", m.Name, m.Data)
				points = gauge.DataPoints
			}
			for _, dp := range points {
				key := m.Name
				if m.Name == "workerpool.size_reason" {
					assert.Equal(t, 2, dp.Attributes.Len(), "attributes of %s: %v", m.Name, dp.Attributes)
					reason, ok := dp.Attributes.Value("reason")
					require.True(t, ok, "%s has no reason", m.Name)
					key += "{reason=" + reason.AsString() + "}"
				} else {
					assert.Equal(t, 1, dp.Attributes.Len(), "attributes of %s: %v", m.Name, dp.Attributes)
				}
				name, ok := dp.Attributes.Value("pool")
				require.True(t, ok, "%s has no pool", m.Name)
				if pools[name.AsString()] == nil {
					pools[name.AsString()] = make(map[string]int64)
				}
				pools[name.AsString()][key] = dp.Value
			}
		}
	}
	return pools
}

// TestRegisterStatusReportsEveryField runs two pools through a workload
// that moves every Status field, and reads every instrument through the
// SDK: while the pools run, after they stopped, and after each
// Unregister. The counts are all different, so that two swapped
// instruments would fail.
func TestRegisterStatusReportsEveryField(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		defer func() { assert.NoError(t, mp.Shutdown(context.Background()), "MeterProvider.Shutdown") }()
		ctx := t.Context()

		// "drop": one worker and room for one: a second waiting task drops the first.
		q := workerpool.New(1, workerpool.WithMaxWaiting(1, workerpool.DropOldest))
		defer q.Stop()
		regQ, err := RegisterStatus(q, "drop", WithMeterProvider(mp))
		require.NoError(t, err, "RegisterStatus(drop)")
		release := make(chan struct{})
		q.Submit(func() { <-release })
		synctest.Wait()
		first := q.Go(ctx, noop)
		second := q.Go(ctx, noop)
		assert.ErrorIs(t, first.Wait(), workerpool.ErrQueueFull, "the first waiting task, dropped")
		close(release)
		assert.NoError(t, second.Wait(), "the task that dropped it")
		q.StopWait()
		dropped := workerpool.Status{Stopped: true, MaxWorkers: 1, Submitted: 3, Completed: 2, Dropped: 1}
		require.Equal(t, dropped, q.Status(), "status of drop")

		// "reject": four slots, three workers kept, room for six.
		p := workerpool.New(4,
			workerpool.WithMinWorkers(3),
			workerpool.WithIdleTimeout(-1),
			workerpool.WithHooks(workerpool.Hooks{Panic: func(any) {}}),
			workerpool.WithMaxWaiting(6, workerpool.Reject),
			workerpool.WithQueueTimeout(time.Minute))
		defer p.Stop()
		regP, err := RegisterStatus(p, "reject", WithMeterProvider(mp))
		require.NoError(t, err, "RegisterStatus(reject)")

		// Completed 5: three plain tasks, a panic the handler recovers,
		// and a task that fails twice (Retried 2) and then succeeds; one
		// at a time, each once the workers are idle, so that the three
		// workers kept do them all.
		synctest.Wait()
		for range 3 {
			p.Submit(func() {})
			synctest.Wait()
		}
		p.Submit(func() { panic("boom") })
		synctest.Wait()
		runs := 0
		retried := p.Go(ctx, func(context.Context) error {
			if runs++; runs < 3 {
				return errors.New("not yet")
			}
			return nil
		}, workerpool.TaskOption{Retry: func(int, error) (time.Duration, bool) { return time.Second, true }})
		require.NoError(t, retried.Wait(), "the retried task")
		synctest.Wait()

		// Two tasks hold two workers; a task of weight 3 waits for three
		// free slots (Waiting 1), and five wait for their delay
		// (Scheduled 5): the queue is full, so a try (DoContext with a ctx
		// done) fails (Rejected 3).
		// The two held tasks share a key, and the delayed ones have a key
		// each (Keys 6).
		hold := make(chan struct{})
		for range 2 {
			require.NoError(t, p.DoContext(context.Background(), func() { <-hold }, workerpool.TaskOption{Key: "held"}), "Do")
		}
		heavy := p.Go(ctx, noop, workerpool.TaskOption{Weight: 3})
		var delayed []*workerpool.Task
		var cancelDelayed []context.CancelFunc
		for i := range 5 {
			delayedCtx, cancel := context.WithCancel(ctx)
			cancelDelayed = append(cancelDelayed, cancel)
			delayed = append(delayed, p.Go(delayedCtx, noop, workerpool.TaskOption{Delay: time.Hour, Key: fmt.Sprint("delayed-", i)}))
		}
		synctest.Wait()
		done, cancel := context.WithCancel(ctx)
		cancel()
		for range 3 {
			assert.ErrorIs(t, p.DoContext(done, func() {}), workerpool.ErrQueueFull, "a try with a full queue")
		}
		running := workerpool.Status{MaxWorkers: 4, Workers: 3, Busy: 2, Waiting: 1, Scheduled: 5, Keys: 6,
			Submitted: 13, Completed: 5, Panicked: 1, Retried: 2, Rejected: 3}
		require.Equal(t, running, p.Status(), "status of reject while it runs")
		assert.Equal(t, map[string]map[string]int64{"drop": statusValues(dropped), "reject": statusValues(running)},
			collectStatus(t, reader), "instruments while reject runs")

		// Canceled 4: four of the delayed tasks. Expired 5: the heavy task
		// and four behind it, which may not overtake it.
		for i, task := range delayed[:4] {
			cancelDelayed[i]()
			assert.ErrorIs(t, task.Wait(), context.Canceled, "a canceled delayed task")
		}
		behind := []*workerpool.Task{heavy}
		for range 4 {
			behind = append(behind, p.Go(ctx, noop))
		}
		time.Sleep(time.Minute + time.Second)
		for _, task := range behind {
			assert.ErrorIs(t, task.Wait(), context.DeadlineExceeded, "a task that waited a minute")
		}

		// Completed 7: the two held tasks end. Abandoned 6: the delayed
		// task left and five more.
		close(hold)
		for range 5 {
			p.Go(ctx, noop, workerpool.TaskOption{Delay: time.Hour})
		}
		p.Stop()
		stopped := workerpool.Status{Stopped: true, MaxWorkers: 4,
			Submitted: 22, Completed: 7, Panicked: 1, Abandoned: 6, Canceled: 4, Rejected: 3, Expired: 5, Retried: 2}
		require.Equal(t, stopped, p.Status(), "status of reject once stopped")
		assert.Equal(t, map[string]map[string]int64{"drop": statusValues(dropped), "reject": statusValues(stopped)},
			collectStatus(t, reader), "instruments once both stopped")

		require.NoError(t, regP.Unregister(), "Unregister(reject)")
		assert.Equal(t, map[string]map[string]int64{"drop": statusValues(dropped)},
			collectStatus(t, reader), "instruments after Unregister(reject)")
		require.NoError(t, regQ.Unregister(), "Unregister(drop)")
		assert.Empty(t, collectStatus(t, reader), "instruments after both Unregister")
	})
}

// TestRegisterStatusSizeReason reads a pool made with WithAdaptiveSize
// and one without: the first reports workerpool.size_reason, 1 with
// reason "start" from New until its first decision, and the size it
// started at, New's maxWorkers, as workerpool.max_workers; the second
// reports no size_reason at all. After a stop the first reports its last
// decision, until Unregister.
func TestRegisterStatusSizeReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mp, reader := newMetered(t)
		adaptive := workerpool.New(3, workerpool.WithAdaptiveSize(1, 8))
		defer adaptive.Stop()
		fixed := workerpool.New(2)
		defer fixed.Stop()
		regA, err := RegisterStatus(adaptive, "adaptive", WithMeterProvider(mp))
		require.NoError(t, err, "RegisterStatus(adaptive)")
		regF, err := RegisterStatus(fixed, "fixed", WithMeterProvider(mp))
		require.NoError(t, err, "RegisterStatus(fixed)")

		// No time passes on the bubble's clock between New and the
		// collection: the pool has made no decision yet.
		got := collectStatus(t, reader)
		assert.Equal(t, int64(1), got["adaptive"]["workerpool.size_reason{reason=start}"], "size_reason of adaptive after New")
		assert.Equal(t, int64(3), got["adaptive"]["workerpool.max_workers"], "max_workers of adaptive after New")
		assert.Equal(t, int64(2), got["fixed"]["workerpool.max_workers"], "max_workers of fixed")
		assert.Equal(t, map[string]map[string]int64{"adaptive": statusValues(adaptive.Status()), "fixed": statusValues(fixed.Status())},
			got, "instruments after New")

		adaptive.StopWait()
		fixed.StopWait()
		require.NotEmpty(t, adaptive.Status().SizeReason, "the adaptive pool's SizeReason once stopped")
		assert.Equal(t, map[string]map[string]int64{"adaptive": statusValues(adaptive.Status()), "fixed": statusValues(fixed.Status())},
			collectStatus(t, reader), "instruments once stopped")
		require.NoError(t, regA.Unregister(), "Unregister(adaptive)")
		assert.Equal(t, map[string]map[string]int64{"fixed": statusValues(fixed.Status())},
			collectStatus(t, reader), "instruments after Unregister(adaptive)")
		require.NoError(t, regF.Unregister(), "Unregister(fixed)")
	})
}

func TestRegisterStatusPanicsOnNilPool(t *testing.T) {
	assert.PanicsWithValue(t, "workerpoolotel: RegisterStatus called with a nil pool", func() {
		_, _ = RegisterStatus(nil, "nil")
	}, "RegisterStatus(nil)")
}
