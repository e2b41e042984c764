package natsfeed_test

import (
	"context"
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
