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

// TestDrainGivesBackOnceNotToItsOwnPulls: one message waits in the queue
// of a pool whose worker is busy, while Feed's pull request for the rest
// of its bound is still out on the server. When Feed stops (its ctx ends,
// or the pool stops), the message is nak'd at once, and must go to some
// other consumer of the stream: not straight back into the pull request
// the stopping Feed still has out, to be nak'd again, and again, each time
// burning one of its deliveries. With MaxDeliver 3 the message would die
// there without ever having run. Taken counts the deliveries the stopping
// Feed received: one.
func TestDrainGivesBackOnceNotToItsOwnPulls(t *testing.T) {
	stops := map[string]func(cancel context.CancelFunc, pool *workerpool.WorkerPool){
		"ctx":       func(cancel context.CancelFunc, _ *workerpool.WorkerPool) { cancel() },
		"pool Stop": func(_ context.CancelFunc, pool *workerpool.WorkerPool) { go pool.Stop() },
	}
	for name, stop := range stops {
		t.Run(name, func(t *testing.T) {
			_, cons := setupWith(t, jetstream.ConsumerConfig{
				AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxDeliver: 3,
			}, 1)
			pool := workerpool.New(1)
			defer pool.Stop()
			busy := make(chan struct{})
			require.NoError(t, pool.Do(func() { <-busy }), "the task that holds the worker")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stats := new(natsfeed.Stats)
			var handled atomic.Int64
			h := func(context.Context, jetstream.Msg) error { handled.Add(1); return nil }
			wait := runGuarded(ctx, pool, cons, h, natsfeed.WithStats(stats),
				natsfeed.WithMaxInFlight(8), natsfeed.WithFetchWait(3*time.Second))
			eventually(t, func() bool { return stats.Counts().Taken == 1 }, "the message taken, waiting behind the busy worker")
			stop(cancel, pool)
			eventually(t, func() bool { return stats.Counts().Nacked >= 1 }, "the message given back")
			time.Sleep(200 * time.Millisecond) // room for the server to bring it back, if it does
			close(busy)
			_, returned := wait(time.Minute)
			require.True(t, returned, "Feed returned")
			c := stats.Counts()
			assertSettled(t, c, "Feed")
			assert.Equal(t, int64(1), c.Taken, "deliveries the stopping Feed received (the nak'd message came back to its own pull request): %+v", c)

			// Another feed must get the message and handle it.
			pool2 := workerpool.New(2)
			defer pool2.Stop()
			ctx2, cancel2 := context.WithCancel(context.Background())
			wait2 := run(ctx2, pool2, cons, h, natsfeed.WithFetchWait(200*time.Millisecond))
			assert.Eventually(t, func() bool { return handled.Load() == 1 }, 5*time.Second, 5*time.Millisecond,
				"the given-back message handled by the next feed (MaxDeliver 3, %d deliveries burnt by the drain)", c.Taken)
			cancel2()
			require.NoError(t, wait2(), "second Feed")
		})
	}
}

