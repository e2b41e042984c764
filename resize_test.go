package workerpool

import (
	"context"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests for the run-time size of the pool (Resize, WithMinWorkers),
// WaitIdle and DoBatch (issue 11). Every scenario that depends on time or
// blocks runs in a synctest bubble with exact fake-clock values; the races
// that need real scheduling run many rounds outside bubbles, each test
// bounded to about a second.

// --- helpers ---

// sleeper is a task that runs for d of (fake) time.
func sleeper(d time.Duration) func() {
	return func() { time.Sleep(d) }
}

// release opens g unless it is open already. Tests defer it after the
// pool's Stop, so that a failed require leaves no task blocked in the bubble.
func (g gate) release() {
	if !isClosed(g) {
		g.open()
	}
}

// requireAccounted checks what holds once a stop has returned, with the
// counters of issue 11: Submitted == Completed + Abandoned + Canceled +
// Dropped, and no worker, busy or waiting task is left.
func requireAccounted(t *testing.T, p *WorkerPool) Status {
	t.Helper()
	s := p.Status()
	assert.Equal(t, StateStopped, s.State, "state")
	assert.Equal(t, 0, s.Workers, "workers")
	assert.Equal(t, 0, s.Busy, "busy")
	assert.Equal(t, 0, s.Waiting, "waiting")
	assert.Equal(t, s.Submitted, s.Completed+s.Abandoned+s.Canceled+s.Dropped,
		"submitted == completed + abandoned + canceled + dropped")
	return s
}

// waitIdleCall is one WaitIdle call on its own goroutine: what it returned,
// and when, in fake time since t0.
type waitIdleCall struct {
	done chan struct{}
	err  error
	at   time.Duration
}

func goWaitIdle(p *WorkerPool, ctx context.Context, t0 time.Time) *waitIdleCall {
	c := &waitIdleCall{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.err = p.WaitIdle(ctx)
		c.at = time.Since(t0)
	}()
	return c
}

// returned reports whether WaitIdle has returned; err and at are valid
// once it reports true.
func (c *waitIdleCall) returned() bool { return isClosed(c.done) }

// batchCall is one DoBatch call on its own goroutine.
type batchCall struct {
	done chan struct{}
	err  error
}

func goDoBatch(p *WorkerPool, tasks []func()) *batchCall {
	c := &batchCall{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.err = p.DoBatch(tasks)
	}()
	return c
}

func (c *batchCall) returned() bool { return isClosed(c.done) }

// startedLimit is a concurrency meter that also checks, as each task
// starts, that the tasks running then (itself included) do not exceed the
// limit in effect.
type startedLimit struct {
	running, peak atomic.Int64
	limit         atomic.Int64
	violations    atomic.Int64
	firstBad      atomic.Value // string: the first violation seen
}

func (m *startedLimit) wrap(body func()) func() {
	return func() {
		n := m.running.Add(1)
		if limit := m.limit.Load(); n > limit {
			if m.violations.Add(1) == 1 {
				m.firstBad.Store(time.Now().Format("15:04:05.000000000") + ": a task started as the " +
					itoa(n) + "th running with a limit of " + itoa(limit))
			}
		}
		for {
			old := m.peak.Load()
			if n <= old || m.peak.CompareAndSwap(old, n) {
				break
			}
		}
		defer m.running.Add(-1)
		body()
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// --- Resize ---

func TestResizeBelowOneMeansOneAndShowsTheNewSizeAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3, WithIdleTimeout(-1))
		for _, n := range []int{0, -7, 1} {
			p.Resize(n)
			assert.Equal(t, 1, p.Size(), "Size after Resize(%d)", n)
			assert.Equal(t, 1, p.Status().MaxWorkers, "Status.MaxWorkers after Resize(%d)", n)
		}
		p.Resize(7)
		assert.Equal(t, 7, p.Size(), "Size after Resize(7), no synctest.Wait")
		assert.Equal(t, 7, p.Status().MaxWorkers, "Status.MaxWorkers after Resize(7), no synctest.Wait")
		p.Resize(0)
		var m concurrencyMeter
		defer p.Stop()
		g := newGate()
		defer g.release()
		for range 5 {
			p.Submit(m.wrap(g.wait))
		}
		synctest.Wait()
		assert.Equal(t, int64(1), m.running.Load(), "tasks running after Resize(0)")
		assert.Equal(t, 4, p.Status().Waiting, "tasks waiting after Resize(0)")
		g.open()
		p.StopWait()
		assert.Equal(t, int64(1), m.peak.Load(), "peak concurrency after Resize(0)")
		s := requireAccounted(t, p)
		assert.Equal(t, uint64(5), s.Completed, "completed")
	})
}

func TestResizeAfterStopDoesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3)
		defer p.Stop()
		g := newGate()
		defer g.release()
		p.Submit(g.task())
		synctest.Wait()
		go p.Stop()
		synctest.Wait() // stopping: Stop waits for the running task
		require.Equal(t, StateStopping, p.Status().State, "state")
		assert.NotPanics(t, func() { p.Resize(10) }, "Resize while stopping")
		assert.Equal(t, 3, p.Size(), "Size after Resize while stopping")
		assert.Equal(t, 3, p.Status().MaxWorkers, "Status.MaxWorkers after Resize while stopping")
		g.open()
		p.Stop()
		assert.NotPanics(t, func() { p.Resize(1) }, "Resize after stop")
		assert.Equal(t, 3, p.Size(), "Size after Resize after stop")
		assert.Equal(t, 3, p.Status().MaxWorkers, "Status.MaxWorkers after Resize after stop")
		s := requireAccounted(t, p)
		assert.Equal(t, uint64(1), s.Completed, "completed")
	})
}

func TestResizeUpStartsWaitingTasksAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithIdleTimeout(-1))
		var m concurrencyMeter
		defer p.Stop()
		g := newGate()
		defer g.release()
		for range 10 {
			p.Submit(m.wrap(g.wait))
		}
		synctest.Wait()
		require.Equal(t, int64(2), m.running.Load(), "running before Resize")
		p.Resize(5)
		synctest.Wait() // no time passes: the new workers start at once
		assert.Equal(t, int64(5), m.running.Load(), "running after Resize(5)")
		s := p.Status()
		assert.Equal(t, 5, s.Workers, "workers after Resize(5)")
		assert.Equal(t, 5, s.Busy, "busy after Resize(5)")
		assert.Equal(t, 5, s.Waiting, "waiting after Resize(5)")
		p.Resize(20) // more than there are tasks
		synctest.Wait()
		assert.Equal(t, int64(10), m.running.Load(), "running after Resize(20)")
		s = p.Status()
		assert.Equal(t, 10, s.Workers, "workers after Resize(20)")
		assert.Equal(t, 0, s.Waiting, "waiting after Resize(20)")
		g.open()
		p.StopWait()
		assert.Equal(t, int64(10), m.peak.Load(), "peak")
		s = requireAccounted(t, p)
		assert.Equal(t, uint64(10), s.Completed, "completed")
	})
}

func TestResizeDownRetiresIdleWorkersAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(6, WithIdleTimeout(-1)) // no idle retirement: only Resize retires
		defer p.Stop()
		g := newGate()
		defer g.release()
		for range 6 {
			p.Submit(g.task())
		}
		synctest.Wait()
		g.open()
		synctest.Wait()
		require.Equal(t, 6, p.Status().Workers, "idle workers before Resize")
		p.Resize(2)
		synctest.Wait() // no time passes
		s := p.Status()
		assert.Equal(t, 2, s.Workers, "workers after Resize(2)")
		assert.Equal(t, 2, s.MaxWorkers, "max workers after Resize(2)")
		p.Resize(0)
		synctest.Wait()
		assert.Equal(t, 1, p.Status().Workers, "workers after Resize(0)")
		var ran atomic.Bool
		p.SubmitWait(func() { ran.Store(true) })
		assert.True(t, ran.Load(), "a task runs on the remaining worker")
		assert.Equal(t, 1, p.Status().Workers, "workers after a task")
	})
}

func TestResizeDownRetiresBusyWorkersAsTheirTaskEnds(t *testing.T) {
	// The queue is empty: the surplus workers are all busy when Resize
	// returns, and each must retire as its task ends, not at the next task
	// or idle tick (there is none: retirement is disabled).
	synctest.Test(t, func(t *testing.T) {
		p := New(4, WithIdleTimeout(-1))
		defer p.Stop()
		gates := []gate{newGate(), newGate(), newGate(), newGate()}
		defer func() {
			for _, g := range gates {
				g.release()
			}
		}()
		for _, g := range gates {
			p.Submit(g.task())
		}
		synctest.Wait()
		p.Resize(2)
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 4, s.Workers, "busy workers are not retired before their task ends")
		assert.Equal(t, 4, s.Busy, "busy")
		for i, want := range []int{3, 2, 2, 2} {
			gates[i].open()
			synctest.Wait()
			assert.Equal(t, want, p.Status().Workers, "workers after task %d of 4 ended", i+1)
		}
	})
}

func TestResizeDownStartsNoTaskUntilRunningIsBelowTheNewSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const tasks = 10
		p := New(4, WithIdleTimeout(-1))
		defer p.Stop()
		var r recorder
		var m concurrencyMeter
		gates := make([]gate, tasks)
		for i := range gates {
			gates[i] = newGate()
			defer gates[i].release()
			p.Submit(r.task(i, m.wrap(gates[i].wait)))
		}
		synctest.Wait()
		// Tasks start on several workers: the started set is checked, not
		// the order in which they recorded themselves.
		require.ElementsMatch(t, seq(4), r.order(), "started before Resize")
		p.Resize(2)
		synctest.Wait()
		assert.ElementsMatch(t, seq(4), r.order(), "started right after Resize(2)")
		// Tasks end oldest first. The first two ends only bring the running
		// tasks down to the new size; from then on each end starts exactly
		// one task, so two run.
		for done := range tasks {
			gates[done].open()
			synctest.Wait()
			wantStarted := 4
			if done >= 2 {
				wantStarted = min(done+3, tasks)
			}
			wantRunning := int64(min(max(3-done, 2), tasks-done-1))
			assert.ElementsMatch(t, seq(wantStarted), r.order(), "started after %d ended", done+1)
			assert.Equal(t, wantRunning, m.running.Load(), "running after %d ended", done+1)
		}
	})
}

func TestConcurrentResizeCallsAreLinearizableTheLastOneWins(t *testing.T) {
	// Goroutines call Resize with different values at once. Whichever call
	// is last, the size it set is what Size shows, and the pool then runs
	// exactly that many tasks at once under load (tasks of one fake second
	// each, far more than can finish).
	values := []int{1, 2, 3, 5, 8, 13}
	untilFailure(t, 40, func(t *testing.T, round int) {
		p := New(4, WithIdleTimeout(-1))
		defer p.Stop()
		var m concurrencyMeter
		for range 400 {
			p.Submit(m.wrap(sleeper(time.Second)))
		}
		var callers sync.WaitGroup
		for i := range len(values) {
			callers.Go(func() {
				for j := range 3 {
					p.Resize(values[(i+j+round)%len(values)])
				}
			})
		}
		callers.Wait()
		size := p.Size()
		require.Contains(t, values, size, "round %d: Size after the Resize calls", round)
		assert.Equal(t, size, p.Status().MaxWorkers, "round %d: Status.MaxWorkers", round)
		for range 3 {
			time.Sleep(5 * time.Second)
			synctest.Wait()
			assert.Equal(t, int64(size), m.running.Load(), "round %d: tasks running at %d", round, size)
			s := p.Status()
			assert.Equal(t, size, s.Workers, "round %d: workers", round)
			assert.Equal(t, size, s.Busy, "round %d: busy", round)
		}
	})
}

func TestResizeRacingStopNeitherHangsNorLeaks(t *testing.T) {
	untilFailure(t, 60, func(t *testing.T, round int) {
		p := New(1 + round%3)
		var ran atomic.Int64
		var wg sync.WaitGroup
		for g := range 3 {
			wg.Go(func() {
				for i := 0; !p.Stopped(); i++ {
					p.Resize(1 + (g+i)%5)
					runtime.Gosched()
				}
				p.Resize(9) // after stopping began: does nothing
			})
		}
		wg.Go(func() {
			for p.Do(func() { ran.Add(1) }) == nil {
				runtime.Gosched()
			}
		})
		for range 1 + round%7 {
			runtime.Gosched()
		}
		stopWait := round%2 == 0
		if stopWait {
			p.StopWait()
		} else {
			p.Stop()
		}
		wg.Wait() // inside the bubble: a hang fails the test at once
		size := p.Size()
		p.Resize(size + 3)
		assert.Equal(t, size, p.Size(), "round %d: Size after Resize on a stopped pool", round)
		s := requireAccounted(t, p)
		assert.Equal(t, uint64(ran.Load()), s.Completed, "round %d: completed", round)
		if stopWait {
			assert.Equal(t, s.Submitted, s.Completed, "round %d: StopWait ran every accepted task", round)
		}
	})
}

