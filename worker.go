package workerpool

import (
	"math"
	"sync/atomic"
	"time"
)

// work is what a worker receives on workerQueue: a plain task (fn) or a job.
// The zero work is the nil func that tells a worker to return. readyAt is
// when the task joined the queue (accepted, or come due), on the pool's
// clock, or readyNow if it did not wait there, in a pool whose tasks carry
// it (see waitQueue.stamped).
type work struct {
	fn      func()
	job     *job
	readyAt int64
	// offered says dispatch offered the task while it waited for other
	// events too (see offerFront): a Stop that abandons the queue may come
	// meanwhile, and a worker that takes a plain task so offered once
	// abandoning began gives it up rather than start it.
	offered bool
}

// readyNow is the readyAt of a task handed to a worker as it became ready,
// without waiting in the queue: it waited nothing. (The pool then reads the
// clock for it only as it starts and ends.)
const readyNow = math.MaxInt64

// stops reports whether w is the zero work.
func (w work) stops() bool { return w.fn == nil && w.job == nil }

// worker runs w, then each work it receives from workerQueue, and returns
// when it receives the zero work. Dispatch starts it with its first work,
// in p.goroutines.
func (p *WorkerPool) worker(w work) {
	retired := false // by the zero work, rather than ended by runtime.Goexit
	// e is what is left to do with the work in hand once it is counted
	// returned: tell a job's owner its outcome and let go of it (see
	// ending). e.posted says the job was posted for a retry before its
	// run ended (a TaskFinished hook may then end the goroutine): the pool
	// keeps it, and it counts as posted, not completed.
	var e ending
	defer func() {
		if !retired {
			// The task, or a hook around it, ended this goroutine with
			// runtime.Goexit (or panicked with no handler, and the
			// program is going down). Count it as returned, ended for
			// good unless posted, end it, and let a fresh goroutine take
			// this worker's place, so the worker count dispatch keeps
			// stays true.
			if e.posted {
				p.returned(&p.counts.posted, false)
			} else {
				p.returned(&p.counts.completed, false)
			}
			e.end()
			p.goroutines.Go(p.idleWorker)
		}
	}()
	// While the worker waits in the receive, w and e hold nothing of the
	// last task, so what that task captured can be collected.
	for ; !w.stops(); w = <-p.workerQueue {
		p.returned(p.do(w, &e))
		if e.job != nil || e.posted { // a plain task leaves nothing to do
			e.end()
		}
	}
	retired = true
}

// An ending is what a worker has left to do with the job it ran, once it
// has counted the work returned: tell the owner the outcome of its last
// run, then let go of it (see job.letGo). So by the time a task's Wait
// returns, its worker is free and the slots of its weight and of its key
// are given back: a task submitted next never finds the pool fuller than
// the one before left it.
type ending struct {
	job     *job  // the job the worker is done with; nil for a plain task or a job posted for a retry
	tell    bool  // the job's owner is yet to learn its outcome: err, of a run that ran if ran
	ran     bool  //
	err     error //
	posted  bool  // the job was posted for a retry: the pool keeps it, and the worker leaves it alone
	started bool  // its task's func was called: a Goexit before that (in TaskStarted) means it never ran
}

// end tells the owner and lets go of the job, if the worker has one, and
// readies e for the next work.
func (e *ending) end() {
	j, tell, ran, err := e.job, e.tell, e.ran, e.err
	*e = ending{}
	if j == nil {
		return
	}
	if tell {
		j.owner.conclude(err, ran)
	}
	j.owner.released()
}

// idleWorker is a worker that starts by waiting for work: one that takes
// the place of a worker a task ended with runtime.Goexit, or one that
// WithMinWorkers keeps.
func (p *WorkerPool) idleWorker() {
	p.worker(<-p.workerQueue)
}

// do runs one work, a job or a plain task, and returns the count of
// p.counts its return goes to, and whether it completed with a run
// that panicked (see returned). A plain task completes with its one run;
// what is left to do with a job is in e.
func (p *WorkerPool) do(w work, e *ending) (count *atomic.Uint64, panicked bool) {
	switch {
	case w.job != nil:
		return w.job.work(w.readyAt, e)
	case w.offered && p.sig.abandonBegun.Load():
		p.abandonTaken(w.fn)
		return &p.counts.skipped, false
	case p.cfg.timed:
		panicked = p.obs.runTimed(w.fn, w.readyAt)
	case p.obs.hooks.Panic != nil:
		panicked, _ = p.obs.callPlain(w.fn, nil)
	default:
		w.fn() // no defer on the common path
	}
	return &p.counts.completed, panicked
}

