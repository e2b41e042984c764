package workerpool

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests for Pause: a barrier for the tasks queued before it, then a hold on
// later tasks until its context ends; and how pauses meet stops, idle
// retirement and the scheduling policies.

func TestPauseIsABarrierThenHoldsLaterTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		var earlier atomic.Int64
		for range 6 {
			p.Submit(func() { time.Sleep(time.Second); earlier.Add(1) })
		}
		ctx, cancel := context.WithCancel(t.Context())
		p.Pause(ctx)
		assert.Equal(t, int64(6), earlier.Load(), "earlier tasks finished when Pause returned")
		assert.Equal(t, "paused", stateOf(p.Status()), "state")

		var later atomic.Int64
		for range 5 {
			p.Submit(func() { later.Add(1) })
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Zero(t, later.Load(), "later tasks ran during the pause")
		assert.Equal(t, 5, p.WaitingQueueSize(), "held tasks are waiting")

		cancel()
		synctest.Wait()
		assert.Equal(t, int64(5), later.Load(), "later tasks ran after the pause")
		assert.Equal(t, "running", stateOf(p.Status()), "state")
	})
}

func TestPauseWaitsForRunningTasksNotJustQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4)
		defer p.Stop()
		g := newGate()
		p.Submit(g.task())
		returned := make(chan struct{})
		go func() { p.Pause(t.Context()); close(returned) }()
		synctest.Wait()
		assert.False(t, isClosed(returned), "Pause returned while an earlier task runs")
		g.open()
		synctest.Wait()
		assert.True(t, isClosed(returned), "Pause returned after the task finished")
	})
}

// A Pause whose barrier is reached only as dispatch drops a canceled task
// from the front of the queue (settled at once by Task.cancel, which wakes
// dispatch) still returns when the running task ends: the drop happens
// just before dispatch waits, and it must then watch for the running task
// to come back.
func TestPauseReturnsWhenADroppedCanceledTaskWasTheLastBeforeItsBarrier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		g := newGate()
		defer g.release()
		p.Submit(g.task())
		tk := p.Go(context.Background(), func(context.Context) error { return nil })
		synctest.Wait()
		returned := make(chan struct{})
		go func() { p.Pause(context.Background()); close(returned) }()
		synctest.Wait()
		tk.cancel()
		synctest.Wait()
		assert.False(t, isClosed(returned), "the running task has not ended")
		g.open()
		synctest.Wait()
		assert.True(t, isClosed(returned), "Pause returns once every earlier task is done")
		assert.ErrorIs(t, tk.Wait(), context.Canceled)
	})
}

func TestPauseWithDoneContextIsOnlyABarrier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		var ran atomic.Int64
		p.Submit(func() { time.Sleep(time.Second); ran.Add(1) })
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		p.Pause(ctx)
		assert.Equal(t, int64(1), ran.Load(), "earlier task finished")
		p.SubmitWait(func() { ran.Add(1) }) // would hang if the pool stayed paused
		assert.Equal(t, int64(2), ran.Load(), "later task ran")
	})
}

func TestSecondPauseWaitsForFirstToEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		ctx1, cancel1 := context.WithCancel(t.Context())
		p.Pause(ctx1)
		var between atomic.Int64
		p.Submit(func() { between.Add(1) })

		returned := make(chan struct{})
		ctx2, cancel2 := context.WithCancel(t.Context())
		go func() { p.Pause(ctx2); close(returned) }()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.False(t, isClosed(returned), "second Pause returned during the first")
		assert.Zero(t, between.Load(), "held task ran")

		cancel1()
		synctest.Wait()
		assert.True(t, isClosed(returned), "second Pause returned after the first ended")
		assert.Equal(t, int64(1), between.Load(), "task submitted before the second Pause ran before it returned")
		assert.Equal(t, "paused", stateOf(p.Status()), "second pause in effect")

		var after atomic.Int64
		p.Submit(func() { after.Add(1) })
		synctest.Wait()
		assert.Zero(t, after.Load(), "task held by the second pause ran")
		cancel2()
		synctest.Wait()
		assert.Equal(t, int64(1), after.Load(), "task ran after the second pause")
	})
}

