package natsfeed_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// TestFeedLeavesNoGoroutine runs Feed to its end in each way it can end,
// with messages running, waiting and being settled and beats going, and
// checks that the process's goroutines come back to their number before
// Feed (the server's and the connection's stay): no fetch, delivery, beat,
// drain or acknowledgement goroutine outlives Feed.
func TestFeedLeavesNoGoroutine(t *testing.T) {
	js, cons := setup(t, 30*time.Second, 0)
	ends := map[string]func(cancel context.CancelFunc, pool *workerpool.WorkerPool){
		"ctx":      func(cancel context.CancelFunc, _ *workerpool.WorkerPool) { cancel() },
		"Stop":     func(_ context.CancelFunc, pool *workerpool.WorkerPool) { pool.Stop() },
		"StopWait": func(_ context.CancelFunc, pool *workerpool.WorkerPool) { pool.StopWait() },
		"ctx+Stop": func(cancel context.CancelFunc, pool *workerpool.WorkerPool) { go cancel(); pool.Stop() },
		"Shutdown0": func(_ context.CancelFunc, pool *workerpool.WorkerPool) {
			c, f := context.WithCancel(context.Background())
			f()
			_ = pool.Shutdown(c)
		},
	}
	for name, end := range ends {
		t.Run(name, func(t *testing.T) {
			publish(t, js, 200)
			runtime.GC()
			base := runtime.NumGoroutine()
			pool := workerpool.New(3)
			ctx, cancel := context.WithCancel(context.Background())
			stats := new(natsfeed.Stats)
			wait := runGuarded(ctx, pool, cons, func(_ context.Context, msg jetstream.Msg) error {
				time.Sleep(time.Millisecond)
				switch job(msg) % 10 {
				case 1:
					return errors.New("fails")
				case 2:
					panic("panics")
				case 3:
					runtime.Goexit()
				}
				return nil
			}, natsfeed.WithStats(stats), natsfeed.WithProgress(time.Millisecond), natsfeed.WithFetchWait(200*time.Millisecond),
				natsfeed.WithBackoff(func(int, error) (time.Duration, bool) { return time.Hour, true }),
				natsfeed.WithErrorHandler(func(error) {}))
			eventually(t, func() bool { return stats.Counts().Acked >= 30 }, "some jobs acked")
			end(cancel, pool)
			_, returned := wait(time.Minute)
			require.True(t, returned, "Feed returned")
			cancel()
			pool.Stop()
			assertSettled(t, stats.Counts(), "Feed")
			waitGoroutines(t, base)
			// The rest of the stream back for the next subtest: purge it.
			st, err := js.Stream(context.Background(), "JOBS")
			require.NoError(t, err, "stream")
			require.NoError(t, st.Purge(context.Background()), "purge")
		})
	}
}
