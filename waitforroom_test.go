package workerpool

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests for submitters that wait for room under Block (WithMaxWaiting(n,
// Block)): every call but TryDo waits and is admitted as room frees;
// contexts that end the wait, strict arrival order, batches, queued tasks
// whose cancel frees room, stops that release every waiting submitter, and
// a dispatcher that still serves Pause, Resize, WaitIdle and idle
// retirement while they wait. The calls (boundCalls) and the room rules
// they share with Reject and DropOldest are in bound_test.go. Every
// scenario that blocks or depends on time runs in a synctest bubble with
// exact fake-clock values.

// --- every call waits for room and is admitted as room frees ---

// Block: every call but TryDo waits for room, and is admitted (its tasks
// queued, not run) as soon as room frees; TryDo returns false at once and
// counts in Rejected.
func TestUnderBlockEveryCallWaitsForRoomAndIsAdmittedWhenRoomFrees(t *testing.T) {
	for _, c := range boundCalls {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fq := newFullQueue(t, Block)
				p := fq.p
				defer p.Stop()
				defer fq.release()
				var ran atomic.Int64
				pc := startCall(p, c, context.Background(), func() { ran.Add(1) }, time.Now())
				synctest.Wait()
				if c.name == "TryDo" {
					require.True(t, pc.returned(), "TryDo on a full queue returned at once")
					assert.ErrorIs(t, pc.res.err, errTryFalse, "TryDo on a full queue")
					assert.Equal(t, uint64(1), p.Status().Rejected, "rejected: the TryDo that returned false")
					fq.release()
					p.StopWait()
					assert.Zero(t, ran.Load(), "the refused task ran")
					s := requireStoppedClean(t, p)
					assert.Equal(t, fq.submittedAtStart, s.Submitted, "submitted")
					assert.Empty(t, fq.box.got(), "dead letters")
					return
				}
				require.False(t, pc.returned(), "%s returned with a full queue", c.name)
				s := p.Status()
				assert.Equal(t, 2, s.Waiting, "waiting: nothing of the waiting call is queued")
				assert.Equal(t, fq.submittedAtStart, s.Submitted, "submitted: the waiting call's tasks are not accepted yet")
				assert.Zero(t, s.Rejected, "rejected")

				fq.running.open() // the fillers start: both places free, no worker free
				synctest.Wait()
				if c.waits {
					assert.False(t, pc.returned(), "%s returned before its task ran", c.name)
				} else {
					require.True(t, pc.returned(), "%s returned once room freed", c.name)
					assert.NoError(t, pc.res.err, "%s admitted", c.name)
					assert.False(t, pc.res.panicked, "%s panicked", c.name)
				}
				s = p.Status()
				assert.Equal(t, c.tasks, s.Waiting, "waiting: the admitted tasks are queued")
				assert.Equal(t, fq.submittedAtStart+uint64(c.tasks), s.Submitted, "submitted")
				assert.Zero(t, ran.Load(), "the admitted tasks ran while every worker was busy")

				fq.queued.open()
				synctest.Wait()
				requireAccepted(t, pc, c.name)
				assert.Equal(t, int64(c.tasks), ran.Load(), "the admitted tasks ran")
				p.StopWait()
				s = requireStoppedClean(t, p)
				assert.Equal(t, fq.submittedAtStart+uint64(c.tasks), s.Completed, "completed")
				assert.Zero(t, s.Rejected, "rejected")
				assert.Zero(t, s.Dropped, "dropped")
				assert.Empty(t, fq.box.got(), "dead letters")
			})
		})
	}
}

// --- contexts, arrival order, batches, TryDo ---

