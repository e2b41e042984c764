package natsfeed

import (
	"math"
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
// are measured and what tasks longer than half a round trip get, and
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
	ahead := math.Ceil(float64(size) * (1 + 2*float64(roundTrip)/float64(task)))
	if ahead >= float64(most*size) { // compared as floats: ahead may not fit an int
		return most * size
	}
	return max(least*size, int(ahead))
}
