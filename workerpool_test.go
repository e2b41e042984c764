package workerpool

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --- submit, order, concurrency ---

func TestSubmitNeverBlocksOnBusyPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		g := newGate()
		for range 1000 {
			p.Submit(g.task()) // would deadlock the bubble if it blocked
		}
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 2, s.Busy, "busy")
		assert.Equal(t, 998, s.Waiting, "waiting")
		assert.Equal(t, 998, p.WaitingQueueSize(), "WaitingQueueSize")
		assert.Equal(t, uint64(1000), s.Submitted, "submitted")
		g.open()
	})
}

func TestTasksStartInSubmissionOrderOneWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		var r recorder
		for i := range 100 {
			p.Submit(r.task(i, nil))
		}
		p.StopWait()
		assert.Equal(t, seq(100), r.order(), "start order")
	})
}

func TestTasksStartInSubmissionOrderManyWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers, tasks = 3, 12
		p := New(workers)
		defer p.Stop()
		var r recorder
		gates := make([]gate, tasks)
		for i := range gates {
			gates[i] = newGate()
			p.Submit(r.task(i, gates[i].wait))
		}
		// Each time the oldest running task ends, exactly the next task in
		// submission order starts: the started set is always a prefix.
		for done := range tasks {
			synctest.Wait()
			started := min(done+workers, tasks)
			assert.ElementsMatch(t, seq(started), r.order(), "started after %d finished", done)
			gates[done].open()
		}
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
		var cancels []context.CancelFunc
		g := p.Group(context.Background())
		for i := range 40 {
			switch i % 5 {
			case 0:
				p.Submit(rec.task(i, nil))
			case 1:
				go func() { _ = p.DoWait(rec.task(i, nil)) }()
				synctest.Wait()
			case 2:
				ctx, cancel := context.WithCancel(context.Background())
				p.Go(ctx, func(context.Context) error { rec.task(i, nil)(); return nil })
				cancels = append(cancels, cancel)
			case 3:
				GoResult(context.Background(), p, func(context.Context) (int, error) { rec.task(i, nil)(); return i, nil })
			case 4:
				g.Go(func(context.Context) error { rec.task(i, nil)(); return nil })
			}
		}
		for i, cancel := range cancels {
			if i%2 == 1 {
				cancel()
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

func TestConcurrencyReachesButNeverExceedsSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size = 4
		p := New(size)
		defer p.Stop()
		var m concurrencyMeter
		g := newGate()
		for range 20 {
			p.Submit(m.wrap(g.wait))
		}
		synctest.Wait()
		assert.Equal(t, int64(size), m.running.Load(), "running while blocked")
		assert.Equal(t, size, p.Status().Workers, "workers")
		g.open()
		p.StopWait()
		assert.Equal(t, int64(size), m.peak.Load(), "peak concurrency")
	})
}

func TestConcurrencyUnderRealScheduling(t *testing.T) {
	const size = 8
	p := New(size)
	var m concurrencyMeter
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 2000 {
				p.Submit(m.wrap(runtime.Gosched))
			}
		})
	}
	wg.Wait()
	p.StopWait()
	assert.LessOrEqual(t, m.peak.Load(), int64(size), "peak concurrency")
	s := requireStoppedClean(t, p)
	assert.Equal(t, uint64(8000), s.Completed, "completed")
}

func TestSubmitDoesNotAllocate(t *testing.T) {
	p := New(4)
	defer p.Stop()
	task := func() {}
	allocs := testing.AllocsPerRun(1000, func() { p.Submit(task) })
	assert.Zero(t, allocs, "allocations per Submit")
}

func TestSubmitWaitDoesNotAllocate(t *testing.T) {
	p := New(4)
	defer p.Stop()
	task := func() {}
	allocs := testing.AllocsPerRun(1000, func() { p.SubmitWait(task) })
	assert.Zero(t, allocs, "allocations per SubmitWait")
}

