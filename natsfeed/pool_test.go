package natsfeed_test

// The tests in this file run Feed on a pool that does not simply run what
// the feed gives it: one that refuses it, lets it expire in its queue or
// stops under the feed, and one of the largest size.

import (
	"context"
	"math"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFeedTakesFewMessagesForAPoolThatRefusesThemAll: the pool refuses
// every message (its worker and its one place are taken by other work,
// under Reject). A refused message is reported and nak'd with the fetch
// wait as its delay, and its place stays taken for the fetch wait, so that
// Feed does not take message after message of a backlog for a pool that
// refuses them all, burning a delivery of each (under MaxDeliver they
// would die without ever running): in 1.5s at a fetch wait of 1s it takes,
// and reports, at most 10.
func TestFeedTakesFewMessagesForAPoolThatRefusesThemAll(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 300)
	pool := workerpool.New(1, workerpool.WithMaxWaiting(1, workerpool.Reject))
	defer pool.Stop()
	busy := make(chan struct{})
	defer close(busy)
	require.NoError(t, pool.Do(func() { <-busy }), "busy task")
	require.NoError(t, pool.Do(func() { <-busy }), "queued task")
	ctx, cancel := context.WithCancel(context.Background())
	var errs reportedErrors
	stats := new(natsfeed.Stats)
	wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error { return nil },
		natsfeed.WithErrorHandler(errs.handler), natsfeed.WithStats(stats), natsfeed.WithFetchWait(time.Second))
	time.Sleep(1500 * time.Millisecond)
	cancel()
	require.NoError(t, wait(), "Feed")
	c := stats.Counts()
	assertSettled(t, c, "Feed")
	// Over 1.5s with a fetch wait of 1s, a feed that pauses a fetch wait
	// after a refusal takes a handful of messages, not the stream.
	assert.LessOrEqual(t, c.Taken, int64(10), "messages taken (and refused) in 1.5s with the pool refusing everything: %+v", c)
	assert.LessOrEqual(t, errs.count("not run"), 10, "refusals reported in 1.5s")
}

// TestFeedNaksAndReportsAMessageThatExpiresInThePoolsQueue: a message that
// waits in the pool's queue longer than WithQueueTimeout is nak'd and
// reported (context.DeadlineExceeded), each time; it is handled on a later delivery
// once the pool has room, and the server holds nothing unacknowledged.
func TestFeedNaksAndReportsAMessageThatExpiresInThePoolsQueue(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 1)
	pool := workerpool.New(1, workerpool.WithQueueTimeout(50*time.Millisecond))
	defer pool.Stop()
	hog := make(chan struct{})
	pool.Submit(func() { <-hog })
	ctx, cancel := context.WithCancel(context.Background())
	stats := new(natsfeed.Stats)
	var errs reportedErrors
	wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error { return nil },
		natsfeed.WithStats(stats), natsfeed.WithErrorHandler(errs.handler), natsfeed.WithFetchWait(200*time.Millisecond))
	eventually(t, func() bool { return stats.Counts().Nacked >= 1 }, "the expired message nak'd")
	close(hog)
	eventually(t, func() bool { return stats.Counts().Acked == 1 }, "acked on a later delivery")
	cancel()
	require.NoError(t, wait(), "Feed")
	c := stats.Counts()
	assertSettled(t, c, "Feed")
	assert.Equal(t, c.Nacked, int64(errs.count("not run")), "each expiry reported")
	for _, err := range errs.all() {
		assert.ErrorIs(t, err, context.DeadlineExceeded, "reported")
	}
	assert.Equal(t, 0, info(t, cons).NumAckPending, "unacked on the server")
}

