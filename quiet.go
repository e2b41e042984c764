package workerpool

// How the dispatcher waits while it is quiet (see dispatcher.quiet): for
// the next message, and, while plain tasks come, with the lane open, so
// that they go to the workers past it (see lane). It answers the lane's
// asks meanwhile, and closes the lane before it handles the message.

// awaitQuiet waits for the next message and returns it. If plain tasks
// came lately (laneWanted) and nothing makes a start wait (no weight out
// and no stop), it opens the lane meanwhile: it then starts workers and
// nudges free ones as the lane's appends ask (see answerLane), and before
// it returns it closes the lane and takes back, into the queue, the tasks
// no worker took.
func (d *dispatcher) awaitQuiet() message {
	if !d.laneMayOpen() {
		return <-d.p.taskQueue
	}
	ask := d.p.lane.openUp(d.queue.len(), d.queue.popPlain, d.sendsInFlight)
	if d.queue.delta != 0 {
		d.queue.publish() // the moved tasks count as waiting in the lane now
	}
	if ask {
		d.answerLane()
	}
	// Under a bound, a place given back outside the lane (a task with a
	// handle that its worker starts, or one that settles) wakes dispatch
	// for the submitters waiting in the lane, as a withdrawal does.
	var wake <-chan struct{} // nil (never ready) without a bound
	if d.p.cfg.roomed {
		wake = d.p.sig.wake
	}
	for {
		var toWorker chan<- work // nil (never ready) unless a free worker is owed a nudge
		if d.nudgeOwed {
			toWorker = d.p.workerQueue
		}
		select {
		case m := <-d.p.taskQueue:
			d.closeLane()
			d.handOutTakenBack()
			return m
		case <-d.p.lane.ask:
			d.answerLane()
		case toWorker <- work{nudge: true}:
			d.nudgeOwed = d.p.lane.waiting() > 0 && d.crew.freeWorkers() > 0
		case <-wake:
			d.p.lane.admitWaiting()
		}
	}
}

// sendsInFlight reports whether a send to dispatch has begun that it has
// not received (see lane.openUp).
func (d *dispatcher) sendsInFlight() bool {
	return d.p.taskSends.Load()+d.p.controlSends.Load() != d.received
}

// laneMayOpen reports whether dispatch may open the lane as it waits:
// plain tasks came lately, the pool has no policy the lane would pass by
// (config.lane), no weighted task is out, and no stop has begun.
func (d *dispatcher) laneMayOpen() bool {
	return d.p.cfg.lane && d.laneWanted && !d.slots.gated && !d.p.sig.stopBegun.Load()
}

// quietButPlainQueued reports whether dispatch would be quiet but for
// plain tasks of level 0 in its queue, and may open the lane: it then
// moves them there as it opens it (see awaitQuiet), and the workers take
// them in order without it.
func (d *dispatcher) quietButPlainQueued() bool {
	return d.queue.onlyPlain() && d.othersAtRest() && d.laneMayOpen()
}

// answerLane answers an append that found no worker waiting for its task,
// as the card has dispatch hand out a task: to a ready worker, else to a
// new one while fewer than the size exist. The free workers (ones that
// waited on workerQueue before the lane opened) are nudged one by one to
// take from the lane; for the tasks beyond them, it takes the lane's
// tasks, front first, and starts a worker with each while fewer than the
// size exist. With none free and none to start, the busy workers take the
// lane's tasks as they finish, and appends stop asking.
func (d *dispatcher) answerLane() {
	n := d.p.lane.answer()
	if n == 0 {
		return
	}
	free := d.crew.freeWorkers()
	d.nudgeOwed = free > 0
	// Once abandoning has begun (Stop, or a Shutdown that gives up) no
	// task goes to a worker, as in handOutNew: the lane's tasks wait for
	// the stop message, which takes them back to be abandoned.
	for ; n > free && d.crew.workers < d.crew.max && !d.p.sig.abandonBegun.Load(); n-- {
		w, ok := d.p.lane.take()
		if !ok {
			return
		}
		d.crew.start(func() { d.crew.ws.worker(w) })
	}
	if free == 0 && n > 0 {
		d.p.lane.noneFree()
	}
}

// handOutTakenBack hands the tasks taken back from the lane, front first, to
// ready workers and to new ones up to the size, while it can, and, under a
// bound, to the workers on their way to their receive: the start an ask
// not yet answered would have given them, and what a task that came to
// dispatch instead would have met (see handOutNewOrWait). So the message
// that closed the lane finds them started where they could start (under a
// bound, with their places given back), as it would have without the lane.
func (d *dispatcher) handOutTakenBack() {
	for d.queue.len() > 0 && (d.handOutFront() || d.handOutFrontToReturning()) {
	}
}

// handOutFrontToReturning hands the queue's front, in a pool with a bound,
// to a worker that has returned its last work and is on its way to its
// receive (see crew.freeWorker), and reports whether it did. As
// handOutNewOrWait, it does not once stopping has begun.
func (d *dispatcher) handOutFrontToReturning() bool {
	if !d.p.cfg.bounded || d.p.sig.stopBegun.Load() || d.crew.surplus() || !d.crew.freeWorker() {
		return false
	}
	src, w := d.nextToStart()
	if src.isNone() {
		return false
	}
	out := outOf(w) // before the hand-off
	d.sendToReturning(w)
	d.handed(out)
	d.queue.started(src, out.weight)
	return true
}

// closeLane closes the lane and takes back, oldest first, into the queue
// the tasks no worker took. A lane
// that took no task while it was open is not opened again until a plain
// task comes to dispatch (laneWanted): a pool whose tasks all need
// dispatch does not pay for it.
func (d *dispatcher) closeLane() {
	appended := d.p.lane.close(d.queue.takeBack, d.admission.parkBack)
	if appended != d.laneSeen {
		d.laneSeen = appended
		d.crew.sawTask = true // the idle clock counts them as tasks that came in
	} else {
		d.laneWanted = false
	}
	d.nudgeOwed = false
}