// TestDrainGivesBackWhileAHandlerHangs: a handler that never returns (it
// ignores its ctx, with WithCancelOnStop or without) holds Feed's return,
// but not the drain: the messages fetched ahead and waiting in the pool's
// queue behind it are given back at once when Feed's ctx ends, and
// another feed handles them, while the hung one stays held (and Feed has
// not returned).
func TestDrainGivesBackWhileAHandlerHangs(t *testing.T) {
	for _, cancelOnStop := range []bool{false, true} {
		t.Run(fmt.Sprint("WithCancelOnStop=", cancelOnStop), func(t *testing.T) {
			const n = 20
			_, cons := setup(t, time.Minute, n)
			pool := workerpool.New(1)
			hang := make(chan struct{})
			release := sync.OnceFunc(func() { close(hang) })
			defer pool.Stop()
			defer release()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stats := new(natsfeed.Stats)
			opts := []natsfeed.Option{natsfeed.WithStats(stats), natsfeed.WithMaxInFlight(4), natsfeed.WithFetchWait(100 * time.Millisecond)}
			if cancelOnStop {
				opts = append(opts, natsfeed.WithCancelOnStop())
			}
			var hung atomic.Int64
			wait := runGuarded(ctx, pool, cons, func(context.Context, jetstream.Msg) error {
				hung.Add(1)
				<-hang // ignores its ctx
				return nil
			}, opts...)
			eventually(t, func() bool { return hung.Load() == 1 && stats.Counts().Taken == 4 }, "one handler hung, three messages waiting behind it")
			cancel()
			eventually(t, func() bool { return stats.Counts().Nacked == 3 }, "the three waiting given back")

			pool2 := workerpool.New(4)
			defer pool2.Stop()
			ctx2, cancel2 := context.WithCancel(context.Background())
			stats2 := new(natsfeed.Stats)
			wait2 := run(ctx2, pool2, cons, func(context.Context, jetstream.Msg) error { return nil },
				natsfeed.WithStats(stats2), natsfeed.WithFetchWait(100*time.Millisecond))
			assert.Eventually(t, func() bool { return stats2.Counts().Acked == n-1 }, 20*time.Second, 5*time.Millisecond,
				"every job but the hung one handled by the next feed, well before AckWait (a minute)")
			cancel2()
			require.NoError(t, wait2(), "the next Feed")
			_, returned := wait(0)
			assert.False(t, returned, "Feed returned with a handler still running")
			assert.Equal(t, natsfeed.Counts{Taken: 4, Nacked: 3, InFlight: 1, MaxInFlight: 4}, stats.Counts(), "the hung feed's counts")
			release()
			err, returned := wait(time.Minute)
			require.True(t, returned, "Feed returned once its handler did")
			require.NoError(t, err, "Feed")
			assert.Equal(t, natsfeed.Counts{Taken: 4, Acked: 1, Nacked: 3, MaxInFlight: 4}, stats.Counts(), "the feed's final counts")
		})
	}
}

