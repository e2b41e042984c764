package workerpool

import (
	"sync"

	"github.com/gammazero/deque"
)

// deadLetters hands the plain tasks that will never run, and whose
// submitter cannot learn it, to the handler set by WithDeadLetter: one task
// at a time, in the order they were given up, on a goroutine of the pool
// (never the dispatcher's). A deliverer goroutine starts, in p.goroutines,
// when the first letter comes and returns once it has delivered them all,
// so a stop waits for it and an idle pool keeps none.
type deadLetters struct {
	handler func(task func(), reason error) // nil: letters are dropped

	mu         sync.Mutex
	letters    deque.Deque[deadLetter] // given up, not yet delivered, oldest first
	delivering bool                    // a deliverer goroutine is running
	sealed     bool                    // the pool stopped: no letter is taken any more
}

// A deadLetter is one task given up, and why.
type deadLetter struct {
	task   func()
	reason error
}

// giveUp queues task for the dead-letter handler with reason, and starts a
// deliverer if none is running. It reports false, and takes nothing, once
// the pool has stopped (see seal): the caller then treats the task as
// refused because the pool stopped. The deliverer starts under d.mu, so
// that it is in p.goroutines before seal returns and a stop waits for it.
func (p *WorkerPool) giveUp(task func(), reason error) bool {
	d := &p.dead
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sealed {
		return false
	}
	if d.handler == nil {
		return true // dropped: Status counts it
	}
	d.letters.PushBack(deadLetter{task, reason})
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
			// panic handler, and the program is going down): a fresh
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

// deliver calls the handler with one letter. A panic in it is treated as a
// task's: the panic handler takes it if there is one.
func (p *WorkerPool) deliver(l deadLetter) {
	if p.panicHandler != nil {
		defer p.recoverHandlerPanic()
	}
	p.dead.handler(l.task, l.reason)
}

// recoverHandlerPanic is recoverPanic for the dead-letter handler: the
// panic is not a task's, so it is not counted in Status.Panicked.
func (p *WorkerPool) recoverHandlerPanic() {
	if r := recover(); r != nil {
		p.panicHandler(r)
	}
}
