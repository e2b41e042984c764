package workerpool

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ms(ns ...int) []time.Duration {
	var d []time.Duration
	for _, n := range ns {
		d = append(d, time.Duration(n)*time.Millisecond)
	}
	return d
}

// The bucket starts full: a burst starts at once, then one task per
// interval; the waiting ones hold no worker.
func TestRateLimitBurstThenSteadyRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(8, WithRateLimit(10, 3))
		defer p.Stop()
		starts := newRunLog()
		for range 7 {
			p.Submit(starts.task())
		}
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 4, s.Waiting, "waiting for tokens")
		assert.Equal(t, 0, s.Busy)
		require.NoError(t, p.WaitIdle(t.Context()))
		assert.Equal(t, ms(0, 0, 0, 100, 200, 300, 400), starts.at)

		// Idle for a second: the bucket is full again.
		time.Sleep(time.Second)
		starts = newRunLog()
		for range 4 {
			p.Submit(starts.task())
		}
		require.NoError(t, p.WaitIdle(t.Context()))
		assert.Equal(t, ms(0, 0, 0, 100), starts.at)
	})
}

// Tasks of every kind share the one bucket, and priorities still order
// the waiting ones.
func TestRateLimitAppliesToEveryTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4, WithRateLimit(2, 1))
		defer p.Stop()
		l, ctx := newStartLog(), t.Context()
		p.Go(ctx, l.fn("first"))
		p.Go(ctx, l.fn("low"), TaskOption{Priority: -1})
		p.Go(ctx, l.fn("high"), TaskOption{Priority: 1})
		errs := make(chan error, 1)
		go func() { errs <- p.DoWait(func() { _ = l.fn("plain")(ctx) }) }()
		require.NoError(t, <-errs)
		p.StopWait()
		assert.Equal(t, []string{"first", "high", "plain", "low"}, l.starts)
		assert.Equal(t, map[string]time.Duration{"first": 0, "high": 500 * time.Millisecond, "plain": time.Second, "low": 1500 * time.Millisecond}, l.at)
	})
}

// StopWait starts the waiting tasks at the rate; Stop abandons them; a
// Pause holds them as any waiting task.
func TestRateLimitAtStopAndPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithRateLimit(1, 1))
		starts := newRunLog()
		for range 3 {
			p.Submit(starts.task())
		}
		p.StopWait()
		assert.Equal(t, ms(0, 1000, 2000), starts.at)
		requireStoppedClean(t, p)

		p = New(2, WithRateLimit(1, 1))
		for range 3 {
			p.Submit(func() {})
		}
		synctest.Wait()
		p.Stop()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(2), s.Abandoned)

		p = New(2, WithRateLimit(1, 1))
		defer p.Stop()
		starts = newRunLog()
		ctx, endPause := context.WithCancel(t.Context())
		p.Pause(ctx)
		for range 2 {
			p.Submit(starts.task())
		}
		time.Sleep(5 * time.Second)
		assert.Empty(t, starts.at, "held by the pause")
		endPause()
		require.NoError(t, p.WaitIdle(t.Context()))
		assert.Equal(t, ms(5000, 6000), starts.at)
	})
}

// A perSecond of zero or less, NaN or +Inf means no limit; a burst below 1
// means 1; tiny and huge rates are clamped without overflow.
func TestRateLimitInput(t *testing.T) {
	for _, r := range []float64{0, -1, math.NaN(), math.Inf(1), math.Inf(-1)} {
		assert.False(t, newRateLimit(r, 5).limited(), "%v", r)
	}
	assert.Equal(t, rateLimit{interval: int64(time.Second)}, newRateLimit(1, 0))
	assert.Equal(t, rateLimit{interval: int64(time.Second)}, newRateLimit(1, -3))
	assert.Equal(t, rateLimit{interval: int64(time.Second / 4), tolerance: int64(time.Second / 2)}, newRateLimit(4, 3))
	assert.Equal(t, int64(1), newRateLimit(1e300, 1).interval)
	huge := newRateLimit(1e-300, math.MaxInt)
	assert.Positive(t, huge.interval)
	assert.Positive(t, huge.tolerance)
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithRateLimit(0, 0))
		defer p.Stop()
		starts := newRunLog()
		for range 5 {
			p.Submit(starts.task())
		}
		p.StopWait()
		assert.Equal(t, ms(0, 0, 0, 0, 0), starts.at)
	})
}
