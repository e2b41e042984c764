package natsfeed_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
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

// setup starts a server with the JOBS stream and a consumer of ackWait,
// and publishes n jobs.
func setup(t *testing.T, ackWait time.Duration, n int) (jetstream.JetStream, jetstream.Consumer) {
	t.Helper()
	_, js, cons := setupAt(t, ackWait, n)
	return js, cons
}

// setupAt is setup that also returns the server's URL, for connections of
// the test's own.
func setupAt(t *testing.T, ackWait time.Duration, n int) (string, jetstream.JetStream, jetstream.Consumer) {
	t.Helper()
	s := startServer(t, "")
	js := connect(t, s.ClientURL())
	cons := newConsumer(t, js, ackWait)
	publish(t, js, n)
	return s.ClientURL(), js, cons
}

// run starts Feed on a goroutine; wait returns its error.
func run(ctx context.Context, pool *workerpool.WorkerPool, cons jetstream.Consumer, h natsfeed.Handler, opts ...natsfeed.Option) (wait func() error) {
	done := make(chan error, 1)
	go func() { done <- natsfeed.Feed(ctx, pool, cons, h, opts...) }()
	return func() error {
		select {
		case err := <-done:
			return err
		case <-time.After(time.Minute):
			return errors.New("Feed did not return within a minute")
		}
	}
}

// setupWith starts a server with the JOBS stream and a pull consumer of
// cfg on it (Durable "workers" unless cfg names one), and publishes n
// jobs.
func setupWith(t *testing.T, cfg jetstream.ConsumerConfig, n int) (jetstream.JetStream, jetstream.Consumer) {
	t.Helper()
	s := startServer(t, "")
	js := connect(t, s.ClientURL())
	st, err := js.CreateOrUpdateStream(context.Background(), jobsConfig)
	require.NoError(t, err, "stream")
	if cfg.Durable == "" {
		cfg.Durable = "workers"
	}
	cons, err := st.CreateOrUpdateConsumer(context.Background(), cfg)
	require.NoError(t, err, "consumer")
	registerConsumer(js, cons)
	publish(t, js, n)
	return js, cons
}

// runGuarded starts Feed on a goroutine, as run does, with a panic guard:
// a panic out of Feed is returned as an error rather than crashing the
// test binary. wait returns Feed's error and true once Feed has returned,
// or false if it has not within d.
func runGuarded(ctx context.Context, pool *workerpool.WorkerPool, cons jetstream.Consumer, h natsfeed.Handler, opts ...natsfeed.Option) (wait func(d time.Duration) (error, bool)) {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("Feed panicked: %v", r)
			}
		}()
		done <- natsfeed.Feed(ctx, pool, cons, h, opts...)
	}()
	return func(d time.Duration) (error, bool) {
		select {
		case err := <-done:
			return err, true
		case <-time.After(d):
			return nil, false
		}
	}
}

// reportedErrors collects what Feed reports to its error handler.
type reportedErrors struct {
	mu   sync.Mutex
	errs []error
}

func (e *reportedErrors) handler(err error) {
	e.mu.Lock()
	e.errs = append(e.errs, err)
	e.mu.Unlock()
}

func (e *reportedErrors) all() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]error(nil), e.errs...)
}

// count returns how many reported errors contain s.
func (e *reportedErrors) count(s string) int {
	n := 0
	for _, err := range e.all() {
		if strings.Contains(err.Error(), s) {
			n++
		}
	}
	return n
}

// assertSettled checks the counts of a feed that has returned: every
// message taken was settled (Taken == Acked+Nacked+Terminated+Unsettled),
// and none is in flight. who names the feed in the failure messages.
func assertSettled(t *testing.T, c natsfeed.Counts, who string) {
	t.Helper()
	assert.Equal(t, c.Taken, c.Acked+c.Nacked+c.Terminated+c.Unsettled, "%s: taken == acked+nacked+terminated+unsettled once Feed returned (%+v)", who, c)
	assert.Zero(t, c.InFlight, "%s: in flight once Feed returned (%+v)", who, c)
}

// countingConsumer counts the pull requests sent through it.
type countingConsumer struct {
	jetstream.Consumer
	fetches atomic.Int64
}

func (c *countingConsumer) Fetch(batch int, opts ...jetstream.FetchOpt) (jetstream.MessageBatch, error) {
	c.fetches.Add(1)
	return c.Consumer.Fetch(batch, opts...)
}

// waitGoroutines waits for the number of goroutines to come back to at
// most base, and fails with a dump of every goroutine's stack if it does
// not within 10s.
func waitGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Errorf("goroutines: %d, more than the %d before Feed:\n%s", runtime.NumGoroutine(), base, buf[:n])
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// consumerJS maps each consumer the tests create to its JetStream
// context, for info.
var consumerJS sync.Map // jetstream.Consumer → jetstream.JetStream

// registerConsumer records cons's JetStream context for info.
func registerConsumer(js jetstream.JetStream, cons jetstream.Consumer) {
	consumerJS.Store(cons, js)
}

