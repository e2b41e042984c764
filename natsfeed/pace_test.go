package natsfeed_test

// The tests in this file check the default bound as Feed measures it, in
// synctest bubbles, where the fake consumer's acknowledgements and the
// handlers take exact fake-clock times: the round trip r and the task
// time t, and so the bound w × (1 + 2r/t), are known to the nanosecond.

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// paceConsumer is a fakeConsumer that records, at each pull request, what
// the server would count against the process once the request is in: the
// places of the open requests plus the messages out and not settled.
type paceConsumer struct {
	*fakeConsumer
	mu    sync.Mutex
	start time.Time
	asks  []paceAsk
}

type paceAsk struct {
	at    time.Duration // since the consumer was made
	batch int
	held  int // the server's count once the request is in
}

func newPaceConsumer(ackWait time.Duration, msgs []jetstream.Msg) *paceConsumer {
	c := &paceConsumer{start: time.Now()}
	c.fakeConsumer = &fakeConsumer{log: newClockLog(), ackWait: ackWait, wait: time.Second, msgs: msgs}
	for _, m := range msgs {
		m.(*fakeMsg).cons = c.fakeConsumer
	}
	return c
}

func (c *paceConsumer) Fetch(batch int, opts ...jetstream.FetchOpt) (jetstream.MessageBatch, error) {
	b, err := c.fakeConsumer.Fetch(batch, opts...)
	c.fakeConsumer.mu.Lock()
	held := c.fakeConsumer.asked
	c.fakeConsumer.mu.Unlock()
	c.mu.Lock()
	c.asks = append(c.asks, paceAsk{at: time.Since(c.start), batch: batch, held: held})
	c.mu.Unlock()
	return b, err
}

// most is the highest count the server had once a request was in, among
// the requests sent at from or later.
func (c *paceConsumer) most(from time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	high := 0
	for _, a := range c.asks {
		if a.at >= from {
			high = max(high, a.held)
		}
	}
	return high
}

// paceMsgs makes n fake messages whose acknowledgement takes ackTakes.
func paceMsgs(n int, ackTakes time.Duration, ackErrs ...error) []jetstream.Msg {
	log := newClockLog()
	msgs := make([]jetstream.Msg, n)
	for i := range msgs {
		msgs[i] = &fakeMsg{log: log, ackTakes: ackTakes, ackErrs: append([]error(nil), ackErrs...)}
	}
	return msgs
}

// paceFeed runs Feed with the default bound on cons, in a pool of size,
// until stop has passed.
func paceFeed(t *testing.T, size int, cons jetstream.Consumer, h natsfeed.Handler, stop time.Duration) natsfeed.Counts {
	t.Helper()
	pool := workerpool.New(size)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(stop, cancel)
	stats := new(natsfeed.Stats)
	require.NoError(t, natsfeed.Feed(ctx, pool, cons, h, natsfeed.WithStats(stats),
		natsfeed.WithFetchWait(time.Second), natsfeed.WithErrorHandler(func(error) {})), "Feed")
	return stats.Counts()
}

// TestPaceBoundFollowsTheRule: two workers, tasks of 1s, acknowledgements
// confirmed in 1s: once both are measured the feed holds 2 × (1 + 2×1/1)
// = 6, never more; with acknowledgements of 250ms, 2 × 1.5 rounds up to
// 3, below the least: twice the pool's size, 4.
func TestPaceBoundFollowsTheRule(t *testing.T) {
	for _, c := range []struct {
		ack  time.Duration
		want int
	}{
		{time.Second, 6},
		{250 * time.Millisecond, 4},
		{100 * time.Millisecond, 4},
	} {
		t.Run(c.ack.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cons := newPaceConsumer(time.Minute, paceMsgs(60, c.ack))
				counts := paceFeed(t, 2, cons, func(context.Context, jetstream.Msg) error {
					time.Sleep(time.Second)
					return nil
				}, 20*time.Second)
				assert.Equal(t, c.want, cons.most(0), "held at most, as the server counts")
				assert.Equal(t, int64(c.want), counts.MaxInFlight, "MaxInFlight")
			})
		})
	}
}

// TestPaceBoundStaysTheLeastWithoutARoundTrip: handlers that return at
// once, but no acknowledgement is ever confirmed (each try fails until
// AckWait runs out, and the message counts as Unsettled): the round trip
// is never measured, and the bound stays twice the pool's size, however
// short the tasks. So it does for handlers that only fail, panic or call
// runtime.Goexit. With the acknowledgements confirmed, the same tasks
// take the bound to eight times the pool's size.
func TestPaceBoundStaysTheLeastWithoutARoundTrip(t *testing.T) {
	fails := errors.New("ack failed")
	for _, c := range []struct {
		name    string
		ackErrs []error
		h       natsfeed.Handler
		want    int64
	}{
		{"acks fail", []error{fails, fails, fails, fails, fails, fails, fails, fails}, done, 4},
		{"handlers fail", nil, func(context.Context, jetstream.Msg) error { return errors.New("fails") }, 4},
		{"handlers panic", nil, func(context.Context, jetstream.Msg) error { panic("handler panics") }, 4},
		{"handlers call Goexit", nil, func(context.Context, jetstream.Msg) error { runtime.Goexit(); return nil }, 4},
		{"acks confirmed", nil, done, 16},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cons := newPaceConsumer(time.Second, paceMsgs(200, time.Millisecond, c.ackErrs...))
				counts := paceFeed(t, 2, cons, c.h, 10*time.Second)
				assert.Equal(t, c.want, counts.MaxInFlight, "MaxInFlight")
				assert.Greater(t, counts.Taken, 8*c.want, "messages went through")
			})
		})
	}
}

