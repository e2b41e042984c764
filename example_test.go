package workerpool_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/e86d9661/workerpool"
)

func Example() {
	p := workerpool.New(2) // at most 2 tasks run at once; the rest wait, in order
	var total atomic.Int64
	for i := 1; i <= 10; i++ {
		p.Submit(func() { total.Add(int64(i)) }) // never blocks
	}
	p.StopWait() // every submitted task has run when StopWait returns
	fmt.Println("total:", total.Load())
	// Output: total: 55
}

func ExampleWorkerPool_SubmitWait() {
	p := workerpool.New(4)
	defer p.Stop()
	var answer int
	p.SubmitWait(func() { answer = 6 * 7 })
	fmt.Println(answer) // the task's effects are visible once SubmitWait returns
	// Output: 42
}

func ExampleWorkerPool_DoWait() {
	p := workerpool.New(1)
	p.Stop()
	err := p.DoWait(func() {})
	fmt.Println(err)
	// Output: workerpool: pool stopped
}

func ExampleWorkerPool_Pause() {
	p := workerpool.New(2)
	defer p.Stop()
	var mu sync.Mutex
	var log []string
	record := func(s string) func() {
		return func() { mu.Lock(); log = append(log, s); mu.Unlock() }
	}

	p.Submit(record("before pause"))
	ctx, resume := context.WithCancel(context.Background())
	p.Pause(ctx)                     // returns once "before pause" has run
	p.Submit(record("during pause")) // accepted, held until resume
	mu.Lock()
	fmt.Println(log)
	mu.Unlock()

	resume()
	p.StopWait()
	fmt.Println(log)
	// Output:
	// [before pause]
	// [before pause during pause]
}

func ExampleWorkerPool_Status() {
	p := workerpool.New(3, workerpool.WithHooks(workerpool.Hooks{Panic: func(recovered any) {
		fmt.Println("recovered:", recovered)
	}}))
	for range 5 {
		p.Submit(func() {})
	}
	p.Submit(func() { panic("oops") })
	p.StopWait()

	s := p.Status()
	fmt.Println(s.Stopped, s.Submitted, s.Completed, s.Panicked, s.Abandoned)
	fmt.Println("workers:", s.Workers, "waiting:", s.Waiting)
	// Output:
	// recovered: oops
	// true 6 6 1 0
	// workers: 0 waiting: 0
}

// Status shows the pool's stage: Paused while a Pause is in effect,
// Stopping while a stop waits for the tasks it lets finish, then Stopped.
func ExampleStatus() {
	p := workerpool.New(1)
	s := p.Status()
	fmt.Println(s.Paused, s.Stopping, s.Stopped)

	ctx, resume := context.WithCancel(context.Background())
	p.Pause(ctx)
	fmt.Println(p.Status().Paused)
	resume()

	started, release := make(chan struct{}), make(chan struct{})
	p.Submit(func() { close(started); <-release })
	<-started
	stopped := make(chan struct{})
	go func() { p.StopWait(); close(stopped) }()
	for !p.Status().Stopping {
		time.Sleep(time.Millisecond) // until StopWait has begun: it waits for the task
	}
	fmt.Println("stopping while the task runs")
	close(release)
	<-stopped
	s = p.Status()
	fmt.Println(s.Stopping, s.Stopped)
	// Output:
	// false false false
	// true
	// stopping while the task runs
	// false true
}