// info returns the consumer's state on the server, asked through a handle
// of its own: nats.go's Consumer.Info writes the handle's cached info,
// which Feed reads, with no synchronization (nats-io/nats.go#2151), so a
// test must not call Info on the handle a running Feed was given.
func info(t *testing.T, cons jetstream.Consumer) *jetstream.ConsumerInfo {
	t.Helper()
	js, ok := consumerJS.Load(cons)
	require.True(t, ok, "consumer created without registerConsumer")
	cached := cons.CachedInfo()
	h, err := js.(jetstream.JetStream).Consumer(context.Background(), cached.Stream, cached.Name)
	require.NoError(t, err, "consumer info")
	return h.CachedInfo()
}

// eventually waits for cond, failing the test with what after a minute.
func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	require.Eventually(t, cond, time.Minute, 5*time.Millisecond, what)
}

// job returns the job number a message carries.
func job(msg jetstream.Msg) int {
	n, _ := strconv.Atoi(string(msg.Data()))
	return n
}

// delivered returns the message's delivery count.
func delivered(msg jetstream.Msg) uint64 {
	md, err := msg.Metadata()
	if err != nil {
		return 0
	}
	return md.NumDelivered
}

func TestFeedAcksEveryMessageOnce(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 1000)
	pool := workerpool.New(8)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	seen := map[int]int{}
	stats := new(natsfeed.Stats)
	wait := run(ctx, pool, cons, func(ctx context.Context, msg jetstream.Msg) error {
		mu.Lock()
		defer mu.Unlock()
		seen[job(msg)]++
		if len(seen) == 1000 {
			cancel()
		}
		return nil
	}, natsfeed.WithStats(stats))
	require.NoError(t, wait(), "Feed")
	assert.Len(t, seen, 1000, "jobs handled")
	for id, n := range seen {
		require.Equal(t, 1, n, "handlings of job %d", id)
	}
	c := stats.Counts()
	assert.Equal(t, natsfeed.Counts{Taken: 1000, Acked: 1000, MaxInFlight: c.MaxInFlight}, c, "counts")
	assert.LessOrEqual(t, c.MaxInFlight, int64(64), "held at most the default bound's most: eight times the pool's size")
	i := info(t, cons)
	assert.Equal(t, 0, i.NumAckPending, "unacked on the server")
	assert.Equal(t, uint64(0), i.NumPending, "undelivered on the server")
	assert.Equal(t, uint64(1000), i.AckFloor.Consumer, "ack floor")
}

// gate holds handlers until it is opened, and counts those inside.
type gate struct {
	open    chan struct{}
	inside  atomic.Int64
	entered atomic.Int64
}

func newGate() *gate { return &gate{open: make(chan struct{})} }

func (g *gate) handler(ctx context.Context, msg jetstream.Msg) error {
	g.entered.Add(1)
	g.inside.Add(1)
	defer g.inside.Add(-1)
	<-g.open
	return nil
}

func TestFeedHoldsAtMostMaxInFlight(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 50)
	pool := workerpool.New(16)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	g, stats := newGate(), new(natsfeed.Stats)
	wait := run(ctx, pool, cons, g.handler, natsfeed.WithMaxInFlight(5), natsfeed.WithStats(stats))
	eventually(t, func() bool { return g.inside.Load() == 5 }, "5 handlers running")
	// The server's own count: Feed asked for no more than its 5 slots.
	assert.Equal(t, 5, info(t, cons).NumAckPending, "messages delivered and unacked on the server")
	assert.Equal(t, int64(5), stats.Counts().InFlight, "in flight")
	close(g.open)
	eventually(t, func() bool { return stats.Counts().Acked == 50 }, "all 50 acked")
	cancel()
	require.NoError(t, wait(), "Feed")
	assert.Equal(t, int64(5), stats.Counts().MaxInFlight, "max in flight")
}

// TestFeedHoldsTwiceThePoolsSizeAndFollowsResize: by default Feed holds
// twice the pool's size, half of it running and half fetched ahead,
// waiting in the pool's queue; a Resize moves the bound. Before any task
// has finished the feed knows no pace, and holds exactly twice the size;
// once one has, the pace may raise the bound above that (see
// defaultBound: a task that took less than two round trips), so after the
// Resize the feed holds at least twice the new size.
func TestFeedHoldsTwiceThePoolsSizeAndFollowsResize(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 50)
	pool := workerpool.New(2)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gates := make(chan chan struct{}, 50)
	// Should the test end early, its handlers are let go before the
	// deferred Stop waits for them.
	defer func() {
		go func() {
			for g := range gates {
				close(g)
			}
		}()
	}()
	stats := new(natsfeed.Stats)
	var inside atomic.Int64
	wait := run(ctx, pool, cons, func(ctx context.Context, msg jetstream.Msg) error {
		inside.Add(1)
		defer inside.Add(-1)
		g := make(chan struct{})
		gates <- g
		<-g
		return nil
	}, natsfeed.WithStats(stats))
	eventually(t, func() bool { return inside.Load() == 2 && info(t, cons).NumAckPending == 4 }, "2 handlers running, 4 messages pending on the server")
	assert.Equal(t, 2, pool.WaitingQueueSize(), "messages fetched ahead, waiting in the pool's queue")
	assert.Equal(t, int64(4), stats.Counts().InFlight, "in flight with a pool of 2")
	pool.Resize(4)
	close(<-gates) // a settle wakes the fetch loop, which now has a bound of 8
	eventually(t, func() bool { return inside.Load() == 4 }, "4 handlers running after Resize(4)")
	// The first message's acknowledgement may still be on its way.
	eventually(t, func() bool { return info(t, cons).NumAckPending >= 8 }, "unacked on the server with a pool of 4: at least 8")
	cancel()
	go func() {
		for g := range gates {
			close(g)
		}
	}()
	require.NoError(t, wait(), "Feed")
	close(gates)
	assert.GreaterOrEqual(t, stats.Counts().MaxInFlight, int64(8), "max in flight: at least twice the pool's new size")
}

