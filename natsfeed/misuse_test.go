package natsfeed_test

import (
	"context"
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
// stream were empty. Bad input gets a clear error at once.
func TestFeedRefusesAZeroPool(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	stats := new(natsfeed.Stats)
	start := time.Now()
	wait := edgeRun(ctx, new(workerpool.WorkerPool), cons, func(context.Context, jetstream.Msg) error { return nil },
		natsfeed.WithStats(stats))
	err, returned := wait(time.Minute)
	require.True(t, returned, "Feed returned")
	assert.Error(t, err, "Feed on a zero WorkerPool (returned after %v, counts %+v)", time.Since(start).Round(time.Millisecond), stats.Counts())
	assert.Zero(t, stats.Counts().Taken, "messages taken")
}
