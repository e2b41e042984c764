package workerpool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Regression tests for seven defects on the stop paths. Each test states the
// wanted behaviour and failed on the code it was written against (commit
// 2f7daf9); the few sub-cases that passed there are guards for the same path
// and say so. The tests use only the public API (and the small helpers of
// workerpool_test.go and task_test.go), so that they survive a rewrite of the
// internals.

// --- helpers ---

// A stopMode is one way to stop a pool. Each call blocks until it returns.
type stopMode struct {
	name string
	stop func(p *WorkerPool)
}

var stopModes = []stopMode{
	{"Stop", (*WorkerPool).Stop},
	{"StopWait", (*WorkerPool).StopWait},
	{"Shutdown", func(p *WorkerPool) { _ = p.Shutdown(context.Background()) }},
	// A guard in the held-tasks test: the cut cancels the group's context.
	{"ShutdownGivingUp", func(p *WorkerPool) { _ = p.Shutdown(canceledContext()) }},
}

// canceledContext returns a context that is done already.
func canceledContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// waitGroupInBubble calls g.Wait in a goroutine and returns what it returns.
// If Wait is still blocked once every other goroutine of the bubble is, the
// test fails and giveUp (which must cancel the group's parent context) is
// called, so that Wait returns and the bubble can end without a deadlock
// panic. ok reports whether Wait returned by itself.
func waitGroupInBubble(t *testing.T, g *Group, giveUp context.CancelFunc, what string) (err error, ok bool) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- g.Wait() }()
	synctest.Wait()
	select {
	case err := <-done:
		return err, true
	default:
	}
	t.Errorf("%s: Group.Wait still blocked after the pool stopped", what)
	giveUp()
	<-done
	return nil, false
}

// noopFn is a task body that does nothing.
func noopFn(context.Context) error { return nil }

// --- 1. Group.Wait returns once the pool has stopped ---

// Defect 1: Group.Wait returns once the pool has stopped, whatever happened to its held tasks.
func TestGroupWaitReturnsAfterStopDropsHeldTasks(t *testing.T) {
	// Today: while the pool stops, a freed slot drops the group's held task and
	// records ErrStopped but leaves the group's context alive; a task the group
	// then holds back (its limit lowered, one task still running) is never
	// dropped, and Wait hangs. Wanted: Wait returns an error wrapping
	// ErrStopped, and no held task runs.
	for _, mode := range stopModes {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(2)
				defer p.Stop()
				parent, cancelParent := context.WithCancel(context.Background())
				defer cancelParent()
				g := p.Group(parent)
				g.SetLimit(2)
				first, second := newGate(), newGate()
				var heldRan atomic.Int64
				held := func(context.Context) error { heldRan.Add(1); return nil }
				g.Go(func(context.Context) error { first.wait(); return nil })
				g.Go(func(context.Context) error { second.wait(); return nil })
				g.Go(held) // held back: the group is at its limit
				synctest.Wait()
				require.Equal(t, 2, p.Status().Busy, "the group's two running tasks")

				stopped := make(chan struct{})
				go func() { mode.stop(p); close(stopped) }()
				synctest.Wait() // stopping has begun; the pool waits for the running tasks
				first.open()    // a slot frees while the pool stops: the held task is dropped
				synctest.Wait()
				g.SetLimit(1)
				g.Go(held) // held back again: one task still runs
				second.open()
				<-stopped
				g.Go(held) // after the pool stopped

				err, ok := waitGroupInBubble(t, g, cancelParent, mode.name)
				if ok {
					assert.ErrorIs(t, err, ErrStopped, "Wait")
				}
				assert.Zero(t, heldRan.Load(), "held tasks that ran")
				requireStoppedClean(t, p)
			})
		})
	}
}

