package workerpool

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Delayed tasks start when due, not before, in order of due time and, for
// the same due time, in order of submission; until then they count in
// Scheduled, not Waiting. So for every call that takes options.
func TestDelayedTasksStartWhenDueInOrder(t *testing.T) {
	forEachOptionCall(t, func(t *testing.T, c optionCall) {
		p := New(1)
		defer p.Stop()
		l, ctx := newStartLog(), t.Context()
		waits := []func() error{
			c.give(p, ctx, l.fn("c"), TaskOption{Delay: 3 * time.Second}),
			c.give(p, ctx, l.fn("a"), TaskOption{Delay: time.Second}),
			c.give(p, ctx, l.fn("b"), TaskOption{Delay: time.Until(time.Now().Add(time.Second))}),
			c.give(p, ctx, l.fn("now")),
		}
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 3, s.Scheduled, "scheduled")
		assert.Equal(t, 0, s.Waiting, "waiting")
		time.Sleep(3 * time.Second)
		for _, wait := range waits {
			require.NoError(t, wait())
		}
		synctest.Wait()
		assert.Equal(t, []string{"now", "a", "b", "c"}, l.starts)
		assert.Equal(t, map[string]time.Duration{"now": 0, "a": time.Second, "b": time.Second, "c": 3 * time.Second}, l.at)
		assert.Equal(t, 0, p.Status().Scheduled)
	})
}

// No delay: Delay of zero or less, At in the past, the zero TaskOption.
// When Delay and At are both given, the last one wins.
func TestTaskOptionsWithoutDelayAndTheLastWins(t *testing.T) {
	forEachOptionCall(t, func(t *testing.T, c optionCall) {
		p := New(4)
		defer p.Stop()
		l, ctx := newStartLog(), t.Context()
		for name, opts := range map[string][]TaskOption{
			"zero":     {TaskOption{Delay: 0}},
			"negative": {TaskOption{Delay: -time.Second}},
			"past":     {TaskOption{Delay: time.Until(time.Now().Add(-time.Hour))}},
			"none":     {{}},
			"last":     {TaskOption{Delay: time.Hour}, TaskOption{Delay: 2 * time.Second}},
		} {
			c.give(p, ctx, l.fn(name), opts...)
		}
		time.Sleep(time.Minute)
		p.StopWait()
		assert.Equal(t, map[string]time.Duration{"zero": 0, "negative": 0, "past": 0, "none": 0, "last": 2 * time.Second}, l.at)
	})
}

// TaskOption{Delay: d} means "not due before now+d". A huge d must not wrap around to
// a due time in the past.
func TestDelayHugeIsNotAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		time.Sleep(time.Millisecond) // the pool's clock is past 0
		var ran atomic.Bool
		task := p.Go(context.Background(), func(context.Context) error { ran.Store(true); return nil },
			TaskOption{Delay: time.Duration(math.MaxInt64)})
		time.Sleep(time.Hour)
		assert.False(t, ran.Load(), "TaskOption{Delay: MaxInt64} ran within an hour")
		assert.Equal(t, 1, p.Status().Scheduled, "Scheduled")
		p.Stop()
		assert.ErrorIs(t, task.Wait(), ErrStopped)
	})
}

// bubbleStacks returns the stacks of the goroutines of the caller's
// synctest bubble, the caller's own included.
func bubbleStacks() []string {
	bubble := currentBubble()
	var stacks []string
	for _, block := range goroutineStacks(allStacks()) {
		if bubbleOf(block) == bubble {
			stacks = append(stacks, block)
		}
	}
	return stacks
}

// A scheduled task holds no goroutine: a thousand of them add none to the
// bubble's (runtime.NumGoroutine would count other tests' goroutines too).
func TestScheduledTasksHoldNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(8)
		defer p.Stop()
		synctest.Wait()
		before := len(bubbleStacks())
		for i := range 1000 {
			p.Go(t.Context(), func(context.Context) error { return nil }, TaskOption{Delay: time.Duration(1+i) * time.Millisecond})
		}
		synctest.Wait()
		assert.Equal(t, before, len(bubbleStacks()), "goroutines")
		assert.Equal(t, 1000, p.Status().Scheduled)
	})
}

