package natsfeedotel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natsserver "github.com/nats-io/nats-server/v2/test"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// jobs starts an embedded JetStream server (nats-server's own test
// helper), creates the stream JOBS and on it the durable pull consumer
// "workers" with explicit acks, publishes n jobs with bodies "0" to
// "n-1", each confirmed, and returns the consumer. The server stops when
// the test ends.
func jobs(t *testing.T, n int) jetstream.Consumer {
	t.Helper()
	srv := natsserver.RunServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir()})
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	nc, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err, "connect")
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err, "jetstream")
	ctx := t.Context()
	st, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}})
	require.NoError(t, err, "stream")
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "workers", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
	})
	require.NoError(t, err, "consumer")
	for i := range n {
		_, err := js.Publish(ctx, "jobs.work", fmt.Append(nil, i))
		require.NoError(t, err, "publish %d", i)
	}
	return cons
}

// runFeed runs natsfeed.Feed on a goroutine until stop is called; stop
// then returns Feed's error (or fails the test after a minute).
func runFeed(t *testing.T, feed func(ctx context.Context) error) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- feed(ctx) }()
	t.Cleanup(cancel)
	return func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(time.Minute):
			return fmt.Errorf("Feed did not return within a minute")
		}
	}
}
