package workerpool

import "sync/atomic"

// slots is the dispatcher's part for weights (see Weight): a task may
// start only once as many of the pool's slots are free as it weighs, and
// the next task in order is never overtaken by a lighter one. The tasks
// out with workers hold one slot each, and a heavy one weight−1 more; the
// workers give those back (signals.heavyDone) before they count the
// work returned. The dispatcher owns it.
type slots struct {
	heavyDone *atomic.Uint64 // the pool's signals.heavyDone: weight−1 summed over the heavy jobs their workers are done with
	limited   bool           // a rate limit (WithRateLimit) gates every start
	// gated says a task may have to wait for more than a worker: for a
	// token (WithRateLimit), or for slots, while jobs heavier than 1 are
	// out (heavyOut). heavySent sums weight−1 over the heavy jobs handed
	// to workers.
	gated     bool
	heavyOut  bool
	heavySent uint64
}

// free is size less the slots of the tasks out with workers: out of them,
// each holding one slot, and a heavy one weight−1 more. Workers count a
// heavy job's slots back before they count its work returned, so the
// caller reads out first.
func (s *slots) free(size int, out uint64) int {
	heavy := s.heavySent - s.heavyDone.Load()
	if heavy == 0 && s.heavyOut {
		s.heavyOut = false
		s.gated = s.limited
	}
	return size - int(out) - int(heavy)
}

// took counts the slots of a task of weight that a worker took.
func (s *slots) took(weight int) {
	if weight > 1 {
		s.heavySent += uint64(weight - 1)
		s.heavyOut, s.gated = true, true
	}
}

// heavierThan reports whether a task of weight takes more slots than the
// pool's size.
func (s *sizeSettings) heavierThan(weight int) bool {
	return weight > 1 && int64(weight) > s.max.Load()
}

// dropIfHeavierThan settles the job as dropped with ErrTooHeavy if it
// weighs more than size slots (a Resize made the pool smaller after it was
// accepted), and reports whether it is that heavy.
func (j *job) dropIfHeavierThan(size int) bool {
	if j.weight() <= size {
		return false
	}
	j.settle(jobDropped, ErrTooHeavy)
	return true
}
