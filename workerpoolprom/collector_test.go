package workerpoolprom_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/workerpoolprom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var counterNames = []string{
	"workerpool_tasks_submitted_total",
	"workerpool_tasks_completed_total",
	"workerpool_tasks_panicked_total",
	"workerpool_tasks_abandoned_total",
	"workerpool_tasks_canceled_total",
	"workerpool_tasks_rejected_total",
	"workerpool_tasks_dropped_total",
	"workerpool_tasks_expired_total",
	"workerpool_task_retries_total",
}

var gaugeNames = []string{
	"workerpool_workers",
	"workerpool_busy_workers",
	"workerpool_max_workers",
	"workerpool_waiting_tasks",
	"workerpool_scheduled_tasks",
	"workerpool_active_keys",
}

// reasonName is the gauge of Status.SizeReason, which only a pool made
// with WithAdaptiveSize has; every pool has the gauges of gaugeNames.
const reasonName = "workerpool_size_reason"

// The counters of two pools after a workload on the fake clock that gives
// every counter a known value. Pool "jobs" rejects when its queue is full,
// pool "drop" drops the oldest.
func TestCollectorCountsEveryOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		jobs := workerpool.New(1,
			workerpool.WithMaxWaiting(1, workerpool.Reject),
			workerpool.WithHooks(workerpool.Hooks{Panic: func(any) {}}),
			workerpool.WithQueueTimeout(5*time.Second),
		)
		defer jobs.Stop()
		drop := workerpool.New(1, workerpool.WithMaxWaiting(1, workerpool.DropOldest))
		defer drop.Stop()
		reg := prometheus.NewRegistry()
		require.NoError(t, reg.Register(workerpoolprom.NewCollector(jobs, "jobs")), "register jobs")
		require.NoError(t, reg.Register(workerpoolprom.NewCollector(drop, "drop")), "register drop")

		// jobs, t=0s: one task runs for 1s, a panicking one fills the queue,
		// and a try (DoContext with a ctx already done) finds it full.
		jobs.Submit(func() { time.Sleep(time.Second) })
		synctest.Wait()
		jobs.Submit(func() { panic("boom") })
		synctest.Wait()
		done, cancel := context.WithCancel(t.Context())
		cancel()
		assert.ErrorIs(t, jobs.DoContext(done, func() {}), workerpool.ErrQueueFull, "a try with a full queue")

		// t=1s: the panicking task runs, then a task that fails once runs and
		// is retried 1s later.
		time.Sleep(time.Second)
		synctest.Wait()
		failures := 0
		retried := jobs.Go(t.Context(), func(context.Context) error {
			if failures++; failures == 1 {
				return errors.New("first run fails")
			}
			return nil
		}, workerpool.TaskOption{Retry: func(int, error) (time.Duration, bool) { return time.Second, true }})
		time.Sleep(time.Second)
		require.NoError(t, retried.Wait(), "retried task")

		// t=2s: a task runs for 10s; a Task queued behind it is canceled, and
		// a plain task queued behind it expires at t=7s.
		jobs.Submit(func() { time.Sleep(10 * time.Second) })
		synctest.Wait()
		canceledCtx, cancelTask := context.WithCancel(t.Context())
		canceled := jobs.Go(canceledCtx, func(context.Context) error { return nil })
		synctest.Wait()
		cancelTask()
		require.ErrorIs(t, canceled.Wait(), context.Canceled, "canceled task")
		jobs.Submit(func() {})
		jobs.StopWait() // t=12s

		// drop: one task runs for 1s, a second is dropped for a third, and
		// Stop abandons the third.
		drop.Submit(func() { time.Sleep(time.Second) })
		synctest.Wait()
		drop.Submit(func() {})
		drop.Submit(func() {})
		synctest.Wait()
		drop.Stop()

		expected := `
# HELP workerpool_task_retries_total Runs of tasks after their first, under Retry; a retried task counts once as submitted.
# TYPE workerpool_task_retries_total counter
workerpool_task_retries_total{pool="drop"} 0
workerpool_task_retries_total{pool="jobs"} 1
# HELP workerpool_tasks_abandoned_total Accepted tasks that never started because the pool stopped first (Stop, or a Shutdown that gave up).
# TYPE workerpool_tasks_abandoned_total counter
workerpool_tasks_abandoned_total{pool="drop"} 1
workerpool_tasks_abandoned_total{pool="jobs"} 0
# HELP workerpool_tasks_canceled_total Tasks, Futures and group tasks that never started because their context ended.
# TYPE workerpool_tasks_canceled_total counter
workerpool_tasks_canceled_total{pool="drop"} 0
workerpool_tasks_canceled_total{pool="jobs"} 1
# HELP workerpool_tasks_completed_total Accepted tasks whose func was called and ended for good (returned, panicked or called runtime.Goexit) and was not retried.
# TYPE workerpool_tasks_completed_total counter
workerpool_tasks_completed_total{pool="drop"} 1
workerpool_tasks_completed_total{pool="jobs"} 4
# HELP workerpool_tasks_dropped_total Accepted tasks dropped from a full queue to make room for newer ones (DropOldest), or heavier than the pool after a Resize.
# TYPE workerpool_tasks_dropped_total counter
workerpool_tasks_dropped_total{pool="drop"} 1
workerpool_tasks_dropped_total{pool="jobs"} 0
# HELP workerpool_tasks_expired_total Accepted tasks that waited in the queue longer than WithQueueTimeout and never ran.
# TYPE workerpool_tasks_expired_total counter
workerpool_tasks_expired_total{pool="drop"} 0
workerpool_tasks_expired_total{pool="jobs"} 1
# HELP workerpool_tasks_panicked_total Completed tasks whose last run panicked, recovered by the Panic hook or into a *PanicError; earlier runs of a retried task that panicked are not counted.
# TYPE workerpool_tasks_panicked_total counter
workerpool_tasks_panicked_total{pool="drop"} 0
workerpool_tasks_panicked_total{pool="jobs"} 1
# HELP workerpool_tasks_rejected_total Tasks refused because the queue was full or they were heavier than the pool; never accepted, so not counted as submitted.
# TYPE workerpool_tasks_rejected_total counter
workerpool_tasks_rejected_total{pool="drop"} 0
workerpool_tasks_rejected_total{pool="jobs"} 1
# HELP workerpool_tasks_submitted_total Tasks the pool accepted: plain tasks, DoWait calls, Tasks, Futures and group tasks. Each ends completed, abandoned, canceled, dropped or expired.
# TYPE workerpool_tasks_submitted_total counter
workerpool_tasks_submitted_total{pool="drop"} 3
workerpool_tasks_submitted_total{pool="jobs"} 6
`
		assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(expected), counterNames...), "counters")
	})
}

