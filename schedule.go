package workerpool

import (
	"math"
	"time"
)

// timerHeap holds the scheduled jobs, the earliest due first (in order of
// arrival among those due at the same time). It is dispatch's own. It is a
// 4-ary heap whose entries carry their keys, so that sifting compares
// neighbouring words instead of reading the jobs, which lie all over the
// heap: with many tasks scheduled, that was most of its cost.
type timerHeap []timerEntry

// A timerEntry is one scheduled job with its keys: due, then seq.
type timerEntry struct {
	due int64
	seq uint64
	job *job
}

func (e timerEntry) before(o timerEntry) bool {
	return e.due < o.due || e.due == o.due && e.seq < o.seq
}

// push adds e.
func (h *timerHeap) push(e timerEntry) {
	*h = append(*h, e)
	h.up(len(*h) - 1)
}

// pop removes and returns the first entry. h must not be empty.
func (h *timerHeap) pop() timerEntry {
	s := *h
	first, last := s[0], len(s)-1
	s[0] = s[last]
	s[last] = timerEntry{}
	*h = s[:last]
	if last > 0 {
		h.down(0)
	}
	return first
}

func (h timerHeap) up(i int) {
	e := h[i]
	for i > 0 {
		parent := (i - 1) / 4
		if !e.before(h[parent]) {
			break
		}
		h[i] = h[parent]
		i = parent
	}
	h[i] = e
}

func (h timerHeap) down(i int) {
	e := h[i]
	for {
		first := 4*i + 1
		if first >= len(h) {
			break
		}
		least := first
		for c := first + 1; c < min(first+4, len(h)); c++ {
			if h[c].before(h[least]) {
				least = c
			}
		}
		if !h[least].before(e) {
			break
		}
		h[i] = h[least]
		i = least
	}
	h[i] = e
}

// init orders h as a heap.
func (h timerHeap) init() {
	if len(h) < 2 {
		return
	}
	for i := (len(h) - 2) / 4; i >= 0; i-- {
		h.down(i)
	}
}

// The dispatcher's one timer wakes it for the earliest of what it waits
// for in time: the next scheduled job coming due, the oldest queued task
// expiring (WithQueueTimeout), and the next token of the rate limit. Each
// asks for its moment with wakeAt; when the timer fires, timerFired does
// what is due and arms it for what is left. A timer that fires for nothing
// (its job was canceled, say) only re-arms.

// wakeAt arms the timer for at, on the pool's clock, unless it is armed
// for that moment or an earlier one.
func (d *dispatcher) wakeAt(at int64) {
	if d.armed && d.timerAt <= at {
		return
	}
	d.armed, d.timerAt = true, at
	wait := time.Duration(at - d.p.now())
	if d.timer == nil {
		d.timer = time.NewTimer(wait)
		return
	}
	d.timer.Reset(wait)
}

// timerC is the channel dispatch waits on for its timer: nil (never ready)
// while it is not armed.
func (d *dispatcher) timerC() <-chan time.Time {
	if !d.armed {
		return nil
	}
	return d.timer.C
}

// timerFired moves the jobs that came due, expires the queued tasks that
// waited their time, and arms the timer for the next moment. (A task
// waiting for a token is looked at again as dispatch goes on.)
func (d *dispatcher) timerFired() {
	d.armed = false
	d.advanceTimers()
	if d.p.cfg.queueTimeout > 0 {
		d.tidyFronts(d.p.now())
	}
	d.rearm()
}

// rearm arms the timer for the next scheduled job and the next expiry.
func (d *dispatcher) rearm() {
	if len(d.timers) > 0 {
		d.wakeAt(d.timers[0].due)
	}
	if at, ok := d.nextExpiry(); ok {
		d.wakeAt(at)
	}
}

// schedule puts a job that is not due yet in the timer heap, and arms the
// timer for it; reserved says its submitter counted it in Status.Scheduled
// already. It reports false, doing nothing but give back the reservation,
// if j was settled on its way.
func (d *dispatcher) schedule(j *job, reserved bool) bool {
	if !j.schedule(reserved) {
		d.unreserve(reserved)
		return false
	}
	d.pushTimer(j)
	return true
}

// takeReservation returns whether a job that dispatch has just received
// was counted in Status.Scheduled by its submitter (see
// WorkerPool.reserveScheduled), and takes the reservation over: from now
// on dispatch keeps it, as the job's place in the timer heap, or gives it
// back (unreserve).
func takeReservation(j *job) bool {
	reserved := j.reserved
	j.reserved = false
	return reserved
}

