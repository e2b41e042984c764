package workerpool

import (
	"context"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gammazero/deque"
)

// An observer is what the pool tells the outside: its logger, its hooks
// (Hooks, with the Panic hook's recovery around every func of the user's),
// and the dead letters on their way to TaskDropped and DeadLetter. New
// builds it from the config; it changes only the dead letters' queue, under
// their lock. Workers, submitters, settlers and the dispatcher all call it;
// it sees no part of the pool but the goroutine group that a deliverer
// joins, so that a stop waits for it.
type observer struct {
	log        *slog.Logger    // hooks.Logger; nil: no logging
	hooks      Hooks           // WithHooks's, merged
	clock      clock           // the pool's, for wait and run times
	goroutines *sync.WaitGroup // the pool's goroutines: a deliverer joins them
	dead       deadLetters     // the letters on their way to the dead-letter handler
}

func newObserver(cfg *config, c clock, goroutines *sync.WaitGroup) observer {
	return observer{log: cfg.hooks.Logger, hooks: cfg.hooks, clock: c, goroutines: goroutines}
}

// --- the hooks around a run ---

// A taskRun is one run of a task in a timed pool: what the hooks are told
// about it, the ctx they pass on, when it started on the pool's clock, and
// whether TaskStarted returned for it (without TaskStarted, it did).
type taskRun struct {
	info    TaskInfo
	ctx     context.Context
	start   int64
	started bool
}

// startRun reads the clock as a run of a task that became ready at readyAt
// (see readyNow) starts, with info and ctx as TaskStarted is to get them.
func (o *observer) startRun(readyAt int64, info TaskInfo, ctx context.Context) taskRun {
	start := o.clock.now()
	info.Waited = time.Duration(max(start-readyAt, 0))
	return taskRun{info: info, ctx: ctx, start: start, started: o.hooks.TaskStarted == nil}
}

// taskStarted calls TaskStarted for r, and returns the ctx the task runs
// with, which TaskFinished gets too.
func (o *observer) taskStarted(r *taskRun) context.Context {
	if o.hooks.TaskStarted != nil {
		r.ctx, r.started = o.callTaskStarted(r.ctx, r.info)
	}
	return r.ctx
}

// finishRun, deferred directly around a run that r started, reads the
// clock as the run ends with *err and calls TaskFinished. It is deferred
// before TaskStarted is called, so a hook that calls runtime.Goexit ends
// the run, not the pool's bookkeeping. A panic that no one recovered (a
// func() task's, with no Panic hook) is recovered here only to give
// TaskFinished its *PanicError, and then raised again with the same value:
// it crashes the program as before, its stack showing the task's frames.
func (o *observer) finishRun(r *taskRun, err *error) {
	if o.hooks.TaskFinished == nil || !r.started {
		return // recover not called: a panic goes on
	}
	if v := recover(); v != nil {
		o.callTaskFinished(r, panicErrorFor(v))
		panic(v)
	}
	o.callTaskFinished(r, *err)
}

// since is the time from start, on the pool's clock, to now.
func (o *observer) since(start int64) time.Duration {
	return time.Duration(max(o.clock.now()-start, 0))
}

// callTaskStarted calls TaskStarted and returns the ctx it returned, or
// ctx if it returned nil or panicked, and whether it returned.
func (o *observer) callTaskStarted(ctx context.Context, info TaskInfo) (next context.Context, returned bool) {
	next = ctx
	if o.hooks.Panic != nil {
		defer o.recoverCallbackPanic("TaskStarted hook")
	}
	if c := o.hooks.TaskStarted(ctx, info); c != nil {
		next = c
	}
	return next, true
}

func (o *observer) callTaskFinished(r *taskRun, err error) {
	if o.hooks.Panic != nil {
		defer o.recoverCallbackPanic("TaskFinished hook")
	}
	info := r.info
	info.Ran, info.Err = o.since(r.start), err
	o.hooks.TaskFinished(r.ctx, info)
}

func (o *observer) callTaskDropped(info TaskInfo) {
	if o.hooks.Panic != nil {
		defer o.recoverCallbackPanic("TaskDropped hook")
	}
	o.hooks.TaskDropped(info)
}

// refused tells TaskDropped about n tasks with options o (nil: plain ones)
// that the calling submit refuses with reason, in the caller's goroutine.
func (o *observer) refused(reason error, n int, opts *taskOptions) {
	if o.hooks.TaskDropped == nil {
		return
	}
	info := infoOf(opts, 1, reason)
	for range n {
		o.callTaskDropped(info)
	}
}