// Under Block, DoContext, Go, Call and Group.Go wait for room only until
// their context ends: at that very moment DoContext returns ctx's error, Go
// and Call return a handle already settled with it, and Group.Go returns
// with the group's error set to it; the task is never accepted, never runs
// and is not counted as rejected.
func TestUnderBlockCallsWithAContextStopWaitingForRoomWhenItEnds(t *testing.T) {
	for _, c := range []boundCall{doContextCall, goCall, callCall, groupGoCall} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fq := newFullQueue(t, Block)
				p := fq.p
				defer p.Stop()
				defer fq.release()
				t0 := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				defer cancel()
				var ran atomic.Int64
				pc := startCall(p, c, ctx, func() { ran.Add(1) }, t0)
				time.Sleep(3*time.Second - time.Nanosecond)
				synctest.Wait()
				require.False(t, pc.returned(), "%s returned before its ctx ended", c.name)
				time.Sleep(time.Nanosecond)
				synctest.Wait()
				require.True(t, pc.returned(), "%s returned when its ctx ended", c.name)
				assert.Equal(t, 3*time.Second, pc.at, "%s returned at the deadline", c.name)
				err := pc.res.err
				if c.name == "Group.Go" {
					var ok bool
					err, ok = returnsAtOnce(pc.res.outcome)
					require.True(t, ok, "Group.Wait returned at once")
				}
				assert.ErrorIs(t, err, context.DeadlineExceeded, "%s whose ctx ended while it waited for room", c.name)
				s := p.Status()
				assert.Zero(t, s.Rejected, "rejected")
				assert.Equal(t, fq.submittedAtStart, s.Submitted, "submitted: the task was never accepted")
				assert.Equal(t, 2, s.Waiting, "waiting")
				fq.release()
				p.StopWait()
				assert.Zero(t, ran.Load(), "the task ran")
				s = requireStoppedClean(t, p)
				assert.Zero(t, s.Canceled, "canceled: a task never accepted is not counted")
				assert.Empty(t, fq.box.got(), "dead letters")
			})
		})
	}
}

// Submitters that wait for room get it strictly in arrival order, whatever
// call they made: as room frees one place at a time, exactly the next
// submitter is admitted, and the tasks run in arrival order.
func TestUnderBlockWaitingSubmittersGetRoomStrictlyInArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := []boundCall{submitCall, goCall, doCall, callCall, doContextCall, groupGoCall, submitCall, doBatchOfOneCall}
		n := len(calls) + 2
		gates := make([]gate, n)
		for i := range gates {
			gates[i] = newGate()
		}
		p := New(1, WithMaxWaiting(1, Block), WithIdleTimeout(-1))
		defer p.Stop()
		defer func() {
			for _, g := range gates {
				g.release()
			}
		}()
		var r recorder
		p.Submit(r.task(0, gates[0].wait)) // running
		p.Submit(r.task(1, gates[1].wait)) // waiting: the queue is full
		synctest.Wait()
		pending := make([]*pendingCall, len(calls))
		for i, c := range calls {
			pending[i] = startCall(p, c, context.Background(), r.task(i+2, gates[i+2].wait), time.Now())
			synctest.Wait() // each arrives after the one before
		}
		for i, pc := range pending {
			require.False(t, pc.returned(), "submitter %d (%s) returned with a full queue", i, calls[i].name)
		}
		for k := range calls {
			gates[k].open() // task k ends, task k+1 starts: one place frees
			synctest.Wait()
			for i, pc := range pending {
				assert.Equal(t, i <= k, pc.returned(), "after %d places freed: submitter %d (%s) returned", k+1, i, calls[i].name)
			}
			assert.Equal(t, 1, p.Status().Waiting, "waiting after %d places freed", k+1)
		}
		for _, pc := range pending {
			assert.NoError(t, pc.res.err, "admitted")
		}
		for _, g := range gates {
			g.release()
		}
		p.StopWait()
		assert.Equal(t, seq(n), r.order(), "start order")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(n), s.Completed, "completed")
	})
}

