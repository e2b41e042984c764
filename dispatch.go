package workerpool

import (
	"sync/atomic"
	"time"

	"github.com/gammazero/deque"
)

// The dispatcher is the pool's one coordinating goroutine. It owns the
// waiting queue, the worker count, the idle clock and the pause state: they
// live in the dispatcher struct, which no other goroutine can reach. It
// takes messages from taskQueue (plain tasks, jobs, Pause calls, idle ticks)
// and hands work to workers over workerQueue: to a ready worker, or to a new
// one while fewer than the maximum exist, and otherwise to the back of the
// queue. While the queue is not empty, new tasks join its back and workers
// are fed from its front.
//
// Stopping: the first Stop, StopWait or Shutdown closes stopping (no send
// begins after that) and sends the empty message. When dispatch takes it, it
// admits the sends still in flight (their tasks only join the queue) and
// stops receiving. Unless abandoning has begun it then drains the queue to
// the workers; it abandons whatever is left, sends each worker the zero
// work, waits for the job settles in progress, and closes stopped. Stop
// callers then wait for p.goroutines, so that no pool goroutine is left
// when they return. Stop, and a Shutdown that gives up, set abandonBegun
// first: from then on dispatch hands no queued task to a worker.
//
// Dispatch waits on taskQueue, and while its queue is not empty also on
// workerQueue and wake (see WorkerPool.wake). Hand-offs made by closing a
// channel: stopping (the first stop call to submitters, Pause callers and
// the idle clock), stopped (dispatch to stop callers and observers) and
// each pause's barrierReached (dispatch to one Pause caller).
type dispatcher struct {
	p *WorkerPool

	// queue holds the tasks waiting for a worker, oldest first; a nil
	// entry stands for the next job in jobs. pushed and popped count the
	// entries ever pushed and popped: pauses keep their place in it.
	queue          deque.Deque[func()]
	jobs           deque.Deque[*job]
	pushed, popped uint64
	workers        int // live workers, published in p.workers at once

	// received counts the messages that came through send; at stop it
	// is compared with p.sendsBegun. submitted counts the tasks among
	// them; it is published once, as p.submittedAtStop.
	received  int64
	submitted uint64

	// dispatched counts the work sent to workers; a pause's barrier is
	// reached once as much work has returned.
	dispatched uint64

	// waitingDelta is the change in queued plain tasks that p.waiting does
	// not show yet: dispatch publishes it when it is about to block, and
	// after publishEvery queue changes while it is busy. So the count
	// costs no atomic operation per task while dispatch is busy, and
	// Status is exact whenever the pool is quiet.
	waitingDelta int64
	queueChanges int

	// The idle clock retires workers: while workers exist, one goroutine
	// at a time waits out an idle period on idle and sends an idleTick
	// request; sawTask says whether a task came in since the last tick.
	// idle is nil when retirement is disabled.
	idle         *time.Timer
	clockRunning bool
	sawTask      bool

	// pauses are the Pause calls in effect, oldest first; only the first
	// is active. pauses[0].barrier is a position in the push sequence:
	// tasks pushed before it still run, later ones are held.
	pauses   []*pauseRequest
	watching bool // wakeOnReturn is set: waiting for the active pause's barrier
}

// A message is what travels on taskQueue: a plain task, a job, or a
// request for something else; exactly one field is set. All nil is the
// stop signal.
type message struct {
	task func()
	job  *job
	req  *request
}

// A request asks dispatch for something other than running a task: a
// Pause call, or, at the address of idleTick, the end of an idle period.
type request struct {
	pause *pauseRequest
}

// A pauseRequest is one Pause call.
type pauseRequest struct {
	end            <-chan struct{} // the caller's ctx.Done(): the pause lasts until it is closed
	barrier        uint64          // dispatcher.pushed when the request arrived
	barrierReached chan struct{}   // closed by dispatch once every earlier task finished; Pause returns
	reached        bool            // barrierReached is closed (dispatch only)
}

// settledTotals count the accepted tasks that never ran, written by
// whoever settles them: dispatch for plain tasks, the settling party for
// jobs.
type settledTotals struct {
	canceled  atomic.Uint64 // jobs canceled before they started
	abandoned atomic.Uint64 // tasks a stop dropped before they started
}

// publishEvery bounds how many queue changes a busy dispatcher makes
// without publishing waitingDelta.
const publishEvery = 64

// workerTotals are the counters behind Status that workers write.
type workerTotals struct {
	returned atomic.Uint64 // work that came back from a worker: ran, or was skipped there
	skipped  atomic.Uint64 // of returned, the jobs a worker found settled and did not run
	panicked atomic.Uint64 // panics recovered, by the panic handler or into a *PanicError
}

