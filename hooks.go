package workerpool

import (
	"context"
	"log/slog"
	"time"
)

// Hooks are funcs the pool calls at the moments of a task's life: as it
// starts and finishes (for metrics and tracing), as it is given up
// (TaskDropped, and DeadLetter for a plain task no one waits for), and as
// it panics (Panic); and the Logger the pool logs to. Each may be nil; a
// nil one costs nothing. No hook runs on the dispatcher goroutine (of the
// Logger's records, only the stop summary does). Several may run at once: each must be
// safe for concurrent use, and quick, as it delays the task or the next
// one. A hook must not call Stop, StopWait or Shutdown, nor wait for
// anything that needs the pool to go on: a stop waits for the hooks that
// run. The package documentation (Observability, Dead letters, Panics)
// gives where each runs, in which order, and what a stop waits for.
//
// A hook that panics (Panic itself excepted) is treated like a task's
// panic: with Panic set it is recovered and handed to Panic, logged, and
// the pool goes on (a task whose TaskStarted panicked still runs, with the
// ctx TaskStarted was given, and no TaskFinished for that run); without it
// the program crashes. It is not counted in Status.Panicked.
type Hooks struct {
	// TaskStarted runs on the worker just before each run of a task. The
	// ctx it returns is the one the task's func runs with (a plain func()
	// ignores it) and the one TaskFinished gets; a nil ctx means ctx. ctx is
	// the task's context as the package documentation's table of calls
	// gives it (context.Background() for gammazero's calls), so a span
	// started here is a child of the submitter's span. t.Waited is set,
	// t.Ran and t.Err are not. A TaskStarted that calls runtime.Goexit ends
	// the run before the task's func is called: the task never runs, its
	// waiter learns an error wrapping ErrGoexit, and a plain task goes to
	// DeadLetter with it.
	TaskStarted func(ctx context.Context, t TaskInfo) context.Context
	// TaskFinished runs on the worker after each run whose TaskStarted
	// returned: its func returned, panicked or called runtime.Goexit. ctx
	// is what TaskStarted returned. t.Ran is the run's time and t.Err its
	// outcome: the task's error, a *PanicError for a recovered panic,
	// ErrGoexit, or nil. Each attempt under a retry is one start and one
	// finish, with its own t.Attempt and t.Err.
	TaskFinished func(ctx context.Context, t TaskInfo)
	// TaskDropped runs once for each task that will never run, whatever
	// the call, with why in t.Err (see the package documentation's table of
	// errors, or the ctx's error for a canceled task): its calls number
	// Status's Rejected + Dropped + Abandoned + Canceled + Expired. t.Attempt
	// is the attempt that never ran; t.Waited and t.Ran are 0.
	TaskDropped func(t TaskInfo)
	// DeadLetter gets each plain task (a func() no one waits for) that will
	// never run, with the reason, so that nothing is lost silently: the
	// program may persist it or submit it again. It runs on the pool's
	// delivery goroutine, one task at a time, in the order the tasks were
	// given up, just after TaskDropped; Stop, StopWait and Shutdown return
	// only once it has run for every task given up before or during the
	// stop. Without it such tasks are only counted in Status.
	DeadLetter func(task func(), reason error)
	// Panic makes the pool recover a panic of a plain task (or of a hook)
	// and call it with the recovered value, on the panicking worker, before
	// the stack unwinds, so debug.Stack inside it shows the task's frames.
	// The worker then goes on with the next task. Without it a plain task's
	// panic crashes the program, as in a goroutine of its own; tasks with a
	// handle always recover theirs into a *PanicError. A panic inside Panic
	// crashes the program.
	Panic func(recovered any)
	// Logger is where the pool logs. At Info and above it logs exactly:
	//   - one Error record for each panic it recovers, with the panic value
	//     and the stack: a task's (plain tasks under a Panic hook, and
	//     handles, which always recover), a hook's, a retry policy's, and
	//     the dead-letter handler's;
	//   - one Info record per Resize on a pool that has not begun to stop
	//     (a Resize to the same size included), with the old and the new
	//     size;
	//   - one Info record per pool when it has stopped, with the final
	//     counts of Status, logged before Stop, StopWait and Shutdown
	//     return.
	//
	// Never one record per task. Everything else it logs (the pool's
	// start, the start of a stop, a Shutdown that gives up, each size
	// WithAdaptiveSize chooses) is at Debug. Every record carries the
	// Logger's own attributes (give it the pool's name with
	// slog.Logger.With), and further slog key/value pairs. Records are
	// logged on the goroutine where the event happens, never while the
	// dispatcher waits for them, but the stop summary, which the
	// dispatcher logs as its last act. A nil Logger logs nothing.
	Logger *slog.Logger
}

// TaskInfo tells a hook which task, and which run of it, a call is about
// (see Hooks). It is passed by value: the pool allocates nothing for it.
type TaskInfo struct {
	Label    string        // the task's TaskOption.Label, "" if none
	Key      string        // the task's TaskOption.Key, "" if none
	Priority int           // the task's TaskOption.Priority: 0 for a plain task
	Weight   int           // the task's TaskOption.Weight: 1 for a plain task
	Attempt  int           // 1 for the first run, 2, ... under a retry
	Waited   time.Duration // from ready (accepted, due, or retry due) to this run's start
	Ran      time.Duration // this run's time; TaskFinished only
	Err      error         // TaskFinished: this run's outcome; TaskDropped: why it never ran
}

// merge sets in h the hooks that with sets; its nil ones change nothing.
func (h *Hooks) merge(with Hooks) {
	if with.TaskStarted != nil {
		h.TaskStarted = with.TaskStarted
	}
	if with.TaskFinished != nil {
		h.TaskFinished = with.TaskFinished
	}
	if with.TaskDropped != nil {
		h.TaskDropped = with.TaskDropped
	}
	if with.DeadLetter != nil {
		h.DeadLetter = with.DeadLetter
	}
	if with.Panic != nil {
		h.Panic = with.Panic
	}
	if with.Logger != nil {
		h.Logger = with.Logger
	}
}

// timed reports whether the hooks need tasks' wait and run times.
func (h *Hooks) timed() bool {
	return h.TaskStarted != nil || h.TaskFinished != nil
}

// infoOf is the TaskInfo of a task with options o (nil: a plain task's)
// for its attempt-th run, or given up with why before it.
func infoOf(o *taskOptions, attempt int, why error) TaskInfo {
	t := TaskInfo{Weight: 1, Attempt: attempt, Err: why}
	if o != nil {
		t.Label, t.Key, t.Priority, t.Weight = o.label, o.key, o.priority, o.weight
	}
	return t
}