func TestStopEndsPausesAndAbandonsHeldTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		p.Pause(t.Context()) // never cancelled
		var ran atomic.Int64
		for range 3 {
			p.Submit(func() { ran.Add(1) })
		}
		waiting := make(chan struct{})
		go func() { p.Pause(t.Context()); close(waiting) }()
		synctest.Wait()
		p.Stop()
		synctest.Wait()
		assert.True(t, isClosed(waiting), "queued Pause returned on Stop")
		assert.Zero(t, ran.Load(), "held tasks ran on Stop")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(3), s.Abandoned, "abandoned")
	})
}

func TestStopWaitEndsPausesAndRunsHeldTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		p.Pause(t.Context())
		var ran atomic.Int64
		for range 3 {
			p.Submit(func() { ran.Add(1) })
		}
		p.StopWait()
		assert.Equal(t, int64(3), ran.Load(), "held tasks ran on StopWait")
		requireStoppedClean(t, p)
	})
}

func TestPauseAfterStopReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		p.Stop()
		p.Pause(t.Context()) // would deadlock the bubble if it blocked
		assert.Equal(t, "stopped", stateOf(p.Status()))
	})
}

func TestPauseInsideTaskDoesNotWedgeExternalStop(t *testing.T) {
	for _, stopWait := range []bool{false, true} {
		t.Run(fmt.Sprintf("stopWait=%v", stopWait), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1)
				returned := make(chan struct{})
				p.Submit(func() { p.Pause(t.Context()); close(returned) })
				synctest.Wait() // the documented deadlock
				require.False(t, isClosed(returned), "Pause inside the only worker returned")
				if stopWait {
					p.StopWait()
				} else {
					p.Stop()
				}
				assert.True(t, isClosed(returned), "Pause returned when stopping began")
				requireStoppedClean(t, p)
			})
		})
	}
}

func TestPauseInternalsAreInvisible(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4)
		defer p.Stop()
		ctx, cancel := context.WithCancel(t.Context())
		p.Pause(ctx)
		go p.Pause(t.Context()) // a second Pause waiting behind the first
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 0, p.WaitingQueueSize(), "WaitingQueueSize while paused")
		assert.Equal(t, 0, s.Waiting, "waiting")
		assert.Equal(t, 0, s.Busy, "busy")
		assert.Equal(t, 0, s.Workers, "a pause starts no workers")
		assert.Equal(t, uint64(0), s.Submitted, "submitted")
		p.Submit(func() {})
		synctest.Wait()
		assert.Equal(t, 1, p.WaitingQueueSize(), "one held user task")
		cancel()
	})
}

func TestPauseWithNilContextPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		var nilCtx context.Context
		assert.PanicsWithValue(t, "workerpool: Pause called with a nil context", func() { p.Pause(nilCtx) })
	})
}

// A Pause holds tasks while idle retirement removes every worker; a held
// Task canceled meanwhile leaves Waiting at once and never takes a worker;
// the pause's end runs the rest; a Stop during another Pause ends it.
func TestPauseCancelAndIdleRetirementTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithIdleTimeout(time.Second))
		p.SubmitWait(func() {})
		ctx, end := context.WithCancel(context.Background())
		p.Pause(ctx)
		var ran atomic.Int64
		p.Submit(func() { ran.Add(1) })
		taskCtx, cancelTask := context.WithCancel(context.Background())
		task := p.Go(taskCtx, func(context.Context) error { ran.Add(10); return nil })
		p.Submit(func() { ran.Add(1) })
		time.Sleep(time.Hour)
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 0, s.Workers, "workers retired while paused")
		assert.Equal(t, 3, s.Waiting)
		cancelTask()
		assert.Same(t, context.Canceled, task.Wait())
		assert.Equal(t, 2, p.WaitingQueueSize())
		end()
		synctest.Wait()
		assert.Equal(t, int64(2), ran.Load())
		assert.Equal(t, uint64(3), p.counts.returnedWork(), "the canceled task took no worker")
		ctx2, end2 := context.WithCancel(context.Background())
		defer end2()
		p.Pause(ctx2)
		p.Submit(func() { ran.Add(1) })
		paused := make(chan struct{})
		go func() { p.Pause(context.Background()); close(paused) }() // queued behind the first
		synctest.Wait()
		p.Stop()
		<-paused
		s = requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Abandoned)
	})
}

