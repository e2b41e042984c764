package workerpool

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests for Group: Go, Wait and SetLimit; how a failure or the parent
// context ends a group's tasks; how the tasks its limit holds back are
// counted; how groups meet a stop; that the pool keeps no finished group;
// and what a group costs.

// --- Go, Wait, SetLimit ---

func TestGroupFirstErrorCancelsTheOtherThousandTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4)
		g := p.Group(t.Context())
		var started, returned atomic.Int64
		allQueued := newGate()
		for i := range 1000 {
			g.Go(func(ctx context.Context) error {
				started.Add(1)
				defer returned.Add(1)
				if i == 3 {
					allQueued.wait()
					return errTask
				}
				<-ctx.Done() // running tasks see the cancellation
				return ctx.Err()
			})
		}
		allQueued.open()
		assert.Same(t, errTask, g.Wait(), "Wait returns the first error")
		assert.Equal(t, int64(4), started.Load(), "tasks that started: one per worker")
		assert.Equal(t, started.Load(), returned.Load(), "every started task returned before Wait did")
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(996), s.Canceled, "queued group tasks were skipped")
		assert.Equal(t, uint64(4), s.Completed, "completed")
	})
}

// A worker checks the group before it calls fn: a task handed out just
// before the group was canceled is settled, not run. (The group cancels
// only the tasks it finds queued; this one was already on its way.)
func TestGroupTaskHandedOutAfterCancelIsSkippedByTheWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		ctx, cancel := context.WithCancel(t.Context())
		g := p.Group(ctx)
		var ran atomic.Bool
		g.mu.Lock()
		task := g.add(heldTask{fn: func(context.Context) error { ran.Store(true); return nil }})
		g.mu.Unlock()
		cancel()
		synctest.Wait()         // the group's cancel has run and left the pending task alone
		workAsWorker(&task.job) // as the worker that took it would
		assert.Same(t, context.Canceled, g.Wait(), "Wait")
		assert.False(t, ran.Load(), "fn ran")
	})
}

func TestGroupWithoutErrorsRunsEveryTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3)
		defer p.Stop()
		g := p.Group(t.Context())
		var ran atomic.Int64
		for range 100 {
			g.Go(func(context.Context) error { time.Sleep(time.Millisecond); ran.Add(1); return nil })
		}
		assert.NoError(t, g.Wait())
		assert.Equal(t, int64(100), ran.Load(), "ran")
		assert.NoError(t, p.Group(t.Context()).Wait(), "Wait of an empty group")
	})
}

func TestGroupSetLimitCapsItsShareAndNeverBlocksThePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4)
		defer p.Stop()
		g := p.Group(t.Context())
		g.SetLimit(2)
		var meter concurrencyMeter
		release := newGate()
		for range 20 {
			g.Go(func(context.Context) error { meter.wrap(release.wait)(); return nil })
		}
		synctest.Wait()
		assert.Equal(t, int64(2), meter.running.Load(), "group tasks running")
		assert.Zero(t, p.WaitingQueueSize(), "held tasks wait in the group, not in the pool")
		require.NoError(t, p.DoWait(func() {}), "the pool's other users are not blocked")
		g.SetLimit(3) // raising the limit releases a held task at once
		synctest.Wait()
		assert.Equal(t, int64(3), meter.running.Load(), "group tasks running after SetLimit(3)")
		release.open()
		assert.NoError(t, g.Wait())
		assert.Equal(t, int64(3), meter.peak.Load(), "peak group concurrency")
	})
}

func TestGroupNegativeLimitMeansNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4)
		defer p.Stop()
		g := p.Group(t.Context())
		g.SetLimit(1)
		g.SetLimit(-1)
		var meter concurrencyMeter
		release := newGate()
		for range 4 {
			g.Go(func(context.Context) error { meter.wrap(release.wait)(); return nil })
		}
		synctest.Wait()
		assert.Equal(t, int64(4), meter.running.Load(), "group tasks running")
		release.open()
		assert.NoError(t, g.Wait())
	})
}

