package workerpool

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// work is what a worker receives on workerQueue: a plain task (fn) or a job.
// The zero work is the nil func that tells a worker to return. readyAt is
// when the task joined the queue (accepted, or come due), on the pool's
// clock, or readyNow if it did not wait there, in a pool whose tasks carry
// it (see waitQueue.stamped).
type work struct {
	fn      func()
	job     *job
	readyAt int64
	// offered says dispatch offered the task while it waited for other
	// events too (see offerFront): a Stop that abandons the queue may come
	// meanwhile, and a worker that takes a plain task so offered once
	// abandoning began gives it up rather than start it.
	offered bool
	// nudge says: look at the lane (see lane); it carries no task.
	// Dispatch sends it to a worker that waits on workerQueue while tasks
	// wait in the lane, and idleWorker starts with it.
	nudge bool
}

// readyNow is the readyAt of a task handed to a worker as it became ready,
// without waiting in the queue: it waited nothing. (The pool then reads the
// clock for it only as it starts and ends.)
const readyNow = math.MaxInt64

// stops reports whether w is the zero work.
func (w work) stops() bool { return w.fn == nil && w.job == nil && !w.nudge }

// A workerSide is what a worker goroutine sees of the pool: the channel it
// receives work on, the counts and signals it writes as it returns work,
// and the observer that runs a task's hooks. Dispatch's crew starts the
// workers (see crew.start); a worker never sees the dispatcher's state.
type workerSide struct {
	queue      <-chan work     // workerQueue's receiving end
	counts     *counts         // the pool's: the work returned, the panics
	sig        *signals        // wake-ups, and abandoning
	obs        *observer       // the hooks, the Panic hook and the dead letters
	timed      bool            // the hooks read the clock around each run (see config.timed)
	goroutines *sync.WaitGroup // the pool's: a worker that a Goexit ended is replaced in it
	lane       *lane           // the pool's: the plain tasks that skip dispatch
}

// worker runs w, then each work it receives from workerQueue, and returns
// when it receives the zero work. Dispatch starts it with its first work,
// in the pool's goroutines.
func (ws *workerSide) worker(w work) {
	retired := false // by the zero work, rather than ended by runtime.Goexit
	// e is what is left to do with the work in hand once it is counted
	// returned: tell a job's owner its outcome and let go of it (see
	// ending). e.posted says the job was posted for a retry before its
	// run ended (a TaskFinished hook may then end the goroutine): the pool
	// keeps it, and it counts as posted, not completed.
	var e ending
	var lw *laneWaiter // its place at the lane, once it waited there
	defer func() {
		if !retired {
			// The task, or a hook around it, ended this goroutine with
			// runtime.Goexit (or panicked with no handler, and the
			// program is going down). Count it as returned, ended for
			// good unless posted, end it, and let a fresh goroutine take
			// this worker's place, so the worker count dispatch keeps
			// stays true.
			if e.posted {
				ws.returned(&ws.counts.posted, false)
			} else {
				ws.returned(&ws.counts.completed, false)
			}
			e.end()
			ws.goroutines.Go(ws.idleWorker)
		}
		ws.lane.release(lw)
	}()
	if w.nudge {
		w = ws.next(&lw)
	}
	// While the worker waits in the receive, w and e hold nothing of the
	// last task, so what that task captured can be collected.
	for ; !w.stops(); w = ws.next(&lw) {
		ws.returned(ws.do(w, &e))
		if e.job != nil || e.posted { // a plain task leaves nothing to do
			e.end()
		}
	}
	retired = true
}

// An ending is what a worker has left to do with the job it ran, once it
// has counted the work returned: tell the owner the outcome of its last
// run, then let go of it (see job.letGo). So by the time a task's Wait
// returns, its worker is free and the slots of its weight and of its key
// are given back: a task submitted next never finds the pool fuller than
// the one before left it.
type ending struct {
	job     *job  // the job the worker is done with; nil for a plain task or a job posted for a retry
	tell    bool  // the job's owner is yet to learn its outcome: err, of a run that ran if ran
	ran     bool  //
	err     error //
	posted  bool  // the job was posted for a retry: the pool keeps it, and the worker leaves it alone
	started bool  // its task's func was called: a Goexit before that (in TaskStarted) means it never ran
}

