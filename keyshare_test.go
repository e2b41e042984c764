package workerpool

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gammazero/deque"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests for how keys share the workers (WithKeys(_, share)): deficit round
// robin among the keys with tasks waiting, each served by its weight, the
// tasks without a key sharing as one more key of weight 1; a flooding key
// delays another by one round; heavy tasks and heavy fronts; priority
// levels before fairness; and what picking the next key costs. The key
// limit, and keys against the rest of the pool, are in keys_test.go.

// --- the fair order ---

// A tenant with a backlog delays another tenant's new task by one round
// of the keys with tasks waiting, not by the backlog.
func TestFairShareFloodingKeyDelaysANewKeyByOneRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		l := newStartTrace()
		ctx := context.Background()
		p.Go(ctx, l.fn("blocker", time.Second))
		for i := range 1000 {
			p.Go(ctx, l.fn("flood"+strconv.Itoa(i), time.Second), TaskOption{Key: "flood"})
		}
		time.Sleep(500 * time.Millisecond)
		trickle := p.Go(ctx, l.fn("trickle", time.Second), TaskOption{Key: "trickle"})
		require.NoError(t, trickle.Wait())
		assert.Equal(t, []string{"blocker@0s", "flood0@1s", "trickle@2s"}, l.order()[:3])
	})
}

// sequence runs n zero-time tasks of each key (in keys' order) on a pool of
// one worker, queued behind a task that holds it, and returns the keys in
// the order their tasks started.
func sequence(t *testing.T, p *WorkerPool, n int, keys ...string) string {
	t.Helper()
	var mu sync.Mutex
	var got strings.Builder
	g := blockOneWorker(t, p)
	for _, k := range keys {
		for range n {
			p.DoContext(context.Background(), func() {
				mu.Lock()
				got.WriteString(k)
				mu.Unlock()
			}, TaskOption{Key: k})
		}
	}
	g.open()
	require.NoError(t, p.WaitIdle(context.Background()))
	mu.Lock()
	defer mu.Unlock()
	return got.String()
}

func TestKeysShareEquallyByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithKeys(-1, nil))
		defer p.StopWait()
		assert.Equal(t, strings.Repeat("abc", 5), sequence(t, p, 5, "a", "b", "c"))
	})
}

func TestKeyWeightsShareStartsThreeToOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		weights := map[string]int{"a": 3, "b": 1}
		p := New(1, WithKeys(-1, func(k string) int { return weights[k] }))
		defer p.StopWait()
		got := sequence(t, p, 40, "a", "b")
		assert.Equal(t, strings.Repeat("aaab", 13)+"ab"+strings.Repeat("b", 26), got)
	})
}

// The tasks without a key share as one more key of weight 1.
func TestTasksWithoutKeyShareAsOneKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.StopWait()
		var mu sync.Mutex
		var got strings.Builder
		rec := func(s string) func() {
			return func() { mu.Lock(); got.WriteString(s); mu.Unlock() }
		}
		g := blockOneWorker(t, p)
		for range 3 {
			p.Submit(rec("u"))
		}
		for range 3 {
			p.DoContext(context.Background(), rec("a"), TaskOption{Key: "a"})
		}
		g.open()
		require.NoError(t, p.WaitIdle(context.Background()))
		assert.Equal(t, "uauaua", got.String())
	})
}

// Priority levels come before fairness.
func TestKeysPriorityBeforeFairness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.StopWait()
		var mu sync.Mutex
		var got []string
		g := blockOneWorker(t, p)
		for i := range 3 {
			for _, k := range []string{"a", "b"} {
				name := k + strconv.Itoa(i)
				prio := 0
				if k == "b" {
					prio = 1
				}
				p.DoContext(context.Background(), func() { mu.Lock(); got = append(got, name); mu.Unlock() }, TaskOption{Key: k, Priority: prio})
			}
		}
		g.open()
		require.NoError(t, p.WaitIdle(context.Background()))
		assert.Equal(t, []string{"b0", "b1", "b2", "a0", "a1", "a2"}, got)
	})
}

// --- weights ---

