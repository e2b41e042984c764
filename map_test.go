package workerpool

import (
	"context"
	"errors"
	"iter"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mappers are Map and MapUnordered, for the tests that run both.
var mappers = []struct {
	name string
	m    func(context.Context, *WorkerPool, iter.Seq[int], func(context.Context, int) (int, error), ...TaskOption) iter.Seq2[int, error]
}{{"Map", Map[int, int]}, {"MapUnordered", MapUnordered[int, int]}}

// A pair is what a Map loop yielded once.
type pair struct {
	value int
	err   error
}

// collect ranges over seq to its end and returns what it yielded.
func collect(seq iter.Seq2[int, error]) []pair {
	var got []pair
	for v, err := range seq {
		got = append(got, pair{v, err})
	}
	return got
}

// countedInput is an input that counts the items taken from it, and
// checks that it is pulled on one goroutine only.
type countedInput struct {
	n       int
	taken   atomic.Int64
	pullers sync.Map // goroutine ids that pulled
}

func (c *countedInput) seq(yield func(int) bool) {
	for i := range c.n {
		c.pullers.Store(goroutineID(), true)
		c.taken.Add(1)
		if !yield(i) {
			return
		}
	}
}

// sleepsFor is an fn that sleeps d(item) and returns the item.
func sleepsFor(d func(item int) time.Duration) func(context.Context, int) (int, error) {
	return func(_ context.Context, item int) (int, error) {
		time.Sleep(d(item))
		return item, nil
	}
}

func TestMapYieldsInTheInputsOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4)
		defer p.Stop()
		in := slices.Values(seq(20))
		got := collect(Map(t.Context(), p, in, sleepsFor(func(i int) time.Duration { return time.Duration(20-i) * time.Millisecond })))
		want := make([]pair, 20)
		for i := range want {
			want[i] = pair{i, nil}
		}
		assert.Equal(t, want, got)
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(20), s.Submitted, "submitted: one task per item")
		assert.Equal(t, uint64(20), s.Completed, "completed")
	})
}

func TestMapUnorderedYieldsEachResultAsItsTaskEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4)
		defer p.Stop()
		runFor := []time.Duration{40 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond, 20 * time.Millisecond}
		t0 := time.Now()
		var order []int
		var at []time.Duration
		for v, err := range MapUnordered(t.Context(), p, slices.Values(seq(4)), sleepsFor(func(i int) time.Duration { return runFor[i] })) {
			require.NoError(t, err)
			order = append(order, v)
			at = append(at, time.Since(t0))
		}
		assert.Equal(t, []int{1, 3, 2, 0}, order, "items in the order their tasks ended")
		assert.Equal(t, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond, 40 * time.Millisecond}, at, "each yielded as its task ended")
	})
}

// MapUnordered yields between items, on the loop's goroutine: a result
// that ends while the loop waits for the input's next item (a loop over a
// channel of messages, between two of them) is yielded as the input gives
// that item, before the item runs.
func TestMapUnorderedYieldsWhatEndedWhileTheInputWaitedOnceItGivesAnItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		items := make(chan int)
		go func() {
			items <- 0
			time.Sleep(time.Hour) // the next message comes an hour later
			items <- 1
			close(items)
		}()
		in := func(yield func(int) bool) {
			for i := range items {
				if !yield(i) {
					return
				}
			}
		}
		t0 := time.Now()
		var at []time.Duration
		for _, err := range MapUnordered(t.Context(), p, in, sleepsFor(func(int) time.Duration { return time.Millisecond })) {
			require.NoError(t, err)
			at = append(at, time.Since(t0))
		}
		assert.Equal(t, []time.Duration{time.Hour, time.Hour + time.Millisecond}, at,
			"when each result was yielded: item 0's (ended at 1ms) as the input gave item 1")
	})
}

