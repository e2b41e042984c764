package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
)

// BenchmarkDelayedVsAfterFunc schedules n no-op tasks per iteration, each
// to run after a delay drawn uniformly from [0, 1s) (the same fixed-seed
// sequence for both ways), on a pool of 4, and waits until all have run:
//
//   - afterfunc: time.AfterFunc(delay, func() { p.Submit(task) }), a runtime
//     timer and a closure per task, as users do it without Delay;
//   - do: p.DoContext(ctx, task, workerpool.TaskOption{Delay: delay}), a plain task waiting as it
//     is in the pool's own timer heap: one heap entry, no carrier;
//   - go: p.Go(ctx, fn, workerpool.TaskOption{Delay: delay}), the same with a Task
//     handle per task;
//   - relay: the floor of the pool's mechanism (see delayRelay): one
//     rendezvous per task with a dispatcher that keeps a heap and one
//     timer, on 4 workers.
//
// Per task it reports the process's CPU time (user+sys) over the iteration,
// "cpu-ns/task"; the bytes allocated, "B/task"; and the growth of HeapInuse
// from the start of the iteration to the moment the last task was
// scheduled, "heap-B/task" (a sample, not a peak: by then some tasks have
// run, and it counts garbage not yet collected); and the growth of
// StackInuse over the same span, "stack-B/task", which the heap leaves out:
// the stacks of goroutines that AfterFunc started and that still wait in
// Submit. "goroutines" is runtime.NumGoroutine at that moment, the most
// seen over the iterations: neither way keeps a goroutine per waiting
// task. The goals, for do against afterfunc: at 10,000 tasks no more CPU
// and at most 0.7x the bytes; at 1,000,000 at most 0.5x the CPU and 0.7x
// the bytes.
//
// Every iteration lasts at least a second: run it with -benchtime=1x (or
// 3x). With -short, n=1000000 is skipped.
func BenchmarkDelayedVsAfterFunc(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		delays := randomDelays(n)
		for _, way := range []string{"afterfunc", "relay", "do", "go"} {
			b.Run(fmt.Sprintf("n=%d/way=%s", n, way), func(b *testing.B) {
				if testing.Short() && n > 100_000 {
					b.Skip("skipped with -short: each iteration schedules 1,000,000 timers")
				}
				benchDelayed(b, delays, way)
			})
		}
	}
}

// randomDelays returns n delays uniform over [0, 1s), the same for every
// call with the same n.
func randomDelays(n int) []time.Duration {
	r := rand.New(rand.NewPCG(1, 2))
	delays := make([]time.Duration, n)
	for i := range delays {
		delays[i] = time.Duration(r.Int64N(int64(time.Second)))
	}
	return delays
}

func benchDelayed(b *testing.B, delays []time.Duration, way string) {
	n := len(delays)
	p := workerpool.New(4)
	defer p.StopWait()
	floor := openDelayRelay(4)
	defer floor.Close()
	var wg sync.WaitGroup
	relayTask := newTask(wg.Done)
	task := wg.Done
	fn := func(context.Context) error { wg.Done(); return nil }
	ctx := context.Background()
	var cpu, bytes, heap, stack float64
	goroutines := 0
	for b.Loop() {
		wg.Add(n)
		r := measure(n, func() {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for _, d := range delays {
				switch way {
				case "do":
					if err := p.DoContext(context.Background(), task, workerpool.TaskOption{Delay: d}); err != nil {
						b.Fatal(err)
					}
				case "go":
					p.Go(ctx, fn, workerpool.TaskOption{Delay: d})
				case "relay":
					floor.SubmitAfter(d, relayTask)
				default:
					time.AfterFunc(d, func() { p.Submit(task) })
				}
			}
			goroutines = max(goroutines, runtime.NumGoroutine())
			runtime.ReadMemStats(&after)
			heap += float64(int64(after.HeapInuse) - int64(before.HeapInuse))
			stack += float64(int64(after.StackInuse) - int64(before.StackInuse))
			wg.Wait()
		})
		cpu += r.CPU
		bytes += r.Bytes
	}
	tasks := float64(b.N * n)
	b.ReportMetric(cpu/tasks, "cpu-ns/task")
	b.ReportMetric(bytes/tasks, "B/task")
	b.ReportMetric(heap/tasks, "heap-B/task")
	b.ReportMetric(stack/tasks, "stack-B/task")
	b.ReportMetric(float64(goroutines), "goroutines")
}