// advisories collects the server's advisories of terminated messages of
// the JOBS consumer: stream sequence and reason.
func advisories(t *testing.T, js jetstream.JetStream) func() map[uint64]string {
	t.Helper()
	var mu sync.Mutex
	got := map[uint64]string{}
	sub, err := js.Conn().Subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.JOBS.workers", func(m *nats.Msg) {
		var a struct {
			StreamSeq uint64 `json:"stream_seq"`
			Reason    string `json:"reason"`
		}
		if assert.NoError(t, json.Unmarshal(m.Data, &a), "advisory") {
			mu.Lock()
			got[a.StreamSeq] = a.Reason
			mu.Unlock()
		}
	})
	require.NoError(t, err, "subscribe to advisories")
	t.Cleanup(func() { sub.Unsubscribe() })
	return func() map[uint64]string {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(got)
	}
}

var errGiveUp = errors.New("fails every time")

func TestFeedSettlesByTheHandlersResult(t *testing.T) {
	js, cons := setup(t, 30*time.Second, 6)
	terminated := advisories(t, js)
	var panics atomic.Int64
	pool := workerpool.New(8, workerpool.WithHooks(workerpool.Hooks{Panic: func(any) { panics.Add(1) }}))
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errs reportedErrors
	const delay = 300 * time.Millisecond
	var mu sync.Mutex
	deliveries := map[int][]uint64{}  // job: delivery counts seen
	arrived := map[int][]time.Time{}  // job: when each delivery reached the handler
	returned := map[int][]time.Time{} // job: when each failed run returned
	type call struct {
		attempt int
		err     string
	}
	var calls []call
	policy := func(attempt int, err error) (time.Duration, bool) {
		mu.Lock()
		calls = append(calls, call{attempt, err.Error()})
		mu.Unlock()
		return delay, !errors.Is(err, errGiveUp) || attempt < 2
	}
	stats := new(natsfeed.Stats)
	wait := run(ctx, pool, cons, func(ctx context.Context, msg jetstream.Msg) error {
		id, n := job(msg), delivered(msg)
		mu.Lock()
		deliveries[id] = append(deliveries[id], n)
		arrived[id] = append(arrived[id], time.Now())
		mu.Unlock()
		failed := func(err error) error {
			mu.Lock()
			returned[id] = append(returned[id], time.Now())
			mu.Unlock()
			return err
		}
		switch {
		case id == 1:
			return workerpool.Permanent(errors.New("job 1"))
		case id == 2 && n < 3:
			return failed(fmt.Errorf("job 2 fails on delivery %d", n))
		case id == 3 && n == 1:
			failed(nil)
			panic("job 3 panics")
		case id == 4:
			return failed(fmt.Errorf("job 4: %w", errGiveUp))
		case id == 5 && n == 1:
			failed(nil)
			runtime.Goexit()
		}
		return nil
	}, natsfeed.WithBackoff(policy), natsfeed.WithStats(stats), natsfeed.WithErrorHandler(errs.handler))
	eventually(t, func() bool { c := stats.Counts(); return c.Acked == 4 && c.Terminated == 2 }, "4 acked and 2 terminated")
	cancel()
	require.NoError(t, wait(), "Feed")

	assert.Equal(t, map[int][]uint64{0: {1}, 1: {1}, 2: {1, 2, 3}, 3: {1, 2}, 4: {1, 2}, 5: {1, 2}}, deliveries, "delivery counts per job")
	assert.Equal(t, natsfeed.Counts{Taken: 11, Redelivered: 5, Acked: 4, Nacked: 5, Terminated: 2, MaxInFlight: stats.Counts().MaxInFlight}, stats.Counts(), "counts")
	// The task's handle recovers the handler's panic: the pool counts it,
	// its Panic hook is not called, and Feed reports it with the
	// *PanicError (value and stack), as it reports the Goexit.
	assert.Zero(t, panics.Load(), "panics passed to the pool's Panic hook")
	assert.Equal(t, uint64(1), pool.Status().Panicked, "the pool's Status.Panicked")
	var reported []error
	for _, err := range errs.all() {
		if strings.Contains(err.Error(), "did not return") {
			reported = append(reported, err)
		}
	}
	if assert.Len(t, reported, 2, "reported: the panic and the Goexit (all: %v)", errs.all()) {
		var pe *workerpool.PanicError
		for _, err := range reported {
			if errors.As(err, &pe) {
				assert.Equal(t, "job 3 panics", pe.Value, "the panic's value")
				assert.Contains(t, string(pe.Stack), "natsfeed_test.TestFeedSettlesByTheHandlersResult", "the panic's stack shows the handler")
				assert.Contains(t, err.Error(), "natsfeed: handler did not return for message 4 of stream ", "the report")
			} else {
				assert.ErrorIs(t, err, workerpool.ErrGoexit, "the other report: the Goexit")
				assert.Contains(t, err.Error(), "natsfeed: handler did not return for message 6 of stream ", "the report")
			}
		}
		assert.NotNil(t, pe, "a report wraps the *PanicError")
	}
	assert.ElementsMatch(t, []call{
		{1, "job 2 fails on delivery 1"}, {2, "job 2 fails on delivery 2"},
		{1, "natsfeed: handler panicked or called runtime.Goexit"},
		{1, "job 4: fails every time"}, {2, "job 4: fails every time"},
		{1, "natsfeed: handler panicked or called runtime.Goexit"},
	}, calls, "backoff policy calls: delivery count and error")
	// The server redelivers a nak'd message no sooner than its delay.
	for id, times := range returned {
		for i, r := range times[:len(arrived[id])-1] {
			assert.GreaterOrEqual(t, arrived[id][i+1].Sub(r), delay, "job %d: delivery %d came after the nak delay", id, i+2)
		}
	}
	// Job 1 (permanent) and job 4 (the policy gave up) were terminated,
	// with the error as the reason (stream sequence = job + 1).
	eventually(t, func() bool { return len(terminated()) == 2 }, "2 term advisories")
	assert.Equal(t, map[uint64]string{2: "job 1", 5: "job 4: fails every time"}, terminated(), "terminated messages and reasons")
	i := info(t, cons)
	assert.Equal(t, 0, i.NumAckPending, "unacked on the server")
	assert.Equal(t, uint64(0), i.NumPending, "undelivered on the server")
}

