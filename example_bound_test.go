package workerpool_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/e86d9661/workerpool"
)

// Back-pressure: with a bound of 2 waiting tasks and Block, a submitter
// waits for room instead of growing the queue. (A Pause holds the queue
// here, to show it full.)
func ExampleWithMaxWaiting() {
	p := workerpool.New(2, workerpool.WithMaxWaiting(2, workerpool.Block))
	hold, resume := context.WithCancel(context.Background())
	p.Pause(hold)
	for range 2 {
		p.Submit(func() {}) // held: the queue is now full
	}
	now, cancel := context.WithCancel(context.Background())
	cancel() // a ctx already done: DoContext never waits
	fmt.Println("a try on a full queue:", p.DoContext(now, func() {}))

	admitted := make(chan struct{})
	go func() {
		p.Submit(func() {}) // waits for room
		close(admitted)
	}()
	resume() // the held tasks run, room frees, the waiting Submit gets in
	<-admitted
	p.StopWait()
	s := p.Status()
	fmt.Println("submitted:", s.Submitted, "completed:", s.Completed, "rejected:", s.Rejected)
	// Output:
	// a try on a full queue: workerpool: waiting queue full
	// submitted: 3 completed: 3 rejected: 1
}

// Do returns ErrQueueFull when a bounded queue under Reject is full: the
// caller sheds the load (an HTTP handler answers 503) instead of waiting.
func ExampleWorkerPool_Do_queueFull() {
	p := workerpool.New(1, workerpool.WithMaxWaiting(1, workerpool.Reject))
	started, release := make(chan struct{}), make(chan struct{})
	p.Submit(func() { close(started); <-release }) // keeps the one worker busy
	<-started

	fmt.Println(p.Do(func() {})) // waits in the queue, which is now full
	err := p.Do(func() {})
	fmt.Println(err, errors.Is(err, workerpool.ErrQueueFull))
	close(release)
	p.StopWait()
	s := p.Status()
	fmt.Println("completed:", s.Completed, "rejected:", s.Rejected)
	// Output:
	// <nil>
	// workerpool: waiting queue full true
	// completed: 2 rejected: 1
}

// DoContext waits for room in a full queue (Block) only as long as ctx
// allows: a request handler gives up with its request instead of hanging.
func ExampleWorkerPool_DoContext() {
	p := workerpool.New(1, workerpool.WithMaxWaiting(1, workerpool.Block))
	started, release := make(chan struct{}), make(chan struct{})
	p.Submit(func() { close(started); <-release }) // keeps the one worker busy
	<-started
	p.Submit(func() {}) // the queue is now full

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	fmt.Println(p.DoContext(ctx, func() { fmt.Println("never runs") }))

	close(release) // room frees as the worker goes on
	err := p.DoContext(context.Background(), func() { fmt.Println("runs") })
	p.StopWait()
	fmt.Println(err)
	// Output:
	// context deadline exceeded
	// runs
	// <nil>
}

// DoContext with a ctx that is already done never waits: it takes the
// task if it can start or find room at once, and else returns ErrQueueFull.
func ExampleWorkerPool_DoContext_try() {
	p := workerpool.New(1, workerpool.WithMaxWaiting(1, workerpool.Block))
	started, release := make(chan struct{}), make(chan struct{})
	p.Submit(func() { close(started); <-release }) // keeps the one worker busy
	<-started

	now, cancel := context.WithCancel(context.Background())
	cancel()
	fmt.Println(p.DoContext(now, func() {})) // queued
	fmt.Println(p.DoContext(now, func() {})) // the queue is full: not queued
	close(release)
	p.StopWait()
	fmt.Println("rejected:", p.Status().Rejected)
	// Output:
	// <nil>
	// workerpool: waiting queue full
	// rejected: 1
}

// Under DropOldest a full queue makes room for the newest task by dropping
// the oldest waiting one: the freshest work wins (video frames, cache
// refreshes). A dropped Task's Wait reports an error wrapping ErrQueueFull;
// a dropped plain task goes to the dead-letter handler with it.
func ExampleWithMaxWaiting_dropOldest() {
	p := workerpool.New(1, workerpool.WithMaxWaiting(2, workerpool.DropOldest))
	started, release := make(chan struct{}), make(chan struct{})
	p.Submit(func() { close(started); <-release }) // keeps the one worker busy
	<-started

	ctx := context.Background()
	var frames []*workerpool.Task
	for i := 1; i <= 4; i++ {
		frames = append(frames, p.Go(ctx, func(context.Context) error {
			fmt.Println("show frame", i)
			return nil
		}))
	}
	close(release)
	p.StopWait() // frames 3 and 4 have run
	for i, f := range frames {
		err := f.Wait()
		fmt.Println("frame", i+1, err, errors.Is(err, workerpool.ErrQueueFull))
	}
	fmt.Println("dropped:", p.Status().Dropped)
	// Output:
	// show frame 3
	// show frame 4
	// frame 1 workerpool: task dropped from a full queue true
	// frame 2 workerpool: task dropped from a full queue true
	// frame 3 <nil> false
	// frame 4 <nil> false
	// dropped: 2
}
