package workerpool

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordingPolicy wraps policy and records the delays it returns.
type recordingPolicy struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (r *recordingPolicy) wrap(policy retryPolicy) retryPolicy {
	return func(attempt int, err error) (time.Duration, bool) {
		d, ok := policy(attempt, err)
		if ok {
			r.mu.Lock()
			r.delays = append(r.delays, d)
			r.mu.Unlock()
		}
		return d, ok
	}
}

// Under Backoff a failing task runs at most attempts times, each run after
// the delay the policy drew, which is within its ceiling; Wait returns the
// last run's error; Status counts the re-runs in Retried and the task once
// in Completed.
func TestRetryBackoffRunsAtTheDrawnTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		var rec recordingPolicy
		l := newRunLog()
		task := p.Go(t.Context(), l.failing(-1), TaskOption{Retry: rec.wrap(Backoff(100*time.Millisecond, 300*time.Millisecond, 3))})
		assert.ErrorIs(t, task.Wait(), errFlaky)
		require.Len(t, rec.delays, 3)
		want := []time.Duration{0}
		for i, d := range rec.delays {
			ceiling := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}[i]
			assert.True(t, d >= 0 && d <= ceiling, "delay %d: %v, ceiling %v", i+1, d, ceiling)
			want = append(want, want[i]+d)
		}
		assert.Equal(t, want, l.at, "run times")
		s := p.Status()
		assert.Equal(t, uint64(3), s.Retried)
		assert.Equal(t, uint64(1), s.Completed)
		assert.Equal(t, 0, s.Scheduled)
		p.Stop()
		requireStoppedClean(t, p)
	})
}

// Between runs the task is a scheduled task: it counts in Scheduled, holds
// no worker, and WaitIdle waits for it; a task that succeeds on a later
// run ends with nil.
func TestRetryWaitsAsAScheduledTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		l := newRunLog()
		constant := func(int, error) (time.Duration, bool) { return time.Second, true }
		task := p.Go(t.Context(), l.failing(2), TaskOption{Retry: constant})
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 1, s.Scheduled, "scheduled between runs")
		assert.Equal(t, 0, s.Busy, "busy between runs")
		assert.Equal(t, 0, s.Waiting)
		other := p.Go(t.Context(), func(context.Context) error { return nil })
		require.NoError(t, other.Wait(), "the worker is free for others meanwhile")
		require.NoError(t, p.WaitIdle(t.Context()))
		assert.Equal(t, 2*time.Second, time.Since(l.t0), "WaitIdle returned after the last run")
		require.NoError(t, task.Wait())
		assert.Equal(t, []time.Duration{0, time.Second, 2 * time.Second}, l.at)
		assert.Equal(t, uint64(2), p.Status().Retried)
	})
}

// A Permanent error ends the retries at once; errors.Is sees through it.
// Neither nil nor a policy saying no is retried, and Permanent(nil) is
// nil.
func TestRetryEndsOnPermanentAndWhenThePolicySaysNo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		always := func(int, error) (time.Duration, bool) { return 0, true }
		runs := 0
		task := p.Go(t.Context(), func(context.Context) error {
			runs++
			return fmt.Errorf("wrapped: %w", Permanent(errFlaky))
		}, TaskOption{Retry: always})
		err := task.Wait()
		assert.ErrorIs(t, err, errFlaky)
		assert.Equal(t, "wrapped: flaky", err.Error())
		assert.Equal(t, 1, runs)
		assert.NoError(t, Permanent(nil))

		never := func(int, error) (time.Duration, bool) { return time.Hour, false }
		l := newRunLog()
		assert.ErrorIs(t, p.Go(t.Context(), l.failing(-1), TaskOption{Retry: never}).Wait(), errFlaky)
		assert.Len(t, l.at, 1)
		l = newRunLog()
		assert.NoError(t, p.Go(t.Context(), l.failing(0), TaskOption{Retry: always}).Wait())
		assert.Len(t, l.at, 1)
		l = newRunLog()
		assert.ErrorIs(t, p.Go(t.Context(), l.failing(-1), TaskOption{Retry: nil}).Wait(), errFlaky, "a nil policy")
		assert.Len(t, l.at, 1)
		assert.Zero(t, p.Status().Retried)
	})
}

