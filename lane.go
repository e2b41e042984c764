package workerpool

import (
	"sync"
	"sync/atomic"

	"github.com/gammazero/deque"
)

// The lane is how a plain task skips the dispatcher while the dispatcher has
// nothing to order. When dispatch has no task queued and no policy that a
// start must pass (its queue, timers, pauses, weights and rate limit are all
// at rest), it opens the lane: Submit and Do append their task to it, and a
// worker done with its task takes the lane's front before it waits again, so
// a task costs a short critical section on each side instead of two
// rendezvous with dispatch. An append wakes a waiting worker for its task,
// or, with none waiting, asks dispatch to start one (up to the size) or to
// nudge one still waiting on workerQueue.
//
// Dispatch stays the owner of the order: the moment it receives anything
// (a job, a ticket, a Pause, a Resize, an idle tick, the stop), it closes
// the lane and takes back the tasks no worker took yet, oldest first, into
// its queue, before it handles the message. A stop shuts the lane for good
// before it does anything else, so a submit that found the lane open began
// before the stop. Tasks in the lane count as waiting and as submitted;
// the tasks workers took from it count as work out (see crew.out).
type lane struct {
	// open says submitters may append. It is written only under mu (by
	// dispatch, and by a stop), and read by submitters and workers
	// without the lock first, as a hint: an append checks it again under
	// mu.
	open atomic.Bool

	// The fields below, with the counts, are what an append and a take
	// write: they share the lock's cache lines.
	mu sync.Mutex
	// tasks holds the tasks appended and not taken yet, oldest first, and
	// readyAt when each became ready, if tasks carry it (timed).
	tasks   chunks[func()] // guarded by mu
	readyAt chunks[int64]  // guarded by mu
	shut    bool           // guarded by mu: a stop closed the lane for good
	// parked holds, in arrival order, the tickets of Block submitters that
	// found no place while the lane was open: a worker that takes a task
	// gives its place to the first (see admitLocked), and dispatch takes
	// the rest into its own parked tickets as it closes the lane.
	parked  deque.Deque[*ticket] // guarded by mu
	waiters []*laneWaiter        // guarded by mu: workers that may wait for an append (a stack; some no longer wait)
	spare   []*laneWaiter        // guarded by mu: the waiters of workers that returned, for the next ones
	coming  int                  // guarded by mu: woken workers that have not come to take yet
	asked   bool                 // guarded by mu: an append asked dispatch for a worker, and dispatch has not answered
	full    bool                 // guarded by mu: dispatch answered that no worker is free and none may start: appends ask no more while the lane is open

	// Counted under mu, read by anyone: the tasks ever appended, those
	// dispatch moved in from its queue as it opened the lane (counted
	// submitted already), those that left the lane (taken by a worker, or
	// back by dispatch), and of those, the ones workers took.
	appended atomic.Uint64
	released atomic.Uint64
	left     atomic.Uint64
	taken    atomic.Uint64

	// ask carries an append's request to dispatch: a task is in the lane
	// and no worker waits for it. Buffered (1), never closed.
	ask chan struct{}

	timed bool  // tasks carry when they became ready (see config.timed)
	clock clock // the pool's, to stamp them
	// room is the pool's bound under Block and Reject (nil without one):
	// an append takes a place for each task, and a take gives it back,
	// through sig, as the queue's pop does.
	room *room
	sig  *signals
	// counted is, under a bound, the pool's count of waiting tasks, which
	// then counts the lane's tasks too: an append adds to it and a take
	// subtracts, and a move between dispatch's queue and the lane changes
	// nothing, so that a reader never sees a task twice, nor more tasks
	// than the bound. nil without a bound (see total).
	counted *atomic.Int64
	_       cacheLinePad
}

// A laneWaiter is a worker as the lane sees it while the worker waits: the
// worker sets waiting under the lane's lock; an append that takes it off
// the stack swaps waiting for woken and sends on wake; the worker, taking
// work from dispatch instead, swaps waiting for busy, or finds it woken and
// passes the wake on.
type laneWaiter struct {
	state   atomic.Int32
	stacked bool          // guarded by lane.mu: it is in lane.waiters
	wake    chan struct{} // buffered (1): the append that woke it
}

const (
	waiterBusy int32 = iota
	waiterWaiting
	waiterWoken
)

func (l *lane) init(timed bool, c clock, r *room, sig *signals, counted *atomic.Int64) {
	l.ask = make(chan struct{}, 1)
	l.timed, l.clock, l.room, l.sig = timed, c, r, sig
	if r != nil {
		l.counted = counted
	}
}

