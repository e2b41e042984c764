package workerpool_test

import (
	"context"
	"fmt"

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
	fmt.Println("TrySubmit on a full queue:", p.TrySubmit(func() {}))

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
	// TrySubmit on a full queue: false
	// submitted: 3 completed: 3 rejected: 1
}
