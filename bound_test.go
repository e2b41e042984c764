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

// Tests for the bounded queue (WithMaxWaiting), its overflow policies
// (Block, Reject, DropOldest) and dead letters (WithDeadLetter), against the
// contract in doc.go ("Bounded queue and back-pressure", "Dead letters",
// "Status"). A full queue means: the bound is reached and every worker is
// busy. Every scenario that blocks or depends on time runs in a synctest
// bubble with exact fake-clock values.

// --- helpers ---

// letter is one call of the dead-letter handler.
type letter struct {
	task   func()
	reason error
}

// letterBox is a dead-letter handler that records its letters in the order
// it gets them.
type letterBox struct {
	mu      sync.Mutex
	letters []letter
}

func (b *letterBox) handle(task func(), reason error) {
	b.mu.Lock()
	b.letters = append(b.letters, letter{task, reason})
	b.mu.Unlock()
}

func (b *letterBox) got() []letter {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]letter(nil), b.letters...)
}

// recovered calls f and returns what it panicked with, as an error.
func recovered(f func()) (err error, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			panicked = true
			if e, ok := r.(error); ok {
				err = e
			} else {
				err = fmt.Errorf("panicked with a non-error: %v", r)
			}
		}
	}()
	f()
	return nil, false
}

// errTryFalse stands for a TrySubmit that returned false.
var errTryFalse = fmt.Errorf("%w: TrySubmit returned false", ErrQueueFull)

// callResult is what a submitter learned when its call returned.
type callResult struct {
	err      error        // returned, panicked with (panicked set), or reported by a handle already settled when the call returned; nil: accepted
	panicked bool         // Submit or SubmitWait panicked
	outcome  func() error // handles and groups: waits for the task's outcome
}

// A boundCall is one way to submit under a bound.
type boundCall struct {
	name  string
	tasks int  // tasks the call submits, each running body
	waits bool // the call returns only once its task has run (DoWait, SubmitWait)
	call  func(p *WorkerPool, ctx context.Context, body func()) callResult
}

func fnOf(body func()) func(context.Context) error {
	return func(context.Context) error { body(); return nil }
}

var (
	submitCall = boundCall{"Submit", 1, false, func(p *WorkerPool, _ context.Context, body func()) callResult {
		err, panicked := recovered(func() { p.Submit(body) })
		return callResult{err: err, panicked: panicked}
	}}
	doCall = boundCall{"Do", 1, false, func(p *WorkerPool, _ context.Context, body func()) callResult {
		return callResult{err: p.Do(body)}
	}}
	doWaitCall = boundCall{"DoWait", 1, true, func(p *WorkerPool, _ context.Context, body func()) callResult {
		return callResult{err: p.DoWait(body)}
	}}
	doContextCall = boundCall{"DoContext", 1, false, func(p *WorkerPool, ctx context.Context, body func()) callResult {
		return callResult{err: p.DoContext(ctx, body)}
	}}
	trySubmitCall = boundCall{"TrySubmit", 1, false, func(p *WorkerPool, _ context.Context, body func()) callResult {
		if !p.TrySubmit(body) {
			return callResult{err: errTryFalse}
		}
		return callResult{}
	}}
	submitWaitCall = boundCall{"SubmitWait", 1, true, func(p *WorkerPool, _ context.Context, body func()) callResult {
		err, panicked := recovered(func() { p.SubmitWait(body) })
		return callResult{err: err, panicked: panicked}
	}}
	goCall = boundCall{"Go", 1, false, func(p *WorkerPool, ctx context.Context, body func()) callResult {
		tk := p.Go(ctx, fnOf(body))
		r := callResult{outcome: tk.Wait}
		if isDone(tk.Done()) {
			r.err = tk.Wait()
		}
		return r
	}}
	callCall = boundCall{"Call", 1, false, func(p *WorkerPool, ctx context.Context, body func()) callResult {
		f := Call(ctx, p, func(context.Context) (int, error) { body(); return 7, nil })
		r := callResult{outcome: func() error {
			v, err := f.Wait()
			if err == nil && v != 7 {
				return fmt.Errorf("Future.Wait returned %d, want 7", v)
			}
			return err
		}}
		if isDone(f.Done()) {
			r.err = r.outcome()
		}
		return r
	}}
	groupGoCall = boundCall{"Group.Go", 1, false, func(p *WorkerPool, ctx context.Context, body func()) callResult {
		g := p.Group(ctx)
		g.Go(fnOf(body))
		return callResult{outcome: g.Wait}
	}}
	doBatchCall = boundCall{"DoBatch", 2, false, func(p *WorkerPool, _ context.Context, body func()) callResult {
		return callResult{err: p.DoBatch([]func(){body, nil, body})}
	}}
	doBatchOfOneCall = boundCall{"DoBatch of 1", 1, false, func(p *WorkerPool, _ context.Context, body func()) callResult {
		return callResult{err: p.DoBatch([]func(){nil, body})}
	}}
)

// boundCalls are the calls of the table in doc.go.
var boundCalls = []boundCall{submitCall, doCall, doWaitCall, doContextCall, trySubmitCall, submitWaitCall, goCall, callCall, groupGoCall, doBatchCall}

// pendingCall is one call on its own goroutine.
type pendingCall struct {
	done chan struct{}
	res  callResult
	at   time.Duration // when it returned, in fake time since t0
}

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

