package workerpool

import (
	"slices"
	"time"

	"github.com/gammazero/deque"
)

// The dispatcher is the pool's one coordinating goroutine. It owns the
// waiting queue, the worker count, the idle clock and the pause state: they
// live in the dispatcher struct, which no other goroutine can reach. It
// takes messages from taskQueue (plain tasks, jobs, Pause calls, idle ticks)
// and hands work to workers over workerQueue: to a ready worker, or to a new
// one while fewer than the maximum exist, and otherwise to the back of the
// queue. While the queue is not empty, new tasks join its back and workers
// are fed from its front.
//
// Stopping: the first Stop, StopWait or Shutdown closes stopping (no send
// begins after that) and sends the empty message. When dispatch takes it, it
// admits the sends still in flight (their tasks only join the queue) and
// stops receiving. Unless abandoning has begun it then drains the queue to
// the workers; it abandons whatever is left, sends each worker the zero
// work, waits for the job settles in progress, and closes stopped. Stop
// callers then wait for p.goroutines, so that no pool goroutine is left
// when they return. Stop, and a Shutdown that gives up, set abandonBegun
// first: from then on dispatch hands no queued task to a worker.
//
// Dispatch waits on taskQueue, and while its queue is not empty also on
// workerQueue and wake (see WorkerPool.wake). Hand-offs made by closing a
// channel: stopping (the first stop call to submitters, Pause callers and
// the idle clock), stopped (dispatch to stop callers and observers) and
// each pause's barrierReached (dispatch to one Pause caller).
type dispatcher struct {
	p *WorkerPool

	// queue holds the tasks of priority level 0 waiting for a worker,
	// oldest first; a nil entry stands for the next job in jobs. pushed
	// and popped count the entries ever pushed and popped: pauses keep
	// their place in it. Its buffer never shrinks below queueBaseCap, so
	// that bursts that come and go do not allocate. readyAt holds when
	// each entry joined the queue, on the pool's clock, if stamped: its
	// wait counts from then (see job.readyAt).
	queue          deque.Deque[func()]
	jobs           deque.Deque[*job]
	pushed, popped uint64
	readyAt        deque.Deque[int64]
	stamped        bool // tasks carry the time they became ready: the queue reads it (clocked), or the hooks do (WorkerPool.timed)
	clocked        bool // the queue's order or expiry reads the clock: WithPriorityAging or WithQueueTimeout

	// levels hold the queued jobs of the other priority levels, one FIFO
	// per level, highest level first, none empty (see queue.go); ranked
	// counts their entries, and rankedSeq numbers them as they join.
	// spareLevels are emptied levels kept for reuse.
	levels      []*level
	spareLevels []*level
	ranked      int
	rankedSeq   uint64
	heaviest    int // the most weight of a job ever queued: a Resize below it looks for jobs to drop

	// gated says a task may have to wait for more than a worker: for a
	// token (WithRateLimit), or for slots, while jobs heavier than 1 are
	// out (heavyOut). heavySent sums weight−1 over the heavy jobs handed
	// to workers (see fits); tat is the rate limit's state (see
	// rateLimit). offered is what offerFront last offered.
	gated     bool
	heavyOut  bool
	heavySent uint64
	tat       int64
	offered   offer

	// retriesSent counts the jobs with a RetryPolicy handed to workers
	// (see retries).
	retriesSent uint64
	workers     int  // live workers, published in p.counts.workers at once
	max         int  // the most workers: p.size as of the last resize
	floor       int  // the workers kept however idle: min(p.cfg.minWorkers, max)
	plainFast   bool // no bound: a plain task on an empty queue is handled inline in step

	// parked are the tickets that wait for room (Block), in arrival order:
	// the first is admitted once room frees, and the others wait behind it.
	parked deque.Deque[*ticket]
	// idleWaiters are the WaitIdle calls not answered yet.
	idleWaiters []*idleRequest

	// timers holds the jobs not due yet (Delay, At, a retry), the
	// earliest first, settled ones included until they are swept or come
	// due. scheduledSeq numbers the jobs as they are scheduled, which
	// orders those due at the same moment. timer is
	// the dispatcher's one timer (made on first use), armed for timerAt
	// on the pool's clock while armed is set (see wakeAt).
	timers       timerHeap
	scheduledSeq uint64
	timer        *time.Timer
	timerAt      int64
	armed        bool

	// received counts the messages that came through send; at stop it
	// is compared with p.sendsBegun. submitted counts the tasks among
	// them; it is published once, as p.counts.submittedAtStop.
	received  int64
	submitted uint64

	// dispatched counts the work sent to workers; a pause's barrier is
	// reached once as much work has returned.
	dispatched uint64

	// waitingDelta is the change in queued plain tasks that p.counts.waiting does
	// not show yet: dispatch publishes it when it is about to block, and
	// after publishAfter queue changes while it is busy. So the count
	// costs no atomic operation per task while dispatch is busy, and
	// Status is exact whenever the pool is quiet. With a bound,
	// publishAfter is 1: the count goes down before the room it frees is
	// given back, so Status never shows more waiting tasks than the bound.
	waitingDelta int64
	queueChanges int
	publishAfter int

	// The idle clock retires workers: while workers exist, one goroutine
	// at a time waits out an idle period on idle and sends an idleTick
	// request; sawTask says whether a task came in since the last tick.
	// idle is nil when retirement is disabled.
	idle         *time.Timer
	clockRunning bool
	sawTask      bool

	// pauses are the Pause calls in effect, oldest first; only the first
	// is active. pauses[0].barrier is a position in the push sequence:
	// tasks pushed before it still run, later ones are held.
	pauses   []*pauseRequest
	watching bool // wakeOnReturn is set: waiting for work to come back (a pause's barrier, WaitIdle, slots for a heavy task)
}

// An offer is what dispatch offers the workers while it waits: the front
// of src, and what it must count once a worker takes it, read before the
// send (a job in a worker's hands may be finished and reused).
type offer struct {
	src source
	out jobOut
}

