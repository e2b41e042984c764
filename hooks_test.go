package workerpool

import (
	"context"
	"os"
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

// hookLog records every hook call, and counts the calls made on the
// dispatcher goroutine, which must be none.
type hookLog struct {
	mu           sync.Mutex
	started      []time.Duration
	finished     []finish
	dropped      []error
	onDispatcher atomic.Int64
}

// finish is one TaskFinished call.
type finish struct {
	waited, ran time.Duration
	err         error
}

func (l *hookLog) hooks() Hooks {
	return Hooks{
		TaskStarted: func(waited time.Duration) {
			l.checkGoroutine()
			l.mu.Lock()
			defer l.mu.Unlock()
			l.started = append(l.started, waited)
		},
		TaskFinished: func(waited, ran time.Duration, err error) {
			l.checkGoroutine()
			l.mu.Lock()
			defer l.mu.Unlock()
			l.finished = append(l.finished, finish{waited, ran, err})
		},
		TaskDropped: func(reason error) {
			l.checkGoroutine()
			l.mu.Lock()
			defer l.mu.Unlock()
			l.dropped = append(l.dropped, reason)
		},
	}
}

func (l *hookLog) checkGoroutine() {
	if onDispatcher() {
		l.onDispatcher.Add(1)
	}
}

// onDispatcher reports whether the calling goroutine is the dispatcher:
// its stack shows dispatcher.run. (A worker's shows the dispatcher's
// closure that started it, not run.)
func onDispatcher() bool {
	return strings.Contains(ownStack(), "(*dispatcher).run(")
}

// ownStack is the calling goroutine's stack, up to the line that names
// its creator.
func ownStack() string {
	buf := make([]byte, 64<<10)
	stack := string(buf[:runtime.Stack(buf, false)])
	if i := strings.Index(stack, "\ncreated by "); i >= 0 {
		stack = stack[:i]
	}
	return stack
}

// neverRun is the number of tasks s counts as never run, refused ones
// included: each gets one TaskDropped.
func neverRun(s Status) uint64 {
	return s.Rejected + s.Dropped + s.Abandoned + s.Canceled + s.Expired
}

func (l *hookLog) startedNow() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Duration(nil), l.started...)
}

func (l *hookLog) finishedNow() []finish {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]finish(nil), l.finished...)
}

func (l *hookLog) droppedNow() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.dropped...)
}

// With one worker, each task waits exactly as long as the ones before it
// run: TaskStarted gets that wait, TaskFinished the wait and the run, on
// the fake clock, and TaskFinished has run when the task's Wait returns.
func TestHooksGetExactWaitAndRunTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := new(hookLog)
		p := New(1, WithHooks(l.hooks()))
		defer p.Stop()
		p.Submit(func() { time.Sleep(3 * time.Second) })
		p.Submit(func() { time.Sleep(2 * time.Second) })
		task := p.Go(t.Context(), func(context.Context) error { time.Sleep(time.Second); return errTask })
		require.ErrorIs(t, task.Wait(), errTask)
		assert.Equal(t, []finish{{0, 3 * time.Second, nil}, {3 * time.Second, 2 * time.Second, nil}, {5 * time.Second, time.Second, errTask}},
			l.finishedNow(), "TaskFinished, complete when Wait returns")
		assert.Equal(t, []time.Duration{0, 3 * time.Second, 5 * time.Second}, l.startedNow(), "TaskStarted")
		require.NoError(t, p.DoWait(func() { time.Sleep(4 * time.Second) }))
		assert.Equal(t, finish{0, 4 * time.Second, nil}, l.finishedNow()[3], "DoWait's task, finished when DoWait returns")
		assert.Zero(t, l.onDispatcher.Load(), "hooks run on the dispatcher")
	})
}

