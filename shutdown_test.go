package workerpool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests for Shutdown: its return value; a Shutdown that finishes in time
// and one that gives up at its deadline, cancelling the running tasks'
// contexts and abandoning the queue; the tasks and groups it keeps track of
// for that; and Shutdown racing Stop, StopWait and itself.

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

// yieldingContext is a context that is done already and whose first Done
// call lets every other goroutine of the bubble run until it blocks: it
// widens the window between Shutdown's first step and its look at ctx, as
// a preempted caller would.
type yieldingContext struct {
	context.Context
	yielded atomic.Bool
}

func (c *yieldingContext) Done() <-chan struct{} {
	if c.yielded.CompareAndSwap(false, true) {
		synctest.Wait()
	}
	return c.Context.Done()
}

// Shutdown with a context that is already done starts no queued task.
// Tasks held by a Pause wait in the queue while the workers are idle; then
// Shutdown is called with a context that is already done (and whose Done
// lets the rest of the bubble run first): none of the queued tasks starts,
// Status.Abandoned counts them, and Shutdown reports the context's error.
func TestShutdownWithDoneContextStartsNoQueuedTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		for range 2 {
			p.Submit(func() {}) // start the workers; they stay, idle
		}
		pause, endPause := context.WithCancel(t.Context())
		defer endPause()
		p.Pause(pause)
		var ran atomic.Int64
		for range 3 {
			p.Submit(func() { ran.Add(1) })
		}
		task := p.Go(t.Context(), func(context.Context) error { ran.Add(1); return nil })
		synctest.Wait()
		require.Equal(t, 4, p.WaitingQueueSize(), "held by the pause")

		ctx := &yieldingContext{Context: canceledContext()}
		err := p.Shutdown(ctx)
		assert.Zero(t, ran.Load(), "queued tasks started by Shutdown with a done context")
		assert.ErrorIs(t, task.Wait(), ErrStopped, "Task queued at the Shutdown")
		assert.ErrorIs(t, err, context.Canceled, "Shutdown that gave up at once")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(4), s.Abandoned, "abandoned")
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

// Shutdown returns nil only if every accepted task ran: when a Stop
// abandoned tasks, during or before the Shutdown, it returns an error
// wrapping ErrStopped (a Shutdown that itself gives up may return its
// context's error).
func TestShutdownReportsTasksAStopAbandoned(t *testing.T) {
	cases := []struct {
		name     string
		doneCtx  bool
		shutdown func(t *testing.T, p *WorkerPool, blocker gate) error
	}{
		{"Stop during Shutdown", false, func(t *testing.T, p *WorkerPool, blocker gate) error {
			shutdown := make(chan error, 1)
			go func() { shutdown <- p.Shutdown(t.Context()) }()
			synctest.Wait() // Shutdown drains, waiting for the busy worker
			go p.Stop()
			synctest.Wait() // Stop abandoned the queue
			blocker.open()
			return <-shutdown
		}},
		{"Stop before Shutdown", false, func(t *testing.T, p *WorkerPool, blocker gate) error {
			go func() { synctest.Wait(); blocker.open() }()
			p.Stop()
			return p.Shutdown(t.Context())
		}},
		{"Stop before a Shutdown with a done context", true, func(t *testing.T, p *WorkerPool, blocker gate) error {
			go func() { synctest.Wait(); blocker.open() }()
			p.Stop()
			return p.Shutdown(canceledContext())
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1)
				blocker := blockOneWorker(t, p)
				var ran atomic.Int64
				for range 3 {
					p.Submit(func() { ran.Add(1) })
				}
				err := c.shutdown(t, p, blocker)
				s := requireStoppedClean(t, p)
				require.Equal(t, uint64(3), s.Abandoned, "abandoned by Stop")
				assert.Zero(t, ran.Load(), "queued tasks that ran")
				if c.doneCtx { // Shutdown gave up too: its context's error will do
					assert.True(t, errors.Is(err, ErrStopped) || errors.Is(err, context.Canceled),
						"Shutdown returned %v, want an error wrapping ErrStopped or context.Canceled", err)
				} else {
					assert.ErrorIs(t, err, ErrStopped, "Shutdown after tasks were abandoned")
				}
			})
		})
	}
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

