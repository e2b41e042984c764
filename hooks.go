package workerpool

import (
	"context"
	"time"
)

// Hooks are funcs the pool calls as tasks start, finish and are given up,
// for metrics and tracing (see WithHooks). Each may be nil; a nil hook
// costs nothing. No hook ever runs on the dispatcher goroutine:
// TaskStarted and TaskFinished run on the workers, TaskDropped on the
// pool's delivery goroutine or in the submitting call that refused the
// task (see WithHooks). Several may run at once: each must be safe for
// concurrent use, and quick, as it delays the task or the next one.
//
// Each hook learns which task it is about in a TaskInfo, passed by value:
// the pool's name, the task's Label, priority, weight and attempt, and
// the times and outcome of the run.
//
// A hook that panics is treated like a task's panic: with a panic handler
// (WithPanicHandler) it is recovered and handed to the handler, logged,
// and the pool goes on (a task whose TaskStarted panicked still runs, with
// the ctx TaskStarted was given, and no TaskFinished for that run); without
// one it crashes the program. It is not counted in Status.Panicked.
type Hooks struct {
	// TaskStarted runs on the worker just before each run of a task. The ctx it returns
	// is the one the task runs with (Go, Call, Group.Go; a plain func() ignores it) and
	// the one TaskFinished gets; a nil ctx means ctx. ctx is, for Go and Call, the
	// Task's context (the caller's ctx, also canceled by Cancel); for Group.Go the
	// group's; for DoContext its ctx's values without its cancellation
	// (context.WithoutCancel); for DoWaitContext its ctx; for Submit, Do, DoWait and the other plain calls
	// context.Background(). So a span started here is a child of the submitter's
	// span and the parent of everything the task does. t.Waited is set, t.Ran and
	// t.Err are not. A TaskStarted that calls runtime.Goexit ends the run
	// before the task's func is called: the task never runs, whoever waits
	// for it learns an error wrapping ErrGoexit that says so, and a plain
	// task no one waits for goes to the dead-letter handler with it.
	TaskStarted func(ctx context.Context, t TaskInfo) context.Context
	// TaskFinished runs on the worker after each run: its func returned, panicked or
	// called runtime.Goexit. ctx is what TaskStarted returned (without TaskStarted,
	// the ctx it would have been given). It does not run for a run whose
	// TaskStarted did not return (it panicked, or called runtime.Goexit): what
	// TaskStarted began for the run, it never got to hand on. t.Ran is the
	// run's time and t.Err its outcome: the handle's error, a *PanicError for
	// any recovered panic (plain funcs under a panic handler included),
	// ErrGoexit for runtime.Goexit, nil for a plain func that returned. Each
	// attempt under Retry is one start and one finish, with its own t.Attempt
	// and t.Err.
	TaskFinished func(ctx context.Context, t TaskInfo)
	// TaskDropped runs for each task that will never run, with why in t.Err: errors
	// wrapping ErrStopped (abandoned), ErrQueueFull (refused), ErrDropped, ErrExpired,
	// ErrTooHeavy, or the ctx error for a canceled task: exactly once for each task
	// counted in Rejected, Dropped, Abandoned, Canceled or Expired, whatever the call
	// (a refused Do, Go or TrySubmit included). t.Attempt is the attempt that never
	// ran (above 1 for a task given up while it waited for a retry); t.Waited and
	// t.Ran are 0. Never on the dispatcher goroutine; for tasks given up before or
	// during a stop, before Stop, StopWait or Shutdown returns. Status.Dropped counts
	// only the tasks dropped from a full queue (DropOldest) or heavier than the pool
	// after a Resize; TaskDropped is told of every task that never runs, whatever the
	// reason, so its calls are Rejected + Dropped + Abandoned + Canceled + Expired.
	TaskDropped func(t TaskInfo)
}

// TaskInfo tells a hook which task, and which run of it, a call is about
// (see Hooks). It is passed by value: the pool allocates nothing for it.
type TaskInfo struct {
	Pool     string        // the pool's name (see WithName)
	Label    string        // the task's Label, "" if none
	Key      string        // the task's Key, "" if none
	Priority int           // the task's Priority: 0 for a plain task
	Weight   int           // the task's Weight: 1 for a plain task
	Attempt  int           // 1 for the first run, 2, ... under Retry
	Waited   time.Duration // from ready (accepted, due, or retry due) to this run's start
	Ran      time.Duration // this run's time; TaskFinished only
	Err      error         // TaskFinished: this run's outcome; TaskDropped: why it never ran
}