// jobOut is what dispatch counts of a job it hands out: its weight and
// whether it may come back for a retry.
type jobOut struct {
	weight    int
	retriable bool
}

// outOf reads w's jobOut; call it before the send.
func outOf(w work) jobOut {
	if w.job == nil {
		return jobOut{weight: 1}
	}
	return jobOut{weight: w.job.weight, retriable: w.job.retry != nil}
}

// An idleRequest is one WaitIdle call.
type idleRequest struct {
	ctxDone <-chan struct{} // the caller's ctx.Done(): once closed, no one waits for the answer
	done    chan struct{}   // closed by dispatch: the pool was idle, or stopped (err)
	err     error           // nil, or ErrStopped; written before done is closed
}

// A pauseRequest is one Pause call.
type pauseRequest struct {
	end            <-chan struct{} // the caller's ctx.Done(): the pause lasts until it is closed
	barrier        uint64          // dispatcher.pushed when the request arrived
	rankedBarrier  uint64          // dispatcher.rankedSeq then: the jobs of other levels than 0 queued before it
	barrierReached chan struct{}   // closed by dispatch once every earlier task finished; Pause returns
	reached        bool            // barrierReached is closed (dispatch only)
}

// queueBaseCap is the size below which the queue's buffer never shrinks
// (8 KiB, allocated when the first task waits): a burst of up to that many
// waiting tasks, such as a DoBatch of 1000, costs no allocation once the
// buffer exists.
const queueBaseCap = 1024

// publishEvery bounds how many queue changes a busy dispatcher makes
// without publishing waitingDelta, in a pool without a bound.
const publishEvery = 64

func newDispatcher(p *WorkerPool) *dispatcher {
	d := &dispatcher{p: p, plainFast: !p.cfg.bounded, publishAfter: publishEvery}
	d.clocked = p.cfg.aging > 0 || p.cfg.queueTimeout > 0
	d.stamped = d.clocked || p.cfg.timed
	d.gated = p.cfg.rate.limited()
	if p.cfg.bounded {
		d.publishAfter = 1
	}
	d.queue.SetBaseCap(queueBaseCap)
	d.max = int(p.size.Load())
	d.floor = min(p.cfg.minWorkers, d.max)
	if p.cfg.idleTimeout > 0 {
		d.idle = time.NewTimer(p.cfg.idleTimeout)
		d.idle.Stop() // armed only while workers above the floor exist
	}
	return d
}

// startFloorWorkers starts the workers WithMinWorkers keeps. New calls it
// before it starts the dispatcher goroutine, so that Status shows them when
// New returns.
func (d *dispatcher) startFloorWorkers() {
	for d.workers < d.floor {
		d.startIdleWorker()
	}
}

// run is the dispatcher goroutine: it steps until it takes the stop
// message, then stops the pool and logs its final counts.
func (d *dispatcher) run() {
	for d.step() {
	}
	d.stop()
	d.p.logStopped() // the counts are final; stop calls wait for this goroutine
}

// step does what it can without blocking: it hands the queue's front task
// to a worker and takes one message that is waiting. Only when neither was
// possible does it block in await. Polls are cheap (an unbuffered channel
// with no one waiting is seen without taking its lock), so under load
// dispatch mostly avoids a select over several channels. It returns false
// once dispatch has taken the stop message.
func (d *dispatcher) step() bool {
	sent := d.queued() > 0 && d.sendFront()
	select {
	case m := <-d.p.taskQueue:
		if !d.receive(m) {
			return false
		}
	default:
		switch {
		case sent:
		case d.plainFast && d.quiet():
			if d.waitingDelta != 0 {
				d.publish()
			}
			if m := <-d.p.taskQueue; m.task != nil {
				d.received++
				d.countSubmitted()
				if !d.offer(work{fn: m.task}) {
					d.push(m.task)
				}
				return true
			} else if !d.receive(m) {
				return false
			}
		case !d.await():
			return false
		}
	}
	d.advanceWaiters()
	return true
}

// advanceWaiters does what a step may have made possible for those who
// wait on dispatch: submitters parked for room, Pause and WaitIdle callers.
func (d *dispatcher) advanceWaiters() {
	if d.parked.Len() > 0 {
		d.admitParked()
	}
	if len(d.pauses) > 0 {
		d.advancePauses()
	}
	if len(d.idleWaiters) > 0 {
		d.answerIdle()
	}
	d.pollRetries()
	if d.armed {
		d.pollTimers()
	}
}

// sendFront hands the task to start next (see nextToStart) to a ready or
// new worker. It never blocks, and reports whether it handed a task.
func (d *dispatcher) sendFront() bool {
	src, w := d.nextToStart()
	if src == none || !d.hand(w) {
		return false
	}
	d.popAt(src)
	return true
}

// nextToStart returns the task to start next, and where it waits: the
// queue's head (see head), if abandoning has not begun and it may start
// now (see mayStart); or none.
func (d *dispatcher) nextToStart() (source, work) {
	if d.queued() == 0 {
		return none, work{}
	}
	src := d.head() // first: it may abandon the front job, once abandoning began
	if src == none || d.p.abandonBegun.Load() {
		return none, work{}
	}
	w := d.workAt(src)
	if !d.mayStart(w) {
		return none, work{}
	}
	return src, w
}

// canDispatch reports whether a queued task may go to a worker now.
func (d *dispatcher) canDispatch() bool {
	src, _ := d.nextToStart()
	return src != none
}

// mayStart reports whether w may start now, as far as the rate limit and
// the weights of the running tasks allow. Without either it is true at
// once.
func (d *dispatcher) mayStart(w work) bool {
	return d.mayStartWeighing(outOf(w).weight)
}