// A panic is an error like any other: the task runs again. Status counts
// the task once, in Completed, and in Panicked only if its last run
// panicked: here it did not, so the panics of the runs retried count
// nowhere.
func TestRetryAfterAPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		l := newRunLog()
		every := func(int, error) (time.Duration, bool) { return time.Second, true }
		task := p.Go(t.Context(), func(context.Context) error {
			if n := l.record(); n <= 2 {
				panic(fmt.Sprintf("run %d", n))
			}
			return nil
		}, TaskOption{Retry: every})
		require.NoError(t, task.Wait())
		assert.Equal(t, []time.Duration{0, time.Second, 2 * time.Second}, l.at, "run times")
		p.Stop()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Completed, "completed")
		assert.Equal(t, uint64(0), s.Panicked, "panicked: the last run returned")
		assert.Equal(t, uint64(2), s.Retried, "retried")
	})
}

// A task, and a group task, that panic on every run until the policy gives
// up count once each in Completed and in Panicked, however many runs
// panicked.
func TestRetryPanickingEveryRunCountsOnceInPanicked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		threeRuns := func(attempt int, _ error) (time.Duration, bool) { return time.Second, attempt < 3 }
		l := newRunLog()
		panicking := func(context.Context) error { panic(fmt.Sprintf("run %d", l.record())) }
		task := p.Go(t.Context(), panicking, TaskOption{Retry: threeRuns})
		g := p.Group(t.Context())
		g.Go(panicking, TaskOption{Retry: threeRuns})
		var pe *PanicError
		require.ErrorAs(t, task.Wait(), &pe, "the task's error")
		require.ErrorAs(t, g.Wait(), &pe, "the group's error")
		assert.Equal(t, []time.Duration{0, 0, time.Second, time.Second, 2 * time.Second, 2 * time.Second}, l.at, "run times")
		p.Stop()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(2), s.Completed, "completed")
		assert.Equal(t, uint64(2), s.Panicked, "panicked: once per task")
		assert.Equal(t, uint64(4), s.Retried, "retried")
	})
}

// A task that Stop abandons while it waits for its next run, after a run
// that panicked, is not in Completed, so not in Panicked either.
func TestRetryAbandonedAfterAPanicIsNotPanicked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		every := func(int, error) (time.Duration, bool) { return time.Second, true }
		task := p.Go(t.Context(), panickingFn, TaskOption{Retry: every})
		synctest.Wait()
		require.Equal(t, 1, p.Status().Scheduled, "waiting for its next run")
		p.Stop()
		err := task.Wait()
		assert.ErrorIs(t, err, ErrStopped)
		var pe *PanicError
		assert.ErrorAs(t, err, &pe, "joined with the last run's panic")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Abandoned, "abandoned")
		assert.Equal(t, uint64(0), s.Completed, "completed")
		assert.Equal(t, uint64(0), s.Panicked, "panicked")
	})
}

// A ctx deadline that ends while the task waits for its next run removes
// it at once: it leaves Scheduled, counts as Canceled, and Wait returns the
// ctx's error joined with the last run's.
func TestRetryEndsWhenCtxEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		ctx, cancel := context.WithTimeout(t.Context(), 250*time.Millisecond)
		defer cancel()
		l := newRunLog()
		every100ms := func(int, error) (time.Duration, bool) { return 100 * time.Millisecond, true }
		task := p.Go(ctx, l.failing(-1), TaskOption{Retry: every100ms})
		err := task.Wait()
		assert.Equal(t, 250*time.Millisecond, time.Since(l.t0), "Wait returned when ctx ended")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, errFlaky)
		assert.Equal(t, []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond}, l.at)
		s := p.Status()
		assert.Equal(t, 0, s.Scheduled)
		assert.Equal(t, uint64(1), s.Canceled)
		assert.Equal(t, uint64(2), s.Retried)
		p.Stop()
		requireStoppedClean(t, p)
	})
}

