package workerpool

import "math"

// Which waiting task starts next (see waitQueue.head): the highest level
// first, or, under aging, the one whose priority has grown most; within a
// level, its tasks without a key and its keys' queues take turns by deficit
// round robin (pickFlow, in flowring.go); a pause holds back what came
// after its barrier.

// head is where the task to start next waits: the front of the highest
// level that may start (with aging, the highest level reached), or none;
// where keyed tasks wait at that level, the member its ring serves next
// (see waitQueue.pickFlow). On its way it drops the settled jobs and the expired
// tasks at the fronts. While a pause holds the queue (hold, nil if none)
// only the tasks queued before its barrier may start.
func (q *waitQueue) head(hold *pauseRequest) source {
	if q.ranked == 0 && q.flows.queued == 0 && !q.clocked {
		q.dropSettledFront()
		if q.mayLeave(level0, hold) {
			return level0
		}
		return none
	}
	now := q.now()
	if q.aging > 0 {
		q.tidyFronts(now)
		return q.agedHead(now, hold)
	}
	// From the highest level down; each front is tidied as it is
	// reached, so that a step costs the levels it looks at, not all of
	// them.
	q.tidyLevel0(now)
	best := none
	q.eachLevel(func(_ int, unkeyed source, kl *keyedLevel) bool {
		best = q.headAt(unkeyed, kl, now, hold, true)
		return best.isNone()
	})
	return best
}

// eachLevel calls fn for each priority level with tasks queued, highest
// first, with the level's FIFO of tasks without a key (none if it has
// none) and its ring of keyed queues (nil if it has none), until fn
// returns false. Level 0 comes between the positive levels and the
// negative ones, whether or not tasks wait there. fn may remove the level
// it is given.
func (q *waitQueue) eachLevel(fn func(priority int, unkeyed source, kl *keyedLevel) bool) {
	i, k := len(q.levels)-1, len(q.flows.levels)-1
	zeroDone := false
	for {
		p, ok := 0, false
		if i >= 0 {
			p, ok = q.levels[i].priority, true
		}
		if k >= 0 && (!ok || q.flows.levels[k].priority > p) {
			p, ok = q.flows.levels[k].priority, true
		}
		if !zeroDone && (!ok || p <= 0) {
			p, ok, zeroDone = 0, true, true
		}
		if !ok {
			return
		}
		unkeyed := none
		switch {
		case p == 0:
			unkeyed = level0
		case i >= 0 && q.levels[i].priority == p:
			unkeyed = ranked(i)
			i--
		}
		var kl *keyedLevel
		if k >= 0 && q.flows.levels[k].priority == p {
			kl = q.flows.levels[k]
			k--
		}
		if !fn(p, unkeyed, kl) {
			return
		}
	}
}

// headAt is head at one level: its FIFO of tasks without a key (unkeyed;
// with tidy, tidied here unless it is level 0) if no keyed task waits
// there, else the member its ring serves next. A caller that keeps a
// source of another level across calls must not have it tidy: that may
// remove a level, which moves the indexes of the levels above it.
func (q *waitQueue) headAt(unkeyed source, kl *keyedLevel, now int64, hold *pauseRequest, tidy bool) source {
	if tidy && !unkeyed.isNone() && !unkeyed.isLevel0() && !q.tidyFront(unkeyed, now) {
		unkeyed = none // emptied: the level is gone
	}
	ready := !unkeyed.isNone() && q.mayLeave(unkeyed, hold)
	if kl == nil {
		if ready {
			return unkeyed
		}
		return none
	}
	cost := 0
	if ready {
		cost = q.weightAt(unkeyed)
	}
	fq := q.pickFlow(kl, cost, now, hold)
	switch {
	case fq == nil && kl.cur == nil && ready:
		return unkeyed // the level's last keyed task left as the ring was served
	case fq == nil:
		return none
	case fq.flow == nil:
		unkeyed.fq = fq
		return unkeyed
	}
	return keyed(fq)
}

// agedHead is head under WithPriorityAging: the front with the highest
// level plus the periods it waited, the older of two that tie (where keyed
// tasks wait at a level, the member its ring serves next stands for it).
// As the order may change when a front completes a period, it arms the
// timer for the next such moment: what dispatch offers the workers while
// it waits is then chosen again.
func (q *waitQueue) agedHead(now int64, hold *pauseRequest) source {
	best, bestLevel := none, 0
	nextPeriod := int64(math.MaxInt64)
	aging := int64(q.aging)
	q.eachLevel(func(priority int, unkeyed source, kl *keyedLevel) bool {
		src := q.headAt(unkeyed, kl, now, hold, false) // tidied above: best must keep its index
		if src.isNone() {
			return true
		}
		since := q.readyAtOf(src)
		periods := (now - since) / aging
		if next := since + (periods+1)*aging; periods < maxAgedLevels && next > since { // not past the clock's end
			nextPeriod = min(nextPeriod, next)
		}
		aged := priority + int(min(periods, maxAgedLevels, int64(math.MaxInt-max(priority, 0)))) // never past MaxInt
		if best.isNone() || aged > bestLevel || aged == bestLevel && q.older(src, best) {
			best, bestLevel = src, aged
		}
		return true
	})
	if !best.isNone() && nextPeriod != math.MaxInt64 {
		q.wakeAt(nextPeriod)
	}
	return best
}

// mayLeave reports whether src's front may leave the queue now: src is not
// empty and no pause (hold) holds its front. A pause does not hold a retry
// that holds its key's slots (see flows.holdsSlots): the tasks of its key
// that the pause's barrier covers may wait for them.
func (q *waitQueue) mayLeave(src source, hold *pauseRequest) bool {
	switch {
	case q.lenAt(src) == 0:
		return false
	case hold == nil:
		return true
	case src.isLevel0():
		return q.popped < hold.barrier
	case src.isKeyed() && q.flows.holdsSlots(src.entry().job):
		return true
	}
	seq, _ := q.orderOf(src)
	return seq < hold.rankedBarrier
}

// older reports whether a's front joined the queue before b's.
func (q *waitQueue) older(a, b source) bool {
	switch {
	case a.isLevel0():
		_, after := q.orderOf(b)
		return after > q.popped
	case b.isLevel0():
		_, after := q.orderOf(a)
		return after <= q.popped
	}
	seqA, _ := q.orderOf(a)
	seqB, _ := q.orderOf(b)
	return seqA < seqB
}

// oldest is the source whose front joined the queue first, or none. It
// looks at every keyed queue's front.
func (q *waitQueue) oldest() source {
	best := none
	if q.tasks.Len() > 0 {
		best = level0
	}
	consider := func(src source) {
		if best.isNone() || q.older(src, best) {
			best = src
		}
	}
	for i := range q.levels {
		consider(ranked(i))
	}
	q.flows.each(func(fq *flowQueue) bool {
		for at := range q.flows.heads(fq) {
			consider(keyedAt(fq, at))
		}
		return true
	})
	return best
}