func startCall(p *WorkerPool, c boundCall, ctx context.Context, body func(), t0 time.Time) *pendingCall {
	pc := &pendingCall{done: make(chan struct{})}
	go func() {
		defer close(pc.done)
		pc.res = c.call(p, ctx, body)
		pc.at = time.Since(t0)
	}()
	return pc
}

func (pc *pendingCall) returned() bool { return isClosed(pc.done) }

// returnsAtOnce calls f on its own goroutine and returns what it returned,
// if it returned by the time every goroutine of the bubble is blocked.
func returnsAtOnce(f func() error) (err error, ok bool) {
	done := make(chan error, 1)
	go func() { done <- f() }()
	synctest.Wait()
	select {
	case err := <-done:
		return err, true
	default:
		return nil, false
	}
}

// fullQueue is a pool of two workers with a bound of two waiting tasks,
// whose workers run tasks that wait for running, and whose queue holds two
// fillers (ids 0 and 1 in fillers) that wait for queued once they run:
// every worker is busy and the queue is full. Opening running frees both
// places at once, without letting any new task start.
type fullQueue struct {
	p                *WorkerPool
	running, queued  gate
	fillers          recorder
	box              *letterBox
	submittedAtStart uint64
}

func newFullQueue(t *testing.T, policy Overflow, opts ...Option) *fullQueue {
	t.Helper()
	fq := &fullQueue{running: newGate(), queued: newGate(), box: new(letterBox)}
	opts = append([]Option{WithMaxWaiting(2, policy), WithIdleTimeout(-1), WithDeadLetter(fq.box.handle)}, opts...)
	fq.p = New(2, opts...)
	fq.p.Submit(fq.running.task())
	fq.p.Submit(fq.running.task())
	fq.p.Submit(fq.fillers.task(0, fq.queued.wait))
	fq.p.Submit(fq.fillers.task(1, fq.queued.wait))
	synctest.Wait()
	s := fq.p.Status()
	require.Equal(t, 2, s.Busy, "busy")
	require.Equal(t, 2, s.Waiting, "waiting: the queue is full")
	fq.submittedAtStart = s.Submitted
	return fq
}

// release opens both gates; tests defer it after the pool's Stop.
func (fq *fullQueue) release() {
	fq.running.release()
	fq.queued.release()
}

// goroutineID returns the id of the calling goroutine, from its stack.
func goroutineID() string {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf[:n]), "goroutine "), " ")
	return id
}

// A boundStopMode is one way to stop a pool, and whether it abandons the
// queue.
type boundStopMode struct {
	name     string
	abandons bool
	stop     func(p *WorkerPool)
}

var boundStopModes = []boundStopMode{
	{"Stop", true, (*WorkerPool).Stop},
	{"StopWait", false, (*WorkerPool).StopWait},
	{"Shutdown", false, func(p *WorkerPool) { _ = p.Shutdown(context.Background()) }},
	{"ShutdownGivingUp", true, func(p *WorkerPool) { _ = p.Shutdown(canceledContext()) }},
}

// --- 1. each call meets the policy with a full queue ---

// Block: every call but TrySubmit waits for room, and is admitted (its tasks
// queued, not run) as soon as room frees; TrySubmit returns false at once and
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
				if c.name == "TrySubmit" {
					require.True(t, pc.returned(), "TrySubmit on a full queue returned at once")
					assert.ErrorIs(t, pc.res.err, errTryFalse, "TrySubmit on a full queue")
					assert.Equal(t, uint64(1), p.Status().Rejected, "rejected: the TrySubmit that returned false")
					fq.release()
					p.StopWait()
					assert.Zero(t, ran.Load(), "the refused task ran")
					s := requireAccounted(t, p)
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
				s = requireAccounted(t, p)
				assert.Equal(t, fq.submittedAtStart+uint64(c.tasks), s.Completed, "completed")
				assert.Zero(t, s.Rejected, "rejected")
				assert.Zero(t, s.Dropped, "dropped")
				assert.Empty(t, fq.box.got(), "dead letters")
			})
		})
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
				s = requireAccounted(t, p)
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
// dead-letter handler with ErrDropped, oldest first.
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
					assert.ErrorIs(t, l.reason, ErrDropped, "letter %d's reason", i)
				}

				fq.release()
				synctest.Wait()
				requireAccepted(t, pc, c.name)
				assert.Equal(t, int64(c.tasks), ran.Load(), "the new tasks ran")
				p.StopWait()
				s = requireAccounted(t, p)
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
// task someone waits for reports ErrDropped to its waiter (DoWait returns
// it, a Task or Future reports it, the group's Wait reports it, SubmitWait
// panics with it) and never reaches the dead-letter handler. SubmitWait
// used to panic with an error wrapping ErrStopped here.
func TestUnderDropOldestADroppedTaskWithAWaiterReportsErrDropped(t *testing.T) {
	for _, c := range []boundCall{doWaitCall, submitWaitCall, goCall, callCall, groupGoCall} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				box := new(letterBox)
				p := New(1, WithMaxWaiting(1, DropOldest), WithIdleTimeout(-1), WithDeadLetter(box.handle))
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
					assert.ErrorIs(t, res.err, ErrDropped, "SubmitWait's panic for a dropped task")
					assert.NotErrorIs(t, res.err, ErrStopped, "SubmitWait's panic: the pool did not stop")
				case res.outcome != nil:
					err, ok := returnsAtOnce(res.outcome)
					require.True(t, ok, "the dropped task's Wait returned")
					assert.ErrorIs(t, err, ErrDropped, "%s of the dropped task", c.name)
				default:
					assert.ErrorIs(t, res.err, ErrDropped, "%s of the dropped task", c.name)
				}
				s := p.Status()
				assert.Equal(t, uint64(1), s.Dropped, "dropped")
				assert.Equal(t, 1, s.Waiting, "waiting: the new task")
				running.open()
				p.StopWait()
				assert.Zero(t, droppedRan.Load(), "the dropped task ran")
				assert.Equal(t, int64(1), newRan.Load(), "the new task ran")
				assert.Empty(t, box.got(), "dead letters: the dropped task has a waiter")
				s = requireAccounted(t, p)
				assert.Equal(t, uint64(1), s.Dropped, "dropped")
			})
		})
	}
}

