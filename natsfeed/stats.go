package natsfeed

import "sync/atomic"

// Stats counts what feeds do with their messages. The zero value is ready;
// pass it to Feed with WithStats. Safe for concurrent use.
type Stats struct {
	taken, redelivered, acked, nacked, terminated, unsettled atomic.Int64
	inFlight, maxInFlight                                    atomic.Int64
}

// Counts is a snapshot of a Stats. Once every feed that counts in it has
// returned,
//
//	Taken == Acked + Nacked + Terminated + Unsettled
//
// and InFlight is zero; while they run, InFlight makes up the difference,
// give or take the counters read a moment apart.
type Counts struct {
	Taken       int64 // messages received from the server, redeliveries included
	Redelivered int64 // of Taken, messages the server had delivered before (delivery count above 1)
	Acked       int64 // handler returned nil and the server confirmed the acknowledgement
	Nacked      int64 // handler failed, panicked or called runtime.Goexit, or the pool refused to run it: given back for redelivery
	Terminated  int64 // handler's error was marked with workerpool.Permanent, or the backoff policy gave up: never redelivered
	Unsettled   int64 // acknowledging failed until the server's AckWait ran out, or a nak or term failed: the server redelivers it
	InFlight    int64 // received and not settled yet
	MaxInFlight int64 // the highest InFlight has been
}

// Counts returns the current counts. It never blocks.
func (s *Stats) Counts() Counts {
	return Counts{
		Taken:       s.taken.Load(),
		Redelivered: s.redelivered.Load(),
		Acked:       s.acked.Load(),
		Nacked:      s.nacked.Load(),
		Terminated:  s.terminated.Load(),
		Unsettled:   s.unsettled.Load(),
		InFlight:    s.inFlight.Load(),
		MaxInFlight: s.maxInFlight.Load(),
	}
}

// took counts a message received, delivered times so far.
func (s *Stats) took(delivered uint64) {
	s.taken.Add(1)
	if delivered > 1 {
		s.redelivered.Add(1)
	}
	n := s.inFlight.Add(1)
	for {
		high := s.maxInFlight.Load()
		if n <= high || s.maxInFlight.CompareAndSwap(high, n) {
			return
		}
	}
}

// settled counts a message leaving flight into outcome.
func (s *Stats) settled(outcome *atomic.Int64) {
	outcome.Add(1)
	s.inFlight.Add(-1)
}