// Defect 1: Group.Wait returns after g.Go calls made on a stopped pool.
func TestGroupWaitReturnsAfterGoOnStoppedPool(t *testing.T) {
	// Several goroutines call g.Go at once on a stopped pool. Today: in a group
	// whose held task the stop dropped (ErrStopped recorded, context alive), one
	// Go can be held back behind another that is being rejected, and is never
	// dropped. Wanted: Wait returns an error wrapping ErrStopped, whatever the
	// group did before.
	// The first three cases are guards: the first rejected Go cancels the
	// group there, which drops what it holds.
	cases := []struct {
		name   string
		before func(t *testing.T, p *WorkerPool, g *Group) // runs before the pool stops
	}{
		{
			name:   "fresh group",
			before: func(*testing.T, *WorkerPool, *Group) {},
		},
		{
			name:   "fresh group with a limit",
			before: func(_ *testing.T, _ *WorkerPool, g *Group) { g.SetLimit(1) },
		},
		{
			name: "earlier tasks finished, with a limit",
			before: func(_ *testing.T, _ *WorkerPool, g *Group) {
				g.SetLimit(1)
				for range 3 {
					g.Go(noopFn)
				}
				synctest.Wait()
			},
		},
		{
			// The stop drops a held task while one of the group's tasks
			// runs: the group records ErrStopped but is not canceled.
			name: "held tasks dropped by the stop",
			before: func(t *testing.T, p *WorkerPool, g *Group) {
				g.SetLimit(1)
				running := newGate()
				g.Go(func(context.Context) error { running.wait(); return nil })
				g.Go(noopFn) // held
				synctest.Wait()
				require.Equal(t, 1, p.Status().Busy, "the group's running task")
				go func() { synctest.Wait(); running.open() }()
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			const rounds = 100
			untilFailure(t, rounds, func(t *testing.T, round int) {
				p, g, cancelParent := newPoolAndGroup()
				defer cancelParent()
				c.before(t, p, g)
				p.StopWait()
				var ran atomic.Int64
				var callers sync.WaitGroup
				for range 4 {
					callers.Go(func() {
						for range 20 {
							g.Go(func(context.Context) error { ran.Add(1); return nil })
						}
					})
				}
				callers.Wait()
				err, ok := waitGroupInBubble(t, g, cancelParent, fmt.Sprintf("round %d of %d", round, rounds))
				if ok {
					assert.ErrorIs(t, err, ErrStopped, "round %d: Wait", round)
				}
				assert.Zero(t, ran.Load(), "round %d: tasks run after the pool stopped", round)
			})
		})
	}
}

// untilFailure runs round in a fresh synctest bubble, rounds times, and
// stops at the first round that fails.
func untilFailure(t *testing.T, rounds int, round func(t *testing.T, round int)) {
	t.Helper()
	for i := range rounds {
		failed := false
		synctest.Test(t, func(t *testing.T) {
			round(t, i)
			failed = t.Failed()
		})
		if failed {
			return
		}
	}
}

// newPoolAndGroup makes a two-worker pool and a group on it whose parent
// context cancel cancels.
func newPoolAndGroup() (p *WorkerPool, g *Group, cancel context.CancelFunc) {
	p = New(2)
	parent, cancel := context.WithCancel(context.Background())
	return p, p.Group(parent), cancel
}

// Defect 1: Group.Wait returns when g.Go races StopWait.
func TestGroupWaitReturnsWhenGoRacesStopWait(t *testing.T) {
	// Goroutines keep calling Go on a group with a limit while StopWait runs,
	// and a little after. Wanted: Wait returns every time once StopWait and the
	// callers have returned. Inside a bubble a hang is seen at once.
	const rounds = 300
	untilFailure(t, rounds, func(t *testing.T, round int) {
		p, g, cancelParent := newPoolAndGroup()
		defer cancelParent()
		g.SetLimit(1)
		var callers sync.WaitGroup
		for range 3 {
			callers.Go(func() {
				for !p.Stopped() {
					g.Go(noopFn)
					runtime.Gosched() // with one CPU, let StopWait run
				}
				for range 3 {
					g.Go(noopFn)
				}
			})
		}
		for range 20 {
			g.Go(noopFn)
		}
		p.StopWait()
		callers.Wait()
		err, ok := waitGroupInBubble(t, g, cancelParent, fmt.Sprintf("round %d of %d", round, rounds))
		if ok { // the callers' last Go calls came after the stop
			assert.ErrorIs(t, err, ErrStopped, "round %d: Wait", round)
		}
		requireStoppedClean(t, p)
	})
}

// --- 2. the pool does not keep finished groups ---

// Defect 2: the pool keeps no reference to a group whose tasks have all finished.
func TestGroupNeverWaitedIsCollectedOnceItsTasksFinish(t *testing.T) {
	// Today the pool keeps every group in its live set until Wait is called.
	// Wanted: a group nobody waits for is collected, while the pool still runs,
	// once its tasks have finished. The parent is context.Background(), which
	// keeps no reference to its children.
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		var ran atomic.Int64
		ref := func() weak.Pointer[Group] {
			g := p.Group(context.Background())
			for range 3 {
				g.Go(func(context.Context) error { ran.Add(1); return nil })
			}
			return weak.Make(g)
		}()
		synctest.Wait()
		require.Equal(t, int64(3), ran.Load(), "the group's tasks ran")
		for range 3 {
			runtime.GC()
		}
		assert.True(t, ref.Value() == nil, "a finished group nobody waits for is still reachable")
		assert.Equal(t, StateRunning, p.Status().State, "the pool still runs")
	})
}

// --- 3. a task that never started because the pool stopped is abandoned ---

