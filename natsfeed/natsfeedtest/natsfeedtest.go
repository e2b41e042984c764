// Package natsfeedtest starts what a test of code around natsfeed needs:
// an embedded JetStream server with the stream JOBS (subjects jobs.>) and
// its durable pull consumer "workers" (explicit acks, AckWait 30s), as
// natsfeed's examples use them. It is for tests: the server keeps its data
// in the test's temporary directory and stops when the test ends.
package natsfeedtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natsserver "github.com/nats-io/nats-server/v2/test"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Jobs starts the server, creates the stream and the consumer, publishes
// n jobs with bodies "0" to "n-1", each confirmed, and returns the
// JetStream handle and the consumer. It fails the test at once if any
// step fails. The connection and the server close when the test ends.
func Jobs(t testing.TB, n int) (jetstream.JetStream, jetstream.Consumer) {
	t.Helper()
	srv := natsserver.RunServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir()})
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	nc, err := nats.Connect(srv.ClientURL())
	must(t, err, "connect")
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	must(t, err, "jetstream")
	ctx := t.Context()
	st, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}})
	must(t, err, "stream")
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "workers", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
	})
	must(t, err, "consumer")
	for i := range n {
		_, err := js.Publish(ctx, "jobs.work", fmt.Append(nil, i))
		must(t, err, fmt.Sprintf("publish %d", i))
	}
	return js, cons
}

// Run runs feed (a call of natsfeed.Feed) on a goroutine until stop is
// called, or the test ends; stop then returns feed's error, or an error
// if it did not return within a minute. A test that ends without calling
// stop (one that failed on the way) has feed's ctx canceled as it ends,
// and waits for feed to return, up to a minute, before its server stops
// (the test fails if feed does not return), so that no feed outlives it.
func Run(t testing.TB, feed func(ctx context.Context) error) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		done <- feed(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-returned:
		case <-time.After(time.Minute):
			t.Errorf("natsfeedtest: Feed did not return within a minute of the test's end")
		}
	})
	return func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(time.Minute):
			return fmt.Errorf("natsfeedtest: Feed did not return within a minute")
		}
	}
}

func must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("natsfeedtest: %s: %v", what, err)
	}
}
