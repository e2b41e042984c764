package workerpool

import (
	"context"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slotMeter records the most slots in use at once, each running task
// taking its weight: a concurrencyMeter of weighted Task funcs.
type slotMeter struct{ concurrencyMeter }

// task returns a fn that takes weight slots for d.
func (m *slotMeter) task(weight int, d time.Duration) func(context.Context) error {
	return fnOf(m.wrapWeighted(int64(weight), sleeper(d)))
}

// top is the most slots in use at once.
func (m *slotMeter) top() int { return int(m.peak.Load()) }

// The weights of the running tasks never exceed the pool's size, plain
// tasks included, and reach it when enough tasks wait.
func TestWeightsNeverExceedTheSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4)
		defer p.Stop()
		var m slotMeter
		rng := rand.New(rand.NewPCG(1, 2))
		var tasks []*Task
		for range 300 {
			w := 1 + rng.IntN(4)
			d := time.Duration(1+rng.IntN(20)) * time.Millisecond
			tasks = append(tasks, p.Go(t.Context(), m.task(w, d), TaskOption{Weight: w}))
			if rng.IntN(3) == 0 {
				p.Submit(func() { _ = m.task(1, d)(t.Context()) })
			}
		}
		for _, task := range tasks {
			require.NoError(t, task.Wait())
		}
		p.StopWait()
		assert.Equal(t, 4, m.top(), "the most slots in use")
		requireStoppedClean(t, p)
	})
}

// A heavy task at the front waits for its slots, and the light tasks
// behind it wait until it has started; Busy counts running tasks, not
// slots. So for every call that takes options.
func TestHeavyTaskIsNotOvertaken(t *testing.T) {
	forEachOptionCall(t, func(t *testing.T, c optionCall) {
		p := New(4)
		defer p.Stop()
		l, ctx := newStartLog(), t.Context()
		c.give(p, ctx, func(context.Context) error { time.Sleep(time.Second); return nil }, TaskOption{Weight: 2})
		p.Submit(func() { time.Sleep(2 * time.Second) })
		synctest.Wait()
		assert.Equal(t, 2, p.Status().Busy, "running tasks, not slots")
		heavy := c.give(p, ctx, l.fn("heavy"), TaskOption{Weight: 3})
		light := c.give(p, ctx, l.fn("light"))
		synctest.Wait()
		assert.Equal(t, 2, p.Status().Waiting, "one slot is free, but the heavy task needs 3")
		time.Sleep(time.Second)
		require.NoError(t, heavy())
		require.NoError(t, light())
		synctest.Wait() // a plain task's call returned before it ran
		assert.Equal(t, []string{"heavy", "light"}, l.starts)
		assert.Equal(t, map[string]time.Duration{"heavy": time.Second, "light": time.Second}, l.at)
	})
}

// A heavy task that is retried holds its slots on every run and none
// between runs; light tasks use the slots while it waits for its retry.
func TestHeavyRetryFreesSlotsBetweenRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		var m slotMeter
		runs := 0
		h := p.Go(context.Background(), func(ctx context.Context) error {
			_ = m.task(2, 10*time.Millisecond)(ctx)
			runs++
			if runs < 3 {
				return errFlaky
			}
			return nil
		}, TaskOption{Weight: 2}, TaskOption{Retry: func(int, error) (time.Duration, bool) { return 50 * time.Millisecond, true }})
		time.Sleep(20 * time.Millisecond) // the heavy task waits for its retry
		var light atomic.Int32
		for range 2 {
			p.Go(context.Background(), func(ctx context.Context) error {
				light.Add(1)
				return m.task(1, 5*time.Millisecond)(ctx)
			})
		}
		synctest.Wait()
		assert.Equal(t, int32(2), light.Load(), "light tasks start while the heavy one waits for its retry")
		require.NoError(t, h.Wait())
		assert.Equal(t, 3, runs)
		assert.LessOrEqual(t, m.top(), 2)
		p.StopWait()
		requireStoppedClean(t, p)
	})
}

// A task heavier than the pool is refused at once with ErrTooHeavy,
// counted Rejected and not Submitted, whatever the call; a plain task so
// refused reaches no dead-letter handler (its caller has the error).
func TestTooHeavyIsRefusedAtOnceByEveryCall(t *testing.T) {
	forEachOptionCall(t, func(t *testing.T, c optionCall) {
		letters := new(letterBox)
		p := New(2, WithHooks(Hooks{DeadLetter: letters.handle}))
		defer p.Stop()
		ran := false
		assert.ErrorIs(t, c.give(p, t.Context(), func(context.Context) error { ran = true; return nil }, TaskOption{Weight: 3})(), ErrTooHeavy)
		assert.NoError(t, c.give(p, t.Context(), func(context.Context) error { return nil }, TaskOption{Weight: -7})(), "TaskOption{Weight: -7} is 1")
		synctest.Wait()
		assert.False(t, ran, "the heavy task ran")
		s := p.Status()
		assert.Equal(t, uint64(1), s.Submitted, "submitted")
		assert.Equal(t, uint64(1), s.Rejected, "rejected")
		assert.Empty(t, letters.got(), "dead letters")
	})
}

