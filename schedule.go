package workerpool

import (
	"container/heap"
	"time"
)

// A TaskOption changes how the pool schedules one task given to Go, Call or
// Group.Go. Make one with Delay or At; the zero TaskOption changes nothing.
// Options apply in the order given: when two set the same thing, the last
// one wins.
type TaskOption struct {
	due   time.Time // when the task may start; the zero time: at once
	delay time.Duration
	set   bool // due or delay was set (the last of Delay and At wins)
}

// Delay makes a task due d after the call that submits it (Go, Call or
// Group.Go), measured on the clock of that moment: it does not start before
// then. Until it is due it waits in the dispatcher's timer heap, holding no
// worker and no goroutine, and counts in Status.Scheduled. A d of zero or
// less means no delay.
func Delay(d time.Duration) TaskOption {
	return TaskOption{delay: d, set: true}
}

// At makes a task due at t: it does not start before then. A t that has
// passed (the zero time included) means no delay. See Delay for where the
// task waits meanwhile.
func At(t time.Time) TaskOption {
	return TaskOption{due: t, set: true}
}

// dueTime is when a task with opts may start, given that it is submitted
// now: the zero time for at once. It reads the clock only if an option
// asks for a delay.
func dueTime(opts []TaskOption) time.Time {
	var due time.Time
	for _, o := range opts {
		switch {
		case !o.set:
		case o.delay > 0:
			due = time.Now().Add(o.delay)
		case o.delay < 0:
			due = time.Time{}
		default:
			due = o.due
		}
	}
	return due
}

// timerHeap holds the scheduled jobs, the earliest due first (in order of
// arrival among those due at the same time). It is dispatch's own.
type timerHeap []*job

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, k int) bool {
	if !h[i].due.Equal(h[k].due) {
		return h[i].due.Before(h[k].due)
	}
	return h[i].seq < h[k].seq
}
func (h timerHeap) Swap(i, k int) { h[i], h[k] = h[k], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(*job)) }
func (h *timerHeap) Pop() any {
	old := *h
	j := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return j
}

// schedule puts a job that is not due yet in the timer heap, and arms the
// timer if it is now the earliest. It reports false, doing nothing, if j
// was settled on its way.
func (d *dispatcher) schedule(j *job) bool {
	if !j.state.CompareAndSwap(jobPending, jobScheduled) {
		return false
	}
	d.p.scheduled.Add(1)
	d.scheduledSeq++
	j.seq = d.scheduledSeq
	heap.Push(&d.timers, j)
	if d.timers[0] == j {
		d.armDueTimer()
	}
	return true
}

// armDueTimer sets the due timer to the earliest scheduled job, or stops
// it when there is none.
func (d *dispatcher) armDueTimer() {
	if len(d.timers) == 0 {
		if d.due != nil {
			d.due.Stop()
		}
		return
	}
	wait := time.Until(d.timers[0].due)
	if d.due == nil {
		d.due = time.NewTimer(wait)
		return
	}
	d.due.Reset(wait)
}

// notDue reports whether the job must wait in the timer heap: it has a due
// time that has not come yet.
func (j *job) notDue() bool {
	return !j.due.IsZero() && time.Now().Before(j.due)
}

// pollTimers, called at every step while jobs are scheduled, moves the
// jobs that came due if the timer fired, and sweeps the heap if most of it
// is settled.
func (d *dispatcher) pollTimers() {
	select {
	case <-d.due.C:
		d.advanceTimers()
	default:
		if dead := int64(len(d.timers)) - d.p.scheduled.Load(); dead > int64(len(d.timers))/2 {
			d.sweepTimers()
		}
	}
}

// dueC is the channel dispatch waits on for the next job to come due: nil
// (never ready) while none is scheduled.
func (d *dispatcher) dueC() <-chan time.Time {
	if len(d.timers) == 0 {
		return nil
	}
	return d.due.C
}

// advanceTimers moves the jobs that are due to the queue (or to a free
// worker), drops those settled while they waited, and re-arms the timer.
// Dispatch calls it when the timer fires and before it places a pause's
// barrier. It sweeps the whole heap once most of it is settled, so that
// canceled jobs due far ahead do not pile up.
func (d *dispatcher) advanceTimers() {
	if len(d.timers) == 0 {
		return
	}
	now := time.Now()
	moved := false
	for len(d.timers) > 0 && !now.Before(d.timers[0].due) {
		j := heap.Pop(&d.timers).(*job)
		moved = true
		d.makeDue(j)
	}
	if moved || len(d.timers) == 0 {
		d.armDueTimer()
	}
}

// makeDue gives a job that came due to the pool as if it were accepted
// now: to a free worker if it may start at once, else to the back of the
// queue. It keeps the room it held, as the bound counts scheduled tasks too.
// A job settled while it waited is only released.
func (d *dispatcher) makeDue(j *job) {
	if !j.state.CompareAndSwap(jobScheduled, jobPending) {
		j.owner.released()
		return
	}
	d.p.scheduled.Add(-1)
	if j.settleIfBlocked() {
		j.owner.released()
		return
	}
	if d.mayStartAtOnce() && d.offer(work{job: j}) {
		return
	}
	d.pushJob(j)
}

// sweepTimers drops every settled job from the timer heap.
func (d *dispatcher) sweepTimers() {
	live := d.timers[:0]
	for _, j := range d.timers {
		if j.state.Load() == jobScheduled {
			live = append(live, j)
		} else {
			j.owner.released()
		}
	}
	clear(d.timers[len(live):])
	d.timers = live
	heap.Init(&d.timers)
	d.armDueTimer()
}

// abandonTimers settles every scheduled job as a stop that abandons its
// tasks does (see abandonQueue), and empties the heap.
func (d *dispatcher) abandonTimers() {
	for _, j := range d.timers {
		j.abandon()
		j.owner.released()
	}
	d.timers = nil
	d.armDueTimer()
}
