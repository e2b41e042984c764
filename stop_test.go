package workerpool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests for Stop and StopWait: what a stop does to queued and running
// tasks, calls that race the start of a stop (admission), a stop's first
// act holding from the moment it is called, and no goroutine of the pool
// running once a stop returns. Shutdown has its own file, shutdown_test.go.
//
// Many tests here, and in shutdown_test.go, group_test.go and task_test.go,
// pin down the stop paths with the public API alone (and small test
// helpers), so that they survive a rewrite of the internals.

// --- Stop and StopWait ---

func TestStopAbandonsQueuedTasksAndAccountsForThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		g := newGate()
		var ran atomic.Int64
		for range 10 {
			p.Submit(func() { g.wait(); ran.Add(1) })
		}
		synctest.Wait()
		go func() { synctest.Wait(); g.open() }()
		p.Stop()
		s := requireStoppedClean(t, p)
		assert.Equal(t, int64(2), ran.Load(), "running tasks finish")
		assert.Equal(t, uint64(10), s.Submitted, "submitted")
		assert.Equal(t, uint64(2), s.Completed, "completed")
		assert.Equal(t, uint64(8), s.Abandoned, "abandoned")
	})
}

func TestStopWaitRunsEveryQueuedTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3)
		var ran atomic.Int64
		g := newGate()
		for range 50 {
			p.Submit(func() { g.wait(); ran.Add(1) })
		}
		go func() { synctest.Wait(); g.open() }()
		p.StopWait()
		assert.Equal(t, int64(50), ran.Load(), "tasks run")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(50), s.Completed, "completed")
		assert.Zero(t, s.Abandoned, "abandoned")
	})
}

// submitCapturing submits a task that captures a fresh object and returns a
// weak pointer to that object.
func submitCapturing(p *WorkerPool) weak.Pointer[[64]int] {
	obj := new([64]int)
	p.Submit(func() { obj[0]++ })
	return weak.Make(obj)
}

func TestStopReleasesAbandonedClosuresAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		running := newGate()
		p.Submit(running.task())
		ref := submitCapturing(p)
		synctest.Wait()
		go p.Stop()
		synctest.Wait() // Stop is now waiting for the running task
		require.Equal(t, uint64(1), p.Status().Abandoned, "abandoned while stopping")
		runtime.GC()
		assert.Nil(t, ref.Value(), "abandoned closure still reachable while Stop waits")
		running.open()
		p.Stop()
	})
}

func TestNoTaskStartsAfterStopReturns(t *testing.T) {
	for round := range 50 {
		p := New(4)
		var stopped atomic.Bool
		var late atomic.Int64
		var submitters sync.WaitGroup
		for range 4 {
			submitters.Go(func() {
				for p.Do(func() {
					if stopped.Load() {
						late.Add(1)
					}
				}) == nil {
				}
			})
		}
		runtime.Gosched()
		if round%2 == 0 {
			p.Stop()
		} else {
			p.StopWait()
		}
		stopped.Store(true)
		submitters.Wait()
		assert.Zero(t, late.Load(), "round %d: tasks started after Stop returned", round)
		requireStoppedClean(t, p)
	}
}

// Tasks queued when the pool stops report ErrStopped and count as Abandoned, not Canceled.
func TestTasksQueuedAtStopAreAbandonedNotCanceled(t *testing.T) {
	// Tasks, Futures and group tasks are queued behind a busy worker when the
	// pool stops (Stop, or a Shutdown that gives up at once or at its deadline).
	// Wanted: each handle reports an error wrapping ErrStopped, the group's Wait
	// too, and Status counts every one in Abandoned and none in Canceled.
	// (Queued Tasks and Futures were already right; the group tasks after the
	// first were counted Canceled: the first one's ErrStopped, or the cut,
	// canceled their group.)
	modes := []struct {
		name string
		stop func(p *WorkerPool) error
	}{
		{"Stop", func(p *WorkerPool) error { p.Stop(); return nil }},
		{"ShutdownGivingUpAtOnce", func(p *WorkerPool) error { return p.Shutdown(canceledContext()) }},
		{"ShutdownGivingUpAtDeadline", func(p *WorkerPool) error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			return p.Shutdown(ctx)
		}},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1)
				blocker := blockOneWorker(t, p)
				var ran atomic.Int64
				fn := func(context.Context) error { ran.Add(1); return nil }
				tasks := []*Task{p.Go(t.Context(), fn), p.Go(t.Context(), fn)}
				futures := []*Future[int]{
					GoResult(t.Context(), p, func(context.Context) (int, error) { ran.Add(1); return 1, nil }),
					GoResult(t.Context(), p, func(context.Context) (int, error) { ran.Add(1); return 2, nil }),
				}
				g := p.Group(context.Background())
				for range 3 {
					g.Go(fn)
				}
				synctest.Wait()
				require.Equal(t, 7, p.WaitingQueueSize(), "queued behind the busy worker")

				stopped := make(chan error, 1)
				go func() { stopped <- mode.stop(p) }()
				synctest.Wait()
				time.Sleep(2 * time.Second) // past a Shutdown deadline (the bubble's clock)
				blocker.open()
				<-stopped

				for i, task := range tasks {
					assert.ErrorIs(t, task.Wait(), ErrStopped, "Task %d", i)
				}
				for i, f := range futures {
					_, err := f.Wait()
					assert.ErrorIs(t, err, ErrStopped, "Future %d", i)
				}
				assert.ErrorIs(t, g.Wait(), ErrStopped, "Group.Wait")
				assert.Zero(t, ran.Load(), "queued tasks that ran")
				s := requireStoppedClean(t, p)
				assert.Equal(t, uint64(7), s.Abandoned, "abandoned: 2 Tasks, 2 Futures, 3 group tasks")
				assert.Zero(t, s.Canceled, "canceled")
			})
		})
	}
}

