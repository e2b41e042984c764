package workerpool

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests for the bounded queue (WithMaxWaiting) and the room it counts,
// against the contract in doc.go ("Bounded queue and back-pressure",
// "Status"): how Reject and DropOldest meet a full queue, when a task needs
// room at all and when it gives it back, what Status shows, what holds a
// place under DropOldest, the tasks a group holds back, a queue with no
// room, and bad input. A full queue means: the bound is reached and every
// worker is busy. Submitters that wait for room under Block have their own
// file, waitforroom_test.go, and dead letters deadletter_test.go. Every
// scenario that blocks or depends on time runs in a synctest bubble with
// exact fake-clock values.

// --- Reject and DropOldest: each call meets the policy with a full queue ---

// boundCalls are the calls of the table in doc.go (waitforroom_test.go
// meets Block with them too).
var boundCalls = []boundCall{submitCall, doCall, doWaitCall, doContextCall, tryDoCall, submitWaitCall, goCall, callCall, groupGoCall, doBatchCall}

// requireAccepted checks that the call pc has returned, accepted: no error,
// no panic, and, for a call with a handle, a handle that reports success.
func requireAccepted(t *testing.T, pc *pendingCall, name string) {
	t.Helper()
	require.True(t, pc.returned(), "%s returned", name)
	assert.NoError(t, pc.res.err, name)
	assert.False(t, pc.res.panicked, "%s panicked", name)
	if pc.res.outcome != nil {
		err, ok := returnsAtOnce(pc.res.outcome)
		require.True(t, ok, "the handle's Wait returned")
		assert.NoError(t, err, "the handle's outcome")
	}
}

// Reject: every call is refused at once, in the way the table says, each
// refused task counts in Rejected, and only Submit, whose caller cannot
// learn it, gives the task to the dead-letter handler (the very func, with
// an error wrapping ErrQueueFull).
func TestUnderRejectEveryCallIsRefusedWithErrQueueFullAndOnlySubmitMakesADeadLetter(t *testing.T) {
	for _, c := range boundCalls {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fq := newFullQueue(t, Reject)
				p := fq.p
				defer p.Stop()
				defer fq.release()
				var ran atomic.Int64
				pc := startCall(p, c, context.Background(), func() { ran.Add(1) }, time.Now())
				synctest.Wait()
				require.True(t, pc.returned(), "%s on a full queue returned at once", c.name)
				switch c.name {
				case "Submit":
					assert.NoError(t, pc.res.err, "Submit refused under Reject does not panic")
				case "SubmitWait":
					assert.True(t, pc.res.panicked, "SubmitWait refused under Reject panics")
					assert.ErrorIs(t, pc.res.err, ErrQueueFull, "SubmitWait's panic")
				case "Group.Go":
					err, ok := returnsAtOnce(pc.res.outcome)
					require.True(t, ok, "Group.Wait returned at once: the group has nothing in the pool")
					assert.ErrorIs(t, err, ErrQueueFull, "the group's error")
				default:
					assert.False(t, pc.res.panicked, "%s panicked", c.name)
					assert.ErrorIs(t, pc.res.err, ErrQueueFull, "%s on a full queue", c.name)
				}
				letters := fq.box.got()
				if c.name == "Submit" {
					require.Len(t, letters, 1, "dead letters: the refused Submit")
					assert.ErrorIs(t, letters[0].reason, ErrQueueFull, "the letter's reason")
				} else {
					assert.Empty(t, letters, "dead letters: %s's caller has the error", c.name)
				}
				s := p.Status()
				assert.Equal(t, uint64(c.tasks), s.Rejected, "rejected")
				assert.Equal(t, fq.submittedAtStart, s.Submitted, "submitted: refused tasks are not accepted")
				assert.Equal(t, 2, s.Waiting, "waiting")

				fq.release()
				p.StopWait()
				assert.Zero(t, ran.Load(), "the pool ran a refused task")
				s = requireStoppedClean(t, p)
				assert.Equal(t, fq.submittedAtStart, s.Completed, "completed")
				assert.Equal(t, uint64(c.tasks), s.Rejected, "rejected")
				if c.name == "Submit" {
					letters[0].task()
					assert.Equal(t, int64(1), ran.Load(), "the letter carries the very func submitted")
				}
			})
		})
	}
}

// DropOldest: every call is accepted at once (DoWait and SubmitWait then
// wait for their task to run), and for each of its tasks the oldest waiting
// task is dropped: counted in Dropped and, as a plain task, given to the
// dead-letter handler with errDropped, oldest first.
func TestUnderDropOldestEveryCallIsAcceptedAndTheOldestWaitingTasksAreDropped(t *testing.T) {
	for _, c := range boundCalls {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fq := newFullQueue(t, DropOldest)
				p := fq.p
				defer p.Stop()
				defer fq.release()
				var ran atomic.Int64
				pc := startCall(p, c, context.Background(), func() { ran.Add(1) }, time.Now())
				synctest.Wait()
				if c.waits {
					assert.False(t, pc.returned(), "%s returned before its task ran", c.name)
				} else {
					require.True(t, pc.returned(), "%s on a full queue returned at once", c.name)
					assert.NoError(t, pc.res.err, "%s accepted (a handle not settled)", c.name)
					assert.False(t, pc.res.panicked, "%s panicked", c.name)
				}
				s := p.Status()
				assert.Equal(t, 2, s.Waiting, "waiting: still the bound")
				assert.Equal(t, uint64(c.tasks), s.Dropped, "dropped: one per new task")
				assert.Zero(t, s.Rejected, "rejected")
				assert.Equal(t, fq.submittedAtStart+uint64(c.tasks), s.Submitted, "submitted")
				letters := fq.box.got()
				require.Len(t, letters, c.tasks, "dead letters: the dropped fillers")
				for i, l := range letters {
					assert.ErrorIs(t, l.reason, errDropped, "letter %d's reason", i)
				}

				fq.release()
				synctest.Wait()
				requireAccepted(t, pc, c.name)
				assert.Equal(t, int64(c.tasks), ran.Load(), "the new tasks ran")
				p.StopWait()
				s = requireStoppedClean(t, p)
				assert.Equal(t, uint64(c.tasks), s.Dropped, "dropped")
				assert.Equal(t, fq.submittedAtStart, s.Completed, "completed: the running tasks, the fillers kept and the new tasks")
				// The fillers that ran are the newest; the letters carry the
				// dropped ones, oldest first, as the very funcs submitted.
				ranFillers := fq.fillers.order()
				assert.Equal(t, append([]int(nil), seq(2)[c.tasks:]...), ranFillers, "fillers that ran: the newest")
				for _, l := range letters {
					l.task()
				}
				assert.Equal(t, seq(c.tasks), fq.fillers.order()[len(ranFillers):], "the dropped fillers, in the order given up")
			})
		})
	}
}

