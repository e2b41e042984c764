package workerpool

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// Delay(d) means "not due before now+d". A huge d must not wrap around to
// a due time in the past.
func TestDelayHugeIsNotAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		time.Sleep(time.Millisecond) // the pool's clock is past 0
		var ran atomic.Bool
		task := p.Go(context.Background(), func(context.Context) error { ran.Store(true); return nil },
			Delay(time.Duration(math.MaxInt64)))
		time.Sleep(time.Hour)
		assert.False(t, ran.Load(), "Delay(MaxInt64) ran within an hour")
		assert.Equal(t, 1, p.Status().Scheduled, "Scheduled")
		p.Stop()
		assert.ErrorIs(t, task.Wait(), ErrStopped)
	})
}

// A RetryPolicy's delay: "retry means the task goes back through the
// timer heap for the delay". A huge delay must not wrap around.
func TestRetryHugeDelayIsNotAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		time.Sleep(time.Millisecond)
		var runs atomic.Int32
		policy := func(int, error) (time.Duration, bool) { return time.Duration(math.MaxInt64), true }
		task := p.Go(context.Background(), func(context.Context) error {
			if runs.Add(1) > 100 {
				return Permanent(errFlaky)
			}
			return errFlaky
		}, Retry(policy))
		time.Sleep(time.Hour)
		assert.Equal(t, int32(1), runs.Load(), "runs within an hour of a retry delayed by MaxInt64")
		p.Stop()
		assert.ErrorIs(t, task.Wait(), ErrStopped)
	})
}

// Backoff(base, max, attempts): the delay is random in
// [0, min(max, base·2^(k−1))]. A max of math.MaxInt64 ("no cap") or a
// huge base must not make the policy panic.
func TestBackoffHugeMaxDoesNotPanic(t *testing.T) {
	for _, c := range []struct {
		base, max time.Duration
		attempt   int
	}{
		{time.Duration(math.MaxInt64), time.Duration(math.MaxInt64), 1},
		{time.Nanosecond, time.Duration(math.MaxInt64), 64},
		{time.Hour, time.Duration(math.MaxInt64), 60},
	} {
		policy := Backoff(c.base, c.max, 100)
		assert.NotPanics(t, func() {
			d, ok := policy(c.attempt, errFlaky)
			assert.True(t, ok)
			assert.GreaterOrEqual(t, d, time.Duration(0))
		}, "Backoff(%v, %v, 100)(%d)", c.base, c.max, c.attempt)
	}
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
		task := p.Go(context.Background(), func(context.Context) error { ran.Store(true); return nil }, Delay(time.Second))
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

// Priority(math.MinInt/MaxInt), with and without aging: order is kept and
// nothing overflows.
func TestPriorityExtremes(t *testing.T) {
	for _, aging := range []time.Duration{0, time.Nanosecond, time.Millisecond, time.Duration(math.MaxInt64)} {
		synctest.Test(t, func(t *testing.T) {
			p := New(1, WithPriorityAging(aging))
			block := make(chan struct{})
			p.Submit(func() { <-block })
			var order []int
			for _, lvl := range []int{0, math.MinInt, math.MaxInt, -1, 1, math.MinInt + 1, math.MaxInt - 1} {
				p.Go(context.Background(), func(context.Context) error { order = append(order, lvl); return nil }, Priority(lvl))
			}
			synctest.Wait()
			close(block)
			p.StopWait()
			if aging == 0 || aging == time.Duration(math.MaxInt64) {
				assert.Equal(t, []int{math.MaxInt, math.MaxInt - 1, 1, 0, -1, math.MinInt + 1, math.MinInt}, order, "aging %v", aging)
			} else {
				assert.Len(t, order, 7)
			}
			requireStoppedClean(t, p)
		})
	}
}
