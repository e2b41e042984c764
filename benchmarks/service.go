package main

import (
	"sync"
	"time"

	"github.com/gammazero/deque"
)

// A service is the synthetic downstream of scenario p, a service whose best
// concurrency is known: it serves calls in a number of parallel slots (C),
// each call for a fixed service time (S). A call takes a free slot, or waits
// for one behind the calls that came before it (FIFO), holds the slot for
// its service time and returns. So the service finishes at most C/S calls
// per second, and calls beyond C wait inside it.
//
// Calls beyond twice the slots in the service (waiting and served) slow
// every call: a call that gets its slot while inflight > 2C, counting
// itself, is served for S × (1 + (inflight − 2C)/C). A call that returns
// leaves the count before the next waiting call gets its slot. Up to 2C
// calls in the service the throughput is C/S; beyond, it falls.
//
// SetSlots changes C while the service runs (scenario p halves it). A
// service is safe for concurrent use; its zero value is not usable. It
// starts no goroutine: each call runs in its caller's.
type service struct {
	serve time.Duration // S, fixed at newService

	mu       sync.Mutex                      // protects the fields below
	slots    int                             // C; at least 1
	busy     int                             // calls holding a slot; may exceed slots after SetSlots lowers it, until enough return
	inflight int                             // calls in the service, waiting or served
	waiting  deque.Deque[chan time.Duration] // waiting calls, first come first; admit sends each its service time as it gets its slot
}

func newService(slots int, serve time.Duration) *service {
	return &service{serve: serve, slots: max(slots, 1)}
}

// Call takes a slot, waiting for one behind earlier calls if none is free,
// holds it for its service time and returns. It blocks for the service
// time and the wait; it never fails.
func (s *service) Call() {
	s.mu.Lock()
	s.inflight++
	var d time.Duration
	if s.waiting.Len() == 0 && s.busy < s.slots {
		d = s.take()
		s.mu.Unlock()
	} else {
		slot := make(chan time.Duration, 1)
		s.waiting.PushBack(slot)
		s.mu.Unlock()
		d = <-slot
	}
	time.Sleep(d)
	s.mu.Lock()
	s.busy--
	s.inflight--
	s.admit()
	s.mu.Unlock()
}

// SetSlots sets C to n (n < 1 means 1). Calls served keep their slots and
// their service times; waiting calls get the slots that are free under the
// new C, in order. It never blocks on a call.
func (s *service) SetSlots(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slots = max(n, 1)
	s.admit()
}

// admit gives free slots to waiting calls, first come first. s.mu is held.
func (s *service) admit() {
	for s.waiting.Len() > 0 && s.busy < s.slots {
		s.waiting.PopFront() <- s.take()
	}
}

// take gives a call a slot and returns its service time, from the calls in
// the service now (that call included). s.mu is held.
func (s *service) take() time.Duration {
	s.busy++
	if over := s.inflight - 2*s.slots; over > 0 {
		return s.serve + time.Duration(int64(s.serve)*int64(over)/int64(s.slots))
	}
	return s.serve
}
