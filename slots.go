package workerpool

// slots is the dispatcher's part for weights (see Weight): a task may
// start only once as many of the pool's slots are free as it weighs, and
// the next task in order is never overtaken by a lighter one. The tasks
// out with workers hold one slot each, and a heavy one weight−1 more; the
// workers give those back (WorkerPool.heavyDone) before they count the
// work returned. The dispatcher owns it.
type slots struct {
	p *WorkerPool
	// gated says a task may have to wait for more than a worker: for a
	// token (WithRateLimit), or for slots, while jobs heavier than 1 are
	// out (heavyOut). heavySent sums weight−1 over the heavy jobs handed
	// to workers.
	gated     bool
	heavyOut  bool
	heavySent uint64
}

// mayStart reports whether a task of weight may start now, as far as the
// rate limit and the weights of the running tasks allow. Without either it
// is true at once.
func (s *slots) mayStart(d *dispatcher, weight int) bool {
	return !s.gated && weight <= 1 || s.mayStartGated(d, weight) // the common case inlines
}

// mayStartGated is mayStart for a task that may have to wait for a token
// or for slots.
func (s *slots) mayStartGated(d *dispatcher, weight int) bool {
	if s.p.cfg.rate.limited() && !d.tokens.ready(&d.timers) {
		return false
	}
	return s.fits(d, weight)
}

// fits reports whether weight more slots are free. If not, it has workers
// wake dispatch as they return work, so that it looks again; once they
// fit, it stops watching for them.
func (s *slots) fits(d *dispatcher, weight int) bool {
	if s.free(d) >= weight {
		s.unwatch(d)
		return true
	}
	d.crew.watch(true)
	if s.free(d) >= weight { // a worker came back before the watch was set
		s.unwatch(d)
		return true
	}
	return false
}

// unwatch stops watching returns that only fits asked for.
func (s *slots) unwatch(d *dispatcher) {
	if d.crew.watching && !d.returnsWanted() {
		d.crew.watch(false)
	}
}

// free is the pool's size less the slots of the tasks out with workers.
// Workers count a heavy job's slots back before they count its work
// returned, so it reads returned first.
func (s *slots) free(d *dispatcher) int {
	out := d.crew.out()
	heavy := s.heavySent - s.p.sig.heavyDone.Load()
	if heavy == 0 && s.heavyOut {
		s.heavyOut = false
		s.gated = s.p.cfg.rate.limited()
	}
	return d.crew.max - int(out) - int(heavy)
}

// handed counts the slots of a task of weight that a worker took.
func (s *slots) handed(weight int) {
	if weight > 1 {
		s.heavySent += uint64(weight - 1)
		s.heavyOut, s.gated = true, true
	}
}

// heavierThanPool reports whether a task of weight takes more slots than
// the pool's size.
func (p *WorkerPool) heavierThanPool(weight int) bool {
	return weight > 1 && int64(weight) > p.size.max.Load()
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
