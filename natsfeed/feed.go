package natsfeed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A Handler does the work a message asks for. It runs on a worker of the
// pool given to Feed, and its result settles the message: nil acknowledges
// it, an error marked with [workerpool.Permanent] (retrying cannot cure
// it) terminates it, any other error gives it back for redelivery after
// the backoff delay, and so does a panic, which Feed recovers and reports.
// ctx carries Feed's ctx's values; it ends with Feed's ctx only under
// WithCancelOnStop. A Handler must not settle msg itself, and must be
// idempotent: see the package documentation.
type Handler func(ctx context.Context, msg jetstream.Msg) error

// errAbandoned is the failure passed to the backoff policy for a handler
// that panicked or called runtime.Goexit.
var errAbandoned = errors.New("natsfeed: handler panicked or called runtime.Goexit")

// defaultAckWait is JetStream's AckWait when the consumer's is not known.
const defaultAckWait = 30 * time.Second

// defaultMaxBatch caps one pull request, as Consume's default batch does:
// a larger pool asks in several requests.
const defaultMaxBatch = 500

// ackRetryFirst and ackRetryMax bound the pauses between tries of a failed
// acknowledgement; ackTryTimeout bounds one try's wait for the server.
const (
	ackRetryFirst = 50 * time.Millisecond
	ackRetryMax   = 2 * time.Second
	ackTryTimeout = 2 * time.Second
)

