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

// Tests for Go, Call, Group and Shutdown. Helpers live in workerpool_test.go.

var errTask = errors.New("task failed")

// blockOneWorker fills a one-worker pool with a task that holds the worker
// until the returned gate opens.
func blockOneWorker(t *testing.T, p *WorkerPool) gate {
	t.Helper()
	g := newGate()
	p.Submit(g.task())
	synctest.Wait()
	require.Equal(t, 1, p.Status().Busy, "busy after blocking the worker")
	return g
}

// isDone reports, without blocking, whether a handle's Done channel is closed.
func isDone(c <-chan struct{}) bool { return isClosed(c) }

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

func panickingFn(context.Context) error { panic("boom") }

func TestPanicInTaskIsPanicErrorWithTheTaskFrame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var handled atomic.Int64
		p := New(1, WithPanicHandler(func(any) { handled.Add(1) }))
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
		task := p.Go(t.Context(), func(context.Context) error { ran.Store(true); return nil })
		synctest.Wait()
		require.Equal(t, 2, p.WaitingQueueSize(), "queued")
		task.Cancel()
		assert.Same(t, context.Canceled, task.Wait(), "Wait returns at once, the worker still busy")
		assert.True(t, isDone(task.Done()), "Done")
		task.Cancel() // a second Cancel does nothing
		blocker.open()
		p.StopWait()
		assert.False(t, ran.Load(), "fn ran")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Canceled, "canceled")
		assert.Equal(t, uint64(2), s.Completed, "completed: the blocker and the task ahead")
		assert.Equal(t, uint64(2), p.returnedWork(), "work that came back from a worker: not the canceled task")
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
		assert.Equal(t, uint64(2), p.returnedWork(), "work that came back from a worker: not the canceled tasks")
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

func TestCancelWhileRunningCancelsFnContextAndWaitsForFn(t *testing.T) {
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
		task.Cancel()
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
// the race between Cancel and the hand-off directly: a worker that takes a
// task canceled after dispatch checked it skips it and counts it.
func TestTaskCanceledAfterHandOffIsSkippedByTheWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		var ran atomic.Bool
		fn := funcBody(func(context.Context) error { ran.Store(true); return nil })
		canceled := new(Task)
		canceled.init(p, t.Context(), fn)
		canceled.Cancel()
		count, _ := canceled.job.work() // as the worker would
		assert.Same(t, &p.counts.skipped, count, "the canceled task's return counts as")
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		late := new(Task)
		late.init(p, ctx, fn)
		count, _ = late.job.work() // its ctx ended after dispatch checked it
		assert.Same(t, &p.counts.skipped, count, "the late task's return counts as")
		assert.False(t, ran.Load(), "fn ran")
		assert.Same(t, context.Canceled, canceled.Wait(), "Wait of the canceled task")
		assert.Same(t, context.Canceled, late.Wait(), "Wait of the task whose ctx ended")
		assert.Equal(t, uint64(2), p.Status().Canceled, "canceled")
	})
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
		canceled.Cancel()
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
						task.Cancel()
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
		f := Call(t.Context(), p, func(context.Context) (string, error) { return "answer", nil })
		v, err := f.Wait()
		assert.NoError(t, err)
		assert.Equal(t, "answer", v, "value")
		assert.True(t, isDone(f.Done()), "Done")
		failed := Call(t.Context(), p, func(context.Context) (int, error) { return 7, errTask })
		n, err := failed.Wait()
		assert.Same(t, errTask, err)
		assert.Equal(t, 7, n, "value returned with the error")
	})
}

func TestCanceledFutureHasZeroValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		blocker := blockOneWorker(t, p)
		f := Call(t.Context(), p, func(context.Context) (int, error) { return 1, nil })
		f.Cancel()
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
			f := Call(t.Context(), p, runs(func() (int, error) { panic("second run") }), Retry(twoRuns))
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
			f := Call(t.Context(), p, runs(func() (int, error) { runtime.Goexit(); return 2, nil }), Retry(every))
			v, err := f.Wait()
			assert.Same(t, ErrGoexit, err)
			assert.Zero(t, v, "value")
		})
	})
	t.Run("last run returned an error not retried", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := New(1)
			defer p.Stop()
			f := Call(t.Context(), p, runs(func() (int, error) { return 2, errTask }), Retry(twoRuns))
			v, err := f.Wait()
			assert.Same(t, errTask, err)
			assert.Equal(t, 2, v, "value")
		})
	})
	t.Run("abandoned by Stop while waiting for its next run", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := New(1)
			f := Call(t.Context(), p, runs(func() (int, error) { return 2, nil }), Retry(every))
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
	t.Run("canceled while waiting for its next run", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := New(1)
			defer p.Stop()
			f := Call(t.Context(), p, runs(func() (int, error) { return 2, nil }), Retry(every))
			synctest.Wait()
			require.Equal(t, 1, p.Status().Scheduled, "waiting for its next run")
			f.Cancel()
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
			f := Call(t.Context(), p, runs(func() (int, error) { return 2, nil }), Retry(every))
			synctest.Wait()
			blocker := blockOneWorker(t, p) // due at 1s, the next run waits in the queue
			v, err := f.Wait()
			assert.Equal(t, 2*time.Second, time.Since(t0), "Wait returned when it expired")
			assert.ErrorIs(t, err, ErrExpired)
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
		assert.PanicsWithValue(t, "workerpool: Call called with a nil context", func() { Call(nilCtx, p, call) })
		assert.PanicsWithValue(t, "workerpool: Call called with a nil func", func() { Call[int](t.Context(), p, nil) })
		assert.PanicsWithValue(t, "workerpool: Call called with a nil pool", func() { Call(t.Context(), nil, call) })
		assert.PanicsWithValue(t, "workerpool: Group called with a nil context", func() { p.Group(nilCtx) })
		assert.PanicsWithValue(t, "workerpool: Group.Go called with a nil func", func() { p.Group(t.Context()).Go(nil) })
		assert.PanicsWithValue(t, "workerpool: Group.SetLimit(0) would never run a task", func() { p.Group(t.Context()).SetLimit(0) })
		assert.PanicsWithValue(t, "workerpool: Shutdown called with a nil context", func() { _ = p.Shutdown(nilCtx) })
		assert.Zero(t, p.Status().Submitted, "nothing was submitted")
	})
}

// --- Shutdown ---

func TestShutdownThatFinishesInTimeReturnsNil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		var ran atomic.Int64
		tasks := make([]*Task, 10)
		for i := range tasks {
			tasks[i] = p.Go(t.Context(), func(context.Context) error {
				time.Sleep(time.Second)
				ran.Add(1)
				return nil
			})
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		start := time.Now()
		assert.NoError(t, p.Shutdown(ctx), "Shutdown")
		assert.Equal(t, 5*time.Second, time.Since(start), "ten 1s tasks on two workers")
		for _, task := range tasks {
			assert.NoError(t, task.Wait())
		}
		assert.Equal(t, int64(10), ran.Load(), "ran")
		requireStoppedClean(t, p)
		assert.Same(t, ErrStopped, p.Do(func() {}), "Do after Shutdown")
	})
}

