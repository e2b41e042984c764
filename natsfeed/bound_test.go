package natsfeed_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// watchAckPending polls the consumer's NumAckPending on the server, on a
// connection of its own, until the returned stop is called; stop returns
// the highest value seen and how many polls were made.
func watchAckPending(t *testing.T, url string) (stop func() (high, polls int)) {
	t.Helper()
	js := connect(t, url)
	cons, err := js.Consumer(context.Background(), "JOBS", "workers")
	require.NoError(t, err, "the watcher's consumer")
	done := make(chan struct{})
	var high, polls int
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			ci, err := cons.Info(context.Background())
			if err != nil {
				continue
			}
			polls++
			high = max(high, ci.NumAckPending)
		}
	})
	return func() (int, int) {
		close(done)
		wg.Wait()
		return high, polls
	}
}

// TestBoundAndUnconfirmedTerms: under WithMaxInFlight(1) with every
// message terminated, the feed never holds more than one message. A term
// is only sent (nats.go's jetstream API has no confirmed term), so the next
// pull request can reach the consumer before the term does (the server
// queues acks and pull requests apart), and the server's count can pass
// the bound by the terms it has not processed yet, as the package doc
// says: the test logs the highest count the server showed, and requires
// it back at 0 once every term is processed.
func TestBoundAndUnconfirmedTerms(t *testing.T) {
	const n = 1500
	url, _, cons := setupAt(t, 30*time.Second, n)
	pool := workerpool.New(1)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stats := new(natsfeed.Stats)
	stop := watchAckPending(t, url)
	wait := run(ctx, pool, cons, func(_ context.Context, msg jetstream.Msg) error {
		return workerpool.Permanent(fmt.Errorf("job %d", job(msg)))
	}, natsfeed.WithStats(stats), natsfeed.WithMaxInFlight(1))
	eventually(t, func() bool { return stats.Counts().Terminated == n }, "every job terminated")
	high, polls := stop()
	cancel()
	require.NoError(t, wait(), "Feed")
	t.Logf("highest NumAckPending the server showed under WithMaxInFlight(1): %d (%d polls)", high, polls)
	assert.LessOrEqual(t, stats.Counts().MaxInFlight, int64(1), "MaxInFlight")
	eventually(t, func() bool { return info(t, cons).NumAckPending == 0 }, "the server processed every term")
}

// TestBoundHoldsForTwoFeedsOnOnePool: two Feeds on one pool and one
// consumer, bounds 2 and 3, handlers that succeed (every settlement an
// acknowledgement the server confirms): the server never counts more than
// 5 pending.
func TestBoundHoldsForTwoFeedsOnOnePool(t *testing.T) {
	const n = 1500
	url, _, cons := setupAt(t, 30*time.Second, n)
	pool := workerpool.New(4)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stats := new(natsfeed.Stats)
	h := func(_ context.Context, msg jetstream.Msg) error {
		if job(msg)%7 == 0 {
			time.Sleep(time.Millisecond)
		}
		return nil
	}
	stop := watchAckPending(t, url)
	wait1 := run(ctx, pool, cons, h, natsfeed.WithStats(stats), natsfeed.WithMaxInFlight(2))
	wait2 := run(ctx, pool, cons, h, natsfeed.WithStats(stats), natsfeed.WithMaxInFlight(3))
	eventually(t, func() bool { return stats.Counts().Acked == n }, "every job acked")
	high, polls := stop()
	cancel()
	require.NoError(t, wait1(), "Feed 1")
	require.NoError(t, wait2(), "Feed 2")
	assertSettled(t, stats.Counts(), "Feeds 1 and 2 (one Stats)")
	assert.LessOrEqual(t, high, 5, "NumAckPending seen by the server for bounds 2+3 (%d polls)", polls)
	assert.LessOrEqual(t, stats.Counts().MaxInFlight, int64(5), "MaxInFlight")
}

