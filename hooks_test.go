package workerpool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
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

// --- wait and run times ---

// hookLog records every hook call, and counts the calls made on the
// dispatcher goroutine, which must be none.
type hookLog struct {
	mu           sync.Mutex
	started      []time.Duration
	finished     []finish
	dropped      []error
	infos        []hookCall // every call, in order
	onDispatcher atomic.Int64
}

// hookCall is one hook call: which hook, what TaskInfo and ctx it got.
type hookCall struct {
	hook string // "started", "finished" or "dropped"
	info TaskInfo
	ctx  context.Context
}

// finish is one TaskFinished call.
type finish struct {
	waited, ran time.Duration
	err         error
}

func (l *hookLog) hooks() Hooks {
	return Hooks{
		TaskStarted: func(ctx context.Context, ti TaskInfo) context.Context {
			l.checkGoroutine()
			l.mu.Lock()
			defer l.mu.Unlock()
			l.started = append(l.started, ti.Waited)
			l.infos = append(l.infos, hookCall{"started", ti, ctx})
			return ctx
		},
		TaskFinished: func(ctx context.Context, ti TaskInfo) {
			l.checkGoroutine()
			l.mu.Lock()
			defer l.mu.Unlock()
			l.finished = append(l.finished, finish{ti.Waited, ti.Ran, ti.Err})
			l.infos = append(l.infos, hookCall{"finished", ti, ctx})
		},
		TaskDropped: func(ti TaskInfo) {
			l.checkGoroutine()
			l.mu.Lock()
			defer l.mu.Unlock()
			l.dropped = append(l.dropped, ti.Err)
			l.infos = append(l.infos, hookCall{"dropped", ti, nil})
		},
	}
}

func (l *hookLog) checkGoroutine() {
	if onDispatcher() {
		l.onDispatcher.Add(1)
	}
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
		late := p.Go(t.Context(), func(context.Context) error { return nil }, TaskOption{Delay: 5 * time.Second}) // due at 5s, starts at 8s
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
		}, TaskOption{Retry: policy, Delay: time.Second})
		require.NoError(t, flaky.Wait())
		got := l.finishedNow()[2:]
		assert.Equal(t, []finish{{0, time.Second, errFlaky}, {0, time.Second, errFlaky}, {0, time.Second, nil}}, got,
			"each attempt, due on an idle pool, waited 0 and ran 1s, with its own error")
		s := p.Status()
		assert.Equal(t, uint64(2), s.Retried, "retried")
	})
}

// obsWaits records TaskStarted's waits, in start order.
type obsWaits struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (w *obsWaits) hooks() Hooks {
	return Hooks{TaskStarted: func(ctx context.Context, ti TaskInfo) context.Context {
		w.mu.Lock()
		w.waits = append(w.waits, ti.Waited)
		w.mu.Unlock()
		return ctx
	}}
}

func (w *obsWaits) now() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.waits...)
}

// Exact waits under the fake clock: a rate limit keeps tasks in the queue
// until their token; a Pause holds the tasks submitted after it; a
// submitter that waits for room under Block is accepted only when room
// frees, and its wait counts from then.
func TestObserveWaitedExactUnderRateLimitPauseAndBlock(t *testing.T) {
	t.Run("rate limit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := new(obsWaits)
			p := New(3, WithHooks(w.hooks()), WithRateLimit(1, 1))
			for range 3 {
				p.Submit(func() {})
			}
			p.StopWait()
			assert.Equal(t, []time.Duration{0, time.Second, 2 * time.Second}, w.now())
		})
	})
	t.Run("pause", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := new(obsWaits)
			p := New(2, WithHooks(w.hooks()))
			ctx, cancel := context.WithCancel(t.Context())
			p.Pause(ctx)
			time.Sleep(time.Second)
			task := p.Go(t.Context(), func(context.Context) error { return nil })
			time.Sleep(4 * time.Second)
			cancel()
			require.NoError(t, task.Wait())
			p.StopWait()
			assert.Equal(t, []time.Duration{4 * time.Second}, w.now())
		})
	})
	t.Run("block", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := new(obsWaits)
			p := New(1, WithHooks(w.hooks()), WithMaxWaiting(1, Block))
			p.Submit(func() { time.Sleep(10 * time.Second) }) // runs: waited 0
			p.Submit(func() { time.Sleep(time.Second) })      // queued at 0: waited 10s
			p.Submit(func() {})                               // blocks until 10s, then queued: waited 1s
			p.StopWait()
			assert.Equal(t, []time.Duration{0, 10 * time.Second, time.Second}, w.now())
		})
	})
	t.Run("priority aging and expiry", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := new(obsWaits)
			p := New(1, WithHooks(w.hooks()), WithPriorityAging(time.Second), WithQueueTimeout(time.Minute))
			p.Submit(func() { time.Sleep(5 * time.Second) })
			time.Sleep(time.Second)
			low := p.Go(t.Context(), func(context.Context) error { return nil })
			time.Sleep(time.Second)
			high := p.Go(t.Context(), func(context.Context) error { return nil }, TaskOption{Priority: 1})
			require.NoError(t, low.Wait())
			require.NoError(t, high.Wait())
			p.StopWait()
			// at 5s low has waited 4s at level 0, high 3s at level 1: both aged to level 4; low, older, first
			assert.Equal(t, []time.Duration{0, 4 * time.Second, 3 * time.Second}, w.now())
		})
	})
}

// --- TaskFinished ---

// TaskFinished gets nil for a plain func that returned, the handle's error,
// a *PanicError for every recovered panic (plain tasks and DoWait under a
// panic handler included), and ErrGoexit for runtime.Goexit.
func TestHooksTaskFinishedErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := new(hookLog)
		var handled atomic.Int64
		p := New(1, WithHooks(l.hooks()), WithHooks(Hooks{Panic: func(any) { handled.Add(1) }}))
		defer p.Stop()
		ctx := t.Context()
		p.Submit(func() {})
		p.Submit(func() { panic("plain") })
		p.Submit(runtime.Goexit)
		require.NoError(t, p.DoWait(func() { panic("dowait") }), "DoWait returns nil after a panic the handler took")
		assert.ErrorIs(t, p.Go(ctx, func(context.Context) error { return errTask }).Wait(), errTask)
		_, err := GoResult(ctx, p, func(context.Context) (int, error) { panic("call") }).Wait()
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

