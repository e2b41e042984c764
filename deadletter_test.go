package workerpool

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests for dead letters (WithDeadLetter), against the contract in doc.go
// ("Dead letters"): which tasks a stop gives up become letters and in what
// order, the goroutine the handler runs on, stops that wait for it, and a
// handler that panics or calls runtime.Goexit.

// Stop and a Shutdown that gives up hand each abandoned plain task to the
// dead-letter handler with ErrStopped, in queue order, as the very func
// submitted (Submit, Do, DoContext, TryDo, DoBatch); tasks with a
// waiter (DoWait, Go, Call, groups) report ErrStopped to it instead and
// never reach the handler. Shutdown that drains gives nothing.
func TestAbandonedPlainTasksBecomeDeadLettersInQueueOrderAndTasksWithAWaiterNever(t *testing.T) {
	for _, mode := range stopModes {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				box := new(letterBox)
				p := New(1, WithMaxWaiting(16, Block), WithIdleTimeout(-1), WithHooks(Hooks{DeadLetter: box.handle}))
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
				f := GoResult(bg, p, func(context.Context) (int, error) { r.task(102, nil)(); return 0, nil })
				require.True(t, tryDo(p, r.task(3, nil)))
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
				s := requireStoppedClean(t, p)
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
		p := New(1, WithMaxWaiting(4, Block), WithIdleTimeout(-1), WithHooks(Hooks{DeadLetter: box.handle}))
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
		s := requireStoppedClean(t, p)
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
		{"dropped", DropOldest, errDropped, func(p *WorkerPool, task func()) {
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
					stack := currentStack()
					mu.Lock()
					got = append(got, seen{stack, goroutineID(), reason})
					mu.Unlock()
				}
				p := New(1, WithMaxWaiting(1, c.policy), WithIdleTimeout(-1), WithHooks(Hooks{DeadLetter: h}))
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
				requireStoppedClean(t, p)
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
		p := New(1, WithMaxWaiting(2, Reject), WithIdleTimeout(-1), WithHooks(Hooks{DeadLetter: h}))
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
		requireStoppedClean(t, p)
	})
}

// Stop, StopWait and Shutdown return only after the handler has returned
// for every task given up before or during the stop, at the exact moment
// the last letter is handled.
func TestStopsReturnOnlyOnceTheHandlerHasReturnedForEveryLetter(t *testing.T) {
	for _, mode := range stopModes {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var handled atomic.Int64
				h := func(func(), error) { time.Sleep(time.Second); handled.Add(1) }
				p := New(1, WithMaxWaiting(2, Reject), WithIdleTimeout(-1), WithHooks(Hooks{DeadLetter: h}))
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
				requireStoppedClean(t, p)
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
		p := New(1, WithIdleTimeout(-1), WithHooks(Hooks{DeadLetter: func(func(), error) { hg.wait(); handled.Add(1) }}))
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
		requireStoppedClean(t, p)
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
		p := New(1, WithMaxWaiting(1, Reject), WithIdleTimeout(-1), WithHooks(Hooks{DeadLetter: h}),
			WithHooks(Hooks{Panic: func(r any) { mu.Lock(); panics = append(panics, r); mu.Unlock() }}))
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
		requireStoppedClean(t, p)
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
		p := New(1, WithMaxWaiting(1, Reject), WithIdleTimeout(-1), WithHooks(Hooks{DeadLetter: h}))
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
		requireStoppedClean(t, p)
	})
}

