package workerpool

import (
	"cmp"
	"slices"
	"time"

	"github.com/gammazero/deque"
)

// A waitQueue is the dispatcher's waiting queue: a FIFO per priority
// level for the tasks without a key, and the keyed tasks' queues (flows).
// Level 0, the level of every plain task, is tasks (with its jobs in
// jobs); the jobs of every other level wait in levels, one FIFO per level.
// Where keyed tasks wait at a level, its FIFO takes its turn among their
// queues (see flows). The dispatcher owns it; no other goroutine touches
// it.
type waitQueue struct {
	clock        clock
	queueTimeout time.Duration  // WithQueueTimeout's; 0: no expiry
	aging        time.Duration  // WithPriorityAging's; 0: no aging
	room         *room          // the pool's room under Block and Reject, which a plain task leaving the queue gives back; nil: no room taken
	counts       *counts        // the pool's: waiting, and the plain tasks it gives up
	sig          *signals       // the pool's: abandoning, and the jobs settled while queued
	obs          *observer      // the pool's: the plain tasks it gives up go to their dead letters
	wakeAt       func(at int64) // arms the dispatcher's one timer (timers.wakeAt): the queue asks it to wake dispatch when a task expires or ages

	// tasks holds level 0, oldest first; a nil entry stands for the next
	// job in jobs. pushed and popped count the entries ever pushed and
	// popped: pauses keep their place in it. Its buffer never shrinks
	// below queueBaseCap, so that bursts that come and go do not
	// allocate. readyAt holds when each entry joined the queue, on the
	// pool's clock, if stamped: its wait counts from then (the jobs of
	// other levels keep theirs in their jobOptions).
	tasks          deque.Deque[func()]
	jobs           deque.Deque[*job]
	readyAt        deque.Deque[int64]
	pushed, popped uint64
	stamped        bool // tasks carry the time they became ready: the queue reads it (clocked), or the hooks do (config.timed)
	clocked        bool // the queue's order or expiry reads the clock: WithPriorityAging or WithQueueTimeout

	// levels hold the queued jobs of the other priority levels, one FIFO
	// per level, highest level first, none empty; ranked counts their
	// entries, and rankedSeq numbers them as they join. spare are emptied
	// levels kept for reuse.
	levels    []*level
	spare     []*level
	ranked    int
	rankedSeq uint64
	heaviest  int // the most weight of a job ever queued: a Resize below it looks for jobs to drop

	// flows holds the keyed tasks (see TaskOption.Key): their keys' state, their
	// queues and the rings that serve them.
	flows flows

	// delta is the change in queued plain tasks that counts.waiting
	// does not show yet: the queue publishes it when dispatch is about to
	// block, and after publishAfter changes while it is busy. So the count
	// costs no atomic operation per task while dispatch is busy, and
	// Status is exact whenever the pool is quiet. With a bound,
	// publishAfter is 1: the count goes down before the room it frees is
	// given back, so Status never shows more waiting tasks than the bound.
	delta        int64
	changes      int
	publishAfter int

	// settledIn is the number of settled jobs still in the queue, as of
	// the last count (see inQueue), less those that left its fronts since;
	// settlesSeen is sig.queuedSettles at that count.
	settledIn   int
	settlesSeen uint64
}

// A source names one FIFO of the queue: level 0, a level in levels (by
// index), or a keyed queue (fq). fq is also set on a FIFO of tasks without
// a key that a level's ring chose: its stand-in there, which the start
// charges (see started). For a keyed queue, at is the index of the entry
// the source stands for: 0, its front, or one that retries at its front
// hide (see flows.heads), which expiry and DropOldest look at too.
type source struct {
	i  int
	fq *flowQueue
	at int
}

var (
	level0 = source{i: -1}
	none   = source{i: -2}
)

// keyedIndex is the i of a keyed queue's source.
const keyedIndex = -3

// ranked is the source of levels[i].
func ranked(i int) source { return source{i: i} }

// keyed is the source of a keyed queue.
func keyed(fq *flowQueue) source { return source{i: keyedIndex, fq: fq} }

// keyedAt is the source of a keyed queue's entry at index at.
func keyedAt(fq *flowQueue, at int) source { return source{i: keyedIndex, fq: fq, at: at} }

// entry is a keyed source's entry.
func (s source) entry() flowEntry { return s.fq.entries.At(s.at) }

func (s source) isLevel0() bool { return s.i == level0.i }
func (s source) isKeyed() bool  { return s.i == keyedIndex }
func (s source) isNone() bool   { return s.i == none.i }

