package workerpool_test

import (
	"context"
	"fmt"
	"time"

	"github.com/e86d9661/workerpool"
)

// Fan out over the pool and stop at the first error: the failing task
// cancels the group's context, queued tasks are skipped, and running ones
// see the cancellation.
func ExampleWorkerPool_Group() {
	p := workerpool.New(4)
	defer p.StopWait()

	check := func(ctx context.Context, name string) error {
		if name == "c.txt" {
			return fmt.Errorf("check %s: checksum mismatch", name)
		}
		select {
		case <-ctx.Done(): // another task failed: give up early
			return ctx.Err()
		case <-time.After(10 * time.Millisecond): // stands in for real work
			return nil
		}
	}

	g := p.Group(context.Background())
	g.SetLimit(2) // at most two of the pool's four workers for this group
	for _, name := range []string{"a.txt", "b.txt", "c.txt", "d.txt", "e.txt"} {
		g.Go(func(ctx context.Context) error { return check(ctx, name) })
	}
	fmt.Println(g.Wait())
	// Output: check c.txt: checksum mismatch
}