// DropOldest drops the oldest waiting task whatever call submitted it: a
// task someone waits for reports errDropped to its waiter (DoWait returns
// it, a Task or Future reports it, the group's Wait reports it, SubmitWait
// panics with it, not with an error wrapping ErrStopped, as the pool did
// not stop) and never reaches the dead-letter handler.
func TestUnderDropOldestADroppedTaskWithAWaiterReportsErrDropped(t *testing.T) {
	for _, c := range []boundCall{doWaitCall, submitWaitCall, goCall, callCall, groupGoCall} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				box := new(letterBox)
				p := New(1, WithMaxWaiting(1, DropOldest), WithIdleTimeout(-1), WithHooks(Hooks{DeadLetter: box.handle}))
				defer p.Stop()
				running := newGate()
				defer running.release()
				p.Submit(running.task())
				synctest.Wait()
				var droppedRan, newRan atomic.Int64
				oldest := startCall(p, c, context.Background(), func() { droppedRan.Add(1) }, time.Now())
				synctest.Wait()
				require.Equal(t, 1, p.Status().Waiting, "waiting: the queue is full")
				p.Submit(func() { newRan.Add(1) }) // drops the oldest
				synctest.Wait()
				require.True(t, oldest.returned(), "%s of the dropped task returned", c.name)
				res := oldest.res
				switch {
				case c.name == "SubmitWait":
					assert.True(t, res.panicked, "SubmitWait of a dropped task panics")
					assert.ErrorIs(t, res.err, errDropped, "SubmitWait's panic for a dropped task")
					assert.NotErrorIs(t, res.err, ErrStopped, "SubmitWait's panic: the pool did not stop")
				case res.outcome != nil:
					err, ok := returnsAtOnce(res.outcome)
					require.True(t, ok, "the dropped task's Wait returned")
					assert.ErrorIs(t, err, errDropped, "%s of the dropped task", c.name)
				default:
					assert.ErrorIs(t, res.err, errDropped, "%s of the dropped task", c.name)
				}
				s := p.Status()
				assert.Equal(t, uint64(1), s.Dropped, "dropped")
				assert.Equal(t, 1, s.Waiting, "waiting: the new task")
				running.open()
				p.StopWait()
				assert.Zero(t, droppedRan.Load(), "the dropped task ran")
				assert.Equal(t, int64(1), newRan.Load(), "the new task ran")
				assert.Empty(t, box.got(), "dead letters: the dropped task has a waiter")
				s = requireStoppedClean(t, p)
				assert.Equal(t, uint64(1), s.Dropped, "dropped")
			})
		})
	}
}

// A task dropped for a newer one (DropOldest) reports an error that wraps
// ErrQueueFull, and says it was dropped: a handle's Wait, DoWait and the
// dead-letter handler alike.
func TestADroppedTaskReportsAnErrorWrappingErrQueueFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var letters []error
		p := New(1, WithMaxWaiting(1, DropOldest), WithHooks(Hooks{DeadLetter: func(_ func(), reason error) { letters = append(letters, reason) }}))
		g := blockOneWorker(t, p)
		task := p.Go(t.Context(), noopFn)
		waited := make(chan error, 1)
		go func() { waited <- p.DoWait(func() {}) }() // drops task
		synctest.Wait()
		p.Submit(func() {}) // drops the DoWait's task
		synctest.Wait()
		require.NoError(t, p.Do(func() {})) // drops the Submit's task
		g.open()
		p.StopWait()
		for what, err := range map[string]error{"Task.Wait": task.Wait(), "DoWait": <-waited, "dead letter": letters[0]} {
			assert.ErrorIs(t, err, ErrQueueFull, what)
			assert.Contains(t, err.Error(), "dropped", what)
		}
	})
}

// Rejected counts every task refused because the queue was full, a
// TryDo that returned false included, and nothing refused because the
// pool stopped or the caller's context ended.
func TestRejectedCountsOnlyRefusalsBecauseTheQueueWasFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fq := newFullQueue(t, Block)
		p := fq.p
		defer p.Stop()
		defer fq.release()
		assert.False(t, tryDo(p, func() {}), "TryDo on a full queue")
		assert.False(t, tryDo(p, func() {}), "TryDo on a full queue")
		require.Equal(t, uint64(2), p.Status().Rejected, "rejected: two TryDo calls that returned false")

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		dc := startCall(p, doContextCall, ctx, func() {}, time.Now())
		time.Sleep(time.Second)
		synctest.Wait()
		require.True(t, dc.returned(), "DoContext returned when its ctx ended")
		assert.ErrorIs(t, dc.res.err, context.DeadlineExceeded, "DoContext whose ctx ended while it waited")
		gc := startCall(p, goCall, ctx, func() {}, time.Now())
		synctest.Wait()
		require.True(t, gc.returned(), "Go with a done ctx on a full queue returned")
		assert.ErrorIs(t, gc.res.err, context.DeadlineExceeded, "Go with a done ctx on a full queue")
		assert.Equal(t, uint64(2), p.Status().Rejected, "rejected: an ended ctx is not a full queue")

		stopped := make(chan struct{})
		go func() { p.Stop(); close(stopped) }()
		synctest.Wait()
		assert.ErrorIs(t, p.Do(func() {}), ErrStopped, "Do while stopping")
		assert.False(t, tryDo(p, func() {}), "TryDo while stopping")
		assert.ErrorIs(t, p.DoBatch([]func(){func() {}}), ErrStopped, "DoBatch while stopping")
		assert.ErrorIs(t, p.Go(context.Background(), noopFn).Wait(), ErrStopped, "Go while stopping")
		fq.release()
		<-stopped
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(2), s.Rejected, "rejected: a stopped pool is not a full queue")
		assert.Equal(t, fq.submittedAtStart, s.Submitted, "submitted")
	})
}

// --- when a task needs room ---