// A delayed task's wait counts from its due time, not from its submit, and
// each retry's from the moment it came due again; each run is one start
// and one finish with its own error.
func TestHooksCountWaitFromDueTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := new(hookLog)
		p := New(1, WithHooks(l.hooks()))
		defer p.Stop()
		p.Submit(func() { time.Sleep(8 * time.Second) })
		late := p.Go(t.Context(), func(context.Context) error { return nil }, Delay(5*time.Second)) // due at 5s, starts at 8s
		require.NoError(t, late.Wait())
		assert.Equal(t, []time.Duration{0, 3 * time.Second}, l.startedNow(), "a task due at 5s that starts at 8s waited 3s")

		fails := 2
		policy := func(int, error) (time.Duration, bool) { return 2 * time.Second, true }
		flaky := p.Go(t.Context(), func(context.Context) error {
			time.Sleep(time.Second)
			if fails > 0 {
				fails--
				return errFlaky
			}
			return nil
		}, Retry(policy), Delay(time.Second))
		require.NoError(t, flaky.Wait())
		got := l.finishedNow()[2:]
		assert.Equal(t, []finish{{0, time.Second, errFlaky}, {0, time.Second, errFlaky}, {0, time.Second, nil}}, got,
			"each attempt, due on an idle pool, waited 0 and ran 1s, with its own error")
		s := p.Status()
		assert.Equal(t, uint64(2), s.Retried, "retried")
	})
}

// TaskFinished gets nil for a plain func that returned, the handle's error,
// a *PanicError for every recovered panic (plain tasks and DoWait under a
// panic handler included), and ErrGoexit for runtime.Goexit.
func TestHooksTaskFinishedErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := new(hookLog)
		var handled atomic.Int64
		p := New(1, WithHooks(l.hooks()), WithPanicHandler(func(any) { handled.Add(1) }))
		defer p.Stop()
		ctx := t.Context()
		p.Submit(func() {})
		p.Submit(func() { panic("plain") })
		p.Submit(runtime.Goexit)
		require.NoError(t, p.DoWait(func() { panic("dowait") }), "DoWait returns nil after a panic the handler took")
		assert.ErrorIs(t, p.Go(ctx, func(context.Context) error { return errTask }).Wait(), errTask)
		_, err := Call(ctx, p, func(context.Context) (int, error) { panic("call") }).Wait()
		var pe *PanicError
		require.ErrorAs(t, err, &pe)
		assert.ErrorIs(t, p.Go(ctx, func(context.Context) error { runtime.Goexit(); return nil }).Wait(), ErrGoexit)

		got := l.finishedNow()
		require.Len(t, got, 7, "one finish per run")
		assert.NoError(t, got[0].err, "plain func that returned")
		for i, value := range map[int]string{1: "plain", 3: "dowait", 5: "call"} {
			var pe *PanicError
			if assert.ErrorAs(t, got[i].err, &pe, "finish %d", i) {
				assert.Equal(t, value, pe.Value, "finish %d: panic value", i)
				assert.NotEmpty(t, pe.Stack, "finish %d: stack", i)
			}
		}
		assert.Equal(t, ErrGoexit, got[2].err, "plain Goexit")
		assert.ErrorIs(t, got[4].err, errTask, "Task's error")
		assert.Equal(t, ErrGoexit, got[6].err, "Task's Goexit")
		assert.Equal(t, int64(2), handled.Load(), "the panic handler took the plain and the DoWait panics")
	})
}

