package natsfeedotel_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/e86d9661/workerpool/workerpoolotel/natsfeedotel"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// A feed counts in a Stats, which RegisterStats reports with the
// attribute feed="workers". A program would give the MeterProvider an
// exporter; here a ManualReader collects once the feed has returned, and
// the example prints the counters.
func ExampleRegisterStats() {
	// An embedded server for the example; a program connects to its own.
	dir, _ := os.MkdirTemp("", "natsfeedotel-example")
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
	for i := range 10 {
		js.Publish(ctx, "jobs.resize", fmt.Appendf(nil, "image-%d.png", i))
	}

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)
	stats := new(natsfeed.Stats)
	reg, err := natsfeedotel.RegisterStats(stats, "workers", natsfeedotel.WithMeterProvider(mp))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Unregister()

	pool := workerpool.New(4)
	defer pool.StopWait()
	feedCtx, stop := context.WithCancel(ctx)
	var seen atomic.Int64
	err = natsfeed.Feed(feedCtx, pool, cons, func(ctx context.Context, msg jetstream.Msg) error {
		if seen.Add(1) == 10 {
			stop() // the feed drains: it returns once this message is settled too
		}
		if string(msg.Data()) == "image-7.png" {
			return workerpool.Permanent(errors.New("unreadable image"))
		}
		return nil
	}, natsfeed.WithStats(stats))
	fmt.Println("feed:", err)

	var rm metricdata.ResourceMetrics
	reader.Collect(ctx, &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
			feed, _ := sum.DataPoints[0].Attributes.Value("feed")
			fmt.Printf("%s %s feed=%s %d\n", m.Name, m.Unit, feed.AsString(), sum.DataPoints[0].Value)
		}
	}
	// Output:
	// feed: <nil>
	// workerpool.feed.messages_taken {message} feed=workers 10
	// workerpool.feed.messages_redelivered {message} feed=workers 0
	// workerpool.feed.messages_acked {message} feed=workers 9
	// workerpool.feed.messages_nacked {message} feed=workers 0
	// workerpool.feed.messages_terminated {message} feed=workers 1
	// workerpool.feed.messages_unsettled {message} feed=workers 0
}
