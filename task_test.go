package workerpool

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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests for the handles: Go and Task, Call and Future, their cancellation
// (by the caller's ctx, and by the pool's own Task.cancel), and the
// context a handle's fn gets. Group has its own file, group_test.go, and
// Shutdown shutdown_test.go.

// --- Task: outcomes ---

func TestGoReturnsFnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		ok := p.Go(t.Context(), func(context.Context) error { return nil })
		failed := p.Go(t.Context(), func(context.Context) error { return errTask })
		assert.NoError(t, ok.Wait(), "Wait of a task that returned nil")
		assert.Same(t, errTask, failed.Wait(), "Wait of a task that failed")
		assert.Same(t, errTask, failed.Wait(), "a second Wait")
		assert.True(t, isDone(failed.Done()), "Done closed after Wait")
	})
}

// A Task's Wait gives its outcome to any number of goroutines at once, and
// a cancel once the task has ended, of its ctx or by the pool (Task.cancel),
// changes nothing: Wait still reports the outcome fn returned.
func TestTaskWaitFromManyGoroutinesAndCancelAfterItEndedReportItsOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		ctx, cancel := context.WithCancel(context.Background())
		task := p.Go(ctx, func(context.Context) error { return errTask })
		var waits sync.WaitGroup
		for range 8 {
			waits.Go(func() { assert.Same(t, errTask, task.Wait()) })
		}
		waits.Wait()
		cancel()
		assert.Same(t, errTask, task.Wait(), "ctx canceled after finish")
		task.cancel()
		assert.Same(t, errTask, task.Wait(), "Task.cancel after finish")
	})
}

func TestTaskEffectsHappenBeforeWaitReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		n := 0
		require.NoError(t, p.Go(t.Context(), func(context.Context) error { n = 42; return nil }).Wait())
		assert.Equal(t, 42, n, "write made by fn") // -race checks the happens-before
	})
}

type ctxKey struct{}

func TestTaskContextCarriesCallerValuesAndDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		ctx, cancel := context.WithTimeout(context.WithValue(t.Context(), ctxKey{}, "v"), time.Minute)
		defer cancel()
		want, _ := ctx.Deadline()
		err := p.Go(ctx, func(ctx context.Context) error {
			assert.Equal(t, "v", ctx.Value(ctxKey{}), "value")
			deadline, ok := ctx.Deadline()
			assert.True(t, ok, "has a deadline")
			assert.Equal(t, want, deadline, "deadline")
			assert.NoError(t, ctx.Err(), "Err of a live task")
			assert.False(t, isClosed(ctx.Done()), "Done of a live task")
			return nil
		}).Wait()
		assert.NoError(t, err)
	})
}

func TestPanicInTaskIsPanicErrorWithTheTaskFrame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var handled atomic.Int64
		p := New(1, WithHooks(Hooks{Panic: func(any) { handled.Add(1) }}))
		err := p.Go(t.Context(), panickingFn).Wait()
		var pe *PanicError
		require.ErrorAs(t, err, &pe, "Wait's error")
		assert.Equal(t, "boom", pe.Value, "panic value")
		assert.Contains(t, string(pe.Stack), "workerpool.panickingFn", "stack shows the task's frame")
		assert.Equal(t, "workerpool: task panicked: boom", pe.Error(), "message")
		assert.Nil(t, pe.Unwrap(), "Unwrap of a non-error value")
		require.NoError(t, p.Go(t.Context(), func(context.Context) error { return nil }).Wait(), "the worker goes on")
		p.StopWait()
		assert.Zero(t, handled.Load(), "the pool's panic handler is not called for handles")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Panicked, "panicked")
		assert.Equal(t, uint64(2), s.Completed, "completed")
	})
}

func TestPanicWithErrorUnwrapsToIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1) // no handler: handles recover anyway
		defer p.Stop()
		err := p.Go(t.Context(), func(context.Context) error { panic(errTask) }).Wait()
		assert.ErrorIs(t, err, errTask, "errors.Is through the PanicError")
	})
}

func TestGoexitInTaskIsErrGoexitAndKeepsTheWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		err := p.Go(t.Context(), func(context.Context) error { runtime.Goexit(); return nil }).Wait()
		assert.Same(t, ErrGoexit, err, "Wait after Goexit")
		assert.NoError(t, p.Go(t.Context(), func(context.Context) error { return nil }).Wait(), "next task runs")
		synctest.Wait()
		assert.Equal(t, 1, p.Status().Workers, "workers after Goexit")
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(2), s.Completed, "completed")
	})
}

