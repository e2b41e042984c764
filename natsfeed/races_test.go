package natsfeed_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRacesSettleEachDeliveryOnceOnTheWire races, on a real server, the
// ways a Feed ends (its ctx, the pool's Stop, StopWait, a Shutdown that
// gives up at once, ctx and Stop together, ctx and a Resize together)
// against Resizes of the pool, messages arriving, waiting in the queue,
// running and being settled, and a second Feed on the same pool and
// consumer, with handlers that succeed, fail, fail for good, panic, call
// runtime.Goexit and wait for their ctx, under random bounds, fetch waits,
// AckWaits and options (one pseudo-random case per seed). Whatever the
// interleaving, on the wire ($JS.ACK.>) each delivery a feed took is
// settled exactly once (acknowledged, nak'd or terminated; none left to
// AckWait, none settled twice) and no beat follows its settlement; the
// counts add up and stay within the bounds; no pull request goes out
// once the Feeds have returned; and the rest of the stream, what they gave
// back included, reaches a later feed at once (under an AckWait of a
// minute, a message given back late would wait that long). A delivery
// counted Unsettled may still be on the wire: an acknowledgement given up
// unconfirmed (under the short AckWait, a try that waited until AckWait
// ran out) was sent, and the server may have taken it.
func TestRacesSettleEachDeliveryOnceOnTheWire(t *testing.T) {
	const seeds, n = 16, 200
	s := startServer(t, "")
	js := connect(t, s.ClientURL())
	st, err := js.CreateOrUpdateStream(context.Background(), jobsConfig)
	require.NoError(t, err, "stream")
	wire, flush := listenAcks(t, s.ClientURL())
	pulls := listenPulls(t, s.ClientURL())
	ends := []string{"ctx", "Stop", "StopWait", "Shutdown0", "ctx+Stop", "ctx+Resize"}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 26))
		name := fmt.Sprint("races", seed)
		// A short AckWait has the messages that wait in the queue beaten
		// without WithProgress: when a worker takes them, and after half
		// of it.
		ackWait := []time.Duration{time.Minute, 100 * time.Millisecond}[rng.IntN(2)]
		_, err := st.CreateOrUpdateConsumer(context.Background(), jetstream.ConsumerConfig{
			Durable: name, AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, FilterSubject: "jobs." + name,
		})
		require.NoError(t, err, "consumer")
		for i := range n {
			_, err := js.PublishAsync("jobs."+name, fmt.Append(nil, i))
			require.NoError(t, err, "publish")
		}
		<-js.PublishAsyncComplete()
		feedJS := connect(t, s.ClientURL()) // settles on a connection of its own: flushed below
		cons, err := feedJS.Consumer(context.Background(), "JOBS", name)
		require.NoError(t, err, "the feed's consumer")

		size, feeds, end := 1+rng.IntN(4), 1+rng.IntN(2), ends[rng.IntN(len(ends))]
		pool := workerpool.New(size)
		ctx, cancel := context.WithCancel(context.Background())
		var handled, gaveUp atomic.Int64
		onError := func(err error) {
			if strings.Contains(err.Error(), ": gave up;") {
				gaveUp.Add(1) // an acknowledgement sent, and not confirmed before AckWait
			}
		}
		h := func(hctx context.Context, msg jetstream.Msg) error {
			handled.Add(1)
			time.Sleep(time.Millisecond) // slower than a pull request: the bound fills, the queue holds some
			if delivered(msg) > 2 {
				return nil
			}
			switch job(msg) % 7 {
			case 1:
				return errors.New("fails")
			case 2:
				return workerpool.Permanent(errors.New("fails for good"))
			case 3:
				panic("panics")
			case 4:
				runtime.Goexit()
			case 5:
				select {
				case <-hctx.Done():
					return hctx.Err()
				case <-time.After(3 * time.Millisecond):
				}
			}
			return nil
		}
		stats := make([]*natsfeed.Stats, feeds)
		bounds := make([]int, feeds)
		waits := make([]func(time.Duration) (error, bool), feeds)
		desc := fmt.Sprintf("seed %d: AckWait %v, pool %d, end %s", seed, ackWait, size, end)
		for i := range feeds {
			stats[i] = new(natsfeed.Stats)
			opts := []natsfeed.Option{natsfeed.WithStats(stats[i]), natsfeed.WithErrorHandler(onError),
				natsfeed.WithFetchWait(time.Duration(20+rng.IntN(200)) * time.Millisecond),
				natsfeed.WithBackoff(func(int, error) (time.Duration, bool) { return 0, true })}
			if rng.IntN(2) == 0 {
				bounds[i] = 1 + rng.IntN(10)
				opts = append(opts, natsfeed.WithMaxInFlight(bounds[i]))
			}
			desc += fmt.Sprintf(", feed %d: bound %d", i, bounds[i])
			if rng.IntN(2) == 0 {
				opts = append(opts, natsfeed.WithCancelOnStop())
				desc += ", WithCancelOnStop"
			}
			if rng.IntN(2) == 0 {
				opts = append(opts, natsfeed.WithProgress(time.Millisecond))
				desc += ", WithProgress(1ms)"
			}
			waits[i] = runGuarded(ctx, pool, cons, h, opts...)
		}
		maxSize := size
		for stopAt := int64(20 + rng.IntN(150)); handled.Load() < stopAt; time.Sleep(time.Millisecond) {
			if rng.IntN(3) == 0 {
				size := 1 + rng.IntN(4)
				maxSize = max(maxSize, size)
				pool.Resize(size)
			}
		}
		switch end {
		case "ctx":
			cancel()
		case "Stop":
			pool.Stop()
		case "StopWait":
			go pool.StopWait()
		case "Shutdown0":
			sctx, giveUp := context.WithCancel(context.Background())
			giveUp()
			go func() { _ = pool.Shutdown(sctx) }()
		case "ctx+Stop":
			go cancel()
			pool.Stop()
		case "ctx+Resize":
			go pool.Resize(1)
			cancel()
		}
		var taken, unsettled int64
		for i, wait := range waits {
			err, returned := wait(time.Minute)
			require.True(t, returned, "%s: Feed %d returned", desc, i)
			if end == "ctx" || end == "ctx+Resize" {
				require.NoError(t, err, "%s: Feed %d", desc, i)
			} else if err != nil {
				require.ErrorIs(t, err, workerpool.ErrStopped, "%s: Feed %d", desc, i)
			}
			c := stats[i].Counts()
			assertSettled(t, c, fmt.Sprintf("%s: Feed %d", desc, i))
			limit := int64(bounds[i])
			if limit == 0 {
				limit = int64(8 * maxSize) // the most the default bound takes
			}
			assert.LessOrEqual(t, c.MaxInFlight, limit, "%s: Feed %d's MaxInFlight", desc, i)
			taken += c.Taken
			unsettled += c.Unsettled
		}
		flush(feedJS.Conn())
		pullsAtReturn := pulls(feedJS.Conn())

		late, _ := wire.late()
		assert.Empty(t, late, "%s: beats after a settlement", desc)
		settlements := map[string]int{}
		wire.mu.Lock()
		for _, e := range wire.events {
			if e.kind != "+WPI" {
				settlements[e.subject]++
			}
		}
		wire.events = nil // the next seed's consumer has other deliveries
		wire.mu.Unlock()
		for subject, k := range settlements {
			assert.Equal(t, 1, k, "%s: settlements of delivery %s", desc, subject)
		}
		assert.GreaterOrEqual(t, int64(len(settlements)), taken-unsettled, "%s: deliveries settled on the wire: at least those counted settled", desc)
		assert.LessOrEqual(t, int64(len(settlements)), taken-unsettled+gaveUp.Load(),
			"%s: deliveries settled on the wire: at most those counted settled and the acknowledgements given up unconfirmed (%d)", desc, gaveUp.Load())

		// No pull request of the ended feeds follows (a goroutine of theirs
		// left behind would send one within a fetch wait, 220ms at most).
		time.Sleep(250 * time.Millisecond)
		assert.Equal(t, pullsAtReturn, pulls(feedJS.Conn()), "%s: pull requests after the Feeds returned", desc)

		// Nothing left behind: another feed takes the rest, the given-back
		// ones at once.
		pool.Stop()
		cancel()
		pool2 := workerpool.New(4)
		ctx2, cancel2 := context.WithCancel(context.Background())
		wait2 := run(ctx2, pool2, cons, func(context.Context, jetstream.Msg) error { return nil }, natsfeed.WithFetchWait(50*time.Millisecond))
		assert.Eventually(t, func() bool {
			ci, err := js.Consumer(context.Background(), "JOBS", name)
			return err == nil && ci.CachedInfo().NumPending == 0 && ci.CachedInfo().NumAckPending == 0
		}, 20*time.Second, 10*time.Millisecond, "%s: every job settled by the later feed, well before AckWait", desc)
		cancel2()
		require.NoError(t, wait2(), "%s: the later Feed", desc)
		pool2.Stop()
		flush(feedJS.Conn())
		wire.mu.Lock()
		wire.events = nil
		wire.mu.Unlock()
	}
}

