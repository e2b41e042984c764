package workerpool

// Handing work out (see the terms in dispatch.go): the dispatcher asks
// mayStart, built from the parts' answers, hands a task out to the crew
// (handOut and the ways to it below), and tells every part what a worker
// took (handed).

// maySkipQueue reports whether a new task without a key may skip the
// queue: nothing waits before it but keyed tasks their keys' limits hold
// back, and no pause holds it. (handOutNew then asks mayStart.)
func (d *dispatcher) maySkipQueue() bool {
	return d.queue.len() == d.queue.flows.blocked && len(d.barriers.pauses) == 0
}

// jobMaySkipQueue is maySkipQueue for a job, which, if it has a key,
// must also be free to skip its key's queue (see flows.maySkipKey).
func (d *dispatcher) jobMaySkipQueue(j *job) bool {
	return d.maySkipQueue() && (j.flow() == nil || d.queue.flows.maySkipKey(j))
}

// mayStartOnFreeWorker reports whether a new task of weight and key ("" for
// none) would start at once on a free worker: abandoning has not begun, it
// may skip the queue and start now (see mayStart: its slots are free, and
// under a rate limit a token is ready), no surplus worker waits to retire,
// and a worker is free (see crew.freeWorker).
func (d *dispatcher) mayStartOnFreeWorker(weight int, key string) bool {
	if !d.maySkipQueue() || key != "" && !d.queue.flows.keyFreeFor(key, weight) || d.crew.surplus() || d.p.sig.abandonBegun.Load() {
		return false
	}
	return d.mayStart(weight) && d.crew.freeWorker()
}

// handOut gives w to a ready worker, or to a new one if fewer than the
// maximum exist (see crew.give), and tells the parts. It reports false,
// without blocking, if neither is possible.
func (d *dispatcher) handOut(w work) bool {
	out := outOf(w) // before the hand-off: the job is then the worker's
	if !d.crew.give(w) {
		return false
	}
	d.handed(out)
	return true
}

// handed tells the parts of a task a worker took, which out describes:
// the crew counts the work out, the slots its weight, the flows its key's
// slots, the retries whether it may come back, and the rate limit its
// token.
func (d *dispatcher) handed(out jobOut) {
	d.crew.took()
	d.slots.took(out.weight)
	d.queue.flows.took(out)
	d.retries.took(out)
	if d.p.cfg.rate.limited() {
		d.tokens.took()
	}
}

// handOutNew gives w, a task that has not waited in the queue, to a ready
// worker, or to a new one if fewer than the maximum exist, if it may start
// now (see mayStart). It reports false, without blocking, if it may
// not or no worker can take it, and once abandoning has begun: from then
// on no task goes to a worker.
//
// A job handed out so gives back the room it took on its way (see
// job.place) as it is handed, not as its worker starts it: it never waited
// in the queue, and the next task must find its room free whether or not
// the worker's goroutine has run yet. (A plain task's caller gives its
// room back, see place.)
func (d *dispatcher) handOutNew(w work) bool {
	if d.p.sig.abandonBegun.Load() || !d.mayStart(outOf(w).weight) {
		return false
	}
	held := w.job != nil && d.p.cfg.roomed && w.job.place.Swap(false) // before the hand-off: then the job is the worker's
	if !d.handOut(d.queue.atOnce(w)) {
		if held {
			w.job.keepPlace()
		}
		return false
	}
	if held {
		d.p.room.giveBack(1, &d.p.sig)
	}
	return true
}

// handOutNewOrWait gives w, a task that has not waited in the queue, to a
// free worker if it may start now (see mayStart), and reports whether it
// did: as handOutNew does, or, in a pool with a bound, to a worker that has
// returned its last work and is on its way to its receive (see
// crew.freeWorker), for which the send waits that moment. Such a task
// never needs room: queued, it would hold a place, or under DropOldest
// be dropped by the next task, while a worker is free for it. Once
// stopping has begun it only offers w: the stop receives the messages
// sent meanwhile itself (see admitStragglers), so dispatch must not keep
// any (see sendToReturning).
func (d *dispatcher) handOutNewOrWait(w work) bool {
	if d.handOutNew(w) {
		return true
	}
	if !d.p.cfg.bounded || d.p.sig.stopBegun.Load() || d.p.sig.abandonBegun.Load() || d.crew.surplus() ||
		!d.crew.freeWorker() || !d.mayStart(outOf(w).weight) {
		return false
	}
	d.handOutToReturning(w)
	return true
}