// TestFeedRecoversAHandlersPanic: each message's task is a handle of the
// pool's Go, which recovers its panic: a handler that panics, on a pool
// with no Panic hook, does not crash the program. Feed naks the message
// with the backoff delay, reports the panic to its error handler with the
// *PanicError (value and stack), and the redelivery is handled.
func TestFeedRecoversAHandlersPanic(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 1)
	pool := workerpool.New(1) // no Hooks.Panic: a plain task's panic would crash the test binary
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errs reportedErrors
	stats := new(natsfeed.Stats)
	wait := run(ctx, pool, cons, func(_ context.Context, msg jetstream.Msg) error {
		if delivered(msg) == 1 {
			panic("handler bug")
		}
		return nil
	}, natsfeed.WithStats(stats), natsfeed.WithErrorHandler(errs.handler),
		natsfeed.WithBackoff(func(int, error) (time.Duration, bool) { return 0, true }))
	eventually(t, func() bool { return stats.Counts().Acked == 1 }, "the redelivery acked")
	cancel()
	require.NoError(t, wait(), "Feed")
	assert.Equal(t, natsfeed.Counts{Taken: 2, Redelivered: 1, Acked: 1, Nacked: 1, MaxInFlight: stats.Counts().MaxInFlight}, stats.Counts(), "counts")
	assert.Equal(t, uint64(1), pool.Status().Panicked, "the pool's Status.Panicked")
	reported := errs.all()
	require.Len(t, reported, 1, "errors reported: %v", reported)
	var pe *workerpool.PanicError
	require.ErrorAs(t, reported[0], &pe, "the report wraps the *PanicError")
	assert.Equal(t, "handler bug", pe.Value, "the panic's value")
	assert.Contains(t, string(pe.Stack), "TestFeedRecoversAHandlersPanic", "the stack shows the handler's frames")
	assert.Regexp(t, `^natsfeed: handler did not return for message 1 of stream \S+; nak'd: workerpool: task panicked: handler bug$`, reported[0].Error(), "the report")
}

// permanentMark is an error with its own Permanent method, as net.Error
// has its own Timeout: Feed finds such a mark as it finds
// workerpool.Permanent's, whatever the error's type, and follows what it
// reports.
type permanentMark struct {
	msg       string
	permanent bool
}

func (e permanentMark) Error() string   { return e.msg }
func (e permanentMark) Permanent() bool { return e.permanent }

