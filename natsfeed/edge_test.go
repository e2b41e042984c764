package natsfeed_test

// Adversarial edge tests of Feed's contract. Tests whose name is listed in
// the review report as failing show a bug of the current code; the others
// pin down behaviour that holds and that the other tests do not cover.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
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

// edgeErrors collects what Feed reports to its error handler.
type edgeErrors struct {
	mu   sync.Mutex
	errs []error
}

func (e *edgeErrors) handler(err error) {
	e.mu.Lock()
	e.errs = append(e.errs, err)
	e.mu.Unlock()
}

func (e *edgeErrors) all() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]error(nil), e.errs...)
}

// count returns how many reported errors contain s.
func (e *edgeErrors) count(s string) int {
	n := 0
	for _, err := range e.all() {
		if strings.Contains(err.Error(), s) {
			n++
		}
	}
	return n
}

// edgeBalanced checks the Stats invariant of a returned Feed.
func edgeBalanced(t *testing.T, c natsfeed.Counts) {
	t.Helper()
	assert.Equal(t, c.Taken, c.Acked+c.Naked+c.Terminated+c.Unsettled, "Taken == Acked+Naked+Terminated+Unsettled once Feed returned: %+v", c)
	assert.Zero(t, c.InFlight, "InFlight once Feed returned: %+v", c)
}

// edgeRun starts Feed with a panic guard: a panic out of Feed is returned
// as an error rather than crashing the test binary.
func edgeRun(ctx context.Context, pool *workerpool.WorkerPool, cons jetstream.Consumer, h natsfeed.Handler, opts ...natsfeed.Option) (wait func(time.Duration) (error, bool)) {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("Feed panicked: %v", r)
			}
		}()
		done <- natsfeed.Feed(ctx, pool, cons, h, opts...)
	}()
	return func(d time.Duration) (error, bool) {
		select {
		case err := <-done:
			return err, true
		case <-time.After(d):
			return nil, false
		}
	}
}

// TestEdgeRefusedMessagesDoNotSpin: the pool refuses every message (its
// worker and its one place are taken by other work, under Reject). Each
// refused message is nak'd with the fetch wait as its delay "so that the
// feed does not spin on it", but the fetch loop asks for the next message
// at once: with a backlog it churns through the whole stream at the speed
// of a round trip, reporting and nak'ing every message (and burning a
// delivery of each: with MaxDeliver set, messages die without ever having
// run).
func TestEdgeRefusedMessagesDoNotSpin(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 300)
	pool := workerpool.New(1, workerpool.WithMaxWaiting(1, workerpool.Reject))
	defer pool.Stop()
	busy := make(chan struct{})
	defer close(busy)
	require.NoError(t, pool.Do(func() { <-busy }), "busy task")
	require.NoError(t, pool.Do(func() { <-busy }), "queued task")
	ctx, cancel := context.WithCancel(context.Background())
	var errs edgeErrors
	stats := new(natsfeed.Stats)
	wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error { return nil },
		natsfeed.WithErrorHandler(errs.handler), natsfeed.WithStats(stats), natsfeed.WithFetchWait(time.Second))
	time.Sleep(1500 * time.Millisecond)
	cancel()
	require.NoError(t, wait(), "Feed")
	c := stats.Counts()
	edgeBalanced(t, c)
	// Over 1.5s with a fetch wait of 1s, a feed that pauses a fetch wait
	// after a refusal takes a handful of messages, not the stream.
	assert.LessOrEqual(t, c.Taken, int64(10), "messages taken (and refused) in 1.5s with the pool refusing everything: %+v", c)
	assert.LessOrEqual(t, errs.count("not run"), 10, "refusals reported in 1.5s")
}

// TestEdgePanickingBackoffPolicy: a backoff policy that panics leaves the
// message unsettled and uncounted: Feed returns with InFlight 1 and
// Taken != Acked+Naked+Terminated+Unsettled, and the error handler never
// hears of it (the pool's own contract: "a RetryPolicy's panic is always
// recovered").
func TestEdgePanickingBackoffPolicy(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 1)
	var panics atomic.Int64
	pool := workerpool.New(2, workerpool.WithPanicHandler(func(any) { panics.Add(1) }))
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	var errs edgeErrors
	stats := new(natsfeed.Stats)
	var ran atomic.Int64
	wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error {
		ran.Add(1)
		return errors.New("transient")
	}, natsfeed.WithBackoff(func(int, error) (time.Duration, bool) { panic("policy bug") }),
		natsfeed.WithErrorHandler(errs.handler), natsfeed.WithStats(stats))
	eventually(t, func() bool { return panics.Load() >= 1 }, "the policy's panic reached the pool")
	cancel()
	require.NoError(t, wait(), "Feed")
	c := stats.Counts()
	edgeBalanced(t, c)
	assert.NotEmpty(t, errs.all(), "the unsettled message reported to the error handler")
}