// Rejected counts every task refused because the queue was full, a
// TrySubmit that returned false included, and nothing refused because the
// pool stopped or the caller's context ended.
func TestRejectedCountsOnlyRefusalsBecauseTheQueueWasFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fq := newFullQueue(t, Block)
		p := fq.p
		defer p.Stop()
		defer fq.release()
		assert.False(t, p.TrySubmit(func() {}), "TrySubmit on a full queue")
		assert.False(t, p.TrySubmit(func() {}), "TrySubmit on a full queue")
		require.Equal(t, uint64(2), p.Status().Rejected, "rejected: two TrySubmit calls that returned false")

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
		assert.False(t, p.TrySubmit(func() {}), "TrySubmit while stopping")
		assert.ErrorIs(t, p.DoBatch([]func(){func() {}}), ErrStopped, "DoBatch while stopping")
		assert.ErrorIs(t, p.Go(context.Background(), noopFn).Wait(), ErrStopped, "Go while stopping")
		fq.release()
		<-stopped
		s := requireAccounted(t, p)
		assert.Equal(t, uint64(2), s.Rejected, "rejected: a stopped pool is not a full queue")
		assert.Equal(t, fq.submittedAtStart, s.Submitted, "submitted")
	})
}

// --- 2. Block: contexts, arrival order, batches, TrySubmit ---

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
				s = requireAccounted(t, p)
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
		s := requireAccounted(t, p)
		assert.Equal(t, uint64(n), s.Completed, "completed")
	})
}

// A batch waiting for room at the head of the submitters holds back every
// later submitter, even single tasks that would fit in the free place, and
// TrySubmit returns false then (counted as rejected) although a place is
// free: nobody overtakes a waiting submitter.
func TestUnderBlockAWaitingBatchHoldsBackSingleTasksThatWouldFitAndTrySubmitNeverOvertakes(t *testing.T) {
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
		assert.False(t, p.TrySubmit(func() { t.Error("a TrySubmit task overtook a waiting batch") }),
			"TrySubmit with a free place while a batch waits")
		s := p.Status()
		assert.Equal(t, 1, s.Waiting, "waiting: the free place stays free")
		assert.Equal(t, uint64(1), s.Rejected, "rejected: the TrySubmit")

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
		s = requireAccounted(t, p)
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
		assert.False(t, p.TrySubmit(func() {}), "TrySubmit with submitters still waiting")
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
		assert.True(t, p.TrySubmit(func() {}), "TrySubmit with the place free and nobody waiting")
		assert.False(t, p.TrySubmit(func() {}), "TrySubmit on a full queue")
		g.open()
		p.StopWait()
		s := requireAccounted(t, p)
		assert.Equal(t, uint64(6), s.Submitted, "submitted: the withdrawn task was never accepted")
		assert.Equal(t, uint64(2), s.Rejected, "rejected: two TrySubmit calls")
	})
}

// Real scheduling: a waiting submitter whose context ends at the moment room
// frees for it is either admitted (its task runs) or withdrawn (it never
// runs), and in both cases the queue's room comes out exact: afterwards,
// with the worker busy, exactly one TrySubmit fits.
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
				require.True(t, p.TrySubmit(func() {}), "the one place is free")
				require.False(t, p.TrySubmit(func() {}), "one place only")
				g2.open()
				p.StopWait()
				s := requireAccounted(t, p)
				assert.Equal(t, uint64(1), s.Rejected, "rejected: the second TrySubmit")
			})
			t.Logf("%d of %d rounds admitted", admittedRounds, rounds)
		})
	}
}

// --- 3. a canceled queued task frees its room at once ---

// A queued task that is canceled (Task.Cancel, Future.Cancel, its context
// ending while its caller waits, its group's context ending while Wait
// watches) gives its place back at once, even behind another waiting task:
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
		{"Task.Cancel", func(p *WorkerPool, fn func(context.Context) error) queuedTask {
			tk := p.Go(context.Background(), fn)
			return queuedTask{cancel: tk.Cancel, wait: tk.Wait, wantErr: context.Canceled}
		}},
		{"Future.Cancel", func(p *WorkerPool, fn func(context.Context) error) queuedTask {
			f := Call(context.Background(), p, func(ctx context.Context) (int, error) { return 1, fn(ctx) })
			return queuedTask{cancel: f.Cancel, wait: func() error { _, err := f.Wait(); return err }, wantErr: context.Canceled}
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
				s = requireAccounted(t, p)
				assert.Equal(t, uint64(1), s.Canceled, "canceled")
				assert.Equal(t, uint64(3), s.Completed, "completed")
			})
		})
	}
}

