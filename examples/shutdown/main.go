// Command shutdown shows a graceful program exit: work runs on a pool until
// SIGINT or SIGTERM, then Shutdown gives the queued and running tasks a
// 10-second budget, after which it drops the queue and cancels the tasks
// still running. Run it and press Ctrl-C.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/e86d9661/workerpool"
)

// shutdownBudget is how long the queued and running tasks get after a signal.
const shutdownBudget = 10 * time.Second

func main() {
	// ctx is canceled on the first SIGINT or SIGTERM; a second one kills
	// the program the default way, once stop has been called.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Jobs get a context the signal does not cancel, so that Shutdown can
	// let them finish; if the budget runs out, Shutdown cancels them.
	work := context.Background()
	p := workerpool.New(4)
	var tasks []*workerpool.Task
	fmt.Println("working; press Ctrl-C to stop")
	for job := 0; ctx.Err() == nil; job++ {
		tasks = append(tasks, p.Go(work, func(ctx context.Context) error { return process(ctx, job) }))
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond): // jobs arrive over time
		}
	}
	stop() // a second signal now ends the program at once

	fmt.Printf("signal received; shutting down within %v\n", shutdownBudget)
	budget, cancel := context.WithTimeout(context.Background(), shutdownBudget)
	defer cancel()
	if err := p.Shutdown(budget); err != nil {
		fmt.Println("shutdown cut short:", err)
	}

	var done, canceled, failed int
	for _, t := range tasks {
		switch err := t.Wait(); {
		case err == nil:
			done++
		case errors.Is(err, context.Canceled), errors.Is(err, workerpool.ErrStopped):
			canceled++
		default:
			failed++
			log.Print(err)
		}
	}
	s := p.Status()
	fmt.Printf("jobs: %d done, %d canceled or dropped, %d failed\n", done, canceled, failed)
	fmt.Printf("pool: submitted %d, completed %d, canceled %d, abandoned %d\n",
		s.Submitted, s.Completed, s.Canceled, s.Abandoned)
	fmt.Println("shutdown complete")
}

// process stands in for a job that takes a few tens of milliseconds and
// gives up when its context is canceled.
func process(ctx context.Context, job int) error {
	select {
	case <-time.After(time.Duration(20+rand.IntN(40)) * time.Millisecond):
		return nil
	case <-ctx.Done():
		return fmt.Errorf("job %d: %w", job, context.Cause(ctx))
	}
}