// A first item that does not end holds Map at the window: it takes exactly
// a window of items and waits; MapUnordered yields the others meanwhile,
// and takes the whole input.
func TestMapTakesAtMostAWindowAheadOfWhatItYielded(t *testing.T) {
	cases := []struct {
		name      string
		mapper    func(context.Context, *WorkerPool, iter.Seq[int], func(context.Context, int) (int, error), ...TaskOption) iter.Seq2[int, error]
		opts      []TaskOption
		taken     int // while the first item runs
		yielded   int // while the first item runs
		maxAhead  int // the most items taken and not yielded, ever
		inputSize int
	}{
		{"Map/default: twice the size", Map[int, int], nil, 6, 0, 6, 100},
		{"Map/Window 16", Map[int, int], []TaskOption{{Window: 16}}, 16, 0, 16, 100},
		{"Map/Window 1", Map[int, int], []TaskOption{{Window: 1}}, 1, 0, 1, 100},
		{"Map/Window -1: no limit", Map[int, int], []TaskOption{{Window: -1}}, 100, 0, 100, 100},
		{"Map/the last Window given", Map[int, int], []TaskOption{{Window: 16}, {Priority: 1}, {Window: 5}}, 5, 0, 5, 100},
		{"MapUnordered/default", MapUnordered[int, int], nil, 100, 99, 6, 100},
		{"MapUnordered/Window 1", MapUnordered[int, int], []TaskOption{{Window: 1}}, 1, 0, 1, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(3)
				defer p.Stop()
				first := newGate()
				in := &countedInput{n: c.inputSize}
				var yielded, maxAhead atomic.Int64
				fn := func(_ context.Context, i int) (int, error) {
					if i == 0 {
						first.wait()
					}
					return i, nil
				}
				input := func(yield func(int) bool) { // measures as each item is taken, on the loop's goroutine
					in.seq(func(i int) bool {
						maxAhead.Store(max(maxAhead.Load(), in.taken.Load()-yielded.Load()))
						return yield(i)
					})
				}
				done := make(chan []int)
				go func() {
					var got []int
					for v, err := range c.mapper(t.Context(), p, input, fn, c.opts...) {
						assert.NoError(t, err)
						got = append(got, v)
						yielded.Add(1)
					}
					done <- got
				}()
				synctest.Wait()
				assert.Equal(t, int64(c.taken), in.taken.Load(), "items taken while the first runs")
				assert.Equal(t, int64(c.yielded), yielded.Load(), "items yielded while the first runs")
				first.open()
				got := <-done
				assert.Len(t, got, c.inputSize, "items yielded")
				if c.yielded == 0 { // the first item held the loop at its window
					assert.Equal(t, int64(c.maxAhead), maxAhead.Load(), "the most items taken ahead of what was yielded")
				} else { // as the others ended
					assert.LessOrEqual(t, maxAhead.Load(), int64(c.maxAhead), "the most items taken ahead of what was yielded")
				}
			})
		})
	}
}

// The loop body breaking cancels the items in flight: the queued ones
// never run, the running ones see their ctx canceled, and the loop returns
// once every one has ended; the input is not pulled again.
func TestMapBreakCancelsTheItemsInFlightAndReturnsOnceTheyEnded(t *testing.T) {
	for _, mapper := range mappers {
		t.Run(mapper.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(2)
				defer p.Stop()
				in := &countedInput{n: 1000}
				var ran, endedAfterBreak atomic.Int64
				var broke atomic.Bool
				fn := func(ctx context.Context, i int) (int, error) {
					if broke.Load() {
						t.Errorf("item %d started after the loop body broke", i)
					}
					if i == 0 {
						time.Sleep(time.Millisecond) // meanwhile the window fills: 1 runs, 2 and 3 wait
						return 0, nil
					}
					ran.Add(1)
					<-ctx.Done() // the others run until the break cancels them
					time.Sleep(time.Second)
					endedAfterBreak.Add(1)
					return i, ctx.Err()
				}
				m := mapper.m
				t0 := time.Now()
				for v, err := range m(t.Context(), p, in.seq, fn, TaskOption{Window: 4}) {
					require.NoError(t, err)
					require.Equal(t, 0, v, "the first result")
					synctest.Wait() // item 2 starts on the worker item 0 left
					broke.Store(true)
					break
				}
				assert.Equal(t, time.Millisecond+time.Second, time.Since(t0), "the loop returned once the running items ended")
				assert.Equal(t, int64(4), in.taken.Load(), "items taken: a window")
				assert.Equal(t, int64(2), ran.Load(), "items that ran besides the first")
				assert.Equal(t, int64(2), endedAfterBreak.Load(), "running items ended before the loop returned")
				s := p.Status()
				assert.Zero(t, s.Busy, "busy when the loop returned")
				assert.Zero(t, s.Waiting, "waiting when the loop returned")
				assert.Equal(t, uint64(3), s.Completed, "completed: the first and the two canceled while running")
				assert.Equal(t, uint64(1), s.Canceled, "canceled: item 3, queued")
			})
		})
	}
}