// WaitIdle waits until nothing runs or waits, without stopping the pool.
func ExampleWorkerPool_WaitIdle() {
	p := workerpool.New(4)
	defer p.Stop()
	var done atomic.Int64
	for range 100 {
		p.Submit(func() { done.Add(1) })
	}
	if err := p.WaitIdle(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Println("done:", done.Load())
	p.Submit(func() { done.Add(1) }) // the pool still runs
	_ = p.WaitIdle(context.Background())
	fmt.Println("done:", done.Load())
	// Output:
	// done: 100
	// done: 101
}

// DoBatch queues many tasks in one hand-off to the dispatcher, in order.
func ExampleWorkerPool_DoBatch() {
	p := workerpool.New(1)
	var out []int
	batch := make([]func(), 5)
	for i := range batch {
		batch[i] = func() { out = append(out, i) } // one worker: no race
	}
	if err := p.DoBatch(batch); err != nil {
		fmt.Println(err)
	}
	p.StopWait()
	fmt.Println(out)
	// Output: [0 1 2 3 4]
}

// DoContext takes options for a fire-and-forget func(): a delayed plain
// task waits in the timer heap, with no handle and no goroutine, and one
// that a stop abandons goes to the dead-letter handler.
func ExampleWorkerPool_DoContext_delay() {
	p := workerpool.New(1, workerpool.WithHooks(workerpool.Hooks{DeadLetter: func(_ func(), err error) {
		fmt.Println("dead letter:", err)
	}}))
	ran := make(chan struct{})
	_ = p.DoContext(context.Background(), func() { fmt.Println("10ms later"); close(ran) }, workerpool.TaskOption{Delay: 10 * time.Millisecond})
	_ = p.DoContext(context.Background(), func() { fmt.Println("an hour later") }, workerpool.TaskOption{Delay: time.Hour})
	<-ran
	fmt.Println("scheduled:", p.Status().Scheduled)
	p.Stop() // abandons the task due in an hour
	// Output:
	// 10ms later
	// scheduled: 1
	// dead letter: workerpool: pool stopped
}

// Do queues a task like Submit, but returns an error instead of panicking
// when the pool has stopped (or, under Reject, when the queue is full).
func ExampleWorkerPool_Do() {
	p := workerpool.New(2)
	var done atomic.Int64
	for range 3 {
		if err := p.Do(func() { done.Add(1) }); err != nil {
			fmt.Println(err)
		}
	}
	p.StopWait()
	fmt.Println("done:", done.Load())
	fmt.Println(p.Do(func() {})) // a stopped pool: an error, not a panic
	// Output:
	// done: 3
	// workerpool: pool stopped
}

// New starts only the dispatcher goroutine: workers start as tasks come, up
// to the size (a size below 1 means 1). Stop the pool when done with it.
func ExampleNew() {
	p := workerpool.New(0)
	fmt.Println("size:", p.Size(), "workers:", p.Status().Workers)
	p.Resize(4)
	fmt.Println("size:", p.Size())
	p.StopWait()
	// Output:
	// size: 1 workers: 0
	// size: 4
}

// Submit queues a task and returns at once. On a stopped pool it panics
// with an error wrapping ErrStopped; Do returns that error instead.
func ExampleWorkerPool_Submit() {
	p := workerpool.New(2)
	var sum atomic.Int64
	for i := 1; i <= 3; i++ {
		p.Submit(func() { sum.Add(int64(i * i)) })
	}
	p.StopWait() // every submitted task has run
	fmt.Println("sum of squares:", sum.Load())

	defer func() {
		err, _ := recover().(error)
		fmt.Println("recovered:", err, errors.Is(err, workerpool.ErrStopped))
	}()
	p.Submit(func() {}) // a stopped pool: panics
	// Output:
	// sum of squares: 14
	// recovered: workerpool: pool stopped: Submit called after Stop true
}

// Stop abandons the tasks that have not started (here a Pause holds
// them); StopWait would run them first.
func ExampleWorkerPool_Stop() {
	p := workerpool.New(2)
	hold, resume := context.WithCancel(context.Background())
	defer resume()
	p.Pause(hold)
	for i := range 3 {
		p.Submit(func() { fmt.Println("task", i, "never runs") })
	}
	p.Stop() // ends the pause and drops the three held tasks
	s := p.Status()
	fmt.Println("completed:", s.Completed, "abandoned:", s.Abandoned)
	// Output: completed: 0 abandoned: 3
}

// StopWait runs every accepted task, held by a Pause or queued, before it
// returns.
func ExampleWorkerPool_StopWait() {
	p := workerpool.New(1) // one worker: the tasks run in order
	hold, resume := context.WithCancel(context.Background())
	defer resume()
	p.Pause(hold)
	for i := range 3 {
		p.Submit(func() { fmt.Println("task", i) })
	}
	p.StopWait() // ends the pause, runs the three held tasks
	s := p.Status()
	fmt.Println("completed:", s.Completed, "abandoned:", s.Abandoned)
	// Output:
	// task 0
	// task 1
	// task 2
	// completed: 3 abandoned: 0
}

// Stopped tells a producer that the pool no longer takes work; it is true
// from the moment stopping begins.
func ExampleWorkerPool_Stopped() {
	p := workerpool.New(2)
	fmt.Println("stopped:", p.Stopped())
	p.StopWait()
	fmt.Println("stopped:", p.Stopped())
	fmt.Println(p.Do(func() {})) // a stopped pool refuses work
	// Output:
	// stopped: false
	// stopped: true
	// workerpool: pool stopped
}

// Size is the most workers the pool may run: New's size, at least 1, or the
// last Resize's.
func ExampleWorkerPool_Size() {
	p := workerpool.New(-3)
	defer p.Stop()
	fmt.Println(p.Size())
	p.Resize(16)
	fmt.Println(p.Size())
	// Output:
	// 1
	// 16
}

// WaitingQueueSize is a cheap reading that never blocks: enough for a
// producer that keeps the backlog short by hand. (WithMaxWaiting with
// Block does it for you, exactly.) It trails the submits by a moment, and
// is 0 once the pool has stopped.
func ExampleWorkerPool_WaitingQueueSize() {
	p := workerpool.New(2)
	var done atomic.Int64
	for range 100 {
		for p.WaitingQueueSize() >= 10 {
			time.Sleep(time.Millisecond) // let the workers catch up
		}
		p.Submit(func() { done.Add(1) })
	}
	p.StopWait()
	fmt.Println("done:", done.Load(), "waiting:", p.WaitingQueueSize())
	// Output: done: 100 waiting: 0
}