func newDispatcher(p *WorkerPool) *dispatcher {
	d := &dispatcher{p: p}
	if p.idleTimeout > 0 {
		d.idle = time.NewTimer(p.idleTimeout)
		d.idle.Stop() // armed only while workers exist
	}
	return d
}

// run is the dispatcher goroutine: it steps until it takes the stop
// message, then stops the pool.
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
// once dispatch has taken the stop message.
func (d *dispatcher) step() bool {
	sent := d.queue.Len() > 0 && d.sendFront()
	select {
	case m := <-d.p.taskQueue:
		if !d.receive(m) {
			return false
		}
	default:
		switch {
		case sent:
		case d.queue.Len() == 0 && len(d.pauses) == 0:
			if d.waitingDelta != 0 {
				d.publish()
			}
			if m := <-d.p.taskQueue; m.task != nil {
				d.received++
				d.countSubmitted()
				if !d.offer(work{fn: m.task}) {
					d.push(m.task)
				}
				return true
			} else if !d.receive(m) {
				return false
			}
		case !d.await():
			return false
		}
	}
	if len(d.pauses) > 0 {
		d.advancePauses()
	}
	return true
}

// sendFront drops the settled jobs at the front of the queue, then hands
// the front task to a ready or new worker if no pause holds it. It never
// blocks, and reports whether it handed a task.
func (d *dispatcher) sendFront() bool {
	d.dropSettledFront()
	if !d.canDispatchQueued() || !d.offer(d.front()) {
		return false
	}
	d.pop()
	return true
}

// publish adds waitingDelta to p.waiting. Dispatch calls it when it is
// about to block and every publishEvery queue changes in between.
func (d *dispatcher) publish() {
	d.p.waiting.Add(d.waitingDelta)
	d.waitingDelta, d.queueChanges = 0, 0
}

// changeWaiting records a change in the number of queued plain tasks.
func (d *dispatcher) changeWaiting(n int64) {
	d.waitingDelta += n
	if d.queueChanges++; d.queueChanges == publishEvery {
		d.publish()
	}
}

// await publishes waitingDelta, then waits for one event and handles it.
// It returns false when the event is the stop message. With no pause in
// effect it waits on the fewest channels it can: while the queue is empty
// only on taskQueue; otherwise also on a worker taking the front task, and,
// while the queue holds jobs, on wake, so that a queued job's cancel is
// seen at once. (A Stop needs no wake here: its stop message follows at
// once.)
func (d *dispatcher) await() bool {
	if d.waitingDelta != 0 {
		d.publish()
	}
	switch {
	case len(d.pauses) > 0:
		return d.awaitPaused()
	case d.queue.Len() == 0:
		return d.receive(<-d.p.taskQueue)
	}
	toWorker, front := d.offerFront()
	var wake <-chan struct{} // nil (never ready) while no job is queued
	if d.jobs.Len() > 0 {
		wake = d.p.wake
	}
	select {
	case m := <-d.p.taskQueue:
		return d.receive(m)
	case toWorker <- front:
		d.sentFront()
	case <-wake:
	}
	return true
}

// offerFront returns workerQueue and the front task if the front task may
// go to a worker now, and a nil channel (never ready) otherwise.
func (d *dispatcher) offerFront() (chan<- work, work) {
	if !d.canDispatchQueued() {
		return nil, work{}
	}
	return d.p.workerQueue, d.front()
}

// awaitPaused is await while a Pause is in effect: only tasks from before
// the active pause's barrier go to workers, and dispatch also wakes when a
// worker returns (while it waits for the barrier) and when the active
// pause ends.
func (d *dispatcher) awaitPaused() bool {
	toWorker, front := d.offerFront()
	select {
	case m := <-d.p.taskQueue:
		return d.receive(m)
	case toWorker <- front:
		d.sentFront()
	case <-d.p.wake:
	case <-d.activePauseEnd():
	}
	return true
}

// receive handles one message from taskQueue. It returns false for the stop
// message.
func (d *dispatcher) receive(m message) bool {
	switch {
	case m.task != nil:
		d.received++
		d.accept(m.task)
	case m.job != nil:
		d.received++
		d.acceptJob(m.job)
	case m.req == &idleTick:
		d.retireIfIdle()
	case m.req != nil:
		d.received++
		d.addPause(m.req.pause)
	default:
		return false
	}
	return true
}

// accept takes a plain task: straight to a worker if it may start at once
// and one can take it, or to the back of the queue.
func (d *dispatcher) accept(task func()) {
	d.countSubmitted()
	if d.mayStartAtOnce() && d.offer(work{fn: task}) {
		return
	}
	d.push(task)
}

