package workerpool

import (
	"slices"
	"sync/atomic"
)

// barriers is the dispatcher's part for the calls that wait for the pool's
// work to come back: Pause, a barrier that then holds the queue, and
// WaitIdle. The dispatcher owns it; each caller waits on a channel that
// dispatch closes.
type barriers struct {
	paused *atomic.Bool // the pool's counts.paused: a Pause is in effect
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

// addPause places the pause's barrier behind the tasks queued now: the
// queue's push sequence, pushed, and its ranked sequence, rankedSeq (the
// dispatcher moves the scheduled tasks that are due into the queue first).
func (b *barriers) addPause(req *pauseRequest, pushed, rankedSeq uint64) {
	req.barrier, req.rankedBarrier = pushed, rankedSeq
	b.pauses = append(b.pauses, req)
	b.paused.Store(true)
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

// endActive releases the active pause's caller once reached says its
// barrier is reached (every task that came before it has finished), and
// ends the pause once its context is done too; it reports whether it
// ended it, making the next one active (see dispatcher.advancePauses).
func (b *barriers) endActive(reached func(*pauseRequest) bool) bool {
	active := b.pauses[0]
	if !active.reached {
		if !reached(active) {
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
	return true
}

// forgetGoneIdleWaiters forgets the WaitIdle calls whose caller stopped
// waiting.
func (b *barriers) forgetGoneIdleWaiters() {
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

// endPauses ends every pause: the queue is no longer held (see
// dispatcher.endPauses).
func (b *barriers) endPauses() {
	b.pauses = nil
	b.paused.Store(false)
}