// A task that a Shutdown cuts before its fn started reports ErrStopped and
// counts as Abandoned. A Shutdown gives up (a task cancels its ctx) while
// it drains a queue of Tasks and Futures onto the workers, so some are
// handed out around the cut: every handle reports its fn's result (nil)
// or, if fn never ran, an error wrapping ErrStopped, never
// context.Canceled; nothing is counted in Status.Canceled, and Abandoned
// counts the handles whose fn never ran. Races need real scheduling: many
// rounds, outside a bubble.
func TestTasksCutByShutdownBeforeStartReportErrStopped(t *testing.T) {
	const rounds, handles = 100, 200
	badRounds := 0
	var firstBad string
	for round := range rounds {
		p := New(4)
		blocker := newGate()
		for range 4 {
			p.Submit(blocker.task())
		}
		ctx, giveUp := context.WithCancel(context.Background())
		var ran atomic.Int64
		count := func() {
			if ran.Add(1) == handles/4 {
				giveUp() // Shutdown gives up in the middle of its drain
			}
		}
		tasks := make([]*Task, 0, handles/2)
		futures := make([]*Future[int], 0, handles/2)
		for i := range handles {
			if i%2 == 0 {
				tasks = append(tasks, p.Go(context.Background(), func(context.Context) error { count(); return nil }))
			} else {
				futures = append(futures, GoResult(context.Background(), p, func(context.Context) (int, error) { count(); return i, nil }))
			}
		}
		shutdown := make(chan error, 1)
		go func() { shutdown <- p.Shutdown(ctx) }()
		blocker.open()
		shutdownErr := <-shutdown
		giveUp()
		if shutdownErr != nil { // nil only if the drain won the race with the cut
			assert.ErrorIs(t, shutdownErr, context.Canceled, "round %d: Shutdown gave up", round)
		}

		var errs []string
		for i, task := range tasks {
			if err := task.Wait(); err != nil && !errors.Is(err, ErrStopped) {
				errs = append(errs, fmt.Sprintf("Task %d: %v", i, err))
			}
		}
		for i, f := range futures {
			if _, err := f.Wait(); err != nil && !errors.Is(err, ErrStopped) {
				errs = append(errs, fmt.Sprintf("Future %d: %v", i, err))
			}
		}
		s := p.Status()
		notRun := uint64(handles) - uint64(ran.Load())
		if len(errs) > 0 || s.Canceled != 0 || s.Abandoned != notRun {
			badRounds++
			if firstBad == "" {
				firstBad = fmt.Sprintf("round %d: Canceled %d, Abandoned %d (want %d, the handles whose fn never ran); handles with other errors: %v",
					round, s.Canceled, s.Abandoned, notRun, errs)
			}
		}
	}
	assert.Zero(t, badRounds, "rounds (of %d) where a handle not started at the cut was not reported as stopped; first: %s", rounds, firstBad)
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

// A task queued with the context of a Task that a Shutdown cut is given up
// by the stop in queue order, whether a Task or DoWaitContext waits for
// it: TaskDropped learns of it after the tasks queued before it, even
// when its caller sees its ctx end before the stop message reaches the
// dispatcher (held here by the "pool stopping" log record).
func TestQueuedChildOfCutTaskIsGivenUpInQueueOrder(t *testing.T) {
	for _, c := range []struct {
		name string
		give func(p *WorkerPool, ctx context.Context) error
	}{
		{"Go", func(p *WorkerPool, ctx context.Context) error {
			return p.Go(ctx, noopFn, TaskOption{Label: "child"}).Wait()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				hold := newStallingHandler("pool stopping")
				var told names
				p := New(1, WithHooks(Hooks{Logger: slog.New(hold)}), WithHooks(Hooks{TaskDropped: func(ti TaskInfo) {
					told.say(ti.Label)()
				}}))
				give := make(chan struct{})
				child := make(chan error, 1)
				outer := p.Go(context.Background(), func(ctx context.Context) error {
					<-give
					child <- c.give(p, ctx)
					return nil
				})
				synctest.Wait()
				p.Go(context.Background(), noopFn, TaskOption{Label: "q1"})
				p.Go(context.Background(), noopFn, TaskOption{Label: "q2"})
				close(give)
				synctest.Wait()
				require.Equal(t, 3, p.WaitingQueueSize(), "queued: q1, q2 and the child")

				res := make(chan error, 1)
				go func() { res <- p.Shutdown(canceledContext()) }()
				<-hold.stalled // the outer Task's context is cut; the stop message is not sent yet
				synctest.Wait()
				hold.resume()
				assert.ErrorIs(t, <-res, context.Canceled, "Shutdown gave up")
				assert.NoError(t, outer.Wait(), "the outer Task")
				assert.ErrorIs(t, <-child, ErrStopped, "the child")
				assert.Equal(t, []string{"q1", "q2", "child"}, told.got(), "TaskDropped, in queue order")
				s := requireStoppedClean(t, p)
				assert.Equal(t, uint64(3), s.Abandoned, "abandoned")
			})
		})
	}
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
