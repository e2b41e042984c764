package workerpool

import (
	"math"
	"slices"
)

// The keys' rings (see flows): how a key is chosen next. Each priority
// level with keyed tasks queued serves its keys' queues by deficit round
// robin (pickFlow), each getting its weight in slots per round, and a
// queue that its key's limit or a pause holds back leaves the ring until it
// may start again.

// push queues the keyed job j at the back of its key's queue of its
// level (a retry that holds its key's slots at the front: it continues
// the run that holds them, see holdsSlots).
func (f *flows) push(j *job, e flowEntry) {
	fq := f.queueOf(j.opts.flow, j.opts.priority)
	held := f.holdsSlots(j)
	if held {
		fq.entries.PushFront(e)
	} else {
		fq.entries.PushBack(e)
	}
	fq.level.queued++
	f.queued++
	if fq.blocked {
		f.blocked++
	}
	if held && fq.paused != 0 {
		f.unpaused(fq) // a pause does not hold it
	}
	if fq.prev == nil && fq.paused == 0 && (!fq.blocked || held) {
		f.enterRing(fq) // new, or a retry that holds its key's slots now heads it
	}
}

// queueOf is fl's queue at priority, made if it has none.
func (f *flows) queueOf(fl *flow, priority int) *flowQueue {
	for _, fq := range fl.queues {
		if fq.level.priority == priority {
			return fq
		}
	}
	fq := f.spare.queue()
	fq.flow, fq.level = fl, f.level(priority)
	fl.queues = append(fl.queues, fq)
	return fq
}

// level is the keyed level of priority, made if there is none.
func (f *flows) level(priority int) *keyedLevel {
	i, found := levelIndex(f.levels, priority)
	if found {
		return f.levels[i]
	}
	l := f.spare.level()
	l.priority = priority
	l.unkeyed.level = l
	l.insert(&l.unkeyed)
	f.levels = slices.Insert(f.levels, i, l)
	return l
}

// enterRing puts fq at the back of its level's ring: it is served after
// every member there, with no credit.
func (f *flows) enterRing(fq *flowQueue) {
	if fq.blocked {
		fq.blocked = false
		f.blocked -= fq.entries.Len()
	}
	fq.deficit, fq.turn = 0, false
	fq.level.insert(fq)
}

// block takes fq, whose front its key's limit holds back, out of the ring.
func (f *flows) block(fq *flowQueue) {
	fq.level.remove(fq)
	fq.blocked = true
	f.blocked += fq.entries.Len()
}

// pause takes fq, whose front a pause holds, out of the ring until the
// pause ends (see unpause).
func (f *flows) pause(fq *flowQueue) {
	fq.level.remove(fq)
	f.paused = append(f.paused, fq)
	fq.paused = len(f.paused)
}

// unpause puts the queues a pause held back in their rings, as the active
// pause ends.
func (f *flows) unpause() {
	for i, fq := range f.paused {
		fq.paused = 0
		f.enterRing(fq)
		f.paused[i] = nil
	}
	f.paused = f.paused[:0]
}

// unpaused takes fq out of the queues a pause holds: it emptied, or a
// retry that a pause does not hold now heads it.
func (f *flows) unpaused(fq *flowQueue) {
	i, last := fq.paused-1, len(f.paused)-1
	f.paused[i] = f.paused[last]
	f.paused[i].paused = i + 1
	f.paused[last] = nil
	f.paused = f.paused[:last]
	fq.paused = 0
}

// unblock puts back in their rings the queues of fl that its key's limit
// held back, now that it gave back slots.
func (f *flows) unblock(fl *flow) {
	for _, fq := range fl.queues {
		if fq.blocked && f.keyAllows(fq) {
			f.enterRing(fq)
		}
	}
}

