package workerpool_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// Group.Go fans work out over the pool; each task writes its own slot, and
// Wait returns once all have finished.
func ExampleGroup_Go() {
	p := workerpool.New(4)
	defer p.StopWait()
	urls := []string{"/a", "/bb", "/ccc"}
	sizes := make([]int, len(urls))
	g := p.Group(context.Background())
	for i, u := range urls {
		g.Go(func(context.Context) error {
			sizes[i] = len(u) // stands in for a fetch
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		fmt.Println(err)
	}
	fmt.Println(sizes)
	// Output: [2 3 4]
}

// SetLimit caps a group's share of a pool: here at most 2 of 8 workers
// fetch from one host, and the others stay free for the rest of the
// program. The first two tasks wait for each other, so two do run at once.
func ExampleGroup_SetLimit() {
	p := workerpool.New(8)
	defer p.StopWait()
	g := p.Group(context.Background())
	g.SetLimit(2)

	var mu sync.Mutex
	running, most := 0, 0
	var firstTwo sync.WaitGroup
	firstTwo.Add(2)
	for i := range 10 {
		g.Go(func(context.Context) error {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			if i < 2 {
				firstTwo.Done()
				firstTwo.Wait() // never returns if the two cannot run at once
			}
			mu.Lock()
			running--
			mu.Unlock()
			return nil
		})
	}
	fmt.Println("wait:", g.Wait(), "most at once:", most)
	// Output: wait: <nil> most at once: 2
}

// Wait always returns, also when the pool stops with group tasks still
// queued: it then reports ErrStopped (unless a task failed first).
func ExampleGroup_Wait() {
	p := workerpool.New(1)
	started, release := make(chan struct{}), make(chan struct{})
	g := p.Group(context.Background())
	g.Go(func(context.Context) error { close(started); <-release; return nil })
	g.Go(func(context.Context) error { fmt.Println("never runs"); return nil })
	<-started

	stopped := make(chan struct{})
	go func() { p.Stop(); close(stopped) }() // abandons the queued task; waits for the running one
	for !p.Stopped() {
		time.Sleep(time.Millisecond)
	}
	close(release)
	<-stopped
	err := g.Wait()
	fmt.Println(err, errors.Is(err, workerpool.ErrStopped))
	// Output: workerpool: pool stopped true
}
