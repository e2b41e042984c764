package natsfeed_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/nats-io/nats.go/jetstream"
)

// benchWorkers is the pool's size, and the Consume loop's semaphore's.
const benchWorkers = 8

// benchLatency is the delay the proxy adds in each direction in the rows
// with latency=1ms: a round trip to the server costs 2 ms more.
const benchLatency = time.Millisecond

// BenchmarkThroughput measures messages per second through one process
// with 8 workers, consuming from a nats-server in a process of its own
// (the test binary re-executed in the server role, see process_test.go),
// with Feed and with the loop users write without it: Consume, a
// semaphore of 8 and a goroutine per message that acknowledges it. One
// iteration is one message: b.N messages are published to a fresh stream
// before the timer starts, and the timer stops once all of them are
// acknowledged. (b.Loop does not fit: the messages must exist before the
// timed part, and one iteration is not one call.)
//
// The rows, named key=value for benchstat: task= is what the handler does
// with a message:
//
//   - call1ms: a call to a service in a process of its own that answers
//     after 1 ms (see benchservice_test.go), the shape of most handlers:
//     the worker waits on the network;
//   - sleep1ms: time.Sleep(time.Millisecond), which wakes up to 1 ms late
//     in a process whose threads wait in the netpoller, by how much
//     depending on how the process's wake-ups fall (golang/go#44343): the
//     row measures that as much as the feeding;
//   - noop: nothing.
//
// latency= is the delay added in each direction between the process and
// the server (0: straight to the server on 127.0.0.1; 1ms: through a
// latencyProxy, only for call1ms tasks, Feed against the loop that waits
// for its acknowledgements); loop= is the consumer:
//
//   - feed: Feed at its default bound
//   - feed+bound64: Feed with WithMaxInFlight(64), eight times the pool's
//     size, as WithMaxInFlight advises for tasks far shorter than a round
//     trip to the server
//   - consume+ack: Consume, a semaphore of 8, Ack (sent, not confirmed)
//   - consume+doubleack: the same with DoubleAck, confirmed by the server
//     as Feed's acknowledgements are
//
// Besides msgs/s, each row reports max-in-flight, the most messages the
// process held at once, received and not yet settled (for the Consume
// loop: handed to its callback and not yet acknowledged, so one more than
// the semaphore's size while the callback waits for a slot), and
// max-ack-pending, the most messages the server counted as delivered and
// not acknowledged, sampled every 5 ms over a connection of its own: the
// messages Consume has pulled ahead into its buffer count there too. A
// message counts as done once Feed's acknowledgement is confirmed, and
// once the Consume loop's Ack is sent (or its DoubleAck confirmed).
//
// Each Feed row also reports its msgs/s as a ratio to each Consume row of
// its task and latency, measured last by this process: vs-consume+ack
// and vs-consume+doubleack (0.95 is 0.95x). The Consume rows run first for
// that, so a ratio pairs a Feed run with the peer runs just before it.
//
// The server process starts once for all rows, so run all rows in one go;
// for a comparison, run the binary several times rather than with -count,
// which repeats each row back to back (and pairs every Feed run of a row
// with the last peer run): interleaved, the rows share the machine's ups
// and downs, and each ratio its pass's.
//
//	go test -c -o /tmp/natsfeed.test
//	for i in 1 2 3 4 5; do /tmp/natsfeed.test -test.run '^$' -test.bench Throughput -test.benchtime 2s; done > throughput.txt
//	benchstat -col /loop throughput.txt
//
// benchstat's columns compare each loop to the first one (consume+ack),
// and its vs- rows give the ratios' medians.
func BenchmarkThroughput(b *testing.B) {
	port := freePort(b)
	srv := startServerProc(b, "server", b.TempDir(), port)
	b.Cleanup(func() { // before startProc's kill: shut the server down cleanly
		_ = srv.cmd.Process.Signal(syscall.SIGTERM)
		if err := srv.wait(overall); err != nil {
			b.Error(err)
		}
	})
	direct := fmt.Sprintf("nats://127.0.0.1:%d", port)
	proxy := startLatencyProxy(b, fmt.Sprintf("127.0.0.1:%d", port), benchLatency)
	delayed := "nats://" + proxy.addr()

	// Peers before Feed: see the ratios above.
	consumeAck := benchLoop{"consume+ack", true, consumeLoop(false)}
	consumeDoubleAck := benchLoop{"consume+doubleack", true, consumeLoop(true)}
	feed := benchLoop{"feed", false, runFeed()}
	feed64 := benchLoop{"feed+bound64", false, runFeed(natsfeed.WithMaxInFlight(64))}
	all := []benchLoop{consumeAck, consumeDoubleAck, feed, feed64}
	service := startService(b, 2*benchWorkers)
	rows := []struct {
		task    string
		work    func() error // what the handler does; nil: nothing
		latency string
		url     string // where the consuming process connects
		loops   []benchLoop
	}{
		{"call1ms", service.call, "0", direct, all},
		{"sleep1ms", sleepFor(time.Millisecond), "0", direct, all},
		{"noop", nil, "0", direct, all},
		{"call1ms", service.call, "1ms", delayed, []benchLoop{consumeDoubleAck, feed, feed64}},
	}
	for _, row := range rows {
		// last holds the msgs/s of each Consume loop's latest run in this
		// row: the sub-benchmarks run one at a time.
		last := map[string]float64{}
		for _, l := range row.loops {
			b.Run(fmt.Sprintf("task=%s/latency=%s/loop=%s", row.task, row.latency, l.name), func(b *testing.B) {
				msgs := benchThroughput(b, direct, row.url, row.work, l.start)
				if l.peer {
					last[l.name] = msgs
					return
				}
				for peer, peerMsgs := range last {
					b.ReportMetric(msgs/peerMsgs, "vs-"+peer)
				}
			})
		}
	}
}