func TestGroupPanicIsPanicError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		g := p.Group(t.Context())
		g.Go(panickingFn)
		var pe *PanicError
		require.ErrorAs(t, g.Wait(), &pe)
		assert.Contains(t, string(pe.Stack), "workerpool.panickingFn", "stack")
	})
}

func TestGroupGoexitIsErrGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		g := p.Group(t.Context())
		g.Go(func(context.Context) error { runtime.Goexit(); return nil })
		assert.Same(t, ErrGoexit, g.Wait())
	})
}

func TestGroupParentCancelSkipsQueuedTasksAndWaitReportsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		blocker := blockOneWorker(t, p)
		ctx, cancel := context.WithCancel(t.Context())
		g := p.Group(ctx)
		g.SetLimit(2)
		var ran atomic.Int64
		for range 5 { // two queued in the pool, three held in the group
			g.Go(func(context.Context) error { ran.Add(1); return nil })
		}
		cancel()
		assert.Same(t, context.Canceled, g.Wait(), "Wait returns while the pool is still busy")
		blocker.open()
		p.StopWait()
		assert.Zero(t, ran.Load(), "ran")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(6), s.Submitted, "submitted: the blocker and every Go call")
		assert.Equal(t, uint64(5), s.Canceled, "canceled: the two in the pool and the three held")
	})
}

func TestGroupGoAfterWaitIsSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		g := p.Group(t.Context())
		require.NoError(t, g.Wait())
		var ran atomic.Bool
		g.Go(func(context.Context) error { ran.Store(true); return nil })
		assert.Same(t, context.Canceled, g.Wait(), "Wait after a skipped Go")
		assert.False(t, ran.Load(), "fn ran")
	})
}

// A TaskDropped that panics as a full queue refuses a Group.Go leaves the
// group whole: the refused task is settled, and Wait returns the refusal.
func TestGroupGoRefusedWithAPanickingTaskDroppedLeavesTheGroupWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(0, Reject), WithHooks(Hooks{TaskDropped: func(TaskInfo) { panic("dropped") }}))
		gate := blockOneWorker(t, p)
		g := p.Group(t.Context())
		err, panicked := recovered(func() { g.Go(noopFn, TaskOption{Label: "full"}) })
		assert.True(t, panicked, "the hook's panic reaches Group.Go's caller")
		assert.Contains(t, errString(err), "dropped")
		done := make(chan error, 1)
		go func() { done <- g.Wait() }()
		synctest.Wait()
		select {
		case err := <-done:
			assert.ErrorIs(t, err, ErrQueueFull)
		default:
			t.Fatal("Group.Wait blocked: the refused task was never settled")
		}
		gate.open()
		p.StopWait()
	})
}

func TestGroupOnStoppingPoolReportsErrStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		blocker := blockOneWorker(t, p)
		g := p.Group(t.Context())
		g.SetLimit(1)
		for range 3 { // one in the pool, two held
			g.Go(func(context.Context) error { return nil })
		}
		stopped := make(chan struct{})
		go func() { p.Stop(); close(stopped) }()
		assert.Same(t, ErrStopped, g.Wait(), "Wait")
		blocker.open()
		<-stopped
		requireStoppedClean(t, p)
		stoppedGroup := p.Group(t.Context())
		stoppedGroup.Go(func(context.Context) error { return nil })
		assert.Same(t, ErrStopped, stoppedGroup.Wait(), "Wait of a group made after stop")
	})
}

// A group task that calls Go on its own group while the group is at its
// limit does not wait for room: the limit counts the calling task, so the
// new tasks are held, and they run once it ends. Wait, called from a task
// of another pool, returns once they have run.
func TestGroupGoFromATaskOfTheGroupAtItsLimitHoldsTheNewTasksUntilItEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		g := p.Group(context.Background())
		g.SetLimit(1)
		var n atomic.Int64
		g.Go(func(context.Context) error {
			for range 3 {
				g.Go(func(context.Context) error { n.Add(1); return nil }) // held: the limit counts this task
			}
			return nil
		})
		other := New(1)
		defer other.Stop()
		assert.NoError(t, other.Go(context.Background(), func(context.Context) error { return g.Wait() }).Wait())
		assert.Equal(t, int64(3), n.Load())
	})
}

