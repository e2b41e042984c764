package workerpool

import (
	"sync/atomic"
)

// Status is a snapshot of a WorkerPool, returned by [WorkerPool.Status].
//
// While tasks flow, each field is read on its own from counters that the
// pool's goroutines keep as they go, so fields can be a moment apart: a
// task just handed to a worker may still show as waiting, and one that
// SubmitWait has just seen finish may not be counted in Completed yet. A
// task that was canceled has left Waiting and joined Canceled by the time
// its Wait or Done reports it. The counters (Submitted to Rejected) never
// go back from one snapshot to the next, but for Submitted while the pool
// stops: a submit that the stop refuses counts in it for a moment. Once the pool has stopped the snapshot is
// exact and
//
//	Submitted == Completed + Abandoned + Canceled + Dropped + Expired
//
// with Workers, Busy, Waiting and Scheduled all zero: every accepted task
// lands in exactly one of those buckets, however many times it was
// retried. Rejected tasks were never accepted, so they are not in
// Submitted.
type Status struct {
	Paused     bool // a Pause is in effect (and no stop has begun): new tasks are accepted and held
	Stopping   bool // Stop, StopWait or Shutdown has begun and not finished: new tasks are refused
	Stopped    bool // stopping has finished: no task runs or will start, and the snapshot is exact
	MaxWorkers int  // the most workers: New's maxWorkers, the last Resize's, or a size window's (at least 1); under WithAdaptiveSize, the size the pool chose
	Workers    int  // live worker goroutines, busy or idle
	Busy       int  // workers running a task (or being handed one)
	Waiting    int  // accepted tasks waiting for a worker, including those a Pause holds, as WaitingQueueSize reports
	Scheduled  int  // accepted tasks not due yet (a Delay, or waiting for a retry), in the timer heap; they join Waiting when due
	Keys       int  // keys (TaskOption.Key) with tasks waiting, scheduled or running
	// SizeReason is, under WithAdaptiveSize, why the pool chose the size
	// MaxWorkers reports: its last decision (see Sizing itself in the
	// package documentation); "" without it.
	SizeReason string

	Submitted uint64 // tasks accepted since New: plain tasks, DoWait calls, Tasks, Futures and group tasks, each group task from its Group.Go call (held back by SetLimit, or skipped by a canceled group, included)
	Completed uint64 // accepted tasks whose func was called and ended for good: returned, panicked or called runtime.Goexit, and was not retried; and those whose run a TaskStarted hook ended with runtime.Goexit before their func was called
	Panicked  uint64 // of Completed, the tasks whose last run panicked (recovered by the Panic hook, or into a *PanicError), never more than Completed; earlier runs of a retried task that panicked are not counted
	Abandoned uint64 // accepted tasks that never started because the pool stopped first (Stop, or a Shutdown that gave up; any stop for group tasks held back by SetLimit)
	Canceled  uint64 // Tasks, Futures and group tasks that never started because their context ended
	Dropped   uint64 // accepted tasks dropped from a full queue to make room for newer ones (DropOldest), or heavier than the pool after a Resize (ErrTooHeavy); only those: TaskDropped hears of every task that never runs
	Expired   uint64 // accepted tasks that waited in the queue longer than WithQueueTimeout and never ran
	Retried   uint64 // runs of a task after its first, under TaskOption.Retry; not a bucket of Submitted
	Rejected  uint64 // tasks refused because the queue was full, or heavier than the pool (ErrTooHeavy), whatever the call (a DoContext whose ctx was done included); never accepted
}

// counts are the counters behind Status that the pool's goroutines keep as
// tasks flow, each group on cache lines of its own, so that a write by one
// side does not evict what the other sides read or write.
type counts struct {
	_ cacheLinePad
	// Published by dispatch for observers; waiting is also moved by
	// whoever moves a job in or out of the queued state (see
	// waitQueue.publish), and settled by whoever settles a task.
	workers         atomic.Int64  // live workers
	waiting         atomic.Int64  // tasks in the waiting queue; may dip below 0 for a moment
	scheduled       atomic.Int64  // jobs in the timer heap that are not settled (see job state scheduled), and reservations (see reserveScheduled)
	paused          atomic.Bool   // a Pause is in effect
	keys            atomic.Int64  // keys with tasks in the pool (see flows.byKey)
	settled         settledTotals // the accepted tasks that never ran, by why
	groupOnly       atomic.Uint64 // group tasks counted in Submitted by their Group.Go call: held back by SetLimit (released ones too: their send is not counted again), or skipped by a canceled group
	groupHeld       atomic.Int64  // of groupOnly, the tasks their groups hold back now (see Group.SetLimit), and those released that dispatch has not taken yet: neither in the pool nor settled
	ticketTasks     atomic.Uint64 // tasks admitted through tickets, published by dispatch: Status adds them to the sends
	rejected        atomic.Uint64 // tasks refused because the queue was full, never accepted
	submittedAtStop atomic.Uint64 // the exact number of accepted tasks, stored by dispatch before it closes stopped (see submitted)

	_ cacheLinePad
	// Written by the workers. Every work a worker is done with counts in
	// exactly one of completed, skipped and posted, as the worker's last
	// act with it (see workerSide.returned): so Completed is one counter,
	// which never goes back, and the work that came back is their sum (see
	// counts.returnedWork).
	completed atomic.Uint64 // tasks that ran and ended for good: returned, panicked or called runtime.Goexit, and not to be retried
	skipped   atomic.Uint64 // jobs a worker found settled and did not run
	posted    atomic.Uint64 // runs posted for a retry (see retryPolicy): not a task's last
	panicked  atomic.Uint64 // of completed, the tasks whose last run panicked (see workerSide.returned)
	reruns    atomic.Uint64 // runs of a task after its first (Status.Retried)
	_         cacheLinePad
}

