package workerpool

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
		}
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
	defer p.finished()
	if p.panicHandler != nil {
		defer p.recoverPanic()
	}
	task()
}

func (p *WorkerPool) finished() {
	p.ran.finished.Add(1)
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
		p.ran.panicked.Add(1)
		p.panicHandler(r)
	}
}

// A waiter carries one DoWait call. DoWait sends its request to dispatch
// on taskQueue; dispatch queues w.run like any task and also keeps w (it is
// tracked), so that it can answer w itself if Stop drops the task. Exactly
// one party sends on done: the worker after running the task, or dispatch
// after dropping it.
// Each pool reuses its waiters through WorkerPool.waiters, so DoWait does not
// allocate; the cache is per pool, not global, because a waiter's channel
// belongs to the synctest bubble (if any) that made it.
type waiter struct {
	pool    *WorkerPool
	task    func()
	run     func()        // w.execute, bound once
	request request       // {tracked: w}, set once
	err     error         // written before done is sent: nil, or ErrStopped if dropped
	done    chan struct{} // buffered (1)
}

func (p *WorkerPool) newWaiter(task func()) *waiter {
	w, _ := p.waiters.Get().(*waiter)
	if w == nil {
		w = &waiter{done: make(chan struct{}, 1)}
		w.run = w.execute
		w.request.tracked = w
	}
	w.pool, w.task, w.err = p, task, nil
	return w
}

// execute runs on a worker.
func (w *waiter) execute() {
	defer func() { w.done <- struct{}{} }()
	if w.pool.panicHandler != nil {
		// Recover here rather than in the worker, so that DoWait returns
		// only after the handler has.
		defer w.pool.recoverPanic()
	}
	w.task()
}

func (w *waiter) runner() func() { return w.run }

// skip is always false: a DoWait task cannot be canceled.
func (w *waiter) skip() bool { return false }

// abandon answers the DoWait call of a task that Stop dropped.
func (w *waiter) abandon() (canceled bool) {
	w.err = ErrStopped
	w.done <- struct{}{}
	return false
}

// wait blocks until the task has finished or was dropped, then returns w to
// its pool's cache: after done, no other goroutine refers to w.
func (w *waiter) wait() error {
	<-w.done
	err, p := w.err, w.pool
	w.pool, w.task, w.err = nil, nil, nil
	p.waiters.Put(w)
	return err
}
