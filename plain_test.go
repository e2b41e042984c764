package workerpool

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests for plain tasks given TaskOptions (DoContext, carried by a
// plainJob, and DoWaitContext): the option rules themselves run over every
// call in the option tests (see optionCalls); here is what is particular
// to a task with no handle: its losses go to the dead-letter handler, or
// to DoWaitContext's caller, Retry is refused, and its carrier is reused
// and never touched once released.

// DoContext panics when given Retry, with a message that says to use Go: a
// func() cannot fail but by panicking. Nothing is queued or counted.
func TestDoWithRetryPanicsSayingToUseGo(t *testing.T) {
	forEachPlainOptionCall(t, func(t *testing.T, c optionCall) {
		p := New(1)
		defer p.Stop()
		ran := false
		err, panicked := recovered(func() {
			c.give(p, t.Context(), func(context.Context) error { ran = true; return nil }, TaskOption{Retry: Backoff(time.Second, time.Second, 2)})
		})
		require.True(t, panicked, "%s with Retry panics", c.name)
		assert.Contains(t, err.Error(), "use Go", "the panic's message")
		synctest.Wait()
		assert.False(t, ran, "the task ran")
		assert.Zero(t, p.Status().Submitted, "submitted")
		assert.Nil(t, c.give(p, t.Context(), func(context.Context) error { return nil }, TaskOption{Retry: nil})(), "TaskOption{Retry: nil} is no retry")
	})
}

// A plain task with options that is accepted and never runs goes to the
// dead-letter handler exactly once, with why, and is told to TaskDropped
// once: abandoned by Stop while it waits for its due time or in the queue,
// dropped from a full queue, expired, or too heavy after a Resize. The
// accounting invariant holds after the stop.
func TestLostPlainTasksWithOptionsGoToTheDeadLetterHandlerOnce(t *testing.T) {
	cases := []struct {
		name    string
		options []Option
		lose    func(p *WorkerPool, do func(...TaskOption))
		want    []error
	}{
		{"abandoned while scheduled and queued", nil, func(p *WorkerPool, do func(...TaskOption)) {
			do(TaskOption{Delay: time.Hour})
			do(TaskOption{Priority: 3})
			do(TaskOption{Weight: 2})
			go p.Stop() // it waits for the running tasks
		}, []error{ErrStopped, ErrStopped, ErrStopped}},
		{"dropped from a full queue", []Option{WithMaxWaiting(1, DropOldest)}, func(p *WorkerPool, do func(...TaskOption)) {
			do(TaskOption{Priority: 3})
			do(TaskOption{Priority: 1})
		}, []error{errDropped}},
		{"expired", []Option{WithQueueTimeout(time.Second)}, func(p *WorkerPool, do func(...TaskOption)) {
			do(TaskOption{Priority: 5})
			do(TaskOption{Delay: time.Second}) // due at 1s, expires at 2s
			time.Sleep(2 * time.Second)
		}, []error{errExpired, errExpired}},
		{"too heavy after a Resize", nil, func(p *WorkerPool, do func(...TaskOption)) {
			do(TaskOption{Weight: 2})
			do(TaskOption{Weight: 2, Delay: time.Second})
			p.Resize(1)
		}, []error{ErrTooHeavy, ErrTooHeavy}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forEachPlainOptionCall(t, func(t *testing.T, c optionCall) {
				letters := new(letterBox)
				var dropped atomic.Int64
				options := append([]Option{WithHooks(Hooks{DeadLetter: letters.handle}), WithHooks(Hooks{TaskDropped: func(TaskInfo) { dropped.Add(1) }})}, tc.options...)
				p := New(2, options...)
				running := newGate()
				defer running.release()
				p.Submit(running.task())
				p.Submit(running.task()) // both workers are busy
				var ran atomic.Int64
				tc.lose(p, func(opts ...TaskOption) {
					require.NoError(t, c.give(p, t.Context(), func(context.Context) error { ran.Add(1); return nil }, opts...)(), "%s accepted", c.name)
				})
				synctest.Wait()
				running.open()
				p.StopWait()
				var reasons []error
				for _, l := range letters.got() {
					reasons = append(reasons, l.reason)
				}
				require.Len(t, reasons, len(tc.want), "%s: dead letters", tc.name)
				for i, want := range tc.want {
					assert.ErrorIs(t, reasons[i], want, "%s: letter %d", tc.name, i)
				}
				s := requireStoppedClean(t, p)
				assert.Equal(t, int64(s.Dropped+s.Abandoned+s.Expired), int64(len(tc.want)), "%s: lost tasks counted", tc.name)
				assert.Equal(t, int64(len(tc.want)), dropped.Load(), "%s: TaskDropped calls", tc.name)
				assert.Equal(t, int64(s.Completed)-2, ran.Load(), "%s: the tasks that were not lost ran", tc.name)
			})
		})
	}
}

