package workerpool

// The dispatcher's stop sequence: from the stop message to closing
// stopped (see the file comment of dispatch.go, Stopping).

// stop runs once dispatch took the stop message: submitters parked for room
// are refused, WaitIdle calls answered, every pause ends, the queue is
// drained (StopWait) or abandoned (Stop), and every worker is told to
// return. The dead-letter handler takes no letter once the last settle in
// progress is done; a stop call then waits for it to deliver every letter.
func (d *dispatcher) stop() {
	d.admission.refuseAll()
	d.barriers.answerIdleWaiters(ErrStopped)
	d.admitStragglers()
	d.p.size.keep(d.ranOn) // no resize comes any more: the settings say what the stop runs on
	d.endPauses()
	if !d.p.sig.abandonBegun.Load() {
		d.drain()
	}
	d.queue.abandonAll() // abandoning has begun whenever anything is left: drain returns early only then
	d.abandonScheduled()
	d.queue.publish() // before retireAll waits for the running tasks
	d.crew.retireAll()
	d.retries.abandonAll() // every worker has returned: none posts any more
	d.timers.stop()
	d.awaitSettles()
	d.queue.flows.takeMail() // every keyed job is let go by now: no key is left
	d.p.obs.dead.seal()
	d.queue.publish()
	d.p.counts.submittedAtStop.Store(d.submitted + d.p.lane.appended.Load()) // the lane is shut, and taken back
	close(d.p.sig.stopped)
}

// admitStragglers accepts the tasks of the sends that began before stopping
// was closed. Every send counts itself (see send) before it checks
// stopping, and a refused one takes itself out and wakes dispatch; so once
// dispatch has received as many messages as were begun, no send is in
// flight and none can begin. Their tasks join the queue (under DropOldest
// dropping the oldest as any new task does), so StopWait runs them and Stop
// abandons them; their Pause requests are dropped, as stopping ends every
// pause; their WaitIdle calls and tickets that wait for room are answered
// ErrStopped.
func (d *dispatcher) admitStragglers() {
	for d.stashed.Len() > 0 {
		d.admitStraggler(d.stashed.PopFront())
	}
	for d.received < d.p.taskSends.Load()+d.p.controlSends.Load() {
		d.queue.publish()
		select {
		case m := <-d.p.taskQueue:
			d.admitStraggler(m)
		case <-d.p.sig.wake:
		}
	}
}

func (d *dispatcher) admitStraggler(m message) {
	if m.req == &idleTick {
		return
	}
	d.received++
	switch {
	case m.task != nil && m.due != 0:
		d.acceptDelayed(m.task, m.due)
	case m.task != nil:
		d.admitPlain(m.task, toQueue)
	case m.job != nil:
		d.takeJob(m.job, false)
	case m.req == &resizeTick: // sent before the stop: the stop drains on the new size
		d.resize()
	case m.req.ticket != nil && (m.req.ticket.need > 0 || m.req.ticket.try):
		d.admission.refuse(m.req.ticket, ErrStopped)
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
	for !d.p.sig.abandonBegun.Load() {
		if d.retries.posted() {
			d.takeRetries()
		}
		if d.queue.flows.keySettled() {
			d.dropSettledKeyed()
		}
		if d.p.sig.releases.pending() {
			d.queue.flows.takeMail() // a key's slots given back may let its next task start
		}
		if d.queue.len() > 0 && d.handOutFront() {
			continue
		}
		d.queue.tidy()
		if d.queue.len() == 0 && d.p.counts.scheduled.Load() == 0 && !d.retries.out() {
			return
		}
		d.queue.publish()
		toWorker, w := d.offerFront()
		if d.queue.flows.watch() {
			continue // a key's release came: take it first
		}
		select {
		case toWorker <- w:
			d.tookOffer(w)
		case <-d.p.sig.wake: // look again: abandoning, a canceled job, a retry, a return
		case <-d.timers.C():
			d.timerFired()
		}
	}
}

// awaitSettles waits until no settle is in progress (see
// signals.settling). Every job is final by now, so a settle that begins
// later changes nothing.
func (d *dispatcher) awaitSettles() {
	for d.p.sig.settling.Load() > 0 {
		<-d.p.sig.wake
	}
}

// abandonScheduled settles every scheduled job as a stop that abandons its
// tasks does (see waitQueue.abandonAll), in the order they come due, and
// empties the heap. A plain task (a delay alone) gives back its place
// under Block and Reject, as a job does.
func (d *dispatcher) abandonScheduled() {
	for _, e := range d.timers.takeAll() {
		if e.job == nil {
			d.p.counts.scheduled.Add(-1)
			if d.p.cfg.roomed {
				d.p.room.giveBack(1, &d.p.sig) // the place it held since its submit, as a scheduled job gives back its own
			}
			d.p.counts.settled.count(jobAbandoned)
			d.p.obs.giveUpPlain(e.fn, ErrStopped)
			continue
		}
		e.job.abandon()
		e.job.letGo()
	}
}