// ctx ending cancels the items in flight at once, even those a Pause
// holds: the loop returns as ctx ends, with nothing yielded but its error.
func TestMapCtxEndingWhilePausedCancelsTheWindowAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		pause, resume := context.WithCancel(t.Context())
		defer resume()
		p.Pause(pause)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		t0 := time.Now()
		got := collect(Map(ctx, p, slices.Values(seq(100)), func(context.Context, int) (int, error) {
			t.Error("an item ran while the pool was paused")
			return 0, nil
		}, TaskOption{Window: 8}))
		require.Len(t, got, 1, "one pair: ctx's error")
		assert.ErrorIs(t, got[0].err, context.DeadlineExceeded)
		assert.Equal(t, time.Minute, time.Since(t0), "the loop returned as ctx ended")
		s := p.Status()
		assert.Zero(t, s.Waiting, "waiting when the loop returned")
		assert.Equal(t, uint64(8), s.Canceled, "canceled: the window")
	})
}

func TestMapYieldsAnItemsErrorInItsPlaceAndGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3)
		defer p.Stop()
		errOdd := errors.New("odd")
		got := collect(Map(t.Context(), p, slices.Values(seq(6)), func(_ context.Context, i int) (int, error) {
			switch {
			case i == 3:
				panic("three")
			case i%2 == 1:
				return -i, errOdd
			}
			return i, nil
		}))
		require.Len(t, got, 6)
		for i, o := range got {
			switch {
			case i == 3:
				var pe *PanicError
				require.ErrorAs(t, o.err, &pe, "item 3")
				assert.Equal(t, "three", pe.Value, "item 3's panic")
				assert.Zero(t, o.value, "item 3's value")
			case i%2 == 1:
				assert.ErrorIs(t, o.err, errOdd, "item %d", i)
				assert.Equal(t, -i, o.value, "item %d's value, returned with its error", i)
			default:
				assert.NoError(t, o.err, "item %d", i)
				assert.Equal(t, i, o.value, "item %d", i)
			}
		}
	})
}

// ctx ending stops the stream: no item is taken or yielded after it, the
// items in flight are canceled and waited for, and ctx's error is yielded
// once, last.
func TestMapYieldsCtxsErrorOnceWhenCtxEnds(t *testing.T) {
	for _, mapper := range mappers {
		t.Run(mapper.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1)
				defer p.Stop()
				ctx, cancel := context.WithTimeout(t.Context(), 25*time.Millisecond)
				defer cancel()
				in := &countedInput{n: 100}
				m := mapper.m
				t0 := time.Now()
				var got []pair
				var at []time.Duration
				for v, err := range m(ctx, p, in.seq, sleepsFor(func(int) time.Duration { return 10 * time.Millisecond }), TaskOption{Window: 2}) {
					got = append(got, pair{v, err})
					at = append(at, time.Since(t0))
				}
				require.Len(t, got, 3, "two results, then ctx's error")
				assert.Equal(t, []pair{{0, nil}, {1, nil}}, got[:2])
				assert.ErrorIs(t, got[2].err, context.DeadlineExceeded, "the last yielded")
				assert.Equal(t, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond}, at,
					"ctx's error yielded once item 2, running as ctx ended, returned")
				assert.Equal(t, int64(4), in.taken.Load(), "items taken")
				s := p.Status()
				assert.Zero(t, s.Busy+s.Waiting, "tasks left when the loop returned")
				assert.Equal(t, uint64(3), s.Completed, "completed")
				assert.Equal(t, uint64(1), s.Canceled, "canceled: item 3, queued")
			})
		})
	}
}

func TestMapWithCtxDoneAtTheStartTakesNoItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		in := &countedInput{n: 10}
		got := collect(Map(canceledContext(), p, in.seq, sleepsFor(func(int) time.Duration { return 0 })))
		require.Len(t, got, 1)
		assert.ErrorIs(t, got[0].err, context.Canceled)
		assert.Zero(t, in.taken.Load(), "items taken")
		assert.Zero(t, p.Status().Submitted, "tasks submitted")
	})
}

