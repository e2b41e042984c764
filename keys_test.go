package workerpool

import (
	"context"
	"runtime"
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

// startsOf is the starts in got whose name begins with prefix.
func startsOf(got []string, prefix string) []string {
	var out []string
	for _, s := range got {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

func TestKeyLimitOneRunsEachKeyInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4, WithKeys(1, nil))
		l := newStartTrace()
		ctx := context.Background()
		var tasks []*Task
		for i := range 4 {
			for _, k := range []string{"a", "b", "c"} {
				tasks = append(tasks, p.Go(ctx, l.fn(k+strconv.Itoa(i), time.Second), TaskOption{Key: k}))
			}
		}
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 3, s.Keys, "keys")
		assert.Equal(t, 3, s.Busy, "one task per key runs; the fourth worker has nothing it may start")
		assert.Equal(t, 9, s.Waiting, "held back by their keys' limit")
		for _, task := range tasks {
			require.NoError(t, task.Wait())
		}
		for _, k := range []string{"a", "b", "c"} {
			assert.Equal(t, []string{k + "0@0s", k + "1@1s", k + "2@2s", k + "3@3s"}, startsOf(l.order(), k), "key %s: one at a time, in order", k)
		}
		p.StopWait()
		requireStoppedClean(t, p)
	})
}

func TestKeysWithoutLimitRunAtOnce(t *testing.T) {
	for _, limit := range []int{-1, -5} {
		synctest.Test(t, func(t *testing.T) {
			p := New(4, WithKeys(limit, nil))
			defer p.StopWait()
			l := newStartTrace()
			for i := range 4 {
				p.Go(context.Background(), l.fn("a"+strconv.Itoa(i), time.Second), TaskOption{Key: "a"})
			}
			synctest.Wait()
			assert.ElementsMatch(t, []string{"a0@0s", "a1@0s", "a2@0s", "a3@0s"}, l.order(), "WithKeys(%d, nil): no limit", limit)
			assert.Equal(t, 1, p.Status().Keys)
		})
	}
}

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

func TestKeyWeightsShareStartsThreeToOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		weights := map[string]int{"a": 3, "b": 1}
		p := New(1, WithKeys(-1, func(k string) int { return weights[k] }))
		defer p.StopWait()
		got := sequence(t, p, 40, "a", "b")
		assert.Equal(t, strings.Repeat("aaab", 13)+"ab"+strings.Repeat("b", 26), got)
	})
}

func TestKeysShareEquallyByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithKeys(-1, nil))
		defer p.StopWait()
		assert.Equal(t, strings.Repeat("abc", 5), sequence(t, p, 5, "a", "b", "c"))
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
// news. The weight changed meanwhile. (It kept the old weight.)
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
// slot of credit, and the fronts weigh 2^61 and more: dispatch went round
// the ring 2^61 times before anything started, and this test did not end
// (it failed by the test binary's timeout). The order is that of the
// rounds: the front that needs the fewest first. (A Pause holds the three
// until all are queued: the fair order picks a front that is alone at once.)
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

func TestStatusKeysCountsWaitingScheduledAndRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithKeys(1, nil))
		ctx := context.Background()
		gate := newGate()
		run := fnOf(gate.wait)
		a1 := p.Go(ctx, run, TaskOption{Key: "a"})
		a2 := p.Go(ctx, run, TaskOption{Key: "a"})
		b := p.Go(ctx, run, TaskOption{Key: "b", Delay: 10 * time.Second})
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 2, s.Keys, "a (running and waiting), b (scheduled)")
		assert.Equal(t, 1, s.Busy)
		assert.Equal(t, 1, s.Waiting)
		assert.Equal(t, 1, s.Scheduled)
		gate.open()
		require.NoError(t, a1.Wait())
		require.NoError(t, a2.Wait())
		synctest.Wait()
		assert.Equal(t, 1, p.Status().Keys, "b, scheduled")
		require.NoError(t, b.Wait())
		synctest.Wait()
		assert.Equal(t, 0, p.Status().Keys)
		p.StopWait()
		requireStoppedClean(t, p)
	})
}