// append puts task at the back of the lane and wakes a worker for it, and
// reports true, if the lane is open and, under a bound, a place is free
// for it; else it does nothing.
func (l *lane) append(task func()) bool {
	readyAt, ok := l.lockOpen(1)
	if !ok {
		return false
	}
	l.pushLocked(task, readyAt)
	l.unlockAppended(1)
	return true
}

// appendAll is append for a batch of n tasks, its nil ones left out, under
// one lock: they are taken in order, with no other task between them.
func (l *lane) appendAll(tasks []func(), n int) bool {
	readyAt, ok := l.lockOpen(n)
	if !ok {
		return false
	}
	for _, task := range tasks {
		if task != nil {
			l.pushLocked(task, readyAt)
		}
	}
	l.unlockAppended(uint64(n))
	return true
}

// lockOpen locks the lane and reports true if it is open and, under a
// bound, it took n places (see room.take: none while a submitter is
// parked for room), with the time the tasks to be appended become ready,
// if tasks carry it; else it leaves the lane unlocked.
func (l *lane) lockOpen(n int) (readyAt int64, ok bool) {
	if !l.open.Load() { // the common closed case takes no lock
		return 0, false
	}
	if l.timed {
		readyAt = l.clock.now()
	}
	l.mu.Lock()
	if !l.open.Load() || l.room != nil && !l.room.take(n) {
		l.mu.Unlock()
		return 0, false
	}
	return readyAt, true
}

func (l *lane) pushLocked(task func(), readyAt int64) {
	l.tasks.PushBack(task)
	if l.timed {
		l.readyAt.PushBack(readyAt)
	}
}

// unlockAppended counts n tasks appended, makes sure a worker comes for
// them, and unlocks the lane.
func (l *lane) unlockAppended(n uint64) {
	l.appended.Add(n)
	if l.counted != nil {
		l.counted.Add(int64(n))
	}
	ask := l.wakeLocked()
	l.mu.Unlock()
	if ask {
		l.signalAsk()
	}
}

// wakeLocked makes sure a worker comes for the lane's tasks. While a woken
// worker is on its way it does nothing: that worker, as it takes a task,
// wakes the next if tasks remain, so that workers join one at a time while
// tasks wait, and a submitter faster than they are does not wake one per
// task. Else it wakes one waiting worker, dropping from the stack those
// that no longer wait; with none waiting it reports whether to ask
// dispatch for a worker: not while an earlier ask is unanswered, nor once
// dispatch said that none is free or may start.
func (l *lane) wakeLocked() (ask bool) {
	if l.coming > 0 {
		return false
	}
	for n := len(l.waiters); n > 0; n-- {
		lw := l.waiters[n-1]
		l.waiters[n-1] = nil
		l.waiters = l.waiters[:n-1]
		lw.stacked = false
		if lw.state.CompareAndSwap(waiterWaiting, waiterWoken) {
			l.coming++
			lw.wake <- struct{}{} // never blocks: a waiter is woken once per wait
			return false
		}
	}
	if l.asked || l.full {
		return false
	}
	l.asked = true
	return true
}

func (l *lane) signalAsk() {
	select {
	case l.ask <- struct{}{}:
	default:
	}
}

// next is a worker's next work while the lane is open: the lane's front
// task, else what comes first of work from dispatch and an append's wake.
// A nudge from dispatch, or a wake whose task another worker took, sends
// it round again.
func (l *lane) next(queue <-chan work, lw **laneWaiter) work {
	if *lw == nil {
		*lw = l.newWaiter()
	}
	woken := false
	for {
		if w, ok := l.takeOrWait(*lw, woken); ok {
			return w
		}
		select {
		case w := <-queue:
			l.stopWaiting(*lw)
			if !w.nudge {
				return w
			}
			woken = false
		case <-(*lw).wake:
			(*lw).state.Store(waiterBusy)
			woken = true
		}
	}
}

// takeOrWait takes the lane's front task, and wakes the next worker if
// tasks remain; or, with none there, marks lw waiting, so that an append
// wakes it. woken says an append woke lw: it has come.
func (l *lane) takeOrWait(lw *laneWaiter, woken bool) (work, bool) {
	l.mu.Lock()
	if woken {
		l.coming--
	}
	if w, ok := l.takeLocked(); ok {
		ask := l.tasks.Len() > 0 && l.wakeLocked()
		l.mu.Unlock()
		if ask {
			l.signalAsk()
		}
		return w, true
	}
	lw.state.Store(waiterWaiting)
	if !lw.stacked {
		lw.stacked = true
		l.waiters = append(l.waiters, lw)
	}
	l.mu.Unlock()
	return work{}, false
}

