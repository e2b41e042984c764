package workerpool

import (
	"context"
	"sync"
	"testing"
)

// BenchmarkGoOptions is the Task round trip, Go then Wait, on an idle pool
// of 4, without options ("none") and with Priority(1) ("priority"). The goal
// is that a Priority costs no allocation beyond Go without options: compare
// allocs/op of the two.
func BenchmarkGoOptions(b *testing.B) {
	p := New(4)
	defer p.StopWait()
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	b.Run("none", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = p.Go(ctx, fn).Wait()
		}
	})
	b.Run("priority", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = p.Go(ctx, fn, Priority(1)).Wait()
		}
	})
}

// BenchmarkPriorityLevels queues 100,000 no-op tasks per iteration on a pool
// of 4 and runs them all: "fifo" with no options, "levels8" spread over 8
// priority levels (task i at level i%8), so that the queue orders them by
// level. It reports ns per task and allocs per iteration (divide by 100,000
// for per task).
//
// The pool is paused while the tasks are submitted, so that all 100,000 wait
// in the queue and leave it in priority order once the pause ends: without
// the pause, idle workers would take most tasks as they arrive and the
// ordering would be exercised only as far as the scheduler happened to let
// the queue build up, differently from run to run. Each iteration thus
// measures one Pause, 100,000 Go calls into a waiting queue, and draining it.
//
// With -short each iteration queues 10,000 tasks instead, so that a smoke
// run at -benchtime=100x takes seconds rather than half a minute.
func BenchmarkPriorityLevels(b *testing.B) {
	b.Run("fifo", func(b *testing.B) { benchmarkQueuedLevels(b, 1) })
	b.Run("levels8", func(b *testing.B) { benchmarkQueuedLevels(b, 8) })
}

// benchmarkQueuedLevels queues the tasks of BenchmarkPriorityLevels over
// levels priority levels; with 1, it passes no option at all.
func benchmarkQueuedLevels(b *testing.B, levels int) {
	tasks := 100_000
	if testing.Short() {
		tasks = 10_000
	}
	p, wg := New(4), new(sync.WaitGroup)
	defer p.StopWait()
	fn := func(context.Context) error { wg.Done(); return nil }
	b.ReportAllocs()
	for b.Loop() {
		ctx, resume := context.WithCancel(context.Background())
		p.Pause(ctx)
		wg.Add(tasks)
		for i := range tasks {
			if levels == 1 {
				p.Go(context.Background(), fn)
			} else {
				p.Go(context.Background(), fn, Priority(i%levels))
			}
		}
		resume()
		wg.Wait()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tasks), "ns/task")
}