func TestShutdownThatGivesUpAbandonsQueueAndCancelsRunningTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3)
		plain := newGate()
		p.Submit(plain.task()) // cannot be canceled: Shutdown waits for it
		looking := p.Go(t.Context(), func(ctx context.Context) error {
			<-ctx.Done()
			return context.Cause(ctx)
		})
		var errAfterCut error
		notLooking := p.Go(t.Context(), func(ctx context.Context) error {
			time.Sleep(2 * time.Second) // past the cut, without looking at ctx
			errAfterCut = ctx.Err()
			return nil
		})
		synctest.Wait()
		queued := []*Task{
			p.Go(t.Context(), func(context.Context) error { return nil }),
			p.Go(t.Context(), func(context.Context) error { return nil }),
		}
		p.Submit(func() {})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		shutdown := make(chan error)
		go func() { shutdown <- p.Shutdown(ctx) }()

		assert.ErrorIs(t, looking.Wait(), ErrStopped, "cause seen by a running task")
		assert.Equal(t, time.Second, time.Since(start), "running task canceled at the deadline")
		for i, task := range queued {
			assert.Same(t, ErrStopped, task.Wait(), "queued task %d", i)
		}
		assert.NoError(t, notLooking.Wait())
		assert.Same(t, context.Canceled, errAfterCut, "Err seen after the cut by a task that had not looked")
		plain.open()
		assert.Equal(t, context.DeadlineExceeded, <-shutdown, "Shutdown")
		assert.Equal(t, 2*time.Second, time.Since(start), "Shutdown waited for the running tasks")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(3), s.Abandoned, "abandoned: two handles and a plain task")
		assert.Equal(t, uint64(3), s.Completed, "completed")
	})
}

func TestShutdownThatGivesUpCancelsRunningGroupTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		g := p.Group(t.Context())
		for range 3 { // two run, one waits in the queue
			g.Go(func(ctx context.Context) error {
				<-ctx.Done()
				return context.Cause(ctx)
			})
		}
		synctest.Wait()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		assert.Equal(t, context.DeadlineExceeded, p.Shutdown(ctx), "Shutdown")
		assert.ErrorIs(t, g.Wait(), ErrStopped, "the group's first error")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(2), s.Completed, "completed")
	})
}

// Tasks that looked at their context, and groups, are listed for a Shutdown
// that might give up; they leave the list when they end.
func TestLiveListEmptiesWhenTasksAndGroupsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		require.NoError(t, p.Go(t.Context(), func(ctx context.Context) error { _ = ctx.Done(); return nil }).Wait())
		g := p.Group(t.Context())
		g.Go(func(context.Context) error { return nil })
		require.NoError(t, g.Wait())
		p.live.mu.Lock()
		defer p.live.mu.Unlock()
		assert.Empty(t, p.live.ctxs, "contexts still listed")
	})
}

// The pool keeps its groups weakly, for a Shutdown that gives up, and drops
// the collected ones from its list as it grows: making many short-lived
// groups does not grow it without bound.
func TestLiveGroupsArePrunedOnceCollected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		for range 20 {
			for range 50 {
				g := p.Group(context.Background())
				g.Go(func(context.Context) error { return nil })
				require.NoError(t, g.Wait())
			}
			runtime.GC()
		}
		p.live.mu.Lock()
		defer p.live.mu.Unlock()
		assert.Less(t, len(p.live.groups), 150, "groups listed after 1,000 made and collected")
	})
}

func TestShutdownWithDoneContextCutsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		running := p.Go(t.Context(), func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
		queued := p.Go(t.Context(), func(context.Context) error { return nil })
		synctest.Wait()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		assert.Same(t, context.Canceled, p.Shutdown(ctx), "Shutdown")
		assert.Same(t, context.Canceled, running.Wait(), "running task")
		assert.Same(t, ErrStopped, queued.Wait(), "queued task")
		requireStoppedClean(t, p)
	})
}

// Shutdown, StopWait and Stop all at once: every caller returns once the
// pool stopped, and because the Stop abandoned queued tasks, no Shutdown
// reports success.
func TestShutdownIsSafeWithStopAndItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		blocker := blockOneWorker(t, p)
		tasks := make([]*Task, 5)
		for i := range tasks {
			tasks[i] = p.Go(t.Context(), func(context.Context) error { return nil })
		}
		var wg sync.WaitGroup
		results := make(chan error, 3)
		for range 3 {
			wg.Go(func() { results <- p.Shutdown(t.Context()) })
		}
		wg.Go(p.StopWait)
		wg.Go(p.Stop)
		synctest.Wait()
		blocker.open()
		wg.Wait()
		close(results)
		for err := range results {
			assert.ErrorIs(t, err, ErrStopped, "Shutdown after a Stop abandoned tasks")
		}
		for i, task := range tasks {
			assert.Same(t, ErrStopped, task.Wait(), "task %d", i)
		}
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(5), s.Abandoned, "abandoned")
	})
}