// TestPaceAbandonedHandlersNotTimed: one worker, acknowledgements of 1s,
// every other handler takes 2s and succeeds, the others panic or call
// runtime.Goexit at once. Those are not timed: t is 2s, and the bound
// 1 × (1 + 2×1/2) = 2. Timed, their instants would bring t below 2s and
// the bound above 2.
func TestPaceAbandonedHandlersNotTimed(t *testing.T) {
	for _, abandon := range []struct {
		name string
		f    func()
	}{
		{"panic", func() { panic("handler panics") }},
		{"Goexit", runtime.Goexit},
	} {
		t.Run(abandon.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cons := newPaceConsumer(time.Minute, paceMsgs(60, time.Second))
				var calls atomic.Int64
				counts := paceFeed(t, 1, cons, func(context.Context, jetstream.Msg) error {
					if calls.Add(1)%2 == 0 {
						abandon.f()
					}
					time.Sleep(2 * time.Second)
					return nil
				}, 40*time.Second)
				assert.Equal(t, int64(2), counts.MaxInFlight, "MaxInFlight")
				assert.Equal(t, 2, cons.most(0), "held at most, as the server counts")
				assert.Greater(t, counts.Acked, int64(10), "messages acknowledged")
			})
		})
	}
}

// TestPaceBoundComesBackAfterShortTasks: one worker, acknowledgements of
// 100ms; the first 40 messages take no time (the bound goes to eight),
// the others 10s. The feed took up to eight under the short tasks; once
// the first long task has ended its sample brings the average task to
// 1.25s, above twice the round trip, and the feed never again asks for
// more than twice the pool's size, 2. What it took under the larger bound
// it runs first: the long tasks it hoarded.
func TestPaceBoundComesBackAfterShortTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const short = 40
		msgs := paceMsgs(short+20, 100*time.Millisecond)
		cons := newPaceConsumer(time.Minute, msgs)
		var mu sync.Mutex
		var n int
		var firstLongEnd time.Duration
		start := time.Now()
		counts := paceFeed(t, 1, cons, func(context.Context, jetstream.Msg) error {
			mu.Lock()
			n++
			long := n > short
			mu.Unlock()
			if long {
				time.Sleep(10 * time.Second)
				mu.Lock()
				if firstLongEnd == 0 {
					firstLongEnd = time.Since(start)
				}
				mu.Unlock()
			}
			return nil
		}, 150*time.Second)
		assert.Equal(t, 8, cons.most(0), "held at most under the short tasks")
		assert.Equal(t, int64(8), counts.MaxInFlight, "MaxInFlight")
		require.NotZero(t, firstLongEnd, "a long task ended")
		assert.Equal(t, 2, cons.most(firstLongEnd), "held at most once a long task has ended (from %v)", firstLongEnd)
		t.Logf("the first long task ended at %v; asks: %+v", firstLongEnd, cons.asks)
	})
}

// TestPaceBoundShrinksWithAResize: four workers, tasks and
// acknowledgements of 1s each, so the bound is 4 × 3 = 12; at 10.5s the
// pool is resized to one worker, whose bound is 3. The feed holds more
// than that for a while (what it took before), and asks for nothing until
// what it holds is below 3: no request after the resize brings the
// server's count above 3, none asks for less than one message, and the
// feed still takes messages.
func TestPaceBoundShrinksWithAResize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cons := newPaceConsumer(time.Minute, paceMsgs(200, time.Second))
		pool := workerpool.New(4)
		defer pool.Stop()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(10500*time.Millisecond, func() { pool.Resize(1) })
		time.AfterFunc(40*time.Second, cancel)
		stats := new(natsfeed.Stats)
		require.NoError(t, natsfeed.Feed(ctx, pool, cons, func(context.Context, jetstream.Msg) error {
			time.Sleep(time.Second)
			return nil
		}, natsfeed.WithStats(stats), natsfeed.WithFetchWait(time.Second)), "Feed")
		assert.Equal(t, 12, cons.most(0), "held at most under four workers")
		assert.Equal(t, 3, cons.most(10500*time.Millisecond), "held at most once resized to one")
		var after int
		for _, a := range cons.asks {
			assert.Positive(t, a.batch, "a request at %v", a.at)
			if a.at >= 10500*time.Millisecond {
				after++
			}
		}
		t.Logf("%d requests after the resize", after)
		assert.Positive(t, after, "requests after the resize")
		assert.LessOrEqual(t, after, 30, "requests after the resize, in 29.5s: no more than one per place the worker frees each second, no storm")
	})
}
