package workerpool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/gammazero/deque"
)

// A Group runs related tasks on a pool and reports the first error, with the
// semantics of golang.org/x/sync/errgroup on a shared, bounded set of
// workers. The first task to fail cancels the group's context: tasks still
// queued are canceled at once, and running ones see the cancellation. When
// the parent context ends instead, queued tasks are canceled by Wait, or
// by the pool as it reaches them. Make one with [WorkerPool.Group]; it is
// safe for concurrent use. The zero value is not usable: the methods of a
// zero or nil Group panic, saying so.
//
// Go queues like Submit (under Block it may wait for room), and tasks held
// back by SetLimit wait in the group, not in the pool, so they never hold a
// worker or delay other users of the pool. Once all its tasks have
// finished, the pool keeps no reference to the group, whether Wait was
// called or not.
type Group struct {
	pool      *WorkerPool
	ctx       context.Context // what every fn receives; canceled by the first error, by Wait, by the parent, or by a Shutdown that gives up
	cancelCtx context.CancelCauseFunc

	mu    sync.Mutex
	limit int // the most tasks in the pool at once; 0: no limit
	// inPool are the tasks given to the pool and not settled yet, in no
	// order; each knows its index.
	inPool []*groupTask
	held   deque.Deque[heldTask] // tasks Go held back because of limit, oldest first
	err    error                 // the first error
	swept  bool                  // the context is done and its queued tasks were canceled
	// watched says the group watches its context, so that its queued and
	// scheduled tasks are canceled as soon as it is done: from New with a
	// bound, from the first delayed task otherwise.
	watched bool
	// untold holds the options of the tasks dropped or skipped under g.mu
	// that unlock is to tell TaskDropped about once it has released g.mu.
	untold []taskOptions
	// emptied is made by a Wait that has to wait, and closed once no task
	// is in the pool or held.
	emptied chan struct{}
}

// Group returns a new, empty group of tasks that run on p. Its context is
// derived from ctx; it is canceled when a task returns the first error,
// when Wait returns, when ctx is done, and when a Shutdown of p gives up
// waiting (at once, for a group made after that). Group panics if ctx is
// nil, and on a WorkerPool that New did not make.
func (p *WorkerPool) Group(ctx context.Context) *Group {
	mustHave(ctx, true, "Group")
	p.mustBeNew() // a zero WorkerPool would count the tasks of a canceled group, and call heavy ones too heavy
	g := &Group{pool: p}
	g.ctx, g.cancelCtx = context.WithCancelCause(ctx)
	if !p.live.addGroup(g) {
		g.cancel(errShutdownCut)
	}
	if p.cfg.bounded {
		g.watch() // queued tasks give back their room at once
	}
	return g
}

// mustBeMade panics, naming method, if g is nil or WorkerPool.Group did
// not make it: a zero Group belongs to no pool.
func (g *Group) mustBeMade(method string) {
	switch {
	case g == nil:
		panic("workerpool: Group." + method + " called on a nil *Group")
	case g.pool == nil:
		panic("workerpool: Group." + method + " called on a Group that WorkerPool.Group did not make")
	}
}

// A heldTask is a fn Go held back because of the group's limit, with its
// options (see TaskOption).
type heldTask struct {
	fn   func(context.Context) error
	opts taskOptions
}

// watch makes the group cancel its queued and scheduled tasks as soon as
// its context is done (see noteCanceled). It runs once: from Group with a
// bound, else under g.mu from the first Go with a delay.
func (g *Group) watch() {
	g.watched = true
	context.AfterFunc(g.ctx, g.noteCanceled)
}

// noteCanceled runs once the group's context is done, in a pool with a
// bound or a group with a delayed task: it cancels the group's queued and
// scheduled tasks then, so that their room frees and they leave
// Status.Scheduled at once, whether or not Wait is running.
func (g *Group) noteCanceled() {
	g.mu.Lock()
	g.changedLocked()
	g.unlock()
}