// TestEdgeHugePoolSize: a pool of math.MaxInt workers (New accepts it;
// workers start only as tasks arrive) makes Feed ask Fetch for
// math.MaxInt messages, and the client's make(chan, batch) panics in
// Feed's goroutine ("makechan: size out of range"). A pool of 1<<32 would
// not even panic: the process dies out of memory.
func TestEdgeHugePoolSize(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 3)
	pool := workerpool.New(math.MaxInt)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stats := new(natsfeed.Stats)
	wait := edgeRun(ctx, pool, cons, func(context.Context, jetstream.Msg) error { return nil }, natsfeed.WithStats(stats))
	require.Eventually(t, func() bool { return stats.Counts().Acked == 3 }, 10*time.Second, 5*time.Millisecond, "3 messages acked")
	cancel()
	err, ok := wait(time.Minute)
	require.True(t, ok, "Feed returned")
	require.NoError(t, err, "Feed")
}

// edgeConsumer creates the stream JOBS and a pull consumer of cfg on it
// (Durable "workers" unless set), on a server of its own, and publishes n
// jobs.
func edgeConsumer(t *testing.T, cfg jetstream.ConsumerConfig, n int) (jetstream.JetStream, jetstream.Consumer) {
	t.Helper()
	s := startServer(t, "")
	js := connect(t, s.ClientURL())
	st, err := js.CreateOrUpdateStream(context.Background(), jobsConfig)
	require.NoError(t, err, "stream")
	if cfg.Durable == "" {
		cfg.Durable = "workers"
	}
	cons, err := st.CreateOrUpdateConsumer(context.Background(), cfg)
	require.NoError(t, err, "consumer")
	publish(t, js, n)
	return js, cons
}

// TestEdgeMaxRequestBatch: a consumer whose MaxRequestBatch is below the
// pool's size refuses every pull request Feed sends ("Exceeded
// MaxRequestBatch"), so no message is ever handled.
func TestEdgeMaxRequestBatch(t *testing.T) {
	_, cons := edgeConsumer(t, jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, MaxRequestBatch: 2}, 20)
	pool := workerpool.New(8)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	var errs edgeErrors
	stats := new(natsfeed.Stats)
	wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error { return nil },
		natsfeed.WithStats(stats), natsfeed.WithErrorHandler(errs.handler), natsfeed.WithFetchWait(200*time.Millisecond))
	ok := assert.Eventually(t, func() bool { return stats.Counts().Acked == 20 }, 10*time.Second, 5*time.Millisecond, "20 messages acked")
	cancel()
	require.NoError(t, wait(), "Feed")
	if !ok {
		t.Logf("errors reported: %d, first: %v", len(errs.all()), errs.all()[:min(1, len(errs.all()))])
	}
	edgeBalanced(t, stats.Counts())
}

// TestEdgeLongPermanentReason: a handler's ErrPermanent error whose text is
// above the connection's max payload (1MB by default) becomes the term
// reason: TermWithReason fails to publish, the message is not terminated
// but left to AckWait, and is redelivered and handled again forever.
func TestEdgeLongPermanentReason(t *testing.T) {
	js, cons := setup(t, 30*time.Second, 1)
	terminated := advisories(t, js)
	pool := workerpool.New(2)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	var errs edgeErrors
	stats := new(natsfeed.Stats)
	big := strings.Repeat("x", 2<<20)
	wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error {
		return fmt.Errorf("bad input %s: %w", big, natsfeed.ErrPermanent)
	}, natsfeed.WithStats(stats), natsfeed.WithErrorHandler(errs.handler))
	eventually(t, func() bool { c := stats.Counts(); return c.Terminated+c.Unsettled == 1 }, "the message settled")
	cancel()
	require.NoError(t, wait(), "Feed")
	c := stats.Counts()
	edgeBalanced(t, c)
	assert.Equal(t, int64(1), c.Terminated, "terminated: %+v; errors: %d", c, len(errs.all()))
	if c.Terminated == 1 {
		eventually(t, func() bool { return len(terminated()) == 1 }, "a term advisory")
		for _, reason := range terminated() {
			assert.Contains(t, reason, "bad input", "reason")
		}
	}
	assert.Equal(t, 0, info(t, cons).NumAckPending, "unacked on the server")
}

