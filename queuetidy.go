package workerpool

import "github.com/gammazero/deque"

// Keeping the waiting queue tidy and giving tasks up: settled jobs leave its
// fronts, tasks that waited past WithQueueTimeout expire, DropOldest drops
// the oldest, a Resize drops what no longer fits, and a stop abandons the
// rest in order.

// tidy drops the jobs that must not start, and the tasks that expired, at
// the fronts of the queue.
func (q *waitQueue) tidy() {
	if q.ranked == 0 && q.flows.queued == 0 && !q.clocked {
		q.dropSettledFront()
		return
	}
	q.tidyFronts(q.now())
}

// tidyFronts drops, at the front of every level and every keyed queue,
// the jobs that must not start (see dropSettledFront) and, with
// WithQueueTimeout, the tasks that have waited their time, and removes the
// levels and queues it empties.
func (q *waitQueue) tidyFronts(now int64) {
	q.tidyLevel0(now)
	for i := len(q.levels) - 1; i >= 0; i-- { // so that removing level i moves none still to tidy
		q.tidyFront(ranked(i), now)
	}
	if q.flows.queued > 0 {
		for _, fq := range q.flows.queues() {
			q.tidyFront(keyed(fq), now)
		}
	}
}

// tidyKeyedFronts is tidyFronts for the keyed queues alone.
func (q *waitQueue) tidyKeyedFronts() {
	if q.flows.queued == 0 {
		return
	}
	now := q.now()
	for _, fq := range q.flows.queues() {
		q.tidyFront(keyed(fq), now)
	}
}

// dropSettledFront pops the jobs at the front of level 0 that must not
// start, so that they never take a worker: those already settled (canceled
// by their caller) and those it settles now, whose context is done. A job
// further back that is canceled stops counting as waiting at once, and
// leaves the queue when it reaches the front. (The jobs a stop abandons
// stay: it gives up the whole queue in order, see abandonAll.)
func (q *waitQueue) dropSettledFront() {
	for q.tasks.Len() > 0 && q.tasks.Front() == nil {
		if j := q.jobs.Front(); !j.settled() && !j.settleIfCanceled() {
			return
		}
		q.dropFront(level0)
	}
}

// tidyLevel0 is tidyFronts for level 0.
func (q *waitQueue) tidyLevel0(now int64) {
	for q.dropSettledFront(); q.expiredAt(level0, now); q.dropSettledFront() {
		q.giveUpFront(level0, jobExpired, errExpired)
	}
}

// tidyFront is tidyFronts for one level other than 0, or one keyed
// queue. It reports false if it emptied it, which is then gone.
func (q *waitQueue) tidyFront(src source, now int64) bool {
	for {
		last := q.lenAt(src) == 1
		if !q.tidyEntry(src, now) {
			if src.isKeyed() {
				q.tidyHidden(src.fq, now)
			}
			return true
		}
		if last {
			return false
		}
	}
}

// tidyEntry drops src's entry, and reports true, if it must not start (it
// settled, or its context is done) or it expired.
func (q *waitQueue) tidyEntry(src source, now int64) bool {
	switch j := q.frontJob(src); {
	case j.settled() || j.settleIfCanceled():
		q.dropFront(src)
	case q.expiredAt(src, now):
		q.giveUpFront(src, jobExpired, errExpired)
	default:
		return false
	}
	return true
}

// tidyHidden is tidyFront for the entries of a keyed queue that the
// retries at its front hide (see flows.heads): it drops those that must
// not start or that expired, as if each were a front. The queue keeps its
// front.
func (q *waitQueue) tidyHidden(fq *flowQueue, now int64) {
	for at := 1; at < q.flows.heads(fq); at++ {
		if q.tidyEntry(keyedAt(fq, at), now) {
			at-- // the next entry took its index
		}
	}
}

// expiredAt reports whether src's front has waited WithQueueTimeout's d at
// now. Once abandoning has begun none does: the stop gives up every task
// left, in queue order (see abandonAll).
func (q *waitQueue) expiredAt(src source, now int64) bool {
	return q.queueTimeout > 0 && q.lenAt(src) > 0 && now-q.readyAtOf(src) >= int64(q.queueTimeout) &&
		!q.sig.abandonBegun.Load()
}