// abandonTaken gives up a plain task that must not start, as abandoning
// (Stop, or a Shutdown that gave up) has begun: one from the queue that a
// worker took, which the dispatcher offered it a moment before (see
// work.offered), or one the dispatcher was to start at once, without room
// (see startAtOnce). It is abandoned as the queue's tasks are: counted,
// and given to the dead-letter handler with ErrStopped.
func (p *WorkerPool) abandonTaken(task func()) {
	p.counts.settled.count(jobAbandoned)
	p.obs.giveUpPlain(task, ErrStopped)
}

// returned counts one work a worker is done with in count, one of
// p.counts, as its last use of the work, and wakes dispatch if it is
// waiting for running tasks to finish (see barriers.barrierReached).
// panicked says the work completed (count is completed) and its last run
// panicked: then it also counts in panicked, once for the task, however
// many of its runs panicked before.
func (p *WorkerPool) returned(count *atomic.Uint64, panicked bool) {
	count.Add(1)
	if panicked {
		// Completed first, then Panicked, so that Panicked never counts a
		// task that Completed does not, and Status, which reads
		// Completed first, clamps Panicked to it for the one case left:
		// both counted between its two reads. Both before the wake, so a
		// barrier or stop that dispatch ends on this return sees them.
		p.counts.panicked.Add(1)
	}
	if p.sig.wakeOnReturn.Load() {
		p.sig.wakeDispatch()
	}
}

// returnedWork is the work that came back from workers: each return is
// counted in exactly one of workerTotals' three counts. Dispatch compares
// it with the work it handed out.
func (p *WorkerPool) returnedWork() uint64 {
	t := &p.counts
	return t.completed.Load() + t.skipped.Load() + t.posted.Load()
}

// crew is the dispatcher's part for its workers: how many live and how
// many may, the floor WithMinWorkers keeps, the work out with them, and
// the idle clock that retires them. The dispatcher owns it; workers only
// count the work they return (see WorkerPool.returned).
type crew struct {
	p          *WorkerPool
	workers    int    // live workers, published in p.counts.workers at once
	max        int    // the most workers: p.size as of the last resize
	floor      int    // the workers kept however idle: min(p.minWorkers, max) as of the last resize
	dispatched uint64 // the work sent to workers; what has not come back is out
	watching   bool   // p.sig.wakeOnReturn is set: workers wake dispatch as they return work (see watch)

	// The idle clock retires workers: while workers above the floor exist,
	// one goroutine at a time waits out an idle period on idle and sends
	// an idleTick request; sawTask says whether a task came in since the
	// last tick. idle is nil when retirement is disabled.
	idle         *time.Timer
	clockRunning bool
	sawTask      bool
}

func (c *crew) init(p *WorkerPool) {
	c.p = p
	c.max = int(p.size.max.Load())
	c.floor = min(int(p.size.floor.Load()), c.max)
	if p.cfg.idleTimeout > 0 {
		c.idle = time.NewTimer(p.cfg.idleTimeout)
		c.idle.Stop() // armed only while workers above the floor exist
	}
}

// atRest reports whether the crew needs nothing from the loop: no return
// is watched and no worker above the size waits to retire.
func (c *crew) atRest() bool { return !c.watching && !c.surplus() }

// wantsWake reports whether workers wake dispatch as they return work.
func (c *crew) wantsWake() bool { return c.watching }

// out is the work sent to workers that has not come back.
func (c *crew) out() uint64 {
	return c.dispatched - c.p.returnedWork()
}

// freeWorker reports whether a task handed out now starts at once: fewer
// workers than the maximum exist, or one is free, as it has returned its
// last work (it is then in, or on its way to, its receive).
func (c *crew) freeWorker() bool {
	return c.workers < c.max || c.out() < uint64(c.workers)
}

// allBack reports whether all work sent to workers has come back. Until
// it has, it watches the returns (see watch), so that a worker returning
// work wakes dispatch to look again.
func (c *crew) allBack() bool {
	// Set wakeOnReturn before loading returned, and workers add to
	// returned before loading wakeOnReturn: one of the two always sees
	// the other.
	c.watch(true)
	if c.out() != 0 {
		return false
	}
	c.watch(false)
	return true
}