// A batch waiting for room at the head of the submitters holds back every
// later submitter, even single tasks that would fit in the free place, and
// TryDo returns false then (counted as rejected) although a place is
// free: nobody overtakes a waiting submitter.
func TestUnderBlockAWaitingBatchHoldsBackSingleTasksThatWouldFitAndTryDoNeverOvertakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(2, Block), WithIdleTimeout(-1))
		defer p.Stop()
		g0, g1 := newGate(), newGate()
		defer g0.release()
		defer g1.release()
		var r recorder
		p.Submit(r.task(0, g0.wait)) // running
		p.Submit(r.task(1, g1.wait)) // waiting: one of two places free
		synctest.Wait()
		b := goDoBatch(p, []func(){r.task(2, nil), r.task(3, nil)})
		synctest.Wait()
		require.False(t, b.returned(), "a batch of 2 with one place free returned")
		var later []*pendingCall
		for i, c := range []boundCall{goCall, doContextCall, doCall} {
			later = append(later, startCall(p, c, context.Background(), r.task(4+i, nil), time.Now()))
			synctest.Wait() // each arrives after the one before
		}
		for i, pc := range later {
			assert.False(t, pc.returned(), "later submitter %d took the free place ahead of the batch", i)
		}
		assert.False(t, tryDo(p, func() { t.Error("a TryDo task overtook a waiting batch") }),
			"TryDo with a free place while a batch waits")
		s := p.Status()
		assert.Equal(t, 1, s.Waiting, "waiting: the free place stays free")
		assert.Equal(t, uint64(1), s.Rejected, "rejected: the TryDo")

		g0.open() // task 1 starts: two places free, the batch fits
		synctest.Wait()
		require.True(t, b.returned(), "the batch was admitted")
		assert.NoError(t, b.err, "DoBatch")
		for i, pc := range later {
			assert.False(t, pc.returned(), "later submitter %d: no place left after the batch", i)
		}
		g1.open()
		synctest.Wait()
		for i, pc := range later {
			require.True(t, pc.returned(), "later submitter %d admitted", i)
			assert.NoError(t, pc.res.err, "later submitter %d", i)
		}
		p.StopWait()
		assert.Equal(t, seq(7), r.order(), "start order")
		s = requireStoppedClean(t, p)
		assert.Equal(t, uint64(7), s.Completed, "completed")
		assert.Equal(t, uint64(1), s.Rejected, "rejected")
	})
}

// A waiting submitter whose context ends leaves the line at once: it holds
// no room, the submitter behind it keeps waiting until room frees and then
// takes it, and the withdrawn task never runs.
func TestUnderBlockASubmitterWhoseContextEndsLeavesTheLineToTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(1, Block), WithIdleTimeout(-1))
		defer p.Stop()
		g0 := newGate()
		defer g0.release()
		var r recorder
		t0 := time.Now()
		p.Submit(r.task(0, g0.wait))
		p.Submit(r.task(1, nil)) // the queue is full
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		first := startCall(p, doContextCall, ctx, func() { t.Error("the withdrawn task ran") }, t0)
		synctest.Wait()
		second := startCall(p, goCall, context.Background(), r.task(2, nil), t0)
		synctest.Wait()
		third := startCall(p, submitCall, context.Background(), r.task(3, nil), t0)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.True(t, first.returned(), "DoContext returned when its ctx ended")
		assert.ErrorIs(t, first.res.err, context.DeadlineExceeded, "DoContext")
		assert.Equal(t, 2*time.Second, first.at, "DoContext returned at")
		assert.False(t, second.returned(), "the next submitter got room that is not free")
		assert.False(t, third.returned(), "the last submitter got room that is not free")
		assert.False(t, tryDo(p, func() {}), "TryDo with submitters still waiting")
		g0.open() // task 1 starts: one place frees, for the second submitter
		synctest.Wait()
		assert.True(t, second.returned(), "the second submitter took the freed place")
		assert.True(t, third.returned(), "the third submitter was admitted as the queue drained")
		require.NoError(t, p.WaitIdle(context.Background()))
		assert.Equal(t, seq(4), r.order(), "start order")
		// Nobody waits any more, so the one place is free again, and only one.
		g := newGate()
		defer g.release()
		p.Submit(g.task())
		synctest.Wait()
		assert.True(t, tryDo(p, func() {}), "TryDo with the place free and nobody waiting")
		assert.False(t, tryDo(p, func() {}), "TryDo on a full queue")
		g.open()
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(6), s.Submitted, "submitted: the withdrawn task was never accepted")
		assert.Equal(t, uint64(2), s.Rejected, "rejected: two TryDo calls")
	})
}

