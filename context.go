package workerpool

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"weak"
)

// errShutdownCut is the cause of the context cancellation a Shutdown that
// gives up waiting sends to running tasks.
var errShutdownCut = fmt.Errorf("%w: Shutdown gave up waiting", ErrStopped)

// taskContext is the context a Task's fn receives: the caller's ctx, also
// canceled by Task.cancel, by a Shutdown that gives up waiting, and once fn
// has returned (or will never run).
//
// Behind it is an ordinary cancelable context, made from the caller's ctx
// by context.WithCancelCause when fn first needs it: when fn calls Done, or
// Err or Value after a cancellation. So a fn that never looks at its
// context costs no allocation for it, and contexts that fn derives from it
// are ordinary children of a standard context: context.WithCancel(ctx)
// inside fn starts no goroutine.
type taskContext struct {
	parent context.Context // the caller's ctx; set before the Task is submitted
	pool   *WorkerPool

	mu          sync.Mutex              // guards the fields below, and the Task's done and unwatch
	inner       context.Context         // nil until fn needs it
	cancelInner context.CancelCauseFunc // cancels inner
	cause       causeCode               // why the task was canceled before inner was made, if it was
	live        bool                    // inner is in pool.live
	closed      bool                    // the Task concluded: a done channel made from now on is made closed
	watched     bool                    // the Task watches the caller's ctx (see Task.doneChan)
}

// A causeCode stands for the cause of a task's cancellation before its
// inner context was made, in a byte rather than an error value: the only
// two are Task.cancel's (and the task's end's) and a Shutdown that gave up.
type causeCode uint8

const (
	notCanceled causeCode = iota
	canceledByCall
	canceledByCut
)

func codeOf(cause error) causeCode {
	if cause == errShutdownCut {
		return canceledByCut
	}
	return canceledByCall
}

func (c causeCode) err() error {
	if c == canceledByCut {
		return errShutdownCut
	}
	return context.Canceled
}

// Deadline returns the caller's ctx's deadline.
func (c *taskContext) Deadline() (time.Time, bool) { return c.parent.Deadline() }

// Done returns the channel the inner context closes when it is canceled.
func (c *taskContext) Done() <-chan struct{} { return c.get(true).Done() }

// Err returns nil until the task is canceled in any way, and then the
// inner context's error, which never changes after.
func (c *taskContext) Err() error {
	if ctx := c.get(false); ctx != nil {
		return ctx.Err()
	}
	return nil
}

// Value returns the caller's ctx's value for key (once the inner context
// exists, through it, so that the context package finds it).
func (c *taskContext) Value(key any) any {
	if ctx := c.get(false); ctx != nil {
		return ctx.Value(key)
	}
	return c.parent.Value(key)
}

// String names the context for debugging, as the context package does.
func (c *taskContext) String() string {
	return fmt.Sprintf("%v.WithWorkerpoolTask", c.parent)
}

// get returns the inner context, making it first if needed: always when
// need is set, and otherwise once something canceled the task. It returns
// nil while there is no inner context and nothing canceled the task.
func (c *taskContext) get(need bool) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inner == nil {
		if !need && c.cause == notCanceled && !c.pool.live.isCut() && c.parent.Err() == nil {
			return nil
		}
		c.makeInner()
	}
	return c.inner
}

// makeInner makes the inner context, canceled at once if the task was
// canceled before, and otherwise registered in pool.live, so that a
// Shutdown that gives up can cancel it. c.mu is held.
func (c *taskContext) makeInner() {
	c.inner, c.cancelInner = context.WithCancelCause(c.parent)
	switch {
	case c.cause != notCanceled:
		c.cancelInner(c.cause.err())
	case c.pool.live.add(c):
		c.live = true
	default: // the pool was cut
		c.cancelInner(errShutdownCut)
	}
}

// cancel cancels the context with cause, unless it is canceled already.
func (c *taskContext) cancel(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancelLocked(cause)
}

func (c *taskContext) cancelLocked(cause error) {
	switch {
	case c.inner != nil:
		c.cancelInner(cause)
	case c.cause == notCanceled:
		c.cause = codeOf(cause)
	}
}

// releaseLocked runs once the task concluded: it cancels the context,
// which frees the inner one from the caller's ctx, and takes it out of
// pool.live. c.mu is held.
func (c *taskContext) releaseLocked() {
	c.cancelLocked(context.Canceled)
	if c.live {
		c.pool.live.remove(c)
		c.live = false
	}
}

// liveTasks holds what a Shutdown that gives up waiting cancels at once
// (cut): the contexts of running Tasks, and the Groups. A Task that makes
// its context after the cut finds it canceled, and so does a Group made
// after it. Lock order: a taskContext's mu, then liveTasks.mu.
type liveTasks struct {
	mu   sync.Mutex
	cut  atomic.Bool               // set once, under mu, by cutAll
	ctxs map[*taskContext]struct{} // running Tasks' inner contexts; each leaves when its task settles
	// groups holds every Group made on the pool, weakly: the pool never
	// keeps a group alive, so one whose tasks have finished can be
	// collected, waited for or not. A group's tasks hold it while they are
	// in the pool, so the cut reaches every group that has work.
	groups     []weak.Pointer[Group]
	groupsKept int // len(groups) after the last prune
}

func (l *liveTasks) isCut() bool { return l.cut.Load() }

// add registers c, or reports false if the pool was cut.
func (l *liveTasks) add(c *taskContext) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut.Load() {
		return false
	}
	if l.ctxs == nil {
		l.ctxs = make(map[*taskContext]struct{})
	}
	l.ctxs[c] = struct{}{}
	return true
}

func (l *liveTasks) remove(c *taskContext) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.ctxs, c)
}

// addGroup registers g, or reports false if the pool was cut. Once the
// list has doubled since it was last pruned, the collected groups are
// dropped from it.
func (l *liveTasks) addGroup(g *Group) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut.Load() {
		return false
	}
	if len(l.groups) >= 2*max(l.groupsKept, 16) {
		l.groups = slices.DeleteFunc(l.groups, func(w weak.Pointer[Group]) bool { return w.Value() == nil })
		l.groupsKept = len(l.groups)
	}
	l.groups = append(l.groups, weak.Make(g))
	return true
}

// cutAll cancels every registered context and group, and makes later ones
// start canceled. It holds no other lock while it cancels.
func (l *liveTasks) cutAll() {
	l.mu.Lock()
	l.cut.Store(true)
	ctxs, groups := l.ctxs, l.groups
	l.ctxs, l.groups = nil, nil
	l.mu.Unlock()
	for c := range ctxs {
		c.cancel(errShutdownCut)
	}
	for _, w := range groups {
		if g := w.Value(); g != nil {
			g.cancel(errShutdownCut)
		}
	}
}
