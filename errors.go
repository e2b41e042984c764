package workerpool

import (
	"context"
	"errors"
	"fmt"
)

// The errors a call or a handle reports, each saying why a task did not
// run (or, for ErrGoexit, how it ended); the package documentation's table
// of errors says which call reports which. Test for them with errors.Is:
// the pool often returns an error that wraps one, with more detail.
var (
	// ErrStopped: the pool was stopping when the task was submitted, or a
	// stop abandoned it before it started.
	ErrStopped = errors.New("workerpool: pool stopped")

	// ErrQueueFull: the waiting queue had no room for the task, so it was
	// refused, or, under DropOldest, dropped to make room for a newer one.
	ErrQueueFull = errors.New("workerpool: waiting queue full")

	// ErrTooHeavy: the task's weight is more than the pool's size (under
	// WithAdaptiveSize, its ceiling): it was refused at once, or dropped by
	// a Resize that made the pool smaller.
	ErrTooHeavy = errors.New("workerpool: task heavier than the pool")

	// ErrGoexit: the task's func, or its TaskStarted hook, called
	// runtime.Goexit (as t.FailNow does) instead of returning.
	ErrGoexit = errors.New("workerpool: task called runtime.Goexit")
)

// errExpired reports a task that waited in the queue longer than
// WithQueueTimeout allows, and so never ran: a deadline passed, so it wraps
// context.DeadlineExceeded.
var errExpired error = &wrapError{"workerpool: task expired in the queue", context.DeadlineExceeded}

// errDropped reports a task that was accepted and then dropped from a full
// queue to make room for a newer one (DropOldest). It wraps ErrQueueFull.
var errDropped error = &wrapError{"workerpool: task dropped from a full queue", ErrQueueFull}

// The values Submit and SubmitWait panic with, and the error Shutdown
// returns when a Stop abandoned tasks: each wraps one of the errors above.
var (
	errSubmitStopped       = fmt.Errorf("%w: Submit called after Stop", ErrStopped)
	errSubmitWaitStopped   = fmt.Errorf("%w: SubmitWait task not run", ErrStopped)
	errSubmitWaitQueueFull = fmt.Errorf("%w: SubmitWait task refused", ErrQueueFull)
	errSubmitWaitDropped   = fmt.Errorf("%w: SubmitWait task not run", errDropped)
	errSubmitWaitExpired   = fmt.Errorf("%w: SubmitWait task not run", errExpired)
	errTasksAbandoned      = fmt.Errorf("%w: queued tasks were abandoned", ErrStopped)
)

// errTaskStartedGoexit reports a task whose run began but whose func was
// never called: its TaskStarted hook called runtime.Goexit, which ended
// the worker's goroutine. It wraps ErrGoexit.
var errTaskStartedGoexit error = &wrapError{"workerpool: TaskStarted hook called runtime.Goexit: task not run", ErrGoexit}

// A wrapError is an error with its own text that wraps another.
type wrapError struct {
	msg   string
	inner error
}

func (e *wrapError) Error() string { return e.msg }
func (e *wrapError) Unwrap() error { return e.inner }
