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

// DoBatch queues every non-nil task of tasks, in order, in one step (one
// hand-off to the dispatcher, or one append to its lane: see the package
// documentation's Dispatcher), or none of them: it returns ErrStopped once the pool is
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
	case p.cfg.bounded && n > p.cfg.bound, p.cfg.scheduledFill(p.counts.scheduled.Load(), n):
		return p.countRejected(ErrQueueFull, n, nil)
	}
	if p.lane.appendAll(tasks, n) {
		return nil
	}
	t := p.newTicket()
	t.batch, t.tasks = tasks, n
	took := p.cfg.roomed && p.room.take(n)
	switch {
	case !p.cfg.roomed, took:
	case p.cfg.overflow == Reject:
		t.refs.Store(1)
		t.unref()
		return p.countRejected(ErrQueueFull, n, nil)
	default:
		t.need = n
	}
	err := p.submitTicket(t, nil)
	if err != nil && took {
		p.room.giveBack(n, &p.sig)
	}
	return err
}

// admission is the dispatcher's part for the submitters parked for room
// under Block (see WithMaxWaiting), in arrival order: the first is
// admitted once room frees, and the others wait behind it (see
// dispatcher.admitParked, in admit.go). The room itself (WorkerPool.room)
// is shared: submitters take it before they send. The dispatcher owns this
// part.
type admission struct {
	room   *room // the pool's: a parked ticket counts in it
	parked deque.Deque[*ticket]
}

// A route says how admit puts a ticket's tasks in the pool.
type route int

const (
	withRoom route = iota // as accept takes a task: each holds room (if the pool counts it), given back if it starts at once
	toQueue               // to the back of the queue: a straggler at stop
	toWorker              // to a free worker (dispatcher.mayStartOnFreeWorker), holding no room
)

// atRest reports whether no submitter is parked: the loop need not wait on
// anything for this part.
func (a *admission) atRest() bool { return a.parked.Len() == 0 }

// wantsWake reports whether dispatch must wake when room frees or a
// parked submitter withdraws: while submitters are parked.
func (a *admission) wantsWake() bool { return a.parked.Len() > 0 }

// parkOrRefuse parks a ticket that waits for room, and refuses a try
// ticket, which must not wait, with ErrQueueFull.
func (a *admission) parkOrRefuse(t *ticket) {
	if !t.try {
		a.parked.PushBack(t)
		return
	}
	t.answer(ticketRefused, ErrQueueFull)
	t.unref()
}

// parkBack parks t, a ticket that waited in the lane (see lane.parked),
// behind those parked before it: dispatch takes the lane's tickets as it
// closes the lane, before the message that closed it.
func (a *admission) parkBack(t *ticket) { a.parked.PushBack(t) }

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
		a.room.unpark()
	}
	t.answer(ticketRefused, err)
	t.unref()
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
		if p.cfg.scheduledFill(p.counts.scheduled.Load(), 1) {
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
	if !p.sig.beginSend(&p.taskSends) {
		return ErrStopped
	}
	if !p.counts.reserveScheduled(p.cfg.bound) {
		p.sig.sendRefused(&p.taskSends)
		return ErrQueueFull
	}
	if m.job != nil {
		m.job.place.Store(true) // a settle before dispatch takes it over gives it back (see job.givePlace)
	}
	p.taskQueue <- m
	return nil
}

// dropsOldest reports whether the pool has a bound with DropOldest: the
// dispatcher makes room by dropping waiting tasks, and submitters take no
// room. (DropOldest with a bound of 0 has no waiting task to drop, and is
// Reject.)
func (c *config) dropsOldest() bool {
	return c.bounded && !c.roomed
}

// scheduledFill reports, under DropOldest, whether n more tasks cannot fit
// because scheduled tasks, which are never dropped, hold the bound's
// places, of which scheduled are held. (Under Block and Reject they hold
// room, which submitters take.)
func (c *config) scheduledFill(scheduled int64, n int) bool {
	return c.dropsOldest() && scheduled > int64(c.bound-n)
}

// reserveScheduled counts a job that is not due yet in Status.Scheduled,
// under DropOldest, before its submitter sends it, so that once its call
// has returned the next call sees its place taken; it reports false, taking
// nothing, if scheduled tasks fill the bound. Dispatch takes the count over
// as it schedules the job (see job.schedule).
func (c *counts) reserveScheduled(bound int) bool {
	for {
		n := c.scheduled.Load()
		if n >= int64(bound) {
			return false
		}
		if c.scheduled.CompareAndSwap(n, n+1) {
			return true
		}
	}
}