// --- 4. stops release every waiting submitter ---

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
	for _, mode := range boundStopModes {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				box := new(letterBox)
				p := New(1, WithMaxWaiting(1, Block), WithIdleTimeout(-1), WithDeadLetter(box.handle))
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
				s := requireAccounted(t, p)
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

// --- 5. the dispatcher still serves everything while submitters wait ---

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
		requireAccounted(t, p)
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
		requireAccounted(t, p)
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
		requireAccounted(t, p)
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
		requireAccounted(t, p)
	})
}

// --- 6. tasks a group holds back ---

// A task a Group holds back because of SetLimit joins the queue without
// room when the group's running task finishes, even with a full queue and a
// submitter waiting: it is neither refused nor made to wait, and the worker
// that finished the group's task goes on with the queue at once.
func TestHeldGroupTasksJoinAFullQueueWithoutRoomAndNeverBlockAWorker(t *testing.T) {
	for _, policy := range []Overflow{Block, Reject} {
		t.Run(policy.String(), func(t *testing.T) {
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
				s := requireAccounted(t, p)
				assert.Zero(t, s.Rejected, "rejected")
			})
		})
	}
}

// A task a Group holds back joins the queue "without room" when released
// (doc.go), so under DropOldest it takes nobody's place: the oldest waiting
// task is not dropped for it, and the worker goes on with that task.
//
// It used to drop the oldest waiting task to fit the released one.
func TestUnderDropOldestAReleasedHeldGroupTaskDropsNoWaitingTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		box := new(letterBox)
		p := New(1, WithMaxWaiting(1, DropOldest), WithIdleTimeout(-1), WithDeadLetter(box.handle))
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
		requireAccounted(t, p)
	})
}

// --- 7. dead letters ---

// Stop and a Shutdown that gives up hand each abandoned plain task to the
// dead-letter handler with ErrStopped, in queue order, as the very func
// submitted (Submit, Do, DoContext, TrySubmit, DoBatch); tasks with a
// waiter (DoWait, Go, Call, groups) report ErrStopped to it instead and
// never reach the handler. Shutdown that drains gives nothing.
func TestAbandonedPlainTasksBecomeDeadLettersInQueueOrderAndTasksWithAWaiterNever(t *testing.T) {
	for _, mode := range boundStopModes {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				box := new(letterBox)
				p := New(1, WithMaxWaiting(16, Block), WithIdleTimeout(-1), WithDeadLetter(box.handle))
				defer p.Stop()
				running := newGate()
				defer running.release()
				p.Submit(running.task())
				synctest.Wait()
				var r recorder
				bg := context.Background()
				p.Submit(r.task(0, nil))
				tk := p.Go(bg, fnOf(r.task(100, nil)))
				require.NoError(t, p.Do(r.task(1, nil)))
				dw := startCall(p, doWaitCall, bg, r.task(101, nil), time.Now())
				synctest.Wait()
				require.NoError(t, p.DoContext(bg, r.task(2, nil)))
				f := Call(bg, p, func(context.Context) (int, error) { r.task(102, nil)(); return 0, nil })
				require.True(t, p.TrySubmit(r.task(3, nil)))
				grp := p.Group(bg)
				grp.Go(fnOf(r.task(103, nil)))
				require.NoError(t, p.DoBatch([]func(){r.task(4, nil), r.task(5, nil)}))
				synctest.Wait()
				require.Equal(t, 10, p.Status().Waiting, "waiting")

				stopped := make(chan struct{})
				go func() { mode.stop(p); close(stopped) }()
				synctest.Wait()
				running.open()
				<-stopped
				s := requireAccounted(t, p)
				letters := box.got()
				if !mode.abandons {
					assert.Empty(t, letters, "dead letters after a drain")
					assert.Equal(t, []int{0, 100, 1, 101, 2, 102, 3, 103, 4, 5}, r.order(), "every task ran in order")
					return
				}
				assert.Empty(t, r.order(), "tasks run after an abandoning stop")
				assert.Equal(t, uint64(10), s.Abandoned, "abandoned")
				require.Len(t, letters, 6, "dead letters: the plain tasks")
				for i, l := range letters {
					assert.ErrorIs(t, l.reason, ErrStopped, "letter %d's reason", i)
					l.task()
				}
				assert.Equal(t, seq(6), r.order(), "the letters carry the plain tasks, in queue order")
				assert.ErrorIs(t, tk.Wait(), ErrStopped, "Go")
				_, err := f.Wait()
				assert.ErrorIs(t, err, ErrStopped, "Call")
				assert.ErrorIs(t, grp.Wait(), ErrStopped, "Group")
				require.True(t, dw.returned(), "DoWait returned")
				assert.ErrorIs(t, dw.res.err, ErrStopped, "DoWait")
			})
		})
	}
}

