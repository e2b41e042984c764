package workerpool

// Races between stops, cancels, observers and every kind of task: each test
// states the contract it checks. Most of them failed on an earlier version
// of the pool, in a review that tried to break it.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --- helpers ---

// gatedErrContext is a context that is never done, whose Err blocks once,
// on its first call after arm, until release is closed. Dispatch calls a
// Task's ctx.Err (through job.settleIfBlocked), so this holds dispatch at
// an exact point of acceptJob, as a preemption there would.
type gatedErrContext struct {
	context.Context
	armed   atomic.Bool
	entered chan struct{} // closed when Err blocks
	release chan struct{}
}

func newGatedErrContext() *gatedErrContext {
	return &gatedErrContext{Context: context.Background(), entered: make(chan struct{}), release: make(chan struct{})}
}

func (c *gatedErrContext) arm() { c.armed.Store(true) }

func (c *gatedErrContext) Err() error {
	if c.armed.CompareAndSwap(true, false) {
		close(c.entered)
		<-c.release
	}
	return c.Context.Err()
}

// statusViolation describes what is wrong with a Status whose State is
// StateStopped, or "" if it is exact.
func statusViolation(s Status) string {
	if s.State != StateStopped {
		return ""
	}
	if s.Workers != 0 || s.Busy != 0 || s.Waiting != 0 || s.Submitted != s.Completed+s.Abandoned+s.Canceled {
		return fmt.Sprintf("%+v", s)
	}
	return ""
}

// A Status that says StateStopped is exact, even while observers and late
// submitters race the stop: every count it holds was read after the stop
// finished.
func TestStatusThatSaysStoppedIsExact(t *testing.T) {
	deadline := time.Now().Add(1500 * time.Millisecond)
	bad, rounds := 0, 0
	var first string
	for ; rounds < 2000 && time.Now().Before(deadline); rounds++ {
		p := New(2, WithIdleTimeout(-1))
		for range 8 {
			p.Submit(func() {})
		}
		var quit atomic.Bool
		var wg sync.WaitGroup
		var mu sync.Mutex
		wg.Go(func() { // a late submitter: its refused sends count for a moment
			for p.Do(func() {}) == nil {
			}
			for !quit.Load() {
				_ = p.Do(func() {})
			}
		})
		wg.Go(func() { // an observer
			for !quit.Load() {
				if v := statusViolation(p.Status()); v != "" {
					mu.Lock()
					bad++
					if first == "" {
						first = v
					}
					mu.Unlock()
					return
				}
			}
		})
		runtime.Gosched()
		p.Stop()
		for range 100 { // let the observer and the late submitter go on a little
			runtime.Gosched()
		}
		quit.Store(true)
		wg.Wait()
		requireStoppedClean(t, p)
	}
	assert.Zero(t, bad, "rounds (of %d) with a Status that said StateStopped but was not exact; first: %s", rounds, first)
}

// While a Stop waits for a running task, the tasks it abandoned are counted
// in Abandoned and no longer in Waiting, and the running task is Busy.
func TestStopPublishesTheAbandonedQueueWhileTasksRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		blocker := blockOneWorker(t, p)
		for range 10 {
			p.Submit(func() {})
		}
		synctest.Wait()
		require.Equal(t, 10, p.WaitingQueueSize(), "queued")

		stopped := make(chan struct{})
		go func() { p.Stop(); close(stopped) }()
		time.Sleep(time.Hour) // the pool is quiet for an hour: dispatch has nothing else to do
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, StateStopping, s.State, "state")
		assert.Equal(t, uint64(10), s.Abandoned, "abandoned")
		assert.Equal(t, 0, p.WaitingQueueSize(), "WaitingQueueSize an hour after Stop abandoned the queue")
		assert.Equal(t, 0, s.Waiting, "Status.Waiting an hour after Stop abandoned the queue")
		assert.Equal(t, 1, s.Busy, "Status.Busy while the blocker runs")
		blocker.open()
		<-stopped
		requireStoppedClean(t, p)
	})
}

