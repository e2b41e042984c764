package workerpool

import (
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
//	pending, queued ──► canceled | abandoned
//
// The states mean:
//   - pending: accepted, or on its way to dispatch, and not in the waiting
//     queue (dispatch may have handed it straight to a worker).
//   - queued: in the waiting queue and counted in Status.Waiting, until it
//     leaves this state; dispatch moves it here when it queues it.
//   - started: the worker that took it called its func. finished: the func
//     returned, panicked or called runtime.Goexit.
//   - canceled: its context was done, or Cancel was called, before it
//     started. The first to see that settles it: Cancel, the owner's Wait,
//     dispatch, or the worker that took it.
//   - abandoned: Stop, or a Shutdown that gave up, came before it started.
//     Dispatch settles the queued jobs, a worker the one it took.
//
// Canceled, abandoned and finished are final. A job settled as canceled or
// abandoned is counted in Status exactly once (and, if it was queued, taken
// out of Waiting) by account: the settling party calls it at once, so a
// canceled task has left Waiting and joined Canceled before its Wait
// returns, and the pool side calls it again before it lets go of the job,
// so the counts are complete by the time a stop returns, even if the
// settling party is still on its way.
type job struct {
	state atomic.Uint32
	pool  *WorkerPool
	owner jobOwner // set once, when the job is made
}

// The states of a job, in the low bits of job.state; canceled and abandoned
// also carry the flags below.
const (
	jobPending uint32 = iota
	jobQueued
	jobStarted
	jobFinished
	jobCanceled
	jobAbandoned

	jobStateBits = 0b111
	jobWasQueued = 1 << 3 // settled out of queued: leaves Waiting when counted
	jobAccounted = 1 << 4 // counted in Status (see account)
)

// A jobOwner is the caller's side of a job: a waiter (DoWait), a Task, or a
// groupTask. A pooled owner is reused only once both the pool and the owner
// are done with it.
type jobOwner interface {
	// call runs the task on a worker and returns its outcome.
	call() error
	// canceled returns why the task must not start any more (its
	// context's error) or nil. It never blocks.
	canceled() error
	// settled receives the outcome, exactly once: what call returned, with
	// ran set, or why the task never ran. It never blocks, and it is the
	// settling party's last use of the job.
	settled(err error, ran bool)
	// released tells the owner that the pool holds no more reference to
	// the job: the worker that ran or skipped it, or dispatch, which
	// dropped it from the queue, is done with it.
	released()
}

func (j *job) init(p *WorkerPool, owner jobOwner) {
	j.pool, j.owner = p, owner
}

// enqueue moves a job that dispatch puts into the waiting queue from
// pending to queued, and counts it as waiting. It reports false if the job
// was settled on its way.
func (j *job) enqueue() bool {
	if !j.state.CompareAndSwap(jobPending, jobQueued) {
		return false
	}
	j.pool.waiting.Add(1)
	return true
}

// settled reports whether the job is canceled or abandoned.
func (j *job) settled() bool {
	return j.state.Load()&jobStateBits > jobFinished
}

// settle moves a job that has not started to canceled or abandoned (to),
// counts it, and tells the owner why (err). It reports false, and does
// nothing, if the job had started or was settled already.
func (j *job) settle(to uint32, err error) bool {
	if !j.cancelOrAbandon(to) {
		return false
	}
	j.owner.settled(err, false)
	return true
}

// cancelQueued is settle for an owner that cancels its own queued jobs
// under its own lock: it moves the job from queued to canceled and counts
// it, but does not call the owner back.
func (j *job) cancelQueued() bool {
	if !j.state.CompareAndSwap(jobQueued, jobCanceled|jobWasQueued) {
		return false
	}
	j.account()
	return true
}

// cancelOrAbandon moves a job that has not started to canceled or
// abandoned, and counts it.
func (j *job) cancelOrAbandon(to uint32) bool {
	if !j.state.CompareAndSwap(jobPending, to) && !j.state.CompareAndSwap(jobQueued, to|jobWasQueued) {
		return false
	}
	j.account()
	return true
}

// account counts a canceled or abandoned job in Status, once: in Canceled
// or Abandoned, and out of Waiting if it was queued. The settling party and
// the pool side both call it; the first does the counting.
func (j *job) account() {
	for {
		s := j.state.Load()
		if s&jobStateBits <= jobFinished || s&jobAccounted != 0 {
			return
		}
		if j.state.CompareAndSwap(s, s|jobAccounted) {
			j.pool.count(s)
			return
		}
	}
}

// count does account's counting for a job in state s.
func (p *WorkerPool) count(s uint32) {
	if s&jobWasQueued != 0 {
		p.waiting.Add(-1)
	}
	if s&jobStateBits == jobCanceled {
		p.settledTotals.canceled.Add(1)
	} else {
		p.settledTotals.abandoned.Add(1)
	}
}

// settleIfBlocked settles a job that must not start any more, and reports
// whether it did: canceled once its owner's context is done, abandoned once
// the pool abandons its queue. An owner's context that the stop itself
// ended (a group canceled by the cut of a Shutdown that gave up, or by a
// task the stop abandoned) counts as the stop, not as a cancel.
func (j *job) settleIfBlocked() bool {
	abandoning := isClosed(j.pool.abandoning)
	err := j.owner.canceled()
	switch {
	case err != nil && !(abandoning && errors.Is(err, ErrStopped)):
		return j.settle(jobCanceled, err)
	case abandoning:
		return j.settle(jobAbandoned, ErrStopped)
	}
	return false
}

// work runs on the worker that took the job: it starts the job and runs
// its task, or skips it if it was settled or must not start.
func (j *job) work() {
	defer j.owner.released()
	if j.settled() || j.settleIfBlocked() || !j.start() {
		j.account() // in case the party that settled it has not yet
		j.pool.workerTotals.skipped.Add(1)
		return
	}
	j.run()
}

// start moves the job to started, and reports false if it was settled
// meanwhile.
func (j *job) start() bool {
	if j.state.CompareAndSwap(jobPending, jobStarted) {
		return true
	}
	if j.state.CompareAndSwap(jobQueued, jobStarted) {
		j.pool.waiting.Add(-1)
		return true
	}
	return false
}

// run calls the task and settles the job with its outcome. The deferred
// call also runs when the task panics past the owner or calls
// runtime.Goexit, which is then the outcome.
func (j *job) run() {
	err := ErrGoexit
	defer func() {
		j.state.Store(jobFinished)
		j.owner.settled(err, true)
	}()
	err = j.owner.call()
}

// reject settles a job whose send was refused because the pool is
// stopping. The job was never accepted, so it is not counted anywhere.
func (j *job) reject(err error) {
	j.state.Store(jobAbandoned | jobAccounted)
	j.owner.settled(err, false)
}