// Feed runs h on pool for the messages of cons, a pull consumer with
// explicit acknowledgement, until ctx is done.
//
// Feed holds at most a bound of messages at once: that of WithMaxInFlight,
// or by default what keeps the pool's workers busy, from twice to eight
// times the pool's size, by the ratio of the round trip to the server to
// the handlers' time, as Feed measures them (see WithMaxInFlight; read
// before each pull request, so that a Resize takes effect). A message
// counts from the moment Feed asks for it until it is settled: while the
// pull request is on its way, while the message waits in the pool's queue,
// while its handler runs and while its acknowledgement waits for the
// server's confirmation (off the worker, which takes the next message).
// So the process never holds more unsettled messages than the bound, the
// server never counts more as pending for it but for the naks it has not
// processed yet, those that wait out their delay, and the messages Feed
// failed to settle (see the package doc), and a cluster of processes holds no more than the sum of theirs.
// Within the bound Feed fetches ahead: whenever it holds fewer than the
// bound it keeps a pull request out for the difference (a second
// request goes out while one is out once a quarter of the bound is free;
// never more than two, nor more than the consumer's MaxWaiting),
// and the messages that come wait in the pool's queue, so that a worker that
// finishes a message finds the next one there instead of waiting a round
// trip to the server (see WithMaxInFlight to size the bound). Feed counts
// only its own messages: other work on the same pool shares its workers.
// Messages held at once reach the pool in no set order (each waits for it
// on a goroutine of its own); a bound of 1 runs them one at a time, in the
// order the server delivers them.
// One pull request asks for at most 500 messages, or the consumer's
// MaxRequestBatch if that is lower, and waits at most the fetch wait, or
// the consumer's MaxRequestExpires if that is lower. The bound is each
// Feed's: several Feeds on one pool hold up to the sum of theirs.
//
// Each message is settled by what h does with it:
//   - returns nil: acknowledged, and confirmed by the server (as DoubleAck
//     does), off the worker: the worker runs the next message while the
//     confirmation is on its way, and the message counts against the bound
//     until it comes. A failed acknowledgement is reported and tried again
//     until it succeeds or the consumer's AckWait since the message arrived
//     or was last beaten (since the first try, under WithProgress) has
//     passed; then the
//     message counts as Unsettled and the server redelivers it.
//   - returns an error marked with [workerpool.Permanent] (or wrapping
//     one; any error with a method Permanent() bool that reports true
//     counts, as errors.As finds it): terminated, with the error's text
//     (its first 1024 bytes) as the reason.
//   - returns its ctx's error after Feed's ctx ended, under
//     WithCancelOnStop: given back as the drain gives back what waits
//     (below), whatever the policy says; a drain is not a failure.
//   - returns another error: nak'd with the delay the backoff policy gives
//     for the message's delivery count (WithBackoff), or terminated if the
//     policy gives up.
//   - panics or calls runtime.Goexit: nak'd with the policy's delay (never
//     terminated), and reported to the error handler with the pool's
//     [*workerpool.PanicError] (the panic value and the stack) or
//     [workerpool.ErrGoexit]. The task's handle recovers the panic, as
//     every handle does: the pool counts it in Status.Panicked and logs it,
//     its Hooks.Panic is not called, and the program does not crash. So
//     does a panic or runtime.Goexit in the backoff policy, whose message
//     is nak'd with the fetch wait as the delay (the policy is not asked
//     again).
//   - never runs, because the pool refused it or gave it up: reported, and
//     given back if the pool stopped (as a drain does, below; this also
//     ends Feed),
//     or with the fetch wait as the delay for a full queue (Reject,
//     DropOldest, WithQueueTimeout); then its place stays taken for the
//     fetch wait, so that Feed does not take message after message for a
//     pool that refuses them all.
//
// A message fetched ahead waits in the pool's queue while the consumer's
// AckWait runs. So that the queue does not eat its handler's time, Feed
// beats it (InProgress, which restarts AckWait) once it has waited half
// of AckWait, and again when a worker takes it if it has waited a tenth
// of AckWait since: its handler has at least nine tenths of AckWait, and
// normally all of it (a message that waits less than a tenth of AckWait
// is not beaten). Under WithProgress every message is beaten every period
// instead. A message's beats stop, and the beat in flight is sent, before
// its acknowledgement, nak or term: the server never sees a beat after
// the settlement.
//
// When ctx is done, Feed sends no more pull requests and drains: it gives
// back every message that waits in the pool's queue, and every message
// the pull requests it has sent still bring (it lets them finish, at most
// the fetch wait), with a nak of no delay, so that the server redelivers
// them at once, to another process or a later Feed, instead of after
// AckWait. The naks go out once the last of those pull requests has
// ended (at once if none is out), so that the feed's own request cannot
// take back what it gives back. It waits until every running handler has
// returned and its message is settled (with WithCancelOnStop, their ctx
// ends), and returns nil. A
// given-back message still takes a worker for a moment, to be skipped,
// so a paused pool holds the drain until the Pause ends. Feed never stops
// the pool. If the pool stops first, Feed does the same (the messages
// the pool abandoned are given back) and returns an error wrapping
// [workerpool.ErrStopped]. Errors on the way (fetches, acknowledgements)
// never end Feed: they are reported to the error handler
// (WithErrorHandler) and retried.
//
// Feed returns an error at once, before taking any message, for a nil ctx,
// pool, consumer or handler, a pool not made by [workerpool.New] (the zero
// WorkerPool), a stopped pool, a bad option (WithProgress's period must
// also be below the consumer's AckWait), or a consumer it cannot serve: one whose acknowledgement is not explicit (AckNone, as
// ordered consumers have, or AckAll, where one ack settles every earlier
// message), or one with priority groups. Several Feeds may share one pool
// and one consumer. Feed reads cons's cached info (CachedInfo) as it
// starts, which nats.go does not synchronize with that handle's Info
// (nats-io/nats.go#2151): ask for the consumer's state through another
// handle (JetStream.Consumer) while Feed starts. Feed must not run on a worker of pool: it would hold
// that worker for as long as it runs (with one worker, the messages it
// takes never run).
func Feed(ctx context.Context, pool *workerpool.WorkerPool, cons jetstream.Consumer, h Handler, opts ...Option) error {
	f, err := newFeed(ctx, pool, cons, h, opts)
	if err != nil {
		return err
	}
	stopBeats := f.beat()
	drain := sync.OnceFunc(f.drain)
	stopDrain := context.AfterFunc(ctx, drain)
	err = f.fetchUntil(ctx)
	// ctx may be done while its AfterFunc has not begun yet, and then
	// stopDrain stops it: the drain runs here, or waits for the run begun.
	stopDrain()
	if ctx.Err() != nil {
		drain()
	}
	f.outstanding.Wait()
	stopBeats()
	return err
}

