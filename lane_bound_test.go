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

// goSubmit calls p.Submit(task) on a goroutine of its own, and closes the
// channel it returns once Submit returned.
func goSubmit(p *WorkerPool, task func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Submit(task)
	}()
	return done
}

// Under Block and Reject the lane holds the bound: an append takes a place
// for its task, so the lane never holds more tasks than the bound, and the
// next task meets the bound's policy.
func TestTheLaneTakesAPlaceInTheBoundForEachTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(2, Reject))
		openLane(t, p)
		g := blockWorkers(t, p, 1)
		var order []string // written by the one worker only
		appended := p.lane.appended.Load()
		p.Submit(func() { order = append(order, "a") })
		p.Submit(func() { order = append(order, "b") })
		assert.Equal(t, appended+2, p.lane.appended.Load(), "a and b went to the lane")
		assert.Equal(t, ErrQueueFull, p.Do(func() { order = append(order, "c") }), "the bound is full")
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 2, s.Waiting)
		assert.Equal(t, uint64(1), s.Rejected)
		g.open()
		p.StopWait()
		assert.Equal(t, []string{"a", "b"}, order)
		requireStoppedClean(t, p)
	})
}

// A batch through the lane takes a place for each of its tasks, at once.
func TestABatchThroughTheLaneTakesAPlaceForEachTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(4, Reject))
		openLane(t, p)
		g := blockWorkers(t, p, 1)
		appended := p.lane.appended.Load()
		require.NoError(t, p.DoBatch([]func(){func() {}, func() {}, func() {}}))
		assert.Equal(t, appended+3, p.lane.appended.Load(), "the batch went to the lane")
		assert.Equal(t, ErrQueueFull, p.DoBatch([]func(){func() {}, func() {}}), "two places are not free")
		assert.True(t, tryDo(p, func() {}), "one place is")
		assert.False(t, tryDo(p, func() {}), "the bound is full")
		synctest.Wait()
		assert.Equal(t, 4, p.Status().Waiting)
		g.open()
		p.StopWait()
		assert.Equal(t, uint64(3), p.Status().Rejected, "refused: the batch of two and the last Do")
		requireStoppedClean(t, p)
	})
}

// A worker that takes a task from the lane gives its place back, as the
// queue does when it hands a task out: a submitter finds room again.
func TestAWorkerTakingALaneTaskGivesItsPlaceBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(1, Block))
		openLane(t, p)
		first := blockWorkers(t, p, 1)
		second := newGate()
		defer second.release()
		require.True(t, tryDo(p, second.task()), "to the lane, in the bound's one place: the first task's place came back as the worker took it")
		assert.False(t, tryDo(p, func() {}), "the bound is full")
		first.open()
		synctest.Wait() // the worker took the second gate's task from the lane
		assert.Equal(t, 1, p.Status().Busy)
		assert.Equal(t, 0, p.Status().Waiting)
		assert.True(t, tryDo(p, func() {}), "the taken task's place is free")
		assert.False(t, tryDo(p, func() {}), "and then full again")
		second.open()
		p.StopWait()
		requireStoppedClean(t, p)
	})
}

// Submitters that block for room under Block, many of them, all get it in
// the end while tasks pass through the lane: no place is lost on the way.
func TestBlockedSubmittersAllGetRoomWhileTasksPassThroughTheLane(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithMaxWaiting(4, Block))
		openLane(t, p)
		const submitters, each = 4, 200
		done := make(chan struct{})
		for range submitters {
			go func() {
				for range each {
					p.Submit(func() {})
				}
				done <- struct{}{}
			}()
		}
		for range submitters {
			<-done
		}
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(submitters*each+1), s.Completed)
		assert.NotZero(t, p.lane.taken.Load(), "workers took tasks from the lane")
	})
}

// Tasks dispatch queued (here while a Pause held the pool) move to the lane
// with their places: the bound still counts them until workers take them.
func TestQueuedTasksKeepTheirPlacesAsTheyMoveToTheLane(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(3, Reject))
		openLane(t, p)
		ctx, resume := context.WithCancel(t.Context())
		p.Pause(ctx)
		g := newGate()
		defer g.release()
		p.Submit(g.task())
		p.Submit(func() {})
		p.Submit(func() {})
		assert.False(t, tryDo(p, func() {}), "the bound is full")
		released := p.lane.released.Load()
		resume()
		synctest.Wait() // the worker runs the first task; the others wait, in the lane
		assert.GreaterOrEqual(t, p.lane.released.Load()-released, uint64(2), "queued tasks moved to the lane")
		assert.Equal(t, 2, p.Status().Waiting)
		assert.True(t, tryDo(p, func() {}), "the started task's place is free")
		assert.False(t, tryDo(p, func() {}), "the two in the lane still hold theirs")
		g.open()
		p.StopWait()
		requireStoppedClean(t, p)
	})
}

