package natsfeed_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOptionsNilIsSkippedExtremesWorkAndABadOneIsRefused: a nil Option is
// skipped, and extreme but valid values work: a bound of math.MaxInt (the
// pool's size still bounds the fetch), a fetch wait of 1ms, progress
// beats every millisecond: every message is acked once, with no error
// reported. A bad option is refused even when a good one of its kind
// follows it, and so are WithProgress(0), WithProgress below MinProgress
// and WithMaxInFlight(math.MinInt), each with an error that names it.
func TestOptionsNilIsSkippedExtremesWorkAndABadOneIsRefused(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 50)
	pool := workerpool.New(4)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	stats := new(natsfeed.Stats)
	var errs reportedErrors
	wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error {
		time.Sleep(5 * time.Millisecond)
		return nil
	}, nil, natsfeed.WithStats(stats), natsfeed.WithMaxInFlight(math.MaxInt), nil,
		natsfeed.WithFetchWait(time.Millisecond), natsfeed.WithProgress(time.Millisecond), natsfeed.WithErrorHandler(errs.handler))
	eventually(t, func() bool { return stats.Counts().Acked == 50 }, "50 acked")
	cancel()
	require.NoError(t, wait(), "Feed")
	c := stats.Counts()
	assert.Equal(t, natsfeed.Counts{Taken: 50, Acked: 50, MaxInFlight: c.MaxInFlight}, c, "counts")
	// Acknowledgements wait off the workers, so beyond the pool's size
	// only the (unbounded) bound limits what is held.
	assert.GreaterOrEqual(t, c.MaxInFlight, int64(1), "max in flight")
	assert.Empty(t, errs.all(), "errors reported")

	h := func(context.Context, jetstream.Msg) error { return nil }
	assert.EqualError(t, natsfeed.Feed(ctx, pool, cons, h, natsfeed.WithMaxInFlight(0), natsfeed.WithMaxInFlight(3)),
		"natsfeed: WithMaxInFlight(0): n must be at least 1", "a bad option then a good one of its kind")
	assert.EqualError(t, natsfeed.Feed(ctx, pool, cons, h, natsfeed.WithProgress(0)),
		"natsfeed: WithProgress(0s): every must be at least 1ms", "WithProgress(0)")
	assert.EqualError(t, natsfeed.Feed(ctx, pool, cons, h, natsfeed.WithProgress(natsfeed.MinProgress-1)),
		"natsfeed: WithProgress(999.999µs): every must be at least 1ms", "WithProgress below MinProgress")
	assert.EqualError(t, natsfeed.Feed(ctx, pool, cons, h, natsfeed.WithMaxInFlight(math.MinInt)),
		fmt.Sprintf("natsfeed: WithMaxInFlight(%d): n must be at least 1", math.MinInt), "WithMaxInFlight(MinInt)")
}

// TestWithFetchWaitRefusesAWaitBelowOneMillisecond: a pull request that
// waits 1ns (anything below some 10-100µs) has expired by the time the
// server looks for messages, so a feed would never take one: WithFetchWait
// refuses a wait below MinFetchWait, 1ms, and Feed returns the error.
func TestWithFetchWaitRefusesAWaitBelowOneMillisecond(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 0)
	pool := workerpool.New(4)
	defer pool.Stop()
	h := func(context.Context, jetstream.Msg) error { return nil }
	assert.EqualError(t, natsfeed.Feed(context.Background(), pool, cons, h, natsfeed.WithFetchWait(time.Nanosecond)),
		"natsfeed: WithFetchWait(1ns): d must be from 1ms to 1h0m0s", "Feed")
}

// WithFetchWait refuses the largest wait it can be given, a natural "wait
// as long as it takes", as it refuses any wait above MaxFetchWait: with it
// the client's own timer (FetchMaxWait plus a second) would overflow and end
// every Fetch at once, empty, so the feed would send pull requests in a hot
// loop. Feed returns the refusal before it sends any.
func TestWithFetchWaitRefusesAWaitAboveMaxFetchWaitAndSendsNoPullRequest(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 0)
	counting := &countingConsumer{Consumer: cons}
	pool := workerpool.New(2)
	defer pool.Stop()
	h := func(context.Context, jetstream.Msg) error { return nil }
	for _, d := range []time.Duration{natsfeed.MaxFetchWait + time.Nanosecond, time.Duration(math.MaxInt64)} {
		ctx, cancel := context.WithCancel(context.Background())
		wait := runGuarded(ctx, pool, counting, h, natsfeed.WithFetchWait(d))
		err, returned := wait(5 * time.Second) // a Feed that took the wait would still be fetching
		cancel()
		if assert.True(t, returned, "Feed with WithFetchWait(%v) returned at once", d) {
			assert.EqualError(t, err, fmt.Sprintf("natsfeed: WithFetchWait(%v): d must be from 1ms to 1h0m0s", d), "Feed with WithFetchWait(%v)", d)
		}
	}
	assert.Zero(t, counting.fetches.Load(), "pull requests sent by a Feed that refused its options")
}
