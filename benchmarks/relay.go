package main

import (
	"sync"

	"github.com/gammazero/deque"
)

// relay is a reference, not a usable pool: the floor of this library's
// design. The design fixes two hand-offs per task: the submitter meets one
// dispatcher goroutine on an unbuffered channel (in), and the dispatcher
// meets a worker on a second unbuffered channel (out). relay makes exactly
// those two rendezvous per task and nothing else: no counters, no idle
// retirement, no pause, no tracked tasks, no protection for a Submit that
// races Close, no allocation per task, no recovery of a task that panics.
// A pool of this shape cannot be faster than relay, so the report divides
// every pool's time by relay's, and this library aims to stay within 1.10x
// of it where submitting dominates (scenarios a and e).
//
// Like the library, it queues without limit: while its deque is not empty,
// new tasks join the back and workers are fed from the front; while it is
// empty, a task goes to a ready worker, else to a new worker if fewer than
// max exist, else into the deque. A batch is one message on in, whose
// tasks the dispatcher takes in order as it takes single ones: the floor of
// scenario l, which makes one rendezvous per task instead of two. Close
// sends the empty message on in; the dispatcher then drains the deque to
// the workers, sends one nil per worker and returns.
type relay struct {
	in      chan relayMsg // submitters to the dispatcher; the empty message asks it to stop
	out     chan func()   // the dispatcher to the workers; nil tells a worker to return
	max     int
	running sync.WaitGroup // the workers
	done    chan struct{}  // closed when the dispatcher returns

	// Owned by the dispatcher goroutine.
	queue   deque.Deque[func()]
	workers int

	*signal // SubmitWait by adapter, as for the other pools without one
}

// A relayMsg is one task (f) or one batch; both nil is Close's stop signal.
type relayMsg struct {
	f     func()
	batch []func()
}

func openRelay(workers int) pool {
	r := &relay{
		in:     make(chan relayMsg),
		out:    make(chan func()),
		max:    workers,
		done:   make(chan struct{}),
		signal: newSignal(),
	}
	go r.dispatch()
	return r
}

func (r *relay) Submit(t *task)     { r.in <- relayMsg{f: t.fn} }
func (r *relay) SubmitWait(t *task) { r.roundTrip(t, r.Submit) }

// SubmitBatch hands the whole batch over in one rendezvous; the dispatcher
// is done with the slice when the receive completes.
func (r *relay) SubmitBatch(batch []func()) { r.in <- relayMsg{batch: batch} }

// Close runs every task already accepted and waits for the dispatcher and
// the workers. Submit must not be called during or after Close.
func (r *relay) Close() {
	r.in <- relayMsg{}
	<-r.done
	r.running.Wait()
}

// dispatch is the dispatcher goroutine. Each round has the shape of the
// library's dispatcher (dispatch.go, step): without blocking, hand the
// deque's front to a ready worker and take a task waiting on in; only when
// neither was possible, block in await.
func (r *relay) dispatch() {
	defer close(r.done)
	for {
		handed := r.queue.Len() > 0 && r.offer(r.queue.Front())
		if handed {
			r.queue.PopFront()
		}
		select {
		case m := <-r.in:
			if !r.accept(m) {
				r.stop()
				return
			}
		default:
			if !handed && !r.await() {
				r.stop()
				return
			}
		}
	}
}

// await blocks for one event: while the deque is empty, only a task on in;
// otherwise a task on in or a worker ready for the front. It returns false
// on Close's nil.
func (r *relay) await() bool {
	if r.queue.Len() == 0 {
		return r.accept(<-r.in)
	}
	select {
	case m := <-r.in:
		return r.accept(m)
	case r.out <- r.queue.Front():
		r.queue.PopFront()
	}
	return true
}

// accept takes a message from in: each of its tasks straight to a worker
// while the deque is empty and one can take it, else to the deque's back.
// It returns false for Close's empty message.
func (r *relay) accept(m relayMsg) bool {
	switch {
	case m.f != nil:
		r.take(m.f)
	case m.batch != nil:
		for _, f := range m.batch {
			r.take(f)
		}
	default:
		return false
	}
	return true
}

func (r *relay) take(f func()) {
	if r.queue.Len() > 0 || !r.offer(f) {
		r.queue.PushBack(f)
	}
}

// offer hands f to a ready worker, or to a new one if fewer than max exist,
// and reports false, without blocking, if neither is possible.
func (r *relay) offer(f func()) bool {
	select {
	case r.out <- f:
		return true
	default:
	}
	if r.workers == r.max {
		return false
	}
	r.workers++
	r.running.Add(1)
	go r.worker(f)
	return true
}

// worker runs f, then each task it receives from out, until it receives nil.
func (r *relay) worker(f func()) {
	defer r.running.Done()
	for f != nil {
		f()
		f = <-r.out
	}
}

// stop drains the deque to the workers and sends one nil per worker.
func (r *relay) stop() {
	for r.queue.Len() > 0 {
		if f := r.queue.PopFront(); !r.offer(f) {
			r.out <- f
		}
	}
	for ; r.workers > 0; r.workers-- {
		r.out <- nil
	}
}
