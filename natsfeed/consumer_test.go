package natsfeed_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFeedRefusesAnOrderedConsumer: Feed's doc names ordered consumers as
// ones it refuses at once (their acknowledgement is AckNone). An ordered
// consumer knows no info before its first fetch (CachedInfo is nil), so
// Feed must find out otherwise, and return an error before taking any
// message.
func TestFeedRefusesAnOrderedConsumer(t *testing.T) {
	s := startServer(t, "")
	js := connect(t, s.ClientURL())
	_, err := js.CreateOrUpdateStream(context.Background(), jobsConfig)
	require.NoError(t, err, "stream")
	publish(t, js, 5)
	cons, err := js.OrderedConsumer(context.Background(), "JOBS", jetstream.OrderedConsumerConfig{})
	require.NoError(t, err, "ordered consumer")
	pool := workerpool.New(2)
	defer pool.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	stats := new(natsfeed.Stats)
	var errs reportedErrors
	wait := runGuarded(ctx, pool, cons, func(context.Context, jetstream.Msg) error { return nil },
		natsfeed.WithStats(stats), natsfeed.WithErrorHandler(errs.handler), natsfeed.WithFetchWait(100*time.Millisecond))
	err, returned := wait(time.Minute)
	require.True(t, returned, "Feed returned")
	assert.Error(t, err, "Feed on an ordered consumer (AckNone); counts %+v, %d errors reported, the first %v",
		stats.Counts(), len(errs.all()), first(errs.all()))
	assert.Zero(t, stats.Counts().Taken, "messages taken from an ordered consumer")
}

// TestFeedRefusesAnAckNoneConsumer: Feed serves only a consumer with
// explicit acknowledgement. Given one with AckNone, for which the server
// never confirms an acknowledgement, it returns an error.
func TestFeedRefusesAnAckNoneConsumer(t *testing.T) {
	_, cons := setupWith(t, jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy, AckWait: time.Second}, 1)
	pool := workerpool.New(2)
	defer pool.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var errs reportedErrors
	stats := new(natsfeed.Stats)
	wait := runGuarded(ctx, pool, cons, func(context.Context, jetstream.Msg) error { return nil },
		natsfeed.WithStats(stats), natsfeed.WithErrorHandler(errs.handler))
	err, ok := wait(time.Minute)
	require.True(t, ok, "Feed returned")
	t.Logf("counts %+v, errors %d", stats.Counts(), len(errs.all()))
	assert.Error(t, err, "Feed on a consumer without explicit acks")
}

// TestFeedRefusesAnAckAllConsumer: as one with AckNone, Feed refuses a
// consumer with AckAll, where acknowledging one message acknowledges every
// earlier one, also those still running or about to be nak'd on other
// workers: it returns an error.
func TestFeedRefusesAnAckAllConsumer(t *testing.T) {
	_, cons := setupWith(t, jetstream.ConsumerConfig{AckPolicy: jetstream.AckAllPolicy}, 1)
	pool := workerpool.New(2)
	defer pool.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	wait := runGuarded(ctx, pool, cons, func(context.Context, jetstream.Msg) error { return nil })
	err, ok := wait(time.Minute)
	require.True(t, ok, "Feed returned")
	assert.Error(t, err, "Feed on a consumer with AckAll")
}

// TestFeedRefusesAConsumerWithPriorityGroups: a consumer with priority
// groups (pinned client or overflow) takes only pull requests that name a
// group, which Feed's do not: Feed refuses it at once, with an error that
// says so.
func TestFeedRefusesAConsumerWithPriorityGroups(t *testing.T) {
	_, cons := setupWith(t, jetstream.ConsumerConfig{
		AckPolicy: jetstream.AckExplicitPolicy, PriorityPolicy: jetstream.PriorityPolicyPinned,
		PriorityGroups: []string{"jobs"}, PinnedTTL: time.Minute,
	}, 3)
	pool := workerpool.New(2)
	defer pool.Stop()
	err := natsfeed.Feed(context.Background(), pool, cons, func(context.Context, jetstream.Msg) error { return nil })
	require.Error(t, err, "Feed")
	assert.Contains(t, err.Error(), "has priority groups, which Feed's pull requests cannot name", "Feed's error")
}

// first returns the first of errs, or nil.
func first(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errs[0]
}

