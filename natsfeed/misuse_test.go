package natsfeed_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
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

// TestFeedRefusesATypedNilConsumer: a nil pointer of a type that
// implements jetstream.Consumer (a wrapper of the caller's) is a nil
// consumer too: Feed refuses it with an error, and does not panic.
func TestFeedRefusesATypedNilConsumer(t *testing.T) {
	pool := workerpool.New(1)
	defer pool.Stop()
	var cons *countingConsumer
	err, ok := runGuarded(context.Background(), pool, cons, func(context.Context, jetstream.Msg) error { return nil })(10 * time.Second)
	require.True(t, ok, "Feed returned")
	assert.Error(t, err, "Feed with a typed nil consumer")
	assert.NotContains(t, fmt.Sprint(err), "panicked", "Feed's error")
}

// TestFeedNaksWithTheFetchWaitAndReportsWhenThePolicyPanics: a backoff
// policy that panics leaves no message unsettled or uncounted: each is
// nak'd with the fetch wait as its delay, and the error handler hears of
// it with the *PanicError and its value (the task's handle recovers the
// panic, so the pool's Panic hook does not).
func TestFeedNaksWithTheFetchWaitAndReportsWhenThePolicyPanics(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 1)
	var panics atomic.Int64
	pool := workerpool.New(2, workerpool.WithHooks(workerpool.Hooks{Panic: func(any) { panics.Add(1) }}))
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	var errs reportedErrors
	stats := new(natsfeed.Stats)
	var ran atomic.Int64
	wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error {
		ran.Add(1)
		return errors.New("transient")
	}, natsfeed.WithBackoff(func(int, error) (time.Duration, bool) { panic("policy bug") }),
		natsfeed.WithErrorHandler(errs.handler), natsfeed.WithStats(stats))
	eventually(t, func() bool { return errs.count("backoff policy did not return") >= 1 }, "the policy's panic reported")
	cancel()
	require.NoError(t, wait(), "Feed")
	c := stats.Counts()
	assertSettled(t, c, "Feed")
	assert.Equal(t, c.Taken, c.Nacked, "every delivery nak'd: %+v", c)
	assert.Zero(t, panics.Load(), "panics passed to the pool's Panic hook")
	for _, err := range errs.all() {
		if strings.Contains(err.Error(), "backoff policy did not return") {
			var pe *workerpool.PanicError
			if assert.ErrorAs(t, err, &pe, "reported with the *PanicError") {
				assert.Equal(t, "policy bug", pe.Value, "the panic's value")
			}
			assert.Contains(t, err.Error(), "nak'd with the fetch wait as delay", "the report")
		}
	}
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

// TestFeedCountsAHandlersOwnAckAndReportsTheNakItMakesFail: a handler
// must not settle msg, and one that does still leaves every message
// settled and counted: an acknowledgement of its own (Ack or DoubleAck)
// followed by nil counts as acked, with no error, and so does a beat
// (InProgress) followed by nil; an acknowledgement followed by an error
// makes Feed's nak fail ("already acknowledged"), which is reported once.
// Nothing hangs, the counts add up, and the server holds nothing
// unacknowledged.
func TestFeedCountsAHandlersOwnAckAndReportsTheNakItMakesFail(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 4)
	pool := workerpool.New(4)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	stats := new(natsfeed.Stats)
	var errs reportedErrors
	wait := run(ctx, pool, cons, func(hctx context.Context, msg jetstream.Msg) error {
		switch job(msg) {
		case 0:
			return msg.Ack()
		case 1:
			return msg.DoubleAck(hctx)
		case 2:
			require.NoError(t, msg.InProgress(), "InProgress")
			return nil
		default:
			_ = msg.Ack()
			return errors.New("failed after acking")
		}
	}, natsfeed.WithStats(stats), natsfeed.WithErrorHandler(errs.handler))
	eventually(t, func() bool { c := stats.Counts(); return c.Acked+c.Unsettled == 4 }, "4 settled")
	cancel()
	require.NoError(t, wait(), "Feed")
	c := stats.Counts()
	assertSettled(t, c, "Feed")
	assert.Equal(t, int64(3), c.Acked, "acked: %+v", c)
	assert.Equal(t, 1, errs.count("already acknowledged"), "the failed nak reported: %v", errs.all())
	assert.Equal(t, 0, info(t, cons).NumAckPending, "unacked on the server")
}

