package natsfeed_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each message's task carries WithTaskOption's options, and a Label: the
// consumer's name unless WithTaskOption gives one, so the pool's hooks
// (and the metrics and spans built on them) tell the feed's tasks apart.
func TestFeedLabelsEachMessagesTask(t *testing.T) {
	type task struct {
		label    string
		key      string
		priority int
		weight   int
	}
	for _, tc := range []struct {
		name string
		opts []natsfeed.Option
		want task
	}{
		{"the consumer's name", nil, task{"workers", "", 0, 1}},
		{"a Label", []natsfeed.Option{natsfeed.WithTaskOption(workerpool.TaskOption{Label: "orders"})}, task{"orders", "", 0, 1}},
		{"other options, and the consumer's name", []natsfeed.Option{natsfeed.WithTaskOption(workerpool.TaskOption{Key: "k", Priority: 2, Weight: 2})}, task{"workers", "k", 2, 2}},
		{"the last WithTaskOption", []natsfeed.Option{
			natsfeed.WithTaskOption(workerpool.TaskOption{Label: "first", Priority: 1}),
			natsfeed.WithTaskOption(workerpool.TaskOption{Label: "orders"}),
		}, task{"orders", "", 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, cons := setup(t, 30*time.Second, 20)
			var mu sync.Mutex
			tasks := map[task]int{}
			pool := workerpool.New(4, workerpool.WithHooks(workerpool.Hooks{
				TaskFinished: func(_ context.Context, ti workerpool.TaskInfo) {
					mu.Lock()
					defer mu.Unlock()
					tasks[task{ti.Label, ti.Key, ti.Priority, ti.Weight}]++
				},
			}))
			defer pool.Stop()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var handled sync.WaitGroup
			handled.Add(20)
			wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error {
				handled.Done()
				return nil
			}, tc.opts...)
			handled.Wait()
			cancel()
			require.NoError(t, wait(), "Feed")
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, map[task]int{tc.want: 20}, tasks, "the options of every message's run")
		})
	}
}