// skipRounds gives each member of l that has a front to pay for, none of
// them in its turn, the credit of the rounds that would pass before the
// first of them could pay: as many as it needs least, less one. So a
// front that weighs far more than its member's weight (a Weight of
// thousands on a key of weight 1) costs pick one more round of the ring,
// not one round per slot, in the order the rounds would give. The credit
// never passes a member's front's cost.
func (f *flows) skipRounds(l *keyedLevel, unkeyedCost int) {
	rounds := math.MaxInt
	f.eachCost(l, unkeyedCost, func(fq *flowQueue, cost int) {
		rounds = min(rounds, roundsToPay(cost-fq.deficit, fq.weight()))
	})
	if rounds <= 1 || rounds == math.MaxInt {
		return
	}
	f.eachCost(l, unkeyedCost, func(fq *flowQueue, _ int) {
		fq.deficit += (rounds - 1) * fq.weight()
	})
}

// eachCost calls fn for each member of l with a front to pay for, with
// its front's cost: the stand-in while unkeyedCost is not 0.
func (f *flows) eachCost(l *keyedLevel, unkeyedCost int, fn func(fq *flowQueue, cost int)) {
	fq := l.cur
	for range l.members {
		switch {
		case fq.flow != nil:
			fn(fq, fq.entries.Front().job.weight())
		case unkeyedCost > 0:
			fn(fq, unkeyedCost)
		}
		fq = fq.next
	}
}

// roundsToPay is the number of rounds of credit w that pay for need, at
// least 0, without overflow.
func roundsToPay(need, w int) int {
	if need <= 0 {
		return 0
	}
	n := need / w
	if need%w != 0 {
		n++
	}
	return n
}

// pass passes the turn over cur, and reports whether every member has
// been passed over since one could be served: none can.
func (f *flows) pass(l *keyedLevel, passed *int) bool {
	l.next()
	*passed++
	return *passed >= l.members
}

// weight is the member's share: its key's weight, 1 for the stand-in.
func (fq *flowQueue) weight() int {
	if fq.flow == nil {
		return 1
	}
	return fq.flow.weight
}

// heads is how many entries at fq's front wait as fronts do: its front,
// and, behind retries there that hold their key's slots (see push), which
// came due after them, those retries and the first entry after them. A
// queue is in the order its entries became ready but for such retries, so
// the oldest entry, and the first to expire, is one of these: expiry and
// DropOldest look at each.
func (f *flows) heads(fq *flowQueue) int {
	n := fq.entries.Len()
	if f.limit == 0 || n < 2 || !f.holdsSlots(fq.entries.Front().job) {
		return min(n, 1)
	}
	i := 1
	for i < n && f.holdsSlots(fq.entries.At(i).job) {
		i++
	}
	return min(i+1, n)
}

// removeAt removes fq's entry at i, one of its heads, which will never
// start (see popFront for its front).
func (f *flows) removeAt(fq *flowQueue, i int) flowEntry {
	if i == 0 {
		return f.popFront(fq)
	}
	e := fq.entries.Remove(i) // never its last: its front stays
	fq.level.queued--
	f.queued--
	if fq.blocked {
		f.blocked--
	}
	return e
}

// popFront removes fq's front entry, which started or will never start,
// and lets go of the queue once it is empty.
func (f *flows) popFront(fq *flowQueue) flowEntry {
	e := fq.entries.PopFront()
	fq.level.queued--
	f.queued--
	if fq.blocked {
		f.blocked--
	}
	if fq.entries.Len() == 0 {
		f.drop(fq)
	} else if fq.blocked && f.keyAllows(fq) {
		f.enterRing(fq) // the front its key's limit held back left, and the next fits
	}
	return e
}

// drop lets go of fq, which is empty: out of its ring, its flow and, if it
// was the last queue of its level, the level too; and its flow, if that
// has no member left nor another queue (its last tasks settled).
func (f *flows) drop(fq *flowQueue) {
	l, fl := fq.level, fq.flow
	if fq.prev != nil {
		l.remove(fq)
	}
	if fq.paused != 0 {
		f.unpaused(fq)
	}
	i := slices.Index(fl.queues, fq)
	fl.queues = slices.Delete(fl.queues, i, i+1)
	f.spare.putQueue(fq)
	if l.queued == 0 {
		i, _ := levelIndex(f.levels, l.priority)
		f.levels = slices.Delete(f.levels, i, i+1)
		f.spare.putLevel(l)
	}
	f.forgetIfDone(fl)
}

