package workerpool

import (
	"math"
	"time"
)

// rateLimit is WithRateLimit's token bucket, kept as the generic cell rate
// algorithm, which is the same bucket in integers: a start is allowed once
// the pool's clock reaches tat − tolerance, and each start moves tat, the
// theoretical arrival time, one interval past the later of tat and now. So
// the bucket refills one token per interval and holds burst tokens; tat 0,
// at New, is a full bucket.
type rateLimit struct {
	interval  int64 // nanoseconds per token; 0: no limit
	tolerance int64 // (burst − 1) intervals: how far tat may run ahead of now
}

func newRateLimit(perSecond float64, burst int) rateLimit {
	if !(perSecond > 0) || math.IsInf(perSecond, 1) {
		return rateLimit{}
	}
	interval := max(min(float64(time.Second)/perSecond, math.MaxInt64/2), 1)
	r := rateLimit{interval: int64(interval)}
	if extra := int64(max(burst, 1) - 1); extra > 0 {
		r.tolerance = math.MaxInt64 / 2
		if extra < r.tolerance/r.interval {
			r.tolerance = extra * r.interval
		}
	}
	return r
}

// limited reports whether the pool has a rate limit.
func (r rateLimit) limited() bool { return r.interval > 0 }

// tokens is the dispatcher's part for the rate limit: the bucket's state.
// The dispatcher owns it.
type tokens struct {
	rate  rateLimit // WithRateLimit's
	clock clock     // the pool's
	tat   int64     // the theoretical arrival time of the next start, on the pool's clock; 0 at New: a full bucket
}

// ready reports whether a task may start now under the rate limit, and
// if not, when the next token is ready.
func (t *tokens) ready() (next int64, ok bool) {
	at := t.tat - t.rate.tolerance
	return at, t.clock.now() >= at
}

// took takes a token for a task that starts now.
func (t *tokens) took() {
	t.tat = later(max(t.tat, t.clock.now()), t.rate.interval)
}
