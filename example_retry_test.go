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
	}, workerpool.TaskOption{Retry: workerpool.Backoff(time.Millisecond, 10*time.Millisecond, 4)})
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
	}, workerpool.TaskOption{Retry: workerpool.Backoff(time.Millisecond, 10*time.Millisecond, 4)}).Wait()
	p.StopWait()
	fmt.Println("runs:", runs)
	fmt.Println(err, errors.Is(err, errNotFound))
	// Output:
	// runs: 1
	// user not found true
}

// IsPermanent sees a Permanent mark through wrapping, as the pool does
// before a retry.
func ExampleIsPermanent() {
	errNotFound := errors.New("user not found")
	err := fmt.Errorf("load profile: %w", workerpool.Permanent(errNotFound))
	fmt.Println(workerpool.IsPermanent(err), workerpool.IsPermanent(errNotFound), workerpool.IsPermanent(nil))
	// Output: true false false
}

// Backoff's delays are random up to a cap that doubles with each run, up
// to max; after the last allowed run it says stop.
func ExampleBackoff() {
	policy := workerpool.Backoff(100*time.Millisecond, 300*time.Millisecond, 3)
	err := errors.New("connection refused")
	for attempt, limit := range []time.Duration{100, 200, 300, 300} {
		delay, retry := policy(attempt+1, err)
		fmt.Printf("after run %d: retry %v, delay within %v: %v\n",
			attempt+1, retry, limit*time.Millisecond, delay >= 0 && delay <= limit*time.Millisecond)
	}
	// Output:
	// after run 1: retry true, delay within 100ms: true
	// after run 2: retry true, delay within 200ms: true
	// after run 3: retry true, delay within 300ms: true
	// after run 4: retry false, delay within 300ms: true
}

// A policy of one's own: retry only what may pass, here a busy server, at
// most 3 runs, 1ms apart.
func ExampleRetryPolicy() {
	errBusy := errors.New("server busy")
	onlyBusy := func(int, error) (time.Duration, bool)(func(attempt int, err error) (time.Duration, bool) {
		return time.Millisecond, attempt < 3 && errors.Is(err, errBusy)
	})

	p := workerpool.New(1)
	answers := []error{errBusy, errors.New("bad request"), nil}
	runs := 0
	err := p.Go(context.Background(), func(context.Context) error {
		err := answers[runs]
		runs++
		fmt.Printf("run %d: %v\n", runs, err)
		return err
	}, workerpool.TaskOption{Retry: onlyBusy}).Wait()
	p.StopWait()
	fmt.Println("err:", err)
	// Output:
	// run 1: server busy
	// run 2: bad request
	// err: bad request
}
