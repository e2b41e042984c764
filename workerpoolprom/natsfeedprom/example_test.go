package natsfeedprom_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/e86d9661/workerpool/workerpoolprom/natsfeedprom"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// A feed counts in a Stats, which a Collector exports, labelled
// feed="workers". A program would serve reg with
// promhttp.HandlerFor(reg, promhttp.HandlerOpts{}); here the example
// gathers it once the feed has returned and prints the counters.
func ExampleNewCollector() {
	// An embedded server for the example; a program connects to its own.
	dir, _ := os.MkdirTemp("", "natsfeedprom-example")
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

	stats := new(natsfeed.Stats)
	reg := prometheus.NewRegistry()
	reg.MustRegister(natsfeedprom.NewCollector(stats, "workers"))

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

	families, _ := reg.Gather()
	for _, f := range families {
		if f.GetName() == "workerpool_feed_max_in_flight_messages" {
			continue // up to 4, by how fast the workers took the messages
		}
		for _, m := range f.GetMetric() {
			l := m.GetLabel()[0]
			fmt.Printf("%s{%s=%q} %v\n", f.GetName(), l.GetName(), l.GetValue(), m.GetCounter().GetValue()+m.GetGauge().GetValue())
		}
	}
	// Output:
	// feed: <nil>
	// workerpool_feed_in_flight_messages{feed="workers"} 0
	// workerpool_feed_messages_acked_total{feed="workers"} 9
	// workerpool_feed_messages_nacked_total{feed="workers"} 0
	// workerpool_feed_messages_redelivered_total{feed="workers"} 0
	// workerpool_feed_messages_taken_total{feed="workers"} 10
	// workerpool_feed_messages_terminated_total{feed="workers"} 1
	// workerpool_feed_messages_unsettled_total{feed="workers"} 0
}
