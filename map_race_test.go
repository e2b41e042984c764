package workerpool

import (
	"context"
	"errors"
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
// in flight (fewer than its window), every loop returns, none of its items runs once it returned,
// and the counts balance.
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
