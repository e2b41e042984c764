package workerpool

import "time"

// Hooks are funcs the pool calls as tasks start, finish and are given up,
// for metrics and tracing (see WithHooks). Each may be nil; a nil hook
// costs nothing. No hook ever runs on the dispatcher goroutine:
// TaskStarted and TaskFinished run on the workers, TaskDropped on the
// pool's delivery goroutine or in the submitting call that refused the
// task (see WithHooks). Several may run at once: each must be safe for
// concurrent use, and quick, as it delays the task or the next one.
//
// A hook that panics is treated like a task's panic: with a panic handler
// (WithPanicHandler) it is recovered and handed to the handler, logged,
// and the pool goes on (a task whose TaskStarted panicked still runs);
// without one it crashes the program. It is not counted in
// Status.Panicked.
type Hooks struct {
	// TaskStarted runs in the worker goroutine just before a task's func runs; waited is the
	// time from acceptance (or from becoming due, for delayed tasks and retries) to start.
	TaskStarted func(waited time.Duration)
	// TaskFinished runs in the worker goroutine after the func returned, panicked or called
	// runtime.Goexit; err is the handle's error, a *PanicError for any recovered panic (plain
	// funcs under a panic handler included), nil for a plain func that returned. Each retry
	// attempt is one start and one finish, with that attempt's own error.
	TaskFinished func(waited, ran time.Duration, err error)
	// TaskDropped runs for each task that will never run, with the reason: errors wrapping
	// ErrStopped (abandoned), ErrQueueFull (refused), ErrDropped, ErrExpired, ErrTooHeavy,
	// or the ctx error for a canceled task: exactly once for each task counted in Rejected,
	// Dropped, Abandoned, Canceled or Expired, whatever the call (a refused Do, Go or
	// TrySubmit included). Never on the dispatcher goroutine; for tasks given up before or
	// during a stop, before Stop, StopWait or Shutdown returns. Status.Dropped counts only the tasks dropped from a full queue (DropOldest) or heavier than the pool after a Resize; the TaskDropped hook is told of every task that never runs, whatever the reason, so its calls are Rejected + Dropped + Abandoned + Canceled + Expired.
	TaskDropped func(reason error)
}

// timed reports whether the hooks need tasks' wait and run times.
func (h *Hooks) timed() bool {
	return h.TaskStarted != nil || h.TaskFinished != nil
}

// A runClock is when a run of a task started, on the pool's clock, and how
// long the task had waited for it.
type runClock struct {
	waited time.Duration
	start  int64
}

// startRun reads the clock as a run of a task that became ready at readyAt
// (see readyNow) starts.
func (p *WorkerPool) startRun(readyAt int64) runClock {
	start := p.now()
	return runClock{waited: time.Duration(max(start-readyAt, 0)), start: start}
}

// taskStarted calls TaskStarted for the run that c started.
func (p *WorkerPool) taskStarted(c runClock) {
	if p.cfg.hooks.TaskStarted != nil {
		p.callTaskStarted(c.waited)
	}
}

// taskFinished, deferred directly around a run that c started, reads the
// clock as the run ends with *err and calls TaskFinished. It is deferred
// before TaskStarted is called, so a hook that calls runtime.Goexit ends
// the run, not the pool's bookkeeping. A panic that no one recovered (a
// func() task's, with no panic handler) is recovered here only to give
// TaskFinished its *PanicError, and then raised again with the same value:
// it crashes the program as before, its stack showing the task's frames.
func (p *WorkerPool) taskFinished(c runClock, err *error) {
	if p.cfg.hooks.TaskFinished == nil {
		return // recover not called: a panic goes on
	}
	if r := recover(); r != nil {
		p.callTaskFinished(c.waited, p.since(c.start), panicErrorFor(r))
		panic(r)
	}
	p.callTaskFinished(c.waited, p.since(c.start), *err)
}

// since is the time from start, on the pool's clock, to now.
func (p *WorkerPool) since(start int64) time.Duration {
	return time.Duration(max(p.now()-start, 0))
}

func (p *WorkerPool) callTaskStarted(waited time.Duration) {
	if p.cfg.panicHandler != nil {
		defer p.recoverCallbackPanic("TaskStarted hook")
	}
	p.cfg.hooks.TaskStarted(waited)
}

func (p *WorkerPool) callTaskFinished(waited, ran time.Duration, err error) {
	if p.cfg.panicHandler != nil {
		defer p.recoverCallbackPanic("TaskFinished hook")
	}
	p.cfg.hooks.TaskFinished(waited, ran, err)
}

func (p *WorkerPool) callTaskDropped(reason error) {
	if p.cfg.panicHandler != nil {
		defer p.recoverCallbackPanic("TaskDropped hook")
	}
	p.cfg.hooks.TaskDropped(reason)
}

// refused tells TaskDropped about n tasks that the calling submit refuses
// with reason, in the caller's goroutine.
func (p *WorkerPool) refused(reason error, n int) {
	if p.cfg.hooks.TaskDropped == nil {
		return
	}
	for range n {
		p.callTaskDropped(reason)
	}
}

// runTimed runs a plain task between TaskStarted and TaskFinished, and
// reports whether it panicked (see callPlain); it became ready at readyAt.
func (p *WorkerPool) runTimed(task func(), readyAt int64) (panicked bool) {
	c := p.startRun(readyAt)
	err := ErrGoexit
	defer p.taskFinished(c, &err)
	p.taskStarted(c)
	panicked, err = p.callPlain(task)
	return panicked
}
