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
			_, cons := edgeConsumer(t, jetstream.ConsumerConfig{
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
			wait := edgeRun(ctx, pool, cons, h, natsfeed.WithStats(stats),
				natsfeed.WithMaxInFlight(8), natsfeed.WithFetchWait(3*time.Second))
			eventually(t, func() bool { return stats.Counts().Taken == 1 }, "the message taken, waiting behind the busy worker")
			stop(cancel, pool)
			eventually(t, func() bool { return stats.Counts().Nacked >= 1 }, "the message given back")
			time.Sleep(200 * time.Millisecond) // room for the server to bring it back, if it does
			close(busy)
			_, returned := wait(time.Minute)
			require.True(t, returned, "Feed returned")
			c := stats.Counts()
			edgeBalanced(t, c)
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
			wait := edgeRun(ctx, pool, cons, func(context.Context, jetstream.Msg) error {
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