// runTimed runs a plain task between TaskStarted and TaskFinished, and
// reports whether it panicked (see callPlain); it became ready at readyAt.
// A task whose TaskStarted ended the goroutine never ran: it goes to the
// dead-letter handler (see giveUpStarted).
func (o *observer) runTimed(task func(), readyAt int64) (panicked bool) {
	err, called := ErrGoexit, false
	defer func() {
		if !called {
			o.giveUpStarted(task, errTaskStartedGoexit)
		}
	}()
	r := o.startRun(readyAt, infoOf(nil, 1, nil), context.Background())
	defer o.finishRun(&r, &err)
	o.taskStarted(&r)
	called = true
	panicked, err = o.callPlain(task, nil)
	return panicked
}

// --- panics: the Panic hook around the user's funcs ---

// callPlain runs a func() task: a plain one, or the task of j, a DoWait
// call's or a carried plain task's (j nil for a plain task). With a
// Panic hook it recovers a panic, calls the hook and reports that fn
// panicked; without one the panic crashes the program. It returns the
// recovered panic as a *PanicError if a TaskFinished hook or the logger
// looks at it, else nil.
func (o *observer) callPlain(fn func(), j *job) (panicked bool, err error) {
	if o.hooks.Panic != nil {
		defer o.recoverPanic(&panicked, &err, j)
	}
	fn()
	return false, nil
}

// recoverPanic must be deferred directly: recover only stops a panic when
// called by the deferred function itself. The handler runs before the
// panicking frames unwind, and so does the logging. It does not count the
// panic: the worker does, once the task completes (see returned).
func (o *observer) recoverPanic(panicked *bool, err *error, j *job) {
	if r := recover(); r != nil {
		*panicked = true
		if o.hooks.TaskFinished != nil || o.log != nil {
			e := panicErrorFor(r)
			o.logTaskPanic("task", e, j)
			*err = e
		}
		o.hooks.Panic(r)
	}
}

// recoverCallbackPanic is recoverPanic for a func of the pool's user that
// is not a task (what names it: a hook, the dead-letter handler): the
// panic is logged and handed to the Panic hook, but not counted in
// Status.Panicked. Deferred only with a Panic hook.
func (o *observer) recoverCallbackPanic(what string) {
	if r := recover(); r != nil {
		if o.log != nil {
			o.logPanic(what, panicErrorFor(r))
		}
		o.hooks.Panic(r)
	}
}

// --- logging ---

// logPanic logs a recovered panic: what panicked, its value and stack.
func (o *observer) logPanic(what string, e *PanicError) {
	if o.log != nil {
		o.log.Error(what+" panicked", "panic", e.Value, "stack", string(e.Stack))
	}
}

// logTaskPanic logs a recovered panic of a task's run, or of what it
// calls (its retry policy), with the task's label, if it has one, and
// attempt: of job j, or of a plain task if j is nil.
func (o *observer) logTaskPanic(what string, e *PanicError, j *job) {
	if o.log == nil {
		return
	}
	info := infoOf(nil, 1, nil)
	if j != nil {
		info = j.info(nil)
	}
	args := make([]any, 0, 8)
	if info.Label != "" {
		args = append(args, "label", info.Label)
	}
	args = append(args, "attempt", info.Attempt, "panic", e.Value, "stack", string(e.Stack))
	o.log.Error(what+" panicked", args...)
}

// panicErrorFor makes the *PanicError for a panic just recovered, r, from
// the frames still on the stack. Call it in the deferred func that
// recovered r.
func panicErrorFor(r any) *PanicError {
	return &PanicError{Value: r, Stack: debug.Stack()}
}

// logDebug logs msg at Debug, if the logger takes Debug records.
func (o *observer) logDebug(msg string, args ...any) {
	if o.log != nil && o.log.Enabled(context.Background(), slog.LevelDebug) {
		o.log.Debug(msg, args...)
	}
}

// logResized logs a Resize.
func (o *observer) logResized(from, to int64) {
	if o.log != nil {
		o.log.Info("pool resized", "from", from, "to", to)
	}
}

// logStopped logs the final counts of a pool that has stopped.
func (o *observer) logStopped(s Status) {
	if o.log == nil {
		return
	}
	o.log.Info("pool stopped",
		"submitted", s.Submitted,
		"completed", s.Completed,
		"panicked", s.Panicked,
		"abandoned", s.Abandoned,
		"canceled", s.Canceled,
		"dropped", s.Dropped,
		"expired", s.Expired,
		"retried", s.Retried,
		"rejected", s.Rejected,
	)
}

// --- dead letters ---