// Defect 3: tasks queued when the pool stops report ErrStopped and count as Abandoned, not Canceled.
func TestTasksQueuedAtStopAreAbandonedNotCanceled(t *testing.T) {
	// Tasks, Futures and group tasks are queued behind a busy worker when the
	// pool stops (Stop, or a Shutdown that gives up at once or at its deadline).
	// Wanted: each handle reports an error wrapping ErrStopped, the group's Wait
	// too, and Status counts every one in Abandoned and none in Canceled.
	// (Queued Tasks and Futures were already right; the group tasks after the
	// first were counted Canceled: the first one's ErrStopped, or the cut,
	// canceled their group.)
	modes := []struct {
		name string
		stop func(p *WorkerPool) error
	}{
		{"Stop", func(p *WorkerPool) error { p.Stop(); return nil }},
		{"ShutdownGivingUpAtOnce", func(p *WorkerPool) error { return p.Shutdown(canceledContext()) }},
		{"ShutdownGivingUpAtDeadline", func(p *WorkerPool) error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			return p.Shutdown(ctx)
		}},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1)
				blocker := blockOneWorker(t, p)
				var ran atomic.Int64
				fn := func(context.Context) error { ran.Add(1); return nil }
				tasks := []*Task{p.Go(t.Context(), fn), p.Go(t.Context(), fn)}
				futures := []*Future[int]{
					Call(t.Context(), p, func(context.Context) (int, error) { ran.Add(1); return 1, nil }),
					Call(t.Context(), p, func(context.Context) (int, error) { ran.Add(1); return 2, nil }),
				}
				g := p.Group(context.Background())
				for range 3 {
					g.Go(fn)
				}
				synctest.Wait()
				require.Equal(t, 7, p.WaitingQueueSize(), "queued behind the busy worker")

				stopped := make(chan error, 1)
				go func() { stopped <- mode.stop(p) }()
				synctest.Wait()
				time.Sleep(2 * time.Second) // past a Shutdown deadline (the bubble's clock)
				blocker.open()
				<-stopped

				for i, task := range tasks {
					assert.ErrorIs(t, task.Wait(), ErrStopped, "Task %d", i)
				}
				for i, f := range futures {
					_, err := f.Wait()
					assert.ErrorIs(t, err, ErrStopped, "Future %d", i)
				}
				assert.ErrorIs(t, g.Wait(), ErrStopped, "Group.Wait")
				assert.Zero(t, ran.Load(), "queued tasks that ran")
				s := requireStoppedClean(t, p)
				assert.Equal(t, uint64(7), s.Abandoned, "abandoned: 2 Tasks, 2 Futures, 3 group tasks")
				assert.Zero(t, s.Canceled, "canceled")
			})
		})
	}
}

// Defect 3: a task that a Shutdown cuts before its fn started reports ErrStopped and counts as Abandoned.
func TestTasksCutByShutdownBeforeStartReportErrStopped(t *testing.T) {
	// A Shutdown gives up (a task cancels its ctx) while it drains a queue of
	// Tasks and Futures onto the workers, so some are handed out around the cut.
	// Wanted: every handle reports its fn's result (nil) or, if fn never ran, an
	// error wrapping ErrStopped, never context.Canceled; nothing is counted in
	// Status.Canceled, and Abandoned counts the handles whose fn never ran.
	// Races need real scheduling: many rounds, outside a bubble.
	const rounds, handles = 100, 200
	badRounds := 0
	var firstBad string
	for round := range rounds {
		p := New(4)
		blocker := newGate()
		for range 4 {
			p.Submit(blocker.task())
		}
		ctx, giveUp := context.WithCancel(context.Background())
		var ran atomic.Int64
		count := func() {
			if ran.Add(1) == handles/4 {
				giveUp() // Shutdown gives up in the middle of its drain
			}
		}
		tasks := make([]*Task, 0, handles/2)
		futures := make([]*Future[int], 0, handles/2)
		for i := range handles {
			if i%2 == 0 {
				tasks = append(tasks, p.Go(context.Background(), func(context.Context) error { count(); return nil }))
			} else {
				futures = append(futures, Call(context.Background(), p, func(context.Context) (int, error) { count(); return i, nil }))
			}
		}
		shutdown := make(chan error, 1)
		go func() { shutdown <- p.Shutdown(ctx) }()
		blocker.open()
		shutdownErr := <-shutdown
		giveUp()
		if shutdownErr != nil { // nil only if the drain won the race with the cut
			assert.ErrorIs(t, shutdownErr, context.Canceled, "round %d: Shutdown gave up", round)
		}

		var errs []string
		for i, task := range tasks {
			if err := task.Wait(); err != nil && !errors.Is(err, ErrStopped) {
				errs = append(errs, fmt.Sprintf("Task %d: %v", i, err))
			}
		}
		for i, f := range futures {
			if _, err := f.Wait(); err != nil && !errors.Is(err, ErrStopped) {
				errs = append(errs, fmt.Sprintf("Future %d: %v", i, err))
			}
		}
		s := p.Status()
		notRun := uint64(handles) - uint64(ran.Load())
		if len(errs) > 0 || s.Canceled != 0 || s.Abandoned != notRun {
			badRounds++
			if firstBad == "" {
				firstBad = fmt.Sprintf("round %d: Canceled %d, Abandoned %d (want %d, the handles whose fn never ran); handles with other errors: %v",
					round, s.Canceled, s.Abandoned, notRun, errs)
			}
		}
	}
	assert.Zero(t, badRounds, "rounds (of %d) where a handle not started at the cut was not reported as stopped; first: %s", rounds, firstBad)
}