// A Shutdown whose deadline passes abandons the queue at that moment: the
// plain tasks become dead letters with ErrStopped, in queue order, and
// Shutdown returns the context's error once the running task ends.
func TestShutdownThatGivesUpAtItsDeadlineGivesTheQueueToTheDeadLetterHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		box := new(letterBox)
		p := New(1, WithMaxWaiting(4, Block), WithIdleTimeout(-1), WithDeadLetter(box.handle))
		defer p.Stop()
		t0 := time.Now()
		var r recorder
		p.Submit(r.task(0, sleeper(5*time.Second))) // running until 5s
		p.Submit(r.task(1, nil))
		p.Submit(r.task(2, nil))
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var err error
		var at time.Duration
		done := make(chan struct{})
		go func() { err = p.Shutdown(ctx); at = time.Since(t0); close(done) }()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		letters := box.got()
		require.Len(t, letters, 2, "dead letters at the deadline: the queue")
		for i, l := range letters {
			assert.ErrorIs(t, l.reason, ErrStopped, "letter %d's reason", i)
		}
		assert.False(t, isClosed(done), "Shutdown returned while a plain task runs")
		<-done
		assert.Equal(t, 5*time.Second, at, "Shutdown returned when the running task ended")
		assert.ErrorIs(t, err, context.DeadlineExceeded, "Shutdown")
		assert.Equal(t, []int{0}, r.order(), "ran")
		for _, l := range letters {
			l.task()
		}
		assert.Equal(t, seq(3), r.order(), "the letters carry the queued tasks in order")
		s := requireAccounted(t, p)
		assert.Equal(t, uint64(2), s.Abandoned, "abandoned")
	})
}

// The dead-letter handler runs on a goroutine of the pool: never on the
// dispatcher's (no dispatcher frame on its stack), and not on the
// submitter's, whatever the reason.
func TestDeadLetterHandlerNeverRunsOnTheDispatcherNorTheSubmitter(t *testing.T) {
	cases := []struct {
		name   string
		policy Overflow
		reason error
		giveUp func(p *WorkerPool, task func()) // gives task up; the queue is full
	}{
		{"refused by Reject", Reject, ErrQueueFull, func(p *WorkerPool, task func()) { p.Submit(task) }},
		{"dropped", DropOldest, ErrDropped, func(p *WorkerPool, task func()) {
			p.Submit(func() {}) // drops the filler
		}},
		{"abandoned by Stop", Block, ErrStopped, func(p *WorkerPool, task func()) {}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				type seen struct {
					stack, id string
					reason    error
				}
				var mu sync.Mutex
				var got []seen
				h := func(task func(), reason error) {
					buf := make([]byte, 1<<16)
					n := runtime.Stack(buf, false)
					mu.Lock()
					got = append(got, seen{string(buf[:n]), goroutineID(), reason})
					mu.Unlock()
				}
				p := New(1, WithMaxWaiting(1, c.policy), WithIdleTimeout(-1), WithDeadLetter(h))
				defer p.Stop()
				running := newGate()
				defer running.release()
				p.Submit(running.task())
				p.Submit(func() {}) // the queue is full
				synctest.Wait()
				submitter := goroutineID()
				c.giveUp(p, func() {})
				synctest.Wait()
				stopped := make(chan struct{})
				go func() { p.Stop(); close(stopped) }()
				synctest.Wait()
				running.open()
				<-stopped
				mu.Lock()
				defer mu.Unlock()
				require.NotEmpty(t, got, "dead letters")
				assert.ErrorIs(t, got[0].reason, c.reason, "the first letter's reason")
				for i, s := range got {
					assert.NotContains(t, s.stack, "(*dispatcher)", "letter %d: the handler ran on the dispatcher", i)
					assert.NotEqual(t, submitter, s.id, "letter %d: the handler ran on the submitter's goroutine", i)
				}
				requireAccounted(t, p)
			})
		})
	}
}

// The handler runs for one letter at a time, never concurrently, in the
// order the tasks were given up: refused Submits in the order they were
// refused, then the abandoned queue in queue order. With a handler that
// takes a second per letter, Stop returns exactly when the last has been
// handled.
func TestDeadLetterHandlerRunsForOneTaskAtATimeInTheOrderGivenUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var inFlight, peak atomic.Int64
		var mu sync.Mutex
		var order []int
		var r recorder
		h := func(task func(), reason error) {
			n := inFlight.Add(1)
			for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
			}
			defer inFlight.Add(-1)
			time.Sleep(time.Second)
			mu.Lock()
			order = append(order, len(order))
			mu.Unlock()
			task()
		}
		p := New(1, WithMaxWaiting(2, Reject), WithIdleTimeout(-1), WithDeadLetter(h))
		defer p.Stop()
		running := newGate()
		defer running.release()
		t0 := time.Now()
		p.Submit(running.task())
		p.Submit(r.task(5, nil))
		p.Submit(r.task(6, nil)) // the queue is full
		synctest.Wait()
		for i := range 3 {
			p.Submit(r.task(i, nil)) // refused: to the handler
		}
		// Two more refused at once from other goroutines, while the handler
		// is busy with the first letter.
		var submitters sync.WaitGroup
		for range 2 {
			submitters.Go(func() { p.Submit(r.task(3, nil)) })
		}
		submitters.Wait()
		require.Equal(t, uint64(5), p.Status().Rejected, "rejected")
		var at time.Duration
		stopped := make(chan struct{})
		go func() { p.Stop(); at = time.Since(t0); close(stopped) }()
		synctest.Wait()
		running.open()
		<-stopped
		assert.Equal(t, 7*time.Second, at, "Stop returned once the seventh letter was handled")
		assert.Equal(t, int64(1), peak.Load(), "letters handled at once")
		assert.Equal(t, []int{0, 1, 2, 3, 3, 5, 6}, r.order(), "letters in the order given up")
		requireAccounted(t, p)
	})
}