// A benchLoop is one way to consume: a row of BenchmarkThroughput.
type benchLoop struct {
	name  string
	peer  bool // a Consume loop: Feed's rows report their ratio to it
	start func(b *testing.B, cons jetstream.Consumer, work func() error) benchRun
}

// A benchRun consumes cons with benchWorkers workers each working on a
// message for work. acked counts the messages acknowledged so far;
// inFlight gives the most messages held at once; stop ends the run once
// all are acked, waiting for everything it started.
type benchRun struct {
	acked    func() int64
	inFlight func() int64
	stop     func()
}

// benchThroughput publishes b.N messages to a fresh stream on the server
// at url, times start consuming them from a connection to consumeURL (url
// itself, or the proxy in front of it), reports the metrics and returns
// the msgs/s.
func benchThroughput(b *testing.B, url, consumeURL string, work func() error,
	start func(b *testing.B, cons jetstream.Consumer, work func() error) benchRun) float64 {
	ctx := context.Background()
	js := connect(b, url) // publishes and samples NumAckPending, beside the process measured
	deleteJobs := func() error {
		if err := js.DeleteStream(ctx, jobsConfig.Name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("delete the stream: %w", err)
		}
		return nil
	}
	if err := deleteJobs(); err != nil { // left by a run that failed
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := deleteJobs(); err != nil {
			b.Error(err)
		}
	})
	sampled := newConsumer(b, js, 30*time.Second)
	publish(b, js, b.N)
	cons, err := connect(b, consumeURL).Consumer(ctx, jobsConfig.Name, "workers")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()

	r := start(b, cons, work)
	ackPending := sampleAckPending(sampled)
	waitAcked(b, r.acked, int64(b.N))
	b.StopTimer()
	maxAckPending := ackPending()
	r.stop()

	msgs := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(msgs, "msgs/s")
	b.ReportMetric(float64(r.inFlight()), "max-in-flight")
	b.ReportMetric(float64(maxAckPending), "max-ack-pending")
	return msgs
}

// benchWork does the handler's work on a message, if there is any, and
// fails b if it fails.
func benchWork(b *testing.B, work func() error) {
	if work == nil {
		return
	}
	if err := work(); err != nil {
		b.Error(err)
	}
}

// sleep is the work of the task=sleep1ms rows.
func sleepFor(d time.Duration) func() error {
	return func() error {
		time.Sleep(d)
		return nil
	}
}