// A feed is one call of Feed.
type feed struct {
	pool       *workerpool.WorkerPool
	cons       jetstream.Consumer
	h          Handler
	cfg        config
	stats      *Stats
	ctx        context.Context // Feed's
	handlerCtx context.Context
	ackWait    time.Duration         // the consumer's: how long an acknowledgement is worth trying
	maxBatch   int                   // the most messages one pull request asks for
	maxPulls   int                   // the most pull requests out at once: maxPulls, or the consumer's MaxWaiting if lower
	task       workerpool.TaskOption // the options of every message's task (see WithTaskOption)
	pace       pace                  // measured for the default bound: not under WithMaxInFlight

	// held counts the messages the feed holds or has asked for, against
	// the bound. The fetch loop adds a pull request's batch before sending
	// it and gives back what did not come; a delivery gives back its
	// place once it is settled.
	held     atomic.Int64
	fetching sync.WaitGroup // the goroutines of the pull requests out
	freed    chan struct{}  // buffered 1: a give-back or a finished request wakes the fetch loop waiting for room
	// outstanding counts the deliveries whose goroutine runs; Feed returns
	// once it reaches zero.
	outstanding sync.WaitGroup

	// mu guards holding, pulls, stopping and back, and makes a round of
	// beats and the start of a settlement exclusive: the beater sends its
	// beats holding mu, and a settlement takes its message off holding
	// under mu before it sends anything, so no beat of a message follows
	// its settlement.
	mu sync.Mutex
	// holding lists the messages received and not yet settling: waiting in
	// the pool's queue or running. The beater beats them; the drain gives
	// back those still waiting.
	holding ring
	pulls   int // pull requests out: sent by the fetch loop, ended by fetch
	// stopping is set once ctx ended or the pool was found stopped: no
	// pull request goes out after it, and the messages that arrive are
	// given back.
	stopping bool
	// back holds the messages given back while a pull request is out:
	// nak'd at once, the request could take them again. The last request
	// to end naks them.
	back []*delivery
}

var errPoolStopped = fmt.Errorf("natsfeed: %w", workerpool.ErrStopped)