// watch makes workers wake dispatch as they return work, or stops it.
func (c *crew) watch(on bool) {
	if c.watching != on {
		c.watching = on
		c.p.sig.wakeOnReturn.Store(on)
	}
}

// startFloor starts the workers WithMinWorkers keeps.
func (c *crew) startFloor() {
	for c.workers < c.floor {
		c.start(c.p.idleWorker)
	}
}

// start starts a worker that runs run, and the idle clock if it is needed.
func (c *crew) start(run func()) {
	c.workers++
	c.p.counts.workers.Store(int64(c.workers))
	c.armIdleClock()
	c.p.goroutines.Go(run)
}

// retired counts a worker that took the zero work.
func (c *crew) retired() {
	c.workers--
	c.p.counts.workers.Store(int64(c.workers))
}

// surplus reports whether more workers exist than the pool's size: no task
// starts until they are retired.
func (c *crew) surplus() bool { return c.workers > c.max }

// retireSurplus retires ready workers while more exist than the pool's
// size, and reports whether no more do. Busy ones retire as they come back
// (see dispatcher.offerFront).
func (c *crew) retireSurplus() bool {
	for c.workers > c.max {
		select {
		case c.p.workerQueue <- work{}:
			c.retired()
		default:
			return false
		}
	}
	return true
}

// resize adopts the pool's size and floor as Resize or a
// size window left them (the last one wins): it retires ready workers
// above the size at once (busy ones as they come back), starts the
// workers the floor asks for, and starts the idle clock if a lower floor
// left workers above it.
func (c *crew) resize() {
	c.max = int(c.p.size.max.Load())
	c.floor = min(int(c.p.size.floor.Load()), c.max)
	c.retireSurplus()
	c.startFloor()
	c.armIdleClock()
}

// armIdleClock starts one idle period, unless retirement is disabled, no
// worker above the floor exists, or a period is running.
func (c *crew) armIdleClock() {
	if c.idle == nil || c.workers <= c.floor || c.clockRunning {
		return
	}
	c.clockRunning = true
	c.idle.Reset(c.p.cfg.idleTimeout)
	c.p.goroutines.Go(c.awaitIdlePeriod)
}

// awaitIdlePeriod is the idle clock's goroutine, one per period: it sends
// the idle tick once the period has passed. It returns at once when
// stopping is closed; dispatch stops the timer as it stops.
func (c *crew) awaitIdlePeriod() {
	select {
	case <-c.idle.C:
	case <-c.p.sig.stopping:
		return
	}
	select {
	case c.p.taskQueue <- message{req: &idleTick}:
	case <-c.p.sig.stopping:
	}
}

// idleTick runs on every idle tick. If no task came in during the whole
// period and nothing queued can run, it retires one ready worker above the
// floor; a busy worker is never retired. A new period starts while workers
// above the floor remain.
func (c *crew) idleTick(d *dispatcher) {
	c.clockRunning = false
	if !c.sawTask && c.workers > c.floor && !d.canDispatch() {
		select {
		case c.p.workerQueue <- work{}:
			c.retired()
		default:
		}
	}
	c.sawTask = false
	c.armIdleClock()
}

// retireAll sends each worker the zero work, and stops the idle clock.
// Each send completes when a worker, done with its task, takes it; that
// worker then only returns.
func (c *crew) retireAll() {
	for c.workers > 0 {
		c.p.workerQueue <- work{}
		c.retired()
	}
	if c.idle != nil {
		c.idle.Stop()
	}
}

// hand gives w to a ready worker, or to a new one if fewer than the
// maximum exist. It reports false, without blocking, if neither is
// possible, or while more workers exist than the size (no task starts
// until they are retired).
func (c *crew) hand(d *dispatcher, w work) bool {
	if c.surplus() && !c.retireSurplus() {
		return false
	}
	out := outOf(w)
	select {
	case c.p.workerQueue <- w:
		c.handed(d, out)
		return true
	default:
	}
	if c.workers >= c.max {
		return false
	}
	c.handed(d, out)
	c.start(func() { c.p.worker(w) })
	return true
}

// handed counts a task a worker took, which out describes: the work out,
// and in the other parts its slots, whether it may come back for a retry,
// and its token.
func (c *crew) handed(d *dispatcher, out jobOut) {
	c.dispatched++
	d.slots.handed(out.weight)
	d.queue.flows.holdSlots(out)
	if out.retriable {
		d.retries.sent++
	}
	if c.p.cfg.rate.limited() {
		d.tokens.take()
	}
}

