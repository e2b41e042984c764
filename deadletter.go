package workerpool

import (
	"sync"

	"github.com/gammazero/deque"
)

// deadLetters hands the tasks that will never run, and whose submitting
// call cannot tell it, to the TaskDropped hook (see Hooks) and, the plain
// ones, to Hooks.DeadLetter: one task at a time, in the
// order they were given up, on a goroutine of the pool (never the
// dispatcher's). A deliverer goroutine starts, in p.goroutines, when the
// first letter comes and returns once it has delivered them all, so a stop
// waits for it and an idle pool keeps none.
type deadLetters struct {
	mu         sync.Mutex
	letters    deque.Deque[deadLetter] // given up, not yet delivered, oldest first
	delivering bool                    // a deliverer goroutine is running
	sealed     bool                    // the pool stopped: no letter is taken any more
}

// A deadLetter is one task given up, and what TaskDropped learns of it
// (why in info.Err): a plain task, or a job (task nil), of which only
// TaskDropped learns.
type deadLetter struct {
	task func()
	info TaskInfo
	// started says the task's run began, and its func was never called
	// (see giveUpStarted): TaskDropped, which tells of the tasks that
	// never start, is not told.
	started bool
}

// giveUp queues a letter for task (nil for a job) with info, whose Err is
// why the task was given up (see post). It reports false, and takes
// nothing, once the pool has stopped (see seal): the caller then treats a
// plain task as refused because the pool stopped.
func (p *WorkerPool) giveUp(task func(), info TaskInfo) bool {
	told := p.cfg.hooks.TaskDropped != nil || task != nil && p.cfg.deadLetter != nil
	return p.post(deadLetter{task: task, info: info}, told)
}

// post queues l, if anyone is told of it, and starts a deliverer if none
// is running. It reports false, and takes nothing, once the pool has
// stopped. The deliverer starts under d.mu, so that it is in p.goroutines
// before seal returns and a stop waits for it.
func (p *WorkerPool) post(l deadLetter, told bool) bool {
	d := &p.dead
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sealed {
		return false
	}
	if !told {
		return true // no one to tell: Status counts it
	}
	d.letters.PushBack(l)
	if !d.delivering {
		d.delivering = true
		p.goroutines.Go(p.deliverDeadLetters)
	}
	return true
}

// seal takes no letter any more. Dispatch calls it as it stops, after the
// last task was given up; a stop then waits for the deliverer to deliver
// every letter.
func (d *deadLetters) seal() {
	d.mu.Lock()
	d.sealed = true
	d.mu.Unlock()
}

// deliverDeadLetters is the deliverer goroutine.
func (p *WorkerPool) deliverDeadLetters() {
	d := &p.dead
	handedOver := false
	defer func() {
		if !handedOver {
			// The handler called runtime.Goexit (or panicked with no
			// Panic hook, and the program is going down): a fresh
			// deliverer takes over the letters left.
			p.goroutines.Go(p.deliverDeadLetters)
		}
	}()
	for {
		d.mu.Lock()
		if d.letters.Len() == 0 {
			d.delivering = false
			d.mu.Unlock()
			handedOver = true
			return
		}
		l := d.letters.PopFront()
		d.mu.Unlock()
		p.deliver(l)
	}
}

// deliver tells TaskDropped about one letter, then gives a plain task to
// the dead-letter handler.
func (p *WorkerPool) deliver(l deadLetter) {
	if l.task != nil && p.cfg.deadLetter != nil {
		defer p.callDeadLetter(l) // also if TaskDropped calls runtime.Goexit
	}
	if p.cfg.hooks.TaskDropped != nil && !l.started {
		p.callTaskDropped(l.info)
	}
}

// giveUpStarted gives a plain task whose run began, but whose func was
// never called, to the dead-letter handler with why: its TaskStarted hook
// ended the worker's goroutine with runtime.Goexit (see
// errTaskStartedGoexit). The task counts in Completed, as a run that ended
// in runtime.Goexit does, so TaskDropped is not told. (A worker stops only
// after the letters are sealed.)
func (p *WorkerPool) giveUpStarted(task func(), why error) {
	p.post(deadLetter{task: task, info: p.infoOf(nil, 1, why), started: true}, p.cfg.deadLetter != nil)
}

// callDeadLetter calls the dead-letter handler. A panic in it is treated as
// a task's: the Panic hook takes it if there is one.
func (p *WorkerPool) callDeadLetter(l deadLetter) {
	if p.cfg.panicHandler != nil {
		defer p.recoverCallbackPanic("dead-letter handler")
	}
	p.cfg.deadLetter(l.task, l.info.Err)
}

// tellDropped tells TaskDropped about a job that will never run, with
// info, whose Err is the reason its owner learns, through the deliverer.
// (Once the pool stopped every job is final, so none is settled after the
// letters are sealed; should one be, it is told in place, never by
// dispatch, which sealed them as its last act.)
func (p *WorkerPool) tellDropped(info TaskInfo) {
	if p.cfg.hooks.TaskDropped != nil && !p.giveUp(nil, info) {
		p.callTaskDropped(info)
	}
}

// giveUpPlain gives up a plain task without options with why (see giveUp).
func (p *WorkerPool) giveUpPlain(task func(), why error) bool {
	return p.giveUp(task, p.infoOf(nil, 1, why))
}
