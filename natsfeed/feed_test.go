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

func TestFeedAcksEveryMessage(t *testing.T) {
	s := startServer(t, "")
	js := connect(t, s.ClientURL())
	cons := newConsumer(t, js, 30*time.Second)
	publish(t, js, 1000)
	pool := workerpool.New(8)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	seen := map[string]int{}
	stats := new(natsfeed.Stats)
	done := make(chan error)
	go func() {
		done <- natsfeed.Feed(ctx, pool, cons, func(ctx context.Context, msg jetstream.Msg) error {
			mu.Lock()
			seen[string(msg.Data())]++
			n := len(seen)
			mu.Unlock()
			if n == 1000 {
				cancel()
			}
			return nil
		}, natsfeed.WithStats(stats))
	}()
	require.NoError(t, <-done)
	assert.Len(t, seen, 1000)
	c := stats.Counts()
	t.Logf("%+v", c)
	info, err := cons.Info(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 0, info.NumAckPending)
	assert.Equal(t, uint64(0), info.NumPending)
}
