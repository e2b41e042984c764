package workerpool

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --- helpers ---

// gate is a task body that blocks until the test opens it.
type gate chan struct{}

func newGate() gate         { return make(gate) }
func (g gate) wait()        { <-g }
func (g gate) open()        { close(g) }
func (g gate) task() func() { return g.wait }

// readyWorkers counts the workers parked on workerQueue: each non-blocking
// send of a probe succeeds only if a worker is ready to receive. The probes
// then finish and the workers are ready again. Probes bypass dispatch, so a
// test that uses this must not look at Completed or Pause afterwards.
func readyWorkers(p *WorkerPool) int {
	release := newGate()
	n := 0
	for {
		select {
		case p.workerQueue <- work{fn: release.wait}:
			n++
			continue
		default:
		}
		break
	}
	release.open()
	synctest.Wait()
	return n
}

// recorder records the order in which tasks start.
type recorder struct {
	mu      sync.Mutex
	started []int
}

func (r *recorder) task(i int, body func()) func() {
	return func() {
		r.mu.Lock()
		r.started = append(r.started, i)
		r.mu.Unlock()
		if body != nil {
			body()
		}
	}
}

func (r *recorder) order() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.started...)
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// concurrencyMeter tracks how many tasks run at once.
type concurrencyMeter struct {
	running, peak atomic.Int64
}

func (m *concurrencyMeter) wrap(body func()) func() {
	return m.wrapWeighted(1, body)
}

// wrapWeighted meters body as weight running tasks: the peak is then in
// worker slots.
func (m *concurrencyMeter) wrapWeighted(weight int64, body func()) func() {
	return func() {
		n := m.running.Add(weight)
		for {
			old := m.peak.Load()
			if n <= old || m.peak.CompareAndSwap(old, n) {
				break
			}
		}
		defer m.running.Add(-weight) // also when body panics or exits
		body()
	}
}

// requireStoppedClean checks the accounting and emptiness guarantees that
// hold once Stop or StopWait has returned.
func requireStoppedClean(t *testing.T, p *WorkerPool) Status {
	t.Helper()
	s := p.Status()
	assert.Equal(t, StateStopped, s.State, "state")
	assert.Equal(t, 0, s.Workers, "workers")
	assert.Equal(t, 0, s.Busy, "busy")
	assert.Equal(t, 0, s.Waiting, "waiting")
	assert.Equal(t, 0, s.Scheduled, "scheduled")
	assert.Equal(t, 0, p.WaitingQueueSize(), "WaitingQueueSize")
	assert.Equal(t, s.Submitted, s.Completed+s.Abandoned+s.Canceled+s.Dropped+s.Expired, "submitted == completed + abandoned + canceled + dropped + expired")
	assert.True(t, p.Stopped(), "Stopped")
	return s
}

// --- 1. submit, order, concurrency ---

func TestSubmitNeverBlocksOnBusyPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		g := newGate()
		for range 1000 {
			p.Submit(g.task()) // would deadlock the bubble if it blocked
		}
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 2, s.Busy, "busy")
		assert.Equal(t, 998, s.Waiting, "waiting")
		assert.Equal(t, 998, p.WaitingQueueSize(), "WaitingQueueSize")
		assert.Equal(t, uint64(1000), s.Submitted, "submitted")
		g.open()
	})
}

func TestTasksStartInSubmissionOrderOneWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		var r recorder
		for i := range 100 {
			p.Submit(r.task(i, nil))
		}
		p.StopWait()
		assert.Equal(t, seq(100), r.order(), "start order")
	})
}

func TestTasksStartInSubmissionOrderManyWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers, tasks = 3, 12
		p := New(workers)
		defer p.Stop()
		var r recorder
		gates := make([]gate, tasks)
		for i := range gates {
			gates[i] = newGate()
			p.Submit(r.task(i, gates[i].wait))
		}
		// Each time the oldest running task ends, exactly the next task in
		// submission order starts: the started set is always a prefix.
		for done := range tasks {
			synctest.Wait()
			started := min(done+workers, tasks)
			assert.ElementsMatch(t, seq(started), r.order(), "started after %d finished", done)
			gates[done].open()
		}
	})
}

func TestConcurrencyReachesButNeverExceedsSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size = 4
		p := New(size)
		defer p.Stop()
		var m concurrencyMeter
		g := newGate()
		for range 20 {
			p.Submit(m.wrap(g.wait))
		}
		synctest.Wait()
		assert.Equal(t, int64(size), m.running.Load(), "running while blocked")
		assert.Equal(t, size, p.Status().Workers, "workers")
		g.open()
		p.StopWait()
		assert.Equal(t, int64(size), m.peak.Load(), "peak concurrency")
	})
}

func TestConcurrencyUnderRealScheduling(t *testing.T) {
	const size = 8
	p := New(size)
	var m concurrencyMeter
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 2000 {
				p.Submit(m.wrap(runtime.Gosched))
			}
		})
	}
	wg.Wait()
	p.StopWait()
	assert.LessOrEqual(t, m.peak.Load(), int64(size), "peak concurrency")
	s := requireStoppedClean(t, p)
	assert.Equal(t, uint64(8000), s.Completed, "completed")
}

func TestSubmitDoesNotAllocate(t *testing.T) {
	p := New(4)
	defer p.Stop()
	task := func() {}
	allocs := testing.AllocsPerRun(1000, func() { p.Submit(task) })
	assert.Zero(t, allocs, "allocations per Submit")
}