// --- Task: cancellation ---

func TestCancelOnQueuedTaskSkipsItWithoutAWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		blocker := blockOneWorker(t, p)
		p.Submit(func() {}) // ahead in the queue: dispatch is offering it to workers
		var ran atomic.Bool
		ctx, cancel := context.WithCancel(t.Context())
		task := p.Go(ctx, func(context.Context) error { ran.Store(true); return nil })
		synctest.Wait()
		require.Equal(t, 2, p.WaitingQueueSize(), "queued")
		cancel()
		assert.Same(t, context.Canceled, task.Wait(), "Wait returns at once, the worker still busy")
		assert.True(t, isDone(task.Done()), "Done")
		task.cancel() // the pool's own cancel, once the task is canceled, does nothing
		blocker.open()
		p.StopWait()
		assert.False(t, ran.Load(), "fn ran")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Canceled, "canceled")
		assert.Equal(t, uint64(2), s.Completed, "completed: the blocker and the task ahead")
		assert.Equal(t, uint64(2), p.counts.returnedWork(), "work that came back from a worker: not the canceled task")
	})
}

func TestDeadlineThatExpiresInTheQueueSkipsTheTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		blocker := blockOneWorker(t, p)
		p.Submit(func() {}) // ahead in the queue: dispatch is offering it to workers
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		var ran atomic.Int64
		fn := func(context.Context) error { ran.Add(1); return nil }
		waited, watched := p.Go(ctx, fn), p.Go(ctx, fn)
		done := watched.Done()
		start := time.Now()
		assert.Equal(t, context.DeadlineExceeded, waited.Wait(), "Wait, while the worker is still busy")
		assert.Equal(t, time.Second, time.Since(start), "Wait returned at the deadline")
		synctest.Wait()
		assert.True(t, isDone(done), "Done closed at the deadline")
		assert.Equal(t, context.DeadlineExceeded, watched.Wait(), "Wait of the watched task")
		blocker.open()
		p.StopWait()
		assert.Zero(t, ran.Load(), "fn ran")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(2), s.Canceled, "canceled")
		assert.Equal(t, uint64(2), p.counts.returnedWork(), "work that came back from a worker: not the canceled tasks")
	})
}

func TestGoWithDoneContextNeverRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		var ran atomic.Bool
		err := p.Go(ctx, func(context.Context) error { ran.Store(true); return nil }).Wait()
		assert.Same(t, context.Canceled, err, "Wait")
		p.StopWait()
		assert.False(t, ran.Load(), "fn ran")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Canceled, "canceled")
		assert.Zero(t, s.Workers, "no worker was started for it")
	})
}

func TestCallerCancelWhileRunningCancelsFnContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		ctx, cancel := context.WithCancel(t.Context())
		started := newGate()
		task := p.Go(ctx, func(ctx context.Context) error {
			started.open()
			<-ctx.Done()
			return fmt.Errorf("fn saw: %w", ctx.Err())
		})
		started.wait()
		cancel()
		err := task.Wait()
		assert.ErrorIs(t, err, context.Canceled, "fn's error")
		assert.EqualError(t, err, "fn saw: context canceled")
	})
}

// The pool's own cancel (Task.cancel) of a running task cancels fn's
// context, with context.Canceled as its cause, and Wait returns what fn
// returns.
func TestTaskCancelWhileRunningCancelsFnContextAndWaitsForFn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		started := newGate()
		var child context.Context
		task := p.Go(t.Context(), func(ctx context.Context) error {
			var cancel context.CancelFunc
			child, cancel = context.WithCancel(ctx)
			defer cancel()
			started.open()
			<-child.Done()
			return errTask
		})
		started.wait()
		task.cancel()
		assert.Same(t, errTask, task.Wait(), "Wait returns what fn returned")
		assert.Same(t, context.Canceled, context.Cause(child), "cause seen by a context derived inside fn")
	})
}

func TestTaskContextIsCanceledOnceFnReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		var looked, ignored context.Context
		require.NoError(t, p.Go(t.Context(), func(ctx context.Context) error {
			looked = ctx
			_ = ctx.Done() // fn looks at its context
			return nil
		}).Wait())
		require.NoError(t, p.Go(t.Context(), func(ctx context.Context) error { ignored = ctx; return nil }).Wait())
		for name, ctx := range map[string]context.Context{"looked at": looked, "ignored": ignored} {
			assert.Same(t, context.Canceled, ctx.Err(), "Err of a context fn %s", name)
			assert.True(t, isClosed(ctx.Done()), "Done of a context fn %s", name)
		}
	})
}

// TestTaskCanceledAfterHandOffIsSkippedByTheWorker drives the worker side of
// the race between Task.cancel and the hand-off directly: a worker that takes a
// task canceled after dispatch checked it skips it and counts it.
func TestTaskCanceledAfterHandOffIsSkippedByTheWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		var ran atomic.Bool
		fn := func(context.Context) error { ran.Store(true); return nil }
		canceled := &Task{fn: fn}
		canceled.init(p, t.Context(), canceled)
		canceled.cancel()
		count := workAsWorker(&canceled.job) // as the worker would
		assert.Same(t, &p.counts.skipped, count, "the canceled task's return counts as")
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		late := &Task{fn: fn}
		late.init(p, ctx, late)
		count = workAsWorker(&late.job) // its ctx ended after dispatch checked it
		assert.Same(t, &p.counts.skipped, count, "the late task's return counts as")
		assert.False(t, ran.Load(), "fn ran")
		assert.Same(t, context.Canceled, canceled.Wait(), "Wait of the canceled task")
		assert.Same(t, context.Canceled, late.Wait(), "Wait of the task whose ctx ended")
		assert.Equal(t, uint64(2), p.Status().Canceled, "canceled")
	})
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
		task.cancel()
		assert.Same(t, context.Canceled, task.Wait(), "Wait")
		close(ctx.release)
		synctest.Wait()
		assert.False(t, ran.Load(), "fn ran")
		s := p.Status()
		assert.Equal(t, uint64(1), s.Canceled, "canceled")
		assert.Zero(t, s.Completed, "completed")
		assert.Equal(t, p.counts.returnedWork(), p.counts.skipped.Load(), "a worker that got it skipped it")
	})
}

// With one P, a Task.cancel right after Go returns races the dispatcher taking
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
		task.cancel()
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
		assert.Equal(t, p.counts.returnedWork(), p.counts.skipped.Load(), "round %d: a worker that got it skipped it", round)
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
		ctx, cancel := context.WithCancel(context.Background())
		task := p.Go(ctx, func(context.Context) error { ran.Store(true); return nil })
		synctest.Wait()
		require.Equal(t, 1, p.WaitingQueueSize(), "queued at the front")
		cancel()
		assert.Same(t, context.Canceled, task.Wait(), "Wait")
		time.Sleep(time.Hour) // long after the cancel
		blocker.open()
		synctest.Wait()
		assert.False(t, ran.Load(), "fn ran")
		assert.Equal(t, uint64(1), p.counts.returnedWork(), "work that came back from a worker: only the blocker")
		assert.Zero(t, p.counts.skipped.Load(), "canceled jobs a worker took and skipped")
	})
}

