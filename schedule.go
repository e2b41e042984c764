package workerpool

import (
	"cmp"
	"math"
	"slices"
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
	job *job   // a scheduled job, or nil for a plain task
	fn  func() // a scheduled plain task (see dispatcher.acceptDelayed)
}

func (e timerEntry) before(o timerEntry) bool {
	return e.due < o.due || e.due == o.due && e.seq < o.seq
}

// push adds e. The heap doubles when it is full, where append would grow
// a large slice by a quarter: a burst of n delayed tasks then allocates
// about 2n entries in all rather than 5n.
func (h *timerHeap) push(e timerEntry) {
	if s := *h; len(s) == cap(s) {
		grown := make(timerHeap, len(s), max(2*cap(s), 64))
		copy(grown, s)
		*h = grown
	}
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
	h.shrink()
	return first
}

// keptEntries is the capacity the timer heap keeps however empty it gets
// (640 KiB): a pool that schedules bursts of up to that many tasks reuses
// one array, and one that scheduled many more gives the rest back.
const keptEntries = 1 << 14

// shrink halves the heap's array, as often as three quarters of it lie
// unused, down to keptEntries, so that a large burst of delayed tasks does
// not hold its memory after it has run. Halving only at a quarter full
// keeps push and pop amortized O(1).
func (h *timerHeap) shrink() {
	s, c := *h, cap(*h)
	for c > keptEntries && len(s) <= c/4 {
		c /= 2
	}
	if c < cap(s) {
		*h = append(make(timerHeap, 0, c), s...)
	}
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

// timers is the dispatcher's part for time: the heap of the jobs not due
// yet (a delay, a retry), the earliest first, settled ones included until
// they are swept or come due, and the dispatcher's one timer, which wakes
// it for the earliest of what it waits for in time: the next scheduled job
// coming due, the oldest queued task expiring, the next aging period, the
// next token of the rate limit and the next boundary of the size schedule.
// Each asks for its moment with wakeAt; when the timer fires, the
// dispatcher does what is due and arms it for what is left (see
// dispatcher.timerFired). A timer that fires for nothing (its job was
// canceled, say) only re-arms. The dispatcher owns it.
type timers struct {
	clock clock // the pool's
	heap  timerHeap
	seq   uint64 // numbers the jobs as they are scheduled, which orders those due at the same moment
	// timer is made on first use, and armed for at, on the pool's clock,
	// while armed is set.
	timer    *time.Timer
	at       int64
	armed    bool
	heaviest int // the most weight of a job ever scheduled: a Resize below it looks for jobs to drop
}

// wakeAt arms the timer for at, on the pool's clock, unless it is armed
// for that moment or an earlier one.
func (t *timers) wakeAt(at int64) {
	if t.armed && t.at <= at {
		return
	}
	t.armed, t.at = true, at
	wait := time.Duration(at - t.clock.now())
	if t.timer == nil {
		t.timer = time.NewTimer(wait)
		return
	}
	t.timer.Reset(wait)
}

// C is the channel dispatch waits on for the timer: nil (never ready)
// while it is not armed.
func (t *timers) C() <-chan time.Time {
	if !t.armed {
		return nil
	}
	return t.timer.C
}

// stop disarms the timer, as dispatch stops.
func (t *timers) stop() {
	if t.timer != nil {
		t.timer.Stop()
		t.armed = false
	}
}

// pushPlain puts a plain task due at due in the heap, and arms the timer
// for it: it needs no job, as nothing but time and a stop can end its
// wait.
func (t *timers) pushPlain(task func(), due int64) {
	t.seq++
	t.heap.push(timerEntry{due: due, seq: t.seq, fn: task})
	t.wakeAt(due)
}

// push puts a scheduled job in the heap and arms the timer for it.
func (t *timers) push(j *job) {
	t.seq++
	t.heaviest = max(t.heaviest, j.weight())
	due := j.due()
	t.heap.push(timerEntry{due: due, seq: t.seq, job: j})
	t.wakeAt(due)
}

// atRest reports whether the timer is not armed: nothing waits in time.
func (t *timers) atRest() bool { return !t.armed }

// wantsWake reports whether dispatch must wake when a scheduled job
// settles, to sweep it out of the heap: while the heap holds jobs.
func (t *timers) wantsWake() bool { return len(t.heap) > 0 }

// next is when the earliest job in the heap is due, if there is one.
func (t *timers) next() (int64, bool) {
	if len(t.heap) == 0 {
		return 0, false
	}
	return t.heap[0].due, true
}

// sweep drops every settled job from the heap.
func (t *timers) sweep() {
	live := t.heap[:0]
	for _, e := range t.heap {
		if e.job == nil || e.job.isScheduled() {
			live = append(live, e)
		} else {
			e.job.letGo()
		}
	}
	clear(t.heap[len(live):])
	t.heap = live
	t.heap.init()
	t.heap.shrink()
}

// dropTooHeavy drops, with ErrTooHeavy, the scheduled jobs that weigh more
// than size, after a Resize made the pool smaller. They stay in the heap,
// settled, until they are swept or come due.
func (t *timers) dropTooHeavy(size int) {
	if t.heaviest <= size {
		return
	}
	for _, e := range t.heap {
		if e.job != nil {
			e.job.dropIfHeavierThan(size)
		}
	}
}

// takeAll empties the heap and returns its entries, settled ones
// included, in the order they come due (see dispatcher.abandonScheduled).
func (t *timers) takeAll() []timerEntry {
	all := t.heap
	slices.SortFunc(all, func(a, b timerEntry) int {
		return cmp.Or(cmp.Compare(a.due, b.due), cmp.Compare(a.seq, b.seq))
	})
	t.heap = nil
	return all
}

// fired reports whether the armed timer fired, without waiting.
func (t *timers) fired() bool {
	select {
	case <-t.timer.C:
		return true
	default:
		return false
	}
}

// firing disarms the timer, which fired: the caller arms it again for
// what is left.
func (t *timers) firing() { t.armed = false }

// mostlySettled reports whether more than half of the heap's jobs are
// settled, of whom scheduled are not: then a sweep is worth its cost.
func (t *timers) mostlySettled(scheduled int64) bool {
	return int64(len(t.heap))-scheduled > int64(len(t.heap))/2
}

// popDue removes and returns the earliest entry if it is due at now.
func (t *timers) popDue(now int64) (timerEntry, bool) {
	if len(t.heap) == 0 || now < t.heap[0].due {
		return timerEntry{}, false
	}
	return t.heap.pop(), true
}

// notDue reports whether the job must wait in the timer heap: it has a due
// time that has not come yet.
func (j *job) notDue() bool {
	due := j.due()
	return due != 0 && j.pool.clock.now() < due
}

// A clock is the pool's clock: it reads the time since New, in
// nanoseconds, on the monotonic clock. Due times and queue times are read
// on it, so a job keeps each in one word. Parts hold it as a value.
type clock struct{ epoch time.Time }

func (c clock) now() int64 { return int64(time.Since(c.epoch)) }

// later is d after t on the pool's clock (d >= 0), or the clock's end if
// that is past it.
func later(t, d int64) int64 {
	if d > math.MaxInt64-t {
		return math.MaxInt64
	}
	return t + d
}
