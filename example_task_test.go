package workerpool_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"time"

	"github.com/e86d9661/workerpool"
)

func ExampleWorkerPool_Go() {
	p := workerpool.New(2)
	defer p.StopWait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // covers queue wait and run
	defer cancel()
	task := p.Go(ctx, func(context.Context) error { return errors.New("disk full") })
	fmt.Println(task.Wait())

	var pe *workerpool.PanicError // a panic comes back as an error, with the task's stack
	err := p.Go(ctx, func(context.Context) error { panic("bug") }).Wait()
	fmt.Println(errors.As(err, &pe), pe.Value)
	// Output:
	// disk full
	// true bug
}

// Typed results, collected in submission order whatever order the tasks
// finish in.
func ExampleGoResult() {
	p := workerpool.New(3)
	defer p.StopWait()

	words := []string{"pool", "dispatcher", "worker", "deque"}
	futures := make([]*workerpool.Future[int], len(words))
	for i, w := range words {
		futures[i] = workerpool.GoResult(context.Background(), p, func(context.Context) (int, error) {
			return len(w), nil
		})
	}
	for i, f := range futures {
		n, err := f.Wait()
		fmt.Println(words[i], n, err)
	}
	// Output:
	// pool 4 <nil>
	// dispatcher 10 <nil>
	// worker 6 <nil>
	// deque 5 <nil>
}

// A task is canceled through the ctx given to Go. Canceled before the
// task started, it skips the task: its Wait returns context.Canceled at
// once, and it never takes a worker. A running task sees its context
// canceled and returns what it returns.
func ExampleWorkerPool_Go_cancel() {
	p := workerpool.New(1)
	defer p.StopWait()
	runningCtx, cancelRunning := context.WithCancel(context.Background())
	started := make(chan struct{})
	running := p.Go(runningCtx, func(ctx context.Context) error {
		close(started)
		<-ctx.Done() // a long job that watches its context
		return fmt.Errorf("gave up: %w", ctx.Err())
	})
	<-started
	queuedCtx, cancelQueued := context.WithCancel(context.Background())
	queued := p.Go(queuedCtx, func(context.Context) error {
		fmt.Println("never runs")
		return nil
	})

	cancelQueued()
	fmt.Println("queued:", queued.Wait())
	cancelRunning()
	fmt.Println("running:", running.Wait())
	fmt.Println("canceled before they started:", p.Status().Canceled)
	// Output:
	// queued: context canceled
	// running: gave up: context canceled
	// canceled before they started: 1
}

// Done lets a caller wait for a task in a select, beside its own deadline
// or other events.
func ExampleTask_Done() {
	p := workerpool.New(2)
	defer p.StopWait()
	task := p.Go(context.Background(), func(context.Context) error {
		return errors.New("upstream unavailable")
	})
	select {
	case <-task.Done():
		fmt.Println("finished:", task.Wait()) // Wait returns at once once Done is closed
	case <-time.After(time.Minute):
		fmt.Println("still running after a minute")
	}
	// Output: finished: upstream unavailable
}

// Wait always returns: fn's error, or why fn never ran. Here a context
// that ended before the task started, a fn that called runtime.Goexit, and
// a pool that had stopped.
func ExampleTask_Wait() {
	p := workerpool.New(1)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	fmt.Println(p.Go(done, func(context.Context) error { return nil }).Wait())

	err := p.Go(context.Background(), func(context.Context) error {
		runtime.Goexit() // as t.FailNow does
		return nil
	}).Wait()
	fmt.Println(err, errors.Is(err, workerpool.ErrGoexit))

	p.Stop()
	err = p.Go(context.Background(), func(context.Context) error { return nil }).Wait()
	fmt.Println(errors.Is(err, workerpool.ErrStopped))
	// Output:
	// context canceled
	// workerpool: task called runtime.Goexit true
	// true
}

// A Future is canceled as a Task is, through the ctx given to GoResult:
// the value is T's zero value and the error says why.
func ExampleGoResult_cancel() {
	p := workerpool.New(1)
	defer p.StopWait()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	slow := workerpool.GoResult(ctx, p, func(ctx context.Context) (string, error) {
		close(started)
		<-ctx.Done() // a lookup that gives up when canceled
		return "", ctx.Err()
	})
	<-started
	cancel()
	v, err := slow.Wait()
	fmt.Printf("%q %v\n", v, err)
	// Output: "" context canceled
}

// Done puts a Future in a select: here whichever of two lookups answers
// first, with the other canceled.
func ExampleFuture_Done() {
	p := workerpool.New(2)
	defer p.StopWait()
	ctx := context.Background()
	primaryCtx, cancelPrimary := context.WithCancel(ctx)
	defer cancelPrimary()
	primary := workerpool.GoResult(primaryCtx, p, func(ctx context.Context) (string, error) {
		<-ctx.Done() // a replica that does not answer
		return "", ctx.Err()
	})
	fallback := workerpool.GoResult(ctx, p, func(context.Context) (string, error) {
		return "from the fallback", nil
	})

	var answer string
	select {
	case <-primary.Done():
		answer, _ = primary.Wait()
	case <-fallback.Done():
		answer, _ = fallback.Wait()
		cancelPrimary()
	}
	fmt.Println(answer)
	_, err := primary.Wait()
	fmt.Println("primary:", err)
	// Output:
	// from the fallback
	// primary: context canceled
}

// A panic in a handle's fn comes back from Wait as a *PanicError, with the
// panic value and the stack where it happened; a panic(err) unwraps to
// err.
func ExamplePanicError() {
	p := workerpool.New(1)
	defer p.StopWait()
	err := p.Go(context.Background(), func(context.Context) error {
		panic(io.ErrUnexpectedEOF)
	}).Wait()

	var pe *workerpool.PanicError
	if errors.As(err, &pe) {
		fmt.Println("value:", pe.Value)
		fmt.Println("stack shows the task:", bytes.Contains(pe.Stack, []byte("ExamplePanicError")))
	}
	fmt.Println(errors.Is(err, io.ErrUnexpectedEOF))
	// Output:
	// value: unexpected EOF
	// stack shows the task: true
	// true
}

// Wait returns fn's value and error; once fn has finished, every call
// returns the same.
func ExampleFuture_Wait() {
	p := workerpool.New(2)
	defer p.StopWait()
	parse := func(s string) *workerpool.Future[int] {
		return workerpool.GoResult(context.Background(), p, func(context.Context) (int, error) {
			return strconv.Atoi(s)
		})
	}
	good, bad := parse("42"), parse("forty-two")
	n, err := good.Wait()
	fmt.Println(n, err)
	n, err = bad.Wait()
	fmt.Println(n, err)
	// Output:
	// 42 <nil>
	// 0 strconv.Atoi: parsing "forty-two": invalid syntax
}