// While StopWait waits for the last task, which it took from the queue, that
// task is Busy, not Waiting.
func TestStopWaitCountsTheLastRunningTaskAsBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		blocker := blockOneWorker(t, p)
		second := newGate()
		p.Submit(second.task())
		synctest.Wait()
		require.Equal(t, 1, p.WaitingQueueSize(), "queued")

		stopped := make(chan struct{})
		go func() { p.StopWait(); close(stopped) }()
		synctest.Wait()
		blocker.open() // the queued task now runs, and StopWait waits for it
		time.Sleep(time.Hour)
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 0, s.Waiting, "Status.Waiting while the last task runs, an hour later")
		assert.Equal(t, 1, s.Busy, "Status.Busy while the last task runs")
		assert.Equal(t, 0, p.WaitingQueueSize(), "WaitingQueueSize")
		second.open()
		<-stopped
		requireStoppedClean(t, p)
	})
}

// Once Stop, or Shutdown with a done context, has begun, no task that was
// queued starts, even a plain one behind a job and with a worker free: the
// dispatcher is held (in a Task's ctx.Err) at the point where a preemption
// would leave it.
func TestNoQueuedTaskStartsOnceAbandoningBegan(t *testing.T) {
	for _, mode := range []struct {
		name string
		stop func(p *WorkerPool)
	}{
		{"ShutdownWithDoneContext", func(p *WorkerPool) { _ = p.Shutdown(canceledContext()) }},
		{"Stop", (*WorkerPool).Stop},
	} {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1)
				blocker := blockOneWorker(t, p)
				var ran atomic.Bool
				p.Submit(func() { ran.Store(true) }) // P: queued behind the blocker
				synctest.Wait()
				ctx := newGatedErrContext()
				ctx.arm()
				task := p.Go(ctx, noopFn)
				<-ctx.entered // dispatch is in acceptJob, between its look at abandoning and ctx.Err
				blocker.open()
				synctest.Wait() // the worker is idle now
				stopped := make(chan struct{})
				go func() { mode.stop(p); close(stopped) }()
				synctest.Wait() // the stop closed abandoning and stopping; it waits for dispatch
				require.True(t, p.Stopped(), "stopping has begun")
				close(ctx.release)
				<-stopped
				assert.ErrorIs(t, task.Wait(), ErrStopped, "the Task queued after P")
				assert.False(t, ran.Load(), "P, queued when the stop was called, started after the stop began")
				s := requireStoppedClean(t, p)
				assert.Equal(t, uint64(2), s.Abandoned, "abandoned: P and the Task")
			})
		})
	}
}

// A Stop during a StopWait's drain abandons every task that has not started
// yet, also the plain tasks behind the one the drain is looking at.
func TestStopDuringStopWaitDrainStartsNoMoreTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		p.Submit(func() {})
		p.Submit(func() {})
		synctest.Wait() // two idle workers
		pause, endPause := context.WithCancel(context.Background())
		defer endPause()
		p.Pause(pause)
		ctx := newGatedErrContext()
		task := p.Go(ctx, noopFn) // held by the pause, at the front
		var ran atomic.Int64
		for range 2 {
			p.Submit(func() { ran.Add(1) })
		}
		synctest.Wait()
		require.Equal(t, 3, p.WaitingQueueSize(), "held by the pause")
		ctx.arm()
		stopWaited := make(chan struct{})
		go func() { p.StopWait(); close(stopWaited) }()
		<-ctx.entered // drain is looking at the front Task
		stopped := make(chan struct{})
		go func() { p.Stop(); close(stopped) }()
		synctest.Wait() // Stop has closed abandoning and waits
		close(ctx.release)
		<-stopped
		<-stopWaited
		assert.ErrorIs(t, task.Wait(), ErrStopped, "the front Task, abandoned by the Stop")
		assert.Zero(t, ran.Load(), "plain tasks behind it, not started when Stop was called, that ran")
		requireStoppedClean(t, p)
	})
}

