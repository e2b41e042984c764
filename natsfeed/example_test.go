package natsfeed_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func ExampleFeed() {
	// An embedded server for the example; a program connects to its own.
	dir, _ := os.MkdirTemp("", "natsfeed-example")
	defer os.RemoveAll(dir)
	srv, _ := server.NewServer(&server.Options{Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	srv.Start()
	defer srv.Shutdown()
	srv.ReadyForConnections(10 * time.Second)

	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	stream, _ := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}})
	cons, _ := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "workers", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
	})
	for i := range 100 {
		js.Publish(ctx, "jobs.resize", fmt.Appendf(nil, "image-%d.png", i))
	}

	// Every process runs the same: a pool, and Feed until it is told to
	// stop. Here the feed stops once the 100 jobs are done.
	pool := workerpool.New(8)
	defer pool.StopWait()
	feedCtx, stop := context.WithCancel(ctx)
	var done atomic.Int64
	err = natsfeed.Feed(feedCtx, pool, cons, func(ctx context.Context, msg jetstream.Msg) error {
		// Resize the image named in msg.Data(), idempotently.
		if done.Add(1) == 100 {
			stop()
		}
		return nil
	}, natsfeed.WithMaxInFlight(8))
	fmt.Println("feed:", err, "jobs done:", done.Load())
	// Output: feed: <nil> jobs done: 100
}