// TaskOption{Weight: n} with n < 1 is weight 1; a task heavier than the pool is
// refused at once with ErrTooHeavy, counted Rejected and not Submitted, in
// Go, Call and Group.Go alike.
func TestTooHeavyIsRefusedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		ctx := t.Context()
		require.NoError(t, p.Go(ctx, func(context.Context) error { return nil }, TaskOption{Weight: 0}).Wait())
		require.NoError(t, p.Go(ctx, func(context.Context) error { return nil }, TaskOption{Weight: -7}).Wait())
		require.NoError(t, p.Go(ctx, func(context.Context) error { return nil }, TaskOption{Weight: 2}).Wait())
		ran := false
		assert.ErrorIs(t, p.Go(ctx, func(context.Context) error { ran = true; return nil }, TaskOption{Weight: 3}).Wait(), ErrTooHeavy)
		_, err := GoResult(ctx, p, func(context.Context) (int, error) { ran = true; return 1, nil }, TaskOption{Weight: 1 << 40}).Wait()
		assert.ErrorIs(t, err, ErrTooHeavy)
		g := p.Group(ctx)
		g.Go(func(context.Context) error { ran = true; return nil }, TaskOption{Weight: 3})
		assert.ErrorIs(t, g.Wait(), ErrTooHeavy)
		assert.False(t, ran)
		s := p.Status()
		assert.Equal(t, uint64(3), s.Submitted)
		assert.Equal(t, uint64(3), s.Rejected)
		assert.Zero(t, s.Waiting)
	})
}

// A Resize below the weight of a waiting or scheduled task drops it at
// once with ErrTooHeavy, counted in Dropped; lighter tasks go on.
func TestResizeBelowAWaitingWeightDropsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4)
		defer p.Stop()
		g := newGate()
		for range 4 {
			p.Submit(g.task())
		}
		ctx := t.Context()
		l := newStartLog()
		queued := p.Go(ctx, l.fn("queued"), TaskOption{Weight: 3})
		light := p.Go(ctx, l.fn("light"))
		scheduled := p.Go(ctx, l.fn("scheduled"), TaskOption{Weight: 4, Delay: time.Second})
		synctest.Wait()
		p.Resize(2)
		assert.ErrorIs(t, queued.Wait(), ErrTooHeavy)
		assert.ErrorIs(t, scheduled.Wait(), ErrTooHeavy)
		assert.Zero(t, time.Since(l.t0), "dropped at the Resize")
		s := p.Status()
		assert.Equal(t, 1, s.Waiting)
		assert.Equal(t, 0, s.Scheduled)
		g.open()
		require.NoError(t, light.Wait())
		p.StopWait()
		s = requireStoppedClean(t, p)
		assert.Equal(t, uint64(2), s.Dropped)
		assert.Equal(t, []string{"light"}, l.starts)
	})
}

// Resize below a scheduled heavy task's weight: the task is dropped with
// ErrTooHeavy (Dropped), not run.
func TestResizeBelowAScheduledHeavyTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4)
		var ran atomic.Bool
		h := p.Go(context.Background(), func(context.Context) error { ran.Store(true); return nil }, TaskOption{Weight: 3, Delay: time.Second})
		p.Resize(2)
		time.Sleep(2 * time.Second)
		assert.ErrorIs(t, h.Wait(), ErrTooHeavy)
		assert.False(t, ran.Load())
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Dropped)
	})
}

// A Resize below the weight of a queued or a scheduled task drops both at
// once, with ErrTooHeavy, counted in Dropped.
func TestResizeDropsAScheduledHeavyTaskAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4)
		defer p.Stop()
		queued := make(chan struct{})
		block := make(chan struct{})
		for range 4 {
			p.Submit(func() { <-block })
		}
		hq := p.Go(context.Background(), func(context.Context) error { close(queued); return nil }, TaskOption{Weight: 3})
		hs := p.Go(context.Background(), func(context.Context) error { return nil }, TaskOption{Weight: 3, Delay: time.Hour})
		synctest.Wait()
		p.Resize(2)
		synctest.Wait()
		assert.ErrorIs(t, hq.Wait(), ErrTooHeavy, "the queued heavy task")
		s := p.Status()
		assert.Equal(t, uint64(2), s.Dropped, "Dropped right after the Resize (queued and scheduled heavy tasks)")
		assert.Equal(t, 0, s.Scheduled, "Scheduled right after the Resize")
		select {
		case <-hs.Done():
		default:
			t.Error("the scheduled heavy task's Done is not closed after the Resize")
		}
		close(block)
	})
}