// Under real scheduling: when a Stop abandoned a DoWait at the front of the
// queue, the plain task behind it, queued before the Stop, never runs.
func TestTaskBehindAnAbandonedJobIsAbandonedToo(t *testing.T) {
	deadline := time.Now().Add(1500 * time.Millisecond)
	bad, both, rounds := 0, 0, 0
	for ; rounds < 3000 && time.Now().Before(deadline); rounds++ {
		p := New(1, WithIdleTimeout(-1))
		block := make(chan struct{})
		p.Submit(func() { <-block })
		jErr := make(chan error, 1)
		go func() { jErr <- p.DoWait(func() {}) }()
		for p.WaitingQueueSize() < 1 {
			runtime.Gosched()
		}
		var ran atomic.Bool
		p.Submit(func() { ran.Store(true) })
		go close(block)
		p.Stop()
		err := <-jErr
		if errors.Is(err, ErrStopped) {
			both++
			if ran.Load() {
				bad++
			}
		}
	}
	t.Logf("%d rounds, %d with J abandoned", rounds, both)
	assert.Zero(t, bad, "rounds where DoWait J was abandoned by Stop but plain task P, queued behind J, ran")
}

// A Task canceled while the dispatcher is taking it (held here in its
// ctx.Err, where a preemption would leave it) never runs its fn and counts
// as canceled; the worker it may still reach skips it.
func TestTaskCanceledWhileDispatchTakesItNeverRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		ctx := newGatedErrContext()
		ctx.arm()
		var ran atomic.Bool
		task := p.Go(ctx, func(context.Context) error { ran.Store(true); return nil })
		<-ctx.entered // dispatch received the job and is in acceptJob's first check
		task.Cancel()
		assert.Same(t, context.Canceled, task.Wait(), "Wait")
		close(ctx.release)
		synctest.Wait()
		assert.False(t, ran.Load(), "fn ran")
		s := p.Status()
		assert.Equal(t, uint64(1), s.Canceled, "canceled")
		assert.Zero(t, s.Completed, "completed")
		assert.Equal(t, p.returnedWork(), p.counts.skipped.Load(), "a worker that got it skipped it")
	})
}

// With one P, a Cancel right after Go returns races the dispatcher taking
// the task and the worker starting it. Each round's outcome is truthful:
// either fn ran and Wait returned its result, or fn never ran, Wait
// returned context.Canceled, the task counts as canceled, and a worker that
// got it skipped it.
func TestCancelRightAfterGoIsTruthful(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	untilFailure(t, 50, func(t *testing.T, round int) {
		p := New(1)
		var ran atomic.Bool
		task := p.Go(context.Background(), func(context.Context) error { ran.Store(true); return nil })
		task.Cancel()
		err := task.Wait()
		p.StopWait()
		s := requireStoppedClean(t, p)
		if ran.Load() {
			assert.NoError(t, err, "round %d: Wait of a task that ran", round)
			assert.Equal(t, uint64(1), s.Completed, "round %d: completed", round)
			return
		}
		assert.Same(t, context.Canceled, err, "round %d: Wait of a canceled task", round)
		assert.Equal(t, uint64(1), s.Canceled, "round %d: canceled", round)
		assert.Equal(t, p.returnedWork(), p.counts.skipped.Load(), "round %d: a worker that got it skipped it", round)
	})
}

// A Task canceled while it waits at the front of the queue, with the
// dispatcher blocked offering it to the workers, is dropped at once: the
// cancel wakes the dispatcher, and no worker takes the task later.
func TestCanceledFrontTaskTakesNoWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithIdleTimeout(-1)) // an idle tick would wake dispatch, which then drops the job
		defer p.Stop()
		blocker := blockOneWorker(t, p)
		var ran atomic.Bool
		task := p.Go(context.Background(), func(context.Context) error { ran.Store(true); return nil })
		synctest.Wait()
		require.Equal(t, 1, p.WaitingQueueSize(), "queued at the front")
		task.Cancel()
		assert.Same(t, context.Canceled, task.Wait(), "Wait")
		time.Sleep(time.Hour) // long after the cancel
		blocker.open()
		synctest.Wait()
		assert.False(t, ran.Load(), "fn ran")
		assert.Equal(t, uint64(1), p.returnedWork(), "work that came back from a worker: only the blocker")
		assert.Zero(t, p.counts.skipped.Load(), "canceled jobs a worker took and skipped")
	})
}