func TestSubmitWaitDoesNotAllocate(t *testing.T) {
	p := New(4)
	defer p.Stop()
	task := func() {}
	allocs := testing.AllocsPerRun(1000, func() { p.SubmitWait(task) })
	assert.Zero(t, allocs, "allocations per SubmitWait")
}

// --- 2. admission racing stop ---

func TestAdmissionRacingStopIsLinearizable(t *testing.T) {
	for round := range 20 {
		stopWait := round%2 == 0
		p := New(1 + round%4)
		var accepted, rejected, ran atomic.Int64
		var start sync.WaitGroup
		start.Add(1)
		var submitters sync.WaitGroup
		for s := range 8 {
			submitters.Go(func() {
				start.Wait()
				for range 200 {
					if s%2 == 0 {
						err := p.Do(func() { ran.Add(1) })
						if err == nil {
							accepted.Add(1)
						} else {
							assert.ErrorIs(t, err, ErrStopped)
							rejected.Add(1)
						}
						continue
					}
					if submitOrRecover(t, p, func() { ran.Add(1) }) {
						accepted.Add(1)
					} else {
						rejected.Add(1)
					}
				}
			})
		}
		start.Done()
		runtime.Gosched()
		if stopWait {
			p.StopWait()
		} else {
			p.Stop()
		}
		submitters.Wait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, int64(8*200), accepted.Load()+rejected.Load(), "round %d: every submit answered", round)
		assert.Equal(t, uint64(accepted.Load()), s.Submitted, "round %d: submitted", round)
		assert.Equal(t, uint64(ran.Load()), s.Completed, "round %d: completed", round)
		if stopWait {
			assert.Equal(t, accepted.Load(), ran.Load(), "round %d: StopWait runs every accepted task", round)
		}
	}
}

// A call that has begun its send when Stop begins is neither stranded nor
// lost: dispatch admits it before stopping. Inside a bubble, a caller left
// blocked on taskQueue fails the test at once as a deadlock.
func TestCallsInFlightAtStopAllReturn(t *testing.T) {
	for round := range 40 {
		synctest.Test(t, func(t *testing.T) {
			p := New(1 + round%3)
			ctx, cancel := context.WithCancel(t.Context())
			cancel() // each Pause ends as soon as its barrier is reached
			var ran, doneOK, waitedOK atomic.Int64
			var callers sync.WaitGroup
			for c := range 6 {
				callers.Go(func() {
					for !p.Stopped() {
						switch c % 3 {
						case 0:
							if p.Do(func() { ran.Add(1) }) == nil {
								doneOK.Add(1)
							}
						case 1:
							if p.DoWait(func() { ran.Add(1) }) == nil {
								waitedOK.Add(1)
							}
						case 2:
							p.Pause(ctx)
						}
					}
				})
			}
			runtime.Gosched()
			if round%2 == 0 {
				p.StopWait()
			} else {
				p.Stop()
			}
			callers.Wait()
			s := requireStoppedClean(t, p)
			assert.Equal(t, uint64(ran.Load()), s.Completed, "round %d: completed", round)
			assert.GreaterOrEqual(t, s.Submitted, uint64(doneOK.Load()+waitedOK.Load()), "round %d: every accepted call counted", round)
			if round%2 == 0 {
				assert.Equal(t, s.Submitted, s.Completed, "round %d: StopWait runs every accepted task", round)
			}
		})
	}
}

// A send that passed its stopping check before Stop began, but reaches
// taskQueue only after dispatch took Stop's message, is still admitted and
// run: dispatch waits for it instead of stranding it.
func TestSendInFlightAtStopIsAdmitted(t *testing.T) {
	for _, stop := range []string{"Stop", "StopWait"} {
		t.Run(stop, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1)
				p.taskSends.Add(1) // the straggler counts itself and passes its check
				stopped := make(chan struct{})
				go func() {
					defer close(stopped)
					if stop == "Stop" {
						p.Stop()
					} else {
						p.StopWait()
					}
				}()
				synctest.Wait()
				assert.Equal(t, StateStopping, p.Status().State, "dispatch waits for the straggler")
				ran := false
				p.taskQueue <- message{task: func() { ran = true }}
				<-stopped
				s := requireStoppedClean(t, p)
				assert.Equal(t, uint64(1), s.Submitted, "the straggler's task is accepted")
				assert.Equal(t, stop == "StopWait", ran, "run by StopWait, abandoned by Stop")
			})
		})
	}
}

// A send that counted itself before Stop began but checks stopping only
// after it is refused, and wakes dispatch, which then finishes stopping
// without it.
func TestSendRefusedAtStopWakesDispatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		p.taskSends.Add(1) // the straggler counts itself, then is preempted
		stopped := make(chan struct{})
		go func() { p.Stop(); close(stopped) }()
		synctest.Wait()
		assert.Equal(t, StateStopping, p.Status().State, "dispatch waits for the straggler")
		p.sendRefused(&p.taskSends) // its check sees stopping closed
		<-stopped
		s := requireStoppedClean(t, p)
		assert.Zero(t, s.Submitted, "the refused send is not counted")
	})
}

// submitOrRecover calls Submit and reports whether it was accepted; a
// rejection must be a panic with an error wrapping ErrStopped.
func submitOrRecover(t *testing.T, p *WorkerPool, task func()) (accepted bool) {
	defer func() {
		if r := recover(); r != nil {
			err, ok := r.(error)
			if assert.True(t, ok, "Submit panicked with a non-error %v", r) {
				assert.ErrorIs(t, err, ErrStopped)
			}
		}
	}()
	p.Submit(task)
	return true
}

func TestSubmitAfterStopPanicsWithErrStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		p.Stop()
		assert.ErrorIs(t, p.Do(func() {}), ErrStopped, "Do")
		assert.ErrorIs(t, p.DoWait(func() {}), ErrStopped, "DoWait")
		assertPanicsWithErrStopped(t, func() { p.Submit(func() {}) }, "Submit")
		assertPanicsWithErrStopped(t, func() { p.SubmitWait(func() {}) }, "SubmitWait")
		assert.Equal(t, uint64(0), p.Status().Submitted, "rejected tasks are not counted")
	})
}

func assertPanicsWithErrStopped(t *testing.T, f func(), what string) {
	t.Helper()
	defer func() {
		r := recover()
		err, ok := r.(error)
		if assert.True(t, ok, "%s: want a panic with an error, got %v", what, r) {
			assert.ErrorIs(t, err, ErrStopped, what)
		}
	}()
	f()
}

func TestDoFromTaskDuringStopWaitIsRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		g := newGate()
		var innerErr error
		p.Submit(func() {
			g.wait()
			innerErr = p.Do(func() {})
		})
		synctest.Wait()
		go p.StopWait()
		synctest.Wait()
		g.open()
		p.StopWait()
		assert.ErrorIs(t, innerErr, ErrStopped, "Do from a task once stopping began")
		requireStoppedClean(t, p)
	})
}

// --- 3. after stop ---

func TestStopAbandonsQueuedTasksAndAccountsForThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		g := newGate()
		var ran atomic.Int64
		for range 10 {
			p.Submit(func() { g.wait(); ran.Add(1) })
		}
		synctest.Wait()
		go func() { synctest.Wait(); g.open() }()
		p.Stop()
		s := requireStoppedClean(t, p)
		assert.Equal(t, int64(2), ran.Load(), "running tasks finish")
		assert.Equal(t, uint64(10), s.Submitted, "submitted")
		assert.Equal(t, uint64(2), s.Completed, "completed")
		assert.Equal(t, uint64(8), s.Abandoned, "abandoned")
	})
}

func TestStopWaitRunsEveryQueuedTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3)
		var ran atomic.Int64
		g := newGate()
		for range 50 {
			p.Submit(func() { g.wait(); ran.Add(1) })
		}
		go func() { synctest.Wait(); g.open() }()
		p.StopWait()
		assert.Equal(t, int64(50), ran.Load(), "tasks run")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(50), s.Completed, "completed")
		assert.Zero(t, s.Abandoned, "abandoned")
	})
}

func TestStopReleasesAbandonedClosuresAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		running := newGate()
		p.Submit(running.task())
		ref := submitCapturing(p)
		synctest.Wait()
		go p.Stop()
		synctest.Wait() // Stop is now waiting for the running task
		require.Equal(t, uint64(1), p.Status().Abandoned, "abandoned while stopping")
		runtime.GC()
		assert.Nil(t, ref.Value(), "abandoned closure still reachable while Stop waits")
		running.open()
		p.Stop()
	})
}

// submitCapturing submits a task that captures a fresh object and returns a
// weak pointer to that object.
func submitCapturing(p *WorkerPool) weak.Pointer[[64]int] {
	obj := new([64]int)
	p.Submit(func() { obj[0]++ })
	return weak.Make(obj)
}

func TestNoTaskStartsAfterStopReturns(t *testing.T) {
	for round := range 50 {
		p := New(4)
		var stopped atomic.Bool
		var late atomic.Int64
		var submitters sync.WaitGroup
		for range 4 {
			submitters.Go(func() {
				for p.Do(func() {
					if stopped.Load() {
						late.Add(1)
					}
				}) == nil {
				}
			})
		}
		runtime.Gosched()
		if round%2 == 0 {
			p.Stop()
		} else {
			p.StopWait()
		}
		stopped.Store(true)
		submitters.Wait()
		assert.Zero(t, late.Load(), "round %d: tasks started after Stop returned", round)
		requireStoppedClean(t, p)
	}
}

// --- 4. DoWait and SubmitWait ---

func TestDoWaitReturnsAfterTaskFinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		done := false
		require.NoError(t, p.DoWait(func() { time.Sleep(time.Second); done = true }))
		assert.True(t, done, "task effects visible after DoWait")
		p.SubmitWait(func() { done = false })
		assert.False(t, done, "task effects visible after SubmitWait")
	})
}

func TestDoWaitReturnsErrStoppedWhenStopAbandonsTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		running := newGate()
		p.Submit(running.task())
		var ran atomic.Bool
		result := make(chan error, 1)
		go func() { result <- p.DoWait(func() { ran.Store(true) }) }()
		synctest.Wait()
		stopReturned := make(chan struct{})
		go func() { p.Stop(); close(stopReturned) }()
		synctest.Wait()
		// DoWait returns as soon as its task is dropped, while Stop still
		// waits for the running task.
		select {
		case err := <-result:
			assert.ErrorIs(t, err, ErrStopped, "DoWait")
		default:
			t.Fatal("DoWait still waiting after Stop abandoned its task")
		}
		assert.False(t, isClosed(stopReturned), "Stop returned before the running task finished")
		running.open()
		<-stopReturned
		assert.False(t, ran.Load(), "abandoned task ran")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Abandoned, "abandoned")
	})
}