func TestResizeUpAndDownUnderAStreamNeverExceedsTheSizeInEffect(t *testing.T) {
	// A stream of tasks of varied lengths runs while the test resizes the
	// pool up and down. Each task checks as it starts that the running
	// tasks, itself included, do not exceed the size in effect: while a
	// Resize is on its way the larger of the two sizes, and once it has
	// been handled (synctest.Wait) the new one. Tasks left running above a
	// smaller size are allowed; a task starting then is not. Whenever tasks
	// wait, the pool must be running at least the size in effect.
	synctest.Test(t, func(t *testing.T) {
		sizes := []int{3, 1, 5, 2, 8, 3, 1, 6, 4, 2, 7, 1, 5}
		p := New(sizes[0], WithIdleTimeout(time.Second))
		var m startedLimit
		m.limit.Store(int64(sizes[0]))
		streamDone := make(chan struct{})
		go func() {
			defer close(streamDone)
			for i := range 600 {
				p.Submit(m.wrap(sleeper(time.Duration(1+i%7) * 130 * time.Millisecond)))
				if i%4 == 3 {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
		checkSaturated := func(size int, what string) {
			t.Helper()
			if s := p.Status(); s.Waiting > 0 {
				assert.GreaterOrEqual(t, m.running.Load(), int64(size), "%s: running while %d tasks wait", what, s.Waiting)
			}
		}
		cur := sizes[0]
		for round := range 3 {
			for i, size := range sizes {
				m.limit.Store(int64(max(cur, size)))
				p.Resize(size)
				synctest.Wait()
				m.limit.Store(int64(size))
				cur = size
				checkSaturated(size, "right after Resize("+itoa(int64(size))+")")
				time.Sleep(time.Duration(300+100*((i+round)%5)) * time.Millisecond)
				synctest.Wait()
				checkSaturated(size, "later, size "+itoa(int64(size)))
			}
		}
		<-streamDone
		p.StopWait()
		assert.Zero(t, m.violations.Load(), "tasks started above the size in effect (first: %v)", m.firstBad.Load())
		assert.LessOrEqual(t, m.peak.Load(), int64(slices.Max(sizes)), "peak")
		s := requireAccounted(t, p)
		assert.Equal(t, uint64(600), s.Completed, "completed")
	})
}

func TestResizeUnderRealSchedulingKeepsTheBoundAndTheAccounts(t *testing.T) {
	// Real scheduling, for the race detector: submitters and a resizer run
	// at once. A hand-off made before a shrink may start after Resize has
	// returned, so the exact bound is checked in the bubble test above;
	// here the peak never exceeds the largest size set.
	const maxSize = 6
	deadline := time.Now().Add(700 * time.Millisecond)
	for round := 0; round < 20 && time.Now().Before(deadline); round++ {
		p := New(3)
		var m concurrencyMeter
		var submitters sync.WaitGroup
		for range 3 {
			submitters.Go(func() {
				for range 300 {
					p.Submit(m.wrap(runtime.Gosched))
				}
			})
		}
		resized := make(chan struct{})
		go func() {
			defer close(resized)
			for i := 0; i < 200; i++ {
				p.Resize(1 + (i*7+round)%maxSize)
				runtime.Gosched()
			}
		}()
		submitters.Wait()
		<-resized
		p.StopWait()
		assert.LessOrEqual(t, m.peak.Load(), int64(maxSize), "round %d: peak", round)
		s := requireAccounted(t, p)
		assert.Equal(t, uint64(900), s.Completed, "round %d: completed", round)
		if t.Failed() {
			return
		}
	}
}

// --- WithMinWorkers ---

func TestMinWorkersAreStartedByNewAndSurviveIdlePeriods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(8, WithMinWorkers(3), WithIdleTimeout(time.Second))
		s := p.Status() // no synctest.Wait: New started them
		assert.Equal(t, 3, s.Workers, "workers when New returns")
		assert.Equal(t, 0, s.Busy, "busy when New returns")
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Equal(t, 3, p.Status().Workers, "workers after an hour idle")
		// The warm workers take the first tasks: no worker is added for them.
		defer p.Stop()
		g := newGate()
		defer g.release()
		for range 3 {
			p.Submit(g.task())
		}
		synctest.Wait()
		assert.Equal(t, 3, p.Status().Workers, "workers running the first 3 tasks")
		for range 5 {
			p.Submit(g.task())
		}
		synctest.Wait()
		assert.Equal(t, 8, p.Status().Workers, "workers under load")
		g.open()
		for range 40 { // 20 idle periods, sampled twice each
			time.Sleep(time.Second / 2)
			synctest.Wait()
			assert.GreaterOrEqual(t, p.Status().Workers, 3, "workers at %v", time.Now())
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Equal(t, 3, p.Status().Workers, "workers after another idle hour")
		p.Stop()
		s = requireAccounted(t, p)
		assert.Equal(t, uint64(8), s.Completed, "completed")
	})
}

func TestMinWorkersAreCappedAtTheMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct{ max, min, want int }{{3, 10, 3}, {0, 5, 1}, {4, 4, 4}, {6, 2, 2}} {
			p := New(c.max, WithMinWorkers(c.min), WithIdleTimeout(time.Second))
			assert.Equal(t, c.want, p.Status().Workers, "New(%d, WithMinWorkers(%d)): workers when New returns", c.max, c.min)
			time.Sleep(time.Hour)
			synctest.Wait()
			assert.Equal(t, c.want, p.Status().Workers, "New(%d, WithMinWorkers(%d)): workers an hour later", c.max, c.min)
			p.Stop()
			requireAccounted(t, p)
		}
	})
}

func TestResizeBelowMinWorkersLowersTheFloorAndGrowingRestoresIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(6, WithMinWorkers(4), WithIdleTimeout(time.Second))
		defer p.Stop()
		require.Equal(t, 4, p.Status().Workers, "workers when New returns")
		synctest.Wait()
		steps := []struct {
			size, workers int
		}{
			{2, 2},  // below the floor: the floor drops to the new max
			{3, 3},  // up again: min(4, 3)
			{10, 4}, // up past the floor: min(4, 10)
			{1, 1},
			{4, 4},
		}
		for _, step := range steps {
			p.Resize(step.size)
			synctest.Wait() // no time passes
			assert.Equal(t, step.workers, p.Status().Workers, "workers right after Resize(%d)", step.size)
			time.Sleep(time.Hour) // idle retirement keeps the floor
			synctest.Wait()
			assert.Equal(t, step.workers, p.Status().Workers, "workers an idle hour after Resize(%d)", step.size)
		}
		assert.Zero(t, p.Status().Submitted, "no task was needed")
	})
}

func TestWorkersAboveMinWorkersRetireOnePerIdlePeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(5, WithMinWorkers(2), WithIdleTimeout(time.Second))
		defer p.Stop()
		synctest.Wait() // the warm workers are ready
		t0 := time.Now()
		g := newGate()
		defer g.release()
		for range 5 {
			p.Submit(g.task())
		}
		synctest.Wait()
		g.open()
		synctest.Wait()
		require.Equal(t, 5, p.Status().Workers, "workers after the tasks")
		// The idle period starts with the first worker above the floor (t0);
		// the tick at t0+1s saw the tasks, so retirement starts at t0+2s,
		// one worker per period, down to the floor.
		sleepUntil := func(d time.Duration) {
			time.Sleep(time.Until(t0.Add(d)))
			synctest.Wait()
		}
		for _, c := range []struct {
			at      time.Duration
			workers int
		}{
			{2*time.Second - time.Nanosecond, 5},
			{2 * time.Second, 4},
			{3*time.Second - time.Nanosecond, 4},
			{3 * time.Second, 3},
			{4*time.Second - time.Nanosecond, 3},
			{4 * time.Second, 2},
			{time.Hour, 2},
		} {
			sleepUntil(c.at)
			assert.Equal(t, c.workers, p.Status().Workers, "workers at t0+%v", c.at)
		}
		var ran atomic.Bool
		p.SubmitWait(func() { ran.Store(true) })
		assert.True(t, ran.Load(), "task ran")
		assert.Equal(t, 2, p.Status().Workers, "a task on a floor worker adds none")
	})
}

func TestMinWorkersAreGoneAfterStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4, WithMinWorkers(3))
		p.SubmitWait(func() {})
		p.Stop()
		s := requireAccounted(t, p)
		assert.Equal(t, uint64(1), s.Completed, "completed")
		// The bubble's end checks that every worker goroutine exited.
	})
}

func TestMinWorkersBelowOneMeansNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, n := range []int{0, -1, -100} {
			p := New(4, WithMinWorkers(n), WithIdleTimeout(time.Second))
			assert.Equal(t, 0, p.Status().Workers, "WithMinWorkers(%d): workers when New returns", n)
			p.SubmitWait(func() {})
			time.Sleep(2 * time.Second)
			synctest.Wait()
			assert.Equal(t, 0, p.Status().Workers, "WithMinWorkers(%d): workers two idle periods after a task", n)
			p.Stop()
			requireAccounted(t, p)
		}
	})
}

// --- WaitIdle ---

func TestWaitIdleOnIdlePoolReturnsNilAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, p := range []*WorkerPool{New(2), New(3, WithMinWorkers(2))} {
			t0 := time.Now()
			c := goWaitIdle(p, context.Background(), t0)
			synctest.Wait()
			require.True(t, c.returned(), "WaitIdle on a new pool returned")
			assert.NoError(t, c.err, "WaitIdle on a new pool")
			p.SubmitWait(func() {})
			c = goWaitIdle(p, context.Background(), t0)
			synctest.Wait()
			require.True(t, c.returned(), "WaitIdle after a finished task returned")
			assert.NoError(t, c.err, "WaitIdle after a finished task")
			assert.Zero(t, c.at, "fake time passed")
			p.Stop()
		}
	})
}

func TestWaitIdleReturnsWhenTheLastTaskFinishes(t *testing.T) {
	// Two workers, five tasks on gates (two running, three waiting). The
	// gates open one a second; WaitIdle must return at the moment the last
	// task ends (5s), not before and not later. Idle retirement is off, so
	// nothing but the tasks can wake the dispatcher.
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithIdleTimeout(-1))
		defer p.Stop()
		t0 := time.Now()
		gates := make([]gate, 5)
		for i := range gates {
			gates[i] = newGate()
			defer gates[i].release()
			p.Submit(gates[i].task())
		}
		c := goWaitIdle(p, context.Background(), t0)
		for i, g := range gates {
			time.Sleep(time.Second)
			synctest.Wait()
			require.False(t, c.returned(), "WaitIdle returned before task %d of 5 ended (err %v)", i+1, c.err)
			g.open()
			synctest.Wait()
		}
		if assert.True(t, c.returned(), "WaitIdle returned once the last task ended") {
			assert.NoError(t, c.err, "WaitIdle")
			assert.Equal(t, 5*time.Second, c.at, "WaitIdle returned at")
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.True(t, c.returned(), "WaitIdle returned an hour after the pool went idle")
	})
}

func TestWaitIdleCountsTasksHeldByPauseAsWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithIdleTimeout(-1))
		defer p.Stop()
		t0 := time.Now()
		pauseCtx, endPause := context.WithCancel(context.Background())
		p.Pause(pauseCtx) // the pool is idle: the barrier is reached at once
		var ran atomic.Int64
		for range 3 {
			p.Submit(func() { time.Sleep(time.Second); ran.Add(1) })
		}
		c := goWaitIdle(p, context.Background(), t0)
		time.Sleep(time.Hour)
		synctest.Wait()
		require.False(t, c.returned(), "WaitIdle returned while a pause held tasks (err %v)", c.err)
		assert.Equal(t, 3, p.Status().Waiting, "held tasks")
		endPause()
		// Two tasks run from 1h to 1h+1s, the third to 1h+2s.
		time.Sleep(2*time.Second - time.Nanosecond)
		synctest.Wait()
		assert.False(t, c.returned(), "WaitIdle returned before the held tasks ran")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, int64(3), ran.Load(), "held tasks ran")
		if assert.True(t, c.returned(), "WaitIdle returned once the held tasks ran") {
			assert.NoError(t, c.err, "WaitIdle")
			assert.Equal(t, time.Hour+2*time.Second, c.at, "WaitIdle returned at")
		}
	})
}

func TestWaitIdleReturnsContextErrorAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		t0 := time.Now()
		g := blockOneWorker(t, p)
		defer g.release()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		c := goWaitIdle(p, ctx, t0)
		canceledCtx, cancelNow := context.WithCancel(context.Background())
		c2 := goWaitIdle(p, canceledCtx, t0)
		time.Sleep(time.Second)
		cancelNow()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		require.True(t, c.returned(), "WaitIdle returned after its deadline")
		assert.ErrorIs(t, c.err, context.DeadlineExceeded, "WaitIdle with a deadline")
		assert.Equal(t, 3*time.Second, c.at, "WaitIdle with a deadline returned at")
		require.True(t, c2.returned(), "WaitIdle returned after its cancel")
		assert.ErrorIs(t, c2.err, context.Canceled, "WaitIdle canceled")
		assert.Equal(t, time.Second, c2.at, "canceled WaitIdle returned at")
		g.open()
		synctest.Wait()
		c3 := goWaitIdle(p, context.Background(), t0)
		synctest.Wait()
		require.True(t, c3.returned(), "a later WaitIdle on the idle pool returned")
		assert.NoError(t, c3.err, "a later WaitIdle on the idle pool")
	})
}

func TestWaitIdleDoesNotHoldBackNewTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3, WithIdleTimeout(-1))
		defer p.Stop()
		t0 := time.Now()
		var m concurrencyMeter
		g := newGate()
		defer g.release()
		p.Submit(m.wrap(g.wait))
		c := goWaitIdle(p, context.Background(), t0)
		synctest.Wait()
		// Submitted while WaitIdle waits: they start at once.
		p.Submit(m.wrap(sleeper(time.Second)))
		p.Submit(m.wrap(sleeper(2 * time.Second)))
		synctest.Wait()
		assert.Equal(t, int64(3), m.running.Load(), "tasks running while WaitIdle waits")
		g.open()
		time.Sleep(2*time.Second - time.Nanosecond)
		synctest.Wait()
		assert.False(t, c.returned(), "WaitIdle returned while a task submitted during it still ran")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if assert.True(t, c.returned(), "WaitIdle returned once the later tasks ended") {
			assert.NoError(t, c.err, "WaitIdle")
			assert.Equal(t, 2*time.Second, c.at, "WaitIdle returned at")
		}
	})
}

func TestWaitIdleOccupiesNoWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithIdleTimeout(-1))
		defer p.Stop()
		t0 := time.Now()
		g := blockOneWorker(t, p)
		defer g.release()
		c := goWaitIdle(p, context.Background(), t0)
		synctest.Wait()
		var ran atomic.Bool
		p.Submit(func() { time.Sleep(time.Second); ran.Store(true) })
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 1, s.Workers, "workers while WaitIdle waits")
		assert.Equal(t, 1, s.Waiting, "waiting while WaitIdle waits")
		g.open()
		time.Sleep(time.Second)
		synctest.Wait()
		assert.True(t, ran.Load(), "the task behind WaitIdle ran on the only worker")
		if assert.True(t, c.returned(), "WaitIdle returned") {
			assert.NoError(t, c.err, "WaitIdle")
			assert.Equal(t, time.Second, c.at, "WaitIdle returned at")
		}
	})
}

