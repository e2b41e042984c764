package workerpool

import (
	"context"
	"sync"

	"github.com/gammazero/deque"
)

// A Group runs related tasks on a pool and reports the first error, with the
// semantics of golang.org/x/sync/errgroup on a shared, bounded set of
// workers. The first task to fail cancels the group's context: tasks still
// queued are skipped, and running ones see the cancellation. Make one with
// [WorkerPool.Group]; it is safe for concurrent use. The zero value is not
// usable.
//
// A Group never blocks: Go queues like Submit, and tasks held back by
// SetLimit wait in the group, not in the pool, so they never hold a worker
// or delay other users of the pool.
type Group struct {
	pool      *WorkerPool
	ctx       context.Context // what every fn receives; canceled by the first error, by Wait, by the parent, or by a Shutdown that gives up
	cancelCtx context.CancelCauseFunc

	mu      sync.Mutex
	changed sync.Cond // on mu; broadcast when settledAll may have become true
	limit   int       // the most tasks in the pool at once; 0: no limit
	inPool  int       // tasks given to the pool and not settled yet
	running int       // of inPool, the tasks whose fn is running
	err     error     // the first error
	live    bool      // g is in pool.live: from its first task until Wait returns
	// held are the tasks Go held back because of limit, oldest first.
	held deque.Deque[func(context.Context) error]
}

// Group returns a new, empty group of tasks that run on p. Its context is
// derived from ctx; it is canceled when a task returns the first error,
// when Wait returns, when ctx is done, and when a Shutdown of p gives up
// waiting. Group panics if ctx is nil.
func (p *WorkerPool) Group(ctx context.Context) *Group {
	mustHave(ctx, true, "Group")
	g := &Group{pool: p}
	g.ctx, g.cancelCtx = context.WithCancelCause(ctx)
	g.changed.L = &g.mu
	context.AfterFunc(g.ctx, g.canceled)
	return g
}

// Go queues fn to run on a worker of the group's pool and returns at once:
// it never blocks. fn receives the group's context. A fn that returns an
// error, panics (reported as a *PanicError) or calls runtime.Goexit
// (ErrGoexit) makes that error the group's if it is the first, and cancels
// the group's context.
//
// Once the group's context is done (after the first error, after Wait,
// when the parent is done, or when a Shutdown gives up), Go skips fn, and
// Wait reports the cause of that cancellation (see context.Cause) unless an
// earlier error came first. On a stopped pool fn never runs and the group's
// error becomes ErrStopped. Go panics if fn is nil.
func (g *Group) Go(fn func(ctx context.Context) error) {
	if fn == nil {
		panic("workerpool: Group.Go called with a nil func")
	}
	g.mu.Lock()
	switch {
	case g.ctx.Err() != nil:
		g.record(g.canceledBy())
		g.mu.Unlock()
		return
	case g.limit > 0 && g.inPool >= g.limit:
		g.held.PushBack(fn)
		g.mu.Unlock()
		return
	}
	g.addInPool()
	g.mu.Unlock()
	g.submit(fn)
}

// SetLimit caps how many of the group's tasks may be in the pool, queued or
// running, at once; Go holds the others in the group until a slot frees. A
// negative n removes the limit. Raising the limit releases held tasks at
// once. The limit is a share of the pool: the pool's own size still
// applies. Held tasks have not reached the pool: once it stops taking tasks
// (Stop, StopWait or Shutdown) they are dropped, and Wait reports
// ErrStopped. SetLimit panics if n is 0, which would never run a task.
func (g *Group) SetLimit(n int) {
	if n == 0 {
		panic("workerpool: Group.SetLimit(0) would never run a task")
	}
	g.mu.Lock()
	g.limit = max(n, 0)
	var release []func(context.Context) error
	for fn := g.takeHeld(); fn != nil; fn = g.takeHeld() {
		release = append(release, fn)
	}
	g.mu.Unlock()
	for _, fn := range release {
		g.submit(fn)
	}
}

// Wait blocks until every task of the group that started has returned, and
// until every other task has started too, or will never start because the
// group's context is done. It then cancels the group's context and returns
// the first error: from a task, or, if tasks were skipped and no task
// failed, the cause of the context's cancellation. Call Wait once the
// tasks are given: until it returns, the group stays known to the pool, for
// a Shutdown that gives up and cancels it. Tasks that were skipped may
// still sit in the pool's queue when Wait returns; they are counted in
// Status.Canceled once the pool reaches them.
func (g *Group) Wait() error {
	g.mu.Lock()
	for !g.settledAll() {
		g.changed.Wait()
	}
	if g.inPool > 0 { // skipped, or about to be
		g.record(g.canceledBy())
	}
	err := g.err
	if g.live {
		g.pool.live.remove(g)
		g.live = false
	}
	g.mu.Unlock()
	g.cancel(err)
	return err
}

// cancel cancels the group's context with cause, unless it is canceled
// already. A Shutdown that gives up calls it while g is in pool.live.
func (g *Group) cancel(cause error) { g.cancelCtx(cause) }

// addInPool counts one more task given to the pool. The group's first
// task puts g in pool.live until Wait returns, so that a Shutdown that
// gives up cancels g's context; if the pool was cut already, that happens
// at once. g.mu is held.
func (g *Group) addInPool() {
	if !g.live {
		if g.pool.live.add(g) {
			g.live = true
		} else {
			g.cancel(errShutdownCut)
		}
	}
	g.inPool++
}