// timed reports whether the hooks need tasks' wait and run times.
func (h *Hooks) timed() bool {
	return h.TaskStarted != nil || h.TaskFinished != nil
}

// infoOf is the TaskInfo of a task with options o (nil: a plain task's)
// for its attempt-th run, or given up with why before it.
func (p *WorkerPool) infoOf(o *taskOptions, attempt int, why error) TaskInfo {
	t := TaskInfo{Pool: p.cfg.name, Weight: 1, Attempt: attempt, Err: why}
	if o != nil {
		t.Label, t.Key, t.Priority, t.Weight = o.label, o.key, o.priority, o.weight
	}
	return t
}

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
func (p *WorkerPool) startRun(readyAt int64, info TaskInfo, ctx context.Context) taskRun {
	start := p.now()
	info.Waited = time.Duration(max(start-readyAt, 0))
	return taskRun{info: info, ctx: ctx, start: start, started: p.cfg.hooks.TaskStarted == nil}
}

// taskStarted calls TaskStarted for r, and returns the ctx the task runs
// with, which TaskFinished gets too.
func (p *WorkerPool) taskStarted(r *taskRun) context.Context {
	if p.cfg.hooks.TaskStarted != nil {
		r.ctx, r.started = p.callTaskStarted(r.ctx, r.info)
	}
	return r.ctx
}

// finishRun, deferred directly around a run that r started, reads the
// clock as the run ends with *err and calls TaskFinished. It is deferred
// before TaskStarted is called, so a hook that calls runtime.Goexit ends
// the run, not the pool's bookkeeping. A panic that no one recovered (a
// func() task's, with no panic handler) is recovered here only to give
// TaskFinished its *PanicError, and then raised again with the same value:
// it crashes the program as before, its stack showing the task's frames.
func (p *WorkerPool) finishRun(r *taskRun, err *error) {
	if p.cfg.hooks.TaskFinished == nil || !r.started {
		return // recover not called: a panic goes on
	}
	if v := recover(); v != nil {
		p.callTaskFinished(r, panicErrorFor(v))
		panic(v)
	}
	p.callTaskFinished(r, *err)
}

// since is the time from start, on the pool's clock, to now.
func (p *WorkerPool) since(start int64) time.Duration {
	return time.Duration(max(p.now()-start, 0))
}

// callTaskStarted calls TaskStarted and returns the ctx it returned, or
// ctx if it returned nil or panicked, and whether it returned.
func (p *WorkerPool) callTaskStarted(ctx context.Context, info TaskInfo) (next context.Context, returned bool) {
	next = ctx
	if p.cfg.panicHandler != nil {
		defer p.recoverCallbackPanic("TaskStarted hook")
	}
	if c := p.cfg.hooks.TaskStarted(ctx, info); c != nil {
		next = c
	}
	return next, true
}

func (p *WorkerPool) callTaskFinished(r *taskRun, err error) {
	if p.cfg.panicHandler != nil {
		defer p.recoverCallbackPanic("TaskFinished hook")
	}
	info := r.info
	info.Ran, info.Err = p.since(r.start), err
	p.cfg.hooks.TaskFinished(r.ctx, info)
}

func (p *WorkerPool) callTaskDropped(info TaskInfo) {
	if p.cfg.panicHandler != nil {
		defer p.recoverCallbackPanic("TaskDropped hook")
	}
	p.cfg.hooks.TaskDropped(info)
}

// refused tells TaskDropped about n tasks with options o (nil: plain ones)
// that the calling submit refuses with reason, in the caller's goroutine.
func (p *WorkerPool) refused(reason error, n int, o *taskOptions) {
	if p.cfg.hooks.TaskDropped == nil {
		return
	}
	info := p.infoOf(o, 1, reason)
	for range n {
		p.callTaskDropped(info)
	}
}

// runTimed runs a plain task between TaskStarted and TaskFinished, and
// reports whether it panicked (see callPlain); it became ready at readyAt.
// A task whose TaskStarted ended the goroutine never ran: it goes to the
// dead-letter handler (see giveUpStarted).
func (p *WorkerPool) runTimed(task func(), readyAt int64) (panicked bool) {
	err, called := ErrGoexit, false
	defer func() {
		if !called {
			p.giveUpStarted(task, errTaskStartedGoexit)
		}
	}()
	r := p.startRun(readyAt, p.infoOf(nil, 1, nil), context.Background())
	defer p.finishRun(&r, &err)
	p.taskStarted(&r)
	called = true
	panicked, err = p.callPlain(task, nil)
	return panicked
}