// mayStartWeighing is mayStart for a task of weight.
func (d *dispatcher) mayStartWeighing(weight int) bool {
	if !d.gated && weight <= 1 {
		return true
	}
	if d.p.cfg.rate.limited() && !d.tokenReady() {
		return false
	}
	return d.fits(weight)
}

// fits reports whether weight more slots are free: the weights of the tasks
// out with workers leave them. If not, it has workers wake dispatch as they
// return work (see allReturned), so that it looks again.
func (d *dispatcher) fits(weight int) bool {
	if d.freeSlots() >= weight {
		d.unwatchSlots()
		return true
	}
	d.setWatching(true)
	if d.freeSlots() >= weight {
		d.unwatchSlots()
		return true
	}
	return false
}

// freeSlots is the pool's size less the slots of the tasks out with
// workers: one each, and weight−1 more for each heavy one. Workers count a
// heavy job's slots back before they count its work returned, so it reads
// returned first.
func (d *dispatcher) freeSlots() int {
	out := d.dispatched - d.p.returnedWork()
	heavy := d.heavySent - d.p.heavyDone.Load()
	if heavy == 0 && d.heavyOut {
		d.heavyOut = false
		d.gated = d.p.cfg.rate.limited()
	}
	return d.max - int(out) - int(heavy)
}

// unwatchSlots stops watching returns that only fits asked for.
func (d *dispatcher) unwatchSlots() {
	if d.watching && !d.othersWatch() {
		d.setWatching(false)
	}
}

// othersWatch reports whether returns must be watched for more than slots:
// for a pause's barrier, for WaitIdle calls, or for parked tickets that
// only a worker coming free can let in (see admitParked).
func (d *dispatcher) othersWatch() bool {
	return len(d.pauses) > 0 || len(d.idleWaiters) > 0 || d.parked.Len() > 0 && d.queued() == 0
}

// waitingNow is the exact number of waiting tasks, as dispatch sees it.
func (d *dispatcher) waitingNow() int64 {
	return d.p.counts.waiting.Load() + d.waitingDelta
}

// publish adds waitingDelta to p.counts.waiting. Dispatch calls it when it is
// about to block and every publishAfter queue changes in between.
func (d *dispatcher) publish() {
	d.p.counts.waiting.Add(d.waitingDelta)
	d.waitingDelta, d.queueChanges = 0, 0
}

// changeWaiting records a change in the number of queued plain tasks.
func (d *dispatcher) changeWaiting(n int64) {
	d.waitingDelta += n
	if d.queueChanges++; d.queueChanges == d.publishAfter {
		d.publish()
	}
}

// await publishes waitingDelta and advances the waiters (the step may have
// popped settled jobs, which can reach a pause's barrier: then the running
// work must be watched). If that let the front task go (a pause whose
// context ended meanwhile, say), it hands it out, starting a worker if
// needed, and returns: the select below only offers it to the workers that
// exist. Otherwise it waits for one event and handles it, and returns false
// when the event is the stop message. With no pause in effect it waits on
// the fewest channels it can: while quiet only on taskQueue; otherwise also
// on a worker taking the front task or the zero work that retires it; and
// on wake while the queue holds tasks (a Stop that abandons them must
// withdraw the offer of the front one at once, and a queued job's cancel
// is seen at once), submitters are parked for room, work is watched, or
// WaitIdle calls wait (a settle that lowers the waiting count wakes it).
func (d *dispatcher) await() bool {
	if d.waitingDelta != 0 {
		d.publish()
	}
	d.advanceWaiters()
	if d.queued() > 0 && d.sendFront() {
		return true // the waiters' advance (a pause ended, a ticket admitted) let the front task go
	}
	switch {
	case len(d.pauses) > 0:
		return d.awaitPaused()
	case d.quiet():
		return d.receive(<-d.p.taskQueue)
	}
	var wake <-chan struct{} // nil (never ready) unless something may wake dispatch
	if d.queued() > 0 || d.parked.Len() > 0 || d.watching || len(d.idleWaiters) > 0 ||
		len(d.timers) > 0 || d.retriesOut() {
		wake = d.p.wake
	}
	toWorker, w := d.offerFront()
	select {
	case m := <-d.p.taskQueue:
		return d.receive(m)
	case toWorker <- w:
		d.sentFront(w)
	case <-wake:
	case <-d.timerC():
		d.timerFired()
	}
	return true
}

// quiet reports whether dispatch has nothing to do but receive: no task
// queued, no pause in effect, no submitter parked for room, no work to
// watch come back (see allReturned), no WaitIdle call to answer, and no
// worker to retire above the pool's size, no timer armed, and no job out
// that may come back for a retry. It then waits on taskQueue alone.
func (d *dispatcher) quiet() bool {
	return d.queued() == 0 && len(d.pauses) == 0 && d.parked.Len() == 0 && !d.watching &&
		len(d.idleWaiters) == 0 && d.workers <= d.max && !d.armed && !d.retriesOut()
}

// offerFront returns what dispatch offers the workers while it waits:
// workerQueue and the front task if it may go to a worker now, the zero
// work (to retire one) while more workers exist than the pool's size, and
// a nil channel (never ready) otherwise.
func (d *dispatcher) offerFront() (chan<- work, work) {
	if d.workers > d.max {
		return d.p.workerQueue, work{}
	}
	src, w := d.nextToStart()
	if src == none {
		return nil, work{}
	}
	d.offered = offer{src: src, out: outOf(w)}
	return d.p.workerQueue, w
}

// sentFront records that a worker took w, which offerFront offered: the
// task to start next, or the zero work that retired the worker.
func (d *dispatcher) sentFront(w work) {
	if w.stops() {
		d.workerRetired()
		return
	}
	d.countDispatched(d.offered.out)
	d.popAt(d.offered.src)
}