// A submitter that finds no place under Block while the lane is open waits
// in the lane, behind those that came before it: a worker that takes a task
// gives its place to the first, whose task is then accepted at the back of
// the lane. Dispatch hears nothing of it: the lane stays open.
func TestBlockedSubmittersWaitInTheLaneAndGetPlacesInArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(1, Block))
		openLane(t, p)
		g := blockWorkers(t, p, 1)
		var order []string // written by the one worker only
		p.Submit(func() { order = append(order, "a") })
		calls := make([]<-chan struct{}, 0, 3)
		for _, name := range []string{"b", "c", "d"} {
			done := goSubmit(p, func() { order = append(order, name) })
			calls = append(calls, done)
			synctest.Wait() // parked before the next comes
			require.False(t, isClosed(done), "%s waits for room", name)
		}
		assert.Equal(t, 3, p.lane.parked.Len(), "b, c and d wait in the lane")
		assert.True(t, p.lane.open.Load(), "the lane stayed open")
		assert.Equal(t, 1, p.Status().Waiting, "only a is accepted")
		g.open()
		for _, done := range calls {
			<-done
		}
		p.StopWait()
		assert.Equal(t, []string{"a", "b", "c", "d"}, order)
		requireStoppedClean(t, p)
	})
}

// A submitter waiting in the lane whose context ends gets its error, and
// its task never runs; the place goes to the one behind it.
func TestASubmitterWaitingInTheLaneCanGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(1, Block))
		openLane(t, p)
		g := blockWorkers(t, p, 1)
		var order []string // written by the one worker only
		p.Submit(func() { order = append(order, "a") })
		ctx, cancel := context.WithCancel(t.Context())
		b := make(chan error, 1)
		go func() { b <- p.DoContext(ctx, func() { order = append(order, "b") }) }()
		synctest.Wait()
		c := goSubmit(p, func() { order = append(order, "c") })
		synctest.Wait()
		require.Equal(t, 2, p.lane.parked.Len(), "b and c wait in the lane")
		cancel()
		assert.ErrorIs(t, <-b, context.Canceled)
		g.open()
		<-c
		p.StopWait()
		assert.Equal(t, []string{"a", "c"}, order)
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(4), s.Submitted, "the opening task, the gate, a and c")
	})
}

// Anything that reaches dispatch closes the lane; dispatch then takes the
// submitters waiting in the lane as its own, ahead of those that come
// after, and admits them in that order.
func TestSubmittersWaitingInTheLaneKeepTheirTurnWhenItCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(1, Block))
		openLane(t, p)
		g := blockWorkers(t, p, 1)
		var order []string // written by the one worker only
		p.Submit(func() { order = append(order, "a") })
		b := goSubmit(p, func() { order = append(order, "b") })
		synctest.Wait()
		require.Equal(t, 1, p.lane.parked.Len(), "b waits in the lane")
		job := make(chan *Task, 1)
		go func() {
			job <- p.Go(t.Context(), func(context.Context) error { order = append(order, "job"); return nil })
		}()
		synctest.Wait()
		assert.False(t, p.lane.open.Load(), "the job's ticket closed the lane")
		assert.Zero(t, p.lane.parked.Len(), "dispatch took b")
		g.open()
		<-b
		require.NoError(t, (<-job).Wait())
		p.StopWait()
		assert.Equal(t, []string{"a", "b", "job"}, order)
		requireStoppedClean(t, p)
	})
}

// A stop refuses the submitters waiting in the lane, as it refuses those
// waiting with dispatch: Do returns ErrStopped, Submit panics with it.
func TestAStopRefusesTheSubmittersWaitingInTheLane(t *testing.T) {
	for _, stop := range []struct {
		name string
		call func(*WorkerPool)
	}{{"Stop", (*WorkerPool).Stop}, {"StopWait", (*WorkerPool).StopWait}} {
		t.Run(stop.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1, WithMaxWaiting(1, Block))
				openLane(t, p)
				g := blockWorkers(t, p, 1)
				defer g.release()
				p.Submit(func() {})
				do := make(chan error, 1)
				go func() { do <- p.Do(func() { t.Error("a refused task ran") }) }()
				submit := make(chan error, 1)
				go func() {
					err, _ := recovered(func() { p.Submit(func() { t.Error("a refused task ran") }) })
					submit <- err
				}()
				synctest.Wait()
				require.Equal(t, 2, p.lane.parked.Len(), "Do and Submit wait in the lane")
				stopped := make(chan struct{})
				go func() { defer close(stopped); stop.call(p) }()
				assert.ErrorIs(t, <-do, ErrStopped)
				assert.ErrorIs(t, <-submit, ErrStopped, "Submit panics with ErrStopped")
				g.open()
				<-stopped
				requireStoppedCounts(t, p)
			})
		})
	}
}