// A task that can start on a free worker at once never needs room; once
// every worker is busy, a task needs a place in the queue.

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
	{"TryDo", func(p *WorkerPool, task func()) bool { return !tryDo(p, task) }},
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
// many rounds: a fast submitter that finds the place still taken by the
// task before it, which is on its way to a free worker, must not be
// refused for it.
func TestTaskThatCanStartOnAFreeWorkerNeverNeedsRoom(t *testing.T) {
	const workers, rounds = 8, 100
	for _, overflow := range []Overflow{Block, Reject} {
		for _, call := range roomCalls {
			t.Run(overflow.string()+"/"+call.name, func(t *testing.T) {
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
// one place, and the next is refused (Reject, and TryDo under Block)
// or waits for room (Block) until a task ends.
func TestOnceEveryWorkerIsBusyTasksNeedRoom(t *testing.T) {
	for _, overflow := range []Overflow{Block, Reject} {
		for _, call := range roomCalls {
			t.Run(overflow.string()+"/"+call.name, func(t *testing.T) {
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
					if overflow == Reject || call.name == "TryDo" {
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
					requireStoppedClean(t, p)
				})
			})
		}
	}
}

// Under DropOldest, a task that can start on a free worker at once needs
// no place either, also while scheduled tasks, which are never dropped,
// fill the bound: it starts, whatever the call. With the worker busy, the
// same call is refused with ErrQueueFull, as nothing can be dropped.
func TestUnderDropOldestATaskThatCanStartAtOnceNeedsNoPlace(t *testing.T) {
	for _, call := range boundCalls {
		if call.name == "DoBatch" {
			continue // a batch is one admission and needs room for all its tasks (see DoBatch)
		}
		t.Run(call.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				letters := new(letterBox)
				p := New(1, WithMaxWaiting(1, DropOldest), WithHooks(Hooks{DeadLetter: letters.handle}))
				defer p.Stop()
				ctx, cancel := context.WithCancel(t.Context())
				p.Go(ctx, noopFn, TaskOption{Delay: time.Hour})
				synctest.Wait()
				require.Equal(t, 1, p.Status().Scheduled, "the bound is full of a scheduled task")
				ran := make(chan struct{}, 2)
				free := startCall(p, call, t.Context(), func() { ran <- struct{}{} }, time.Now())
				synctest.Wait()
				requireAccepted(t, free, call.name+" on a free worker")
				require.Len(t, ran, 1, "the task ran")

				running := blockOneWorker(t, p)
				defer running.release()
				pc := startCall(p, call, t.Context(), func() { ran <- struct{}{} }, time.Now())
				synctest.Wait()
				require.True(t, pc.returned(), "%s returned", call.name)
				if call.name == "Submit" {
					assert.Len(t, letters.got(), 1, "Submit's refused task is a dead letter")
				} else {
					assert.True(t, errors.Is(pc.res.err, ErrQueueFull) || errors.Is(pc.res.err, errTryFalse) || pc.res.outcome != nil && errors.Is(pc.res.outcome(), ErrQueueFull), "%s refused with ErrQueueFull: %v", call.name, pc.res.err)
				}
				assert.Equal(t, uint64(1), p.Status().Rejected, "rejected")
				running.open()
				cancel() // the scheduled task
				p.StopWait()
				assert.Len(t, ran, 1, "the refused task ran")
			})
		})
	}
}

// --- room is held only while a task waits in the queue ---

// A task handed to a free worker never waits in the queue, so it holds no
// room, also in the moment before its worker starts it: a new worker that
// is starting, or a ready one not scheduled yet. Each case has one worker
// busy and stalls the worker that took a job, before it starts it: the next
// task takes the queue's one place, and only the one after it is refused.
func TestATaskOnItsWayToAWorkerHoldsNoRoom(t *testing.T) {
	type give func(p *WorkerPool, ctx context.Context) (wait func() error)
	goWith := func(opts ...TaskOption) give {
		return func(p *WorkerPool, ctx context.Context) func() error { return p.Go(ctx, noopFn, opts...).Wait }
	}
	for _, tc := range []struct {
		name    string
		warm    bool // the worker that takes the job exists and waits; else it starts for it
		options []Option
		handed  give // the job that its worker holds before it starts it
		next    give // the tasks that follow it
	}{
		{"Go, a worker that starts", false, nil, goWith(), goWith()},
		{"Go, a ready worker", true, nil, goWith(), goWith()},
		{"Go with a label", true, nil, goWith(TaskOption{Label: "handed"}), goWith()},
		{"a key under its limit", false, []Option{WithKeys(1, nil)}, goWith(TaskOption{Key: "k"}), goWith(TaskOption{Key: "k"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(2, append([]Option{WithMaxWaiting(1, Reject)}, tc.options...)...)
				defer p.Stop()
				if tc.warm {
					warm := newGate()
					p.Submit(warm.wait)
					p.Submit(warm.wait)
					synctest.Wait()
					warm.open()
					synctest.Wait()
					require.Equal(t, 2, p.Status().Workers, "workers ready")
				}
				running := blockOneWorker(t, p)
				defer running.release()
				stalling := newFrameStallingContext(t.Context(), "(*job).work(") // stalls the worker that took the job, before it starts it
				defer stalling.resume()
				handed := tc.handed(p, stalling)
				<-stalling.stalled
				synctest.Wait()

				queued := tc.next(p, t.Context())
				synctest.Wait()
				s := p.Status()
				assert.Equal(t, 1, s.Waiting, "waiting: the next task took the one place")
				assert.Zero(t, s.Rejected, "rejected")
				refused := tc.next(p, t.Context())
				assert.ErrorIs(t, refused(), ErrQueueFull, "the task after it")
				stalling.resume()
				running.open()
				assert.NoError(t, handed(), "the handed job")
				assert.NoError(t, queued(), "the queued task")
				p.StopWait()
				requireStoppedClean(t, p)
			})
		})
	}
}

// The same with real scheduling and tasks without a handle: a fresh pool
// of 2 with one place, four tasks at once, the first two holding their
// workers: the third takes the place and only the fourth is refused. And
// on warm workers, a task with a label that starts on the second worker
// leaves the place to the next. Were the tasks on their way to their
// workers to hold the place, the third would be refused in most rounds.
func TestTasksOnTheirWayToWorkersLeaveThePlaceToTheNext(t *testing.T) {
	const rounds = 200
	for _, warm := range []bool{false, true} {
		t.Run(fmt.Sprintf("warm=%t", warm), func(t *testing.T) {
			refusedTooSoon, fourthAccepted := 0, 0
			ctx := context.Background()
			for range rounds {
				p := New(2, WithMaxWaiting(1, Reject), WithIdleTimeout(-1))
				if warm {
					var started sync.WaitGroup
					started.Add(2)
					warm := newGate()
					p.Submit(func() { started.Done(); warm.wait() })
					p.Submit(func() { started.Done(); warm.wait() })
					started.Wait()
					warm.open()
					require.NoError(t, p.WaitIdle(ctx), "both workers ready")
				}
				g := newGate()
				require.NoError(t, p.DoContext(ctx, g.wait, TaskOption{Label: "a"}))
				require.NoError(t, p.DoContext(ctx, g.wait, TaskOption{Label: "b"}))
				third := p.DoContext(ctx, g.wait, TaskOption{Label: "c"})
				fourth := p.DoContext(ctx, g.wait, TaskOption{Label: "d"})
				g.open()
				p.StopWait()
				if third != nil {
					require.ErrorIs(t, third, ErrQueueFull, "the third task's error")
					refusedTooSoon++
				} else if fourth == nil {
					fourthAccepted++
				}
			}
			assert.Zero(t, refusedTooSoon, "rounds whose third task was refused")
			assert.Zero(t, fourthAccepted, "rounds whose fourth task was accepted beside the third")
		})
	}
}