// Go queues fn to run on a worker of the group's pool and returns at once:
// it never blocks, except under a bound with Block, where it waits for room
// until the group's context is done. fn receives the group's context. A fn that returns an
// error, panics (reported as a *PanicError) or calls runtime.Goexit
// (ErrGoexit) makes that error the group's if it is the first, and cancels
// the group's context.
//
// Once the group's context is done (after the first error, after Wait,
// when the parent is done, or when a Shutdown gives up), Go skips fn, and
// Wait reports the cause of that cancellation (see context.Cause) unless an
// earlier error came first. If the pool stops before fn starts (Go was
// called on a stopping pool, fn was held back by the limit, or a stop
// abandoned it), fn never runs and the group's error becomes ErrStopped
// unless an earlier error came first; a call on a stopping pool is refused
// so whatever the group's state, also when its context is done. Go panics
// if fn is nil.
//
// Each call counts in the pool's Status.Submitted, also when fn is held
// back or skipped, and its task ends in exactly one of Completed, Canceled
// (skipped, or dropped while held, because the group's context was done),
// Abandoned (dropped while held because the pool stopped), Dropped or
// Expired, with one TaskDropped call if it never ran (see Hooks). Only a
// call refused as any submit is refused is not in Submitted: on a stopping
// pool (not counted at all), too heavy for the pool or refused by a full
// queue (counted in Rejected), or, under Block, when the group's context
// ends while it waits for room (not counted at all).
//
// opts schedule fn as for [WorkerPool.Go]; a delay counts from this call,
// also for a task the limit holds back, and a scheduled task is canceled as
// soon as the group's context is done.
func (g *Group) Go(fn func(ctx context.Context) error, opts ...TaskOption) {
	g.mustBeMade("Go")
	if fn == nil {
		panic("workerpool: Group.Go called with a nil func")
	}
	p := g.pool
	h := heldTask{fn: fn, opts: p.parseOptions(opts)}
	p.sig.beginSettle()
	defer p.sig.endSettle()
	tooHeavy := false
	g.mu.Lock()
	if (h.opts.due != 0 || h.opts.retry != nil) && !g.watched {
		g.watch()
	}
	switch {
	case p.Stopped(): // refused as any submit, whatever the group's state: not counted
		g.record(ErrStopped)
	case g.ctx.Err() != nil: // skipped, and counted as never run
		why := g.canceledBy()
		g.record(why)
		p.counts.countNeverQueued(1, g.bucketFor(why))
		g.tellLater(h)
	case p.size.heavierThan(h.opts.weight): // at once, also for a task the limit would hold
		g.record(ErrTooHeavy)
		tooHeavy = true
	case g.limit > 0 && len(g.inPool) >= g.limit:
		g.held.PushBack(h)
		p.counts.groupHeld.Add(1) // before Submitted: Status reads Submitted first, so it never counts a held task as busy
		p.counts.groupOnly.Add(1) // counted from this call; its release is not counted again
	default:
		t := g.add(h)
		g.unlock()
		g.submit(t, false)
		return
	}
	g.changedLocked()
	g.unlock()
	if tooHeavy {
		p.countRejected(ErrTooHeavy, 1, &h.opts) // outside g.mu: TaskDropped runs here
	}
}

// A Go or SetLimit call counts as a settle in progress (see
// signals.settling) until it returns.
// Held tasks exist only while a task of their group is in the pool or on
// its way there, and the pool may refuse the one on its way when it stops:
// the group then drops the held tasks in the call that sent it. Counted
// from before the call checks whether the pool stops, it makes a stop wait
// until such tasks are dropped, counted and told to TaskDropped. (A task on
// its way from a worker, released by Group.taskConcluded, is sent before the
// worker takes its next work, so a stop waits for it already.)

// SetLimit caps how many of the group's tasks may be in the pool, queued or
// running, at once; Go holds the others in the group until a slot frees. A
// negative n removes the limit. Raising the limit releases held tasks at
// once. The limit is a share of the pool: the pool's own size still
// applies. Held tasks have not reached the pool: once it stops taking tasks
// (Stop, StopWait or Shutdown) they are dropped, and Wait reports
// ErrStopped; and once the group's context is done they are dropped too.
// Each held task counts in Status.Submitted from its Go call (while held,
// in neither Waiting nor Busy), and a dropped one in Abandoned when the
// pool stopped, in Canceled when the group's context was done first (see
// Go), with one TaskDropped call each, before the stop returns. SetLimit
// panics if n is 0, which would never run a task.
func (g *Group) SetLimit(n int) {
	g.mustBeMade("SetLimit")
	if n == 0 {
		panic("workerpool: Group.SetLimit(0) would never run a task")
	}
	g.pool.sig.beginSettle()
	defer g.pool.sig.endSettle()
	g.mu.Lock()
	g.limit = max(n, 0)
	var release []*groupTask
	for t := g.takeHeld(); t != nil; t = g.takeHeld() {
		release = append(release, t)
	}
	g.changedLocked()
	g.unlock()
	for _, t := range release {
		g.submit(t, true)
	}
}