func TestStopAndStopWaitAreIdempotentAndConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3)
		g := newGate()
		for range 20 {
			p.Submit(g.task())
		}
		synctest.Wait()
		var callers sync.WaitGroup
		for i := range 16 {
			callers.Go(func() {
				if i%2 == 0 {
					p.Stop()
				} else {
					p.StopWait()
				}
				// Every caller returns only once the pool fully stopped.
				assert.Equal(t, "stopped", stateOf(p.Status()), "state when caller %d returned", i)
				assert.Equal(t, 0, p.Status().Workers, "workers when caller %d returned", i)
			})
		}
		synctest.Wait()
		assert.Equal(t, "stopping", stateOf(p.Status()), "stopping while tasks run")
		g.open()
		callers.Wait()
		p.Stop()
		p.StopWait()
		requireStoppedClean(t, p)
	})
}

func TestStopDuringStopWaitAbandonsTheRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		var ran atomic.Int64
		g := newGate()
		p.Submit(g.task())
		for range 5 {
			p.Submit(func() { ran.Add(1) })
		}
		synctest.Wait()
		stopWaitReturned := make(chan struct{})
		go func() { p.StopWait(); close(stopWaitReturned) }()
		synctest.Wait()
		go func() { synctest.Wait(); g.open() }()
		p.Stop()
		<-stopWaitReturned
		assert.Zero(t, ran.Load(), "queued tasks ran after Stop cut StopWait short")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(5), s.Abandoned, "abandoned")
	})
}

func TestUnusedPoolStopsClean(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(8)
		assert.Equal(t, "running", stateOf(p.Status()))
		p.Stop()
		requireStoppedClean(t, p)
	})
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
		assert.Equal(t, "stopping", stateOf(s), "state")
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

// Handles racing every kind of stop, with Task.cancel calls (the pool's
// own) and context cancellations in flight: every Wait returns, and what the handles report
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
				tasks[i].cancel()
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

// --- admission racing stop ---

// submitOrRecover calls Submit and reports whether it was accepted; a
// rejection must be a panic with an error wrapping ErrStopped.
func submitOrRecover(t *testing.T, p *WorkerPool, task func()) (accepted bool) {
	defer func() {
		if r := recover(); r != nil {
			err, ok := r.(error)
			if assert.True(t, ok, "Submit panicked with a non-error %v", r) {
				assert.ErrorIs(t, err, ErrStopped)
			}
		}
	}()
	p.Submit(task)
	return true
}

func TestAdmissionRacingStopIsLinearizable(t *testing.T) {
	for round := range 20 {
		stopWait := round%2 == 0
		p := New(1 + round%4)
		var accepted, rejected, ran atomic.Int64
		var start sync.WaitGroup
		start.Add(1)
		var submitters sync.WaitGroup
		for s := range 8 {
			submitters.Go(func() {
				start.Wait()
				for range 200 {
					if s%2 == 0 {
						err := p.Do(func() { ran.Add(1) })
						if err == nil {
							accepted.Add(1)
						} else {
							assert.ErrorIs(t, err, ErrStopped)
							rejected.Add(1)
						}
						continue
					}
					if submitOrRecover(t, p, func() { ran.Add(1) }) {
						accepted.Add(1)
					} else {
						rejected.Add(1)
					}
				}
			})
		}
		start.Done()
		runtime.Gosched()
		if stopWait {
			p.StopWait()
		} else {
			p.Stop()
		}
		submitters.Wait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, int64(8*200), accepted.Load()+rejected.Load(), "round %d: every submit answered", round)
		assert.Equal(t, uint64(accepted.Load()), s.Submitted, "round %d: submitted", round)
		assert.Equal(t, uint64(ran.Load()), s.Completed, "round %d: completed", round)
		if stopWait {
			assert.Equal(t, accepted.Load(), ran.Load(), "round %d: StopWait runs every accepted task", round)
		}
	}
}

// A call that has begun its send when Stop begins is neither stranded nor
// lost: dispatch admits it before stopping. Inside a bubble, a caller left
// blocked on taskQueue fails the test at once as a deadlock.
func TestCallsInFlightAtStopAllReturn(t *testing.T) {
	for round := range 40 {
		synctest.Test(t, func(t *testing.T) {
			p := New(1 + round%3)
			ctx, cancel := context.WithCancel(t.Context())
			cancel() // each Pause ends as soon as its barrier is reached
			var ran, doneOK, waitedOK atomic.Int64
			var callers sync.WaitGroup
			for c := range 6 {
				callers.Go(func() {
					for !p.Stopped() {
						switch c % 3 {
						case 0:
							if p.Do(func() { ran.Add(1) }) == nil {
								doneOK.Add(1)
							}
						case 1:
							if p.DoWait(func() { ran.Add(1) }) == nil {
								waitedOK.Add(1)
							}
						case 2:
							p.Pause(ctx)
						}
					}
				})
			}
			runtime.Gosched()
			if round%2 == 0 {
				p.StopWait()
			} else {
				p.Stop()
			}
			callers.Wait()
			s := requireStoppedClean(t, p)
			assert.Equal(t, uint64(ran.Load()), s.Completed, "round %d: completed", round)
			assert.GreaterOrEqual(t, s.Submitted, uint64(doneOK.Load()+waitedOK.Load()), "round %d: every accepted call counted", round)
			if round%2 == 0 {
				assert.Equal(t, s.Submitted, s.Completed, "round %d: StopWait runs every accepted task", round)
			}
		})
	}
}

// A send that passed its stopping check before Stop began, but reaches
// taskQueue only after dispatch took Stop's message, is still admitted and
// run: dispatch waits for it instead of stranding it.
func TestSendInFlightAtStopIsAdmitted(t *testing.T) {
	for _, stop := range []string{"Stop", "StopWait"} {
		t.Run(stop, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1)
				p.taskSends.Add(1) // the straggler counts itself and passes its check
				stopped := make(chan struct{})
				go func() {
					defer close(stopped)
					if stop == "Stop" {
						p.Stop()
					} else {
						p.StopWait()
					}
				}()
				synctest.Wait()
				assert.Equal(t, "stopping", stateOf(p.Status()), "dispatch waits for the straggler")
				ran := false
				p.taskQueue <- message{task: func() { ran = true }}
				<-stopped
				s := requireStoppedClean(t, p)
				assert.Equal(t, uint64(1), s.Submitted, "the straggler's task is accepted")
				assert.Equal(t, stop == "StopWait", ran, "run by StopWait, abandoned by Stop")
			})
		})
	}
}