// --- 4. Shutdown reports a concurrent Stop's abandonment ---

// Defect 4: Shutdown returns nil only if every accepted task ran.
func TestShutdownReportsTasksAStopAbandoned(t *testing.T) {
	// Wanted: when a Stop abandoned tasks, during or before the Shutdown, it
	// returns an error wrapping ErrStopped (a Shutdown that itself gives up may
	// return its context's error).
	cases := []struct {
		name     string
		doneCtx  bool
		shutdown func(t *testing.T, p *WorkerPool, blocker gate) error
	}{
		{"Stop during Shutdown", false, func(t *testing.T, p *WorkerPool, blocker gate) error {
			shutdown := make(chan error, 1)
			go func() { shutdown <- p.Shutdown(t.Context()) }()
			synctest.Wait() // Shutdown drains, waiting for the busy worker
			go p.Stop()
			synctest.Wait() // Stop abandoned the queue
			blocker.open()
			return <-shutdown
		}},
		{"Stop before Shutdown", false, func(t *testing.T, p *WorkerPool, blocker gate) error {
			go func() { synctest.Wait(); blocker.open() }()
			p.Stop()
			return p.Shutdown(t.Context())
		}},
		{"Stop before a Shutdown with a done context", true, func(t *testing.T, p *WorkerPool, blocker gate) error {
			go func() { synctest.Wait(); blocker.open() }()
			p.Stop()
			return p.Shutdown(canceledContext())
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1)
				blocker := blockOneWorker(t, p)
				var ran atomic.Int64
				for range 3 {
					p.Submit(func() { ran.Add(1) })
				}
				err := c.shutdown(t, p, blocker)
				s := requireStoppedClean(t, p)
				require.Equal(t, uint64(3), s.Abandoned, "abandoned by Stop")
				assert.Zero(t, ran.Load(), "queued tasks that ran")
				if c.doneCtx { // Shutdown gave up too: its context's error will do
					assert.True(t, errors.Is(err, ErrStopped) || errors.Is(err, context.Canceled),
						"Shutdown returned %v, want an error wrapping ErrStopped or context.Canceled", err)
				} else {
					assert.ErrorIs(t, err, ErrStopped, "Shutdown after tasks were abandoned")
				}
			})
		})
	}
}

// --- 5. no pool goroutine runs once a stop returns ---

// poolPackageFrame is how a stack dump names a function of this package.
const poolPackageFrame = "github.com/e86d9661/workerpool."

// poolGoroutines returns, by goroutine id, the stack of every goroutine but
// the caller that has a frame of this package ("created by" lines name the
// creator, not a frame, and are ignored). buf must be large enough.
func poolGoroutines(buf []byte) map[string]string {
	n := runtime.Stack(buf, true)
	dump := string(buf[:n])
	found := map[string]string{}
	for i, block := range strings.Split(dump, "\n\n") {
		if i == 0 {
			continue // runtime.Stack puts the calling goroutine first
		}
		if finishingGoexit(block) {
			continue
		}
		lines := strings.Split(block, "\n")
		header := lines[0] // "goroutine 42 [chan receive]:"
		for _, line := range lines[1:] {
			if strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "created by ") {
				continue
			}
			if strings.HasPrefix(line, poolPackageFrame) {
				id, _, _ := strings.Cut(strings.TrimPrefix(header, "goroutine "), " ")
				found[id] = block
				break
			}
		}
	}
	return found
}

// finishingGoexit reports whether a goroutine is inside runtime.Goexit.
// Seen after a stop returned, that is a worker whose task called Goexit and
// which has run its deferred calls into the pool, and is at most finishing
// the last one, its WaitGroup's Done: the stop could not have returned
// before Done had counted it. The runtime keeps a Goexit'd goroutine's
// frames until it frees it, and nothing can wait for that; it runs no pool
// code, and never will.
func finishingGoexit(block string) bool {
	return strings.Contains(block, "\nruntime.Goexit(")
}

// poolFrame returns the name of the innermost frame of this package in a
// goroutine's stack, without its arguments.
func poolFrame(block string) string {
	for _, line := range strings.Split(block, "\n") {
		if strings.HasPrefix(line, poolPackageFrame) {
			name, _, _ := strings.Cut(strings.TrimPrefix(line, poolPackageFrame), "(0x")
			return strings.TrimSuffix(strings.TrimSuffix(name, "(...)"), "()")
		}
	}
	return ""
}