// each calls fn for every keyed queue, stopping when fn returns false.
// Its cost is the number of keys: only the paths that look at every
// front (a pause's barrier, expiry, aging, DropOldest, a stop) use it.
func (f *flows) each(fn func(fq *flowQueue) bool) {
	for _, fl := range f.byKey {
		for _, fq := range fl.queues {
			if !fn(fq) {
				return
			}
		}
	}
}

// queues is every keyed queue, in a buffer valid until the next call, for
// a caller that may empty them as it goes.
func (f *flows) queues() []*flowQueue {
	f.scratch = f.scratch[:0]
	f.each(func(fq *flowQueue) bool {
		f.scratch = append(f.scratch, fq)
		return true
	})
	return f.scratch
}

// The ring of a level: a circular list through prev and next.

// insert puts fq at the back of the ring: just before cur.
func (l *keyedLevel) insert(fq *flowQueue) {
	l.members++
	if l.cur == nil {
		fq.prev, fq.next = fq, fq
		l.cur = fq
		return
	}
	fq.prev, fq.next = l.cur.prev, l.cur
	l.cur.prev.next = fq
	l.cur.prev = fq
}

// remove takes fq out of the ring; if it was cur, the next member is.
func (l *keyedLevel) remove(fq *flowQueue) {
	l.members--
	if fq.next == fq {
		l.cur = nil
	} else {
		fq.prev.next, fq.next.prev = fq.next, fq.prev
		if l.cur == fq {
			l.cur = fq.next
		}
	}
	fq.prev, fq.next = nil, nil
	fq.deficit, fq.turn = 0, false
}

// next passes the turn to the next member.
func (l *keyedLevel) next() { l.cur = l.cur.next }

func (s *spares) level() *keyedLevel {
	return takeSpare(&s.levels)
}

// pickFlow serves l's ring by deficit round robin and returns the member
// whose front starts next, or nil if none may: each member, as its turn
// comes, gets its weight in credit, and keeps the turn while its front
// costs (weighs) no more than its credit. On its way it drops the settled
// and expired fronts of keyed queues (tidy), takes out of the ring the
// queues that emptied, that their key's limit holds back, or whose front
// a pause (hold) holds, and passes over, with no credit, the stand-in
// while unkeyedCost is 0 (no task without a key may leave). Once every
// member fell short of its front in turn, it gives them the rounds in
// which none could be served at once (see skipRounds).
func (q *waitQueue) pickFlow(l *keyedLevel, unkeyedCost int, now int64, hold *pauseRequest) *flowQueue {
	for passed, short := 0, 0; l.cur != nil; {
		fq, cost := l.cur, unkeyedCost
		switch {
		case fq.flow == nil && cost == 0:
			fq.deficit, fq.turn = 0, false
			if q.flows.pass(l, &passed) {
				return nil
			}
			continue
		case fq.flow != nil && !q.tidyFront(keyed(fq), now):
			continue // emptied: it left the ring
		case fq.flow != nil && !q.flows.keyAllows(fq):
			q.flows.block(fq)
			continue
		case fq.flow != nil && !q.mayLeave(keyed(fq), hold):
			q.flows.pause(fq)
			continue
		case fq.flow != nil:
			cost = fq.entries.Front().job.weight()
		}
		passed = 0
		if !fq.turn {
			fq.deficit += fq.weight()
			fq.turn = true
		}
		if fq.deficit >= cost {
			return fq
		}
		fq.turn = false
		l.next()
		if short++; short >= l.members {
			q.flows.skipRounds(l, unkeyedCost)
			short = 0
		}
	}
	return nil
}
