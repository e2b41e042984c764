package workerpool

import (
	"context"
	"strconv"
	"sync/atomic"

	"github.com/gammazero/deque"
)

// Overflow says what a new task meets when the waiting queue is full (see
// WithMaxWaiting).
type Overflow int

const (
	// Block: the submitter waits for room (back-pressure). Submitters that
	// wait get room strictly in arrival order.
	Block Overflow = iota
	// Reject: the new task is refused with ErrQueueFull.
	Reject
	// DropOldest: the oldest waiting task is dropped, with an error
	// wrapping ErrQueueFull, to make room; the new task is accepted.
	DropOldest
)

// string returns the policy's name, such as "Block", for messages.
func (o Overflow) string() string {
	switch o {
	case Block:
		return "Block"
	case Reject:
		return "Reject"
	case DropOldest:
		return "DropOldest"
	}
	return "Overflow(" + strconv.Itoa(int(o)) + ")"
}

// room holds the waiting queue's free places under Block and Reject, and
// the count of submitters parked with the dispatcher until room frees, in
// one word, so that a submitter takes room only if nobody is parked before
// it: free places in the low 32 bits, parked submitters in the high 32.
// Whoever takes a task out of the waiting queue gives its place back (see
// job.place and waitQueue.pop); the dispatcher admits parked submitters in
// arrival order.
type room struct {
	word atomic.Uint64
}

const parkedOne = 1 << 32

func (r *room) init(places int) { r.word.Store(uint64(places)) }

// take takes n places, and reports false, taking none, if fewer are free or
// a submitter is parked.
func (r *room) take(n int) bool {
	for {
		w := r.word.Load()
		if w>>32 != 0 || uint32(w) < uint32(n) {
			return false
		}
		if r.word.CompareAndSwap(w, w-uint64(n)) {
			return true
		}
	}
}

// give returns n places, and reports whether submitters are parked: the
// dispatcher should then look at them.
func (r *room) give(n int) (parked bool) {
	return r.word.Add(uint64(n))>>32 != 0
}

// giveBack gives back n places, and wakes dispatch through sig if
// submitters wait for room.
func (r *room) giveBack(n int, sig *signals) {
	if r.give(n) {
		sig.wakeDispatch()
	}
}

// parked reports whether submitters wait with the dispatcher for room.
func (r *room) parked() bool { return r.word.Load()>>32 != 0 }

// park counts a submitter that will wait with the dispatcher for room.
func (r *room) park() { r.word.Add(parkedOne) }

// unpark uncounts a parked submitter that leaves without room.
func (r *room) unpark() { r.word.Add(^uint64(parkedOne - 1)) }

// admit takes n places for a parked submitter and uncounts it, and reports
// false, changing nothing, if fewer are free.
func (r *room) admit(n int) bool {
	for {
		w := r.word.Load()
		if uint32(w) < uint32(n) {
			return false
		}
		if r.word.CompareAndSwap(w, w-parkedOne-uint64(n)) {
			return true
		}
	}
}

// DoContext queues task like Do, with options, and returns once it is
// accepted: no one waits for it, and if it never runs it goes to
// Hooks.DeadLetter. Under Block it waits for room only until ctx is done,
// and then returns ctx's error without queuing task; with a ctx that is
// already done it never waits: it takes task if it can start or find room
// at once, and else returns ErrQueueFull. Otherwise it returns why the
// pool refused task, as the package documentation's table of errors says.
// ctx bounds only the wait for room: once accepted, the task
// no longer looks at ctx (give Go a context to cancel a task that waits).
// The hooks see ctx's values. A nil task is ignored and DoContext returns
// nil. It panics if ctx is nil, and if opts hold a Retry. Safe for
// concurrent use.
func (p *WorkerPool) DoContext(ctx context.Context, task func(), opts ...TaskOption) error {
	if ctx == nil {
		panic("workerpool: DoContext called with a nil context")
	}
	o := p.parseDoOptions(opts)
	if ctx.Err() != nil {
		return p.countRejected(p.doWithOptions(task, o, ctx, false), 1, &o)
	}
	err := p.doWithOptions(task, o, ctx, true)
	if err == errWithdrawn {
		return ctx.Err()
	}
	return p.countRejected(err, 1, &o)
}

