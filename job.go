package workerpool

import (
	"context"
	"errors"
	"sync/atomic"
)

// A job carries one task that someone waits for (a DoWait call, a Task or
// Future, or a group task) from its submit to its outcome. It is the pool's
// one carrier of such tasks: they all move through the same states, and
// every move is a compare-and-swap on state, so exactly one party settles a
// job, counts it in Status and tells its owner:
//
//	pending ──────────────┬──► started ──► finished
//	   └──► queued ───────┘
//	pending ◄──► scheduled ◄── started (a run to be retried)
//	pending, queued, scheduled ──► canceled | abandoned | dropped
//	queued ──► expired
//
// The states mean:
//   - pending: accepted, or on its way to dispatch, and not in the waiting
//     queue (dispatch may have handed it straight to a worker).
//   - queued: in the waiting queue and counted in Status.Waiting, until it
//     leaves this state; dispatch moves it here when it queues it.
//   - scheduled: not due yet (a Delay, or waiting for its next run under
//     a retry policy): dispatch keeps it in its timer heap and counts it in
//     Status.Scheduled, until it moves it back to pending when it is due
//     (it is then handled as a job just accepted). The worker whose run
//     is to be retried moves it from started to scheduled, and posts it to
//     dispatch (see signals.retries).
//   - started: the worker that took it called its func. finished: the func
//     returned, panicked or called runtime.Goexit.
//   - canceled: its context was done, or Task.cancel was called, before it
//     started. The first to see that settles it: cancel, the owner's Wait,
//     dispatch, or the worker that took it.
//   - abandoned: Stop, or a Shutdown that gave up, came before it started.
//     Dispatch settles the queued jobs, a worker the one it took.
//   - dropped: dispatch dropped it from a full queue to make room for a
//     newer task (DropOldest), or because a Resize made the pool smaller
//     than its weight.
//   - expired: it waited in the queue for WithQueueTimeout's d (dispatch).
//
// Canceled, abandoned, dropped, expired and finished are final. A job
// settled after a run that was to be retried tells its owner why joined
// with that run's error (see withLastRun). The party that
// settles a job as canceled, abandoned or dropped counts it in Status,
// takes it out of Waiting if it was queued, out of its key's members (see
// leaveKey), and gives back its room before it tells the owner, so a
// canceled task has left Waiting, joined Canceled and, if it was its key's
// last task, taken the key out of Status.Keys before its Wait returns. A stop waits
// for the settles in progress (see signals.settling), so the counts are
// complete when it returns.
type job struct {
	state atomic.Uint32
	// place says the job holds a place in the bound (see WithMaxWaiting):
	// under Block and Reject a place of room (see WorkerPool.room), set by
	// its submitter (or by dispatch, which admits it); under DropOldest a
	// place in Status.Scheduled that its submitter reserved for a job not
	// due yet (see counts.reserveScheduled), which dispatch takes over
	// as it schedules the job (see schedule). It is swapped off,
	// once, by whoever ends the job's hold on it: dispatch taking over a
	// reservation, the worker that starts the job, or the party that
	// settles it; a place of room goes back after the job left Waiting.
	place atomic.Bool
	pool  *WorkerPool
	owner jobOwner // set once, when the job is made

	// opts is the state of a task that uses an option, out of line so
	// that a task without one carries none of it: nil for such a task
	// (priority 0, weight 1, no due time, no retry). Written by its
	// submitter before the send; then as jobOptions says.
	opts *jobOptions
}

// The states of a job.
const (
	jobPending uint32 = iota
	jobQueued
	jobScheduled
	jobStarted
	jobFinished
	jobCanceled
	jobAbandoned
	jobDropped // dropped from a full queue to make room (DropOldest), or too heavy after a Resize
	jobExpired // waited in the queue longer than WithQueueTimeout
)

