package workerpool

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests for WaitIdle: it returns at a moment when nothing runs or waits,
// at its context's end, or with ErrStopped once a stop began; it holds back
// no task and occupies no worker. Every scenario that depends on time or
// blocks runs in a synctest bubble with exact fake-clock values; the races
// that need real scheduling run many rounds outside bubbles.

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

// The tasks a Group holds back (SetLimit) are released by the group's
// task that ends, on its worker, after that worker counted itself free:
// WaitIdle does not take that moment for an idle one, while the group
// still holds a task that is about to run. Real scheduling, many rounds: a
// group of two tasks limited to one, then WaitIdle, which returns only
// once both ran. (Since workers count themselves free before the outcome
// is told, WaitIdle returned in between in about half the rounds.)
func TestWaitIdleWaitsForTheTasksAGroupReleases(t *testing.T) {
	const rounds = 2000
	ctx := context.Background()
	p := New(1, WithIdleTimeout(-1))
	defer p.Stop()
	early := 0
	for range rounds {
		var ran atomic.Int64
		g := p.Group(ctx)
		g.SetLimit(1)
		g.Go(fnOf(func() { ran.Add(1) }))
		g.Go(fnOf(func() { ran.Add(1) }))
		require.NoError(t, p.WaitIdle(ctx), "WaitIdle")
		if ran.Load() != 2 {
			early++
		}
		require.NoError(t, g.Wait(), "the group")
	}
	assert.Zero(t, early, "rounds whose WaitIdle returned before the group's second task ran")
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
				s := requireStoppedClean(t, p)
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
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(submitters*perSubmitter), s.Completed, "round %d: completed", round)
		if t.Failed() {
			return
		}
	}
	t.Logf("WaitIdle returned nil %d times during concurrent submits", nilAnswers.Load())
}

// WaitIdle sees the idle moment when a cancel of a queued task races
// dispatch: the cancel moves the task's state, dispatch runs (here woken by
// a Resize) while the waiting count has not gone down yet, then the count
// goes down and the running task ends. Dispatch, run while the count has
// not gone down yet, must still watch the running work, not wait on
// taskQueue alone, or WaitIdle would hang until some unrelated message
// came. The test plays the canceling goroutine's part of Task.cancel
// statement by statement, as settleFrom does, with dispatch running in the
// gap.
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

		// tk.cancel() -> settle -> settleFrom(jobQueued, jobCanceled), first half:
		p.sig.beginSettle()
		require.True(t, tk.job.state.CompareAndSwap(jobQueued, jobCanceled))
		// ... the canceling goroutine is preempted; dispatch runs.
		p.Resize(1)
		synctest.Wait()
		// settleFrom, second half, then settle's call to the owner:
		p.counts.waiting.Add(-1)
		p.sig.wakeDispatch()
		tk.job.givePlace()
		p.counts.settled.canceled.Add(1)
		p.sig.endSettle()
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
