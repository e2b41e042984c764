package workerpool_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/e86d9661/workerpool"
)

// A task that fails twice runs a third time: Backoff waits a random delay of
// up to 1ms, then up to 2ms, between the runs, and gives up after 5 runs.
func ExampleRetry() {
	p := workerpool.New(2)
	runs := 0 // the runs of one task never overlap
	task := p.Go(context.Background(), func(context.Context) error {
		runs++
		if runs < 3 {
			err := errors.New("connection refused")
			fmt.Printf("run %d: %v\n", runs, err)
			return err
		}
		fmt.Printf("run %d: ok\n", runs)
		return nil
	}, workerpool.Retry(workerpool.Backoff(time.Millisecond, 10*time.Millisecond, 5)))
	err := task.Wait() // the last run's error
	p.StopWait()
	fmt.Println("err:", err, "retried:", p.Status().Retried)
	// Output:
	// run 1: connection refused
	// run 2: connection refused
	// run 3: ok
	// err: <nil> retried: 2
}

// An error that retrying cannot fix ends the task at once, whatever its
// RetryPolicy says; errors.Is still finds it.
func ExamplePermanent() {
	p := workerpool.New(2)
	errNotFound := errors.New("user not found")
	runs := 0
	err := p.Go(context.Background(), func(context.Context) error {
		runs++
		return workerpool.Permanent(errNotFound)
	}, workerpool.Retry(workerpool.Backoff(time.Millisecond, 10*time.Millisecond, 5))).Wait()
	p.StopWait()
	fmt.Println("runs:", runs)
	fmt.Println(err, errors.Is(err, errNotFound))
	// Output:
	// runs: 1
	// user not found true
}
