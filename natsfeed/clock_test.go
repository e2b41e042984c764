package natsfeed_test

// The tests in this file check Feed's own clock, exactly, in synctest
// bubbles: progress beats, acknowledgement retries and the pause after a
// failed fetch. A real server cannot run in a bubble (its connections'
// write loops wait on sync.Cond, which the fake clock does not count as
// durably blocked), so here a fake consumer hands out fake messages that
// record what Feed does to them and when. Everything else is tested against
// a real server.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clockLog records what happened at which fake-clock time since start.
type clockLog struct {
	start  time.Time
	mu     sync.Mutex
	events []string
}

func newClockLog() *clockLog { return &clockLog{start: time.Now()} }

func (l *clockLog) add(what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, what+" at "+time.Since(l.start).String())
}

func (l *clockLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

// fakeMsg is a message whose settlements are logged; DoubleAck takes
// ackTakes (if negative: until its ctx ends, with its error) and returns the errors in ackErrs in turn, then nil. Methods
// Feed must not call are left to the nil embedded Msg, and panic.
type fakeMsg struct {
	jetstream.Msg
	log      *clockLog
	ackTakes time.Duration
	action   byte          // what FuzzFeed's handler does with it
	cons     *fakeConsumer // the consumer that handed it out, told of its first settlement
	settles  atomic.Int32  // acks confirmed, naks and terms sent
	late     atomic.Int32  // beats sent after a settlement
	mu       sync.Mutex
	ackErrs  []error
}

func (m *fakeMsg) Metadata() (*jetstream.MsgMetadata, error) {
	return &jetstream.MsgMetadata{NumDelivered: 1, Stream: "JOBS", Sequence: jetstream.SequencePair{Stream: 1}}, nil
}

func (m *fakeMsg) DoubleAck(ctx context.Context) error {
	m.log.add("ack")
	if m.ackTakes < 0 { // no answer: wait for ctx
		<-ctx.Done()
		return ctx.Err()
	}
	time.Sleep(m.ackTakes)
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.ackErrs) == 0 {
		m.settled()
		return nil
	}
	err := m.ackErrs[0]
	m.ackErrs = m.ackErrs[1:]
	return err
}

// settled counts a settlement, and gives the message's place back to
// its consumer on the first.
func (m *fakeMsg) settled() {
	if m.settles.Add(1) == 1 && m.cons != nil {
		m.cons.give(1)
	}
}

func (m *fakeMsg) InProgress() error {
	if m.settles.Load() > 0 {
		m.late.Add(1)
	}
	m.log.add("progress")
	return nil
}

func (m *fakeMsg) NakWithDelay(d time.Duration) error {
	m.log.add("nak " + d.String())
	m.settled()
	return nil
}

func (m *fakeMsg) TermWithReason(string) error {
	m.log.add("term")
	m.settled()
	return nil
}

// fakeBatch delivers msgs, and closes after wait if it has fewer than asked.
type fakeBatch struct {
	msgs chan jetstream.Msg
	err  error
}

func (b *fakeBatch) Messages() <-chan jetstream.Msg { return b.msgs }
func (b *fakeBatch) Error() error                   { return b.err }

// fakeConsumer serves fetches from msgs, logging each; a fetch fails with
// the next of fetchErrs while there are any. It never redelivers.
//
// It counts what the server would count against a process's bound: the
// messages each open pull request may still bring, plus the messages
// handed out and not settled yet (the first settlement of a fakeMsg whose
// cons is this one), and keeps the highest that count has been when a
// pull request arrived: the process asked for more than its bound if that
// is above it.
type fakeConsumer struct {
	jetstream.Consumer
	log       *clockLog
	ackWait   time.Duration
	wait      time.Duration // how long a batch short of messages stays open; 0: DefaultFetchWait
	mu        sync.Mutex
	msgs      []jetstream.Msg
	fetchErrs []error
	asked     int // guarded by mu: open requests' unfilled places and unsettled messages
	maxAsked  int // guarded by mu: the highest asked has been
}

// give gives back n places counted in asked.
func (c *fakeConsumer) give(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked -= n
}