// TestFeedTerminatesAnErrorMarkedPermanentHoweverWrapped:
// workerpool.Permanent, the pool's own "do not retry" mark, and any error
// with a Permanent method that reports true, found directly, through
// errors.Join or through several wraps, terminate the message with the
// error's text as the reason, without asking the backoff policy, and it
// is never redelivered. A Permanent method that reports false is no mark:
// that error is nak'd as any other, the policy asked for its delay.
func TestFeedTerminatesAnErrorMarkedPermanentHoweverWrapped(t *testing.T) {
	js, cons := setup(t, 30*time.Second, 6)
	terminated := advisories(t, js)
	pool := workerpool.New(4)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	stats := new(natsfeed.Stats)
	var policyCalls atomic.Int64
	wait := run(ctx, pool, cons, func(_ context.Context, msg jetstream.Msg) error {
		switch job(msg) {
		case 0:
			return errors.Join(errors.New("bad"), workerpool.Permanent(errors.New("for good")))
		case 1:
			return fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", workerpool.Permanent(errors.New("for good"))))
		case 2:
			return workerpool.Permanent(errors.New("pool's permanent"))
		case 3:
			return fmt.Errorf("outer: %w", permanentMark{"own mark", true})
		case 4:
			if delivered(msg) == 1 {
				return permanentMark{"no mark", false}
			}
		}
		return nil
	}, natsfeed.WithStats(stats), natsfeed.WithBackoff(func(int, error) (time.Duration, bool) {
		policyCalls.Add(1)
		return 0, true
	}))
	eventually(t, func() bool { c := stats.Counts(); return c.Terminated == 4 && c.Acked == 2 }, "4 terminated, 2 acked")
	cancel()
	require.NoError(t, wait(), "Feed")
	assert.Equal(t, natsfeed.Counts{Taken: 7, Redelivered: 1, Acked: 2, Nacked: 1, Terminated: 4, MaxInFlight: stats.Counts().MaxInFlight}, stats.Counts(), "counts")
	assert.Equal(t, int64(1), policyCalls.Load(), "backoff policy calls: the error whose Permanent reports false")
	eventually(t, func() bool { return len(terminated()) == 4 }, "4 term advisories")
	assert.Equal(t, map[uint64]string{
		1: "bad\nfor good",
		2: "outer: inner: for good",
		3: "pool's permanent",
		4: "outer: own mark",
	}, terminated(), "reasons")
}

// TestFeedTerminatesAnErrorWhoseTextExceedsTheMaxPayload: a permanent
// error whose text (2MB) is above the connection's max payload (1MB by
// default) still terminates its message: the term's reason is the text
// cut to its first 1024 bytes, which a term can carry. The server's
// advisory shows that reason, and the server holds nothing
// unacknowledged.
func TestFeedTerminatesAnErrorWhoseTextExceedsTheMaxPayload(t *testing.T) {
	js, cons := setup(t, 30*time.Second, 1)
	terminated := advisories(t, js)
	pool := workerpool.New(2)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	var errs reportedErrors
	stats := new(natsfeed.Stats)
	big := strings.Repeat("x", 2<<20)
	wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error {
		return workerpool.Permanent(fmt.Errorf("bad input %s", big))
	}, natsfeed.WithStats(stats), natsfeed.WithErrorHandler(errs.handler))
	eventually(t, func() bool { c := stats.Counts(); return c.Terminated+c.Unsettled == 1 }, "the message settled")
	cancel()
	require.NoError(t, wait(), "Feed")
	c := stats.Counts()
	assertSettled(t, c, "Feed")
	assert.Equal(t, int64(1), c.Terminated, "terminated: %+v; errors: %d", c, len(errs.all()))
	if c.Terminated == 1 {
		eventually(t, func() bool { return len(terminated()) == 1 }, "a term advisory")
		for _, reason := range terminated() {
			assert.Contains(t, reason, "bad input", "reason")
		}
	}
	assert.Equal(t, 0, info(t, cons).NumAckPending, "unacked on the server")
}

// TestFeedNakWithANegativeDelayRedeliversAtOnce: a negative delay from
// the backoff policy is a nak of no delay: the message comes back at once,
// and Feed takes and settles each delivery, the counts exact (acked on
// the third, after two naks).
func TestFeedNakWithANegativeDelayRedeliversAtOnce(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 1)
	pool := workerpool.New(2)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	stats := new(natsfeed.Stats)
	wait := run(ctx, pool, cons, func(_ context.Context, msg jetstream.Msg) error {
		if delivered(msg) < 3 {
			return errors.New("again")
		}
		return nil
	}, natsfeed.WithStats(stats), natsfeed.WithBackoff(func(int, error) (time.Duration, bool) { return -time.Hour, true }))
	eventually(t, func() bool { return stats.Counts().Acked == 1 }, "acked on the third delivery")
	cancel()
	require.NoError(t, wait(), "Feed")
	c := stats.Counts()
	assertSettled(t, c, "Feed")
	assert.Equal(t, natsfeed.Counts{Taken: 3, Redelivered: 2, Acked: 1, Nacked: 2, MaxInFlight: 1}, c, "counts")
}

// TestFeedNakWithTheLargestDelayIsNotRedeliveredAtOnce: a backoff policy
// may return any delay (a workerpool.Backoff with a large max does after
// some attempts). A message nak'd with the largest, math.MaxInt64 (some
// 292 years), is not redelivered within a second: a redelivery time past
// the year 2262, which overflows UnixNano, must not bring it back at once,
// in a hot loop of deliveries and naks.
func TestFeedNakWithTheLargestDelayIsNotRedeliveredAtOnce(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 1)
	pool := workerpool.New(2)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	stats := new(natsfeed.Stats)
	var runs atomic.Int64
	wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error {
		runs.Add(1)
		return errors.New("later")
	}, natsfeed.WithStats(stats), natsfeed.WithBackoff(func(int, error) (time.Duration, bool) {
		return time.Duration(math.MaxInt64), true
	}), natsfeed.WithFetchWait(100*time.Millisecond))
	eventually(t, func() bool { return runs.Load() >= 1 }, "the handler ran")
	time.Sleep(time.Second)
	cancel()
	require.NoError(t, wait(), "Feed")
	assertSettled(t, stats.Counts(), "Feed")
	assert.Equal(t, int64(1), runs.Load(), "runs of a message nak'd with a delay of ~292 years, within a second")
}

