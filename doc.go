// Package workerpool limits how many tasks run at once. A [WorkerPool] runs
// submitted funcs on at most a fixed number of goroutines, queues the rest in
// an unbounded FIFO queue without ever blocking the submitter, and shuts down
// without losing track of a single task. Use it to bound fan-out (HTTP
// calls, crawls, file or image work, message handling) where starting one
// goroutine per task would overload a CPU, a remote service or memory.
//
// It is a drop-in superset of github.com/gammazero/workerpool: the same
// names and behaviour, plus task handles with errors, results and contexts,
// groups, a shutdown with a deadline, [WorkerPool.Status], a panic handler,
// and fixes for that library's hangs (see the README).
//
// # Dispatcher
//
// New starts one dispatcher goroutine and no workers. Submit hands a task to
// the dispatcher over an unbuffered channel; the send completing is the
// moment the task is accepted. The dispatcher gives the task to a ready
// worker, starts a new worker if fewer than the maximum exist, or else puts
// the task at the back of the waiting queue; while that queue is not empty,
// workers are fed from its front. So tasks start in submission order,
// concurrency never exceeds [WorkerPool.Size], and it reaches Size whenever
// enough tasks wait. The dispatcher alone owns the queue and the worker
// count; the submit path takes no lock and makes no allocation, and the
// read-only accessors read atomics the dispatcher publishes.
//
// # Tasks, results and groups
//
// [WorkerPool.Go] queues a func(ctx) error like Submit and returns a [Task]:
// Wait returns the func's error, Done is closed when Wait would return, and
// Cancel skips the task if it has not started or cancels its context if it
// has. A context that is done before the task starts skips it too, so a
// deadline covers the time in the queue as well as the run; a skipped task
// never takes a worker and is counted in Status.Canceled. A handle always
// recovers its func's panic and returns it as a [*PanicError] carrying the
// stack; runtime.Goexit is reported as [ErrGoexit]. [Call] does the same for
// a func that returns a value, with a typed [Future].
//
// [WorkerPool.Group] gives errgroup semantics on the shared pool: the first
// error cancels the group's context, so its queued tasks are skipped and its
// running ones see the cancellation, and Wait returns that error once every
// started task has returned. [Group.SetLimit] caps the group's share of the
// workers; the tasks it holds back wait in the group, never in the pool, so
// a group never delays other users of the pool.
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
//     queue and cancels the contexts of the running tasks (Tasks, Futures
//     and group tasks; a plain func cannot be canceled, so Shutdown waits
//     for it), and reports the context's error;
//   - cut now: Shutdown with a context that is already done.
//
// All return only after every pool goroutine has exited; no task starts
// after that. All are idempotent and safe to call from many goroutines at
// once; a Stop during a StopWait or Shutdown abandons what has not started
// yet. Once stopping has begun, Submit and SubmitWait panic, Do and DoWait
// return [ErrStopped], and a Task made by Go reports ErrStopped, for tasks
// as well as for other callers. An abandoned Task reports ErrStopped too,
// so every Wait returns once the pool has stopped.
//
// A submit that races with Stop is either accepted (it then runs exactly
// once, or is abandoned or skipped) or rejected with ErrStopped. After the
// pool has stopped, its [Status] balances:
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
// pool shrank starts a new worker. An idle pool with no workers wakes no
// timer.
//
// # Pausing
//
// [WorkerPool.Pause] is a barrier: it returns once every task submitted
// before it has finished. Tasks submitted after it are accepted and held
// until its context is done. Pauses queue behind each other, and Stop or
// StopWait ends them all. A pause is state in the dispatcher, not a task: it
// occupies no worker and never shows up in WaitingQueueSize or Status.
//
// # Panics
//
// By default a plain task that panics crashes the program, exactly as a
// panic in a plain goroutine does: hidden panics hide bugs. (Tasks, Futures
// and groups return the panic as an error instead; someone waits for it.)
// With [WithPanicHandler],
// the pool recovers the panic and calls the handler in the panicking
// goroutine, where debug.Stack still shows the task's frames; the worker then
// goes on. A task that calls runtime.Goexit (as t.FailNow does) ends its
// worker goroutine, and a new goroutine takes its place, so neither a panic
// nor Goexit ever costs the pool a worker or hangs StopWait.
//
// # Deadlocks
//
// These waits are by design and the pool does not try to guess around them:
//   - SubmitWait, DoWait or Pause called from inside a task waits for other
//     tasks to get a worker, so it waits forever when every worker is busy
//     (always, with one worker). An external Stop still ends it: DoWait
//     returns ErrStopped, SubmitWait panics with it, Pause returns.
//   - Stop, StopWait or Shutdown called from inside a task waits for that
//     task to finish, forever. So does a Task's Wait, or a Group's, called
//     from inside a task while the awaited tasks cannot get a worker.
//   - A Pause with a context that is never done holds later tasks until Stop
//     or StopWait.
package workerpool