// A program that submits one task after another, each after the last
// one's Wait returned, never meets a full pool: when Wait (or DoWait,
// SubmitWait, a Future's Wait) returns, the worker is free, and so are
// the task's weight and its key's slot. A queue with no room makes every
// submit need a free worker. Real scheduling, many rounds: the worker
// counts itself free before its task's waiter is told, not after.
func TestAWaitedTaskLeavesItsWorkerFreeForTheNext(t *testing.T) {
	const rounds = 3000
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		size    int
		options []Option
		submit  func(p *WorkerPool) error // submits one task and waits for it
	}{
		{"Go", 1, nil, func(p *WorkerPool) error { return p.Go(ctx, noopFn).Wait() }},
		{"Call", 1, nil, func(p *WorkerPool) error {
			_, err := GoResult(ctx, p, func(context.Context) (int, error) { return 1, nil }).Wait()
			return err
		}},
		{"DoWait", 1, nil, func(p *WorkerPool) error { return p.DoWait(func() {}) }},
		{"SubmitWait", 1, nil, func(p *WorkerPool) error {
			err, _ := recovered(func() { p.SubmitWait(func() {}) })
			return err
		}},
		{"TaskOption{Weight: 2}", 2, nil, func(p *WorkerPool) error { return p.Go(ctx, noopFn, TaskOption{Weight: 2}).Wait() }},
		{"a key under WithKeys(1, nil)", 2, []Option{WithKeys(1, nil)}, func(p *WorkerPool) error {
			return p.Go(ctx, noopFn, TaskOption{Key: "k"}).Wait()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(tc.size, append([]Option{WithMaxWaiting(0, Reject), WithIdleTimeout(-1)}, tc.options...)...)
			defer p.Stop()
			refused := 0
			for range rounds {
				if err := tc.submit(p); err != nil {
					require.ErrorIs(t, err, ErrQueueFull, "the only error")
					refused++
				}
			}
			assert.Zero(t, refused, "tasks refused after the last one's Wait returned")
		})
	}
}

// A worker counts itself free before its last task's waiter learns the
// outcome, and a moment passes before it is back in its receive: here it
// is held there by the stop function of the watch that the Task's Done set
// on its caller's ctx (see stopStallingContext), which runs after Done is
// closed. A task submitted then can start at once on that worker, so it
// never needs room: it does not hold the queue's one place (under Reject,
// the next TryDo is accepted), nor wait in the queue where the next
// task drops it (DropOldest).
func TestATaskSubmittedOnceTheLastOneIsDoneStartsOnItsWorkerOnItsWay(t *testing.T) {
	for _, policy := range []Overflow{Reject, DropOldest} {
		t.Run(policy.string(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1, WithMaxWaiting(1, policy), WithIdleTimeout(-1))
				defer p.Stop()
				ctx := newStopStallingContext()
				defer ctx.resume()
				running := newGate()
				defer running.release()
				last := p.Go(ctx, fnOf(running.wait))
				done := last.Done() // watches ctx while the task runs
				running.open()
				<-done
				<-ctx.stalled // its worker counted itself free, and is held on its way to its receive

				next := newGate()
				defer next.release()
				// The Go may wait for dispatch's answer (it found the
				// place not given back yet), which comes once dispatch
				// has handed its task to the held worker: so it is made
				// from a goroutine of its own, before the TryDo.
				startedc := make(chan *Task, 1)
				go func() { startedc <- p.Go(t.Context(), fnOf(next.wait)) }()
				synctest.Wait()
				tried := make(chan bool, 1)
				go func() { tried <- tryDo(p, func() {}) }()
				synctest.Wait()
				ctx.resume()
				started := <-startedc
				synctest.Wait()
				assert.Equal(t, 1, p.Status().Busy, "busy: the task submitted once the last one was done")
				assert.True(t, <-tried, "TryDo after it: the queue's one place was free")
				next.open()
				assert.NoError(t, last.Wait(), "the last task")
				assert.NoError(t, started.Wait(), "the task submitted once the last one was done")
				p.StopWait()
				s := requireStoppedClean(t, p)
				assert.Zero(t, s.Dropped+s.Rejected, "dropped and rejected")
			})
		})
	}
}

// The same for a task that its worker takes and skips, its context done:
// the worker counts itself free before the task's waiter learns that it
// was canceled. Here the ctx is done only as the worker sees it, and the
// worker is held, as it tells the outcome, by the stop function of the
// watch that the Task's Done set (see stopStallingContext). With no room
// in the queue, the next task needs a free worker, and gets that one.
func TestATaskSubmittedOnceASkippedOneIsDoneStartsOnItsWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(0, Reject), WithIdleTimeout(-1))
		defer p.Stop()
		ctx := &doneForItsWorkerContext{stopStallingContext: newStopStallingContext(), watched: make(chan struct{})}
		defer ctx.resume()
		skipped := p.Go(ctx, noopFn) // its worker, as it looks at ctx, waits until watched is closed
		done := skipped.Done()       // watches ctx
		close(ctx.watched)
		<-done
		<-ctx.stalled // the worker counted itself free, and is held on its way to its receive

		next := make(chan error, 1)
		go func() { next <- p.Go(context.Background(), noopFn).Wait() }()
		synctest.Wait()
		ctx.resume()
		assert.NoError(t, <-next, "the task submitted once the skipped one was done")
		assert.ErrorIs(t, skipped.Wait(), context.Canceled, "the skipped task")
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Zero(t, s.Rejected, "rejected")
		assert.Equal(t, uint64(1), s.Canceled, "canceled")
	})
}

// doneForItsWorkerContext is a stopStallingContext whose Err is
// context.Canceled as the worker that took its task looks at it, and nil
// to everyone else; the worker's first look waits until watched is
// closed, so that the Task watches the ctx before the worker tells it.
type doneForItsWorkerContext struct {
	*stopStallingContext
	watched chan struct{}
	once    sync.Once
}

func (c *doneForItsWorkerContext) Err() error {
	if strings.Contains(ownStack(), "(*job).work(") {
		c.once.Do(func() { <-c.watched })
		return context.Canceled
	}
	return nil
}

