package workerpool_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/e86d9661/workerpool"
)

// Graceful program exit: on SIGINT or SIGTERM, stop taking work and give the
// queued and running tasks 10 seconds, then cancel what is left. See also
// examples/shutdown.
func ExampleWorkerPool_Shutdown() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Tasks get a context the signal does not cancel, so that Shutdown can
	// let them finish; if the budget runs out, Shutdown cancels them.
	work := context.Background()
	p := workerpool.New(4)
	for range 8 {
		p.Go(work, func(ctx context.Context) error {
			time.Sleep(time.Millisecond) // stands in for real work that watches ctx
			return nil
		})
	}

	stop()       // stands in for the signal here: calling stop also ends ctx
	<-ctx.Done() // a real program serves until a signal arrives

	budget, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Shutdown(budget); err != nil {
		fmt.Println("shutdown cut short:", err) // the queue was dropped, running tasks canceled
	}
	s := p.Status()
	fmt.Println(s.Submitted, s.Completed+s.Abandoned+s.Canceled)
	// Output: 8 8
}

// Which context to give a task so that Shutdown drains it: a task runs with
// the ctx given to Go, so a request's ctx that ends with the request skips
// the task (or cancels it while it runs). Give tasks that must outlive the
// request a context that lives as long as the work should:
// context.WithoutCancel(reqCtx) keeps the request's values without its end.
// Shutdown then runs them; it cancels their context only if its own budget
// runs out.
func ExampleWorkerPool_Shutdown_requestContext() {
	p := workerpool.New(1)
	started, release := make(chan struct{}), make(chan struct{})
	p.Submit(func() { close(started); <-release }) // a busy worker: the tasks below wait
	<-started

	reqCtx, endRequest := context.WithCancel(context.Background())
	saved := p.Go(context.WithoutCancel(reqCtx), func(context.Context) error {
		fmt.Println("audit record saved")
		return nil
	})
	skipped := p.Go(reqCtx, func(context.Context) error { return nil })
	endRequest() // the handler returned before its tasks started
	close(release)

	budget, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fmt.Println("shutdown:", p.Shutdown(budget))
	fmt.Println("saved:", saved.Wait(), "skipped:", skipped.Wait())
	// Output:
	// audit record saved
	// shutdown: <nil>
	// saved: <nil> skipped: context canceled
}