// The task's ctx, and the pool's own cancel (Task.cancel), remove a
// scheduled task at once: Wait returns, and it has left Scheduled and
// joined Canceled, long before it was due.
func TestCancelRemovesAScheduledTaskAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		ran := false
		byPool := p.Go(t.Context(), func(context.Context) error { ran = true; return nil }, TaskOption{Delay: time.Hour})
		ctx, cancel := context.WithCancel(t.Context())
		byCtx := p.Go(ctx, func(context.Context) error { ran = true; return nil }, TaskOption{Delay: time.Hour})
		g := p.Group(t.Context())
		g.Go(func(context.Context) error { ran = true; return nil }, TaskOption{Delay: time.Hour})
		synctest.Wait()
		require.Equal(t, 3, p.Status().Scheduled)
		t0 := time.Now()
		byPool.cancel()
		assert.ErrorIs(t, byPool.Wait(), context.Canceled)
		cancel()
		assert.ErrorIs(t, byCtx.Wait(), context.Canceled)
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 1, s.Scheduled, "the group's task is still scheduled")
		assert.Equal(t, uint64(2), s.Canceled)
		g.cancel(errors.New("group ended"))
		synctest.Wait()
		s = p.Status()
		assert.Equal(t, 0, s.Scheduled, "scheduled")
		assert.Equal(t, uint64(3), s.Canceled)
		assert.EqualError(t, g.Wait(), "group ended")
		assert.Zero(t, time.Since(t0), "no fake time passed")
		assert.False(t, ran)
	})
}

// A delayed plain task (Do or DoContext with Delay or At) that a stop
// abandons goes to the dead-letter handler with ErrStopped, once, before
// the stop returns, and counts in Abandoned; StopWait runs it when due.
func TestStopsWithScheduledPlainTasks(t *testing.T) {
	forEachPlainOptionCall(t, func(t *testing.T, c optionCall) {
		letters := new(letterBox)
		p := New(1, WithHooks(Hooks{DeadLetter: letters.handle}))
		l := newStartLog()
		require.NoError(t, c.give(p, t.Context(), l.fn("late"), TaskOption{Delay: time.Hour})())
		require.NoError(t, c.give(p, t.Context(), l.fn("soon"), TaskOption{Delay: time.Until(time.Now().Add(time.Second))})())
		time.Sleep(time.Second)
		synctest.Wait()
		p.Stop()
		assert.Equal(t, map[string]time.Duration{"soon": time.Second}, l.at)
		if got := letters.got(); assert.Len(t, got, 1, "dead letters") {
			assert.ErrorIs(t, got[0].reason, ErrStopped, "the letter's reason")
		}
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Abandoned, "abandoned")
		assert.Equal(t, uint64(1), s.Completed, "completed")
	})
}

