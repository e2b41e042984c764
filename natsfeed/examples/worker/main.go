// Command worker processes the jobs of a JetStream stream on a worker pool
// with natsfeed.Feed, and prints what it did when it stops.
//
// With no flags it needs nothing but Go: it starts a NATS server with
// JetStream inside the process (storing in a temporary directory, removed
// at exit), publishes 1000 demo jobs, works them off on 8 workers, and
// exits once every job has been acknowledged:
//
//	cd natsfeed
//	go run ./examples/worker
//
//	published 1000 jobs to JOBS
//	handled 1000 messages (0 redelivered, 0 duplicates) in 280ms
//	max in flight 16 (bound at most 64)
//
// Each job is a message on the stream JOBS (subjects jobs.>), taken from
// the durable pull consumer workers; a job's work is a sleep of -work. The
// stream and the consumer are created if missing, and used as they are if
// they exist. "handled" counts the messages this process acknowledged,
// "redelivered" those the server had delivered before (to any process),
// "duplicates" the jobs this process ran more than once. "max in flight"
// is the most messages the process held at once, received and not yet
// settled; Feed keeps it within the bound, which by default follows the
// ratio of the round trip to the server to the job's time, from twice to
// eight times the number of workers (the messages beyond the running ones
// are fetched ahead).
//
// With -serve, the embedded server also listens on the given address for
// other processes; with -url, the program joins an existing server or
// cluster instead of starting one. Either way it works until SIGINT
// (Ctrl-C) or SIGTERM, then drains: it stops pulling, lets the jobs it
// holds finish and be acknowledged, and prints the summary. -n publishes
// that many jobs before working, in every mode: give -n 0 to only work.
//
// Three processes sharing one stream, with only Go installed, each in its
// own terminal in the natsfeed directory:
//
//	# 1: a worker whose embedded server the others join
//	go run ./examples/worker -serve 127.0.0.1:4222 -n 0 -work 20ms
//	# 2: a second worker
//	go run ./examples/worker -url nats://127.0.0.1:4222 -n 0 -work 20ms
//	# 3: a third worker, which first publishes 10000 jobs
//	go run ./examples/worker -url nats://127.0.0.1:4222 -n 10000 -work 20ms
//
// The three share the jobs. Press Ctrl-C in 2 while jobs remain: it
// finishes and acknowledges what it holds, prints its summary and exits,
// and the others take the rest, none redelivered. Once all are done
// (about ten seconds), stop 3, then 1 (the server) last; the handled
// counts add up to 10000. With a
// NATS server of your own (nats-server -js), give all three -url instead.
//
// Flags:
//
//	-url URLs      NATS server or cluster to join (comma-separated); empty: embedded server
//	-serve ADDR    with no -url, the embedded server also listens on ADDR (host:port)
//	-n N           demo jobs to publish before working (default 1000)
//	-workers N     pool size; the bound on messages in flight is 2 to 8 times it (default 8)
//	-work D        simulated duration of one job (default 1ms)
//	-stream NAME   stream of the jobs (default JOBS)
//	-consumer NAME durable consumer the workers share (default workers)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// config is the command line.
type config struct {
	url, serve       string
	jobs, workers    int
	work             time.Duration
	stream, consumer string
}

// untilDone reports whether the program stops by itself once its jobs are
// done (embedded server, no -serve), rather than on a signal.
func (c config) untilDone() bool { return c.url == "" && c.serve == "" }