// Defect 5: no pool goroutine is still running when Stop, StopWait or Shutdown returns.
func TestNoPoolGoroutineRunsAfterStopReturns(t *testing.T) {
	// Wanted: when the call returns, no function of this package is on any
	// goroutine's stack. The stack dump is taken right after the call returns,
	// with no polling and no sleeping. Pools of several workers whose tasks just
	// ran; in the idle-timer case a timer may be firing. Real scheduling: many
	// rounds, outside a bubble.
	buf := make([]byte, 1<<20)
	cases := []struct {
		name string
		opts []Option
		stop func(p *WorkerPool)
	}{
		{"Stop", nil, (*WorkerPool).Stop},
		{"StopWait", nil, (*WorkerPool).StopWait},
		{"Shutdown", nil, func(p *WorkerPool) { _ = p.Shutdown(context.Background()) }},
		{"StopWithIdleTimerFiring", []Option{WithIdleTimeout(time.Microsecond)}, (*WorkerPool).Stop},
	}
	const rounds = 400
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Not ours: the parent test's goroutine, and whatever other
			// tests left behind.
			before := poolGoroutines(buf)
			bad := 0
			var first string
			seen := map[string]int{}
			for range rounds {
				p := New(4, c.opts...)
				for range 8 {
					p.Submit(func() {})
				}
				require.NoError(t, p.DoWait(func() {}))
				c.stop(p)
				left := poolGoroutines(buf)
				for id := range before {
					delete(left, id)
				}
				if len(left) > 0 {
					bad++
					for _, block := range left {
						if first == "" {
							first = block
						}
						seen[poolFrame(block)]++
					}
				}
			}
			assert.Zero(t, bad, "rounds (of %d) where a pool goroutine was still running after %s returned (innermost pool frames seen: %v); first one:\n%s",
				rounds, c.name, seen, first)
		})
	}
}

// --- 6. Shutdown with a done context starts no queued task ---

// yieldingContext is a context that is done already and whose first Done
// call lets every other goroutine of the bubble run until it blocks: it
// widens the window between Shutdown's first step and its look at ctx, as
// a preempted caller would.
type yieldingContext struct {
	context.Context
	yielded atomic.Bool
}

func (c *yieldingContext) Done() <-chan struct{} {
	if c.yielded.CompareAndSwap(false, true) {
		synctest.Wait()
	}
	return c.Context.Done()
}

// Defect 6: Shutdown with a context that is already done starts no queued task.
func TestShutdownWithDoneContextStartsNoQueuedTask(t *testing.T) {
	// Tasks held by a Pause wait in the queue while the workers are idle; then
	// Shutdown is called with a context that is already done (and whose Done
	// lets the rest of the bubble run first). Wanted: none of the queued tasks
	// starts, Status.Abandoned counts them, and Shutdown reports the context's
	// error.
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		for range 2 {
			p.Submit(func() {}) // start the workers; they stay, idle
		}
		pause, endPause := context.WithCancel(t.Context())
		defer endPause()
		p.Pause(pause)
		var ran atomic.Int64
		for range 3 {
			p.Submit(func() { ran.Add(1) })
		}
		task := p.Go(t.Context(), func(context.Context) error { ran.Add(1); return nil })
		synctest.Wait()
		require.Equal(t, 4, p.WaitingQueueSize(), "held by the pause")

		ctx := &yieldingContext{Context: canceledContext()}
		err := p.Shutdown(ctx)
		assert.Zero(t, ran.Load(), "queued tasks started by Shutdown with a done context")
		assert.ErrorIs(t, task.Wait(), ErrStopped, "Task queued at the Shutdown")
		assert.ErrorIs(t, err, context.Canceled, "Shutdown that gave up at once")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(4), s.Abandoned, "abandoned")
	})
}

// --- 7. a canceled queued task leaves Waiting at once ---