func TestWaitIdleReturnsErrStoppedWhenStoppingBeginsFirst(t *testing.T) {
	for _, mode := range []string{"Stop", "StopWait"} {
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1, WithIdleTimeout(-1))
				t0 := time.Now()
				defer p.Stop()
				g := blockOneWorker(t, p)
				defer g.release()
				var ran atomic.Int64
				for range 3 {
					p.Submit(func() { ran.Add(1) })
				}
				calls := make([]*waitIdleCall, 20)
				for i := range calls {
					calls[i] = goWaitIdle(p, context.Background(), t0)
				}
				time.Sleep(time.Second)
				synctest.Wait()
				stopped := make(chan struct{})
				go func() {
					defer close(stopped)
					if mode == "Stop" {
						p.Stop()
					} else {
						p.StopWait()
					}
				}()
				synctest.Wait() // the stop waits for the running task
				require.False(t, isClosed(stopped), "stop returned while a task ran")
				for i, c := range calls {
					if assert.True(t, c.returned(), "WaitIdle %d returned once stopping began", i) {
						assert.ErrorIs(t, c.err, ErrStopped, "WaitIdle %d", i)
						assert.Equal(t, time.Second, c.at, "WaitIdle %d returned at", i)
					}
				}
				c := goWaitIdle(p, context.Background(), t0) // while stopping
				synctest.Wait()
				if assert.True(t, c.returned(), "WaitIdle while stopping returned") {
					assert.ErrorIs(t, c.err, ErrStopped, "WaitIdle while stopping")
				}
				g.open()
				<-stopped
				assert.ErrorIs(t, p.WaitIdle(context.Background()), ErrStopped, "WaitIdle on a stopped pool")
				s := requireAccounted(t, p)
				if mode == "StopWait" {
					assert.Equal(t, int64(3), ran.Load(), "StopWait ran the queued tasks")
					assert.Equal(t, uint64(4), s.Completed, "completed")
				} else {
					assert.Equal(t, uint64(3), s.Abandoned, "abandoned")
				}
			})
		})
	}
}

func TestManyConcurrentWaitIdleCallsAllReturnWhenThePoolGoesIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4, WithIdleTimeout(-1))
		defer p.Stop()
		t0 := time.Now()
		g := newGate()
		defer g.release()
		for range 6 {
			p.Submit(g.task())
		}
		calls := make([]*waitIdleCall, 50)
		for i := range calls {
			calls[i] = goWaitIdle(p, context.Background(), t0)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		g.open()
		synctest.Wait()
		returned := 0
		for i, c := range calls {
			if c.returned() {
				returned++
				assert.NoError(t, c.err, "WaitIdle %d", i)
				assert.Equal(t, time.Second, c.at, "WaitIdle %d returned at", i)
			}
		}
		assert.Equal(t, len(calls), returned, "WaitIdle calls returned once the pool went idle")
	})
}

func TestWaitIdleWithNilContextPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		var nilCtx context.Context
		assert.PanicsWithValue(t, "workerpool: WaitIdle called with a nil context", func() { _ = p.WaitIdle(nilCtx) })
	})
}

func TestWaitIdleUnderConcurrentSubmitsReturnsOnlyAtIdleMoments(t *testing.T) {
	// Submitters number their tasks; each task sets its finished flag as
	// its last act. After each Submit returns, the submitter publishes how
	// many of its Submits have returned (accepted[s]). A waiter snapshots
	// accepted[] before it calls WaitIdle. Every task in that snapshot was
	// accepted before the WaitIdle request reached the dispatcher (its send
	// completed before the request's send began, and dispatch handles
	// messages one at a time), so it was accepted before whatever idle
	// moment answers the request. Hence, when WaitIdle returns nil, each of
	// those tasks must have finished: its flag is set, and the flag's store
	// happens before WaitIdle returns (task returns, the worker counts it
	// atomically, dispatch reads that count and closes the answer).
	//
	// Tasks accepted after the snapshot may or may not have finished:
	// WaitIdle may return at a momentary idle point and new tasks may come
	// in right after it, which is allowed. A counter of running+queued tasks
	// kept by the tasks cannot decide more: a task whose Submit has begun
	// but not completed is counted by it and not yet by the pool.
	const submitters, perSubmitter, burst = 3, 96, 8
	var nilAnswers atomic.Int64
	deadline := time.Now().Add(time.Second)
	for round := 0; round < 30 && time.Now().Before(deadline); round++ {
		p := New(3, WithIdleTimeout(-1))
		finished := make([]atomic.Bool, submitters*perSubmitter)
		var accepted [submitters]atomic.Int64
		var violations atomic.Int64
		var firstViolation atomic.Value
		ctx, cancel := context.WithCancel(context.Background())
		var subs, waiters sync.WaitGroup
		for s := range submitters {
			subs.Go(func() {
				for i := range perSubmitter {
					id := s*perSubmitter + i
					p.Submit(func() {
						runtime.Gosched()
						finished[id].Store(true)
					})
					accepted[s].Store(int64(i + 1))
					if i%burst == burst-1 { // let the pool go idle now and then
						for !finished[id].Load() {
							runtime.Gosched()
						}
					}
				}
			})
		}
		for range 2 {
			waiters.Go(func() {
				for ctx.Err() == nil {
					var snapshot [submitters]int64
					for s := range submitters {
						snapshot[s] = accepted[s].Load()
					}
					if p.WaitIdle(ctx) != nil {
						continue
					}
					nilAnswers.Add(1)
					for s := range submitters {
						for i := range int(snapshot[s]) {
							if !finished[s*perSubmitter+i].Load() && violations.Add(1) == 1 {
								firstViolation.Store("task " + itoa(int64(i)) + " of submitter " + itoa(int64(s)) +
									" was accepted before WaitIdle was called and had not finished when it returned nil")
							}
						}
					}
				}
			})
		}
		subs.Wait()
		finalCtx, finalCancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		err := p.WaitIdle(finalCtx)
		finalCancel()
		cancel()
		waiters.Wait()
		assert.Zero(t, violations.Load(), "round %d: WaitIdle returned nil while an accepted task was pending: %v", round, firstViolation.Load())
		if assert.NoError(t, err, "round %d: WaitIdle after the submitters finished", round) {
			for id := range finished {
				if !finished[id].Load() {
					assert.Fail(t, "task unfinished after WaitIdle returned nil", "round %d: task %d", round, id)
					break
				}
			}
		}
		p.StopWait()
		s := requireAccounted(t, p)
		assert.Equal(t, uint64(submitters*perSubmitter), s.Completed, "round %d: completed", round)
		if t.Failed() {
			return
		}
	}
	t.Logf("WaitIdle returned nil %d times during concurrent submits", nilAnswers.Load())
}

// --- DoBatch ---

func TestDoBatchQueuesInOrderBetweenSingleSubmits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithIdleTimeout(-1))
		var r recorder
		defer p.Stop()
		g := newGate()
		defer g.release()
		p.Submit(r.task(0, g.wait))
		synctest.Wait()
		p.Submit(r.task(1, nil))
		require.NoError(t, p.DoBatch([]func(){r.task(2, nil), nil, r.task(3, nil), nil, r.task(4, nil)}), "DoBatch")
		p.Submit(r.task(5, nil))
		require.NoError(t, p.DoBatch([]func(){nil, r.task(6, nil)}), "DoBatch")
		p.Submit(r.task(7, nil))
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, uint64(8), s.Submitted, "submitted: nil entries do not count")
		assert.Equal(t, 7, s.Waiting, "waiting")
		g.open()
		p.StopWait()
		assert.Equal(t, seq(8), r.order(), "start order")
		s = requireAccounted(t, p)
		assert.Equal(t, uint64(8), s.Completed, "completed")
	})
}