// TaskDropped runs once for each task counted as refused, dropped,
// abandoned, canceled or expired, with the reason; in the refusing call's
// goroutine before it returns, and for the rest before Stop returns.
func TestHooksTaskDroppedOncePerTaskNeverRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := new(hookLog)
		letters := make(chan error, 10)
		p := New(1, WithHooks(l.hooks()), WithMaxWaiting(1, Reject),
			WithDeadLetter(func(_ func(), reason error) { letters <- reason }))
		g := newGate()
		p.Submit(g.task())
		synctest.Wait()
		p.Submit(func() {}) // fills the queue
		assert.Equal(t, ErrQueueFull, p.Do(func() {}), "Do")
		assert.Len(t, l.droppedNow(), 1, "Do's refusal, told before Do returns")
		assert.False(t, p.TrySubmit(func() {}), "TrySubmit")
		assert.ErrorIs(t, p.DoBatch([]func(){func() {}, func() {}, func() {}}), ErrQueueFull, "DoBatch")
		assert.ErrorIs(t, p.Go(t.Context(), func(context.Context) error { return nil }, Weight(2)).Wait(), ErrTooHeavy, "Go")
		assert.Equal(t, []error{ErrQueueFull, ErrQueueFull, ErrQueueFull, ErrQueueFull, ErrQueueFull, ErrTooHeavy}, l.droppedNow(),
			"each refusal told in its call")
		p.Submit(func() {}) // refused: the dead-letter handler and TaskDropped learn it on the deliverer
		synctest.Wait()
		assert.Equal(t, ErrQueueFull, <-letters, "dead letter")
		assert.Len(t, l.droppedNow(), 7, "Submit's refusal")
		stopped := make(chan struct{})
		go func() { p.Stop(); close(stopped) }()
		synctest.Wait() // the stop abandoned the queued task, and waits for the running one
		g.open()
		<-stopped
		s := requireStoppedClean(t, p)
		dropped := l.droppedNow()
		assert.Len(t, dropped, 8, "the abandoned task, told before Stop returns")
		assert.ErrorIs(t, dropped[7], ErrStopped, "reason")
		assert.Equal(t, uint64(len(dropped)), neverRun(s), "one call per task counted as never run")
		assert.Error(t, p.Do(func() {}), "Do after stop")
		assert.Len(t, l.droppedNow(), 8, "a call refused by the stop was never accepted: no TaskDropped")
		assert.Zero(t, l.onDispatcher.Load(), "hooks run on the dispatcher")
	})
}

// A task dropped for a newer one, expired or canceled gets one TaskDropped
// each, with its reason; a retried task canceled while it waits for its
// next run gets the cancel joined with its last run's error.
func TestHooksTaskDroppedReasons(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := new(hookLog)
		p := New(1, WithHooks(l.hooks()), WithMaxWaiting(2, DropOldest), WithQueueTimeout(10*time.Second))
		ctx := t.Context()
		g := newGate()
		p.Submit(g.task())
		synctest.Wait()
		p.Submit(func() {})                                            // dropped by the third
		first := p.Go(ctx, func(context.Context) error { return nil }) // dropped by the fourth
		third := p.Go(ctx, func(context.Context) error { return nil }) // expires
		fourth := p.Go(ctx, func(context.Context) error { return nil })
		assert.ErrorIs(t, first.Wait(), ErrDropped, "first")
		fourth.Cancel()
		assert.ErrorIs(t, fourth.Wait(), context.Canceled, "fourth")
		time.Sleep(10 * time.Second)
		assert.ErrorIs(t, third.Wait(), ErrExpired, "third")
		g.open()

		retried := p.Go(ctx, func(context.Context) error { return errFlaky },
			Retry(func(int, error) (time.Duration, bool) { return time.Hour, true }))
		synctest.Wait() // the first run failed: the task waits an hour for the next
		retried.Cancel()
		err := retried.Wait()
		p.StopWait()
		s := requireStoppedClean(t, p)
		dropped := l.droppedNow()
		require.Len(t, dropped, 5, "one per task never run")
		assert.ErrorIs(t, dropped[0], ErrDropped, "plain task dropped")
		assert.ErrorIs(t, dropped[1], ErrDropped, "Task dropped")
		assert.ErrorIs(t, dropped[2], context.Canceled, "Task canceled")
		assert.ErrorIs(t, dropped[3], ErrExpired, "Task expired")
		assert.ErrorIs(t, dropped[4], context.Canceled, "retry canceled")
		assert.ErrorIs(t, dropped[4], errFlaky, "retry canceled, with its last run's error")
		assert.Equal(t, err, dropped[4], "the reason Wait reports")
		assert.Equal(t, uint64(len(dropped)), neverRun(s), "one call per task counted as never run")
		assert.Zero(t, l.onDispatcher.Load(), "hooks run on the dispatcher")
	})
}

