package main

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The floors: the relay and the relays whose tasks travel by the
// mechanisms a faster pool of this shape could use (relay_intake.go,
// relay_lane.go).
var floors = map[string]func(workers int) pool{
	"relay":         openRelay,
	"relay+intake":  openIntakeRelay,
	"relay+release": openReleaseRelay,
	"relay+lane":    openLaneRelay,
}

// forEachFloor runs test on each floor.
func forEachFloor(t *testing.T, test func(t *testing.T, openRelay func(int) pool)) {
	for name, open := range floors {
		t.Run(name, func(t *testing.T) { test(t, open) })
	}
}

// With one worker, each floor runs tasks in the order they were submitted,
// single or in batches, including those that waited in its deque.
func TestRelayFIFOWithOneWorker(t *testing.T) { forEachFloor(t, testFIFOWithOneWorker) }

func testFIFOWithOneWorker(t *testing.T, openRelay func(int) pool) {
	base := runtime.NumGoroutine()
	p := openRelay(1)
	release, running := make(chan struct{}), make(chan struct{})
	p.Submit(newTask(func() {
		close(running)
		<-release
	}))
	<-running
	const n = 1000
	var order []int // written only by the one worker
	batch := make([]func(), 10)
	for i := 0; i < n; {
		first := i // i changes below, in this same iteration
		if i%100 != 0 {
			p.Submit(newTask(func() { order = append(order, first) }))
			i++
			continue
		}
		for k := range batch {
			batch[k] = func() { order = append(order, first+k) }
		}
		p.(batchPool).SubmitBatch(batch) // the relay is done with batch on return
		i += len(batch)
	}
	close(release)
	p.Close()
	require.Len(t, order, n)
	for i, v := range order {
		if v != i {
			t.Fatalf("task %d ran in place %d", v, i)
		}
	}
	assert.LessOrEqual(t, awaitGoroutines(base, 10*time.Second), base, "goroutines left after Close")
}

// Each floor starts workers up to its maximum and never more: with every
// worker blocked, the tasks beyond max wait.
func TestRelayNeverMoreThanMax(t *testing.T) { forEachFloor(t, testNeverMoreThanMax) }

func testNeverMoreThanMax(t *testing.T, openRelay func(int) pool) {
	const maxWorkers, n = 3, 50
	base := runtime.NumGoroutine()
	p := openRelay(maxWorkers)
	var now, peak, ran atomic.Int64
	release := make(chan struct{})
	blocker := newTask(func() {
		c := now.Add(1)
		for {
			old := peak.Load()
			if c <= old || peak.CompareAndSwap(old, c) {
				break
			}
		}
		<-release
		now.Add(-1)
		ran.Add(1)
	})
	for range n {
		p.Submit(blocker)
	}
	deadline := time.Now().Add(10 * time.Second)
	for now.Load() < maxWorkers && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // room for a worker too many to show
	assert.Equal(t, int64(maxWorkers), now.Load(), "running at once")
	assert.LessOrEqual(t, runtime.NumGoroutine(), base+1+maxWorkers, "the dispatcher and at most maxWorkers workers")
	close(release)
	p.Close()
	assert.Equal(t, int64(n), ran.Load())
	assert.Equal(t, int64(maxWorkers), peak.Load(), "peak running at once")
	assert.LessOrEqual(t, awaitGoroutines(base, 10*time.Second), base, "goroutines left after Close")
}

// Close, called while tasks wait behind busy workers, runs
// every accepted task before it returns and leaves no goroutine behind.
func TestRelayCloseRunsEveryAcceptedTask(t *testing.T) {
	forEachFloor(t, testCloseRunsEveryAcceptedTask)
}

func testCloseRunsEveryAcceptedTask(t *testing.T, openRelay func(int) pool) {
	const workers, n = 2, 10_000
	base := runtime.NumGoroutine()
	p := openRelay(workers)
	release := make(chan struct{})
	var started, ran atomic.Int64
	blocker := newTask(func() {
		started.Add(1)
		<-release
		ran.Add(1)
	})
	for range workers {
		p.Submit(blocker)
	}
	for started.Load() < workers {
		time.Sleep(time.Millisecond)
	}
	count := newTask(func() { ran.Add(1) })
	for range n {
		p.Submit(count)
	}
	closed := make(chan struct{})
	go func() {
		p.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while tasks were still blocked")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	<-closed
	assert.Equal(t, int64(workers+n), ran.Load())
	assert.LessOrEqual(t, awaitGoroutines(base, 10*time.Second), base, "goroutines left after Close")
}

// SubmitWait returns after its task ran, and the relay takes part in every
// scenario but those that need task handles, groups, a bound or a resize.
func TestRelayIsTheFloor(t *testing.T) {
	lib, err := findLibrary(floor)
	require.NoError(t, err)
	assert.Contains(t, names(libraries), floor, "in the default -pools list")
	assert.Contains(t, lib.note, "reference")
	for _, s := range scenarios {
		ok, _ := s.applies(lib)
		assert.Equal(t, s.needs == "" || s.needs == "queue" || s.needs == "batch" || s.needs == "delay", ok, s.id)
	}
	for name, open := range floors {
		p := open(2)
		ran := 0
		t1 := newTask(func() { ran++ })
		for i := range 100 {
			p.SubmitWait(t1)
			require.Equal(t, i+1, ran, name)
		}
		p.Close()
	}
}