// TestDrainGivesBackToTheNextConsumerAtOnce: a feed of 4 workers, with a
// fetch wait of 200ms and an AckWait of 30s, stopped (its ctx ends) while
// 4 handlers run and 4 more messages wait in the pool's queue: with no
// pull request out (its bound of 8 is full), with one out on the server
// (a bound of 16 on a stream of 8: the request waits for 8 more), and
// with one out into which 52 messages arrive during the drain. Once Feed
// returns, what it gave back (Nacked) is available to the next consumer
// at once, never left in a pull request of the stopped Feed to wait out
// AckWait: the server counts those messages pending acknowledgement and
// none of them redelivered yet (nobody took them since), NumPending counts
// those never delivered, and one pull request of another consumer, on a
// connection of its own, brings every one of them (delivered a second
// time) with the rest of the stream, well before AckWait (it waits 5s at
// most, AckWait is 30s). Then the server counts nothing left.
func TestDrainGivesBackToTheNextConsumerAtOnce(t *testing.T) {
	const n, ackWait = 60, 30 * time.Second
	cases := []struct {
		name           string
		bound, first   int  // the feed's bound, the jobs published before it starts
		duringTheDrain bool // the rest is published as the drain begins, else once Feed returned
	}{
		{"no pull request out", 8, n, false},
		{"a pull request out", 16, 8, false},
		{"messages arriving into the pull request out", 16, 8, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url, js, cons := setupAt(t, ackWait, tc.first)
			pool := workerpool.New(4)
			defer pool.Stop()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			g, stats := newGate(), new(natsfeed.Stats)
			wait := runGuarded(ctx, pool, cons, g.handler, natsfeed.WithStats(stats),
				natsfeed.WithMaxInFlight(tc.bound), natsfeed.WithFetchWait(200*time.Millisecond))
			eventually(t, func() bool { return g.inside.Load() == 4 && stats.Counts().Taken == 8 },
				"4 handlers running, 4 messages waiting in the pool's queue")
			cancel()
			if tc.duringTheDrain {
				publish(t, js, n-tc.first)
			}
			eventually(t, func() bool { return stats.Counts().Nacked >= 4 }, "the waiting messages given back, the handlers still running")
			close(g.open)
			err, returned := wait(time.Minute)
			require.True(t, returned, "Feed returned")
			require.NoError(t, err, "Feed")
			c := stats.Counts()
			assertSettled(t, c, "Feed")
			require.Equal(t, int64(4), c.Acked, "the running handlers' messages acknowledged: %+v", c)
			require.GreaterOrEqual(t, c.Nacked, int64(4), "the waiting messages given back: %+v", c)

			i := info(t, cons)
			assert.Equal(t, int(c.Nacked), i.NumAckPending, "given back, pending on the server until redelivered")
			assert.Zero(t, i.NumRedelivered, "given-back messages redelivered since (to a pull request of the stopped Feed)")
			if !tc.duringTheDrain {
				publish(t, js, n-tc.first)
			}
			// The consumer counts a message a moment after the stream
			// confirmed it.
			assert.Eventually(t, func() bool { return info(t, cons).NumPending == uint64(n-c.Taken) }, 5*time.Second, 5*time.Millisecond,
				"messages never delivered: %d", n-c.Taken)

			// The next consumer: one pull request, on a connection of its own.
			next, err := connect(t, url).Consumer(context.Background(), "JOBS", "workers")
			require.NoError(t, err, "the next consumer")
			began := time.Now()
			batch, err := next.Fetch(n-4, jetstream.FetchMaxWait(5*time.Second))
			require.NoError(t, err, "the next consumer's pull request")
			var got, again int64
			for msg := range batch.Messages() {
				got++
				if delivered(msg) == 2 {
					again++
				}
				assert.NoError(t, msg.DoubleAck(context.Background()), "ack by the next consumer")
			}
			assert.NoError(t, batch.Error(), "the next consumer's pull request")
			assert.Equal(t, int64(n-4), got, "messages the next consumer got in one pull request, in %v (AckWait %v)", time.Since(began), ackWait)
			assert.Equal(t, c.Nacked, again, "given-back messages among them, delivered a second time")
			i = info(t, cons)
			assert.Zero(t, i.NumAckPending, "pending acknowledgement once the next consumer acknowledged all")
			assert.Zero(t, i.NumPending, "never delivered once the next consumer took all")
		})
	}
}

// TestDrainAtACtxDeadlineAsAtACancel: a ctx with a deadline ends Feed as
// a cancel does: Feed returns nil with everything it took settled, the
// handlers running at the deadline (each waits for it) acknowledging
// their messages and what was fetched ahead given back, so that a second
// feed handles every other job, each once, and the server holds nothing
// unacknowledged.
func TestDrainAtACtxDeadlineAsAtACancel(t *testing.T) {
	const n = 100
	_, cons := setup(t, 30*time.Second, n)
	pool := workerpool.New(4)
	defer pool.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var mu sync.Mutex
	handled := map[int]int{}
	handle := func(msg jetstream.Msg) {
		mu.Lock()
		defer mu.Unlock()
		handled[job(msg)]++
	}
	stats := new(natsfeed.Stats)
	err, ok := runGuarded(ctx, pool, cons, func(_ context.Context, msg jetstream.Msg) error {
		<-ctx.Done() // the handler runs past the deadline
		handle(msg)
		return nil
	}, natsfeed.WithStats(stats))(time.Minute)
	require.True(t, ok, "Feed returned")
	require.NoError(t, err, "Feed")
	c := stats.Counts()
	assertSettled(t, c, "Feed")
	assert.Equal(t, c.Taken, c.Acked+c.Nacked, "each taken acked or given back: %+v", c)
	assert.Equal(t, int64(len(handled)), c.Acked, "acked: the messages whose handlers ran")

	rest, stop := context.WithCancel(context.Background())
	defer stop()
	wait := run(rest, pool, cons, func(_ context.Context, msg jetstream.Msg) error {
		handle(msg)
		mu.Lock()
		defer mu.Unlock()
		if len(handled) == n {
			stop()
		}
		return nil
	})
	require.NoError(t, wait(), "second Feed")
	assert.Len(t, handled, n, "jobs handled")
	for id, k := range handled {
		assert.Equal(t, 1, k, "handlings of job %d", id)
	}
	assert.Equal(t, 0, info(t, cons).NumAckPending, "unacked on the server")
}