// TestFeedFitsTheConsumersMaxWaiting: Feed caps a pull request at the
// consumer's MaxRequestBatch, so a bound above it takes several requests
// out at once; the consumer's MaxWaiting caps how many the server keeps.
// Feed must keep within it: a request beyond it is refused ("Exceeded
// MaxWaiting"), reported, and its places stay taken for the fetch wait.
func TestFeedFitsTheConsumersMaxWaiting(t *testing.T) {
	const n = 200
	// Feed keeps two requests out at most: MaxWaiting 1 is below that.
	for _, maxWaiting := range []int{1, 2} {
		t.Run(fmt.Sprint("MaxWaiting ", maxWaiting), func(t *testing.T) {
			_, cons := setupWith(t, jetstream.ConsumerConfig{
				AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxRequestBatch: 1, MaxWaiting: maxWaiting,
			}, n)
			pool := workerpool.New(4) // default bound 8: 8 requests of 1
			defer pool.Stop()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stats := new(natsfeed.Stats)
			var errs reportedErrors
			wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error { return nil },
				natsfeed.WithStats(stats), natsfeed.WithErrorHandler(errs.handler))
			eventually(t, func() bool { return stats.Counts().Acked == n }, "every message acked")
			cancel()
			require.NoError(t, wait(), "Feed")
			assert.Zero(t, errs.count("Exceeded MaxWaiting"), "pull requests refused for MaxWaiting; the first error %v", first(errs.all()))
		})
	}
}

// TestFeedAckWaitLongerThanAHandlerSuffices: the package doc tells the
// user to make the consumer's AckWait "longer than a handler runs, or use
// WithProgress". With fetching ahead, a message also waits in the pool's
// queue for the one before it, unbeaten, and its AckWait runs from its
// arrival: at the default bound (twice the pool) a handler of 0.6 of
// AckWait makes the server redeliver the queued message while it runs,
// and it is handled twice. Either Feed keeps the queued messages alive, or
// the doc states the real rule (AckWait longer than the queue wait and the
// run together).
func TestFeedAckWaitLongerThanAHandlerSuffices(t *testing.T) {
	const n = 8
	_, cons := setup(t, time.Second, n)
	pool := workerpool.New(2) // default bound 4: two running, two waiting
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stats := new(natsfeed.Stats)
	var mu sync.Mutex
	runs := map[int]int{}
	wait := run(ctx, pool, cons, func(_ context.Context, msg jetstream.Msg) error {
		mu.Lock()
		runs[job(msg)]++
		mu.Unlock()
		time.Sleep(600 * time.Millisecond) // well within AckWait (1s)
		return nil
	}, natsfeed.WithStats(stats), natsfeed.WithErrorHandler(func(error) {}))
	eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(runs) == n && stats.Counts().InFlight == 0 }, "every job handled")
	time.Sleep(1500 * time.Millisecond) // any redelivery comes within AckWait
	cancel()
	require.NoError(t, wait(), "Feed")
	mu.Lock()
	defer mu.Unlock()
	twice := 0
	for _, k := range runs {
		if k > 1 {
			twice++
		}
	}
	assert.Zero(t, twice, "jobs handled more than once with handlers of 0.6 AckWait; counts %+v", stats.Counts())
	assert.Zero(t, stats.Counts().Redelivered, "redeliveries")
}

// TestFeedRefusesProgressNotBelowTheConsumersAckWait: beats every period
// of AckWait or longer come after the server has redelivered the message
// (its AckWait restarts only at a beat), and WithProgress replaces the
// beats that keep a message alive while it waits in the pool's queue: with
// AckWait 1s, WithProgress(time.Hour), one worker, a bound of 8 and
// handlers of 300ms, the server redelivers the queued messages and a
// third of the jobs run twice, where without WithProgress none does. Feed
// refuses such a period, as it refuses other bad options, before taking
// any message; a period below AckWait is taken.
func TestFeedRefusesProgressNotBelowTheConsumersAckWait(t *testing.T) {
	_, cons := setupWith(t, jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Second}, 5)
	pool := workerpool.New(1)
	defer pool.Stop()
	h := func(context.Context, jetstream.Msg) error { return nil }
	for _, every := range []time.Duration{time.Second, time.Hour} {
		err, returned := runGuarded(context.Background(), pool, cons, h, natsfeed.WithProgress(every))(10 * time.Second)
		require.True(t, returned, "Feed with WithProgress(%v) returned", every)
		assert.EqualError(t, err, fmt.Sprintf("natsfeed: WithProgress(%v): every must be below the AckWait of consumer workers (1s)", every), "WithProgress(%v)", every)
	}
	assert.Equal(t, uint64(0), info(t, cons).Delivered.Consumer, "messages delivered")

	ctx, cancel := context.WithCancel(context.Background())
	stats := new(natsfeed.Stats)
	wait := run(ctx, pool, cons, h, natsfeed.WithStats(stats), natsfeed.WithProgress(999*time.Millisecond))
	eventually(t, func() bool { return stats.Counts().Acked == 5 }, "every job acked under WithProgress(999ms)")
	cancel()
	require.NoError(t, wait(), "Feed with WithProgress(999ms)")
}