// Real scheduling: a waiting submitter whose context ends at the moment room
// frees for it is either admitted (its task runs) or withdrawn (it never
// runs), and in both cases the queue's room comes out exact: afterwards,
// with the worker busy, exactly one TryDo fits.
func TestASubmitterWithdrawingAsRoomFreesNeitherLeaksNorDuplicatesRoom(t *testing.T) {
	const rounds = 600
	for _, c := range []boundCall{doContextCall, goCall, groupGoCall} {
		t.Run(c.name, func(t *testing.T) {
			var admittedRounds int
			// Each round in a fresh bubble, so that a hang shows at once;
			// the cancel and the freeing of room race on real threads.
			untilFailure(t, rounds, func(t *testing.T, round int) {
				p := New(1, WithMaxWaiting(1, Block), WithIdleTimeout(-1))
				defer p.Stop()
				g := newGate()
				defer g.release()
				var ran atomic.Int64
				p.Submit(g.task())
				p.Submit(func() {}) // the queue is full
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				pc := startCall(p, c, ctx, func() { ran.Add(1) }, time.Now())
				synctest.Wait()
				require.False(t, pc.returned(), "%s returned with a full queue", c.name)
				go cancel()
				g.open()
				<-pc.done
				err := pc.res.err
				if pc.res.outcome != nil {
					err = pc.res.outcome()
				}
				switch {
				case err == nil:
					admittedRounds++
				case !errors.Is(err, context.Canceled):
					t.Fatalf("%s returned %v", c.name, err)
				}
				require.NoError(t, p.WaitIdle(context.Background()))
				wantRan := int64(0)
				if err == nil {
					wantRan = 1
				}
				assert.Equal(t, wantRan, ran.Load(), "the task ran (admitted) or not (withdrawn)")
				// The room is exact: one place, free.
				g2 := newGate()
				defer g2.release()
				p.Submit(g2.task())
				synctest.Wait()
				require.True(t, tryDo(p, func() {}), "the one place is free")
				require.False(t, tryDo(p, func() {}), "one place only")
				g2.open()
				p.StopWait()
				s := requireStoppedClean(t, p)
				assert.Equal(t, uint64(1), s.Rejected, "rejected: the second TryDo")
			})
			t.Logf("%d of %d rounds admitted", admittedRounds, rounds)
		})
	}
}

// A ticket that waited for room is reused with nothing of that wait: a
// DoBatch that took its room at once is admitted at once, and does not wait
// for room again (which, with the room it holds, would never come).
func TestReusedTicketKeepsNothingOfItsLastWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(1, Block))
		defer p.Stop()
		for round := range 20 {
			blocker := newGate()
			p.Submit(blocker.task())
			synctest.Wait()
			p.Submit(func() {}) // the one place
			parked := make(chan error)
			go func() { parked <- p.DoContext(context.Background(), func() {}) }() // waits for room in a ticket
			synctest.Wait()
			blocker.open()
			require.NoError(t, <-parked, "round %d: the parked DoContext", round)
			require.NoError(t, p.WaitIdle(context.Background()))
			require.NoError(t, p.DoBatch([]func(){func() {}}), "round %d: DoBatch with room free", round) // deadlocks the bubble if it waits
		}
	})
}

// --- a canceled queued task frees its room at once ---

