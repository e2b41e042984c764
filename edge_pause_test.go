package workerpool

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

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
				o := []TaskOption{Priority(rng.IntN(7) - 3), Weight(1 + rng.IntN(size))}
				due := time.Duration(0)
				if rng.IntN(3) == 0 {
					due = time.Duration(rng.IntN(100)) * time.Millisecond
					o = append(o, Delay(due))
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
				o := []TaskOption{Priority(rng.IntN(7) - 3), Weight(1 + rng.IntN(size))}
				if rng.IntN(3) == 0 {
					o = append(o, Delay(time.Duration(rng.IntN(100))*time.Millisecond))
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