// A send that counted itself before Stop began but checks stopping only
// after it is refused, and wakes dispatch, which then finishes stopping
// without it.
func TestSendRefusedAtStopWakesDispatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		p.taskSends.Add(1) // the straggler counts itself, then is preempted
		stopped := make(chan struct{})
		go func() { p.Stop(); close(stopped) }()
		synctest.Wait()
		assert.Equal(t, "stopping", stateOf(p.Status()), "dispatch waits for the straggler")
		p.sig.sendRefused(&p.taskSends) // its check sees stopping closed
		<-stopped
		s := requireStoppedClean(t, p)
		assert.Zero(t, s.Submitted, "the refused send is not counted")
	})
}

func assertPanicsWithErrStopped(t *testing.T, f func(), what string) {
	t.Helper()
	defer func() {
		r := recover()
		err, ok := r.(error)
		if assert.True(t, ok, "%s: want a panic with an error, got %v", what, r) {
			assert.ErrorIs(t, err, ErrStopped, what)
		}
	}()
	f()
}

func TestSubmitAfterStopPanicsWithErrStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		p.Stop()
		assert.ErrorIs(t, p.Do(func() {}), ErrStopped, "Do")
		assert.ErrorIs(t, p.DoWait(func() {}), ErrStopped, "DoWait")
		assertPanicsWithErrStopped(t, func() { p.Submit(func() {}) }, "Submit")
		assertPanicsWithErrStopped(t, func() { p.SubmitWait(func() {}) }, "SubmitWait")
		assert.Equal(t, uint64(0), p.Status().Submitted, "rejected tasks are not counted")
	})
}

func TestDoFromTaskDuringStopWaitIsRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		g := newGate()
		var innerErr error
		p.Submit(func() {
			g.wait()
			innerErr = p.Do(func() {})
		})
		synctest.Wait()
		go p.StopWait()
		synctest.Wait()
		g.open()
		p.StopWait()
		assert.ErrorIs(t, innerErr, ErrStopped, "Do from a task once stopping began")
		requireStoppedClean(t, p)
	})
}

// --- the stop's first act holds from the moment it is called ---

// From the moment Stop, or a Shutdown that gives up, is called, no queued
// task is handed to a worker, even one that comes free before the stop
// message reaches the dispatcher (held here by the "pool stopping" log
// record): the queued task is abandoned, not run.
func TestNoQueuedTaskStartsOnceAbandoningStopIsCalled(t *testing.T) {
	stops := map[string]func(p *WorkerPool){
		"Stop":             (*WorkerPool).Stop,
		"ShutdownGivingUp": func(p *WorkerPool) { _ = p.Shutdown(canceledContext()) },
	}
	for name, stop := range stops {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				hold := newStallingHandler("pool stopping")
				letters := new(letterBox)
				p := New(1, WithHooks(Hooks{Logger: slog.New(hold), DeadLetter: letters.handle}))
				running := newGate()
				defer running.release()
				p.Submit(running.task())
				var ran atomic.Bool
				p.Submit(func() { ran.Store(true) })
				synctest.Wait()
				require.Equal(t, 1, p.WaitingQueueSize(), "the second task waits")

				stopped := make(chan struct{})
				go func() { stop(p); close(stopped) }()
				<-hold.stalled // abandoning has begun; the stop message is not sent yet
				running.open() // the worker comes free
				synctest.Wait()
				assert.False(t, ran.Load(), "a queued task started after %s was called", name)
				hold.resume()
				<-stopped
				assert.False(t, ran.Load(), "a queued task started after %s was called", name)
				s := requireStoppedClean(t, p)
				assert.Equal(t, uint64(1), s.Abandoned, "abandoned")
				if got := letters.got(); assert.Len(t, got, 1, "dead letters") {
					assert.ErrorIs(t, got[0].reason, ErrStopped, "the letter's reason")
				}
			})
		})
	}
}

// A submitter that waits for room under Block is refused with ErrStopped by
// a Stop, even when the jobs that Stop abandons free room before its stop
// message reaches the dispatcher: it is never admitted, and its task never
// runs.
func TestParkedSubmitterIsNotAdmittedOnceStopIsCalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hold := newStallingHandler("pool stopping")
		p := New(1, WithMaxWaiting(1, Block), WithHooks(Hooks{Logger: slog.New(hold)}))
		running := newGate()
		defer running.release()
		p.Submit(running.task())
		queued := p.Go(t.Context(), noopFn) // fills the queue's one place
		synctest.Wait()
		var ran atomic.Bool
		parked := make(chan error, 1)
		go func() { parked <- p.Do(func() { ran.Store(true) }) }()
		synctest.Wait()
		require.Empty(t, parked, "Do waits for room")

		stopped := make(chan struct{})
		go func() { p.Stop(); close(stopped) }()
		<-hold.stalled // abandoning has begun: the queued job frees its place
		synctest.Wait()
		select {
		case err := <-parked:
			assert.ErrorIs(t, err, ErrStopped, "Do returned before the stop message")
			parked <- err
		default:
		}
		hold.resume()
		running.open()
		<-stopped
		assert.ErrorIs(t, <-parked, ErrStopped, "the parked Do")
		assert.False(t, ran.Load(), "the parked task ran after Stop was called")
		assert.ErrorIs(t, queued.Wait(), ErrStopped, "the queued job")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(2), s.Submitted, "submitted: the blocker and the job")
		assert.Equal(t, uint64(1), s.Abandoned, "abandoned")
	})
}

