package workerpool

// The dispatcher's side of tickets (ticket.go) and of the bound (see
// WithMaxWaiting): accepting a ticket, parking it for room under Block,
// admitting parked tickets in arrival order, starting a single task at
// once without room, and making room under DropOldest. The parked tickets
// themselves are the admission part's (admission.go).

// acceptTicket takes a ticket. One that needs no room is admitted at once. One
// that needs room gets it if it is free and no one waits before it;
// otherwise a single task starts at once if a worker is free, since such a
// task never needs room. Failing both, a try ticket is refused with
// ErrQueueFull and any other waits, parked, to be admitted in arrival order
// as room frees (admitParked). Parked tickets that only their keys' limits
// keep from starting (see keyHeld) do not keep a new task that can start
// at once from doing so: it takes no room from them.
func (d *dispatcher) acceptTicket(t *ticket) {
	switch {
	case (t.need > 0 || t.try) && (d.p.sig.stopBegun.Load() || d.p.sig.abandonBegun.Load()):
		d.admission.refuse(t, ErrStopped) // a stop began: no one who waits for room, or tries for it, is admitted
	case t.need == 0 && !t.try:
		d.admitTicket(t, withRoom)
	case d.admission.parked.Len() > 0 && d.allKeyHeld(d.admission.parked.Len()) && d.startWithoutRoom(t):
	case d.admission.parked.Len() > 0:
		d.admission.parkOrRefuse(t)
	case t.try && d.p.room.take(1):
		t.try = false
		d.admitTicket(t, withRoom)
	case t.need > 0 && d.p.room.admit(t.need):
		d.admitTicket(t, withRoom)
	case !d.startWithoutRoom(t):
		d.admission.parkOrRefuse(t)
	}
}

