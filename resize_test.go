package workerpool

import (
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests for the run-time size of the pool (Resize, WithMinWorkers). Every
// scenario that depends on time or blocks runs in a synctest bubble with
// exact fake-clock values; the races that need real scheduling run many
// rounds outside bubbles, each test bounded to about a second.

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
		s := requireStoppedClean(t, p)
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
		require.Equal(t, "stopping", stateOf(p.Status()), "state")
		assert.NotPanics(t, func() { p.Resize(10) }, "Resize while stopping")
		assert.Equal(t, 3, p.Size(), "Size after Resize while stopping")
		assert.Equal(t, 3, p.Status().MaxWorkers, "Status.MaxWorkers after Resize while stopping")
		g.open()
		p.Stop()
		assert.NotPanics(t, func() { p.Resize(1) }, "Resize after stop")
		assert.Equal(t, 3, p.Size(), "Size after Resize after stop")
		assert.Equal(t, 3, p.Status().MaxWorkers, "Status.MaxWorkers after Resize after stop")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Completed, "completed")
	})
}

// The zero WorkerPool is not usable, but reading its size does not panic:
// it is 0.
func TestZeroWorkerPoolSizeIsZero(t *testing.T) {
	var p WorkerPool
	assert.Equal(t, 0, p.Size(), "Size of the zero WorkerPool")
	assert.Equal(t, int64(0), p.size.floor.Load(), "floor of the zero WorkerPool")
}

// TestAChangeTheStopRefusedKeepsTheSettings calls change itself, past the
// stopBegun checks that Resize and SetMinWorkers make first, as a call
// does that lost the race with a stop: the pool refuses it, and both
// settings keep their values.
func TestAChangeTheStopRefusedKeepsTheSettings(t *testing.T) {
	p := New(3, WithMinWorkers(2))
	p.Stop()
	_, ok := p.size.change(&p.size.max, 9, p.tellResize)
	assert.False(t, ok, "change of the size after stop")
	_, ok = p.size.change(&p.size.floor, 1, p.tellResize)
	assert.False(t, ok, "change of the floor after stop")
	assert.Equal(t, int64(3), p.size.max.Load(), "size")
	assert.Equal(t, int64(2), p.size.floor.Load(), "floor")
	assert.Equal(t, 3, p.Status().MaxWorkers, "Status.MaxWorkers")
}

// A change the stop refuses takes back its own write, but dispatch may
// have read that write already: a size window's boundary, or another
// call's message, made it resize between the change's swap and its
// refused message (the boundary swaps its window's size in, the Resize
// swaps its own over it, dispatch resizes on the Resize's; or a Resize's
// message is taken, its caller lets go of the lock, the next Resize swaps,
// and dispatch resizes on that). The pool then runs on the refused size,
// while the take-back makes Size say the size before it, for good: more
// tasks run than MaxWorkers says, and MaxWorkers when the stop returned
// is not the size the pool ran on (as TestSizeScheduleBoundaryRacingEachStop
// saw under load). Here change is called with a tell that first sends the
// resize message another call would (dispatch reads 3 and starts a third
// task), then lets a StopWait begin, then is refused.
func TestAChangeTheStopRefusedAfterDispatchReadItLeavesTheSizeThePoolRanOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, d := start(2, []Option{WithIdleTimeout(-1)})
		defer p.Stop()
		g := newGate()
		defer g.release()
		for range 3 {
			p.Submit(g.task())
		}
		synctest.Wait()
		require.Equal(t, 2, p.Status().Busy, "busy before the change")
		stopped := make(chan struct{})
		_, ok := p.size.change(&p.size.max, 3, func() error {
			require.NoError(t, p.tellResize(), "another call's resize message, taken after the swap")
			synctest.Wait()
			go func() { defer close(stopped); p.StopWait() }()
			synctest.Wait()
			return p.tellResize() // this change's own message: refused
		})
		require.False(t, ok, "the change the stop refused")
		s := p.Status()
		assert.Equal(t, 3, s.Busy, "busy while stopping: dispatch ran on the refused size")
		assert.LessOrEqual(t, s.Busy, s.MaxWorkers, "busy within MaxWorkers while stopping")
		g.open()
		<-stopped
		s = requireStoppedClean(t, p)
		assert.Equal(t, d.crew.max, s.MaxWorkers, "MaxWorkers when the stop returned: the size the pool ran on")
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
		s = requireStoppedClean(t, p)
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
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(ran.Load()), s.Completed, "round %d: completed", round)
		if stopWait {
			assert.Equal(t, s.Submitted, s.Completed, "round %d: StopWait ran every accepted task", round)
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
		p := New(2, WithIdleTimeout(-1), WithHooks(Hooks{Logger: slog.New(h)}))
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
		s := requireStoppedClean(t, p)
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
		s := requireStoppedClean(t, p)
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
		s = requireStoppedClean(t, p)
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
			requireStoppedClean(t, p)
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
		s := requireStoppedClean(t, p)
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
			requireStoppedClean(t, p)
		}
	})
}