// Resize to grow starts a heavy task that now fits, at once; a shrink
// below the slots in use holds it; growing again starts it.
func TestResizeStartsHeavyThatNowFits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3)
		defer p.Stop()
		block := make(chan struct{})
		p.Submit(func() { <-block }) // one slot
		var started atomic.Bool
		h := p.Go(context.Background(), func(context.Context) error { started.Store(true); return nil }, TaskOption{Weight: 3})
		synctest.Wait()
		assert.False(t, started.Load(), "weight 3 with one slot in use of 3")
		p.Resize(4)
		synctest.Wait()
		assert.True(t, started.Load(), "weight 3 after Resize(4) with one slot in use")
		require.NoError(t, h.Wait())
		close(block)
	})
}

// Stop abandons a heavy task that waits for slots; StopWait runs it once
// its slots free.
func TestHeavyTaskAtStop(t *testing.T) {
	for _, wait := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			p := New(2)
			p.Submit(func() { time.Sleep(time.Second) })
			l := newStartLog()
			heavy := p.Go(t.Context(), l.fn("heavy"), TaskOption{Weight: 2})
			synctest.Wait()
			if wait {
				p.StopWait()
				require.NoError(t, heavy.Wait())
				assert.Equal(t, map[string]time.Duration{"heavy": time.Second}, l.at)
			} else {
				p.Stop()
				assert.ErrorIs(t, heavy.Wait(), ErrStopped)
			}
			requireStoppedClean(t, p)
		})
	}
}

// A Weight is never capped below what it says: on a pool larger than 2^31,
// a task heavier than the pool is refused with ErrTooHeavy, and one of
// weight Size−1 holds that many slots, leaving exactly one.
func TestWeightsAbove2To31AreNotCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size = math.MaxInt32 + 11
		p := New(size)
		defer p.Stop()
		assert.ErrorIs(t, p.Go(t.Context(), noopFn, TaskOption{Weight: size + 1}).Wait(), ErrTooHeavy, "heavier than the pool")
		heavy, plain := newGate(), newGate()
		defer heavy.release()
		defer plain.release()
		p.Go(t.Context(), fnOf(heavy.wait), TaskOption{Weight: size - 1})
		p.Submit(plain.task()) // the one slot left
		var ran atomic.Bool
		p.Submit(func() { ran.Store(true) })
		synctest.Wait()
		assert.Equal(t, 1, p.Status().Waiting, "waiting for a slot")
		assert.False(t, ran.Load(), "a task started past the slots")
		plain.open()
		synctest.Wait()
		assert.True(t, ran.Load(), "the task started in the freed slot")
		assert.Equal(t, uint64(1), p.Status().Rejected, "rejected")
	})
}

// On a queue with no room under Block, a heavy Go waits, parked, for its
// slots. A Resize below its weight must not strand it: it is refused (or
// dropped) with ErrTooHeavy, as a heavy task that waits in a queue is, and
// the submitters parked behind it get the free worker. A heavy ticket that
// stayed at the head of the parked submitters would stay there for ever
// (no room ever frees on a queue with no room, and its slots never fit the
// smaller pool), and the pool would sit idle with a worker free while
// every later Submit waited.
func TestResizeBelowAHeavyTaskParkedOnAQueueWithNoRoomReleasesTheSubmitters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithMaxWaiting(0, Block), WithIdleTimeout(-1))
		defer p.Stop()
		running := newGate()
		defer running.release()
		p.Submit(running.task())
		synctest.Wait()
		heavy := make(chan error, 1)
		go func() { heavy <- p.Go(t.Context(), noopFn, TaskOption{Weight: 2}).Wait() }()
		synctest.Wait() // parked: one slot of two is free
		p.Resize(1)
		running.open()
		synctest.Wait()
		require.Equal(t, 0, p.Status().Busy, "busy: the pool is idle")

		var ran atomic.Bool
		submitted := make(chan struct{})
		go func() {
			defer close(submitted)
			_, _ = recovered(func() { p.Submit(func() { ran.Store(true) }) }) // the deferred Stop releases it
		}()
		synctest.Wait()
		assert.True(t, isClosed(submitted), "Submit on an idle pool of one free worker returned")
		assert.True(t, ran.Load(), "its task ran")
		select {
		case err := <-heavy:
			assert.ErrorIs(t, err, ErrTooHeavy, "the heavy Go")
		default:
			t.Error("the heavy Go still waits for two slots of a pool of one")
		}
	})
}