// obsRuns ties each run of a task's func to its TaskFinished call through
// the worker goroutine that runs both.
type obsRuns struct {
	mu       sync.Mutex
	current  map[string]int // worker goroutine -> the task it runs
	finished map[int]int    // task -> TaskFinished calls
	started  map[int]int
	stray    int // TaskFinished on a goroutine that ran no task
}

func newObsRuns() *obsRuns {
	return &obsRuns{current: map[string]int{}, finished: map[int]int{}, started: map[int]int{}}
}

func (r *obsRuns) ran(id int) {
	g := goroutineID()
	r.mu.Lock()
	r.current[g] = id
	r.started[id]++
	r.mu.Unlock()
}

func (r *obsRuns) taskFinished(context.Context, TaskInfo) {
	g := goroutineID()
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.current[g]
	if !ok {
		r.stray++
		return
	}
	delete(r.current, g)
	r.finished[id]++
}

func (r *obsRuns) finishedOf(id int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.finished[id]
}

// TaskFinished has run for a task's every run by the time its Wait, DoWait,
// Future.Wait or Group.Wait returns, also while stops, cancels, retries and
// DropOldest race.
func TestObserveTaskFinishedBeforeWaitReturnsUnderRaces(t *testing.T) {
	for seed := range 400 {
		r := rand.New(rand.NewPCG(uint64(seed), 11))
		runs := newObsRuns()
		var nextID atomic.Int64
		p := New(1+r.IntN(2), WithMaxWaiting(1+r.IntN(2), DropOldest), WithHooks(Hooks{Panic: func(any) {}}),
			WithHooks(Hooks{TaskFinished: runs.taskFinished, TaskDropped: func(TaskInfo) {}}))
		var wg sync.WaitGroup
		for s := range 3 {
			sr := rand.New(rand.NewPCG(uint64(seed), uint64(s)))
			wg.Go(func() {
				ctx := context.Background()
				for range 15 {
					id := int(nextID.Add(1))
					body := func() { runs.ran(id); time.Sleep(time.Duration(id%3) * 20 * time.Microsecond) }
					check := func(how string, err error) {
						ran := func() bool { runs.mu.Lock(); defer runs.mu.Unlock(); return runs.started[id] > 0 }()
						if ran && runs.finishedOf(id) == 0 {
							t.Errorf("seed %d: %s returned (%v) before TaskFinished of its run", seed, how, err)
						}
					}
					switch sr.IntN(5) {
					case 0:
						err := p.DoWait(body)
						check("DoWait", err)
					case 1:
						task := p.Go(ctx, func(context.Context) error { body(); return nil }, TaskOption{Delay: time.Duration(sr.IntN(200)) * time.Microsecond})
						// (no cancel here: under DropOldest it can crash the pool, see
						// TestObserveDropOldestRefusalRacingCancelDoesNotCrash)
						check("Task.Wait", task.Wait())
					case 2:
						n := 0
						task := p.Go(ctx, func(context.Context) error {
							body()
							n++
							if n < 3 {
								return errFlaky
							}
							return nil
						}, TaskOption{Retry: func(int, error) (time.Duration, bool) { return 30 * time.Microsecond, true }})
						err := task.Wait()
						runs.mu.Lock()
						started, finished := runs.started[id], runs.finished[id]
						runs.mu.Unlock()
						if started != finished {
							t.Errorf("seed %d: retried Task.Wait returned (%v) after %d runs, %d TaskFinished", seed, err, started, finished)
						}
					case 3:
						f := GoResult(ctx, p, func(context.Context) (int, error) { body(); return 1, nil })
						_, err := f.Wait()
						check("Future.Wait", err)
					case 4:
						g := p.Group(ctx)
						g.SetLimit(1)
						g.Go(func(context.Context) error { body(); return nil })
						check("Group.Wait", g.Wait())
					}
				}
			})
		}
		time.Sleep(time.Duration(r.IntN(400)) * time.Microsecond)
		if r.IntN(2) == 0 {
			p.Stop()
		} else {
			p.StopWait()
		}
		wg.Wait()
		requireStoppedClean(t, p)
		runs.mu.Lock()
		assert.Zero(t, runs.stray, "TaskFinished without a run")
		for id, n := range runs.started {
			assert.Equal(t, n, runs.finished[id], "task %d: runs and TaskFinished calls", id)
		}
		runs.mu.Unlock()
		if t.Failed() {
			return
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// A plain task that panics with no panic handler crashes the program, and
// the TaskFinished that runs first, during the panic, is not told
// ErrGoexit, as if the task had called runtime.Goexit.
func TestObserveTaskFinishedNotGoexitForUnrecoveredPanic(t *testing.T) {
	if os.Getenv("WORKERPOOL_OBS_PANIC_CHILD") == "1" {
		p := New(1, WithHooks(Hooks{TaskFinished: func(_ context.Context, ti TaskInfo) {
			os.Stderr.WriteString("TaskFinished err: " + errString(ti.Err) + "\n")
		}}))
		p.Submit(func() { panic("task boom") })
		p.StopWait()
		os.Exit(0)
	}
	out := requireChildPanics(t, "TestObserveTaskFinishedNotGoexitForUnrecoveredPanic", "WORKERPOOL_OBS_PANIC_CHILD")
	assert.NotContains(t, out, "TaskFinished err: "+ErrGoexit.Error(), "TaskFinished told a panic is a Goexit")
}

// --- TaskDropped ---

// TaskDropped runs once for each task counted as refused, dropped,
// abandoned, canceled or expired, with the reason; in the refusing call's
// goroutine before it returns, and for the rest before Stop returns.
func TestHooksTaskDroppedOncePerTaskNeverRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := new(hookLog)
		letters := make(chan error, 10)
		p := New(1, WithHooks(l.hooks()), WithMaxWaiting(1, Reject),
			WithHooks(Hooks{DeadLetter: func(_ func(), reason error) { letters <- reason }}))
		g := newGate()
		p.Submit(g.task())
		synctest.Wait()
		p.Submit(func() {}) // fills the queue
		assert.Equal(t, ErrQueueFull, p.Do(func() {}), "Do")
		assert.Len(t, l.droppedNow(), 1, "Do's refusal, told before Do returns")
		assert.False(t, tryDo(p, func() {}), "TryDo")
		assert.ErrorIs(t, p.DoBatch([]func(){func() {}, func() {}, func() {}}), ErrQueueFull, "DoBatch")
		assert.ErrorIs(t, p.Go(t.Context(), func(context.Context) error { return nil }, TaskOption{Weight: 2}).Wait(), ErrTooHeavy, "Go")
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
		fourthCtx, cancelFourth := context.WithCancel(ctx)
		fourth := p.Go(fourthCtx, func(context.Context) error { return nil })
		assert.ErrorIs(t, first.Wait(), errDropped, "first")
		cancelFourth()
		assert.ErrorIs(t, fourth.Wait(), context.Canceled, "fourth")
		time.Sleep(10 * time.Second)
		assert.ErrorIs(t, third.Wait(), errExpired, "third")
		g.open()

		retriedCtx, cancelRetried := context.WithCancel(ctx)
		retried := p.Go(retriedCtx, func(context.Context) error { return errFlaky },
			TaskOption{Retry: func(int, error) (time.Duration, bool) { return time.Hour, true }})
		synctest.Wait() // the first run failed: the task waits an hour for the next
		cancelRetried()
		err := retried.Wait()
		p.StopWait()
		s := requireStoppedClean(t, p)
		dropped := l.droppedNow()
		require.Len(t, dropped, 5, "one per task never run")
		assert.ErrorIs(t, dropped[0], errDropped, "plain task dropped")
		assert.ErrorIs(t, dropped[1], errDropped, "Task dropped")
		assert.ErrorIs(t, dropped[2], context.Canceled, "Task canceled")
		assert.ErrorIs(t, dropped[3], errExpired, "Task expired")
		assert.ErrorIs(t, dropped[4], context.Canceled, "retry canceled")
		assert.ErrorIs(t, dropped[4], errFlaky, "retry canceled, with its last run's error")
		assert.Equal(t, err, dropped[4], "the reason Wait reports")
		assert.Equal(t, uint64(len(dropped)), neverRun(s), "one call per task counted as never run")
		assert.Zero(t, l.onDispatcher.Load(), "hooks run on the dispatcher")
	})
}