// A ctx that ends after the loop yielded every item changes nothing.
func TestMapCtxEndingAfterTheLastItemYieldsNoError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var got []pair
		for v, err := range Map(ctx, p, slices.Values(seq(3)), sleepsFor(func(int) time.Duration { return time.Millisecond })) {
			got = append(got, pair{v, err})
			if v == 2 {
				cancel()
			}
		}
		assert.Equal(t, []pair{{0, nil}, {1, nil}, {2, nil}}, got)
	})
}

// Once the pool is stopping the loop takes no item; the items in flight
// yield their yieldeds: a result for the one that ran, ErrStopped for those
// the stop abandoned.
func TestMapStopsTakingItemsOnceThePoolStops(t *testing.T) {
	for i, c := range []struct {
		want []pair
		at   []time.Duration
	}{
		{[]pair{{0, nil}, {0, ErrStopped}, {0, ErrStopped}, {0, ErrStopped}},
			[]time.Duration{time.Hour, time.Hour, time.Hour, time.Hour}},
		{[]pair{{0, ErrStopped}, {0, ErrStopped}, {0, ErrStopped}, {0, nil}},
			[]time.Duration{30 * time.Minute, 30 * time.Minute, 30 * time.Minute, time.Hour}},
	} {
		t.Run(mappers[i].name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1)
				defer p.Stop()
				in := &countedInput{n: 100}
				m := mappers[i].m
				go func() {
					time.Sleep(30 * time.Minute)
					p.Stop()
				}()
				t0 := time.Now()
				var got []pair
				var at []time.Duration
				for v, err := range m(t.Context(), p, in.seq, sleepsFor(func(int) time.Duration { return time.Hour }), TaskOption{Window: 4}) {
					if errors.Is(err, ErrStopped) {
						err = ErrStopped
					}
					got = append(got, pair{v, err})
					at = append(at, time.Since(t0))
				}
				assert.Equal(t, c.want, got)
				assert.Equal(t, c.at, at, "when each was yielded")
				assert.Equal(t, int64(4), in.taken.Load(), "items taken")
			})
		})
	}
}

func TestMapOnAStoppedPoolYieldsErrStoppedOnce(t *testing.T) {
	p := New(1)
	p.Stop()
	in := &countedInput{n: 10}
	got := collect(Map(context.Background(), p, in.seq, sleepsFor(func(int) time.Duration { return 0 })))
	require.Len(t, got, 1)
	assert.ErrorIs(t, got[0].err, ErrStopped)
	assert.Equal(t, int64(1), in.taken.Load(), "items taken: the one the pool refused")
}

// The items are tasks like Go's: options schedule them (a key's limit, a
// retry, a label the hooks see), and the input is pulled on the loop's
// goroutine while fn never runs there.
func TestMapItemsAreTasksWithTheirOptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var labels sync.Map
		p := New(4, WithKeys(1, nil), WithHooks(Hooks{TaskStarted: func(ctx context.Context, info TaskInfo) context.Context {
			labels.Store(info.Label, true)
			return ctx
		}}))
		defer p.Stop()
		var meter concurrencyMeter
		var callerRan atomic.Bool
		caller := goroutineID()
		tries := map[int]int{}
		var mu sync.Mutex
		fn := func(_ context.Context, i int) (v int, err error) {
			meter.wrap(func() {
				callerRan.Store(callerRan.Load() || goroutineID() == caller)
				mu.Lock()
				tries[i]++
				first := tries[i] == 1
				mu.Unlock()
				time.Sleep(time.Millisecond)
				if first && i%3 == 0 {
					v, err = 0, errors.New("first try")
					return
				}
				v = i
			})()
			return v, err
		}
		in := &countedInput{n: 12}
		retry := func(int, error) (time.Duration, bool) { return time.Millisecond, true }
		got := collect(Map(t.Context(), p, in.seq, fn, TaskOption{Key: "k", Label: "double", Retry: retry}))
		want := make([]pair, 12)
		for i := range want {
			want[i] = pair{i, nil}
		}
		assert.Equal(t, want, got, "each item's result after its retry")
		assert.Equal(t, int64(1), meter.peak.Load(), "most items running at once under their key's limit of 1")
		_, labeled := labels.Load("double")
		assert.True(t, labeled, "TaskStarted saw the label")
		assert.Equal(t, uint64(4), p.Status().Retried, "retried")
		assert.False(t, callerRan.Load(), "fn ran on the loop's goroutine")
		pullers := 0
		in.pullers.Range(func(id, _ any) bool {
			pullers++
			assert.Equal(t, caller, id, "the input was pulled on the loop's goroutine")
			return true
		})
		assert.Equal(t, 1, pullers, "goroutines that pulled the input")
	})
}

