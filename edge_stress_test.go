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
	"time"

	"github.com/stretchr/testify/assert"
)

// edgeStress runs rounds of a pool of mixed scheduled, retrying, heavy,
// ranked, rate-limited and expiring tasks on real scheduling, stopped in
// one of three ways while tasks flow, and checks after each stop: the
// invariant, zero gauges, every Wait answered, every plain task run or
// dead-lettered exactly once, concurrency in slots never above Size, and
// no pool goroutine left.
func edgeStress(t *testing.T, seed uint64, budget time.Duration) {
	deadline := time.Now().Add(budget)
	rng := rand.New(rand.NewPCG(seed, seed*7+1))
	baseG := runtime.NumGoroutine()
	rounds := 0
	for time.Now().Before(deadline) {
		rounds++
		edgeRound(t, rng)
		if t.Failed() {
			t.Logf("failed in round %d", rounds)
			return
		}
	}
	// Let exited goroutines be reaped.
	for range 100 {
		if runtime.NumGoroutine() <= baseG+2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), baseG+2, "goroutines left after %d rounds", rounds)
	t.Logf("%d rounds", rounds)
}

func edgeRound(t *testing.T, rng *rand.Rand) {
	size := 1 + rng.IntN(4)
	var letters atomic.Int64
	opts := []Option{
		WithPanicHandler(func(any) {}),
		WithDeadLetter(func(func(), error) { letters.Add(1) }),
		WithIdleTimeout(time.Duration(1+rng.IntN(5)) * time.Millisecond),
	}
	if rng.IntN(2) == 0 {
		opts = append(opts, WithPriorityAging(time.Duration(1+rng.IntN(3))*time.Millisecond))
	}
	if rng.IntN(3) == 0 {
		opts = append(opts, WithQueueTimeout(time.Duration(1+rng.IntN(10))*time.Millisecond))
	}
	if rng.IntN(3) == 0 {
		opts = append(opts, WithRateLimit(float64(2000+rng.IntN(5000)), 1+rng.IntN(4)))
	}
	bounded := rng.IntN(3) == 0
	if bounded {
		opts = append(opts, WithMaxWaiting(1+rng.IntN(8), Overflow(rng.IntN(3))))
	}
	p := New(size, opts...)

	var (
		mu     sync.Mutex
		inUse  int
		top    int
		over   string
		plains atomic.Int64
		ran    atomic.Int64
	)
	curSize := func() int { return p.Size() }
	body := func(weight int, d time.Duration) {
		mu.Lock()
		inUse += weight
		if inUse > top {
			top = inUse
		}
		if s := curSize(); inUse > s && over == "" && !resizedR12.Load() {
			over = fmt.Sprintf("slots in use %d > size %d", inUse, s)
		}
		mu.Unlock()
		if d > 0 {
			time.Sleep(d)
		}
		mu.Lock()
		inUse -= weight
		mu.Unlock()
	}
	var waits sync.WaitGroup
	var unanswered atomic.Int64
	wait := func(f func() error) {
		unanswered.Add(1)
		waits.Go(func() {
			_ = f()
			unanswered.Add(-1)
		})
	}
	ops := 20 + rng.IntN(80)
	stopAt := rng.IntN(ops + 1)
	stopWay := rng.IntN(3)
	var stopper sync.WaitGroup
	resizedR12.Store(false)
	for i := range ops {
		if i == stopAt {
			stopper.Go(func() { edgeStopWay(p, stopWay) })
		}
		switch rng.IntN(9) {
		case 0:
			if p.Do(func() { ran.Add(1); body(1, 0) }) == nil {
				plains.Add(1)
			}
		case 1, 2:
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(20))*time.Millisecond)
			w := 1 + rng.IntN(size)
			var topts []TaskOption
			topts = append(topts, Priority(rng.IntN(5)-2), Weight(w))
			if rng.IntN(2) == 0 {
				topts = append(topts, Delay(time.Duration(rng.IntN(3000))*time.Microsecond))
			}
			if rng.IntN(2) == 0 {
				topts = append(topts, Retry(Backoff(100*time.Microsecond, time.Millisecond, 1+rng.IntN(4))))
			}
			fail := rng.IntN(2) == 0
			d := time.Duration(rng.IntN(500)) * time.Microsecond
			task := p.Go(ctx, func(context.Context) error {
				body(w, d)
				if fail {
					return errFlaky
				}
				return nil
			}, topts...)
			if rng.IntN(4) == 0 {
				task.Cancel()
			}
			wait(func() error { defer cancel(); return task.Wait() })
		case 3:
			g := p.Group(context.Background())
			if rng.IntN(2) == 0 {
				g.SetLimit(1 + rng.IntN(2))
			}
			for range 1 + rng.IntN(4) {
				w := 1 + rng.IntN(size)
				fail := rng.IntN(4) == 0
				g.Go(func(context.Context) error {
					body(w, time.Duration(rng2()%300)*time.Microsecond)
					if fail {
						return errFlaky
					}
					return nil
				}, Weight(w), Priority(rng.IntN(3)), Delay(time.Duration(rng.IntN(2000))*time.Microsecond),
					Retry(Backoff(50*time.Microsecond, 500*time.Microsecond, 3)))
			}
			wait(g.Wait)
		case 4:
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(5))*time.Millisecond)
			go func() { p.Pause(ctx); cancel() }()
		case 5:
			wait(func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				err := p.WaitIdle(ctx)
				if err != nil && !errors.Is(err, ErrStopped) && !errors.Is(err, context.DeadlineExceeded) {
					return err
				}
				return nil
			})
		case 6:
			if rng.IntN(3) == 0 {
				resizedR12.Store(true)
				p.Resize(1 + rng.IntN(4))
			}
		case 7:
			wait(func() error { return p.DoWait(func() { body(1, 0) }) })
		case 8:
			time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
		}
	}
	if stopAt == ops {
		stopper.Go(func() { edgeStopWay(p, stopWay) })
	}
	stopped := make(chan struct{})
	go func() { stopper.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("stop did not return in 5s (way %d): %+v\n%s", stopWay, p.Status(), buf[:runtime.Stack(buf, true)])
	}
	// Everything the pool learned must be final now.
	s := p.Status()
	assert.Equal(t, StateStopped, s.State)
	assert.Zero(t, s.Workers, "workers")
	assert.Zero(t, s.Busy, "busy")
	assert.Zero(t, s.Waiting, "waiting")
	assert.Zero(t, s.Scheduled, "scheduled")
	assert.Equal(t, s.Submitted, s.Completed+s.Abandoned+s.Canceled+s.Dropped+s.Expired, "invariant %+v", s)
	waitsDone := make(chan struct{})
	go func() { waits.Wait(); close(waitsDone) }()
	select {
	case <-waitsDone:
	case <-time.After(5 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("%d Waits not answered 5s after the stop returned: %+v\n%s", unanswered.Load(), s, buf[:runtime.Stack(buf, true)])
	}
	mu.Lock()
	assert.Empty(t, over, "concurrency over Size")
	mu.Unlock()
}

var resizedR12 atomic.Bool

var r12ctr atomic.Uint64

func rng2() uint64 { return r12ctr.Add(2654435761) >> 7 }

func edgeStopWay(p *WorkerPool, way int) {
	switch way {
	case 0:
		p.Stop()
	case 1:
		p.StopWait()
	default:
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
		defer cancel()
		_ = p.Shutdown(ctx)
	}
}

func TestStressMixed(t *testing.T) {
	edgeStress(t, 1, time.Second)
}

func TestStressMixed2(t *testing.T) {
	edgeStress(t, 99, time.Second)
}