// obsOnDeliverer reports whether the calling goroutine is the dead-letter
// deliverer.
func obsOnDeliverer() bool {
	return strings.Contains(ownStack(), "deliverDeadLetters(")
}

// obsDrops counts TaskDropped calls: all of them, the ones per goroutine,
// the ones on the dispatcher, and the ones after `closed` was set.
type obsDrops struct {
	mu           sync.Mutex
	reasons      []error
	byGoroutine  map[string]int
	onDispatcher int
	delivered    int // on the deliverer
	afterClose   int
	closed       atomic.Bool
}

func (d *obsDrops) hook(ti TaskInfo) {
	reason := ti.Err
	disp, deliverer := onDispatcher(), obsOnDeliverer()
	id := goroutineID()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byGoroutine == nil {
		d.byGoroutine = map[string]int{}
	}
	d.reasons = append(d.reasons, reason)
	d.byGoroutine[id]++
	if disp {
		d.onDispatcher++
	}
	if deliverer {
		d.delivered++
	}
	if d.closed.Load() {
		d.afterClose++
	}
}

func (d *obsDrops) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.reasons)
}

func (d *obsDrops) on(id string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.byGoroutine[id]
}

// A job that dispatch refuses under DropOldest (scheduled tasks fill the
// bound) was not refused in DoWait's goroutine, so it is told on the
// deliverer, which may be after DoWait returned ErrQueueFull (doc.go:
// TaskDropped runs in the call that refused the task, and otherwise on the
// dead-letter goroutine). There is exactly one TaskDropped per refusal,
// never on the dispatcher, and on the deliverer when dispatch refused it
// (DoWait returned ErrQueueFull without a call in its own goroutine), all
// before Stop returns.
func TestObserveDropOldestRefusalByDispatchToldOnDeliverer(t *testing.T) {
	ctx := context.Background()
	byDispatch := 0
	for i := 0; i < 300; i++ {
		d := new(obsDrops)
		p := New(1, WithMaxWaiting(1, DropOldest), WithHooks(Hooks{TaskDropped: d.hook}))
		g := newGate()
		running := make(chan struct{})
		p.Submit(func() { close(running); g.wait() })
		<-running
		p.Go(ctx, func(context.Context) error { return nil }, TaskOption{Delay: time.Hour}) // holds the bound's only place, once dispatch scheduled it
		id := goroutineID()
		err := p.DoWait(func() {})
		inCaller := d.on(id)
		g.open()
		p.Stop()
		s := p.Status()
		assert.Equal(t, int(neverRun(s)), d.count(), "one TaskDropped per task never run")
		assert.Zero(t, d.onDispatcher, "TaskDropped on the dispatcher")
		if err == ErrQueueFull && inCaller == 0 {
			byDispatch++
			// the refusal and the scheduled task the Stop abandoned, both on the deliverer, before Stop returned
			if !assert.Equal(t, 2, d.delivered, "iteration %d: TaskDropped calls on the deliverer", i) {
				return
			}
		}
	}
	t.Logf("%d of 300 DoWait calls refused by dispatch", byDispatch)
}

