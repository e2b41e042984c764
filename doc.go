// Package workerpool limits how many tasks run at once. A [WorkerPool] runs
// submitted funcs on at most a fixed number of goroutines, queues the rest in
// an unbounded FIFO queue without ever blocking the submitter, and shuts down
// without losing track of a single task. Use it to bound fan-out (HTTP
// calls, crawls, file or image work, message handling) where starting one
// goroutine per task would overload a CPU, a remote service or memory.
//
// It is a drop-in superset of github.com/gammazero/workerpool v1.3: the same
// names and behaviour, plus task handles with errors, results and contexts,
// groups, a shutdown with a deadline, [WorkerPool.Status], a panic handler,
// and fixes for that library's hangs (see the README). This comment is the
// full contract; the README shows how to use it.
//
// # Dispatcher
//
// New starts one dispatcher goroutine and no workers. Submit hands a task to
// the dispatcher over an unbuffered channel; the send completing is the
// moment the task is accepted. The dispatcher gives the task to a ready
// worker, starts a new worker if fewer than the maximum exist, or else puts
// the task at the back of the waiting queue; while that queue is not empty,
// workers are fed from its front. So:
//   - tasks start in submission order (FIFO);
//   - concurrency never exceeds [WorkerPool.Size], and reaches it whenever
//     enough tasks wait;
//   - the dispatcher alone owns the queue and the worker count: the submit
//     path takes no lock and makes no allocation, and the read-only
//     accessors read counters, never block and never wait for the
//     dispatcher.
//
// # Tasks, results and groups
//
// [WorkerPool.Go] queues a func(ctx) error like Submit and returns a [Task]:
// Wait returns the func's error, Done is closed when Wait would return, and
// Cancel cancels the task if it has not started or cancels its context if it
// has. A context that is done before the task starts cancels it too, so a
// deadline covers the time in the queue as well as the run. A handle always
// recovers its func's panic and returns it as a [*PanicError] carrying the
// stack; runtime.Goexit is reported as [ErrGoexit]. [Call] does the same for
// a func that returns a value, with a typed [Future].
//
// [WorkerPool.Group] gives errgroup semantics on the shared pool: the first
// error cancels the group's context, so its queued tasks are canceled and
// its running ones see the cancellation, and Wait returns that error once
// every started task has returned. [Group.SetLimit] caps the group's share
// of the workers; the tasks it holds back wait in the group, never in the
// pool, so a group never delays other users of the pool. Once its tasks have
// finished, the pool keeps no reference to a group, waited for or not.
//
// # Task states
//
// Every task someone waits for (a DoWait call, a Task, a Future or a group
// task) moves through one state machine, and each move happens exactly once,
// decided by an atomic compare-and-swap, whoever attempts it:
//
//	queued ──► started ──► finished
//	   │
//	   └─────► canceled | abandoned
//
// The states:
//   - queued: accepted, and not started yet: waiting in the queue (counted
//     in Status.Waiting), or handed to a worker that has not called it.
//   - started: a worker called the func. finished: the func returned,
//     panicked or called runtime.Goexit; Wait returns its outcome.
//   - canceled: the task's context ended, or Cancel was called, before it
//     started. Cancel, Wait, Done, the dispatcher or the worker that took
//     it, whichever sees it first, settles it; Wait returns the context's
//     error (context.Canceled after Cancel), at once, even while the task
//     is still in the queue. A task canceled while it waits in the queue
//     never takes a worker; one canceled while the dispatcher is handing it
//     out may still reach a worker, which skips it.
//   - abandoned: Stop, or a Shutdown that gave up, came before it started,
//     wherever it was (in the queue, or handed to a worker); Wait returns
//     ErrStopped. A task whose own context ended first is canceled instead.
//
// A settled task (canceled or abandoned) has left Status.Waiting and is
// counted in Status.Canceled or Status.Abandoned by the time its Wait or
// Done reports it. Plain tasks from Submit and Do have no waiter: they are
// queued, then started and finished, or abandoned.
//
// # Stopping
//
// Three calls cover the four classic ways to stop, as http.Server's
// Shutdown and Close do:
//   - drain everything: [WorkerPool.StopWait] rejects new tasks, runs every
//     accepted task to the end, then stops the workers;
//   - finish the running tasks and drop the queued ones: [WorkerPool.Stop]
//     abandons the queue, releasing its closures at once, and lets the
//     running tasks finish;
//   - drain until a deadline, then cut: [WorkerPool.Shutdown] drains like
//     StopWait until its context is done, then abandons the rest of the
//     queue and cancels the contexts of the running Tasks, Futures and group
//     tasks (a plain func cannot be canceled, so Shutdown waits for it);
//   - cut now: Shutdown with a context that is already done: no queued
//     task starts.
//
// Shutdown returns nil only if no accepted task was abandoned, the
// context's error if it gave up, and an error wrapping ErrStopped if a Stop
// abandoned tasks during it.
//
// All three return only once every pool goroutine (the dispatcher, the
// workers and the idle clock) has exited: no function of this package is on
// any goroutine's stack, no timer is armed, and no task starts after that.
// (One exception, which runs no code of the pool: a worker whose task
// called runtime.Goexit may still be finishing its last deferred call, its
// WaitGroup's Done, and the runtime keeps its frames until it frees the
// goroutine a moment later.) From the moment Stop, or a Shutdown that gives
// up, is called, the dispatcher hands no queued task to a worker; only one
// a worker was taking at that very moment may still start.
// All are idempotent and safe to call from many goroutines at once; a Stop
// during a StopWait or Shutdown abandons what has not started yet. Once
// stopping has begun, Submit and SubmitWait panic with an error wrapping
// ErrStopped, Do and DoWait return [ErrStopped], a Task or Future made by
// Go or Call reports ErrStopped, and a Group's Wait reports it unless an
// earlier error came first. Every Wait returns once the pool has stopped.
//
// Admission is linearizable: a submit that races with a stop is either
// accepted (it then runs exactly once, or is abandoned or canceled) or
// rejected with ErrStopped. No channel that submitters send on is ever
// closed.
//
// # Status
//
// [WorkerPool.Status] reads counters that the pool's goroutines keep as
// they go; it never blocks and never waits for the dispatcher. While tasks
// flow, its fields are read a moment apart (the waiting count, for one, is
// published when the dispatcher has nothing else to do). Once the pool has
// stopped the snapshot is exact:
//
//	Submitted == Completed + Abandoned + Canceled
//
// and Workers, Busy and Waiting are zero.
//
// # Idle workers
//
// When no task comes in for a whole idle period (see [WithIdleTimeout]), the
// dispatcher retires one idle worker, then one more per further period, down
// to zero. Busy workers are never retired, and a task submitted after the
// pool shrank starts a new worker. An idle pool with no workers arms no
// timer.
//
// # Pausing
//
// [WorkerPool.Pause] is a barrier: it returns once every task submitted
// before it has finished. Tasks submitted after it are accepted and held
// until its context is done. Pauses queue behind each other, and Stop,
// StopWait or Shutdown ends them all. A pause is state in the dispatcher,
// not a task: it occupies no worker and never shows up in WaitingQueueSize
// or Status.
//
// # Panics
//
// By default a plain task that panics crashes the program, exactly as a
// panic in a plain goroutine does: hidden panics hide bugs. (Tasks, Futures
// and groups return the panic as an error instead; someone waits for it.)
// With [WithPanicHandler], the pool recovers the panic and calls the handler
// in the panicking goroutine, where debug.Stack still shows the task's
// frames; the worker then goes on. A task that calls runtime.Goexit (as
// t.FailNow does) ends its worker goroutine, and a new goroutine takes its
// place, so neither a panic nor Goexit ever costs the pool a worker or
// hangs a stop.
//
// # Deadlocks
//
// These waits are by design and the pool does not try to guess around them:
//   - SubmitWait, DoWait or Pause called from inside a task waits for other
//     tasks to get a worker, so it waits forever when every worker is busy
//     (always, with one worker). An external Stop or Shutdown still ends
//     it: DoWait returns ErrStopped, SubmitWait panics with it, Pause
//     returns.
//   - Stop, StopWait or Shutdown called from inside a task waits for that
//     task to finish, forever. So does a Task's Wait, or a Group's, called
//     from inside a task while the awaited tasks cannot get a worker.
//   - A Pause with a context that is never done holds later tasks until a
//     stop.
package workerpool