// A DoWait abandoned just as it is queued is counted once, and its waiter
// is not reused while the queue still holds it: Status balances after the
// Stop (and -race sees no race on the waiter).
func TestDoWaitAbandonedAsItIsQueuedIsCountedOnce(t *testing.T) {
	deadline := time.Now().Add(1500 * time.Millisecond)
	bad, rounds := 0, 0
	var first string
	for ; time.Now().Before(deadline); rounds++ {
		p := New(1, WithIdleTimeout(-1))
		block := make(chan struct{})
		p.Submit(func() { <-block })
		p.Submit(func() {}) // a plain task in front keeps the stale entry in the queue until abandonQueue
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				for p.DoWait(func() {}) == nil {
				}
				for range 4 { // refused: each leaves the recycled waiter pending
					_ = p.DoWait(func() {})
				}
			})
		}
		for p.WaitingQueueSize() < 3 {
			runtime.Gosched()
		}
		go func() { runtime.Gosched(); close(block) }()
		p.Stop()
		wg.Wait()
		s := p.Status()
		if s.Submitted != s.Completed+s.Abandoned+s.Canceled {
			bad++
			if first == "" {
				first = fmt.Sprintf("%+v", s)
			}
		}
	}
	t.Logf("%d rounds", rounds)
	assert.Zero(t, bad, "rounds with Submitted != Completed+Abandoned+Canceled after Stop; first: %s", first)
}

// No code of this package runs once Stop returns, also when the Stop
// abandoned group tasks and so ended their groups.
func TestNoPackageCodeRunsAfterStopWithGroups(t *testing.T) {
	buf := make([]byte, 1<<20)
	before := poolGoroutines(buf)
	deadline := time.Now().Add(1500 * time.Millisecond)
	bad, rounds := 0, 0
	seen := map[string]int{}
	for ; rounds < 500 && time.Now().Before(deadline); rounds++ {
		p := New(1, WithIdleTimeout(-1))
		require.NoError(t, p.DoWait(func() {}))
		block := make(chan struct{})
		p.Submit(func() { <-block })
		gs := make([]*Group, 4)
		for i := range gs {
			gs[i] = p.Group(context.Background())
			for range 4 {
				gs[i].Go(noopFn)
			}
		}
		close(block)
		p.Stop()
		left := poolGoroutines(buf)
		for id := range before {
			delete(left, id)
		}
		if len(left) > 0 {
			bad++
			for _, b := range left {
				seen[poolFrame(b)]++
			}
		}
		for _, g := range gs {
			_ = g.Wait()
		}
	}
	assert.Zero(t, bad, "rounds (of %d) with package code still running when Stop returned; frames: %v", rounds, seen)
}

// A worker waiting for work keeps nothing of the last task it ran: the
// closure's captures, and a Future's fn and value, can be collected.
func TestIdleWorkerKeepsNoTaskReachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithIdleTimeout(-1))
		defer p.Stop()
		plain := func() weak.Pointer[[1 << 16]byte] {
			big := new([1 << 16]byte)
			done := make(chan struct{})
			p.Submit(func() { big[0] = 1; close(done) })
			<-done
			return weak.Make(big)
		}()
		synctest.Wait()
		for range 3 {
			runtime.GC()
		}
		assert.True(t, plain.Value() == nil, "the last plain task's captured data, kept by the idle worker")

		value := func() weak.Pointer[[1 << 16]byte] {
			f := Call(context.Background(), p, func(context.Context) (*[1 << 16]byte, error) {
				return new([1 << 16]byte), nil
			})
			v, err := f.Wait()
			require.NoError(t, err)
			return weak.Make(v)
		}()
		synctest.Wait()
		for range 3 {
			runtime.GC()
		}
		assert.True(t, value.Value() == nil, "the last Future's value, kept by the idle worker after the caller dropped the Future")

		// Control: once the worker runs something else, both are released.
		p.SubmitWait(func() {})
		for range 3 {
			runtime.GC()
		}
		assert.True(t, plain.Value() == nil && value.Value() == nil, "control: released once the worker moved on")
	})
}