// end tells the owner and lets go of the job, if the worker has one, and
// readies e for the next work.
func (e *ending) end() {
	j, tell, ran, err := e.job, e.tell, e.ran, e.err
	*e = ending{}
	if j == nil {
		return
	}
	if tell {
		j.owner.conclude(err, ran)
	}
	j.owner.released()
}

// idleWorker is a worker that starts by waiting for work: one that takes
// the place of a worker a task ended with runtime.Goexit, or one that
// WithMinWorkers keeps.
func (ws *workerSide) idleWorker() {
	ws.worker(work{nudge: true})
}

// next is the worker's next work: what it receives on workerQueue, or,
// while the lane is open, the lane's front task first (see lane.next). lw
// is the worker's place at the lane, made at its first wait there.
func (ws *workerSide) next(lw **laneWaiter) work {
	if !ws.lane.open.Load() {
		if w := <-ws.queue; !w.nudge {
			return w
		}
	}
	return ws.lane.next(ws.queue, lw)
}

// do runs one work, a job or a plain task, and returns the count of
// p.counts its return goes to, and whether it completed with a run
// that panicked (see returned). A plain task completes with its one run;
// what is left to do with a job is in e.
func (ws *workerSide) do(w work, e *ending) (count *atomic.Uint64, panicked bool) {
	switch {
	case w.job != nil:
		return w.job.work(w.readyAt, e)
	case w.offered && ws.sig.abandonBegun.Load():
		ws.abandonTaken(w.fn)
		return &ws.counts.skipped, false
	case ws.timed:
		panicked = ws.obs.runTimed(w.fn, w.readyAt)
	case ws.obs.hooks.Panic != nil:
		panicked, _ = ws.obs.callPlain(w.fn, nil)
	default:
		w.fn() // no defer on the common path
	}
	return &ws.counts.completed, panicked
}

// abandonTaken gives up a plain task that must not start, as abandoning
// (Stop, or a Shutdown that gave up) has begun: one from the queue that a
// worker took, which the dispatcher offered it a moment before (see
// work.offered), or one the dispatcher was to start at once, without room
// (see handOutAdmitted). It is abandoned as the queue's tasks are: counted,
// and given to the dead-letter handler with ErrStopped.
func (ws *workerSide) abandonTaken(task func()) {
	ws.counts.settled.count(jobAbandoned)
	ws.obs.giveUpPlain(task, ErrStopped)
}

// returned counts one work a worker is done with in count, one of
// p.counts, as its last use of the work, and wakes dispatch if it is
// waiting for running tasks to finish (see dispatcher.pauseReached).
// panicked says the work completed (count is completed) and its last run
// panicked: then it also counts in panicked, once for the task, however
// many of its runs panicked before.
func (ws *workerSide) returned(count *atomic.Uint64, panicked bool) {
	count.Add(1)
	if panicked {
		// Completed first, then Panicked, so that Panicked never counts a
		// task that Completed does not, and Status, which reads
		// Completed first, clamps Panicked to it for the one case left:
		// both counted between its two reads. Both before the wake, so a
		// barrier or stop that dispatch ends on this return sees them.
		ws.counts.panicked.Add(1)
	}
	if ws.sig.wakeOnReturn.Load() {
		ws.sig.wakeDispatch()
	}
}

// returnedWork is the work that came back from workers: each return is
// counted in exactly one of workerTotals' three counts. Dispatch compares
// it with the work it handed out.
func (t *counts) returnedWork() uint64 {
	return t.completed.Load() + t.skipped.Load() + t.posted.Load()
}