// settledAll reports whether Wait may return: no task is running, and no
// other task will start, as none is left or the group's context is done.
// g.mu is held.
func (g *Group) settledAll() bool {
	return g.running == 0 && (g.inPool == 0 && g.held.Len() == 0 || g.ctx.Err() != nil)
}

// submit gives fn, already counted in inPool, to the pool as a task of
// the group.
func (g *Group) submit(fn func(context.Context) error) {
	t := g.pool.newGroupTask(g, fn)
	if send(g.pool, message{req: &t.request}) != nil {
		t.settle(ErrStopped, false)
	}
}

// start runs on a worker just before fn: it counts the task as running, or
// returns the context's error if the group is canceled. Deciding under mu
// means Wait never returns while a task it did not see is starting.
func (g *Group) start() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ctx.Err() != nil {
		return g.canceledBy()
	}
	g.running++
	return nil
}

// settled runs once per task given to the pool, when it settles; ran says
// whether fn was called. The first error cancels the group; otherwise the
// freed slot goes to a held task.
//
// Dispatch calls it too, for a task it skips or abandons. It never blocks
// there: dispatch skips a task only once the group's context is done, and
// abandons one only while the pool stops, and in both cases no held task
// is given to the pool, whose taskQueue dispatch would then have to
// receive from itself.
func (g *Group) settled(ran bool, err error) {
	g.mu.Lock()
	g.inPool--
	if ran {
		g.running--
	}
	first := err != nil && g.err == nil
	g.record(err)
	next := g.takeHeld()
	if g.settledAll() {
		g.changed.Broadcast()
	}
	g.mu.Unlock()
	if first {
		g.cancel(err)
	}
	if next != nil {
		g.submit(next)
	}
}

// takeHeld returns the next held task if it may go to the pool now, counted
// in inPool, or nil. While the group is canceled or failed nothing is
// released, and while the pool stops the held tasks are dropped with
// ErrStopped, as the pool would reject them. g.mu is held.
func (g *Group) takeHeld() func(context.Context) error {
	switch {
	case g.held.Len() == 0, g.limit > 0 && g.inPool >= g.limit, g.err != nil, g.ctx.Err() != nil:
		return nil
	case g.pool.Stopped():
		g.dropHeld(ErrStopped)
		return nil
	}
	g.addInPool()
	return g.held.PopFront()
}

// canceled runs once the group's context is done: held tasks are dropped,
// and Wait rechecks.
func (g *Group) canceled() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.dropHeld(g.canceledBy())
	g.changed.Broadcast()
}

// dropHeld drops the held tasks, which then never run, and records why.
// g.mu is held.
func (g *Group) dropHeld(why error) {
	if g.held.Len() > 0 {
		g.record(why)
		g.held.Clear()
	}
}

// canceledBy is the error that skipped tasks report once the group's
// context is done: the cause of its cancellation, such as the first error,
// the parent's cause, or one wrapping ErrStopped from a Shutdown that gave
// up.
func (g *Group) canceledBy() error { return context.Cause(g.ctx) }

// record keeps err as the group's error if it is the first. g.mu is held.
func (g *Group) record(err error) {
	if g.err == nil {
		g.err = err
	}
}

// A groupTask carries one fn of a Group through the pool: it is the tracked
// value that dispatch keeps while the task is queued, and its run func is
// what a worker calls. The pool reuses groupTasks through
// WorkerPool.groupTasks, so that Group.Go does not allocate; one goes back
// to the cache as soon as it settled. No claim is needed: while queued only
// dispatch touches it, and once handed out only its worker does.
type groupTask struct {
	group   *Group
	fn      func(ctx context.Context) error
	run     func()  // t.execute, bound once
	request request // {tracked: t}, set once
}

func (p *WorkerPool) newGroupTask(g *Group, fn func(context.Context) error) *groupTask {
	t, _ := p.groupTasks.Get().(*groupTask)
	if t == nil {
		t = new(groupTask)
		t.run = t.execute
		t.request.tracked = t
	}
	t.group, t.fn = g, fn
	return t
}

func (t *groupTask) runner() func() { return t.run }

// skip drops a queued task whose group is canceled.
func (t *groupTask) skip() bool {
	if t.group.ctx.Err() == nil {
		return false
	}
	t.settle(t.group.canceledBy(), false)
	return true
}

// abandon settles a task that stop dropped: with ErrStopped, or with the
// group's context error if that was done first (the task then counts as
// canceled).
func (t *groupTask) abandon() (canceled bool) {
	canceled = t.group.ctx.Err() != nil
	err := ErrStopped
	if canceled {
		err = t.group.canceledBy()
	}
	t.settle(err, false)
	return canceled
}

// execute runs on a worker: fn runs unless the group is canceled by now.
func (t *groupTask) execute() {
	g := t.group
	if err := g.start(); err != nil {
		g.pool.ran.skipped.Add(1)
		t.settle(err, false)
		return
	}
	g.pool.call(g.ctx, funcBody(t.fn), t.settleRan)
}

func (t *groupTask) settleRan(err error) { t.settle(err, true) }

// settle returns t to the cache and tells its group; ran says whether fn
// was called.
func (t *groupTask) settle(err error, ran bool) {
	g := t.group
	t.group, t.fn = nil, nil
	g.pool.groupTasks.Put(t)
	g.settled(ran, err)
}