// A FuzzPool input with many tasks that call runtime.Goexit: a worker that
// Goexits may still be inside its last deferred call (the WaitGroup's Done)
// when the stop returns, which the stack checks accept (see
// finishingGoexit); nothing else of the pool may be running.
func TestGoexitWorkerRunsNoPoolCodeAfterStop(t *testing.T) {
	data := []byte("\x00P\xcbCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC\x1aC\xf9CCCCCCCCCCCCCCCCB\x01")
	deadline := time.Now().Add(1500 * time.Millisecond)
	runs := 0
	for ; time.Now().Before(deadline) && !t.Failed(); runs++ {
		synctest.Test(t, func(t *testing.T) { runOps(t, data) })
	}
	t.Logf("%d runs", runs)
}

// Idle retirement at exact fake-clock times: the clock starts with the first
// worker; a period that saw a task retires nobody; then one idle worker per
// whole period, never the busy one, never below zero, and a task after the
// pool shrank starts a worker again.
func TestIdleRetirementAtExactTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3, WithIdleTimeout(time.Second))
		defer p.Stop()
		busy, quick := newGate(), newGate()
		p.Submit(busy.task())
		p.Submit(quick.task()) // two more workers: no worker is ready
		p.Submit(quick.task())
		synctest.Wait()
		require.Equal(t, 3, p.Status().Workers)
		quick.open()
		synctest.Wait()
		time.Sleep(1500 * time.Millisecond) // t=1.5: the tick at 1s saw the tasks
		p.Submit(func() {})                 // a task in the period [1s, 2s)
		synctest.Wait()
		time.Sleep(1500*time.Millisecond - time.Nanosecond) // t=3s-1ns: the tick at 2s saw a task
		synctest.Wait()
		assert.Equal(t, 3, p.Status().Workers, "t=3s-1ns")
		time.Sleep(time.Nanosecond) // t=3s
		synctest.Wait()
		assert.Equal(t, 2, p.Status().Workers, "t=3s: one retired")
		time.Sleep(time.Second - time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, 2, p.Status().Workers, "t=4s-1ns")
		time.Sleep(time.Nanosecond) // t=4s
		synctest.Wait()
		assert.Equal(t, 1, p.Status().Workers, "t=4s: another")
		time.Sleep(10 * time.Second)
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 1, s.Workers, "the busy worker is never retired")
		assert.Equal(t, 1, s.Busy)
		busy.open()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, 0, p.Status().Workers, "down to zero once idle")
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Equal(t, 0, p.Status().Workers)
		require.NoError(t, p.DoWait(func() {}))
		assert.Equal(t, 1, p.Status().Workers, "a task after the pool shrank")
	})
}

// A Pause holds tasks while idle retirement removes every worker; a held
// Task canceled meanwhile leaves Waiting at once and never takes a worker;
// the pause's end runs the rest; a Stop during another Pause ends it.
func TestPauseCancelAndIdleRetirementTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithIdleTimeout(time.Second))
		p.SubmitWait(func() {})
		ctx, end := context.WithCancel(context.Background())
		p.Pause(ctx)
		var ran atomic.Int64
		p.Submit(func() { ran.Add(1) })
		task := p.Go(context.Background(), func(context.Context) error { ran.Add(10); return nil })
		p.Submit(func() { ran.Add(1) })
		time.Sleep(time.Hour)
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 0, s.Workers, "workers retired while paused")
		assert.Equal(t, 3, s.Waiting)
		task.Cancel()
		assert.Same(t, context.Canceled, task.Wait())
		assert.Equal(t, 2, p.WaitingQueueSize())
		end()
		synctest.Wait()
		assert.Equal(t, int64(2), ran.Load())
		assert.Equal(t, uint64(3), p.returnedWork(), "the canceled task took no worker")
		ctx2, end2 := context.WithCancel(context.Background())
		defer end2()
		p.Pause(ctx2)
		p.Submit(func() { ran.Add(1) })
		paused := make(chan struct{})
		go func() { p.Pause(context.Background()); close(paused) }() // queued behind the first
		synctest.Wait()
		p.Stop()
		<-paused
		s = requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Abandoned)
	})
}