// Canceling the task's ctx during a run ends the retries: Wait returns
// that run's error. Canceling it while the task waits for its next run
// removes the task at once.
func TestRetryEndsOnCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		always := func(int, error) (time.Duration, bool) { return time.Second, true }
		runs := 0
		started := make(chan struct{})
		ctx, cancel := context.WithCancel(t.Context())
		task := p.Go(ctx, func(ctx context.Context) error {
			runs++
			close(started)
			<-ctx.Done()
			return errFlaky
		}, TaskOption{Retry: always})
		<-started
		cancel()
		assert.Equal(t, errFlaky, task.Wait())
		assert.Equal(t, 1, runs)

		l := newRunLog()
		ctx, cancel = context.WithCancel(t.Context())
		task = p.Go(ctx, l.failing(-1), TaskOption{Retry: always})
		synctest.Wait()
		cancel()
		err := task.Wait()
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, errFlaky)
		assert.Len(t, l.at, 1)
		p.Stop()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Canceled)
		assert.Equal(t, uint64(1), s.Completed)
	})
}

// A Task.cancel (the pool's own, as the task's ctx ending is the caller's)
// removes a scheduled task at once and ends the retries: one made while
// the policy decides (from inside the policy, standing for a cancel from
// another goroutine at that moment) finds the job started and only cancels
// its context; the worker sees it once the job is scheduled, and settles it.
func TestCancelWhileRetryIsDecidedEndsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		var task *Task
		var runs atomic.Int32
		policy := func(int, error) (time.Duration, bool) {
			task.cancel() // a concurrent cancel, landing while the worker decides
			return time.Hour, true
		}
		ready := make(chan struct{})
		task = p.Go(context.Background(), func(context.Context) error {
			<-ready
			runs.Add(1)
			return errFlaky
		}, TaskOption{Retry: policy})
		close(ready)
		done := make(chan error, 1)
		go func() { done <- task.Wait() }()
		time.Sleep(time.Second)
		select {
		case err := <-done:
			assert.ErrorIs(t, err, context.Canceled)
			assert.ErrorIs(t, err, errFlaky)
		default:
			s := p.Status()
			t.Errorf("Wait still blocked 1s after cancel: Scheduled %d, Canceled %d; it waits for the 1h retry delay", s.Scheduled, s.Canceled)
		}
		assert.Equal(t, int32(1), runs.Load())
	})
}

// The same race without calling cancel from the policy: a Task.cancel from
// another goroutine as the failing run returns. Real scheduling, ≤1s.
func TestCancelRacesARetryStress(t *testing.T) {
	p := New(2)
	defer p.Stop()
	policy := func(int, error) (time.Duration, bool) { return time.Hour, true }
	deadline := time.Now().Add(time.Second)
	n := 0
	for time.Now().Before(deadline) {
		n++
		returning := make(chan struct{})
		task := p.Go(context.Background(), func(context.Context) error {
			close(returning)
			return errFlaky
		}, TaskOption{Retry: policy})
		<-returning
		for range n % 64 {
			runtime.Gosched()
		}
		task.cancel()
		select {
		case <-task.Done():
		case <-time.After(time.Second):
			t.Fatalf("round %d: Wait blocked 1s after cancel (retry due in 1h): %+v", n, p.Status())
		}
	}
	t.Logf("%d rounds", n)
}

// After that race the cancel is not forgotten: the task never runs again,
// and Wait reports context.Canceled.
func TestCanceledTaskIsNotRerun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		var task *Task
		var runs atomic.Int32
		policy := func(attempt int, _ error) (time.Duration, bool) {
			if attempt == 1 {
				task.cancel() // a concurrent cancel, landing while the worker decides
			}
			return time.Hour, true
		}
		ready := make(chan struct{})
		task = p.Go(context.Background(), func(context.Context) error {
			<-ready
			if runs.Add(1) > 1 {
				return nil
			}
			return errFlaky
		}, TaskOption{Retry: policy})
		close(ready)
		time.Sleep(2 * time.Hour)
		assert.Equal(t, int32(1), runs.Load(), "runs after cancel")
		err := task.Wait()
		assert.ErrorIs(t, err, context.Canceled, "Wait after cancel")
	})
}

