package workerpool

import "sync/atomic"

// The hand-off between the pool's callers and its dispatcher: the messages
// that travel on taskQueue, the sends that carry them (counted, so that a
// stop takes every send that began before it and none after), the wake-up
// signal, and the stop sequence that ends with every pool goroutine gone.

// A message is what travels on taskQueue: a plain task, a job, or a
// request for something else; exactly one of task, job and req is set. All
// nil is the stop signal. due is when a plain task may start, on the pool's
// clock (DoContext with Delay or At alone, see WorkerPool.doWithOptions), or 0.
type message struct {
	task func()
	job  *job
	req  *request
	due  int64
}

// A request asks dispatch for something other than running a task: a
// Pause call, a ticket, a WaitIdle call, or, at the addresses of idleTick
// and resizeTick, the end of an idle period and a Resize. Exactly one field
// is set.
type request struct {
	pause  *pauseRequest
	ticket *ticket
	idle   *idleRequest
}

// idleTick and resizeTick are the requests the idle clock and Resize send;
// dispatch tells them apart by their addresses and never changes them.
var idleTick, resizeTick request

// send delivers m, which carries one task, to dispatch on taskQueue, or
// returns ErrStopped once stopping has begun. A call that starts after
// stopping began is always rejected; one that races with it is accepted
// exactly when its send completes.
//
// The send is a plain channel send, not a select with stopping: a caller
// counts itself in taskSends before it checks stopping, and takes itself
// out again if it is refused. Dispatch counts the messages it receives, and
// once stopping is closed it keeps receiving until it has received as many
// as were begun (see dispatcher.admitStragglers). So a send that began
// before the stop always completes, and none can begin after.
func send(p *WorkerPool, m message) error { return sendCounted(p, &p.taskSends, m) }

// sendControl is send for a message that carries no task of its own (a
// ticket's tasks are counted as dispatch admits them): it counts itself in
// controlSends, so that Status never counts it as a task.
func sendControl(p *WorkerPool, m message) error { return sendCounted(p, &p.controlSends, m) }

// sendCounted is send, counted in begun.
func sendCounted(p *WorkerPool, begun *atomic.Int64, m message) error {
	p.mustBeNew()
	if !p.beginSend(begun) {
		return ErrStopped
	}
	p.taskQueue <- m
	return nil
}

// beginSend counts a send in begun and reports whether it may go on: not
// once stopping has begun, when it takes the send out again. A send it
// lets go on must complete: dispatch waits for it.
func (p *WorkerPool) beginSend(begun *atomic.Int64) bool {
	begun.Add(1)
	if p.stopBegun.Load() {
		p.sendRefused(begun)
		return false
	}
	return true
}

// sendRefused takes a refused send out of begun, the count it was in, and
// wakes dispatch, which may be waiting for it in admitStragglers.
func (p *WorkerPool) sendRefused(begun *atomic.Int64) {
	begun.Add(-1)
	p.wakeDispatch()
}

// sendsBegun is the number of sends begun and not refused, of both kinds.
func (p *WorkerPool) sendsBegun() int64 {
	return p.taskSends.Load() + p.controlSends.Load()
}

// beginSettle and endSettle bracket one job settle; the last settle out
// while stopping wakes dispatch, which may be waiting in awaitSettles.
func (p *WorkerPool) beginSettle() { p.settling.Add(1) }

func (p *WorkerPool) endSettle() {
	if p.settling.Add(-1) == 0 && p.stopBegun.Load() {
		p.wakeDispatch()
	}
}

// mustBeNew panics, saying so, if New did not make p: a zero WorkerPool has
// no dispatcher, and a send to it would wait forever.
func (p *WorkerPool) mustBeNew() {
	if p.taskQueue == nil {
		panic("workerpool: WorkerPool used without New: the zero value is not usable")
	}
}

// wakeDispatch signals wake without blocking.
func (p *WorkerPool) wakeDispatch() {
	select {
	case p.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// abandonQueue makes dispatch abandon the queue rather than run it: from
// now on no queued task is handed to a worker, and a job a worker has
// taken but not started is abandoned.
func (p *WorkerPool) abandonQueue() {
	if !p.abandonBegun.Swap(true) {
		p.wakeDispatch()
	}
}

// stop stops the pool and waits until every pool goroutine has exited.
func (p *WorkerPool) stop() {
	p.beginStop()
	p.awaitStopped()
}

// beginStop rejects new sends and tells dispatch to stop, once. Dispatch
// always receives taskQueue while running, so the message arrives promptly.
func (p *WorkerPool) beginStop() {
	p.mustBeNew()
	p.stopOnce.Do(func() {
		p.obs.logDebug("pool stopping", "abandon", p.abandonBegun.Load())
		p.stopBegun.Store(true)
		close(p.stopping)
		p.taskQueue <- message{}
	})
}

// awaitStopped waits until dispatch has stopped the pool and then until
// every pool goroutine has returned, so that no pool code runs when a stop
// call returns.
func (p *WorkerPool) awaitStopped() {
	<-p.stopped
	p.goroutines.Wait()
}