func TestSubmitWaitPanicsWhenStopAbandonsTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		running := newGate()
		p.Submit(running.task())
		panicked := make(chan any, 1)
		go func() {
			defer func() { panicked <- recover() }()
			p.SubmitWait(func() {})
		}()
		synctest.Wait()
		go func() { synctest.Wait(); running.open() }()
		p.Stop()
		r := <-panicked
		err, ok := r.(error)
		require.True(t, ok, "SubmitWait panic value %v", r)
		assert.ErrorIs(t, err, ErrStopped)
	})
}

func TestDoWaitWithStopWaitRunsTaskFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		running := newGate()
		p.Submit(running.task())
		var ran atomic.Bool
		result := make(chan error, 1)
		go func() { result <- p.DoWait(func() { ran.Store(true) }) }()
		synctest.Wait()
		go func() { synctest.Wait(); running.open() }()
		p.StopWait()
		assert.NoError(t, <-result, "DoWait")
		assert.True(t, ran.Load(), "task ran")
	})
}

func TestSubmitWaitInsideTaskIsEndedByExternalStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		innerErr := make(chan error, 1)
		p.Submit(func() { innerErr <- p.DoWait(func() {}) })
		synctest.Wait() // the documented deadlock: the only worker waits for itself
		require.Empty(t, innerErr, "DoWait inside a task returned early")
		p.Stop()
		assert.ErrorIs(t, <-innerErr, ErrStopped, "nested DoWait after Stop")
		requireStoppedClean(t, p)
	})
}

func TestDoWaitReturnsAfterHandledPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var handled atomic.Bool
		p := New(1, WithPanicHandler(func(any) {
			time.Sleep(time.Second) // DoWait must wait for the handler
			handled.Store(true)
		}))
		defer p.Stop()
		require.NoError(t, p.DoWait(func() { panic("boom") }))
		assert.True(t, handled.Load(), "handler finished before DoWait returned")
		assert.NotPanics(t, func() { p.SubmitWait(func() { panic("again") }) }, "SubmitWait")
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(2), s.Panicked, "panicked")
	})
}

func TestDoWaitReturnsAfterGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		require.NoError(t, p.DoWait(runtime.Goexit))
		require.NoError(t, p.DoWait(func() {}), "pool still works")
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(2), s.Completed, "completed")
	})
}

func TestDoWaitRacingStopIsAnsweredTruthfully(t *testing.T) {
	// Stop races DoWait calls whose tasks are queued, on their way to a
	// worker, or running. Each call must say truthfully whether its task
	// ran, reused waiters must never mix tasks up, and a dropped task must
	// be counted as abandoned, not completed.
	for round := range 50 {
		p := New(2)
		var ran, wrong, okCalls atomic.Int64
		var callers sync.WaitGroup
		for c := range 4 {
			callers.Go(func() {
				for i := 0; ; i++ {
					var didRun bool
					err := p.DoWait(func() {
						didRun = true
						ran.Add(1)
						_ = [2]int{c, i}
					})
					if err != nil {
						assert.ErrorIs(t, err, ErrStopped)
						assert.False(t, didRun, "round %d: DoWait said ErrStopped but its task ran", round)
						return
					}
					if !didRun {
						wrong.Add(1)
					}
					okCalls.Add(1)
				}
			})
		}
		runtime.Gosched()
		p.Stop()
		callers.Wait()
		assert.Zero(t, wrong.Load(), "round %d: DoWait returned nil but its task did not run", round)
		assert.Equal(t, okCalls.Load(), ran.Load(), "round %d: tasks run", round)
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(ran.Load()), s.Completed, "round %d: completed", round)
	}
}

func TestDoWaitWorksInSuccessiveBubbles(t *testing.T) {
	// A waiter's channel belongs to the bubble that made it; waiters must
	// never travel from one bubble's pool to another's.
	for range 3 {
		synctest.Test(t, func(t *testing.T) {
			p := New(2)
			defer p.Stop()
			for range 10 {
				require.NoError(t, p.DoWait(func() {}))
			}
		})
	}
}

// --- 5. panics and Goexit ---

func TestPanicHandlerRecoversAndWorkerGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu        sync.Mutex
			recovered []any
			stacks    []string
		)
		p := New(1, WithPanicHandler(func(r any) {
			mu.Lock()
			defer mu.Unlock()
			recovered = append(recovered, r)
			stacks = append(stacks, string(debug.Stack()))
		}))
		p.Submit(panickingTask)
		var after atomic.Bool
		p.Submit(func() { after.Store(true) })
		p.StopWait()
		assert.True(t, after.Load(), "task after the panic ran")
		assert.Equal(t, []any{"boom"}, recovered, "recovered values")
		require.Len(t, stacks, 1)
		assert.Contains(t, stacks[0], "panickingTask", "handler sees the task's frames")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Panicked, "panicked")
		assert.Equal(t, uint64(2), s.Completed, "completed")
	})
}

func panickingTask() { panic("boom") }

// A plain task and a DoWait task whose panic the handler took count once
// each in Panicked, as they complete: while the handler runs, neither is
// in Completed, so neither is in Panicked (Panicked is part of Completed
// in every snapshot).
func TestPanickedCountsPlainTasksAsTheyComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := newGate()
		p := New(2, WithPanicHandler(func(any) { release.wait() }))
		p.Submit(panickingTask)
		doWait := make(chan error, 1)
		go func() { doWait <- p.DoWait(panickingTask) }()
		synctest.Wait()
		s := p.Status()
		require.Equal(t, 2, s.Busy, "both in the handler")
		assert.Equal(t, uint64(0), s.Completed, "completed while the handler runs")
		assert.Equal(t, uint64(0), s.Panicked, "panicked while the handler runs")
		release.open()
		require.NoError(t, <-doWait, "DoWait")
		p.StopWait()
		s = requireStoppedClean(t, p)
		assert.Equal(t, uint64(2), s.Completed, "completed")
		assert.Equal(t, uint64(2), s.Panicked, "panicked")
	})
}