// A hook that panics is treated like a task's panic: the panic handler
// takes it and the pool goes on: a task whose TaskStarted panicked still
// runs, and the dead-letter handler still gets a task whose TaskDropped
// panicked. It is not a task's panic, so Panicked does not count it.
func TestHookPanicGoesToPanicHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var handled []any
		var mu sync.Mutex
		letters := make(chan error, 1)
		p := New(1, WithMaxWaiting(1, Reject),
			WithPanicHandler(func(r any) { mu.Lock(); handled = append(handled, r); mu.Unlock() }),
			WithDeadLetter(func(_ func(), reason error) { letters <- reason }),
			WithHooks(Hooks{
				TaskStarted:  func(time.Duration) { panic("started") },
				TaskFinished: func(time.Duration, time.Duration, error) { panic("finished") },
				TaskDropped:  func(error) { panic("dropped") },
			}))
		ran := false
		require.NoError(t, p.DoWait(func() { ran = true }))
		assert.True(t, ran, "the task ran after its TaskStarted panicked")
		g := newGate()
		p.Submit(g.task())
		synctest.Wait()
		p.Submit(func() {})
		p.Submit(func() {}) // refused: TaskDropped panics, then the dead letter goes out
		synctest.Wait()
		assert.ErrorIs(t, <-letters, ErrQueueFull, "dead letter after TaskDropped panicked")
		g.open()
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Zero(t, s.Panicked, "hook panics are not task panics")
		mu.Lock()
		defer mu.Unlock()
		assert.ElementsMatch(t, []any{"started", "finished", "started", "finished", "started", "finished", "dropped"}, handled, "the panic handler got every hook panic")
	})
}

// TestHookPanicWithoutHandlerCrashes runs itself in a child process:
// without a panic handler, a hook's panic crashes the program like a
// task's.
func TestHookPanicWithoutHandlerCrashes(t *testing.T) {
	if os.Getenv("WORKERPOOL_HOOK_CRASH_CHILD") == "1" {
		p := New(1, WithHooks(Hooks{TaskStarted: panickingHook}))
		p.Submit(func() {})
		p.StopWait()
		os.Exit(0) // reached only if the pool swallowed the panic
	}
	out := requireChildPanics(t, "TestHookPanicWithoutHandlerCrashes", "WORKERPOOL_HOOK_CRASH_CHILD")
	assert.Contains(t, out, "panic: hook boom", "panic message")
	assert.Contains(t, out, "panickingHook", "stack shows the hook")
}

func panickingHook(time.Duration) { panic("hook boom") }

// With hooks, a plain Submit still makes no allocation: the time it became
// ready travels in the work, not in a wrapper.
func TestSubmitWithHooksDoesNotAllocate(t *testing.T) {
	var n atomic.Int64
	p := New(4, WithHooks(Hooks{
		TaskStarted:  func(time.Duration) { n.Add(1) },
		TaskFinished: func(time.Duration, time.Duration, error) { n.Add(1) },
		TaskDropped:  func(error) { n.Add(1) },
	}))
	defer p.Stop()
	task := func() {}
	allocs := testing.AllocsPerRun(1000, func() { p.Submit(task) })
	assert.Zero(t, allocs, "allocations per Submit")
}

// A pool reads the clock for tasks only if TaskStarted or TaskFinished is
// set.
func TestHooksTimeTasksOnlyWhenAsked(t *testing.T) {
	for _, c := range []struct {
		hooks Hooks
		timed bool
	}{
		{Hooks{}, false},
		{Hooks{TaskDropped: func(error) {}}, false},
		{Hooks{TaskStarted: func(time.Duration) {}}, true},
		{Hooks{TaskFinished: func(time.Duration, time.Duration, error) {}}, true},
	} {
		p := New(1, WithHooks(c.hooks))
		assert.Equal(t, c.timed, p.cfg.timed, "timed with %+v", c.hooks)
		p.Stop()
	}
	p := New(1)
	defer p.Stop()
	assert.False(t, p.cfg.timed, "timed without hooks")
}

// BenchmarkSubmitHooks measures what the hooks add to a plain Submit: none
// (the default path), and all three set to funcs that do nothing, which
// costs three clock reads and two calls per task.
func BenchmarkSubmitHooks(b *testing.B) {
	all := Hooks{
		TaskStarted:  func(time.Duration) {},
		TaskFinished: func(time.Duration, time.Duration, error) {},
		TaskDropped:  func(error) {},
	}
	for _, c := range []struct {
		name string
		opts []Option
	}{{"hooks=none", nil}, {"hooks=all", []Option{WithHooks(all)}}} {
		b.Run(c.name, func(b *testing.B) { benchmarkSubmit(b, 4, c.opts...) })
	}
}