// nilPointerError is an error type whose Error method needs a non-nil
// receiver: a nil *nilPointerError returned as an error panics when
// printed.
type nilPointerError struct{ msg string }

func (e *nilPointerError) Error() string { return e.msg }

// TestFeedTerminatesWithAFixedReasonAnErrorThatCannotBePrinted: a
// handler returns a typed nil error (a nil pointer in an error, a classic
// Go mistake) whose Error method panics, and the policy gives up: the
// message is terminated with the fixed reason "natsfeed: the handler's
// error cannot be printed", nothing panics (neither the pool's Panic hook
// nor its Status.Panicked hears of one), and the counts add up.
func TestFeedTerminatesWithAFixedReasonAnErrorThatCannotBePrinted(t *testing.T) {
	js, cons := setup(t, 30*time.Second, 1)
	terminated := advisories(t, js)
	var panics atomic.Int64
	pool := workerpool.New(2, workerpool.WithHooks(workerpool.Hooks{Panic: func(any) { panics.Add(1) }}))
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	stats := new(natsfeed.Stats)
	wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error {
		var e *nilPointerError
		return e
	}, natsfeed.WithStats(stats),
		natsfeed.WithBackoff(func(int, error) (time.Duration, bool) { return 0, false }))
	eventually(t, func() bool { return stats.Counts().Terminated == 1 }, "the message terminated")
	cancel()
	require.NoError(t, wait(), "Feed")
	assertSettled(t, stats.Counts(), "Feed")
	assert.Equal(t, int64(0), panics.Load(), "panics")
	assert.Zero(t, pool.Status().Panicked, "runs that panicked")
	eventually(t, func() bool { return len(terminated()) == 1 }, "a term advisory")
	assert.Equal(t, map[uint64]string{1: "natsfeed: the handler's error cannot be printed"}, terminated(), "the reason")
}

// TestFeedOnTheOnlyWorkerOfItsPoolGivesBackAndWaitsForTheStop: Feed must
// not run on a worker of its pool (its doc says so). Called from the task
// of a pool of one worker, it takes its default bound, 2 messages, that
// can never run (Feed holds the worker); when its ctx ends it gives them
// back at once, but does not return (their tasks never reach a worker to
// be skipped) until the pool's Stop abandons them. Then it returns nil:
// its ctx ended before the pool stopped, a drain.
func TestFeedOnTheOnlyWorkerOfItsPoolGivesBackAndWaitsForTheStop(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 3)
	pool := workerpool.New(1)
	ctx, cancel := context.WithCancel(context.Background())
	stats := new(natsfeed.Stats)
	done := make(chan error, 1)
	pool.Submit(func() {
		done <- natsfeed.Feed(ctx, pool, cons, func(context.Context, jetstream.Msg) error { return nil },
			natsfeed.WithStats(stats), natsfeed.WithErrorHandler(func(error) {}))
	})
	eventually(t, func() bool { return stats.Counts().Taken == 2 }, "2 messages taken: the default bound, twice the pool's size")
	cancel()
	eventually(t, func() bool { return stats.Counts().Nacked == 2 }, "the 2 messages given back")
	select {
	case err := <-done:
		t.Fatalf("Feed returned (%v): it was expected to wait for its message", err)
	case <-time.After(time.Second):
	}
	pool.Stop()
	// ctx ended before the pool stopped: a drain, nil.
	assert.NoError(t, <-done, "Feed after Stop")
	assert.Equal(t, natsfeed.Counts{Taken: 2, Nacked: 2, MaxInFlight: 2}, stats.Counts(), "counts")
}