// The gauges while tasks run, wait and are scheduled, and once the pool
// has stopped. The tasks have keys: "a" runs and waits, "b" runs, "c" is
// scheduled, so that each counts once in workerpool_active_keys, and a
// task without a key counts in none.
func TestCollectorGaugesFollowThePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := workerpool.New(3)
		defer p.Stop()
		c := workerpoolprom.NewCollector(p, "jobs")
		reg := registryOf(t, c)
		release := make(chan struct{})
		p.Submit(func() { <-release })
		for _, key := range []string{"a", "b", "a"} {
			require.NoError(t, p.DoContext(context.Background(), func() { <-release }, workerpool.TaskOption{Key: key}), "Do with key %s", key)
		}
		p.Go(t.Context(), func(context.Context) error { return nil }, workerpool.TaskOption{Delay: time.Minute, Key: "c"})
		synctest.Wait()

		running := `
# HELP workerpool_active_keys Keys (see Key) with tasks waiting, scheduled or running; each key counts once, however many tasks it has.
# TYPE workerpool_active_keys gauge
workerpool_active_keys{pool="jobs"} 3
# HELP workerpool_busy_workers Workers of the pool running a task (or being handed one).
# TYPE workerpool_busy_workers gauge
workerpool_busy_workers{pool="jobs"} 3
# HELP workerpool_max_workers The most workers the pool may run: New's maxWorkers, or the last Resize's; under WithAdaptiveSize, the size the pool chose (see workerpool_size_reason).
# TYPE workerpool_max_workers gauge
workerpool_max_workers{pool="jobs"} 3
# HELP workerpool_scheduled_tasks Accepted tasks not due yet (a Delay, or waiting for a retry); they join the waiting tasks when due.
# TYPE workerpool_scheduled_tasks gauge
workerpool_scheduled_tasks{pool="jobs"} 1
# HELP workerpool_waiting_tasks Accepted tasks waiting for a worker, including those a Pause holds.
# TYPE workerpool_waiting_tasks gauge
workerpool_waiting_tasks{pool="jobs"} 1
# HELP workerpool_workers Live worker goroutines of the pool, busy or idle.
# TYPE workerpool_workers gauge
workerpool_workers{pool="jobs"} 3
`
		assert.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(running), gaugeNames...), "gauges while running")

		// Stop abandons the queued and the scheduled task at once, then
		// waits for the running ones.
		stopped := make(chan struct{})
		go func() {
			p.Stop()
			close(stopped)
		}()
		synctest.Wait()
		close(release)
		<-stopped
		after := `
# HELP workerpool_active_keys Keys (see Key) with tasks waiting, scheduled or running; each key counts once, however many tasks it has.
# TYPE workerpool_active_keys gauge
workerpool_active_keys{pool="jobs"} 0
# HELP workerpool_busy_workers Workers of the pool running a task (or being handed one).
# TYPE workerpool_busy_workers gauge
workerpool_busy_workers{pool="jobs"} 0
# HELP workerpool_max_workers The most workers the pool may run: New's maxWorkers, or the last Resize's; under WithAdaptiveSize, the size the pool chose (see workerpool_size_reason).
# TYPE workerpool_max_workers gauge
workerpool_max_workers{pool="jobs"} 3
# HELP workerpool_scheduled_tasks Accepted tasks not due yet (a Delay, or waiting for a retry); they join the waiting tasks when due.
# TYPE workerpool_scheduled_tasks gauge
workerpool_scheduled_tasks{pool="jobs"} 0
# HELP workerpool_waiting_tasks Accepted tasks waiting for a worker, including those a Pause holds.
# TYPE workerpool_waiting_tasks gauge
workerpool_waiting_tasks{pool="jobs"} 0
# HELP workerpool_workers Live worker goroutines of the pool, busy or idle.
# TYPE workerpool_workers gauge
workerpool_workers{pool="jobs"} 0
`
		assert.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(after), gaugeNames...), "gauges after Stop")
		assert.Equal(t, 2.0, sample(t, reg, "workerpool_tasks_abandoned_total", "jobs"), "abandoned after Stop")
	})
}

