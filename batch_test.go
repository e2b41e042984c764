package workerpool

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests for DoBatch: one hand-off of many tasks, queued in order and never
// interleaved with other submits, all or none against a stop and under
// every overflow policy, and what it allocates and keeps. Every scenario
// that depends on time or blocks runs in a synctest bubble with exact
// fake-clock values; the races that need real scheduling run many rounds
// outside bubbles.

func TestDoBatchQueuesInOrderBetweenSingleSubmits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithIdleTimeout(-1))
		var r recorder
		defer p.Stop()
		g := newGate()
		defer g.release()
		p.Submit(r.task(0, g.wait))
		synctest.Wait()
		p.Submit(r.task(1, nil))
		require.NoError(t, p.DoBatch([]func(){r.task(2, nil), nil, r.task(3, nil), nil, r.task(4, nil)}), "DoBatch")
		p.Submit(r.task(5, nil))
		require.NoError(t, p.DoBatch([]func(){nil, r.task(6, nil)}), "DoBatch")
		p.Submit(r.task(7, nil))
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, uint64(8), s.Submitted, "submitted: nil entries do not count")
		assert.Equal(t, 7, s.Waiting, "waiting")
		g.open()
		p.StopWait()
		assert.Equal(t, seq(8), r.order(), "start order")
		s = requireStoppedClean(t, p)
		assert.Equal(t, uint64(8), s.Completed, "completed")
	})
}

func TestDoBatchEmptyOrAllNilReturnsNilAndCountsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(1, Reject))
		defer p.Stop()
		assert.NoError(t, p.DoBatch(nil), "DoBatch(nil)")
		assert.NoError(t, p.DoBatch([]func(){}), "DoBatch(empty)")
		assert.NoError(t, p.DoBatch([]func(){nil, nil, nil}), "DoBatch(all nil), more entries than the bound")
		synctest.Wait()
		s := p.Status()
		assert.Zero(t, s.Submitted, "submitted")
		assert.Zero(t, s.Rejected, "rejected")
		assert.Zero(t, s.Workers, "workers")
	})
}

func TestDoBatchIsOneHandOffNotInterleavedWithConcurrentSubmits(t *testing.T) {
	// One worker, so tasks start in queue order: each batch's tasks must
	// start back to back and in slice order, whatever the concurrent single
	// Submits and other batches do.
	const batches, batchLen = 4, 6
	untilFailure(t, 30, func(t *testing.T, round int) {
		p := New(1)
		var mu sync.Mutex
		var order []int // batch b's task i is b*100+i; single submits are -1
		record := func(v int) func() {
			return func() { mu.Lock(); order = append(order, v); mu.Unlock() }
		}
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				for range 20 {
					p.Submit(record(-1))
					runtime.Gosched()
				}
			})
		}
		for b := range batches {
			wg.Go(func() {
				batch := make([]func(), batchLen)
				for i := range batch {
					batch[i] = record(b*100 + i)
				}
				runtime.Gosched()
				assert.NoError(t, p.DoBatch(batch), "DoBatch %d", b)
			})
		}
		wg.Wait()
		p.StopWait()
		for b := range batches {
			at := slices.Index(order, b*100)
			if !assert.GreaterOrEqual(t, at, 0, "round %d: batch %d ran", round, b) {
				continue
			}
			want := make([]int, batchLen)
			for i := range want {
				want[i] = b*100 + i
			}
			assert.Equal(t, want, order[at:min(at+batchLen, len(order))], "round %d: batch %d started back to back", round, b)
		}
		requireStoppedClean(t, p)
	})
}

func TestDoBatchOnStoppedPoolReturnsErrStoppedAndRunsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, opts := range [][]Option{nil, {WithMaxWaiting(4, Block)}, {WithMaxWaiting(4, Reject)}, {WithMaxWaiting(4, DropOldest)}} {
			p := New(2, opts...)
			p.Stop()
			var ran atomic.Int64
			task := func() { ran.Add(1) }
			assert.ErrorIs(t, p.DoBatch([]func(){task, nil, task}), ErrStopped, "DoBatch on a stopped pool")
			synctest.Wait()
			assert.Zero(t, ran.Load(), "tasks run")
			s := requireStoppedClean(t, p)
			assert.Zero(t, s.Submitted, "submitted")
			assert.Zero(t, s.Rejected, "rejected: a refusal because the pool stopped is not counted")
		}
	})
}

