package natsfeed_test

// Adversarial edge tests of Feed's contract. Tests whose name is listed in
// the review report as failing show a bug of the current code; the others
// pin down behaviour that holds and that the other tests do not cover.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEdgeLongPermanentReason: a handler's permanent error whose text is
// above the connection's max payload (1MB by default) becomes the term
// reason: TermWithReason fails to publish, the message is not terminated
// but left to AckWait, and is redelivered and handled again forever.
func TestEdgeLongPermanentReason(t *testing.T) {
	js, cons := setup(t, 30*time.Second, 1)
	terminated := advisories(t, js)
	pool := workerpool.New(2)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	var errs reportedErrors
	stats := new(natsfeed.Stats)
	big := strings.Repeat("x", 2<<20)
	wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error {
		return workerpool.Permanent(fmt.Errorf("bad input %s", big))
	}, natsfeed.WithStats(stats), natsfeed.WithErrorHandler(errs.handler))
	eventually(t, func() bool { c := stats.Counts(); return c.Terminated+c.Unsettled == 1 }, "the message settled")
	cancel()
	require.NoError(t, wait(), "Feed")
	c := stats.Counts()
	assertSettled(t, c, "Feed")
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
	assertSettled(t, stats.Counts(), "Feed")
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
	assertSettled(t, c, "Feed")
	assert.Equal(t, natsfeed.Counts{Taken: 3, Redelivered: 2, Acked: 1, Nacked: 2, MaxInFlight: 1}, c, "counts")
}

// TestEdgeCanceledCtxTakesNothing: Feed with a ctx done already, or a
// deadline passed, returns nil at once and sends no pull request.
func TestEdgeCanceledCtxTakesNothing(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 5)
	counting := &countingConsumer{Consumer: cons}
	pool := workerpool.New(2)
	defer pool.Stop()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for name, ctx := range map[string]context.Context{"canceled": canceled, "deadline passed": expired} {
		stats := new(natsfeed.Stats)
		err, ok := runGuarded(ctx, pool, counting, func(context.Context, jetstream.Msg) error { return nil }, natsfeed.WithStats(stats))(time.Minute)
		require.True(t, ok, "%s: Feed returned", name)
		assert.NoError(t, err, "%s: Feed", name)
		assert.Zero(t, stats.Counts(), "%s: counts", name)
	}
	assert.Zero(t, counting.fetches.Load(), "pull requests")
	assert.Equal(t, uint64(0), info(t, cons).Delivered.Consumer, "delivered")
}

// edgeMark is an error with its own Permanent method, as net.Error has its
// own Timeout: Feed finds the mark as workerpool.Permanent's, whatever its
// type, and follows what it reports.
type edgeMark struct {
	msg       string
	permanent bool
}

func (e edgeMark) Error() string   { return e.msg }
func (e edgeMark) Permanent() bool { return e.permanent }

// TestEdgePermanentErrors: workerpool.Permanent, the pool's own "do not
// retry" mark, and any error with a Permanent method that reports true,
// found directly, through errors.Join or through several wraps,
// terminate the message with the error's text as the reason, whatever the
// backoff policy would say, and it is never redelivered. A Permanent
// method that reports false is no mark: that error naks as any other.
func TestEdgePermanentErrors(t *testing.T) {
	js, cons := setup(t, 30*time.Second, 6)
	terminated := advisories(t, js)
	pool := workerpool.New(4)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	stats := new(natsfeed.Stats)
	var policyCalls atomic.Int64
	wait := run(ctx, pool, cons, func(_ context.Context, msg jetstream.Msg) error {
		switch job(msg) {
		case 0:
			return errors.Join(errors.New("bad"), workerpool.Permanent(errors.New("for good")))
		case 1:
			return fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", workerpool.Permanent(errors.New("for good"))))
		case 2:
			return workerpool.Permanent(errors.New("pool's permanent"))
		case 3:
			return fmt.Errorf("outer: %w", edgeMark{"own mark", true})
		case 4:
			if delivered(msg) == 1 {
				return edgeMark{"no mark", false}
			}
		}
		return nil
	}, natsfeed.WithStats(stats), natsfeed.WithBackoff(func(int, error) (time.Duration, bool) {
		policyCalls.Add(1)
		return 0, true
	}))
	eventually(t, func() bool { c := stats.Counts(); return c.Terminated == 4 && c.Acked == 2 }, "4 terminated, 2 acked")
	cancel()
	require.NoError(t, wait(), "Feed")
	assert.Equal(t, natsfeed.Counts{Taken: 7, Redelivered: 1, Acked: 2, Nacked: 1, Terminated: 4, MaxInFlight: stats.Counts().MaxInFlight}, stats.Counts(), "counts")
	assert.Equal(t, int64(1), policyCalls.Load(), "backoff policy calls: the error whose Permanent reports false")
	eventually(t, func() bool { return len(terminated()) == 4 }, "4 term advisories")
	assert.Equal(t, map[uint64]string{
		1: "bad\nfor good",
		2: "outer: inner: for good",
		3: "pool's permanent",
		4: "outer: own mark",
	}, terminated(), "reasons")
}

// TestEdgeHandlerCtxCarriesValues: the handlers' ctx carries Feed's ctx's
// values, and (without WithCancelOnStop) outlives it.
func TestEdgeHandlerCtxCarriesValues(t *testing.T) {
	type key struct{}
	_, cons := setup(t, 30*time.Second, 1)
	pool := workerpool.New(1)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	var got atomic.Value
	stats := new(natsfeed.Stats)
	wait := run(ctx, pool, cons, func(hctx context.Context, msg jetstream.Msg) error {
		cancel()
		time.Sleep(50 * time.Millisecond)
		got.Store(fmt.Sprintf("%v %v", hctx.Value(key{}), hctx.Err()))
		return nil
	}, natsfeed.WithStats(stats))
	require.NoError(t, wait(), "Feed")
	assert.Equal(t, "v <nil>", got.Load(), "the handler's ctx: value and error after Feed's ctx ended")
	assert.Equal(t, natsfeed.Counts{Taken: 1, Acked: 1, MaxInFlight: 1}, stats.Counts(), "counts")
}