// Defect 7: a canceled queued task has left Waiting and joined Canceled by the time its Wait returns.
func TestCanceledQueuedTaskLeavesWaitingAtOnce(t *testing.T) {
	// Each case cancels tasks queued behind a plain task that cannot start (both
	// workers are blocked, or a Pause holds it), so dispatch cannot reach them. Wanted: once the
	// handle's Wait (or the Group's) has returned, WaitingQueueSize and
	// Status.Waiting no longer count them, and Status.Canceled does. The check
	// is made right after Wait returns.
	fn := func(context.Context) error { return nil }
	// blockSecondWorker blocks the second worker and queues a plain task
	// ahead of what the case queues next.
	blockSecondWorker := func(t *testing.T, p *WorkerPool) gate {
		second := newGate()
		p.Submit(second.task())
		p.Submit(func() {})
		synctest.Wait()
		require.Equal(t, 2, p.Status().Busy, "busy")
		return second
	}
	// requireQueued waits until dispatch has queued what was given to it.
	requireQueued := func(t *testing.T, p *WorkerPool, n int) {
		synctest.Wait()
		require.Equal(t, n, p.WaitingQueueSize(), "queued before the cancel")
	}
	cases := []struct {
		name string
		// cancelAndWait queues tasks, cancels them and waits for their
		// handles, with the first worker blocked. It returns how many it
		// canceled and the gate that blocks the second worker.
		cancelAndWait func(t *testing.T, p *WorkerPool) (canceled uint64, second gate)
	}{
		{"Task.Cancel", func(t *testing.T, p *WorkerPool) (uint64, gate) {
			second := blockSecondWorker(t, p)
			task := p.Go(t.Context(), fn)
			requireQueued(t, p, 2)
			task.Cancel()
			assert.Same(t, context.Canceled, task.Wait(), "Task.Wait")
			return 1, second
		}},
		{"Future.Cancel", func(t *testing.T, p *WorkerPool) (uint64, gate) {
			second := blockSecondWorker(t, p)
			f := Call(t.Context(), p, func(context.Context) (int, error) { return 1, nil })
			requireQueued(t, p, 2)
			f.Cancel()
			_, err := f.Wait()
			assert.Same(t, context.Canceled, err, "Future.Wait")
			return 1, second
		}},
		{"caller context canceled", func(t *testing.T, p *WorkerPool) (uint64, gate) {
			second := blockSecondWorker(t, p)
			ctx, cancel := context.WithCancel(t.Context())
			task := p.Go(ctx, fn)
			requireQueued(t, p, 2)
			cancel()
			assert.Same(t, context.Canceled, task.Wait(), "Task.Wait")
			return 1, second
		}},
		{"deadline expired in the queue", func(t *testing.T, p *WorkerPool) (uint64, gate) {
			second := blockSecondWorker(t, p)
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			task := p.Go(ctx, fn)
			requireQueued(t, p, 2)
			assert.Equal(t, context.DeadlineExceeded, task.Wait(), "Task.Wait")
			return 1, second
		}},
		{"group parent canceled", func(t *testing.T, p *WorkerPool) (uint64, gate) {
			second := blockSecondWorker(t, p)
			ctx, cancel := context.WithCancel(t.Context())
			g := p.Group(ctx)
			for range 3 {
				g.Go(fn)
			}
			requireQueued(t, p, 4)
			cancel()
			assert.Same(t, context.Canceled, g.Wait(), "Group.Wait")
			return 3, second
		}},
		{"group first error", func(t *testing.T, p *WorkerPool) (uint64, gate) {
			// The failing task runs on the second worker. A Pause then holds
			// what comes next, so that the worker the failure frees finds
			// nothing to run: the plain task ahead stays in front.
			failing := newGate()
			g := p.Group(t.Context())
			g.Go(func(context.Context) error { failing.wait(); return errTask })
			synctest.Wait()
			require.Equal(t, 2, p.Status().Busy, "busy")
			go p.Pause(t.Context()) // its barrier waits for the first worker; StopWait ends it
			synctest.Wait()
			require.Equal(t, StatePaused, p.Status().State, "state")
			p.Submit(func() {})
			for range 3 {
				g.Go(fn)
			}
			requireQueued(t, p, 4)
			failing.open()
			assert.Same(t, errTask, g.Wait(), "Group.Wait")
			return 3, newGate()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(2)
				first := newGate()
				p.Submit(first.task())
				synctest.Wait()

				canceled, second := c.cancelAndWait(t, p)
				waiting, s := p.WaitingQueueSize(), p.Status()
				assert.Equal(t, 1, waiting, "WaitingQueueSize: only the plain task ahead")
				assert.Equal(t, 1, s.Waiting, "Status.Waiting")
				assert.Equal(t, canceled, s.Canceled, "Status.Canceled")

				first.open()
				second.open()
				p.StopWait()
				s = requireStoppedClean(t, p)
				assert.Equal(t, canceled, s.Canceled, "Status.Canceled once stopped")
			})
		})
	}
}

// --- the stop's first act holds from the moment it is called ---

// holdingLog is a slog.Handler that holds the goroutine that logs msg
// (after closing reached) until release is closed: a test uses it to stop
// a stop call at a known point, such as the "pool stopping" record that
// Stop logs after it began abandoning and before its stop message.
type holdingLog struct {
	msg              string
	reached, release chan struct{}
}

func newHoldingLog(msg string) *holdingLog {
	return &holdingLog{msg: msg, reached: make(chan struct{}), release: make(chan struct{})}
}

func (h *holdingLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *holdingLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *holdingLog) WithGroup(string) slog.Handler            { return h }

func (h *holdingLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		close(h.reached)
		<-h.release
	}
	return nil
}