// A canceled queued task has left Waiting and joined Canceled by the time
// its Wait returns. Each case cancels tasks queued behind a plain task that
// cannot start (both workers are blocked, or a Pause holds it), so that
// dispatch cannot reach them: once the handle's Wait (or the Group's) has
// returned, WaitingQueueSize and Status.Waiting no longer count them, and
// Status.Canceled does. The check is made right after Wait returns.
func TestCanceledQueuedTaskLeavesWaitingAtOnce(t *testing.T) {
	fn := func(context.Context) error { return nil }
	// blockSecondWorker blocks the second worker and queues a plain task
	// ahead of what the case queues next.
	blockSecondWorker := func(t *testing.T, p *WorkerPool) gate {
		second := newGate()
		p.Submit(second.task())
		p.Submit(func() {})
		synctest.Wait()
		require.Equal(t, 2, p.Status().Busy, "busy")
		return second
	}
	// requireQueued waits until dispatch has queued what was given to it.
	requireQueued := func(t *testing.T, p *WorkerPool, n int) {
		synctest.Wait()
		require.Equal(t, n, p.WaitingQueueSize(), "queued before the cancel")
	}
	cases := []struct {
		name string
		// cancelAndWait queues tasks, cancels them and waits for their
		// handles, with the first worker blocked. It returns how many it
		// canceled and the gate that blocks the second worker.
		cancelAndWait func(t *testing.T, p *WorkerPool) (canceled uint64, second gate)
	}{
		{"Task.cancel", func(t *testing.T, p *WorkerPool) (uint64, gate) {
			second := blockSecondWorker(t, p)
			task := p.Go(t.Context(), fn)
			requireQueued(t, p, 2)
			task.cancel()
			assert.Same(t, context.Canceled, task.Wait(), "Task.Wait")
			return 1, second
		}},
		{"Future.cancel", func(t *testing.T, p *WorkerPool) (uint64, gate) {
			second := blockSecondWorker(t, p)
			f := GoResult(t.Context(), p, func(context.Context) (int, error) { return 1, nil })
			requireQueued(t, p, 2)
			f.cancel()
			_, err := f.Wait()
			assert.Same(t, context.Canceled, err, "Future.Wait")
			return 1, second
		}},
		{"caller context canceled", func(t *testing.T, p *WorkerPool) (uint64, gate) {
			second := blockSecondWorker(t, p)
			ctx, cancel := context.WithCancel(t.Context())
			task := p.Go(ctx, fn)
			requireQueued(t, p, 2)
			cancel()
			assert.Same(t, context.Canceled, task.Wait(), "Task.Wait")
			return 1, second
		}},
		{"deadline expired in the queue", func(t *testing.T, p *WorkerPool) (uint64, gate) {
			second := blockSecondWorker(t, p)
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			task := p.Go(ctx, fn)
			requireQueued(t, p, 2)
			assert.Equal(t, context.DeadlineExceeded, task.Wait(), "Task.Wait")
			return 1, second
		}},
		{"group parent canceled", func(t *testing.T, p *WorkerPool) (uint64, gate) {
			second := blockSecondWorker(t, p)
			ctx, cancel := context.WithCancel(t.Context())
			g := p.Group(ctx)
			for range 3 {
				g.Go(fn)
			}
			requireQueued(t, p, 4)
			cancel()
			assert.Same(t, context.Canceled, g.Wait(), "Group.Wait")
			return 3, second
		}},
		{"group first error", func(t *testing.T, p *WorkerPool) (uint64, gate) {
			// The failing task runs on the second worker. A Pause then holds
			// what comes next, so that the worker the failure frees finds
			// nothing to run: the plain task ahead stays in front.
			failing := newGate()
			g := p.Group(t.Context())
			g.Go(func(context.Context) error { failing.wait(); return errTask })
			synctest.Wait()
			require.Equal(t, 2, p.Status().Busy, "busy")
			go p.Pause(t.Context()) // its barrier waits for the first worker; StopWait ends it
			synctest.Wait()
			require.Equal(t, "paused", stateOf(p.Status()), "state")
			p.Submit(func() {})
			for range 3 {
				g.Go(fn)
			}
			requireQueued(t, p, 4)
			failing.open()
			assert.Same(t, errTask, g.Wait(), "Group.Wait")
			return 3, newGate()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(2)
				first := newGate()
				p.Submit(first.task())
				synctest.Wait()

				canceled, second := c.cancelAndWait(t, p)
				waiting, s := p.WaitingQueueSize(), p.Status()
				assert.Equal(t, 1, waiting, "WaitingQueueSize: only the plain task ahead")
				assert.Equal(t, 1, s.Waiting, "Status.Waiting")
				assert.Equal(t, canceled, s.Canceled, "Status.Canceled")

				first.open()
				second.open()
				p.StopWait()
				s = requireStoppedClean(t, p)
				assert.Equal(t, canceled, s.Canceled, "Status.Canceled once stopped")
			})
		})
	}
}

// --- Task: stop ---

func TestGoAfterStopReportsErrStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		p.Stop()
		var ran atomic.Bool
		task := p.Go(t.Context(), func(context.Context) error { ran.Store(true); return nil })
		assert.Same(t, ErrStopped, task.Wait(), "Wait")
		assert.True(t, isDone(task.Done()), "Done")
		assert.False(t, ran.Load(), "fn ran")
		assert.Zero(t, p.Status().Submitted, "submitted")
	})
}