// awaitPaused is await while a Pause is in effect: only tasks from before
// the active pause's barrier go to workers, and dispatch also wakes when a
// worker returns (while it waits for the barrier) and when the active
// pause ends.
func (d *dispatcher) awaitPaused() bool {
	toWorker, w := d.offerFront()
	select {
	case m := <-d.p.taskQueue:
		return d.receive(m)
	case toWorker <- w:
		d.sentFront(w)
	case <-d.p.wake:
	case <-d.activePauseEnd():
	case <-d.timerC():
		d.timerFired()
	}
	return true
}

// receive handles one message from taskQueue. It returns false for the stop
// message.
func (d *dispatcher) receive(m message) bool {
	switch {
	case m.task != nil:
		d.received++
		d.accept(m.task)
	case m.job != nil:
		d.received++
		d.acceptJob(m.job)
	case m.req == &idleTick:
		d.retireIfIdle()
	case m.req == &resizeTick:
		d.received++
		d.resize()
	case m.req != nil:
		d.received++
		d.handle(m.req)
	default:
		return false
	}
	return true
}

func (d *dispatcher) handle(req *request) {
	switch {
	case req.pause != nil:
		d.addPause(req.pause)
	case req.ticket != nil:
		d.acceptTicket(req.ticket)
	case req.idle != nil:
		d.idleWaiters = append(d.idleWaiters, req.idle)
	}
}

// accept takes a plain task: straight to a worker if it may start at once
// and one can take it, or to the back of the queue (under DropOldest,
// dropping the oldest waiting task if the queue is full). Under Block and
// Reject the task holds a place in the queue, which it gives back if it
// starts at once.
func (d *dispatcher) accept(task func()) {
	d.countSubmitted()
	if d.mayStartAtOnce() && d.offer(work{fn: task}) {
		if d.p.cfg.roomed {
			d.p.giveRoom(1)
		}
		return
	}
	d.makeRoom(false)
	d.push(task)
}

// acceptJob takes a job as accept takes a plain task. A job whose context
// is done already is settled at once and never takes a worker.
func (d *dispatcher) acceptJob(j *job) {
	d.countSubmitted()
	reserved := takeReservation(j)
	if j.settled() || j.settleIfBlocked() { // settled: canceled since its send completed
		d.unreserve(reserved)
		d.discard(j)
		return
	}
	if j.notDue() {
		d.scheduleNew(j, reserved)
		return
	}
	d.unreserve(reserved)
	if d.dropIfTooHeavy(j) {
		return
	}
	if d.mayStartAtOnce() && d.offer(work{job: j}) {
		return // the worker gives back its room as it starts it
	}
	d.enqueueNew(j)
}

// enqueueNew queues a new job that is due, fits the pool and did not start
// at once; under DropOldest it first drops the oldest waiting tasks to make
// room.
func (d *dispatcher) enqueueNew(j *job) {
	d.makeRoomFor(j, false)
	d.pushJob(j)
	// A group whose context ended while j was on its way cancels only its
	// queued jobs; now that j is queued, look again.
	j.settleIfBlocked()
}

// scheduleNew puts a new job that is not due yet in the timer heap; under
// DropOldest it first drops the oldest waiting tasks to make room, as the
// bound counts scheduled tasks too. reserved says its submitter counted it
// in Status.Scheduled already (see WorkerPool.reserveScheduled).
func (d *dispatcher) scheduleNew(j *job, reserved bool) {
	d.makeRoomFor(j, reserved)
	if !d.schedule(j, reserved) {
		d.discard(j) // settled on its way
		return
	}
	// A group whose context ended while j was on its way cancels only its
	// queued and scheduled jobs; now that j is scheduled, look again.
	j.settleIfBlocked()
}

// admitDue puts a job that came due in the pool as if it were accepted
// now: to a free worker if it may start at once, else to the back of its
// level. A job whose context is done, or that weighs more than the pool's
// size, is settled instead.
func (d *dispatcher) admitDue(j *job) {
	if j.settleIfBlocked() {
		j.owner.released()
		return
	}
	if d.dropIfTooHeavy(j) {
		return
	}
	if d.mayStartAtOnce() && d.offer(work{job: j}) {
		return
	}
	d.pushJob(j)
}

// dropIfTooHeavy drops j with ErrTooHeavy, and reports true, if it weighs
// more than the pool's size: a Resize made the pool smaller after j's
// submitter checked.
func (d *dispatcher) dropIfTooHeavy(j *job) bool {
	if !d.dropIfHeavierThanPool(j) {
		return false
	}
	d.discard(j)
	return true
}

// discard lets go of a job that settled before it was queued: its place in
// the waiting queue if it still holds one, and the owner's reference.
func (d *dispatcher) discard(j *job) {
	d.p.giveRoomOf(j)
	j.owner.released()
}

// makeRoom drops the oldest waiting tasks while the queue is full, under
// DropOldest, so that one more task fits; counted says that task is in
// Status.Scheduled already (a job reserved there, see
// WorkerPool.reserveScheduled). Dispatch never refuses a task whose send
// completed: the submitter refused it if scheduled tasks, which are never
// dropped, filled the bound (see WorkerPool.scheduledFill), so a task that
// finds nothing left to drop raced with the one that filled the bound, and
// joins the queue past it.
func (d *dispatcher) makeRoom(counted bool) {
	if !d.p.dropsOldest() {
		return
	}
	bound := int64(d.p.cfg.bound)
	if counted {
		bound++
	}
	for d.inQueue()+d.p.counts.scheduled.Load() >= bound && d.dropOldest() {
	}
}

// inQueue is how many tasks wait in the queue, for makeRoom. Either count
// it could use is too high at times: the waiting count still holds a job
// handed to a worker until the worker starts it, and the queue's length
// holds a canceled job until it reaches the front. So it takes the lower.
func (d *dispatcher) inQueue() int64 {
	return min(d.waitingNow(), int64(d.queued()))
}

// makeRoomFor is makeRoom for a job, unless a Group held it back: such a
// task joins the queue without room and drops no task.
func (d *dispatcher) makeRoomFor(j *job, counted bool) {
	if t, ok := j.owner.(*groupTask); ok && t.held {
		return
	}
	d.makeRoom(counted)
}

