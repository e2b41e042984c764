// Command quickstart shows the basic life of a pool: fire-and-forget tasks
// with Submit, a synchronous result with SubmitWait, a Status snapshot, a
// panic handler (Hooks.Panic) at work on one job that fails on purpose,
// and a graceful StopWait at exit.
package main

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/e86d9661/workerpool"
)

func main() {
	p := workerpool.New(4, workerpool.WithHooks(workerpool.Hooks{Panic: func(recovered any) {
		fmt.Printf("panic handler: recovered %q (job 13 panics on purpose, to show the handler)\n", recovered)
	}}))

	// Fire-and-forget: 20 "jobs" of about 10ms each. Submit never blocks;
	// at most 4 run at once and the rest wait in FIFO order.
	var done atomic.Int64
	start := time.Now()
	for i := range 20 {
		p.Submit(func() {
			time.Sleep(10 * time.Millisecond) // stands in for real work
			if i == 13 {
				panic("job 13 failed") // recovered by the handler above
			}
			done.Add(1)
		})
	}
	s := p.Status()
	fmt.Printf("%d jobs accepted, %d workers started; the other jobs wait their turn\n", s.Submitted, s.Workers)

	// Synchronous: SubmitWait returns once the task has run, behind the
	// jobs already queued.
	var sum int
	p.SubmitWait(func() {
		for n := 1; n <= 100; n++ {
			sum += n
		}
	})
	fmt.Println("SubmitWait: sum 1..100 =", sum)

	// Graceful exit: every accepted task runs before StopWait returns.
	p.StopWait()
	s = p.Status()
	fmt.Printf("stopped after %v: %d of 20 jobs succeeded\n", time.Since(start).Round(10*time.Millisecond), done.Load())
	fmt.Printf("tasks: %d submitted = %d completed (%d of them panicked) + %d abandoned + %d canceled\n",
		s.Submitted, s.Completed, s.Panicked, s.Abandoned, s.Canceled)
}