// most is the highest count of places asked for or held at once.
func (c *fakeConsumer) most() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxAsked
}

func (c *fakeConsumer) CachedInfo() *jetstream.ConsumerInfo {
	return &jetstream.ConsumerInfo{Config: jetstream.ConsumerConfig{AckWait: c.ackWait}}
}

func (c *fakeConsumer) Fetch(batch int, opts ...jetstream.FetchOpt) (jetstream.MessageBatch, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log.add("fetch")
	if len(c.fetchErrs) > 0 {
		err := c.fetchErrs[0]
		c.fetchErrs = c.fetchErrs[1:]
		return nil, err
	}
	c.asked += batch
	c.maxAsked = max(c.maxAsked, c.asked)
	b := &fakeBatch{msgs: make(chan jetstream.Msg, batch)}
	n := min(batch, len(c.msgs))
	for _, m := range c.msgs[:n] {
		b.msgs <- m
	}
	c.msgs = c.msgs[n:]
	if n == batch {
		close(b.msgs)
	} else {
		wait := c.wait
		if wait == 0 {
			wait = natsfeed.DefaultFetchWait
		}
		time.AfterFunc(wait, func() {
			c.give(batch - n) // before the close: Feed gives them back after it
			close(b.msgs)
		})
	}
	return b, nil
}

// feedFor runs Feed on cons in a pool of 1 until the handler has run
// and then stop has passed, and returns the errors reported.
func feedFor(t *testing.T, cons *fakeConsumer, h natsfeed.Handler, stop time.Duration, opts ...natsfeed.Option) []string {
	t.Helper()
	pool := workerpool.New(1)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(stop, cancel)
	var mu sync.Mutex
	var reported []string
	opts = append(opts, natsfeed.WithErrorHandler(func(err error) {
		mu.Lock()
		reported = append(reported, err.Error())
		mu.Unlock()
	}))
	require.NoError(t, natsfeed.Feed(ctx, pool, cons, h, opts...), "Feed")
	return reported
}

func done(context.Context, jetstream.Msg) error { return nil }

func TestProgressBeatsEveryPeriodUntilSettled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newClockLog()
		m := &fakeMsg{log: log}
		cons := &fakeConsumer{log: log, msgs: []jetstream.Msg{m}}
		work := func(context.Context, jetstream.Msg) error {
			time.Sleep(35 * time.Second)
			return nil
		}
		feedFor(t, cons, work, 35*time.Second+500*time.Millisecond, natsfeed.WithProgress(10*time.Second), natsfeed.WithMaxInFlight(1))
		assert.Equal(t, []string{
			"fetch at 0s",
			"progress at 10s", "progress at 20s", "progress at 30s",
			"ack at 35s",
			"fetch at 35s", // the slot is free again; Feed's ctx ends at 35.5s, this fetch at 36s
		}, log.all(), "what Feed did, and when")
	})
}

func TestAckRetriesWithDoublingPauses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newClockLog()
		timeout := errors.New("timeout")
		m := &fakeMsg{log: log, ackErrs: []error{timeout, timeout, timeout}}
		cons := &fakeConsumer{log: log, ackWait: time.Minute, msgs: []jetstream.Msg{m}}
		stats := new(natsfeed.Stats)
		reported := feedFor(t, cons, done, time.Nanosecond, natsfeed.WithStats(stats))
		assert.Equal(t, []string{"fetch at 0s", "ack at 0s", "ack at 50ms", "ack at 150ms", "ack at 350ms"}, log.all(), "fetch and ack tries")
		assert.Equal(t, []string{
			"natsfeed: ack message 1 of stream JOBS: timeout",
			"natsfeed: ack message 1 of stream JOBS: timeout",
			"natsfeed: ack message 1 of stream JOBS: timeout",
		}, reported, "errors reported")
		assert.Equal(t, natsfeed.Counts{Taken: 1, Acked: 1, MaxInFlight: 1}, stats.Counts(), "counts")
	})
}

func TestAckGivesUpWhenAckWaitRunsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newClockLog()
		timeout := errors.New("timeout")
		m := &fakeMsg{log: log, ackErrs: []error{timeout, timeout, timeout, timeout, timeout, timeout, timeout}}
		cons := &fakeConsumer{log: log, ackWait: time.Second, msgs: []jetstream.Msg{m}}
		stats := new(natsfeed.Stats)
		reported := feedFor(t, cons, done, time.Nanosecond, natsfeed.WithStats(stats))
		// Tries at 0, 50, 150, 350 and 750ms; the next pause (800ms) would
		// end past the second of AckWait, when the server redelivers.
		assert.Equal(t, []string{"fetch at 0s", "ack at 0s", "ack at 50ms", "ack at 150ms", "ack at 350ms", "ack at 750ms"}, log.all(), "fetch and ack tries")
		require.Len(t, reported, 6, "errors reported")
		assert.Equal(t, "natsfeed: ack message 1 of stream JOBS: gave up; the server redelivers it after AckWait", reported[5], "last error")
		assert.Equal(t, natsfeed.Counts{Taken: 1, Unsettled: 1, MaxInFlight: 1}, stats.Counts(), "counts")
	})
}

// TestAckTriesEndByAckWait acknowledges a message the server never
// confirms, under an AckWait of 3s: the first try waits 2s (the most one
// waits), the second from 2.05s until the AckWait ends at 3s, and then the
// next pause would end past it.
func TestAckTriesEndByAckWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newClockLog()
		m := &fakeMsg{log: log, ackTakes: -1}
		cons := &fakeConsumer{log: log, ackWait: 3 * time.Second, msgs: []jetstream.Msg{m}}
		stats := new(natsfeed.Stats)
		reported := feedFor(t, cons, done, time.Nanosecond, natsfeed.WithStats(stats))
		assert.Equal(t, []string{"fetch at 0s", "ack at 0s", "ack at 2.05s"}, log.all(), "fetch and ack tries")
		assert.Equal(t, []string{
			"natsfeed: ack message 1 of stream JOBS: context deadline exceeded",
			"natsfeed: ack message 1 of stream JOBS: context deadline exceeded",
			"natsfeed: ack message 1 of stream JOBS: gave up; the server redelivers it after AckWait",
		}, reported, "errors reported")
		assert.Equal(t, natsfeed.Counts{Taken: 1, Unsettled: 1, MaxInFlight: 1}, stats.Counts(), "counts")
	})
}

// TestAckUnderProgressRetriesForAckWaitFromTheFirstTry: under
// WithProgress the server's AckWait of a message restarts at every beat,
// and the beats go on while Feed tries to acknowledge it, so a failed
// acknowledgement is tried again for AckWait from the first try, not from
// the message's arrival: a handler of 3s under an AckWait of 1s, beaten
// every 200ms, whose first acknowledgement fails, has its message acked by
// a later try (not given up, for the server to redeliver and run again).
func TestAckUnderProgressRetriesForAckWaitFromTheFirstTry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newClockLog()
		timeout := errors.New("timeout")
		m := &fakeMsg{log: log, ackErrs: []error{timeout}}
		cons := &fakeConsumer{log: log, ackWait: time.Second, msgs: []jetstream.Msg{m}}
		work := func(context.Context, jetstream.Msg) error {
			time.Sleep(3 * time.Second)
			return nil
		}
		stats := new(natsfeed.Stats)
		reported := feedFor(t, cons, work, 3500*time.Millisecond, natsfeed.WithProgress(200*time.Millisecond), natsfeed.WithStats(stats), natsfeed.WithMaxInFlight(1))
		assert.Equal(t, natsfeed.Counts{Taken: 1, Acked: 1, MaxInFlight: 1}, stats.Counts(), "counts; errors reported %q", reported)
	})
}