// TestEdgeHugeNakDelay: a backoff policy may return any delay (a
// workerpool.Backoff with a large max does after some attempts). A delay
// that takes the server's redelivery time past year 2262 overflows its
// UnixNano and the message comes back at once instead of never: a hot
// loop of deliveries and naks.
func TestEdgeHugeNakDelay(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 1)
	pool := workerpool.New(2)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	stats := new(natsfeed.Stats)
	var runs atomic.Int64
	wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error {
		runs.Add(1)
		return errors.New("later")
	}, natsfeed.WithStats(stats), natsfeed.WithBackoff(func(int, error) (time.Duration, bool) {
		return time.Duration(math.MaxInt64), true
	}), natsfeed.WithFetchWait(100*time.Millisecond))
	eventually(t, func() bool { return runs.Load() >= 1 }, "the handler ran")
	time.Sleep(time.Second)
	cancel()
	require.NoError(t, wait(), "Feed")
	edgeBalanced(t, stats.Counts())
	assert.Equal(t, int64(1), runs.Load(), "runs of a message nak'd with a delay of ~292 years, within a second")
}

// TestEdgeNegativeNakDelay: a negative delay is a plain nak: the message
// comes back at once, and Feed settles each delivery.
func TestEdgeNegativeNakDelay(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 1)
	pool := workerpool.New(2)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	stats := new(natsfeed.Stats)
	wait := run(ctx, pool, cons, func(_ context.Context, msg jetstream.Msg) error {
		if delivered(msg) < 3 {
			return errors.New("again")
		}
		return nil
	}, natsfeed.WithStats(stats), natsfeed.WithBackoff(func(int, error) (time.Duration, bool) { return -time.Hour, true }))
	eventually(t, func() bool { return stats.Counts().Acked == 1 }, "acked on the third delivery")
	cancel()
	require.NoError(t, wait(), "Feed")
	c := stats.Counts()
	edgeBalanced(t, c)
	assert.Equal(t, natsfeed.Counts{Taken: 3, Redelivered: 2, Acked: 1, Naked: 2, MaxInFlight: 1}, c, "counts")
}

// TestEdgeAckNoneConsumer: Feed's contract asks for a consumer with
// explicit acknowledgement, and promises a clear error for bad input; a
// consumer with AckNone is accepted, and then every acknowledgement waits
// for a confirmation that never comes.
func TestEdgeAckNoneConsumer(t *testing.T) {
	_, cons := edgeConsumer(t, jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy, AckWait: time.Second}, 1)
	pool := workerpool.New(2)
	defer pool.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var errs edgeErrors
	stats := new(natsfeed.Stats)
	wait := edgeRun(ctx, pool, cons, func(context.Context, jetstream.Msg) error { return nil },
		natsfeed.WithStats(stats), natsfeed.WithErrorHandler(errs.handler))
	err, ok := wait(time.Minute)
	require.True(t, ok, "Feed returned")
	t.Logf("counts %+v, errors %d", stats.Counts(), len(errs.all()))
	assert.Error(t, err, "Feed on a consumer without explicit acks")
}

// TestEdgeAckAllConsumer: as TestEdgeAckNoneConsumer, for AckAll, where
// acknowledging one message acknowledges every earlier one, also those
// still running or about to be nak'd on other workers.
func TestEdgeAckAllConsumer(t *testing.T) {
	_, cons := edgeConsumer(t, jetstream.ConsumerConfig{AckPolicy: jetstream.AckAllPolicy}, 1)
	pool := workerpool.New(2)
	defer pool.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	wait := edgeRun(ctx, pool, cons, func(context.Context, jetstream.Msg) error { return nil })
	err, ok := wait(time.Minute)
	require.True(t, ok, "Feed returned")
	assert.Error(t, err, "Feed on a consumer with AckAll")
}

// edgeCountingConsumer counts the pull requests sent through it.
type edgeCountingConsumer struct {
	jetstream.Consumer
	fetches atomic.Int64
}

