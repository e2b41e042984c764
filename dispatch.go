package workerpool

import "github.com/gammazero/deque"

// The dispatcher is the pool's one coordinating goroutine. It takes
// messages from taskQueue (plain tasks, jobs, tickets, Pause, Resize and
// WaitIdle calls, idle ticks) and hands work out to workers over
// workerQueue: to a ready worker, or to a new one while fewer than the
// maximum exist, and otherwise to the back of the queue. While the queue is
// not empty, new tasks join its back and workers are fed from its front.
//
// It owns its state as parts, each a plain struct with no goroutine and no
// lock, in a file of its own: the waiting queue (queue.go, with the choice
// of the next task in queuepick.go and its tidying in queuetidy.go), the
// keys' flows (flows.go, their rings in flowring.go), the parked tickets
// (admission.go), the slots of weighted tasks (slots.go), the rate limit's
// tokens (ratelimit.go), the timer heap and its one timer (schedule.go),
// the retries on their way back (retry.go), the barriers of Pause and
// WaitIdle (pause.go), the crew of workers (worker.go), and the size
// schedule (sizeschedule.go). No other goroutine reaches them, and no part
// sees the dispatcher, the pool or another part: each keeps the handles it
// needs of what it shares with other goroutines (see shared), answers
// questions about itself, and is told what happened. The dispatcher
// composes them: this file is the loop that asks the parts what to do and
// tells them what it did; accept.go takes tasks in, admit.go takes tickets
// in, handout.go hands tasks out, quiet.go waits while there is nothing to
// order (with the lane open: plain tasks then go to the workers past it,
// see lane.go), stopping.go stops. What other goroutines
// tell the dispatcher reaches it through signals (signals.go); what the
// pool tells the outside goes through its observer (observer.go).
//
// So a change of one policy touches one file: how long a retry waits and
// whether it runs again (retry.go: Backoff, and job.retryLater, which asks
// the policy and posts the job), how a key is chosen next among the keys
// waiting at a level (flowring.go: pickFlow's deficit round robin), how
// the rate limit refills (ratelimit.go: the bucket's tat and tolerance),
// and when an idle worker retires (worker.go: the crew's idle clock).
//
// Stopping: the first Stop, StopWait or Shutdown closes stopping (no send
// begins after that) and sends the empty message. When dispatch takes it, it
// admits the stragglers and stops receiving. Unless abandoning has begun it
// then drains the queue to the workers; it abandons whatever is left, sends
// each worker the zero work, waits for the job settles in progress, and
// closes stopped. Stop callers then wait for p.goroutines, so that no pool
// goroutine is left when they return. Stop, and a Shutdown that gives up,
// set abandonBegun first: from then on dispatch hands no task to a worker.
//
// Dispatch waits on taskQueue, and while its queue is not empty also on
// workerQueue and wake (see signals.wake). Hand-offs made by closing a
// channel: stopping (the first stop call to submitters, Pause callers and
// the idle clock), stopped (dispatch to stop callers and observers) and
// each pause's barrierReached (dispatch to one Pause caller).
//
// Terms used across the pool's files:
//   - accepted: a task whose send completed (or whose ticket was admitted);
//     it then runs, or is given up and counted as such.
//   - a job: the carrier of a task someone waits for (job.go); a plain task
//     is a bare func().
//   - may start (mayStart, the one predicate): the parts let a task of a
//     weight start now: its slots are free and, under a rate limit, a
//     token is ready. What else a start needs is said in these terms: a
//     new task may skip the queue (maySkipQueue: nothing waits before it
//     but tasks their keys hold back, no pause holds it, and its key lets
//     it), and the queue's front may start (frontMayStart).
//   - hand out (handOut, the one verb): give a task to a ready worker, or
//     to a new one while fewer than the maximum exist, without blocking,
//     and tell each part that a worker took it (handed, which every part
//     hears as took). The ways to it: a new task (handOutNew), one that
//     may also wait for the worker on its way back to its receive
//     (handOutNewOrWait, handOutAdmitted, handOutToReturning), the queue's
//     front (handOutFront), and the front offered while dispatch waits for
//     something else too (offerFront, tookOffer).
//   - room: a place in the bounded waiting queue, which submitters take
//     before they send under Block and Reject (WorkerPool.room).
//   - a ticket: a submit that needs the dispatcher's answer: one without
//     room, one that waits for room (then it is parked), or a DoBatch.
//   - settled: a job that will never run (canceled, abandoned, dropped or
//     expired): its owner has its answer. A finished job ran.
//   - let go (job.letGo): the pool drops its reference to a job, exactly
//     once, whoever takes it off the queue, the heap or the mailbox, or the
//     worker that ran it.
//   - stamped: a queue entry carries when it became ready (for expiry,
//     aging and the hooks' wait times).
//   - a straggler: a send that began before the stop and completes after
//     the stop message; dispatch admits it as it stops.
//   - abandoning: a Stop, or a Shutdown that gave up, is under way: queued
//     tasks are given up with ErrStopped instead of run.
//   - an offer: the front task dispatch offers the workers while it waits
//     for something else too.
type dispatcher struct {
	p *WorkerPool

	queue     waitQueue  // the tasks waiting for a worker (queue.go)
	admission admission  // submitters parked for room (admission.go)
	slots     slots      // the slots that weighted tasks hold (slots.go)
	tokens    tokens     // the rate limit's bucket (ratelimit.go)
	timers    timers     // the tasks not due yet, and the one timer (schedule.go)
	retries   retryInbox // the jobs out that may come back for a retry (retry.go)
	barriers  barriers   // Pause and WaitIdle calls (pause.go)
	crew      crew       // the workers, the size, the floor and the idle clock (worker.go)
	sizes     sizing     // the sizes by the time of day, and the next boundary (sizeschedule.go)

	offered offer // what offerFront last offered
	// heaviest is the most a task may weigh: the size as of the last
	// resize, or under WithAdaptiveSize the ceiling it chooses below.
	heaviest  int
	ranOn     sizesRead // the size settings as its last resize read them: what the crew and heaviest follow (see sizeSettings.keep)
	plainFast bool      // no DropOldest: a plain task on an empty queue is handled inline in step

	// The lane (quiet.go): laneWanted says plain tasks came to dispatch
	// lately, so that it opens the lane when quiet; laneSeen is
	// lane.appended when it last closed it; nudgeOwed says a free worker
	// waiting on workerQueue is to look at the lane.
	laneWanted bool
	laneSeen   uint64
	nudgeOwed  bool

	// stashed holds the messages dispatch received while it waited to
	// hand a task to a free worker (see sendToReturning), oldest first:
	// it handles them before it receives again.
	stashed deque.Deque[message]

	// received counts the messages that came through a send; at stop it
	// is compared with the sends begun (p.taskSends and p.controlSends). submitted counts the tasks among
	// them; it is published once, as p.counts.submittedAtStop.
	received  int64
	submitted uint64
}

