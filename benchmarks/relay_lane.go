package main

import (
	"sync"

	"github.com/gammazero/deque"
)

// laneRelay is a reference, not a usable pool: the floor of a pool of this
// library's shape whose tasks do not pass through the dispatcher at all
// while it has nothing to order. Submitters append to a queue under a
// mutex (the lane) and workers take from its front under the same mutex, as
// pond's do; a worker that finds the lane empty waits to be woken, and a
// submitter wakes one waiting worker, or, with none waiting and fewer than
// max started, wakes the dispatcher, whose only work is to start workers.
// Nothing else: no counters, no stop protection, no recovery, no policy. It
// shows what moving a task costs once the dispatcher is off the task's
// path, the one mechanism of the three floors with no hop per task.
type laneRelay struct {
	mu       sync.Mutex
	lane     deque.Deque[func()] // guarded by mu
	waiting  int                 // guarded by mu: workers waiting on wakeWorker
	workers  int                 // guarded by mu: workers started (the dispatcher starts them)
	starting bool                // guarded by mu: the dispatcher was asked to start one
	closed   bool                // guarded by mu: Close was called

	wakeWorker chan struct{} // buffered (max): a submitter to one waiting worker
	wakeDisp   chan struct{} // buffered (1): a submitter to the dispatcher
	max        int
	running    sync.WaitGroup
	done       chan struct{}

	*signal
}

func openLaneRelay(workers int) pool {
	r := &laneRelay{
		wakeWorker: make(chan struct{}, workers),
		wakeDisp:   make(chan struct{}, 1),
		max:        workers,
		done:       make(chan struct{}),
		signal:     newSignal(),
	}
	go r.dispatch()
	return r
}

func (r *laneRelay) Submit(t *task)     { r.append(t.fn) }
func (r *laneRelay) SubmitWait(t *task) { r.roundTrip(t, r.Submit) }

// SubmitBatch appends the whole batch under one lock.
func (r *laneRelay) SubmitBatch(batch []func()) { r.append(batch...) }

func (r *laneRelay) append(fs ...func()) {
	r.mu.Lock()
	for _, f := range fs {
		r.lane.PushBack(f)
	}
	wakeWorker, wakeDisp := r.wakeOne(len(fs))
	r.mu.Unlock()
	r.signalWakes(wakeWorker, wakeDisp)
}

// wakeOne says, under mu, whom n new tasks wake: up to n waiting workers,
// else the dispatcher to start a worker.
func (r *laneRelay) wakeOne(n int) (workers int, disp bool) {
	workers = min(n, r.waiting)
	r.waiting -= workers
	if workers < n && r.workers < r.max && !r.starting {
		r.starting = true
		disp = true
	}
	return workers, disp
}

func (r *laneRelay) signalWakes(workers int, disp bool) {
	for range workers {
		r.wakeWorker <- struct{}{}
	}
	if disp {
		r.wakeDisp <- struct{}{}
	}
}

// Close runs every task already accepted and waits for the dispatcher and
// the workers. Submit must not be called during or after Close.
func (r *laneRelay) Close() {
	r.mu.Lock()
	r.closed = true
	wake := r.waiting
	r.waiting = 0
	r.mu.Unlock()
	r.signalWakes(wake, true)
	<-r.done
	r.running.Wait()
}

// dispatch is the dispatcher goroutine: it starts workers while the lane
// has tasks that no waiting worker will take, up to max.
func (r *laneRelay) dispatch() {
	defer close(r.done)
	for range r.wakeDisp {
		r.mu.Lock()
		r.starting = false
		start := min(r.lane.Len(), r.max-r.workers)
		r.workers += start
		closed := r.closed
		r.mu.Unlock()
		for range start {
			r.running.Add(1)
			go r.worker()
		}
		if closed {
			return
		}
	}
}

// worker runs the lane's front task until the lane is empty, then waits to
// be woken; once Close was called it returns on an empty lane.
func (r *laneRelay) worker() {
	defer r.running.Done()
	for {
		r.mu.Lock()
		for r.lane.Len() == 0 {
			if r.closed {
				r.mu.Unlock()
				return
			}
			r.waiting++
			r.mu.Unlock()
			<-r.wakeWorker
			r.mu.Lock()
		}
		f := r.lane.PopFront()
		r.mu.Unlock()
		f()
	}
}