// Between the moment a stop shuts the lane and the moment dispatch takes
// what is left, a worker already at the lane may still take a task from
// it; the place it gives back admits no waiting submitter: the stop
// refuses them all. (The lane alone, as dispatch and a stop leave it.)
func TestAPlaceFreedAfterAStopShutTheLaneAdmitsNoOne(t *testing.T) {
	var r room
	r.init(1)
	sig := newSignals()
	var l lane
	l.init(false, clock{epoch: time.Now()}, &r, &sig, new(atomic.Int64))
	l.openUp(0, nil, func() bool { return false })
	require.True(t, l.append(func() {}), "the one place")
	tk := &ticket{done: make(chan struct{}, 1), task: func() {}, tasks: 1, need: 1}
	tk.refs.Store(2)
	require.True(t, l.park(tk), "no place: it waits in the lane")
	l.shutForGood()
	_, ok := l.take()
	require.True(t, ok, "a worker takes the lane's task")
	assert.Equal(t, ticketWaiting, tk.state.Load(), "not admitted")
	assert.Equal(t, 1, l.parked.Len(), "it still waits, for dispatch to refuse it")
	assert.Zero(t, l.tasks.Len(), "its task was not appended")
	assert.True(t, r.parked(), "and still counts as parked")
}

// A plain task accepted while the pool's only worker is on its way back to
// its receive (it counted itself free as its last task's Done closed, and
// is held there: see stopStallingContext) can start at once on that
// worker, so it never needs room, whether it went to the lane (plain
// tasks came lately) or to dispatch (none did): the next TryDo finds the
// queue's one place free, also when it reaches dispatch before dispatch has
// waited again since it took the task.
func TestAPlainTaskAcceptedWhileItsWorkerIsOnItsWayNeedsNoRoom(t *testing.T) {
	for _, policy := range []Overflow{Block, Reject} {
		for _, viaLane := range []bool{true, false} {
			name := policy.string() + "/to dispatch"
			if viaLane {
				name = policy.string() + "/to the lane"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					p := New(1, WithMaxWaiting(1, policy), WithIdleTimeout(-1))
					defer p.Stop()
					if viaLane {
						openLane(t, p)
						p.Submit(func() {}) // appended: plain tasks come, and the lane opens again after the Go below
						synctest.Wait()
					}
					ctx := newStopStallingContext()
					defer ctx.resume()
					running := newGate()
					defer running.release()
					last := p.Go(ctx, fnOf(running.wait))
					done := last.Done()
					running.open()
					<-done
					<-ctx.stalled // its worker counted itself free, and is held on its way to its receive
					synctest.Wait()
					require.Equal(t, viaLane, p.lane.open.Load(), "the lane is open only when plain tasks came lately")

					next := newGate()
					defer next.release()
					p.Submit(next.task())
					tried := make(chan bool, 1)
					go func() { tried <- tryDo(p, func() {}) }()
					synctest.Wait()
					ctx.resume()
					assert.True(t, <-tried, "TryDo after it: the queue's one place was free")
					synctest.Wait()
					assert.Equal(t, 1, p.Status().Busy, "the task submitted once the last one was done runs")
					next.open()
					assert.NoError(t, last.Wait())
					p.StopWait()
					s := requireStoppedClean(t, p)
					assert.Zero(t, s.Rejected, "rejected")
				})
			})
		}
	}
}

// A place that a task with a handle gives back as its worker starts it
// (after dispatch handed it out, with the lane open by then) goes to the
// submitter waiting for room in the lane: with no task in the lane for a
// worker to take, dispatch must hear of it.
func TestAPlaceAJobGivesBackAsItStartsAdmitsTheSubmitterWaitingInTheLane(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(1, Block), WithIdleTimeout(-1))
		defer p.Stop()
		openLane(t, p)
		g := blockWorkers(t, p, 1)
		ctx := newFrameStallingContext(context.Background(), "(*job).work(") // stalls the worker that took the job, before it starts it
		defer ctx.resume()
		job := p.Go(ctx, noopFn) // queued behind the busy worker, in the bound's one place
		synctest.Wait()
		require.Equal(t, 1, p.Status().Waiting, "the job waits")
		g.open()
		<-ctx.stalled // its worker took it, and looks at ctx before it starts it
		synctest.Wait()
		require.True(t, p.lane.open.Load(), "the lane opened again: dispatch has nothing to order")

		ran := make(chan struct{})
		do := make(chan error, 1)
		go func() { do <- p.Do(func() { close(ran) }) }()
		synctest.Wait()
		require.Equal(t, 1, p.lane.parked.Len(), "no place: the Do waits in the lane")
		ctx.resume() // the job starts and gives its place back
		synctest.Wait()
		assert.Zero(t, p.lane.parked.Len(), "the Do got the place")
		assert.True(t, isClosed(ran), "its task ran on the free worker")
		require.NoError(t, job.Wait())
		p.StopWait()
		assert.NoError(t, <-do)
		requireStoppedClean(t, p)
	})
}