// --- Group ---

func TestGroupFirstErrorCancelsTheOtherThousandTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4)
		g := p.Group(t.Context())
		var started, returned atomic.Int64
		allQueued := newGate()
		for i := range 1000 {
			g.Go(func(ctx context.Context) error {
				started.Add(1)
				defer returned.Add(1)
				if i == 3 {
					allQueued.wait()
					return errTask
				}
				<-ctx.Done() // running tasks see the cancellation
				return ctx.Err()
			})
		}
		allQueued.open()
		assert.Same(t, errTask, g.Wait(), "Wait returns the first error")
		assert.Equal(t, int64(4), started.Load(), "tasks that started: one per worker")
		assert.Equal(t, started.Load(), returned.Load(), "every started task returned before Wait did")
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(996), s.Canceled, "queued group tasks were skipped")
		assert.Equal(t, uint64(4), s.Completed, "completed")
	})
}

// A worker checks the group before it calls fn: a task handed out just
// before the group was canceled is settled, not run. (The group cancels
// only the tasks it finds queued; this one was already on its way.)
func TestGroupTaskHandedOutAfterCancelIsSkippedByTheWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		ctx, cancel := context.WithCancel(t.Context())
		g := p.Group(ctx)
		var ran atomic.Bool
		g.mu.Lock()
		task := g.add(heldTask{fn: func(context.Context) error { ran.Store(true); return nil }})
		g.mu.Unlock()
		cancel()
		synctest.Wait() // the group's cancel has run and left the pending task alone
		task.job.work() // as the worker that took it would
		assert.Same(t, context.Canceled, g.Wait(), "Wait")
		assert.False(t, ran.Load(), "fn ran")
	})
}

func TestGroupWithoutErrorsRunsEveryTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3)
		defer p.Stop()
		g := p.Group(t.Context())
		var ran atomic.Int64
		for range 100 {
			g.Go(func(context.Context) error { time.Sleep(time.Millisecond); ran.Add(1); return nil })
		}
		assert.NoError(t, g.Wait())
		assert.Equal(t, int64(100), ran.Load(), "ran")
		assert.NoError(t, p.Group(t.Context()).Wait(), "Wait of an empty group")
	})
}

func TestGroupSetLimitCapsItsShareAndNeverBlocksThePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4)
		defer p.Stop()
		g := p.Group(t.Context())
		g.SetLimit(2)
		var meter concurrencyMeter
		release := newGate()
		for range 20 {
			g.Go(func(context.Context) error { meter.wrap(release.wait)(); return nil })
		}
		synctest.Wait()
		assert.Equal(t, int64(2), meter.running.Load(), "group tasks running")
		assert.Zero(t, p.WaitingQueueSize(), "held tasks wait in the group, not in the pool")
		require.NoError(t, p.DoWait(func() {}), "the pool's other users are not blocked")
		g.SetLimit(3) // raising the limit releases a held task at once
		synctest.Wait()
		assert.Equal(t, int64(3), meter.running.Load(), "group tasks running after SetLimit(3)")
		release.open()
		assert.NoError(t, g.Wait())
		assert.Equal(t, int64(3), meter.peak.Load(), "peak group concurrency")
	})
}

func TestGroupNegativeLimitMeansNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4)
		defer p.Stop()
		g := p.Group(t.Context())
		g.SetLimit(1)
		g.SetLimit(-1)
		var meter concurrencyMeter
		release := newGate()
		for range 4 {
			g.Go(func(context.Context) error { meter.wrap(release.wait)(); return nil })
		}
		synctest.Wait()
		assert.Equal(t, int64(4), meter.running.Load(), "group tasks running")
		release.open()
		assert.NoError(t, g.Wait())
	})
}

func TestGroupPanicIsPanicError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		g := p.Group(t.Context())
		g.Go(panickingFn)
		var pe *PanicError
		require.ErrorAs(t, g.Wait(), &pe)
		assert.Contains(t, string(pe.Stack), "workerpool.panickingFn", "stack")
	})
}

func TestGroupGoexitIsErrGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		g := p.Group(t.Context())
		g.Go(func(context.Context) error { runtime.Goexit(); return nil })
		assert.Same(t, ErrGoexit, g.Wait())
	})
}

func TestGroupParentCancelSkipsQueuedTasksAndWaitReportsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		blocker := blockOneWorker(t, p)
		ctx, cancel := context.WithCancel(t.Context())
		g := p.Group(ctx)
		g.SetLimit(2)
		var ran atomic.Int64
		for range 5 { // two queued in the pool, three held in the group
			g.Go(func(context.Context) error { ran.Add(1); return nil })
		}
		cancel()
		assert.Same(t, context.Canceled, g.Wait(), "Wait returns while the pool is still busy")
		blocker.open()
		p.StopWait()
		assert.Zero(t, ran.Load(), "ran")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(6), s.Submitted, "submitted: the blocker and every Go call")
		assert.Equal(t, uint64(5), s.Canceled, "canceled: the two in the pool and the three held")
	})
}

func TestGroupGoAfterWaitIsSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		g := p.Group(t.Context())
		require.NoError(t, g.Wait())
		var ran atomic.Bool
		g.Go(func(context.Context) error { ran.Store(true); return nil })
		assert.Same(t, context.Canceled, g.Wait(), "Wait after a skipped Go")
		assert.False(t, ran.Load(), "fn ran")
	})
}

func TestGroupOnStoppingPoolReportsErrStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		blocker := blockOneWorker(t, p)
		g := p.Group(t.Context())
		g.SetLimit(1)
		for range 3 { // one in the pool, two held
			g.Go(func(context.Context) error { return nil })
		}
		stopped := make(chan struct{})
		go func() { p.Stop(); close(stopped) }()
		assert.Same(t, ErrStopped, g.Wait(), "Wait")
		blocker.open()
		<-stopped
		requireStoppedClean(t, p)
		stoppedGroup := p.Group(t.Context())
		stoppedGroup.Go(func(context.Context) error { return nil })
		assert.Same(t, ErrStopped, stoppedGroup.Wait(), "Wait of a group made after stop")
	})
}

// --- accounting with every kind of task ---

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
				p.Go(t.Context(), func(context.Context) error { return nil }).Cancel()
			case 2:
				p.Submit(func() {})
			case 3:
				Call(t.Context(), p, func(context.Context) (int, error) { return i, nil })
			}
		}
		cancel()
		go func() { blockers[0].open(); blockers[1].open() }()
		p.Stop()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(14), s.Submitted, "submitted")
		assert.Equal(t, uint64(6), s.Canceled, "canceled: the ctx ones and the Cancel ones")
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
		_, _ = Call(ctx, p, fn).Wait()
	}
}

// BenchmarkGroup runs groups of 1,000 no-op tasks; "submit" is the same
// work as plain Submits and a WaitGroup, for scale.
func BenchmarkGroup(b *testing.B) {
	const tasks = 1000
	p := New(4)
	defer p.StopWait()
	b.Run("tasks=1000", func(b *testing.B) {
		fn := func(context.Context) error { return nil }
		b.ReportAllocs()
		for b.Loop() {
			g := p.Group(context.Background())
			for range tasks {
				g.Go(fn)
			}
			_ = g.Wait()
		}
	})
	b.Run("tasks=1000/limit=2", func(b *testing.B) {
		fn := func(context.Context) error { return nil }
		b.ReportAllocs()
		for b.Loop() {
			g := p.Group(context.Background())
			g.SetLimit(2)
			for range tasks {
				g.Go(fn)
			}
			_ = g.Wait()
		}
	})
	b.Run("submit=1000", func(b *testing.B) {
		wg := new(sync.WaitGroup)
		task := wg.Done
		b.ReportAllocs()
		for b.Loop() {
			wg.Add(tasks)
			for range tasks {
				p.Submit(task)
			}
			wg.Wait()
		}
	})
}
