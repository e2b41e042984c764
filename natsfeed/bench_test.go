package natsfeed_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/nats-io/nats.go/jetstream"
)

// benchWorkers and benchTask are the shape of the work: 8 workers, 1 ms
// per message.
const (
	benchWorkers = 8
	benchTask    = time.Millisecond
)

// BenchmarkThroughput measures messages per second through one process,
// 8 workers running a 1 ms task per message, with Feed and with the loop
// users write today: Consume, a semaphore of 8 and a goroutine per
// message. One iteration is one message: b.N messages are published to a
// fresh server before the timer starts, and the timer stops once all of
// them are acknowledged. (b.Loop does not fit: the messages must exist
// before the timed part, and one iteration is not one call.)
//
// Besides msgs/s, each sub-benchmark reports max-in-flight, the most
// messages the process held at once, received and not yet settled (for
// the Consume loop: handed to its callback and not yet acknowledged, so
// one more than the semaphore's size while the callback waits for a
// slot), and max-ack-pending, the most messages the server counted as
// delivered and not acknowledged, sampled every 5 ms: the messages
// Consume has pulled ahead into its buffer count there too. A message
// counts as done once Feed's DoubleAck is confirmed, and once the Consume
// loop's Ack is sent (or its DoubleAck confirmed).
func BenchmarkThroughput(b *testing.B) {
	b.Run("feed", func(b *testing.B) { benchThroughput(b, runFeed()) })
	b.Run("feed+maxinflight=16", func(b *testing.B) { benchThroughput(b, runFeed(natsfeed.WithMaxInFlight(2*benchWorkers))) })
	b.Run("consume+semaphore", func(b *testing.B) { benchThroughput(b, consumeLoop(false)) })
	b.Run("consume+semaphore+doubleack", func(b *testing.B) { benchThroughput(b, consumeLoop(true)) })
}

// A benchRun consumes cons with benchWorkers workers doing benchTask per
// message. acked counts the messages acknowledged so far; inFlight gives
// the most messages held at once; stop ends the run once all are acked,
// waiting for everything it started.
type benchRun struct {
	acked    func() int64
	inFlight func() int64
	stop     func()
}

// benchThroughput times start on b.N fresh messages and reports the
// metrics.
func benchThroughput(b *testing.B, start func(b *testing.B, cons jetstream.Consumer) benchRun) {
	s := startServer(b, "") // a fresh server for each b.N: shut down by Cleanup after the run
	js := connect(b, s.ClientURL())
	cons := newConsumer(b, js, 30*time.Second)
	publish(b, js, b.N)
	b.ResetTimer()

	r := start(b, cons)
	ackPending := sampleAckPending(cons)
	waitAcked(b, r.acked, int64(b.N))
	b.StopTimer()
	maxAckPending := ackPending()
	r.stop()

	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(float64(r.inFlight()), "max-in-flight")
	b.ReportMetric(float64(maxAckPending), "max-ack-pending")
}

// benchSleep is the task: the message's work.
func benchSleep() { time.Sleep(benchTask) }

// runFeed runs Feed on a pool of benchWorkers, with opts.
func runFeed(opts ...natsfeed.Option) func(b *testing.B, cons jetstream.Consumer) benchRun {
	return func(b *testing.B, cons jetstream.Consumer) benchRun {
		return feedRun(b, cons, opts)
	}
}

func feedRun(b *testing.B, cons jetstream.Consumer, opts []natsfeed.Option) benchRun {
	pool := workerpool.New(benchWorkers)
	stats := new(natsfeed.Stats)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- natsfeed.Feed(ctx, pool, cons, func(context.Context, jetstream.Msg) error {
			benchSleep()
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
func consumeLoop(doubleAck bool) func(b *testing.B, cons jetstream.Consumer) benchRun {
	return func(b *testing.B, cons jetstream.Consumer) benchRun {
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
				benchSleep()
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