// The first error of a group with a limit drops the tasks the limit holds
// back: none of them runs, and Wait returns that error.
func TestGroupFirstErrorDropsTheTasksItsLimitHoldsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		g := p.Group(context.Background())
		g.SetLimit(1)
		gate := newGate()
		g.Go(func(context.Context) error { gate.wait(); return errTask })
		var heldRan atomic.Bool
		for range 3 {
			g.Go(func(context.Context) error { heldRan.Store(true); return nil })
		}
		gate.open()
		assert.Same(t, errTask, g.Wait())
		assert.False(t, heldRan.Load(), "held tasks after the first error")
	})
}

// SetLimit(-1) releases the tasks the group holds back at once, while the
// task that held them back still runs.
func TestGroupSetLimitNegativeReleasesTheHeldTasksAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		g := p.Group(context.Background())
		g.SetLimit(1)
		gate := newGate()
		var n atomic.Int64
		g.Go(func(context.Context) error { gate.wait(); return nil })
		g.Go(func(context.Context) error { n.Add(1); return nil })
		g.SetLimit(-1)
		synctest.Wait()
		assert.Equal(t, int64(1), n.Load(), "SetLimit(-1) released the held task at once")
		gate.open()
		assert.NoError(t, g.Wait())
	})
}

// A group task that ends releases a held one from its worker, after the
// worker counted itself free (so that the group's Wait, and any task's
// Wait, returns only once the worker is free). The dispatcher may then be
// handing that worker a task that starts at once without room; it takes
// the release meanwhile instead of waiting for the worker forever. A queue
// with no room and a TryDo beside each group make that hand-off meet
// the release; real scheduling, many rounds (a deadlock fails the round's
// bubble at once).
func TestAGroupReleasingAHeldTaskFromAFreeWorkerDoesNotBlockTheDispatcher(t *testing.T) {
	const rounds = 300
	for range rounds {
		synctest.Test(t, func(t *testing.T) {
			p := New(1, WithMaxWaiting(0, Reject))
			defer p.Stop()
			var ran, tried atomic.Int64
			g := p.Group(t.Context())
			g.SetLimit(1)
			for range 3 {
				g.Go(func(context.Context) error { ran.Add(1); return nil })
			}
			var trying sync.WaitGroup
			trying.Go(func() {
				for range 3 {
					if tryDo(p, func() { ran.Add(1) }) {
						tried.Add(1)
					}
				}
			})
			assert.NoError(t, g.Wait(), "the group's Wait")
			trying.Wait()
			p.StopWait()
			assert.Equal(t, 3+tried.Load(), ran.Load(), "the tasks that ran")
			requireStoppedClean(t, p)
		})
	}
}

// A group's ctx ends while a delayed task of it is on its way to dispatch:
// once scheduled, the task is canceled at once (dispatch looks at the group
// again after it schedules the job), and the group's Wait does not wait
// for the delay. Stress on real scheduling.
func TestGroupCancelRacesADelayedGo(t *testing.T) {
	p := New(2)
	defer p.Stop()
	deadline := time.Now().Add(time.Second)
	n := 0
	for time.Now().Before(deadline) {
		n++
		ctx, cancel := context.WithCancel(context.Background())
		g := p.Group(ctx)
		g.Go(func(context.Context) error { return nil }, TaskOption{Delay: time.Millisecond}) // watched from now on
		go cancel()
		g.Go(func(context.Context) error { return nil }, TaskOption{Delay: time.Hour})
		done := make(chan error, 1)
		go func() { done <- g.Wait() }()
		select {
		case <-done:
		case <-time.After(time.Second):
			t.Fatalf("round %d: Group.Wait blocked 1s after its ctx was canceled: %+v", n, p.Status())
		}
	}
	t.Logf("%d rounds", n)
}