// jobOut is what dispatch counts of a job it hands out: its weight and
// whether it may come back for a retry.
type jobOut struct {
	weight    int
	retriable bool
	flow      *flow  // its key's, if it has one
	flowGen   uint32 // flow.gen as the job got it (see flows.holdSlots)
	keyHeld   bool   // it holds its key's slots already (a retry)
}

// outOf reads w's jobOut; call it before the send.
func outOf(w work) jobOut {
	if w.job == nil {
		return jobOut{weight: 1}
	}
	j := w.job
	out := jobOut{weight: j.weight(), retriable: j.retriable(), flow: j.flow(), keyHeld: j.keyHeld()}
	if out.flow != nil {
		out.flowGen = j.opts.flowGen
	}
	return out
}

// Handing work out: the dispatcher picks the task to start next and gives
// it to the crew.

// mayStartAtOnce reports whether a new task without a key may skip the
// queue: nothing waits before it but keyed tasks their keys' limits hold
// back, and no pause holds it. (offer then asks mayStart.)
func (d *dispatcher) mayStartAtOnce() bool {
	return d.queue.len() == d.queue.flows.blocked && len(d.barriers.pauses) == 0
}

// mayStartJobAtOnce is mayStartAtOnce for a job, which, if it has a key,
// must also be free to skip its key's queue (see flows.mayStartAtOnce).
func (d *dispatcher) mayStartJobAtOnce(j *job) bool {
	return d.mayStartAtOnce() && (j.flow() == nil || d.queue.flows.mayStartAtOnce(j))
}

// canStartAtOnce reports whether a new task of weight and key ("" for
// none) would start at once
// on a free worker: abandoning has not begun, it may skip the queue and
// start now (see slots.mayStart: its slots are free, and under a rate
// limit a token is ready), no surplus worker waits to retire, and a worker
// is free (see crew.freeWorker).
func (d *dispatcher) canStartAtOnce(weight int, key string) bool {
	if !d.mayStartAtOnce() || key != "" && !d.queue.flows.mayStartKeyAtOnce(key, weight) || d.crew.surplus() || d.p.sig.abandonBegun.Load() {
		return false
	}
	return d.slots.mayStart(d, weight) && d.crew.freeWorker()
}

// offer gives w, a task that has not waited in the queue, to a ready
// worker, or to a new one if fewer than the maximum exist, if it may start
// now (see slots.mayStart). It reports false, without blocking, if it may
// not or no worker can take it, and once abandoning has begun: from then
// on no task goes to a worker.
//
// A job handed out so gives back the room it took on its way (see
// job.place) as it is handed, not as its worker starts it: it never waited
// in the queue, and the next task must find its room free whether or not
// the worker's goroutine has run yet. (A plain task's caller gives its
// room back, see place.)
func (d *dispatcher) offer(w work) bool {
	if d.p.sig.abandonBegun.Load() || !d.slots.mayStart(d, outOf(w).weight) {
		return false
	}
	held := w.job != nil && d.p.cfg.roomed && w.job.place.Swap(false) // before the hand-off: then the job is the worker's
	if !d.crew.hand(d, d.queue.atOnce(w)) {
		if held {
			w.job.keepPlace()
		}
		return false
	}
	if held {
		d.p.giveRoom(1)
	}
	return true
}

// start gives w, a task that has not waited in the queue, to a free
// worker if it may start now (see slots.mayStart), and reports whether it
// did: as offer does, or, in a pool with a bound, to a worker that has
// returned its last work and is on its way to its receive (see
// crew.freeWorker), for which the send waits that moment. Such a task
// never needs room: queued, it would hold a place, or under DropOldest
// be dropped by the next task, while a worker is free for it. Once
// stopping has begun it only offers w: the stop receives the messages
// sent meanwhile itself (see admitStragglers), so dispatch must not keep
// any (see sendToFreeWorker).
func (d *dispatcher) start(w work) bool {
	if d.offer(w) {
		return true
	}
	if !d.p.cfg.bounded || d.p.sig.stopBegun.Load() || d.p.sig.abandonBegun.Load() || d.crew.surplus() ||
		!d.crew.freeWorker() || !d.slots.mayStart(d, outOf(w).weight) {
		return false
	}
	d.handToFreeWorker(w)
	return true
}