// shared is what the dispatcher's parts may use of the pool: the config
// and the clock, which never change, and what other goroutines share with
// dispatch: the counters, the signals, the room and the observer. The
// dispatcher hands it to a part's init, and each part keeps only what it
// needs; no part sees the pool or the dispatcher.
type shared struct {
	cfg    *config
	clock  clock
	counts *counts
	sig    *signals
	room   *room
	obs    *observer
}

func newDispatcher(p *WorkerPool) *dispatcher {
	d := &dispatcher{p: p, plainFast: !p.cfg.dropsOldest()}
	sh := shared{cfg: &p.cfg, clock: p.clock, counts: &p.counts, sig: &p.sig, room: &p.room, obs: &p.obs}
	d.timers.clock = p.clock
	d.queue.init(sh, d.timers.wakeAt)
	d.admission.room = &p.room
	d.slots = slots{heavyDone: &p.sig.heavyDone, limited: p.cfg.rate.limited(), gated: p.cfg.rate.limited()}
	d.tokens = tokens{rate: p.cfg.rate, clock: p.clock}
	d.retries.sig = &p.sig
	d.barriers.paused = &p.counts.paused
	if wait, ok := d.sizes.init(p.cfg.sizes, &p.size); ok { // before the crew reads the sizes
		d.timers.wakeAt(later(p.clock.now(), int64(wait)))
	}
	ws := &workerSide{queue: p.workerQueue, counts: &p.counts, sig: &p.sig, obs: &p.obs, timed: p.cfg.timed, goroutines: &p.goroutines, lane: &p.lane}
	d.ranOn = p.size.read()
	d.crew.init(ws, p.workerQueue, p.taskQueue, p.cfg.idleTimeout, int(d.ranOn.size(p.size.lowest)), int(d.ranOn.floor))
	d.heaviest = int(d.ranOn.max)
	return d
}

