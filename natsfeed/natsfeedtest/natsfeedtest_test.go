package natsfeedtest_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/e86d9661/workerpool/natsfeed/natsfeedtest"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestJobsAndRun runs ExampleRun's steps: the n jobs Jobs publishes, with
// bodies "0" to "n-1", are each handled once by the Feed Run runs, and
// stop returns Feed's nil once it drained.
func TestJobsAndRun(t *testing.T) {
	_, cons := natsfeedtest.Jobs(t, 10)
	pool := workerpool.New(4)
	defer pool.StopWait()
	var mu sync.Mutex
	var bodies []string
	all := make(chan struct{})
	stop := natsfeedtest.Run(t, func(ctx context.Context) error {
		return natsfeed.Feed(ctx, pool, cons, func(ctx context.Context, msg jetstream.Msg) error {
			mu.Lock()
			defer mu.Unlock()
			if bodies = append(bodies, string(msg.Data())); len(bodies) == 10 {
				close(all)
			}
			return nil
		})
	})
	select {
	case <-all:
	case <-time.After(time.Minute):
		t.Fatal("10 jobs not handled within a minute")
	}
	require.NoError(t, stop(), "stop")
	slices.Sort(bodies)
	assert.Equal(t, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, bodies, "bodies handled")
}

// TestRunStopReportsFeedsError: stop returns what the feed returned.
func TestRunStopReportsFeedsError(t *testing.T) {
	failed := errors.New("feed failed")
	stop := natsfeedtest.Run(t, func(ctx context.Context) error {
		<-ctx.Done()
		return failed
	})
	assert.ErrorIs(t, stop(), failed)
}

// TestRunWaitsForFeedAtTheTestsEnd: a test that ends without calling
// Run's stop (as one that fails on the way does) cancels the feed's ctx
// and waits for the feed to return, drain included, before it ends: no
// feed outlives its test, to run on against a server being stopped.
func TestRunWaitsForFeedAtTheTestsEnd(t *testing.T) {
	var returned atomic.Bool
	t.Run("stop never called", func(t *testing.T) {
		natsfeedtest.Run(t, func(ctx context.Context) error {
			<-ctx.Done()
			time.Sleep(50 * time.Millisecond) // the drain
			returned.Store(true)
			return nil
		})
	})
	if !returned.Load() {
		t.Fatal("the feed was still running when its test ended")
	}
}