func TestKeyWeightBelowOneOrPanickingMeansOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var asked atomic.Int32
		var handled []any
		var mu sync.Mutex
		p := New(1,
			WithHooks(Hooks{Panic: func(r any) { mu.Lock(); handled = append(handled, r); mu.Unlock() }}),
			WithKeys(-1, func(k string) int {
				asked.Add(1)
				switch k {
				case "zero":
					return 0
				case "neg":
					return -3
				}
				panic("weight of " + k)
			}))
		defer p.StopWait()
		assert.Equal(t, strings.Repeat("zn", 4), strings.NewReplacer("zero", "z", "neg", "n").Replace(sequence(t, p, 4, "zero", "neg")))
		assert.Equal(t, int32(2), asked.Load(), "asked once per key as it became active")
		assert.Equal(t, "ababab", sequence(t, p, 3, "a", "b"), "panicking weight funcs mean 1")
		mu.Lock()
		assert.Equal(t, []any{"weight of a", "weight of b"}, handled)
		mu.Unlock()
		sequence(t, p, 1, "zero")
		assert.Equal(t, int32(5), asked.Load(), "asked again as the key became active again")
	})
}

// A key's weight is asked each time the key becomes active again, also
// when its next task comes before dispatch forgot the key: here its first
// task's Wait has returned, so the key had no task in the pool (Status.Keys
// says 0), but dispatch, with no reason to wake, had not yet taken the
// news. The weight changed meanwhile: the key takes the new one, not the
// one it had.
func TestKeyWeightIsAskedAgainAsTheKeyBecomesActiveAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var weight, asked atomic.Int32
		weight.Store(1)
		p := New(1, WithKeys(-1, func(string) int { asked.Add(1); return int(weight.Load()) }), WithIdleTimeout(-1))
		defer p.Stop()
		ctx := context.Background()
		require.NoError(t, p.Go(ctx, noopFn, TaskOption{Key: "a"}).Wait())
		synctest.Wait()
		require.Zero(t, p.Status().Keys, "keys once a's task is done")
		weight.Store(3)
		g := blockOneWorker(t, p)
		var mu sync.Mutex
		var got strings.Builder
		for range 4 {
			for _, k := range []string{"a", "b"} {
				require.NoError(t, p.DoContext(context.Background(), func() { mu.Lock(); got.WriteString(k); mu.Unlock() }, TaskOption{Key: k}))
			}
		}
		g.open()
		p.StopWait()
		assert.Equal(t, int32(3), asked.Load(), "asked as a became active, as a became active again, and as b did")
		assert.Equal(t, "aaabbbab", got.String(), "a weighs 3 now, as b does")
	})
}

// --- heavy tasks ---

// A heavy task that the fair order picks waits for free slots, and the
// lighter tasks of other keys do not overtake it.
func TestHeavyKeyedTaskIsNotOvertaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.StopWait()
		l := newStartTrace()
		ctx := context.Background()
		p.Go(ctx, l.fn("blocker", time.Second))
		p.Go(ctx, l.fn("heavy", time.Second), TaskOption{Key: "a", Weight: 2})
		for i := range 3 {
			p.Go(ctx, l.fn("b"+strconv.Itoa(i), 3*time.Second), TaskOption{Key: "b"})
		}
		require.NoError(t, p.WaitIdle(ctx))
		// The fair order picked the heavy task before b0 came: though one
		// slot is free from 0s, b0 does not overtake it.
		got := l.order()
		require.Len(t, got, 5)
		assert.Equal(t, []string{"blocker@0s", "heavy@1s"}, got[:2])
		assert.ElementsMatch(t, []string{"b0@2s", "b1@2s"}, got[2:4])
		assert.Equal(t, "b2@5s", got[4])
	})
}

