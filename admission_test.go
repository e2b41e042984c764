package workerpool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests for how a task finds room in a bounded queue: a task that can
// start on a free worker at once never needs room, and Status never shows
// more waiting tasks than the bound.

// roomCall is one way to submit under a bound, reduced to whether the task
// was refused because the queue was full.
type roomCall struct {
	name   string
	submit func(p *WorkerPool, task func()) (refused bool)
}

// roomCalls are the calls that take room for a single task.
var roomCalls = []roomCall{
	{"Submit", func(p *WorkerPool, task func()) bool {
		before := p.Status().Rejected
		p.Submit(task)
		return p.Status().Rejected != before
	}},
	{"Do", func(p *WorkerPool, task func()) bool { return errors.Is(p.Do(task), ErrQueueFull) }},
	{"TrySubmit", func(p *WorkerPool, task func()) bool { return !p.TrySubmit(task) }},
	{"DoContext", func(p *WorkerPool, task func()) bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return errors.Is(p.DoContext(ctx, task), ErrQueueFull)
	}},
	{"Go", func(p *WorkerPool, task func()) bool {
		tk := p.Go(context.Background(), func(context.Context) error { task(); return nil })
		select {
		case <-tk.Done():
			return errors.Is(tk.Wait(), ErrQueueFull)
		default:
			return false // accepted: it runs, or waits for room
		}
	}},
}

// Tasks submitted back to back while workers are free start at once, even
// though each holds the one place of the queue on its way to the
// dispatcher: none is refused, and none waits for room. Real scheduling,
// many rounds: before the fix a fast submitter found the place still taken
// by the task before it and was refused (6 of 8 calls under Reject).
func TestTaskThatCanStartOnAFreeWorkerNeverNeedsRoom(t *testing.T) {
	const workers, rounds = 8, 100
	for _, overflow := range []Overflow{Block, Reject} {
		for _, call := range roomCalls {
			t.Run(overflow.String()+"/"+call.name, func(t *testing.T) {
				refused := 0
				for range rounds {
					p := New(workers, WithMaxWaiting(1, overflow), WithIdleTimeout(-1))
					g := newGate()
					var started sync.WaitGroup
					started.Add(workers)
					for range workers {
						if call.submit(p, func() { started.Done(); g.wait() }) {
							refused++
							started.Done()
						}
					}
					started.Wait() // every accepted task runs: none waits in the queue
					g.open()
					p.StopWait()
					s := p.Status()
					require.Equal(t, s.Submitted, s.Completed, "every accepted task ran")
				}
				assert.Zero(t, refused, "tasks refused although a worker was free")
			})
		}
	}
}

// With every worker busy, the task that finds the queue empty takes its
// one place, and the next is refused (Reject, and TrySubmit under Block)
// or waits for room (Block) until a task ends.
func TestOnceEveryWorkerIsBusyTasksNeedRoom(t *testing.T) {
	for _, overflow := range []Overflow{Block, Reject} {
		for _, call := range roomCalls {
			t.Run(overflow.String()+"/"+call.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					p := New(2, WithMaxWaiting(1, overflow))
					defer p.Stop()
					g := newGate()
					defer g.release()
					p.Submit(g.task())
					p.Submit(g.task())
					synctest.Wait()
					ran := make(chan struct{}, 2)
					require.False(t, call.submit(p, func() { ran <- struct{}{} }), "the first waiting task has room")
					synctest.Wait()
					require.Equal(t, 1, p.Status().Waiting)
					if overflow == Reject || call.name == "TrySubmit" {
						assert.True(t, call.submit(p, func() { t.Error("a refused task ran") }), "a full queue refuses")
						assert.Equal(t, uint64(1), p.Status().Rejected)
					} else {
						returned := make(chan bool)
						go func() { returned <- call.submit(p, func() { ran <- struct{}{} }) }()
						synctest.Wait()
						select {
						case <-returned:
							t.Fatal("a submitter got room from a full queue")
						default:
						}
						g.open()
						assert.False(t, <-returned, "a waiting submitter gets room as a task ends")
					}
					g.release()
					p.StopWait()
					requireAccounted(t, p)
				})
			})
		}
	}
}