// WithHooks(Hooks{DeadLetter: nil}) means no handler, also over an earlier handler (the
// last option wins): refused, dropped and abandoned tasks are only counted.
func TestNilDeadLetterHandlerMeansTheTasksAreOnlyCounted(t *testing.T) {
	for _, policy := range []Overflow{Reject, DropOldest} {
		t.Run(policy.string(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1, WithMaxWaiting(1, policy), WithIdleTimeout(-1), WithHooks(Hooks{DeadLetter: nil}))
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
				s := requireStoppedClean(t, p)
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

// queueOrderTasks queues, on a one-worker pool whose worker is busy, a mix
// of plain tasks and tasks with a waiter, of three priority levels, over
// keys of weights 2 and 1 and none, one canceled before it could start, and
// scheduled ones whose due times come in another order than they were
// submitted. Each task says its name to say when it runs; a Go task carries
// it as its Label too.
func queueOrderTasks(t *testing.T, p *WorkerPool, say func(name string) func()) {
	t.Helper()
	bg := context.Background()
	do := func(name string, opts ...TaskOption) {
		require.NoError(t, p.DoContext(bg, say(name), opts...))
	}
	goTaskWith := func(ctx context.Context, name string, opts ...TaskOption) {
		p.Go(ctx, fnOf(say(name)), append(opts, TaskOption{Label: name})...)
	}
	goTask := func(name string, opts ...TaskOption) { goTaskWith(bg, name, opts...) }
	do("a")
	do("b", TaskOption{Priority: 1})
	do("c", TaskOption{Priority: -1})
	goTask("g0")
	for i := range 12 {
		k := "k" + strconv.Itoa(i%4)
		name := k + "-" + strconv.Itoa(i/4)
		if i%3 == 0 {
			goTask(name, TaskOption{Key: k})
		} else {
			do(name, TaskOption{Key: k})
		}
		if i == 5 {
			ctx, cancel := context.WithCancel(bg)
			goTaskWith(ctx, "k1-canceled", TaskOption{Key: "k1"})
			cancel()
		}
	}
	goTask("g1", TaskOption{Key: "k1", Priority: 1})
	do("h1", TaskOption{Key: "k2", Priority: 1})
	do("d")
	goTask("g2", TaskOption{Priority: -1, Key: "k3"})
	do("e", TaskOption{Priority: 1})
	for _, h := range []int{5, 2, 4, 1, 3} {
		name := "s" + strconv.Itoa(h)
		if h%2 == 0 {
			goTask(name, TaskOption{Delay: time.Duration(h) * time.Hour})
		} else {
			do(name, TaskOption{Delay: time.Duration(h) * time.Hour})
		}
	}
}

// Stop, and a Shutdown that gives up, give up the queue in queue order
// (see WithDeadLetter): the order in which the same tasks start when the
// pool runs them, one at a time, under key weights, and with aging too.
// The dead-letter handler gets the plain tasks, and TaskDropped learns of
// every task, in that order; the scheduled tasks come last, in the order
// they come due. A key limit does not change queue order: a pool that runs
// the tasks lets a key's next task go as soon as the last one gave back its
// slots, which may come before or after dispatch chooses the next task, so
// the stop is compared with the same pool without the limit.
func TestStopAbandonsInTheOrderTheTasksWouldStart(t *testing.T) {
	share := func(k string) int {
		if k == "k0" {
			return 2
		}
		return 1
	}
	weights := WithKeys(-1, share)
	setups := []struct {
		name  string
		opts  []Option      // the pool's, both when it runs the tasks and when it stops
		limit int           // the key limit of the pool that stops; -1: none
		wait  time.Duration // between queuing and opening the worker or stopping
	}{
		{"weights", []Option{weights}, -1, 0},
		{"weights and a key limit", []Option{weights}, 1, 0},
		{"weights and aging", []Option{weights, WithPriorityAging(time.Minute)}, -1, 90 * time.Second},
	}
	for _, setup := range setups {
		for _, mode := range stopModes {
			if !mode.abandons {
				continue
			}
			t.Run(setup.name+"/"+mode.name, func(t *testing.T) {
				var ran []string
				synctest.Test(t, func(t *testing.T) {
					var r names
					p := New(1, append(setup.opts, WithIdleTimeout(-1))...)
					g := blockOneWorker(t, p)
					queueOrderTasks(t, p, r.say)
					time.Sleep(setup.wait)
					g.open()
					p.StopWait()
					ran = r.got()
				})
				require.Len(t, ran, 26, "tasks run")
				synctest.Test(t, func(t *testing.T) {
					var r names
					dropped := 0
					p := New(1, append(setup.opts, WithIdleTimeout(-1), WithKeys(setup.limit, share),
						WithHooks(Hooks{DeadLetter: func(task func(), reason error) {
							assert.ErrorIs(t, reason, ErrStopped, "dead letter's reason")
							task()
						}}),
						WithHooks(Hooks{TaskDropped: func(ti TaskInfo) {
							if errors.Is(ti.Err, ErrStopped) {
								dropped++
								if ti.Label != "" {
									r.say(ti.Label)() // a task with a waiter: no dead letter
								}
							}
						}}))...)
					g := blockOneWorker(t, p)
					queueOrderTasks(t, p, r.say)
					time.Sleep(setup.wait)
					stopped := make(chan struct{})
					go func() { mode.stop(p); close(stopped) }()
					synctest.Wait()
					g.open()
					<-stopped
					assert.Equal(t, ran, r.got(), "letters and TaskDropped in the order the tasks ran when let run")
					assert.Equal(t, 26, dropped, "TaskDropped with ErrStopped")
					requireStoppedClean(t, p)
				})
			})
		}
	}
}

// names records names in the order said.
type names struct {
	mu   sync.Mutex
	list []string
}

func (n *names) say(name string) func() {
	return func() {
		n.mu.Lock()
		n.list = append(n.list, name)
		n.mu.Unlock()
	}
}

func (n *names) got() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.list...)
}
