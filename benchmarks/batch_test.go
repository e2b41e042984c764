package main

import (
	"sync"
	"testing"
)

// BenchmarkBatchVsSubmit runs 1,000 no-op tasks per iteration on 4 workers,
// waiting for each thousand before the next (so no queue builds up across
// iterations, unlike scenario l), through the relay floor and this library,
// once by Submit and once by one batch. Compare batch with submit within a
// pool: the relay's ratio is the floor of DoBatch's ratio for this design on
// the machine at hand.
func BenchmarkBatchVsSubmit(b *testing.B) {
	for _, pool := range []struct {
		name string
		open func(int) pool
	}{{floor, openRelay}, {"ours", openOurs}} {
		for _, batched := range []bool{false, true} {
			name := pool.name + "/submit"
			if batched {
				name = pool.name + "/batch"
			}
			b.Run(name, func(b *testing.B) { benchThousands(b, pool.open(4), batched) })
		}
	}
}

func benchThousands(b *testing.B, p pool, batched bool) {
	const size = 1000
	defer p.Close()
	var wg sync.WaitGroup
	t := newTask(wg.Done)
	batch := make([]func(), size)
	for i := range batch {
		batch[i] = t.fn
	}
	b.ReportAllocs()
	for b.Loop() {
		wg.Add(size)
		if batched {
			p.(batchPool).SubmitBatch(batch)
		} else {
			for range size {
				p.Submit(t)
			}
		}
		wg.Wait()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/task")
}
