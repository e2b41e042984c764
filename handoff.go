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
	if !p.sig.beginSend(begun) {
		return ErrStopped
	}
	p.lane.closeForSend() // counted first: dispatch opens no lane while a send is in flight (see lane.openUp)
	p.taskQueue <- m
	return nil
}

// mustBeNew panics, saying so, if New did not make p: a zero WorkerPool has
// no dispatcher, and a send to it would wait forever.
func (p *WorkerPool) mustBeNew() {
	if p.taskQueue == nil {
		panic("workerpool: WorkerPool used without New: the zero value is not usable")
	}
}

// beginStop rejects new sends and tells dispatch to stop, once. Dispatch
// always receives taskQueue while running, so the message arrives promptly.
func (p *WorkerPool) beginStop() {
	p.mustBeNew()
	p.sig.stopOnce.Do(func() {
		p.lane.shutForGood() // first: a submit that found the lane open began before the stop
		p.obs.logDebug("pool stopping", "abandon", p.sig.abandonBegun.Load())
		p.sig.stopBegun.Store(true)
		close(p.sig.stopping)
		p.taskQueue <- message{}
	})
}

// awaitStopped waits until dispatch has stopped the pool and then until
// every pool goroutine has returned, so that no pool code runs when a stop
// call returns.
func (p *WorkerPool) awaitStopped() {
	<-p.sig.stopped
	p.goroutines.Wait()
}
