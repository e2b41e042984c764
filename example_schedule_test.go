package workerpool_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/e86d9661/workerpool"
)

// Delayed tasks wait in the dispatcher's timer heap, holding no goroutine,
// and start in the order they come due.
func ExampleTaskOption_delay() {
	p := workerpool.New(1)
	ctx := context.Background()
	say := func(s string) func(context.Context) error {
		return func(context.Context) error { fmt.Println(s); return nil }
	}
	later := p.Go(ctx, say("20ms later"), workerpool.TaskOption{Delay: 20 * time.Millisecond})
	p.Go(ctx, say("10ms later"), workerpool.TaskOption{Delay: 10 * time.Millisecond})
	_ = p.Go(ctx, say("at once"), workerpool.TaskOption{Delay: time.Until(time.Now())}).Wait()
	fmt.Println("scheduled:", p.Status().Scheduled)
	_ = later.Wait()
	p.StopWait()
	// Output:
	// at once
	// scheduled: 2
	// 10ms later
	// 20ms later
}

// Among waiting tasks the highest level starts first, and tasks of one level
// start in the order they were submitted. (Here the one worker is kept busy
// so that all five wait.)
func ExampleTaskOption_priority() {
	p := workerpool.New(1)
	started, release := make(chan struct{}), make(chan struct{})
	p.Submit(func() { close(started); <-release }) // keeps the one worker busy
	<-started

	ctx := context.Background()
	say := func(s string) func(context.Context) error {
		return func(context.Context) error { fmt.Println(s); return nil }
	}
	p.Go(ctx, say("backup"), workerpool.TaskOption{Priority: -1})
	p.Go(ctx, say("email a")) // level 0, the default
	p.Go(ctx, say("alert"), workerpool.TaskOption{Priority: 10})
	p.Go(ctx, say("email b"))
	p.Go(ctx, say("report"), workerpool.TaskOption{Priority: 5})
	close(release)
	p.StopWait()
	// Output:
	// alert
	// report
	// email a
	// email b
	// backup
}

// Aging keeps low levels from starving: a waiting task's level rises by one
// for every period it has waited, so a task queued long ago overtakes tasks
// of higher levels queued since. Here the report, at level -1, has waited
// two periods (level 1 by then) when a request at level 0 comes in.
func ExampleWithPriorityAging() {
	p := workerpool.New(1, workerpool.WithPriorityAging(10*time.Millisecond))
	started, release := make(chan struct{}), make(chan struct{})
	p.Submit(func() { close(started); <-release }) // keeps the one worker busy
	<-started

	ctx := context.Background()
	say := func(s string) func(context.Context) error {
		return func(context.Context) error { fmt.Println(s); return nil }
	}
	p.Go(ctx, say("report"), workerpool.TaskOption{Priority: -1})
	p.Go(ctx, say("cleanup"), workerpool.TaskOption{Priority: math.MinInt}) // the lowest level: last, however long it waits
	time.Sleep(20 * time.Millisecond)
	p.Go(ctx, say("request"), workerpool.TaskOption{Priority: 0})
	close(release)
	p.StopWait()
	// Output:
	// report
	// request
	// cleanup
}

// A heavy task takes several of the pool's slots: beside a task of weight 3,
// a pool of size 4 runs one light task at a time. A task heavier than the
// pool is refused.
func ExampleTaskOption_weight() {
	p := workerpool.New(4)
	ctx := context.Background()
	var mu sync.Mutex
	inUse, most := 0, 0 // slots taken by running tasks, and the most seen
	take := func(n int) func() {
		mu.Lock()
		inUse += n
		most = max(most, inUse)
		mu.Unlock()
		return func() { mu.Lock(); inUse -= n; mu.Unlock() }
	}

	started, release := make(chan struct{}), make(chan struct{})
	heavy := p.Go(ctx, func(context.Context) error {
		defer take(3)()
		close(started)
		<-release
		return nil
	}, workerpool.TaskOption{Weight: 3})
	<-started
	var light []*workerpool.Task
	for range 3 {
		light = append(light, p.Go(ctx, func(context.Context) error {
			defer take(1)()
			return nil
		}))
	}
	for _, t := range light {
		_ = t.Wait() // all three run while the heavy task holds its 3 slots
	}
	close(release)
	_ = heavy.Wait()
	fmt.Println("most slots in use:", most)

	err := p.Go(ctx, func(context.Context) error { return nil }, workerpool.TaskOption{Weight: 5}).Wait()
	fmt.Println(errors.Is(err, workerpool.ErrTooHeavy), err)
	p.StopWait()
	// Output:
	// most slots in use: 4
	// true workerpool: task heavier than the pool
}

// A rate limit spaces out the starts, not the submits: the bucket starts
// full, so a burst of 2 tasks starts at once, and the others wait in the
// queue for tokens, here one a minute. Stop abandons them.
func ExampleWithRateLimit() {
	p := workerpool.New(5, workerpool.WithRateLimit(1.0/60, 2))
	started := make(chan struct{}, 5)
	for range 5 {
		p.Submit(func() { started <- struct{}{} })
	}
	<-started
	<-started // the burst
	p.Stop()  // the three others still wait for a token
	s := p.Status()
	fmt.Println("completed:", s.Completed, "abandoned:", s.Abandoned)
	// Output: completed: 2 abandoned: 3
}

// At runs a task at a wall-clock time; until then it waits in the
// dispatcher's timer heap, holding no goroutine, and counts as scheduled.
// Stop abandons a task not due yet; StopWait would wait for it.
func ExampleTaskOption_delayUntil() {
	p := workerpool.New(1)
	ctx := context.Background()
	due := time.Now().Add(10 * time.Millisecond)
	_ = p.Go(ctx, func(context.Context) error {
		fmt.Println("not before its time:", !time.Now().Before(due))
		return nil
	}, workerpool.TaskOption{Delay: time.Until(due)}).Wait()

	tomorrow := p.Go(ctx, func(context.Context) error {
		fmt.Println("never runs")
		return nil
	}, workerpool.TaskOption{Delay: time.Until(time.Now().Add(24 * time.Hour))})
	_ = p.DoWait(func() {}) // the dispatcher has taken the task before this one
	fmt.Println("scheduled:", p.Status().Scheduled)
	p.Stop()
	fmt.Println(errors.Is(tomorrow.Wait(), workerpool.ErrStopped))
	// Output:
	// not before its time: true
	// scheduled: 1
	// true
}