// deadLetters hands the tasks that will never run, and whose submitting
// call cannot tell it, to the TaskDropped hook (see Hooks) and, the plain
// ones, to Hooks.DeadLetter: one task at a time, in the
// order they were given up, on a goroutine of the pool (never the
// dispatcher's). A deliverer goroutine starts, in the pool's goroutines, when the
// first letter comes and returns once it has delivered them all, so a stop
// waits for it and an idle pool keeps none.
type deadLetters struct {
	mu         sync.Mutex
	letters    deque.Deque[deadLetter] // given up, not yet delivered, oldest first
	delivering bool                    // a deliverer goroutine is running
	sealed     bool                    // the pool stopped: no letter is taken any more
}

// A deadLetter is one task given up, and what TaskDropped learns of it
// (why in info.Err): a plain task, or a job (task nil), of which only
// TaskDropped learns.
type deadLetter struct {
	task func()
	info TaskInfo
	// started says the task's run began, and its func was never called
	// (see giveUpStarted): TaskDropped, which tells of the tasks that
	// never start, is not told.
	started bool
}

// giveUp queues a letter for task (nil for a job) with info, whose Err is
// why the task was given up (see post). It reports false, and takes
// nothing, once the pool has stopped (see seal): the caller then treats a
// plain task as refused because the pool stopped.
func (o *observer) giveUp(task func(), info TaskInfo) bool {
	told := o.hooks.TaskDropped != nil || task != nil && o.hooks.DeadLetter != nil
	return o.post(deadLetter{task: task, info: info}, told)
}

// post queues l, if anyone is told of it, and starts a deliverer if none
// is running. It reports false, and takes nothing, once the pool has
// stopped. The deliverer starts under d.mu, so that it is in the pool's goroutines
// before seal returns and a stop waits for it.
func (o *observer) post(l deadLetter, told bool) bool {
	d := &o.dead
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sealed {
		return false
	}
	if !told {
		return true // no one to tell: Status counts it
	}
	d.letters.PushBack(l)
	if !d.delivering {
		d.delivering = true
		o.goroutines.Go(o.deliverDeadLetters)
	}
	return true
}

// seal takes no letter any more. Dispatch calls it as it stops, after the
// last task was given up; a stop then waits for the deliverer to deliver
// every letter.
func (d *deadLetters) seal() {
	d.mu.Lock()
	d.sealed = true
	d.mu.Unlock()
}

// deliverDeadLetters is the deliverer goroutine.
func (o *observer) deliverDeadLetters() {
	d := &o.dead
	handedOver := false
	defer func() {
		if !handedOver {
			// The handler called runtime.Goexit (or panicked with no
			// Panic hook, and the program is going down): a fresh
			// deliverer takes over the letters left.
			o.goroutines.Go(o.deliverDeadLetters)
		}
	}()
	for {
		d.mu.Lock()
		if d.letters.Len() == 0 {
			d.delivering = false
			d.mu.Unlock()
			handedOver = true
			return
		}
		l := d.letters.PopFront()
		d.mu.Unlock()
		o.deliver(l)
	}
}

// deliver tells TaskDropped about one letter, then gives a plain task to
// the dead-letter handler.
func (o *observer) deliver(l deadLetter) {
	if l.task != nil && o.hooks.DeadLetter != nil {
		defer o.callDeadLetter(l) // also if TaskDropped calls runtime.Goexit
	}
	if o.hooks.TaskDropped != nil && !l.started {
		o.callTaskDropped(l.info)
	}
}

// giveUpStarted gives a plain task whose run began, but whose func was
// never called, to the dead-letter handler with why: its TaskStarted hook
// ended the worker's goroutine with runtime.Goexit (see
// errTaskStartedGoexit). The task counts in Completed, as a run that ended
// in runtime.Goexit does, so TaskDropped is not told. (A worker stops only
// after the letters are sealed.)
func (o *observer) giveUpStarted(task func(), why error) {
	o.post(deadLetter{task: task, info: infoOf(nil, 1, why), started: true}, o.hooks.DeadLetter != nil)
}

// callDeadLetter calls the dead-letter handler. A panic in it is treated as
// a task's: the Panic hook takes it if there is one.
func (o *observer) callDeadLetter(l deadLetter) {
	if o.hooks.Panic != nil {
		defer o.recoverCallbackPanic("dead-letter handler")
	}
	o.hooks.DeadLetter(l.task, l.info.Err)
}

// tellDropped tells TaskDropped about a job that will never run, with
// info, whose Err is the reason its owner learns, through the deliverer.
// (Once the pool stopped every job is final, so none is settled after the
// letters are sealed; should one be, it is told in place, never by
// dispatch, which sealed them as its last act.)
func (o *observer) tellDropped(info TaskInfo) {
	if o.hooks.TaskDropped != nil && !o.giveUp(nil, info) {
		o.callTaskDropped(info)
	}
}

// giveUpPlain gives up a plain task without options with why (see giveUp).
func (o *observer) giveUpPlain(task func(), why error) bool {
	return o.giveUp(task, infoOf(nil, 1, why))
}