// Wait blocks until every task given to the group has finished, or will
// never start: canceled because the group's context is done, abandoned by a
// stop of the pool, or dropped while held. It then cancels the group's
// context and returns the first error: from a task, or, if tasks never
// started and no task failed, why (the cause of the context's
// cancellation, or ErrStopped). When Wait returns, every Go call of the
// group that was not refused (see Go) is counted in the pool's
// Status.Submitted, its task that never started is counted as canceled,
// abandoned or dropped (held tasks and skipped ones included), and none is
// counted as waiting. Every Wait returns once the pool has stopped.
func (g *Group) Wait() error {
	g.mustBeMade("Wait")
	g.mu.Lock()
	for {
		g.changedLocked() // also when only the context changed, as a parent's cancel does
		if len(g.inPool) == 0 && g.held.Len() == 0 {
			break
		}
		if g.emptied == nil {
			g.emptied = make(chan struct{})
		}
		emptied, ctxDone := g.emptied, g.ctx.Done()
		if g.swept {
			ctxDone = nil // handled: now only the running tasks matter
		}
		g.unlock()
		select {
		case <-emptied:
		case <-ctxDone:
		}
		g.mu.Lock()
	}
	err := g.err
	g.unlock()
	g.cancel(err)
	return err
}

// cancel cancels the group's context with cause, unless it is canceled
// already. A Shutdown that gives up calls it through pool.live.
func (g *Group) cancel(cause error) { g.cancelCtx(cause) }

// add makes a task of h and counts it as in the pool. g.mu is held.
func (g *Group) add(h heldTask) *groupTask {
	t := g.newTask(h.fn, h.opts)
	t.index = len(g.inPool)
	g.inPool = append(g.inPool, t)
	return t
}

// remove takes a settled task out of inPool. g.mu is held.
func (g *Group) remove(t *groupTask) {
	last := len(g.inPool) - 1
	moved := g.inPool[last]
	g.inPool[t.index], moved.index = moved, t.index
	g.inPool[last] = nil
	g.inPool = g.inPool[:last]
}

// changedLocked runs after every change to the group. Once the group's
// context is done it drops the held tasks and cancels the queued ones (see
// sweep); once no task is in the pool or held, Wait may return. g.mu is
// held.
func (g *Group) changedLocked() {
	if !g.swept && g.ctx.Err() != nil {
		g.sweep()
	}
	if len(g.inPool) == 0 && g.held.Len() == 0 && g.emptied != nil {
		close(g.emptied)
		g.emptied = nil
	}
}

// submit gives t to the pool, as Go gives a Task (under Block, waiting for
// room until the group's context is done). A task the group held back
// (held) skips the bound instead: it joins the queue even if it is full, so
// that releasing it never blocks a worker, and the group's limit bounds it.
// A refused t settles with why it was refused (the package documentation's
// table of errors), or with the cause of the group's cancellation. Refusing a task that Go sends
// refuses the Go call, counted as any refused submit is; a held task was
// counted from its Go call, so it ends in Abandoned (ErrStopped) or in
// Dropped (ErrTooHeavy, after a Resize).
func (g *Group) submit(t *groupTask, held bool) {
	var err error
	t.held = held
	if held {
		t.job.place.Store(false)
		err = g.pool.refusesAtOnce(&t.job)
		if err == nil {
			err = sendControl(g.pool, message{job: &t.job}) // in Submitted since its Go call: a control send, which Status does not count
		}
	} else {
		err = g.pool.sendJob(&t.job, true, g.ctx)
	}
	switch {
	case err == nil:
		return
	case err == errWithdrawn: // refused as any submit whose ctx ends while it waits for room: not counted
		err = g.canceledBy()
	case held && err == ErrStopped: // released as the pool stopped, after Go returned
		g.pool.counts.settled.count(jobAbandoned)
		g.dropReleased()
		g.pool.obs.tellDropped(t.job.info(err))
	case held && err == ErrTooHeavy: // released after Go returned, and a Resize made the pool smaller since
		g.pool.counts.settled.count(jobDropped)
		g.dropReleased()
		g.pool.obs.tellDropped(t.job.info(err))
	default:
		// Counted and told once the task is refused and released, so
		// that a panicking TaskDropped leaves the group whole.
		o := taskOptions{weight: 1}
		if opts := t.job.options(); opts != nil {
			o = *opts
		}
		defer g.pool.countRejected(err, 1, &o)
	}
	t.job.refuse(err)
	t.released()
}

