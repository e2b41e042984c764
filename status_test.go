package workerpool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests for Status and the read-only accessors: State names, observers that
// never block, counters that never go back, Panicked, Busy in a quiet
// moment, a Status that says "stopped" being exact, and the accounting
// invariant (every accepted task lands in exactly one bucket) with every
// policy at once.

func TestObserversNeverBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		g := newGate()
		p.Submit(g.task())
		p.Submit(func() {})
		go p.Pause(t.Context()) // blocked on its barrier
		synctest.Wait()
		observe := func(want string) {
			t.Helper()
			// A blocking observer would deadlock the bubble here.
			assert.Equal(t, want, stateOf(p.Status()), "state")
			assert.Equal(t, 1, p.WaitingQueueSize(), "WaitingQueueSize")
			assert.Equal(t, want != "running" && want != "paused", p.Stopped(), "Stopped")
			assert.Equal(t, 1, p.Size(), "Size")
		}
		observe("paused")
		go p.StopWait() // blocked on the running task
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, "stopping", stateOf(s), "state during StopWait")
		assert.True(t, p.Stopped(), "Stopped during StopWait")
		assert.Equal(t, 1, s.Busy, "busy during StopWait")
		g.open()
		p.StopWait()
		requireStoppedClean(t, p)
	})
}

// pollBackwards reads counter from p's Status in a loop, on a goroutine of
// its own, until the func it returns is called; that func returns how many
// times the counter went back from one snapshot to the next.
func pollBackwards(p *WorkerPool, counter func(Status) uint64) (stop func() int64) {
	var back atomic.Int64
	done, polled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(polled)
		for last := uint64(0); !isClosed(done); {
			n := counter(p.Status())
			if n < last {
				back.Add(1)
			}
			last = max(last, n)
		}
	}()
	return func() int64 {
		close(done)
		<-polled
		return back.Load()
	}
}

// Status.Completed never goes back, however the runs end: plain tasks,
// handles, and runs posted for a retry, while a reader polls it.
func TestStatusCompletedNeverGoesBack(t *testing.T) {
	p := New(4)
	stop := pollBackwards(p, func(s Status) uint64 { return s.Completed })
	again := TaskOption{Retry: func(attempt int, _ error) (time.Duration, bool) { return 0, attempt < 2 }}
	ctx := context.Background()
	for range 20000 {
		p.Submit(func() {})
		p.Go(ctx, func(context.Context) error { return errFlaky }, again)
	}
	p.StopWait()
	assert.Zero(t, stop(), "times Completed went back")
	assert.Equal(t, uint64(40000), p.Status().Completed, "completed")
}

// Status.Submitted never goes back while messages that carry no task
// (Pause, Resize, WaitIdle, and DoBatch's ticket) race the submits, while a
// reader polls it.
func TestStatusSubmittedNeverGoesBack(t *testing.T) {
	p := New(4)
	stop := pollBackwards(p, func(s Status) uint64 { return s.Submitted })
	var controls sync.WaitGroup
	ended := canceledContext()
	batch := []func(){func() {}, func() {}}
	for range 3 {
		controls.Go(func() {
			for range 2000 {
				p.Resize(4)
				_ = p.WaitIdle(ended)
			}
		})
	}
	controls.Go(func() {
		for range 500 {
			p.Pause(ended) // a barrier only: its context is done
			_ = p.DoBatch(batch)
		}
	})
	for range 20000 {
		p.Submit(func() {})
	}
	controls.Wait()
	p.StopWait()
	assert.Zero(t, stop(), "times Submitted went back")
	assert.Equal(t, uint64(20000+2*500), p.Status().Submitted, "submitted")
}