func TestStopAbandonsQueuedTasksAndAnswersTheirHandles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		blocker := blockOneWorker(t, p)
		tasks := make([]*Task, 3)
		for i := range tasks {
			tasks[i] = p.Go(t.Context(), func(context.Context) error { return nil })
		}
		stopped := make(chan struct{})
		go func() { p.Stop(); close(stopped) }()
		for i, task := range tasks {
			assert.Same(t, ErrStopped, task.Wait(), "Wait of task %d, before the running task ends", i)
		}
		blocker.open()
		<-stopped
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(3), s.Abandoned, "abandoned")
	})
}

func TestStopWaitRunsQueuedTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		blocker := blockOneWorker(t, p)
		var ran atomic.Int64
		tasks := make([]*Task, 3)
		for i := range tasks {
			tasks[i] = p.Go(t.Context(), func(context.Context) error { ran.Add(1); return nil })
		}
		go blocker.open()
		p.StopWait()
		for _, task := range tasks {
			assert.NoError(t, task.Wait())
		}
		assert.Equal(t, int64(3), ran.Load(), "ran")
		requireStoppedClean(t, p)
	})
}

// A canceled task that Stop later drops counts as canceled, not abandoned.
func TestStopCountsCanceledQueuedTasksAsCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		blocker := blockOneWorker(t, p)
		ctx, cancel := context.WithCancel(t.Context())
		waited := p.Go(ctx, func(context.Context) error { return nil })
		unwatched := p.Go(ctx, func(context.Context) error { return nil })
		canceled := p.Go(t.Context(), func(context.Context) error { return nil })
		canceled.cancel() // by the pool, as its own
		cancel()
		assert.Same(t, context.Canceled, waited.Wait())
		go blocker.open()
		p.Stop()
		assert.Same(t, context.Canceled, unwatched.Wait(), "a task no one watched")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(3), s.Canceled, "canceled")
		assert.Zero(t, s.Abandoned, "abandoned")
	})
}

// TestHandlesRacingStopAllReturn runs under the real scheduler: handles made,
// canceled and waited for from many goroutines while the pool stops. Every
// Wait returns, and the accounting balances.
func TestHandlesRacingStopAllReturn(t *testing.T) {
	for round := range 20 {
		p := New(3)
		var wg sync.WaitGroup
		var ran, errs atomic.Int64
		for i := range 8 {
			wg.Go(func() {
				for j := range 50 {
					ctx, cancel := context.WithCancel(context.Background())
					task := p.Go(ctx, func(context.Context) error { ran.Add(1); return nil })
					switch (i + j) % 4 {
					case 1:
						task.cancel()
					case 2:
						cancel()
					case 3:
						<-task.Done()
					}
					if task.Wait() != nil {
						errs.Add(1)
					}
					cancel()
				}
			})
		}
		switch round % 3 {
		case 0:
			p.Stop()
		case 1:
			p.StopWait()
		case 2:
			_ = p.Shutdown(context.Background())
		}
		wg.Wait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(ran.Load()), s.Completed, "completed == fns run")
		assert.Equal(t, int64(8*50), ran.Load()+errs.Load(), "every handle ran or reported why not")
	}
}

// --- Call and Future ---

func TestCallReturnsTypedValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		f := GoResult(t.Context(), p, func(context.Context) (string, error) { return "answer", nil })
		v, err := f.Wait()
		assert.NoError(t, err)
		assert.Equal(t, "answer", v, "value")
		assert.True(t, isDone(f.Done()), "Done")
		failed := GoResult(t.Context(), p, func(context.Context) (int, error) { return 7, errTask })
		n, err := failed.Wait()
		assert.Same(t, errTask, err)
		assert.Equal(t, 7, n, "value returned with the error")
	})
}

