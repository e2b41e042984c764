package workerpool

import "sync/atomic"

// worker runs task, then each task it receives from workerQueue, and returns
// when it receives nil. dispatch starts it with its first task.
func (p *WorkerPool) worker(task func()) {
	defer func() {
		if task != nil {
			// task ended this goroutine with runtime.Goexit (or panicked
			// with no handler, and the program is going down). A fresh
			// goroutine takes this worker's place, so the worker count
			// dispatch keeps stays true.
			go p.replacementWorker()
			return
		}
		p.liveWorkers.Done()
	}()
	for task != nil {
		p.run(task)
		task = <-p.workerQueue
	}
}

func (p *WorkerPool) replacementWorker() {
	p.worker(<-p.workerQueue)
}

// run runs one task and counts it. The deferred calls also run when the task
// panics or calls runtime.Goexit.
func (p *WorkerPool) run(task func()) {
	p.count.started.Add(1)
	defer p.finished()
	if p.panicHandler != nil {
		defer p.recoverPanic()
	}
	task()
}

func (p *WorkerPool) finished() {
	p.count.completed.Add(1)
	if p.watchIdle.Load() {
		select {
		case p.workerIdle <- struct{}{}:
		default:
		}
	}
}

// recoverPanic must be deferred directly: recover only stops a panic when
// called by the deferred function itself. The handler runs before the
// panicking frames unwind.
func (p *WorkerPool) recoverPanic() {
	if r := recover(); r != nil {
		p.count.panicked.Add(1)
		p.panicHandler(r)
	}
}

// A waiter is the task DoWait submits: it runs the caller's task and then
// signals done. Each pool reuses its waiters through WorkerPool.waiters, so
// DoWait does not allocate. The cache is per pool, not global, because a
// waiter's channel belongs to the synctest bubble (if any) that made it.
type waiter struct {
	pool  *WorkerPool
	task  func()
	run   func()        // w.execute, bound once
	state atomic.Int32  // waiterQueued, then waiterRunning or waiterAbandoned
	done  chan struct{} // buffered (1): execute sends once task has finished
}

const (
	waiterQueued int32 = iota
	waiterRunning
	waiterAbandoned
)

func newWaiter(p *WorkerPool, task func()) *waiter {
	w, _ := p.waiters.Get().(*waiter)
	if w == nil {
		w = &waiter{done: make(chan struct{}, 1)}
		w.run = w.execute
	}
	w.pool, w.task = p, task
	w.state.Store(waiterQueued)
	return w
}

// execute runs on a worker. If DoWait already gave the task up (Stop
// abandoned the queue), the task does not run.
func (w *waiter) execute() {
	if !w.state.CompareAndSwap(waiterQueued, waiterRunning) {
		return
	}
	defer func() { w.done <- struct{}{} }()
	if w.pool.panicHandler != nil {
		// Recover here rather than in the worker, so that DoWait returns
		// only after the handler has.
		defer w.pool.recoverPanic()
	}
	w.task()
}

// wait blocks until the task has finished, or until Stop abandoned it before
// it started.
func (w *waiter) wait() error {
	select {
	case <-w.done:
	case <-w.pool.abandoned:
		// Stop dropped the queue. The task has either started, and will
		// finish because Stop waits for running tasks, or it never will.
		// A task that Stop caught on its way to a worker is skipped there
		// (the worker still counts it as completed).
		if w.state.CompareAndSwap(waiterQueued, waiterAbandoned) {
			// A worker may still hold w.run: never reuse w.
			w.pool, w.task = nil, nil
			return ErrStopped
		}
		<-w.done
	}
	w.recycle()
	return nil
}

// recycle returns w to its pool's cache. Only call it once no worker can
// run w.
func (w *waiter) recycle() {
	p := w.pool
	w.pool, w.task = nil, nil
	p.waiters.Put(w)
}
