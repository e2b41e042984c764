package main

import (
	"container/heap"
	"time"
)

// delayRelay is the relay floor for delayed tasks: the bare mechanism of
// the library's Delay, of the same shape and nothing else. A delayed task
// is one rendezvous with the dispatcher, which keeps it in a min-heap by
// due time and arms one timer for the earliest; when the timer fires, the
// dispatcher takes the due tasks as the relay takes a new one (to a ready
// worker, a new one, or the deque). It has no counters, no pooled
// carriers, no cancel, no stop for what is not due (Close waits for every
// task). A pool of this shape cannot schedule a delayed task for less, so
// the delay benchmark divides by it, as the report divides by the relay.
type delayRelay struct {
	*relay
	later chan delayedTask // submitters to the dispatcher

	// Owned by the dispatcher goroutine.
	due   dueHeap
	timer *time.Timer
	start time.Time
}

type delayedTask struct {
	at int64 // nanoseconds since start
	f  func()
}

// dueHeap orders delayed tasks by due time (container/heap).
type dueHeap []delayedTask

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(delayedTask)) }
func (h *dueHeap) Pop() any {
	s := *h
	x := s[len(s)-1]
	*h = s[:len(s)-1]
	return x
}

func openDelayRelay(workers int) *delayRelay {
	r := &delayRelay{
		relay: &relay{
			in:     make(chan relayMsg),
			out:    make(chan func()),
			max:    workers,
			done:   make(chan struct{}),
			signal: newSignal(),
		},
		later: make(chan delayedTask),
		timer: time.NewTimer(time.Hour),
		start: time.Now(),
	}
	r.timer.Stop()
	go r.dispatch()
	return r
}

// SubmitAfter runs t once d has passed.
func (r *delayRelay) SubmitAfter(d time.Duration, t *task) {
	r.later <- delayedTask{at: int64(time.Since(r.start) + d), f: t.fn}
}

// dispatch is the relay's dispatcher with one more source of tasks, the
// heap's due ones, and one more event, its timer.
func (r *delayRelay) dispatch() {
	defer close(r.done)
	for {
		if r.queue.Len() > 0 && r.offer(r.queue.Front()) {
			r.queue.PopFront()
			continue
		}
		var out chan func()
		var front func()
		if r.queue.Len() > 0 {
			out, front = r.out, r.queue.Front()
		}
		var fired <-chan time.Time
		if len(r.due) > 0 {
			fired = r.timer.C
		}
		select {
		case m := <-r.in:
			if !r.accept(m) {
				r.closeDelayed()
				return
			}
		case t := <-r.later:
			r.schedule(t)
		case out <- front:
			r.queue.PopFront()
		case <-fired:
			r.takeDue()
		}
	}
}

// schedule puts t in the heap, arming the timer if it is now the earliest.
func (r *delayRelay) schedule(t delayedTask) {
	earliest := len(r.due) == 0 || t.at < r.due[0].at
	heap.Push(&r.due, t)
	if earliest {
		r.timer.Reset(time.Duration(t.at) - time.Since(r.start))
	}
}

// takeDue takes the tasks that are due and arms the timer for the next.
func (r *delayRelay) takeDue() {
	now := int64(time.Since(r.start))
	for len(r.due) > 0 && r.due[0].at <= now {
		r.take(heap.Pop(&r.due).(delayedTask).f)
	}
	if len(r.due) > 0 {
		r.timer.Reset(time.Duration(r.due[0].at - now))
	}
}

// closeDelayed runs what is left, due or not, and stops as the relay does.
func (r *delayRelay) closeDelayed() {
	for len(r.due) > 0 {
		t := heap.Pop(&r.due).(delayedTask)
		time.Sleep(time.Duration(t.at) - time.Since(r.start))
		r.take(t.f)
	}
	r.stop()
}
