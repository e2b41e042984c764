package natsfeed_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFeedRefusesAZeroPool: a WorkerPool not made by New is not usable
// (its doc says so); its Size is 0, so Feed's default bound is 0 and it
// would sit until its ctx ends taking nothing, and return nil, as if the
// stream were empty (or, since Size reads a setting New makes, panic).
// Bad input gets a clear error at once.
func TestFeedRefusesAZeroPool(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	stats := new(natsfeed.Stats)
	start := time.Now()
	wait := runGuarded(ctx, new(workerpool.WorkerPool), cons, func(context.Context, jetstream.Msg) error { return nil },
		natsfeed.WithStats(stats))
	err, returned := wait(time.Minute)
	require.True(t, returned, "Feed returned")
	// runGuarded turns a panic into an error too: the error must name the
	// fault, not be a nil dereference in the pool.
	assert.ErrorContains(t, err, "not made by workerpool.New", "Feed on a zero WorkerPool (returned after %v, counts %+v)", time.Since(start).Round(time.Millisecond), stats.Counts())
	assert.Zero(t, stats.Counts().Taken, "messages taken")
}

// TestFeedSettlesWhenThePolicyCallsGoexit: a backoff policy that calls
// runtime.Goexit (a test's policy calling t.FailNow, say) ends the worker's
// call like a panic does. A panicking policy is reported and its message
// nak'd with the fetch wait; a policy's Goexit cannot be recovered, and
// the nak on the way out asks the same policy again: the message must
// still be settled and counted, never left to AckWait.
func TestFeedSettlesWhenThePolicyCallsGoexit(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 3)
	pool := workerpool.New(2)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stats := new(natsfeed.Stats)
	wait := runGuarded(ctx, pool, cons, func(context.Context, jetstream.Msg) error { return errors.New("fails") },
		natsfeed.WithStats(stats), natsfeed.WithErrorHandler(func(error) {}),
		natsfeed.WithBackoff(func(int, error) (time.Duration, bool) { runtime.Goexit(); return 0, true }))
	ok := assert.Eventually(t, func() bool { return stats.Counts().Taken >= 3 && stats.Counts().InFlight == 0 }, 5*time.Second, 5*time.Millisecond,
		"every message taken settled")
	cancel()
	_, returned := wait(10 * time.Second)
	assert.True(t, returned, "Feed returned")
	if ok && returned {
		assertSettled(t, stats.Counts(), "Feed")
	}
	t.Logf("counts %+v", stats.Counts())
}

// TestFeedSettlesWhenThePolicyCallsGoexitAfterAPanic: a handler panics,
// and the backoff policy asked for the panicked run's delay calls
// runtime.Goexit: each message is still nak'd (with the fetch wait as
// delay) and counted, the policy asked once for each run.
func TestFeedSettlesWhenThePolicyCallsGoexitAfterAPanic(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 3)
	pool := workerpool.New(2)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stats := new(natsfeed.Stats)
	var ran, asked atomic.Int64
	wait := runGuarded(ctx, pool, cons, func(context.Context, jetstream.Msg) error { ran.Add(1); panic("handler bug") },
		natsfeed.WithStats(stats), natsfeed.WithErrorHandler(func(error) {}), natsfeed.WithFetchWait(time.Second),
		natsfeed.WithBackoff(func(int, error) (time.Duration, bool) { asked.Add(1); runtime.Goexit(); return 0, true }))
	ok := assert.Eventually(t, func() bool { return stats.Counts().Nacked >= 3 && stats.Counts().InFlight == 0 }, 5*time.Second, 5*time.Millisecond,
		"every message nak'd")
	cancel()
	_, returned := wait(10 * time.Second)
	assert.True(t, returned, "Feed returned")
	c := stats.Counts()
	if ok && returned {
		assertSettled(t, c, "Feed")
		assert.Equal(t, c.Taken, c.Nacked, "every delivery nak'd: %+v", c)
	}
	// A redelivery (the naks' delay is the fetch wait, 1s) that comes as
	// ctx ends is given back by the drain without running: the policy is
	// asked for each run.
	assert.Equal(t, ran.Load(), asked.Load(), "policy calls: one per run (%d deliveries)", c.Taken)
}