// startWithoutRoom admits a single task's ticket without room and starts
// the task at once, if it may (see dispatcher.mayStartOnFreeWorker); it reports
// false, changing nothing, if it may not, or t carries a batch or a delayed
// job. A parked ticket stops being counted as one.
func (d *dispatcher) startWithoutRoom(t *ticket) bool {
	if t.batch != nil || t.delayed || !d.mayStartOnFreeWorker(t.weight, t.key) {
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
// withdrawn ones it meets. When only a worker coming free can let the
// first one in (see parkedNeedWorker), it has workers wake dispatch as they
// return. Once stopping has begun it admits none: the stop refuses them
// all.
func (d *dispatcher) admitParked() {
	if d.p.sig.stopBegun.Load() || d.p.sig.abandonBegun.Load() {
		return
	}
	for d.admission.parked.Len() > 0 {
		t := d.admission.parked.Front()
		switch {
		case t.state.Load() == ticketWithdrawn:
			d.p.room.unpark()
			t.unref()
		case d.p.room.admit(t.need):
			d.admitTicket(t, withRoom)
		case d.startWithoutRoom(t):
		case d.parkedNeedWorker() && !d.crew.watching:
			d.crew.watch(true) // then look again: a worker may have come free before it was set
			continue
		default:
			d.startPastKeyHeld()
			return
		}
		d.admission.parked.PopFront()
	}
}

// keyHeld reports whether t is a single keyed task that its key's limit
// alone keeps from starting: a worker may be free, but not for it.
func (d *dispatcher) keyHeld(t *ticket) bool {
	return t.key != "" && t.batch == nil && !t.delayed && !d.queue.flows.keyFreeFor(t.key, t.weight)
}

// allKeyHeld reports whether the first n parked tickets are all held by
// their keys' limits (see keyHeld), in a pool with such limits.
func (d *dispatcher) allKeyHeld(n int) bool {
	if d.p.cfg.keyLimit == 0 {
		return false
	}
	for i := range n {
		if !d.keyHeld(d.admission.parked.At(i)) {
			return false
		}
	}
	return true
}

// startPastKeyHeld starts at once, without room, the parked tickets that
// can, behind parked tickets that only their keys' limits hold (see
// keyHeld): as long as every ticket before one is so held, it takes no
// worker or room that one before it could take. It stops at the first
// ticket that is neither.
func (d *dispatcher) startPastKeyHeld() {
	if d.p.cfg.keyLimit == 0 {
		return
	}
	for i := 0; i < d.admission.parked.Len(); {
		switch t := d.admission.parked.At(i); {
		case t.state.Load() == ticketWithdrawn:
			d.p.room.unpark()
			t.unref()
		case d.keyHeld(t):
			i++
			continue
		case !d.startWithoutRoom(t):
			return
		}
		d.admission.parked.Remove(i)
	}
}

// admitTicket puts an admitted ticket's tasks in the pool, by the route how, and
// answers it. A ticket withdrawn meanwhile gives back the room admitted for
// it.
func (d *dispatcher) admitTicket(t *ticket, how route) {
	p := d.p
	if !t.state.CompareAndSwap(ticketWaiting, ticketAdmitted) {
		if t.need > 0 {
			p.room.giveBack(t.need, &p.sig)
		}
		t.unref()
		return
	}
	p.counts.ticketTasks.Add(uint64(t.tasks))
	switch {
	case t.job != nil:
		d.admitJob(t.job, how)
	case t.task != nil && t.due != 0:
		d.acceptDelayed(t.task, t.due)
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
	t.unref()
}

// admitPlain puts an admitted plain task in the pool, by the route how.
func (d *dispatcher) admitPlain(task func(), how route) {
	switch how {
	case withRoom:
		d.accept(task)
	case toQueue:
		d.countSubmitted()
		d.makeRoom(false)
		d.queue.push(task)
	case toWorker:
		d.countSubmitted()
		d.handOutAdmitted(work{fn: task})
	}
}

// admitJob puts an admitted job in the pool, by the route how. (A ticket
// with a job waits for room or tries for it, so a stop refuses it: it is
// never admitted toQueue.)
func (d *dispatcher) admitJob(j *job, how route) {
	j.place.Store(d.p.cfg.roomed && how != toWorker)
	switch how {
	case withRoom:
		d.acceptJob(j)
	case toWorker:
		d.countSubmitted()
		if j.settled() || j.settleIfCanceled() {
			d.discard(j)
			return
		}
		d.queue.flows.joinIfKeyed(j)
		d.handOutAdmitted(work{job: j}) // never a job that is not due (see startWithoutRoom)
	}
}

// makeRoom drops the oldest waiting tasks while the queue is full, under
// DropOldest, so that one more task fits; counted says that task is in
// Status.Scheduled already (a job reserved there, see
// counts.reserveScheduled). Dispatch never refuses a task whose send
// completed: the submitter refused it if scheduled tasks, which are never
// dropped, filled the bound (see config.scheduledFill), so a task that
// finds nothing left to drop raced with the one that filled the bound, and
// joins the queue past it.
func (d *dispatcher) makeRoom(counted bool) {
	if d.p.cfg.dropsOldest() { // the common case inlines
		d.dropToFit(counted)
	}
}

// dropToFit is makeRoom under DropOldest.
func (d *dispatcher) dropToFit(counted bool) {
	bound := int64(d.p.cfg.bound)
	if counted {
		bound++
	}
	d.queue.dropToFit(bound)
}

// makeRoomFor is makeRoom for a job, unless a Group held it back: such a
// task joins the queue without room and drops no task.
func (d *dispatcher) makeRoomFor(j *job, counted bool) {
	if !j.heldByGroup() {
		d.makeRoom(counted)
	}
}

// parkedNeedWorker reports whether parked tickets wait for what only a worker
// coming free can give: nothing is queued but tasks their keys' limits
// hold back, so no room frees as tasks leave the queue (a bound of 0, say),
// and a single task may start without room.
func (d *dispatcher) parkedNeedWorker() bool {
	return d.admission.parked.Len() > 0 && d.queue.len() == d.queue.flows.blocked
}