// DoBatch queues every non-nil task of tasks, in order, in one hand-off to
// the dispatcher, or none of them: it returns ErrStopped once the pool is
// stopping. Nil entries are skipped and do not count. With a bound the
// batch is one admission, which needs room for all its tasks, even those
// that then start at once: Block waits until it all fits (a batch waiting at
// the head of the submitters holds back those behind it), Reject returns
// ErrQueueFull unless it all fits, and DropOldest drops the oldest waiting
// tasks to make room; a batch larger than the bound gets ErrQueueFull at
// once under every policy (its tasks counted in Status.Rejected). Once
// accepted, the tasks are plain tasks, as Submit's. The pool keeps no
// reference to the slice after DoBatch returns. Safe for concurrent use.
func (p *WorkerPool) DoBatch(tasks []func()) error {
	n := 0
	for _, task := range tasks {
		if task != nil {
			n++
		}
	}
	switch {
	case n == 0:
		return nil
	case p.sig.stopBegun.Load():
		return ErrStopped
	case p.cfg.bounded && n > p.cfg.bound, p.scheduledFill(n):
		return p.countRejected(ErrQueueFull, n, nil)
	}
	t := p.newTicket()
	t.batch, t.tasks = tasks, n
	took := p.cfg.roomed && p.room.take(n)
	switch {
	case !p.cfg.roomed, took:
	case p.cfg.overflow == Reject:
		t.refs.Store(1)
		t.unref(p)
		return p.countRejected(ErrQueueFull, n, nil)
	default:
		t.need = n
	}
	err := p.submitTicket(t, nil)
	if err != nil && took {
		p.giveRoom(n)
	}
	return err
}

// admission is the dispatcher's part for the bound (see WithMaxWaiting):
// the submitters parked for room under Block, in arrival order (the first
// is admitted once room frees, and the others wait behind it), and the
// drops that make room under DropOldest. The room itself (WorkerPool.room)
// is shared: submitters take it before they send. The dispatcher owns this
// part.
type admission struct {
	p      *WorkerPool
	parked deque.Deque[*ticket]
}

// A route says how admit puts a ticket's tasks in the pool.
type route int

const (
	withRoom route = iota // as accept takes a task: each holds room (if the pool counts it), given back if it starts at once
	toQueue               // to the back of the queue: a straggler at stop
	toWorker              // to a free worker (dispatcher.canStartAtOnce), holding no room
)

// atRest reports whether no submitter is parked: the loop need not wait on
// anything for this part.
func (a *admission) atRest() bool { return a.parked.Len() == 0 }

// wantsWake reports whether dispatch must wake when room frees or a
// parked submitter withdraws: while submitters are parked.
func (a *admission) wantsWake() bool { return a.parked.Len() > 0 }

// needsWorker reports whether parked tickets wait for what only a worker
// coming free can give: nothing is queued but tasks their keys' limits
// hold back, so no room frees as tasks leave the queue (a bound of 0, say),
// and a single task may start without room.
func (a *admission) needsWorker(q *waitQueue) bool {
	return a.parked.Len() > 0 && q.len() == q.flows.blocked
}