func TestDoBatchEmptyOrAllNilReturnsNilAndCountsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(1, Reject))
		defer p.Stop()
		assert.NoError(t, p.DoBatch(nil), "DoBatch(nil)")
		assert.NoError(t, p.DoBatch([]func(){}), "DoBatch(empty)")
		assert.NoError(t, p.DoBatch([]func(){nil, nil, nil}), "DoBatch(all nil), more entries than the bound")
		synctest.Wait()
		s := p.Status()
		assert.Zero(t, s.Submitted, "submitted")
		assert.Zero(t, s.Rejected, "rejected")
		assert.Zero(t, s.Workers, "workers")
	})
}

func TestDoBatchIsOneHandOffNotInterleavedWithConcurrentSubmits(t *testing.T) {
	// One worker, so tasks start in queue order: each batch's tasks must
	// start back to back and in slice order, whatever the concurrent single
	// Submits and other batches do.
	const batches, batchLen = 4, 6
	untilFailure(t, 30, func(t *testing.T, round int) {
		p := New(1)
		var mu sync.Mutex
		var order []int // batch b's task i is b*100+i; single submits are -1
		record := func(v int) func() {
			return func() { mu.Lock(); order = append(order, v); mu.Unlock() }
		}
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				for range 20 {
					p.Submit(record(-1))
					runtime.Gosched()
				}
			})
		}
		for b := range batches {
			wg.Go(func() {
				batch := make([]func(), batchLen)
				for i := range batch {
					batch[i] = record(b*100 + i)
				}
				runtime.Gosched()
				assert.NoError(t, p.DoBatch(batch), "DoBatch %d", b)
			})
		}
		wg.Wait()
		p.StopWait()
		for b := range batches {
			at := slices.Index(order, b*100)
			if !assert.GreaterOrEqual(t, at, 0, "round %d: batch %d ran", round, b) {
				continue
			}
			want := make([]int, batchLen)
			for i := range want {
				want[i] = b*100 + i
			}
			assert.Equal(t, want, order[at:min(at+batchLen, len(order))], "round %d: batch %d started back to back", round, b)
		}
		requireAccounted(t, p)
	})
}

func TestDoBatchOnStoppedPoolReturnsErrStoppedAndRunsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, opts := range [][]Option{nil, {WithMaxWaiting(4, Block)}, {WithMaxWaiting(4, Reject)}, {WithMaxWaiting(4, DropOldest)}} {
			p := New(2, opts...)
			p.Stop()
			var ran atomic.Int64
			task := func() { ran.Add(1) }
			assert.ErrorIs(t, p.DoBatch([]func(){task, nil, task}), ErrStopped, "DoBatch on a stopped pool")
			synctest.Wait()
			assert.Zero(t, ran.Load(), "tasks run")
			s := requireAccounted(t, p)
			assert.Zero(t, s.Submitted, "submitted")
			assert.Zero(t, s.Rejected, "rejected: a refusal because the pool stopped is not counted")
		}
	})
}

func TestDoBatchRacingStopIsAllOrNone(t *testing.T) {
	// Every batch has 5 tasks (and 2 nils); each task adds to its batch's
	// counter. A batch DoBatch accepted (nil) counts 5 in Submitted and,
	// with StopWait, runs all 5; a refused one (ErrStopped) runs none.
	untilFailure(t, 60, func(t *testing.T, round int) {
		p := New(1 + round%3)
		const callers, perCaller = 3, 40
		var ran [callers * perCaller]atomic.Int64
		var accepted [callers * perCaller]bool
		var wg sync.WaitGroup
		for c := range callers {
			wg.Go(func() {
				for k := range perCaller {
					id := c*perCaller + k
					task := func() { ran[id].Add(1) }
					err := p.DoBatch([]func(){task, nil, task, task, nil, task, task})
					if err != nil {
						assert.ErrorIs(t, err, ErrStopped, "DoBatch")
					}
					accepted[id] = err == nil
					runtime.Gosched()
				}
			})
		}
		for range 1 + round%5 {
			runtime.Gosched()
		}
		stopWait := round%2 == 0
		if stopWait {
			p.StopWait()
		} else {
			p.Stop()
		}
		wg.Wait()
		s := requireAccounted(t, p)
		n := uint64(0)
		for id, ok := range accepted {
			switch {
			case ok:
				n += 5
				if stopWait {
					assert.Equal(t, int64(5), ran[id].Load(), "round %d: accepted batch %d ran", round, id)
				}
			default:
				assert.Zero(t, ran[id].Load(), "round %d: refused batch %d ran", round, id)
			}
		}
		assert.Equal(t, n, s.Submitted, "round %d: submitted == 5 per accepted batch", round)
	})
}

func TestDoBatchUnderBlockWaitsUntilItAllFitsAndHoldsBackLaterSubmitters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(4, Block), WithIdleTimeout(-1))
		defer p.Stop()
		var r recorder
		g0, g1, g2 := newGate(), newGate(), newGate()
		defer g0.release()
		defer g1.release()
		defer g2.release()
		p.Submit(r.task(0, g0.wait)) // running
		p.Submit(r.task(1, g1.wait)) // waiting
		p.Submit(r.task(2, g2.wait)) // waiting: 2 of 4 places free
		synctest.Wait()
		b := goDoBatch(p, []func(){r.task(3, nil), nil, r.task(4, nil), r.task(5, nil)})
		synctest.Wait()
		assert.False(t, b.returned(), "DoBatch of 3 returned with 2 places free")
		assert.Equal(t, 2, p.Status().Waiting, "waiting: none of the batch is queued")
		// A single Submit behind the waiting batch waits too, although a
		// place is free for it: room goes in arrival order.
		single := make(chan struct{})
		go func() { p.Submit(r.task(6, nil)); close(single) }()
		synctest.Wait()
		assert.False(t, isClosed(single), "a Submit behind the waiting batch went ahead of it")
		g0.open() // task 1 starts: 3 places free, the batch fits
		synctest.Wait()
		require.True(t, b.returned(), "DoBatch returned once it all fit")
		assert.NoError(t, b.err, "DoBatch")
		assert.Equal(t, 4, p.Status().Waiting, "waiting: task 2 and the batch")
		assert.False(t, isClosed(single), "the later Submit found no place")
		g1.open() // task 2 starts: a place frees for the single Submit
		synctest.Wait()
		assert.True(t, isClosed(single), "the later Submit got the next place")
		g2.open()
		p.StopWait()
		assert.Equal(t, seq(7), r.order(), "start order")
		s := requireAccounted(t, p)
		assert.Equal(t, uint64(7), s.Completed, "completed")
		assert.Zero(t, s.Rejected, "rejected")
	})
}

func TestDoBatchUnderRejectIsAllOrNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var letters atomic.Int64
		p := New(1, WithMaxWaiting(4, Reject), WithIdleTimeout(-1),
			WithDeadLetter(func(func(), error) { letters.Add(1) }))
		var r recorder
		defer p.Stop()
		g := newGate()
		defer g.release()
		p.Submit(r.task(0, g.wait))
		p.Submit(r.task(1, nil))
		p.Submit(r.task(2, nil)) // 2 of 4 places free
		synctest.Wait()
		var refusedRan atomic.Int64
		refused := func() { refusedRan.Add(1) }
		assert.ErrorIs(t, p.DoBatch([]func(){refused, refused, refused}), ErrQueueFull, "DoBatch of 3 with 2 places free")
		s := p.Status()
		assert.Equal(t, 2, s.Waiting, "waiting: none of the refused batch is queued")
		assert.Equal(t, uint64(3), s.Rejected, "rejected: the refused batch's tasks")
		assert.Equal(t, uint64(3), s.Submitted, "submitted")
		// Nil entries take no place: 2 tasks fit exactly.
		assert.NoError(t, p.DoBatch([]func(){nil, r.task(3, nil), nil, r.task(4, nil), nil}), "DoBatch of 2 with 2 places free")
		synctest.Wait()
		assert.Equal(t, 4, p.Status().Waiting, "waiting")
		assert.ErrorIs(t, p.DoBatch([]func(){refused}), ErrQueueFull, "DoBatch of 1 on a full queue")
		s = p.Status()
		assert.Equal(t, uint64(4), s.Rejected, "rejected")
		assert.Equal(t, uint64(5), s.Submitted, "submitted")
		g.open()
		p.StopWait()
		assert.Equal(t, seq(5), r.order(), "start order")
		assert.Zero(t, refusedRan.Load(), "refused tasks ran")
		assert.Zero(t, letters.Load(), "dead letters for a refused DoBatch: its caller has the error")
		s = requireAccounted(t, p)
		assert.Equal(t, uint64(5), s.Completed, "completed")
	})
}

func TestDoBatchUnderDropOldestDropsOnlyOlderTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// While the worker is blocked only the dead-letter handler calls
		// tasks; it marks the calls as drops.
		var mu sync.Mutex
		var ran, dropped []int
		var reasons []error
		var inHandler bool
		task := func(i int) func() {
			return func() {
				mu.Lock()
				defer mu.Unlock()
				if inHandler {
					dropped = append(dropped, i)
				} else {
					ran = append(ran, i)
				}
			}
		}
		h := func(f func(), reason error) {
			mu.Lock()
			inHandler = true
			reasons = append(reasons, reason)
			mu.Unlock()
			f()
			mu.Lock()
			inHandler = false
			mu.Unlock()
		}
		p := New(1, WithMaxWaiting(4, DropOldest), WithIdleTimeout(-1), WithDeadLetter(h))
		defer p.Stop()
		g := newGate()
		defer g.release()
		p.Submit(func() { g.wait(); task(0)() })
		for i := 1; i <= 4; i++ {
			p.Submit(task(i))
		}
		synctest.Wait()
		require.Equal(t, 4, p.Status().Waiting, "waiting: the queue is full")
		require.NoError(t, p.DoBatch([]func(){task(5), nil, task(6), task(7)}), "DoBatch of 3 on a full queue")
		synctest.Wait()
		mu.Lock()
		assert.Equal(t, []int{1, 2, 3}, dropped, "dropped to make room for 3")
		mu.Unlock()
		s := p.Status()
		assert.Equal(t, 4, s.Waiting, "waiting")
		assert.Equal(t, uint64(3), s.Dropped, "dropped")
		// The next batch drops task 4 and the oldest task of the batch
		// before it, which is by now a plain waiting task like any other.
		require.NoError(t, p.DoBatch([]func(){task(8), task(9)}), "DoBatch of 2 on a full queue")
		synctest.Wait()
		mu.Lock()
		assert.Equal(t, []int{1, 2, 3, 4, 5}, dropped, "dropped after the second batch")
		mu.Unlock()
		// A batch as large as the bound drops all the others and none of its own.
		require.NoError(t, p.DoBatch([]func(){task(10), task(11), task(12), task(13)}), "DoBatch of 4 (the bound)")
		synctest.Wait()
		g.open()
		p.StopWait()
		mu.Lock()
		assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8, 9}, dropped, "dropped")
		assert.Equal(t, []int{0, 10, 11, 12, 13}, ran, "ran")
		for i, err := range reasons {
			assert.ErrorIs(t, err, ErrDropped, "dead letter %d's reason", i)
		}
		mu.Unlock()
		s = requireAccounted(t, p)
		assert.Equal(t, uint64(9), s.Dropped, "dropped")
		assert.Equal(t, uint64(5), s.Completed, "completed")
		assert.Zero(t, s.Rejected, "rejected")
	})
}

func TestDoBatchLargerThanTheBoundIsRejectedAtOnceUnderEveryPolicy(t *testing.T) {
	for _, policy := range []Overflow{Block, Reject, DropOldest} {
		t.Run(policy.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var letters atomic.Int64
				// Idle workers could start every task at once: the batch is
				// still larger than the bound.
				p := New(4, WithMaxWaiting(2, policy), WithDeadLetter(func(func(), error) { letters.Add(1) }))
				defer p.Stop()
				var ran atomic.Int64
				task := func() { ran.Add(1) }
				b := goDoBatch(p, []func(){task, task, nil, task})
				synctest.Wait()
				require.True(t, b.returned(), "DoBatch of 3 with a bound of 2 returned at once")
				assert.ErrorIs(t, b.err, ErrQueueFull, "DoBatch of 3 with a bound of 2")
				s := p.Status()
				assert.Equal(t, uint64(3), s.Rejected, "rejected")
				assert.Zero(t, s.Submitted, "submitted")
				assert.Zero(t, ran.Load(), "tasks run")
				assert.Zero(t, letters.Load(), "dead letters")
				// Nil entries do not count against the bound.
				b = goDoBatch(p, []func(){nil, task, nil, task, nil})
				synctest.Wait()
				require.True(t, b.returned(), "DoBatch of 2 with a bound of 2 returned")
				assert.NoError(t, b.err, "DoBatch of 2 (and 3 nils) with a bound of 2")
				assert.Equal(t, int64(2), ran.Load(), "tasks run")
			})
		})
	}
}

func TestDoBatchKeepsNoReferenceToTheSlice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithIdleTimeout(-1))
		var mu sync.Mutex
		var ran []string
		mark := func(s string) func() {
			return func() { mu.Lock(); ran = append(ran, s); mu.Unlock() }
		}
		defer p.Stop()
		g := blockOneWorker(t, p)
		defer g.release()
		batch := []func(){mark("a"), mark("b"), nil, mark("c")}
		require.NoError(t, p.DoBatch(batch), "DoBatch")
		for i := range batch {
			batch[i] = mark("replaced")
		}
		batch[1] = nil
		batch = append(batch[:0], mark("appended")) // reuses the array
		_ = batch
		g.open()
		p.StopWait()
		mu.Lock()
		assert.Equal(t, []string{"a", "b", "c"}, ran, "tasks run")
		mu.Unlock()
	})
}