func (c *edgeCountingConsumer) Fetch(batch int, opts ...jetstream.FetchOpt) (jetstream.MessageBatch, error) {
	c.fetches.Add(1)
	return c.Consumer.Fetch(batch, opts...)
}

// TestEdgeMaxFetchWait: WithFetchWait accepts any positive duration. The
// largest (a natural "wait as long as it takes") overflows the client's
// own timer (FetchMaxWait + 1s), so every Fetch ends at once with no
// message and no error: Feed sends pull requests in a hot loop, each left
// waiting on the server for ~292 years, until the consumer's MaxWaiting
// (512) is full.
func TestEdgeMaxFetchWait(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 0)
	counting := &edgeCountingConsumer{Consumer: cons}
	pool := workerpool.New(2)
	defer pool.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var errs edgeErrors
	wait := edgeRun(ctx, pool, counting, func(context.Context, jetstream.Msg) error { return nil },
		natsfeed.WithFetchWait(time.Duration(math.MaxInt64)), natsfeed.WithErrorHandler(errs.handler))
	time.Sleep(1500 * time.Millisecond)
	n := counting.fetches.Load()
	// Feed may legitimately still be in its one pending fetch: it waits
	// for it to finish. Either way, it must not have sent many.
	assert.LessOrEqual(t, n, int64(5), "pull requests sent in 1.5s; %d errors reported", len(errs.all()))
	cancel()
	_, _ = wait(5 * time.Second)
}

// edgeGoroutines waits for the number of goroutines to come back to at
// most base, and fails with a dump of them if it does not.
func edgeGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Errorf("goroutines: %d, more than the %d before Feed:\n%s", runtime.NumGoroutine(), base, buf[:n])
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEdgePoolStopsUnderFeed stops the pool, in each of its three ways,
// while Feed has messages running, waiting in the queue and being
// acknowledged: Feed must return ErrStopped, every message it took must be
// acked or nak'd (none left to AckWait), its Stats balance, no goroutine of
// its stays behind, and a second feed then handles every other job.
func TestEdgePoolStopsUnderFeed(t *testing.T) {
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
			var errs edgeErrors
			wait := edgeRun(context.Background(), pool, cons, handler, natsfeed.WithStats(stats),
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
			edgeBalanced(t, c)
			assert.Zero(t, c.Unsettled, "unsettled: %+v, errors %v", c, errs.all())
			edgeGoroutines(t, base)
			// Acks are confirmed; naks are sent without waiting, so the
			// server may count them a moment later.
			eventually(t, func() bool { return info(t, cons).NumAckPending == 0 }, "nothing left pending on the server")

			// A second feed takes the rest, none of it a redelivery by
			// AckWait.
			pool2 := workerpool.New(4)
			defer pool2.Stop()
			ctx, cancel := context.WithCancel(context.Background())
			wait2 := run(ctx, pool2, cons, handler)
			eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) == n }, "every job handled")
			cancel()
			require.NoError(t, wait2(), "second Feed")
		})
	}
}

// TestEdgePoolStopsAndCtxEndsTogether races the pool's Stop with the
// cancellation of Feed's ctx, many times: Feed returns (nil or ErrStopped,
// nothing else), and its Stats balance.
func TestEdgePoolStopsAndCtxEndsTogether(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 2000)
	for i := range 20 {
		pool := workerpool.New(3)
		ctx, cancel := context.WithCancel(context.Background())
		stats := new(natsfeed.Stats)
		var errs edgeErrors
		wait := edgeRun(ctx, pool, cons, func(context.Context, jetstream.Msg) error { return nil },
			natsfeed.WithStats(stats), natsfeed.WithMaxInFlight(6), natsfeed.WithErrorHandler(errs.handler), natsfeed.WithFetchWait(100*time.Millisecond))
		eventually(t, func() bool { return stats.Counts().Taken >= int64(i) }, "messages taken")
		go cancel()
		pool.Stop()
		err, ok := wait(time.Minute)
		require.True(t, ok, "Feed returned")
		if err != nil {
			assert.ErrorIs(t, err, workerpool.ErrStopped, "Feed's error")
		}
		edgeBalanced(t, stats.Counts())
		assert.Zero(t, stats.Counts().Unsettled, "unsettled; errors %v", errs.all())
	}
}