// TestPanicWithoutHandlerCrashes runs itself in a child process: without a
// handler, a task's panic must crash the program like a plain goroutine's.
func TestPanicWithoutHandlerCrashes(t *testing.T) {
	if os.Getenv("WORKERPOOL_CRASH_CHILD") == "1" {
		p := New(1)
		p.Submit(panickingTask)
		p.StopWait()
		os.Exit(0) // reached only if the pool swallowed the panic
	}
	out := requireChildPanics(t, "TestPanicWithoutHandlerCrashes", "WORKERPOOL_CRASH_CHILD")
	assert.Contains(t, out, "panic: boom", "panic message")
	assert.Contains(t, out, "panickingTask", "stack shows the task")
}

// requireChildPanics runs the test named test again in a child process,
// with the environment variable env set to 1 so that it knows it is the
// child, requires the child to exit as an unrecovered panic makes a
// program exit, and returns what it printed.
func requireChildPanics(t *testing.T, test, env string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "child exited cleanly:\n%s", out)
	assert.Equal(t, 2, exit.ExitCode(), "exit code of an unrecovered panic")
	return string(out)
}

func TestGoexitInTaskKeepsWorkerSlotAndStopWaitReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		for range 10 {
			p.Submit(runtime.Goexit)
		}
		var ran atomic.Int64
		for range 10 {
			p.Submit(func() { ran.Add(1) })
		}
		synctest.Wait()
		assert.Equal(t, 2, p.Status().Workers, "workers")
		assert.Equal(t, 2, readyWorkers(p), "ready worker goroutines")
		p.StopWait() // hung in gammazero/workerpool
		assert.Equal(t, int64(10), ran.Load(), "tasks after Goexit ran")
	})
}

func TestGoexitAccounting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3)
		for i := range 30 {
			if i%3 == 0 {
				p.Submit(runtime.Goexit)
			} else {
				p.Submit(func() {})
			}
		}
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(30), s.Completed, "completed")
	})
}

func TestGoexitWhilePanicHandlerInstalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var handled atomic.Int64
		p := New(1, WithPanicHandler(func(any) { handled.Add(1) }))
		p.Submit(runtime.Goexit)
		p.Submit(panickingTask)
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, int64(1), handled.Load(), "handler calls")
		assert.Equal(t, uint64(2), s.Completed, "completed")
		assert.Equal(t, uint64(1), s.Panicked, "panicked")
	})
}

// --- 6. Pause ---

func TestPauseIsABarrierThenHoldsLaterTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		var earlier atomic.Int64
		for range 6 {
			p.Submit(func() { time.Sleep(time.Second); earlier.Add(1) })
		}
		ctx, cancel := context.WithCancel(t.Context())
		p.Pause(ctx)
		assert.Equal(t, int64(6), earlier.Load(), "earlier tasks finished when Pause returned")
		assert.Equal(t, StatePaused, p.Status().State, "state")

		var later atomic.Int64
		for range 5 {
			p.Submit(func() { later.Add(1) })
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Zero(t, later.Load(), "later tasks ran during the pause")
		assert.Equal(t, 5, p.WaitingQueueSize(), "held tasks are waiting")

		cancel()
		synctest.Wait()
		assert.Equal(t, int64(5), later.Load(), "later tasks ran after the pause")
		assert.Equal(t, StateRunning, p.Status().State, "state")
	})
}

func TestPauseWaitsForRunningTasksNotJustQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4)
		defer p.Stop()
		g := newGate()
		p.Submit(g.task())
		returned := make(chan struct{})
		go func() { p.Pause(t.Context()); close(returned) }()
		synctest.Wait()
		assert.False(t, isClosed(returned), "Pause returned while an earlier task runs")
		g.open()
		synctest.Wait()
		assert.True(t, isClosed(returned), "Pause returned after the task finished")
	})
}

// A Pause whose barrier is reached only as dispatch drops a canceled task
// from the front of the queue still returns when the running task ends: the
// drop happens just before dispatch waits, and it must then watch for the
// running task to come back (found by FuzzPool).
func TestPauseReturnsWhenADroppedCanceledTaskWasTheLastBeforeItsBarrier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		g := newGate()
		defer g.release()
		p.Submit(g.task())
		tk := p.Go(context.Background(), func(context.Context) error { return nil })
		synctest.Wait()
		returned := make(chan struct{})
		go func() { p.Pause(context.Background()); close(returned) }()
		synctest.Wait()
		tk.Cancel()
		synctest.Wait()
		assert.False(t, isClosed(returned), "the running task has not ended")
		g.open()
		synctest.Wait()
		assert.True(t, isClosed(returned), "Pause returns once every earlier task is done")
		assert.ErrorIs(t, tk.Wait(), context.Canceled)
	})
}

func TestPauseWithDoneContextIsOnlyABarrier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		var ran atomic.Int64
		p.Submit(func() { time.Sleep(time.Second); ran.Add(1) })
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		p.Pause(ctx)
		assert.Equal(t, int64(1), ran.Load(), "earlier task finished")
		p.SubmitWait(func() { ran.Add(1) }) // would hang if the pool stayed paused
		assert.Equal(t, int64(2), ran.Load(), "later task ran")
	})
}

func TestSecondPauseWaitsForFirstToEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		ctx1, cancel1 := context.WithCancel(t.Context())
		p.Pause(ctx1)
		var between atomic.Int64
		p.Submit(func() { between.Add(1) })

		returned := make(chan struct{})
		ctx2, cancel2 := context.WithCancel(t.Context())
		go func() { p.Pause(ctx2); close(returned) }()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.False(t, isClosed(returned), "second Pause returned during the first")
		assert.Zero(t, between.Load(), "held task ran")

		cancel1()
		synctest.Wait()
		assert.True(t, isClosed(returned), "second Pause returned after the first ended")
		assert.Equal(t, int64(1), between.Load(), "task submitted before the second Pause ran before it returned")
		assert.Equal(t, StatePaused, p.Status().State, "second pause in effect")

		var after atomic.Int64
		p.Submit(func() { after.Add(1) })
		synctest.Wait()
		assert.Zero(t, after.Load(), "task held by the second pause ran")
		cancel2()
		synctest.Wait()
		assert.Equal(t, int64(1), after.Load(), "task ran after the second pause")
	})
}

func TestStopEndsPausesAndAbandonsHeldTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		p.Pause(t.Context()) // never cancelled
		var ran atomic.Int64
		for range 3 {
			p.Submit(func() { ran.Add(1) })
		}
		waiting := make(chan struct{})
		go func() { p.Pause(t.Context()); close(waiting) }()
		synctest.Wait()
		p.Stop()
		synctest.Wait()
		assert.True(t, isClosed(waiting), "queued Pause returned on Stop")
		assert.Zero(t, ran.Load(), "held tasks ran on Stop")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(3), s.Abandoned, "abandoned")
	})
}

func TestStopWaitEndsPausesAndRunsHeldTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		p.Pause(t.Context())
		var ran atomic.Int64
		for range 3 {
			p.Submit(func() { ran.Add(1) })
		}
		p.StopWait()
		assert.Equal(t, int64(3), ran.Load(), "held tasks ran on StopWait")
		requireStoppedClean(t, p)
	})
}

func TestPauseAfterStopReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		p.Stop()
		p.Pause(t.Context()) // would deadlock the bubble if it blocked
		assert.Equal(t, StateStopped, p.Status().State)
	})
}

func TestPauseInsideTaskDoesNotWedgeExternalStop(t *testing.T) {
	for _, stopWait := range []bool{false, true} {
		t.Run(fmt.Sprintf("stopWait=%v", stopWait), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1)
				returned := make(chan struct{})
				p.Submit(func() { p.Pause(t.Context()); close(returned) })
				synctest.Wait() // the documented deadlock
				require.False(t, isClosed(returned), "Pause inside the only worker returned")
				if stopWait {
					p.StopWait()
				} else {
					p.Stop()
				}
				assert.True(t, isClosed(returned), "Pause returned when stopping began")
				requireStoppedClean(t, p)
			})
		})
	}
}

func TestPauseInternalsAreInvisible(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4)
		defer p.Stop()
		ctx, cancel := context.WithCancel(t.Context())
		p.Pause(ctx)
		go p.Pause(t.Context()) // a second Pause waiting behind the first
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 0, p.WaitingQueueSize(), "WaitingQueueSize while paused")
		assert.Equal(t, 0, s.Waiting, "waiting")
		assert.Equal(t, 0, s.Busy, "busy")
		assert.Equal(t, 0, s.Workers, "a pause starts no workers")
		assert.Equal(t, uint64(0), s.Submitted, "submitted")
		p.Submit(func() {})
		synctest.Wait()
		assert.Equal(t, 1, p.WaitingQueueSize(), "one held user task")
		cancel()
	})
}

func TestPauseWithNilContextPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		var nilCtx context.Context
		assert.PanicsWithValue(t, "workerpool: Pause called with a nil context", func() { p.Pause(nilCtx) })
	})
}

// --- 7. observers never block ---

func TestObserversNeverBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		g := newGate()
		p.Submit(g.task())
		p.Submit(func() {})
		go p.Pause(t.Context()) // blocked on its barrier
		synctest.Wait()
		observe := func(want State) {
			t.Helper()
			// A blocking observer would deadlock the bubble here.
			assert.Equal(t, want, p.Status().State, "state")
			assert.Equal(t, 1, p.WaitingQueueSize(), "WaitingQueueSize")
			assert.Equal(t, want != StateRunning && want != StatePaused, p.Stopped(), "Stopped")
			assert.Equal(t, 1, p.Size(), "Size")
		}
		observe(StatePaused)
		go p.StopWait() // blocked on the running task
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, StateStopping, s.State, "state during StopWait")
		assert.True(t, p.Stopped(), "Stopped during StopWait")
		assert.Equal(t, 1, s.Busy, "busy during StopWait")
		g.open()
		p.StopWait()
		requireStoppedClean(t, p)
	})
}

// --- 8. idle workers ---