// Shutdown's return value in its four cases.
func TestShutdownReturnValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		p.Submit(func() { time.Sleep(time.Second) })
		p.Submit(func() {})
		assert.NoError(t, p.Shutdown(context.Background()), "drained")

		p = New(1)
		p.Submit(func() { time.Sleep(time.Second) })
		p.Submit(func() {})
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		assert.ErrorIs(t, p.Shutdown(ctx), context.DeadlineExceeded, "gave up")
		assert.Equal(t, uint64(1), p.Status().Abandoned)

		p = New(1)
		g := newGate()
		p.Submit(g.task())
		p.Submit(func() {})
		res := make(chan error)
		go func() { res <- p.Shutdown(context.Background()) }()
		synctest.Wait()
		go p.Stop()
		synctest.Wait()
		g.open()
		err := <-res
		assert.ErrorIs(t, err, ErrStopped, "a Stop abandoned a task during it")
		assert.NotErrorIs(t, err, context.Canceled)

		p = New(1)
		assert.ErrorIs(t, p.Shutdown(canceledContext()), context.Canceled, "done ctx")
	})
}

// Group edge cases: Go from inside a group task with a limit, SetLimit(-1)
// releasing held tasks, the first error stopping held tasks, Wait from a
// task of another pool, Cancel after finish, many Waits.
func TestGroupEdgeCases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		g := p.Group(context.Background())
		g.SetLimit(1)
		var n atomic.Int64
		g.Go(func(context.Context) error {
			for range 3 {
				g.Go(func(context.Context) error { n.Add(1); return nil }) // held: the limit counts this task
			}
			return nil
		})
		other := New(1)
		defer other.Stop()
		assert.NoError(t, other.Go(context.Background(), func(context.Context) error { return g.Wait() }).Wait())
		assert.Equal(t, int64(3), n.Load())

		g = p.Group(context.Background())
		g.SetLimit(1)
		gate := newGate()
		g.Go(func(context.Context) error { gate.wait(); return errTask })
		var heldRan atomic.Bool
		for range 3 {
			g.Go(func(context.Context) error { heldRan.Store(true); return nil })
		}
		gate.open()
		assert.Same(t, errTask, g.Wait())
		assert.False(t, heldRan.Load(), "held tasks after the first error")

		g = p.Group(context.Background())
		g.SetLimit(1)
		gate = newGate()
		g.Go(func(context.Context) error { gate.wait(); return nil })
		g.Go(func(context.Context) error { n.Add(1); return nil })
		g.SetLimit(-1)
		synctest.Wait()
		assert.Equal(t, int64(4), n.Load(), "SetLimit(-1) released the held task at once")
		gate.open()
		assert.NoError(t, g.Wait())

		task := p.Go(context.Background(), func(context.Context) error { return errTask })
		var waits sync.WaitGroup
		for range 8 {
			waits.Go(func() { assert.Same(t, errTask, task.Wait()) })
		}
		waits.Wait()
		task.Cancel()
		assert.Same(t, errTask, task.Wait(), "Cancel after finish")
	})
}

// Start order is FIFO across plain tasks, DoWait calls, Tasks, Futures and
// group tasks, with canceled ones skipped, on one worker.
func TestFIFOAcrossEveryKindOfTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		blocker := blockOneWorker(t, p)
		var rec recorder
		var handles []*Task
		g := p.Group(context.Background())
		for i := range 40 {
			switch i % 5 {
			case 0:
				p.Submit(rec.task(i, nil))
			case 1:
				go func() { _ = p.DoWait(rec.task(i, nil)) }()
				synctest.Wait()
			case 2:
				tk := p.Go(context.Background(), func(context.Context) error { rec.task(i, nil)(); return nil })
				handles = append(handles, tk)
			case 3:
				Call(context.Background(), p, func(context.Context) (int, error) { rec.task(i, nil)(); return i, nil })
			case 4:
				g.Go(func(context.Context) error { rec.task(i, nil)(); return nil })
			}
		}
		for i, h := range handles {
			if i%2 == 1 {
				h.Cancel()
			}
		}
		blocker.open()
		require.NoError(t, g.Wait())
		synctest.Wait()
		var want []int
		for i := range 40 {
			if i%5 == 2 && (i/5)%2 == 1 {
				continue
			}
			want = append(want, i)
		}
		assert.Equal(t, want, rec.order())
	})
}

