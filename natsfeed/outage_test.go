package natsfeed_test

// The tests in this file take away what Feed talks to while it runs (its
// connection, its consumer or stream, the server): Feed reports and
// retries at the pace of its fetch wait, settles or gives up on what it
// holds, and returns once its ctx ends.

import (
	"context"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// setupFeedConn starts a server with the stream JOBS and the consumer
// workers (ackWait), publishes n jobs, and returns the server's URL, the
// test's JetStream client, and, for Feed, a JetStream client on a
// connection of its own, which the test may close, and the consumer as
// seen through it.
func setupFeedConn(t *testing.T, ackWait time.Duration, n int) (url string, js jetstream.JetStream, feedJS jetstream.JetStream, cons jetstream.Consumer) {
	t.Helper()
	s := startServer(t, "")
	js = connect(t, s.ClientURL())
	newConsumer(t, js, ackWait)
	publish(t, js, n)
	feedJS = connect(t, s.ClientURL())
	cons, err := feedJS.Consumer(context.Background(), "JOBS", "workers")
	require.NoError(t, err, "consumer on the feed's connection")
	return s.ClientURL(), js, feedJS, cons
}

// TestFeedThroughAClosedConnectionRetriesEveryFetchWaitAndLosesNothing:
// Feed's connection is closed while 4 handlers run. The failed fetches are
// reported and retried once every fetch wait (at most 8 in 1s at a fetch
// wait of 250ms: no hot loop), the acknowledgements give up at once (the
// connection is closed for good) and count as Unsettled, and Feed returns
// nil once its ctx ends. Nothing is lost: after AckWait the server
// redelivers the 4 to a feed on another connection, which acks all 10.
func TestFeedThroughAClosedConnectionRetriesEveryFetchWaitAndLosesNothing(t *testing.T) {
	const ackWait = 2 * time.Second
	_, js, feedJS, cons := setupFeedConn(t, ackWait, 10)
	counting := &countingConsumer{Consumer: cons}
	pool := workerpool.New(4)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	g, stats := newGate(), new(natsfeed.Stats)
	var errs reportedErrors
	wait := runGuarded(ctx, pool, counting, g.handler, natsfeed.WithStats(stats), natsfeed.WithErrorHandler(errs.handler),
		natsfeed.WithFetchWait(250*time.Millisecond), natsfeed.WithMaxInFlight(4))
	eventually(t, func() bool { return g.inside.Load() == 4 }, "4 handlers running")
	before := counting.fetches.Load()
	feedJS.Conn().Close()
	close(g.open)
	time.Sleep(time.Second)
	fetches := counting.fetches.Load() - before
	cancel()
	err, ok := wait(time.Minute)
	require.True(t, ok, "Feed returned")
	require.NoError(t, err, "Feed")
	c := stats.Counts()
	assertSettled(t, c, "Feed")
	assert.Equal(t, natsfeed.Counts{Taken: 4, Unsettled: 4, MaxInFlight: 4}, c, "counts")
	assert.LessOrEqual(t, fetches, int64(8), "pull requests tried in 1s on a closed connection, with a fetch wait of 250ms")
	assert.NotZero(t, errs.count("fetch"), "failed fetches reported")

	// Nothing was lost: another client gets all 10, the 4 as redeliveries.
	cons2, err := js.Consumer(context.Background(), "JOBS", "workers")
	require.NoError(t, err, "consumer")
	pool2 := workerpool.New(4)
	defer pool2.Stop()
	ctx2, cancel2 := context.WithCancel(context.Background())
	stats2 := new(natsfeed.Stats)
	wait2 := run(ctx2, pool2, cons2, func(context.Context, jetstream.Msg) error { return nil }, natsfeed.WithStats(stats2))
	eventually(t, func() bool { return stats2.Counts().Acked == 10 }, "all 10 acked by a second feed")
	cancel2()
	require.NoError(t, wait2(), "second Feed")
	assert.Equal(t, int64(4), stats2.Counts().Redelivered, "redelivered")
}

// TestFeedThroughADeletedConsumerOrStreamRetriesEveryFetchWait: the
// consumer (or its stream) is deleted while Feed runs with messages in its
// handlers. Fetches fail and are retried once every fetch wait (at most 8
// in 1s at a fetch wait of 250ms: no hot loop), and Feed returns nil once
// its ctx ends and the acknowledgements have given up (by AckWait at the
// latest), its counts adding up.
func TestFeedThroughADeletedConsumerOrStreamRetriesEveryFetchWait(t *testing.T) {
	for _, what := range []string{"consumer", "stream"} {
		t.Run(what, func(t *testing.T) {
			const ackWait = 2 * time.Second
			_, js, _, cons := setupFeedConn(t, ackWait, 10)
			counting := &countingConsumer{Consumer: cons}
			pool := workerpool.New(4)
			defer pool.Stop()
			ctx, cancel := context.WithCancel(context.Background())
			g, stats := newGate(), new(natsfeed.Stats)
			var errs reportedErrors
			wait := runGuarded(ctx, pool, counting, g.handler, natsfeed.WithStats(stats), natsfeed.WithErrorHandler(errs.handler),
				natsfeed.WithFetchWait(250*time.Millisecond))
			eventually(t, func() bool { return g.inside.Load() == 4 }, "4 handlers running")
			if what == "consumer" {
				require.NoError(t, js.DeleteConsumer(context.Background(), "JOBS", "workers"), "delete consumer")
			} else {
				require.NoError(t, js.DeleteStream(context.Background(), "JOBS"), "delete stream")
			}
			before := counting.fetches.Load()
			close(g.open)
			time.Sleep(time.Second)
			fetches := counting.fetches.Load() - before
			cancel()
			start := time.Now()
			err, ok := wait(time.Minute)
			require.True(t, ok, "Feed returned")
			require.NoError(t, err, "Feed")
			t.Logf("Feed returned %v after its ctx ended; counts %+v; %d errors, the first %v", time.Since(start), stats.Counts(), len(errs.all()), errs.all()[:min(1, len(errs.all()))])
			assertSettled(t, stats.Counts(), "Feed")
			assert.LessOrEqual(t, fetches, int64(8), "pull requests in 1s, with a fetch wait of 250ms")
		})
	}
}

// TestFeedThroughAServerShutdownRetriesEveryFetchWait: the server shuts
// down while 4 handlers run. Fetches and acknowledgements fail while the
// client tries to reconnect; fetches are retried once every fetch wait (at
// most 8 in 1s at a fetch wait of 250ms: no hot loop), and Feed returns
// nil once its ctx ends and the acknowledgements have given up by
// AckWait, the 4 messages counted Unsettled.
func TestFeedThroughAServerShutdownRetriesEveryFetchWait(t *testing.T) {
	const ackWait = 2 * time.Second
	s := startServer(t, "")
	js := connect(t, s.ClientURL())
	cons := newConsumer(t, js, ackWait)
	publish(t, js, 10)
	counting := &countingConsumer{Consumer: cons}
	pool := workerpool.New(4)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	g, stats := newGate(), new(natsfeed.Stats)
	var errs reportedErrors
	wait := runGuarded(ctx, pool, counting, g.handler, natsfeed.WithStats(stats), natsfeed.WithErrorHandler(errs.handler),
		natsfeed.WithFetchWait(250*time.Millisecond), natsfeed.WithMaxInFlight(4))
	eventually(t, func() bool { return g.inside.Load() == 4 }, "4 handlers running")
	s.Shutdown()
	s.WaitForShutdown()
	before := counting.fetches.Load()
	close(g.open)
	time.Sleep(time.Second)
	fetches := counting.fetches.Load() - before
	cancel()
	err, ok := wait(time.Minute)
	require.True(t, ok, "Feed returned")
	require.NoError(t, err, "Feed")
	c := stats.Counts()
	assertSettled(t, c, "Feed")
	assert.Equal(t, natsfeed.Counts{Taken: 4, Unsettled: 4, MaxInFlight: 4}, c, "counts")
	assert.LessOrEqual(t, fetches, int64(8), "pull requests in 1s, with a fetch wait of 250ms")
}