// stopStallingContext is a context that is never done, whose watches
// (context.AfterFunc) stall, once, the goroutine that stops one until
// resume: a Task's worker stops the watch its Done set on the caller's ctx
// as it tells the outcome, after it counted itself free.
type stopStallingContext struct {
	context.Context
	done             chan struct{} // never closed; not Background's nil, so that the Task watches the ctx
	once             sync.Once
	stalled, release chan struct{}
}

func newStopStallingContext() *stopStallingContext {
	return &stopStallingContext{Context: context.Background(), done: make(chan struct{}),
		stalled: make(chan struct{}), release: make(chan struct{})}
}

func (c *stopStallingContext) Done() <-chan struct{} { return c.done }

// AfterFunc makes context.AfterFunc(c, f) return a stop function that
// stalls its first caller; f never runs, as c is never done.
func (c *stopStallingContext) AfterFunc(func()) func() bool {
	return func() bool {
		c.once.Do(func() {
			close(c.stalled)
			<-c.release
		})
		return true
	}
}

func (c *stopStallingContext) resume() {
	if !isClosed(c.release) {
		close(c.release)
	}
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
		require.True(t, tryDo(p, func() {}), "place %d of %d is lost", i+1, bound)
	}
	require.False(t, tryDo(p, func() {}), "more room than the bound")
}

// Tasks with a handle that start at once, or leave the queue for a worker,
// give back their room exactly once, however fast they finish and their
// carrier is reused by the next call: the worker gives it back as it starts
// the task, never the dispatcher, which must not touch a task in a worker's
// hands. Were the dispatcher to give it back after the hand-off, a DoWait
// that reused the finished call's carrier could clear the mark first: the
// place would be lost for good, and Block submitters would wait forever.
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
		requireStoppedClean(t, p)
	}
}

// --- Status never shows more waiting tasks than the bound ---

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
// room: a job leaves Waiting before it gives back its room, and a plain
// task's count goes down as it leaves the queue, not when the dispatcher
// next publishes it. Under DropOldest, which takes no room, only plain
// tasks are exact (see
// TestDropOldestNeverShowsMorePlainTasksWaitingThanTheBound).
func TestStatusNeverShowsMoreWaitingThanTheBound(t *testing.T) {
	const bound, perSubmitter = 2, 3000
	for _, overflow := range []Overflow{Block, Reject} {
		t.Run(overflow.string(), func(t *testing.T) {
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
					GoResult(context.Background(), p, func(context.Context) (int, error) { return 1, nil })
				}
			})
			submitters.Wait()
			worst := over()
			p.StopWait()
			assert.Zero(t, worst, "Status showed more waiting tasks than the bound")
			requireStoppedClean(t, p)
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
	requireStoppedClean(t, p)
}

// --- DropOldest: what holds a place ---

// Under DropOldest, a delayed handle holds its place in the bound from the
// moment Go returns: a Submit that follows it in the same goroutine finds
// the bound filled by scheduled tasks and is refused, as under Reject,
// never queued past the bound.
func TestUnderDropOldestADelayedTaskHoldsItsPlaceOnceGoReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		letters := new(letterBox)
		p := New(1, WithMaxWaiting(1, DropOldest), WithHooks(Hooks{DeadLetter: letters.handle}))
		defer p.Stop()
		running := newGate()
		defer running.release()
		p.Submit(running.task())
		synctest.Wait()
		const rounds = 100
		for round := range rounds {
			ctx, cancel := context.WithCancel(t.Context())
			delayed := p.Go(ctx, noopFn, TaskOption{Delay: time.Hour})
			p.Submit(func() {})
			synctest.Wait()
			s := p.Status()
			require.Equal(t, 1, s.Scheduled, "round %d: scheduled", round)
			require.Zero(t, s.Waiting, "round %d: waiting past the bound", round)
			cancel()
			require.ErrorIs(t, delayed.Wait(), context.Canceled, "round %d: the delayed task", round) // it has left Scheduled
		}
		s := p.Status()
		assert.Equal(t, uint64(rounds), s.Rejected, "rejected: every Submit")
		assert.Len(t, letters.got(), rounds, "dead letters")
	})
}

// Under DropOldest, delayed tasks (plain and with handles) submitted from
// many goroutines while StopWait begins: the stop refuses a send before it
// takes a place among the scheduled tasks, so StopWait, whose drain waits
// for Scheduled to reach 0, returns, and the accounting adds up. (A refused
// send that gave its place back only after it woke dispatch would let a
// drain that looked in between wait forever.) The race is narrow: each
// round stops a pool while eight goroutines submit.
func TestUnderDropOldestDelayedSubmitsRacingStopWaitEndIt(t *testing.T) {
	rounds := 300
	if testing.Short() {
		rounds = 30
	}
	for round := range rounds {
		p := New(2, WithMaxWaiting(1<<20, DropOldest))
		var submitters sync.WaitGroup
		for i := range 8 {
			submitters.Go(func() {
				if i%2 == 0 {
					for p.DoContext(context.Background(), func() {}, TaskOption{Delay: time.Nanosecond}) == nil {
					}
					return
				}
				for !p.Stopped() {
					p.Go(context.Background(), noopFn, TaskOption{Delay: time.Nanosecond})
				}
			})
		}
		for p.Status().Submitted < 64 {
			runtime.Gosched()
		}
		p.StopWait()
		submitters.Wait()
		s := p.Status()
		require.Zero(t, s.Scheduled, "round %d", round)
		require.Equal(t, s.Submitted, s.Completed+s.Abandoned+s.Canceled+s.Dropped+s.Expired, "round %d: %+v", round, s)
	}
}

// Under DropOldest, a job a worker has taken from the queue but not started
// yet holds no place in it: a new task finds room beside the scheduled task
// (nothing is refused), or beside the task still queued (nothing is
// dropped).
func TestUnderDropOldestAJobHandedToAWorkerHoldsNoPlace(t *testing.T) {
	for _, beside := range []string{"scheduled", "queued"} {
		t.Run(beside, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				letters := new(letterBox)
				p := New(1, WithMaxWaiting(2, DropOldest), WithHooks(Hooks{DeadLetter: letters.handle}))
				defer p.Stop()
				running := newGate()
				defer running.release()
				p.Submit(running.task())
				if beside == "scheduled" {
					p.Go(t.Context(), noopFn, TaskOption{Delay: time.Hour})
				}
				stalling := newFrameStallingContext(t.Context(), "(*job).work(") // stalls the worker that took the job, before it starts it
				defer stalling.resume()
				handed := p.Go(stalling, noopFn)
				var queued *Task
				if beside == "queued" {
					queued = p.Go(t.Context(), noopFn)
				}
				synctest.Wait()
				require.Equal(t, 2, p.Status().Waiting+p.Status().Scheduled, "the bound is full")
				running.open() // the worker takes the stalling job, the queue's front
				<-stalling.stalled
				synctest.Wait()

				late := p.Go(t.Context(), noopFn)
				synctest.Wait()
				s := p.Status()
				assert.Zero(t, s.Rejected, "rejected")
				assert.Zero(t, s.Dropped, "dropped")
				assert.Empty(t, letters.got(), "dead letters")
				stalling.resume()
				assert.NoError(t, handed.Wait(), "the handed job")
				assert.NoError(t, late.Wait(), "the new task")
				if queued != nil {
					assert.NoError(t, queued.Wait(), "the queued job")
				}
			})
		})
	}
}

