package workerpool_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/e86d9661/workerpool"
)

// A task that fails twice runs a third time: Backoff waits a random delay
// of up to 1ms, then up to 2ms, between the runs, and would retry it up to
// 4 times.
func ExampleTaskOption_retry() {
	p := workerpool.New(2)
	runs := 0 // the runs of one task never overlap
	task := p.Go(context.Background(), func(context.Context) error {
		runs++
		if runs < 3 {
			return errors.New("connection refused")
		}
		return nil
	}, workerpool.TaskOption{Retry: workerpool.Backoff(time.Millisecond, 10*time.Millisecond, 4)})
	err := task.Wait() // the last run's error
	p.StopWait()
	fmt.Println("runs:", runs, "err:", err, "retried:", p.Status().Retried)
	// Output: runs: 3 err: <nil> retried: 2
}

// An error that retrying cannot fix ends the task at once, whatever its
// retry policy says; errors.Is still finds it, and so does code that
// settles work by the same rule, through the mark's Permanent method.
func ExamplePermanent() {
	p := workerpool.New(2)
	errNotFound := errors.New("user not found")
	runs := 0
	err := p.Go(context.Background(), func(context.Context) error {
		runs++
		return fmt.Errorf("load profile: %w", workerpool.Permanent(errNotFound))
	}, workerpool.TaskOption{Retry: workerpool.Backoff(time.Millisecond, 10*time.Millisecond, 3)}).Wait()
	p.StopWait()
	fmt.Println("runs:", runs)
	var mark interface{ Permanent() bool }
	fmt.Println(err, errors.Is(err, errNotFound), errors.As(err, &mark) && mark.Permanent())
	// Output:
	// runs: 1
	// load profile: user not found true true
}

// Backoff(base, max, retries) retries a failed task up to retries times,
// after random delays up to a cap that doubles with each retry, up to max.
// It never retries a panic.
func ExampleBackoff() {
	policy := workerpool.Backoff(100*time.Millisecond, 300*time.Millisecond, 3)
	err := errors.New("connection refused")
	for attempt, limit := range []time.Duration{100, 200, 300, 300} {
		delay, retry := policy(attempt+1, err)
		fmt.Printf("after run %d: retry %v, delay within %v: %v\n",
			attempt+1, retry, limit*time.Millisecond, delay >= 0 && delay <= limit*time.Millisecond)
	}
	_, retry := policy(1, &workerpool.PanicError{Value: "nil map"})
	fmt.Println("after a panic: retry", retry)
	// Output:
	// after run 1: retry true, delay within 100ms: true
	// after run 2: retry true, delay within 200ms: true
	// after run 3: retry true, delay within 300ms: true
	// after run 4: retry false, delay within 300ms: true
	// after a panic: retry false
}

// A policy of one's own: retry only what may pass, here a busy server, up
// to 2 retries, 1ms apart.
func ExampleTaskOption_retryPolicy() {
	errBusy := errors.New("server busy")
	onlyBusy := func(attempt int, err error) (time.Duration, bool) {
		return time.Millisecond, attempt < 3 && errors.Is(err, errBusy)
	}

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