func newFeed(ctx context.Context, pool *workerpool.WorkerPool, cons jetstream.Consumer, h Handler, opts []Option) (*feed, error) {
	switch {
	case ctx == nil:
		return nil, errors.New("natsfeed: Feed called with a nil context")
	case pool == nil:
		return nil, errors.New("natsfeed: Feed called with a nil pool")
	case cons == nil || isNilPointer(cons):
		return nil, errors.New("natsfeed: Feed called with a nil consumer")
	case h == nil:
		return nil, errors.New("natsfeed: Feed called with a nil handler")
	case !madeByNew(pool):
		return nil, errors.New("natsfeed: Feed called with a pool not made by workerpool.New (the zero WorkerPool is not usable)")
	case pool.Stopped():
		return nil, errPoolStopped
	}
	cfg := newConfig(opts)
	if cfg.err != nil {
		return nil, cfg.err
	}
	f := &feed{
		pool: pool, cons: cons, h: h, cfg: cfg,
		stats:      cfg.stats,
		ctx:        ctx,
		handlerCtx: context.WithoutCancel(ctx),
		ackWait:    defaultAckWait,
		maxBatch:   defaultMaxBatch,
		maxPulls:   maxPulls,
		freed:      make(chan struct{}, 1),
	}
	f.holding.init()
	if f.stats == nil {
		f.stats = new(Stats)
	}
	if cfg.cancelOnStop {
		f.handlerCtx = ctx
	}
	f.task = cfg.task
	if f.task.Label == "" {
		f.task.Label = consumerName(cons)
	}
	if info := cons.CachedInfo(); info != nil {
		if err := f.fit(info.Config); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// consumerName is the name of cons, as the client last learned it, or ""
// if it never did.
func consumerName(cons jetstream.Consumer) string {
	if info := cons.CachedInfo(); info != nil {
		return info.Name
	}
	return ""
}

// madeByNew reports whether pool was made by workerpool.New: the zero
// WorkerPool, which is not usable, has no size (its Size is 0, or
// panics).
func madeByNew(pool *workerpool.WorkerPool) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return pool.Size() >= 1
}

// isNilPointer reports whether v is a nil pointer of some type.
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// fit takes the consumer's settings that bound the feed's, and refuses a
// consumer Feed cannot serve, or a progress period it makes useless.
func (f *feed) fit(c jetstream.ConsumerConfig) error {
	switch {
	case c.AckPolicy != jetstream.AckExplicitPolicy:
		return fmt.Errorf("natsfeed: consumer %s acknowledges with %v; Feed needs explicit acknowledgement (AckExplicitPolicy)", c.Name, c.AckPolicy)
	case len(c.PriorityGroups) > 0:
		return fmt.Errorf("natsfeed: consumer %s has priority groups, which Feed's pull requests cannot name", c.Name)
	}
	if c.AckWait > 0 {
		f.ackWait = c.AckWait
		if f.cfg.progress >= c.AckWait { // every beat would come after the redelivery
			return fmt.Errorf("natsfeed: WithProgress(%v): every must be below the AckWait of consumer %s (%v)", f.cfg.progress, c.Name, c.AckWait)
		}
	}
	if c.MaxRequestBatch > 0 {
		f.maxBatch = min(f.maxBatch, c.MaxRequestBatch)
	}
	if c.MaxWaiting > 0 { // the server refuses a request beyond it
		f.maxPulls = min(f.maxPulls, c.MaxWaiting)
	}
	if c.MaxRequestExpires > 0 {
		f.cfg.fetchWait = min(f.cfg.fetchWait, c.MaxRequestExpires)
	}
	return nil
}

// fetchUntil sends pull requests until ctx is done (nil) or the pool is
// found stopped (errPoolStopped), and returns once every request it sent
// has finished.
func (f *feed) fetchUntil(ctx context.Context) error {
	defer f.fetching.Wait()
	for {
		k := f.room(ctx)
		if k == 0 || !f.startPull(k) {
			break
		}
		go f.fetch(ctx, k)
	}
	if f.pool.Stopped() { // also whenever a delivery was refused with ErrStopped
		f.stop()
		return errPoolStopped
	}
	return nil
}

// maxPulls is the most pull requests out at once: one, and another for
// the places freed while it is out.
const maxPulls = 2

// startPull takes k places for a pull request about to go out, unless the
// feed is stopping.
func (f *feed) startPull(k int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopping {
		return false
	}
	f.pulls++
	f.held.Add(int64(k))
	f.fetching.Add(1)
	return true
}

// endPull ends a pull request: once the feed is stopping, the last one
// out naks what was given back while it was out. nats.go's Fetch ends on
// the server's word: the request's batch is full (the server drops the
// request with its last message) or it expired (the server drops it, then
// answers 408), so no nak sent here reaches a request of the feed. (Fetch
// also ends on its own, a second past the fetch wait with no word from
// the server, or on a missed heartbeat under a fetch wait of 10s or more,
// when the server may still hold the request: Fetch unsubscribes as it
// ends, on its own goroutine, normally before these naks go out, and the
// server drops a request nobody listens to rather than deliver to it.)
func (f *feed) endPull() {
	f.mu.Lock()
	f.pulls--
	var back []*delivery
	if f.pulls == 0 {
		back, f.back = f.back, nil
	}
	f.mu.Unlock()
	for _, d := range back {
		d.sendNak(0)
	}
}

// stop makes the feed stop pulling: no pull request goes out after it.
func (f *feed) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopping = true
}

// pullsOut is the number of pull requests out.
func (f *feed) pullsOut() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pulls
}

// bound is the most messages the feed may hold: WithMaxInFlight's, or the
// default that keeps the pool's workers busy (see defaultBound), for the
// pool's size of the moment.
func (f *feed) bound() int {
	if f.cfg.maxInFlight > 0 {
		return f.cfg.maxInFlight
	}
	return defaultBound(f.pool.Size(), time.Duration(f.pace.roundTrip.Load()), time.Duration(f.pace.task.Load()))
}

// room waits until the feed may send a pull request, and returns how many
// messages it may ask for (at most maxBatch), or 0 once ctx is done or the
// pool stopped: the difference between the bound and what the feed holds
// or has asked for, when no request is out; when one is, only once that
// difference is a quarter of the bound, so that a place freed while a
// request is out waits for a few others rather than costing a request of
// its own; when f.maxPulls are out, none.
func (f *feed) room(ctx context.Context) int {
	for ctx.Err() == nil && !f.pool.Stopped() {
		bound, pulls := f.bound(), f.pullsOut()
		least := 1
		if pulls > 0 {
			least = max(1, bound/4)
		}
		if k := bound - int(f.held.Load()); pulls < f.maxPulls && k >= least {
			return min(k, f.maxBatch)
		}
		// A settle or a finished request wakes the loop; the fetch wait
		// rechecks the pool's size, which a Resize may have raised.
		recheck := time.NewTimer(f.cfg.fetchWait)
		select {
		case <-f.freed:
		case <-recheck.C:
		case <-ctx.Done():
		}
		recheck.Stop()
	}
	return 0
}

