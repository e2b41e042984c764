package natsfeed_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sync"
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

// demo is what the examples below share: an embedded JetStream server
// with a stream JOBS and a durable pull consumer "workers", and the jobs
// published to it. A program connects to its own server instead (see
// ExampleFeed, and examples/worker).
type demo struct {
	cons    jetstream.Consumer
	cleanup func()
}

// newDemo starts the server, creates the stream and the consumer (cfg
// adds to its defaults) and publishes jobs, one message each.
func newDemo(cfg jetstream.ConsumerConfig, jobs ...string) demo {
	dir, err := os.MkdirTemp("", "natsfeed-example")
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.NewServer(&server.Options{Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		log.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		log.Fatal("nats-server did not start")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		log.Fatal(err)
	}
	cleanup := func() { nc.Close(); srv.Shutdown(); os.RemoveAll(dir) }
	js, err := jetstream.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	stream, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}})
	if err != nil {
		log.Fatal(err)
	}
	cfg.Durable, cfg.AckPolicy = "workers", jetstream.AckExplicitPolicy
	cons, err := stream.CreateOrUpdateConsumer(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	for _, job := range jobs {
		if _, err := js.Publish(ctx, "jobs.demo", []byte(job)); err != nil {
			log.Fatal(err)
		}
	}
	return demo{cons: cons, cleanup: cleanup}
}

// stopWhenSettled calls stop once n messages counted in stats are settled
// for good (acknowledged or terminated).
func stopWhenSettled(stats *natsfeed.Stats, n int64, stop func()) {
	go func() {
		for c := stats.Counts(); c.Acked+c.Terminated < n; c = stats.Counts() {
			time.Sleep(5 * time.Millisecond)
		}
		stop()
	}()
}

// A Handler's result settles its message: nil acknowledges it, an error
// marked with workerpool.Permanent terminates it (retrying cannot cure a
// malformed job), and any other error gives it back for redelivery.
func ExampleHandler() {
	d := newDemo(jetstream.ConsumerConfig{}, "ok", "malformed", "busy")
	defer d.cleanup()
	pool := workerpool.New(1)
	defer pool.StopWait()

	var stats natsfeed.Stats
	ctx, stop := context.WithCancel(context.Background())
	stopWhenSettled(&stats, 3, stop)
	handle := func(ctx context.Context, msg jetstream.Msg) error {
		meta, err := msg.Metadata()
		if err != nil {
			return err
		}
		job := string(msg.Data())
		fmt.Println("delivery", meta.NumDelivered, "of", job)
		switch {
		case job == "malformed":
			return workerpool.Permanent(fmt.Errorf("job %q is malformed", job))
		case job == "busy" && meta.NumDelivered == 1:
			return errors.New("database busy") // redelivered after the backoff delay
		}
		return nil
	}
	err := natsfeed.Feed(ctx, pool, d.cons, handle,
		natsfeed.WithStats(&stats),
		natsfeed.WithBackoff(workerpool.Backoff(time.Millisecond, 10*time.Millisecond, 4)),
		natsfeed.WithErrorHandler(func(error) {}), // quiet: nothing to report here
		natsfeed.WithMaxInFlight(1),               // one at a time: the jobs run in the stream's order
	)
	c := stats.Counts()
	fmt.Println("feed:", err)
	fmt.Println("acked:", c.Acked, "nacked:", c.Nacked, "terminated:", c.Terminated)
	// Output:
	// delivery 1 of ok
	// delivery 1 of malformed
	// delivery 1 of busy
	// delivery 2 of busy
	// feed: <nil>
	// acked: 2 nacked: 1 terminated: 1
}

// The backoff policy sets the delay before a failed message is delivered
// again, by its delivery count, and when to give up: here 2 redeliveries
// after the first delivery, 3 deliveries in all, then the message is
// terminated.
func ExampleWithBackoff() {
	d := newDemo(jetstream.ConsumerConfig{}, "hopeless")
	defer d.cleanup()
	pool := workerpool.New(2)
	defer pool.StopWait()

	var stats natsfeed.Stats
	ctx, stop := context.WithCancel(context.Background())
	stopWhenSettled(&stats, 1, stop)
	err := natsfeed.Feed(ctx, pool, d.cons, func(ctx context.Context, msg jetstream.Msg) error {
		meta, _ := msg.Metadata()
		fmt.Println("delivery", meta.NumDelivered)
		return errors.New("upstream refused")
	},
		natsfeed.WithStats(&stats),
		natsfeed.WithBackoff(workerpool.Backoff(10*time.Millisecond, time.Second, 2)),
	)
	c := stats.Counts()
	fmt.Println("feed:", err, "nacked:", c.Nacked, "terminated:", c.Terminated)
	// Output:
	// delivery 1
	// delivery 2
	// delivery 3
	// feed: <nil> nacked: 2 terminated: 1
}