// TaskDropped runs in the call that refused the task, before it returns,
// and otherwise on the dead-letter goroutine (doc.go). A group task held
// by SetLimit, then refused as too heavy after a Resize when a slot frees,
// is told on the deliverer: not on the worker goroutine whose task just
// finished, inside another task's run, and not in Group.Go's goroutine,
// which has returned. It is counted from its Go call, and dropped, as a
// queued task too heavy after a Resize is: in Dropped, not in Rejected.
func TestObserveHeldGroupTaskRefusedAfterResizeToldOnDeliverer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var onWorker, calls atomic.Int64
		p := New(2, WithHooks(Hooks{TaskDropped: func(TaskInfo) {
			calls.Add(1)
			if !obsOnDeliverer() && strings.Contains(ownStack(), "(*job).run(") {
				onWorker.Add(1)
			}
		}}))
		g := p.Group(t.Context())
		g.SetLimit(1)
		gate := newGate()
		g.Go(func(context.Context) error { gate.wait(); return nil })
		g.Go(func(context.Context) error { return nil }, TaskOption{Weight: 2}) // held: fits the pool now
		synctest.Wait()
		p.Resize(1)
		gate.open() // the slot frees: the held task goes to the pool, which refuses it as too heavy
		assert.ErrorIs(t, g.Wait(), ErrTooHeavy)
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(2), s.Submitted, "submitted")
		assert.Equal(t, uint64(1), s.Dropped, "dropped")
		assert.Zero(t, s.Rejected, "rejected")
		assert.Equal(t, int64(1), calls.Load(), "one TaskDropped")
		assert.Zero(t, onWorker.Load(), "TaskDropped ran on a worker, inside another task's run")
	})
}

// A DoBatch larger than the bound is refused in the caller with one
// TaskDropped per non-nil task, before DoBatch returns, also for a large
// batch; a TaskDropped that calls Status from the caller's goroutine works.
func TestObserveDoBatchRefusalOnePerTaskInCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		var p *WorkerPool
		p = New(1, WithMaxWaiting(2, Reject), WithHooks(Hooks{TaskDropped: func(ti TaskInfo) {
			reason := ti.Err
			calls.Add(1)
			_ = p.Status()
			if !errors.Is(reason, ErrQueueFull) {
				panic(reason)
			}
		}}))
		batch := make([]func(), 100_000)
		for i := range batch {
			if i%3 != 0 {
				batch[i] = func() {}
			}
		}
		assert.ErrorIs(t, p.DoBatch(batch), ErrQueueFull)
		assert.Equal(t, int64(66_666), calls.Load(), "one call per non-nil task, before DoBatch returned")
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(calls.Load()), neverRun(s))
	})
}

// Ctx deadlines and group cancellation give one TaskDropped each, with the
// ctx's error (or the group's cause), on the deliverer, and a Shutdown with
// a done ctx abandons the rest with ErrStopped before it returns.
func TestObserveDeadlinesGroupCancelAndShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := new(obsDrops)
		p := New(1, WithHooks(Hooks{TaskDropped: d.hook}))
		blocker := p.Go(t.Context(), func(ctx context.Context) error { <-ctx.Done(); return context.Cause(ctx) }) // until Shutdown gives up
		synctest.Wait()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		dl := p.Go(ctx, func(context.Context) error { return nil })
		gctx, gcancel := context.WithCancelCause(t.Context())
		g := p.Group(gctx)
		g.Go(func(context.Context) error { return nil })
		g.Go(func(context.Context) error { return nil }, TaskOption{Delay: time.Hour})
		errBye := errors.New("bye")
		gcancel(errBye)
		time.Sleep(2 * time.Second)
		assert.ErrorIs(t, dl.Wait(), context.DeadlineExceeded)
		assert.ErrorIs(t, g.Wait(), errBye)
		p.Submit(func() {})
		late := p.Go(t.Context(), func(context.Context) error { return nil }, TaskOption{Delay: time.Hour})
		synctest.Wait()
		done, dcancel := context.WithCancel(t.Context())
		dcancel()
		assert.ErrorIs(t, p.Shutdown(done), context.Canceled)
		d.closed.Store(true)
		assert.ErrorIs(t, blocker.Wait(), ErrStopped, "the running Task's ctx was cut")
		assert.ErrorIs(t, late.Wait(), ErrStopped)
		s := requireStoppedClean(t, p)
		assert.Equal(t, int(neverRun(s)), d.count())
		d.mu.Lock()
		defer d.mu.Unlock()
		require.Len(t, d.reasons, 5)
		assert.ErrorIs(t, d.reasons[0], errBye, "group canceled at once")
		assert.ErrorIs(t, d.reasons[1], errBye)
		assert.ErrorIs(t, d.reasons[2], context.DeadlineExceeded, "deadline after 1s")
		assert.ErrorIs(t, d.reasons[3], ErrStopped)
		assert.ErrorIs(t, d.reasons[4], ErrStopped)
		assert.Zero(t, d.afterClose, "told after Shutdown returned")
		assert.Zero(t, d.onDispatcher)
	})
}

// Under DropOldest, dispatch refuses a job that finds the bound filled by
// scheduled tasks (refuseJob) only if its owner has not settled it
// meanwhile: a Task canceled (Task.cancel, or its ctx) between acceptJob's
// settled check and refuseJob is settled once, counted once and told
// once. Settled twice, Task.settled would close its done channel twice (or
// drive its WaitGroup negative) on the dispatcher goroutine, which crashes
// the program, and the task would count in both Canceled and Rejected,
// with two TaskDropped calls. The child loops for three seconds to meet
// the race.
func TestObserveDropOldestRefusalRacingCancelDoesNotCrash(t *testing.T) {
	if os.Getenv("WORKERPOOL_OBS_REFUSE_CHILD") == "1" {
		fn := func(context.Context) error { return nil }
		deadline := time.Now().Add(3 * time.Second)
		for i := 0; time.Now().Before(deadline); i++ {
			var drops atomic.Int64
			p := New(1, WithMaxWaiting(1, DropOldest), WithHooks(Hooks{TaskDropped: func(TaskInfo) { drops.Add(1) }}))
			g := newGate()
			running := make(chan struct{})
			p.Submit(func() { close(running); g.wait() })
			<-running
			ctx, cancel := context.WithCancel(context.Background())
			p.Go(ctx, fn, TaskOption{Delay: time.Hour}) // fills the bound once dispatch has scheduled it
			task := p.Go(ctx, fn)                       // passes scheduledFill before that, then is refused by dispatch
			task.cancel()
			_ = task.Wait()
			cancel()
			g.open()
			p.Stop()
			if s := p.Status(); int64(neverRun(s)) != drops.Load() || s.Submitted != s.Completed+s.Abandoned+s.Canceled+s.Dropped+s.Expired {
				panic(fmt.Sprintf("iteration %d: %+v, %d TaskDropped calls", i, s, drops.Load()))
			}
		}
		return
	}
	out, err := runChild(t, "TestObserveDropOldestRefusalRacingCancelDoesNotCrash", "WORKERPOOL_OBS_REFUSE_CHILD")
	assert.NoError(t, err, "child:\n%s", out)
}

