package workerpool

import (
	"time"

	"github.com/gammazero/deque"
)

// The dispatcher is the pool's one coordinating goroutine. It owns the
// waiting queue, the worker count, the idle clock and the pause and stop
// state: they live in the dispatcher struct, which no other goroutine can
// reach. It receives tasks and requests from taskQueue and hands tasks to
// workers over workerQueue, starting a worker when none is ready and fewer
// than the maximum exist, and queueing the task otherwise. While the queue
// is not empty, new tasks join its back and workers are fed from its front.
//
// Stop and StopWait close stopping and then send the empty message on
// taskQueue. When dispatch takes it, it admits the sends still in flight
// (their tasks only join the queue) and stops receiving. For StopWait it
// drains the queue to the workers; for Stop, or a Stop that cuts a StopWait
// short, it drops the queue and answers the DoWait calls whose task it
// dropped. Then it sends one nil per worker and closes stopped once the
// last worker has taken its nil. Hand-offs made by closing a channel:
// stopping (Stop and StopWait to submitters, Pause callers and dispatch),
// abandon (Stop to dispatch), stopped (dispatch to Stop and StopWait
// callers) and each pause's barrierReached (dispatch to one Pause caller).
type dispatcher struct {
	p *WorkerPool

	queue   deque.Deque[func()]       // accepted tasks waiting for a worker
	tracked deque.Deque[trackedEntry] // the tracked tasks in queue, in queue order
	pushed  uint64                    // tasks ever pushed to queue
	popped  uint64                    // tasks ever popped from queue
	handed  uint64                    // tasks handed to workers (published in counted.handed); equals ran.finished once all have come back
	workers int                       // live workers

	// idle retires workers: armed while workers exist, it fires once per
	// idle timeout (sending an idleTick request), and sawTask says whether
	// a task came in since the last tick. nil when retirement is disabled.
	idle    *time.Timer
	sawTask bool

	stopping bool // Stop's message was taken: late tasks only join the queue

	// pauses are the Pause calls in effect, oldest first; only the first
	// is active. pauses[0].barrier is a position in the push sequence:
	// tasks pushed before it still run, later ones are held.
	pauses   []*pauseRequest
	watching bool // watchIdle is set: waiting for the active pause's barrier
}

// A trackedEntry is a tracked task in the queue and its place there.
type trackedEntry struct {
	position uint64 // the task's place in the push sequence
	task     tracked
}

// A pauseRequest is one Pause call.
type pauseRequest struct {
	end            <-chan struct{} // the caller's ctx.Done(): the pause lasts until it is closed
	barrier        uint64          // dispatcher.pushed when the request arrived
	barrierReached chan struct{}   // closed by dispatch once every earlier task finished; Pause returns
	reached        bool            // barrierReached is closed (dispatch only)
}

func newDispatcher(p *WorkerPool) *dispatcher {
	d := &dispatcher{p: p}
	if p.idleTimeout > 0 {
		d.idle = time.AfterFunc(p.idleTimeout, p.idleTicked)
		d.idle.Stop() // armed only while workers exist
	}
	return d
}

// run is the dispatcher goroutine.
func (d *dispatcher) run() {
	for d.step() {
	}
	d.stop()
}

// step does what it can without blocking: it hands the queue's front task
// to a worker and takes one message that is waiting. Only when neither was
// possible does it block in await. Polls are cheap (an unbuffered channel
// with no one waiting is seen without taking its lock), so under load
// dispatch mostly avoids a select over several channels. It returns false
// once dispatch has taken Stop's empty message.
func (d *dispatcher) step() bool {
	d.skipCanceledFront()
	handed := d.canDispatchQueued() && d.offer(d.queue.Front())
	if handed {
		d.pop()
	}
	select {
	case m := <-d.p.taskQueue:
		if !d.receive(m) {
			return false
		}
	default:
		if !handed && !d.await() {
			return false
		}
	}
	d.advancePauses()
	return true
}

// await waits for one event and handles it. It returns false when the
// event is Stop's empty message. With no pause in effect it waits on the
// fewest channels it can: while the queue is empty only on taskQueue.
func (d *dispatcher) await() bool {
	switch {
	case len(d.pauses) > 0:
		return d.awaitPaused()
	case d.queue.Len() == 0:
		return d.receive(<-d.p.taskQueue)
	}
	select {
	case m := <-d.p.taskQueue:
		return d.receive(m)
	case d.p.workerQueue <- d.queue.Front():
		d.handedFront()
	}
	return true
}

// awaitPaused is await while a Pause is in effect: only tasks from before
// the active pause's barrier go to workers, and dispatch also wakes when a
// worker finishes (while it waits for the barrier) and when the active
// pause ends.
func (d *dispatcher) awaitPaused() bool {
	var (
		toWorker chan<- func() // nil (never ready) unless the front task may run
		front    func()
	)
	if d.canDispatchQueued() {
		toWorker, front = d.p.workerQueue, d.queue.Front()
	}
	select {
	case m := <-d.p.taskQueue:
		return d.receive(m)
	case toWorker <- front:
		d.handedFront()
	case <-d.workerFinished():
	case <-d.activePauseEnd():
	}
	return true
}