// A level is the FIFO of the queued jobs of one priority level other than
// 0. The queue removes a level once it is empty.
type level struct {
	priority int
	jobs     deque.Deque[*job]
}

func (l *level) rank() int { return l.priority }

// levelIndex finds priority in levels, sorted by priority: the index of its
// level, or where that level goes, and whether it is there. It serves the
// ranked levels here and the keyed levels of flows.go.
func levelIndex[L interface{ rank() int }](levels []L, priority int) (int, bool) {
	return slices.BinarySearchFunc(levels, priority, func(l L, p int) int { return cmp.Compare(l.rank(), p) })
}

// queueBaseCap is the size below which the queue's buffer never shrinks
// (8 KiB, allocated when the first task waits): a burst of up to that many
// waiting tasks, such as a DoBatch of 1000, costs no allocation once the
// buffer exists.
const queueBaseCap = 1024

// publishEvery bounds how many queue changes a busy dispatcher makes
// without publishing delta, in a pool without a bound.
const publishEvery = 64

// maxSpareLevels bounds the emptied levels kept for reuse: while no more
// levels than that come and go, Go with Priority allocates nothing more
// than Go.
const maxSpareLevels = 64

// maxAgedLevels caps the periods agedHead counts, so that the next period's
// moment is always on the clock.
const maxAgedLevels = 1 << 30

func (q *waitQueue) init(sh shared, wakeAt func(at int64)) {
	cfg := sh.cfg
	q.clock, q.queueTimeout, q.aging = sh.clock, cfg.queueTimeout, cfg.aging
	if cfg.roomed {
		q.room = sh.room
	}
	q.counts, q.sig, q.obs, q.wakeAt = sh.counts, sh.sig, sh.obs, wakeAt
	q.clocked = cfg.aging > 0 || cfg.queueTimeout > 0
	q.stamped = q.clocked || cfg.timed
	q.publishAfter = publishEvery
	if cfg.bounded {
		q.publishAfter = 1
	}
	q.tasks.SetBaseCap(queueBaseCap)
	q.flows.init(sh.sig, &sh.counts.keys, sh.obs, cfg.keyLimit, cfg.keyWeight)
}

// wantsWake reports whether dispatch must wake when a queued job settles,
// or abandoning begins, so as not to offer a job that must not start:
// while jobs are queued. (A plain task offered as abandoning begins is
// given up by the worker that takes it.)
func (q *waitQueue) wantsWake() bool {
	return q.jobs.Len() > 0 || q.ranked > 0 || q.flows.queued > 0
}

// len is the number of entries in the queue, settled jobs among them.
func (q *waitQueue) len() int {
	return q.tasks.Len() + q.ranked + q.flows.queued
}

// push queues a plain task at the back of level 0, stamped with the time
// it joined, if tasks carry it.
func (q *waitQueue) push(task func()) {
	q.pushReady(task, readyNow)
	q.changeWaiting(1)
}

// onlyPlain reports whether every queued task is a plain task of level 0:
// no job, no other level, no key. Dispatch may then move them to the lane.
func (q *waitQueue) onlyPlain() bool {
	return q.ranked == 0 && q.flows.queued == 0 && q.jobs.Len() == 0
}

// popPlain pops level 0's front, a plain task (see onlyPlain), with when
// it became ready (readyNow if tasks do not carry it), for the lane. It
// keeps its place in the bound, which the lane gives back as a worker
// takes it, and, under a bound, its count as waiting (see lane.counted);
// otherwise the lane counts it from now on.
func (q *waitQueue) popPlain() (task func(), readyAt int64) {
	task, readyAt = q.tasks.PopFront(), readyNow
	if q.room == nil {
		q.changeWaiting(-1)
	}
	q.popped++
	if q.stamped {
		readyAt = q.readyAt.PopFront()
	}
	return task, readyAt
}

// takeBack queues a task dispatch takes back from the lane, which became
// ready at readyAt (readyNow: as it is queued) on the pool's clock. Under
// a bound it counts as waiting already (see lane.counted).
func (q *waitQueue) takeBack(task func(), readyAt int64) {
	q.pushReady(task, readyAt)
	if q.room == nil {
		q.changeWaiting(1)
	}
}

// pushReady puts a plain task that became ready at readyAt at the back of
// level 0; the callers count it as waiting.
func (q *waitQueue) pushReady(task func(), readyAt int64) {
	q.tasks.PushBack(task)
	q.pushed++
	if q.stamped {
		if readyAt == readyNow {
			readyAt = q.stampNow()
		}
		q.readyAt.PushBack(readyAt)
	}
}

