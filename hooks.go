package workerpool

import "time"

// Hooks are funcs the pool calls as tasks start, finish and are given up,
// for metrics and tracing (see WithHooks). Each may be nil; a nil hook
// costs nothing. Hooks run on pool goroutines, never on the dispatcher's,
// and several may run at once: each must be safe for concurrent use, and
// quick, as it delays the task or the next one. A hook that panics is
// treated like a task's panic: with a panic handler (WithPanicHandler) it
// is recovered and handed to the handler, logged, and the pool goes on (a
// task whose TaskStarted panicked still runs); without one it crashes the
// program. It is not counted in Status.Panicked.
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
	// during a stop, before Stop, StopWait or Shutdown returns.
	TaskDropped func(reason error)
}

// timed reports whether the hooks need tasks' wait and run times.
func (h *Hooks) timed() bool {
	return h.TaskStarted != nil || h.TaskFinished != nil
}

// taskStarted reads the clock as a task starts, after waiting since
// readyAt on the pool's clock, and calls TaskStarted. It returns the wait
// and the start, for taskFinished.
func (p *WorkerPool) taskStarted(readyAt int64) (waited time.Duration, start int64) {
	start = p.now()
	waited = time.Duration(max(start-readyAt, 0))
	if p.hooks.TaskStarted != nil {
		p.callTaskStarted(waited)
	}
	return waited, start
}

// taskFinished reads the clock as a task that started at start ends with
// err, and calls TaskFinished.
func (p *WorkerPool) taskFinished(waited time.Duration, start int64, err error) {
	if p.hooks.TaskFinished != nil {
		p.callTaskFinished(waited, time.Duration(max(p.now()-start, 0)), err)
	}
}

func (p *WorkerPool) callTaskStarted(waited time.Duration) {
	if p.panicHandler != nil {
		defer p.recoverCallbackPanic("TaskStarted hook")
	}
	p.hooks.TaskStarted(waited)
}

func (p *WorkerPool) callTaskFinished(waited, ran time.Duration, err error) {
	if p.panicHandler != nil {
		defer p.recoverCallbackPanic("TaskFinished hook")
	}
	p.hooks.TaskFinished(waited, ran, err)
}

func (p *WorkerPool) callTaskDropped(reason error) {
	if p.panicHandler != nil {
		defer p.recoverCallbackPanic("TaskDropped hook")
	}
	p.hooks.TaskDropped(reason)
}

// refused tells TaskDropped about n tasks that the calling submit refuses
// with reason, in the caller's goroutine.
func (p *WorkerPool) refused(reason error, n int) {
	if p.hooks.TaskDropped == nil {
		return
	}
	for range n {
		p.callTaskDropped(reason)
	}
}

// runTimed runs a plain task between TaskStarted and TaskFinished; it
// waited since readyAt.
func (p *WorkerPool) runTimed(task func(), readyAt int64) {
	waited, start := p.taskStarted(readyAt)
	err := ErrGoexit
	defer func() { p.taskFinished(waited, start, err) }()
	err = p.callPlain(task)
}