// TestDrainGivesBackACanceledHandlersMessageWhateverThePolicySays: under
// WithCancelOnStop a running handler gives up when Feed's ctx ends and
// returns its ctx's error. That is a drain, not a failure of the message:
// Feed gives the message back (a nak) whatever the backoff policy says,
// here one that allows no redelivery and would have it terminated; the
// server sees no term.
func TestDrainGivesBackACanceledHandlersMessageWhateverThePolicySays(t *testing.T) {
	js, cons := setup(t, 30*time.Second, 1)
	terminated := advisories(t, js)
	pool := workerpool.New(2)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	stats := new(natsfeed.Stats)
	var inside atomic.Int64
	wait := run(ctx, pool, cons, func(hctx context.Context, msg jetstream.Msg) error {
		inside.Add(1)
		<-hctx.Done()
		return hctx.Err()
	}, natsfeed.WithStats(stats), natsfeed.WithCancelOnStop(),
		// At most one delivery: any failure terminates.
		natsfeed.WithBackoff(workerpool.Backoff(time.Second, time.Minute, 0)))
	eventually(t, func() bool { return inside.Load() == 1 }, "the handler running")
	cancel()
	require.NoError(t, wait(), "Feed")
	c := stats.Counts()
	assertSettled(t, c, "Feed")
	assert.Equal(t, natsfeed.Counts{Taken: 1, Nacked: 1, MaxInFlight: 1}, c, "counts: the message given back, not terminated")
	time.Sleep(200 * time.Millisecond)
	assert.Empty(t, terminated(), "messages terminated by a graceful stop")
}

// TestDrainGivesBackFromAPausedPoolAndReturnsWhenThePauseEnds: messages
// Feed took wait in the queue of a paused pool. When Feed's ctx ends it
// gives them back at once (with WithCancelOnStop or without: their
// handlers have not started), but returns only once the pause ends, when
// their tasks reach a worker and are skipped: then it returns nil, none
// of them handled.
func TestDrainGivesBackFromAPausedPoolAndReturnsWhenThePauseEnds(t *testing.T) {
	for _, cancelOnStop := range []bool{false, true} {
		t.Run(fmt.Sprintf("cancelOnStop=%v", cancelOnStop), func(t *testing.T) {
			_, cons := setup(t, 30*time.Second, 10)
			pool := workerpool.New(2)
			defer pool.Stop()
			pauseCtx, endPause := context.WithCancel(context.Background())
			defer endPause()
			pool.Pause(pauseCtx) // no task before it: returns at once, then holds
			ctx, cancel := context.WithCancel(context.Background())
			stats := new(natsfeed.Stats)
			opts := []natsfeed.Option{natsfeed.WithStats(stats), natsfeed.WithFetchWait(200 * time.Millisecond)}
			if cancelOnStop {
				opts = append(opts, natsfeed.WithCancelOnStop())
			}
			var handled atomic.Int64
			wait := runGuarded(ctx, pool, cons, func(context.Context, jetstream.Msg) error { handled.Add(1); return nil }, opts...)
			eventually(t, func() bool { return stats.Counts().InFlight == 4 }, "4 messages held by the paused pool: the default bound")
			cancel()
			eventually(t, func() bool { return stats.Counts().Nacked == 4 }, "the 4 messages given back while the pool is paused")
			_, returned := wait(200 * time.Millisecond)
			assert.False(t, returned, "Feed returned while the paused pool held its tasks")
			endPause()
			err, returned := wait(time.Minute)
			require.True(t, returned, "Feed returned once the pause ended")
			require.NoError(t, err, "Feed")
			assert.Equal(t, natsfeed.Counts{Taken: 4, Nacked: 4, MaxInFlight: 4}, stats.Counts(), "counts")
			assert.Zero(t, handled.Load(), "messages handled")
		})
	}
}