// A jobOwner is the caller's side of a job: a waiter (DoWait), a Task, or a
// groupTask. A pooled owner is reused only once both the pool and the owner
// are done with it.
type jobOwner interface {
	// call runs the task on a worker with ctx (see runContext; in a timed
	// pool, what TaskStarted returned) and returns its outcome, and
	// whether it panicked (a panic it recovered). A func() task ignores
	// ctx.
	call(ctx context.Context) (panicked bool, err error)
	// runContext is the ctx the task runs with, and TaskStarted gets: the
	// task's own context, or, for a plain task, context.Background() or
	// the values of DoContext's ctx.
	runContext() context.Context
	// canceled returns why the task must not start any more (its
	// context's error) or nil. It never blocks.
	canceled() error
	// conclude receives the outcome, exactly once: what call returned, with
	// ran set, or why the task never ran. It never blocks, and it is the
	// settling party's last use of the job.
	conclude(err error, ran bool)
	// released tells the owner that the pool holds no more reference to
	// the job: the worker that ran or skipped it, or dispatch, which
	// dropped it from the queue, is done with it.
	released()
	// ctxDone reports whether the context the task runs with is done
	// (Task.cancel included), which ends its retries.
	ctxDone() bool
}

func (j *job) init(p *WorkerPool, owner jobOwner) {
	j.pool, j.owner = p, owner
}

// reset readies a reused job for a new task with options o, kept in
// store if it uses any.
func (j *job) reset(o taskOptions, store *jobOptions) {
	j.apply(o, store)
	j.state.Store(jobPending)
}

// enqueue moves a job that dispatch puts into the waiting queue from
// pending to queued, and counts it as waiting. It reports false if the job
// was settled on its way.
func (j *job) enqueue() bool {
	if !j.state.CompareAndSwap(jobPending, jobQueued) {
		return false
	}
	j.pool.counts.waiting.Add(1)
	return true
}

// schedule moves a job that dispatch puts in its timer heap from pending
// to scheduled, and counts it in Status.Scheduled, unless its submitter's
// reservation there counts it already (see counts.reserveScheduled):
// the job's place then becomes its place in the heap. It reports false if
// the job was settled on its way (its settler gave the reservation back).
func (j *job) schedule() bool {
	if !j.state.CompareAndSwap(jobPending, jobScheduled) {
		return false
	}
	if !(j.pool.cfg.dropsOldest() && j.place.Swap(false)) {
		j.pool.counts.scheduled.Add(1)
	}
	return true
}

// comeDue moves a scheduled job that dispatch takes out of its timer heap
// back to pending, and takes it out of Status.Scheduled. It reports false
// if the job was settled while it waited.
func (j *job) comeDue() bool {
	if !j.state.CompareAndSwap(jobScheduled, jobPending) {
		return false
	}
	j.pool.counts.scheduled.Add(-1)
	return true
}

// isScheduled reports whether the job waits in the timer heap, not
// settled.
func (j *job) isScheduled() bool {
	return j.state.Load() == jobScheduled
}

// settled reports whether the job is settled: canceled, abandoned, dropped
// or expired; it will never run.
func (j *job) settled() bool {
	return j.state.Load() > jobFinished
}

// settle moves a job that has not started to canceled, abandoned or
// dropped (to), counts it, and tells the owner why (err). It reports false, and does
// nothing, if the job had started or was settled already.
func (j *job) settle(to uint32, why error) bool { return j.settleFor(to, why, nil) }

// settleFor is settle, and, with e, settle for the worker that took the
// job: the owner learns why from e, once the worker counts itself free
// (see ending), as it learns a run's outcome.
func (j *job) settleFor(to uint32, why error, e *ending) bool {
	for _, from := range [...]uint32{jobPending, jobQueued, jobScheduled} {
		if err, ok := j.settleFrom(from, to, why); ok {
			if e != nil {
				e.tell, e.ran, e.err = true, false, err
			} else {
				j.owner.conclude(err, false)
			}
			return true
		}
	}
	return false
}

