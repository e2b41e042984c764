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

// Status and WaitingQueueSize never show more waiting tasks than the bound,
// at any moment, with plain tasks and jobs (whose count changes outside the
// dispatcher) leaving the queue as new ones take their room. Before the
// fix, a job handed to a worker still counted as waiting after its room
// was given back, and a plain task's count went down only when the
// dispatcher next published it.
func TestStatusNeverShowsMoreWaitingThanTheBound(t *testing.T) {
	const bound, perSubmitter = 2, 3000
	for _, overflow := range []Overflow{Block, DropOldest} {
		t.Run(overflow.String(), func(t *testing.T) {
			p := New(2, WithMaxWaiting(bound, overflow), WithIdleTimeout(-1))
			var over atomic.Int64
			stop := make(chan struct{})
			var observer sync.WaitGroup
			observer.Go(func() {
				for !isClosed(stop) {
					if w := p.Status().Waiting; w > bound {
						over.Store(int64(w))
					}
					if w := p.WaitingQueueSize(); w > bound {
						over.Store(int64(w))
					}
				}
			})
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
			close(stop)
			observer.Wait()
			p.StopWait()
			assert.Zero(t, over.Load(), "Status showed more waiting tasks than the bound")
			requireAccounted(t, p)
		})
	}
}