// dropOldest drops the oldest waiting task, and reports false if none was
// left. A plain one goes to the dead-letter handler with ErrDropped; a job
// settles with ErrDropped, which its caller learns.
func (d *dispatcher) dropOldest() bool {
	d.tidy()
	src := d.oldest()
	if src == none {
		return false
	}
	d.giveUpFront(src, jobDropped, ErrDropped)
	return true
}

// tidy drops the jobs that must not start, and the tasks that expired, at
// the fronts of the queue (see tidyFronts).
func (d *dispatcher) tidy() {
	if d.ranked == 0 && !d.clocked {
		d.dropSettledFront()
		return
	}
	d.tidyFronts(d.queueNow())
}

// acceptTicket takes a ticket. One that needs no room is admitted at once.
// One that needs room gets it if it is free and no one waits before it;
// otherwise a single task starts at once if a worker is free, since such a
// task never needs room. Failing both, a try ticket is refused with
// ErrQueueFull and any other waits, parked, to be admitted in arrival order
// as room frees (admitParked).
func (d *dispatcher) acceptTicket(t *ticket) {
	switch {
	case t.need == 0 && !t.try:
		d.admitTicket(t, withRoom)
	case d.parked.Len() > 0:
		d.parkOrRefuse(t)
	case t.try && d.p.room.take(1):
		t.try = false
		d.admitTicket(t, withRoom)
	case t.need > 0 && d.p.room.admit(t.need):
		d.admitTicket(t, withRoom)
	case !d.startWithoutRoom(t):
		d.parkOrRefuse(t)
	}
}

// parkOrRefuse parks a ticket that waits for room, and refuses a try
// ticket, which must not wait, with ErrQueueFull.
func (d *dispatcher) parkOrRefuse(t *ticket) {
	if !t.try {
		d.parked.PushBack(t)
		return
	}
	t.answer(ticketRefused, ErrQueueFull)
	t.unref(d.p)
}

// startWithoutRoom admits a single task's ticket without room and starts
// the task at once, if a worker is free; it reports false, changing
// nothing, if none is or t carries a batch. A parked ticket stops being
// counted as one.
func (d *dispatcher) startWithoutRoom(t *ticket) bool {
	if t.batch != nil || t.delayed || !d.canStartAtOnce(t.weight) {
		return false
	}
	if t.need > 0 {
		d.p.room.unpark()
		t.need = 0
	}
	t.try = false
	d.admitTicket(t, toWorker)
	return true
}

// admitParked admits parked tickets in arrival order while the first one's
// room is free, or, for a single task, a worker is free, and drops the
// withdrawn ones it meets. Room frees as queued tasks leave the queue;
// with none queued (a bound of 0, say) only a worker coming free lets the
// first ticket in, so then it has workers wake dispatch as they return.
// Once stopping has begun it admits none: the stop refuses them all.
func (d *dispatcher) admitParked() {
	if d.p.stopBegun.Load() || d.p.abandonBegun.Load() {
		return
	}
	for d.parked.Len() > 0 {
		t := d.parked.Front()
		switch {
		case t.state.Load() == ticketWithdrawn:
			d.p.room.unpark()
			t.unref(d.p)
		case d.p.room.admit(t.need):
			d.admitTicket(t, withRoom)
		case d.startWithoutRoom(t):
		case d.queued() == 0 && !d.watching:
			d.setWatching(true) // then look again: a worker may have come free before it was set
			continue
		default:
			return
		}
		d.parked.PopFront()
	}
}

// An admission says how admitTicket puts a ticket's tasks in the pool.
type admission int

const (
	withRoom admission = iota // as accept takes a task: each holds room (if the pool counts it), given back if it starts at once
	toQueue                   // to the back of the queue: a straggler at stop
	toWorker                  // to a free worker (canStartAtOnce), holding no room
)

// admitTicket puts an admitted ticket's tasks in the pool, as how says, and
// answers it. A ticket withdrawn meanwhile gives back the room admitted for
// it.
func (d *dispatcher) admitTicket(t *ticket, how admission) {
	p := d.p
	if !t.state.CompareAndSwap(ticketWaiting, ticketAdmitted) {
		if t.need > 0 {
			p.giveRoom(t.need)
		}
		t.unref(p)
		return
	}
	p.counts.ticketTasks.Add(uint64(t.tasks))
	switch {
	case t.job != nil:
		d.admitJob(t.job, how)
	case t.task != nil:
		d.admitPlain(t.task, how)
	default:
		for _, task := range t.batch {
			if task != nil {
				d.admitPlain(task, how)
			}
		}
	}
	t.done <- struct{}{}
	t.unref(p)
}

// admitPlain puts an admitted plain task in the pool, as how says.
func (d *dispatcher) admitPlain(task func(), how admission) {
	switch how {
	case withRoom:
		d.accept(task)
	case toQueue:
		d.countSubmitted()
		d.makeRoom(false)
		d.push(task)
	case toWorker:
		d.countSubmitted()
		d.startAtOnce(work{fn: task})
	}
}

// admitJob puts an admitted job in the pool, as how says. (A ticket with a
// job waits for room or tries for it, so a stop refuses it: it is never
// admitted toQueue.)
func (d *dispatcher) admitJob(j *job, how admission) {
	j.room.Store(d.p.cfg.roomed && how != toWorker)
	switch how {
	case withRoom:
		d.acceptJob(j)
	case toWorker:
		d.countSubmitted()
		if j.settled() || j.settleIfBlocked() {
			d.discard(j)
			return
		}
		d.startAtOnce(work{job: j}) // never a job that is not due (see startWithoutRoom)
	}
}

// refuseParked answers every parked ticket ErrStopped: the pool stops, and
// no one who waits for room gets it. (A try ticket that arrives as a
// straggler passes through here too; it was never counted as parked.)
func (d *dispatcher) refuseParked() {
	for t := range d.parked.IterPopFront() {
		if !t.try {
			d.p.room.unpark()
		}
		t.answer(ticketRefused, ErrStopped)
		t.unref(d.p)
	}
}