// crew is the dispatcher's part for its workers: how many live and how
// many may, the floor WithMinWorkers keeps, the work out with them, and
// the idle clock that retires them. The dispatcher owns it; workers only
// count the work they return (see workerSide.returned).
type crew struct {
	ws          *workerSide    // what the workers it starts see
	workerQueue chan<- work    // the sending end: the work, and the zero work that retires
	taskQueue   chan<- message // the idle clock sends its ticks on it
	idleTimeout time.Duration  // WithIdleTimeout's
	workers     int            // live workers, published in p.counts.workers at once
	max         int            // the most workers: p.size.max as of the last resize
	floor       int            // the workers kept however idle: min(p.size.floor, max) as of the last resize
	dispatched  uint64         // the work sent to workers; what has not come back is out
	watching    bool           // p.sig.wakeOnReturn is set: workers wake dispatch as they return work (see watch)

	// The idle clock retires workers: while workers above the floor exist,
	// one goroutine at a time waits out an idle period on idle and sends
	// an idleTick request; sawTask says whether a task came in since the
	// last tick. idle is nil when retirement is disabled.
	idle         *time.Timer
	clockRunning bool
	sawTask      bool
}

// init readies the crew to start workers that see ws, on a pool of at
// most max workers that keeps floor.
func (c *crew) init(ws *workerSide, workerQueue chan<- work, taskQueue chan<- message, idleTimeout time.Duration, max, floor int) {
	c.ws, c.workerQueue, c.taskQueue, c.idleTimeout = ws, workerQueue, taskQueue, idleTimeout
	c.max = max
	c.floor = min(floor, c.max)
	if c.idleTimeout > 0 {
		c.idle = time.NewTimer(c.idleTimeout)
		c.idle.Stop() // armed only while workers above the floor exist
	}
}

// atRest reports whether the crew needs nothing from the loop: no return
// is watched and no worker above the size waits to retire.
func (c *crew) atRest() bool { return !c.watching && !c.surplus() }

// wantsWake reports whether workers wake dispatch as they return work.
func (c *crew) wantsWake() bool { return c.watching }

// out is the work sent to workers that has not come back.
func (c *crew) out() uint64 {
	returned := c.ws.counts.returnedWork() // first: every task counted returned is counted taken before
	return c.dispatched + c.ws.lane.taken.Load() - returned
}

// freeWorkers is the number of workers that have returned their last work
// (see freeWorker).
func (c *crew) freeWorkers() int {
	return max(c.workers-int(c.out()), 0)
}

// freeWorker reports whether a task handed out now starts at once: fewer
// workers than the maximum exist, or one is free, as it has returned its
// last work (it is then in, or on its way to, its receive).
func (c *crew) freeWorker() bool {
	return c.workers < c.max || c.out() < uint64(c.workers)
}

// allBack reports whether all work sent to workers has come back. Until
// it has, it watches the returns (see watch), so that a worker returning
// work wakes dispatch to look again.
func (c *crew) allBack() bool {
	// Set wakeOnReturn before loading returned, and workers add to
	// returned before loading wakeOnReturn: one of the two always sees
	// the other.
	c.watch(true)
	if c.out() != 0 {
		return false
	}
	c.watch(false)
	return true
}

// watch makes workers wake dispatch as they return work, or stops it.
func (c *crew) watch(on bool) {
	if c.watching != on {
		c.watching = on
		c.ws.sig.wakeOnReturn.Store(on)
	}
}

// startFloor starts the workers WithMinWorkers keeps.
func (c *crew) startFloor() {
	for c.workers < c.floor {
		c.start(c.ws.idleWorker)
	}
}

// start starts a worker that runs run, and the idle clock if it is needed.
func (c *crew) start(run func()) {
	c.workers++
	c.ws.counts.workers.Store(int64(c.workers))
	c.armIdleClock()
	c.ws.goroutines.Go(run)
}

// retired counts a worker that took the zero work.
func (c *crew) retired() {
	c.workers--
	c.ws.counts.workers.Store(int64(c.workers))
}

// surplus reports whether more workers exist than the pool's size: no task
// starts until they are retired.
func (c *crew) surplus() bool { return c.workers > c.max }