func TestDoBatchRacingStopIsAllOrNone(t *testing.T) {
	// Every batch has 5 tasks (and 2 nils); each task adds to its batch's
	// counter. A batch DoBatch accepted (nil) counts 5 in Submitted and,
	// with StopWait, runs all 5; a refused one (ErrStopped) runs none.
	untilFailure(t, 60, func(t *testing.T, round int) {
		p := New(1 + round%3)
		const callers, perCaller = 3, 40
		var ran [callers * perCaller]atomic.Int64
		var accepted [callers * perCaller]bool
		var wg sync.WaitGroup
		for c := range callers {
			wg.Go(func() {
				for k := range perCaller {
					id := c*perCaller + k
					task := func() { ran[id].Add(1) }
					err := p.DoBatch([]func(){task, nil, task, task, nil, task, task})
					if err != nil {
						assert.ErrorIs(t, err, ErrStopped, "DoBatch")
					}
					accepted[id] = err == nil
					runtime.Gosched()
				}
			})
		}
		for range 1 + round%5 {
			runtime.Gosched()
		}
		stopWait := round%2 == 0
		if stopWait {
			p.StopWait()
		} else {
			p.Stop()
		}
		wg.Wait()
		s := requireStoppedClean(t, p)
		n := uint64(0)
		for id, ok := range accepted {
			switch {
			case ok:
				n += 5
				if stopWait {
					assert.Equal(t, int64(5), ran[id].Load(), "round %d: accepted batch %d ran", round, id)
				}
			default:
				assert.Zero(t, ran[id].Load(), "round %d: refused batch %d ran", round, id)
			}
		}
		assert.Equal(t, n, s.Submitted, "round %d: submitted == 5 per accepted batch", round)
	})
}

func TestDoBatchUnderBlockWaitsUntilItAllFitsAndHoldsBackLaterSubmitters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(4, Block), WithIdleTimeout(-1))
		defer p.Stop()
		var r recorder
		g0, g1, g2 := newGate(), newGate(), newGate()
		defer g0.release()
		defer g1.release()
		defer g2.release()
		p.Submit(r.task(0, g0.wait)) // running
		p.Submit(r.task(1, g1.wait)) // waiting
		p.Submit(r.task(2, g2.wait)) // waiting: 2 of 4 places free
		synctest.Wait()
		b := goDoBatch(p, []func(){r.task(3, nil), nil, r.task(4, nil), r.task(5, nil)})
		synctest.Wait()
		assert.False(t, b.returned(), "DoBatch of 3 returned with 2 places free")
		assert.Equal(t, 2, p.Status().Waiting, "waiting: none of the batch is queued")
		// A single Submit behind the waiting batch waits too, although a
		// place is free for it: room goes in arrival order.
		single := make(chan struct{})
		go func() { p.Submit(r.task(6, nil)); close(single) }()
		synctest.Wait()
		assert.False(t, isClosed(single), "a Submit behind the waiting batch went ahead of it")
		g0.open() // task 1 starts: 3 places free, the batch fits
		synctest.Wait()
		require.True(t, b.returned(), "DoBatch returned once it all fit")
		assert.NoError(t, b.err, "DoBatch")
		assert.Equal(t, 4, p.Status().Waiting, "waiting: task 2 and the batch")
		assert.False(t, isClosed(single), "the later Submit found no place")
		g1.open() // task 2 starts: a place frees for the single Submit
		synctest.Wait()
		assert.True(t, isClosed(single), "the later Submit got the next place")
		g2.open()
		p.StopWait()
		assert.Equal(t, seq(7), r.order(), "start order")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(7), s.Completed, "completed")
		assert.Zero(t, s.Rejected, "rejected")
	})
}

func TestDoBatchUnderRejectIsAllOrNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var letters atomic.Int64
		p := New(1, WithMaxWaiting(4, Reject), WithIdleTimeout(-1),
			WithHooks(Hooks{DeadLetter: func(func(), error) { letters.Add(1) }}))
		var r recorder
		defer p.Stop()
		g := newGate()
		defer g.release()
		p.Submit(r.task(0, g.wait))
		p.Submit(r.task(1, nil))
		p.Submit(r.task(2, nil)) // 2 of 4 places free
		synctest.Wait()
		var refusedRan atomic.Int64
		refused := func() { refusedRan.Add(1) }
		assert.ErrorIs(t, p.DoBatch([]func(){refused, refused, refused}), ErrQueueFull, "DoBatch of 3 with 2 places free")
		s := p.Status()
		assert.Equal(t, 2, s.Waiting, "waiting: none of the refused batch is queued")
		assert.Equal(t, uint64(3), s.Rejected, "rejected: the refused batch's tasks")
		assert.Equal(t, uint64(3), s.Submitted, "submitted")
		// Nil entries take no place: 2 tasks fit exactly.
		assert.NoError(t, p.DoBatch([]func(){nil, r.task(3, nil), nil, r.task(4, nil), nil}), "DoBatch of 2 with 2 places free")
		synctest.Wait()
		assert.Equal(t, 4, p.Status().Waiting, "waiting")
		assert.ErrorIs(t, p.DoBatch([]func(){refused}), ErrQueueFull, "DoBatch of 1 on a full queue")
		s = p.Status()
		assert.Equal(t, uint64(4), s.Rejected, "rejected")
		assert.Equal(t, uint64(5), s.Submitted, "submitted")
		g.open()
		p.StopWait()
		assert.Equal(t, seq(5), r.order(), "start order")
		assert.Zero(t, refusedRan.Load(), "refused tasks ran")
		assert.Zero(t, letters.Load(), "dead letters for a refused DoBatch: its caller has the error")
		s = requireStoppedClean(t, p)
		assert.Equal(t, uint64(5), s.Completed, "completed")
	})
}