// fetch sends one pull request for k messages, whose places are taken,
// hands out what comes, and gives back the places of those that did not
// come. A request that failed keeps them for the fetch wait (or until ctx
// is done), so that a failing server gets a request per fetch wait, not a
// stream of them.
func (f *feed) fetch(ctx context.Context, k int) {
	defer f.fetching.Done()
	n := 0
	batch, err := f.cons.Fetch(k, jetstream.FetchMaxWait(f.cfg.fetchWait))
	if err == nil {
		for msg := range batch.Messages() {
			n++
			f.deliver(msg)
		}
		err = batch.Error()
	}
	if err != nil {
		f.report(fmt.Errorf("natsfeed: fetch: %w", err))
		sleep(ctx, f.cfg.fetchWait)
	}
	f.endPull()
	f.give(k - n)
}

// give gives back n places, and wakes the fetch loop.
func (f *feed) give(n int) {
	f.held.Add(-int64(n))
	select {
	case f.freed <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// report passes err to the error handler.
func (f *feed) report(err error) {
	f.cfg.onError(err)
}

// deliver starts settling msg: its goroutine waits for the pool to run it.
// A message that arrives once the feed is stopping is given back.
func (f *feed) deliver(msg jetstream.Msg) {
	d := &delivery{f: f, msg: msg, beaten: time.Now(), attempt: deliveryCount(msg)}
	f.stats.took(uint64(d.attempt))
	f.mu.Lock()
	stopping := f.stopping
	if !stopping {
		f.holding.push(d)
	}
	f.mu.Unlock()
	if stopping {
		d.giveBack()
		f.give(1)
		return
	}
	f.outstanding.Add(1)
	go d.run()
}

// drain runs once Feed's ctx is done: it stops the pulling, gives back
// every message that waits in the pool's queue, and makes deliver give
// back those still to come.
func (f *feed) drain() {
	var now []*delivery
	f.mu.Lock()
	f.stopping = true
	for d := f.holding.next; d != &f.holding.delivery; {
		next := d.next
		if !d.running && f.giveBackLocked(d) {
			now = append(now, d)
		}
		d = next
	}
	f.mu.Unlock()
	for _, d := range now {
		d.sendNak(0) // its task, when a worker takes it, finds it off holding and returns
	}
}

// beat sends InProgress, until the returned stop is called, for the
// messages the feed holds and has not begun to settle: under WithProgress
// for each, every progress period; without it every tenth of AckWait for
// each that waits in the pool's queue and has not been beaten (or
// delivered) for half of AckWait. stop returns once the beats have ended.
func (f *feed) beat() (stop func()) {
	period := f.cfg.progress
	if period <= 0 {
		period = max(f.ackWait/10, time.Millisecond)
	}
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				f.beatAll()
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

// beatAll sends one beat for each message on holding (without
// WithProgress, for each waiting in the pool's queue for half of AckWait
// since its last beat), holding mu: a settlement waits for the round to
// end before it takes its message off.
func (f *feed) beatAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	for d := f.holding.next; d != &f.holding.delivery; d = d.next {
		if f.cfg.progress > 0 || !d.running && now.Sub(d.beaten) >= f.ackWait/2 {
			d.beatLocked(now)
		}
	}
}

// beatLocked sends a beat for a message on holding, with the feed's mu
// held: the server restarts its AckWait.
func (d *delivery) beatLocked(now time.Time) {
	if err := d.msg.InProgress(); err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
		d.f.report(fmt.Errorf("natsfeed: progress %v: %w", d, err))
		return
	}
	d.beaten = now
}

// deliveryCount is the server's count of msg's deliveries, this one
// included.
func deliveryCount(msg jetstream.Msg) int {
	md, err := msg.Metadata()
	if err != nil || md.NumDelivered < 1 {
		return 1
	}
	return int(min(md.NumDelivered, math.MaxInt))
}

// sleep waits for d, or until ctx is done; it reports whether ctx is
// still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// A ring is a circular list of deliveries, linked through their own
// fields; its zero value must be init'ed. The feed's mu guards it.
type ring struct{ delivery }

func (r *ring) init() { r.next, r.prev = &r.delivery, &r.delivery }

func (r *ring) push(d *delivery) {
	d.prev, d.next = r.prev, &r.delivery
	r.prev.next = d
	r.prev = d
	d.linked = true
}

func (r *ring) remove(d *delivery) {
	d.prev.next, d.next.prev = d.next, d.prev
	d.prev, d.next = nil, nil
	d.linked = false
}

// A delivery is one message the feed holds, from its arrival until it is
// settled. Its goroutine waits on the Task of the pool's Go while a worker
// runs handle, and then acknowledges the message if the handler returned
// nil: the worker is free for the next message while the server confirms.
// The worker settles a failure itself (a nak or term is sent without
// waiting), also one whose handler or backoff policy panics or calls
// runtime.Goexit, which the Task then reports. began, returned, handled,
// settled and asked are written by the worker, then read by the goroutine
// after the Task's Wait; linked, running, prev and next are guarded by the
// feed's mu.
type delivery struct {
	f   *feed
	msg jetstream.Msg
	// beaten is when the server last restarted the message's AckWait: its
	// arrival, or its last beat. Written under the feed's mu while it is on
	// holding; read by ack once it is off.
	beaten   time.Time
	attempt  int  // the server's delivery count, 1 on the first
	began    bool // a worker took it and called the handler
	returned bool // the handler returned
	handled  bool // the handler returned nil: acknowledge
	settled  bool // nak'd or terminated
	asked    bool // the backoff policy was called for it: never twice

	linked     bool // on the feed's holding: beaten, and not settling yet
	running    bool // a worker took it: the drain leaves it to its handler
	prev, next *delivery
}

// run has the pool run the message's handler, acknowledges it, reports a
// handler that did not return (handle nak'd its message), or settles the
// message if the pool never ran it. The task's ctx is context.Background:
// the drain, not a canceled ctx, takes back what waits in the queue.
func (d *delivery) run() {
	defer d.f.outstanding.Done()
	switch err := d.f.pool.Go(context.Background(), d.task, d.f.task).Wait(); {
	case err != nil && d.began:
		d.f.report(d.didNotReturn(err))
	case err != nil:
		d.notRun(err)
	case d.handled:
		d.release()
		d.ack()
	}
	d.f.give(1)
}

// start marks the message taken by a worker, and reports false if the
// drain gave it back first. Without WithProgress, a message that waited in
// the pool's queue for a tenth of AckWait since its last beat is beaten
// now, so that its handler has the whole AckWait.
func (d *delivery) start() bool {
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	d.running = d.linked
	if now := time.Now(); d.running && d.f.cfg.progress <= 0 && now.Sub(d.beaten) >= d.f.ackWait/10 {
		d.beatLocked(now)
	}
	return d.running
}

// release takes the message off the feed's holding, once the beat in
// flight (if any) is sent: no beat follows. It reports false if the
// message was off already (the drain gave it back).
func (d *delivery) release() bool {
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	if !d.linked {
		return false
	}
	d.f.holding.remove(d)
	return true
}

// task is the message's task on the pool: it handles the message, and
// returns nil; a panic or runtime.Goexit on the way is the Task's to
// report (see run).
func (d *delivery) task(context.Context) error {
	d.handle()
	return nil
}

// handle runs on a worker: the handler, and the settlement of a failure.
// A panic or Goexit on the way naks the message before it goes on to the
// pool, which recovers it into the Task's error. A message the drain gave
// back is skipped.
func (d *delivery) handle() {
	if !d.start() {
		return
	}
	d.began = true
	defer d.settleAbandoned()
	called := time.Now()
	err := d.f.h(d.f.handlerCtx, d.msg)
	d.returned = true
	d.f.measure(&d.f.pace.task, called)
	switch {
	case err == nil:
		d.handled = true
	case permanent(err):
		d.term(err)
	case d.f.cfg.cancelOnStop && d.f.handlerCtx.Err() != nil && errors.Is(err, d.f.handlerCtx.Err()):
		d.giveBack() // given up for the drain, not failed: no attempt spent
	default:
		d.retryLater(err)
	}
}

// permanent reports whether err is marked as permanent, as
// workerpool.Permanent marks it: it is, or wraps, an error with a method
// Permanent() bool that reports true.
func permanent(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}

// settleAbandoned settles a message whose handler (or settlement) did not
// return: a nak with the backoff delay, or with the fetch wait if the
// policy does not return (it panics or calls runtime.Goexit). A policy
// asked already, for the handler's error, is not asked again: it is what
// did not return. run reports it, with the Task's error.
func (d *delivery) settleAbandoned() {
	if d.handled || d.settled {
		return
	}
	if d.asked {
		d.nak(d.f.cfg.fetchWait)
		return
	}
	delay := d.f.cfg.fetchWait
	defer func() { d.nak(delay) }() // also when the policy calls runtime.Goexit
	delay = d.abandonedDelay()
}

// abandonedDelay is the policy's delay for an abandoned run, whether or not
// it would retry; a panic in the policy is reported and gives the fetch
// wait.
func (d *delivery) abandonedDelay() (delay time.Duration) {
	defer func() {
		if r := recover(); r != nil {
			d.f.report(fmt.Errorf("natsfeed: backoff policy panicked for %v: %v; nak'd with the fetch wait as delay", d, r))
			delay = d.f.cfg.fetchWait
		}
	}()
	d.asked = true
	delay, _ = d.f.cfg.backoff(d.attempt, errAbandoned)
	return delay
}

// didNotReturn is the error run reports for a message whose handler, or
// the settlement of its result, panicked or called runtime.Goexit (err,
// the Task's error: a *workerpool.PanicError or workerpool.ErrGoexit);
// settleAbandoned nak'd the message on the way out.
func (d *delivery) didNotReturn(err error) error {
	switch {
	case !d.returned:
		return fmt.Errorf("natsfeed: handler did not return for %v; nak'd: %w", d, err)
	case d.asked:
		return fmt.Errorf("natsfeed: backoff policy did not return for %v; nak'd with the fetch wait as delay: %w", d, err)
	default:
		return fmt.Errorf("natsfeed: settling %v did not return; nak'd: %w", d, err)
	}
}

// notRun settles a message the pool refused or gave up, unless the drain
// gave it back first: a stopped pool's at once, for another process to
// take; a full pool's with the fetch wait as delay, and its place stays
// taken for as long, so that the feed does not take message after message
// for a pool that refuses them all.
func (d *delivery) notRun(err error) {
	if !d.release() {
		return
	}
	d.f.report(fmt.Errorf("natsfeed: %v not run: %w", d, err))
	if errors.Is(err, workerpool.ErrStopped) {
		d.giveBack() // the fetch loop sees the pool stopped, and ends
	} else {
		d.nak(d.f.cfg.fetchWait)
		sleep(d.f.ctx, d.f.cfg.fetchWait)
	}
}

// retryLater naks the message with the backoff delay, or terminates it if
// the policy gives up.
func (d *delivery) retryLater(err error) {
	d.asked = true // if the policy does not return, settleAbandoned naks without it
	delay, retry := d.f.cfg.backoff(d.attempt, err)
	if !retry {
		d.term(err)
		return
	}
	d.nak(delay)
}

// ack acknowledges the message and waits for the server to confirm it,
// trying again while that may still help: until the consumer's AckWait
// since the message arrived or was last beaten (since the first try, under
// WithProgress) has passed, when the server redelivers it.
// Each try waits at most ackTryTimeout for the confirmation (a server
// restarted from an older state does not answer), and no try waits past
// that point but the first.
func (d *delivery) ack() {
	from := d.beaten
	if d.f.cfg.progress > 0 {
		from = time.Now() // the beats have kept the message alive until now
	}
	expiry := from.Add(d.f.ackWait)
	for pause := ackRetryFirst; ; pause = min(2*pause, ackRetryMax) {
		err := d.tryAck(expiry)
		if err == nil || errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
			d.f.stats.settled(&d.f.stats.acked)
			return
		}
		d.f.report(fmt.Errorf("natsfeed: ack %v: %w", d, err))
		if final(err) || time.Until(expiry) < pause {
			d.f.report(fmt.Errorf("natsfeed: ack %v: gave up; the server redelivers it after AckWait", d))
			d.f.stats.settled(&d.f.stats.unsettled)
			return
		}
		time.Sleep(pause)
	}
}