func TestIdleTimeoutRetiresOneWorkerPerPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4, WithIdleTimeout(time.Second))
		defer p.Stop()
		g := newGate()
		for range 4 {
			p.Submit(g.task())
		}
		synctest.Wait()
		g.open()
		synctest.Wait()
		require.Equal(t, 4, readyWorkers(p), "ready workers after the tasks")
		// The ticker started with the first worker; the first tick follows
		// the tasks, so nothing retires before a whole idle period passed.
		time.Sleep(3 * time.Second / 2)
		synctest.Wait()
		assert.Equal(t, 4, readyWorkers(p), "ready workers after 1.5 idle periods")
		for want := 3; want >= 0; want-- {
			time.Sleep(time.Second)
			synctest.Wait()
			assert.Equal(t, want, readyWorkers(p), "ready workers one period later")
			assert.Equal(t, want, p.Status().Workers, "Status.Workers")
		}
		var ran atomic.Bool
		p.SubmitWait(func() { ran.Store(true) })
		assert.True(t, ran.Load(), "task after retiring to zero ran")
		assert.Equal(t, 1, p.Status().Workers, "workers after a new task")
	})
}

func TestIdleTimeoutIsResetByIncomingTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithIdleTimeout(time.Second))
		defer p.Stop()
		p.SubmitWait(func() {})
		for range 10 {
			time.Sleep(time.Second / 2)
			p.SubmitWait(func() {})
			assert.Equal(t, 1, p.Status().Workers, "a worker retired while tasks kept coming")
		}
	})
}

func TestIdleTimeoutNeverRetiresBusyWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithIdleTimeout(time.Second))
		defer p.Stop()
		g := newGate()
		p.Submit(g.task())
		p.Submit(func() {})
		time.Sleep(time.Hour)
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 1, s.Workers, "the idle worker retired, the busy one stayed")
		assert.Equal(t, 1, s.Busy, "busy")
		g.open()
	})
}

func TestNegativeIdleTimeoutDisablesRetirement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3, WithIdleTimeout(-1))
		defer p.Stop()
		g := newGate()
		for range 3 {
			p.Submit(g.task())
		}
		synctest.Wait()
		g.open()
		time.Sleep(24 * time.Hour)
		synctest.Wait()
		assert.Equal(t, 3, readyWorkers(p), "ready workers after a day")
	})
}

func TestZeroIdleTimeoutMeansDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithIdleTimeout(time.Hour), WithIdleTimeout(0))
		defer p.Stop()
		p.SubmitWait(func() {})
		time.Sleep(2*DefaultIdleTimeout - time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 1, p.Status().Workers, "before two default periods")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 0, p.Status().Workers, "after two default periods")
	})
}

// --- 9. stop is idempotent and concurrent ---

func TestStopAndStopWaitAreIdempotentAndConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3)
		g := newGate()
		for range 20 {
			p.Submit(g.task())
		}
		synctest.Wait()
		var callers sync.WaitGroup
		for i := range 16 {
			callers.Go(func() {
				if i%2 == 0 {
					p.Stop()
				} else {
					p.StopWait()
				}
				// Every caller returns only once the pool fully stopped.
				assert.Equal(t, StateStopped, p.Status().State, "state when caller %d returned", i)
				assert.Equal(t, 0, p.Status().Workers, "workers when caller %d returned", i)
			})
		}
		synctest.Wait()
		assert.Equal(t, StateStopping, p.Status().State, "stopping while tasks run")
		g.open()
		callers.Wait()
		p.Stop()
		p.StopWait()
		requireStoppedClean(t, p)
	})
}

func TestStopDuringStopWaitAbandonsTheRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		var ran atomic.Int64
		g := newGate()
		p.Submit(g.task())
		for range 5 {
			p.Submit(func() { ran.Add(1) })
		}
		synctest.Wait()
		stopWaitReturned := make(chan struct{})
		go func() { p.StopWait(); close(stopWaitReturned) }()
		synctest.Wait()
		go func() { synctest.Wait(); g.open() }()
		p.Stop()
		<-stopWaitReturned
		assert.Zero(t, ran.Load(), "queued tasks ran after Stop cut StopWait short")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(5), s.Abandoned, "abandoned")
	})
}

func TestUnusedPoolStopsClean(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(8)
		assert.Equal(t, StateRunning, p.Status().State)
		p.Stop()
		requireStoppedClean(t, p)
	})
}

// --- 10. bad input ---

func TestMaxWorkersBelowOneMeansOne(t *testing.T) {
	for _, n := range []int{0, -1, -100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(n)
				defer p.Stop()
				assert.Equal(t, 1, p.Size(), "Size")
				assert.Equal(t, 1, p.Status().MaxWorkers, "MaxWorkers")
				var m concurrencyMeter
				for range 5 {
					p.Submit(m.wrap(func() { time.Sleep(time.Second) }))
				}
				p.StopWait()
				assert.Equal(t, int64(1), m.peak.Load(), "peak concurrency")
			})
		})
	}
}

func TestNilTasksAreIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		p.Submit(nil)
		assert.NoError(t, p.Do(nil), "Do")
		assert.NoError(t, p.DoWait(nil), "DoWait")
		p.SubmitWait(nil)
		p.StopWait()
		assert.Equal(t, uint64(0), p.Status().Submitted, "nil tasks counted")
		// Ignored even once stopped, as in gammazero/workerpool.
		assert.NotPanics(t, func() { p.Submit(nil) }, "Submit(nil) after stop")
		assert.NoError(t, p.Do(nil), "Do(nil) after stop")
	})
}

func TestNilOptionIsIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, nil, WithIdleTimeout(time.Second), nil)
		defer p.Stop()
		p.SubmitWait(func() {})
		time.Sleep(2 * time.Second) // two idle periods: the option after the nil one applied
		synctest.Wait()
		assert.Zero(t, p.Status().Workers, "workers after two idle periods")
	})
}

