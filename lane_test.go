package workerpool

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openLane makes the lane of a quiet pool open: a plain task that comes to
// dispatch tells it plain tasks are coming, and dispatch opens the lane as
// it waits. The task runs and ends.
func openLane(t *testing.T, p *WorkerPool) {
	t.Helper()
	p.Submit(func() {})
	synctest.Wait()
	require.True(t, p.lane.open.Load(), "the lane is open once a plain task came to a quiet dispatcher")
}

// Tasks that go through the lane start in the order they were submitted,
// behind the busy worker, and count as waiting and submitted meanwhile.
func TestLaneTasksStartInOrderAndCountAsWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		openLane(t, p)
		g := blockWorkers(t, p, 1)
		var order []int // written by the one worker only
		for i := range 100 {
			p.Submit(func() { order = append(order, i) })
		}
		appended := p.lane.appended.Load()
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, uint64(100), appended-p.lane.left.Load(), "the tasks wait in the lane")
		assert.Equal(t, 100, s.Waiting, "waiting")
		assert.Equal(t, 100, p.WaitingQueueSize())
		assert.Equal(t, 1, s.Busy, "busy")
		assert.Equal(t, uint64(102), s.Submitted, "submitted")
		g.open()
		p.StopWait()
		s = requireStoppedClean(t, p)
		assert.Equal(t, uint64(102), s.Completed)
		require.Len(t, order, 100)
		for i, v := range order {
			require.Equal(t, i, v, "order")
		}
	})
}

// A task that needs dispatch (a job, a task with options) waits behind the
// plain tasks submitted before it through the lane: dispatch takes them
// back, oldest first, before it takes the task in. A higher priority
// overtakes them, as it overtakes any waiting task.
func TestATaskForDispatchKeepsItsPlaceBehindTheLanesTasks(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []TaskOption
		want []string
	}{
		{"same priority", nil, []string{"a", "b", "job"}},
		{"higher priority", []TaskOption{{Priority: 5}}, []string{"job", "a", "b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1)
				openLane(t, p)
				g := blockWorkers(t, p, 1)
				var order []string // written by the one worker only
				p.Submit(func() { order = append(order, "a") })
				p.Submit(func() { order = append(order, "b") })
				task := p.Go(t.Context(), func(context.Context) error { order = append(order, "job"); return nil }, c.opts...)
				synctest.Wait()
				assert.False(t, p.lane.open.Load(), "the lane is closed while tasks wait in dispatch's queue")
				g.open()
				require.NoError(t, task.Wait())
				p.StopWait()
				assert.Equal(t, c.want, order)
			})
		})
	}
}

// A Pause waits for the tasks that went through the lane before it, and
// holds those submitted after it.
func TestPauseWaitsForTheLanesTasksAndHoldsLaterOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		openLane(t, p)
		g := blockWorkers(t, p, 1)
		var before, after atomic.Int64
		p.Submit(func() { before.Add(1) })
		ctx, resume := context.WithCancel(t.Context())
		paused := make(chan struct{})
		go func() {
			p.Pause(ctx)
			close(paused)
		}()
		synctest.Wait()
		p.Submit(func() { after.Add(1) })
		g.open()
		synctest.Wait()
		assert.True(t, isClosed(paused), "Pause returned once the tasks before it finished")
		assert.Equal(t, int64(1), before.Load(), "the lane's task from before the Pause ran")
		assert.Equal(t, int64(0), after.Load(), "the task after the Pause is held")
		resume()
		p.StopWait()
		assert.Equal(t, int64(1), after.Load(), "the held task ran once the pause ended")
	})
}

// Stop abandons the tasks still in the lane: counted, and given to the
// dead-letter handler, each once.
func TestStopAbandonsTheLanesTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		letters := new(letterBox)
		p := New(1, WithHooks(Hooks{DeadLetter: letters.handle}))
		openLane(t, p)
		g := blockWorkers(t, p, 1)
		var ran atomic.Int64
		for range 5 {
			p.Submit(func() { ran.Add(1) })
		}
		stopped := make(chan struct{})
		go func() {
			p.Stop()
			close(stopped)
		}()
		synctest.Wait()
		assert.False(t, p.lane.open.Load(), "a stop shuts the lane")
		assert.ErrorIs(t, p.Do(func() {}), ErrStopped, "a submit after the stop began")
		g.open()
		<-stopped
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(7), s.Submitted)
		assert.Equal(t, uint64(5), s.Abandoned)
		assert.Equal(t, int64(0), ran.Load())
		require.Len(t, letters.got(), 5)
		for _, l := range letters.got() {
			assert.ErrorIs(t, l.reason, ErrStopped)
		}
	})
}

// A worker that has not yet started the task it took from the lane when
// Stop begins gives it up, as it would one dispatch offered it then.
func TestAWorkerGivesUpALaneTaskItTookAfterAbandoningBegan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		letters := new(letterBox)
		p := New(1, WithHooks(Hooks{DeadLetter: letters.handle}))
		defer p.Stop()
		p.lane.open.Store(true) // as dispatch leaves it, while this test takes the front by hand
		p.lane.tasks.PushBack(func() { t.Error("a task taken after abandoning began ran") })
		p.lane.appended.Add(1)
		w, ok := p.lane.take()
		require.True(t, ok)
		assert.False(t, w.offered, "a task dispatch starts a worker with is handed, not offered")
		p.lane.tasks.PushBack(func() { t.Error("a task taken after abandoning began ran") })
		p.lane.appended.Add(1)
		var lw *laneWaiter
		w = p.lane.next(p.workerQueue, &lw)
		assert.True(t, w.offered, "a task a worker takes from the lane is offered")
		p.sig.abandonBegun.Store(true)
		ws := workerSide{counts: &p.counts, sig: &p.sig, obs: &p.obs}
		count, _ := ws.do(w, new(ending))
		assert.Same(t, &p.counts.skipped, count, "given up, not run")
		assert.Equal(t, uint64(1), p.counts.settled.abandoned.Load())
		synctest.Wait() // the dead letters are delivered on a goroutine of their own
		assert.Len(t, letters.got(), 1)
	})
}