// TestFeedServesAConsumerWhoseMaxAckPendingIsBelowTheBound: a consumer
// whose MaxAckPending (2) is below the feed's bound (8, twice a pool of
// 4) holds back what the pull requests ask for beyond it: the server
// never counts more than 2 pending, the pull requests wait for the
// acknowledgements instead of failing (no error reported), every job is
// handled once, and Feed returns once its ctx ends.
func TestFeedServesAConsumerWhoseMaxAckPendingIsBelowTheBound(t *testing.T) {
	const n = 200
	_, cons := setupWith(t, jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxAckPending: 2}, n)
	pool := workerpool.New(4)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stats := new(natsfeed.Stats)
	var errs reportedErrors
	var mu sync.Mutex
	runs := map[int]int{}
	wait := run(ctx, pool, cons, func(_ context.Context, msg jetstream.Msg) error {
		mu.Lock()
		runs[job(msg)]++
		mu.Unlock()
		time.Sleep(time.Millisecond)
		return nil
	}, natsfeed.WithStats(stats), natsfeed.WithErrorHandler(errs.handler))
	maxPending := 0
	eventually(t, func() bool {
		maxPending = max(maxPending, info(t, cons).NumAckPending)
		return stats.Counts().Acked == n
	}, "every job acked")
	cancel()
	require.NoError(t, wait(), "Feed")
	assertSettled(t, stats.Counts(), "Feed")
	assert.LessOrEqual(t, maxPending, 2, "NumAckPending sampled on the server")
	// The feed may count a few more than the server: a confirmed
	// acknowledgement leaves InFlight when its goroutine has read the
	// confirmation, and the message the server sends on it can come first.
	assert.LessOrEqual(t, stats.Counts().MaxInFlight, int64(8), "MaxInFlight: within the feed's bound")
	assert.Empty(t, errs.all(), "errors reported")
	mu.Lock()
	defer mu.Unlock()
	assert.Len(t, runs, n, "jobs handled")
	for id, k := range runs {
		require.Equal(t, 1, k, "runs of job %d", id)
	}
}

// TestFeedAcksEveryMessageUnderAMaxRequestBatchBelowThePoolsSize: a
// consumer refuses a pull request for more messages than its
// MaxRequestBatch ("Exceeded MaxRequestBatch"). Feed asks for no more than
// that in one request, also when the pool is larger (8 workers against a
// MaxRequestBatch of 2, a fetch wait of 200ms): every message is acked
// within 10s, and the counts add up.
func TestFeedAcksEveryMessageUnderAMaxRequestBatchBelowThePoolsSize(t *testing.T) {
	_, cons := setupWith(t, jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, MaxRequestBatch: 2}, 20)
	pool := workerpool.New(8)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	var errs reportedErrors
	stats := new(natsfeed.Stats)
	wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error { return nil },
		natsfeed.WithStats(stats), natsfeed.WithErrorHandler(errs.handler), natsfeed.WithFetchWait(200*time.Millisecond))
	ok := assert.Eventually(t, func() bool { return stats.Counts().Acked == 20 }, 10*time.Second, 5*time.Millisecond, "20 messages acked")
	cancel()
	require.NoError(t, wait(), "Feed")
	if !ok {
		t.Logf("errors reported: %d, first: %v", len(errs.all()), errs.all()[:min(1, len(errs.all()))])
	}
	assertSettled(t, stats.Counts(), "Feed")
}

// TestFeedWaitsNoLongerThanTheConsumersMaxRequestExpires: a consumer
// refuses a pull request that would wait longer than its
// MaxRequestExpires ("Exceeded MaxRequestExpires"). Feed shortens its
// fetch wait (1s by default) to the consumer's (300ms here), so that its
// requests are taken: every message is acked within 5s.
func TestFeedWaitsNoLongerThanTheConsumersMaxRequestExpires(t *testing.T) {
	_, cons := setupWith(t, jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, MaxRequestExpires: 300 * time.Millisecond}, 5)
	pool := workerpool.New(2)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	stats := new(natsfeed.Stats)
	var errs reportedErrors
	wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error { return nil },
		natsfeed.WithStats(stats), natsfeed.WithErrorHandler(errs.handler))
	ok := assert.Eventually(t, func() bool { return stats.Counts().Acked == 5 }, 5*time.Second, 5*time.Millisecond,
		"5 messages acked with the default fetch wait (1s) and MaxRequestExpires 300ms")
	cancel()
	require.NoError(t, wait(), "Feed")
	if !ok && len(errs.all()) > 0 {
		t.Logf("errors reported: %d, the first: %v", len(errs.all()), errs.all()[0])
	}
}