// Stop abandons scheduled tasks at once; StopWait runs them when due;
// Shutdown waits for them until its ctx is done, then abandons the rest.
func TestStopsWithScheduledTasks(t *testing.T) {
	t.Run("Stop", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := New(1)
			task := p.Go(t.Context(), func(context.Context) error { return nil }, TaskOption{Delay: time.Hour})
			t0 := time.Now()
			p.Stop()
			assert.Zero(t, time.Since(t0))
			assert.ErrorIs(t, task.Wait(), ErrStopped)
			s := requireStoppedClean(t, p)
			assert.Equal(t, uint64(1), s.Abandoned)
		})
	})
	t.Run("StopWait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := New(1)
			l := newStartLog()
			p.Go(t.Context(), l.fn("late"), TaskOption{Delay: 5 * time.Second})
			p.Go(t.Context(), l.fn("early"), TaskOption{Delay: time.Second})
			p.StopWait()
			assert.Equal(t, 5*time.Second, time.Since(l.t0), "StopWait returned when the last was due and done")
			assert.Equal(t, map[string]time.Duration{"early": time.Second, "late": 5 * time.Second}, l.at)
			s := requireStoppedClean(t, p)
			assert.Equal(t, uint64(2), s.Completed)
		})
	})
	t.Run("Shutdown", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := New(1)
			l := newStartLog()
			p.Go(t.Context(), l.fn("in time"), TaskOption{Delay: time.Second})
			late := p.Go(t.Context(), l.fn("late"), TaskOption{Delay: 10 * time.Second})
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			defer cancel()
			err := p.Shutdown(ctx)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, 3*time.Second, time.Since(l.t0))
			assert.ErrorIs(t, late.Wait(), ErrStopped)
			assert.Equal(t, map[string]time.Duration{"in time": time.Second}, l.at)
			s := requireStoppedClean(t, p)
			assert.Equal(t, uint64(1), s.Completed)
			assert.Equal(t, uint64(1), s.Abandoned)
		})
	})
}

// A task that comes due during a pause waits for the pause to end; one due
// when Pause was called is before the barrier, and Pause waits for it.
func TestPauseAndScheduledTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		l := newStartLog()
		p.Go(t.Context(), l.fn("due at the pause"), TaskOption{Delay: time.Second})
		p.Go(t.Context(), l.fn("due in the pause"), TaskOption{Delay: 2 * time.Second})
		time.Sleep(time.Second) // the first is due now, whether or not dispatch moved it yet
		ctx, cancel := context.WithCancel(t.Context())
		p.Pause(ctx)
		assert.Equal(t, []string{"due at the pause"}, l.starts)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"due at the pause"}, l.starts, "nothing starts during the pause")
		assert.Equal(t, 1, p.Status().Waiting, "the task that came due waits")
		cancel()
		p.StopWait()
		assert.Equal(t, 6*time.Second, l.at["due in the pause"])
	})
}

// WaitIdle waits for scheduled tasks too.
func TestWaitIdleWaitsForScheduledTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		l := newStartLog()
		p.Go(t.Context(), l.fn("later"), TaskOption{Delay: 2 * time.Second})
		require.NoError(t, p.WaitIdle(t.Context()))
		assert.Equal(t, 2*time.Second, time.Since(l.t0))
		assert.Equal(t, []string{"later"}, l.starts)
	})
}