// receive handles one message from taskQueue. It returns false for Stop's
// empty message.
func (d *dispatcher) receive(m message) bool {
	switch {
	case m.task != nil:
		d.accept(m.task)
	case m.req != nil:
		d.handle(m.req)
	default:
		return false
	}
	return true
}

func (d *dispatcher) handle(req *request) {
	switch {
	case req.tracked != nil:
		d.acceptTracked(req.tracked)
	case req.pause != nil:
		d.addPause(req.pause)
	case req.idleTick:
		d.retireIfIdle()
	}
}

// accept takes a task just received from taskQueue. It reports whether the
// task went straight to a worker rather than into the queue; once dispatch
// is stopping, late tasks always go into the queue.
func (d *dispatcher) accept(task func()) (handed bool) {
	d.p.counted.submitted.Add(1)
	d.sawTask = true
	if d.queue.Len() == 0 && len(d.pauses) == 0 && !d.stopping && d.offer(task) {
		return true
	}
	d.push(task)
	return false
}

// acceptTracked takes a DoWait call, a Task or a group task. One already
// canceled is counted and skipped. If its task is queued, dispatch keeps t
// until the task leaves the queue, to skip it if it is canceled meanwhile
// and to answer it if stop drops it.
func (d *dispatcher) acceptTracked(t tracked) {
	if t.skip() {
		d.p.counted.submitted.Add(1)
		d.p.counted.canceled.Add(1)
		return
	}
	if !d.accept(t.runner()) {
		d.tracked.PushBack(trackedEntry{position: d.pushed - 1, task: t})
	}
}

// offer gives task to a ready worker, or to a new one if fewer than the
// maximum exist. It reports false, without blocking, if neither is possible.
func (d *dispatcher) offer(task func()) bool {
	select {
	case d.p.workerQueue <- task:
		d.handedOne()
		return true
	default:
	}
	if d.workers == d.p.maxWorkers {
		return false
	}
	d.startWorker(task)
	return true
}

func (d *dispatcher) startWorker(task func()) {
	d.handedOne()
	d.workers++
	d.p.workers.Store(int64(d.workers))
	if d.workers == 1 && d.idle != nil {
		d.idle.Reset(d.p.idleTimeout)
	}
	go d.p.worker(task)
}

// handedOne records that a worker took a task.
func (d *dispatcher) handedOne() {
	d.handed++
	d.p.counted.handed.Store(d.handed)
}

// handedFront records that a worker took the queue's front task.
func (d *dispatcher) handedFront() {
	d.handedOne()
	d.pop()
}

func (d *dispatcher) push(task func()) {
	d.queue.PushBack(task)
	d.pushed++
	d.p.waiting.Store(int64(d.queue.Len()))
}

func (d *dispatcher) pop() {
	d.queue.PopFront()
	if d.frontIsTracked() {
		d.tracked.PopFront() // its task is on a worker, or skipped, now
	}
	d.popped++
	d.p.waiting.Store(int64(d.queue.Len()))
}

// frontIsTracked reports whether the queue's front task is a tracked one.
func (d *dispatcher) frontIsTracked() bool {
	return d.tracked.Len() > 0 && d.tracked.Front().position == d.popped
}

// skipCanceledFront drops the canceled tracked tasks at the front of the
// queue, so that they never take a worker. A task canceled further back is
// dropped when it reaches the front; its caller has been answered already.
func (d *dispatcher) skipCanceledFront() {
	for d.frontIsTracked() && d.tracked.Front().task.skip() {
		d.pop()
		d.p.counted.canceled.Add(1)
	}
}

// canDispatchQueued reports whether the queue's front task may go to a
// worker now: the queue is not empty and no active pause holds the task.
func (d *dispatcher) canDispatchQueued() bool {
	if d.queue.Len() == 0 {
		return false
	}
	return len(d.pauses) == 0 || d.popped < d.pauses[0].barrier
}

// idleTick is the request the idle timer sends; dispatch only reads it.
var idleTick = request{idleTick: true}

// idleTicked is the idle timer's func, run in a goroutine of the timer's
// own. It waits until dispatch takes the tick, or until stopping is closed
// (then it returns at once, before dispatch has stopped the workers). A tick
// already on its way when dispatch stopped or reset the timer is harmless:
// it only starts a new period.
func (p *WorkerPool) idleTicked() {
	select {
	case p.taskQueue <- message{req: &idleTick}:
	case <-p.stopping:
	}
}

// retireIfIdle runs on every idle tick. If no task came in during the whole
// period since the last tick and nothing queued can run, it retires one
// ready worker; a busy worker is never retired. The timer is re-armed while
// workers remain.
func (d *dispatcher) retireIfIdle() {
	if !d.sawTask && !d.canDispatchQueued() {
		select {
		case d.p.workerQueue <- nil:
			d.workerRetired()
		default:
		}
	}
	d.sawTask = false
	if d.workers > 0 && d.idle != nil {
		d.idle.Reset(d.p.idleTimeout)
	}
}