// Under DropOldest, while a StopWait waits for scheduled tasks that fill the
// bound, every call is refused as stopped, never as a full queue: Do
// returns ErrStopped, Submit panics with it, the task reaches no dead-letter
// handler, and nothing counts in Rejected or reaches TaskDropped.
func TestDropOldestCallsDuringStopAreRefusedAsStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dropped atomic.Int64
		letters := new(letterBox)
		p := New(1, WithMaxWaiting(1, DropOldest), WithHooks(Hooks{DeadLetter: letters.handle}),
			WithHooks(Hooks{TaskDropped: func(TaskInfo) { dropped.Add(1) }}))
		scheduled := p.Go(t.Context(), noopFn, TaskOption{Delay: time.Second}) // fills the bound
		stopped := make(chan struct{})
		go func() { p.StopWait(); close(stopped) }()
		synctest.Wait()
		require.Equal(t, "stopping", stateOf(p.Status()), "StopWait waits for the scheduled task")

		assert.ErrorIs(t, p.Do(func() {}), ErrStopped, "Do")
		assert.ErrorIs(t, p.DoWait(func() {}), ErrStopped, "DoWait")
		assert.False(t, tryDo(p, func() {}), "TryDo")
		assert.ErrorIs(t, p.Go(t.Context(), noopFn).Wait(), ErrStopped, "Go")
		err, panicked := recovered(func() { p.Submit(func() {}) })
		assert.True(t, panicked, "Submit panics")
		assert.ErrorIs(t, err, ErrStopped, "Submit's panic")

		time.Sleep(time.Second)
		<-stopped
		assert.NoError(t, scheduled.Wait(), "the scheduled task ran")
		s := requireStoppedClean(t, p)
		assert.Zero(t, s.Rejected, "rejected")
		assert.Empty(t, letters.got(), "dead letters")
		assert.Zero(t, dropped.Load(), "TaskDropped calls")
	})
}

// A task heavier than the pool, given to Go, Call or Group.Go on a stopping
// pool, is refused because the pool stops: it reports ErrStopped, and is
// neither counted in Rejected nor told to TaskDropped.
func TestTooHeavyTaskOnStoppedPoolIsRefusedAsStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dropped atomic.Int64
		p := New(2, WithHooks(Hooks{TaskDropped: func(TaskInfo) { dropped.Add(1) }}))
		p.Stop()
		assert.ErrorIs(t, p.Go(t.Context(), noopFn, TaskOption{Weight: 3}).Wait(), ErrStopped, "Go")
		_, err := GoResult(t.Context(), p, func(context.Context) (int, error) { return 1, nil }, TaskOption{Weight: 3}).Wait()
		assert.ErrorIs(t, err, ErrStopped, "Call")
		g := p.Group(t.Context())
		g.Go(noopFn, TaskOption{Weight: 3})
		assert.ErrorIs(t, g.Wait(), ErrStopped, "Group.Go")
		s := p.Status()
		assert.Zero(t, s.Rejected, "rejected")
		assert.Zero(t, s.Submitted, "submitted")
		assert.Zero(t, dropped.Load(), "TaskDropped calls")
	})
}

// From the moment Stop is called no task goes to a worker that comes free
// after it (doc.go, Stopping). mayStartOnFreeWorker checks abandonBegun, then
// handOutAdmitted calls offer, which checks it again and, once it is set,
// refuses; handOutAdmitted then falls back to a blocking send on workerQueue,
// meant for a worker on its way to its receive. When the worker it counted
// was a new one it may start (fewer workers than the size), no worker is on
// its way: dispatch blocks until a running task ends, and hands that worker
// the task. Here a Go's job is admitted to a free worker from a queue with
// no room while Stop begins (dispatch is held in the job's ctx Err in
// between): the Go, which a stop must release at once, waits for the
// unrelated running task, and so does everything dispatch serves.
func TestStopReleasesASubmitterAdmittedToAFreeWorkerAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithMaxWaiting(0, Block), WithIdleTimeout(-1))
		running := newGate()
		defer running.release()
		p.Submit(running.task())
		synctest.Wait()
		busy := newFrameStallingContext(t.Context(), "(*dispatcher).admitJob(")
		defer busy.resume()
		made := make(chan *Task, 1)
		go func() { made <- p.Go(busy, noopFn) }() // a ticket: admitted to a new worker
		<-busy.stalled
		stopped := make(chan struct{})
		go func() { defer close(stopped); p.Stop() }()
		synctest.Wait()
		busy.resume()
		synctest.Wait()
		select {
		case task := <-made:
			assert.ErrorIs(t, task.Wait(), ErrStopped, "the Go's task")
		default:
			t.Error("Go still blocked after Stop, until an unrelated running task ends")
		}
		running.open()
		<-stopped
		requireStoppedClean(t, p)
	})
}

// blockedSendingIn reports whether some goroutine of the process is blocked
// in a channel send with frame on its stack.
func blockedSendingIn(frame string) bool {
	for _, block := range goroutineStacks(allStacks()) {
		header, _, _ := strings.Cut(block, "\n")
		if strings.Contains(header, "[chan send") && strings.Contains(block, frame) {
			return true
		}
	}
	return false
}

// The same window with a plain task, under -race: a Submit on a queue with
// no room, admitted to a free worker as Stop sets abandonBegun, is handed
// to the worker of the running task once that task ends, and runs, long
// after Stop was called. The round that hits it shows dispatch blocked in
// handOutAdmitted's send while the only worker is busy. (About one round in a
// thousand hits it with -race, one in tens of thousands without.)
func TestStopHandsNoTaskToAWorkerThatComesFreeAfterIt(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	for rounds := 1; rounds <= n; rounds++ {
		p := New(2, WithMaxWaiting(0, Block), WithIdleTimeout(-1))
		release, started := make(chan struct{}), make(chan struct{})
		p.Submit(func() { close(started); <-release })
		<-started
		var ran atomic.Bool
		submitted, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(submitted)
			_, _ = recovered(func() { p.Submit(func() { ran.Store(true) }) })
		}()
		for range rounds % 97 {
			runtime.Gosched()
		}
		go func() { defer close(stopped); p.Stop() }()
		stuck := false
		for spins := 1; !isClosed(submitted); spins++ {
			if spins%2000 == 0 && blockedSendingIn("(*dispatcher).handOutAdmitted(") {
				stuck = true
				break
			}
			runtime.Gosched()
		}
		close(release) // the running task ends: its worker comes free
		<-stopped
		<-submitted
		if stuck {
			t.Errorf("round %d: Stop was called while dispatch admitted a Submit to a free worker; "+
				"dispatch then waited for the busy worker and handed it the task (it ran: %v)", rounds, ran.Load())
			return
		}
	}
	t.Logf("%d rounds, none hit the window", n)
}

