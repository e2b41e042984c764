package workerpool

// How the dispatcher takes a task into the pool: a plain task or a job, due
// now or later, as it arrives, comes due, or comes back for a retry. Each
// goes to a worker at once if it may start (see maySkipQueue), or to the
// queue, or to the timer heap; under DropOldest it first makes room (see
// dispatcher.makeRoom).

// accept takes a plain task: straight to a worker if it may start at once
// and one can take it, or to the back of the queue (under DropOldest,
// dropping the oldest waiting task if the queue is full). Under Block and
// Reject the task holds a place in the queue, which it gives back if it
// starts at once.
func (d *dispatcher) accept(task func()) {
	d.laneWanted = true
	d.countSubmitted()
	d.place(task, true)
}

// place puts a plain task in the pool: to a worker at once, giving back the
// place it held under Block and Reject, or to the back of the queue, under
// DropOldest dropping the oldest waiting task first if makeRoom says so (a
// scheduled task that comes due keeps the place it had).
func (d *dispatcher) place(task func(), makeRoom bool) {
	if d.maySkipQueue() && d.handOutNewOrWait(work{fn: task}) {
		if d.p.cfg.roomed {
			d.p.room.giveBack(1, &d.p.sig)
		}
		return
	}
	if makeRoom {
		d.makeRoom(false)
	}
	d.queue.push(task)
}

// acceptDelayed takes a plain task that may not start before due (Do with
// Delay or At and no other option): into the timer heap as it is, with no
// carrier, counted in Status.Scheduled; or, due already, as accept takes a
// task. Under DropOldest its submitter reserved its place in Scheduled
// (see counts.reserveScheduled), which it keeps or gives back here.
func (d *dispatcher) acceptDelayed(task func(), due int64) {
	reserved := d.p.cfg.dropsOldest()
	if d.p.clock.now() >= due {
		if reserved {
			d.p.counts.scheduled.Add(-1)
		}
		d.accept(task)
		return
	}
	d.countSubmitted()
	d.makeRoom(reserved)
	if !reserved {
		d.p.counts.scheduled.Add(1)
	}
	d.timers.pushPlain(task, due)
}

// acceptJob takes a job as accept takes a plain task. A job whose context
// is done already is settled at once and never takes a worker; one that is
// not due yet goes to the timer heap.
func (d *dispatcher) acceptJob(j *job) {
	d.takeJob(j, true)
}

// takeJob is acceptJob for a job that may start at once (atOnce), or only
// join the queue (a straggler at stop).
func (d *dispatcher) takeJob(j *job, atOnce bool) {
	if j.heldByGroup() {
		d.crew.sawTask = true        // counted in Submitted by its Group.Go call (see counts.groupOnly)
		d.p.counts.groupHeld.Add(-1) // held until now: counted where it lands from here on
	} else {
		d.countSubmitted()
	}
	if j.settled() || j.settleIfCanceled() { // settled: canceled since its send completed
		d.discard(j)
		return
	}
	d.queue.flows.joinIfKeyed(j)
	if j.notDue() {
		d.scheduleNew(j)
		return
	}
	d.unreserve(j)
	if d.dropIfTooHeavy(j) {
		return
	}
	if atOnce && d.jobMaySkipQueue(j) && d.handOutNewOrWait(work{job: j}) {
		return // handed out: its room is back (see handOutNew)
	}
	d.enqueueNew(j)
}

// enqueueNew queues a new job that is due, fits the pool and did not start
// at once; under DropOldest it first drops the oldest waiting tasks to make
// room.
func (d *dispatcher) enqueueNew(j *job) {
	d.makeRoomFor(j, false)
	if !d.queue.pushJob(j) {
		d.discard(j) // settled on its way
		return
	}
	// A group whose context ended while j was on its way cancels only its
	// queued jobs; now that j is queued, look again.
	j.settleIfCanceled()
}

// scheduleNew puts a new job that is not due yet in the timer heap; under
// DropOldest it first drops the oldest waiting tasks to make room, as the
// bound counts scheduled tasks too (a job its submitter reserved a place
// for counts already, see counts.reserveScheduled).
func (d *dispatcher) scheduleNew(j *job) {
	d.makeRoomFor(j, d.reserved(j))
	if !j.schedule() {
		d.discard(j) // settled on its way
		return
	}
	d.timers.push(j)
	// A group whose context ended while j was on its way cancels only its
	// queued and scheduled jobs; now that j is scheduled, look again.
	j.settleIfCanceled()
}

// admitDue puts a job that came due in the pool as if it were accepted
// now: to a free worker if it may start at once, else to the back of its
// level. A job whose context is done, or that weighs more than the pool's
// size, is settled instead.
func (d *dispatcher) admitDue(j *job) {
	if j.settleIfCanceled() {
		j.letGo()
		return
	}
	if d.dropIfTooHeavy(j) {
		return
	}
	if d.jobMaySkipQueue(j) && d.handOutNewOrWait(work{job: j}) {
		return
	}
	if !d.queue.pushJob(j) {
		d.discard(j)
	}
}

// dropIfTooHeavy drops j with ErrTooHeavy, and reports true, if it weighs
// more than the pool's size: a Resize made the pool smaller after j's
// submitter checked.
func (d *dispatcher) dropIfTooHeavy(j *job) bool {
	if !j.dropIfHeavierThan(d.heaviest) {
		return false
	}
	d.discard(j)
	return true
}

// discard lets go of a job that settled before it was queued: its place in
// the waiting queue if it still holds one, and the pool's reference.
func (d *dispatcher) discard(j *job) {
	j.givePlace()
	j.letGo()
}

// countSubmitted counts an accepted task and notes it for the idle clock.
func (d *dispatcher) countSubmitted() {
	d.submitted++
	d.crew.sawTask = true
}

// reserved reports, under DropOldest, whether j holds a reservation in
// Status.Scheduled that its submitter made (see reserveScheduled).
func (d *dispatcher) reserved(j *job) bool {
	return d.p.cfg.dropsOldest() && j.place.Load()
}

// unreserve gives back, under DropOldest, a reservation j holds that it
// does not need: it came due before dispatch scheduled it. (Under Block and
// Reject a job's place is its room, which it keeps while it waits.)
func (d *dispatcher) unreserve(j *job) {
	if d.p.cfg.dropsOldest() {
		j.givePlace()
	}
}