// A queued task that is canceled (by the pool, Task.cancel; a Future's ctx
// canceled; its context ending while its caller waits; its group's context
// ending while Wait watches) gives its place back at once, even behind another waiting task:
// a waiting submitter is admitted at that moment, and no task starts.
func TestUnderBlockACanceledQueuedTaskFreesItsRoomAtOnce(t *testing.T) {
	type queuedTask struct {
		cancel  func()        // cancels the queued task now, or nil
		wait    func() error  // waits for the queued task's outcome
		wantErr error         // what wait reports
		at      time.Duration // when the queued task is canceled
	}
	ways := []struct {
		name  string
		queue func(p *WorkerPool, fn func(context.Context) error) queuedTask
	}{
		{"Task.cancel", func(p *WorkerPool, fn func(context.Context) error) queuedTask {
			tk := p.Go(context.Background(), fn)
			return queuedTask{cancel: tk.cancel, wait: tk.Wait, wantErr: context.Canceled}
		}},
		{"Future's ctx canceled", func(p *WorkerPool, fn func(context.Context) error) queuedTask {
			ctx, cancel := context.WithCancel(context.Background())
			f := GoResult(ctx, p, func(ctx context.Context) (int, error) { return 1, fn(ctx) })
			return queuedTask{cancel: cancel, wait: func() error { _, err := f.Wait(); return err }, wantErr: context.Canceled}
		}},
		{"ctx deadline with Wait", func(p *WorkerPool, fn func(context.Context) error) queuedTask {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			tk := p.Go(ctx, fn)
			waited := make(chan error, 1)
			go func() { waited <- tk.Wait(); cancel() }()
			return queuedTask{wait: func() error { return <-waited }, wantErr: context.DeadlineExceeded, at: 3 * time.Second}
		}},
		{"group ctx with Wait", func(p *WorkerPool, fn func(context.Context) error) queuedTask {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			g := p.Group(ctx)
			g.Go(fn)
			waited := make(chan error, 1)
			go func() { waited <- g.Wait(); cancel() }()
			return queuedTask{wait: func() error { return <-waited }, wantErr: context.DeadlineExceeded, at: 3 * time.Second}
		}},
	}
	for _, way := range ways {
		t.Run(way.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1, WithMaxWaiting(2, Block), WithIdleTimeout(-1))
				defer p.Stop()
				running := newGate()
				defer running.release()
				t0 := time.Now()
				p.Submit(running.task())
				var started atomic.Int64
				p.Submit(func() { started.Add(1) }) // waiting, before the task canceled
				q := way.queue(p, func(context.Context) error { started.Add(1); return nil })
				synctest.Wait()
				require.Equal(t, 2, p.Status().Waiting, "waiting: the queue is full")
				sub := startCall(p, submitCall, context.Background(), func() { started.Add(1) }, t0)
				synctest.Wait()
				require.False(t, sub.returned(), "Submit returned with a full queue")
				if q.cancel != nil {
					q.cancel()
				} else {
					time.Sleep(q.at - time.Nanosecond)
					synctest.Wait()
					require.False(t, sub.returned(), "Submit returned before the queued task was canceled")
					time.Sleep(time.Nanosecond)
				}
				synctest.Wait()
				require.True(t, sub.returned(), "Submit admitted once the queued task was canceled")
				assert.Equal(t, q.at, sub.at, "Submit admitted the moment the queued task was canceled")
				assert.Zero(t, started.Load(), "a task started")
				s := p.Status()
				assert.Equal(t, 1, s.Busy, "busy: only the running task")
				assert.Equal(t, 2, s.Waiting, "waiting: the task before the canceled one, and the admitted one")
				assert.Equal(t, uint64(1), s.Canceled, "canceled")
				err, ok := returnsAtOnce(q.wait)
				require.True(t, ok, "the canceled task's Wait returned")
				assert.ErrorIs(t, err, q.wantErr, "the canceled task")
				running.open()
				p.StopWait()
				assert.Equal(t, int64(2), started.Load(), "only the plain and the admitted task ran")
				s = requireStoppedClean(t, p)
				assert.Equal(t, uint64(1), s.Canceled, "canceled")
				assert.Equal(t, uint64(3), s.Completed, "completed")
			})
		})
	}
}