// TestBoundHoldsForThreeFeedsOnABusyResizingPool: three feeds of bound 5
// on one pool and one consumer, the pool also running other work and
// resized to and fro: every job is acked, none twice, each feed's counts
// add up and stay within its bound, and the server never counts more
// pending (NumAckPending, sampled) than the sum of the bounds.
func TestBoundHoldsForThreeFeedsOnABusyResizingPool(t *testing.T) {
	const n, feeds, bound = 1500, 3, 5
	_, cons := setup(t, 30*time.Second, n)
	pool := workerpool.New(4)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	seen := map[int]int{}
	handler := func(_ context.Context, msg jetstream.Msg) error {
		mu.Lock()
		seen[job(msg)]++
		mu.Unlock()
		return nil
	}
	var stats [feeds]natsfeed.Stats
	var waits []func() error
	for i := range feeds {
		waits = append(waits, run(ctx, pool, cons, handler, natsfeed.WithStats(&stats[i]), natsfeed.WithMaxInFlight(bound)))
	}
	stopOther := make(chan struct{})
	var other sync.WaitGroup
	other.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stopOther:
				return
			default:
			}
			pool.Submit(func() { time.Sleep(time.Millisecond) })
			if i%50 == 0 {
				pool.Resize(1 + i%7)
			}
			time.Sleep(500 * time.Microsecond)
		}
	})
	maxPending := 0
	eventually(t, func() bool {
		maxPending = max(maxPending, info(t, cons).NumAckPending)
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == n
	}, "every job handled")
	close(stopOther)
	other.Wait()
	cancel()
	for i, wait := range waits {
		require.NoError(t, wait(), "Feed %d", i)
	}
	var acked int64
	for i := range feeds {
		c := stats[i].Counts()
		assertSettled(t, c, fmt.Sprintf("Feed %d", i))
		assert.LessOrEqual(t, c.MaxInFlight, int64(bound), "feed %d: max in flight", i)
		acked += c.Acked
	}
	assert.Equal(t, int64(n), acked, "acked by the feeds")
	for id, k := range seen {
		require.Equal(t, 1, k, "handlings of job %d", id)
	}
	assert.LessOrEqual(t, maxPending, feeds*bound, "most messages pending on the server at once")
	assert.Equal(t, 0, info(t, cons).NumAckPending, "unacked on the server")
}

// TestBoundFollowsResize: under the default bound (for tasks this short,
// up to eight times the pool's size), the pool is resized up and down
// while Feed runs handlers that succeed; once the messages taken under a
// larger bound have settled, the server never counts more pending than
// eight times the size of the moment (plus what was asked for before the
// resize: the watcher waits for those to settle).
func TestBoundFollowsResize(t *testing.T) {
	const n = 20000
	url, _, cons := setupAt(t, 30*time.Second, n)
	pool := workerpool.New(4)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stats := new(natsfeed.Stats)
	wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error {
		time.Sleep(200 * time.Microsecond)
		return nil
	}, natsfeed.WithStats(stats), natsfeed.WithFetchWait(100*time.Millisecond))
	for _, size := range []int{1, 6, 2} {
		pool.Resize(size)
		// What was asked for under the old size settles, and the fetch
		// wait ends any request sent before the resize.
		time.Sleep(500 * time.Millisecond)
		stop := watchAckPending(t, url)
		time.Sleep(300 * time.Millisecond)
		high, polls := stop()
		assert.LessOrEqual(t, high, 8*size, "NumAckPending at size %d (%d polls)", size, polls)
	}
	require.Less(t, stats.Counts().Acked, int64(n), "the stream kept the feed busy through every size")
	cancel()
	require.NoError(t, wait(), "Feed")
	assertSettled(t, stats.Counts(), "Feed")
}

// TestBoundResizedDownWhileFullRunsTheRestOneAtATime: a pool of 8, every
// worker running a handler of the feed's, is resized to 1: once those 8
// settle, the rest of the stream runs one handler at a time, and every
// message is acked.
func TestBoundResizedDownWhileFullRunsTheRestOneAtATime(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 40)
	pool := workerpool.New(8)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	stats := new(natsfeed.Stats)
	g := newGate()
	var inside, most atomic.Int64
	wait := run(ctx, pool, cons, func(ctx context.Context, msg jetstream.Msg) error {
		k := inside.Add(1)
		defer inside.Add(-1)
		if g.entered.Add(1) > 8 {
			for m := most.Load(); k > m && !most.CompareAndSwap(m, k); m = most.Load() {
			}
		}
		<-g.open
		return nil
	}, natsfeed.WithStats(stats))
	eventually(t, func() bool { return inside.Load() == 8 }, "8 handlers running")
	pool.Resize(1)
	close(g.open)
	eventually(t, func() bool { return stats.Counts().Acked == 40 }, "all acked")
	cancel()
	require.NoError(t, wait(), "Feed")
	assert.Equal(t, int64(1), most.Load(), "most handlers running at once after Resize(1)")
	assert.Equal(t, 0, info(t, cons).NumAckPending, "unacked on the server")
}

// TestBoundFollowsAResizeUpWhileEveryWorkerIsBusy: Feed reads the pool's
// size before each pull request and, while it waits for room, at least
// every fetch wait, so that a Resize up takes effect while every worker
// runs a handler of the feed's: a pool of 2 whose 2 handlers do not
// return, resized to 4, runs 4 of them within 5s, none settled.
func TestBoundFollowsAResizeUpWhileEveryWorkerIsBusy(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 10)
	pool := workerpool.New(2)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	g := newGate()
	wait := run(ctx, pool, cons, g.handler, natsfeed.WithFetchWait(200*time.Millisecond))
	eventually(t, func() bool { return g.inside.Load() == 2 }, "2 handlers running")
	pool.Resize(4)
	assert.Eventually(t, func() bool { return g.inside.Load() == 4 }, 5*time.Second, 5*time.Millisecond, "4 handlers running after Resize(4), none settled")
	cancel()
	close(g.open)
	require.NoError(t, wait(), "Feed")
}