// Serving the keys costs a round of them whatever their fronts weigh
// against their weights: where no key can pay for its front, each gets at
// once the credit of the rounds in which none could, rather than one round
// at a time. Here a round gives each key, and the tasks without a key, one
// slot of credit, and the fronts weigh 2^61 and more: a dispatch that went
// round the ring once per round would go round it 2^61 times before
// anything started, and the test would end only by the test binary's
// timeout. The order is that of the rounds: the front that needs the
// fewest first. (A Pause holds the three until all are queued: the fair
// order picks a front that is alone at once.)
func TestKeysHeavyFrontsCostOneRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size = 1 << 62
		p := New(size, WithIdleTimeout(-1))
		defer p.Stop()
		l, ctx := newStartTrace(), context.Background()
		p.Go(ctx, l.fn("blocker", time.Second))
		pauseCtx, resume := context.WithCancel(ctx)
		go p.Pause(pauseCtx)
		synctest.Wait()
		p.Go(ctx, l.fn("a", time.Second), TaskOption{Key: "a", Weight: size})
		p.Go(ctx, l.fn("b", time.Second), TaskOption{Key: "b", Weight: size/2 + 1})
		p.Go(ctx, l.fn("u", time.Second), TaskOption{Weight: size / 2})
		time.Sleep(2 * time.Second)
		resume()
		p.StopWait()
		assert.Equal(t, []string{"blocker@0s", "u@2s", "b@3s", "a@4s"}, l.order())
		requireStoppedClean(t, p)
	})
}

// --- benchmarks ---

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
		names[i] = TaskOption{Key: "tenant-" + strconv.Itoa(i)}
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

// BenchmarkKeysQueuedFloor is the bare mechanism under BenchmarkKeysQueued,
// with no pool: the same tasks are made on the heap (as Go makes its
// handle), queued, and then taken one by one by one goroutine that hands
// each to one of 4 workers over an unbuffered channel (as dispatch does).
// The tasks wait either in one deque or in one deque per key, found through
// a map and served round robin from a circular list, as flows.go does. The
// keys row over the nokeys row is what the data structure itself costs at
// this size: each start reads another key's queue and a task that is no
// longer in the cache, and the handoff between starts keeps the processor
// from reading ahead.
func BenchmarkKeysQueuedFloor(b *testing.B) {
	keys := 10_000
	if testing.Short() {
		keys = 100
	}
	b.Run("nokeys", func(b *testing.B) { benchmarkKeysQueuedFloor(b, keys, false) })
	b.Run("keys", func(b *testing.B) { benchmarkKeysQueuedFloor(b, keys, true) })
}

// floorTask is the size of the handle Go allocates with options (288 B).
type floorTask struct {
	fn  func()
	key string
	_   [256]byte
}

// floorQueue is one key's queue in the ring.
type floorQueue struct {
	tasks deque.Deque[*floorTask]
	next  *floorQueue
}

func benchmarkKeysQueuedFloor(b *testing.B, keys int, keyed bool) {
	const perKey = 100
	names := make([]string, keys)
	for i := range names {
		names[i] = "tenant-" + strconv.Itoa(i)
	}
	var ran atomic.Int64
	fn := func() { ran.Add(1) }
	work := make(chan *floorTask)
	var workers sync.WaitGroup
	for range 4 {
		workers.Go(func() {
			for t := range work {
				t.fn()
			}
		})
	}
	b.ReportAllocs()
	for b.Loop() {
		var one deque.Deque[*floorTask]
		byKey := make(map[string]*floorQueue)
		var tail *floorQueue // the ring's last queue; tail.next is its head
		for k := range keys {
			for range perKey {
				t := &floorTask{fn: fn, key: names[k]}
				if !keyed {
					one.PushBack(t)
					continue
				}
				q := byKey[t.key]
				if q == nil {
					q = new(floorQueue)
					byKey[t.key] = q
					if tail == nil {
						q.next = q
					} else {
						q.next, tail.next = tail.next, q
					}
					tail = q
				}
				q.tasks.PushBack(t)
			}
		}
		if !keyed {
			for one.Len() > 0 {
				work <- one.PopFront()
			}
			continue
		}
		for tail != nil {
			q := tail.next
			t := q.tasks.PopFront()
			work <- t
			switch {
			case q.tasks.Len() > 0:
				tail = q
			case q == tail:
				tail = nil
				delete(byKey, t.key)
			default:
				tail.next = q.next
				delete(byKey, t.key)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys*perKey), "ns/task")
	close(work)
	workers.Wait()
	if got := ran.Load(); got != int64(b.N*keys*perKey) {
		b.Fatalf("ran %d tasks, want %d", got, b.N*keys*perKey)
	}
}
