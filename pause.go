package workerpool

import "slices"

// barriers is the dispatcher's part for the calls that wait for the pool's
// work to come back: Pause, a barrier that then holds the queue, and
// WaitIdle. The dispatcher owns it; each caller waits on a channel that
// dispatch closes.
type barriers struct {
	p *WorkerPool
	// pauses are the Pause calls in effect, oldest first; only the first
	// is active. pauses[0].barrier is a position in the queue's push
	// sequence: tasks pushed before it still run, later ones are held.
	pauses []*pauseRequest
	// idleWaiters are the WaitIdle calls not answered yet.
	idleWaiters []*idleRequest
}

// A pauseRequest is one Pause call.
type pauseRequest struct {
	end            <-chan struct{} // the caller's ctx.Done(): the pause lasts until it is closed
	barrier        uint64          // waitQueue.pushed when the request arrived
	rankedBarrier  uint64          // waitQueue.rankedSeq then: the jobs of other levels than 0 queued before it
	barrierReached chan struct{}   // closed by dispatch once every earlier task finished; Pause returns
	reached        bool            // barrierReached is closed (dispatch only)
}

// An idleRequest is one WaitIdle call.
type idleRequest struct {
	ctxDone <-chan struct{} // the caller's ctx.Done(): once closed, no one waits for the answer
	done    chan struct{}   // closed by dispatch: the pool was idle, or stopped (err)
	err     error           // nil, or ErrStopped; written before done is closed
}

// waiting reports whether a Pause or WaitIdle call is in effect.
func (b *barriers) waiting() bool {
	return len(b.pauses) > 0 || len(b.idleWaiters) > 0
}

// addPause places the pause's barrier behind the tasks queued now, the
// scheduled ones that are due included (the dispatcher moves those into
// the queue first).
func (b *barriers) addPause(q *waitQueue, req *pauseRequest) {
	req.barrier, req.rankedBarrier = q.pushed, q.rankedSeq
	b.pauses = append(b.pauses, req)
	b.p.counts.paused.Store(true)
}

// hold is the pause that holds the queue, or nil: the active one.
func (b *barriers) hold() *pauseRequest {
	if len(b.pauses) == 0 {
		return nil
	}
	return b.pauses[0]
}

// activeEnd is the active pause's ctx.Done() once its barrier is reached,
// and nil before.
func (b *barriers) activeEnd() <-chan struct{} {
	if len(b.pauses) == 0 || !b.pauses[0].reached {
		return nil
	}
	return b.pauses[0].end
}

// advance releases the active pause's caller once its barrier is reached,
// and ends the pause once its context is done too, making the next one
// active; and answers the WaitIdle calls once the pool is idle. It reports
// whether it ended the last pause.
func (b *barriers) advance(d *dispatcher) (ended bool) {
	if len(b.pauses) > 0 {
		ended = b.advancePauses(d)
	}
	if len(b.idleWaiters) > 0 {
		b.answerIdle(d)
	}
	return ended
}

func (b *barriers) advancePauses(d *dispatcher) (ended bool) {
	for len(b.pauses) > 0 {
		active := b.pauses[0]
		if !active.reached {
			if !b.barrierReached(d, active) {
				return false
			}
			active.reached = true
			close(active.barrierReached)
		}
		if !isClosed(active.end) {
			return false
		}
		b.pauses[0] = nil
		b.pauses = b.pauses[1:]
		d.queue.flows.unpause() // the next pause's barrier, if any, is later
	}
	b.endPauses(d)
	return true
}

// barrierReached reports whether every task that came before req has
// finished: all were taken from the queue, and all work sent to workers
// has come back.
func (b *barriers) barrierReached(d *dispatcher, req *pauseRequest) bool {
	return d.queue.popped >= req.barrier && !d.queue.rankedBefore(req) && d.crew.allBack()
}

// answerIdle answers the WaitIdle calls once no task runs or waits (tasks a
// Pause holds count as waiting), and forgets those whose caller stopped
// waiting. A task a Group holds back (SetLimit) counts as waiting too: a
// group holds one only while another of its tasks is in the pool, whose
// end releases it, from the worker that counted itself free first, or
// drops it (then dispatch is woken, see Group.dropHeld).
func (b *barriers) answerIdle(d *dispatcher) {
	// allBack first: it watches the work that is out whatever the waiting
	// count says, which a settle or a start lowers a moment after the
	// task's move (and then wakes dispatch).
	if d.crew.allBack() && d.queue.waitingNow() == 0 && b.p.counts.scheduled.Load() == 0 && b.p.counts.groupHeld.Load() == 0 {
		b.answerIdleWaiters(nil)
		return
	}
	b.idleWaiters = slices.DeleteFunc(b.idleWaiters, func(w *idleRequest) bool { return isClosed(w.ctxDone) })
}

// answerIdleWaiters answers every WaitIdle call with err.
func (b *barriers) answerIdleWaiters(err error) {
	for i, w := range b.idleWaiters {
		w.err = err
		close(w.done)
		b.idleWaiters[i] = nil
	}
	b.idleWaiters = b.idleWaiters[:0]
}

// endPauses ends every pause: the queue is no longer held.
func (b *barriers) endPauses(d *dispatcher) {
	b.pauses = nil
	d.queue.flows.unpause()
	d.crew.watch(d.returnsWanted())
	b.p.counts.paused.Store(false)
}
