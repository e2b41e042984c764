package workerpool

import (
	"context"
	"strconv"
	"sync"
	"testing"
)

// BenchmarkGoKey is the Task round trip, Go then Wait, on an idle pool of
// 4, without a key ("none") and with one ("key"): a key costs its flow's
// bookkeeping in dispatch and no allocation (its state is reused as keys
// come and go, and the handle and its options are one allocation).
func BenchmarkGoKey(b *testing.B) {
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
	b.Run("key", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = p.Go(ctx, fn, Key("account-1")).Wait()
		}
	})
}

// BenchmarkKeysQueued queues keys × 100 no-op tasks per iteration on a
// paused pool of 4 (key-major: the 100 tasks of one key, then the next
// key's) and runs them all, so that dispatch picks every task's flow by
// deficit round robin among that many active keys; "nokeys" queues the
// same tasks without a key. It reports ns per task: picking the next flow
// is O(1), so 10,000 active keys cost about what no keys cost.
//
// With -short each iteration queues 100 keys × 100 tasks.
func BenchmarkKeysQueued(b *testing.B) {
	keys := 10_000
	if testing.Short() {
		keys = 100
	}
	b.Run("nokeys", func(b *testing.B) { benchmarkKeysQueued(b, keys, false) })
	b.Run("keys", func(b *testing.B) { benchmarkKeysQueued(b, keys, true) })
}

func benchmarkKeysQueued(b *testing.B, keys int, keyed bool) {
	const perKey = 100
	names := make([]TaskOption, keys)
	for i := range names {
		names[i] = Key("tenant-" + strconv.Itoa(i))
	}
	p, wg := New(4), new(sync.WaitGroup)
	defer p.StopWait()
	fn := func(context.Context) error { wg.Done(); return nil }
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		pauseCtx, resume := context.WithCancel(context.Background())
		p.Pause(pauseCtx)
		wg.Add(keys * perKey)
		for k := range keys {
			for range perKey {
				if keyed {
					p.Go(ctx, fn, names[k])
				} else {
					p.Go(ctx, fn)
				}
			}
		}
		resume()
		wg.Wait()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys*perKey), "ns/task")
}