// pushJob queues j at the back of its level (level 0: behind a nil entry
// in tasks); the move to queued counts it as waiting. It reports false,
// queuing nothing, if the job was settled on its way.
func (q *waitQueue) pushJob(j *job) bool {
	if !j.enqueue() {
		return false
	}
	q.heaviest = max(q.heaviest, j.weight())
	var readyAt int64
	if q.stamped {
		readyAt = q.stampNow()
	}
	switch {
	case j.flow() != nil:
		q.flows.push(j, flowEntry{job: j, seq: q.rankedSeq, after: q.pushed, readyAt: readyAt})
		q.rankedSeq++
		return true
	case j.priority() != 0:
		j.opts.readyAt = readyAt
		q.pushRanked(j)
		return true
	}
	q.tasks.PushBack(nil)
	q.jobs.PushBack(j)
	q.pushed++
	if q.stamped {
		q.readyAt.PushBack(readyAt)
	}
	return true
}

// pushRanked queues j, whose priority is not 0, at the back of its level.
// seq orders it among the jobs of other levels and keyed ones, and after
// places it among level 0's entries, so that a pause's barrier and DropOldest see the order
// in which all tasks joined the queue.
func (q *waitQueue) pushRanked(j *job) {
	j.opts.seq, j.opts.after = q.rankedSeq, q.pushed
	q.rankedSeq++
	i, found := levelIndex(q.levels, j.opts.priority)
	if !found {
		q.levels = slices.Insert(q.levels, i, q.newLevel(j.opts.priority))
	}
	q.levels[i].jobs.PushBack(j)
	q.ranked++
}

// stampNow reads the clock for an entry joining the queue, and arms the
// timer for its expiry (a later entry never expires before an earlier one,
// so the timer keeps the earliest).
func (q *waitQueue) stampNow() int64 {
	now := q.clock.now()
	if q.queueTimeout > 0 {
		q.wakeAt(later(now, int64(q.queueTimeout)))
	}
	return now
}

// atOnce marks w, a task handed to a worker as it becomes ready, as one
// that waited nothing (see readyNow), if tasks carry when they became
// ready; if the hand-off fails, push or pushJob stamps it after all.
func (q *waitQueue) atOnce(w work) work {
	if q.stamped {
		w.readyAt = readyNow
	}
	return w
}

// pop removes level 0's front entry. A plain task stops counting as
// waiting and gives back its place in the queue (see WorkerPool.room)
// here; a job does both as it leaves the queued state: started by the
// worker that took it, or settled. Dispatch must not touch a job once it
// is in a worker's hands.
func (q *waitQueue) pop() {
	if q.tasks.PopFront() == nil {
		q.jobs.PopFront()
	} else {
		q.changeWaiting(-1)
		if q.room != nil {
			q.room.giveBack(1, q.sig)
		}
	}
	q.popped++
	if q.stamped {
		q.readyAt.PopFront()
	}
}

// started removes src's front entry, which a worker took, and charges
// its weight to the ring member that chose it, if one did (see
// waitQueue.pickFlow).
func (q *waitQueue) started(src source, weight int) {
	if src.fq != nil {
		src.fq.deficit -= weight
	}
	q.popAt(src)
}

// popAt removes the front entry of src (see pop for level 0).
func (q *waitQueue) popAt(src source) {
	switch {
	case src.isLevel0():
		q.pop()
		return
	case src.isKeyed():
		q.flows.removeAt(src.fq, src.at)
		return
	}
	l := q.levels[src.i]
	l.jobs.PopFront()
	q.ranked--
	if l.jobs.Len() == 0 {
		q.levels = slices.Delete(q.levels, src.i, src.i+1)
		if len(q.spare) < maxSpareLevels {
			q.spare = append(q.spare, l)
		}
	}
}

// dropFront removes src's front entry, which will never start, and lets go
// of it if it is a job: the one way a job leaves the queue other than to a
// worker.
func (q *waitQueue) dropFront(src source) {
	j := q.frontJob(src)
	q.popAt(src)
	if j != nil {
		if q.settledIn > 0 && j.settled() {
			q.settledIn--
		}
		j.letGo()
	}
}

// newLevel returns an empty level for priority, reusing a spare one (and
// its buffer) if there is one, so that a level that empties and fills again
// costs no allocation.
func (q *waitQueue) newLevel(priority int) *level {
	if n := len(q.spare); n > 0 {
		l := q.spare[n-1]
		q.spare = q.spare[:n-1]
		l.priority = priority
		return l
	}
	return &level{priority: priority}
}