// watchWaiting reads Status().Waiting and WaitingQueueSize in a loop on
// its own goroutine until the returned func is called, which returns the
// last count above bound it saw, or 0.
func watchWaiting(p *WorkerPool, bound int) (stop func() int64) {
	var over atomic.Int64
	done := make(chan struct{})
	var observer sync.WaitGroup
	observer.Go(func() {
		for !isClosed(done) {
			if w := p.Status().Waiting; w > bound {
				over.Store(int64(w))
			}
			if w := p.WaitingQueueSize(); w > bound {
				over.Store(int64(w))
			}
		}
	})
	return func() int64 {
		close(done)
		observer.Wait()
		return over.Load()
	}
}

// Status and WaitingQueueSize never show more waiting tasks than the bound,
// at any moment, with plain tasks and tasks with a handle (whose count
// changes outside the dispatcher) leaving the queue as new ones take their
// room. Before the fix, a job gave back its room before it left Waiting,
// and a plain task's count went down only when the dispatcher next
// published it. Under DropOldest, which takes no room, only plain tasks
// are exact (see TestDropOldestNeverShowsMorePlainTasksWaitingThanTheBound).
func TestStatusNeverShowsMoreWaitingThanTheBound(t *testing.T) {
	const bound, perSubmitter = 2, 3000
	for _, overflow := range []Overflow{Block, Reject} {
		t.Run(overflow.String(), func(t *testing.T) {
			p := New(2, WithMaxWaiting(bound, overflow), WithIdleTimeout(-1))
			over := watchWaiting(p, bound)
			var submitters sync.WaitGroup
			submitters.Go(func() {
				for range perSubmitter {
					p.Submit(func() {})
				}
			})
			submitters.Go(func() {
				for range perSubmitter {
					p.Go(context.Background(), func(context.Context) error { return nil })
				}
			})
			submitters.Go(func() {
				for range perSubmitter {
					Call(context.Background(), p, func(context.Context) (int, error) { return 1, nil })
				}
			})
			submitters.Wait()
			worst := over()
			p.StopWait()
			assert.Zero(t, worst, "Status showed more waiting tasks than the bound")
			requireAccounted(t, p)
		})
	}
}

// Under DropOldest, plain tasks from several submitters never show more
// waiting than the bound in Status.
func TestDropOldestNeverShowsMorePlainTasksWaitingThanTheBound(t *testing.T) {
	const bound, perSubmitter = 2, 5000
	p := New(2, WithMaxWaiting(bound, DropOldest), WithIdleTimeout(-1))
	over := watchWaiting(p, bound)
	var submitters sync.WaitGroup
	for range 3 {
		submitters.Go(func() {
			for range perSubmitter {
				p.Submit(func() {})
			}
		})
	}
	submitters.Wait()
	worst := over()
	p.StopWait()
	assert.Zero(t, worst, "Status showed more waiting tasks than the bound")
	requireAccounted(t, p)
}

// requireFullRoom checks that p, whose workers are all free, still has its
// whole bound of room: with every worker busy, exactly bound tasks can wait.
func requireFullRoom(t *testing.T, p *WorkerPool, bound int) {
	t.Helper()
	g := newGate()
	defer g.release()
	var started sync.WaitGroup
	started.Add(p.Size())
	for range p.Size() {
		require.NoError(t, p.Do(func() { started.Done(); g.wait() }))
	}
	started.Wait()
	for i := range bound {
		require.True(t, p.TrySubmit(func() {}), "place %d of %d is lost", i+1, bound)
	}
	require.False(t, p.TrySubmit(func() {}), "more room than the bound")
}

// Tasks with a handle that start at once, or leave the queue for a worker,
// give back their room exactly once, however fast they finish and their
// carrier is reused by the next call: the worker gives it back as it starts
// the task, never the dispatcher, which must not touch a task in a worker's
// hands. Before the fix the dispatcher gave it back after the hand-off, and
// a DoWait that reused the finished call's carrier could clear the mark
// first: the place was lost for good, and Block submitters waited forever.
func TestTasksWithAHandleGiveBackTheirRoomOnceWhateverTheirSpeed(t *testing.T) {
	const bound, rounds = 2, 20
	for range rounds {
		p := New(2, WithMaxWaiting(bound, Block), WithIdleTimeout(-1))
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 200 {
					require.NoError(t, p.DoWait(func() {}))
					_ = p.Go(context.Background(), func(context.Context) error { return nil }).Wait()
				}
			})
		}
		wg.Wait()
		requireFullRoom(t, p, bound)
		p.StopWait()
		requireAccounted(t, p)
	}
}