// --- counting the tasks a limit holds back ---

// droppedTasks counts the TaskDropped calls of a pool and keeps their
// reasons.
type droppedTasks struct {
	calls        atomic.Int64
	onDispatcher atomic.Int64
	mu           sync.Mutex
	reasons      []error
}

// option gives the pool a TaskDropped hook that records into d.
func (d *droppedTasks) option() Option {
	return WithHooks(Hooks{TaskDropped: func(ti TaskInfo) {
		reason := ti.Err
		d.calls.Add(1)
		if onDispatcher() {
			d.onDispatcher.Add(1)
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		d.reasons = append(d.reasons, reason)
	}})
}

// check checks that TaskDropped ran n times, never on the
// dispatcher, each time with a reason that is target.
func (d *droppedTasks) check(t *testing.T, n int, target error) {
	t.Helper()
	assert.Equal(t, int64(n), d.calls.Load(), "TaskDropped calls")
	assert.Zero(t, d.onDispatcher.Load(), "TaskDropped calls on the dispatcher")
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, reason := range d.reasons {
		assert.ErrorIs(t, reason, target, "TaskDropped reason")
	}
}

// Five Group.Go calls under SetLimit(2), the first of which fails: the
// three the limit holds back are dropped when the group fails, and each of
// the five is counted in Submitted and ends in one bucket (2 completed, 3
// canceled), with one TaskDropped per canceled task.
func TestGroupCountsHeldTasksDroppedByAFailureAsCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dropped droppedTasks
		p := New(2, dropped.option())
		defer p.Stop()
		g := p.Group(t.Context())
		g.SetLimit(2)
		fail := newGate()
		g.Go(func(context.Context) error { fail.wait(); return errTask })
		g.Go(func(ctx context.Context) error { <-ctx.Done(); return nil })
		for range 3 {
			g.Go(func(context.Context) error { return nil })
		}
		synctest.Wait()
		require.Equal(t, 2, p.Status().Busy, "busy group tasks")
		fail.open()
		assert.ErrorIs(t, g.Wait(), errTask, "Group.Wait")

		s := p.Status()
		assert.Equal(t, uint64(5), s.Submitted, "submitted when Wait returned")
		assert.Equal(t, uint64(3), s.Canceled, "canceled when Wait returned")

		p.StopWait()
		s = requireStoppedClean(t, p)
		assert.Equal(t, uint64(5), s.Submitted, "submitted")
		assert.Equal(t, uint64(2), s.Completed, "completed")
		assert.Equal(t, uint64(3), s.Canceled, "canceled")
		assert.Zero(t, s.Abandoned+s.Dropped+s.Expired+s.Rejected, "abandoned, dropped, expired, rejected")
		dropped.check(t, 3, errTask)
	})
}

// Tasks the limit holds back are dropped when the parent context is
// canceled, and counted in Submitted and Canceled.
func TestGroupCountsHeldTasksDroppedByTheParentAsCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dropped droppedTasks
		p := New(2, dropped.option())
		defer p.Stop()
		ctx, cancel := context.WithCancel(t.Context())
		g := p.Group(ctx)
		g.SetLimit(1)
		g.Go(func(ctx context.Context) error { <-ctx.Done(); return nil })
		g.Go(func(context.Context) error { return nil })
		g.Go(func(context.Context) error { return nil })
		synctest.Wait()
		cancel()
		assert.ErrorIs(t, g.Wait(), context.Canceled, "Group.Wait")

		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(3), s.Submitted, "submitted")
		assert.Equal(t, uint64(1), s.Completed, "completed")
		assert.Equal(t, uint64(2), s.Canceled, "canceled")
		assert.Zero(t, s.Abandoned, "abandoned")
		dropped.check(t, 2, context.Canceled)
	})
}