func TestFeedDrainsWhatItHolds(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 200)
	pool := workerpool.New(100)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	g, stats := newGate(), new(natsfeed.Stats)
	var ctxLive atomic.Int64
	wait := run(ctx, pool, cons, func(hctx context.Context, msg jetstream.Msg) error {
		err := g.handler(hctx, msg)
		if hctx.Err() == nil {
			ctxLive.Add(1)
		}
		return err
	}, natsfeed.WithStats(stats), natsfeed.WithMaxInFlight(100))
	eventually(t, func() bool { return g.inside.Load() == 100 }, "100 handlers running")
	require.Equal(t, 100, info(t, cons).NumAckPending, "unacked on the server")
	cancel()
	close(g.open)
	require.NoError(t, wait(), "Feed")
	// Feed returned only after every message it took was settled.
	assert.Equal(t, natsfeed.Counts{Taken: 100, Acked: 100, MaxInFlight: 100}, stats.Counts(), "counts when Feed returned")
	assert.Equal(t, int64(100), ctxLive.Load(), "handlers whose ctx was still live (no WithCancelOnStop)")
	i := info(t, cons)
	assert.Equal(t, 0, i.NumAckPending, "unacked on the server after the drain")
	assert.Equal(t, 0, i.NumRedelivered, "redelivered on the server after the drain")
	assert.Equal(t, uint64(100), i.NumPending, "left for later")

	// A second feed gets the other 100, none of them a redelivery.
	ctx, cancel = context.WithCancel(context.Background())
	stats2 := new(natsfeed.Stats)
	wait = run(ctx, pool, cons, func(context.Context, jetstream.Msg) error {
		if stats2.Counts().Acked == 99 {
			cancel()
		}
		return nil
	}, natsfeed.WithStats(stats2), natsfeed.WithMaxInFlight(1))
	require.NoError(t, wait(), "second Feed")
	assert.Equal(t, natsfeed.Counts{Taken: 100, Acked: 100, MaxInFlight: 1}, stats2.Counts(), "second feed's counts")
}

// TestFeedGivesBackWhatWaitsAtOnce: the messages fetched ahead, waiting
// in the pool's queue, are nak'd at once when Feed's ctx ends or the pool
// stops, while the running handlers still run: with an AckWait of an hour,
// another pull gets them at once, as redeliveries.
func TestFeedGivesBackWhatWaitsAtOnce(t *testing.T) {
	for _, how := range []string{"ctx", "stop"} {
		t.Run(how, func(t *testing.T) {
			_, cons := setup(t, time.Hour, 8)
			pool := workerpool.New(4)
			defer pool.Stop()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			g, stats := newGate(), new(natsfeed.Stats)
			opened := sync.OnceFunc(func() { close(g.open) })
			defer opened() // before pool.Stop, which waits for the handlers
			wait := run(ctx, pool, cons, g.handler, natsfeed.WithStats(stats), natsfeed.WithErrorHandler(func(error) {}))
			eventually(t, func() bool { return g.inside.Load() == 4 && pool.WaitingQueueSize() == 4 }, "4 handlers running, 4 messages waiting")
			require.Equal(t, 8, info(t, cons).NumAckPending, "pending on the server: the default bound, twice the pool's size")
			if how == "ctx" {
				cancel()
			} else {
				go pool.Stop()
			}
			// The stream has no other message: what comes is given back.
			batch, err := cons.Fetch(4, jetstream.FetchMaxWait(30*time.Second))
			require.NoError(t, err, "fetch")
			var again []uint64
			for msg := range batch.Messages() {
				again = append(again, delivered(msg))
				assert.NoError(t, msg.DoubleAck(context.Background()), "ack a redelivery")
			}
			assert.Equal(t, []uint64{2, 2, 2, 2}, again, "delivery counts of the messages fetched while the handlers run")
			assert.Equal(t, int64(4), g.inside.Load(), "handlers still running")
			assert.Equal(t, int64(4), stats.Counts().Nacked, "given back")
			opened()
			err = wait()
			if how == "ctx" {
				require.NoError(t, err, "Feed")
			} else {
				require.ErrorIs(t, err, workerpool.ErrStopped, "Feed")
			}
			assert.Equal(t, natsfeed.Counts{Taken: 8, Acked: 4, Nacked: 4, MaxInFlight: 8}, stats.Counts(), "counts")
			assert.Equal(t, int64(4), g.entered.Load(), "handlers run")
			assert.Equal(t, 0, info(t, cons).NumAckPending, "pending on the server at the end")
		})
	}
}

func TestFeedWithCancelOnStopEndsTheHandlersContext(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 10)
	pool := workerpool.New(10)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	var inside atomic.Int64
	stats := new(natsfeed.Stats)
	wait := run(ctx, pool, cons, func(hctx context.Context, msg jetstream.Msg) error {
		inside.Add(1)
		<-hctx.Done()
		return hctx.Err()
	}, natsfeed.WithCancelOnStop(), natsfeed.WithStats(stats))
	eventually(t, func() bool { return inside.Load() == 10 }, "10 handlers running")
	cancel()
	require.NoError(t, wait(), "Feed")
	assert.Equal(t, natsfeed.Counts{Taken: 10, Nacked: 10, MaxInFlight: 10}, stats.Counts(), "counts")
}