func TestDoBatchReleasesItsClosuresOnceTheyRan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithIdleTimeout(-1))
		defer p.Stop()
		g := blockOneWorker(t, p)
		defer g.release()
		ref := doBatchCapturing(t, p, 100)
		runtime.GC()
		require.NotNil(t, ref.Value(), "captured object collected while its tasks wait")
		g.open()
		synctest.Wait()
		require.Equal(t, uint64(101), p.Status().Completed, "completed")
		runtime.GC()
		assert.Nil(t, ref.Value(), "object captured only by the batch's closures still reachable after they ran")
	})
}

// doBatchCapturing queues a batch of n tasks that capture a fresh object and
// returns a weak pointer to that object; the slice is dropped on return.
func doBatchCapturing(t *testing.T, p *WorkerPool, n int) weak.Pointer[[64]int] {
	obj := new([64]int)
	batch := make([]func(), n)
	for i := range batch {
		batch[i] = func() { obj[i%64]++ }
	}
	require.NoError(t, p.DoBatch(batch), "DoBatch")
	return weak.Make(obj)
}

func TestDoBatchAllocatesNothingPerTask(t *testing.T) {
	// Batches come faster than the workers run them, so the queue keeps a
	// backlog, as in a benchmark of DoBatch: no allocation per call.
	for _, opts := range [][]Option{nil, {WithMaxWaiting(1<<20, Block)}, {WithMaxWaiting(1<<20, DropOldest)}} {
		p := New(4, opts...)
		batch := make([]func(), 1000)
		task := func() {}
		for i := range batch {
			batch[i] = task
		}
		allocs := testing.AllocsPerRun(30, func() {
			if err := p.DoBatch(batch); err != nil {
				panic(err)
			}
		})
		assert.LessOrEqual(t, allocs, 1.0, "allocations per DoBatch of 1000 tasks, with %d options", len(opts))
		p.StopWait()
	}
}

func TestDoBatchAllocatesNothingPerCallWhenTheQueueDrainsBetweenBatches(t *testing.T) {
	// One worker; after each batch a SubmitWait (0 allocations, see
	// TestSubmitWaitDoesNotAllocate) waits until the queue has drained, so
	// each call's 1000 tasks fill an empty queue.
	p := New(1)
	defer p.Stop()
	batch := make([]func(), 1000)
	task := func() {}
	for i := range batch {
		batch[i] = task
	}
	allocs := testing.AllocsPerRun(50, func() {
		if err := p.DoBatch(batch); err != nil {
			panic(err)
		}
		p.SubmitWait(task)
	})
	assert.LessOrEqual(t, allocs, 1.0, "allocations per DoBatch of 1000 tasks into an empty queue (and one SubmitWait)")
}

// A ticket that waited for room is reused with nothing of that wait: a
// DoBatch that took its room at once is admitted at once, and does not wait
// for room again (which, with the room it holds, would never come).
func TestReusedTicketKeepsNothingOfItsLastWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(1, Block))
		defer p.Stop()
		for round := range 20 {
			blocker := newGate()
			p.Submit(blocker.task())
			synctest.Wait()
			p.Submit(func() {}) // the one place
			parked := make(chan error)
			go func() { parked <- p.DoContext(context.Background(), func() {}) }() // waits for room in a ticket
			synctest.Wait()
			blocker.open()
			require.NoError(t, <-parked, "round %d: the parked DoContext", round)
			require.NoError(t, p.WaitIdle(context.Background()))
			require.NoError(t, p.DoBatch([]func(){func() {}}), "round %d: DoBatch with room free", round) // deadlocks the bubble if it waits
		}
	})
}

// WaitIdle sees the idle moment when a cancel of a queued task races
// dispatch: the cancel moves the task's state, dispatch runs (here woken by
// a Resize) while the waiting count has not gone down yet, then the count
// goes down and the running task ends. Dispatch used to watch the running
// work only once the count read 0, and then waited on taskQueue alone:
// WaitIdle hung until some unrelated message came. The test plays the
// canceling goroutine's part of Task.Cancel statement by statement, as
// settleFrom does, with dispatch running in the gap.
func TestWaitIdleSeesTheIdleMomentAfterACancelThatRacesDispatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithIdleTimeout(-1))
		g := blockOneWorker(t, p)
		tk := p.Go(context.Background(), func(context.Context) error { return nil })
		synctest.Wait()
		require.Equal(t, 1, p.Status().Waiting)
		c := goWaitIdle(p, context.Background(), time.Now())
		synctest.Wait()
		require.False(t, c.returned())

		// tk.Cancel() -> settle -> settleFrom(jobQueued, jobCanceled), first half:
		p.beginSettle()
		require.True(t, tk.job.state.CompareAndSwap(jobQueued, jobCanceled))
		// ... the canceling goroutine is preempted; dispatch runs.
		p.Resize(1)
		synctest.Wait()
		// settleFrom, second half, then settle's call to the owner:
		p.counts.waiting.Add(-1)
		p.wakeDispatch()
		p.givePlaceOf(&tk.job)
		p.counts.settled.canceled.Add(1)
		p.endSettle()
		tk.job.owner.conclude(context.Canceled, false)
		require.ErrorIs(t, tk.Wait(), context.Canceled)

		g.open() // the only running task ends: nothing runs or waits now
		synctest.Wait()
		assert.Equal(t, 0, p.Status().Busy)
		assert.Equal(t, 0, p.Status().Waiting)
		assert.True(t, c.returned(), "WaitIdle did not return although the pool is idle")
		p.Stop()
		<-c.done
		if c.err != nil {
			assert.NotErrorIs(t, c.err, ErrStopped, "WaitIdle was only ended by the stop")
		}
	})
}

// A Resize that races a stop is applied or not seen: either Size shows the
// old size, or no task starts while the running ones are at or above the new
// one (Resize doc). Here Resize(1) is held while it logs (a slow handler),
// StopWait begins meanwhile, and Resize then finds the pool stopping: its
// message is refused, but Size was already swapped. StopWait drains the
// queue on two workers while Size() says 1, for good. (A Resize whose
// message arrives after the stop message, as a straggler, is dropped by
// admitStraggler the same way.)
func TestResizeThatRacesAStopIsAppliedOrNotSeen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newStallingHandler("pool resized")
		defer h.resume()
		p := New(2, WithIdleTimeout(-1), WithLogger(slog.New(h)))
		var running atomic.Int64
		gates := []gate{newGate(), newGate(), newGate(), newGate()}
		for _, g := range gates {
			defer g.release()
			p.Submit(func() { running.Add(1); g.wait(); running.Add(-1) })
		}
		synctest.Wait()
		require.Equal(t, int64(2), running.Load(), "running")
		resized := make(chan struct{})
		go func() { defer close(resized); p.Resize(1) }()
		<-h.stalled
		stopped := make(chan struct{})
		go func() { defer close(stopped); p.StopWait() }()
		synctest.Wait()
		h.resume()
		<-resized

		gates[0].open() // a slot frees: with a size of 1, no task may start
		synctest.Wait()
		assert.LessOrEqual(t, running.Load(), int64(p.Size()), "running tasks once Resize(%d) returned", p.Size())
		assert.Equal(t, p.Size(), p.Status().MaxWorkers, "MaxWorkers")
		for _, g := range gates[1:] {
			g.open()
		}
		<-stopped
	})
}