// A plain Submit makes no allocation, also on a pool with the scheduling
// options (aging, expiry, a rate limit that never binds).
func TestSubmitAllocsWithPolicies(t *testing.T) {
	if raceDetectorOn {
		t.Skip("allocation counts differ under -race")
	}
	for name, opt := range map[string]Option{
		"aging":     WithPriorityAging(time.Millisecond),
		"expiry":    WithQueueTimeout(time.Hour),
		"ratelimit": WithRateLimit(1e12, 1000),
	} {
		p := New(4, opt)
		var wg sync.WaitGroup
		task := func() { wg.Done() }
		for range 2000 { // warm up buffers
			wg.Add(1)
			p.Submit(task)
		}
		wg.Wait()
		allocs := testing.AllocsPerRun(1000, func() { wg.Add(1); p.Submit(task) })
		wg.Wait()
		p.StopWait()
		if allocs > 0 {
			t.Errorf("Submit with %s: %v allocs", name, allocs)
		}
	}
}

// --- DoWait and SubmitWait ---

func TestDoWaitReturnsAfterTaskFinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		done := false
		require.NoError(t, p.DoWait(func() { time.Sleep(time.Second); done = true }))
		assert.True(t, done, "task effects visible after DoWait")
		p.SubmitWait(func() { done = false })
		assert.False(t, done, "task effects visible after SubmitWait")
	})
}

func TestDoWaitReturnsErrStoppedWhenStopAbandonsTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		running := newGate()
		p.Submit(running.task())
		var ran atomic.Bool
		result := make(chan error, 1)
		go func() { result <- p.DoWait(func() { ran.Store(true) }) }()
		synctest.Wait()
		stopReturned := make(chan struct{})
		go func() { p.Stop(); close(stopReturned) }()
		synctest.Wait()
		// DoWait returns as soon as its task is dropped, while Stop still
		// waits for the running task.
		select {
		case err := <-result:
			assert.ErrorIs(t, err, ErrStopped, "DoWait")
		default:
			t.Fatal("DoWait still waiting after Stop abandoned its task")
		}
		assert.False(t, isClosed(stopReturned), "Stop returned before the running task finished")
		running.open()
		<-stopReturned
		assert.False(t, ran.Load(), "abandoned task ran")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Abandoned, "abandoned")
	})
}

func TestSubmitWaitPanicsWhenStopAbandonsTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		running := newGate()
		p.Submit(running.task())
		panicked := make(chan any, 1)
		go func() {
			defer func() { panicked <- recover() }()
			p.SubmitWait(func() {})
		}()
		synctest.Wait()
		go func() { synctest.Wait(); running.open() }()
		p.Stop()
		r := <-panicked
		err, ok := r.(error)
		require.True(t, ok, "SubmitWait panic value %v", r)
		assert.ErrorIs(t, err, ErrStopped)
	})
}

func TestDoWaitWithStopWaitRunsTaskFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		running := newGate()
		p.Submit(running.task())
		var ran atomic.Bool
		result := make(chan error, 1)
		go func() { result <- p.DoWait(func() { ran.Store(true) }) }()
		synctest.Wait()
		go func() { synctest.Wait(); running.open() }()
		p.StopWait()
		assert.NoError(t, <-result, "DoWait")
		assert.True(t, ran.Load(), "task ran")
	})
}

func TestSubmitWaitInsideTaskIsEndedByExternalStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		innerErr := make(chan error, 1)
		p.Submit(func() { innerErr <- p.DoWait(func() {}) })
		synctest.Wait() // the documented deadlock: the only worker waits for itself
		require.Empty(t, innerErr, "DoWait inside a task returned early")
		p.Stop()
		assert.ErrorIs(t, <-innerErr, ErrStopped, "nested DoWait after Stop")
		requireStoppedClean(t, p)
	})
}

func TestDoWaitReturnsAfterHandledPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var handled atomic.Bool
		p := New(1, WithHooks(Hooks{Panic: func(any) {
			time.Sleep(time.Second) // DoWait must wait for the handler
			handled.Store(true)
		}}))
		defer p.Stop()
		require.NoError(t, p.DoWait(func() { panic("boom") }))
		assert.True(t, handled.Load(), "handler finished before DoWait returned")
		assert.NotPanics(t, func() { p.SubmitWait(func() { panic("again") }) }, "SubmitWait")
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(2), s.Panicked, "panicked")
	})
}

func TestDoWaitReturnsAfterGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		require.NoError(t, p.DoWait(runtime.Goexit))
		require.NoError(t, p.DoWait(func() {}), "pool still works")
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(2), s.Completed, "completed")
	})
}

func TestDoWaitRacingStopIsAnsweredTruthfully(t *testing.T) {
	// Stop races DoWait calls whose tasks are queued, on their way to a
	// worker, or running. Each call must say truthfully whether its task
	// ran, reused waiters must never mix tasks up, and a dropped task must
	// be counted as abandoned, not completed.
	for round := range 50 {
		p := New(2)
		var ran, wrong, okCalls atomic.Int64
		var callers sync.WaitGroup
		for c := range 4 {
			callers.Go(func() {
				for i := 0; ; i++ {
					var didRun bool
					err := p.DoWait(func() {
						didRun = true
						ran.Add(1)
						_ = [2]int{c, i}
					})
					if err != nil {
						assert.ErrorIs(t, err, ErrStopped)
						assert.False(t, didRun, "round %d: DoWait said ErrStopped but its task ran", round)
						return
					}
					if !didRun {
						wrong.Add(1)
					}
					okCalls.Add(1)
				}
			})
		}
		runtime.Gosched()
		p.Stop()
		callers.Wait()
		assert.Zero(t, wrong.Load(), "round %d: DoWait returned nil but its task did not run", round)
		assert.Equal(t, okCalls.Load(), ran.Load(), "round %d: tasks run", round)
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(ran.Load()), s.Completed, "round %d: completed", round)
	}
}

func TestDoWaitWorksInSuccessiveBubbles(t *testing.T) {
	// A waiter's channel belongs to the bubble that made it; waiters must
	// never travel from one bubble's pool to another's.
	for range 3 {
		synctest.Test(t, func(t *testing.T) {
			p := New(2)
			defer p.Stop()
			for range 10 {
				require.NoError(t, p.DoWait(func() {}))
			}
		})
	}
}

// --- panics and Goexit ---

func TestPanicHandlerRecoversAndWorkerGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu        sync.Mutex
			recovered []any
			stacks    []string
		)
		p := New(1, WithHooks(Hooks{Panic: func(r any) {
			mu.Lock()
			defer mu.Unlock()
			recovered = append(recovered, r)
			stacks = append(stacks, string(debug.Stack()))
		}}))
		p.Submit(panickingTask)
		var after atomic.Bool
		p.Submit(func() { after.Store(true) })
		p.StopWait()
		assert.True(t, after.Load(), "task after the panic ran")
		assert.Equal(t, []any{"boom"}, recovered, "recovered values")
		require.Len(t, stacks, 1)
		assert.Contains(t, stacks[0], "panickingTask", "handler sees the task's frames")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Panicked, "panicked")
		assert.Equal(t, uint64(2), s.Completed, "completed")
	})
}

// TestPanicWithoutHandlerCrashes runs itself in a child process: without a
// handler, a task's panic must crash the program like a plain goroutine's.
func TestPanicWithoutHandlerCrashes(t *testing.T) {
	if os.Getenv("WORKERPOOL_CRASH_CHILD") == "1" {
		p := New(1)
		p.Submit(panickingTask)
		p.StopWait()
		os.Exit(0) // reached only if the pool swallowed the panic
	}
	out := requireChildPanics(t, "TestPanicWithoutHandlerCrashes", "WORKERPOOL_CRASH_CHILD")
	assert.Contains(t, out, "panic: boom", "panic message")
	assert.Contains(t, out, "panickingTask", "stack shows the task")
}