// giveUpFront removes src's front task, which will never run: a plain task
// is counted as settled to the state to and goes to the dead-letter handler
// with reason; a job settles so (unless it settled already), and its owner
// learns reason.
func (q *waitQueue) giveUpFront(src source, to uint32, reason error) {
	j := q.frontJob(src)
	if j == nil {
		task := q.tasks.Front()
		q.pop()
		q.counts.settled.count(to)
		q.obs.giveUpPlain(task, reason)
		return
	}
	j.settle(to, reason)
	q.dropFront(src)
}

// nextExpiry is when the oldest queued task expires, if the pool expires
// tasks and one waits.
func (q *waitQueue) nextExpiry() (int64, bool) {
	if q.queueTimeout <= 0 || q.len() == 0 {
		return 0, false
	}
	first, found := int64(0), false
	if q.tasks.Len() > 0 {
		first, found = q.readyAt.Front(), true
	}
	for _, l := range q.levels {
		if at := l.jobs.Front().opts.readyAt; !found || at < first {
			first, found = at, true
		}
	}
	q.flows.each(func(fq *flowQueue) bool {
		for i := range q.flows.heads(fq) {
			if at := fq.entries.At(i).readyAt; !found || at < first {
				first, found = at, true
			}
		}
		return true
	})
	return later(first, int64(q.queueTimeout)), true
}

// dropTooHeavy drops, with ErrTooHeavy, the queued jobs that weigh more
// than size, after a Resize made the pool smaller. They stay in the queue,
// settled, until they reach its front.
func (q *waitQueue) dropTooHeavy(size int) {
	if q.heaviest <= size {
		return
	}
	for j := range q.jobs.Iter() {
		j.dropIfHeavierThan(size)
	}
	for _, l := range q.levels {
		for j := range l.jobs.Iter() {
			j.dropIfHeavierThan(size)
		}
	}
	q.flows.each(func(fq *flowQueue) bool {
		for e := range fq.entries.Iter() {
			e.job.dropIfHeavierThan(size)
		}
		return true
	})
}

// abandonAll gives up what is left in the queue in queue order (see
// Hooks.DeadLetter): the order in which head would hand the tasks out were
// each to end before the next is chosen, with no pause, key limit or
// expiry holding any back (a stop ends every pause first). It releases
// each closure as it goes: a plain task goes to the dead-letter handler
// with ErrStopped; each job settles abandoned, and its caller learns
// ErrStopped, or canceled if its own context ended first; a settled job
// is only let go, without a turn, as head drops it.
func (q *waitQueue) abandonAll() {
	q.flows.liftLimit()
	for {
		src := q.head(nil) // none only once no task is left: nothing holds one back
		if src.isNone() {
			break
		}
		q.abandonFront(src)
	}
	q.flows.stopped()
	q.levels, q.spare, q.ranked = nil, nil, 0
	q.tasks, q.jobs, q.readyAt = deque.Deque[func()]{}, deque.Deque[*job]{}, deque.Deque[int64]{} // free the buffers too
}

// abandonFront gives up src's front, as abandonAll does, and charges its
// weight to the ring member that chose it, as a start would (see started).
func (q *waitQueue) abandonFront(src source) {
	if src.fq != nil {
		src.fq.deficit -= q.weightAt(src)
	}
	j := q.frontJob(src)
	if j == nil {
		q.giveUpFront(src, jobAbandoned, ErrStopped)
		return
	}
	j.abandon()
	q.dropFront(src)
}

// dropToFit drops the oldest waiting tasks while the tasks waiting and
// scheduled fill bound (see dispatcher.makeRoom).
func (q *waitQueue) dropToFit(bound int64) {
	for q.inQueue()+q.counts.scheduled.Load() >= bound && q.dropOldest() {
	}
}

// dropOldest drops the oldest waiting task, and reports false if none was
// left. A plain one goes to the dead-letter handler with errDropped; a job
// settles with errDropped, which its caller learns.
func (q *waitQueue) dropOldest() bool {
	q.tidy()
	src := q.oldest()
	if src.isNone() {
		return false
	}
	q.giveUpFront(src, jobDropped, errDropped)
	return true
}