func TestDoBatchUnderDropOldestDropsOnlyOlderTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// While the worker is blocked only the dead-letter handler calls
		// tasks; it marks the calls as drops.
		var mu sync.Mutex
		var ran, dropped []int
		var reasons []error
		var inHandler bool
		task := func(i int) func() {
			return func() {
				mu.Lock()
				defer mu.Unlock()
				if inHandler {
					dropped = append(dropped, i)
				} else {
					ran = append(ran, i)
				}
			}
		}
		h := func(f func(), reason error) {
			mu.Lock()
			inHandler = true
			reasons = append(reasons, reason)
			mu.Unlock()
			f()
			mu.Lock()
			inHandler = false
			mu.Unlock()
		}
		p := New(1, WithMaxWaiting(4, DropOldest), WithIdleTimeout(-1), WithHooks(Hooks{DeadLetter: h}))
		defer p.Stop()
		g := newGate()
		defer g.release()
		p.Submit(func() { g.wait(); task(0)() })
		for i := 1; i <= 4; i++ {
			p.Submit(task(i))
		}
		synctest.Wait()
		require.Equal(t, 4, p.Status().Waiting, "waiting: the queue is full")
		require.NoError(t, p.DoBatch([]func(){task(5), nil, task(6), task(7)}), "DoBatch of 3 on a full queue")
		synctest.Wait()
		mu.Lock()
		assert.Equal(t, []int{1, 2, 3}, dropped, "dropped to make room for 3")
		mu.Unlock()
		s := p.Status()
		assert.Equal(t, 4, s.Waiting, "waiting")
		assert.Equal(t, uint64(3), s.Dropped, "dropped")
		// The next batch drops task 4 and the oldest task of the batch
		// before it, which is by now a plain waiting task like any other.
		require.NoError(t, p.DoBatch([]func(){task(8), task(9)}), "DoBatch of 2 on a full queue")
		synctest.Wait()
		mu.Lock()
		assert.Equal(t, []int{1, 2, 3, 4, 5}, dropped, "dropped after the second batch")
		mu.Unlock()
		// A batch as large as the bound drops all the others and none of its own.
		require.NoError(t, p.DoBatch([]func(){task(10), task(11), task(12), task(13)}), "DoBatch of 4 (the bound)")
		synctest.Wait()
		g.open()
		p.StopWait()
		mu.Lock()
		assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8, 9}, dropped, "dropped")
		assert.Equal(t, []int{0, 10, 11, 12, 13}, ran, "ran")
		for i, err := range reasons {
			assert.ErrorIs(t, err, errDropped, "dead letter %d's reason", i)
		}
		mu.Unlock()
		s = requireStoppedClean(t, p)
		assert.Equal(t, uint64(9), s.Dropped, "dropped")
		assert.Equal(t, uint64(5), s.Completed, "completed")
		assert.Zero(t, s.Rejected, "rejected")
	})
}

func TestDoBatchLargerThanTheBoundIsRejectedAtOnceUnderEveryPolicy(t *testing.T) {
	for _, policy := range []Overflow{Block, Reject, DropOldest} {
		t.Run(policy.string(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var letters atomic.Int64
				// Idle workers could start every task at once: the batch is
				// still larger than the bound.
				p := New(4, WithMaxWaiting(2, policy), WithHooks(Hooks{DeadLetter: func(func(), error) { letters.Add(1) }}))
				defer p.Stop()
				var ran atomic.Int64
				task := func() { ran.Add(1) }
				b := goDoBatch(p, []func(){task, task, nil, task})
				synctest.Wait()
				require.True(t, b.returned(), "DoBatch of 3 with a bound of 2 returned at once")
				assert.ErrorIs(t, b.err, ErrQueueFull, "DoBatch of 3 with a bound of 2")
				s := p.Status()
				assert.Equal(t, uint64(3), s.Rejected, "rejected")
				assert.Zero(t, s.Submitted, "submitted")
				assert.Zero(t, ran.Load(), "tasks run")
				assert.Zero(t, letters.Load(), "dead letters")
				// Nil entries do not count against the bound.
				b = goDoBatch(p, []func(){nil, task, nil, task, nil})
				synctest.Wait()
				require.True(t, b.returned(), "DoBatch of 2 with a bound of 2 returned")
				assert.NoError(t, b.err, "DoBatch of 2 (and 3 nils) with a bound of 2")
				assert.Equal(t, int64(2), ran.Load(), "tasks run")
			})
		})
	}
}