// readyWorkers counts the workers parked on workerQueue: each non-blocking
// send of a probe succeeds only if a worker is ready to receive. The probes
// then finish and the workers are ready again. Probes bypass dispatch, so a
// test that uses this must not look at Completed or Pause afterwards.
func readyWorkers(p *WorkerPool) int {
	release := newGate()
	n := 0
	for {
		select {
		case p.workerQueue <- work{fn: release.wait}:
			n++
			continue
		default:
		}
		break
	}
	release.open()
	synctest.Wait()
	return n
}

func TestGoexitInTaskKeepsWorkerSlotAndStopWaitReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		for range 10 {
			p.Submit(runtime.Goexit)
		}
		var ran atomic.Int64
		g := newGate()
		for range 10 {
			p.Submit(func() { g.wait(); ran.Add(1) })
		}
		synctest.Wait()
		assert.Equal(t, 2, p.Status().Workers, "workers, both busy")
		g.open()
		synctest.Wait()
		assert.Equal(t, 2, readyWorkers(p), "ready worker goroutines")
		p.StopWait() // hung in gammazero/workerpool
		assert.Equal(t, int64(10), ran.Load(), "tasks after Goexit ran")
	})
}

func TestGoexitAccounting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3)
		for i := range 30 {
			if i%3 == 0 {
				p.Submit(runtime.Goexit)
			} else {
				p.Submit(func() {})
			}
		}
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(30), s.Completed, "completed")
	})
}

func TestGoexitWhilePanicHandlerInstalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var handled atomic.Int64
		p := New(1, WithHooks(Hooks{Panic: func(any) { handled.Add(1) }}))
		p.Submit(runtime.Goexit)
		p.Submit(panickingTask)
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, int64(1), handled.Load(), "handler calls")
		assert.Equal(t, uint64(2), s.Completed, "completed")
		assert.Equal(t, uint64(1), s.Panicked, "panicked")
	})
}

// --- idle workers ---

func TestIdleTimeoutRetiresOneWorkerPerPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4, WithIdleTimeout(time.Second))
		defer p.Stop()
		g := newGate()
		for range 4 {
			p.Submit(g.task())
		}
		synctest.Wait()
		g.open()
		synctest.Wait()
		require.Equal(t, 4, readyWorkers(p), "ready workers after the tasks")
		// The ticker started with the first worker; the first tick follows
		// the tasks, so nothing retires before a whole idle period passed.
		time.Sleep(3 * time.Second / 2)
		synctest.Wait()
		assert.Equal(t, 4, readyWorkers(p), "ready workers after 1.5 idle periods")
		for want := 3; want >= 0; want-- {
			time.Sleep(time.Second)
			synctest.Wait()
			assert.Equal(t, want, readyWorkers(p), "ready workers one period later")
			assert.Equal(t, want, p.Status().Workers, "Status.Workers")
		}
		var ran atomic.Bool
		p.SubmitWait(func() { ran.Store(true) })
		assert.True(t, ran.Load(), "task after retiring to zero ran")
		assert.Equal(t, 1, p.Status().Workers, "workers after a new task")
	})
}

func TestIdleTimeoutIsResetByIncomingTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithIdleTimeout(time.Second))
		defer p.Stop()
		p.SubmitWait(func() {})
		for range 10 {
			time.Sleep(time.Second / 2)
			p.SubmitWait(func() {})
			assert.Equal(t, 1, p.Status().Workers, "a worker retired while tasks kept coming")
		}
	})
}

func TestIdleTimeoutNeverRetiresBusyWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithIdleTimeout(time.Second))
		defer p.Stop()
		g := newGate()
		p.Submit(g.task())
		p.Submit(func() {})
		time.Sleep(time.Hour)
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 1, s.Workers, "the idle worker retired, the busy one stayed")
		assert.Equal(t, 1, s.Busy, "busy")
		g.open()
	})
}

