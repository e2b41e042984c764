package workerpool_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/e86d9661/workerpool"
)

// Dead letters: nothing is lost silently. A Submit refused by a full queue
// (Reject) and a task that Stop abandons both reach the handler, in order,
// before Stop returns.
func ExampleHooks_deadLetter() {
	p := workerpool.New(1,
		workerpool.WithMaxWaiting(1, workerpool.Reject),
		workerpool.WithHooks(workerpool.Hooks{DeadLetter: func(task func(), reason error) {
			fmt.Println("dead letter:", reason)
		}}))
	hold, resume := context.WithCancel(context.Background())
	defer resume()
	p.Pause(hold)
	p.Submit(func() {}) // held: the queue is now full
	p.Submit(func() {}) // refused under Reject: to the handler
	p.Stop()            // abandons the held task: to the handler too, before Stop returns
	// Output:
	// dead letter: workerpool: waiting queue full
	// dead letter: workerpool: pool stopped
}

// Tasks that wait in the queue too long expire instead of running late: a
// plain task goes to the dead-letter handler, and a Task's Wait reports
// context.DeadlineExceeded.
func ExampleWithQueueTimeout() {
	p := workerpool.New(1,
		workerpool.WithQueueTimeout(10*time.Millisecond),
		workerpool.WithHooks(workerpool.Hooks{DeadLetter: func(task func(), reason error) {
			fmt.Println("dead letter:", reason)
		}}))
	started, release := make(chan struct{}), make(chan struct{})
	p.Submit(func() { close(started); <-release }) // keeps the one worker busy
	<-started

	p.Submit(func() { fmt.Println("never runs") })
	task := p.Go(context.Background(), func(context.Context) error {
		fmt.Println("never runs either")
		return nil
	})
	err := task.Wait() // returns once the task has waited 10ms
	close(release)
	p.StopWait() // the dead-letter handler has returned by now
	fmt.Println(err, errors.Is(err, context.DeadlineExceeded))
	fmt.Println("expired:", p.Status().Expired)
	// Output:
	// dead letter: workerpool: task expired in the queue
	// workerpool: task expired in the queue true
	// expired: 2
}