// startAtOnce gives w to a free worker, which canStartAtOnce said there
// is: a ready or new one, or else the one on its way to its receive, for
// which the send waits that moment. Only a stop that began in between
// (a job's ctx, asked whether it is done, can take any time) makes offer
// refuse, and no worker gets the task: a job joins the queue, for the stop
// to abandon; a plain task, which holds no room (leaving the queue would
// give a place back), is abandoned here, ahead of the queue it skipped.
func (d *dispatcher) startAtOnce(w work) {
	switch {
	case d.offer(w):
	case d.p.sig.abandonBegun.Load():
		if w.job == nil {
			d.p.abandonTaken(w.fn)
		} else if !d.queue.pushJob(w.job) {
			d.discard(w.job)
		}
	default:
		d.handToFreeWorker(w)
	}
}

// handToFreeWorker gives w to the worker on its way to its receive (see
// sendToFreeWorker), and gives back the room a job took on its way, as
// offer does.
func (d *dispatcher) handToFreeWorker(w work) {
	held := w.job != nil && d.p.cfg.roomed && w.job.place.Swap(false) // before the hand-off: then the job is the worker's
	w = d.queue.atOnce(w)
	out := outOf(w)
	d.sendToFreeWorker(w)
	d.crew.handed(d, out)
	if held {
		d.p.giveRoom(1)
	}
}

// sendToFreeWorker sends w to the worker that crew.freeWorker says is on
// its way to its receive. That worker may have a message to send to
// dispatch first (a group task that ended releases a held one, see
// ending): dispatch keeps what it receives meanwhile, and handles it next
// (see dispatcher.stashed).
func (d *dispatcher) sendToFreeWorker(w work) {
	for {
		select {
		case d.p.workerQueue <- w:
			return
		case m := <-d.p.taskQueue:
			d.stashed.PushBack(m)
		}
	}
}

// sendFront hands the task to start next (see nextToStart) to a ready or
// new worker. It never blocks, and reports whether it handed a task.
func (d *dispatcher) sendFront() bool {
	src, w := d.nextToStart()
	if src.isNone() {
		return false
	}
	weight := outOf(w).weight // before the hand-off: the job is then the worker's
	if !d.crew.hand(d, w) {
		return false
	}
	d.queue.started(src, weight)
	return true
}

// nextToStart returns the task to start next, and where it waits: the
// queue's head (see waitQueue.head), if abandoning has not begun and it may
// start now (see slots.mayStart); or none. Once abandoning has begun it
// leaves the queue as it is, for the stop to give up in order.
func (d *dispatcher) nextToStart() (source, work) {
	if d.queue.len() == 0 || d.p.sig.abandonBegun.Load() {
		return none, work{}
	}
	src := d.queue.head(d.barriers.hold())
	if src.isNone() {
		return none, work{}
	}
	w := d.queue.workAt(src)
	if !d.slots.mayStart(d, outOf(w).weight) {
		return none, work{}
	}
	return src, w
}

// canDispatch reports whether a queued task may go to a worker now.
func (d *dispatcher) canDispatch() bool {
	src, _ := d.nextToStart()
	return !src.isNone()
}

// offerFront returns what dispatch offers the workers while it waits:
// workerQueue and the front task if it may go to a worker now, the zero
// work (to retire one) while more workers exist than the pool's size, and
// a nil channel (never ready) otherwise.
func (d *dispatcher) offerFront() (chan<- work, work) {
	if d.crew.surplus() {
		return d.p.workerQueue, work{}
	}
	src, w := d.nextToStart()
	if src.isNone() {
		return nil, work{}
	}
	d.offered = offer{src: src, out: outOf(w)}
	w.offered = true
	return d.p.workerQueue, w
}

// sentFront records that a worker took w, which offerFront offered: the
// task to start next, or the zero work that retired the worker.
func (d *dispatcher) sentFront(w work) {
	if w.stops() {
		d.crew.retired()
		return
	}
	d.crew.handed(d, d.offered.out)
	d.queue.started(d.offered.src, d.offered.out.weight)
}

// An offer is what dispatch offers the workers while it waits: the front
// of src, and what it must count once a worker takes it, read before the
// send (a job in a worker's hands may be finished and reused).
type offer struct {
	src source
	out jobOut
}
