// Package workerpool limits how many tasks run at once. A [WorkerPool] runs
// submitted funcs on at most a fixed number of goroutines, queues the rest in
// an unbounded FIFO queue without ever blocking the submitter, and shuts down
// without losing track of a single task. Use it to bound fan-out (HTTP
// calls, crawls, file or image work, message handling) where starting one
// goroutine per task would overload a CPU, a remote service or memory.
//
// It is a drop-in superset of github.com/gammazero/workerpool: the same
// names and behaviour, plus [WorkerPool.Status], a panic handler, and fixes
// for that library's hangs (see the README).
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
// # Stopping
//
// [WorkerPool.StopWait] rejects new tasks, runs every accepted task to the
// end, then stops the workers. [WorkerPool.Stop] rejects new tasks, lets the
// running ones finish and abandons the queued ones, releasing their closures
// at once. Both return only after every pool goroutine has exited; no task
// starts after that. Both are idempotent and safe to call from many
// goroutines at once, and a Stop during a StopWait abandons what StopWait
// has not yet started. Once stopping has begun, Submit and SubmitWait panic
// and Do and DoWait return [ErrStopped], for tasks as well as for other
// callers.
//
// A submit that races with Stop is either accepted (it then runs exactly
// once, or Stop abandons it) or rejected with ErrStopped. After the pool has
// stopped, its [Status] balances:
//
//	Submitted == Completed + Abandoned
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
// By default a task that panics crashes the program, exactly as a panic in
// a plain goroutine does: hidden panics hide bugs. With [WithPanicHandler],
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
//   - Stop or StopWait called from inside a task waits for that task to
//     finish, forever.
//   - A Pause with a context that is never done holds later tasks until Stop
//     or StopWait.
package workerpool