// TestFeedHandlersCtxCarriesFeedsValuesAndOutlivesIt: the handler's ctx
// carries the values of Feed's ctx and, without WithCancelOnStop, does not
// end with it: a handler that ends Feed's ctx still sees the value and no
// error on its own, and its message is acked.
func TestFeedHandlersCtxCarriesFeedsValuesAndOutlivesIt(t *testing.T) {
	type key struct{}
	_, cons := setup(t, 30*time.Second, 1)
	pool := workerpool.New(1)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	var got atomic.Value
	stats := new(natsfeed.Stats)
	wait := run(ctx, pool, cons, func(hctx context.Context, msg jetstream.Msg) error {
		cancel()
		time.Sleep(50 * time.Millisecond)
		got.Store(fmt.Sprintf("%v %v", hctx.Value(key{}), hctx.Err()))
		return nil
	}, natsfeed.WithStats(stats))
	require.NoError(t, wait(), "Feed")
	assert.Equal(t, "v <nil>", got.Load(), "the handler's ctx: value and error after Feed's ctx ended")
	assert.Equal(t, natsfeed.Counts{Taken: 1, Acked: 1, MaxInFlight: 1}, stats.Counts(), "counts")
}

func TestFeedNaksWhatThePoolRefusesAndEndsWhenItStops(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 3)
	// One worker, room for one waiting task, refusals beyond: a task of
	// the test's own takes the worker and the place, so the feed's first
	// message is refused.
	pool := workerpool.New(1, workerpool.WithMaxWaiting(1, workerpool.Reject))
	busy, queued := make(chan struct{}), make(chan struct{})
	require.NoError(t, pool.Do(func() { <-busy }), "busy task")
	require.NoError(t, pool.Do(func() { <-queued }), "queued task")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var reported []error
	stats := new(natsfeed.Stats)
	var handled atomic.Int64
	wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error {
		handled.Add(1)
		return nil
	}, natsfeed.WithStats(stats), natsfeed.WithErrorHandler(func(err error) {
		mu.Lock()
		reported = append(reported, err)
		mu.Unlock()
	}))
	eventually(t, func() bool { return stats.Counts().Nacked >= 1 }, "a refused message nak'd")
	mu.Lock()
	require.NotEmpty(t, reported, "errors reported")
	assert.ErrorIs(t, reported[0], workerpool.ErrQueueFull, "the refusal reported")
	mu.Unlock()
	close(busy)
	close(queued)
	eventually(t, func() bool { return stats.Counts().Acked == 3 }, "the three messages acked once the pool has room")

	// A stopped pool ends Feed with ErrStopped.
	pool.Stop()
	assert.ErrorIs(t, wait(), workerpool.ErrStopped, "Feed's error once the pool stopped")
	c := stats.Counts()
	assert.Equal(t, c.Taken, c.Acked+c.Nacked, "every message taken was acked or nak'd")
	assert.Equal(t, int64(3), handled.Load(), "handled")
	assert.Equal(t, 0, info(t, cons).NumAckPending, "unacked on the server")
}

func TestFeedRefusesBadInput(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 0)
	pool := workerpool.New(1)
	defer pool.Stop()
	h := func(context.Context, jetstream.Msg) error { return nil }
	ctx := context.Background()
	stopped := workerpool.New(1)
	stopped.Stop()
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"nil ctx", natsfeed.Feed(nil, pool, cons, h), "natsfeed: Feed called with a nil context"}, //lint:ignore SA1012 the nil context is the input under test
		{"nil pool", natsfeed.Feed(ctx, nil, cons, h), "natsfeed: Feed called with a nil pool"},
		{"nil consumer", natsfeed.Feed(ctx, pool, nil, h), "natsfeed: Feed called with a nil consumer"},
		{"nil handler", natsfeed.Feed(ctx, pool, cons, nil), "natsfeed: Feed called with a nil handler"},
		{"stopped pool", natsfeed.Feed(ctx, stopped, cons, h), "natsfeed: workerpool: pool stopped"},
		{"WithMaxInFlight(0)", natsfeed.Feed(ctx, pool, cons, h, natsfeed.WithMaxInFlight(0)), "natsfeed: WithMaxInFlight(0): n must be at least 1"},
		{"WithFetchWait(0)", natsfeed.Feed(ctx, pool, cons, h, natsfeed.WithFetchWait(0)), "natsfeed: WithFetchWait(0s): d must be from 1ms to 1h0m0s"},
		{"WithFetchWait(2h)", natsfeed.Feed(ctx, pool, cons, h, natsfeed.WithFetchWait(2*time.Hour)), "natsfeed: WithFetchWait(2h0m0s): d must be from 1ms to 1h0m0s"},
		{"WithBackoff(nil)", natsfeed.Feed(ctx, pool, cons, h, natsfeed.WithBackoff(nil)), "natsfeed: WithBackoff(nil)"},
		{"WithProgress(-1s)", natsfeed.Feed(ctx, pool, cons, h, natsfeed.WithProgress(-time.Second)), "natsfeed: WithProgress(-1s): every must be at least 1ms"},
		{"WithErrorHandler(nil)", natsfeed.Feed(ctx, pool, cons, h, natsfeed.WithErrorHandler(nil)), "natsfeed: WithErrorHandler(nil)"},
		{"WithStats(nil)", natsfeed.Feed(ctx, pool, cons, h, natsfeed.WithStats(nil)), "natsfeed: WithStats(nil)"},
		{"WithTaskOption with a Retry", natsfeed.Feed(ctx, pool, cons, h, natsfeed.WithTaskOption(workerpool.TaskOption{Retry: workerpool.Backoff(0, 0, 3)})),
			"natsfeed: WithTaskOption: Retry must be nil (WithBackoff sets how a failed message is redelivered)"},
		{"first bad option", natsfeed.Feed(ctx, pool, cons, h, natsfeed.WithFetchWait(-1), natsfeed.WithMaxInFlight(-2)), "natsfeed: WithFetchWait(-1ns): d must be from 1ms to 1h0m0s"},
	} {
		assert.EqualError(t, c.err, c.want, c.name)
	}
	assert.ErrorIs(t, natsfeed.Feed(ctx, stopped, cons, h), workerpool.ErrStopped, "stopped pool")
	assert.Equal(t, uint64(0), pool.Status().Submitted, "nothing submitted")
	assert.Equal(t, uint64(0), info(t, cons).Delivered.Consumer, "nothing delivered")
}