// Each range over Map's sequence is a stream of its own.
func TestMapRangedTwiceRunsTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		in := &countedInput{n: 5}
		var runs atomic.Int64
		seq := Map(t.Context(), p, in.seq, func(_ context.Context, i int) (int, error) { runs.Add(1); return i, nil })
		first, second := collect(seq), collect(seq)
		assert.Equal(t, first, second)
		assert.Len(t, first, 5)
		assert.Equal(t, int64(10), runs.Load(), "fn calls")
		assert.Equal(t, int64(10), in.taken.Load(), "items taken")
	})
}

// A loop body that panics leaves no task on the pool: the loop cancels
// and waits for its items as it unwinds.
func TestMapLoopBodyPanicLeavesNoTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		fn := func(ctx context.Context, i int) (int, error) {
			if i > 0 {
				<-ctx.Done()
			}
			return i, nil
		}
		err, panicked := recovered(func() {
			for range Map(t.Context(), p, slices.Values(seq(100)), fn, TaskOption{Window: 4}) {
				synctest.Wait()
				panic("loop body")
			}
		})
		require.True(t, panicked, "the loop body's panic reached the caller: %v", err)
		s := p.Status()
		assert.Zero(t, s.Busy+s.Waiting, "tasks left")
		assert.Equal(t, s.Submitted, s.Completed+s.Canceled, "every item ended")
	})
}

// A Map loop ranged over inside a task, on a pool whose every worker runs
// such a task, waits forever for its items (the package documentation,
// Deadlocks): a stop that abandons the queue (Stop, a Shutdown that gives
// up), called from outside, ends it; StopWait, and Shutdown until it gives
// up, wait for the items, so until a Stop.
func TestMapRangedInsideATaskEndsWithAStopThatAbandons(t *testing.T) {
	for _, mode := range stopModes {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1)
				defer p.Stop()
				yielded := make(chan []pair, 1)
				p.Submit(func() {
					yielded <- collect(Map(context.Background(), p, slices.Values(seq(3)), sleepsFor(func(int) time.Duration { return 0 })))
				})
				synctest.Wait()
				stopped := make(chan struct{})
				go func() { defer close(stopped); mode.stop(p) }()
				synctest.Wait()
				assert.Equal(t, mode.abandons, isClosed(stopped), "%s returned", mode.name)
				p.Stop() // ends it, if the stop did not
				<-stopped
				got := <-yielded
				require.Len(t, got, 2, "outcomes: the window's items, taken before the stop")
				for _, o := range got {
					assert.ErrorIs(t, o.err, ErrStopped, "each item: abandoned")
				}
			})
		})
	}
}

// The loop allocates one carrier per item (the package documentation,
// Goroutines), also for items with options.
func TestMapAllocatesOneCarrierPerItem(t *testing.T) {
	p := New(4)
	defer p.Stop()
	const items = 1000
	in := slices.Values(seq(items))
	fn := func(_ context.Context, i int) (int, error) { return i, nil }
	for _, opts := range [][]TaskOption{nil, {{Priority: 1}}, {{Label: "resize", Retry: func(int, error) (time.Duration, bool) { return 0, false }}}} {
		allocs := testing.AllocsPerRun(20, func() {
			for _, err := range Map(context.Background(), p, in, fn, opts...) {
				if err != nil {
					panic(err)
				}
			}
		})
		assert.LessOrEqual(t, allocs, float64(items+20), "allocations per loop of %d items, with options %v", items, opts)
	}
}