// taskConcluded runs once per task given to the pool, when it ends or
// settles. The first error cancels the group (see record); otherwise the
// freed slot goes to a held task.
//
// Dispatch calls it too, for a task it cancels or abandons. It never sends
// there: such a task settles with an error, which is recorded before a
// held task could be released, and a group with an error releases none.
// Only a task that finished without error releases one, on its worker.
func (g *Group) taskConcluded(t *groupTask, err error) {
	g.mu.Lock()
	g.remove(t)
	g.record(err)
	next := g.takeHeld()
	g.changedLocked()
	g.unlock()
	t.unref()
	if next != nil {
		g.submit(next, true)
	}
}

// takeHeld returns a task for the next held fn if it may go to the pool
// now, or nil. While the group is canceled or failed nothing is released,
// and once the pool stops the held tasks are dropped with ErrStopped, as
// the pool would refuse them. g.mu is held.
func (g *Group) takeHeld() *groupTask {
	switch {
	case g.held.Len() == 0, g.limit > 0 && len(g.inPool) >= g.limit, g.err != nil, g.ctx.Err() != nil:
		return nil
	case g.pool.Stopped():
		g.dropHeld(ErrStopped)
		return nil
	}
	return g.add(g.held.PopFront()) // counted held until dispatch takes it (see counts.groupHeld)
}

// sweep runs once, under g.mu, when the group's context is done: held
// tasks are dropped, and queued ones are canceled at once, so that Status
// counts them before Wait returns. Queued tasks that a stop is abandoning
// are left to it. A task on its way to the pool is not queued yet: dispatch
// cancels it when it queues it.
func (g *Group) sweep() {
	g.swept = true
	why := g.canceledBy()
	g.dropHeld(why)
	if g.pool.sig.abandonBegun.Load() {
		return
	}
	for i := len(g.inPool) - 1; i >= 0; i-- { // remove moves the last task to i
		if t := g.inPool[i]; t.job.cancelQueued(why) {
			g.record(why)
			g.remove(t)
			t.unref()
		}
	}
}

// dropHeld drops the held tasks, which then never run, records why, and
// counts them in their bucket (they count in Submitted from their Go
// calls); unlock tells TaskDropped. g.mu is held.
func (g *Group) dropHeld(why error) {
	n := g.held.Len()
	if n == 0 {
		return
	}
	g.record(why)
	for range n {
		g.tellLater(g.held.PopFront())
	}
	g.pool.counts.settled.add(g.bucketFor(why), uint64(n)) // in Submitted since their Go calls
	g.pool.counts.groupHeld.Add(-int64(n))                 // after their bucket, which Status reads after groupHeld
	g.pool.sig.wakeDispatch()                              // a WaitIdle may wait for them (see dispatcher.answerIdle)
}

// dropReleased uncounts, as held, a task its group released that the pool
// refused (see Group.submit), once it is counted in its bucket, and wakes
// dispatch, as dropHeld does.
func (g *Group) dropReleased() {
	g.pool.counts.groupHeld.Add(-1)
	g.pool.sig.wakeDispatch()
}

// tellLater notes h, dropped or skipped under g.mu, which unlock tells
// TaskDropped about once it has released g.mu. Each is dropped or skipped
// once the group's context is done, or as dropHeld cancels it (with
// ErrStopped, from takeHeld), so why is the context's cause, which never
// changes once it is done. g.mu is held.
func (g *Group) tellLater(h heldTask) {
	if g.pool.obs.hooks.TaskDropped != nil {
		g.untold = append(g.untold, h.opts)
	}
}

// countNeverQueued counts n tasks of Go calls that never reached dispatch
// (see groupOnly): in Submitted first, then in the bucket to (canceled,
// abandoned or dropped), so that the counters never hold more of them
// settled than submitted.
func (c *counts) countNeverQueued(n int, to uint32) {
	c.groupOnly.Add(uint64(n))
	c.settled.add(to, uint64(n))
}

// bucketFor is where a task of a Go call that never reached the pool is
// counted, once it is dropped with why: abandoned if a stop of the pool
// dropped it (why wraps ErrStopped while the pool stops or abandons its
// queue, as settleIfBlocked decides for a queued job), else canceled.
func (g *Group) bucketFor(why error) uint32 {
	p := g.pool
	if errors.Is(why, ErrStopped) && (p.Stopped() || p.sig.abandonBegun.Load()) {
		return jobAbandoned
	}
	return jobCanceled
}

