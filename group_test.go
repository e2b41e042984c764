package workerpool

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
	return WithHooks(Hooks{TaskDropped: func(reason error) {
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
		p.Submit(func() { <-p.stopping }) // runs until the stop begins
		p.Submit(func() {})               // fills the queue
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