// Stats counts what feeds do; once they have returned, Taken equals
// Acked + Nacked + Terminated + Unsettled. Here one job fails its first
// delivery.
func ExampleWithStats() {
	jobs := []string{"a", "b", "c", "d", "e"}
	d := newDemo(jetstream.ConsumerConfig{}, jobs...)
	defer d.cleanup()
	pool := workerpool.New(2)
	defer pool.StopWait()

	var stats natsfeed.Stats
	ctx, stop := context.WithCancel(context.Background())
	stopWhenSettled(&stats, int64(len(jobs)), stop)
	err := natsfeed.Feed(ctx, pool, d.cons, func(ctx context.Context, msg jetstream.Msg) error {
		if meta, _ := msg.Metadata(); string(msg.Data()) == "c" && meta.NumDelivered == 1 {
			return errors.New("timeout")
		}
		return nil
	},
		natsfeed.WithStats(&stats),
		natsfeed.WithBackoff(workerpool.Backoff(time.Millisecond, 10*time.Millisecond, 4)),
		natsfeed.WithErrorHandler(func(error) {}),
	)
	c := stats.Counts()
	fmt.Println("feed:", err)
	fmt.Printf("taken %d (redelivered %d) = acked %d + nacked %d + terminated %d + unsettled %d; in flight %d\n",
		c.Taken, c.Redelivered, c.Acked, c.Nacked, c.Terminated, c.Unsettled, c.InFlight)
	// Output:
	// feed: <nil>
	// taken 6 (redelivered 1) = acked 5 + nacked 1 + terminated 0 + unsettled 0; in flight 0
}

// A handler longer than the consumer's AckWait (here 1s) keeps its
// message with progress beats: the server does not redeliver it elsewhere.
func ExampleWithProgress() {
	d := newDemo(jetstream.ConsumerConfig{AckWait: time.Second}, "long job")
	defer d.cleanup()
	pool := workerpool.New(1)
	defer pool.StopWait()

	var stats natsfeed.Stats
	ctx, stop := context.WithCancel(context.Background())
	err := natsfeed.Feed(ctx, pool, d.cons, func(ctx context.Context, msg jetstream.Msg) error {
		time.Sleep(1500 * time.Millisecond) // longer than AckWait
		stop()
		return nil
	}, natsfeed.WithStats(&stats), natsfeed.WithProgress(100*time.Millisecond))
	c := stats.Counts()
	fmt.Println("feed:", err, "taken:", c.Taken, "redelivered:", c.Redelivered, "acked:", c.Acked)
	// Output: feed: <nil> taken: 1 redelivered: 0 acked: 1
}

// With WithCancelOnStop a running handler's ctx ends with Feed's, so a
// long job gives up at once; a message it gives up is nak'd for another
// process to take, not counted as a failure.
func ExampleWithCancelOnStop() {
	d := newDemo(jetstream.ConsumerConfig{}, "long job")
	defer d.cleanup()
	pool := workerpool.New(1)
	defer pool.StopWait()

	var stats natsfeed.Stats
	ctx, stop := context.WithCancel(context.Background())
	err := natsfeed.Feed(ctx, pool, d.cons, func(ctx context.Context, msg jetstream.Msg) error {
		stop()       // stands in for SIGTERM while the job runs
		<-ctx.Done() // the job watches its context
		fmt.Println("handler:", ctx.Err())
		return ctx.Err()
	}, natsfeed.WithStats(&stats), natsfeed.WithCancelOnStop())
	c := stats.Counts()
	fmt.Println("feed:", err, "nacked:", c.Nacked, "acked:", c.Acked)
	// Output:
	// handler: context canceled
	// feed: <nil> nacked: 1 acked: 0
}

// The error handler learns of the errors Feed meets and goes past: here a
// pool whose queue has no room refuses a message (it is nak'd and taken
// again after the fetch wait). The default logs them with slog.Warn.
func ExampleWithErrorHandler() {
	d := newDemo(jetstream.ConsumerConfig{}, "job")
	defer d.cleanup()
	pool := workerpool.New(1, workerpool.WithMaxWaiting(0, workerpool.Reject))
	defer pool.StopWait()
	started, release := make(chan struct{}), make(chan struct{})
	pool.Submit(func() { close(started); <-release }) // other work holds the one worker
	<-started

	var once sync.Once
	ctx, stop := context.WithCancel(context.Background())
	err := natsfeed.Feed(ctx, pool, d.cons, func(ctx context.Context, msg jetstream.Msg) error {
		fmt.Println("handled", string(msg.Data()))
		stop()
		return nil
	}, natsfeed.WithFetchWait(50*time.Millisecond), natsfeed.WithErrorHandler(func(err error) {
		once.Do(func() {
			fmt.Println("refused:", errors.Is(err, workerpool.ErrQueueFull))
			close(release) // the other work ends: the next delivery runs
		})
	}))
	fmt.Println("feed:", err)
	// Output:
	// refused: true
	// handled job
	// feed: <nil>
}