// A plain task with options that panics is a plain task's panic: the panic
// handler gets it, Status counts it in Panicked, and the worker goes on.
func TestPlainTaskWithOptionsPanicGoesToThePanicHandler(t *testing.T) {
	forEachPlainOptionCall(t, func(t *testing.T, c optionCall) {
		var handled atomic.Int64
		p := New(1, WithHooks(Hooks{Panic: func(any) { handled.Add(1) }}))
		require.NoError(t, c.give(p, t.Context(), func(context.Context) error { panic("boom") }, TaskOption{Delay: time.Second})())
		time.Sleep(time.Second)
		p.StopWait()
		assert.Equal(t, int64(1), handled.Load(), "panics handled")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Panicked, "panicked")
	})
}

// DoContext with options reuses its carriers: once the pool is warm, a delayed or
// prioritized plain task makes no allocation.
func TestDoWithOptionsReusesItsCarriers(t *testing.T) {
	if raceDetectorOn {
		t.Skip("allocation counts differ under -race")
	}
	p := New(1)
	defer p.StopWait()
	var wg sync.WaitGroup
	done := wg.Done
	for name, opts := range map[string][]TaskOption{
		"Priority": {TaskOption{Priority: 3}},
		"Weight":   {TaskOption{Weight: 1, Priority: -1}},
		"Delay":    {TaskOption{Delay: time.Nanosecond}},
	} {
		allocs := testing.AllocsPerRun(1000, func() {
			wg.Add(1)
			if err := p.DoContext(context.Background(), done, opts...); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
		})
		assert.Less(t, allocs, 0.1, "allocations per Do with %s", name)
	}
}

// A carrier the pool has let go of is never touched again: a test hook
// takes each released carrier and poisons it (a func that fails the test,
// options no task could have) instead of reusing it, while plain tasks
// with options are canceled by stops, dropped, expired and run in every
// way; under -race a late read is reported as a race as well.
func TestReleasedCarriersAreNeverTouched(t *testing.T) {
	var mu sync.Mutex
	var released []*plainJob
	poisonReleased = func(pj *plainJob) {
		if pj.job.state.Load() == 0xdead {
			t.Errorf("a carrier was released twice")
		}
		pj.fn = func() { t.Errorf("a released carrier's task ran") }
		pj.job.opts = &jobOptions{taskOptions: taskOptions{due: -1, priority: -1 << 40, weight: -1}}
		pj.job.state.Store(0xdead)
		mu.Lock()
		released = append(released, pj)
		mu.Unlock()
	}
	defer func() { poisonReleased = nil }()
	for round := range 20 {
		synctest.Test(t, func(t *testing.T) {
			options := []Option{WithHooks(Hooks{DeadLetter: func(func(), error) {}})}
			switch round % 4 {
			case 1:
				options = append(options, WithMaxWaiting(3, DropOldest))
			case 2:
				options = append(options, WithQueueTimeout(50*time.Millisecond))
			case 3:
				options = append(options, WithMaxWaiting(2, Block))
			}
			p := New(2, options...)
			for i := range 30 {
				opts := []TaskOption{{Priority: i % 3, Delay: time.Duration(i%4) * 10 * time.Millisecond, Weight: 1 + i%2}}
				go func() {
					_ = p.DoContext(context.Background(), func() { time.Sleep(time.Duration(i%3) * 10 * time.Millisecond) }, opts...)
				}()
			}
			synctest.Wait()
			p.Resize(1) // drops the heavy ones that wait, queued or scheduled
			time.Sleep(25 * time.Millisecond)
			if round%2 == 0 {
				p.Stop()
			} else {
				p.StopWait()
			}
			requireStoppedClean(t, p)
		})
	}
	mu.Lock()
	defer mu.Unlock()
	assert.NotEmpty(t, released, "carriers released")
	for _, pj := range released {
		assert.Equal(t, uint32(0xdead), pj.job.state.Load(), "a released carrier was written after its release")
	}
}

// The plain tasks of every option call are counted as plain tasks are:
// Submitted, then Completed; a refused one (here too heavy) is Rejected
// only; Status.Waiting and Scheduled see them as they see handles.
func TestPlainTasksWithOptionsCountInStatus(t *testing.T) {
	forEachPlainOptionCall(t, func(t *testing.T, c optionCall) {
		p := New(1)
		running := newGate()
		defer running.release()
		p.Submit(running.task())
		noop := func(context.Context) error { return nil }
		require.NoError(t, c.give(p, t.Context(), noop, TaskOption{Priority: 2})())
		require.NoError(t, c.give(p, t.Context(), noop, TaskOption{Delay: time.Second})())
		assert.ErrorIs(t, c.give(p, t.Context(), noop, TaskOption{Weight: 2})(), ErrTooHeavy)
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 1, s.Waiting, "waiting")
		assert.Equal(t, 1, s.Scheduled, "scheduled")
		assert.Equal(t, uint64(3), s.Submitted, "submitted: the running task and two plain tasks with options")
		assert.Equal(t, uint64(1), s.Rejected, "rejected")
		running.open()
		time.Sleep(time.Second)
		p.StopWait()
		s = requireStoppedClean(t, p)
		assert.Equal(t, uint64(3), s.Completed, "completed")
	})
}