// countSubmitted counts an accepted task and notes it for the idle clock.
func (d *dispatcher) countSubmitted() {
	d.submitted++
	d.sawTask = true
}

// mayStartAtOnce reports whether a new task may skip the queue: nothing
// waits before it and no pause holds it. (offer then asks mayStart.)
func (d *dispatcher) mayStartAtOnce() bool {
	return d.queued() == 0 && len(d.pauses) == 0
}

// canStartAtOnce reports whether a new task of weight would start at once
// on a free worker: abandoning has not begun, it may skip the queue and
// start now (see mayStartWeighing: its slots are free, and under a rate
// limit a token is ready), no surplus worker waits to retire, and fewer
// workers than the maximum exist or one of them is free, as it has
// returned its last work (it is then in, or on its way to, its receive).
func (d *dispatcher) canStartAtOnce(weight int) bool {
	if !d.mayStartAtOnce() || d.workers > d.max || d.p.abandonBegun.Load() {
		return false
	}
	if !d.mayStartWeighing(weight) {
		return false
	}
	busy := d.dispatched - d.p.returnedWork()
	return d.workers < d.max || busy < uint64(d.workers)
}

// startAtOnce gives w to a free worker, which canStartAtOnce said there
// is: a ready or new one, or else the one on its way to its receive, for
// which the send waits that moment.
func (d *dispatcher) startAtOnce(w work) {
	if !d.offer(w) {
		w = d.atOnce(w)
		out := outOf(w)
		d.p.workerQueue <- w
		d.countDispatched(out)
	}
}

// offer gives w, a task that has not waited in the queue, to a ready
// worker, or to a new one if fewer than the maximum exist, if it may start
// now (see mayStart). It reports false, without blocking, if it may not or
// no worker can take it, and once abandoning has begun: from then on no
// task goes to a worker.
func (d *dispatcher) offer(w work) bool {
	return !d.p.abandonBegun.Load() && d.mayStart(w) && d.hand(d.atOnce(w))
}

// atOnce marks w, a task handed to a worker as it becomes ready, as one
// that waited nothing (see readyNow), if tasks carry when they became
// ready; if the hand-off fails, push or pushJob stamps it after all.
func (d *dispatcher) atOnce(w work) work {
	if d.stamped {
		if w.job != nil {
			w.job.readyAt = readyNow
		} else {
			w.readyAt = readyNow
		}
	}
	return w
}

// hand gives w to a ready worker, or to a new one if fewer than the
// maximum exist. It reports false, without blocking, if neither is possible.
func (d *dispatcher) hand(w work) bool {
	if d.workers > d.max && !d.retireSurplus() {
		return false // no task starts while more workers exist than the size
	}
	out := outOf(w)
	select {
	case d.p.workerQueue <- w:
		d.countDispatched(out)
		return true
	default:
	}
	if d.workers >= d.max {
		return false
	}
	d.countDispatched(out)
	d.addWorker(func() { d.p.worker(w) })
	return true
}

// startIdleWorker starts a worker that waits for its first work.
func (d *dispatcher) startIdleWorker() {
	d.addWorker(d.p.idleWorker)
}

func (d *dispatcher) addWorker(run func()) {
	d.workers++
	d.p.counts.workers.Store(int64(d.workers))
	d.armIdleClock()
	d.p.goroutines.Go(run)
}

// retireSurplus retires ready workers while more exist than the pool's
// size, and reports whether no more do. Busy ones retire as they come back
// (see offerFront).
func (d *dispatcher) retireSurplus() bool {
	for d.workers > d.max {
		select {
		case d.p.workerQueue <- work{}:
			d.workerRetired()
		default:
			return false
		}
	}
	return true
}

// resize adopts the pool's size as Resize left it (the last Resize wins):
// it retires ready workers above it at once (busy ones as they come back),
// starts the workers the floor asks for, and, growing, starts workers for
// the waiting tasks at once.
func (d *dispatcher) resize() {
	d.max = int(d.p.size.Load())
	d.floor = min(d.p.cfg.minWorkers, d.max)
	d.retireSurplus()
	for d.workers < d.floor {
		d.startIdleWorker()
	}
	d.dropTooHeavy()
	for d.queued() > 0 && d.sendFront() {
	}
}

// countDispatched counts a task handed to a worker, which out describes:
// its slots, whether it may come back for a retry, and its token.
func (d *dispatcher) countDispatched(out jobOut) {
	d.dispatched++
	if out.weight > 1 {
		d.heavySent += uint64(out.weight - 1)
		d.heavyOut, d.gated = true, true
	}
	if out.retriable {
		d.retriesSent++
	}
	if d.p.cfg.rate.limited() {
		d.takeToken()
	}
}

// front is the queue's front task as work. The queue must not be empty.
func (d *dispatcher) front() work {
	fn := d.queue.Front()
	switch {
	case fn == nil:
		return work{job: d.jobs.Front()}
	case d.stamped:
		return work{fn: fn, readyAt: d.readyAt.Front()}
	}
	return work{fn: fn}
}

// push queues a plain task at the back of level 0, stamped with the time
// it joined, if tasks carry it.
func (d *dispatcher) push(task func()) {
	d.queue.PushBack(task)
	d.pushed++
	d.changeWaiting(1)
	if d.stamped {
		d.readyAt.PushBack(d.stampNow())
	}
}

// pushJob queues j at the back of its level (level 0: behind a nil entry
// in queue); the move to queued counts it as waiting. A job settled on its
// way is dropped.
func (d *dispatcher) pushJob(j *job) {
	if !j.enqueue() {
		d.discard(j)
		return
	}
	d.heaviest = max(d.heaviest, j.weight)
	if d.stamped {
		j.readyAt = d.stampNow()
	}
	if j.priority != 0 {
		d.pushRanked(j)
		return
	}
	d.queue.PushBack(nil)
	d.jobs.PushBack(j)
	d.pushed++
	if d.stamped {
		d.readyAt.PushBack(j.readyAt)
	}
}