// TestBoundHoldsUnderAStreamOfFastHandlers samples, under a stream of
// fast handlers, the feed's InFlight and the server's NumAckPending:
// neither ever exceeds the bound, nor does MaxInFlight. With
// acknowledgements only, the server's count is exact too (an
// acknowledgement is confirmed before its place frees). With naks it is
// not a measure of what the feed holds: a nak'd message stays pending on
// the server until it is redelivered (and a nak is not confirmed), so
// there only Feed's own counts are checked.
func TestBoundHoldsUnderAStreamOfFastHandlers(t *testing.T) {
	for _, naks := range []bool{false, true} {
		t.Run(fmt.Sprintf("naks=%v", naks), func(t *testing.T) {
			const n, bound = 3000, 6
			_, cons := setup(t, 30*time.Second, n)
			pool := workerpool.New(4)
			defer pool.Stop()
			ctx, cancel := context.WithCancel(context.Background())
			stats := new(natsfeed.Stats)
			wait := run(ctx, pool, cons, func(_ context.Context, msg jetstream.Msg) error {
				if naks && job(msg)%97 == 0 && delivered(msg) == 1 {
					return fmt.Errorf("retry job %d: %w", job(msg), errGiveUp) // nak'd: back at once
				}
				return nil
			}, natsfeed.WithStats(stats), natsfeed.WithMaxInFlight(bound), natsfeed.WithBackoff(func(int, error) (time.Duration, bool) { return 0, true }))
			maxPending, maxInFlight := 0, int64(0)
			eventually(t, func() bool {
				maxPending = max(maxPending, info(t, cons).NumAckPending)
				maxInFlight = max(maxInFlight, stats.Counts().InFlight)
				return stats.Counts().Acked == n
			}, "every job acked")
			cancel()
			require.NoError(t, wait(), "Feed")
			assertSettled(t, stats.Counts(), "Feed")
			assert.LessOrEqual(t, maxInFlight, int64(bound), "sampled InFlight")
			assert.LessOrEqual(t, stats.Counts().MaxInFlight, int64(bound), "MaxInFlight")
			if !naks {
				assert.LessOrEqual(t, maxPending, bound, "sampled NumAckPending on the server")
			} else {
				t.Logf("most NumAckPending sampled with naks: %d (bound %d)", maxPending, bound)
			}
		})
	}
}

// TestDefaultBoundGrowsForShortTasks: with handlers far shorter than a
// round trip to the server, the default bound fetches further ahead than
// twice the pool's size (the bound before anything is measured), up to
// eight times it and never beyond, as Feed and the server count.
func TestDefaultBoundGrowsForShortTasks(t *testing.T) {
	const n, size = 3000, 4
	url, _, cons := setupAt(t, 30*time.Second, n)
	pool := workerpool.New(size)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stats := new(natsfeed.Stats)
	watch := watchAckPending(t, url)
	wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error { return nil }, natsfeed.WithStats(stats))
	eventually(t, func() bool { return stats.Counts().Acked == n }, "every message acked")
	cancel()
	require.NoError(t, wait(), "Feed")
	high, polls := watch()
	c := stats.Counts()
	assertSettled(t, c, "Feed")
	assert.Greater(t, c.MaxInFlight, int64(2*size), "held beyond twice the pool's size")
	assert.LessOrEqual(t, c.MaxInFlight, int64(8*size), "held at most eight times the pool's size")
	assert.LessOrEqual(t, high, 8*size, "NumAckPending on the server (%d polls)", polls)
}

// TestBoundServerCountsNakedMessagesUntilRedelivered: a message nak'd with
// a delay is settled for the feed, whose place it gives back, but the
// server keeps it pending (NumAckPending, and against the consumer's
// MaxAckPending) until it redelivers it: with every handler failing and a
// backoff of an hour, a feed of bound 2 takes all 20 jobs, never holding
// more than 2, and the server counts all 20 pending, as the package doc
// says.
func TestBoundServerCountsNakedMessagesUntilRedelivered(t *testing.T) {
	const n, bound = 20, 2
	_, cons := setup(t, 30*time.Second, n)
	pool := workerpool.New(1)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stats := new(natsfeed.Stats)
	wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error { return fmt.Errorf("fails") },
		natsfeed.WithStats(stats), natsfeed.WithMaxInFlight(bound),
		natsfeed.WithBackoff(func(int, error) (time.Duration, bool) { return time.Hour, true }))
	eventually(t, func() bool { return stats.Counts().Nacked == n }, "every job nak'd")
	eventually(t, func() bool { return info(t, cons).NumAckPending == n }, "the naks processed by the server")
	cancel()
	require.NoError(t, wait(), "Feed")
	c := stats.Counts()
	// Never more than the bound; whether two were ever held at once depends
	// on how the server's replies and the nak of the one before interleave
	// (1 now and then on a loaded machine).
	assert.LessOrEqual(t, c.MaxInFlight, int64(bound), "held at most the bound")
	c.MaxInFlight = 0
	assert.Equal(t, natsfeed.Counts{Taken: n, Nacked: n}, c, "counts")
}