// TestFeedWithADoneCtxReturnsNilAndSendsNoPullRequest: Feed with a ctx
// that is done already, canceled or past its deadline, returns nil at
// once, counts nothing and sends no pull request: the server delivers
// nothing.
func TestFeedWithADoneCtxReturnsNilAndSendsNoPullRequest(t *testing.T) {
	_, cons := setup(t, 30*time.Second, 5)
	counting := &countingConsumer{Consumer: cons}
	pool := workerpool.New(2)
	defer pool.Stop()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for name, ctx := range map[string]context.Context{"canceled": canceled, "deadline passed": expired} {
		stats := new(natsfeed.Stats)
		err, ok := runGuarded(ctx, pool, counting, func(context.Context, jetstream.Msg) error { return nil }, natsfeed.WithStats(stats))(time.Minute)
		require.True(t, ok, "%s: Feed returned", name)
		assert.NoError(t, err, "%s: Feed", name)
		assert.Zero(t, stats.Counts(), "%s: counts", name)
	}
	assert.Zero(t, counting.fetches.Load(), "pull requests")
	assert.Equal(t, uint64(0), info(t, cons).Delivered.Consumer, "delivered")
}

// TestFeedProgressOutlivesAckWait runs a handler three times as long as
// the consumer's AckWait: with progress beats the message is not
// redelivered; without them (the control) it is.
func TestFeedProgressOutlivesAckWait(t *testing.T) {
	for _, beats := range []bool{true, false} {
		t.Run(fmt.Sprintf("progress=%v", beats), func(t *testing.T) {
			const ackWait = time.Second
			_, cons := setup(t, ackWait, 1)
			pool := workerpool.New(2)
			defer pool.Stop()
			ctx, cancel := context.WithCancel(context.Background())
			var redelivered atomic.Bool
			first := make(chan struct{})
			opts := []natsfeed.Option{}
			if beats {
				opts = append(opts, natsfeed.WithProgress(ackWait/5))
			}
			wait := run(ctx, pool, cons, func(ctx context.Context, msg jetstream.Msg) error {
				if delivered(msg) > 1 {
					redelivered.Store(true)
					return nil
				}
				defer close(first)
				time.Sleep(3 * ackWait) // the work: longer than AckWait
				return nil
			}, opts...)
			<-first
			cancel()
			require.NoError(t, wait(), "Feed")
			assert.Equal(t, !beats, redelivered.Load(), "redelivered while the handler ran")
		})
	}
}

// TestFeedAsksNoMoreThanMaxRequestBatch gives a pool of 8 a consumer that
// refuses pull requests for more than 2 messages: Feed asks for 2 at a
// time and meets no refusal.
func TestFeedAsksNoMoreThanMaxRequestBatch(t *testing.T) {
	s := startServer(t, "")
	js := connect(t, s.ClientURL())
	ctx := context.Background()
	st, err := js.CreateOrUpdateStream(ctx, jobsConfig)
	require.NoError(t, err, "stream")
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "workers", AckPolicy: jetstream.AckExplicitPolicy, MaxRequestBatch: 2,
	})
	require.NoError(t, err, "consumer")
	registerConsumer(js, cons)
	publish(t, js, 100)
	pool := workerpool.New(8)
	defer pool.Stop()
	fctx, cancel := context.WithCancel(ctx)
	stats := new(natsfeed.Stats)
	var reported atomic.Int64
	wait := run(fctx, pool, cons, func(context.Context, jetstream.Msg) error { return nil },
		natsfeed.WithStats(stats), natsfeed.WithErrorHandler(func(err error) {
			reported.Add(1)
			t.Log(err)
		}))
	eventually(t, func() bool { return stats.Counts().Acked == 100 }, "100 acked")
	cancel()
	require.NoError(t, wait(), "Feed")
	assert.Equal(t, int64(0), reported.Load(), "errors reported")
}
