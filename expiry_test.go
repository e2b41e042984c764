package workerpool

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// timedLetters records the reasons of dead letters with the bubble's time.
type timedLetters struct {
	mu      sync.Mutex
	t0      time.Time
	reasons []error
	at      []time.Duration
}

func newTimedLetters() *timedLetters { return &timedLetters{t0: time.Now()} }

func (b *timedLetters) handler(_ func(), reason error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reasons = append(b.reasons, reason)
	b.at = append(b.at, time.Since(b.t0))
}

// With WithQueueTimeout(d), a task that waited d without starting expires
// exactly then: a plain task goes to the dead-letter handler with
// errExpired, a handle reports errExpired; each leaves Waiting and joins
// Expired at that moment, without a worker coming free.
func TestExpiryOfPlainAndHandleTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		box := newTimedLetters()
		p := New(1, WithQueueTimeout(time.Second), WithHooks(Hooks{DeadLetter: box.handler}))
		defer p.Stop()
		g := newGate()
		p.Submit(g.task())
		ran := false
		p.Submit(func() { ran = true })
		time.Sleep(500 * time.Millisecond)
		task := p.Go(t.Context(), func(context.Context) error { ran = true; return nil })
		time.Sleep(499 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 2, p.Status().Waiting, "at 999ms")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 1, s.Waiting, "at 1s")
		assert.Equal(t, uint64(1), s.Expired, "at 1s")
		assert.Equal(t, []error{errExpired}, box.reasons)
		assert.Equal(t, []time.Duration{time.Second}, box.at)
		assert.ErrorIs(t, task.Wait(), errExpired)
		assert.Equal(t, 1500*time.Millisecond, time.Since(box.t0), "the handle expired at 1.5s")
		s = p.Status()
		assert.Equal(t, 0, s.Waiting)
		assert.Equal(t, uint64(2), s.Expired)
		g.open()
		p.StopWait()
		assert.False(t, ran, "an expired task ran")
		s = requireStoppedClean(t, p)
		assert.Equal(t, uint64(3), s.Submitted)
		assert.Equal(t, uint64(1), s.Completed)
	})
}

// A task that waited less than d starts; the wait counts from when the
// task became due, so a delayed task does not expire while it is
// scheduled.
func TestExpiryCountsFromWhenATaskBecameDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithQueueTimeout(time.Second))
		defer p.Stop()
		p.Submit(func() { time.Sleep(2900 * time.Millisecond) })
		l, ctx := newStartLog(), t.Context()
		late := p.Go(ctx, l.fn("delayed 2s"), TaskOption{Delay: 2 * time.Second})
		early := p.Go(ctx, l.fn("at once"))
		require.NoError(t, late.Wait())
		assert.ErrorIs(t, early.Wait(), errExpired)
		assert.Equal(t, map[string]time.Duration{"delayed 2s": 2900 * time.Millisecond}, l.at)
	})
}

// DoWait reports errExpired, and SubmitWait panics with an error wrapping
// it; a task a Pause holds expires too; StopWait does not run expired
// tasks.
func TestExpiryOfWaitersAndPausedTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithQueueTimeout(time.Second))
		defer p.Stop()
		g := newGate()
		p.Submit(g.task())
		errs := make(chan error, 1)
		go func() { errs <- p.DoWait(func() {}) }()
		assert.ErrorIs(t, <-errs, errExpired)
		go func() {
			defer func() { errs <- recover().(error) }()
			p.SubmitWait(func() {})
		}()
		assert.ErrorIs(t, <-errs, errExpired)
		g.open()
		ctx, endPause := context.WithCancel(t.Context())
		defer endPause()
		p.Pause(ctx)
		held := p.Go(t.Context(), func(context.Context) error { return nil })
		assert.ErrorIs(t, held.Wait(), errExpired, "held by the pause")
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(3), s.Expired)
	})
}

// synctestStart is the bubble's start time: midnight UTC, 2000-01-01.
func synctestStart(*testing.T) time.Time {
	return time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
}

// Expiry reaches every priority level, and each level's oldest first.
func TestExpiryAcrossLevels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithQueueTimeout(time.Second))
		defer p.Stop()
		g := newGate()
		p.Submit(g.task())
		ctx := t.Context()
		high := p.Go(ctx, func(context.Context) error { return nil }, TaskOption{Priority: 5})
		time.Sleep(200 * time.Millisecond)
		low := p.Go(ctx, func(context.Context) error { return nil }, TaskOption{Priority: -5})
		time.Sleep(300 * time.Millisecond)
		mid := p.Go(ctx, func(context.Context) error { return nil })
		assert.ErrorIs(t, high.Wait(), errExpired)
		assert.ErrorIs(t, low.Wait(), errExpired)
		assert.ErrorIs(t, mid.Wait(), errExpired)
		assert.Equal(t, 1500*time.Millisecond, time.Since(synctestStart(t)))
		g.open()
	})
}

// WithQueueTimeout(d) with a huge d ("never expire") arms no moment past
// the clock's end, so the one timer still wakes dispatch for a delayed
// task's due time while a task waits.
func TestMaxQueueWaitHugeStarvesTheTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithQueueTimeout(time.Duration(math.MaxInt64)))
		time.Sleep(time.Millisecond)
		block := make(chan struct{})
		p.Submit(func() { <-block })
		p.Submit(func() {}) // waits: arms the expiry timer
		synctest.Wait()
		var ran atomic.Bool
		task := p.Go(context.Background(), func(context.Context) error { ran.Store(true); return nil }, TaskOption{Delay: time.Second})
		time.Sleep(2 * time.Second)
		s := p.Status()
		assert.Equal(t, 0, s.Scheduled, "Scheduled 1s after the delayed task was due")
		close(block)
		time.Sleep(time.Hour)
		assert.True(t, ran.Load(), "the delayed task did not run within an hour of being due")
		p.Stop()
		_ = task.Wait()
	})
}