// accept takes a ticket. One that needs no room is admitted at once. One
// that needs room gets it if it is free and no one waits before it;
// otherwise a single task starts at once if a worker is free, since such a
// task never needs room. Failing both, a try ticket is refused with
// ErrQueueFull and any other waits, parked, to be admitted in arrival order
// as room frees (admitParked). Parked tickets that only their keys' limits
// keep from starting (see keyHeld) do not keep a new task that can start
// at once from doing so: it takes no room from them.
func (a *admission) accept(d *dispatcher, t *ticket) {
	switch {
	case (t.need > 0 || t.try) && (a.p.sig.stopBegun.Load() || a.p.sig.abandonBegun.Load()):
		a.refuse(t, ErrStopped) // a stop began: no one who waits for room, or tries for it, is admitted
	case t.need == 0 && !t.try:
		a.admit(d, t, withRoom)
	case a.parked.Len() > 0 && a.allKeyHeld(d, a.parked.Len()) && a.startWithoutRoom(d, t):
	case a.parked.Len() > 0:
		a.parkOrRefuse(t)
	case t.try && a.p.room.take(1):
		t.try = false
		a.admit(d, t, withRoom)
	case t.need > 0 && a.p.room.admit(t.need):
		a.admit(d, t, withRoom)
	case !a.startWithoutRoom(d, t):
		a.parkOrRefuse(t)
	}
}

// parkOrRefuse parks a ticket that waits for room, and refuses a try
// ticket, which must not wait, with ErrQueueFull.
func (a *admission) parkOrRefuse(t *ticket) {
	if !t.try {
		a.parked.PushBack(t)
		return
	}
	t.answer(ticketRefused, ErrQueueFull)
	t.unref(a.p)
}

// startWithoutRoom admits a single task's ticket without room and starts
// the task at once, if it may (see dispatcher.canStartAtOnce); it reports
// false, changing nothing, if it may not, or t carries a batch or a delayed
// job. A parked ticket stops being counted as one.
func (a *admission) startWithoutRoom(d *dispatcher, t *ticket) bool {
	if t.batch != nil || t.delayed || !d.canStartAtOnce(t.weight, t.key) {
		return false
	}
	if t.need > 0 {
		a.p.room.unpark()
		t.need = 0
	}
	t.try = false
	a.admit(d, t, toWorker)
	return true
}

// admitParked admits parked tickets in arrival order while the first one's
// room is free, or, for a single task, a worker is free, and drops the
// withdrawn ones it meets. When only a worker coming free can let the
// first one in (see needsWorker), it has workers wake dispatch as they
// return. Once stopping has begun it admits none: the stop refuses them
// all.
func (a *admission) admitParked(d *dispatcher) {
	if a.p.sig.stopBegun.Load() || a.p.sig.abandonBegun.Load() {
		return
	}
	for a.parked.Len() > 0 {
		t := a.parked.Front()
		switch {
		case t.state.Load() == ticketWithdrawn:
			a.p.room.unpark()
			t.unref(a.p)
		case a.p.room.admit(t.need):
			a.admit(d, t, withRoom)
		case a.startWithoutRoom(d, t):
		case a.needsWorker(&d.queue) && !d.crew.watching:
			d.crew.watch(true) // then look again: a worker may have come free before it was set
			continue
		default:
			a.startPastKeyHeld(d)
			return
		}
		a.parked.PopFront()
	}
}

// keyHeld reports whether t is a single keyed task that its key's limit
// alone keeps from starting: a worker may be free, but not for it.
func (a *admission) keyHeld(d *dispatcher, t *ticket) bool {
	return t.key != "" && t.batch == nil && !t.delayed && !d.queue.flows.mayStartKeyAtOnce(t.key, t.weight)
}