func main() {
	var c config
	flag.StringVar(&c.url, "url", "", "NATS server or cluster to join (comma-separated URLs); empty: start an embedded server")
	flag.StringVar(&c.serve, "serve", "", "with no -url, the embedded server also listens on this host:port for other processes")
	flag.IntVar(&c.jobs, "n", 1000, "demo jobs to publish before working")
	flag.IntVar(&c.workers, "workers", 8, "pool size; the bound on messages in flight is 2 to 8 times it")
	flag.DurationVar(&c.work, "work", time.Millisecond, "simulated duration of one job")
	flag.StringVar(&c.stream, "stream", "JOBS", "stream of the jobs, on subjects <lowercase name>.>")
	flag.StringVar(&c.consumer, "consumer", "workers", "durable pull consumer the workers share")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// run does the whole program; its deferred calls close the connection and
// shut the embedded server down.
func run(c config) error {
	if err := c.check(); err != nil {
		return err
	}
	// ctx ends on the first SIGINT or SIGTERM; from then on a second one
	// kills the program the default way.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)

	nc, closeAll, err := connect(c)
	if err != nil {
		return err
	}
	defer closeAll()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	cons, err := setUp(ctx, js, c)
	if err != nil {
		return err
	}
	if err := publish(ctx, js, c); err != nil {
		return err
	}
	if !c.untilDone() {
		fmt.Println("working; press Ctrl-C to drain and stop")
	}
	return work(ctx, cons, c)
}

// check refuses flags that make no sense.
func (c config) check() error {
	switch {
	case c.url != "" && c.serve != "":
		return errors.New("-serve and -url exclude each other: -serve starts a server, -url joins one")
	case c.jobs < 0, c.workers < 1, c.work < 0:
		return errors.New("-n and -work must not be negative, -workers must be at least 1")
	case c.stream == "" || c.consumer == "":
		return errors.New("-stream and -consumer must not be empty")
	}
	return nil
}

// connect connects to the server of -url, or starts an embedded one and
// connects to it in process. closeAll closes the connection, then shuts
// the embedded server down and removes its storage.
func connect(c config) (nc *nats.Conn, closeAll func(), err error) {
	if c.url != "" {
		// Reconnect for as long as it takes: a server's restart is
		// something to wait out, not a reason to exit.
		nc, err = nats.Connect(c.url, nats.Name("natsfeed example worker"), nats.MaxReconnects(-1))
		if err != nil {
			return nil, nil, err
		}
		return nc, nc.Close, nil
	}
	s, shutdown, err := startServer(c.serve)
	if err != nil {
		return nil, nil, err
	}
	nc, err = nats.Connect("", nats.InProcessServer(s), nats.Name("natsfeed example worker"))
	if err != nil {
		shutdown()
		return nil, nil, err
	}
	return nc, func() { nc.Close(); shutdown() }, nil
}

// startServer starts a NATS server with JetStream in the process, storing
// in a new temporary directory. It listens on addr, or on nothing if addr
// is empty. shutdown stops it and removes the directory.
func startServer(addr string) (s *server.Server, shutdown func(), err error) {
	dir, err := os.MkdirTemp("", "natsfeed-worker-")
	if err != nil {
		return nil, nil, err
	}
	opts := &server.Options{JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true, DontListen: addr == ""}
	if addr != "" {
		if opts.Host, opts.Port, err = hostPort(addr); err != nil {
			os.RemoveAll(dir)
			return nil, nil, err
		}
	}
	if s, err = server.NewServer(opts); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	shutdown = func() {
		s.Shutdown()
		s.WaitForShutdown()
		os.RemoveAll(dir)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		shutdown()
		return nil, nil, fmt.Errorf("embedded server not ready (is %s free?)", addr)
	}
	if addr != "" {
		fmt.Println("serving NATS at", s.ClientURL())
	}
	return s, shutdown, nil
}

// hostPort splits a -serve address; port 0 picks a free port.
func hostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("-serve %q: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("-serve %q: bad port", addr)
	}
	if port == 0 {
		port = server.RANDOM_PORT // for the server, 0 means its default, 4222
	}
	return host, port, nil
}

// subject is where jobs are published: the stream's subjects are
// <lowercase stream name>.>.
func (c config) subject() string { return strings.ToLower(c.stream) + ".demo" }