// A pool made with WithAdaptiveSize has one series of
// workerpool_size_reason, its last decision as the label reason: "start"
// from New until the pool's first decision; a pool without the option has
// none. workerpool_max_workers is the size each pool has: New's
// maxWorkers, the size an adaptive pool starts at. After a stop the
// series stays, with the pool's last decision.
func TestCollectorSizeReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		adaptive := workerpool.New(3, workerpool.WithAdaptiveSize(1, 8))
		defer adaptive.Stop()
		fixed := workerpool.New(2)
		defer fixed.Stop()
		reg := prometheus.NewPedanticRegistry()
		require.NoError(t, reg.Register(workerpoolprom.NewCollector(adaptive, "adaptive")), "register adaptive")
		require.NoError(t, reg.Register(workerpoolprom.NewCollector(fixed, "fixed")), "register fixed")

		// No time passes on the bubble's clock between New and the
		// gathering: the pool has made no decision yet.
		expected := `
# HELP workerpool_max_workers The most workers the pool may run: New's maxWorkers, or the last Resize's; under WithAdaptiveSize, the size the pool chose (see workerpool_size_reason).
# TYPE workerpool_max_workers gauge
workerpool_max_workers{pool="adaptive"} 3
workerpool_max_workers{pool="fixed"} 2
# HELP workerpool_size_reason Why the pool chose the size workerpool_max_workers reports, under WithAdaptiveSize: always 1, with its last decision as the label reason (start until the first); no series without WithAdaptiveSize.
# TYPE workerpool_size_reason gauge
workerpool_size_reason{pool="adaptive",reason="start"} 1
`
		assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(expected), "workerpool_max_workers", reasonName), "size and reason after New")

		adaptive.StopWait()
		fixed.StopWait()
		last := adaptive.Status().SizeReason
		require.NotEmpty(t, last, "the adaptive pool's SizeReason once stopped")
		assert.Equal(t, map[string]float64{`{pool="adaptive",reason="` + last + `"}`: 1}, values(t, workerpoolprom.NewCollector(adaptive, "adaptive"), reasonName), "reason once stopped")
		assert.Nil(t, values(t, workerpoolprom.NewCollector(fixed, "fixed"), reasonName), "reason of the pool without WithAdaptiveSize, once stopped")
	})
}

func TestCollectorLintsClean(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := workerpool.New(1)
		defer p.Stop()
		adaptive := workerpool.New(1, workerpool.WithAdaptiveSize(1, 4))
		defer adaptive.Stop()
		for _, c := range []*workerpoolprom.Collector{workerpoolprom.NewCollector(p, "lint"), workerpoolprom.NewCollector(adaptive, "adaptive")} {
			problems, err := testutil.CollectAndLint(c)
			require.NoError(t, err, "CollectAndLint")
			assert.Empty(t, problems, "lint problems")
		}
	})
}