// With a bound, a queued task whose context ends gives back its room at
// that moment even though no one calls its Wait or Done: a Task's ctx, or
// a group's. It does not keep its place until someone looks at it or it
// reaches the front of the queue.
func TestUnderBlockAQueuedTaskWhoseContextEndsFreesItsRoomWithoutAWaiter(t *testing.T) {
	for _, kind := range []string{"Task", "Group"} {
		t.Run(kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1, WithMaxWaiting(1, Block), WithIdleTimeout(-1))
				defer p.Stop()
				running := newGate()
				defer running.release()
				p.Submit(running.task())
				synctest.Wait()
				t0 := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				defer cancel()
				if kind == "Task" {
					p.Go(ctx, func(context.Context) error { return nil })
				} else {
					p.Group(ctx).Go(func(context.Context) error { return nil })
				}
				synctest.Wait()
				require.Equal(t, 1, p.Status().Waiting)
				admitted := make(chan time.Duration, 1)
				go func() {
					p.Submit(func() {})
					admitted <- time.Since(t0)
				}()
				assert.Equal(t, 3*time.Second, <-admitted, "the waiting submitter gets the room when the ctx ends")
				s := p.Status()
				assert.Equal(t, uint64(1), s.Canceled)
				assert.Equal(t, 1, s.Waiting, "only the new task waits")
				running.open()
				p.StopWait()
				requireStoppedClean(t, p)
			})
		})
	}
}

// --- stops release every waiting submitter ---

// Stop, StopWait and Shutdown release every submitter that waits for room
// at once, before the running task ends: Submit and SubmitWait panic with
// an error wrapping ErrStopped, Do, DoContext, DoWait and DoBatch return
// ErrStopped, Go and Call handles report it, and the group's Wait reports
// it. None of that counts as rejected, and no refused task becomes a dead
// letter; the queued plain task does when the stop abandons it.
func TestStopsReleaseEveryWaitingSubmitterAtOnce(t *testing.T) {
	// With a bound of 1 a batch of 2 is refused at once: the batch here is
	// of one task.
	calls := []boundCall{submitCall, doCall, doWaitCall, doContextCall, submitWaitCall, goCall, callCall, groupGoCall, doBatchOfOneCall}
	for _, mode := range stopModes {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				box := new(letterBox)
				p := New(1, WithMaxWaiting(1, Block), WithIdleTimeout(-1), WithHooks(Hooks{DeadLetter: box.handle}))
				defer p.Stop()
				running := newGate()
				defer running.release()
				var r recorder
				p.Submit(running.task())
				p.Submit(r.task(-1, nil)) // waiting: the queue is full
				synctest.Wait()
				pending := make([]*pendingCall, len(calls))
				for i, c := range calls {
					pending[i] = startCall(p, c, context.Background(), r.task(i, nil), time.Now())
				}
				synctest.Wait()
				for i, pc := range pending {
					require.False(t, pc.returned(), "%s returned with a full queue", calls[i].name)
				}
				stopped := make(chan struct{})
				go func() { mode.stop(p); close(stopped) }()
				synctest.Wait()
				for i, pc := range pending {
					c := calls[i]
					require.True(t, pc.returned(), "%s released by %s", c.name, mode.name)
					err := pc.res.err
					switch c.name {
					case "Submit", "SubmitWait":
						assert.True(t, pc.res.panicked, "%s released by a stop panics", c.name)
					case "Group.Go":
						var ok bool
						err, ok = returnsAtOnce(pc.res.outcome)
						require.True(t, ok, "Group.Wait returned")
					default:
						assert.False(t, pc.res.panicked, "%s panicked", c.name)
					}
					assert.ErrorIs(t, err, ErrStopped, "%s released by %s", c.name, mode.name)
				}
				assert.False(t, isClosed(stopped), "%s returned while a task ran", mode.name)
				running.open()
				<-stopped
				s := requireStoppedClean(t, p)
				assert.Zero(t, s.Rejected, "rejected")
				assert.Equal(t, uint64(2), s.Submitted, "submitted: the running and the queued task")
				letters := box.got()
				if mode.abandons {
					assert.Empty(t, r.order(), "tasks run after an abandoning stop")
					require.Len(t, letters, 1, "dead letters: the abandoned queued task")
					assert.ErrorIs(t, letters[0].reason, ErrStopped, "the letter's reason")
					letters[0].task()
					assert.Equal(t, []int{-1}, r.order(), "the letter carries the queued task")
					assert.Equal(t, uint64(1), s.Abandoned, "abandoned")
				} else {
					assert.Equal(t, []int{-1}, r.order(), "tasks run: only the queued one")
					assert.Empty(t, letters, "dead letters")
				}
			})
		})
	}
}