// Stop, StopWait and Shutdown return only after the handler has returned
// for every task given up before or during the stop, at the exact moment
// the last letter is handled.
func TestStopsReturnOnlyOnceTheHandlerHasReturnedForEveryLetter(t *testing.T) {
	for _, mode := range boundStopModes {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var handled atomic.Int64
				h := func(func(), error) { time.Sleep(time.Second); handled.Add(1) }
				p := New(1, WithMaxWaiting(2, Reject), WithIdleTimeout(-1), WithDeadLetter(h))
				defer p.Stop()
				running := newGate()
				defer running.release()
				t0 := time.Now()
				p.Submit(running.task())
				p.Submit(func() {})
				p.Submit(func() {}) // the queue is full
				synctest.Wait()
				p.Submit(func() {}) // refused before the stop
				p.Submit(func() {}) // refused before the stop
				var at time.Duration
				var letters int64
				stopped := make(chan struct{})
				go func() { mode.stop(p); at = time.Since(t0); letters = handled.Load(); close(stopped) }()
				synctest.Wait()
				running.open()
				want := 2 // the refused ones
				if mode.abandons {
					want = 4 // and the abandoned queue
				}
				time.Sleep(time.Duration(want)*time.Second - time.Nanosecond)
				synctest.Wait()
				assert.False(t, isClosed(stopped), "%s returned before the last letter was handled", mode.name)
				<-stopped
				assert.Equal(t, time.Duration(want)*time.Second, at, "%s returned at", mode.name)
				assert.Equal(t, int64(want), letters, "letters handled when %s returned", mode.name)
				requireAccounted(t, p)
			})
		})
	}
}

// A stop waits for a handler blocked on a letter it got during the stop,
// and returns once the handler returns.
func TestStopWaitsForAHandlerBlockedOnAnAbandonedTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hg := newGate()
		var handled atomic.Int64
		p := New(1, WithIdleTimeout(-1), WithDeadLetter(func(func(), error) { hg.wait(); handled.Add(1) }))
		running := newGate()
		defer hg.release()
		defer running.release()
		p.Submit(running.task())
		p.Submit(func() {})
		synctest.Wait()
		stopped := make(chan struct{})
		go func() { p.Stop(); close(stopped) }()
		synctest.Wait()
		running.open()
		synctest.Wait()
		assert.False(t, isClosed(stopped), "Stop returned while the handler holds a letter")
		hg.open()
		<-stopped
		assert.Equal(t, int64(1), handled.Load(), "letters handled")
		requireAccounted(t, p)
	})
}

// A panic in the handler is treated like a task's: the panic handler gets
// it, and delivery goes on with the next letter.
func TestPanicInTheDeadLetterHandlerGoesToThePanicHandlerAndDeliveryGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var panics []any
		var reasons []error
		h := func(task func(), reason error) {
			mu.Lock()
			reasons = append(reasons, reason)
			first := len(reasons) == 1
			mu.Unlock()
			if first {
				panic("letter boom")
			}
		}
		p := New(1, WithMaxWaiting(1, Reject), WithIdleTimeout(-1), WithDeadLetter(h),
			WithPanicHandler(func(r any) { mu.Lock(); panics = append(panics, r); mu.Unlock() }))
		defer p.Stop()
		running := newGate()
		defer running.release()
		p.Submit(running.task())
		p.Submit(func() {}) // the queue is full
		synctest.Wait()
		p.Submit(func() {}) // refused: the handler panics
		p.Submit(func() {}) // refused: still delivered
		synctest.Wait()
		mu.Lock()
		assert.Equal(t, []any{"letter boom"}, panics, "the panic handler got the handler's panic")
		assert.Len(t, reasons, 2, "letters delivered after the panic")
		mu.Unlock()
		stopped := make(chan struct{})
		go func() { p.Stop(); close(stopped) }()
		synctest.Wait()
		running.open()
		<-stopped
		mu.Lock()
		assert.Len(t, reasons, 3, "letters: two refused, one abandoned")
		mu.Unlock()
		requireAccounted(t, p)
	})
}

// runtime.Goexit in the handler loses none of the following letters, and
// the stop still waits for them all.
func TestGoexitInTheDeadLetterHandlerLosesNoLetter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var reasons []error
		h := func(task func(), reason error) {
			mu.Lock()
			reasons = append(reasons, reason)
			n := len(reasons)
			mu.Unlock()
			time.Sleep(time.Second)
			if n%2 == 1 {
				runtime.Goexit()
			}
		}
		p := New(1, WithMaxWaiting(1, Reject), WithIdleTimeout(-1), WithDeadLetter(h))
		defer p.Stop()
		running := newGate()
		defer running.release()
		t0 := time.Now()
		p.Submit(running.task())
		p.Submit(func() {}) // the queue is full
		synctest.Wait()
		for range 3 {
			p.Submit(func() {}) // refused
		}
		var at time.Duration
		stopped := make(chan struct{})
		go func() { p.Stop(); at = time.Since(t0); close(stopped) }()
		synctest.Wait()
		running.open()
		<-stopped
		assert.Equal(t, 4*time.Second, at, "Stop returned once the fourth letter was handled")
		mu.Lock()
		require.Len(t, reasons, 4, "letters: three refused, one abandoned")
		for i, want := range []error{ErrQueueFull, ErrQueueFull, ErrQueueFull, ErrStopped} {
			assert.ErrorIs(t, reasons[i], want, "letter %d's reason", i)
		}
		mu.Unlock()
		requireAccounted(t, p)
	})
}