// Under DropOldest a job a worker has taken but not started holds no place
// (doc.go, Bounds), and neither does a canceled job that still sits in the
// queue. With one of each, the queue holds one live task and has room for
// a second: a new task must drop nothing. makeRoom must count neither dead
// entry: were its waiting count to count one and the queue's length the
// other, it would see a full queue and drop the live task.
func TestUnderDropOldestAHandedJobBesideACanceledOneDropsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		letters := new(letterBox)
		p := New(1, WithMaxWaiting(2, DropOldest), WithHooks(Hooks{DeadLetter: letters.handle}), WithIdleTimeout(-1))
		defer p.Stop()
		running := newGate()
		defer running.release()
		p.Submit(running.task())
		stalling := newFrameStallingContext(t.Context(), "(*job).work(") // stalls the worker that took the job, before it starts it
		defer stalling.resume()
		handed := p.Go(stalling, noopFn)
		var liveRan atomic.Bool
		p.Submit(func() { liveRan.Store(true) })
		synctest.Wait()
		require.Equal(t, 2, p.Status().Waiting, "waiting: the bound is full")
		running.open() // the worker takes the stalling job, the queue's front
		<-stalling.stalled
		synctest.Wait()

		ctx, cancel := context.WithCancel(t.Context())
		canceled := p.Go(ctx, noopFn) // behind the live task: the queue is not full
		synctest.Wait()
		cancel()
		require.ErrorIs(t, canceled.Wait(), context.Canceled, "the canceled job")
		synctest.Wait()

		p.Submit(func() {}) // one live task waits: there is room
		synctest.Wait()
		s := p.Status()
		assert.Zero(t, s.Dropped, "dropped")
		assert.Empty(t, letters.got(), "dead letters")
		stalling.resume()
		assert.NoError(t, handed.Wait(), "the handed job")
		p.StopWait()
		assert.True(t, liveRan.Load(), "the task that waited in the queue ran")
	})
}

// --- tasks a group holds back ---

// A task a Group holds back because of SetLimit joins the queue without
// room when the group's running task finishes, even with a full queue and a
// submitter waiting: it is neither refused nor made to wait, and the worker
// that finished the group's task goes on with the queue at once.
func TestHeldGroupTasksJoinAFullQueueWithoutRoomAndNeverBlockAWorker(t *testing.T) {
	for _, policy := range []Overflow{Block, Reject} {
		t.Run(policy.string(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1, WithMaxWaiting(1, policy), WithIdleTimeout(-1))
				defer p.Stop()
				gG, gF := newGate(), newGate()
				defer gG.release()
				defer gF.release()
				var r recorder
				grp := p.Group(context.Background())
				grp.SetLimit(1)
				grp.Go(fnOf(r.task(0, gG.wait))) // starts on the free worker
				grp.Go(fnOf(r.task(2, nil)))     // held by the group
				synctest.Wait()
				p.Submit(r.task(1, gF.wait)) // takes the one place: the queue is full
				synctest.Wait()
				require.Equal(t, 1, p.Status().Waiting, "waiting: the queue is full")
				var sub *pendingCall
				if policy == Block {
					sub = startCall(p, submitCall, context.Background(), r.task(3, nil), time.Now())
					synctest.Wait()
					require.False(t, sub.returned(), "Submit returned with a full queue")
				}
				gG.open() // the group's task ends: the held one joins the queue behind task 1
				synctest.Wait()
				assert.Equal(t, []int{0, 1}, r.order(), "the worker went on with the queue")
				want := 1 // the held task
				if sub != nil {
					assert.True(t, sub.returned(), "the waiting Submit took the place task 1 left")
					want = 2 // and the admitted one
				}
				assert.Equal(t, want, p.Status().Waiting, "waiting: the held task joined the queue without room")
				gF.open()
				err, ok := returnsAtOnce(grp.Wait)
				require.True(t, ok, "Group.Wait returned")
				assert.NoError(t, err, "the group's error: its held task was not refused")
				p.StopWait()
				if sub != nil {
					assert.Equal(t, seq(4), r.order(), "start order")
				} else {
					assert.Equal(t, seq(3), r.order(), "start order")
				}
				s := requireStoppedClean(t, p)
				assert.Zero(t, s.Rejected, "rejected")
			})
		})
	}
}

// A task a Group holds back joins the queue "without room" when released
// (doc.go), so under DropOldest it takes nobody's place: the oldest waiting
// task is not dropped for it, and the worker goes on with that task.
func TestUnderDropOldestAReleasedHeldGroupTaskDropsNoWaitingTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		box := new(letterBox)
		p := New(1, WithMaxWaiting(1, DropOldest), WithIdleTimeout(-1), WithHooks(Hooks{DeadLetter: box.handle}))
		defer p.Stop()
		gG, gF := newGate(), newGate()
		defer gG.release()
		defer gF.release()
		var r recorder
		grp := p.Group(context.Background())
		grp.SetLimit(1)
		grp.Go(fnOf(r.task(0, gG.wait))) // starts on the free worker
		grp.Go(fnOf(r.task(2, nil)))     // held by the group
		synctest.Wait()
		p.Submit(r.task(1, gF.wait)) // the queue is full
		synctest.Wait()
		require.Equal(t, 1, p.Status().Waiting, "waiting: the queue is full")
		gG.open() // the group's task ends: the held one joins the queue behind task 1
		synctest.Wait()
		assert.Equal(t, []int{0, 1}, r.order(), "the worker went on with task 1")
		s := p.Status()
		assert.Zero(t, s.Dropped, "dropped: the held task joined without room")
		assert.Equal(t, 1, s.Waiting, "waiting: the held task")
		assert.Empty(t, box.got(), "dead letters")
		gF.open()
		err, ok := returnsAtOnce(grp.Wait)
		require.True(t, ok, "Group.Wait returned")
		assert.NoError(t, err, "the group's error")
		p.StopWait()
		assert.Equal(t, seq(3), r.order(), "start order")
		requireStoppedClean(t, p)
	})
}