// WithTaskOption gives the pool's tasks for these messages their options:
// here a Label, which names them in hooks, logs and metrics (by default
// they carry the consumer's name).
func ExampleWithTaskOption() {
	d := newDemo(jetstream.ConsumerConfig{}, "a.png")
	defer d.cleanup()
	labels := make(chan string, 1)
	pool := workerpool.New(1, workerpool.WithHooks(workerpool.Hooks{
		TaskFinished: func(_ context.Context, t workerpool.TaskInfo) { labels <- t.Label },
	}))
	defer pool.StopWait()

	ctx, stop := context.WithCancel(context.Background())
	err := natsfeed.Feed(ctx, pool, d.cons, func(context.Context, jetstream.Msg) error {
		stop()
		return nil
	}, natsfeed.WithTaskOption(workerpool.TaskOption{Label: "resize"}))
	fmt.Println("feed:", err, "label:", <-labels)
	// Output: feed: <nil> label: resize
}

// WithMaxInFlight bounds the messages a process holds at once, received
// and not settled, below the pool's size: here 2 on a pool of 8, whose
// other workers stay free for other work.
func ExampleWithMaxInFlight() {
	jobs := make([]string, 20)
	for i := range jobs {
		jobs[i] = fmt.Sprint("job-", i)
	}
	d := newDemo(jetstream.ConsumerConfig{}, jobs...)
	defer d.cleanup()
	pool := workerpool.New(8)
	defer pool.StopWait()

	var stats natsfeed.Stats
	ctx, stop := context.WithCancel(context.Background())
	stopWhenSettled(&stats, int64(len(jobs)), stop)
	err := natsfeed.Feed(ctx, pool, d.cons, func(context.Context, jetstream.Msg) error {
		time.Sleep(time.Millisecond) // stands in for real work
		return nil
	}, natsfeed.WithStats(&stats), natsfeed.WithMaxInFlight(2))
	c := stats.Counts()
	fmt.Println("feed:", err, "acked:", c.Acked, "at most 2 in flight:", c.MaxInFlight <= 2)
	// Output: feed: <nil> acked: 20 at most 2 in flight: true
}

// Feed checks its options before it takes a message: a bad value is an
// error that names it.
func ExampleWithFetchWait() {
	d := newDemo(jetstream.ConsumerConfig{}, "job")
	defer d.cleanup()
	pool := workerpool.New(1)
	defer pool.StopWait()

	handle := func(context.Context, jetstream.Msg) error { return nil }
	err := natsfeed.Feed(context.Background(), pool, d.cons, handle, natsfeed.WithFetchWait(0))
	fmt.Println(err)

	// A short fetch wait lets Feed return soon after its ctx is done.
	ctx, stop := context.WithCancel(context.Background())
	err = natsfeed.Feed(ctx, pool, d.cons, func(context.Context, jetstream.Msg) error {
		stop()
		return nil
	}, natsfeed.WithFetchWait(100*time.Millisecond))
	fmt.Println("feed:", err)
	// Output:
	// natsfeed: WithFetchWait(0s): d must be from 1ms to 1h0m0s
	// feed: <nil>
}

// Counts can be read at any time, also while feeds run: here while a
// handler holds the one message.
func ExampleStats_Counts() {
	d := newDemo(jetstream.ConsumerConfig{}, "job")
	defer d.cleanup()
	pool := workerpool.New(1)
	defer pool.StopWait()

	var stats natsfeed.Stats
	ctx, stop := context.WithCancel(context.Background())
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- natsfeed.Feed(ctx, pool, d.cons, func(context.Context, jetstream.Msg) error {
			close(started)
			<-release
			stop()
			return nil
		}, natsfeed.WithStats(&stats))
	}()
	<-started
	c := stats.Counts()
	fmt.Println("running: taken", c.Taken, "in flight", c.InFlight, "acked", c.Acked)
	close(release)
	fmt.Println("feed:", <-done)
	c = stats.Counts()
	fmt.Println("returned: taken", c.Taken, "in flight", c.InFlight, "acked", c.Acked, "most in flight", c.MaxInFlight)
	// Output:
	// running: taken 1 in flight 1 acked 0
	// feed: <nil>
	// returned: taken 1 in flight 0 acked 1 most in flight 1
}