// From the moment Stop, or a Shutdown that gives up, is called, no queued
// task is handed to a worker, even one that comes free before the stop
// message reaches the dispatcher (held here by the "pool stopping" log
// record): the queued task is abandoned, not run.
func TestNoQueuedTaskStartsOnceAbandoningStopIsCalled(t *testing.T) {
	stops := map[string]func(p *WorkerPool){
		"Stop":             (*WorkerPool).Stop,
		"ShutdownGivingUp": func(p *WorkerPool) { _ = p.Shutdown(canceledContext()) },
	}
	for name, stop := range stops {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				hold := newHoldingLog("pool stopping")
				letters := new(letterBox)
				p := New(1, WithLogger(slog.New(hold)), WithDeadLetter(letters.handle))
				running := newGate()
				defer running.release()
				p.Submit(running.task())
				var ran atomic.Bool
				p.Submit(func() { ran.Store(true) })
				synctest.Wait()
				require.Equal(t, 1, p.WaitingQueueSize(), "the second task waits")

				stopped := make(chan struct{})
				go func() { stop(p); close(stopped) }()
				<-hold.reached // abandoning has begun; the stop message is not sent yet
				running.open() // the worker comes free
				synctest.Wait()
				assert.False(t, ran.Load(), "a queued task started after %s was called", name)
				close(hold.release)
				<-stopped
				assert.False(t, ran.Load(), "a queued task started after %s was called", name)
				s := requireStoppedClean(t, p)
				assert.Equal(t, uint64(1), s.Abandoned, "abandoned")
				if got := letters.got(); assert.Len(t, got, 1, "dead letters") {
					assert.ErrorIs(t, got[0].reason, ErrStopped, "the letter's reason")
				}
			})
		})
	}
}

// A submitter that waits for room under Block is refused with ErrStopped by
// a Stop, even when the jobs that Stop abandons free room before its stop
// message reaches the dispatcher: it is never admitted, and its task never
// runs.
func TestParkedSubmitterIsNotAdmittedOnceStopIsCalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hold := newHoldingLog("pool stopping")
		p := New(1, WithMaxWaiting(1, Block), WithLogger(slog.New(hold)))
		running := newGate()
		defer running.release()
		p.Submit(running.task())
		queued := p.Go(t.Context(), noopFn) // fills the queue's one place
		synctest.Wait()
		var ran atomic.Bool
		parked := make(chan error, 1)
		go func() { parked <- p.Do(func() { ran.Store(true) }) }()
		synctest.Wait()
		require.Empty(t, parked, "Do waits for room")

		stopped := make(chan struct{})
		go func() { p.Stop(); close(stopped) }()
		<-hold.reached // abandoning has begun: the queued job frees its place
		synctest.Wait()
		select {
		case err := <-parked:
			assert.ErrorIs(t, err, ErrStopped, "Do returned before the stop message")
			parked <- err
		default:
		}
		close(hold.release)
		running.open()
		<-stopped
		assert.ErrorIs(t, <-parked, ErrStopped, "the parked Do")
		assert.False(t, ran.Load(), "the parked task ran after Stop was called")
		assert.ErrorIs(t, queued.Wait(), ErrStopped, "the queued job")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(2), s.Submitted, "submitted: the blocker and the job")
		assert.Equal(t, uint64(1), s.Abandoned, "abandoned")
	})
}

// Under DropOldest, while a StopWait waits for scheduled tasks that fill the
// bound, every call is refused as stopped, never as a full queue: Do
// returns ErrStopped, Submit panics with it, the task reaches no dead-letter
// handler, and nothing counts in Rejected or reaches TaskDropped.
func TestDropOldestCallsDuringStopAreRefusedAsStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dropped atomic.Int64
		letters := new(letterBox)
		p := New(1, WithMaxWaiting(1, DropOldest), WithDeadLetter(letters.handle),
			WithHooks(Hooks{TaskDropped: func(error) { dropped.Add(1) }}))
		scheduled := p.Go(t.Context(), noopFn, Delay(time.Second)) // fills the bound
		stopped := make(chan struct{})
		go func() { p.StopWait(); close(stopped) }()
		synctest.Wait()
		require.Equal(t, StateStopping, p.Status().State, "StopWait waits for the scheduled task")

		assert.ErrorIs(t, p.Do(func() {}), ErrStopped, "Do")
		assert.ErrorIs(t, p.DoWait(func() {}), ErrStopped, "DoWait")
		assert.False(t, p.TrySubmit(func() {}), "TrySubmit")
		assert.ErrorIs(t, p.Go(t.Context(), noopFn).Wait(), ErrStopped, "Go")
		err, panicked := recovered(func() { p.Submit(func() {}) })
		assert.True(t, panicked, "Submit panics")
		assert.ErrorIs(t, err, ErrStopped, "Submit's panic")

		time.Sleep(time.Second)
		<-stopped
		assert.NoError(t, scheduled.Wait(), "the scheduled task ran")
		s := requireStoppedClean(t, p)
		assert.Zero(t, s.Rejected, "rejected")
		assert.Empty(t, letters.got(), "dead letters")
		assert.Zero(t, dropped.Load(), "TaskDropped calls")
	})
}