// park parks t, the ticket of a Block submitter whose plain task found no
// place, in the lane while it is open, and admits it at once if a place
// freed meanwhile; the submitter then waits for t's answer as it would
// from dispatch. It reports false, parking nothing, if the lane is closed.
func (l *lane) park(t *ticket) bool {
	l.mu.Lock()
	if !l.open.Load() {
		l.mu.Unlock()
		return false
	}
	l.room.park() // first: from now on no later submitter takes a place before t
	l.parked.PushBack(t)
	l.admitAndUnlock()
	return true
}

// admitWaiting admits the parked tickets while places are free, and makes
// sure a worker comes for their tasks. Dispatch calls it when woken while
// the lane is open: a place given back outside the lane (a task with a
// handle that its worker started, or that settled) frees no place as a
// take does, and a withdrawn ticket at the front holds back the others.
func (l *lane) admitWaiting() {
	l.mu.Lock()
	l.admitAndUnlock()
}

// admitAndUnlock admits the parked tickets while places are free (see
// admitLocked), makes sure a worker comes for their tasks, and unlocks the
// lane.
func (l *lane) admitAndUnlock() {
	ask := l.admitLocked() && l.wakeLocked()
	l.mu.Unlock()
	if ask {
		l.signalAsk()
	}
}

// admitLocked admits parked tickets, first first, while places are free:
// each one's task is appended (accepted) and its submitter answered. It
// drops the tickets withdrawn meanwhile, and admits none once a stop shut
// the lane: dispatch refuses them as it takes them. It reports whether it
// appended any task.
func (l *lane) admitLocked() (appended bool) {
	for !l.shut && l.parked.Len() > 0 {
		t := l.parked.Front()
		if t.state.Load() == ticketWithdrawn {
			l.parked.PopFront()
			l.room.unpark()
			t.unref()
			continue
		}
		if !l.room.admit(1) { // a place for t, which stops counting as parked
			break
		}
		l.parked.PopFront()
		if !t.state.CompareAndSwap(ticketWaiting, ticketAdmitted) {
			l.room.give(1) // withdrawn meanwhile: the place goes to the next
			t.unref()
			continue
		}
		var readyAt int64
		if l.timed {
			readyAt = l.clock.now()
		}
		l.pushLocked(t.task, readyAt)
		l.appended.Add(1)
		l.counted.Add(1)
		t.done <- struct{}{} // buffered: the answer, admitted
		t.unref()
		appended = true
	}
	return appended
}

// takeLocked takes the lane's front task for a worker, if there is one.
func (l *lane) takeLocked() (work, bool) {
	if l.tasks.Len() == 0 {
		return work{}, false
	}
	fn, readyAt := l.popLocked()
	l.left.Add(1)
	l.taken.Add(1)
	if l.room != nil {
		l.counted.Add(-1)
		if l.room.give(1) { // submitters are parked for room
			if l.parked.Len() > 0 {
				l.admitLocked()
			} else {
				l.sig.wakeDispatch() // they are dispatch's
			}
		}
	}
	// offered: once abandoning has begun the worker gives it up rather
	// than start it (see workerSide.do), as it does a task dispatch
	// offered.
	return work{fn: fn, readyAt: readyAt, offered: true}, true
}

// popLocked pops the lane's front task and when it became ready (readyNow
// if tasks do not carry it).
func (l *lane) popLocked() (fn func(), readyAt int64) {
	readyAt = readyNow
	if l.timed {
		readyAt = l.readyAt.PopFront()
	}
	return l.tasks.PopFront(), readyAt
}

// take takes the lane's front task for a worker dispatch starts with it:
// handed, as dispatch hands a new task to a new worker, it is not offered,
// and starts whatever stop begins meanwhile.
func (l *lane) take() (work, bool) {
	l.mu.Lock()
	w, ok := l.takeLocked()
	ask := ok && l.tasks.Len() > 0 && l.wakeLocked() // as a worker's take: the place it gave may have admitted a parked task
	l.mu.Unlock()
	if ask {
		l.signalAsk()
	}
	w.offered = false
	return w, ok
}

// stopWaiting ends lw's wait as its worker took work from dispatch. If an
// append woke it meanwhile, the task it was woken for may still be in the
// lane: the wake goes to another worker.
func (l *lane) stopWaiting(lw *laneWaiter) {
	if lw.state.CompareAndSwap(waiterWaiting, waiterBusy) {
		return
	}
	<-lw.wake // sent under mu just after the swap to woken
	lw.state.Store(waiterBusy)
	l.mu.Lock()
	l.coming--
	ask := l.tasks.Len() > 0 && l.wakeLocked()
	l.mu.Unlock()
	if ask {
		l.signalAsk()
	}
}