// A submitter that waits for room under Block when StopWait is called is
// never admitted (doc.go: a stop admits none of them from the moment it is
// called; Submit panics with ErrStopped). Here its ticket is on its way to
// a dispatcher that is busy (held in a ctx's Err while it accepts a job),
// StopWait begins, and a place frees; dispatch then takes the ticket before
// the stop message, and refuses it as it refuses parked tickets and
// stragglers: Submit panics with ErrStopped and its task never runs.
func TestStopWaitAdmitsNoSubmitterThatWaitsForRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(2, Block), WithIdleTimeout(-1))
		running := newGate()
		defer running.release()
		p.Submit(running.task())
		synctest.Wait()
		queued := p.Go(t.Context(), noopFn) // one place left
		synctest.Wait()
		busy := newFrameStallingContext(t.Context(), "(*dispatcher).acceptJob(")
		defer busy.resume()
		go p.Go(busy, noopFn) // takes the last place; dispatch stalls accepting it
		<-busy.stalled

		var ran atomic.Bool
		var submitErr error
		submitted := make(chan struct{})
		go func() {
			defer close(submitted)
			submitErr, _ = recovered(func() { p.Submit(func() { ran.Store(true) }) })
		}()
		synctest.Wait()
		require.False(t, isClosed(submitted), "Submit waits: no room")
		queued.cancel() // frees a place, at once
		stopped := make(chan struct{})
		go func() { defer close(stopped); p.StopWait() }()
		synctest.Wait()
		require.True(t, p.Stopped(), "stopping began")
		busy.resume()
		<-submitted
		running.open()
		<-stopped
		assert.ErrorIs(t, submitErr, ErrStopped, "Submit that waited for room when StopWait was called")
		assert.False(t, ran.Load(), "its task ran after StopWait was called")
		requireStoppedClean(t, p)
	})
}

// --- the dispatcher still serves everything while submitters wait ---

// While the queue is full and a submitter waits for room, a Pause is
// served: its barrier is reached once the tasks before it finish, it
// returns, the admitted task is held, and it runs once the pause ends.
func TestPauseIsServedWhileSubmittersWaitForRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(1, Block), WithIdleTimeout(-1))
		defer p.Stop()
		g0, g1 := newGate(), newGate()
		defer g0.release()
		defer g1.release()
		var r recorder
		p.Submit(r.task(0, g0.wait))
		p.Submit(r.task(1, g1.wait)) // the queue is full
		synctest.Wait()
		sub := startCall(p, submitCall, context.Background(), r.task(2, nil), time.Now())
		synctest.Wait()
		hold, resume := context.WithCancel(context.Background())
		defer resume()
		paused := make(chan struct{})
		go func() { p.Pause(hold); close(paused) }()
		synctest.Wait()
		require.False(t, sub.returned(), "Submit returned with a full queue")
		assert.False(t, isClosed(paused), "Pause returned before the tasks before it finished")
		g0.open() // task 1 starts: the submitter gets its place, behind the pause
		synctest.Wait()
		assert.True(t, sub.returned(), "the waiting Submit admitted while a Pause is in effect")
		assert.False(t, isClosed(paused), "Pause returned while task 1 runs")
		g1.open()
		synctest.Wait()
		require.True(t, isClosed(paused), "Pause returned once the tasks before it finished")
		assert.Equal(t, []int{0, 1}, r.order(), "the admitted task is held by the pause")
		assert.Equal(t, 1, p.Status().Waiting, "waiting: the held task")
		resume()
		synctest.Wait()
		assert.Equal(t, seq(3), r.order(), "the held task runs once the pause ends")
		p.StopWait()
		requireStoppedClean(t, p)
	})
}