// Tasks a Group holds back (SetLimit) count in Submitted from their Go
// calls but wait in the group: in a quiet moment Busy is the one task
// running, though a second worker is free, as the next one is released,
// and once the rest are dropped.
func TestStatusBusyLeavesOutTheTasksAGroupHoldsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithMinWorkers(2))
		defer p.Stop()
		ctx, cancel := context.WithCancel(t.Context())
		g := p.Group(ctx)
		g.SetLimit(1)
		gates := make([]gate, 10)
		for i := range gates {
			gates[i] = newGate()
			g.Go(fnOf(gates[i].wait))
		}
		synctest.Wait()
		s := p.Status()
		require.Equal(t, 2, s.Workers, "workers")
		require.Equal(t, uint64(10), s.Submitted, "submitted: every Go call")
		assert.Equal(t, 1, s.Busy, "busy while nine tasks are held")

		gates[0].open() // the next task is released and starts
		synctest.Wait()
		s = p.Status()
		require.Equal(t, uint64(1), s.Completed, "completed")
		assert.Equal(t, 1, s.Busy, "busy once the second task runs")

		cancel()
		waited := make(chan error)
		go func() { waited <- g.Wait() }()
		synctest.Wait() // Wait dropped the held tasks, and waits for the one running
		s = p.Status()
		require.Equal(t, uint64(8), s.Canceled, "canceled: the held tasks dropped")
		assert.Equal(t, 1, s.Busy, "busy once the held tasks are dropped")

		gates[1].open()
		assert.ErrorIs(t, <-waited, context.Canceled, "Wait")
		assert.Equal(t, 0, p.Status().Busy, "busy once the group is done")
	})
}

// A plain task and a DoWait task whose panic the handler took count once
// each in Panicked, as they complete: while the handler runs, neither is
// in Completed, so neither is in Panicked (Panicked is part of Completed
// in every snapshot).
func TestPanickedCountsPlainTasksAsTheyComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := newGate()
		p := New(2, WithHooks(Hooks{Panic: func(any) { release.wait() }}))
		p.Submit(panickingTask)
		doWait := make(chan error, 1)
		go func() { doWait <- p.DoWait(panickingTask) }()
		synctest.Wait()
		s := p.Status()
		require.Equal(t, 2, s.Busy, "both in the handler")
		assert.Equal(t, uint64(0), s.Completed, "completed while the handler runs")
		assert.Equal(t, uint64(0), s.Panicked, "panicked while the handler runs")
		release.open()
		require.NoError(t, <-doWait, "DoWait")
		p.StopWait()
		s = requireStoppedClean(t, p)
		assert.Equal(t, uint64(2), s.Completed, "completed")
		assert.Equal(t, uint64(2), s.Panicked, "panicked")
	})
}

// statusViolation describes what is wrong with a Status whose State is
// "stopped", or "" if it is exact.
func statusViolation(s Status) string {
	if s.Stopped == false {
		return ""
	}
	if s.Workers != 0 || s.Busy != 0 || s.Waiting != 0 || s.Submitted != s.Completed+s.Abandoned+s.Canceled {
		return fmt.Sprintf("%+v", s)
	}
	return ""
}

// A Status that says "stopped" is exact, even while observers and late
// submitters race the stop: every count it holds was read after the stop
// finished.
func TestStatusThatSaysStoppedIsExact(t *testing.T) {
	deadline := time.Now().Add(1500 * time.Millisecond)
	bad, rounds := 0, 0
	var first string
	for ; rounds < 2000 && time.Now().Before(deadline); rounds++ {
		p := New(2, WithIdleTimeout(-1))
		for range 8 {
			p.Submit(func() {})
		}
		var quit atomic.Bool
		var wg sync.WaitGroup
		var mu sync.Mutex
		wg.Go(func() { // a late submitter: its refused sends count for a moment
			for p.Do(func() {}) == nil {
			}
			for !quit.Load() {
				_ = p.Do(func() {})
			}
		})
		wg.Go(func() { // an observer
			for !quit.Load() {
				if v := statusViolation(p.Status()); v != "" {
					mu.Lock()
					bad++
					if first == "" {
						first = v
					}
					mu.Unlock()
					return
				}
			}
		})
		runtime.Gosched()
		p.Stop()
		for range 100 { // let the observer and the late submitter go on a little
			runtime.Gosched()
		}
		quit.Store(true)
		wg.Wait()
		requireStoppedClean(t, p)
	}
	assert.Zero(t, bad, "rounds (of %d) with a Status that said Stopped but was not exact; first: %s", rounds, first)
}