// tryAck sends one acknowledgement and waits for its confirmation, for at
// most ackTryTimeout, and no later than expiry if that is sooner and
// still ahead.
func (d *delivery) tryAck(expiry time.Time) error {
	timeout := ackTryTimeout
	if left := time.Until(expiry); left > 0 && left < timeout {
		timeout = left
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	sent := time.Now()
	err := d.msg.DoubleAck(ctx)
	if err == nil {
		d.f.measure(&d.f.pace.roundTrip, sent)
	}
	return err
}

// measure adds the time since began to avg, one of the feed's pace, if the
// default bound needs it.
func (f *feed) measure(avg *atomic.Int64, began time.Time) {
	if f.cfg.maxInFlight == 0 {
		observe(avg, time.Since(began))
	}
}

// final reports whether trying a settlement again cannot help.
func final(err error) bool {
	return errors.Is(err, nats.ErrConnectionClosed) ||
		errors.Is(err, jetstream.ErrMsgNotBound) ||
		errors.Is(err, jetstream.ErrMsgNoReply)
}

// nak gives the message back for redelivery after delay (at once if zero).
// Its beats end first (see release).
func (d *delivery) nak(delay time.Duration) {
	d.release()
	d.settled = true
	d.sendNak(delay)
}

// giveBack gives the message back at once, for a feed that stops (its ctx
// ended, or the pool stopped): with a nak of no delay, sent now if no pull
// request of the feed is out, or else by the last one out when it ends, so
// that the feed does not take the message again itself. The feed stops
// pulling first.
func (d *delivery) giveBack() {
	f := d.f
	d.settled = true
	f.mu.Lock()
	f.stopping = true
	now := f.giveBackLocked(d)
	f.mu.Unlock()
	if now {
		d.sendNak(0)
	}
}

// giveBackLocked takes d off holding, with the feed's mu held, and leaves
// its nak of no delay to the last pull request out, if one is: it reports
// whether none is, and the caller must send the nak once mu is released.
func (f *feed) giveBackLocked(d *delivery) (now bool) {
	if d.linked {
		f.holding.remove(d)
	}
	if f.pulls > 0 {
		f.back = append(f.back, d)
		return false
	}
	return true
}

// sendNak sends the nak of a message off holding, and counts it.
func (d *delivery) sendNak(delay time.Duration) {
	d.count(d.msg.NakWithDelay(delay), "nak", &d.f.stats.nacked)
}

// term ends the message for good, with why as the reason the server
// publishes in its advisory.
func (d *delivery) term(why error) {
	reason := reasonOf(why)
	d.release()
	d.settled = true
	d.count(d.msg.TermWithReason(reason), "term", &d.f.stats.terminated)
}

// maxReason bounds a term's reason: it travels in the ack message, which
// the server's max payload bounds.
const maxReason = 1024

// reasonOf is err's text, cut to maxReason bytes; an error whose Error
// method panics gives a fixed text.
func reasonOf(err error) (reason string) {
	defer func() {
		if recover() != nil {
			reason = "natsfeed: the handler's error cannot be printed"
		}
	}()
	reason = err.Error()
	if len(reason) > maxReason {
		reason = strings.ToValidUTF8(reason[:maxReason], "")
	}
	return reason
}

// count counts a nak or term that was sent, or reports one that failed.
func (d *delivery) count(err error, what string, outcome *atomic.Int64) {
	if err != nil {
		d.f.report(fmt.Errorf("natsfeed: %s %v: %w; the server redelivers it after AckWait", what, d, err))
		outcome = &d.f.stats.unsettled
	}
	d.f.stats.settled(outcome)
}

// String names the message in errors.
func (d *delivery) String() string {
	md, err := d.msg.Metadata()
	if err != nil {
		return "message on " + d.msg.Subject()
	}
	return fmt.Sprintf("message %d of stream %s", md.Sequence.Stream, md.Stream)
}