// stampNow reads the clock for an entry joining the queue, and arms the
// timer for its expiry (a later entry never expires before an earlier one,
// so wakeAt keeps the earliest).
func (d *dispatcher) stampNow() int64 {
	now := d.p.now()
	if d.p.cfg.queueTimeout > 0 {
		d.wakeAt(later(now, int64(d.p.cfg.queueTimeout)))
	}
	return now
}

// pop removes the front entry. A plain task stops counting as waiting and
// gives back its place in the queue (see WorkerPool.room) here; a job does
// both as it leaves the queued state: started by the worker that took it,
// or settled. Dispatch must not touch a job once it is in a worker's hands.
func (d *dispatcher) pop() {
	if d.queue.PopFront() == nil {
		d.jobs.PopFront()
	} else {
		d.changeWaiting(-1)
		if d.p.cfg.roomed {
			d.p.giveRoom(1)
		}
	}
	d.popped++
	if d.stamped {
		d.readyAt.PopFront()
	}
}

// dropSettledFront pops the jobs at the front of the queue that must not
// start, so that they never take a worker: those already settled (canceled
// by their caller) and those it settles now, whose context is done or which
// the pool abandons. A job further back that is canceled stops counting as
// waiting at once, and leaves the queue when it reaches the front.
func (d *dispatcher) dropSettledFront() {
	for d.queue.Len() > 0 && d.queue.Front() == nil {
		j := d.jobs.Front()
		if !j.settled() && !j.settleIfBlocked() {
			return
		}
		d.pop()
		j.owner.released()
	}
}

// armIdleClock starts one idle period, unless retirement is disabled, no
// worker above the floor exists, or a period is running.
func (d *dispatcher) armIdleClock() {
	if d.idle == nil || d.workers <= d.floor || d.clockRunning {
		return
	}
	d.clockRunning = true
	d.idle.Reset(d.p.cfg.idleTimeout)
	d.p.goroutines.Go(d.awaitIdlePeriod)
}

// awaitIdlePeriod is the idle clock's goroutine, one per period: it sends
// the idle tick once the period has passed. It returns at once when
// stopping is closed; dispatch stops the timer as it stops.
func (d *dispatcher) awaitIdlePeriod() {
	select {
	case <-d.idle.C:
	case <-d.p.stopping:
		return
	}
	select {
	case d.p.taskQueue <- message{req: &idleTick}:
	case <-d.p.stopping:
	}
}

// retireIfIdle runs on every idle tick. If no task came in during the whole
// period and nothing queued can run, it retires one ready worker above the
// floor; a busy worker is never retired. A new period starts while workers
// above the floor remain.
func (d *dispatcher) retireIfIdle() {
	d.clockRunning = false
	if !d.sawTask && d.workers > d.floor && !d.canDispatch() {
		select {
		case d.p.workerQueue <- work{}:
			d.workerRetired()
		default:
		}
	}
	d.sawTask = false
	d.armIdleClock()
}

func (d *dispatcher) workerRetired() {
	d.workers--
	d.p.counts.workers.Store(int64(d.workers))
}

// addPause places the pause's barrier behind the tasks queued now, the
// scheduled ones that are due included.
func (d *dispatcher) addPause(req *pauseRequest) {
	d.advanceTimers()
	req.barrier, req.rankedBarrier = d.pushed, d.rankedSeq
	d.pauses = append(d.pauses, req)
	d.p.counts.paused.Store(true)
}

// activePauseEnd is the active pause's ctx.Done() once its barrier is
// reached, and nil before.
func (d *dispatcher) activePauseEnd() <-chan struct{} {
	if len(d.pauses) == 0 || !d.pauses[0].reached {
		return nil
	}
	return d.pauses[0].end
}

// advancePauses releases the active pause's caller once its barrier is
// reached, and ends the pause once its context is done too, making the next
// one active.
func (d *dispatcher) advancePauses() {
	if len(d.pauses) == 0 {
		return
	}
	for len(d.pauses) > 0 {
		active := d.pauses[0]
		if !active.reached {
			if !d.barrierReached(active) {
				return
			}
			active.reached = true
			close(active.barrierReached)
		}
		if !isClosed(active.end) {
			return
		}
		d.pauses[0] = nil
		d.pauses = d.pauses[1:]
	}
	d.endPauses()
}

// barrierReached reports whether every task that came before req has
// finished: all were taken from the queue, and all work sent to workers
// has come back.
func (d *dispatcher) barrierReached(req *pauseRequest) bool {
	return d.popped >= req.barrier && !d.rankedBeforeBarrier(req) && d.allReturned()
}

// allReturned reports whether all work sent to workers has come back.
// Until it has, wakeOnReturn stays set, so that a worker returning work
// wakes dispatch to look again.
func (d *dispatcher) allReturned() bool {
	// Set wakeOnReturn before loading returned, and workers add to
	// returned before loading wakeOnReturn: one of the two always sees
	// the other.
	d.setWatching(true)
	if d.p.returnedWork() != d.dispatched {
		return false
	}
	d.setWatching(false)
	return true
}

// answerIdle answers the WaitIdle calls once no task runs or waits (tasks a
// Pause holds count as waiting), and forgets those whose caller stopped
// waiting.
func (d *dispatcher) answerIdle() {
	// allReturned first: it watches the work that is out whatever the
	// waiting count says, which a settle or a start lowers a moment after
	// the task's move (and then wakes dispatch).
	if d.allReturned() && d.waitingNow() == 0 && d.p.counts.scheduled.Load() == 0 {
		d.answerIdleWaiters(nil)
		return
	}
	d.idleWaiters = slices.DeleteFunc(d.idleWaiters, func(w *idleRequest) bool { return isClosed(w.ctxDone) })
}