// Window bounds a Map loop and nothing else: Go ignores it.
func TestWindowIsIgnoredByTheCallsOfOneTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		assert.NoError(t, p.Go(t.Context(), noopFn, TaskOption{Window: 3}).Wait(), "Go")
		assert.NoError(t, p.DoContext(t.Context(), func() {}, TaskOption{Window: -1}), "DoContext")
		p.StopWait()
		assert.Equal(t, uint64(2), p.Status().Completed)
	})
}

func TestMapPanicsOnNilArguments(t *testing.T) {
	p := New(1)
	defer p.Stop()
	in := slices.Values([]int{1})
	fn := func(context.Context, int) (int, error) { return 0, nil }
	var nilCtx context.Context
	for name, call := range map[string]func(){
		"ctx": func() { Map(nilCtx, p, in, fn) },
		"p":   func() { MapUnordered(context.Background(), nil, in, fn) },
		"in":  func() { Map(context.Background(), p, nil, fn) },
		"fn":  func() { MapUnordered[int, int](context.Background(), p, in, nil) },
	} {
		err, panicked := recovered(call)
		assert.True(t, panicked, "a nil %s", name)
		assert.Contains(t, err.Error(), "nil", "the panic names what is nil: %s", name)
	}
}

// 1,000,000 items behind a first item that does not end, with a window of
// 16: the loop holds 16 items, not the input.
func TestMapHoldsOnlyTheWindowBehindASlowItem(t *testing.T) {
	p := New(4)
	defer p.Stop()
	first := newGate()
	in := &countedInput{n: 1_000_000}
	fn := func(_ context.Context, i int) (int, error) {
		if i == 0 {
			first.wait()
		}
		return i, nil
	}
	before := liveHeap()
	done := make(chan int)
	go func() {
		n := 0
		for range Map(context.Background(), p, in.seq, fn, TaskOption{Window: 16}) {
			if n++; n == 100 {
				break // the window is what the test is about, not the million
			}
		}
		done <- n
	}()
	for in.taken.Load() < 16 || p.Status().Completed < 15 {
		runtime.Gosched()
	}
	held := liveHeap() - before
	assert.Equal(t, int64(16), in.taken.Load(), "items taken while the first runs")
	assert.Less(t, held, int64(1<<20), "live heap held by the loop, in bytes")
	t.Logf("live heap held by the loop: %d B", held)
	first.open()
	assert.Equal(t, 100, <-done, "items yielded")
}

// liveHeap is the heap in use after a collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// BenchmarkMap streams no-op items through a pool of 4 (window 8, twice
// its size), against the loop a caller would write by hand: GoResult for
// each item, Wait on the oldest handle once a window of them is out.
func BenchmarkMap(b *testing.B) {
	const items, window = 1000, 8
	in := slices.Values(seq(items))
	fn := func(_ context.Context, i int) (int, error) { return i, nil }
	ctx := context.Background()
	bench := func(b *testing.B, loop func(p *WorkerPool) int) {
		p := New(window / 2)
		defer p.StopWait()
		b.ReportAllocs()
		for b.Loop() {
			if sum := loop(p); sum != items*(items-1)/2 {
				b.Fatalf("sum %d", sum)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*items), "ns/item")
	}
	b.Run("loop=Map", func(b *testing.B) {
		bench(b, func(p *WorkerPool) (sum int) {
			for v, err := range Map(ctx, p, in, fn) {
				if err != nil {
					b.Fatal(err)
				}
				sum += v
			}
			return sum
		})
	})
	b.Run("loop=MapUnordered", func(b *testing.B) {
		bench(b, func(p *WorkerPool) (sum int) {
			for v, err := range MapUnordered(ctx, p, in, fn) {
				if err != nil {
					b.Fatal(err)
				}
				sum += v
			}
			return sum
		})
	})
	b.Run("loop=GoResult+Wait", func(b *testing.B) {
		var ring [window]*Future[int]
		bench(b, func(p *WorkerPool) (sum int) {
			wait := func(f *Future[int]) {
				v, err := f.Wait()
				if err != nil {
					b.Fatal(err)
				}
				sum += v
			}
			n := 0
			for item := range in {
				if n >= window {
					wait(ring[n%window])
				}
				ring[n%window] = GoResult(ctx, p, func(ctx context.Context) (int, error) { return fn(ctx, item) })
				n++
			}
			for i := max(n-window, 0); i < n; i++ {
				wait(ring[i%window])
			}
			return sum
		})
	})
}
