package workerpool

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

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
					WithDeadLetter(func(func(), error) { letters.Add(1) }),
				)
				rng := rand.New(rand.NewPCG(3, 4))
				var runs, plainRuns atomic.Int64
				var handles []*Task
				outcomes := map[string]int{}
				for i := range 400 {
					opts := []TaskOption{Priority(rng.IntN(5) - 2)}
					if rng.IntN(3) == 0 {
						opts = append(opts, Delay(time.Duration(rng.IntN(500))*time.Millisecond))
					}
					if rng.IntN(3) == 0 {
						opts = append(opts, Retry(Backoff(10*time.Millisecond, 80*time.Millisecond, 3)))
					}
					if rng.IntN(4) == 0 {
						opts = append(opts, Weight(1+rng.IntN(4))) // 4: too heavy for 3
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

// outcome names what a handle's Wait said.
func outcome(err error) string {
	switch {
	case err == nil, err == errFlaky:
		return "ran"
	case errors.Is(err, ErrTooHeavy):
		return "too heavy"
	case errors.Is(err, ErrQueueFull):
		return "queue full"
	case errors.Is(err, ErrExpired):
		return "expired"
	case errors.Is(err, ErrDropped):
		return "dropped"
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