// settledTotals count the accepted tasks that never ran, written by
// whoever settles them: dispatch for plain tasks, the settling party for
// jobs.
type settledTotals struct {
	canceled  atomic.Uint64 // jobs canceled before they started
	abandoned atomic.Uint64 // tasks a stop dropped before they started
	dropped   atomic.Uint64 // tasks dropped from a full queue (DropOldest), or too heavy after a Resize
	expired   atomic.Uint64 // tasks that waited in the queue longer than WithQueueTimeout
}

// count counts one task settled to the state to.
func (t *settledTotals) count(to uint32) { t.add(to, 1) }

// add counts n tasks settled to the state to.
func (t *settledTotals) add(to uint32, n uint64) {
	switch to {
	case jobCanceled:
		t.canceled.Add(n)
	case jobAbandoned:
		t.abandoned.Add(n)
	case jobDropped:
		t.dropped.Add(n)
	case jobExpired:
		t.expired.Add(n)
	}
}

// Size returns the maximum number of workers: as given to New, or to the
// last Resize, or a size window's while it lasts (see WithMinWorkers);
// under WithAdaptiveSize, the size the pool chose. At least 1. It never
// blocks.
func (p *WorkerPool) Size() int {
	return int(p.size.size())
}

// WaitingQueueSize returns the number of accepted tasks waiting for a worker:
// tasks queued because every worker was busy, or held by a Pause. It counts
// user tasks only, never the pool's own bookkeeping; a task that was
// canceled stops counting as soon as its Wait or Done reports it. It is 0
// once Stop, StopWait or Shutdown has returned, and never blocks.
func (p *WorkerPool) WaitingQueueSize() int {
	return int(max(p.lane.total(p.counts.waiting.Load()), 0))
}

// Stopped reports whether Stop, StopWait or Shutdown has been called. It
// returns true from the moment stopping begins, before the pool has
// finished stopping, and never blocks.
func (p *WorkerPool) Stopped() bool {
	return p.sig.stopBegun.Load()
}

// Status returns a snapshot of the pool's state and counters. It never
// blocks, and is safe to call at any time, including during Pause, a stop,
// and after the pool stopped. See [Status] for how consistent it is.
func (p *WorkerPool) Status() Status {
	// stopped is read once, first: once it is closed every count is final,
	// and a snapshot says Stopped only if all its counts were read
	// after that.
	stopped := isClosed(p.sig.stopped)
	stopping := !stopped && p.sig.stopBegun.Load()
	// Every accepted task is, at any moment, scheduled (a retry's next
	// run included), waiting, held back by its group (SetLimit), busy (on
	// its way to a worker or running), completed, or settled. Busy is what
	// the other counts leave; while tasks flow they are read a moment
	// apart, so it is clamped to [0, workers]. Completed is one counter,
	// read once: it never goes back. The held tasks are read after
	// Submitted (Group.Go counts a held task there last) and before the
	// buckets a dropped one moves to (dropHeld counts it there first), so
	// no held task shows as busy; a released one counts as held until
	// dispatch takes it.
	submitted := p.submitted(stopped)
	held := max(p.counts.groupHeld.Load(), 0)
	completed := p.counts.completed.Load()
	canceled := p.counts.settled.canceled.Load()
	abandoned := p.counts.settled.abandoned.Load()
	waiting := p.WaitingQueueSize()
	scheduled := int(max(p.counts.scheduled.Load(), 0))
	workers := int(p.counts.workers.Load())
	dropped := p.counts.settled.dropped.Load()
	expired := p.counts.settled.expired.Load()
	busy := submitted - int64(waiting+scheduled) - held - int64(completed) - int64(canceled+abandoned+dropped+expired)
	return Status{
		Paused:     !stopped && !stopping && p.counts.paused.Load(),
		Stopping:   stopping,
		Stopped:    stopped,
		MaxWorkers: p.Size(),
		Workers:    workers,
		Busy:       int(min(max(busy, 0), int64(workers))),
		Waiting:    waiting,
		Scheduled:  scheduled,
		Keys:       int(max(p.counts.keys.Load(), 0)),
		SizeReason: p.size.sizeReason(),
		Submitted:  uint64(submitted),
		Completed:  completed,
		Panicked:   min(p.counts.panicked.Load(), completed), // counted after Completed and read after it: see workerSide.returned
		Abandoned:  abandoned,
		Canceled:   canceled,
		Dropped:    dropped,
		Expired:    expired,
		Retried:    p.counts.reruns.Load(),
		Rejected:   p.counts.rejected.Load(),
	}
}

// submitted counts the accepted tasks: exactly once the pool has stopped,
// and before that from the sends that carry one task each (a send that is
// about to be refused counts for a moment) and the tasks admitted through
// tickets. Both add the group tasks that never reached dispatch (groupOnly).
func (p *WorkerPool) submitted(stopped bool) int64 {
	if stopped {
		return int64(p.counts.submittedAtStop.Load() + p.counts.groupOnly.Load())
	}
	return p.taskSends.Load() + int64(p.lane.appended.Load()) + int64(p.counts.ticketTasks.Load()) + int64(p.counts.groupOnly.Load())
}

// isClosed reports, without blocking, whether a signal channel is closed.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// sizeReason is Status.SizeReason: the adaptive sizer's last decision, ""
// without WithAdaptiveSize.
func (s *sizeSettings) sizeReason() string {
	if r := s.reason.Load(); r != nil {
		return *r
	}
	return ""
}