// Tasks the limit holds back while the pool stops are dropped, whichever
// way it stops, and counted in Submitted and Abandoned, with one
// TaskDropped each before the stop returns. A Shutdown that did not give up
// then reports that tasks were abandoned.
func TestGroupCountsHeldTasksDroppedByAStopAsAbandoned(t *testing.T) {
	stops := []struct {
		name string
		stop func(p *WorkerPool) error
		want error // what the stop returns; nil: nothing
	}{
		{"Stop", func(p *WorkerPool) error { p.Stop(); return nil }, nil},
		{"StopWait", func(p *WorkerPool) error { p.StopWait(); return nil }, nil},
		{"Shutdown", func(p *WorkerPool) error { return p.Shutdown(context.Background()) }, ErrStopped},
		{"ShutdownGivingUp", func(p *WorkerPool) error { return p.Shutdown(canceledContext()) }, context.Canceled},
	}
	for _, c := range stops {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var dropped droppedTasks
				p := New(2, dropped.option())
				defer p.Stop()
				g := p.Group(t.Context())
				g.SetLimit(1)
				running := newGate()
				g.Go(func(context.Context) error { running.wait(); return nil })
				g.Go(func(context.Context) error { return nil })
				g.Go(func(context.Context) error { return nil })
				synctest.Wait()
				stopped := make(chan error, 1)
				go func() { stopped <- c.stop(p) }()
				synctest.Wait()
				require.True(t, p.Stopped(), "stopping began")
				running.open()
				err := <-stopped
				s := requireStoppedClean(t, p)
				assert.Equal(t, uint64(3), s.Submitted, "submitted")
				assert.Equal(t, uint64(1), s.Completed, "completed")
				assert.Equal(t, uint64(2), s.Abandoned, "abandoned")
				assert.Zero(t, s.Canceled, "canceled")
				dropped.check(t, 2, ErrStopped)
				if c.want == nil {
					assert.NoError(t, err, "the stop")
				} else {
					assert.ErrorIs(t, err, c.want, "the stop")
				}
				assert.ErrorIs(t, g.Wait(), ErrStopped, "Group.Wait")
			})
		})
	}
}

// A Group.Go after the group failed is skipped, and counted in Submitted
// and Canceled, with one TaskDropped that gives the group's error.
func TestGroupGoAfterTheGroupFailedIsCountedAsCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dropped droppedTasks
		p := New(2, dropped.option())
		defer p.Stop()
		g := p.Group(t.Context())
		g.Go(func(context.Context) error { return errTask })
		synctest.Wait()
		var ran atomic.Bool
		g.Go(func(context.Context) error { ran.Store(true); return nil })
		assert.ErrorIs(t, g.Wait(), errTask, "Group.Wait")

		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.False(t, ran.Load(), "the skipped fn ran")
		assert.Equal(t, uint64(2), s.Submitted, "submitted")
		assert.Equal(t, uint64(1), s.Completed, "completed")
		assert.Equal(t, uint64(1), s.Canceled, "canceled")
		dropped.check(t, 1, errTask)
	})
}

// A Group.Go on a stopping pool is refused, as any submit is: it is not
// counted, TaskDropped does not run, and the group's error is ErrStopped,
// also when the group's context was canceled before.
func TestGroupGoOnAStoppedPoolIsNotCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dropped droppedTasks
		p := New(2, dropped.option())
		ctx, cancel := context.WithCancel(t.Context())
		canceled := p.Group(ctx)
		cancel()
		running := p.Group(t.Context())
		p.StopWait()
		var ran atomic.Int64
		canceled.Go(func(context.Context) error { ran.Add(1); return nil })
		running.Go(func(context.Context) error { ran.Add(1); return nil })
		assert.ErrorIs(t, canceled.Wait(), ErrStopped, "Wait of the canceled group")
		assert.ErrorIs(t, running.Wait(), ErrStopped, "Wait of the running group")

		s := requireStoppedClean(t, p)
		assert.Zero(t, ran.Load(), "fns run")
		assert.Zero(t, s.Submitted, "submitted")
		assert.Zero(t, s.Canceled, "canceled")
		assert.Zero(t, s.Rejected, "rejected")
		dropped.check(t, 0, nil)
	})
}