// --- no pool goroutine runs once a stop returns ---

// No pool goroutine is still running when Stop, StopWait or Shutdown returns.
func TestNoPoolGoroutineRunsAfterStopReturns(t *testing.T) {
	// Wanted: when the call returns, no function of this package is on any
	// goroutine's stack. The stack dump is taken right after the call returns,
	// with no polling and no sleeping. Pools of several workers whose tasks just
	// ran; in the idle-timer case a timer may be firing. Real scheduling: many
	// rounds, outside a bubble.
	var dump stackDump
	cases := []struct {
		name string
		opts []Option
		stop func(p *WorkerPool)
	}{
		{"Stop", nil, (*WorkerPool).Stop},
		{"StopWait", nil, (*WorkerPool).StopWait},
		{"Shutdown", nil, func(p *WorkerPool) { _ = p.Shutdown(context.Background()) }},
		{"StopWithIdleTimerFiring", []Option{WithIdleTimeout(time.Microsecond)}, (*WorkerPool).Stop},
	}
	const rounds = 400
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Not ours: the parent test's goroutine, and whatever other
			// tests left behind.
			before := poolGoroutines(dump.all())
			bad := 0
			var first string
			seen := map[string]int{}
			for range rounds {
				p := New(4, c.opts...)
				for range 8 {
					p.Submit(func() {})
				}
				require.NoError(t, p.DoWait(func() {}))
				c.stop(p)
				left := poolGoroutines(dump.all())
				for id := range before {
					delete(left, id)
				}
				if len(left) > 0 {
					bad++
					for _, block := range left {
						if first == "" {
							first = block
						}
						seen[poolFrame(block)]++
					}
				}
			}
			assert.Zero(t, bad, "rounds (of %d) where a pool goroutine was still running after %s returned (innermost pool frames seen: %v); first one:\n%s",
				rounds, c.name, seen, first)
		})
	}
}

// No code of this package runs once Stop returns, also when the Stop
// abandoned group tasks and so ended their groups.
func TestNoPackageCodeRunsAfterStopWithGroups(t *testing.T) {
	var dump stackDump
	before := poolGoroutines(dump.all())
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
		left := poolGoroutines(dump.all())
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

// --- every policy at once, stopped each way while tasks flow ---

// A stop of a pool under a mixed load, stopped in any of three ways at any
// moment, loses no task and never runs more at once than the size allows
// (see checkStopUnderMixedLoad).
func TestAStopUnderMixedLoadAccountsForEveryTask(t *testing.T) {
	checkStopsUnderMixedLoad(t, 1, time.Second)
}

// The same, from another seed.
func TestAStopUnderMixedLoadAccountsForEveryTaskFromAnotherSeed(t *testing.T) {
	checkStopsUnderMixedLoad(t, 99, time.Second)
}

// checkStopsUnderMixedLoad runs checkStopUnderMixedLoad for rounds 1, 2,
// ... of seed until budget has passed or a round fails, and then checks
// that they left no goroutine behind.
func checkStopsUnderMixedLoad(t *testing.T, seed uint64, budget time.Duration) {
	deadline := time.Now().Add(budget)
	baseG := runtime.NumGoroutine()
	rounds := 0
	for time.Now().Before(deadline) {
		rounds++
		checkStopUnderMixedLoad(t, seed, rounds)
		if t.Failed() {
			return
		}
	}
	// Let exited goroutines be reaped.
	for range 100 {
		if runtime.NumGoroutine() <= baseG+2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), baseG+2, "goroutines left after %d rounds of seed %d", rounds, seed)
	t.Logf("%d rounds", rounds)
}