// A Task started with the context of a Task that a Shutdown cut, and queued
// when the Shutdown gave up, is abandoned: the stop ended its context.
func TestChildOfCutTaskIsAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		blocker := newGate()
		p.Submit(blocker.task()) // keeps the second worker busy: the child stays queued
		children := make(chan *Task, 1)
		outer := p.Go(context.Background(), func(ctx context.Context) error {
			children <- p.Go(ctx, noopFn)
			<-ctx.Done()
			return nil
		})
		child := <-children
		synctest.Wait()
		require.Equal(t, 1, p.WaitingQueueSize(), "the child is queued")
		res := make(chan error)
		go func() { res <- p.Shutdown(canceledContext()) }()
		synctest.Wait()
		blocker.open()
		assert.ErrorIs(t, <-res, context.Canceled, "Shutdown gave up")
		assert.NoError(t, outer.Wait(), "the outer Task returned when cut")
		assert.ErrorIs(t, child.Wait(), ErrStopped, "the child Task, never started because the Shutdown gave up")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Abandoned, "abandoned: the child")
		assert.Equal(t, uint64(0), s.Canceled, "canceled")
	})
}

// Finished groups nobody waits for are collectable while the pool runs,
// also when a task failed, when held tasks were dropped, and when queued
// tasks were canceled by the failure.
func TestFailedGroupNeverWaitedIsCollected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		blocker := blockOneWorker(t, p)
		refs := func() []weak.Pointer[Group] {
			var refs []weak.Pointer[Group]
			g := p.Group(context.Background())
			g.Go(func(context.Context) error { return errTask })
			for range 3 {
				g.Go(noopFn) // queued behind the failing one, canceled by it
			}
			refs = append(refs, weak.Make(g))
			g = p.Group(context.Background())
			g.SetLimit(1)
			g.Go(func(context.Context) error { return errTask })
			for range 3 {
				g.Go(noopFn) // held, dropped by the failure
			}
			return append(refs, weak.Make(g))
		}()
		blocker.open()
		synctest.Wait()
		for range 3 {
			runtime.GC()
		}
		for i, r := range refs {
			assert.True(t, r.Value() == nil, "group %d still reachable", i)
		}
		s := p.Status()
		assert.Equal(t, uint64(6), s.Canceled, "canceled: three queued, three held")
		assert.Equal(t, 0, s.Waiting)
	})
}