// A Group.Go that waits for room under Block holds the group's other tasks
// back. Stop refuses it, and the group then drops the held task on the
// Go call's goroutine, racing with the end of the stop: the held task is
// counted in Submitted and Abandoned, and told to TaskDropped, before Stop
// returns, and Status does not change after that. The refused call itself
// is not counted, as any refused submit.
func TestGroupHeldTaskBehindARefusedGoIsCountedBeforeTheStopReturns(t *testing.T) {
	untilFailure(t, 200, func(t *testing.T, _ int) {
		var dropped droppedTasks
		p := New(1, WithMaxWaiting(1, Block), dropped.option())
		p.Submit(func() { <-p.sig.stopping }) // runs until the stop begins
		p.Submit(func() {})                   // fills the queue
		g := p.Group(t.Context())
		g.SetLimit(1)
		refused := make(chan struct{})
		go func() {
			g.Go(func(context.Context) error { return nil }) // waits for room
			close(refused)
		}()
		synctest.Wait()
		g.Go(func(context.Context) error { return nil }) // held: the waiting one has the only slot
		p.Stop()
		s := requireStoppedClean(t, p)
		calls := dropped.calls.Load()
		assert.Equal(t, uint64(3), s.Submitted, "submitted: two plain tasks and the held one")
		assert.Equal(t, uint64(1), s.Completed, "completed")
		assert.Equal(t, uint64(2), s.Abandoned, "abandoned: the queued plain task and the held one")
		assert.Equal(t, int64(2), calls, "TaskDropped calls when Stop returned")
		<-refused
		assert.ErrorIs(t, g.Wait(), ErrStopped, "Group.Wait")
		synctest.Wait()
		assert.Equal(t, s, p.Status(), "Status after the stop returned")
		assert.Equal(t, calls, dropped.calls.Load(), "TaskDropped calls after the stop returned")
	})
}

// A Group.Go call that the limit holds back counts in Status.Submitted from
// the call, as Status and Group.Go say ("each group task from its Group.Go
// call (held back by SetLimit ... included)"), not only once the group
// releases or drops it.
func TestGroupGoCountsAHeldTaskInSubmittedFromItsCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithIdleTimeout(-1))
		defer p.Stop()
		g := p.Group(t.Context())
		g.SetLimit(1)
		running := newGate()
		defer running.release()
		g.Go(func(context.Context) error { running.wait(); return nil })
		g.Go(noopFn) // held
		g.Go(noopFn) // held
		synctest.Wait()
		s := p.Status()
		require.Equal(t, 1, s.Busy, "busy: the group's one task in the pool")
		assert.Equal(t, uint64(3), s.Submitted, "submitted once the three Group.Go calls returned")

		running.open()
		require.NoError(t, g.Wait(), "Group.Wait")
		p.StopWait()
		s = requireStoppedClean(t, p)
		assert.Equal(t, uint64(3), s.Submitted, "submitted")
		assert.Equal(t, uint64(3), s.Completed, "completed")
	})
}

// --- Group.Wait returns once the pool has stopped ---

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