func (d *dispatcher) workerRetired() {
	d.workers--
	d.p.workers.Store(int64(d.workers))
	if d.workers == 0 && d.idle != nil {
		d.idle.Stop()
	}
}

func (d *dispatcher) addPause(req *pauseRequest) {
	req.barrier = d.pushed
	d.pauses = append(d.pauses, req)
	d.p.paused.Store(true)
}

// workerFinished is ready when a worker finished a task while dispatch waits
// for the active pause's barrier.
func (d *dispatcher) workerFinished() <-chan struct{} {
	if !d.watching {
		return nil
	}
	return d.p.workerIdle
}

// activePauseEnd is the active pause's ctx.Done() once its barrier is
// reached, and nil before.
func (d *dispatcher) activePauseEnd() <-chan struct{} {
	if len(d.pauses) == 0 || !d.pauses[0].reached {
		return nil
	}
	return d.pauses[0].end
}

// advancePauses releases the active pause's caller once its barrier is
// reached, and ends the pause once its context is done too, making the next
// one active.
func (d *dispatcher) advancePauses() {
	if len(d.pauses) == 0 {
		return
	}
	for len(d.pauses) > 0 {
		active := d.pauses[0]
		if !active.reached {
			if !d.barrierReached(active) {
				return
			}
			active.reached = true
			close(active.barrierReached)
		}
		if !isClosed(active.end) {
			return
		}
		d.pauses[0] = nil
		d.pauses = d.pauses[1:]
	}
	d.pauses = nil
	d.p.paused.Store(false)
}

// barrierReached reports whether every task that came before req has
// finished: all were taken from the queue, and every task handed to a
// worker has completed. Until then it keeps watchIdle set, so that a worker
// finishing a task wakes dispatch to check again.
func (d *dispatcher) barrierReached(req *pauseRequest) bool {
	if d.popped < req.barrier {
		return false
	}
	// Set watchIdle before loading finished, and workers add to finished
	// before loading watchIdle: one of the two always sees the other.
	d.setWatching(true)
	if d.p.ran.finished.Load() != d.handed {
		return false
	}
	d.setWatching(false)
	return true
}

func (d *dispatcher) setWatching(on bool) {
	if d.watching != on {
		d.watching = on
		d.p.watchIdle.Store(on)
	}
}

// stop runs once stopping is closed: every pause ends, the queue is drained
// (StopWait) or dropped (Stop), and every worker is told to exit.
func (d *dispatcher) stop() {
	d.admitStragglers()
	d.pauses = nil
	d.setWatching(false)
	d.p.paused.Store(false)
	if !isClosed(d.p.abandon) {
		d.drain()
	}
	if d.queue.Len() > 0 { // Stop came first, or cut the drain short
		d.abandonQueue()
	}
	d.retireAll()
	if d.idle != nil {
		d.idle.Stop()
	}
	close(d.p.stopped)
}

// admitStragglers accepts the tasks and requests of the sends that began
// before stopping was closed. Every send counts itself in p.sending before
// it checks stopping, so once sending reads zero no send is in flight and
// none can begin; the last sender out wakes dispatch on sendersGone. Their
// tasks join the queue, so StopWait runs them and Stop abandons them.
func (d *dispatcher) admitStragglers() {
	d.stopping = true
	for d.p.sending.Load() > 0 {
		select {
		case m := <-d.p.taskQueue:
			d.receive(m) // never the stop message: Stop sends only one
		case <-d.p.sendersGone:
		}
	}
}

// drain hands every queued task to a worker, unless Stop asks to abandon
// them first (Stop, or a Shutdown that gives up waiting).
func (d *dispatcher) drain() {
	for d.skipCanceledFront(); d.queue.Len() > 0; d.skipCanceledFront() {
		front := d.queue.Front()
		if d.offer(front) {
			d.pop()
			continue
		}
		select {
		case d.p.workerQueue <- front:
			d.handedFront()
		case <-d.p.abandon:
			return
		}
	}
}

// abandonQueue drops the queued tasks, releasing their closures at once,
// and answers the callers of the tracked ones. A tracked task that was
// canceled before it was dropped counts as canceled.
func (d *dispatcher) abandonQueue() {
	abandoned := uint64(d.queue.Len())
	d.queue = deque.Deque[func()]{}
	d.p.waiting.Store(0)
	for e := range d.tracked.IterPopFront() {
		if e.task.abandon() {
			abandoned--
			d.p.counted.canceled.Add(1)
		}
	}
	d.p.counted.abandoned.Add(abandoned)
}

// retireAll sends one nil per worker. Each send completes when a worker,
// done with its task, takes the nil; that worker then only returns.
func (d *dispatcher) retireAll() {
	for d.workers > 0 {
		d.p.workerQueue <- nil
		d.workerRetired()
	}
}