// Future.cancel races a Future's runs, with a stop racing both: whatever
// wins, Wait's value is that of the run whose outcome it reports (2 with nil
// from the second run, 1 with errFlaky from a first run that cancel kept
// from a retry), T's zero value with an error that says why the task
// never ran again, and the Future's Task, used as a *Task, reports the
// same error, as Done does.
func TestFutureCancelRacingItsRunsKeepsTheValueOfTheRunItReports(t *testing.T) {
	untilFailure(t, 300, func(t *testing.T, round int) {
		p := New(2, WithIdleTimeout(-1))
		var runs atomic.Int32
		f := GoResult(context.Background(), p, func(ctx context.Context) (int, error) {
			if runs.Add(1) == 1 {
				return 1, errFlaky
			}
			return 2, nil
		}, TaskOption{Retry: func(int, error) (time.Duration, bool) { return time.Duration(round%3) * time.Millisecond, true }})
		var wg sync.WaitGroup
		wg.Go(func() {
			time.Sleep(time.Duration(round%4) * time.Millisecond)
			f.cancel()
		})
		if round%5 == 0 {
			wg.Go(p.Stop)
		}
		v, err := f.Wait()
		assert.Equal(t, err, (&f.Task).Wait(), "round %d: the Future's Task reports the Future's error", round)
		assert.True(t, isDone(f.Done()), "round %d: Done once Wait returned", round)
		switch {
		case err == nil:
			assert.Equal(t, 2, v, "round %d: value of the second run", round)
		case err == errFlaky:
			assert.Equal(t, 1, v, "round %d: value of the first run, kept from a retry", round)
		case errors.Is(err, context.Canceled), errors.Is(err, ErrStopped):
			assert.Zero(t, v, "round %d: %v", round, err)
		default:
			assert.Fail(t, "Wait's error", "round %d: %v", round, err)
		}
		wg.Wait()
		p.Stop()
		requireStoppedClean(t, p)
	})
}

func TestCanceledFutureHasZeroValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		blocker := blockOneWorker(t, p)
		ctx, cancel := context.WithCancel(t.Context())
		f := GoResult(ctx, p, func(context.Context) (int, error) { return 1, nil })
		cancel()
		n, err := f.Wait()
		assert.Same(t, context.Canceled, err)
		assert.Zero(t, n, "value")
		blocker.open()
		p.StopWait()
	})
}

// Under Retry, a Future's value is the value of the run whose outcome Wait
// reports: T's zero value if that run panicked or called runtime.Goexit, or
// if the task settled while it waited for its next run, never an earlier
// run's value. Its first run returns 1 with an error, which is retried a
// second later.
func TestFutureValueUnderRetryIsTheLastRuns(t *testing.T) {
	every := func(int, error) (time.Duration, bool) { return time.Second, true }
	twoRuns := func(attempt int, _ error) (time.Duration, bool) { return time.Second, attempt < 2 }
	// runs makes a fn whose first run returns 1 and errFlaky, and whose
	// second does what second does.
	runs := func(second func() (int, error)) func(context.Context) (int, error) {
		n := 0
		return func(context.Context) (int, error) {
			if n++; n == 1 {
				return 1, errFlaky
			}
			return second()
		}
	}
	t.Run("last run panicked", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := New(1)
			defer p.Stop()
			f := GoResult(t.Context(), p, runs(func() (int, error) { panic("second run") }), TaskOption{Retry: twoRuns})
			v, err := f.Wait()
			var pe *PanicError
			assert.ErrorAs(t, err, &pe)
			assert.Zero(t, v, "value")
		})
	})
	t.Run("last run called Goexit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := New(1)
			defer p.Stop()
			f := GoResult(t.Context(), p, runs(func() (int, error) { runtime.Goexit(); return 2, nil }), TaskOption{Retry: every})
			v, err := f.Wait()
			assert.Same(t, ErrGoexit, err)
			assert.Zero(t, v, "value")
		})
	})
	t.Run("last run returned an error not retried", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := New(1)
			defer p.Stop()
			f := GoResult(t.Context(), p, runs(func() (int, error) { return 2, errTask }), TaskOption{Retry: twoRuns})
			v, err := f.Wait()
			assert.Same(t, errTask, err)
			assert.Equal(t, 2, v, "value")
		})
	})
	t.Run("abandoned by Stop while waiting for its next run", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := New(1)
			f := GoResult(t.Context(), p, runs(func() (int, error) { return 2, nil }), TaskOption{Retry: every})
			synctest.Wait()
			require.Equal(t, 1, p.Status().Scheduled, "waiting for its next run")
			p.Stop()
			v, err := f.Wait()
			assert.ErrorIs(t, err, ErrStopped)
			assert.ErrorIs(t, err, errFlaky)
			assert.Zero(t, v, "value")
			requireStoppedClean(t, p)
		})
	})
	t.Run("canceled (Future.cancel) while waiting for its next run", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := New(1)
			defer p.Stop()
			f := GoResult(t.Context(), p, runs(func() (int, error) { return 2, nil }), TaskOption{Retry: every})
			synctest.Wait()
			require.Equal(t, 1, p.Status().Scheduled, "waiting for its next run")
			f.cancel()
			v, err := f.Wait()
			assert.ErrorIs(t, err, context.Canceled)
			assert.ErrorIs(t, err, errFlaky)
			assert.Zero(t, v, "value")
		})
	})
	t.Run("expired in the queue before its next run", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := New(1, WithQueueTimeout(time.Second))
			defer p.Stop()
			t0 := time.Now()
			f := GoResult(t.Context(), p, runs(func() (int, error) { return 2, nil }), TaskOption{Retry: every})
			synctest.Wait()
			blocker := blockOneWorker(t, p) // due at 1s, the next run waits in the queue
			v, err := f.Wait()
			assert.Equal(t, 2*time.Second, time.Since(t0), "Wait returned when it expired")
			assert.ErrorIs(t, err, errExpired)
			assert.Zero(t, v, "value")
			blocker.open()
		})
	})
}