// --- a queue with no room: WithMaxWaiting(0, overflow) ---

// With a bound of 0 nothing waits: on a free worker every call runs its task
// at once, and while every worker is busy Reject refuses every call with
// ErrQueueFull (Submit's task goes to the dead-letter handler), and so does
// DropOldest, which has nothing to drop. Nothing is queued or dropped.
func TestZeroBoundRunsAtOnceOrRefusesUnderRejectAndDropOldest(t *testing.T) {
	for _, policy := range []Overflow{Reject, DropOldest} {
		t.Run(policy.string(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				letters := new(letterBox)
				p := New(1, WithMaxWaiting(0, policy), WithHooks(Hooks{DeadLetter: letters.handle}))
				defer p.Stop()
				var ran atomic.Int64
				task := func() { ran.Add(1) }
				require.NoError(t, p.Do(task), "Do on a free worker")
				synctest.Wait()
				require.True(t, tryDo(p, task), "TryDo on a free worker")
				synctest.Wait()
				require.NoError(t, p.Go(t.Context(), fnOf(task)).Wait(), "Go on a free worker")
				synctest.Wait() // the worker is back (Wait returns as the task ends, a moment before)
				require.NoError(t, p.DoWait(task), "DoWait on a free worker")
				synctest.Wait()

				running := newGate()
				defer running.release()
				require.NoError(t, p.Do(running.task()), "Do on a free worker")
				synctest.Wait()
				assert.ErrorIs(t, p.Do(task), ErrQueueFull, "Do")
				assert.ErrorIs(t, p.DoContext(t.Context(), task), ErrQueueFull, "DoContext")
				assert.ErrorIs(t, p.DoWait(task), ErrQueueFull, "DoWait")
				assert.False(t, tryDo(p, task), "TryDo")
				assert.ErrorIs(t, p.Go(t.Context(), fnOf(task)).Wait(), ErrQueueFull, "Go")
				assert.ErrorIs(t, p.DoBatch([]func(){task}), ErrQueueFull, "DoBatch")
				p.Submit(task)
				synctest.Wait()
				s := p.Status()
				assert.Zero(t, s.Waiting, "waiting")
				assert.Equal(t, uint64(7), s.Rejected, "rejected")
				assert.Zero(t, s.Dropped, "dropped")
				if got := letters.got(); assert.Len(t, got, 1, "dead letters: Submit's") {
					assert.ErrorIs(t, got[0].reason, ErrQueueFull, "the letter's reason")
				}
				running.open()
				p.StopWait()
				assert.Equal(t, int64(4), ran.Load(), "ran: the calls on a free worker")
				requireStoppedClean(t, p)
			})
		})
	}
}

// With a bound of 0 under Block, a call waits for a free worker and runs
// its task on it; TryDo still refuses at once, and DoContext stops
// waiting when its context ends.
func TestZeroBoundUnderBlockWaitsForAFreeWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(0, Block))
		defer p.Stop()
		running := newGate()
		defer running.release()
		p.Submit(running.task())
		synctest.Wait()

		var ran atomic.Int64
		task := func() { ran.Add(1) }
		done := make(chan error, 1)
		go func() { done <- p.Do(task) }()
		synctest.Wait()
		require.Empty(t, done, "Do waits for a free worker")
		assert.False(t, tryDo(p, task), "TryDo")
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		assert.ErrorIs(t, p.DoContext(ctx, task), context.DeadlineExceeded, "DoContext")
		assert.Zero(t, p.Status().Waiting, "waiting")
		synctest.Wait() // the dispatcher has seen DoContext leave, and waits again

		opened := time.Now()
		running.open()
		assert.NoError(t, <-done, "Do once the worker is free")
		assert.Zero(t, time.Since(opened), "Do waited past the moment the worker came free")
		p.StopWait()
		assert.Equal(t, int64(1), ran.Load(), "ran")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(2), s.Submitted, "submitted")
		assert.Equal(t, uint64(1), s.Rejected, "rejected: TryDo")
	})
}

// With a bound of 0 a delayed task, which must wait, is refused with
// ErrQueueFull at once under every policy; a heavy task runs if its slots
// are free at once, and otherwise meets the overflow as any task does.
func TestZeroBoundRefusesDelayedTasksAndRunsHeavyOnesOnFreeSlots(t *testing.T) {
	for _, policy := range []Overflow{Block, Reject, DropOldest} {
		t.Run(policy.string(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(2, WithMaxWaiting(0, policy))
				defer p.Stop()
				assert.ErrorIs(t, p.Go(t.Context(), noopFn, TaskOption{Delay: time.Second}).Wait(), ErrQueueFull, "Delay")
				assert.ErrorIs(t, p.Go(t.Context(), noopFn, TaskOption{Delay: time.Until(time.Now().Add(time.Second))}).Wait(), ErrQueueFull, "At")
				assert.NoError(t, p.Go(t.Context(), noopFn, TaskOption{Weight: 2}).Wait(), "TaskOption{Weight: 2} on two free slots")
				synctest.Wait() // its worker has given its slots back (Wait returns as the task ends, a moment before)

				running := newGate()
				defer running.release()
				p.Submit(running.task())
				synctest.Wait()
				require.Equal(t, 1, p.Status().Busy, "the gate task holds one slot")
				heavy := make(chan *Task, 1)
				go func() { heavy <- p.Go(t.Context(), noopFn, TaskOption{Weight: 2}) }() // under Block, Go waits
				synctest.Wait()
				if policy == Block {
					assert.Empty(t, heavy, "TaskOption{Weight: 2} waits for two free slots")
					running.open()
					assert.NoError(t, (<-heavy).Wait(), "TaskOption{Weight: 2} once two slots are free")
				} else {
					assert.ErrorIs(t, (<-heavy).Wait(), ErrQueueFull, "TaskOption{Weight: 2} with one slot free")
				}
			})
		})
	}
}

// With a bound of 0 under Block and a rate limit, a call waits for both a
// free worker and a token, and starts once it has them.
func TestZeroBoundUnderBlockWaitsForARateLimitToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(0, Block), WithRateLimit(1, 1))
		defer p.Stop()
		t0 := time.Now()
		require.NoError(t, p.DoWait(func() {}), "the first call takes the one token")
		start := make(chan time.Duration, 1)
		require.NoError(t, p.Do(func() { start <- time.Since(t0) }), "the second call waits for the next token")
		assert.Equal(t, time.Second, <-start, "started at the next token")
	})
}

// --- bad input ---