// A TaskDropped that calls runtime.Goexit on the deliverer does not cost
// the dead-letter handler the plain task it was told of: the handler still
// gets it (as TestObserveHookGoexitDoesNotHangWait checks for TaskStarted
// and TaskFinished, a hook's Goexit loses nothing of the task).
func TestObserveTaskDroppedGoexitKeepsDeadLetter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var letters atomic.Int64
		p := New(1, WithMaxWaiting(1, Reject),
			WithHooks(Hooks{TaskDropped: func(TaskInfo) { runtime.Goexit() }}),
			WithHooks(Hooks{DeadLetter: func(func(), error) { letters.Add(1) }}))
		g := newGate()
		p.Submit(g.task())
		synctest.Wait()
		p.Submit(func() {})
		p.Submit(func() {}) // refused: a dead letter
		synctest.Wait()
		g.open()
		p.StopWait()
		assert.Equal(t, int64(1), letters.Load(), "dead letters delivered")
	})
}

func obsStopRace(t *testing.T, seed int) {
	r := rand.New(rand.NewPCG(uint64(seed), 7))
	var started, finished, fnRuns, delivererAfterStop atomic.Int64
	var stopReturned atomic.Bool
	d := new(obsDrops)
	hooks := Hooks{
		TaskStarted:  func(ctx context.Context, _ TaskInfo) context.Context { started.Add(1); return ctx },
		TaskFinished: func(context.Context, TaskInfo) { finished.Add(1) },
		TaskDropped: func(ti TaskInfo) {
			if stopReturned.Load() && obsOnDeliverer() {
				delivererAfterStop.Add(1)
			}
			d.hook(ti)
		},
	}
	opts := []Option{WithHooks(hooks), WithHooks(Hooks{Panic: func(any) {}})}
	dropOldest := false // no Task.cancel nor ctx deadline then: see TestObserveDropOldestRefusalRacingCancelDoesNotCrash
	switch r.IntN(4) {
	case 1:
		dropOldest = true
		opts = append(opts, WithMaxWaiting(1+r.IntN(3), DropOldest))
	case 2:
		opts = append(opts, WithMaxWaiting(1+r.IntN(3), Reject))
	case 3:
		opts = append(opts, WithMaxWaiting(1+r.IntN(3), Block))
	}
	if r.IntN(3) == 0 {
		opts = append(opts, WithQueueTimeout(time.Duration(r.IntN(300))*time.Microsecond))
	}
	p := New(1+r.IntN(3), opts...)
	fn := func() { fnRuns.Add(1); time.Sleep(time.Duration(r2(seed)) * time.Microsecond) }
	tfn := func(context.Context) error { fn(); return nil }
	var wg sync.WaitGroup
	for s := range 3 {
		sr := rand.New(rand.NewPCG(uint64(seed), uint64(s)))
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var tasks []*Task
			g := p.Group(ctx)
			g.SetLimit(1 + sr.IntN(2))
			for range 20 {
				switch sr.IntN(12) {
				case 0:
					_ = p.Do(fn)
				case 1:
					tryDo(p, fn)
				case 2:
					_ = p.DoWait(fn)
				case 3:
					_ = p.DoBatch([]func(){fn, fn, nil, fn})
				case 4:
					c, cc := context.WithTimeout(ctx, time.Duration(sr.IntN(200))*time.Microsecond)
					_ = p.DoContext(c, fn)
					cc()
				case 5:
					tasks = append(tasks, p.Go(ctx, tfn, TaskOption{Delay: time.Duration(sr.IntN(500)) * time.Microsecond}))
				case 6:
					n := 0
					tasks = append(tasks, p.Go(ctx, func(context.Context) error {
						fn()
						n++
						if n < 3 {
							return errFlaky
						}
						return nil
					}, TaskOption{Retry: func(int, error) (time.Duration, bool) { return time.Duration(sr2(seed)) * time.Microsecond, true }}))
				case 7:
					c, cc := context.WithTimeout(ctx, time.Duration(sr.IntN(300))*time.Microsecond)
					if dropOldest {
						c = ctx
					}
					tasks = append(tasks, p.Go(c, tfn, TaskOption{Priority: sr.IntN(3)}))
					defer cc()
				case 8:
					if len(tasks) > 0 && !dropOldest {
						tasks[sr.IntN(len(tasks))].cancel()
					}
				case 9:
					g.Go(func(context.Context) error { fn(); return nil }, TaskOption{Delay: time.Duration(sr.IntN(100)) * time.Microsecond})
				case 10:
					g.Go(func(context.Context) error { fn(); return nil })
					if sr.IntN(4) == 0 {
						g.Go(func(context.Context) error { fn(); return errTask }) // cancels the group
					}
				case 11:
					tasks = append(tasks, p.Go(ctx, tfn, TaskOption{Weight: 1 + sr.IntN(3)}))
					if sr.IntN(3) == 0 {
						p.Resize(1 + sr.IntN(3))
					}
				}
			}
			_ = g.Wait()
			for _, task := range tasks {
				_ = task.Wait()
			}
		})
	}
	time.Sleep(time.Duration(r.IntN(500)) * time.Microsecond)
	switch r.IntN(4) {
	case 0:
		p.Stop()
	case 1:
		p.StopWait()
	case 2:
		c, cc := context.WithTimeout(context.Background(), time.Duration(r.IntN(300))*time.Microsecond)
		_ = p.Shutdown(c)
		cc()
	case 3:
		go p.Stop()
		c, cc := context.WithCancel(context.Background())
		cc()
		_ = p.Shutdown(c)
	}
	stopReturned.Store(true)
	wg.Wait()
	s := requireStoppedClean(t, p)
	assert.Equal(t, int(neverRun(s)), d.count(), "seed %d: one TaskDropped per task never run: %+v", seed, s)
	assert.Zero(t, d.onDispatcher, "seed %d: TaskDropped on the dispatcher", seed)
	assert.Zero(t, delivererAfterStop.Load(), "seed %d: TaskDropped delivered after the stop returned", seed)
	assert.Equal(t, fnRuns.Load(), started.Load(), "seed %d: one TaskStarted per run", seed)
	assert.Equal(t, fnRuns.Load(), finished.Load(), "seed %d: one TaskFinished per run", seed)
}