// StopWait runs a task waiting for its next run when it is due; Stop
// abandons it, and Wait reports ErrStopped joined with the last run's
// error; Shutdown runs retries until its ctx is done, then abandons them.
func TestRetryAtStop(t *testing.T) {
	every := func(d time.Duration) retryPolicy {
		return func(int, error) (time.Duration, bool) { return d, true }
	}
	t.Run("StopWait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := New(1)
			l := newRunLog()
			task := p.Go(t.Context(), l.failing(3), TaskOption{Retry: every(time.Second)})
			synctest.Wait()
			p.StopWait()
			assert.Equal(t, 3*time.Second, time.Since(l.t0))
			require.NoError(t, task.Wait())
			s := requireStoppedClean(t, p)
			assert.Equal(t, uint64(3), s.Retried)
		})
	})
	t.Run("Stop", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := New(1)
			l := newRunLog()
			task := p.Go(t.Context(), l.failing(-1), TaskOption{Retry: every(time.Second)})
			synctest.Wait()
			p.Stop()
			err := task.Wait()
			assert.ErrorIs(t, err, ErrStopped)
			assert.ErrorIs(t, err, errFlaky)
			s := requireStoppedClean(t, p)
			assert.Equal(t, uint64(1), s.Abandoned)
			assert.Equal(t, uint64(0), s.Retried, "no run after the first")
		})
	})
	t.Run("Stop during a run", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := New(1)
			started, release := make(chan struct{}), newGate()
			task := p.Go(t.Context(), func(context.Context) error {
				close(started)
				release.wait()
				return errFlaky
			}, TaskOption{Retry: every(0)})
			<-started
			go func() { synctest.Wait(); release.open() }()
			p.Stop()
			err := task.Wait()
			assert.ErrorIs(t, err, ErrStopped)
			assert.ErrorIs(t, err, errFlaky)
			requireStoppedClean(t, p)
		})
	})
	t.Run("Shutdown", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := New(1)
			l := newRunLog()
			task := p.Go(t.Context(), l.failing(-1), TaskOption{Retry: every(time.Second)})
			ctx, cancel := context.WithTimeout(t.Context(), 2500*time.Millisecond)
			defer cancel()
			assert.ErrorIs(t, p.Shutdown(ctx), context.DeadlineExceeded)
			assert.Equal(t, []time.Duration{0, time.Second, 2 * time.Second}, l.at)
			err := task.Wait()
			assert.ErrorIs(t, err, ErrStopped)
			assert.ErrorIs(t, err, errFlaky)
			requireStoppedClean(t, p)
		})
	})
}

// In a group, a run that will be retried does not fail the group: only a
// task's final error counts.
func TestRetryInAGroupOnlyTheFinalErrorCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		g := p.Group(t.Context())
		l := newRunLog()
		g.Go(l.failing(2), TaskOption{Retry: Backoff(time.Millisecond, time.Second, 2)})
		var sawCancel bool
		g.Go(func(ctx context.Context) error {
			select {
			case <-ctx.Done():
				sawCancel = true
			case <-time.After(time.Minute):
			}
			return nil
		})
		require.NoError(t, g.Wait())
		assert.False(t, sawCancel, "a retried run canceled the group")
		assert.Len(t, l.at, 3)

		g = p.Group(t.Context())
		g.Go(newRunLog().failing(-1), TaskOption{Retry: Backoff(time.Millisecond, time.Second, 1)})
		assert.ErrorIs(t, g.Wait(), errFlaky, "the final error")
	})
}

// In a group: a sibling's error cancels the group while a task's retry is
// being decided; the group's Wait must not wait for the retry delay.
func TestGroupCanceledWhileRetryIsDecided(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		g := p.Group(context.Background())
		failSibling := make(chan struct{})
		var gctx context.Context
		policy := func(int, error) (time.Duration, bool) {
			close(failSibling)
			<-gctx.Done() // the sibling's error cancels the group meanwhile
			return time.Hour, true
		}
		g.Go(func(ctx context.Context) error { gctx = ctx; return errFlaky }, TaskOption{Retry: policy})
		g.Go(func(context.Context) error {
			<-failSibling
			return errTask
		})
		done := make(chan error, 1)
		go func() { done <- g.Wait() }()
		time.Sleep(time.Second)
		select {
		case err := <-done:
			assert.ErrorIs(t, err, errTask)
		default:
			t.Errorf("Group.Wait still blocked 1s after the group was canceled: Scheduled %d", p.Status().Scheduled)
		}
	})
}

