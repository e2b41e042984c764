package workerpool

import (
	"cmp"
	"math"
	"slices"

	"github.com/gammazero/deque"
)

// The waiting queue is a FIFO per priority level. Level 0, the level of
// every plain task, is dispatcher.queue (with its jobs in dispatcher.jobs);
// the jobs of every other level wait in levels, one FIFO per level. A
// source names one FIFO: level0, or an index in levels.
type source int

const (
	level0 source = -1
	none   source = -2
)

// A level is the FIFO of the queued jobs of one priority level other than
// 0. Dispatch removes a level once it is empty.
type level struct {
	priority int
	jobs     deque.Deque[*job]
}

// queued is the number of entries in the queue, settled jobs among them.
func (d *dispatcher) queued() int {
	return d.queue.Len() + d.ranked
}

// pushRanked queues j, whose priority is not 0, at the back of its level.
// seq orders it among the jobs of other levels and after places it among
// level 0's entries, so that a pause's barrier and DropOldest see the order
// in which all tasks joined the queue.
func (d *dispatcher) pushRanked(j *job) {
	j.seq, j.after = d.rankedSeq, d.pushed
	d.rankedSeq++
	i, found := slices.BinarySearchFunc(d.levels, j.priority, func(l *level, p int) int { return cmp.Compare(l.priority, p) })
	if !found {
		d.levels = slices.Insert(d.levels, i, d.newLevel(j.priority))
	}
	d.levels[i].jobs.PushBack(j)
	d.ranked++
}

// popAt removes the front entry of src (see pop for level 0).
func (d *dispatcher) popAt(src source) {
	if src == level0 {
		d.pop()
		return
	}
	l := d.levels[src]
	l.jobs.PopFront()
	d.ranked--
	if l.jobs.Len() == 0 {
		d.levels = slices.Delete(d.levels, int(src), int(src)+1)
		if len(d.spareLevels) < maxSpareLevels {
			d.spareLevels = append(d.spareLevels, l)
		}
	}
}

// newLevel returns an empty level for priority, reusing a spare one (and
// its buffer) if there is one, so that a level that empties and fills again
// costs no allocation.
func (d *dispatcher) newLevel(priority int) *level {
	if n := len(d.spareLevels); n > 0 {
		l := d.spareLevels[n-1]
		d.spareLevels = d.spareLevels[:n-1]
		l.priority = priority
		return l
	}
	return &level{priority: priority}
}

// maxSpareLevels bounds the emptied levels kept for reuse: while no more
// levels than that come and go, Go with Priority allocates nothing more
// than Go.
const maxSpareLevels = 64

// workAt is the front entry of src as work.
func (d *dispatcher) workAt(src source) work {
	if src == level0 {
		return d.front()
	}
	return work{job: d.levels[src].jobs.Front()}
}

// frontJob is src's front job, or nil if it is a plain task.
func (d *dispatcher) frontJob(src source) *job {
	if src != level0 {
		return d.levels[src].jobs.Front()
	}
	if d.queue.Front() == nil {
		return d.jobs.Front()
	}
	return nil
}

// readyAtOf is when src's front entry became ready (d.stamped only).
func (d *dispatcher) readyAtOf(src source) int64 {
	if src == level0 {
		return d.readyAt.Front()
	}
	return d.levels[src].jobs.Front().readyAt
}

// lenAt is the number of entries in src.
func (d *dispatcher) lenAt(src source) int {
	if src == level0 {
		return d.queue.Len()
	}
	return d.levels[src].jobs.Len()
}

// head is where the task to start next waits: the front of the highest
// level that may start (with aging, the highest level reached), or none.
// On its way it drops the settled jobs and the expired tasks at the fronts.
// While a pause is in effect only the tasks queued before its barrier may
// start.
func (d *dispatcher) head() source {
	if d.ranked == 0 && !d.clocked {
		d.dropSettledFront()
		if d.mayLeave(level0) {
			return level0
		}
		return none
	}
	now := d.queueNow()
	if d.p.cfg.aging > 0 {
		d.tidyFronts(now)
		return d.agedHead(now)
	}
	// From the highest level down, level 0 between the positive levels
	// and the negative ones; each front is tidied as it is reached, so
	// that a step costs the levels it looks at, not all of them.
	d.tidyLevel0(now)
	for i := len(d.levels) - 1; i >= 0; i-- {
		if d.levels[i].priority < 0 && d.mayLeave(level0) {
			return level0
		}
		if d.tidyLevel(source(i), now) && d.mayLeave(source(i)) {
			return source(i)
		}
	}
	if d.mayLeave(level0) {
		return level0
	}
	return none
}

// agedHead is head under WithPriorityAging: the front with the highest
// level plus the periods it waited, the older of two that tie. As the
// order may change when a front completes a period, it arms the timer for
// the next such moment: what dispatch offers the workers while it waits is
// then chosen again.
func (d *dispatcher) agedHead(now int64) source {
	best, bestLevel := none, 0
	nextPeriod := int64(math.MaxInt64)
	consider := func(src source, priority int) {
		if !d.mayLeave(src) {
			return
		}
		since := d.readyAtOf(src)
		periods := (now - since) / int64(d.p.cfg.aging)
		if next := since + (periods+1)*int64(d.p.cfg.aging); periods < maxAgedLevels && next > since { // not past the clock's end
			nextPeriod = min(nextPeriod, next)
		}
		aged := priority + int(min(periods, maxAgedLevels, int64(math.MaxInt-max(priority, 0)))) // never past MaxInt
		if best == none || aged > bestLevel || aged == bestLevel && d.older(src, best) {
			best, bestLevel = src, aged
		}
	}
	consider(level0, 0)
	for i, l := range d.levels {
		consider(source(i), l.priority)
	}
	if best != none && nextPeriod != math.MaxInt64 {
		d.wakeAt(nextPeriod)
	}
	return best
}