// Pause barriers across levels, weights, delays, aging and a rate limit:
// every task queued or due when Pause is called runs, and Pause returns
// after they finished; no task queued or coming due after it starts
// before the pause ends; then all run; and the invariant holds.
func TestPauseBarrierMixed(t *testing.T) {
	for seed := range uint64(300) {
		synctest.Test(t, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 3))
			size := 1 + rng.IntN(3)
			var opts []Option
			if rng.IntN(2) == 0 {
				opts = append(opts, WithPriorityAging(time.Duration(1+rng.IntN(20))*time.Millisecond))
			}
			if rng.IntN(2) == 0 {
				opts = append(opts, WithRateLimit(float64(10+rng.IntN(200)), 1+rng.IntN(3)))
			}
			p := New(size, opts...)
			t0 := time.Now()
			var mu sync.Mutex
			finished := map[string]bool{}
			started := map[string]time.Duration{}
			var before, after []string
			pauseAt := time.Duration(rng.IntN(50)) * time.Millisecond
			var tasks []*Task
			add := func(name string, at time.Duration, opts ...TaskOption) {
				d := time.Duration(rng.IntN(10)) * time.Millisecond
				tasks = append(tasks, p.Go(context.Background(), func(context.Context) error {
					mu.Lock()
					started[name] = time.Since(t0)
					mu.Unlock()
					time.Sleep(d)
					mu.Lock()
					finished[name] = true
					mu.Unlock()
					return nil
				}, opts...))
				_ = at
			}
			n := 5 + rng.IntN(15)
			for i := range n {
				name := fmt.Sprint("b", i)
				o := []TaskOption{{Priority: rng.IntN(7) - 3, Weight: 1 + rng.IntN(size)}}
				due := time.Duration(0)
				if rng.IntN(3) == 0 {
					due = time.Duration(rng.IntN(100)) * time.Millisecond
					o = append(o, TaskOption{Delay: due})
				}
				add(name, due, o...)
				if due <= pauseAt {
					before = append(before, name)
				} else {
					after = append(after, name)
				}
			}
			time.Sleep(pauseAt)
			pauseCtx, endPause := context.WithCancel(context.Background())
			returned := make(chan time.Duration, 1)
			go func() { p.Pause(pauseCtx); returned <- time.Since(t0) }()
			synctest.Wait()
			for i := range 5 + rng.IntN(10) {
				name := fmt.Sprint("a", i)
				o := []TaskOption{{Priority: rng.IntN(7) - 3, Weight: 1 + rng.IntN(size)}}
				if rng.IntN(3) == 0 {
					o = append(o, TaskOption{Delay: time.Duration(rng.IntN(100)) * time.Millisecond})
				}
				add(name, 0, o...)
				after = append(after, name)
			}
			time.Sleep(2 * time.Second)
			var pauseReturned time.Duration
			select {
			case pauseReturned = <-returned:
			default:
				t.Fatalf("seed %d: Pause did not return in 2s", seed)
			}
			mu.Lock()
			for _, name := range before {
				if !finished[name] {
					t.Errorf("seed %d: %s (before the barrier) not finished when Pause returned", seed, name)
				}
				if s, ok := started[name]; ok && s > pauseReturned {
					t.Errorf("seed %d: %s (before) started after Pause returned", seed, name)
				}
			}
			for _, name := range after {
				if s, ok := started[name]; ok {
					t.Errorf("seed %d: %s (after the barrier) started at %v during the pause (called at %v)", seed, name, s, pauseAt)
				}
			}
			mu.Unlock()
			endPause()
			p.StopWait()
			for _, task := range tasks {
				assert.NoError(t, task.Wait())
			}
			requireStoppedClean(t, p)
		})
		if t.Failed() {
			return
		}
	}
}

