package workerpool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// A ticket carries a submit that needs an answer from the dispatcher: a
// task that found no room in the waiting queue (see submitWithoutRoom),
// one that waits for room under Block (parked), or a DoBatch, whose slice
// the dispatcher copies before it answers. It holds a plain task, a job, or
// a batch. Tickets are reused through WorkerPool.recycled; both the
// submitter and the dispatcher hold one until each is done with it (refs).
type ticket struct {
	task  func()
	job   *job
	batch []func()
	tasks int  // the tasks it carries (a batch's non-nil ones)
	need  int  // places it waits for before it is admitted (Block); 0: none (it took them, or the pool has no room to count)
	try   bool // one task that found no room and must not wait for it: started at once, given room, or refused with ErrQueueFull
	// delayed says the job has a due time (a Delay), so it never starts
	// without room, weight is its Weight (1 for a plain task): it starts
	// without room only once that many slots are free, and key is its Key,
	// whose limit and queue it must also be free of. Dispatch reads these,
	// never the job, before it admits the ticket: until then the submitter
	// may withdraw and reuse the job.
	delayed bool
	weight  int
	key     string
	due     int64 // a plain task's due time (see message.due), or 0
	state   atomic.Uint32
	err     error         // why it was refused: ErrStopped; written before done is sent
	done    chan struct{} // buffered (1): the dispatcher's answer
	req     request       // {ticket: t}, set once
	refs    atomic.Int32  // 2 from newTicket: the submitter's and the dispatcher's
	recycle *sync.Pool    // where the last reference out puts it (WorkerPool.recycled)
}

// The states of a ticket.
const (
	ticketWaiting   uint32 = iota // sent, or parked with the dispatcher
	ticketAdmitted                // its tasks are in the pool
	ticketRefused                 // the pool stopped first: err says so
	ticketWithdrawn               // the submitter's context ended first
)

func (p *WorkerPool) newTicket() *ticket {
	t, _ := p.recycled.tickets.Get().(*ticket)
	if t == nil {
		t = &ticket{done: make(chan struct{}, 1), recycle: &p.recycled.tickets}
		t.req.ticket = t
	}
	t.state.Store(ticketWaiting)
	t.refs.Store(2)
	return t
}

// unref drops one of the two references to t; the last one out readies t
// for reuse.
func (t *ticket) unref() {
	if t.refs.Add(-1) == 0 {
		t.task, t.job, t.batch, t.tasks, t.need, t.try, t.err, t.delayed, t.weight, t.due = nil, nil, nil, 0, 0, false, nil, false, 0, 0
		t.key = ""
		t.recycle.Put(t)
	}
}

// submitTicket sends t to the dispatcher and waits for its answer, or
// until ctxDone is closed (nil: never). It returns nil once t is admitted,
// ErrStopped if the pool stopped first, ErrQueueFull if a try ticket found
// no room, and errWithdrawn if ctxDone came first; the submitter then still
// owns t's task. A ticket that needs room
// is counted as parked before it is sent, so that no later submitter takes
// room before it.
func (p *WorkerPool) submitTicket(t *ticket, ctxDone <-chan struct{}) error {
	if t.need > 0 {
		p.room.park()
	}
	if err := sendControl(p, message{req: &t.req}); err != nil {
		if t.need > 0 {
			p.room.unpark()
		}
		t.refs.Store(1) // the dispatcher never got it
		t.unref()
		return err
	}
	return t.await(ctxDone, &p.sig)
}

// await is the submitter's wait for the answer to t, which dispatch or the
// lane holds, until ctxDone is closed (nil: never), as submitTicket says. A
// withdrawal wakes dispatch through sig.
func (t *ticket) await(ctxDone <-chan struct{}, sig *signals) error {
	select {
	case <-t.done:
	case <-ctxDone:
		if t.state.CompareAndSwap(ticketWaiting, ticketWithdrawn) {
			sig.wakeDispatch() // it may hold room for t, or others wait behind it
			t.unref()
			return errWithdrawn
		}
		<-t.done // answered meanwhile
	}
	err := t.err
	t.unref()
	return err
}

// submitWithoutRoom submits one task (a plain task or a job) that found no
// room in the waiting queue under Block or Reject. The queue may be full,
// or its room may be held by tasks on their way to the dispatcher that
// will start at once; only the dispatcher knows. So the task goes to it in
// a ticket: it starts at once if a worker is free, or takes room that freed
// meanwhile, or else waits for room (wait: until ctx, if any, is done) or is
// refused with ErrQueueFull. A task that must not wait is refused without
// asking the dispatcher when the queue is full of waiting tasks (none could
// start before them) or submitters wait before it (under a key limit only
// the dispatcher knows whether their keys' limits alone hold them back, so
// that it may start before them: see dispatcher.acceptTicket); a delayed one, when
// the queue has no room at all (a bound of 0).
func (p *WorkerPool) submitWithoutRoom(m message, wait bool, ctx context.Context) error {
	j := m.job
	delayed := m.due != 0 || j != nil && j.due() != 0
	switch {
	case p.sig.stopBegun.Load():
		return ErrStopped
	case delayed && p.cfg.bound == 0:
		return ErrQueueFull // a task that must wait can never fit a queue with no room
	case !wait && (p.queueFull() || p.cfg.keyLimit == 0 && p.room.parked()):
		return ErrQueueFull
	}
	t := p.newTicket()
	t.task, t.job, t.due, t.tasks = m.task, j, m.due, 1
	t.delayed, t.weight = delayed, 1
	if j != nil {
		t.weight, t.key = j.weight(), j.key()
	}
	if !wait {
		t.try = true // answered at once
		return p.submitTicket(t, nil)
	}
	t.need = 1
	var ctxDone <-chan struct{}
	if ctx != nil {
		ctxDone = ctx.Done() // only now: a context may make its channel on the first call
	}
	// A plain task parks in the open lane, where a worker taking a task
	// gives it the place; with a bound of 0 no task ever waits there, so
	// it waits for a free worker, which only dispatch sees.
	if t.task != nil && t.due == 0 && p.cfg.bound > 0 && p.lane.park(t) {
		return t.await(ctxDone, &p.sig)
	}
	return p.submitTicket(t, ctxDone)
}

// queueFull reports whether as many tasks wait in dispatch's queue as the
// bound allows, and at least one does: a new task could not start before
// them. (Tasks in the lane are not counted: one may be about to start on
// a worker that dispatch is yet to bring, and then a new task could take
// its place; dispatch knows.)
// Under a key limit (WithKeys) it reports false: the waiting tasks may be held back
// by their keys' limits, and a task of another key, or without one, may
// start before them on a free worker, which only the dispatcher knows.
func (p *WorkerPool) queueFull() bool {
	if p.cfg.keyLimit > 0 {
		return false
	}
	inLane := p.lane.waiting() // first: see lane.counted
	n := p.counts.waiting.Load() - inLane
	return n > 0 && n >= int64(p.cfg.bound)
}

// errWithdrawn reports a ticket withdrawn because the submitter's context
// ended; callers return the context's error instead.
var errWithdrawn = errors.New("workerpool: withdrawn")

// answer settles a ticket the dispatcher holds: admitted, or refused with
// err. It reports false if the submitter withdrew it first.
func (t *ticket) answer(to uint32, err error) bool {
	if !t.state.CompareAndSwap(ticketWaiting, to) {
		return false
	}
	t.err = err
	t.done <- struct{}{}
	return true
}