// WithMaxWaiting with n < 0 means no bound, whatever the overflow, an
// invalid one included: nothing waits for room, nothing is refused or
// dropped, and a large batch is accepted.
func TestMaxWaitingNegativeMeansNoBoundWhateverTheOverflow(t *testing.T) {
	for _, n := range []int{-1, math.MinInt} {
		for _, policy := range []Overflow{Block, Reject, DropOldest, Overflow(7)} {
			t.Run(fmt.Sprint(n, "/", policy), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var letters atomic.Int64
					p := New(1, WithMaxWaiting(n, policy), WithIdleTimeout(-1),
						WithHooks(Hooks{DeadLetter: func(func(), error) { letters.Add(1) }}))
					defer p.Stop()
					running := newGate()
					defer running.release()
					p.Submit(running.task())
					synctest.Wait()
					var ran atomic.Int64
					task := func() { ran.Add(1) }
					done := make(chan struct{})
					go func() {
						defer close(done)
						for range 20 {
							p.Submit(task)
							assert.NoError(t, p.Do(task))
							assert.True(t, tryDo(p, task))
							assert.NoError(t, p.DoContext(context.Background(), task))
							p.Go(context.Background(), fnOf(task))
						}
						batch := make([]func(), 100)
						for i := range batch {
							batch[i] = task
						}
						assert.NoError(t, p.DoBatch(batch))
					}()
					synctest.Wait()
					require.True(t, isClosed(done), "a submit waited with no bound")
					s := p.Status()
					assert.Equal(t, 200, s.Waiting, "waiting")
					assert.Zero(t, s.Rejected, "rejected")
					assert.Zero(t, s.Dropped, "dropped")
					running.open()
					p.StopWait()
					assert.Equal(t, int64(200), ran.Load(), "ran")
					assert.Zero(t, letters.Load(), "dead letters")
					requireStoppedClean(t, p)
				})
			})
		}
	}
}

// WithMaxWaiting(n, ...) documents "n < 1 means no bound"; any n >= 1 is a
// bound of n places, a bound of 2^32 or more included: it means
// math.MaxInt32, and must not overflow room's 32-bit free-places half into
// its parked-submitters half, which would make the pool believe submitters
// were parked (every TryDo refused on an idle pool, under Reject every
// Submit and Do, and under Block with 1<<32 a Submit behind a busy worker
// waiting forever on an empty queue).
func TestAHugeBoundIsStillABound(t *testing.T) {
	for _, n := range []int{1 << 32, math.MaxInt} {
		for _, overflow := range []Overflow{Block, Reject} {
			t.Run(overflow.string()+"/"+itoa(int64(n)), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var letters []error
					p := New(1, WithMaxWaiting(n, overflow), WithIdleTimeout(-1),
						WithHooks(Hooks{DeadLetter: func(_ func(), r error) { letters = append(letters, r) }}))
					ran := 0
					assert.True(t, tryDo(p, func() { ran++ }), "TryDo on an idle pool")
					synctest.Wait()
					assert.NoError(t, p.Do(func() { ran++ }), "Do on an idle pool")
					synctest.Wait()
					g := newGate()
					p.Submit(func() { ran++; g.wait() })
					synctest.Wait()
					assert.Equal(t, 1, p.Status().Busy, "busy")
					submitted := make(chan struct{})
					go func() {
						defer close(submitted)
						defer func() { _ = recover() }() // a stop releases a waiting Submit with a panic
						p.Submit(func() { ran++ })
					}()
					synctest.Wait()
					assert.True(t, isClosed(submitted), "Submit behind one busy worker, empty queue, bound %d: still waiting for room", n)
					g.open()
					synctest.Wait()
					p.Stop()
					<-submitted
					assert.Empty(t, letters, "dead letters")
					assert.Zero(t, p.Status().Rejected, "rejected")
					assert.Equal(t, 4, ran, "tasks run")
				})
			})
		}
	}
}

// An invalid Overflow with a bound panics in New (not in WithMaxWaiting)
// with a message naming it, and starts nothing (the bubble would see a
// leaked dispatcher).
func TestInvalidOverflowPanicsInNewWithAClearMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, o := range []Overflow{Overflow(7), Overflow(-1), DropOldest + 1} {
			opt := WithMaxWaiting(1, o) // making the option does not panic
			want := "workerpool: WithMaxWaiting with " + o.string()
			assert.PanicsWithValue(t, want, func() { New(1, opt) }, "New with %s", o)
		}
	})
}

func TestOverflowStringNamesThePolicy(t *testing.T) {
	for o, want := range map[Overflow]string{
		Block:        "Block",
		Reject:       "Reject",
		DropOldest:   "DropOldest",
		Overflow(7):  "Overflow(7)",
		Overflow(-1): "Overflow(-1)",
	} {
		assert.Equal(t, want, o.string())
	}
}

func TestDoContextWithNilContextPanicsWithAClearMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(1, Block))
		defer p.Stop()
		nilCtx := context.Context(nil)
		assert.PanicsWithValue(t, "workerpool: DoContext called with a nil context", func() {
			_ = p.DoContext(nilCtx, func() {})
		})
		p.Stop()
		s := requireStoppedClean(t, p)
		assert.Zero(t, s.Submitted, "submitted")
	})
}

// Nil tasks are ignored by every call that takes a func(), even with a full
// queue: none waits, is refused, drops a task, or counts anywhere.
func TestNilTasksAreIgnoredByEveryCallEvenWithAFullQueue(t *testing.T) {
	for _, policy := range []Overflow{Block, Reject, DropOldest} {
		t.Run(policy.string(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fq := newFullQueue(t, policy)
				p := fq.p
				defer p.Stop()
				defer fq.release()
				before := p.Status()
				done := make(chan struct{})
				go func() {
					defer close(done)
					p.Submit(nil)
					assert.NoError(t, p.Do(nil), "Do(nil)")
					assert.NoError(t, p.DoWait(nil), "DoWait(nil)")
					assert.NoError(t, p.DoContext(context.Background(), nil), "DoContext(nil)")
					assert.True(t, tryDo(p, nil), "TryDo(nil)")
					p.SubmitWait(nil)
					assert.NoError(t, p.DoBatch(nil), "DoBatch(nil)")
					assert.NoError(t, p.DoBatch([]func(){nil, nil}), "DoBatch of nils")
				}()
				synctest.Wait()
				require.True(t, isClosed(done), "a call with a nil task waited")
				after := p.Status()
				assert.Equal(t, before, after, "status")
				assert.Empty(t, fq.box.got(), "dead letters")
				fq.release()
				p.StopWait()
				requireStoppedClean(t, p)
			})
		})
	}
}
