package natsfeed

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// A pace measures, as a feed runs, what its default bound depends on: the
// round trip to the server, timed on the acknowledgements the server
// confirms, and the time a handler takes. Each is a moving average in
// nanoseconds, in which a new sample counts for an eighth; 0 until the
// first sample. Written by the deliveries' goroutines and the workers,
// read by the fetch loop before each pull request.
type pace struct {
	roundTrip atomic.Int64
	task      atomic.Int64
}

// observe adds the sample d to the moving average avg.
func observe(avg *atomic.Int64, d time.Duration) {
	sample := max(int64(d), 1) // 0 means no sample
	for {
		old := avg.Load()
		next := sample
		if old != 0 {
			next = max(old+(sample-old)/8, 1)
		}
		if avg.CompareAndSwap(old, next) {
			return
		}
	}
}

// defaultBound is the bound that keeps size workers busy, by the sizing
// rule of WithMaxInFlight: size × (1 + 2r/t) for a round trip r and a task
// time t, so that the messages beyond the running ones cover the pull
// request that brings the next and the acknowledgement that waits for
// the server. It is never below twice size, which is the bound until both
// are measured and what tasks of at least twice a round trip get, and
// never above eight times size, so that a process does not take far more
// than it runs when tasks are far shorter than a round trip.
func defaultBound(size int, roundTrip, task time.Duration) int {
	const least, most = 2, 8
	if size > math.MaxInt/most {
		return math.MaxInt
	}
	if roundTrip <= 0 || task <= 0 {
		return least * size
	}
	// The messages beyond size, ⌈size × 2r / t⌉, in integers of 128 bits:
	// exact where floats would round a whole product up, or lose the
	// units of a large size.
	hi, lo := bits.Mul64(uint64(size), 2*uint64(roundTrip))
	if hi >= uint64(task) { // the quotient does not fit 64 bits
		return most * size
	}
	beyond, rem := bits.Div64(hi, lo, uint64(task))
	extra := uint64((most - 1) * size)
	if rem > 0 && beyond < extra { // rounded up, short of the most: no overflow
		beyond++
	}
	if beyond >= extra {
		return most * size
	}
	return max(least*size, size+int(beyond))
}