// cancelQueued is settle for an owner that cancels its own queued or
// scheduled jobs under its own lock: it moves the job to canceled and
// counts it, but does not call the owner back. why is the error the owner
// records for it.
func (j *job) cancelQueued(why error) bool {
	_, queued := j.settleFrom(jobQueued, jobCanceled, why)
	if queued {
		return true
	}
	_, scheduled := j.settleFrom(jobScheduled, jobCanceled, why)
	return scheduled
}

// settleFrom moves the job from a state before started to canceled,
// abandoned, dropped or expired, counts it, and tells why it never runs
// (see tellLost): why, joined with its last run's error if it waited for a
// next run (see withLastRun), which it returns for the owner. The move, the
// count and the letter are one settle in progress for a stop to wait for.
func (j *job) settleFrom(from, to uint32, why error) (err error, ok bool) {
	p := j.pool
	p.sig.beginSettle()
	defer p.sig.endSettle()
	if !j.state.CompareAndSwap(from, to) {
		return nil, false
	}
	err = why
	if last := j.lastErr(); last != nil { // written by the worker before it posted the job: read only once it is the settler's
		err = withLastRun(why, last)
	}
	j.leaveKey() // before the wake-up: dispatch may forget the key at once
	switch from {
	case jobQueued:
		p.counts.waiting.Add(-1)
		p.sig.queuedSettles.Add(1)
		j.countKeySettle(from)
		p.sig.wakeDispatch() // it may be offering this job to the workers
	case jobScheduled:
		p.counts.scheduled.Add(-1)
		j.countKeySettle(from)
		p.sig.wakeDispatch() // it may take the job out of its timer heap now
	}
	if from != jobScheduled || p.cfg.roomed {
		// After Waiting went down (see waitQueue.publishAfter). Under
		// DropOldest a scheduled job's Scheduled count was given back
		// above: a reservation it still holds has become that count (see
		// schedule).
		j.givePlace()
	}
	p.counts.settled.count(to)
	j.tellLost(err)
	return err, true
}

// countKeySettle counts a keyed job settled while it waited under a key
// limit (WithKeys), before the settle wakes dispatch, so that dispatch lets go
// of it at once and its key's next task may start (see
// dispatcher.dropSettledKeyed): in p.sig.keySettles if it was queued, where it
// may have been the front that its key's limit held back, or if it held
// its key's slots (a retry, see flows.holdsSlots); in p.sig.holderSettles too
// if it held them, as it may wait in the timer heap. (The key is the
// task's, set before the job was sent; it never changes while the settler
// holds the job.)
func (j *job) countKeySettle(from uint32) {
	p, o := j.pool, j.opts
	if p.cfg.keyLimit == 0 || o == nil || o.key == "" {
		return
	}
	held := o.keyHeld.Load()
	if held {
		p.sig.holderSettles.Add(1)
	}
	if held || from == jobQueued {
		p.sig.keySettles.Add(1)
	}
}

// tellLost tells of a job that will never run: its task goes to the
// dead-letter handler if it is a plain task (see plainJob), which no caller
// waits for, and TaskDropped learns why in either case.
func (j *job) tellLost(why error) {
	if pj, ok := j.owner.(*plainJob); ok {
		j.pool.obs.giveUp(pj.fn, j.info(why))
		return
	}
	j.pool.obs.tellDropped(j.info(why))
}

// tellNotRun tells of a job whose run began but whose func was never
// called (see finish): a plain task, which no caller waits for, goes to the
// dead-letter handler with why (see giveUpStarted); an owner that waits
// learns why as the worker ends the job.
func (j *job) tellNotRun(why error) {
	if pj, ok := j.owner.(*plainJob); ok {
		j.pool.obs.giveUpStarted(pj.fn, why)
	}
}