func TestAckGivesUpAtOnceOnAClosedConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newClockLog()
		m := &fakeMsg{log: log, ackErrs: []error{nats.ErrConnectionClosed}}
		cons := &fakeConsumer{log: log, ackWait: time.Minute, msgs: []jetstream.Msg{m}}
		stats := new(natsfeed.Stats)
		reported := feedFor(t, cons, done, time.Nanosecond, natsfeed.WithStats(stats), natsfeed.WithMaxInFlight(1))
		// The slot is free at once, and the feed fetches again before its
		// ctx ends at 1ns.
		assert.Equal(t, []string{"fetch at 0s", "ack at 0s", "fetch at 0s"}, log.all(), "fetch and ack tries")
		assert.Len(t, reported, 2, "errors reported: the failure and the giving up")
		assert.Equal(t, natsfeed.Counts{Taken: 1, Unsettled: 1, MaxInFlight: 1}, stats.Counts(), "counts")
	})
}

func TestFailedFetchIsRetriedAfterTheFetchWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newClockLog()
		m := &fakeMsg{log: log}
		down := errors.New("no responders")
		cons := &fakeConsumer{log: log, msgs: []jetstream.Msg{m}, fetchErrs: []error{down, down}}
		reported := feedFor(t, cons, done, 2500*time.Millisecond, natsfeed.WithFetchWait(time.Second), natsfeed.WithMaxInFlight(1))
		assert.Equal(t, []string{"fetch at 0s", "fetch at 1s", "fetch at 2s", "ack at 2s", "fetch at 2s"}, log.all(), "fetches and the ack")
		assert.Equal(t, []string{"natsfeed: fetch: no responders", "natsfeed: fetch: no responders"}, reported, "errors reported")
	})
}

// TestAcknowledgementsWaitOffTheWorker runs three messages whose handler
// takes 2s and whose acknowledgement waits 1s for the server, on one
// worker. With a bound of 1, the next message is fetched once the last is
// acknowledged; with a bound of 2 (the default for one worker) the second
// is fetched ahead with the first and waits in the pool's queue, so the
// worker runs message after message while the acknowledgements and the
// fetches go on beside it.
func TestAcknowledgementsWaitOffTheWorker(t *testing.T) {
	for _, c := range []struct {
		bound int
		want  []string
	}{
		{1, []string{
			"fetch at 0s", "run at 0s", "ack at 2s",
			"fetch at 3s", "run at 3s", "ack at 5s",
			"fetch at 6s", "run at 6s", "ack at 8s",
			"fetch at 9s",
		}},
		{2, []string{
			"fetch at 0s", "run at 0s", "ack at 2s",
			"run at 2s", "fetch at 3s", // the place the first ack frees
			"ack at 4s", "run at 4s", "fetch at 5s", // the stream is empty: a pull request every fetch wait
			"ack at 6s", // then the empty stream's pull requests, one or two out at a time: not compared
		}},
	} {
		t.Run(fmt.Sprintf("bound=%d", c.bound), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				log := newClockLog()
				var msgs []jetstream.Msg
				for range 3 {
					msgs = append(msgs, &fakeMsg{log: log, ackTakes: time.Second})
				}
				cons := &fakeConsumer{log: log, ackWait: time.Minute, msgs: msgs}
				work := func(context.Context, jetstream.Msg) error {
					log.add("run")
					time.Sleep(2 * time.Second)
					return nil
				}
				stats := new(natsfeed.Stats)
				feedFor(t, cons, work, 9500*time.Millisecond, natsfeed.WithMaxInFlight(c.bound), natsfeed.WithStats(stats))
				// Events at one instant come from different goroutines,
				// in no set order; their times are exact.
				got := log.all()
				if c.bound == 2 {
					got = slices.DeleteFunc(got, func(e string) bool {
						var sec int
						_, err := fmt.Sscanf(e, "fetch at %ds", &sec)
						return err == nil && sec >= 6
					})
				}
				assert.ElementsMatch(t, c.want, got, "what Feed did, and when")
				assert.Equal(t, natsfeed.Counts{Taken: 3, Acked: 3, MaxInFlight: int64(c.bound)}, stats.Counts(), "counts")
			})
		})
	}
}

