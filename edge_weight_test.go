package workerpool

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Resize to grow starts a heavy task that now fits, at once; a shrink
// below the slots in use holds it; growing again starts it.
func TestResizeStartsHeavyThatNowFits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3)
		defer p.Stop()
		block := make(chan struct{})
		p.Submit(func() { <-block }) // one slot
		var started atomic.Bool
		h := p.Go(context.Background(), func(context.Context) error { started.Store(true); return nil }, Weight(3))
		synctest.Wait()
		assert.False(t, started.Load(), "weight 3 with one slot in use of 3")
		p.Resize(4)
		synctest.Wait()
		assert.True(t, started.Load(), "weight 3 after Resize(4) with one slot in use")
		require.NoError(t, h.Wait())
		close(block)
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
		}, Weight(2), Retry(func(int, error) (time.Duration, bool) { return 50 * time.Millisecond, true }))
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
		assert.LessOrEqual(t, m.top, 2)
		p.StopWait()
		requireStoppedClean(t, p)
	})
}

// Resize below a scheduled heavy task's weight: the task is dropped with
// ErrTooHeavy (Dropped), not run.
func TestResizeBelowAScheduledHeavyTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4)
		var ran atomic.Bool
		h := p.Go(context.Background(), func(context.Context) error { ran.Store(true); return nil }, Weight(3), Delay(time.Second))
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
		hq := p.Go(context.Background(), func(context.Context) error { close(queued); return nil }, Weight(3))
		hs := p.Go(context.Background(), func(context.Context) error { return nil }, Weight(3), Delay(time.Hour))
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