// workAt is the front entry of src as work.
func (q *waitQueue) workAt(src source) work {
	var w work
	switch {
	case src.isKeyed():
		w.job = src.entry().job
	case !src.isLevel0():
		w.job = q.levels[src.i].jobs.Front()
	case q.tasks.Front() == nil:
		w.job = q.jobs.Front()
	default:
		w.fn = q.tasks.Front()
	}
	if q.stamped {
		w.readyAt = q.readyAtOf(src)
	}
	return w
}

// frontJob is src's front job, or nil if it is a plain task.
func (q *waitQueue) frontJob(src source) *job {
	switch {
	case src.isKeyed():
		return src.entry().job
	case !src.isLevel0():
		return q.levels[src.i].jobs.Front()
	}
	if q.tasks.Front() == nil {
		return q.jobs.Front()
	}
	return nil
}

// readyAtOf is when src's front entry became ready (stamped only).
func (q *waitQueue) readyAtOf(src source) int64 {
	switch {
	case src.isLevel0():
		return q.readyAt.Front()
	case src.isKeyed():
		return src.entry().readyAt
	}
	return q.levels[src.i].jobs.Front().opts.readyAt
}

// orderOf is where src's front, not at level 0, stands among the queued
// tasks: its seq and after (see jobOptions).
func (q *waitQueue) orderOf(src source) (seq, after uint64) {
	if src.isKeyed() {
		e := src.entry()
		return e.seq, e.after
	}
	o := q.levels[src.i].jobs.Front().opts
	return o.seq, o.after
}

// weightAt is the weight of src's front.
func (q *waitQueue) weightAt(src source) int {
	if j := q.frontJob(src); j != nil {
		return j.weight()
	}
	return 1
}

// lenAt is the number of entries in src.
func (q *waitQueue) lenAt(src source) int {
	switch {
	case src.isLevel0():
		return q.tasks.Len()
	case src.isKeyed():
		return src.fq.entries.Len()
	}
	return q.levels[src.i].jobs.Len()
}

// rankedBefore reports whether a job of another level than 0, or a keyed
// one, that joined the queue before req's barrier still waits. A keyed
// queue is in the order its entries joined but for the retries that hold
// their key's slots, at its front (see flows.push): it looks past them.
func (q *waitQueue) rankedBefore(req *pauseRequest) bool {
	for _, l := range q.levels {
		if l.jobs.Front().opts.seq < req.rankedBarrier {
			return true
		}
	}
	found := false
	q.flows.each(func(fq *flowQueue) bool {
		for e := range fq.entries.Iter() {
			if found = e.seq < req.rankedBarrier; found || !q.flows.holdsSlots(e.job) {
				break
			}
		}
		return !found
	})
	return found
}

// now is the pool's clock if the queue reads it (clocked), else 0.
func (q *waitQueue) now() int64 {
	if q.clocked {
		return q.clock.now()
	}
	return 0
}

// waitingNow is the exact number of waiting tasks, as dispatch sees it.
func (q *waitQueue) waitingNow() int64 {
	return q.counts.waiting.Load() + q.delta
}

// inQueue is how many tasks wait in the queue, for DropOldest's room: its
// entries less the settled jobs among them (canceled ones stay until they
// reach a front). The waiting count will not do: it holds a job handed to
// a worker until the worker starts it. The settled entries are counted
// again, over the whole queue, only when a queued job settled since the
// last count.
func (q *waitQueue) inQueue() int64 {
	if n := q.sig.queuedSettles.Load(); n != q.settlesSeen {
		q.settlesSeen = n
		q.settledIn = q.countSettled()
	}
	return int64(q.len() - q.settledIn)
}

// countSettled counts the settled jobs in the queue.
func (q *waitQueue) countSettled() int {
	n := 0
	for j := range q.jobs.Iter() {
		if j.settled() {
			n++
		}
	}
	for _, l := range q.levels {
		for j := range l.jobs.Iter() {
			if j.settled() {
				n++
			}
		}
	}
	q.flows.each(func(fq *flowQueue) bool {
		for e := range fq.entries.Iter() {
			if e.job.settled() {
				n++
			}
		}
		return true
	})
	return n
}

// publish adds delta to p.counts.waiting. Dispatch calls it when it is
// about to block, and the queue every publishAfter changes in between.
func (q *waitQueue) publish() {
	q.counts.waiting.Add(q.delta)
	q.delta, q.changes = 0, 0
}

// changeWaiting records a change in the number of queued plain tasks.
func (q *waitQueue) changeWaiting(n int64) {
	q.delta += n
	if q.changes++; q.changes == q.publishAfter {
		q.publish()
	}
}
