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
