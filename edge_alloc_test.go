package workerpool

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Go with options costs no allocation beyond Go without options: here for
// every option that carries no user pointer, and Go(…, Priority) into a
// waiting queue (a new level each time, as levels empty and refill).
func TestGoWithOptionsAllocs(t *testing.T) {
	if raceDetectorOn {
		t.Skip("allocation counts differ under -race")
	}
	p := New(4)
	defer p.StopWait()
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	base := testing.AllocsPerRun(500, func() { _ = p.Go(ctx, fn).Wait() })
	for name, opts := range map[string][]TaskOption{
		"Priority":        {Priority(1)},
		"Priority(-7)":    {Priority(-7)},
		"Weight(2)":       {Weight(2)},
		"Priority+Weight": {Priority(5), Weight(1)},
	} {
		got := testing.AllocsPerRun(500, func() { _ = p.Go(ctx, fn, opts...).Wait() })
		if got > base {
			t.Errorf("Go with %s: %v allocs, Go without options: %v", name, got, base)
		}
	}
	// Queued behind a busy pool: tasks of several levels wait, then run.
	var wg sync.WaitGroup
	block := make(chan struct{})
	queued := func(opts ...TaskOption) float64 {
		return testing.AllocsPerRun(50, func() {
			for range 4 {
				p.Submit(func() { <-block })
			}
			wg.Add(16)
			for i := range 16 {
				opts := opts
				if len(opts) > 0 {
					opts = []TaskOption{Priority(i % 8)}
				}
				p.Go(ctx, func(context.Context) error { wg.Done(); return nil }, opts...)
			}
			for range 4 {
				block <- struct{}{}
			}
			wg.Wait()
		})
	}
	_ = time.Second
	plain, ranked := queued(), queued(Priority(0))
	if ranked > plain {
		t.Errorf("16 queued Go with Priority over 8 levels: %v allocs, without: %v", ranked, plain)
	}
}

// The same with as many levels waiting at once as the spares hold
// (maxSpareLevels): levels that empty and fill again reuse them.
func TestGoWithManyLevelsAllocs(t *testing.T) {
	if raceDetectorOn {
		t.Skip("allocation counts differ under -race")
	}
	p := New(1)
	defer p.StopWait()
	ctx := context.Background()
	var wg sync.WaitGroup
	block := make(chan struct{})
	const tasks = 64
	queued := func(ranked bool) float64 {
		return testing.AllocsPerRun(20, func() {
			p.Submit(func() { <-block })
			wg.Add(tasks)
			for i := range tasks {
				fn := func(context.Context) error { wg.Done(); return nil }
				if ranked {
					p.Go(ctx, fn, Priority(i+1))
				} else {
					p.Go(ctx, fn)
				}
			}
			block <- struct{}{}
			wg.Wait()
		})
	}
	plain, ranked := queued(false), queued(true)
	if ranked > plain {
		t.Errorf("%d queued Go at %d levels: %v allocs per round, without Priority: %v (%.2f extra per task)",
			tasks, tasks, ranked, plain, (ranked-plain)/tasks)
	}
}

// A plain Submit makes no allocation, also on a pool with the scheduling
// options (aging, expiry, a rate limit that never binds).
func TestSubmitAllocsWithPolicies(t *testing.T) {
	if raceDetectorOn {
		t.Skip("allocation counts differ under -race")
	}
	for name, opt := range map[string]Option{
		"aging":     WithPriorityAging(time.Millisecond),
		"expiry":    WithQueueTimeout(time.Hour),
		"ratelimit": WithRateLimit(1e12, 1000),
	} {
		p := New(4, opt)
		var wg sync.WaitGroup
		task := func() { wg.Done() }
		for range 2000 { // warm up buffers
			wg.Add(1)
			p.Submit(task)
		}
		wg.Wait()
		allocs := testing.AllocsPerRun(1000, func() { wg.Add(1); p.Submit(task) })
		wg.Wait()
		p.StopWait()
		if allocs > 0 {
			t.Errorf("Submit with %s: %v allocs", name, allocs)
		}
	}
}
