package workerpool

// Adversarial tests of the observability features (Hooks, WithLogger,
// WithName). Tests whose comment says "Regression" reproduced a bug
// or doc inaccuracy found in review and now guard its fix; the others
// guard rules of the contract.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
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

// obsGoid returns the calling goroutine's id, from its stack header.
func obsGoid() string {
	buf := make([]byte, 64)
	s := string(buf[:runtime.Stack(buf, false)])
	s = strings.TrimPrefix(s, "goroutine ")
	return s[:strings.IndexByte(s, ' ')]
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

func (d *obsDrops) hook(reason error) {
	disp, deliverer := onDispatcher(), obsOnDeliverer()
	id := obsGoid()
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

// Regression: the doc promised "one Info record per Resize that
// changes the size" but a same-size Resize logged; the doc now says so
// ("a Resize to the same size included"). Guard: one record per Resize on
// a running pool, the same size included, none once stopping has begun,
// and the summary last.
func TestObserveResizeLogsOncePerResizeOnRunningPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b logBuffer
		p := New(3, WithLogger(b.logger(slog.LevelInfo)), WithName("rz"))
		p.Resize(3)
		p.Resize(0)  // 1
		p.Resize(-5) // still 1
		p.StopWait()
		p.Resize(7) // stopped: nothing
		records := b.records(t, slog.LevelInfo)
		assert.Equal(t, []string{"pool resized", "pool resized", "pool resized", "pool stopped"}, messages(records))
		for _, r := range records {
			assert.Equal(t, "rz", r["pool"], "pool name on %v", r["msg"])
		}
	})
}

// Regression: WithHooks promised TaskDropped in the refusing call's
// goroutine before it returns for DoWait's ErrQueueFull, but a job that
// dispatch refuses under DropOldest (scheduled tasks fill the bound) was
// told on the deliverer, often after DoWait returned; the doc now says
// that such refusals are told there. Guard: exactly one TaskDropped per
// refusal, never on the dispatcher, and on the deliverer when dispatch
// refused it (DoWait returned ErrQueueFull without a call in its own
// goroutine), all before Stop returns.
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
		p.Go(ctx, func(context.Context) error { return nil }, Delay(time.Hour)) // holds the bound's only place, once dispatch scheduled it
		id := obsGoid()
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