// Backoff: the delay before run k+1 is within [0, min(max, base·2^(k−1))];
// at most attempts runs (attempts < 1 means 1); base or max of zero or
// less means no delay; huge values do not overflow.
func TestBackoffBounds(t *testing.T) {
	b := Backoff(10*time.Millisecond, 50*time.Millisecond, 4)
	for attempt, ceiling := range map[int]time.Duration{1: 10 * time.Millisecond, 2: 20 * time.Millisecond, 3: 40 * time.Millisecond, 4: 50 * time.Millisecond} {
		seen := map[bool]bool{}
		for range 2000 {
			d, ok := b(attempt, errFlaky)
			require.True(t, ok, "attempt %d", attempt)
			require.True(t, d >= 0 && d <= ceiling, "attempt %d: %v above %v", attempt, d, ceiling)
			seen[d > ceiling/2] = true
		}
		assert.Len(t, seen, 2, "attempt %d: jitter covers the range", attempt)
	}
	_, ok := b(5, errFlaky)
	assert.False(t, ok, "after 5 runs")
	for _, attempts := range []int{1, 0, -3} {
		_, ok := Backoff(time.Second, time.Second, attempts-1)(1, errFlaky)
		assert.False(t, ok, "attempts %d: one run only", attempts)
	}
	for _, b := range []retryPolicy{Backoff(0, time.Second, 2), Backoff(time.Second, 0, 2), Backoff(-time.Second, time.Second, 2)} {
		d, ok := b(1, errFlaky)
		assert.True(t, ok)
		assert.Zero(t, d)
	}
	huge := Backoff(time.Hour, time.Duration(1<<62), 999)
	for _, attempt := range []int{40, 64, 200, 999} {
		d, ok := huge(attempt, errFlaky)
		assert.True(t, ok)
		assert.True(t, d >= 0 && d <= time.Duration(1<<62), "attempt %d: %v", attempt, d)
	}
}

// Backoff(base, max, attempts-1): the delay is random in
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
		policy := Backoff(c.base, c.max, 99)
		assert.NotPanics(t, func() {
			d, ok := policy(c.attempt, errFlaky)
			assert.True(t, ok)
			assert.GreaterOrEqual(t, d, time.Duration(0))
		}, "Backoff(%v, %v, 99)(%d)", c.base, c.max, c.attempt)
	}
}

// A retryPolicy's delay: "retry means the task goes back through the
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
		}, TaskOption{Retry: policy})
		time.Sleep(time.Hour)
		assert.Equal(t, int32(1), runs.Load(), "runs within an hour of a retry delayed by MaxInt64")
		p.Stop()
		assert.ErrorIs(t, task.Wait(), ErrStopped)
	})
}

// A task that retries under a bound takes a free place while it waits,
// and never waits for one: with the queue full it goes over the bound
// rather than hold its worker.
func TestRetryUnderABound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(1, Reject))
		defer p.Stop()
		every := func(int, error) (time.Duration, bool) { return time.Second, true }
		l := newRunLog()
		task := p.Go(t.Context(), l.failing(1), TaskOption{Retry: every})
		synctest.Wait()
		assert.Equal(t, 1, p.Status().Scheduled)
		g := newGate()
		p.Submit(g.task()) // a free worker: it starts at once, without a place
		assert.ErrorIs(t, p.Do(func() {}), ErrQueueFull, "the retry holds the one place")
		g.open()
		require.NoError(t, task.Wait())

		// A run fails while another task holds the place: the retry waits
		// without one, and the place, once free, goes to a new task.
		release := newGate()
		task = p.Go(t.Context(), func(context.Context) error { release.wait(); return errFlaky }, TaskOption{Retry: every})
		synctest.Wait() // started: its place is free again
		g = newGate()
		p.Submit(g.task()) // queued: it takes the place
		release.open()
		synctest.Wait() // the run failed; g's task runs
		require.NoError(t, p.Do(func() {}), "the free place")
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 1, s.Scheduled)
		assert.Equal(t, 1, s.Waiting, "over the bound of 1, with the retry")
		g.open()
		p.Stop()
		assert.ErrorIs(t, task.Wait(), ErrStopped)
		requireStoppedClean(t, p)
	})
}