func r2(seed int) int  { return (seed*7919)%50 + 1 }
func sr2(seed int) int { return (seed*104729)%100 + 1 }

// Races of every kind of give-up against every kind of stop, with all
// three hooks: after the stop and the callers are done, one TaskDropped per
// task counted as never run, none on the dispatcher, none from the
// deliverer after the stop returned, and one TaskStarted and one
// TaskFinished per call of a task's func.
func TestObserveHooksUnderStopRaces(t *testing.T) {
	iterations := 1500
	if raceDetectorOn { // CI's stress step runs it nine times under -race
		iterations = 500
	}
	if testing.Short() {
		iterations = 50
	}
	for i := range iterations {
		obsStopRace(t, i)
		if t.Failed() {
			return
		}
	}
}

// --- options, and hooks that panic or call runtime.Goexit ---

// Several WithHooks combine: each non-nil hook, and a non-nil Logger,
// replaces the one set before it, and nil ones change nothing;
// WithHooks(Hooks{}) alone is no hooks.
func TestObserveOptionsCombineHooksAndLastLoggerWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var first, replaced, finished atomic.Int64
		p := New(1, WithHooks(Hooks{TaskStarted: func(ctx context.Context, _ TaskInfo) context.Context { replaced.Add(1); return ctx }}),
			WithHooks(Hooks{TaskStarted: func(ctx context.Context, _ TaskInfo) context.Context { first.Add(1); return ctx }}),
			WithHooks(Hooks{TaskFinished: func(context.Context, TaskInfo) { finished.Add(1) }}),
			WithHooks(Hooks{}))
		require.NoError(t, p.DoWait(func() {}))
		p.StopWait()
		assert.Zero(t, replaced.Load(), "a TaskStarted that a later one replaced")
		assert.Equal(t, int64(1), first.Load(), "the later TaskStarted, kept past a WithHooks without one")
		assert.Equal(t, int64(1), finished.Load(), "TaskFinished, set by another WithHooks")

		p = New(1, WithHooks(Hooks{}))
		assert.False(t, p.cfg.timed, "WithHooks(Hooks{}) reads no clock")
		p.StopWait()

		var replacedLog, keptLog logBuffer
		p = New(1, WithHooks(Hooks{Logger: replacedLog.logger(slog.LevelDebug)}),
			WithHooks(Hooks{Logger: keptLog.logger(slog.LevelDebug)}),
			WithHooks(Hooks{Panic: func(any) {}}))
		p.Submit(func() { panic("x") })
		p.Resize(2)
		p.StopWait()
		assert.Empty(t, replacedLog.records(t, slog.LevelDebug), "a Logger that a later one replaced")
		assert.NotEmpty(t, keptLog.records(t, slog.LevelDebug), "the later Logger, kept past a WithHooks without one")
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
		var starts atomic.Int64
		p := New(1, WithMaxWaiting(1, Reject),
			WithHooks(Hooks{Panic: func(r any) { mu.Lock(); handled = append(handled, r); mu.Unlock() }}),
			WithHooks(Hooks{DeadLetter: func(_ func(), reason error) { letters <- reason }}),
			WithHooks(Hooks{
				TaskStarted: func(ctx context.Context, _ TaskInfo) context.Context {
					if starts.Add(1) == 1 {
						panic("started") // the first run's: no TaskFinished for it
					}
					return ctx
				},
				TaskFinished: func(context.Context, TaskInfo) { panic("finished") },
				TaskDropped:  func(TaskInfo) { panic("dropped") },
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
		assert.ElementsMatch(t, []any{"started", "finished", "finished", "dropped"}, handled,
			"the panic handler got every hook panic, and a run whose TaskStarted panicked got no TaskFinished")
	})
}

func panickingHook(context.Context, TaskInfo) context.Context { panic("hook boom") }

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

// A TaskStarted or TaskFinished hook that calls runtime.Goexit (as
// t.FailNow does, e.g. a require assertion inside a hook) in a job's run
// does not leave the job started forever: as for a task's own Goexit, the
// job is settled, so its Wait returns once the pool has stopped ("Every
// Wait returns once the pool has stopped"), and Status adds up. (A
// TaskDropped that calls runtime.Goexit is
// TestObserveTaskDroppedGoexitKeepsDeadLetter's.)
func TestObserveHookGoexitDoesNotHangWait(t *testing.T) {
	for _, c := range []struct {
		name  string
		hooks Hooks
	}{
		{"TaskStarted", Hooks{TaskStarted: func(ctx context.Context, _ TaskInfo) context.Context { runtime.Goexit(); return ctx }}},
		{"TaskFinished", Hooks{TaskFinished: func(context.Context, TaskInfo) { runtime.Goexit() }}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1, WithHooks(c.hooks), WithHooks(Hooks{Panic: func(any) {}}))
				task := p.Go(t.Context(), func(context.Context) error { return nil })
				synctest.Wait()
				p.StopWait()
				synctest.Wait()
				select {
				case <-task.Done():
				default:
					t.Errorf("Task.Wait still blocks after the pool stopped")
					// let the bubble end: nothing will ever settle the job
					task.job.state.Store(jobFinished)
					task.job.owner.conclude(ErrGoexit, true)
				}
				s := p.Status()
				assert.Equal(t, s.Submitted, s.Completed+s.Abandoned+s.Canceled+s.Dropped+s.Expired, "status invariant")
			})
		})
	}
}