// run is the dispatcher goroutine: it steps until it takes the stop
// message, then stops the pool and logs its final counts.
func (d *dispatcher) run() {
	for d.step() {
	}
	d.stop()
	d.p.obs.logStopped(d.p.Status()) // the counts are final; stop calls wait for this goroutine
}

// step does what it can without blocking: it hands the queue's front task
// to a worker and takes one message that is waiting. Only when neither was
// possible does it block in await. Polls are cheap (an unbuffered channel
// with no one waiting is seen without taking its lock), so under load
// dispatch mostly avoids a select over several channels. It returns false
// once dispatch has taken the stop message.
func (d *dispatcher) step() bool {
	if d.stashed.Len() > 0 {
		if !d.receive(d.stashed.PopFront()) {
			return false
		}
		d.advance()
		return true
	}
	sent := d.queue.len() > 0 && d.handOutFront()
	select {
	case m := <-d.p.taskQueue:
		if !d.receive(m) {
			return false
		}
	default:
		switch {
		case sent:
		case d.plainFast && (d.quiet() || d.quietButPlainQueued()):
			if d.queue.delta != 0 {
				d.queue.publish()
			}
			// Inline only onto an empty queue: the lane may have given tasks
			// back, or, with a send in flight, not taken the queue's.
			if m := d.awaitQuiet(); m.task != nil && m.due == 0 && d.queue.len() == 0 {
				d.laneWanted = true
				d.received++
				d.countSubmitted()
				d.place(m.task, false) // as accept: under a bound, also to a worker on its way to its receive
				return true
			} else if !d.receive(m) {
				return false
			}
		case !d.await():
			return false
		}
	}
	d.advance()
	return true
}

// advance does what a step may have made possible for those who wait on
// dispatch: the keys whose tasks gave back slots or ended, submitters
// parked for room, Pause and WaitIdle callers, retries on their way back,
// and the timer.
func (d *dispatcher) advance() {
	if d.queue.flows.keySettled() { // the common case inlines
		d.dropSettledKeyed()
	}
	if d.p.sig.releases.pending() { // first: a WaitIdle answered below finds no key left
		d.queue.flows.takeMail()
	}
	if d.admission.parked.Len() > 0 {
		d.admitParked()
	}
	// A pause that ends lets parked tickets start on the free workers it
	// held back, which no worker's return will announce.
	if d.barriers.waiting() && d.advanceBarriers() && d.admission.parked.Len() > 0 {
		d.admitParked()
	}
	if d.retries.posted() {
		d.takeRetries()
	}
	if d.timers.armed {
		d.pollTimer()
	}
}

// takeRetries takes the jobs posted for a retry: into the timer heap, or,
// due already, into the pool as if accepted now. One settled on its way is
// only let go.
func (d *dispatcher) takeRetries() {
	for _, j := range d.retries.take() {
		switch {
		case !j.isScheduled():
			j.letGo()
		case d.dropIfTooHeavy(j): // a Resize made the pool smaller during its run
		case j.notDue():
			d.timers.push(j)
		default:
			d.makeDue(j)
		}
	}
	d.retries.done()
}

// timerFired handles the timer's firing: it moves the jobs that came due,
// expires the queued tasks that waited their time, arms the timer for the
// next moment, and lets the size schedule pass a boundary. (A task
// waiting for a token is looked at again as dispatch goes on.)
func (d *dispatcher) timerFired() {
	d.timers.firing()
	d.admitDueScheduled()
	if d.p.cfg.queueTimeout > 0 {
		d.queue.tidyFronts(d.p.clock.now())
	}
	if at, ok := d.timers.next(); ok {
		d.timers.wakeAt(at)
	}
	if at, ok := d.queue.nextExpiry(); ok {
		d.timers.wakeAt(at)
	}
	if d.sizes.on {
		entered, wait, ok := d.sizes.fire(d.p.sig.stopBegun.Load())
		if entered {
			d.resize()
		}
		if ok {
			d.timers.wakeAt(later(d.p.clock.now(), int64(wait)))
		}
	}
}

// pollTimer, called at every step while the timer is armed, handles its
// firing, and sweeps the heap if most of it is settled.
func (d *dispatcher) pollTimer() {
	if d.timers.fired() {
		d.timerFired()
	} else if d.timers.mostlySettled(d.p.counts.scheduled.Load()) {
		d.timers.sweep()
	}
}