// letGo drops the pool's reference to the job, exactly once for every job
// the pool took: whoever takes it off the queue, the timer heap or the
// retry mailbox without handing it to a worker does it (the dispatcher),
// and the worker that ran or skipped it does it as it is done, in two
// steps (see ending). It tells the owner, which may then reuse the job.
func (j *job) letGo() {
	j.leaveFlowIfKeyed()
	j.owner.released()
}

// leaveFlowIfKeyed is letGo's first step: the job leaves its key's flow, if
// it has one.
func (j *job) leaveFlowIfKeyed() {
	if j.flow() != nil {
		j.leaveFlow()
	}
}

// leaveFlow gives back what the job holds of its key's flow as the pool
// lets go of it: its place among the flow's members, unless the party
// that settled it took it out (see leaveKey), and, under a limit, its
// slots, which it posts to dispatch (see flows.takeMail).
func (j *job) leaveFlow() {
	p, o := j.pool, j.opts
	r := flowRelease{flow: o.flow, gen: o.flowGen}
	if o.keyHeld.Swap(false) && p.cfg.keyLimit > 0 {
		r.held = o.weight
	}
	if o.member.Swap(false) {
		r.last = r.flow.leave(&p.counts.keys)
	}
	p.sig.postRelease(r)
}

// leaveKey takes a keyed job that settles out of its key's members, so
// that Status.Keys no longer counts the key, if the job was its last
// task, by the time the job's owner learns why it will never run. The
// job's slots, if it holds any, go back only as the pool lets go of it
// (see leaveFlow).
func (j *job) leaveKey() {
	o := j.opts
	if o == nil || !o.member.Swap(false) {
		return
	}
	j.pool.sig.postRelease(flowRelease{flow: o.flow, gen: o.flowGen, last: o.flow.leave(&j.pool.counts.keys)})
}

// leave counts one member out of fl (and the key out of keys), and reports whether it was the
// last: the key then leaves Status.Keys. The member still counts when
// this is called, so dispatch has not forgotten fl (see flows.forget).
func (fl *flow) leave(keys *atomic.Int64) bool {
	if fl.members.Add(-1) != 0 {
		return false
	}
	keys.Add(-1)
	return true
}

// postRelease posts r to dispatch, if it has anything to tell: slots
// given back, or a flow whose last member left.
func (s *signals) postRelease(r flowRelease) {
	if r.held > 0 || r.last {
		s.releases.post(r)
		if s.wakeOnRelease.Load() {
			s.wakeDispatch()
		}
	}
}

// keepPlace gives j back the place of room that dispatch took from it
// for a hand-off that failed: j joins the queue holding it. A settle in
// between found no place to give back, so if j settled, its place goes
// back now (once, whoever of the two sees it).
func (j *job) keepPlace() {
	j.place.Store(true)
	if j.settled() {
		j.givePlace()
	}
}

// givePlace gives back the place j held in the bound, if it held one
// (see job.place); only the first of several callers does.
func (j *job) givePlace() {
	p := j.pool
	switch {
	case !j.place.Swap(false):
	case p.cfg.roomed:
		p.room.giveBack(1, &p.sig)
	default:
		p.counts.scheduled.Add(-1) // a reservation under DropOldest
	}
}

// settleIfBlocked settles a job that must not start any more, and reports
// whether it did: canceled once its owner's context is done (see
// settleIfCanceled), abandoned once the pool abandons its queue. A stop
// that abandons the job asks it, and so does the worker that took the job,
// through settleTaken.
func (j *job) settleIfBlocked() bool { return j.settleIfBlockedFor(nil) }

// settleTaken is settleIfBlocked for the worker that took the job: the
// owner learns why it never runs from e, once the worker counts itself free
// (see ending), so that its Wait never reports before the worker is free.
func (j *job) settleTaken(e *ending) bool { return j.settleIfBlockedFor(e) }

func (j *job) settleIfBlockedFor(e *ending) bool {
	if j.settleIfCanceledFor(e) {
		return true
	}
	return j.pool.sig.abandonBegun.Load() && j.settleFor(jobAbandoned, ErrStopped, e)
}