// answerIdleWaiters answers every WaitIdle call with err.
func (d *dispatcher) answerIdleWaiters(err error) {
	for i, w := range d.idleWaiters {
		w.err = err
		close(w.done)
		d.idleWaiters[i] = nil
	}
	d.idleWaiters = d.idleWaiters[:0]
}

func (d *dispatcher) setWatching(on bool) {
	if d.watching != on {
		d.watching = on
		d.p.wakeOnReturn.Store(on)
	}
}

func (d *dispatcher) endPauses() {
	d.pauses = nil
	d.setWatching(d.othersWatch())
	d.p.counts.paused.Store(false)
}

// stop runs once dispatch took the stop message: submitters parked for room
// are refused, WaitIdle calls answered, every pause ends, the queue is
// drained (StopWait) or abandoned (Stop), and every worker is told to
// return. The dead-letter handler takes no letter once the last settle in
// progress is done; a stop call then waits for it to deliver every letter.
func (d *dispatcher) stop() {
	d.refuseParked()
	d.answerIdleWaiters(ErrStopped)
	d.admitStragglers()
	d.endPauses()
	if !d.p.abandonBegun.Load() {
		d.drain()
	}
	d.abandonQueue()
	d.abandonTimers()
	d.publish() // before retireAll waits for the running tasks
	d.retireAll()
	d.abandonRetries() // every worker has returned: none posts any more
	if d.idle != nil {
		d.idle.Stop()
	}
	if d.timer != nil {
		d.timer.Stop()
		d.armed = false
	}
	d.awaitSettles()
	d.p.dead.seal()
	d.publish()
	d.p.counts.submittedAtStop.Store(d.submitted)
	close(d.p.stopped)
}

// admitStragglers accepts the tasks of the sends that began before stopping
// was closed. Every send counts itself (see send) before it checks
// stopping, and a refused one takes itself out and wakes dispatch; so once
// dispatch has received as many messages as were begun, no send is in
// flight and none can begin. Their tasks join the queue (under DropOldest
// dropping the oldest as any new task does), so StopWait runs them and Stop
// abandons them; their Pause requests are dropped, as
// stopping ends every pause; their WaitIdle calls and tickets that wait
// for room are answered ErrStopped.
func (d *dispatcher) admitStragglers() {
	for d.received < d.p.sendsBegun() {
		d.publish()
		select {
		case m := <-d.p.taskQueue:
			d.admitStraggler(m)
		case <-d.p.wake:
		}
	}
}

func (d *dispatcher) admitStraggler(m message) {
	if m.req == &idleTick {
		return
	}
	d.received++
	switch {
	case m.task != nil:
		d.admitPlain(m.task, toQueue)
	case m.job != nil:
		d.countSubmitted()
		reserved := takeReservation(m.job)
		if m.job.notDue() {
			d.scheduleNew(m.job, reserved)
			break
		}
		d.unreserve(reserved)
		if !d.dropIfTooHeavy(m.job) {
			d.enqueueNew(m.job)
		}
	case m.req.ticket != nil && (m.req.ticket.need > 0 || m.req.ticket.try):
		d.parked.PushBack(m.req.ticket)
		d.refuseParked()
	case m.req.ticket != nil:
		d.admitTicket(m.req.ticket, toQueue)
	case m.req.idle != nil:
		m.req.idle.err = ErrStopped
		close(m.req.idle.done)
	}
}

// drain hands every queued task to a worker, every scheduled one as it
// comes due, and every retry as it comes back and is due, until nothing is
// left or abandoning begins (Stop, or a Shutdown that gives up). Workers
// above the pool's size retire first, as they come back.
func (d *dispatcher) drain() {
	for !d.p.abandonBegun.Load() {
		d.pollRetries()
		if d.queued() > 0 && d.sendFront() {
			continue
		}
		d.tidy()
		if d.queued() == 0 && d.p.counts.scheduled.Load() == 0 && !d.retriesOut() {
			return
		}
		d.publish()
		toWorker, w := d.offerFront()
		select {
		case toWorker <- w:
			d.sentFront(w)
		case <-d.p.wake: // look again: abandoning, a canceled job, a retry, a return
		case <-d.timerC():
			d.timerFired()
		}
	}
}

// abandonQueue drops what is left in the queue, in queue order, releasing
// each closure as it goes: a plain task goes to the dead-letter handler
// with ErrStopped. Abandoning has begun whenever anything is left (drain
// returns early only then), so each job settles: abandoned, and its caller
// learns ErrStopped, or canceled if its own context ended first.
func (d *dispatcher) abandonQueue() {
	for d.queue.Len() > 0 {
		if task := d.queue.Front(); task != nil {
			d.pop()
			d.p.counts.settled.count(jobAbandoned)
			d.p.giveUp(task, ErrStopped)
			continue
		}
		j := d.jobs.Front()
		j.abandon()
		d.pop()
		j.owner.released()
	}
	for _, l := range d.levels {
		for j := range l.jobs.IterPopFront() {
			j.abandon()
			j.owner.released()
		}
	}
	d.levels, d.spareLevels, d.ranked = nil, nil, 0
	d.queue, d.jobs, d.readyAt = deque.Deque[func()]{}, deque.Deque[*job]{}, deque.Deque[int64]{} // free the buffers too
}

// awaitSettles waits until no settle is in progress (see
// WorkerPool.settling). Every job is final by now, so a settle that begins
// later changes nothing.
func (d *dispatcher) awaitSettles() {
	for d.p.settling.Load() > 0 {
		<-d.p.wake
	}
}

// retireAll sends each worker the zero work. Each send completes when a
// worker, done with its task, takes it; that worker then only returns.
func (d *dispatcher) retireAll() {
	for d.workers > 0 {
		d.p.workerQueue <- work{}
		d.workerRetired()
	}
}