// admitDueScheduled moves the scheduled tasks that are due to the queue
// (or to a free worker), and lets go of those settled while they waited.
func (d *dispatcher) admitDueScheduled() {
	now := d.p.clock.now()
	for {
		e, ok := d.timers.popDue(now)
		switch {
		case !ok:
			return
		case e.job == nil: // a plain task: it keeps the place it held, as a job does
			d.p.counts.scheduled.Add(-1)
			d.place(e.fn, false)
		default:
			d.makeDue(e.job)
		}
	}
}

// makeDue gives a job that came due to the pool as if it were accepted
// now (see admitDue). It keeps the room it held, as the bound counts
// scheduled tasks too. A job settled while it waited is only let go.
func (d *dispatcher) makeDue(j *job) {
	if !j.comeDue() {
		j.letGo()
		return
	}
	d.admitDue(j)
}

// dropSettledKeyed lets go at once of the keyed jobs settled (a Task.cancel,
// their ctx, a Resize) while they waited under a key limit (WithKeys), so that their
// keys' next tasks may start now, as a canceled task leaves its key at
// once: the retries that held their keys' slots (see flows.holdsSlots), in
// the timer heap or at the front of their key's queue, give them back
// through signals.releases; a front that its key's limit held back lets the task
// behind it start if that one fits (see flows.popFront). Otherwise
// dispatch would reach such a job only when it came due, when the heap was
// mostly settled, when it served the job's priority level, or when its
// key gave back slots. It costs a look at every keyed queue's front, and a
// sweep of the heap if a settled job held its key's slots; dispatch calls
// it only after such a settle (see flows.keySettled).
func (d *dispatcher) dropSettledKeyed() {
	if d.queue.flows.holderSettled() && len(d.timers.heap) > 0 {
		d.timers.sweep()
	}
	d.queue.tidyKeyedFronts()
}

// advanceBarriers releases the active pause's caller once its barrier is
// reached, and ends the pause once its context is done too, making the
// next one active; and answers the WaitIdle calls once the pool is idle.
// It reports whether it ended the last pause.
func (d *dispatcher) advanceBarriers() (ended bool) {
	if len(d.barriers.pauses) > 0 {
		ended = d.advancePauses()
	}
	if len(d.barriers.idleWaiters) > 0 {
		d.answerIdle()
	}
	return ended
}

func (d *dispatcher) advancePauses() (ended bool) {
	for len(d.barriers.pauses) > 0 {
		if !d.barriers.endActive(d.pauseReached) {
			return false
		}
		d.queue.flows.unpause() // the next pause's barrier, if any, is later
	}
	d.endPauses()
	return true
}

// pauseReached reports whether every task that came before req has
// finished: all were taken from the queue, and all work sent to workers
// has come back.
func (d *dispatcher) pauseReached(req *pauseRequest) bool {
	return d.queue.popped >= req.barrier && !d.queue.rankedBefore(req) && d.crew.allBack()
}

// answerIdle answers the WaitIdle calls once no task runs or waits (tasks a
// Pause holds count as waiting), and forgets those whose caller stopped
// waiting. A task a Group holds back (SetLimit) counts as waiting too: a
// group holds one only while another of its tasks is in the pool, whose
// end releases it, from the worker that counted itself free first, or
// drops it (then dispatch is woken, see Group.dropHeld).
func (d *dispatcher) answerIdle() {
	// allBack first: it watches the work that is out whatever the waiting
	// count says, which a settle or a start lowers a moment after the
	// task's move (and then wakes dispatch).
	if d.crew.allBack() && d.queue.waitingNow() == 0 && d.p.counts.scheduled.Load() == 0 && d.p.counts.groupHeld.Load() == 0 {
		d.barriers.answerIdleWaiters(nil)
		return
	}
	d.barriers.forgetGoneIdleWaiters()
}

// endPauses ends every pause: the queue is no longer held.
func (d *dispatcher) endPauses() {
	d.barriers.endPauses()
	d.queue.flows.unpause()
	d.crew.watch(d.returnsWanted())
}