func TestNegativeIdleTimeoutDisablesRetirement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3, WithIdleTimeout(-1))
		defer p.Stop()
		g := newGate()
		for range 3 {
			p.Submit(g.task())
		}
		synctest.Wait()
		g.open()
		time.Sleep(24 * time.Hour)
		synctest.Wait()
		assert.Equal(t, 3, readyWorkers(p), "ready workers after a day")
	})
}

func TestZeroIdleTimeoutMeansDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithIdleTimeout(time.Hour), WithIdleTimeout(0))
		defer p.Stop()
		p.SubmitWait(func() {})
		time.Sleep(2*defaultIdleTimeout - time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 1, p.Status().Workers, "before two default periods")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 0, p.Status().Workers, "after two default periods")
	})
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
			f := GoResult(context.Background(), p, func(context.Context) (*[1 << 16]byte, error) {
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

// --- bad input ---

func TestMaxWorkersBelowOneMeansOne(t *testing.T) {
	for _, n := range []int{0, -1, -100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(n)
				defer p.Stop()
				assert.Equal(t, 1, p.Size(), "Size")
				assert.Equal(t, 1, p.Status().MaxWorkers, "MaxWorkers")
				var m concurrencyMeter
				for range 5 {
					p.Submit(m.wrap(func() { time.Sleep(time.Second) }))
				}
				p.StopWait()
				assert.Equal(t, int64(1), m.peak.Load(), "peak concurrency")
			})
		})
	}
}

func TestNilTasksAreIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		p.Submit(nil)
		assert.NoError(t, p.Do(nil), "Do")
		assert.NoError(t, p.DoWait(nil), "DoWait")
		p.SubmitWait(nil)
		p.StopWait()
		assert.Equal(t, uint64(0), p.Status().Submitted, "nil tasks counted")
		// Ignored even once stopped, as in gammazero/workerpool.
		assert.NotPanics(t, func() { p.Submit(nil) }, "Submit(nil) after stop")
		assert.NoError(t, p.Do(nil), "Do(nil) after stop")
	})
}

func TestNilOptionIsIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, nil, WithIdleTimeout(time.Second), nil)
		defer p.Stop()
		p.SubmitWait(func() {})
		time.Sleep(2 * time.Second) // two idle periods: the option after the nil one applied
		synctest.Wait()
		assert.Zero(t, p.Status().Workers, "workers after two idle periods")
	})
}

func TestNilPanicHookMeansNone(t *testing.T) {
	cfg := newConfig([]Option{WithHooks(Hooks{Panic: nil})})
	assert.Nil(t, cfg.hooks.Panic, "no Panic hook")
	cfg = newConfig([]Option{WithHooks(Hooks{Panic: func(any) {}}), WithHooks(Hooks{TaskDropped: func(TaskInfo) {}})})
	assert.NotNil(t, cfg.hooks.Panic, "a later WithHooks without a Panic hook keeps the earlier one")
}

// --- benchmarks ---

// Benchmarks measure pool overhead: tasks do nothing, and the task func is
// made once so that only the pool's own allocations are counted.

func BenchmarkSubmit(b *testing.B) {
	for _, workers := range []int{1, 4, 64, 1024} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) { benchmarkSubmit(b, workers) })
	}
}

func BenchmarkSubmitWait(b *testing.B) {
	p := New(4)
	defer p.StopWait()
	task := func() {}
	b.ReportAllocs()
	for b.Loop() {
		p.SubmitWait(task)
	}
}

func BenchmarkSubmitConcurrent(b *testing.B) {
	const submitters, workers = 8, 8
	p, wg := New(workers), new(sync.WaitGroup)
	defer p.StopWait()
	task := wg.Done
	b.SetParallelism((submitters + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			wg.Add(1)
			p.Submit(task)
		}
	})
	wg.Wait()
}

// BenchmarkGoroutinePerTask is the baseline: no pool, one goroutine a task.
func BenchmarkGoroutinePerTask(b *testing.B) {
	wg := new(sync.WaitGroup)
	task := wg.Done
	b.ReportAllocs()
	for b.Loop() {
		wg.Add(1)
		go task()
	}
	wg.Wait()
}