// TestPullRequestsOutAtMostTwo: with a bound no stream fills
// (math.MaxInt), Feed keeps two pull requests out, each for the most one
// may ask, and sends the next two only when those have ended (each waits
// the fetch wait of 1s on an empty stream), rather than a stream of them.
func TestPullRequestsOutAtMostTwo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newClockLog()
		cons := &fakeConsumer{log: log, wait: time.Second}
		feedFor(t, cons, done, 2500*time.Millisecond, natsfeed.WithMaxInFlight(math.MaxInt), natsfeed.WithFetchWait(time.Second))
		assert.Equal(t, []string{
			"fetch at 0s", "fetch at 0s",
			"fetch at 1s", "fetch at 1s",
			"fetch at 2s", "fetch at 2s", // Feed's ctx ends at 2.5s; these end at 3s
		}, log.all(), "pull requests")
		assert.Equal(t, 1000, cons.most(), "places asked for at once: two requests of 500")
	})
}

// TestGivenBackOnceThePullRequestsEnd: at a drain, a message fetched
// ahead (waiting in the pool's queue) is nak'd with no delay once the
// feed's pull request that is still out has ended, not before: that
// request could take it again. The one running is acknowledged when its
// handler returns.
func TestGivenBackOnceThePullRequestsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newClockLog()
		cons := &fakeConsumer{log: log, wait: time.Second, ackWait: time.Minute,
			msgs: []jetstream.Msg{&fakeMsg{log: log}, &fakeMsg{log: log}}}
		work := func(context.Context, jetstream.Msg) error {
			time.Sleep(10 * time.Second)
			return nil
		}
		stats := new(natsfeed.Stats)
		// The bound of 3 asks for 3, gets 2, and the request stays out for
		// the fetch wait; Feed's ctx ends at 0.5s.
		feedFor(t, cons, work, 500*time.Millisecond, natsfeed.WithMaxInFlight(3), natsfeed.WithFetchWait(time.Second), natsfeed.WithStats(stats))
		assert.Equal(t, []string{"fetch at 0s", "nak 0s at 1s", "ack at 10s"}, log.all(), "what Feed did, and when")
		assert.Equal(t, natsfeed.Counts{Taken: 2, Acked: 1, Nacked: 1, MaxInFlight: 2}, stats.Counts(), "counts")
	})
}

// TestQueuedMessagesBeatenAtHalfAckWait: without WithProgress, a message
// that waits in the pool's queue is beaten once it has waited half of
// AckWait (10s here; the beater looks every tenth, 1s), and again when a
// worker takes it if it has waited a tenth of AckWait since; a running
// message is not beaten. One worker, three messages, handlers of 5.5s,
// 5.5s and 1s in the order they run: the first is never beaten, the
// second is beaten at 5s and starts at 5.5s (less than a tenth later:
// no beat), the third is beaten at 5s and 10s in the queue and at 11s
// when it starts.
func TestQueuedMessagesBeatenAtHalfAckWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		msgs := make([]*fakeMsg, 3)
		for i := range msgs {
			msgs[i] = &fakeMsg{log: newClockLog()}
		}
		cons := &fakeConsumer{log: newClockLog(), ackWait: 10 * time.Second, msgs: []jetstream.Msg{msgs[0], msgs[1], msgs[2]}}
		var calls atomic.Int64
		work := func(context.Context, jetstream.Msg) error {
			time.Sleep([]time.Duration{5500 * time.Millisecond, 5500 * time.Millisecond, time.Second}[calls.Add(1)-1])
			return nil
		}
		stats := new(natsfeed.Stats)
		feedFor(t, cons, work, 12500*time.Millisecond, natsfeed.WithMaxInFlight(3), natsfeed.WithStats(stats))
		var logs []string
		for _, m := range msgs {
			logs = append(logs, fmt.Sprint(m.log.all()))
		}
		assert.ElementsMatch(t, []string{
			"[ack at 5.5s]",
			"[progress at 5s ack at 11s]",
			"[progress at 5s progress at 10s progress at 11s ack at 12s]",
		}, logs, "each message's beats and ack, in the order they ran")
		assert.Zero(t, msgs[0].late.Load()+msgs[1].late.Load()+msgs[2].late.Load(), "beats after a settlement")
		assert.Equal(t, natsfeed.Counts{Taken: 3, Acked: 3, MaxInFlight: 3}, stats.Counts(), "counts")
	})
}
