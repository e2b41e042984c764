package main

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/alitto/pond/v2"
	"github.com/e86d9661/workerpool"
)

// BenchmarkMemoryPerPendingTask reports the heap each pending task holds,
// measured after a GC: the live heap with n tasks pending, less the live
// heap before they were given, over n ("heap-B/task"). A task is pending
// while it waits for a worker (queued behind one blocked worker) or for its
// due time (scheduled an hour ahead):
//
//   - queued/submit and queued/pond: a plain task, here and in pond;
//   - queued/go: a Task handle;
//   - scheduled/do: p.DoContext(ctx, task, workerpool.TaskOption{Delay: time.Hour}), a plain task in
//     the pool's timer heap;
//   - scheduled/go: p.Go(ctx, fn, workerpool.TaskOption{Delay: time.Hour}), with a handle;
//   - scheduled/afterfunc: time.AfterFunc(time.Hour, func() { p.Submit(task) }),
//     a runtime timer and a closure.
//
// Run it with -benchtime=1x: each iteration gives n tasks and counts once.
func BenchmarkMemoryPerPendingTask(b *testing.B) {
	const n = 100_000
	for _, way := range []string{"queued/submit", "queued/pond", "queued/go", "scheduled/do", "scheduled/go", "scheduled/afterfunc"} {
		b.Run(way, func(b *testing.B) {
			var held float64
			for b.Loop() {
				held += pendingHeap(b, way, n)
			}
			b.ReportMetric(held/float64(b.N), "heap-B/task")
		})
	}
}

// pendingHeap gives n tasks the way says, while they are all pending, and
// returns the live heap they hold per task.
func pendingHeap(b *testing.B, way string, n int) float64 {
	block := make(chan struct{})
	blocked := func() { <-block }
	task := func() {}
	fn := func(context.Context) error { return nil }
	ctx := context.Background()
	var timers []*time.Timer

	var give func()
	var stop func()
	switch way {
	case "queued/pond":
		p := pond.NewPool(1)
		p.Submit(blocked)
		give = func() {
			for range n {
				p.Submit(task)
			}
		}
		stop = func() { close(block); p.StopAndWait() }
	default:
		p := workerpool.New(1)
		p.Submit(blocked)
		give = func() {
			for range n {
				switch way {
				case "queued/submit":
					p.Submit(task)
				case "queued/go":
					p.Go(ctx, fn)
				case "scheduled/do":
					if err := p.DoContext(context.Background(), task, workerpool.TaskOption{Delay: time.Hour}); err != nil {
						b.Fatal(err)
					}
				case "scheduled/go":
					p.Go(ctx, fn, workerpool.TaskOption{Delay: time.Hour})
				case "scheduled/afterfunc":
					timers = append(timers, time.AfterFunc(time.Hour, func() { p.Submit(task) }))
				}
			}
		}
		stop = func() {
			for _, t := range timers {
				t.Stop()
			}
			close(block)
			p.Stop() // abandons what is scheduled
		}
	}
	before := liveHeap()
	give()
	after := liveHeap()
	runtime.KeepAlive(timers)
	stop()
	timersSlice := 0
	if timers != nil {
		timersSlice = cap(timers) * 8 // the benchmark's own slice of timers, not the task's
	}
	return float64(after-before-int64(timersSlice)) / float64(n)
}