// TestFeedSettlesEverythingAndReturnsErrStoppedWhenItsPoolStops stops the
// pool, in each of its ways (Stop, StopWait, Shutdown that runs out of time
// and Shutdown with a done ctx), while Feed has messages running, waiting
// in the queue and being acknowledged: Feed returns ErrStopped, every
// message it took is acked or nak'd (none left to AckWait), its counts add
// up, no goroutine of its stays behind, and a second feed then handles
// every other job well before AckWait.
func TestFeedSettlesEverythingAndReturnsErrStoppedWhenItsPoolStops(t *testing.T) {
	const n = 300
	stops := map[string]func(p *workerpool.WorkerPool){
		"Stop":     (*workerpool.WorkerPool).Stop,
		"StopWait": (*workerpool.WorkerPool).StopWait,
		"Shutdown": func(p *workerpool.WorkerPool) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
			defer cancel()
			_ = p.Shutdown(ctx)
		},
		"Shutdown(done ctx)": func(p *workerpool.WorkerPool) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_ = p.Shutdown(ctx)
		},
	}
	for name, stop := range stops {
		t.Run(name, func(t *testing.T) {
			_, cons := setup(t, 30*time.Second, n)
			var mu sync.Mutex
			acked := map[int]bool{}
			handler := func(_ context.Context, msg jetstream.Msg) error {
				time.Sleep(time.Duration(job(msg)%3) * time.Millisecond)
				mu.Lock()
				acked[job(msg)] = true // a nil return: acknowledged (at least once)
				mu.Unlock()
				return nil
			}
			base := runtime.NumGoroutine()
			// Other work on the pool makes Feed's messages wait in its queue.
			pool := workerpool.New(4)
			stats := new(natsfeed.Stats)
			var errs reportedErrors
			wait := runGuarded(context.Background(), pool, cons, handler, natsfeed.WithStats(stats),
				natsfeed.WithMaxInFlight(16), natsfeed.WithErrorHandler(errs.handler), natsfeed.WithFetchWait(300*time.Millisecond))
			for i := range 8 {
				pool.Submit(func() { time.Sleep(time.Duration(i) * time.Millisecond) })
			}
			eventually(t, func() bool { return stats.Counts().Acked >= 40 }, "some messages acked")
			stop(pool)
			err, ok := wait(time.Minute)
			require.True(t, ok, "Feed returned after the pool stopped")
			assert.ErrorIs(t, err, workerpool.ErrStopped, "Feed's error")
			c := stats.Counts()
			assertSettled(t, c, "Feed")
			assert.Zero(t, c.Unsettled, "unsettled: %+v, errors %v", c, errs.all())
			waitGoroutines(t, base)

			// A second feed takes the rest at once: the nak'd messages
			// come back without waiting for the AckWait of 30s.
			pool2 := workerpool.New(4)
			defer pool2.Stop()
			ctx, cancel := context.WithCancel(context.Background())
			wait2 := run(ctx, pool2, cons, handler)
			require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) == n }, 15*time.Second, 5*time.Millisecond,
				"every job handled well before AckWait")
			cancel()
			require.NoError(t, wait2(), "second Feed")
			assert.Equal(t, 0, info(t, cons).NumAckPending, "unacked on the server")
		})
	}
}

// TestFeedServesAPoolOfMaxIntWorkers: New takes a size of math.MaxInt
// (workers start only as tasks arrive), and Feed serves such a pool: it
// asks no pull request for more than its cap of 500 messages (the client
// makes a channel of the request's size), acks every message, and returns
// nil without a panic.
func TestFeedServesAPoolOfMaxIntWorkers(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 3)
	pool := workerpool.New(math.MaxInt)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stats := new(natsfeed.Stats)
	wait := runGuarded(ctx, pool, cons, func(context.Context, jetstream.Msg) error { return nil }, natsfeed.WithStats(stats))
	require.Eventually(t, func() bool { return stats.Counts().Acked == 3 }, 10*time.Second, 5*time.Millisecond, "3 messages acked")
	cancel()
	err, ok := wait(time.Minute)
	require.True(t, ok, "Feed returned")
	require.NoError(t, err, "Feed")
}