// A plain task given only a delay waits in the timer heap as it is, with
// no carrier, and holds its place in the bound as any scheduled task does:
// under Block and Reject the room it took, under DropOldest a place in
// Scheduled from the moment its call returns, so that the next call sees
// the bound filled; once due it runs, and its place frees.
func TestDelayedPlainTaskHoldsItsPlaceInTheBound(t *testing.T) {
	for _, policy := range []Overflow{Block, Reject, DropOldest} {
		t.Run(policy.string(), func(t *testing.T) {
			forEachPlainOptionCall(t, func(t *testing.T, c optionCall) {
				p := New(1, WithMaxWaiting(1, policy))
				defer p.Stop()
				running := newGate()
				defer running.release()
				p.Submit(running.task())
				synctest.Wait()
				var ran atomic.Bool
				require.NoError(t, c.give(p, t.Context(), func(context.Context) error { ran.Store(true); return nil }, TaskOption{Delay: time.Second})())
				assert.False(t, tryDo(p, func() {}), "TryDo while the delayed task holds the bound's place")
				synctest.Wait()
				assert.Equal(t, 1, p.Status().Scheduled, "scheduled")
				running.open()
				time.Sleep(time.Second)
				synctest.Wait()
				assert.True(t, ran.Load(), "the delayed task ran when due")
				assert.True(t, tryDo(p, func() {}), "TryDo once the place freed")
				s := p.Status()
				assert.Zero(t, s.Scheduled, "scheduled")
				assert.Equal(t, uint64(1), s.Rejected, "rejected")
			})
		})
	}
}

// A delayed plain task that a stop abandons gives back the room it held
// under Block and Reject, with a carrier or without one (a delay alone),
// with a ctx that was done (a try) or not: a stopped pool's room is back to
// its bound.
func TestADelayedPlainTaskThatAStopAbandonsGivesBackItsRoom(t *testing.T) {
	for _, policy := range []Overflow{Block, Reject} {
		for _, mode := range stopModes {
			if !mode.abandons {
				continue
			}
			for carrier, opts := range map[string][]TaskOption{"a delay alone": {{Delay: time.Second}}, "a carrier": {{Delay: time.Second, Label: "l"}}} {
				for _, ctx := range []context.Context{context.Background(), doneContext} {
					name := fmt.Sprintf("%s/%s/%s/ctx done %t", policy.string(), mode.name, carrier, ctx.Err() != nil)
					t.Run(name, func(t *testing.T) {
						synctest.Test(t, func(t *testing.T) {
							box := new(letterBox)
							p := New(1, WithMaxWaiting(2, policy), WithHooks(Hooks{DeadLetter: box.handle}))
							require.NoError(t, p.DoContext(ctx, func() {}, opts...))
							require.NoError(t, p.DoContext(ctx, func() {}, opts...))
							synctest.Wait()
							require.Equal(t, 2, p.Status().Scheduled, "scheduled")
							mode.stop(p)
							s := requireStoppedClean(t, p)
							assert.Equal(t, uint64(2), s.Abandoned, "abandoned")
							assert.Len(t, box.got(), 2, "dead letters")
						})
					})
				}
			}
		}
	}
}

// DoContext's ctx bounds only the wait for room: a delayed task it
// accepted runs when due, although ctx ended before, with a carrier or
// without one.
func TestDoContextDelayedTaskOutlivesItsContext(t *testing.T) {
	for _, opts := range [][]TaskOption{{TaskOption{Delay: time.Second}}, {TaskOption{Delay: time.Second, Priority: 2}}} {
		synctest.Test(t, func(t *testing.T) {
			p := New(1)
			defer p.StopWait()
			ctx, cancel := context.WithCancel(t.Context())
			start := time.Now()
			ranAt := make(chan time.Duration, 1)
			require.NoError(t, p.DoContext(ctx, func() { ranAt <- time.Since(start) }, opts...))
			cancel()
			assert.Equal(t, time.Second, <-ranAt, "ran when due, with %d options", len(opts))
			assert.Zero(t, p.Status().Canceled)
		})
	}
}

// BenchmarkDoOptions is Do on a pool of 4 kept busy enough that tasks
// wait: without options ("none"), with TaskOption{Priority: 1} ("priority", a pooled
// carrier), with TaskOption{Delay: 1µs} ("delay", a timer heap entry and no carrier),
// and with a Label ("label", a pooled carrier). Once the pool is warm none
// allocates: compare allocs/op.
func BenchmarkDoOptions(b *testing.B) {
	task := func() {}
	for _, c := range []struct {
		name string
		opts []TaskOption
	}{
		{"none", nil},
		{"priority", []TaskOption{{Priority: 1}}},
		{"delay", []TaskOption{{Delay: time.Microsecond}}},
		{"label", []TaskOption{{Label: "thumbnail"}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := New(4)
			defer p.StopWait()
			b.ReportAllocs()
			for b.Loop() {
				_ = p.DoContext(context.Background(), task, c.opts...)
			}
		})
	}
}