// The bound counts scheduled tasks: under Reject they take the room, and
// under DropOldest, which never drops a scheduled task, the new task is
// refused with ErrQueueFull once they fill it, whatever the call.
func TestBoundCountsScheduledTasks(t *testing.T) {
	t.Run("Reject", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := New(1, WithMaxWaiting(1, Reject))
			defer p.Stop()
			g := newGate()
			p.Submit(g.task()) // the one worker is busy
			p.Go(t.Context(), func(context.Context) error { return nil }, TaskOption{Delay: time.Second})
			synctest.Wait()
			assert.False(t, tryDo(p, func() {}), "TryDo")
			assert.ErrorIs(t, p.Go(t.Context(), func(context.Context) error { return nil }, TaskOption{Delay: time.Second}).Wait(), ErrQueueFull)
			time.Sleep(time.Second)
			synctest.Wait()
			assert.Equal(t, 1, p.Status().Waiting, "due, it waits for the busy worker, in the same place")
			assert.False(t, tryDo(p, func() {}), "TryDo")
			g.open()
			synctest.Wait()
			assert.True(t, tryDo(p, func() {}), "room once the task ran")
		})
	})
	t.Run("DropOldest", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var letters []error
			p := New(1, WithMaxWaiting(2, DropOldest), WithHooks(Hooks{DeadLetter: func(_ func(), why error) { letters = append(letters, why) }}))
			defer p.Stop()
			g := newGate()
			p.Submit(g.task()) // runs
			p.Go(t.Context(), func(context.Context) error { return nil }, TaskOption{Delay: time.Second})
			p.Submit(func() {}) // waits: with the scheduled task, the bound is full
			synctest.Wait()
			p.Submit(func() {}) // drops the waiting one
			synctest.Wait()
			assert.Equal(t, []error{errDropped}, letters)
			p.Go(t.Context(), func(context.Context) error { return nil }, TaskOption{Delay: time.Second}) // drops the waiting one too
			synctest.Wait()
			assert.Equal(t, []error{errDropped, errDropped}, letters)
			s := p.Status()
			require.Equal(t, 2, s.Scheduled)
			require.Equal(t, 0, s.Waiting)
			// Scheduled tasks alone fill the bound: every call is refused.
			p.Submit(func() {})
			synctest.Wait()
			assert.Equal(t, []error{errDropped, errDropped, ErrQueueFull}, letters)
			assert.ErrorIs(t, p.Do(func() {}), ErrQueueFull)
			assert.False(t, tryDo(p, func() {}))
			assert.ErrorIs(t, p.DoWait(func() {}), ErrQueueFull)
			assert.ErrorIs(t, p.DoBatch([]func(){func() {}}), ErrQueueFull)
			assert.ErrorIs(t, p.Go(t.Context(), func(context.Context) error { return nil }).Wait(), ErrQueueFull)
			assert.Equal(t, uint64(6), p.Status().Rejected)
			g.open()
			p.StopWait()
			s = requireStoppedClean(t, p)
			assert.Equal(t, uint64(2), s.Dropped)
		})
	})
}

// Everything a delayed task can meet, mixed, keeps the accounting exact.
func TestScheduledTasksAccounting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		for i := range 30 {
			ctx := t.Context()
			var cancel context.CancelFunc
			if i%5 == 0 {
				ctx, cancel = context.WithTimeout(ctx, time.Duration(i)*100*time.Millisecond)
				defer cancel()
			}
			var cancelNow context.CancelFunc
			if i%7 == 0 {
				ctx, cancelNow = context.WithCancel(ctx)
			}
			p.Go(ctx, func(context.Context) error { time.Sleep(50 * time.Millisecond); return nil }, TaskOption{Delay: time.Duration(i) * 200 * time.Millisecond})
			if cancelNow != nil {
				cancelNow()
			}
		}
		time.Sleep(3 * time.Second)
		p.Stop()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(30), s.Submitted)
		assert.NotZero(t, s.Completed)
		assert.NotZero(t, s.Canceled)
		assert.NotZero(t, s.Abandoned)
	})
}

// Under DropOldest a delayed Go reserves its place in Status.Scheduled
// before its send, and dispatch takes the reservation over once it takes
// the job. A Task.cancel that lands in between settles the job, and its Wait
// returns context.Canceled, but the reservation stays until dispatch gets
// to the job: Status still shows it scheduled (doc.go: a settled task has
// left Scheduled by the time its Wait reports it), and a TryDo that
// follows in the same goroutine is refused with ErrQueueFull, and counted
// in Rejected, because of a task that no longer exists. Dispatch is held here in the job's ctx Err, where a slow
// scheduler could hold it.
func TestUnderDropOldestACanceledDelayedTaskLeavesScheduledByTheTimeWaitReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(1, DropOldest), WithIdleTimeout(-1))
		defer p.Stop()
		busy := newFrameStallingContext(t.Context(), "(*dispatcher).acceptJob(")
		defer busy.resume()
		delayed := p.Go(busy, noopFn, TaskOption{Delay: time.Hour})
		<-busy.stalled // dispatch took the job and has not looked at it yet
		delayed.cancel()
		require.ErrorIs(t, delayed.Wait(), context.Canceled, "the delayed task")
		assert.Zero(t, p.Status().Scheduled, "scheduled once Wait reported the cancel")

		tried := make(chan bool, 1)
		go func() { tried <- tryDo(p, func() {}) }()
		synctest.Wait()
		busy.resume()
		assert.True(t, <-tried, "TryDo on an idle pool whose one delayed task was canceled")
		synctest.Wait()
		assert.Zero(t, p.Status().Rejected, "rejected")
	})
}