// A task that ran again keeps nothing reachable in the pool once it has
// finished and its caller dropped it: dispatch, having taken it back from
// its worker for the retry, holds no reference to it, so a Future's value
// and its fn's captures can be collected while the pool runs on and no
// other task is retried.
func TestRetriedTaskIsNotKeptReachableOnceItFinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithIdleTimeout(-1))
		defer p.Stop()
		again := func(int, error) (time.Duration, bool) { return 0, true }
		captured, value := func() (weak.Pointer[[1 << 16]byte], weak.Pointer[[1 << 16]byte]) {
			big := new([1 << 16]byte)
			runs := 0
			f := GoResult(context.Background(), p, func(context.Context) (*[1 << 16]byte, error) {
				big[0]++
				if runs++; runs == 1 {
					return nil, errFlaky
				}
				return new([1 << 16]byte), nil
			}, TaskOption{Retry: again})
			v, err := f.Wait()
			require.NoError(t, err)
			require.Equal(t, 2, runs, "ran again")
			return weak.Make(big), weak.Make(v)
		}()
		synctest.Wait()
		for range 3 {
			runtime.GC()
		}
		assert.True(t, captured.Value() == nil, "what the retried task's fn captured, kept by the pool")
		assert.True(t, value.Value() == nil, "the retried Future's value, kept by the pool")
		assert.Equal(t, "running", stateOf(p.Status()), "the pool still runs")
	})
}

// A retry policy's panic is logged with the attempt the policy was asked
// about: the run that failed.
func TestRetryPolicyPanicIsLoggedWithTheFailedAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := new(recordingLog)
		p := New(1, WithHooks(Hooks{Logger: slog.New(logs), Panic: func(any) {}}))
		defer p.Stop()
		asked := make(chan int, 1)
		task := p.Go(t.Context(), func(context.Context) error { return errFlaky }, TaskOption{Label: "x"},
			TaskOption{Retry: func(attempt int, err error) (time.Duration, bool) { asked <- attempt; panic("policy") }})
		require.Error(t, task.Wait())
		assert.Equal(t, 1, <-asked, "the policy was asked about attempt 1")
		recs := logs.withMessage("retry policy panicked")
		require.Len(t, recs, 1)
		assert.Equal(t, map[string]string{"label": "x", "attempt": "1"}, recs[0].attrs("label", "attempt"))
	})
}

// A retry policy that calls runtime.Goexit ends the task: its Wait
// returns ErrGoexit joined with the run's error, and the pool counts it
// completed.
func TestRetryPolicyGoexitEndsTheTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		task := p.Go(t.Context(), func(context.Context) error { return errFlaky },
			TaskOption{Retry: func(int, error) (time.Duration, bool) { runtime.Goexit(); return 0, false }})
		done := make(chan error, 1)
		go func() { done <- task.Wait() }()
		synctest.Wait()
		select {
		case err := <-done:
			assert.ErrorIs(t, err, ErrGoexit)
			assert.ErrorIs(t, err, errFlaky)
		default:
			t.Fatal("Task.Wait blocked after the retry policy called runtime.Goexit")
		}
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Completed)
	})
}

// Backoff(base, max, retries) counts retries, not runs: a task that always
// fails runs retries+1 times. It never retries a panic, which a policy of
// one's own still sees as a *PanicError and may retry.
func TestBackoffRetriesUpToItsCountAndNeverAPanic(t *testing.T) {
	policy := Backoff(0, 0, 2)
	for attempt, want := range []bool{true, true, false} {
		_, retry := policy(attempt+1, errFlaky)
		assert.Equal(t, want, retry, "after run %d", attempt+1)
	}
	_, retry := policy(1, fmt.Errorf("wrapped: %w", &PanicError{Value: "x"}))
	assert.False(t, retry, "a panic")
	_, retry = Backoff(0, 0, 0)(1, errFlaky)
	assert.False(t, retry, "retries 0: no retry")

	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		runs, panics := 0, 0
		err := p.Go(t.Context(), func(context.Context) error { runs++; return errFlaky }, TaskOption{Retry: Backoff(time.Second, time.Second, 3)}).Wait()
		assert.ErrorIs(t, err, errFlaky)
		assert.Equal(t, 4, runs, "runs of a task that always fails, under Backoff(..., 3)")
		err = p.Go(t.Context(), func(context.Context) error { panics++; panic("bug") }, TaskOption{Retry: Backoff(time.Second, time.Second, 3)}).Wait()
		var pe *PanicError
		assert.ErrorAs(t, err, &pe)
		assert.Equal(t, 1, panics, "runs of a task that panics, under Backoff")
		panics = 0
		always := func(int, error) (time.Duration, bool) { return 0, panics < 3 }
		_ = p.Go(t.Context(), func(context.Context) error { panics++; panic("bug") }, TaskOption{Retry: always}).Wait()
		assert.Equal(t, 3, panics, "a policy of one's own retries a panic")
	})
}