// checkStopUnderMixedLoad runs round of seed: a pool of random size and
// options (idle timeout, priority aging, queue timeout, rate limit, a
// bound under any policy) takes a random sequence of calls on real
// scheduling (Do and DoWait; Tasks weighted, ranked, delayed, retrying,
// failing, canceled or with a deadline; groups, some limited; Pause,
// WaitIdle, Resize), and is stopped in one of three ways (Stop, StopWait,
// a Shutdown that gives up after 2ms) at a random point of it, while tasks
// flow. Once the stop returned it checks that:
//   - the pool stopped clean (requireStoppedClean), and every Wait returns;
//   - the slots of the running tasks never exceeded the size (see
//     mixedLoad.run for the bound across Resizes);
//   - each plain task that Do accepted ran or went to the dead-letter
//     handler, exactly once; one Do refused did neither; a DoWait's task
//     ran once if DoWait returned nil, and else never; no other task is
//     a dead letter, and each letter's reason is one that the pool's
//     options allow (see checkTasks);
//   - a Task ran at most its retries + 1 times, once if it never fails,
//     and its Wait returned nil exactly when it ran once and did not fail;
//     a group task, too, ran at most its retries + 1 times, and a group
//     whose Wait returned nil ran each of its tasks once, without failing;
//   - WaitIdle returned nil, ErrStopped or its ctx's deadline;
//   - Status agrees with the runs, the letters and the calls' errors (see
//     checkStatus).
//
// Every choice comes from a rand seeded by seed and round alone, so a
// failure names both, and this call with them makes the same calls again,
// in the same order (how goroutines interleave aside).
func checkStopUnderMixedLoad(t *testing.T, seed uint64, round int) {
	defer func() {
		if t.Failed() {
			t.Logf("failed in round %d of seed %d; checkStopUnderMixedLoad(t, %d, %d) makes the same calls", round, seed, seed, round)
		}
	}()
	rng := rand.New(rand.NewPCG(seed, uint64(round)))
	size := 1 + rng.IntN(4)
	m := &mixedLoad{t: t, sizes: []int{size}}
	box := new(letterBox)
	opts := []Option{
		WithHooks(Hooks{Panic: func(any) {}}),
		WithHooks(Hooks{DeadLetter: box.handle}),
		WithIdleTimeout(time.Duration(1+rng.IntN(5)) * time.Millisecond),
	}
	if rng.IntN(2) == 0 {
		opts = append(opts, WithPriorityAging(time.Duration(1+rng.IntN(3))*time.Millisecond))
	}
	if rng.IntN(3) == 0 {
		m.expires = true
		opts = append(opts, WithQueueTimeout(time.Duration(1+rng.IntN(10))*time.Millisecond))
	}
	if rng.IntN(3) == 0 {
		opts = append(opts, WithRateLimit(float64(2000+rng.IntN(5000)), 1+rng.IntN(4)))
	}
	if rng.IntN(3) == 0 {
		policy := Overflow(rng.IntN(3))
		m.dropsOldest = policy == DropOldest
		opts = append(opts, WithMaxWaiting(1+rng.IntN(8), policy))
	}
	p := New(size, opts...)

	ops := 20 + rng.IntN(80)
	stopAt := rng.IntN(ops + 1)
	stopWay := rng.IntN(3)
	var stopper sync.WaitGroup
	for i := range ops {
		if i == stopAt {
			stopper.Go(func() { stopOneWay(p, stopWay) })
		}
		switch rng.IntN(9) {
		case 0:
			tk := m.newTask(mixedDo, 1, false, 0)
			tk.err = p.Do(m.plainFn(tk))
		case 1, 2:
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(20))*time.Millisecond)
			w := 1 + rng.IntN(size)
			topts := []TaskOption{{Priority: rng.IntN(5) - 2, Weight: w}}
			if rng.IntN(2) == 0 {
				topts = append(topts, TaskOption{Delay: time.Duration(rng.IntN(3000)) * time.Microsecond})
			}
			retries := 0
			if rng.IntN(2) == 0 {
				retries = rng.IntN(4)
				topts = append(topts, TaskOption{Retry: Backoff(100*time.Microsecond, time.Millisecond, retries)})
			}
			tk := m.newTask(mixedGo, w, rng.IntN(2) == 0, retries)
			task := p.Go(ctx, m.fn(tk, time.Duration(rng.IntN(500))*time.Microsecond), topts...)
			if rng.IntN(4) == 0 {
				task.cancel()
			}
			m.await(&tk.err, func() error { defer cancel(); return task.Wait() })
		case 3:
			g := p.Group(context.Background())
			if rng.IntN(2) == 0 {
				g.SetLimit(1 + rng.IntN(2))
			}
			grp := new(mixedGroup)
			for range 1 + rng.IntN(4) {
				w := 1 + rng.IntN(size)
				tk := m.newTask(mixedGroupGo, w, rng.IntN(4) == 0, 2)
				grp.tasks = append(grp.tasks, tk)
				g.Go(m.fn(tk, time.Duration(rng.IntN(300))*time.Microsecond),
					TaskOption{Weight: w, Priority: rng.IntN(3), Delay: time.Duration(rng.IntN(2000)) * time.Microsecond},
					TaskOption{Retry: Backoff(50*time.Microsecond, 500*time.Microsecond, tk.retries)})
			}
			m.groups = append(m.groups, grp)
			m.await(&grp.err, g.Wait)
		case 4:
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(5))*time.Millisecond)
			go func() { p.Pause(ctx); cancel() }()
		case 5:
			err := new(error)
			m.idleWaits = append(m.idleWaits, err)
			m.await(err, func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				return p.WaitIdle(ctx)
			})
		case 6:
			if rng.IntN(3) == 0 {
				n := 1 + rng.IntN(4)
				m.mu.Lock()
				m.sizes = append(m.sizes, n) // before the call: see run
				m.mu.Unlock()
				p.Resize(n)
			}
		case 7:
			tk := m.newTask(mixedDoWait, 1, false, 0)
			fn := m.plainFn(tk)
			m.await(&tk.err, func() error { return p.DoWait(fn) })
		case 8:
			time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
		}
	}
	if stopAt == ops {
		stopper.Go(func() { stopOneWay(p, stopWay) })
	}
	stopped := make(chan struct{})
	go func() { stopper.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatalf("stop did not return in 5s (way %d): %+v\n%s", stopWay, p.Status(), allStacks())
	}
	// Everything the pool learned must be final now.
	s := requireStoppedClean(t, p)
	waitsDone := make(chan struct{})
	go func() { m.waits.Wait(); close(waitsDone) }()
	select {
	case <-waitsDone:
	case <-time.After(5 * time.Second):
		t.Fatalf("%d Waits not answered 5s after the stop returned: %+v\n%s", m.unanswered.Load(), s, allStacks())
	}
	m.mu.Lock()
	assert.Empty(t, m.over, "slots in use above the size")
	m.mu.Unlock()
	for i, err := range m.idleWaits {
		if *err != nil && !errors.Is(*err, ErrStopped) && !errors.Is(*err, context.DeadlineExceeded) {
			assert.Fail(t, "WaitIdle", "call %d of WaitIdle returned %v", i, *err)
		}
	}
	m.checkStatus(s, m.checkTasks(box.got()))
}

// stopOneWay stops p with Stop (way 0), StopWait (1), or a Shutdown that
// gives up after 2ms (any other way).
func stopOneWay(p *WorkerPool, way int) {
	switch way {
	case 0:
		p.Stop()
	case 1:
		p.StopWait()
	default:
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
		defer cancel()
		_ = p.Shutdown(ctx)
	}
}