// Handles racing every kind of stop, with Cancel calls and context
// cancellations in flight: every Wait returns, and what the handles report
// matches Status once the stop returned.
func TestHandleOutcomesMatchStatusUnderStopRaces(t *testing.T) {
	deadline := time.Now().Add(1500 * time.Millisecond)
	rounds := 0
	for ; time.Now().Before(deadline); rounds++ {
		mode := rounds % 4
		p := New(2, WithIdleTimeout(-1))
		var ran atomic.Int64
		fn := func(context.Context) error { ran.Add(1); return nil }
		const n = 40
		tasks := make([]*Task, n)
		cancels := make([]context.CancelFunc, n)
		for i := range tasks {
			ctx, cancel := context.WithCancel(context.Background())
			cancels[i] = cancel
			tasks[i] = p.Go(ctx, fn)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := 0; i < n; i += 3 {
				tasks[i].Cancel()
			}
		})
		wg.Go(func() {
			for i := 1; i < n; i += 3 {
				cancels[i]()
			}
		})
		wg.Go(func() {
			for i := 2; i < n; i += 6 {
				<-tasks[i].Done()
			}
		})
		switch mode {
		case 0:
			p.Stop()
		case 1:
			p.StopWait()
		case 2:
			_ = p.Shutdown(canceledContext())
		case 3:
			go p.Stop()
			_ = p.Shutdown(context.Background())
		}
		wg.Wait()
		var stopped, canceled uint64
		for _, tk := range tasks {
			switch err := tk.Wait(); {
			case err == nil:
			case errors.Is(err, ErrStopped):
				stopped++
			case errors.Is(err, context.Canceled):
				canceled++
			default:
				t.Fatalf("round %d: unexpected %v", rounds, err)
			}
		}
		s := p.Status()
		if !assert.Equal(t, stopped, s.Abandoned, "round %d mode %d: abandoned", rounds, mode) ||
			!assert.Equal(t, canceled, s.Canceled, "round %d mode %d: canceled", rounds, mode) ||
			!assert.Equal(t, uint64(ran.Load()), s.Completed, "round %d mode %d: completed", rounds, mode) ||
			!assert.Equal(t, s.Submitted, s.Completed+s.Abandoned+s.Canceled, "round %d: invariant", rounds) {
			for _, c := range cancels {
				c()
			}
			return
		}
		for _, c := range cancels {
			c()
		}
	}
	t.Logf("%d rounds", rounds)
}

// Groups racing every kind of stop, with limits raised and lowered, Go from
// inside group tasks, failures and parent cancels in flight: every Wait
// returns, no fn starts after the stop returned, and Status is exact.
func TestGroupsUnderStopRaces(t *testing.T) {
	deadline := time.Now().Add(1500 * time.Millisecond)
	rounds := 0
	for ; time.Now().Before(deadline); rounds++ {
		mode := rounds % 4
		p := New(3, WithIdleTimeout(-1))
		var afterStop atomic.Bool
		var lateRuns atomic.Int64
		body := func(fail bool) func(context.Context) error {
			return func(ctx context.Context) error {
				if afterStop.Load() {
					lateRuns.Add(1)
				}
				if fail {
					return errTask
				}
				return nil
			}
		}
		groups := make([]*Group, 6)
		parents := make([]context.CancelFunc, len(groups))
		var wg sync.WaitGroup
		for i := range groups {
			ctx, cancel := context.WithCancel(context.Background())
			parents[i] = cancel
			g := p.Group(ctx)
			groups[i] = g
			if i%2 == 0 {
				g.SetLimit(1 + i%3)
			}
			wg.Go(func() {
				for j := range 20 {
					if j == 10 && i%3 == 0 {
						g.SetLimit(-1)
					}
					if j == 12 && i%3 == 1 {
						g.SetLimit(1)
					}
					g.Go(func(ctx context.Context) error {
						if j%7 == 0 {
							g.Go(body(false))
						}
						return body(i == 1 && j == 15)(ctx)
					})
				}
				if i == 5 {
					cancel()
				}
			})
		}
		runtime.Gosched()
		switch mode {
		case 0:
			p.Stop()
		case 1:
			p.StopWait()
		case 2:
			_ = p.Shutdown(canceledContext())
		case 3:
			go p.Stop()
			_ = p.Shutdown(context.Background())
		}
		afterStop.Store(true)
		wg.Wait()
		for i, g := range groups {
			done := make(chan error, 1)
			go func() { done <- g.Wait() }()
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, ErrStopped) && !errors.Is(err, errTask) && !errors.Is(err, context.Canceled) {
					t.Errorf("round %d group %d: unexpected %v", rounds, i, err)
				}
			case <-time.After(2 * time.Second):
				t.Fatalf("round %d mode %d: group %d Wait hung after the stop", rounds, mode, i)
			}
			parents[i]()
		}
		assert.Zero(t, lateRuns.Load(), "round %d: group fns that started after the stop returned", rounds)
		s := p.Status()
		if !assert.Equal(t, s.Submitted, s.Completed+s.Abandoned+s.Canceled, "round %d mode %d: invariant %+v", rounds, mode, s) {
			return
		}
	}
	t.Logf("%d rounds", rounds)
}