// retireSurplus retires ready workers while more exist than the pool's
// size, and reports whether no more do. Busy ones retire as they come back
// (see dispatcher.offerFront).
func (c *crew) retireSurplus() bool {
	for c.workers > c.max {
		select {
		case c.workerQueue <- work{}:
			c.retired()
		default:
			return false
		}
	}
	return true
}

// resize adopts the pool's size and floor as Resize or a
// size window left them (the last one wins; see sizeSettings): it retires ready workers
// above the size at once (busy ones as they come back), starts the
// workers the floor asks for, and starts the idle clock if a lower floor
// left workers above it.
func (c *crew) resize(max, floor int) {
	c.max = max
	c.floor = min(floor, c.max)
	c.retireSurplus()
	c.startFloor()
	c.armIdleClock()
}

// armIdleClock starts one idle period, unless retirement is disabled, no
// worker above the floor exists, or a period is running.
func (c *crew) armIdleClock() {
	if c.idle == nil || c.workers <= c.floor || c.clockRunning {
		return
	}
	c.clockRunning = true
	c.idle.Reset(c.idleTimeout)
	c.ws.goroutines.Go(c.awaitIdlePeriod)
}

// awaitIdlePeriod is the idle clock's goroutine, one per period: it sends
// the idle tick once the period has passed. It returns at once when
// stopping is closed; dispatch stops the timer as it stops.
func (c *crew) awaitIdlePeriod() {
	select {
	case <-c.idle.C:
	case <-c.ws.sig.stopping:
		return
	}
	select {
	case c.taskQueue <- message{req: &idleTick}:
	case <-c.ws.sig.stopping:
	}
}

// idleTick runs on every idle tick. If no task came in during the whole
// period and nothing queued can run (queuedMayStart false), it retires one ready worker above the
// floor; a busy worker is never retired. A new period starts while workers
// above the floor remain.
func (c *crew) idleTick(queuedMayStart bool) {
	c.clockRunning = false
	if !c.sawTask && c.workers > c.floor && !queuedMayStart {
		select {
		case c.workerQueue <- work{}:
			c.retired()
		default:
		}
	}
	c.sawTask = false
	c.armIdleClock()
}

// retireAll sends each worker the zero work, and stops the idle clock.
// Each send completes when a worker, done with its task, takes it; that
// worker then only returns.
func (c *crew) retireAll() {
	for c.workers > 0 {
		c.workerQueue <- work{}
		c.retired()
	}
	if c.idle != nil {
		c.idle.Stop()
	}
}

// give gives w to a ready worker, or to a new one if fewer than the
// maximum exist. It reports false, without blocking, if neither is
// possible, or while more workers exist than the size (no task starts
// until they are retired).
//
// The caller tells the parts (see dispatcher.handed), the crew too.
func (c *crew) give(w work) bool {
	if c.surplus() && !c.retireSurplus() {
		return false
	}
	select {
	case c.workerQueue <- w:
		return true
	default:
	}
	if c.workers >= c.max {
		return false
	}
	c.start(func() { c.ws.worker(w) })
	return true
}

// took counts a task a worker took: the work out.
func (c *crew) took() { c.dispatched++ }

// jobOut is what dispatch counts of a job it hands out: its weight and
// whether it may come back for a retry.
type jobOut struct {
	weight    int
	retriable bool
	flow      *flow  // its key's, if it has one
	flowGen   uint32 // flow.gen as the job got it (see flows.took)
	keyHeld   bool   // it holds its key's slots already (a retry)
}

// outOf reads w's jobOut; call it before the send.
func outOf(w work) jobOut {
	if w.job == nil {
		return jobOut{weight: 1}
	}
	j := w.job
	out := jobOut{weight: j.weight(), retriable: j.retriable(), flow: j.flow(), keyHeld: j.keyHeld()}
	if out.flow != nil {
		out.flowGen = j.opts.flowGen
	}
	return out
}