// setUp returns the durable consumer of the jobs, creating it and its
// stream if missing. Existing ones are used as they are, never updated.
func setUp(ctx context.Context, js jetstream.JetStream, c config) (jetstream.Consumer, error) {
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:     c.stream,
		Subjects: []string{strings.ToLower(c.stream) + ".>"},
	})
	if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return nil, fmt.Errorf("stream %s: %w", c.stream, err)
	}
	cons, err := js.CreateConsumer(ctx, c.stream, jetstream.ConsumerConfig{
		Durable:   c.consumer,
		AckPolicy: jetstream.AckExplicitPolicy,
	})
	if errors.Is(err, jetstream.ErrConsumerExists) {
		cons, err = js.Consumer(ctx, c.stream, c.consumer)
	}
	if err != nil {
		return nil, fmt.Errorf("consumer %s of stream %s: %w", c.consumer, c.stream, err)
	}
	return cons, nil
}

// publish publishes -n demo jobs, each confirmed by the stream. A signal
// ends it early, without an error.
func publish(ctx context.Context, js jetstream.JetStream, c config) error {
	if c.jobs == 0 {
		return nil
	}
	for i := range c.jobs {
		if _, err := js.Publish(ctx, c.subject(), fmt.Appendf(nil, "job %d", i)); err != nil {
			if ctx.Err() != nil {
				fmt.Printf("interrupted after publishing %d jobs\n", i)
				return nil
			}
			return fmt.Errorf("publish to %s: %w", c.subject(), err)
		}
	}
	fmt.Printf("published %d jobs to %s\n", c.jobs, c.stream)
	return nil
}

// work runs Feed on a pool of -workers until ctx ends (or, when the
// program stops by itself, until -n jobs have been acknowledged), then
// stops the pool and prints the summary.
func work(ctx context.Context, cons jetstream.Consumer, c config) error {
	pool := workerpool.New(c.workers)
	stats := new(natsfeed.Stats)
	if c.untilDone() {
		var cancel context.CancelFunc
		ctx, cancel = whenAcked(ctx, stats, int64(c.jobs))
		defer cancel()
	}
	j := &jobs{work: c.work, seen: map[uint64]bool{}}
	start := time.Now()
	// Feed returns once ctx has ended and every message it took has been
	// settled. A short fetch wait keeps that quick: Feed lets its last
	// pull request run out rather than drop what the server is sending.
	err := natsfeed.Feed(ctx, pool, cons, j.handle,
		natsfeed.WithStats(stats),
		natsfeed.WithFetchWait(100*time.Millisecond))
	took := time.Since(start)
	pool.StopWait()
	if err != nil {
		return err
	}
	s := stats.Counts()
	fmt.Printf("handled %d messages (%d redelivered, %d duplicates) in %v\n",
		s.Acked, s.Redelivered, j.duplicates(), took.Round(time.Millisecond))
	fmt.Printf("max in flight %d (bound at most %d)\n", s.MaxInFlight, 8*c.workers) // the most Feed's default bound takes
	return nil
}

// whenAcked returns a context that ends with parent, or once stats counts
// n acknowledged messages.
func whenAcked(parent context.Context, stats *natsfeed.Stats, n int64) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	if n == 0 {
		cancel()
		return ctx, cancel
	}
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for stats.Counts().Acked < n {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
		cancel()
	}()
	return ctx, cancel
}

// jobs is the handler's state: which jobs it has run, by stream sequence.
type jobs struct {
	work time.Duration
	mu   sync.Mutex
	seen map[uint64]bool
	dups int
}

// handle runs one job: it sleeps, standing in for real work, and notes the
// job as run. A message without JetStream metadata cannot be a job: it is
// terminated (workerpool.Permanent: retrying cannot cure it).
func (j *jobs) handle(ctx context.Context, msg jetstream.Msg) error {
	md, err := msg.Metadata()
	if err != nil {
		return workerpool.Permanent(fmt.Errorf("not a job: %w", err))
	}
	time.Sleep(j.work)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.seen[md.Sequence.Stream] {
		j.dups++
	}
	j.seen[md.Sequence.Stream] = true
	return nil
}

// duplicates is the number of jobs run again after a first run.
func (j *jobs) duplicates() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.dups
}