// A TaskStarted hook that calls runtime.Goexit ends the worker's goroutine
// before the task's func is called: the task never runs, and whoever
// waits for it learns so, with an error wrapping ErrGoexit (DoWait and
// DoWaitContext return it, SubmitWait panics with it, a Task's or a
// group's Wait reports it); a plain task that no one waits for goes to the
// dead-letter handler with it. TaskDropped, which tells of the tasks that
// never start, is not told: the run began, and counts in Completed.
func TestATaskStartedHookThatCallsGoexitLeavesTheTaskNotRunAndSaysSo(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		plain bool // the task goes to the dead-letter handler
		give  func(p *WorkerPool, f func()) error
	}{
		{"DoWait", false, func(p *WorkerPool, f func()) error { return p.DoWait(f) }},
		{"SubmitWait", false, func(p *WorkerPool, f func()) error {
			err, _ := recovered(func() { p.SubmitWait(f) })
			return err
		}},
		{"Go", false, func(p *WorkerPool, f func()) error {
			return p.Go(ctx, func(context.Context) error { f(); return nil }).Wait()
		}},
		{"Group.Go", false, func(p *WorkerPool, f func()) error {
			g := p.Group(ctx)
			g.Go(func(context.Context) error { f(); return nil })
			return g.Wait()
		}},
		{"Submit", true, func(p *WorkerPool, f func()) error { p.Submit(f); return nil }},
		{"DoContext with a label", true, func(p *WorkerPool, f func()) error { return p.DoContext(ctx, f, TaskOption{Label: "l"}) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				letters := new(letterBox)
				var dropped atomic.Int64
				p := New(1, WithHooks(Hooks{DeadLetter: letters.handle}), WithHooks(Hooks{
					TaskStarted: func(ctx context.Context, _ TaskInfo) context.Context { runtime.Goexit(); return ctx },
					TaskDropped: func(TaskInfo) { dropped.Add(1) },
				}))
				ran := false
				err := c.give(p, func() { ran = true })
				p.StopWait()
				assert.False(t, ran, "the task ran")
				if c.plain {
					require.NoError(t, err, "the call")
					got := letters.got()
					require.Len(t, got, 1, "dead letters")
					assert.ErrorIs(t, got[0].reason, ErrGoexit, "the letter's reason")
					assert.ErrorContains(t, got[0].reason, "TaskStarted", "the letter's reason")
				} else {
					assert.ErrorIs(t, err, ErrGoexit, "what the waiter learns")
					assert.ErrorContains(t, err, "TaskStarted", "what the waiter learns")
					assert.Empty(t, letters.got(), "dead letters")
				}
				assert.Zero(t, dropped.Load(), "TaskDropped calls")
				s := requireStoppedClean(t, p)
				assert.Equal(t, uint64(1), s.Completed, "completed")
			})
		})
	}
}

// A TaskStarted hook that calls runtime.Goexit on a retry's run ends the
// task, whose func is not called again: as for a retry that never runs
// again, Wait reports why (wrapping ErrGoexit) joined with the last run's
// error, and a Future's value is T's zero value, not the one the earlier
// run returned, which is not the outcome Wait reports.
func TestATaskStartedHookThatCallsGoexitOnARetryReportsTheLastRunAndNoValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var starts atomic.Int64
		p := New(1, WithHooks(Hooks{TaskStarted: func(ctx context.Context, _ TaskInfo) context.Context {
			if starts.Add(1) == 2 {
				runtime.Goexit()
			}
			return ctx
		}}))
		defer p.Stop()
		f := GoResult(t.Context(), p, func(context.Context) (int, error) { return 7, errFlaky },
			TaskOption{Retry: Backoff(time.Second, time.Second, 2)})
		v, err := f.Wait()
		assert.ErrorIs(t, err, ErrGoexit, "Wait's error")
		assert.ErrorContains(t, err, "TaskStarted", "Wait's error")
		assert.ErrorIs(t, err, errFlaky, "Wait's error: the last run's")
		assert.Zero(t, v, "Wait's value: fn was not called for the run whose outcome Wait reports")
		assert.Equal(t, int64(2), starts.Load(), "TaskStarted calls")
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Completed, "completed")
		assert.Equal(t, uint64(1), s.Retried, "retried")
	})
}

// A hook that panics without a Panic hook crashes the program (Hooks), but
// a TaskDropped that runs in the refusing call's goroutine panics into
// that call instead, and the caller can recover it. In Group.Go
// (ErrTooHeavy) such a panic leaves the group usable: Group.Go records the
// refusal under the group's mutex and calls the hook after unlocking it,
// so the panic leaves no lock held, and Wait returns the refusal.
func TestObserveTaskDroppedPanicInGroupGoLeavesGroupUsable(t *testing.T) {
	p := New(1, WithHooks(Hooks{TaskDropped: func(TaskInfo) { panic("dropped") }}))
	defer p.Stop()
	g := p.Group(context.Background())
	func() {
		defer func() { assert.Equal(t, "dropped", recover(), "the hook's panic reached Group.Go's caller") }()
		g.Go(func(context.Context) error { return nil }, TaskOption{Weight: 2})
	}()
	done := make(chan error, 1)
	go func() { done <- g.Wait() }()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, ErrTooHeavy)
	case <-time.After(2 * time.Second):
		t.Errorf("Group.Wait blocked: the panicking TaskDropped left g.mu locked")
		g.mu.Unlock() // let the test end
		<-done
	}
}

// --- cost ---

// With hooks, a plain Submit still makes no allocation: the time it became
// ready travels in the work, not in a wrapper.
func TestSubmitWithHooksDoesNotAllocate(t *testing.T) {
	var n atomic.Int64
	p := New(4, WithHooks(Hooks{
		TaskStarted:  func(ctx context.Context, _ TaskInfo) context.Context { n.Add(1); return ctx },
		TaskFinished: func(context.Context, TaskInfo) { n.Add(1) },
		TaskDropped:  func(TaskInfo) { n.Add(1) },
	}))
	defer p.Stop()
	task := func() {}
	allocs := testing.AllocsPerRun(1000, func() { p.Submit(task) })
	assert.Zero(t, allocs, "allocations per Submit")
}