// runFeed runs Feed on a pool of benchWorkers, with opts.
func runFeed(opts ...natsfeed.Option) func(b *testing.B, cons jetstream.Consumer, work func() error) benchRun {
	return func(b *testing.B, cons jetstream.Consumer, work func() error) benchRun {
		return feedRun(b, cons, work, opts)
	}
}

func feedRun(b *testing.B, cons jetstream.Consumer, work func() error, opts []natsfeed.Option) benchRun {
	pool := workerpool.New(benchWorkers)
	stats := new(natsfeed.Stats)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- natsfeed.Feed(ctx, pool, cons, func(context.Context, jetstream.Msg) error {
			benchWork(b, work)
			return nil
		}, append(opts, natsfeed.WithStats(stats), natsfeed.WithErrorHandler(func(err error) { b.Error(err) }))...)
	}()
	return benchRun{
		acked:    func() int64 { return stats.Counts().Acked },
		inFlight: func() int64 { return stats.Counts().MaxInFlight },
		stop: func() {
			cancel()
			if err := <-done; err != nil {
				b.Error(err)
			}
			pool.StopWait()
			if c := stats.Counts(); c.Taken != c.Acked {
				b.Errorf("feed took %d messages and acknowledged %d: %+v", c.Taken, c.Acked, c)
			}
		},
	}
}

// consumeLoop is the loop users write without Feed: Consume's callback
// takes a slot of a semaphore of benchWorkers, blocking while all are
// taken, and runs the message on a goroutine that acknowledges it (with
// Ack, or DoubleAck to wait for the server's confirmation as Feed does)
// and gives the slot back.
func consumeLoop(doubleAck bool) func(b *testing.B, cons jetstream.Consumer, work func() error) benchRun {
	return func(b *testing.B, cons jetstream.Consumer, work func() error) benchRun {
		var acked atomic.Int64
		var inFlight gauge
		var running sync.WaitGroup
		sem := make(chan struct{}, benchWorkers)
		cc, err := cons.Consume(func(msg jetstream.Msg) {
			inFlight.add(1)
			sem <- struct{}{}
			running.Add(1)
			go func() {
				defer running.Done()
				defer func() { <-sem }()
				benchWork(b, work)
				var err error
				if doubleAck {
					err = msg.DoubleAck(context.Background())
				} else {
					err = msg.Ack()
				}
				inFlight.add(-1)
				if err != nil {
					b.Error(err)
					return
				}
				acked.Add(1)
			}()
		})
		if err != nil {
			b.Fatal(err)
		}
		return benchRun{
			acked:    acked.Load,
			inFlight: inFlight.max.Load,
			stop: func() {
				cc.Stop()
				<-cc.Closed()
				running.Wait()
			},
		}
	}
}

// A gauge is a count that goes up and down, with the highest it has been.
type gauge struct{ now, max atomic.Int64 }

func (g *gauge) add(d int64) {
	n := g.now.Add(d)
	for {
		high := g.max.Load()
		if n <= high || g.max.CompareAndSwap(high, n) {
			return
		}
	}
}

// sampleAckPending reads cons's NumAckPending every 5 ms until the
// returned func is called, which returns the highest value read.
func sampleAckPending(cons jetstream.Consumer) func() int {
	done := make(chan struct{})
	high := make(chan int, 1)
	go func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		most := 0
		for {
			select {
			case <-done:
				high <- most
				return
			case <-tick.C:
			}
			if info, err := cons.Info(context.Background()); err == nil {
				most = max(most, info.NumAckPending)
			}
		}
	}()
	return func() int {
		close(done)
		return <-high
	}
}

// waitAcked polls acked until it reaches n, failing b if it stops
// growing for a minute.
func waitAcked(b *testing.B, acked func() int64, n int64) {
	last, since := int64(-1), time.Now()
	for {
		got := acked()
		if got >= n {
			return
		}
		if got != last {
			last, since = got, time.Now()
		} else if time.Since(since) > time.Minute {
			b.Fatalf("acknowledged %d of %d messages, none in the last minute", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}