// unlock releases g.mu, then tells TaskDropped about the tasks dropped or
// skipped under it (see tellLater), through the pool's delivery goroutine
// (see tellDropped): no hook runs under g.mu, nor on dispatch, which calls
// settled. The letters count as a settle in progress from before g.mu is
// released, so that a stop waits for them. Until then the stop cannot have
// finished waiting for settles: a held task is dropped only while a task of
// its group is in the pool or on its way there (see the note before SetLimit), which
// settles under g.mu, and a skipped one in a Go call, itself a settle in
// progress.
func (g *Group) unlock() {
	untold := g.untold
	if len(untold) == 0 {
		g.mu.Unlock()
		return
	}
	g.untold = nil // a Go call may note more once g.mu is released
	p, why := g.pool, g.canceledBy()
	p.sig.beginSettle()
	g.mu.Unlock()
	defer p.sig.endSettle()
	for i := range untold {
		p.obs.tellDropped(infoOf(&untold[i], 1, why))
	}
	clear(untold)
	g.mu.Lock()
	if g.untold == nil { // give the array back for the next drops
		g.untold = untold[:0]
	}
	g.mu.Unlock()
}

// canceledBy is the error that skipped tasks report once the group's
// context is done: the cause of its cancellation, such as the first error,
// the parent's cause, or one wrapping ErrStopped from a Shutdown that gave
// up.
func (g *Group) canceledBy() error { return context.Cause(g.ctx) }

// record keeps err as the group's error if it is the first, and then
// cancels the group's context with it, whatever its source: a task, a held
// task dropped, or the pool refusing a task. So a failed group never keeps
// a held task. g.mu is held; canceled runs later, in its own goroutine.
func (g *Group) record(err error) {
	if err != nil && g.err == nil {
		g.err = err
		g.cancel(err)
	}
}

// A groupTask is the owner of one group fn's job. Both the group and the
// pool hold it until each is done with it (refs); the last to let go puts
// it back in WorkerPool.recycled.groupTasks, so that Group.Go does not allocate.
type groupTask struct {
	job   job
	group *Group
	fn    func(ctx context.Context) error
	index int          // in group.inPool; guarded by group.mu
	refs  atomic.Int32 // 2 from submit: the group's and the pool's
	// held says the group held the task back (SetLimit) before it gave it
	// to the pool: it joins the queue without room and, under DropOldest,
	// drops no waiting task. Set before the send.
	held bool
	opts jobOptions // the job's options, if its fn uses any: pooled with it (see job.opts)
}

func (g *Group) newTask(fn func(context.Context) error, o taskOptions) *groupTask {
	p := g.pool
	t, _ := p.recycled.groupTasks.Get().(*groupTask)
	if t == nil {
		t = new(groupTask)
		t.job.init(p, t)
	}
	t.group, t.fn = g, fn
	t.refs.Store(2)
	t.job.reset(o, &t.opts)
	return t
}

// heldByGroup reports whether j is a group task that its Group held back
// (SetLimit) before it released it to the pool: it joins the queue without
// room, and it is counted in Submitted from its Group.Go call.
func (j *job) heldByGroup() bool {
	t, ok := j.owner.(*groupTask)
	return ok && t.held
}

func (t *groupTask) call(ctx context.Context) (panicked bool, err error) {
	return t.job.callRecovering(ctx, t.fn)
}

// runContext is the group's context.
func (t *groupTask) runContext() context.Context { return t.group.ctx }

func (t *groupTask) canceled() error {
	if t.group.ctx.Err() != nil {
		return t.group.canceledBy()
	}
	return nil
}

// conclude tells the group; it drops the group's reference.
func (t *groupTask) conclude(err error, _ bool) { t.group.taskConcluded(t, err) }

// released drops the pool's reference.
func (t *groupTask) released() { t.unref() }

// ctxDone reports whether the group's context is done.
func (t *groupTask) ctxDone() bool { return t.group.ctx.Err() != nil }

func (t *groupTask) unref() {
	if t.refs.Add(-1) == 0 {
		t.group, t.fn, t.opts = nil, nil, jobOptions{}
		t.job.reset(taskOptions{}, nil)
		t.job.pool.recycled.groupTasks.Put(t)
	}
}
