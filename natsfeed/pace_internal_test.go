package natsfeed

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/stretchr/testify/assert"
)

// TestDefaultBound: the default bound is size × (1 + 2r/t), rounded up,
// never below twice size (also before r and t are measured) nor above
// eight times size, and never overflows.
func TestDefaultBound(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name      string
		size      int
		rtt, task time.Duration
		want      int
	}{
		{"nothing measured", 8, 0, 0, 16},
		{"no round trip measured", 8, 0, ms, 16},
		{"no task measured", 8, ms, 0, 16},
		{"tasks of twice the round trip", 8, ms, 2 * ms, 16},
		{"tasks just under twice the round trip", 8, ms, 2*ms - 1, 17}, // the least is for tasks of at least twice it
		{"tasks of half the round trip", 8, ms, ms / 2, 40},
		{"tasks of a second, loopback", 8, 100 * time.Microsecond, time.Second, 16},
		{"tasks as long as the round trip", 8, ms, ms, 24},
		{"1 ms tasks, 2 ms round trip", 8, 2 * ms, ms, 40},
		{"rounded up", 3, ms, 4 * ms, 6},                      // 3 × 1.5 = 4.5: below 2 × 3
		{"rounded up above the least", 4, 3 * ms, 4 * ms, 10}, // 4 × 2.5
		{"no-op tasks", 8, 100 * time.Microsecond, time.Microsecond, 64},
		{"a pool of one, no-op tasks", 1, ms, time.Nanosecond, 8},
		{"a huge pool", math.MaxInt / 4, ms, time.Nanosecond, math.MaxInt},
		{"the largest size not saturated", math.MaxInt / 8, ms, time.Nanosecond, math.MaxInt / 8 * 8},
		// 45 × (1 + 2×585/351) is 195 exactly, which floats make 195.00000000000003.
		{"a whole product not rounded up", 45, 585, 351, 195},
		{"a whole product not rounded up, twice", 30, 3 * ms, 4 * ms, 75},                  // 30 × 2.5
		{"a large pool, exactly", math.MaxInt/16 + 1, 3, 4, 5 * (math.MaxInt/16 + 1) / 2},  // an even size × 2.5
		{"a large pool, rounded up", math.MaxInt / 16, 3, 4, (5*(math.MaxInt/16) + 1) / 2}, // an odd size × 2.5, rounded up
		{"the largest size, one below the most", math.MaxInt / 8, 7*(math.MaxInt/8) - 1, 2 * (math.MaxInt / 8), math.MaxInt/8*8 - 1},
		{"an hour's round trip, 1 ns tasks, a pool of one", 1, time.Hour, time.Nanosecond, 8},
		{"1 ns round trips, hour-long tasks", 7, time.Nanosecond, time.Hour, 14},
		{"the longest durations", 5, math.MaxInt64, math.MaxInt64, 15},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, defaultBound(c.size, c.rtt, c.task))
		})
	}
}

// TestObserve: the first sample is the average; each next one moves it by
// an eighth of the difference; a zero sample counts as 1 ns (0 means no
// sample).
func TestObserve(t *testing.T) {
	var avg atomic.Int64
	observe(&avg, 800)
	assert.Equal(t, int64(800), avg.Load(), "first sample")
	observe(&avg, 1600)
	assert.Equal(t, int64(900), avg.Load(), "800 + (1600-800)/8")
	observe(&avg, 100)
	assert.Equal(t, int64(800), avg.Load(), "900 + (100-900)/8")
	var zero atomic.Int64
	observe(&zero, 0)
	assert.Equal(t, int64(1), zero.Load(), "a zero sample")
	for range 100 {
		observe(&zero, 0)
	}
	assert.Equal(t, int64(1), zero.Load(), "never back to 0")
}

// TestObserveConcurrentLosesNone: samples observed by many goroutines at
// once are each counted: n equal samples move the average as n in turn
// do, whatever their order, so a lost update would leave it higher. The
// average stays between the samples, never 0 nor negative, however large
// they are.
func TestObserveConcurrentLosesNone(t *testing.T) {
	const goroutines, each = 8, 50
	var want atomic.Int64
	want.Store(math.MaxInt64)
	for range goroutines * each {
		observe(&want, time.Nanosecond)
	}
	var avg atomic.Int64
	avg.Store(math.MaxInt64)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				observe(&avg, time.Nanosecond)
				if v := avg.Load(); v < 1 {
					t.Errorf("average %d below 1 ns", v)
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, want.Load(), avg.Load(), "the average after %d samples", goroutines*each)
	assert.Greater(t, want.Load(), int64(1), "the samples do not all reach 1 ns: a lost one shows")

	var mixed atomic.Int64
	for i := range goroutines {
		wg.Go(func() {
			for j := range each {
				observe(&mixed, []time.Duration{0, math.MaxInt64, -time.Hour, time.Millisecond}[(i+j)%4])
			}
		})
	}
	wg.Wait()
	assert.Positive(t, mixed.Load(), "extreme samples at once")
}

// TestMeasureOnlyForTheDefaultBound: under WithMaxInFlight nothing is
// measured and the bound is n whatever the pool's size; by default the
// samples make the bound, for the pool's size of the moment.
func TestMeasureOnlyForTheDefaultBound(t *testing.T) {
	pool := workerpool.New(3)
	defer pool.Stop()
	now := time.Now()

	fixed := &feed{pool: pool, cfg: newConfig([]Option{WithMaxInFlight(5)})}
	fixed.measure(&fixed.pace.roundTrip, now.Add(-time.Hour))
	fixed.measure(&fixed.pace.task, now)
	assert.Zero(t, fixed.pace.roundTrip.Load(), "round trip measured under WithMaxInFlight")
	assert.Zero(t, fixed.pace.task.Load(), "task measured under WithMaxInFlight")
	assert.Equal(t, 5, fixed.bound(), "WithMaxInFlight's bound")

	measured := &feed{pool: pool, cfg: newConfig(nil)}
	assert.Equal(t, 6, measured.bound(), "nothing measured: twice the pool's size")
	measured.measure(&measured.pace.roundTrip, now.Add(-time.Hour))
	assert.Equal(t, 6, measured.bound(), "no task measured")
	measured.measure(&measured.pace.task, time.Now())
	assert.Positive(t, measured.pace.task.Load(), "task measured")
	assert.Equal(t, 24, measured.bound(), "an hour's round trip, an instant's task: eight times the pool's size")
	pool.Resize(5)
	assert.Equal(t, 40, measured.bound(), "the pool's size of the moment")
	pool.Resize(math.MaxInt / 4)
	assert.Equal(t, math.MaxInt, measured.bound(), "a size whose eightfold does not fit an int")
}