// maxAgedLevels caps the periods agedHead counts, so that the next period's
// moment is always on the clock.
const maxAgedLevels = 1 << 30

// mayLeave reports whether src's front may leave the queue now: src is not
// empty and no pause holds its front.
func (d *dispatcher) mayLeave(src source) bool {
	if d.lenAt(src) == 0 {
		return false
	}
	if len(d.pauses) == 0 {
		return true
	}
	if src == level0 {
		return d.popped < d.pauses[0].barrier
	}
	return d.levels[src].jobs.Front().seq < d.pauses[0].rankedBarrier
}

// older reports whether a's front joined the queue before b's.
func (d *dispatcher) older(a, b source) bool {
	switch {
	case a == level0:
		return d.levels[b].jobs.Front().after > d.popped
	case b == level0:
		return d.levels[a].jobs.Front().after <= d.popped
	}
	return d.levels[a].jobs.Front().seq < d.levels[b].jobs.Front().seq
}

// oldest is the source whose front joined the queue first, or none.
func (d *dispatcher) oldest() source {
	best := none
	if d.queue.Len() > 0 {
		best = level0
	}
	for i := range d.levels {
		if best == none || d.older(source(i), best) {
			best = source(i)
		}
	}
	return best
}

// tidyFronts drops, at the front of every level, the jobs that must not
// start (see dropSettledFront) and, with WithQueueTimeout, the tasks that
// have waited their time (see expireFront), and removes the levels it
// empties.
func (d *dispatcher) tidyFronts(now int64) {
	d.tidyLevel0(now)
	for i := len(d.levels) - 1; i >= 0; i-- { // so that removing level i moves none still to tidy
		d.tidyLevel(source(i), now)
	}
}

// tidyLevel0 is tidyFronts for level 0.
func (d *dispatcher) tidyLevel0(now int64) {
	for d.dropSettledFront(); d.expiredAt(level0, now); d.dropSettledFront() {
		d.expireFront(level0)
	}
}

// tidyLevel is tidyFronts for one level other than 0. It reports false if
// it emptied the level, which is then gone.
func (d *dispatcher) tidyLevel(src source, now int64) bool {
	for l := d.levels[src]; ; {
		last := l.jobs.Len() == 1
		switch j := l.jobs.Front(); {
		case j.settled() || j.settleIfBlocked():
			d.popAt(src)
			j.owner.released()
		case d.expiredAt(src, now):
			d.expireFront(src)
		default:
			return true
		}
		if last {
			return false
		}
	}
}

// expiredAt reports whether src's front has waited WithQueueTimeout's d at
// now.
func (d *dispatcher) expiredAt(src source, now int64) bool {
	return d.p.cfg.queueTimeout > 0 && d.lenAt(src) > 0 && now-d.readyAtOf(src) >= int64(d.p.cfg.queueTimeout)
}

// expireFront removes src's front task, which waited too long.
func (d *dispatcher) expireFront(src source) {
	d.giveUpFront(src, jobExpired, ErrExpired)
}

// giveUpFront removes src's front task, which will never run: a plain task
// is counted as settled to the state to and goes to the dead-letter handler
// with reason; a job settles so (unless it settled already), and its owner
// learns reason.
func (d *dispatcher) giveUpFront(src source, to uint32, reason error) {
	j := d.frontJob(src)
	if j == nil {
		task := d.queue.Front()
		d.pop()
		d.p.counts.settled.count(to)
		d.p.giveUp(task, reason)
		return
	}
	j.settle(to, reason)
	d.popAt(src)
	j.owner.released()
}

// nextExpiry is when the oldest queued task expires, if the pool expires
// tasks and one waits.
func (d *dispatcher) nextExpiry() (int64, bool) {
	if d.p.cfg.queueTimeout <= 0 || d.queued() == 0 {
		return 0, false
	}
	first, found := int64(0), false
	if d.queue.Len() > 0 {
		first, found = d.readyAt.Front(), true
	}
	for _, l := range d.levels {
		if at := l.jobs.Front().readyAt; !found || at < first {
			first, found = at, true
		}
	}
	return later(first, int64(d.p.cfg.queueTimeout)), true
}

// rankedBeforeBarrier reports whether a job of another level than 0 that
// joined the queue before req's barrier still waits.
func (d *dispatcher) rankedBeforeBarrier(req *pauseRequest) bool {
	for _, l := range d.levels {
		if l.jobs.Front().seq < req.rankedBarrier {
			return true
		}
	}
	return false
}

// dropTooHeavy drops, with ErrTooHeavy, the queued and scheduled jobs that
// weigh more than the pool's size, after a Resize made it smaller. They
// stay in the queue or the heap, settled, until they reach its front or
// are swept.
func (d *dispatcher) dropTooHeavy() {
	if d.heaviest <= d.max {
		return
	}
	for j := range d.jobs.Iter() {
		d.dropIfHeavierThanPool(j)
	}
	for _, l := range d.levels {
		for j := range l.jobs.Iter() {
			d.dropIfHeavierThanPool(j)
		}
	}
	for _, e := range d.timers {
		d.dropIfHeavierThanPool(e.job)
	}
}

// dropIfHeavierThanPool settles a job heavier than the pool's size as
// dropped with ErrTooHeavy, and reports whether it is that heavy.
func (d *dispatcher) dropIfHeavierThanPool(j *job) bool {
	if j.weight <= d.max {
		return false
	}
	j.settle(jobDropped, ErrTooHeavy)
	return true
}

// queueNow is the pool's clock if the queue reads it (clocked), else 0.
func (d *dispatcher) queueNow() int64 {
	if d.clocked {
		return d.p.now()
	}
	return 0
}