// A task heavier than the pool, given to Go, Call or Group.Go on a stopping
// pool, is refused because the pool stops: it reports ErrStopped, and is
// neither counted in Rejected nor told to TaskDropped.
func TestTooHeavyTaskOnStoppedPoolIsRefusedAsStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dropped atomic.Int64
		p := New(2, WithHooks(Hooks{TaskDropped: func(error) { dropped.Add(1) }}))
		p.Stop()
		assert.ErrorIs(t, p.Go(t.Context(), noopFn, Weight(3)).Wait(), ErrStopped, "Go")
		_, err := Call(t.Context(), p, func(context.Context) (int, error) { return 1, nil }, Weight(3)).Wait()
		assert.ErrorIs(t, err, ErrStopped, "Call")
		g := p.Group(t.Context())
		g.Go(noopFn, Weight(3))
		assert.ErrorIs(t, g.Wait(), ErrStopped, "Group.Go")
		s := p.Status()
		assert.Zero(t, s.Rejected, "rejected")
		assert.Zero(t, s.Submitted, "submitted")
		assert.Zero(t, dropped.Load(), "TaskDropped calls")
	})
}

// From the moment Stop is called no task goes to a worker that comes free
// after it (doc.go, Stopping). canStartAtOnce checks abandonBegun, then
// startAtOnce calls offer, which checks it again and, once it is set,
// refuses; startAtOnce then falls back to a blocking send on workerQueue,
// meant for a worker on its way to its receive. When the worker it counted
// was a new one it may start (fewer workers than the size), no worker is on
// its way: dispatch blocks until a running task ends, and hands that worker
// the task. Here a Go's job is admitted to a free worker from a queue with
// no room while Stop begins (dispatch is held in the job's ctx Err in
// between): the Go, which a stop must release at once, waits for the
// unrelated running task, and so does everything dispatch serves.
func TestStopReleasesASubmitterAdmittedToAFreeWorkerAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithMaxWaiting(0, Block), WithIdleTimeout(-1))
		running := newGate()
		defer running.release()
		p.Submit(running.task())
		synctest.Wait()
		busy := newFrameStallingContext(t.Context(), "(*admission).admitJob(")
		defer busy.resume()
		made := make(chan *Task, 1)
		go func() { made <- p.Go(busy, noopFn) }() // a ticket: admitted to a new worker
		<-busy.stalled
		stopped := make(chan struct{})
		go func() { defer close(stopped); p.Stop() }()
		synctest.Wait()
		busy.resume()
		synctest.Wait()
		select {
		case task := <-made:
			assert.ErrorIs(t, task.Wait(), ErrStopped, "the Go's task")
		default:
			t.Error("Go still blocked after Stop, until an unrelated running task ends")
		}
		running.open()
		<-stopped
		requireStoppedClean(t, p)
	})
}

// The same window with a plain task, under -race: a Submit on a queue with
// no room, admitted to a free worker as Stop sets abandonBegun, is handed
// to the worker of the running task once that task ends, and runs, long
// after Stop was called. The round that hits it shows dispatch blocked in
// startAtOnce's send while the only worker is busy. (About one round in a
// thousand hits it with -race, one in tens of thousands without.)
func TestStopHandsNoTaskToAWorkerThatComesFreeAfterIt(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	for rounds := 1; rounds <= n; rounds++ {
		p := New(2, WithMaxWaiting(0, Block), WithIdleTimeout(-1))
		release, started := make(chan struct{}), make(chan struct{})
		p.Submit(func() { close(started); <-release })
		<-started
		var ran atomic.Bool
		submitted, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(submitted)
			_, _ = recovered(func() { p.Submit(func() { ran.Store(true) }) })
		}()
		for range rounds % 97 {
			runtime.Gosched()
		}
		go func() { defer close(stopped); p.Stop() }()
		stuck := false
		for spins := 1; !isClosed(submitted); spins++ {
			if spins%2000 == 0 && blockedSendingIn("(*dispatcher).startAtOnce(") {
				stuck = true
				break
			}
			runtime.Gosched()
		}
		close(release) // the running task ends: its worker comes free
		<-stopped
		<-submitted
		if stuck {
			t.Errorf("round %d: Stop was called while dispatch admitted a Submit to a free worker; "+
				"dispatch then waited for the busy worker and handed it the task (it ran: %v)", rounds, ran.Load())
			return
		}
	}
	t.Logf("%d rounds, none hit the window", n)
}