// --- 8. bad input ---

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
						WithDeadLetter(func(func(), error) { letters.Add(1) }))
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
							assert.True(t, p.TrySubmit(task))
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
					requireAccounted(t, p)
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
			want := "workerpool: WithMaxWaiting with " + o.String()
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
		assert.Equal(t, want, o.String())
	}
}

// WithDeadLetter(nil) means no handler, also over an earlier handler (the
// last option wins): refused, dropped and abandoned tasks are only counted.
func TestNilDeadLetterHandlerMeansTheTasksAreOnlyCounted(t *testing.T) {
	for _, policy := range []Overflow{Reject, DropOldest} {
		t.Run(policy.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var letters atomic.Int64
				p := New(1, WithMaxWaiting(1, policy), WithIdleTimeout(-1),
					WithDeadLetter(func(func(), error) { letters.Add(1) }), WithDeadLetter(nil))
				defer p.Stop()
				running := newGate()
				defer running.release()
				var ran atomic.Int64
				p.Submit(running.task())
				p.Submit(func() { ran.Add(1) }) // the queue is full
				synctest.Wait()
				err, panicked := recovered(func() { p.Submit(func() { ran.Add(1) }) }) // refused or drops the oldest
				assert.False(t, panicked, "Submit on a full queue with no handler panicked: %v", err)
				stopped := make(chan struct{})
				go func() { p.Stop(); close(stopped) }()
				synctest.Wait()
				running.open()
				<-stopped
				s := requireAccounted(t, p)
				assert.Zero(t, letters.Load(), "the replaced handler was called")
				assert.Zero(t, ran.Load(), "ran")
				assert.Equal(t, uint64(1), s.Abandoned, "abandoned")
				if policy == Reject {
					assert.Equal(t, uint64(1), s.Rejected, "rejected")
				} else {
					assert.Equal(t, uint64(1), s.Dropped, "dropped")
				}
			})
		})
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
		s := requireAccounted(t, p)
		assert.Zero(t, s.Submitted, "submitted")
	})
}

// Nil tasks are ignored by every call that takes a func(), even with a full
// queue: none waits, is refused, drops a task, or counts anywhere.
func TestNilTasksAreIgnoredByEveryCallEvenWithAFullQueue(t *testing.T) {
	for _, policy := range []Overflow{Block, Reject, DropOldest} {
		t.Run(policy.String(), func(t *testing.T) {
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
					assert.True(t, p.TrySubmit(nil), "TrySubmit(nil)")
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
				requireAccounted(t, p)
			})
		})
	}
}

// With a bound, a queued task whose context ends gives back its room at
// that moment even though no one calls its Wait or Done: a Task's ctx, or
// a group's. Before, it kept its place until someone looked at it or it
// reached the front of the queue.
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
				requireAccounted(t, p)
			})
		})
	}
}