// outcome names what a handle's Wait said.
func outcome(err error) string {
	switch {
	case err == nil, err == errFlaky:
		return "ran"
	case errors.Is(err, ErrTooHeavy):
		return "too heavy"
	case errors.Is(err, errDropped):
		return "dropped"
	case errors.Is(err, ErrQueueFull):
		return "queue full"
	case errors.Is(err, errExpired):
		return "expired"
	case errors.Is(err, ErrStopped):
		return "stopped"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "unknown: " + err.Error()
}

// unrerun counts the handles whose last run was posted for a retry that
// never ran: they ran, yet ended with why the retry never came.
func unrerun(handles []*Task) int {
	n := 0
	for _, h := range handles {
		if err := h.Wait(); errors.Is(err, errFlaky) && err != errFlaky {
			n++
		}
	}
	return n
}

// Every policy of the scheduler at once, stopped each way: every accepted
// task lands in exactly one bucket of the invariant, every handle's Wait
// says which, and the runs add up to Completed and Retried.
func TestAccountingWithEveryPolicyMixed(t *testing.T) {
	for _, stop := range []string{"Stop", "StopWait", "Shutdown"} {
		t.Run(stop, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var letters atomic.Int64
				p := New(3,
					WithMaxWaiting(100, DropOldest),
					WithPriorityAging(50*time.Millisecond),
					WithQueueTimeout(150*time.Millisecond),
					WithRateLimit(200, 4),
					WithHooks(Hooks{DeadLetter: func(func(), error) { letters.Add(1) }}),
				)
				rng := rand.New(rand.NewPCG(3, 4))
				var runs, plainRuns atomic.Int64
				var handles []*Task
				outcomes := map[string]int{}
				for i := range 400 {
					opts := []TaskOption{{Priority: rng.IntN(5) - 2}}
					if rng.IntN(3) == 0 {
						opts = append(opts, TaskOption{Delay: time.Duration(rng.IntN(500)) * time.Millisecond})
					}
					if rng.IntN(3) == 0 {
						opts = append(opts, TaskOption{Retry: Backoff(10*time.Millisecond, 80*time.Millisecond, 2)})
					}
					if rng.IntN(4) == 0 {
						opts = append(opts, TaskOption{Weight: 1 + rng.IntN(4)}) // 4: too heavy for 3
					}
					fails, sleep := rng.IntN(3) == 0, time.Duration(rng.IntN(10))*time.Millisecond
					ctx := t.Context()
					if rng.IntN(5) == 0 {
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(300))*time.Millisecond)
						defer cancel()
					}
					handles = append(handles, p.Go(ctx, func(context.Context) error {
						runs.Add(1)
						time.Sleep(sleep)
						if fails {
							return errFlaky
						}
						return nil
					}, opts...))
					if i%3 == 0 {
						p.Submit(func() { plainRuns.Add(1) })
					}
					if i%40 == 0 {
						time.Sleep(100 * time.Millisecond)
					}
				}
				switch stop {
				case "Stop":
					p.Stop()
				case "StopWait":
					p.StopWait()
				default:
					ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
					_ = p.Shutdown(ctx)
					cancel()
				}
				for _, h := range handles {
					outcomes[outcome(h.Wait())]++
				}
				s := requireStoppedClean(t, p)
				t.Logf("%+v %v", s, outcomes)
				assert.Equal(t, uint64(runs.Load()+plainRuns.Load()), s.Completed+s.Retried+uint64(unrerun(handles)), "runs")
				assert.Equal(t, s.Expired+s.Dropped+s.Abandoned, uint64(letters.Load())+uint64(outcomes["expired"]+outcomes["dropped"]+outcomes["stopped"]), "what never ran, as its waiter or the dead-letter handler learned")
				assert.Equal(t, s.Canceled, uint64(outcomes["canceled"]))
				assert.Equal(t, uint64(outcomes["too heavy"]), s.Rejected-uint64(outcomes["queue full"]))
				assert.Positive(t, s.Retried)
				assert.Positive(t, s.Expired)
				assert.Positive(t, s.Dropped)
				if stop == "StopWait" {
					assert.Zero(t, s.Abandoned)
				}
			})
		})
	}
}