// The heap gives its memory back, down to keptEntries, once a burst of
// delayed tasks has run, and a sweep of canceled tasks does the same; a
// burst of at most keptEntries keeps its array for the next one.
func TestTimerHeapShrinksAfterABurst(t *testing.T) {
	const n = 8 * keptEntries
	var h timerHeap
	for i := range n {
		h.push(timerEntry{due: int64(i), seq: uint64(i)})
	}
	grown := cap(h)
	assert.GreaterOrEqual(t, grown, n)
	for i := range n - 10 {
		require.Equal(t, int64(i), h.pop().due)
	}
	assert.Len(t, h, 10)
	assert.Equal(t, keptEntries, cap(h), "popped down to 10 of %d", grown)
	for i := range 10 {
		assert.Equal(t, int64(n-10+i), h.pop().due)
	}
	assert.Equal(t, keptEntries, cap(h), "a burst as large as keptEntries reuses the array")

	for i := range n {
		h.push(timerEntry{due: int64(i), seq: uint64(i)})
	}
	h = h[:5] // as a sweep that kept five
	h.init()
	h.shrink()
	assert.Equal(t, keptEntries, cap(h), "one copy down to keptEntries")
	assert.Len(t, h, 5)
}

// A Delay of zero or less is no delay, and a field that a later option
// sets wins: so a later negative Delay (time.Until of a moment past, say)
// clears an earlier one, as a later Weight below 1 sets the weight to 1;
// a later Delay of zero, a field not set, changes nothing.
func TestALaterDelayBelowZeroMeansNoDelay(t *testing.T) {
	forEachOptionCall(t, func(t *testing.T, c optionCall) {
		p := New(4)
		defer p.Stop()
		l, ctx := newStartLog(), t.Context()
		for name, opts := range map[string][]TaskOption{
			"negative": {{Delay: time.Hour}, {Delay: -time.Second}},
			"past":     {{Delay: time.Hour}, {Delay: time.Until(time.Now().Add(-time.Minute))}},
			"zero":     {{Delay: 2 * time.Second}, {Delay: 0, Priority: 1}},
		} {
			c.give(p, ctx, l.fn(name), opts...)
		}
		time.Sleep(time.Minute)
		p.StopWait()
		assert.Equal(t, map[string]time.Duration{"negative": 0, "past": 0, "zero": 2 * time.Second}, l.at)
	})
	p := New(1)
	defer p.Stop()
	assert.Zero(t, p.parseOptions([]TaskOption{{Delay: time.Hour}, {Delay: -1}}).due, "due after a later Delay of -1")
	assert.Equal(t, 1, p.parseOptions([]TaskOption{{Weight: 3}, {Weight: -1}}).weight, "weight after a later Weight of -1")
}

// Several TaskOptions combine field by field: each field comes from the
// last option that sets it, and a zero field changes nothing.
func TestTaskOptionsCombineFieldByField(t *testing.T) {
	p := New(1)
	defer p.Stop()
	o := p.parseOptions([]TaskOption{{Priority: 2, Key: "a", Weight: 3}, {Label: "l", Priority: 5}, {Key: "b"}, {}})
	assert.Equal(t, 5, o.priority, "priority")
	assert.Equal(t, "b", o.key, "key")
	assert.Equal(t, "l", o.label, "label")
	assert.Equal(t, 3, o.weight, "weight")
	assert.Zero(t, o.due, "no delay")
	assert.Equal(t, 1, p.parseOptions([]TaskOption{{Weight: -4}}).weight, "a weight below 1 means 1")
}