func TestNilPanicHandlerMeansNone(t *testing.T) {
	cfg := newConfig([]Option{WithPanicHandler(func(any) {}), WithPanicHandler(nil)})
	assert.Nil(t, cfg.panicHandler, "last option wins")
}

func TestStateString(t *testing.T) {
	for state, want := range map[State]string{
		StateRunning:  "running",
		StatePaused:   "paused",
		StateStopping: "stopping",
		StateStopped:  "stopped",
		State(9):      "State(9)",
	} {
		assert.Equal(t, want, state.String())
	}
}

// Status.Completed never goes back, however the runs end: plain tasks,
// handles, and runs posted for a retry, while a reader polls it.
func TestStatusCompletedNeverGoesBack(t *testing.T) {
	p := New(4)
	var back atomic.Int64
	done := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		last := uint64(0)
		for {
			select {
			case <-done:
				return
			default:
			}
			c := p.Status().Completed
			if c < last {
				back.Add(1)
			}
			last = max(last, c)
		}
	}()
	again := Retry(func(attempt int, _ error) (time.Duration, bool) { return 0, attempt < 2 })
	ctx := context.Background()
	for range 20000 {
		p.Submit(func() {})
		p.Go(ctx, func(context.Context) error { return errFlaky }, again)
	}
	p.StopWait()
	close(done)
	<-polled
	assert.Zero(t, back.Load(), "times Completed went back")
	assert.Equal(t, uint64(40000), p.Status().Completed, "completed")
}

// Status.Submitted never goes back while messages that carry no task
// (Pause, Resize, WaitIdle, and DoBatch's ticket) race the submits, while a
// reader polls it.
func TestStatusSubmittedNeverGoesBack(t *testing.T) {
	p := New(4)
	var back atomic.Int64
	done := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		last := uint64(0)
		for {
			select {
			case <-done:
				return
			default:
			}
			n := p.Status().Submitted
			if n < last {
				back.Add(1)
			}
			last = max(last, n)
		}
	}()
	var controls sync.WaitGroup
	ended := canceledContext()
	batch := []func(){func() {}, func() {}}
	for range 3 {
		controls.Go(func() {
			for range 2000 {
				p.Resize(4)
				_ = p.WaitIdle(ended)
			}
		})
	}
	controls.Go(func() {
		for range 500 {
			p.Pause(ended) // a barrier only: its context is done
			_ = p.DoBatch(batch)
		}
	})
	for range 20000 {
		p.Submit(func() {})
	}
	controls.Wait()
	p.StopWait()
	close(done)
	<-polled
	assert.Zero(t, back.Load(), "times Submitted went back")
	assert.Equal(t, uint64(20000+2*500), p.Status().Submitted, "submitted")
}

// --- benchmarks ---

// Benchmarks measure pool overhead: tasks do nothing, and the task func is
// made once so that only the pool's own allocations are counted.

func BenchmarkSubmit(b *testing.B) {
	for _, workers := range []int{1, 4, 64, 1024} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) { benchmarkSubmit(b, workers) })
	}
}

// benchmarkSubmit submits no-op tasks to a pool of workers made with
// options, one at a time, and waits for all of them.
func benchmarkSubmit(b *testing.B, workers int, options ...Option) {
	p, wg := New(workers, options...), new(sync.WaitGroup)
	defer p.StopWait()
	task := wg.Done
	b.ReportAllocs()
	for b.Loop() {
		wg.Add(1)
		p.Submit(task)
	}
	wg.Wait()
}

func BenchmarkSubmitWait(b *testing.B) {
	p := New(4)
	defer p.StopWait()
	task := func() {}
	b.ReportAllocs()
	for b.Loop() {
		p.SubmitWait(task)
	}
}

func BenchmarkSubmitConcurrent(b *testing.B) {
	const submitters, workers = 8, 8
	p, wg := New(workers), new(sync.WaitGroup)
	defer p.StopWait()
	task := wg.Done
	b.SetParallelism((submitters + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			wg.Add(1)
			p.Submit(task)
		}
	})
	wg.Wait()
}

// BenchmarkDoBatch reports ns per task for batches of 1,000 tasks, each run
// to the end before the next: compare with BenchmarkSubmit/workers=4, which
// makes two hand-offs per task where a batch makes one.
func BenchmarkDoBatch(b *testing.B) {
	const workers, size = 4, 1000
	p, wg := New(workers), new(sync.WaitGroup)
	defer p.StopWait()
	batch := make([]func(), size)
	for i := range batch {
		batch[i] = wg.Done
	}
	b.ReportAllocs()
	for b.Loop() {
		wg.Add(size)
		if err := p.DoBatch(batch); err != nil {
			b.Fatal(err)
		}
		wg.Wait()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/task")
}

// BenchmarkSubmitBlock is BenchmarkSubmitConcurrent into a queue bounded at
// 64 under Block: submitters wait for room whenever it is full.
func BenchmarkSubmitBlock(b *testing.B) {
	const submitters, workers, bound = 8, 8, 64
	p, wg := New(workers, WithMaxWaiting(bound, Block)), new(sync.WaitGroup)
	defer p.StopWait()
	task := wg.Done
	b.SetParallelism((submitters + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			wg.Add(1)
			p.Submit(task)
		}
	})
	wg.Wait()
}

// BenchmarkGoroutinePerTask is the baseline: no pool, one goroutine a task.
func BenchmarkGoroutinePerTask(b *testing.B) {
	wg := new(sync.WaitGroup)
	task := wg.Done
	b.ReportAllocs()
	for b.Loop() {
		wg.Add(1)
		go task()
	}
	wg.Wait()
}