// Group.Wait returns once the pool has stopped, whatever happened to the
// group's held tasks, with an error wrapping ErrStopped, and no held task
// runs. Here, while the pool stops, a freed slot drops the group's held
// task; the group then holds back another (its limit lowered, one task
// still running), and gets one more Go after the pool stopped: those are
// dropped too, and Wait does not hang.
func TestGroupWaitReturnsAfterStopDropsHeldTasks(t *testing.T) {
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

// newPoolAndGroup makes a two-worker pool and a group on it whose parent
// context cancel cancels.
func newPoolAndGroup() (p *WorkerPool, g *Group, cancel context.CancelFunc) {
	p = New(2)
	parent, cancel := context.WithCancel(context.Background())
	return p, p.Group(parent), cancel
}

// Group.Wait returns after g.Go calls made at once from several goroutines
// on a stopped pool, with an error wrapping ErrStopped, whatever the group
// did before, and none of those tasks runs. In a group whose held task the
// stop dropped (ErrStopped recorded, its context still alive), a Go held
// back behind another that is being refused is dropped too. In the first
// three cases the first refused Go cancels the group, which drops what it
// holds.
func TestGroupWaitReturnsAfterGoOnStoppedPool(t *testing.T) {
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

// Group.Wait returns when g.Go races StopWait: goroutines keep calling Go
// on a group with a limit while StopWait runs, and a little after, and
// Wait returns every time once StopWait and the callers have returned.
// Inside a bubble a hang is seen at once.
func TestGroupWaitReturnsWhenGoRacesStopWait(t *testing.T) {
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

// Groups racing every kind of stop, with limits raised and lowered, Go from
// inside group tasks, failures and parent cancels in flight: every Wait
// returns, no fn starts after the stop returned, and Status is exact.
func TestGroupsUnderStopRaces(t *testing.T) {
	deadline := time.Now().Add(1500 * time.Millisecond)
	rounds := 0
	for ; time.Now().Before(deadline); rounds++ {
		mode := rounds % 4
		p := New(3, WithIdleTimeout(-1))
		var afterStop atomic.Bool
		var lateRuns atomic.Int64
		body := func(fail bool) func(context.Context) error {
			return func(ctx context.Context) error {
				if afterStop.Load() {
					lateRuns.Add(1)
				}
				if fail {
					return errTask
				}
				return nil
			}
		}
		groups := make([]*Group, 6)
		parents := make([]context.CancelFunc, len(groups))
		var wg sync.WaitGroup
		for i := range groups {
			ctx, cancel := context.WithCancel(context.Background())
			parents[i] = cancel
			g := p.Group(ctx)
			groups[i] = g
			if i%2 == 0 {
				g.SetLimit(1 + i%3)
			}
			wg.Go(func() {
				for j := range 20 {
					if j == 10 && i%3 == 0 {
						g.SetLimit(-1)
					}
					if j == 12 && i%3 == 1 {
						g.SetLimit(1)
					}
					g.Go(func(ctx context.Context) error {
						if j%7 == 0 {
							g.Go(body(false))
						}
						return body(i == 1 && j == 15)(ctx)
					})
				}
				if i == 5 {
					cancel()
				}
			})
		}
		runtime.Gosched()
		switch mode {
		case 0:
			p.Stop()
		case 1:
			p.StopWait()
		case 2:
			_ = p.Shutdown(canceledContext())
		case 3:
			go p.Stop()
			_ = p.Shutdown(context.Background())
		}
		afterStop.Store(true)
		wg.Wait()
		for i, g := range groups {
			done := make(chan error, 1)
			go func() { done <- g.Wait() }()
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, ErrStopped) && !errors.Is(err, errTask) && !errors.Is(err, context.Canceled) {
					t.Errorf("round %d group %d: unexpected %v", rounds, i, err)
				}
			case <-time.After(2 * time.Second):
				t.Fatalf("round %d mode %d: group %d Wait hung after the stop", rounds, mode, i)
			}
			parents[i]()
		}
		assert.Zero(t, lateRuns.Load(), "round %d: group fns that started after the stop returned", rounds)
		s := p.Status()
		if !assert.Equal(t, s.Submitted, s.Completed+s.Abandoned+s.Canceled, "round %d mode %d: invariant %+v", rounds, mode, s) {
			return
		}
	}
	t.Logf("%d rounds", rounds)
}

// --- the pool does not keep finished groups ---

// The pool keeps no reference to a group whose tasks have all finished:
// a group nobody waits for is collected, while the pool still runs, once
// its tasks have finished; it does not stay in the pool's live set until
// Wait is called. The parent is context.Background(), which keeps no
// reference to its children.
func TestGroupNeverWaitedIsCollectedOnceItsTasksFinish(t *testing.T) {
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
		assert.Equal(t, "running", stateOf(p.Status()), "the pool still runs")
	})
}