// await publishes the waiting count and advances the waiters (the step may
// have popped settled jobs, which can reach a pause's barrier: then the
// running work must be watched). If that let the front task go (a pause
// whose context ended meanwhile, say), it hands it out, starting a worker
// if needed, and returns: the select below only offers it to the workers
// that exist. Otherwise it waits for one event and handles it, and returns
// false when the event is the stop message. With no pause in effect it
// waits on the fewest channels it can: while quiet only on taskQueue;
// otherwise also on a worker taking the front task or the zero work that
// retires it; on wake while a part wants it (see the parts' wantsWake);
// and on the timer while it is armed. (A Stop that abandons the queue
// needs no wake for plain tasks: a worker that takes the one offered a
// moment before does not start it, see work.offered.)
func (d *dispatcher) await() bool {
	if d.queue.delta != 0 {
		d.queue.publish()
	}
	d.advance()
	if d.stashed.Len() > 0 || d.queue.len() > 0 && d.handOutFront() {
		return true // the waiters' advance (a pause ended, a ticket admitted) stashed messages, or let the front task go
	}
	switch {
	case len(d.barriers.pauses) > 0:
		return d.awaitPaused()
	case d.quiet():
		return d.receive(<-d.p.taskQueue)
	}
	var wake <-chan struct{} // nil (never ready) unless something may wake dispatch
	if d.queue.wantsWake() || d.admission.wantsWake() || d.crew.wantsWake() || d.barriers.waiting() ||
		d.timers.wantsWake() || d.retries.out() || d.queue.flows.wantsWake() {
		wake = d.p.sig.wake
	}
	toWorker, w := d.offerFront()
	if d.queue.flows.watch() {
		return true // a key's release came: take it first (see advance)
	}
	select {
	case m := <-d.p.taskQueue:
		return d.receive(m)
	case toWorker <- w:
		d.tookOffer(w)
	case <-wake:
	case <-d.timers.C():
		d.timerFired()
	}
	return true
}

// awaitPaused is await while a Pause is in effect: only tasks from before
// the active pause's barrier go to workers, and dispatch also wakes when a
// worker returns (while it waits for the barrier) and when the active
// pause ends.
func (d *dispatcher) awaitPaused() bool {
	toWorker, w := d.offerFront()
	if d.queue.flows.watch() {
		return true // a key's release came: take it first (see advance)
	}
	select {
	case m := <-d.p.taskQueue:
		return d.receive(m)
	case toWorker <- w:
		d.tookOffer(w)
	case <-d.p.sig.wake:
	case <-d.barriers.activeEnd():
	case <-d.timers.C():
		d.timerFired()
	}
	return true
}

// quiet reports whether dispatch has nothing to do but receive: every
// part is at rest. It then waits on taskQueue alone (and its lane, see
// awaitQuiet).
func (d *dispatcher) quiet() bool {
	return d.queue.len() == 0 && d.othersAtRest()
}

// othersAtRest reports whether every part but the queue is at rest.
func (d *dispatcher) othersAtRest() bool {
	return d.admission.atRest() && !d.barriers.waiting() &&
		d.crew.atRest() && d.timers.atRest() && !d.retries.out() && d.queue.flows.atRest()
}

// returnsWanted reports whether a part needs workers to wake dispatch as
// they return work, other than for slots (see slotsFit): a pause's
// barrier, a WaitIdle call, or parked tickets that only a worker coming
// free can let in.
func (d *dispatcher) returnsWanted() bool {
	return d.barriers.waiting() || d.parkedNeedWorker()
}

// receive handles one message from taskQueue. It returns false for the stop
// message.
func (d *dispatcher) receive(m message) bool {
	switch {
	case m.task != nil && m.due == 0:
		d.received++
		d.accept(m.task)
	case m.task != nil:
		d.received++
		d.acceptDelayed(m.task, m.due)
	case m.job != nil:
		d.received++
		d.acceptJob(m.job)
	case m.req == &idleTick:
		d.crew.idleTick(d.frontMayStart())
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
		d.admitDueScheduled() // the barrier covers the scheduled tasks that are due
		d.barriers.addPause(req.pause, d.queue.pushed, d.queue.rankedSeq)
	case req.ticket != nil:
		d.acceptTicket(req.ticket)
	case req.idle != nil:
		d.barriers.idleWaiters = append(d.barriers.idleWaiters, req.idle)
	}
}

// resize adopts the pool's size and floor as Resize or a
// boundary of the size schedule left them: the crew retires and
// starts workers, the jobs heavier than the new size are dropped (and the
// parked submitters of such jobs refused), and, growing, workers start for
// the waiting tasks at once.
func (d *dispatcher) resize() {
	d.ranOn = d.p.size.read() // once: the crew and heaviest follow one reading
	d.crew.resize(int(d.ranOn.size(d.p.size.lowest)), int(d.ranOn.floor))
	d.heaviest = int(d.ranOn.max)
	d.queue.dropTooHeavy(d.heaviest)
	d.timers.dropTooHeavy(d.heaviest)
	d.admission.refuseTooHeavy(d.heaviest)
	for d.queue.len() > 0 && d.handOutFront() {
	}
}