// Every call that takes a TaskOption takes Key: its tasks share their
// key's queue and limit, and the hooks see the key.
func TestKeyOnEveryCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var keys []string
		p := New(2, WithKeys(1, nil), WithHooks(Hooks{TaskStarted: func(ctx context.Context, ti TaskInfo) context.Context {
			mu.Lock()
			keys = append(keys, ti.Key+":"+ti.Label)
			mu.Unlock()
			return ctx
		}}))
		defer p.StopWait()
		ctx := context.Background()
		k := TaskOption{Key: "account-7"}
		hold := newGate()
		p.Go(ctx, fnOf(hold.wait), k, TaskOption{Label: "first"})
		p.Go(ctx, noopFn, k, TaskOption{Label: "Go"})
		GoResult(ctx, p, func(context.Context) (int, error) { return 1, nil }, k, TaskOption{Label: "Call"})
		g := p.Group(ctx)
		g.Go(noopFn, k, TaskOption{Label: "Group.Go"})
		p.DoContext(context.Background(), func() {}, k, TaskOption{Label: "Do"})
		require.NoError(t, p.DoContext(ctx, func() {}, k, TaskOption{Label: "DoContext"}))
		done := make(chan error)
		go func() { done <- p.Go(context.Background(), noopFn, k, TaskOption{Label: "Go waited for"}).Wait() }()
		synctest.Wait()
		assert.Equal(t, 1, p.Status().Busy, "the key's first task holds its only slot; the others wait")
		assert.Equal(t, 6, p.Status().Waiting)
		hold.open()
		require.NoError(t, <-done)
		require.NoError(t, g.Wait())
		mu.Lock()
		defer mu.Unlock()
		want := []string{"first", "Go", "Call", "Group.Go", "Do", "DoContext", "Go waited for"}
		for i := range want {
			want[i] = "account-7:" + want[i]
		}
		assert.Equal(t, want, keys, "one at a time, in order, each seen with its key")
	})
}