// While the queue is full and a submitter waits for room, growing the pool
// starts the waiting tasks at once, and the submitter's task too.
func TestResizeUpStartsWaitingTasksAtOnceWhileSubmittersWaitForRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithMaxWaiting(1, Block), WithIdleTimeout(-1))
		defer p.Stop()
		g := newGate()
		defer g.release()
		var r recorder
		p.Submit(r.task(0, g.wait))
		p.Submit(r.task(1, g.wait))
		synctest.Wait()
		sub := startCall(p, submitCall, context.Background(), r.task(2, g.wait), time.Now())
		synctest.Wait()
		require.False(t, sub.returned(), "Submit returned with a full queue")
		p.Resize(3)
		synctest.Wait()
		assert.True(t, sub.returned(), "the waiting Submit admitted once the pool grew")
		assert.ElementsMatch(t, seq(3), r.order(), "every task started at once")
		s := p.Status()
		assert.Equal(t, 3, s.Busy, "busy")
		assert.Zero(t, s.Waiting, "waiting")
		g.open()
		p.StopWait()
		requireStoppedClean(t, p)
	})
}

// While the queue is full and a submitter waits for room, WaitIdle with a
// deadline returns the context's error exactly at the deadline.
func TestWaitIdleReturnsAtItsDeadlineWhileSubmittersWaitForRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fq := newFullQueue(t, Block)
		p := fq.p
		defer p.Stop()
		defer fq.release()
		t0 := time.Now()
		sub := startCall(p, submitCall, context.Background(), func() {}, t0)
		synctest.Wait()
		require.False(t, sub.returned(), "Submit returned with a full queue")
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		defer cancel()
		w := goWaitIdle(p, ctx, t0)
		synctest.Wait()
		assert.False(t, w.returned(), "WaitIdle returned while tasks run")
		time.Sleep(4 * time.Second)
		synctest.Wait()
		require.True(t, w.returned(), "WaitIdle returned at its deadline")
		assert.ErrorIs(t, w.err, context.DeadlineExceeded, "WaitIdle")
		assert.Equal(t, 4*time.Second, w.at, "WaitIdle returned at")
		assert.False(t, sub.returned(), "Submit still waits")
		// And a WaitIdle without deadline sees the pool go idle once all ran.
		w = goWaitIdle(p, context.Background(), t0)
		fq.release()
		synctest.Wait()
		require.True(t, w.returned(), "WaitIdle returned once the pool went idle")
		assert.NoError(t, w.err, "WaitIdle")
		assert.True(t, sub.returned(), "Submit admitted")
		p.StopWait()
		requireStoppedClean(t, p)
	})
}

// While a Pause holds a full queue and a submitter waits for room, the idle
// clock keeps ticking: the idle workers retire one per idle period.
func TestIdleWorkersRetireWhileAPauseHoldsAFullQueueAndSubmittersWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithMaxWaiting(1, Block), WithIdleTimeout(time.Second))
		defer p.Stop()
		g := newGate()
		defer g.release()
		p.Submit(g.task())
		p.Submit(g.task())
		synctest.Wait()
		require.Equal(t, 2, p.Status().Workers, "workers")
		g.open() // both workers idle, at t0; the idle period started when the first worker did
		synctest.Wait()
		hold, resume := context.WithCancel(context.Background())
		defer resume()
		p.Pause(hold)
		var ran atomic.Int64
		p.Submit(func() { ran.Add(1) }) // held: the queue is full
		sub := startCall(p, submitCall, context.Background(), func() { ran.Add(1) }, time.Now())
		synctest.Wait()
		require.False(t, sub.returned(), "Submit returned with a full queue")
		require.Equal(t, 1, p.Status().Waiting, "waiting")
		time.Sleep(time.Second) // the period in which the tasks came: no retirement
		synctest.Wait()
		assert.Equal(t, 2, p.Status().Workers, "workers after the period with tasks")
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, 1, p.Status().Workers, "workers after one idle period")
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, 0, p.Status().Workers, "workers after two idle periods")
		assert.False(t, sub.returned(), "Submit still waits while the pause holds the queue")
		resume()
		synctest.Wait()
		assert.True(t, sub.returned(), "Submit admitted once the pause ended")
		p.StopWait()
		assert.Equal(t, int64(2), ran.Load(), "ran")
		requireStoppedClean(t, p)
	})
}

// --- benchmarks ---

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