// Finished groups nobody waits for are collectable while the pool runs,
// also when a task failed, when held tasks were dropped, and when queued
// tasks were canceled by the failure.
func TestFailedGroupNeverWaitedIsCollected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		blocker := blockOneWorker(t, p)
		refs := func() []weak.Pointer[Group] {
			var refs []weak.Pointer[Group]
			g := p.Group(context.Background())
			g.Go(func(context.Context) error { return errTask })
			for range 3 {
				g.Go(noopFn) // queued behind the failing one, canceled by it
			}
			refs = append(refs, weak.Make(g))
			g = p.Group(context.Background())
			g.SetLimit(1)
			g.Go(func(context.Context) error { return errTask })
			for range 3 {
				g.Go(noopFn) // held, dropped by the failure
			}
			return append(refs, weak.Make(g))
		}()
		blocker.open()
		synctest.Wait()
		for range 3 {
			runtime.GC()
		}
		for i, r := range refs {
			assert.True(t, r.Value() == nil, "group %d still reachable", i)
		}
		s := p.Status()
		assert.Equal(t, uint64(6), s.Canceled, "canceled: three queued, three held")
		assert.Equal(t, 0, s.Waiting)
	})
}

// A group task the pool gives back to its cache keeps nothing of its last
// task: not its func, its group, nor its options (a retry policy, the last
// run's error), which would otherwise stay reachable until it is reused.
func TestGroupTaskInTheCacheHoldsNothing(t *testing.T) {
	p := New(1)
	defer p.Stop()
	g := p.Group(t.Context())
	gt := g.newTask(noopFn, taskOptions{weight: 1, priority: 2, retry: Backoff(time.Second, time.Second, 2)})
	require.NotNil(t, gt.job.opts, "the task's options live in the group task")
	gt.opts.attempt, gt.opts.lastErr = 1, errors.New("the last run's error")
	gt.refs.Store(1) // the pool's reference alone is left
	gt.unref()
	assert.Nil(t, gt.fn)
	assert.Nil(t, gt.group)
	assert.Nil(t, gt.job.opts)
	assert.True(t, reflect.ValueOf(&gt.opts).Elem().IsZero(), "options kept in the cache are zero")
}

// --- cost ---

// With TaskDropped set, the Group.Go calls a canceled group skips
// allocate nothing once the group has told of a first one.
func TestGroupGoSkippedWithTaskDroppedAllocatesNothing(t *testing.T) {
	if raceDetectorOn {
		t.Skip("allocations are counted without the race detector")
	}
	p := New(1, WithHooks(Hooks{TaskDropped: func(TaskInfo) {}}))
	defer p.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g := p.Group(ctx)
	g.Go(noopFn, TaskOption{Label: "skipped"})
	allocs := testing.AllocsPerRun(100, func() { g.Go(noopFn, TaskOption{Label: "skipped"}) })
	assert.Zero(t, allocs)
}

// BenchmarkGroup runs groups of 1,000 no-op tasks; "submit" is the same
// work as plain Submits and a WaitGroup, for scale.
func BenchmarkGroup(b *testing.B) {
	const tasks = 1000
	p := New(4)
	defer p.StopWait()
	b.Run("tasks=1000", func(b *testing.B) {
		fn := func(context.Context) error { return nil }
		b.ReportAllocs()
		for b.Loop() {
			g := p.Group(context.Background())
			for range tasks {
				g.Go(fn)
			}
			_ = g.Wait()
		}
	})
	b.Run("tasks=1000/limit=2", func(b *testing.B) {
		fn := func(context.Context) error { return nil }
		b.ReportAllocs()
		for b.Loop() {
			g := p.Group(context.Background())
			g.SetLimit(2)
			for range tasks {
				g.Go(fn)
			}
			_ = g.Wait()
		}
	})
	b.Run("submit=1000", func(b *testing.B) {
		wg := new(sync.WaitGroup)
		task := wg.Done
		b.ReportAllocs()
		for b.Loop() {
			wg.Add(tasks)
			for range tasks {
				p.Submit(task)
			}
			wg.Wait()
		}
	})
}
