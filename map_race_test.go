package workerpool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Map and MapUnordered loops on several goroutines, breaking at random
// points or when a ctx ends, racing each way to stop, on the real clock:
// every outcome is the item's result (in order, for Map) or why it did not
// run, no loop yields after ErrStopped but the outcomes of the items it had
// in flight (fewer than its window), every loop returns, none of its items
// runs once it returned, and the counts balance.
func TestMapLoopsRacingStops(t *testing.T) {
	raceEachStop(t, 30, mapLoopsRaceStop)
}

func mapLoopsRaceStop(t *testing.T, mode stopMode, round int) bool {
	const loops, items = 6, 200
	var opts []Option
	switch round % 3 {
	case 1:
		opts = append(opts, WithMaxWaiting(4, Block))
	case 2:
		opts = append(opts, WithMaxWaiting(4, DropOldest), WithIdleTimeout(time.Microsecond))
	}
	p := New(1+round%4, opts...)
	var wg sync.WaitGroup
	for l := range loops {
		wg.Go(func() {
			ordered := l%2 == 0
			mapper := Map[int, int]
			if !ordered {
				mapper = MapUnordered[int, int]
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var running atomic.Int64
			fn := func(ctx context.Context, i int) (int, error) {
				running.Add(1)
				defer running.Add(-1)
				switch {
				case i%17 == 3:
					panic(i)
				case i%5 == 0:
					select {
					case <-ctx.Done():
					case <-time.After(time.Duration(i%3) * time.Millisecond):
					}
				}
				return i, nil
			}
			breakAt := (l*37 + round*11) % (items + 50) // past items: never
			window := l % 4
			if window == 0 {
				window = 2 * p.Size()
			}
			next, k := 0, 0
			afterStop := -1 // outcomes yielded after the first ErrStopped
			for v, err := range mapper(ctx, p, slices.Values(seq(items)), fn, TaskOption{Window: l % 4}) {
				var pe *PanicError
				if afterStop >= 0 {
					afterStop++ // an item in flight: one a worker took as the stop began gives it up, and the next may have run
				}
				switch {
				case err == nil:
					assert.False(t, ordered && v < next, "Map yielded %d after %d", v, next)
					next = v + 1
				case errors.As(err, &pe):
				case errors.Is(err, ErrStopped):
					afterStop = max(afterStop, 0)
				case errors.Is(err, ErrQueueFull):
					assert.True(t, round%3 == 2, "ErrQueueFull without DropOldest: %v", err)
				case errors.Is(err, context.Canceled):
					assert.True(t, l%3 == 1, "ctx's error without a cancel: %v", err)
				default:
					t.Errorf("loop %d: %v", l, err)
				}
				if k++; k == breakAt {
					if l%3 == 1 {
						cancel() // the loop ends with ctx's error
						continue
					}
					break
				}
			}
			assert.Less(t, afterStop, window, "outcomes of loop %d after ErrStopped: only items in flight", l)
			assert.LessOrEqual(t, k, items+1, "outcomes of loop %d", l)
			assert.Zero(t, running.Load(), "items of loop %d running once it returned", l)
		})
	}
	time.Sleep(time.Duration(round%5) * time.Millisecond)
	mode.stop(p)
	requireStoppedCounts(t, p)
	wg.Wait()
	s := p.Status()
	assert.Equal(t, s.Submitted, s.Completed+s.Abandoned+s.Canceled+s.Dropped+s.Expired, "the counts balance once every loop returned")
	return !t.Failed()
}

// errMapItem is the error fn returns, with a value, for some items of
// TestMapLoopsWithOptionsRacingPausesResizesAndStops.
var errMapItem = errors.New("map item failed")

// Map and MapUnordered loops whose items carry options (a retry, a delay,
// keys and priorities, weights up to heavier than the pool), on pools
// bounded each way, with a queue timeout, keys' limits or an adaptive size,
// while Pause and Resize calls come and go and a stop of each kind races
// them, on the real clock: every outcome is its item's (by its value, or
// its panic), each item's at most once and, for Map, in the input's order;
// a loop never takes an item while a window of them is in flight; a loop
// that neither broke nor saw ctx end yielded every item it took; no fn
// runs once its loop returned, ever; and the counts balance with nothing
// left once the pool stopped.
func TestMapLoopsWithOptionsRacingPausesResizesAndStops(t *testing.T) {
	rounds := 100
	if testing.Short() {
		rounds = 10
	}
	for round := range rounds {
		if !mapLoopsWithOptionsRace(t, round) {
			return
		}
	}
}

func mapLoopsWithOptionsRace(t *testing.T, round int) bool {
	const loops, items = 5, 60
	r := rand.New(rand.NewPCG(uint64(round), 7))
	var opts []Option
	switch r.IntN(7) {
	case 1:
		opts = append(opts, WithMaxWaiting(r.IntN(3), Block))
	case 2:
		opts = append(opts, WithMaxWaiting(r.IntN(3), Reject))
	case 3:
		opts = append(opts, WithMaxWaiting(r.IntN(3), DropOldest))
	case 4:
		opts = append(opts, WithQueueTimeout(time.Duration(r.IntN(3)+1)*time.Millisecond))
	case 5:
		opts = append(opts, WithAdaptiveSize(1, 4))
	case 6:
		opts = append(opts, WithKeys(1+r.IntN(2), nil))
	}
	if r.IntN(3) == 0 {
		opts = append(opts, WithIdleTimeout(time.Microsecond))
	}
	p := New(1+r.IntN(4), opts...)
	name := fmt.Sprintf("round %d (size %d, %d options)", round, p.Size(), len(opts))
	var loopsDone sync.WaitGroup
	var lateCalls atomic.Int64
	for l := range loops {
		lr := rand.New(rand.NewPCG(uint64(round), uint64(l)))
		ordered := lr.IntN(2) == 0
		var topts []TaskOption
		switch lr.IntN(5) {
		case 1:
			topts = append(topts, TaskOption{Retry: func(attempt int, _ error) (time.Duration, bool) { return time.Millisecond, attempt < 2 }})
		case 2:
			topts = append(topts, TaskOption{Delay: time.Duration(lr.IntN(2)) * time.Millisecond})
		case 3:
			topts = append(topts, TaskOption{Key: fmt.Sprint("k", lr.IntN(2)), Priority: lr.IntN(3)})
		case 4:
			topts = append(topts, TaskOption{Weight: 1 + lr.IntN(5)})
		}
		window := lr.IntN(5) - 1
		topts = append(topts, TaskOption{Window: window})
		breakAt, cancelAt := lr.IntN(2*items), lr.IntN(3*items) // past the items: never
		loopsDone.Go(func() {
			mapper := Map[int, int]
			if !ordered {
				mapper = MapUnordered[int, int]
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var returned atomic.Bool
			var running atomic.Int64
			fn := func(ctx context.Context, i int) (int, error) {
				if returned.Load() {
					lateCalls.Add(1)
				}
				running.Add(1)
				defer running.Add(-1)
				switch i % 7 {
				case 3:
					panic(i)
				case 5:
					return i + items, errMapItem
				case 1:
					select {
					case <-ctx.Done():
					case <-time.After(time.Duration(i%3) * time.Millisecond):
					}
				}
				return i, nil
			}
			taken, yielded := 0, 0
			in := func(yield func(int) bool) {
				for i := range items {
					assert.False(t, window > 0 && taken-yielded >= window, "%s, loop %d: item %d taken with %d in flight, window %d", name, l, i, taken-yielded, window)
					taken++
					if !yield(i) {
						return
					}
				}
			}
			seen := map[int]bool{}
			broke, ctxErr := false, false
			for v, err := range mapper(ctx, p, in, fn, topts...) {
				assert.False(t, ctxErr, "%s, loop %d: an outcome after ctx's error", name, l)
				var pe *PanicError
				item := -1
				switch {
				case err == nil:
					item = v
				case errors.Is(err, errMapItem):
					item = v - items
				case errors.As(err, &pe):
					item = pe.Value.(int)
					assert.Zero(t, v, "%s, loop %d: the value of a panic", name, l)
				case errors.Is(err, ErrStopped), errors.Is(err, ErrQueueFull), errors.Is(err, ErrTooHeavy), errors.Is(err, context.DeadlineExceeded):
					assert.Zero(t, v, "%s, loop %d: the value of an item that did not run: %v", name, l, err)
				case errors.Is(err, context.Canceled) && ctx.Err() != nil:
					ctxErr = true
					continue
				default:
					t.Errorf("%s, loop %d: %v", name, l, err)
				}
				if item >= 0 {
					assert.False(t, seen[item], "%s, loop %d: item %d yielded twice", name, l, item)
					seen[item] = true
					assert.False(t, ordered && item != yielded, "%s, loop %d: Map's outcome %d is item %d's", name, l, yielded, item)
				}
				if yielded++; yielded == cancelAt {
					cancel()
				}
				if yielded == breakAt {
					broke = true
					break
				}
			}
			returned.Store(true)
			assert.Zero(t, running.Load(), "%s, loop %d: items running once it returned", name, l)
			if !broke && ctx.Err() == nil {
				assert.Equal(t, taken, yielded, "%s, loop %d: outcomes of the items taken", name, l)
			}
		})
	}
	stopAt := time.Duration(r.IntN(6)) * time.Millisecond
	stopMode := r.IntN(4)
	calls := make(chan struct{})
	var caller sync.WaitGroup
	caller.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-calls:
				return
			case <-time.After(time.Duration(r.IntN(500)) * time.Microsecond):
			}
			switch i % 3 {
			case 0:
				p.Resize(1 + i%4)
			case 1:
				ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
				p.Pause(ctx)
				cancel()
			}
		}
	})
	time.Sleep(stopAt)
	switch stopMode {
	case 0:
		p.Stop()
	case 1:
		p.StopWait()
	case 2:
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		_ = p.Shutdown(ctx)
		cancel()
	case 3:
		loopsDone.Wait()
		p.StopWait()
	}
	loopsDone.Wait()
	close(calls)
	caller.Wait()
	s := p.Status()
	assert.Equal(t, "stopped", stateOf(s), "%s: state", name)
	assert.Zero(t, s.Workers+s.Busy+s.Waiting+s.Scheduled+s.Keys, "%s: left once stopped: %+v", name, s)
	assert.Equal(t, s.Submitted, s.Completed+s.Abandoned+s.Canceled+s.Dropped+s.Expired, "%s: the counts balance: %+v", name, s)
	time.Sleep(time.Millisecond)
	assert.Zero(t, lateCalls.Load(), "%s: fn called after its loop returned", name)
	return !t.Failed()
}
