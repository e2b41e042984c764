package workerpool_test

import (
	"fmt"
	"sync"
	"time"

	"github.com/e86d9661/workerpool"
)

// Resize changes the most workers while the pool runs; Size shows the new
// size when Resize returns.
func ExampleWorkerPool_Resize() {
	p := workerpool.New(2, workerpool.WithMinWorkers(2))
	defer p.StopWait()
	fmt.Println("size:", p.Size(), "workers:", p.Status().Workers)
	p.Resize(8) // grows at once; new workers start as tasks wait
	fmt.Println("size:", p.Size())
	p.Resize(1) // idle workers retire at once, busy ones when their task ends
	fmt.Println("size:", p.Size(), "max workers:", p.Status().MaxWorkers)
	// Output:
	// size: 2 workers: 2
	// size: 8
	// size: 1 max workers: 1
}

// WithAdaptiveSize lets the pool choose its size between min and max, from
// New's maxWorkers, once a second by what it measures (Status.SizeReason
// says why); Resize sets the ceiling of what it may choose.
func ExampleWithAdaptiveSize() {
	p := workerpool.New(4, workerpool.WithAdaptiveSize(1, 64))
	defer p.Stop()
	s := p.Status()
	fmt.Println("size:", s.MaxWorkers, "reason:", s.SizeReason)
	p.Resize(2) // a ceiling below the chosen size holds at once
	fmt.Println("size:", p.Size())
	// Output:
	// size: 4 reason: start
	// size: 2
}

// A size schedule gives the pool other sizes by the time of day. The
// windows must not overlap: New panics, naming them, if they do.
func ExampleWithMinWorkers_schedule() {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		fmt.Println(err)
		return
	}
	p := workerpool.New(4, workerpool.WithMinWorkers(1,
		workerpool.SizeWindow{From: "12:00", To: "16:00", Min: 10, Max: 20, Location: berlin}, // the afternoon peak
		workerpool.SizeWindow{From: "22:00", To: "06:00", Min: 0, Max: 1, Location: berlin},   // nights: To before From wraps
	)) // the rest of the day: 1 to 4 workers, New's and WithMinWorkers's
	defer p.Stop()

	defer func() { fmt.Println(recover()) }()
	workerpool.New(4, workerpool.WithMinWorkers(0,
		workerpool.SizeWindow{From: "08:00", To: "12:00", Min: 2, Max: 8},
		workerpool.SizeWindow{From: "11:30", To: "14:00", Min: 0, Max: 2},
	))
	// Output: workerpool: WithMinWorkers window 1 (11:30-14:00) overlaps window 0 (08:00-12:00)
}

// After a burst, idle workers retire one per idle period, down to zero; a
// worker starts again when a task comes. (A negative timeout keeps workers
// until the pool stops.)
func ExampleWithIdleTimeout() {
	p := workerpool.New(4, workerpool.WithIdleTimeout(10*time.Millisecond))
	defer p.Stop()

	// A burst: four tasks at once, on four workers.
	var started sync.WaitGroup
	started.Add(4)
	release := make(chan struct{})
	for range 4 {
		p.Submit(func() { started.Done(); <-release })
	}
	started.Wait()
	fmt.Println("workers in the burst:", p.Status().Workers)
	close(release)

	for p.Status().Workers > 0 {
		time.Sleep(5 * time.Millisecond) // about 40ms: four idle periods
	}
	fmt.Println("workers once idle:", p.Status().Workers)
	// Output:
	// workers in the burst: 4
	// workers once idle: 0
}

// Warm workers: New starts the floor at once, and idle retirement stops
// there.
func ExampleWithMinWorkers() {
	p := workerpool.New(4, workerpool.WithMinWorkers(2), workerpool.WithIdleTimeout(10*time.Millisecond))
	defer p.Stop()
	fmt.Println("workers before any task:", p.Status().Workers)

	// A burst: four tasks at once, on four workers.
	var started sync.WaitGroup
	started.Add(4)
	release := make(chan struct{})
	for range 4 {
		p.Submit(func() { started.Done(); <-release })
	}
	started.Wait()
	fmt.Println("workers in the burst:", p.Status().Workers)
	close(release)

	for p.Status().Workers > 2 {
		time.Sleep(5 * time.Millisecond) // about 20ms: two idle periods
	}
	fmt.Println("workers once idle:", p.Status().Workers)
	// Output:
	// workers before any task: 2
	// workers in the burst: 4
	// workers once idle: 2
}