// --- argument checks ---

func TestHandleConstructorsRejectNilArguments(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		fn := func(context.Context) error { return nil }
		call := func(context.Context) (int, error) { return 0, nil }
		nilCtx := context.Context(nil)
		assert.PanicsWithValue(t, "workerpool: Go called with a nil context", func() { p.Go(nilCtx, fn) })
		assert.PanicsWithValue(t, "workerpool: Go called with a nil func", func() { p.Go(t.Context(), nil) })
		assert.PanicsWithValue(t, "workerpool: GoResult called with a nil context", func() { GoResult(nilCtx, p, call) })
		assert.PanicsWithValue(t, "workerpool: GoResult called with a nil func", func() { GoResult[int](t.Context(), p, nil) })
		assert.PanicsWithValue(t, "workerpool: GoResult called with a nil pool", func() { GoResult(t.Context(), nil, call) })
		assert.PanicsWithValue(t, "workerpool: Group called with a nil context", func() { p.Group(nilCtx) })
		assert.PanicsWithValue(t, "workerpool: Group.Go called with a nil func", func() { p.Group(t.Context()).Go(nil) })
		assert.PanicsWithValue(t, "workerpool: Group.SetLimit(0) would never run a task", func() { p.Group(t.Context()).SetLimit(0) })
		assert.PanicsWithValue(t, "workerpool: Shutdown called with a nil context", func() { _ = p.Shutdown(nilCtx) })
		assert.Zero(t, p.Status().Submitted, "nothing was submitted")
	})
}

// --- accounting and allocations with every kind of task ---

func TestAccountingBalancesWithHandles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		blockers := []gate{newGate(), newGate()}
		for _, b := range blockers {
			p.Submit(b.task())
		}
		ctx, cancel := context.WithCancel(t.Context())
		for i := range 12 {
			switch i % 4 {
			case 0:
				p.Go(ctx, func(context.Context) error { return nil })
			case 1:
				own, cancelOwn := context.WithCancel(t.Context())
				p.Go(own, func(context.Context) error { return nil })
				cancelOwn()
			case 2:
				p.Submit(func() {})
			case 3:
				GoResult(t.Context(), p, func(context.Context) (int, error) { return i, nil })
			}
		}
		cancel()
		go func() { blockers[0].open(); blockers[1].open() }()
		p.Stop()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(14), s.Submitted, "submitted")
		assert.Equal(t, uint64(6), s.Canceled, "canceled: those of the shared ctx and those of their own")
	})
}

func TestGoAndWaitAllocateAtMostTwice(t *testing.T) {
	p := New(4)
	defer p.Stop()
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	allocs := testing.AllocsPerRun(1000, func() { _ = p.Go(ctx, fn).Wait() })
	assert.LessOrEqual(t, allocs, 2.0, "allocations per Go and Wait: the Task and its channel")
}