// acceptJob takes a job as accept takes a plain task. A job whose context
// is done already is settled at once and never takes a worker.
func (d *dispatcher) acceptJob(j *job) {
	d.countSubmitted()
	if j.settled() || j.settleIfBlocked() { // settled: canceled since its send completed
		j.owner.released()
		return
	}
	if d.mayStartAtOnce() && d.offer(work{job: j}) {
		return
	}
	d.pushJob(j)
	// A group whose context ended while j was on its way cancels only its
	// queued jobs; now that j is queued, look again.
	j.settleIfBlocked()
}

// countSubmitted counts an accepted task and notes it for the idle clock.
func (d *dispatcher) countSubmitted() {
	d.submitted++
	d.sawTask = true
}

// mayStartAtOnce reports whether a new task may skip the queue: nothing
// waits before it and no pause holds it.
func (d *dispatcher) mayStartAtOnce() bool {
	return d.queue.Len() == 0 && len(d.pauses) == 0
}

// offer gives w to a ready worker, or to a new one if fewer than the
// maximum exist. It reports false, without blocking, if neither is possible.
func (d *dispatcher) offer(w work) bool {
	select {
	case d.p.workerQueue <- w:
		d.countDispatched()
		return true
	default:
	}
	if d.workers == d.p.maxWorkers {
		return false
	}
	d.startWorker(w)
	return true
}

func (d *dispatcher) startWorker(w work) {
	d.countDispatched()
	d.workers++
	d.p.workers.Store(int64(d.workers))
	d.armIdleClock()
	d.p.goroutines.Go(func() { d.p.worker(w) })
}

func (d *dispatcher) countDispatched() {
	d.dispatched++
}

// front is the queue's front task as work. The queue must not be empty.
func (d *dispatcher) front() work {
	if fn := d.queue.Front(); fn != nil {
		return work{fn: fn}
	}
	return work{job: d.jobs.Front()}
}

// sentFront records that a worker took the queue's front task.
func (d *dispatcher) sentFront() {
	d.countDispatched()
	d.pop()
}

func (d *dispatcher) push(task func()) {
	d.queue.PushBack(task)
	d.pushed++
	d.changeWaiting(1)
}

// pushJob queues j behind a nil entry; the move to queued counts it as
// waiting. A job settled on its way is dropped.
func (d *dispatcher) pushJob(j *job) {
	if !j.enqueue() {
		j.owner.released()
		return
	}
	d.queue.PushBack(nil)
	d.jobs.PushBack(j)
	d.pushed++
}

// pop removes the front entry. A plain task stops counting as waiting
// here; a job stops when it leaves the queued state (see job).
func (d *dispatcher) pop() {
	if d.queue.PopFront() == nil {
		d.jobs.PopFront()
	} else {
		d.changeWaiting(-1)
	}
	d.popped++
}

// dropSettledFront pops the jobs at the front of the queue that must not
// start, so that they never take a worker: those already settled (canceled
// by their caller) and those it settles now, whose context is done or which
// the pool abandons. A job further back that is canceled stops counting as
// waiting at once, and leaves the queue when it reaches the front.
func (d *dispatcher) dropSettledFront() {
	for d.queue.Len() > 0 && d.queue.Front() == nil {
		j := d.jobs.Front()
		if !j.settled() && !j.settleIfBlocked() {
			return
		}
		d.pop()
		j.owner.released()
	}
}

// canDispatchQueued reports whether the queue's front task may go to a
// worker now: the queue is not empty, abandoning has not begun, and no
// active pause holds the task.
func (d *dispatcher) canDispatchQueued() bool {
	if d.queue.Len() == 0 || d.p.abandonBegun.Load() {
		return false
	}
	return len(d.pauses) == 0 || d.popped < d.pauses[0].barrier
}

// idleTick is the request the idle clock sends; dispatch tells it apart by
// its address and never changes it.
var idleTick request

// armIdleClock starts one idle period, unless retirement is disabled, no
// worker exists, or a period is running.
func (d *dispatcher) armIdleClock() {
	if d.idle == nil || d.workers == 0 || d.clockRunning {
		return
	}
	d.clockRunning = true
	d.idle.Reset(d.p.idleTimeout)
	d.p.goroutines.Go(d.awaitIdlePeriod)
}

// awaitIdlePeriod is the idle clock's goroutine, one per period: it sends
// the idle tick once the period has passed. It returns at once when
// stopping is closed; dispatch stops the timer as it stops.
func (d *dispatcher) awaitIdlePeriod() {
	select {
	case <-d.idle.C:
	case <-d.p.stopping:
		return
	}
	select {
	case d.p.taskQueue <- message{req: &idleTick}:
	case <-d.p.stopping:
	}
}

// retireIfIdle runs on every idle tick. If no task came in during the whole
// period and nothing queued can run, it retires one ready worker; a busy
// worker is never retired. A new period starts while workers remain.
func (d *dispatcher) retireIfIdle() {
	d.clockRunning = false
	if !d.sawTask && !d.canDispatchQueued() {
		select {
		case d.p.workerQueue <- work{}:
			d.workerRetired()
		default:
		}
	}
	d.sawTask = false
	d.armIdleClock()
}