// handOutAdmitted gives w to a free worker, which mayStartOnFreeWorker said
// there is: a ready or new one, or else the one on its way to its receive, for
// which the send waits that moment. Only a stop that began in between
// (a job's ctx, asked whether it is done, can take any time) makes handOutNew
// refuse, and no worker gets the task: a job joins the queue, for the stop
// to abandon; a plain task, which holds no room (leaving the queue would
// give a place back), is abandoned here, ahead of the queue it skipped.
func (d *dispatcher) handOutAdmitted(w work) {
	switch {
	case d.handOutNew(w):
	case d.p.sig.abandonBegun.Load():
		if w.job == nil {
			d.crew.ws.abandonTaken(w.fn)
		} else if !d.queue.pushJob(w.job) {
			d.discard(w.job)
		}
	default:
		d.handOutToReturning(w)
	}
}

// handOutToReturning gives w to the worker on its way to its receive (see
// sendToReturning), and gives back the room a job took on its way, as
// handOutNew does.
func (d *dispatcher) handOutToReturning(w work) {
	held := w.job != nil && d.p.cfg.roomed && w.job.place.Swap(false) // before the hand-off: then the job is the worker's
	w = d.queue.atOnce(w)
	out := outOf(w)
	d.sendToReturning(w)
	d.handed(out)
	if held {
		d.p.room.giveBack(1, &d.p.sig)
	}
}

// sendToReturning sends w to the worker that crew.freeWorker says is on
// its way to its receive. That worker may have a message to send to
// dispatch first (a group task that ended releases a held one, see
// ending): dispatch keeps what it receives meanwhile, and handles it next
// (see dispatcher.stashed).
func (d *dispatcher) sendToReturning(w work) {
	for {
		select {
		case d.p.workerQueue <- w:
			return
		case m := <-d.p.taskQueue:
			d.stashed.PushBack(m)
		}
	}
}

// handOutFront hands the task to start next (see nextToStart) to a ready or
// new worker. It never blocks, and reports whether it handed a task.
func (d *dispatcher) handOutFront() bool {
	src, w := d.nextToStart()
	if src.isNone() {
		return false
	}
	weight := outOf(w).weight // before the hand-off: the job is then the worker's
	if !d.handOut(w) {
		return false
	}
	d.queue.started(src, weight)
	return true
}

// nextToStart returns the task to start next, and where it waits: the
// queue's head (see waitQueue.head), if abandoning has not begun and it may
// start now (see mayStart); or none. Once abandoning has begun it
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
	if !d.mayStart(outOf(w).weight) {
		return none, work{}
	}
	return src, w
}

// frontMayStart reports whether a queued task may go to a worker now.
func (d *dispatcher) frontMayStart() bool {
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

// tookOffer records that a worker took w, which offerFront offered: the
// task to start next, or the zero work that retired the worker.
func (d *dispatcher) tookOffer(w work) {
	if w.stops() {
		d.crew.retired()
		return
	}
	d.handed(d.offered.out)
	d.queue.started(d.offered.src, d.offered.out.weight)
}

// An offer is what dispatch offers the workers while it waits: the front
// of src, and what it must count once a worker takes it, read before the
// send (a job in a worker's hands may be finished and reused).
type offer struct {
	src source
	out jobOut
}

// mayStart reports whether a task of weight may start now, as far as the
// rate limit and the weights of the running tasks allow. Without either it
// is true at once.
func (d *dispatcher) mayStart(weight int) bool {
	return !d.slots.gated && weight <= 1 || d.mayStartGated(weight) // the common case inlines
}

// mayStartGated is mayStart for a task that may have to wait for a token
// (then the timer wakes dispatch when the next one is ready) or for slots.
func (d *dispatcher) mayStartGated(weight int) bool {
	if d.slots.limited {
		if next, ok := d.tokens.ready(); !ok {
			d.timers.wakeAt(next)
			return false
		}
	}
	return d.slotsFit(weight)
}

// slotsFit reports whether weight more slots are free. If not, it has
// workers wake dispatch as they return work, so that it looks again; once
// they fit, it stops watching for them. A task heavier than the size
// (under WithAdaptiveSize, which checks weights against its ceiling) needs
// every slot: it starts once no other task runs.
func (d *dispatcher) slotsFit(weight int) bool {
	weight = min(weight, d.crew.max)
	if d.slots.free(d.crew.max, d.crew.out()) >= weight {
		d.unwatchSlots()
		return true
	}
	d.crew.watch(true)
	if d.slots.free(d.crew.max, d.crew.out()) >= weight { // a worker came back before the watch was set
		d.unwatchSlots()
		return true
	}
	return false
}

// unwatchSlots stops watching returns that only slotsFit asked for.
func (d *dispatcher) unwatchSlots() {
	if d.crew.watching && !d.returnsWanted() {
		d.crew.watch(false)
	}
}