// A mixedLoad is what a round of checkStopUnderMixedLoad gave its pool,
// and what the tasks saw as they ran.
type mixedLoad struct {
	t           *testing.T
	expires     bool // WithQueueTimeout: tasks may expire
	dropsOldest bool // WithMaxWaiting(n, DropOldest): tasks may be dropped

	mu    sync.Mutex
	sizes []int  // the sizes the pool was given: New's, then each Resize's, in the order of the calls
	inUse int    // the slots the running tasks hold: the sum of their weights
	over  string // the first run that found more slots in use than the size allows

	// The calls, made on the test's goroutine: what they gave the pool,
	// and the goroutines that wait for their outcomes (see await).
	tasks      []*mixedTask
	groups     []*mixedGroup
	idleWaits  []*error
	waits      sync.WaitGroup
	unanswered atomic.Int64

	// naming is set once the pool has stopped: a plain task's func, called
	// then, stores its task in named rather than running it (see
	// checkTasks).
	naming atomic.Bool
	named  *mixedTask
}

// A mixedTask is one task given to the pool: how it was given, how it
// behaves, what its call or Wait returned, and how often it ran.
type mixedTask struct {
	kind    string // mixedDo, mixedDoWait, mixedGo or mixedGroupGo
	id      int    // its place among the round's tasks
	weight  int
	fail    bool // each run returns errFlaky
	retries int  // the runs after the first its Retry allows, if it fails
	since   int  // the index in sizes of the size in force when it was given (see run)
	err     error
	runs    atomic.Int32
	letters int // dead letters that carried it
}

const (
	mixedDo      = "Do"
	mixedDoWait  = "DoWait"
	mixedGo      = "Go"
	mixedGroupGo = "Group.Go"
)

// A mixedGroup is a group's tasks and what its Wait returned.
type mixedGroup struct {
	tasks []*mixedTask
	err   error
}

func (m *mixedLoad) newTask(kind string, weight int, fail bool, retries int) *mixedTask {
	tk := &mixedTask{kind: kind, id: len(m.tasks), weight: weight, fail: fail, retries: retries, since: len(m.sizes) - 1}
	m.tasks = append(m.tasks, tk)
	return tk
}

// maxRuns is the most runs tk may have: one if it never fails, else one
// and its retries.
func (tk *mixedTask) maxRuns() int {
	if !tk.fail {
		return 1
	}
	return 1 + tk.retries
}

func (tk *mixedTask) String() string {
	return fmt.Sprintf("%s task %d (weight %d, fail %v, retries %d): %d runs, %d dead letters, error %v",
		tk.kind, tk.id, tk.weight, tk.fail, tk.retries, tk.runs.Load(), tk.letters, tk.err)
}

// plainFn is the func() of a plain task: it runs tk, or, once the pool has
// stopped, names it (see mixedLoad.naming).
func (m *mixedLoad) plainFn(tk *mixedTask) func() {
	return func() {
		if m.naming.Load() {
			m.named = tk
			return
		}
		m.run(tk, 0)
	}
}

// fn is the func of a Task or a group task: it runs tk for d, and fails if
// tk fails.
func (m *mixedLoad) fn(tk *mixedTask, d time.Duration) func(context.Context) error {
	return func(context.Context) error {
		m.run(tk, d)
		if tk.fail {
			return errFlaky
		}
		return nil
	}
}

// run is one run of tk: it counts the run, and holds tk's weight in slots
// for d.
//
// As it starts, it checks the slots in use against the largest size the
// pool was given since tk's call, max(sizes[tk.since:]), a bound that a
// correct pool keeps across Resizes:
//   - Dispatch starts a run only if the slots in use with it fit the size
//     it holds then; a Resize down lets the running tasks finish, and
//     starts none until they fit the new size. So the runs going now, this
//     one included, fit the size dispatch held when it started the last of
//     them: they were all out then.
//   - Dispatch started that last one no earlier than this run, which it
//     could start only once tk's call had handed tk over, and before now.
//   - The size dispatch held at any moment since tk's call is in
//     sizes[tk.since:]: the calls and the Resizes are made one after
//     another on the test's goroutine, a Resize returns once dispatch has
//     taken the change, which it applies before it starts anything handed
//     over after it, and each size goes into sizes before its Resize is
//     called.
//   - A body starts after its hand-off and ends before its worker gives
//     the slots back, so the sum here is never more than dispatch counts.
//
// A bound of the size now would fail a correct pool once a Resize down
// finds more running than the new size, and one of the size at the call
// once a Resize up lets more start; one of the largest size ever would
// pass a pool that ignores a Resize down.
func (m *mixedLoad) run(tk *mixedTask, d time.Duration) {
	tk.runs.Add(1)
	m.mu.Lock()
	m.inUse += tk.weight
	if bound := slices.Max(m.sizes[tk.since:]); m.inUse > bound && m.over == "" {
		m.over = fmt.Sprintf("%d slots in use as a run of %s task %d (weight %d) started; the largest size since its call is %d (sizes %v, the call at index %d)",
			m.inUse, tk.kind, tk.id, tk.weight, bound, m.sizes, tk.since)
	}
	m.mu.Unlock()
	if d > 0 {
		time.Sleep(d)
	}
	m.mu.Lock()
	m.inUse -= tk.weight
	m.mu.Unlock()
}

// await calls wait on a goroutine of its own and stores what it returns in
// *err; m.waits waits for all of them.
func (m *mixedLoad) await(err *error, wait func() error) {
	m.unanswered.Add(1)
	m.waits.Go(func() {
		*err = wait()
		m.unanswered.Add(-1)
	})
}