func TestDoBatchKeepsNoReferenceToTheSlice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithIdleTimeout(-1))
		var mu sync.Mutex
		var ran []string
		mark := func(s string) func() {
			return func() { mu.Lock(); ran = append(ran, s); mu.Unlock() }
		}
		defer p.Stop()
		g := blockOneWorker(t, p)
		defer g.release()
		batch := []func(){mark("a"), mark("b"), nil, mark("c")}
		require.NoError(t, p.DoBatch(batch), "DoBatch")
		for i := range batch {
			batch[i] = mark("replaced")
		}
		batch[1] = nil
		batch = append(batch[:0], mark("appended")) // reuses the array
		_ = batch
		g.open()
		p.StopWait()
		mu.Lock()
		assert.Equal(t, []string{"a", "b", "c"}, ran, "tasks run")
		mu.Unlock()
	})
}

// doBatchCapturing queues a batch of n tasks that capture a fresh object and
// returns a weak pointer to that object; the slice is dropped on return.
func doBatchCapturing(t *testing.T, p *WorkerPool, n int) weak.Pointer[[64]int] {
	obj := new([64]int)
	batch := make([]func(), n)
	for i := range batch {
		batch[i] = func() { obj[i%64]++ }
	}
	require.NoError(t, p.DoBatch(batch), "DoBatch")
	return weak.Make(obj)
}

func TestDoBatchReleasesItsClosuresOnceTheyRan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithIdleTimeout(-1))
		defer p.Stop()
		g := blockOneWorker(t, p)
		defer g.release()
		ref := doBatchCapturing(t, p, 100)
		runtime.GC()
		require.NotNil(t, ref.Value(), "captured object collected while its tasks wait")
		g.open()
		synctest.Wait()
		require.Equal(t, uint64(101), p.Status().Completed, "completed")
		runtime.GC()
		assert.Nil(t, ref.Value(), "object captured only by the batch's closures still reachable after they ran")
	})
}

func TestDoBatchAllocatesNothingPerTask(t *testing.T) {
	// Batches come faster than the workers run them, so the queue keeps a
	// backlog, as in a benchmark of DoBatch: no allocation per call.
	for _, opts := range [][]Option{nil, {WithMaxWaiting(1<<20, Block)}, {WithMaxWaiting(1<<20, DropOldest)}} {
		p := New(4, opts...)
		batch := make([]func(), 1000)
		task := func() {}
		for i := range batch {
			batch[i] = task
		}
		allocs := testing.AllocsPerRun(30, func() {
			if err := p.DoBatch(batch); err != nil {
				panic(err)
			}
		})
		assert.LessOrEqual(t, allocs, 1.0, "allocations per DoBatch of 1000 tasks, with %d options", len(opts))
		p.StopWait()
	}
}

func TestDoBatchAllocatesNothingPerCallWhenTheQueueDrainsBetweenBatches(t *testing.T) {
	// One worker; after each batch a SubmitWait (0 allocations, see
	// TestSubmitWaitDoesNotAllocate) waits until the queue has drained, so
	// each call's 1000 tasks fill an empty queue.
	p := New(1)
	defer p.Stop()
	batch := make([]func(), 1000)
	task := func() {}
	for i := range batch {
		batch[i] = task
	}
	allocs := testing.AllocsPerRun(50, func() {
		if err := p.DoBatch(batch); err != nil {
			panic(err)
		}
		p.SubmitWait(task)
	})
	assert.LessOrEqual(t, allocs, 1.0, "allocations per DoBatch of 1000 tasks into an empty queue (and one SubmitWait)")
}

// BenchmarkDoBatch reports ns per task for batches of 1,000 tasks, each run
// to the end before the next: compare with BenchmarkSubmit/workers=4, which
// makes two hand-offs per task where a batch makes one.
func BenchmarkDoBatch(b *testing.B) {
	const workers, size = 4, 1000
	p, wg := New(workers), new(sync.WaitGroup)
	defer p.StopWait()
	batch := make([]func(), size)
	for i := range batch {
		batch[i] = wg.Done
	}
	b.ReportAllocs()
	for b.Loop() {
		wg.Add(size)
		if err := p.DoBatch(batch); err != nil {
			b.Fatal(err)
		}
		wg.Wait()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/task")
}