// Go without options is one allocation of at most 160 bytes: the Task,
// which carries no option state. Go with options is at most one more: the
// options, out of line. Here for every option that carries no user
// pointer, and Go(…, Priority) into a waiting queue (a new level each time,
// as levels empty and refill).
func TestGoWithOptionsAllocs(t *testing.T) {
	if raceDetectorOn {
		t.Skip("allocation counts differ under -race")
	}
	p := New(4)
	defer p.StopWait()
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	base := testing.AllocsPerRun(500, func() { _ = p.Go(ctx, fn).Wait() })
	assert.Equal(t, 1.0, base, "allocations of Go without options")
	bytes := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = p.Go(ctx, fn).Wait()
		}
	}).AllocedBytesPerOp()
	assert.LessOrEqual(t, bytes, int64(160), "bytes of Go without options")
	for name, opts := range map[string][]TaskOption{
		"Priority":                 {TaskOption{Priority: 1}},
		"TaskOption{Priority: -7}": {TaskOption{Priority: -7}},
		"TaskOption{Weight: 2}":    {TaskOption{Weight: 2}},
		"Priority+Weight":          {TaskOption{Priority: 5, Weight: 1}},
		"Key":                      {TaskOption{Key: "account-1"}},
		"Key+Priority":             {TaskOption{Key: "account-1", Priority: 2}},
		"TaskOption{Delay: 0}":     {TaskOption{Delay: 0}}, // no option in effect: no option state
	} {
		got := testing.AllocsPerRun(500, func() { _ = p.Go(ctx, fn, opts...).Wait() })
		if got > base { // the handle and its options are one allocation
			t.Errorf("Go with %s: %v allocs, Go without options: %v", name, got, base)
		}
	}
	// Queued behind a busy pool: tasks of several levels wait, then run.
	var wg sync.WaitGroup
	block := make(chan struct{})
	queued := func(opts ...TaskOption) float64 {
		return testing.AllocsPerRun(50, func() {
			for range 4 {
				p.Submit(func() { <-block })
			}
			wg.Add(16)
			for i := range 16 {
				opts := opts
				if len(opts) > 0 {
					opts = []TaskOption{{Priority: i % 8}}
				}
				p.Go(ctx, func(context.Context) error { wg.Done(); return nil }, opts...)
			}
			for range 4 {
				block <- struct{}{}
			}
			wg.Wait()
		})
	}
	plain, ranked := queued(), queued(TaskOption{Priority: 0})
	if ranked > plain+16 {
		t.Errorf("16 queued Go with Priority over 8 levels: %v allocs, without: %v (one more each at most)", ranked, plain)
	}
}

// --- benchmarks ---

// BenchmarkGoWait is the Task round trip, to compare with SubmitWait's.
// "ctx-used" has a cancelable caller ctx and a fn that calls ctx.Done, which
// makes the task's context for real.
func BenchmarkGoWait(b *testing.B) {
	p := New(4)
	defer p.StopWait()
	b.Run("ctx-unused", func(b *testing.B) {
		ctx := context.Background()
		fn := func(context.Context) error { return nil }
		b.ReportAllocs()
		for b.Loop() {
			_ = p.Go(ctx, fn).Wait()
		}
	})
	b.Run("ctx-used", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		fn := func(ctx context.Context) error { _ = ctx.Done(); return nil }
		b.ReportAllocs()
		for b.Loop() {
			_ = p.Go(ctx, fn).Wait()
		}
	})
}

func BenchmarkCallWait(b *testing.B) {
	p := New(4)
	defer p.StopWait()
	ctx := context.Background()
	fn := func(context.Context) (int, error) { return 1, nil }
	b.ReportAllocs()
	for b.Loop() {
		_, _ = GoResult(ctx, p, fn).Wait()
	}
}

// BenchmarkGoOptions is the Task round trip, Go then Wait, on an idle pool
// of 4, without options ("none"), with TaskOption{Priority: 1} ("priority") and with
// Key ("key"). Go without options allocates its Task alone (at most 160
// B); with an option the Task and its option state are one allocation:
// compare allocs/op and B/op. A key costs its flow's bookkeeping in
// dispatch and no allocation (a key's state is reused as keys come and
// go).
func BenchmarkGoOptions(b *testing.B) {
	p := New(4)
	defer p.StopWait()
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	b.Run("none", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = p.Go(ctx, fn).Wait()
		}
	})
	b.Run("priority", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = p.Go(ctx, fn, TaskOption{Priority: 1}).Wait()
		}
	})
	b.Run("key", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = p.Go(ctx, fn, TaskOption{Key: "account-1"}).Wait()
		}
	})
}