// settleIfCanceled settles a job as canceled once its owner's context is
// done, and reports whether it did. An owner's context that the stop itself
// ended (a group canceled by the cut of a Shutdown that gave up, or by a
// task the stop abandoned) counts as the stop, not as a cancel: the job is
// left to the stop. Dispatch asks this, not settleIfBlocked, of the jobs it
// holds: once abandoning has begun it leaves them where they wait, and the
// stop gives them up in queue order (see waitQueue.abandonAll).
func (j *job) settleIfCanceled() bool { return j.settleIfCanceledFor(nil) }

// settleIfCanceledFor is settleIfCanceled, for the worker that took the job
// with e (see settleFor).
func (j *job) settleIfCanceledFor(e *ending) bool {
	err := j.owner.canceled()
	if err == nil || errors.Is(err, ErrStopped) && j.pool.sig.abandonBegun.Load() {
		return false
	}
	return j.settleFor(jobCanceled, err, e)
}

// abandon settles a job that a stop abandons, if it is not settled yet:
// canceled if its owner's context ended first, else abandoned, and its
// owner learns ErrStopped.
func (j *job) abandon() {
	if !j.settleIfBlocked() {
		j.settle(jobAbandoned, ErrStopped) // false if it was settled already
	}
}

// refuse settles a job that the pool refused with err: its send failed,
// or dispatch refused its ticket. It reports false, and
// does nothing, if the job was settled meanwhile (a cancel that came after
// the send). Whoever refuses the job counts it.
func (j *job) refuse(err error) bool {
	if !j.state.CompareAndSwap(jobPending, jobAbandoned) {
		return false
	}
	j.owner.conclude(err, false)
	return true
}

// start moves the job to started, and reports false if it was settled
// meanwhile. A started job leaves Waiting if it was queued, then gives back
// its room: the worker that took it does this, never dispatch, which must
// not touch a job once a worker has it (it may be finished and reused).
func (j *job) start() bool {
	switch {
	case j.state.CompareAndSwap(jobPending, jobStarted):
	case j.state.CompareAndSwap(jobQueued, jobStarted):
		j.pool.counts.waiting.Add(-1)
	default:
		return false
	}
	j.givePlace()
	if j.opts != nil && j.opts.attempt > 0 {
		j.pool.counts.reruns.Add(1)
	}
	return true
}

// finish moves the started job to finished, and leaves its owner the
// outcome of its last run in e, to learn once the worker is free (see
// ending): err, or errTaskStartedGoexit if its func was never called (its
// TaskStarted hook ended the goroutine), which a plain task with no one
// waiting for it takes to the dead-letter handler. A retry whose func was
// never called ran no more: its owner learns why joined with the last
// run's error, as for a retry that never runs again (see withLastRun).
func (j *job) finish(err error, e *ending) {
	j.state.CompareAndSwap(jobStarted, jobFinished) // only this worker moves a started job
	e.tell, e.ran, e.err = true, e.started, err
	if !e.started {
		e.err = errTaskStartedGoexit
		if last := j.lastErr(); last != nil {
			e.err = withLastRun(errTaskStartedGoexit, last)
		}
		j.tellNotRun(errTaskStartedGoexit)
	}
}

// postForRetry moves a started job whose run is to be retried to
// scheduled and counts it in Status.Scheduled, on the worker that ran it;
// then it posts the job to dispatch (see signals.retries). A Task.cancel, or the end of
// the group's context, that came while the policy decided found the job
// started and only canceled its context: it ends the retries now.
func (j *job) postForRetry() {
	p := j.pool
	p.counts.scheduled.Add(1)
	j.state.CompareAndSwap(jobStarted, jobScheduled) // only this worker moves a started job
	if j.owner.ctxDone() {
		j.cancelRetry()
	}
	p.sig.retries.post(j)
}