// A submitter waiting for a free worker (Block with a bound of 0) while
// pauses hold the pool starts on the idle workers once the last pause
// ends, whichever of dispatch's looks at the waiters ends it: no worker's
// return is left to announce the free workers. Pauses that end at the same
// fake moment end now in one look, now in the next; the rounds cover both.
func TestParkedSubmitterStartsWhenThePausesEnd(t *testing.T) {
	for round := range 2000 {
		synctest.Test(t, func(t *testing.T) {
			p := New(4, WithIdleTimeout(-1), WithMinWorkers(3), WithMaxWaiting(0, Block))
			defer p.Stop()
			for range 2 + round%6 {
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				defer cancel()
				go p.Pause(ctx)
				synctest.Wait()
			}
			task := p.Go(t.Context(), noopFn) // waits until the pauses end, at 1s
			require.NoError(t, task.Wait(), "round %d", round)
		})
	}
}

// A Pause meets a keyed task that waits for a retry while a later task of
// its key, which the pause's barrier covers, waits in the queue behind a
// task that keeps the one worker busy. Under a key limit the retry holds
// its key's slot, so the later task can start only after the retry's run:
// the pause must not hold that run, or Pause never returns (the retry of
// another priority level) or returns before the later task ran (of the
// same level, queued ahead of it). Without a limit the retry comes due as
// a new task behind the later one, which the pause holds as any task due
// during a pause.
func TestPauseAndARetryOfAKeyWithTasksBeforeTheBarrier(t *testing.T) {
	for _, c := range []struct {
		name     string
		limit    int
		priority int // of the retried task; the later one has 0
		runs     []string
	}{
		{"limit 1, same level", 1, 0, []string{"retried 1 at 0s", "busy at 0s", "retried 2 at 20ms", "later at 21ms"}},
		{"limit 1, higher level", 1, 1, []string{"retried 1 at 0s", "busy at 0s", "retried 2 at 20ms", "later at 21ms"}},
		{"no limit", -1, 0, []string{"retried 1 at 0s", "busy at 0s", "later at 20ms"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1, WithKeys(c.limit, nil))
				defer p.Stop()
				t0 := time.Now()
				var mu sync.Mutex
				var runs []string
				run := func(name string, d time.Duration) {
					mu.Lock()
					runs = append(runs, fmt.Sprintf("%s at %v", name, time.Since(t0)))
					mu.Unlock()
					time.Sleep(d)
				}
				attempts := 0
				retried := p.Go(t.Context(), func(context.Context) error {
					attempts++
					if attempts == 1 {
						run("retried 1", 0)
						return errTask
					}
					run("retried 2", time.Millisecond)
					return nil
				}, TaskOption{Key: "k", Priority: c.priority, Retry: Backoff(10*time.Millisecond, 10*time.Millisecond, 1)})
				synctest.Wait() // its first run failed: it waits 10ms for its retry
				busy := p.Go(t.Context(), func(context.Context) error { run("busy", 20*time.Millisecond); return nil })
				later := p.Go(t.Context(), func(context.Context) error { run("later", 0); return nil }, TaskOption{Key: "k"})
				pauseCtx, endPause := context.WithCancel(t.Context())
				returned := make(chan struct{})
				go func() { p.Pause(pauseCtx); close(returned) }()
				time.Sleep(time.Second)
				synctest.Wait()
				require.True(t, isClosed(returned), "Pause returned")
				assert.True(t, isClosed(later.Done()), "the later task, which the barrier covers, finished when Pause returned")
				mu.Lock()
				assert.Equal(t, c.runs, runs, "runs until a second into the pause")
				mu.Unlock()
				endPause()
				assert.NoError(t, retried.Wait())
				assert.NoError(t, busy.Wait())
				assert.NoError(t, later.Wait())
			})
		})
	}
}