// unreserve gives back a reservation dispatch took over for a job that is
// not scheduled after all: it was settled on its way, or came due.
func (d *dispatcher) unreserve(reserved bool) {
	if reserved {
		d.p.counts.scheduled.Add(-1)
	}
}

// pushTimer puts a scheduled job in the timer heap and arms the timer for
// it.
func (d *dispatcher) pushTimer(j *job) {
	d.scheduledSeq++
	d.heaviest = max(d.heaviest, j.weight)
	d.timers.push(timerEntry{due: j.due, seq: d.scheduledSeq, job: j})
	d.wakeAt(j.due)
}

// notDue reports whether the job must wait in the timer heap: it has a due
// time that has not come yet.
func (j *job) notDue() bool {
	return j.due != 0 && j.pool.now() < j.due
}

// pollTimers, called at every step while the timer is armed, handles its
// firing, and sweeps the heap if most of it is settled.
func (d *dispatcher) pollTimers() {
	select {
	case <-d.timer.C:
		d.timerFired()
	default:
		if dead := int64(len(d.timers)) - d.p.counts.scheduled.Load(); dead > int64(len(d.timers))/2 {
			d.sweepTimers()
		}
	}
}

// advanceTimers moves the jobs that are due to the queue (or to a free
// worker), and drops those settled while they waited. Dispatch calls it
// when the timer fires and before it places a pause's barrier.
func (d *dispatcher) advanceTimers() {
	now := d.p.now()
	for len(d.timers) > 0 && now >= d.timers[0].due {
		d.makeDue(d.timers.pop().job)
	}
}

// makeDue gives a job that came due to the pool as if it were accepted
// now (see admitDue). It keeps the room it held, as the bound counts
// scheduled tasks too. A job settled while it waited is only released.
func (d *dispatcher) makeDue(j *job) {
	if !j.comeDue() {
		j.owner.released()
		return
	}
	d.admitDue(j)
}

// sweepTimers drops every settled job from the timer heap.
func (d *dispatcher) sweepTimers() {
	live := d.timers[:0]
	for _, e := range d.timers {
		if e.job.isScheduled() {
			live = append(live, e)
		} else {
			e.job.owner.released()
		}
	}
	clear(d.timers[len(live):])
	d.timers = live
	d.timers.init()
}

// abandonTimers settles every scheduled job as a stop that abandons its
// tasks does (see abandonQueue), and empties the heap.
func (d *dispatcher) abandonTimers() {
	for _, e := range d.timers {
		e.job.abandon()
		e.job.owner.released()
	}
	d.timers = nil
}

// retriesOut reports whether jobs with a RetryPolicy are out with workers
// or posted for dispatch to take (see retries). It loads the count of those
// back before it looks at the posted ones.
func (d *dispatcher) retriesOut() bool {
	if d.retriesSent == 0 {
		return false
	}
	return d.p.retries.back.Load() != d.retriesSent || d.p.retries.n.Load() > 0
}

// pollRetries takes the jobs posted for a retry, if any may be.
func (d *dispatcher) pollRetries() {
	if d.retriesSent > 0 && d.p.retries.n.Load() > 0 {
		d.takeRetries()
	}
}

// takeRetries puts the jobs posted for a retry in the timer heap, or, due
// already, in the queue. One settled on its way is only released.
func (d *dispatcher) takeRetries() {
	for _, j := range d.p.retries.take() {
		switch {
		case !j.isScheduled():
			j.owner.released()
		case d.dropIfTooHeavy(j): // a Resize made the pool smaller during its run
		case j.notDue():
			d.pushTimer(j)
		default:
			d.makeDue(j)
		}
	}
}

// abandonRetries settles the jobs posted for a retry as abandonTimers
// does. Dispatch calls it once every worker has returned.
func (d *dispatcher) abandonRetries() {
	for _, j := range d.p.retries.take() {
		j.abandon()
		j.owner.released()
	}
}

// now is the pool's clock: the time since New, in nanoseconds, on the
// monotonic clock. Due times and queue times are read on it, so a job
// keeps each in one word.
func (p *WorkerPool) now() int64 { return int64(time.Since(p.epoch)) }

// later is d after t on the pool's clock (d >= 0), or the clock's end if
// that is past it.
func later(t, d int64) int64 {
	if d > math.MaxInt64-t {
		return math.MaxInt64
	}
	return t + d
}

// clockOf is t on the pool's clock.
func (p *WorkerPool) clockOf(t time.Time) int64 { return int64(t.Sub(p.epoch)) }