// Regression. (taskFinished deferred before
// TaskStarted). A hook that calls runtime.Goexit (as t.FailNow does, e.g. a
// require assertion inside a hook) in a job's run leaves the job started
// forever: its Wait never returns, even after the pool stopped ("Every Wait
// returns once the pool has stopped"), while Status counts it Completed. A
// task's own Goexit is handled (ErrGoexit); a hook's is not: job.run calls
// TaskStarted before its deferred settle is armed, and TaskFinished inside
// that deferred func, ahead of the settle. (The same Goexit in TaskDropped
// loses the dead-letter handler's call for that task: deliver never gets
// to it, and the fresh deliverer starts with the next letter.)
func TestObserveHookGoexitDoesNotHangWait(t *testing.T) {
	for _, c := range []struct {
		name  string
		hooks Hooks
	}{
		{"TaskStarted", Hooks{TaskStarted: func(time.Duration) { runtime.Goexit() }}},
		{"TaskFinished", Hooks{TaskFinished: func(time.Duration, time.Duration, error) { runtime.Goexit() }}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1, WithHooks(c.hooks), WithPanicHandler(func(any) {}))
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

// Regression. Hooks: "A hook that panics ...
// without [a panic handler] it
// crashes the program." A TaskDropped that runs in the refusing call's
// goroutine panics into that call instead; the caller can recover it. In
// Group.Go (ErrTooHeavy) the hook ran under the group's mutex,
// which the panic leaves locked: the group is wedged, and its Wait never
// returns. (Group.Go now records the refusal under g.mu and calls the hook
// after unlocking.)
func TestObserveTaskDroppedPanicInGroupGoLeavesGroupUsable(t *testing.T) {
	p := New(1, WithHooks(Hooks{TaskDropped: func(error) { panic("dropped") }}))
	defer p.Stop()
	g := p.Group(context.Background())
	func() {
		defer func() { assert.Equal(t, "dropped", recover(), "the hook's panic reached Group.Go's caller") }()
		g.Go(func(context.Context) error { return nil }, Weight(2))
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

// Regression. (taskFinished recovers and
// re-raises). A plain task that panics with no panic handler crashes
// the program, but TaskFinished first gets ErrGoexit, as if the task had
// called runtime.Goexit: runTimed's err starts as ErrGoexit and the
// deferred TaskFinished runs during the panic.
func TestObserveTaskFinishedNotGoexitForUnrecoveredPanic(t *testing.T) {
	if os.Getenv("WORKERPOOL_OBS_PANIC_CHILD") == "1" {
		p := New(1, WithHooks(Hooks{TaskFinished: func(_, _ time.Duration, err error) {
			os.Stderr.WriteString("TaskFinished err: " + errString(err) + "\n")
		}}))
		p.Submit(func() { panic("task boom") })
		p.StopWait()
		os.Exit(0)
	}
	out := requireChildPanics(t, "TestObserveTaskFinishedNotGoexitForUnrecoveredPanic", "WORKERPOOL_OBS_PANIC_CHILD")
	assert.NotContains(t, out, "TaskFinished err: "+ErrGoexit.Error(), "TaskFinished told a panic is a Goexit")
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// runChild runs test again in a child process with env=1 and returns its
// output and exit error.
func runChild(t *testing.T, test, env string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), env+"=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

var _ = errors.Is
var _ = require.NoError

// Races of every kind of give-up against every kind of stop, with all
// three hooks: after the stop and the callers are done, one TaskDropped per
// task counted as never run, none on the dispatcher, none from the
// deliverer after the stop returned, and one TaskStarted and one
// TaskFinished per call of a task's func.
func TestObserveHooksUnderStopRaces(t *testing.T) {
	iterations := 1500
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

func obsStopRace(t *testing.T, seed int) {
	r := rand.New(rand.NewPCG(uint64(seed), 7))
	var started, finished, fnRuns, delivererAfterStop atomic.Int64
	var stopReturned atomic.Bool
	d := new(obsDrops)
	hooks := Hooks{
		TaskStarted:  func(time.Duration) { started.Add(1) },
		TaskFinished: func(time.Duration, time.Duration, error) { finished.Add(1) },
		TaskDropped: func(reason error) {
			if stopReturned.Load() && obsOnDeliverer() {
				delivererAfterStop.Add(1)
			}
			d.hook(reason)
		},
	}
	opts := []Option{WithHooks(hooks), WithPanicHandler(func(any) {})}
	dropOldest := false // no Cancel nor ctx deadline then: see TestObserveDropOldestRefusalRacingCancelDoesNotCrash
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
					p.TrySubmit(fn)
				case 2:
					_ = p.DoWait(fn)
				case 3:
					_ = p.DoBatch([]func(){fn, fn, nil, fn})
				case 4:
					c, cc := context.WithTimeout(ctx, time.Duration(sr.IntN(200))*time.Microsecond)
					_ = p.DoContext(c, fn)
					cc()
				case 5:
					tasks = append(tasks, p.Go(ctx, tfn, Delay(time.Duration(sr.IntN(500))*time.Microsecond)))
				case 6:
					n := 0
					tasks = append(tasks, p.Go(ctx, func(context.Context) error {
						fn()
						n++
						if n < 3 {
							return errFlaky
						}
						return nil
					}, Retry(func(int, error) (time.Duration, bool) { return time.Duration(sr2(seed)) * time.Microsecond, true })))
				case 7:
					c, cc := context.WithTimeout(ctx, time.Duration(sr.IntN(300))*time.Microsecond)
					if dropOldest {
						c = ctx
					}
					tasks = append(tasks, p.Go(c, tfn, Priority(sr.IntN(3))))
					defer cc()
				case 8:
					if len(tasks) > 0 && !dropOldest {
						tasks[sr.IntN(len(tasks))].Cancel()
					}
				case 9:
					g.Go(func(context.Context) error { fn(); return nil }, Delay(time.Duration(sr.IntN(100))*time.Microsecond))
				case 10:
					g.Go(func(context.Context) error { fn(); return nil })
					if sr.IntN(4) == 0 {
						g.Go(func(context.Context) error { fn(); return errTask }) // cancels the group
					}
				case 11:
					tasks = append(tasks, p.Go(ctx, tfn, Weight(1+sr.IntN(3))))
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

// obsWaits records TaskStarted's waits, in start order.
type obsWaits struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (w *obsWaits) hooks() Hooks {
	return Hooks{TaskStarted: func(d time.Duration) { w.mu.Lock(); w.waits = append(w.waits, d); w.mu.Unlock() }}
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
			high := p.Go(t.Context(), func(context.Context) error { return nil }, Priority(1))
			require.NoError(t, low.Wait())
			require.NoError(t, high.Wait())
			p.StopWait()
			// at 5s low has waited 4s at level 0, high 3s at level 1: both aged to level 4; low, older, first
			assert.Equal(t, []time.Duration{0, 4 * time.Second, 3 * time.Second}, w.now())
		})
	})
}

// Regression. (told through the
// deliverer). WithHooks: TaskDropped runs "in the goroutine of the call
// that refused the task, before that call returns ...; for every other task
// that will never run, on the pool's delivery goroutine". A group task held
// by SetLimit, then refused as too heavy after a Resize when a slot frees,
// was counted in Rejected and told in place, on the worker goroutine whose
// task just finished (Group.settled -> submit -> countRejected), neither
// in Group.Go's goroutine nor on the deliverer. It is counted from its Go
// call, and dropped, as a queued task too heavy after a Resize is.
func TestObserveHeldGroupTaskRefusedAfterResizeToldOnDeliverer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var onWorker, calls atomic.Int64
		p := New(2, WithHooks(Hooks{TaskDropped: func(reason error) {
			calls.Add(1)
			if !obsOnDeliverer() && strings.Contains(ownStack(), "(*job).run(") {
				onWorker.Add(1)
			}
		}}))
		g := p.Group(t.Context())
		g.SetLimit(1)
		gate := newGate()
		g.Go(func(context.Context) error { gate.wait(); return nil })
		g.Go(func(context.Context) error { return nil }, Weight(2)) // held: fits the pool now
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

// Regression guards: WithHooks(Hooks{}) is no hooks; of several WithHooks
// the last wins; a nil logger logs nothing and WithLogger(nil) after a
// logger removes it.
func TestObserveOptionsLastWinsAndZeroHooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var first, last atomic.Int64
		p := New(1, WithHooks(Hooks{TaskStarted: func(time.Duration) { first.Add(1) }}),
			WithHooks(Hooks{TaskFinished: func(time.Duration, time.Duration, error) { last.Add(1) }}))
		require.NoError(t, p.DoWait(func() {}))
		p.StopWait()
		assert.Zero(t, first.Load(), "first WithHooks replaced")
		assert.Equal(t, int64(1), last.Load(), "last WithHooks")

		p = New(1, WithHooks(Hooks{TaskStarted: func(time.Duration) {}}), WithHooks(Hooks{}))
		assert.False(t, p.cfg.timed, "WithHooks(Hooks{}) reads no clock")
		p.StopWait()

		var b logBuffer
		p = New(1, WithLogger(b.logger(slog.LevelDebug)), WithLogger(nil), WithPanicHandler(func(any) {}))
		p.Submit(func() { panic("x") })
		p.Resize(2)
		p.StopWait()
		assert.Empty(t, b.records(t, slog.LevelDebug), "WithLogger(nil) last: no records")
	})
}