func (d *dispatcher) workerRetired() {
	d.workers--
	d.p.workers.Store(int64(d.workers))
}

func (d *dispatcher) addPause(req *pauseRequest) {
	req.barrier = d.pushed
	d.pauses = append(d.pauses, req)
	d.p.paused.Store(true)
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
	d.endPauses()
}

// barrierReached reports whether every task that came before req has
// finished: all were taken from the queue, and all work sent to workers
// has come back. Until then it keeps wakeOnReturn set, so that a worker
// returning work wakes dispatch to check again.
func (d *dispatcher) barrierReached(req *pauseRequest) bool {
	if d.popped < req.barrier {
		return false
	}
	// Set wakeOnReturn before loading returned, and workers add to
	// returned before loading wakeOnReturn: one of the two always sees
	// the other.
	d.setWatching(true)
	if d.p.workerTotals.returned.Load() != d.dispatched {
		return false
	}
	d.setWatching(false)
	return true
}

func (d *dispatcher) setWatching(on bool) {
	if d.watching != on {
		d.watching = on
		d.p.wakeOnReturn.Store(on)
	}
}

func (d *dispatcher) endPauses() {
	d.pauses = nil
	d.setWatching(false)
	d.p.paused.Store(false)
}

// stop runs once dispatch took the stop message: every pause ends, the
// queue is drained (StopWait) or abandoned (Stop), and every worker is told
// to return.
func (d *dispatcher) stop() {
	d.admitStragglers()
	d.endPauses()
	if !d.p.abandonBegun.Load() {
		d.drain()
	}
	d.abandonQueue()
	d.publish() // before retireAll waits for the running tasks
	d.retireAll()
	if d.idle != nil {
		d.idle.Stop()
	}
	d.awaitSettles()
	d.publish()
	d.p.submittedAtStop.Store(d.submitted)
	close(d.p.stopped)
}

// admitStragglers accepts the tasks of the sends that began before stopping
// was closed. Every send counts itself in p.sendsBegun before it checks
// stopping, and a refused one takes itself out and wakes dispatch; so once
// dispatch has received as many messages as were
// begun, no send is in flight and none can begin. Their tasks join the
// queue, so StopWait runs them and Stop abandons them; their Pause requests
// are dropped, as stopping ends every pause.
func (d *dispatcher) admitStragglers() {
	for d.received < d.p.sendsBegun.Load() {
		d.publish()
		select {
		case m := <-d.p.taskQueue:
			d.admitStraggler(m)
		case <-d.p.wake:
		}
	}
}

func (d *dispatcher) admitStraggler(m message) {
	switch {
	case m.task != nil:
		d.received++
		d.countSubmitted()
		d.push(m.task)
	case m.job != nil:
		d.received++
		d.countSubmitted()
		d.pushJob(m.job)
	case m.req != &idleTick:
		d.received++
	}
}

// drain hands every queued task to a worker, until abandoning begins
// (Stop, or a Shutdown that gives up).
func (d *dispatcher) drain() {
	for d.dropSettledFront(); d.canDispatchQueued(); d.dropSettledFront() {
		front := d.front()
		if d.offer(front) {
			d.pop()
			continue
		}
		d.publish()
		select {
		case d.p.workerQueue <- front:
			d.sentFront()
		case <-d.p.wake: // look again: abandoning, or a canceled job
		}
	}
}

// abandonQueue drops what is left in the queue, releasing each closure as
// it goes. Abandoning has begun whenever anything is left (drain returns
// early only then), so each job settles: abandoned, and its caller learns
// ErrStopped, or canceled if its own context ended first.
func (d *dispatcher) abandonQueue() {
	for d.queue.Len() > 0 {
		if d.queue.Front() != nil {
			d.pop()
			d.p.settledTotals.abandoned.Add(1)
			continue
		}
		j := d.jobs.Front()
		if !j.settleIfBlocked() {
			j.settle(jobAbandoned, ErrStopped) // false if it was settled already
		}
		d.pop()
		j.owner.released()
	}
	d.queue, d.jobs = deque.Deque[func()]{}, deque.Deque[*job]{} // free the buffers too
}

// awaitSettles waits until no settle is in progress (see
// WorkerPool.settling). Every job is final by now, so a settle that begins
// later changes nothing.
func (d *dispatcher) awaitSettles() {
	for d.p.settling.Load() > 0 {
		<-d.p.wake
	}
}

// retireAll sends each worker the zero work. Each send completes when a
// worker, done with its task, takes it; that worker then only returns.
func (d *dispatcher) retireAll() {
	for d.workers > 0 {
		d.p.workerQueue <- work{}
		d.workerRetired()
	}
}