// Two pools with different names share a registry; every metric has one
// series per pool.
func TestCollectorTwoPoolsInOneRegistry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := workerpool.New(1)
		defer a.Stop()
		b := workerpool.New(3)
		defer b.Stop()
		a.Submit(func() {})
		a.StopWait()

		reg := prometheus.NewRegistry()
		require.NoError(t, reg.Register(workerpoolprom.NewCollector(a, "a")), "register a")
		require.NoError(t, reg.Register(workerpoolprom.NewCollector(b, "b")), "register b")
		families, err := reg.Gather()
		require.NoError(t, err, "Gather")
		require.Len(t, families, len(gaugeNames)+len(counterNames), "metric families")
		for _, f := range families {
			var pools []string
			for _, m := range f.GetMetric() {
				require.Len(t, m.GetLabel(), 1, "labels of %s", f.GetName())
				assert.Equal(t, "pool", m.GetLabel()[0].GetName(), "label name of %s", f.GetName())
				pools = append(pools, m.GetLabel()[0].GetValue())
			}
			assert.Equal(t, []string{"a", "b"}, pools, "pools of %s", f.GetName())
		}
		assert.Equal(t, 1.0, sample(t, reg, "workerpool_tasks_completed_total", "a"), "completed in a")
		assert.Equal(t, 3.0, sample(t, reg, "workerpool_max_workers", "b"), "max workers of b")
	})
}

// Pools that share a name cannot share a registry: the second Register
// fails as for any duplicate collector, and the first stays registered.
func TestCollectorSameNameIsADuplicate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := workerpool.New(1)
		defer a.Stop()
		b := workerpool.New(1)
		defer b.Stop()
		reg := prometheus.NewRegistry()
		first := workerpoolprom.NewCollector(a, "same")
		require.NoError(t, reg.Register(first), "register the first")

		err := reg.Register(workerpoolprom.NewCollector(b, "same"))
		var dup prometheus.AlreadyRegisteredError
		require.ErrorAs(t, err, &dup, "register the second")
		assert.Same(t, first, dup.ExistingCollector, "existing collector")
		families, err := reg.Gather()
		require.NoError(t, err, "Gather")
		assert.Len(t, families, len(gaugeNames)+len(counterNames), "metric families")
	})
}

func TestCollectorRefusesInvalidUTF8Name(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := workerpool.New(1)
		defer p.Stop()
		err := prometheus.NewRegistry().Register(workerpoolprom.NewCollector(p, "bad\xff"))
		require.Error(t, err, "register")
		assert.Contains(t, err.Error(), "UTF-8", "error")
	})
}

func TestNewCollectorPanicsOnNilPool(t *testing.T) {
	assert.PanicsWithValue(t, "workerpoolprom: NewCollector called with a nil pool", func() {
		workerpoolprom.NewCollector(nil, "nil")
	}, "NewCollector(nil)")
}

// Status can read a counter one lower than a moment before while retried
// tasks flow (see Collector); the exported counters must not go down.
// Scrapes race with a stream of retried tasks here, under -race.
func TestCollectorCountersNeverDecrease(t *testing.T) {
	const scrapes = 2000
	p := workerpool.New(4)
	defer p.Stop()
	reg := registryOf(t, workerpoolprom.NewCollector(p, "retries"))
	scraped := make(chan struct{}) // closed after the last scrape
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(scraped)
		previous := map[string]float64{}
		for range scrapes {
			s, err := samples(reg)
			if !assert.NoError(t, err, "Gather") {
				return
			}
			for _, name := range counterNames {
				v := s[name]["retries"]
				assert.GreaterOrEqual(t, v, previous[name], "%s after %v", name, previous[name])
				previous[name] = v
			}
		}
	})
	retry := workerpool.TaskOption{Retry: func(attempt int, _ error) (time.Duration, bool) { return 0, attempt < 3 }}
	fail := func(context.Context) error { return errors.New("fails") }
	tasks := 0
submit:
	for {
		select {
		case <-scraped:
			break submit
		default:
			p.Go(t.Context(), fail, retry)
			tasks++
		}
	}
	wg.Wait()
	p.StopWait()
	// Every run was retried twice and every task completed: the counts are
	// exact again, with nothing left over from the scrapes.
	assert.Equal(t, float64(tasks), sample(t, reg, "workerpool_tasks_completed_total", "retries"), "completed")
	assert.Equal(t, float64(2*tasks), sample(t, reg, "workerpool_task_retries_total", "retries"), "retries")
}