// newWaiter is a waiter for a worker's first wait at the lane: a spare one
// if a worker that returned left one.
func (l *lane) newWaiter() *laneWaiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.spare); n > 0 {
		lw := l.spare[n-1]
		l.spare = l.spare[:n-1]
		return lw
	}
	return &laneWaiter{wake: make(chan struct{}, 1)}
}

// release keeps the waiter of a worker that returns for the next worker. It
// is busy, its wake empty; the stack may still hold it, which appends skip.
func (l *lane) release(lw *laneWaiter) {
	if lw == nil {
		return
	}
	l.mu.Lock()
	l.spare = append(l.spare, lw)
	l.mu.Unlock()
}

// waiting is the number of tasks in the lane, never below 0 for a moment.
func (l *lane) waiting() int64 {
	left := l.left.Load() // first: appended and released never count less than left
	return int64(l.appended.Load() + l.released.Load() - left)
}

// total returns the number of tasks waiting in the pool, given queued,
// the count dispatch publishes: under a bound that count holds the lane's
// tasks already (see counted); otherwise the lane's are added, and the sum
// is a moment's estimate.
func (l *lane) total(queued int64) int64 {
	if l.counted != nil {
		return queued
	}
	return queued + l.waiting()
}

// openUp lets submitters append, unless a stop shut the lane or a send to
// dispatch is in flight (inFlight), and then moves into it the n tasks
// dispatch has queued, oldest first (each call of next gives one), so that
// they stay ahead of every append. It reports whether dispatch is to find
// workers for them (see wakeLocked). Dispatch calls it.
//
// A task that reaches dispatch over taskQueue is accepted as its send
// completes, but dispatch closes the lane only after that: a task appended
// in between, by the same goroutine once its call returned, would start
// first (taken by a worker, or taken back ahead of it). So the lane is
// never open while a send is in flight: openUp opens it and then looks at
// the sends begun, and a sender counts its send and then closes an open
// lane (see closeForSend); of the two, one sees the other.
func (l *lane) openUp(n int, next func() (task func(), readyAt int64), inFlight func() bool) (ask bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shut {
		return false
	}
	l.open.Store(true)
	if inFlight() {
		l.open.Store(false)
		return false
	}
	for range n {
		l.pushLocked(next())
	}
	l.released.Add(uint64(n))
	return l.tasks.Len() > 0 && l.wakeLocked()
}

// closeForSend closes the lane, if it is open, for a send that was counted
// as begun and is about to reach dispatch (see openUp). Dispatch takes back
// the lane's tasks, ahead of the send's, as it receives it.
func (l *lane) closeForSend() {
	if !l.open.Load() {
		return
	}
	l.mu.Lock()
	l.open.Store(false)
	l.mu.Unlock()
}

// close stops appends and gives each task no worker took yet to back, and
// each parked ticket to parkBack, oldest first; it returns how many tasks
// were ever appended. Dispatch calls it.
func (l *lane) close(back func(fn func(), readyAt int64), parkBack func(*ticket)) (appended uint64) {
	l.mu.Lock()
	l.open.Store(false)
	l.asked, l.full = false, false // coming stays: the woken workers still come
	for range l.tasks.Len() {
		l.left.Add(1)
		back(l.popLocked())
	}
	for l.parked.Len() > 0 {
		parkBack(l.parked.PopFront())
	}
	appended = l.appended.Load()
	l.mu.Unlock()
	return appended
}

// shutForGood closes the lane for good: a stop calls it first, so that no
// append begins after the stop did. Dispatch takes back what is left as it
// takes the stop message.
func (l *lane) shutForGood() {
	l.mu.Lock()
	l.shut = true
	l.open.Store(false)
	l.mu.Unlock()
}

// answer is dispatch's answer to an ask: the tasks in the lane, and the
// ask forgotten, so that the next append with no worker waiting asks
// again.
func (l *lane) answer() int {
	l.mu.Lock()
	l.asked = false
	n := l.tasks.Len()
	l.mu.Unlock()
	return n
}

// noneFree records dispatch's answer that no worker is free and none may
// start: appends ask no more until the lane opens again. A worker that comes
// free meanwhile finds the lane's tasks itself, or waits where appends wake it.
func (l *lane) noneFree() {
	l.mu.Lock()
	l.full = l.open.Load()
	l.mu.Unlock()
}