// WithMaxWaiting(n, ...) documents "n < 1 means no bound"; any
// n >= 1 is a bound of n places. A bound of 2^32 or more overflows room's
// 32-bit free-places half into its parked-submitters half, so the pool
// believed submitters were parked: every TrySubmit was refused on an idle
// pool, under Reject every Submit and Do, and under Block with 1<<32 a
// Submit behind a busy worker waited forever on an empty queue. Such a
// bound now means math.MaxInt32.
func TestAHugeBoundIsStillABound(t *testing.T) {
	for _, n := range []int{1 << 32, math.MaxInt} {
		for _, overflow := range []Overflow{Block, Reject} {
			t.Run(overflow.String()+"/"+itoa(int64(n)), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var letters []error
					p := New(1, WithMaxWaiting(n, overflow), WithIdleTimeout(-1),
						WithDeadLetter(func(_ func(), r error) { letters = append(letters, r) }))
					ran := 0
					assert.True(t, p.TrySubmit(func() { ran++ }), "TrySubmit on an idle pool")
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

// --- 9. DropOldest counts what holds a place ---

// Under DropOldest, a delayed handle holds its place in the bound from the
// moment Go returns: a Submit that follows it in the same goroutine finds
// the bound filled by scheduled tasks and is refused, as under Reject,
// never queued past the bound.
func TestUnderDropOldestADelayedTaskHoldsItsPlaceOnceGoReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		letters := new(letterBox)
		p := New(1, WithMaxWaiting(1, DropOldest), WithDeadLetter(letters.handle))
		defer p.Stop()
		running := newGate()
		defer running.release()
		p.Submit(running.task())
		synctest.Wait()
		const rounds = 100
		for round := range rounds {
			delayed := p.Go(t.Context(), noopFn, Delay(time.Hour))
			p.Submit(func() {})
			synctest.Wait()
			s := p.Status()
			require.Equal(t, 1, s.Scheduled, "round %d: scheduled", round)
			require.Zero(t, s.Waiting, "round %d: waiting past the bound", round)
			delayed.Cancel()
		}
		s := p.Status()
		assert.Equal(t, uint64(rounds), s.Rejected, "rejected: every Submit")
		assert.Len(t, letters.got(), rounds, "dead letters")
	})
}

// stallingContext is a context whose Err stalls on the worker that took its
// task, before the worker starts it, until release is closed: the task is
// then in a worker's hands and not started.
type stallingContext struct {
	context.Context
	stalled, release chan struct{}
	once             sync.Once
}

// resume lets the stalled worker go on; it may be called again.
func (c *stallingContext) resume() {
	if !isClosed(c.release) {
		close(c.release)
	}
}

func newStallingContext(ctx context.Context) *stallingContext {
	return &stallingContext{Context: ctx, stalled: make(chan struct{}), release: make(chan struct{})}
}

func (c *stallingContext) Err() error {
	if strings.Contains(ownStack(), "(*job).work(") {
		c.once.Do(func() { close(c.stalled) })
		<-c.release
	}
	return c.Context.Err()
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
				p := New(1, WithMaxWaiting(2, DropOldest), WithDeadLetter(letters.handle))
				defer p.Stop()
				running := newGate()
				defer running.release()
				p.Submit(running.task())
				if beside == "scheduled" {
					p.Go(t.Context(), noopFn, Delay(time.Hour))
				}
				stalling := newStallingContext(t.Context())
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

// --- 10. a queue with no room: WithMaxWaiting(0, overflow) ---

// With a bound of 0 nothing waits: on a free worker every call runs its task
// at once, and while every worker is busy Reject refuses every call with
// ErrQueueFull (Submit's task goes to the dead-letter handler), and so does
// DropOldest, which has nothing to drop. Nothing is queued or dropped.
func TestZeroBoundRunsAtOnceOrRefusesUnderRejectAndDropOldest(t *testing.T) {
	for _, policy := range []Overflow{Reject, DropOldest} {
		t.Run(policy.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				letters := new(letterBox)
				p := New(1, WithMaxWaiting(0, policy), WithDeadLetter(letters.handle))
				defer p.Stop()
				var ran atomic.Int64
				task := func() { ran.Add(1) }
				require.NoError(t, p.Do(task), "Do on a free worker")
				synctest.Wait()
				require.True(t, p.TrySubmit(task), "TrySubmit on a free worker")
				synctest.Wait()
				require.NoError(t, p.Go(t.Context(), fnOf(task)).Wait(), "Go on a free worker")
				require.NoError(t, p.DoWait(task), "DoWait on a free worker")

				running := newGate()
				defer running.release()
				require.NoError(t, p.Do(running.task()), "Do on a free worker")
				synctest.Wait()
				assert.ErrorIs(t, p.Do(task), ErrQueueFull, "Do")
				assert.ErrorIs(t, p.DoContext(t.Context(), task), ErrQueueFull, "DoContext")
				assert.ErrorIs(t, p.DoWait(task), ErrQueueFull, "DoWait")
				assert.False(t, p.TrySubmit(task), "TrySubmit")
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
// its task on it; TrySubmit still refuses at once, and DoContext stops
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
		assert.False(t, p.TrySubmit(task), "TrySubmit")
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
		assert.Equal(t, uint64(1), s.Rejected, "rejected: TrySubmit")
	})
}

// With a bound of 0 a delayed task, which must wait, is refused with
// ErrQueueFull at once under every policy; a heavy task runs if its slots
// are free at once, and otherwise meets the overflow as any task does.
func TestZeroBoundRefusesDelayedTasksAndRunsHeavyOnesOnFreeSlots(t *testing.T) {
	for _, policy := range []Overflow{Block, Reject, DropOldest} {
		t.Run(policy.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(2, WithMaxWaiting(0, policy))
				defer p.Stop()
				assert.ErrorIs(t, p.Go(t.Context(), noopFn, Delay(time.Second)).Wait(), ErrQueueFull, "Delay")
				assert.ErrorIs(t, p.Go(t.Context(), noopFn, At(time.Now().Add(time.Second))).Wait(), ErrQueueFull, "At")
				assert.NoError(t, p.Go(t.Context(), noopFn, Weight(2)).Wait(), "Weight(2) on two free slots")

				running := newGate()
				defer running.release()
				p.Submit(running.task())
				synctest.Wait()
				heavy := make(chan *Task, 1)
				go func() { heavy <- p.Go(t.Context(), noopFn, Weight(2)) }() // under Block, Go waits
				synctest.Wait()
				if policy == Block {
					assert.Empty(t, heavy, "Weight(2) waits for two free slots")
					running.open()
					assert.NoError(t, (<-heavy).Wait(), "Weight(2) once two slots are free")
				} else {
					assert.ErrorIs(t, (<-heavy).Wait(), ErrQueueFull, "Weight(2) with one slot free")
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

// Under DropOldest a job a worker has taken but not started holds no place
// (doc.go, Bounds), and neither does a canceled job that still sits in the
// queue. With one of each, the queue holds one live task and has room for
// a second: a new task must drop nothing. Today makeRoom counts
// min(waiting count, queue length), and each of the two counts one of the
// two dead entries, so it sees a full queue and drops the live task.
func TestUnderDropOldestAHandedJobBesideACanceledOneDropsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		letters := new(letterBox)
		p := New(1, WithMaxWaiting(2, DropOldest), WithDeadLetter(letters.handle), WithIdleTimeout(-1))
		defer p.Stop()
		running := newGate()
		defer running.release()
		p.Submit(running.task())
		stalling := newStallingContext(t.Context())
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

// A submitter that waits for room under Block when StopWait is called is
// never admitted (doc.go: a stop admits none of them from the moment it is
// called; Submit panics with ErrStopped). Here its ticket is on its way to
// a dispatcher that is busy (held in a ctx's Err while it accepts a job),
// StopWait begins, and a place frees; dispatch then takes the ticket before
// the stop message and admits it: Submit returns and its task runs. Parked
// tickets and stragglers are refused; a ticket received normally after the
// stop began is not.
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
		queued.Cancel() // frees a place
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
