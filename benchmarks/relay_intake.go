package main

import (
	"sync"

	"github.com/gammazero/deque"
)

// intakeRelay is a reference, not a usable pool: the floor of two ways a
// task could travel through a pool of this library's shape (one dispatcher
// goroutine that owns the order) without a rendezvous per task. It is the
// relay (relay.go) with the first hand-off replaced, and, with release set,
// the second too:
//
//   - the intake: a submitter appends its task to a buffer under a mutex
//     held for the append, and wakes the dispatcher only if it is parked;
//     the dispatcher takes the whole buffer at once and handles its tasks
//     as the relay handles the tasks it receives.
//   - the release (release set): the dispatcher hands tasks out on a
//     channel buffered to the number of workers, so that a worker that
//     finishes takes the next task the dispatcher released while it ran,
//     without waiting for the dispatcher; a worker starts when a released
//     task finds no worker ready and fewer than max exist.
//
// Nothing else: no counters, no stop protection, no recovery. A design that
// moves tasks this way cannot be faster than its row, so a target below it
// is a target this mechanism cannot meet.
type intakeRelay struct {
	mu     sync.Mutex
	buf    []func()      // guarded by mu: the tasks appended since the dispatcher last took them
	parked bool          // guarded by mu: the dispatcher waits on wake
	closed bool          // guarded by mu: Close was called
	wake   chan struct{} // buffered (1): a submitter to the parked dispatcher

	out     chan func() // the dispatcher to the workers; nil tells a worker to return
	release bool        // out is buffered: workers take released tasks without a rendezvous
	max     int
	running sync.WaitGroup
	done    chan struct{}

	// Owned by the dispatcher goroutine.
	queue   deque.Deque[func()]
	workers int
	spare   []func() // the buffer taken last time, cleared, given back at the next take

	*signal
}

func openIntakeRelay(workers int) pool  { return newIntakeRelay(workers, false) }
func openReleaseRelay(workers int) pool { return newIntakeRelay(workers, true) }

func newIntakeRelay(workers int, release bool) *intakeRelay {
	r := &intakeRelay{
		wake:    make(chan struct{}, 1),
		out:     make(chan func()),
		release: release,
		max:     workers,
		done:    make(chan struct{}),
		signal:  newSignal(),
	}
	if release {
		r.out = make(chan func(), workers)
	}
	go r.dispatch()
	return r
}

func (r *intakeRelay) Submit(t *task)     { r.append(t.fn) }
func (r *intakeRelay) SubmitWait(t *task) { r.roundTrip(t, r.Submit) }

// SubmitBatch appends the whole batch under one lock.
func (r *intakeRelay) SubmitBatch(batch []func()) { r.append(batch...) }

func (r *intakeRelay) append(fs ...func()) {
	r.mu.Lock()
	r.buf = append(r.buf, fs...)
	parked := r.parked
	r.parked = false
	r.mu.Unlock()
	if parked {
		r.wake <- struct{}{}
	}
}

// Close runs every task already accepted and waits for the dispatcher and
// the workers. Submit must not be called during or after Close.
func (r *intakeRelay) Close() {
	r.mu.Lock()
	r.closed = true
	parked := r.parked
	r.parked = false
	r.mu.Unlock()
	if parked {
		r.wake <- struct{}{}
	}
	<-r.done
	r.running.Wait()
}

// dispatch is the dispatcher goroutine, in the relay's shape: without
// blocking, hand the deque's front out and take what the submitters
// appended; only when neither was possible, park until woken or, while the
// deque is not empty, until a worker takes its front.
func (r *intakeRelay) dispatch() {
	defer close(r.done)
	for {
		handed := r.queue.Len() > 0 && r.offer(r.queue.Front())
		if handed {
			r.queue.PopFront()
		}
		took, open := r.take(!handed)
		switch {
		case !open:
			r.stop()
			return
		case took || handed:
		case r.queue.Len() == 0:
			<-r.wake
		default:
			select {
			case <-r.wake:
			case r.out <- r.queue.Front():
				r.queue.PopFront()
				r.unpark()
			}
		}
	}
}

// take handles the tasks appended since the last take. With nothing there
// it reports took false, and if park is set marks the dispatcher parked
// (a submitter will wake it). open is false once Close was called and
// nothing is left to take.
func (r *intakeRelay) take(park bool) (took, open bool) {
	r.mu.Lock()
	b := r.buf
	if len(b) == 0 {
		r.parked = park && !r.closed
		closed := r.closed
		r.mu.Unlock()
		return false, !closed
	}
	r.buf = r.spare[:0]
	r.mu.Unlock()
	for _, f := range b {
		r.place(f)
	}
	clear(b)
	r.spare = b
	return true, true
}

// unpark takes back the parked mark after the dispatcher woke for another
// reason, and drains the wake-up a submitter sent meanwhile.
func (r *intakeRelay) unpark() {
	r.mu.Lock()
	parked := r.parked
	r.parked = false
	r.mu.Unlock()
	if !parked {
		<-r.wake
	}
}

func (r *intakeRelay) place(f func()) {
	if r.queue.Len() > 0 || !r.offer(f) {
		r.queue.PushBack(f)
	}
}

// offer hands f out without blocking: to a ready worker (or, released, to
// the buffer the workers take from), else to a new worker if fewer than max
// exist. A released task that no ready worker took at once starts a worker
// too while fewer than max exist.
func (r *intakeRelay) offer(f func()) bool {
	select {
	case r.out <- f:
		if r.release && len(r.out) > 0 && r.workers < r.max {
			r.startWorker(nil)
		}
		return true
	default:
	}
	if r.workers == r.max {
		return false
	}
	r.startWorker(f)
	return true
}

func (r *intakeRelay) startWorker(f func()) {
	r.workers++
	r.running.Add(1)
	go r.worker(f)
}

// worker runs f (if any), then each task it receives, until it receives nil.
func (r *intakeRelay) worker(f func()) {
	defer r.running.Done()
	if f == nil {
		f = <-r.out
	}
	for f != nil {
		f()
		f = <-r.out
	}
}

// stop drains the deque to the workers and sends one nil per worker.
func (r *intakeRelay) stop() {
	for r.queue.Len() > 0 {
		if f := r.queue.PopFront(); !r.offer(f) {
			r.out <- f
		}
	}
	for ; r.workers > 0; r.workers-- {
		r.out <- nil
	}
}