// mixedTally is what checkTasks counted, for checkStatus.
type mixedTally struct {
	// Tasks that ran: all of them, and those whose last run surely ended
	// them (no run could follow it), which Status counts in Completed.
	ran, ranToTheEnd uint64
	reruns           uint64 // runs after a task's first
	// Tasks surely accepted (Do returned nil, or they ran), and tasks that
	// may have been (all but those Do refused).
	acceptedSure, acceptedMost uint64
	refusedFull                uint64 // Do and DoWait calls refused with ErrQueueFull (not dropped)
	stopped, dropped, expired  uint64 // dead letters by reason
}

// checkTasks checks every task against how it was given, what its call or
// Wait returned and how often it ran; and every dead letter: it names the
// letter's task by calling the func (see mixedLoad.naming), which must be a
// Do's, and checks its reason against the pool's options.
func (m *mixedLoad) checkTasks(letters []letter) (n mixedTally) {
	t := m.t
	m.naming.Store(true)
	for i, l := range letters {
		m.named = nil
		l.task()
		tk := m.named
		if tk == nil || tk.kind != mixedDo {
			assert.Fail(t, "a dead letter that is not the task of a Do", "letter %d (%v): %v", i, l.reason, tk)
			continue
		}
		tk.letters++
		switch {
		case errors.Is(l.reason, ErrStopped):
			n.stopped++
		case errors.Is(l.reason, errDropped) && m.dropsOldest:
			n.dropped++
		case errors.Is(l.reason, errExpired) && m.expires:
			n.expired++
		default:
			assert.Fail(t, "a dead letter's reason", "%v, for %v (DropOldest %v, WithQueueTimeout %v)", l.reason, tk, m.dropsOldest, m.expires)
		}
	}
	for _, tk := range m.tasks {
		runs := int(tk.runs.Load())
		switch tk.kind {
		case mixedDo:
			if tk.err != nil {
				assert.True(t, runs == 0 && tk.letters == 0, "a task Do refused ran or went to the dead-letter handler: %v", tk)
			} else {
				assert.Equal(t, 1, runs+tk.letters, "a task Do accepted runs or goes to the dead-letter handler, exactly once: %v", tk)
			}
		case mixedDoWait:
			want := 0
			if tk.err == nil {
				want = 1
			}
			assert.Equal(t, want, runs, "a DoWait's task runs once if DoWait returns nil, and else never: %v", tk)
		case mixedGo:
			assert.LessOrEqual(t, runs, tk.maxRuns(), "a Task runs at most its retries + 1 times, once if it never fails: %v", tk)
			assert.Equal(t, !tk.fail && runs == 1, tk.err == nil, "a Task's Wait returns nil exactly when it ran once and did not fail: %v", tk)
		case mixedGroupGo:
			assert.LessOrEqual(t, runs, tk.maxRuns(), "a group task runs at most its retries + 1 times, once if it never fails: %v", tk)
		}
		if tk.kind != mixedDo || tk.err == nil {
			n.acceptedMost++
		}
		if runs > 0 || tk.kind == mixedDo && tk.err == nil {
			n.acceptedSure++
		}
		if runs > 0 {
			n.ran++
			n.reruns += uint64(runs - 1)
		}
		if runs == tk.maxRuns() {
			n.ranToTheEnd++
		}
		if (tk.kind == mixedDo || tk.kind == mixedDoWait) && refusedFull(tk.err) {
			n.refusedFull++
		}
	}
	for i, g := range m.groups {
		if g.err != nil {
			continue
		}
		for _, tk := range g.tasks {
			assert.True(t, tk.runs.Load() == 1 && !tk.fail, "group %d's Wait returned nil, but not every task ran once without failing: %v", i, tk)
		}
	}
	return n
}

// checkStatus checks the Status of the stopped pool against what
// checkTasks counted. Each accepted task lands in one bucket
// (requireStoppedClean checked the sum): a task that ran counts in
// Completed once it can run no more, or in the bucket of what settled it
// while it waited for a retry; each dead letter counts in the bucket of
// its reason, as do the tasks with a handle that never ran.
func (m *mixedLoad) checkStatus(s Status, n mixedTally) {
	t := m.t
	assert.Equal(t, n.reruns, s.Retried, "Retried: the runs after a task's first")
	assert.GreaterOrEqual(t, s.Completed, n.ranToTheEnd, "Completed: at least the tasks that ran and could run no more")
	assert.LessOrEqual(t, s.Completed, n.ran, "Completed: at most the tasks that ran")
	assert.Zero(t, s.Panicked, "Panicked: no task panics")
	assert.GreaterOrEqual(t, s.Submitted, n.acceptedSure, "Submitted: at least the tasks Do accepted and those that ran")
	assert.LessOrEqual(t, s.Submitted, n.acceptedMost, "Submitted: at most the tasks given, but those Do refused")
	assert.GreaterOrEqual(t, s.Abandoned, n.stopped, "Abandoned: at least the dead letters for ErrStopped")
	assert.GreaterOrEqual(t, s.Dropped, n.dropped, "Dropped: at least the dead letters for errDropped")
	assert.GreaterOrEqual(t, s.Expired, n.expired, "Expired: at least the dead letters for errExpired")
	assert.GreaterOrEqual(t, s.Rejected, n.refusedFull, "Rejected: at least the Do and DoWait calls refused with ErrQueueFull")
}

// A plain task that dispatch admits to start at once on a free worker,
// without room, as a Stop begins abandoning is given up with the queue, and
// gives back no room it never took: after the stop every place of the
// bound is free, and no more. (It joined the queue, and leaving it gave a
// place back, so a pool with no room had one.) Real scheduling, many
// rounds: a Stop races TryDo, Do and Submit on a queue with no room.
func TestAPlainTaskAdmittedToAWorkerAsStopBeginsGivesBackNoRoom(t *testing.T) {
	const rounds = 3000
	for range rounds {
		p := New(1, WithMaxWaiting(0, Reject), WithIdleTimeout(-1))
		stopped := make(chan struct{})
		go func() { p.Stop(); close(stopped) }()
		for range 3 {
			tryDo(p, func() {})
			_ = p.Do(func() {})
		}
		<-stopped
		requireStoppedClean(t, p)
		if t.Failed() {
			return
		}
	}
}