// TestRacesOfStopAndCtxEndReturnNilOrErrStoppedWithAllSettled races the
// pool's Stop against the end of Feed's ctx, 20 times, while messages come
// in: Feed returns nil or an error wrapping ErrStopped, nothing else, its
// counts add up, and no message it took is left unsettled.
func TestRacesOfStopAndCtxEndReturnNilOrErrStoppedWithAllSettled(t *testing.T) {
	js, cons := setup(t, 30*time.Second, 0)
	for i := range 20 {
		publish(t, js, 30) // enough that the feed is busy when the stop comes
		pool := workerpool.New(3)
		ctx, cancel := context.WithCancel(context.Background())
		stats := new(natsfeed.Stats)
		var errs reportedErrors
		wait := runGuarded(ctx, pool, cons, func(context.Context, jetstream.Msg) error { return nil },
			natsfeed.WithStats(stats), natsfeed.WithMaxInFlight(6), natsfeed.WithErrorHandler(errs.handler), natsfeed.WithFetchWait(100*time.Millisecond))
		if !assert.Eventually(t, func() bool { return stats.Counts().Taken >= int64(i%10) }, 20*time.Second, 5*time.Millisecond, "messages taken") {
			ci := info(t, cons)
			t.Fatalf("iteration %d: counts %+v; errors %v; consumer: pending %d, ack pending %d, waiting %d, redelivered %d, delivered %+v, ack floor %+v",
				i, stats.Counts(), errs.all(), ci.NumPending, ci.NumAckPending, ci.NumWaiting, ci.NumRedelivered, ci.Delivered, ci.AckFloor)
		}
		go cancel()
		pool.Stop()
		err, ok := wait(time.Minute)
		require.True(t, ok, "Feed returned")
		if err != nil {
			assert.ErrorIs(t, err, workerpool.ErrStopped, "Feed's error")
		}
		assertSettled(t, stats.Counts(), fmt.Sprintf("iteration %d", i))
		assert.Zero(t, stats.Counts().Unsettled, "unsettled; errors %v", errs.all())
	}
}

// listenPulls counts, from a core NATS connection of its own to url, the
// pull requests published on the server ($JS.API.CONSUMER.MSG.NEXT.>; see
// listen). The returned count flushes conns and returns how many have been
// published so far.
func listenPulls(t *testing.T, url string) (count func(conns ...*nats.Conn) int64) {
	t.Helper()
	var pulls atomic.Int64
	flush := listen(t, url, "$JS.API.CONSUMER.MSG.NEXT.>", pullMarkPrefix, func(*nats.Msg) { pulls.Add(1) })
	return func(conns ...*nats.Conn) int64 {
		flush(conns...)
		return pulls.Load()
	}
}

// pullMarkPrefix begins the subjects of listenPulls's markers: a stream
// and consumer no test creates, so the server takes no marker for a pull
// request.
const pullMarkPrefix = "$JS.API.CONSUMER.MSG.NEXT.natsfeed-test-mark."
