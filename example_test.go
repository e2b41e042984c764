package workerpool_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/e86d9661/workerpool"
)

func Example() {
	p := workerpool.New(2)
	var mu sync.Mutex
	total := 0
	for i := 1; i <= 10; i++ {
		p.Submit(func() {
			mu.Lock()
			total += i
			mu.Unlock()
		})
	}
	p.StopWait() // every submitted task has run when StopWait returns
	fmt.Println("total:", total)
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
	p := workerpool.New(3, workerpool.WithPanicHandler(func(recovered any) {
		fmt.Println("recovered:", recovered)
	}))
	for range 5 {
		p.Submit(func() {})
	}
	p.Submit(func() { panic("oops") })
	p.StopWait()

	s := p.Status()
	fmt.Println(s.State, s.Submitted, s.Completed, s.Panicked, s.Abandoned)
	fmt.Println("workers:", s.Workers, "waiting:", s.Waiting)
	// Output:
	// recovered: oops
	// stopped 6 6 1 0
	// workers: 0 waiting: 0
}