// Hooks add no allocation to DoWait and Go, bounded or not.
func TestObserveHooksAddNoAllocations(t *testing.T) {
	if raceDetectorOn {
		t.Skip("allocation counts differ under -race")
	}
	ctx := context.Background()
	measure := func(opts ...Option) (doWait, goWait, doWaitMax float64) {
		p := New(2, opts...)
		defer p.StopWait()
		fn := func(context.Context) error { return nil }
		doWait = testing.AllocsPerRun(500, func() { _ = p.DoWait(func() {}) })
		goWait = testing.AllocsPerRun(500, func() { _ = p.Go(ctx, fn).Wait() })
		q := New(2, append(opts, WithMaxWaiting(4, Block))...)
		defer q.StopWait()
		doWaitMax = testing.AllocsPerRun(500, func() { _ = q.DoWait(func() {}) })
		return
	}
	d0, g0, m0 := measure()
	d1, g1, m1 := measure(WithHooks(noopHooks))
	assert.LessOrEqual(t, d1, d0, "DoWait with hooks")
	assert.LessOrEqual(t, g1, g0, "Go with hooks")
	assert.LessOrEqual(t, m1, m0, "bounded DoWait with hooks")
}

// A pool reads the clock for tasks only if TaskStarted or TaskFinished is
// set.
func TestHooksTimeTasksOnlyWhenAsked(t *testing.T) {
	for _, c := range []struct {
		hooks Hooks
		timed bool
	}{
		{Hooks{}, false},
		{Hooks{TaskDropped: func(TaskInfo) {}}, false},
		{Hooks{TaskStarted: func(ctx context.Context, _ TaskInfo) context.Context { return ctx }}, true},
		{Hooks{TaskFinished: func(context.Context, TaskInfo) {}}, true},
	} {
		p := New(1, WithHooks(c.hooks))
		assert.Equal(t, c.timed, p.cfg.timed, "timed with %+v", c.hooks)
		p.Stop()
	}
	p := New(1)
	defer p.Stop()
	assert.False(t, p.cfg.timed, "timed without hooks")
}

// noopHooks are all three hooks, set to funcs that do nothing: what the
// pool's side of the hooks costs.
var noopHooks = Hooks{
	TaskStarted:  func(ctx context.Context, _ TaskInfo) context.Context { return ctx },
	TaskFinished: func(context.Context, TaskInfo) {},
	TaskDropped:  func(TaskInfo) {},
}

// hookBenchCases are the pools the hook benchmarks compare: without hooks,
// and with noopHooks.
var hookBenchCases = []struct {
	name string
	opts []Option
}{{"hooks=none", nil}, {"hooks=all", []Option{WithHooks(noopHooks)}}}

// BenchmarkSubmitHooks measures what the hooks add to a plain Submit: none
// (the default path), and all three set to funcs that do nothing, which
// costs three clock reads and two calls per task.
func BenchmarkSubmitHooks(b *testing.B) {
	for _, c := range hookBenchCases {
		b.Run(c.name, func(b *testing.B) { benchmarkSubmit(b, 4, c.opts...) })
	}
}

// BenchmarkGoWaitHooks measures what the hooks add to a Go round trip,
// whose TaskStarted gets the Task's context and whose TaskFinished gets
// the one TaskStarted returned: none, and all three set to funcs that do
// nothing. TaskInfo is passed by value, so the hooks allocate nothing.
func BenchmarkGoWaitHooks(b *testing.B) {
	for _, c := range hookBenchCases {
		b.Run(c.name, func(b *testing.B) {
			p := New(4, c.opts...)
			defer p.Stop()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Go(ctx, noopFn, TaskOption{Label: "bench"}).Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHookClockReads is the floor of what timing a task costs: the
// three reads of the pool's monotonic clock that give a task's wait and
// run (as it joins the queue, starts and ends), against which
// BenchmarkSubmitHooks's hooks=all less hooks=none is measured.
func BenchmarkHookClockReads(b *testing.B) {
	p := New(1)
	defer p.Stop()
	var sum int64
	for b.Loop() {
		sum += p.clock.now() + p.clock.now() + p.clock.now()
	}
	if sum == 0 {
		b.Fatal("the clock did not move")
	}
}

// A TaskFinished that calls runtime.Goexit after a run that is to be
// retried ends the worker, not the task: the next run comes, the task
// completes once, and a group task's pooled carrier is released exactly
// once.
func TestTaskFinishedGoexitAfterARetriedRunKeepsTheTask(t *testing.T) {
	hooks := WithHooks(Hooks{TaskFinished: func(_ context.Context, ti TaskInfo) {
		if ti.Attempt == 1 {
			runtime.Goexit()
		}
	}})
	failsOnce := func() func(context.Context) error {
		runs := 0
		return func(context.Context) error {
			if runs++; runs == 1 {
				return errFlaky
			}
			return nil
		}
	}
	again := TaskOption{Retry: func(int, error) (time.Duration, bool) { return time.Second, true }}
	t.Run("Go", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := New(1, hooks)
			require.NoError(t, p.Go(t.Context(), failsOnce(), again).Wait())
			p.StopWait()
			s := requireStoppedClean(t, p)
			assert.Equal(t, uint64(1), s.Submitted)
			assert.Equal(t, uint64(1), s.Completed, "one task, completed once")
			assert.Equal(t, uint64(1), s.Retried)
		})
	})
	t.Run("Group.Go", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := New(1, hooks)
			g := p.Group(t.Context())
			fn := failsOnce()
			carrier := make(chan *groupTask, 1)
			g.Go(func(ctx context.Context) error {
				g.mu.Lock()
				if len(carrier) == 0 {
					carrier <- g.inPool[0]
				}
				g.mu.Unlock()
				return fn(ctx)
			}, again)
			require.NoError(t, g.Wait())
			p.StopWait()
			requireStoppedClean(t, p)
			assert.Equal(t, int32(0), (<-carrier).refs.Load(), "the carrier's references: each released once")
		})
	})
}
