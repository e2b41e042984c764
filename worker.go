package workerpool

import (
	"math"
	"sync/atomic"
)

// work is what a worker receives on workerQueue: a plain task (fn) or a job.
// The zero work is the nil func that tells a worker to return. readyAt is
// when a plain task joined the queue, on the pool's clock, or readyNow, in
// a pool whose tasks carry it (see dispatcher.stamped); a job carries its
// own (see job.readyAt).
type work struct {
	fn      func()
	job     *job
	readyAt int64
}

// readyNow is the readyAt of a task handed to a worker as it became ready,
// without waiting in the queue: it waited nothing. (The pool then reads the
// clock for it only as it starts and ends.)
const readyNow = math.MaxInt64

// stops reports whether w is the zero work.
func (w work) stops() bool { return w.fn == nil && w.job == nil }

// worker runs w, then each work it receives from workerQueue, and returns
// when it receives the zero work. Dispatch starts it with its first work,
// in p.goroutines.
func (p *WorkerPool) worker(w work) {
	retired := false // by the zero work, rather than ended by runtime.Goexit
	defer func() {
		if !retired {
			// The task ended this goroutine with runtime.Goexit (or
			// panicked with no handler, and the program is going down).
			// Count it as returned, ended for good, and let a fresh
			// goroutine take this worker's place, so the worker count
			// dispatch keeps stays true.
			p.returned(&p.counts.completed, false)
			p.goroutines.Go(p.idleWorker)
		}
	}()
	// While the worker waits in the receive, w holds nothing of the last
	// task (the deferred func does not capture it), so what that task
	// captured can be collected.
	for ; !w.stops(); w = <-p.workerQueue {
		p.returned(p.do(w))
	}
	retired = true
}

// idleWorker is a worker that starts by waiting for work: one that takes
// the place of a worker a task ended with runtime.Goexit, or one that
// WithMinWorkers keeps.
func (p *WorkerPool) idleWorker() {
	p.worker(<-p.workerQueue)
}

// do runs one work, a job or a plain task, and returns the count of
// p.counts its return goes to, and whether it completed with a run
// that panicked (see returned). A plain task completes with its one run.
func (p *WorkerPool) do(w work) (count *atomic.Uint64, panicked bool) {
	switch {
	case w.job != nil:
		return w.job.work()
	case p.cfg.timed:
		panicked = p.runTimed(w.fn, w.readyAt)
	case p.cfg.panicHandler != nil:
		panicked, _ = p.callPlain(w.fn)
	default:
		w.fn() // no defer on the common path
	}
	return &p.counts.completed, panicked
}

// callPlain runs a func() task: a plain one, or a DoWait call's. With a
// panic handler it recovers a panic, calls the handler and reports that fn
// panicked; without one the panic crashes the program. It returns the
// recovered panic as a *PanicError if a TaskFinished hook or the logger
// looks at it, else nil.
func (p *WorkerPool) callPlain(fn func()) (panicked bool, err error) {
	if p.cfg.panicHandler != nil {
		defer p.recoverPanic(&panicked, &err)
	}
	fn()
	return false, nil
}

// recoverPanic must be deferred directly: recover only stops a panic when
// called by the deferred function itself. The handler runs before the
// panicking frames unwind, and so does the logging. It does not count the
// panic: the worker does, once the task completes (see returned).
func (p *WorkerPool) recoverPanic(panicked *bool, err *error) {
	if r := recover(); r != nil {
		*panicked = true
		if p.cfg.hooks.TaskFinished != nil || p.cfg.log != nil {
			e := panicErrorFor(r)
			p.logPanic("task", e)
			*err = e
		}
		p.cfg.panicHandler(r)
	}
}

// recoverCallbackPanic is recoverPanic for a func of the pool's user that
// is not a task (what names it: a hook, the dead-letter handler): the
// panic is logged and handed to the panic handler, but not counted in
// Status.Panicked. Deferred only with a panic handler.
func (p *WorkerPool) recoverCallbackPanic(what string) {
	if r := recover(); r != nil {
		if p.cfg.log != nil {
			p.logPanic(what, panicErrorFor(r))
		}
		p.cfg.panicHandler(r)
	}
}

// returned counts one work a worker is done with in count, one of
// p.counts, as its last use of the work, and wakes dispatch if it is
// waiting for running tasks to finish (see dispatcher.barrierReached).
// panicked says the work completed (count is completed) and its last run
// panicked: then it also counts in panicked, once for the task, however
// many of its runs panicked before.
func (p *WorkerPool) returned(count *atomic.Uint64, panicked bool) {
	count.Add(1)
	if panicked {
		// Completed first, then Panicked, so that Panicked never counts a
		// task that Completed does not, and Status, which reads
		// Completed first, clamps Panicked to it for the one case left:
		// both counted between its two reads. Both before the wake, so a
		// barrier or stop that dispatch ends on this return sees them.
		p.counts.panicked.Add(1)
	}
	if p.wakeOnReturn.Load() {
		p.wakeDispatch()
	}
}

// returnedWork is the work that came back from workers: each return is
// counted in exactly one of workerTotals' three counts. Dispatch compares
// it with the work it handed out.
func (p *WorkerPool) returnedWork() uint64 {
	t := &p.counts
	return t.completed.Load() + t.skipped.Load() + t.posted.Load()
}