// The lane opens only after plain tasks came to dispatch, and closes for
// good, until the next such task, once it took none while open: tasks that
// all need dispatch (here DoWait) do not pay for it.
func TestTheLaneOpensOnlyForPlainTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		for range 3 {
			require.NoError(t, p.DoWait(func() {}))
		}
		synctest.Wait()
		assert.False(t, p.lane.open.Load(), "closed while only DoWait came")
		openLane(t, p)
		require.NoError(t, p.DoWait(func() {}))
		synctest.Wait()
		assert.False(t, p.lane.open.Load(), "closed again: no task took the lane while it was open")
		openLane(t, p)
		p.Submit(func() {}) // through the lane
		require.NoError(t, p.DoWait(func() {}))
		synctest.Wait()
		assert.True(t, p.lane.open.Load(), "opened again: a task took the lane")
	})
}

// Dispatch opens no lane while a weighted task holds slots: the plain tasks
// after it wait for the slots as they do in dispatch's queue.
func TestNoLaneTaskStartsBesideATaskWhoseWeightFillsThePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		openLane(t, p)
		heavy := newGate()
		p.Go(t.Context(), func(context.Context) error { heavy.wait(); return nil }, TaskOption{Weight: 2})
		synctest.Wait()
		assert.False(t, p.lane.open.Load(), "closed while the weighted task runs")
		var ran atomic.Int64
		p.Submit(func() { ran.Add(1) })
		synctest.Wait()
		assert.Equal(t, int64(0), ran.Load(), "no slot was free")
		heavy.open()
		p.StopWait()
		assert.Equal(t, int64(1), ran.Load())
	})
}

// Tasks that find no worker waiting at the lane get workers up to the
// size, and never more: the workers that waited on workerQueue since before
// the lane opened take them first.
func TestTheLanesTasksGetWorkersUpToTheSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4, WithMinWorkers(2))
		synctest.Wait() // the warm workers wait on workerQueue
		openLane(t, p)
		g := newGate()
		for range 2 {
			p.Submit(g.task())
		}
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 2, s.Workers, "the warm workers took them: none started")
		assert.Equal(t, 2, s.Busy)
		for range 10 {
			p.Submit(g.task())
		}
		synctest.Wait()
		s = p.Status()
		assert.Equal(t, 4, s.Workers, "workers up to the size")
		assert.Equal(t, 4, s.Busy)
		assert.Equal(t, 8, s.Waiting)
		g.open()
		p.StopWait()
		requireStoppedClean(t, p)
	})
}

// Tasks that come through the lane are tasks coming in: while they come,
// the idle clock retires no worker.
func TestTheLanesTasksKeepIdleWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithIdleTimeout(time.Second))
		defer p.Stop()
		openLane(t, p)
		g := blockWorkers(t, p, 2)
		g.open()
		synctest.Wait()
		for range 50 {
			time.Sleep(100 * time.Millisecond)
			p.Submit(func() {})
			synctest.Wait()
			require.Equal(t, 2, p.Status().Workers, "workers at %v", time.Now())
		}
		assert.Positive(t, p.lane.appended.Load(), "the tasks went through the lane")
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Equal(t, 0, p.Status().Workers, "retired once no task came")
	})
}

// A task's wait, as the hooks see it, counts from its append to the lane.
func TestTheHooksSeeALaneTasksWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var waited atomic.Int64
		p := New(1, WithHooks(Hooks{TaskStarted: func(ctx context.Context, ti TaskInfo) context.Context {
			waited.Store(int64(ti.Waited))
			return ctx
		}}))
		openLane(t, p)
		g := blockWorkers(t, p, 1)
		p.Submit(func() {})
		time.Sleep(3 * time.Second)
		g.open()
		p.StopWait()
		assert.Equal(t, int64(3*time.Second), waited.Load(), "waited")
	})
}

// Plain tasks queued in dispatch's queue (here behind a job) move to the
// lane, in order, once nothing else is queued, and the tasks appended after
// that start after them.
func TestQueuedPlainTasksMoveToTheLaneAheadOfLaterOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		openLane(t, p)
		g := blockWorkers(t, p, 1)
		var order []string // written by the one worker only
		add := func(name string) func() { return func() { order = append(order, name) } }
		p.Submit(add("a"))
		job := newGate()
		p.Go(t.Context(), func(context.Context) error { job.wait(); order = append(order, "job"); return nil })
		p.Submit(add("b"))
		p.Submit(add("c"))
		synctest.Wait()
		assert.Equal(t, 4, p.Status().Waiting, "waiting in dispatch's queue")
		released := p.lane.released.Load()
		g.open()
		synctest.Wait() // a ran; the job runs and holds the worker
		assert.Equal(t, []string{"a"}, order)
		assert.Equal(t, uint64(2), p.lane.released.Load()-released, "b and c moved to the lane once only plain tasks were queued")
		assert.True(t, p.lane.open.Load())
		p.Submit(add("d"))
		assert.Equal(t, 3, p.Status().Waiting, "the lane's tasks count as waiting")
		job.open()
		p.StopWait()
		assert.Equal(t, []string{"a", "job", "b", "c", "d"}, order)
		requireStoppedClean(t, p)
	})
}