// Regression guard: a DoBatch larger than the bound is refused in the
// caller with one TaskDropped per non-nil task, before DoBatch returns,
// also for a large batch; a TaskDropped that calls Status and Do from the
// caller's goroutine works.
func TestObserveDoBatchRefusalOnePerTaskInCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		var p *WorkerPool
		p = New(1, WithMaxWaiting(2, Reject), WithHooks(Hooks{TaskDropped: func(reason error) {
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

// Regression guard: ctx deadlines and group cancellation give one
// TaskDropped each with the ctx error (or the group's cause), on the
// deliverer, and a Shutdown with a done ctx abandons the rest with
// ErrStopped before it returns.
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
		g.Go(func(context.Context) error { return nil }, Delay(time.Hour))
		errBye := errors.New("bye")
		gcancel(errBye)
		time.Sleep(2 * time.Second)
		assert.ErrorIs(t, dl.Wait(), context.DeadlineExceeded)
		assert.ErrorIs(t, g.Wait(), errBye)
		p.Submit(func() {})
		late := p.Go(t.Context(), func(context.Context) error { return nil }, Delay(time.Hour))
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

// Regression guard for the cost rule: hooks add no allocation to DoWait
// and Go, bounded or not.
func TestObserveHooksAddNoAllocations(t *testing.T) {
	if raceDetectorOn {
		t.Skip("allocation counts differ under -race")
	}
	all := Hooks{
		TaskStarted:  func(time.Duration) {},
		TaskFinished: func(time.Duration, time.Duration, error) {},
		TaskDropped:  func(error) {},
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
	d1, g1, m1 := measure(WithHooks(all))
	assert.LessOrEqual(t, d1, d0, "DoWait with hooks")
	assert.LessOrEqual(t, g1, g0, "Go with hooks")
	assert.LessOrEqual(t, m1, m0, "bounded DoWait with hooks")
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
	g := obsGoid()
	r.mu.Lock()
	r.current[g] = id
	r.started[id]++
	r.mu.Unlock()
}

func (r *obsRuns) taskFinished(time.Duration, time.Duration, error) {
	g := obsGoid()
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
		p := New(1+r.IntN(2), WithMaxWaiting(1+r.IntN(2), DropOldest), WithPanicHandler(func(any) {}),
			WithHooks(Hooks{TaskFinished: runs.taskFinished, TaskDropped: func(error) {}}))
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
						task := p.Go(ctx, func(context.Context) error { body(); return nil }, Delay(time.Duration(sr.IntN(200))*time.Microsecond))
						// (no Cancel here: under DropOldest it can crash the pool, see
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
						}, Retry(func(int, error) (time.Duration, bool) { return 30 * time.Microsecond, true }))
						err := task.Wait()
						runs.mu.Lock()
						started, finished := runs.started[id], runs.finished[id]
						runs.mu.Unlock()
						if started != finished {
							t.Errorf("seed %d: retried Task.Wait returned (%v) after %d runs, %d TaskFinished", seed, err, started, finished)
						}
					case 3:
						f := Call(ctx, p, func(context.Context) (int, error) { body(); return 1, nil })
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

// Regression. (job.refuse). Under DropOldest, dispatch refuses a job that finds the bound
// filled by scheduled tasks (refuseJob), without checking that its owner
// did not settle it meanwhile: a Task canceled (Cancel, or its ctx)
// between acceptJob's settled check and refuseJob is settled twice:
// Task.settled closes its done channel twice (or drives its WaitGroup
// negative) on the dispatcher goroutine, which crashes the program; it
// would also count the task in both Canceled and Rejected, with two
// TaskDropped calls. The child loops until it hits the race.
func TestObserveDropOldestRefusalRacingCancelDoesNotCrash(t *testing.T) {
	if os.Getenv("WORKERPOOL_OBS_REFUSE_CHILD") == "1" {
		fn := func(context.Context) error { return nil }
		deadline := time.Now().Add(3 * time.Second)
		for i := 0; time.Now().Before(deadline); i++ {
			var drops atomic.Int64
			p := New(1, WithMaxWaiting(1, DropOldest), WithHooks(Hooks{TaskDropped: func(error) { drops.Add(1) }}))
			g := newGate()
			running := make(chan struct{})
			p.Submit(func() { close(running); g.wait() })
			<-running
			ctx, cancel := context.WithCancel(context.Background())
			p.Go(ctx, fn, Delay(time.Hour)) // fills the bound once dispatch has scheduled it
			task := p.Go(ctx, fn)           // passes scheduledFill before that, then is refused by dispatch
			task.Cancel()
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

// Regression (same root as TestObserveHookGoexitDoesNotHangWait).
// A TaskDropped
// that calls runtime.Goexit on the deliverer: the dead-letter handler never
// gets that plain task.
func TestObserveTaskDroppedGoexitKeepsDeadLetter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var letters atomic.Int64
		p := New(1, WithMaxWaiting(1, Reject),
			WithHooks(Hooks{TaskDropped: func(error) { runtime.Goexit() }}),
			WithDeadLetter(func(func(), error) { letters.Add(1) }))
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