// allKeyHeld reports whether the first n parked tickets are all held by
// their keys' limits (see keyHeld), in a pool with such limits.
func (a *admission) allKeyHeld(d *dispatcher, n int) bool {
	if a.p.cfg.keyLimit == 0 {
		return false
	}
	for i := range n {
		if !a.keyHeld(d, a.parked.At(i)) {
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
func (a *admission) startPastKeyHeld(d *dispatcher) {
	if a.p.cfg.keyLimit == 0 {
		return
	}
	for i := 0; i < a.parked.Len(); {
		switch t := a.parked.At(i); {
		case t.state.Load() == ticketWithdrawn:
			a.p.room.unpark()
			t.unref(a.p)
		case a.keyHeld(d, t):
			i++
			continue
		case !a.startWithoutRoom(d, t):
			return
		}
		a.parked.Remove(i)
	}
}

// admit puts an admitted ticket's tasks in the pool, by the route how, and
// answers it. A ticket withdrawn meanwhile gives back the room admitted for
// it.
func (a *admission) admit(d *dispatcher, t *ticket, how route) {
	p := a.p
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
		a.admitJob(d, t.job, how)
	case t.task != nil && t.due != 0:
		d.acceptDelayed(t.task, t.due)
	case t.task != nil:
		a.admitPlain(d, t.task, how)
	default:
		for _, task := range t.batch {
			if task != nil {
				a.admitPlain(d, task, how)
			}
		}
	}
	t.done <- struct{}{}
	t.unref(p)
}

// admitPlain puts an admitted plain task in the pool, by the route how.
func (a *admission) admitPlain(d *dispatcher, task func(), how route) {
	switch how {
	case withRoom:
		d.accept(task)
	case toQueue:
		d.countSubmitted()
		a.makeRoom(d, false)
		d.queue.push(task)
	case toWorker:
		d.countSubmitted()
		d.startAtOnce(work{fn: task})
	}
}

// admitJob puts an admitted job in the pool, by the route how. (A ticket
// with a job waits for room or tries for it, so a stop refuses it: it is
// never admitted toQueue.)
func (a *admission) admitJob(d *dispatcher, j *job, how route) {
	j.place.Store(a.p.cfg.roomed && how != toWorker)
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
		d.startAtOnce(work{job: j}) // never a job that is not due (see startWithoutRoom)
	}
}

// refuseAll answers every parked ticket ErrStopped: the pool stops, and no
// one who waits for room gets it. (A try ticket that arrives as a
// straggler passes through here too; it was never counted as parked.)
func (a *admission) refuseAll() {
	for t := range a.parked.IterPopFront() {
		a.refuse(t, ErrStopped)
	}
}

// refuseTooHeavy answers ErrTooHeavy to the parked tickets whose task
// weighs more than size, after a Resize made the pool smaller: they could
// never start, and would hold back every ticket behind them.
func (a *admission) refuseTooHeavy(size int) {
	for range a.parked.Len() {
		t := a.parked.PopFront()
		if t.weight > size {
			a.refuse(t, ErrTooHeavy)
			continue
		}
		a.parked.PushBack(t)
	}
}

// refuse answers a ticket that waits for room, or tries for it, with err,
// unless its submitter withdrew it. (A ticket that waits was counted as
// parked; a try ticket never is.)
func (a *admission) refuse(t *ticket, err error) {
	if !t.try {
		a.p.room.unpark()
	}
	t.answer(ticketRefused, err)
	t.unref(a.p)
}

// makeRoom drops the oldest waiting tasks while the queue is full, under
// DropOldest, so that one more task fits; counted says that task is in
// Status.Scheduled already (a job reserved there, see
// WorkerPool.reserveScheduled). Dispatch never refuses a task whose send
// completed: the submitter refused it if scheduled tasks, which are never
// dropped, filled the bound (see WorkerPool.scheduledFill), so a task that
// finds nothing left to drop raced with the one that filled the bound, and
// joins the queue past it.
func (a *admission) makeRoom(d *dispatcher, counted bool) {
	if a.p.dropsOldest() { // the common case inlines
		a.dropToFit(d, counted)
	}
}

// dropToFit is makeRoom under DropOldest.
func (a *admission) dropToFit(d *dispatcher, counted bool) {
	bound := int64(a.p.cfg.bound)
	if counted {
		bound++
	}
	for d.queue.inQueue()+a.p.counts.scheduled.Load() >= bound && a.dropOldest(&d.queue) {
	}
}

// makeRoomFor is makeRoom for a job, unless a Group held it back: such a
// task joins the queue without room and drops no task.
func (a *admission) makeRoomFor(d *dispatcher, j *job, counted bool) {
	if !j.heldByGroup() {
		a.makeRoom(d, counted)
	}
}

// dropOldest drops the oldest waiting task, and reports false if none was
// left. A plain one goes to the dead-letter handler with errDropped; a job
// settles with errDropped, which its caller learns.
func (a *admission) dropOldest(q *waitQueue) bool {
	q.tidy()
	src := q.oldest()
	if src.isNone() {
		return false
	}
	q.giveUpFront(src, jobDropped, errDropped)
	return true
}

// reserved reports, under DropOldest, whether j holds a reservation in
// Status.Scheduled that its submitter made (see reserveScheduled).
func (p *WorkerPool) reserved(j *job) bool {
	return p.dropsOldest() && j.place.Load()
}

// unreserve gives back, under DropOldest, a reservation j holds that it
// does not need: it came due before dispatch scheduled it. (Under Block and
// Reject a job's place is its room, which it keeps while it waits.)
func (p *WorkerPool) unreserve(j *job) {
	if p.dropsOldest() {
		p.givePlaceOf(j)
	}
}

// sendDropOldest sends one task under DropOldest. A task due at once that
// finds the bound filled by scheduled tasks, which are never dropped (see
// scheduledFill), can only start at once on a free worker, which needs no
// place: the dispatcher starts it so, or refuses it with ErrQueueFull (see
// submitWithoutRoom). A job that is not due yet takes its place among the
// scheduled tasks before it is sent (see reserveScheduled).
func (p *WorkerPool) sendDropOldest(m message) error {
	j := m.job
	if m.due == 0 && (j == nil || j.due() == 0) {
		if p.scheduledFill(1) {
			return p.submitWithoutRoom(m, false, nil)
		}
		return send(p, m)
	}
	return p.sendReserved(m)
}

// sendReserved is send for a task not due yet under DropOldest: once
// its send has begun, it takes its place in Status.Scheduled (see
// reserveScheduled), which dispatch takes over with the task (see
// acceptDelayed and job.schedule). A stop refuses the send before the
// place is taken, and a send that began before the stop always completes
// (see send), so no place is ever held for a task that was refused.
func (p *WorkerPool) sendReserved(m message) error {
	p.mustBeNew()
	if !p.sig.beginSend(&p.sig.taskSends) {
		return ErrStopped
	}
	if !p.reserveScheduled() {
		p.sig.sendRefused(&p.sig.taskSends)
		return ErrQueueFull
	}
	if m.job != nil {
		m.job.place.Store(true) // a settle before dispatch takes it over gives it back (see givePlaceOf)
	}
	p.taskQueue <- m
	return nil
}

// dropsOldest reports whether the pool has a bound with DropOldest: the
// dispatcher makes room by dropping waiting tasks, and submitters take no
// room. (DropOldest with a bound of 0 has no waiting task to drop, and is
// Reject.)
func (p *WorkerPool) dropsOldest() bool {
	return p.cfg.bounded && !p.cfg.roomed
}

// scheduledFill reports, under DropOldest, whether n more tasks cannot fit
// because scheduled tasks, which are never dropped, hold the bound's
// places. (Under Block and Reject they hold room, which submitters take.)
func (p *WorkerPool) scheduledFill(n int) bool {
	return p.dropsOldest() && p.counts.scheduled.Load() > int64(p.cfg.bound-n)
}

// reserveScheduled counts a job that is not due yet in Status.Scheduled,
// under DropOldest, before its submitter sends it, so that once its call
// has returned the next call sees its place taken; it reports false, taking
// nothing, if scheduled tasks fill the bound. Dispatch takes the count over
// as it schedules the job (see job.schedule).
func (p *WorkerPool) reserveScheduled() bool {
	for {
		n := p.counts.scheduled.Load()
		if n >= int64(p.cfg.bound) {
			return false
		}
		if p.counts.scheduled.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// giveRoom gives back n places of the waiting queue, and wakes dispatch if
// submitters wait for room.
func (p *WorkerPool) giveRoom(n int) {
	if p.room.give(n) {
		p.sig.wakeDispatch()
	}
}
