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

// Each message's task carries a Label: the consumer's name by default, or
// WithLabel's, so the pool's hooks (and the metrics and spans built on
// them) tell the feed's tasks apart.
func TestFeedLabelsEachMessagesTask(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []natsfeed.Option
		want string
	}{
		{"the consumer's name", nil, "workers"},
		{"WithLabel", []natsfeed.Option{natsfeed.WithLabel("orders")}, "orders"},
		{"WithLabel empty", []natsfeed.Option{natsfeed.WithLabel("")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, cons := setup(t, 30*time.Second, 20)
			var mu sync.Mutex
			labels := map[string]int{}
			pool := workerpool.New(4, workerpool.WithHooks(workerpool.Hooks{
				TaskFinished: func(_ context.Context, ti workerpool.TaskInfo) {
					mu.Lock()
					defer mu.Unlock()
					labels[ti.Label]++
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
			assert.Equal(t, map[string]int{tc.want: 20}, labels, "the label of every message's run")
		})
	}
}