// A key's state lives only while it has tasks in the pool: a pool that saw
// many distinct keys holds no more memory than one that saw ten.
func TestKeyStateIsFreedOnceKeysAreDone(t *testing.T) {
	keys, batch := 400_000, 20_000
	if testing.Short() || raceDetectorOn {
		keys, batch = 40_000, 4_000
	}
	heap := func(p *WorkerPool) uint64 {
		require.NoError(t, p.WaitIdle(context.Background()))
		require.NoError(t, p.WaitIdle(context.Background())) // the second passes after dispatch took every release
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	run := func(p *WorkerPool, n, batch int) {
		gate := newGate()
		for i := 0; i < n; {
			for range min(batch, n-i) {
				gate := gate
				p.DoContext(context.Background(), gate.wait, TaskOption{Key: "key-" + strconv.Itoa(i), Label: "x"})
				i++
			}
			gate.open()
			require.NoError(t, p.WaitIdle(context.Background()))
			gate = newGate()
		}
	}
	p := New(4, WithKeys(1, nil))
	defer p.Stop()
	run(p, 10, 10)
	afterTen := heap(p)
	run(p, keys, batch)
	afterMany := heap(p)
	assert.Equal(t, 0, p.Status().Keys)
	t.Logf("heap after 10 distinct keys: %d B; after %d more: %d B", afterTen, keys, afterMany)
	assert.Less(t, int64(afterMany)-int64(afterTen), int64(256<<10), "the pool holds no more after %d keys than after ten, but for bounded spares", keys)
}

// The same while one key stays active all along (it has a task scheduled
// for tomorrow), and under aging and a Pause, which make dispatch look at
// every key's queue: the key map, and the buffers that held every key's
// queue, give their memory back once the burst of keys is done, though
// the map never empties. (The map kept the room of its most keys, and the
// buffers their most queues, for as long as the pool lived.)
func TestKeyStateIsFreedWhileAKeyStaysActive(t *testing.T) {
	const batches, batch = 3, 20_000
	p := New(4, WithKeys(1, nil), WithIdleTimeout(-1))
	defer p.Stop()
	ctx := context.Background()
	p.Go(ctx, noopFn, TaskOption{Key: "hot", Delay: 24 * time.Hour})
	// flush has dispatch take every release posted so far: it takes them
	// as it handles the Pause, whose barrier nothing holds.
	flush := func() {
		pauseCtx, resume := context.WithCancel(ctx)
		p.Pause(pauseCtx)
		resume()
	}
	run := func(n int) {
		pauseCtx, resume := context.WithCancel(ctx)
		p.Pause(pauseCtx) // the burst waits until it is all queued
		g := p.Group(ctx)
		for i := range n {
			g.Go(noopFn, TaskOption{Key: "key-" + strconv.Itoa(i)})
		}
		resume()
		require.NoError(t, g.Wait())
		flush()
		require.Equal(t, 1, p.Status().Keys, "keys once the burst is done: hot")
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	run(10)
	afterTen := heap()
	for range batches {
		run(batch)
	}
	afterMany := heap()
	t.Logf("heap after 10 distinct keys: %d B; after %d more: %d B", afterTen, batches*batch, afterMany)
	assert.Less(t, int64(afterMany)-int64(afterTen), int64(256<<10), "the pool holds no more after %d keys than after ten, but for bounded spares", batches*batch)
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

// A key leaves Status.Keys with its last task: once the Wait of a task
// that will never run reports it, Keys no longer counts its key, if no
// other task of the key is in the pool, though the task's entry still
// waits in the queue (or the timer heap) for dispatch to reach it. A new
// task of the key counts it again, and under WithKeyLimit its slots are
// as if the key were new: the limit holds its tasks, no more.
func TestStatusKeysDropsAKeyWithItsLastTask(t *testing.T) {
	cases := []struct {
		name   string
		opts   []TaskOption // every task's
		heavy  bool         // q1's task weighs 2, and a Resize(1) drops it; else Cancel does
		settle error
	}{
		{"canceled while queued", nil, false, context.Canceled},
		{"canceled while scheduled", []TaskOption{{Delay: time.Hour}}, false, context.Canceled},
		{"too heavy after a Resize, queued", nil, true, ErrTooHeavy},
		{"too heavy after a Resize, scheduled", []TaskOption{{Delay: time.Hour}}, true, ErrTooHeavy},
	}
	for _, c := range cases {
		for _, limit := range []int{-1, 1} {
			t.Run(c.name+"/limit="+strconv.Itoa(limit), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					p := New(2, WithKeys(limit, nil), WithIdleTimeout(-1))
					defer p.Stop()
					blockers := newGate()
					defer blockers.release()
					p.Submit(blockers.wait)
					p.Submit(blockers.wait)
					ctx := context.Background()
					var tasks []*Task
					for i := range 3 {
						opts := append([]TaskOption{{Key: "q" + strconv.Itoa(i)}}, c.opts...)
						if i == 1 && c.heavy {
							opts = append(opts, TaskOption{Weight: 2})
						}
						tasks = append(tasks, p.Go(ctx, noopFn, opts...))
					}
					synctest.Wait()
					require.Equal(t, 3, p.Status().Keys, "keys before")

					if c.heavy {
						p.Resize(1)
					} else {
						tasks[1].Cancel()
					}
					require.ErrorIs(t, tasks[1].Wait(), c.settle, "q1's task")
					s := p.Status()
					assert.Equal(t, 2, s.Waiting+s.Scheduled, "waiting and scheduled, as Wait reports q1's task")
					assert.Equal(t, 2, s.Keys, "keys, as Wait reports q1's task: q0 and q2")
					time.Sleep(10 * time.Minute)
					synctest.Wait()
					assert.Equal(t, 2, p.Status().Keys, "keys ten minutes later")

					// q1 again, two tasks that run as long as gate is closed:
					// the key counts again, and a limit of 1 holds the second.
					gate := newGate()
					again := []*Task{p.Go(ctx, fnOf(gate.wait), TaskOption{Key: "q1"}), p.Go(ctx, fnOf(gate.wait), TaskOption{Key: "q1"})}
					synctest.Wait()
					assert.Equal(t, 3, p.Status().Keys, "keys once q1 has tasks again")
					p.Resize(2)
					blockers.open()
					synctest.Wait()
					s = p.Status()
					if limit == 1 {
						assert.Equal(t, 1, s.Busy, "busy: q1's limit holds its second task")
					} else {
						assert.Equal(t, 2, s.Busy, "busy: both of q1's tasks")
					}
					gate.open()
					for _, task := range again {
						require.NoError(t, task.Wait())
					}
					for _, i := range []int{0, 2} {
						require.NoError(t, tasks[i].Wait())
					}
					synctest.Wait()
					assert.Equal(t, 0, p.Status().Keys, "keys once every task is done")
					p.StopWait()
					requireStoppedClean(t, p)
				})
			})
		}
	}
}
