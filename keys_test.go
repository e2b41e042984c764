package workerpool

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests for keys (TaskOption.Key) and the key limit (WithKeys(limit, _)):
// every call takes a key, Status.Keys, a key's state freed with its last
// task, and the limit against the rest of the pool: other keys and tasks
// without a key going past a held key, weights, retries, delays, cancel,
// expiry, the bound (Reject, Block, DropOldest), Resize, the three stops,
// Pause, WaitIdle, priorities, dead letters and hooks, and bad input. How
// keys share the workers by weight has its own file, keyshare_test.go.
// The tests of the limit run in synctest bubbles: tasks model their run
// time with time.Sleep, and the trace records when each run started on
// the bubble's clock. The test goroutine acts only at instants when no
// task starts or ends, so that no two events race.

// --- TaskOption.Key on every call, and Status.Keys ---

// Every call that takes a TaskOption takes Key: its tasks share their
// key's queue and limit, and the hooks see the key.
func TestKeyOnEveryCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var keys []string
		p := New(2, WithKeys(1, nil), WithHooks(Hooks{TaskStarted: func(ctx context.Context, ti TaskInfo) context.Context {
			mu.Lock()
			keys = append(keys, ti.Key+":"+ti.Label)
			mu.Unlock()
			return ctx
		}}))
		defer p.StopWait()
		ctx := context.Background()
		k := TaskOption{Key: "account-7"}
		hold := newGate()
		p.Go(ctx, fnOf(hold.wait), k, TaskOption{Label: "first"})
		p.Go(ctx, noopFn, k, TaskOption{Label: "Go"})
		GoResult(ctx, p, func(context.Context) (int, error) { return 1, nil }, k, TaskOption{Label: "Call"})
		g := p.Group(ctx)
		g.Go(noopFn, k, TaskOption{Label: "Group.Go"})
		p.DoContext(context.Background(), func() {}, k, TaskOption{Label: "Do"})
		require.NoError(t, p.DoContext(ctx, func() {}, k, TaskOption{Label: "DoContext"}))
		done := make(chan error)
		go func() { done <- p.Go(context.Background(), noopFn, k, TaskOption{Label: "Go waited for"}).Wait() }()
		synctest.Wait()
		assert.Equal(t, 1, p.Status().Busy, "the key's first task holds its only slot; the others wait")
		assert.Equal(t, 6, p.Status().Waiting)
		hold.open()
		require.NoError(t, <-done)
		require.NoError(t, g.Wait())
		mu.Lock()
		defer mu.Unlock()
		want := []string{"first", "Go", "Call", "Group.Go", "Do", "DoContext", "Go waited for"}
		for i := range want {
			want[i] = "account-7:" + want[i]
		}
		assert.Equal(t, want, keys, "one at a time, in order, each seen with its key")
	})
}

func TestStatusKeysCountsWaitingScheduledAndRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithKeys(1, nil))
		ctx := context.Background()
		gate := newGate()
		run := fnOf(gate.wait)
		a1 := p.Go(ctx, run, TaskOption{Key: "a"})
		a2 := p.Go(ctx, run, TaskOption{Key: "a"})
		b := p.Go(ctx, run, TaskOption{Key: "b", Delay: 10 * time.Second})
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 2, s.Keys, "a (running and waiting), b (scheduled)")
		assert.Equal(t, 1, s.Busy)
		assert.Equal(t, 1, s.Waiting)
		assert.Equal(t, 1, s.Scheduled)
		gate.open()
		require.NoError(t, a1.Wait())
		require.NoError(t, a2.Wait())
		synctest.Wait()
		assert.Equal(t, 1, p.Status().Keys, "b, scheduled")
		require.NoError(t, b.Wait())
		synctest.Wait()
		assert.Equal(t, 0, p.Status().Keys)
		p.StopWait()
		requireStoppedClean(t, p)
	})
}

// A key leaves Status.Keys with its last task: once the Wait of a task
// that will never run reports it, Keys no longer counts its key, if no
// other task of the key is in the pool, though the task's entry still
// waits in the queue (or the timer heap) for dispatch to reach it. A new
// task of the key counts it again, and under a key limit its slots are
// as if the key were new: the limit holds its tasks, no more.
func TestStatusKeysDropsAKeyWithItsLastTask(t *testing.T) {
	cases := []struct {
		name   string
		opts   []TaskOption // every task's
		heavy  bool         // q1's task weighs 2, and a Resize(1) drops it; else its ctx's cancel does
		settle error
	}{
		{"canceled while queued", nil, false, context.Canceled},
		{"canceled while scheduled", []TaskOption{{Delay: time.Hour}}, false, context.Canceled},
		{"too heavy after a Resize, queued", nil, true, ErrTooHeavy},
		{"too heavy after a Resize, scheduled", []TaskOption{{Delay: time.Hour}}, true, ErrTooHeavy},
	}
	for _, c := range cases {
		for _, limit := range []int{-1, 1} {
			t.Run(c.name+"/limit="+strconv.Itoa(limit), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					p := New(2, WithKeys(limit, nil), WithIdleTimeout(-1))
					defer p.Stop()
					blockers := newGate()
					defer blockers.release()
					p.Submit(blockers.wait)
					p.Submit(blockers.wait)
					ctx := context.Background()
					q1ctx, cancelQ1 := context.WithCancel(ctx)
					defer cancelQ1()
					var tasks []*Task
					for i := range 3 {
						opts := append([]TaskOption{{Key: "q" + strconv.Itoa(i)}}, c.opts...)
						taskCtx := ctx
						if i == 1 {
							taskCtx = q1ctx
							if c.heavy {
								opts = append(opts, TaskOption{Weight: 2})
							}
						}
						tasks = append(tasks, p.Go(taskCtx, noopFn, opts...))
					}
					synctest.Wait()
					require.Equal(t, 3, p.Status().Keys, "keys before")

					if c.heavy {
						p.Resize(1)
					} else {
						cancelQ1()
					}
					require.ErrorIs(t, tasks[1].Wait(), c.settle, "q1's task")
					s := p.Status()
					assert.Equal(t, 2, s.Waiting+s.Scheduled, "waiting and scheduled, as Wait reports q1's task")
					assert.Equal(t, 2, s.Keys, "keys, as Wait reports q1's task: q0 and q2")
					time.Sleep(10 * time.Minute)
					synctest.Wait()
					assert.Equal(t, 2, p.Status().Keys, "keys ten minutes later")

					// q1 again, two tasks that run as long as gate is closed:
					// the key counts again, and a limit of 1 holds the second.
					gate := newGate()
					again := []*Task{p.Go(ctx, fnOf(gate.wait), TaskOption{Key: "q1"}), p.Go(ctx, fnOf(gate.wait), TaskOption{Key: "q1"})}
					synctest.Wait()
					assert.Equal(t, 3, p.Status().Keys, "keys once q1 has tasks again")
					p.Resize(2)
					blockers.open()
					synctest.Wait()
					s = p.Status()
					if limit == 1 {
						assert.Equal(t, 1, s.Busy, "busy: q1's limit holds its second task")
					} else {
						assert.Equal(t, 2, s.Busy, "busy: both of q1's tasks")
					}
					gate.open()
					for _, task := range again {
						require.NoError(t, task.Wait())
					}
					for _, i := range []int{0, 2} {
						require.NoError(t, tasks[i].Wait())
					}
					synctest.Wait()
					assert.Equal(t, 0, p.Status().Keys, "keys once every task is done")
					p.StopWait()
					requireStoppedClean(t, p)
				})
			})
		}
	}
}

// TaskOption{Key: ""} is no key: the limit does not apply, and Status.Keys does not
// count it.
func TestKeyLimitEmptyKeyIsNoKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4, WithKeys(1, nil), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		for _, name := range []string{"n1", "n2", "n3"} {
			p.Go(ctx, r.fn(name, time.Second), TaskOption{Key: ""})
		}
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 3, s.Busy, "busy")
		assert.Zero(t, s.Keys, "keys")
		r.stopWaitRan(t, p, "n1@0s", "n2@0s", "n3@0s")
	})
}

// A 1 MiB key works as any key: its tasks run one at a time under limit
// 1, and a key that differs from it in its last byte is another key.
func TestKeyLimitHugeKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4, WithKeys(1, nil), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		k1 := strings.Repeat("k", 1<<20)
		k2 := k1[:len(k1)-1] + "j"
		p.Go(ctx, r.fn("x1", time.Second), TaskOption{Key: k1})
		p.Go(ctx, r.fn("x2", time.Second), TaskOption{Key: k1})
		p.Go(ctx, r.fn("y1", time.Second), TaskOption{Key: k2})
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 2, s.Busy, "busy: x1 and y1")
		assert.Equal(t, 1, s.Waiting, "waiting: x2")
		assert.Equal(t, 2, s.Keys, "keys")
		r.stopWaitRan(t, p, "x1@0s", "y1@0s", "x2@1s")
	})
}

// --- the limit: a key's tasks wait for its slots, other keys go past ---

// startsOf is the starts in got whose name begins with prefix.
func startsOf(got []string, prefix string) []string {
	var out []string
	for _, s := range got {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// Limit 1: each key's tasks run one at a time, in the order they were
// submitted, while the tasks of other keys run beside them; a worker with
// no task it may start stays idle.
func TestKeyLimitOneRunsEachKeyInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4, WithKeys(1, nil))
		l := newStartTrace()
		ctx := context.Background()
		var tasks []*Task
		for i := range 4 {
			for _, k := range []string{"a", "b", "c"} {
				tasks = append(tasks, p.Go(ctx, l.fn(k+strconv.Itoa(i), time.Second), TaskOption{Key: k}))
			}
		}
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 3, s.Keys, "keys")
		assert.Equal(t, 3, s.Busy, "one task per key runs; the fourth worker has nothing it may start")
		assert.Equal(t, 9, s.Waiting, "held back by their keys' limit")
		for _, task := range tasks {
			require.NoError(t, task.Wait())
		}
		for _, k := range []string{"a", "b", "c"} {
			assert.Equal(t, []string{k + "0@0s", k + "1@1s", k + "2@2s", k + "3@3s"}, startsOf(l.order(), k), "key %s: one at a time, in order", k)
		}
		p.StopWait()
		requireStoppedClean(t, p)
	})
}

// keyOpts is TaskOption{Key: k} with opts.
func keyOpts(k string, opts ...TaskOption) []TaskOption {
	return append([]TaskOption{{Key: k}}, opts...)
}

// Limit 1: a task of a key that holds its one slot waits in the queue
// holding no worker, while tasks of other keys and tasks without a key,
// submitted after it, at once or later, start at once on the free workers.
func TestKeyLimitOthersGoPastAHeldKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4, WithKeys(1, nil), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		p.Go(ctx, r.fn("a1", 3*time.Second), TaskOption{Key: "a"})
		p.Go(ctx, r.fn("a2", time.Second), TaskOption{Key: "a"})
		p.Go(ctx, r.fn("b1", time.Second), TaskOption{Key: "b"})
		p.Submit(r.task("n1", time.Second))
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 3, s.Workers, "workers: a2 holds none")
		assert.Equal(t, 3, s.Busy, "busy")
		assert.Equal(t, 1, s.Waiting, "waiting: a2")
		assert.Equal(t, 2, s.Keys, "keys")

		r.sleepUntil(1500 * time.Millisecond) // b1 and n1 are done; a2 still waits
		p.Go(ctx, r.fn("b2", time.Second), TaskOption{Key: "b"})
		p.Go(ctx, r.fn("n2", time.Second))
		synctest.Wait()
		s = p.Status()
		assert.Equal(t, 3, s.Workers, "workers at 1.5s")
		assert.Equal(t, 3, s.Busy, "busy at 1.5s: a1, b2, n2")
		assert.Equal(t, 1, s.Waiting, "waiting at 1.5s: a2")

		s = r.stopWaitRan(t, p, "a1@0s", "b1@0s", "n1@0s", "b2@1.5s", "n2@1.5s", "a2@3s")
		assert.Equal(t, uint64(6), s.Completed, "completed")
		assert.Zero(t, s.Keys, "keys after the stop")
	})
}

// Limit 3 counts slots: a TaskOption{Weight: 2} task of a key that holds 2 waits
// (2+2 > 3), and the task behind it in its key, which would fit, waits
// behind it; both start when the first ends (2+1 <= 3). Another key goes
// past them.
func TestKeyLimitCountsWeights(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(6, WithKeys(3, nil), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		p.Go(ctx, r.fn("a1", 2*time.Second), keyOpts("a", TaskOption{Weight: 2})...)
		p.Go(ctx, r.fn("a2", time.Second), keyOpts("a", TaskOption{Weight: 2})...)
		p.Go(ctx, r.fn("a3", time.Second), TaskOption{Key: "a"})
		p.Go(ctx, r.fn("b1", time.Second), keyOpts("b", TaskOption{Weight: 2})...)
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 2, s.Busy, "busy: a1 and b1, 4 of 6 slots")
		assert.Equal(t, 2, s.Waiting, "waiting: a2 and a3")

		r.stopWaitRan(t, p, "a1@0s", "b1@0s", "a2@2s", "a3@2s")
	})
}

// A task heavier than its key's limit starts once its key holds no slot,
// and then holds its weight: the next task of its key waits until it ends,
// although the pool has a free slot; another key takes that slot.
func TestKeyLimitTaskHeavierThanTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(7, WithKeys(3, nil), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		p.Go(ctx, r.fn("a1", time.Second), TaskOption{Key: "a"})
		heavy := p.Go(ctx, r.fn("aH", 2*time.Second), keyOpts("a", TaskOption{Weight: 5})...)
		p.Go(ctx, r.fn("a2", time.Second), TaskOption{Key: "a"})
		synctest.Wait()
		assert.Equal(t, 2, p.Status().Waiting, "waiting: aH until a gives back its slot, a2 behind it")

		r.sleepUntil(1500 * time.Millisecond) // aH holds 5 slots of 7, a2 waits
		s := p.Status()
		assert.Equal(t, 1, s.Busy, "busy at 1.5s: aH")
		assert.Equal(t, 1, s.Waiting, "waiting at 1.5s: a2")
		p.Go(ctx, r.fn("b1", time.Second), TaskOption{Key: "b"})
		synctest.Wait()
		assert.Equal(t, 2, p.Status().Busy, "busy: b1 takes a free slot")

		require.NoError(t, heavy.Wait())
		r.stopWaitRan(t, p, "a1@0s", "aH@1s", "b1@1.5s", "a2@3s")
	})
}

// Priority comes before the key's order: as the running task of a key
// with limit 1 ends, the next to start is its highest-priority waiting
// task (the oldest of those). A lower-priority task of another key goes
// past the key's held-back tasks of higher levels.
func TestKeyLimitPriorityOrdersAKeysTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithKeys(1, nil), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		p.Go(ctx, r.fn("a1", time.Second), TaskOption{Key: "a"})
		p.Go(ctx, r.fn("b1", time.Second), TaskOption{Key: "b"})
		p.Go(ctx, r.fn("a2", time.Second), keyOpts("a", TaskOption{Priority: 0})...)
		p.Go(ctx, r.fn("a3", time.Second), keyOpts("a", TaskOption{Priority: 5})...)
		p.Go(ctx, r.fn("a4", time.Second), keyOpts("a", TaskOption{Priority: -1})...)
		p.Go(ctx, r.fn("a5", time.Second), keyOpts("a", TaskOption{Priority: 5})...)
		p.Go(ctx, r.fn("b2", time.Second), keyOpts("b", TaskOption{Priority: -3})...)
		r.stopWaitRan(t, p, "a1@0s", "b1@0s", "a3@1s", "b2@1s", "a5@2s", "a2@3s", "a4@4s")
	})
}

// A task held back at the front of its key's queue that leaves (canceled,
// expired) lets the task behind it start at once if that one fits under
// the limit: here aH, heavier than the limit of 2, waits until a holds no
// slot, and a2 behind it fits beside a1. A queue held back by its key's
// limit is looked at again as its front leaves, not only when the key
// gives back slots (a2 would then wait until a1 ended, or expire).
func TestKeyLimitHeldBackFrontThatLeavesLetsTheNextStart(t *testing.T) {
	for _, leave := range []string{"cancel", "expiry"} {
		t.Run(leave, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				opts := []Option{WithKeys(2, nil), WithIdleTimeout(-1)}
				if leave == "expiry" {
					opts = append(opts, WithQueueTimeout(time.Second))
				}
				p := New(4, opts...)
				defer p.Stop()
				r, ctx := newStartTrace(), context.Background()
				p.Go(ctx, r.fn("a1", 3*time.Second), TaskOption{Key: "a"})
				aHctx, cancelAH := context.WithCancel(ctx)
				defer cancelAH()
				aH := p.Go(aHctx, r.fn("aH", time.Second), keyOpts("a", TaskOption{Weight: 3})...)
				done := r.watch(aH)
				r.sleepUntil(time.Second / 2)
				p.Go(ctx, r.fn("a2", time.Second), TaskOption{Key: "a"})
				r.sleepUntil(time.Second)
				if leave == "cancel" {
					cancelAH()
				}
				got := requireSettled(t, done, "aH")
				assert.Equal(t, time.Second, got.at, "aH left at 1s")

				r.stopWaitRan(t, p, "a1@0s", "a2@1s")
			})
		})
	}
}

// --- cancel and expiry ---

// A canceled held-back task leaves its key at once: its Wait returns
// context.Canceled at the cancel, it leaves Waiting and joins Canceled
// then, and the next task of its key starts when the running one ends.
func TestKeyLimitCanceledHeldBackTaskLeavesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithKeys(1, nil), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		p.Go(ctx, r.fn("a1", 3*time.Second), TaskOption{Key: "a"})
		a2ctx, cancelA2 := context.WithCancel(ctx)
		a2 := p.Go(a2ctx, r.fn("a2", time.Second), TaskOption{Key: "a"})
		p.Go(ctx, r.fn("a3", time.Second), TaskOption{Key: "a"})
		done := r.watch(a2)
		synctest.Wait()
		require.Equal(t, 2, p.Status().Waiting, "waiting: a2 and a3")

		r.sleepUntil(time.Second + time.Second/2)
		cancelA2()
		got := requireSettled(t, done, "a2")
		assert.ErrorIs(t, got.err, context.Canceled, "a2")
		assert.Equal(t, 1500*time.Millisecond, got.at, "a2's Wait returned at the cancel")
		s := p.Status()
		assert.Equal(t, 1, s.Waiting, "waiting after the cancel: a3")
		assert.Equal(t, uint64(1), s.Canceled, "canceled")
		assert.Equal(t, 1, s.Keys, "keys")

		s = r.stopWaitRan(t, p, "a1@0s", "a3@3s")
		assert.Equal(t, uint64(1), s.Canceled, "canceled")
		assert.Zero(t, s.Keys, "keys after the stop")
	})
}

// A held-back task expires when its wait reaches WithQueueTimeout, not
// when its key frees: its Wait returns errExpired then, and it leaves
// Waiting and joins Expired; the next task of its key starts when the
// running one ends.
func TestKeyLimitHeldBackTaskExpiresOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithKeys(1, nil), WithQueueTimeout(2*time.Second), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		p.Go(ctx, r.fn("a1", 3*time.Second), TaskOption{Key: "a"})
		a2 := p.Go(ctx, r.fn("a2", time.Second), TaskOption{Key: "a"})
		done := r.watch(a2)

		r.sleepUntil(1500 * time.Millisecond)
		p.Go(ctx, r.fn("a3", time.Second), TaskOption{Key: "a"}) // it waits 1.5s: it does not expire
		r.sleepUntil(2500 * time.Millisecond)
		got := requireSettled(t, done, "a2")
		assert.ErrorIs(t, got.err, errExpired, "a2")
		assert.Equal(t, 2*time.Second, got.at, "a2's Wait returned as it had waited 2s")
		s := p.Status()
		assert.Equal(t, 1, s.Waiting, "waiting at 2.5s: a3")
		assert.Equal(t, uint64(1), s.Expired, "expired at 2.5s")

		s = r.stopWaitRan(t, p, "a1@0s", "a3@3s")
		assert.Equal(t, uint64(1), s.Expired, "expired")
		assert.Zero(t, s.Keys, "keys after the stop")
	})
}

// Canceling the running task's context frees its key's slot only when
// its fn returns: the next task of its key starts then, not at the cancel.
func TestKeyLimitCancelingTheRunningTaskFreesItsSlotWhenItReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithKeys(1, nil), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		a1 := p.Go(runCtx, func(ctx context.Context) error {
			r.record("a1")
			<-ctx.Done()
			time.Sleep(time.Second) // it takes a second to wind down
			return ctx.Err()
		}, TaskOption{Key: "a"})
		done := r.watch(a1)
		p.Go(ctx, r.fn("a2", time.Second), TaskOption{Key: "a"})

		r.sleepUntil(1500 * time.Millisecond)
		cancel()
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 1, s.Busy, "busy after the cancel: a1 winds down")
		assert.Equal(t, 1, s.Waiting, "waiting after the cancel: a2")

		r.sleepUntil(3 * time.Second)
		got := requireSettled(t, done, "a1")
		assert.ErrorIs(t, got.err, context.Canceled, "a1's own outcome")
		assert.Equal(t, 2500*time.Millisecond, got.at, "a1 returned")
		s = r.stopWaitRan(t, p, "a1@0s", "a2@2.5s")
		assert.Equal(t, uint64(2), s.Completed, "completed: a1 ran")
		assert.Zero(t, s.Canceled, "canceled: a1 had started")
	})
}

// --- retries and delays ---

// fixedRetries is a retryPolicy that retries after d, every time.
func fixedRetries(d time.Duration) retryPolicy {
	return func(int, error) (time.Duration, bool) { return d, true }
}

// flakyOnce is a Task's fn that records its runs as name, each lasting d,
// and fails its first run.
func (r *startTrace) flakyOnce(name string, d time.Duration) func(context.Context) error {
	var runs atomic.Int32
	return func(ctx context.Context) error {
		_ = r.fn(name, d)(ctx)
		if runs.Add(1) == 1 {
			return errFlaky
		}
		return nil
	}
}

// A task that waits for a retry keeps its key's slot: with limit 1 the
// next task of its key starts only after it ended for good, while the
// worker it left serves another key meanwhile.
func TestKeyLimitRetryKeepsItsKeysSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithKeys(1, nil), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		runs := 0
		a1 := p.Go(ctx, func(ctx context.Context) error {
			_ = r.fn("a1", time.Second)(ctx)
			if runs++; runs <= 2 {
				return errFlaky
			}
			return nil
		}, keyOpts("a", TaskOption{Retry: fixedRetries(5 * time.Second)})...)
		p.Go(ctx, r.fn("a2", time.Second), TaskOption{Key: "a"})
		p.Go(ctx, r.fn("b1", time.Second), TaskOption{Key: "b"})

		r.sleepUntil(2500 * time.Millisecond) // a1 waits for its run at 6s; b1 ran on the free worker
		s := p.Status()
		assert.Equal(t, 0, s.Busy, "busy at 2.5s")
		assert.Equal(t, 1, s.Scheduled, "scheduled at 2.5s: a1")
		assert.Equal(t, 1, s.Waiting, "waiting at 2.5s: a2, although the worker is free")
		assert.Equal(t, 1, s.Keys, "keys at 2.5s: a")
		p.Go(ctx, r.fn("b2", time.Second), TaskOption{Key: "b"})

		require.NoError(t, a1.Wait())
		s = r.stopWaitRan(t, p, "a1@0s", "b1@1s", "b2@2.5s", "a1@6s", "a1@12s", "a2@13s")
		assert.Equal(t, uint64(2), s.Retried, "retried")
		assert.Equal(t, uint64(4), s.Completed, "completed")
	})
}

// A delayed task holds nothing of its key until it is due: a task of its
// key submitted after it, not delayed, starts first; once due it waits for
// its key's slot like any task, and starts before a task of its key that
// became ready after it.
func TestKeyLimitDelayedTaskHoldsNothingUntilDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithKeys(1, nil), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		p.Go(ctx, r.fn("aD", time.Second), keyOpts("a", TaskOption{Delay: 2 * time.Second})...)
		p.Go(ctx, r.fn("a2", 3*time.Second), TaskOption{Key: "a"})
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 1, s.Busy, "busy: a2")
		assert.Equal(t, 1, s.Scheduled, "scheduled: aD")

		r.sleepUntil(2500 * time.Millisecond) // aD is due and waits for a's slot
		assert.Equal(t, 1, p.Status().Waiting, "waiting at 2.5s: aD")
		p.Go(ctx, r.fn("a3", time.Second), TaskOption{Key: "a"})

		r.stopWaitRan(t, p, "a2@0s", "aD@3s", "a3@4s")
	})
}

// A task that waits for a retry, holding its key's slot, gives it back at
// its ctx's cancel, not when its next run would have been due: the next task of
// its key starts at once, though other tasks wait in the timer heap (so
// that dispatch has no reason to sweep it for room).
func TestKeyLimitCanceledRetryGivesBackItsSlotAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithKeys(1, nil), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		a1ctx, cancelA1 := context.WithCancel(ctx)
		a1 := p.Go(a1ctx, func(ctx context.Context) error {
			_ = r.fn("a1", time.Second)(ctx)
			return errFlaky
		}, keyOpts("a", TaskOption{Retry: fixedRetries(time.Hour)})...)
		done := r.watch(a1)
		for range 3 {
			p.Go(ctx, noopFn, TaskOption{Delay: 2 * time.Hour})
		}
		p.Go(ctx, r.fn("a2", time.Second), TaskOption{Key: "a"})

		r.sleepUntil(2 * time.Second) // a1 waits for its run at 1h1s, a2 for a's slot
		require.Equal(t, 1, p.Status().Waiting, "waiting at 2s: a2")
		cancelA1()
		got := requireSettled(t, done, "a1")
		assert.ErrorIs(t, got.err, context.Canceled, "a1")
		r.sleepUntil(4 * time.Second)
		assert.Equal(t, []string{"a1@0s", "a2@2s"}, r.runs(), "runs at 4s")
		s := p.Status()
		assert.Zero(t, s.Waiting, "waiting at 4s")
		assert.Zero(t, s.Keys, "keys at 4s: a1 and a2 are done")

		p.Stop()
		requireStoppedClean(t, p)
	})
}

// The same for a retry that came due and waits in the queue, at the front
// of its key's queue at a low priority level, while tasks of a higher
// level keep dispatch busy there: its ctx's cancel gives back its key's slot at
// once, so that a task of its key at the higher level takes its fair turn
// among them, rather than wait until the level has no other task.
func TestKeyLimitCanceledQueuedRetryGivesBackItsSlotAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithKeys(1, nil), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		a1ctx, cancelA1 := context.WithCancel(ctx)
		p.Go(a1ctx, func(ctx context.Context) error {
			_ = r.fn("a1", time.Second)(ctx)
			return errFlaky
		}, keyOpts("a", TaskOption{Retry: fixedRetries(time.Second)})...)
		p.Go(ctx, r.fn("b1", 10*time.Second))

		r.sleepUntil(3 * time.Second) // a1 is due since 2s: it waits for the worker, holding a's slot
		p.Go(ctx, r.fn("a2", time.Second), keyOpts("a", TaskOption{Priority: 5})...)
		for _, name := range []string{"u1", "u2", "u3", "u4"} {
			p.Go(ctx, r.fn(name, time.Second), TaskOption{Priority: 5})
		}
		r.sleepUntil(4 * time.Second)
		cancelA1()
		synctest.Wait()
		assert.Equal(t, 1, p.Status().Keys, "keys after the cancel: a, for a2")

		r.sleepUntil(20 * time.Second)
		assert.Equal(t, []string{"a1@0s", "b1@1s", "u1@11s", "a2@12s", "u2@13s", "u3@14s", "u4@15s"}, r.runs())
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Canceled, "canceled: a1")
	})
}

// A retry that holds its key's slot waits at the front of its key's
// queue, before tasks of its key that became ready earlier: they still
// expire on time, not when the retry leaves the front. Here a1's retry
// comes due at 2s behind the busy worker, in front of x, queued at 0s:
// x expires at 2.5s, a1 at 4.5s.
func TestKeyLimitTaskBehindAHeldRetryExpiresOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithKeys(1, nil), WithQueueTimeout(2500*time.Millisecond), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		a1 := p.Go(ctx, r.flakyOnce("a1", time.Second), keyOpts("a", TaskOption{Retry: fixedRetries(time.Second)})...)
		x := p.Go(ctx, r.fn("x", time.Second), TaskOption{Key: "a"})
		p.Go(ctx, r.fn("u", 10*time.Second))
		doneA1, doneX := r.watch(a1), r.watch(x)

		r.sleepUntil(3 * time.Second)
		got := requireSettled(t, doneX, "x")
		assert.ErrorIs(t, got.err, errExpired, "x")
		assert.Equal(t, 2500*time.Millisecond, got.at, "x's Wait returned as it had waited 2.5s")
		s := p.Status()
		assert.Equal(t, 1, s.Waiting, "waiting at 3s: a1's retry")
		assert.Equal(t, uint64(1), s.Expired, "expired at 3s")
		r.sleepUntil(5 * time.Second)
		got = requireSettled(t, doneA1, "a1")
		assert.ErrorIs(t, got.err, errExpired, "a1")
		assert.ErrorIs(t, got.err, errFlaky, "a1's last run")
		assert.Equal(t, 4500*time.Millisecond, got.at, "a1's Wait returned as its retry had waited 2.5s")

		s = r.stopWaitRan(t, p, "a1@0s", "u@1s")
		assert.Equal(t, uint64(2), s.Expired, "expired")
	})
}

// --- the bound: Reject, Block, DropOldest ---

// Under Reject, held-back tasks count in Waiting and fill the bound: a
// further task of their key is refused with ErrQueueFull. A task that can
// start at once on a free worker needs no room: one without a key, and one
// of another key, are accepted and start; once every worker is busy, the
// next ones are refused.
func TestKeyLimitRejectCountsHeldBackTasksButNotTasksThatStartAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3, WithKeys(1, nil), WithMaxWaiting(2, Reject), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		p.Go(ctx, r.fn("a1", 5*time.Second), TaskOption{Key: "a"})
		synctest.Wait() // a1 started: it gave back the room it held on its way
		p.Go(ctx, r.fn("a2", time.Second), TaskOption{Key: "a"})
		p.Go(ctx, r.fn("a3", time.Second), TaskOption{Key: "a"})
		synctest.Wait()
		require.Equal(t, 2, p.Status().Waiting, "waiting: a2 and a3 fill the bound")

		assert.ErrorIs(t, p.Go(ctx, r.fn("a4", time.Second), TaskOption{Key: "a"}).Wait(), ErrQueueFull, "a4: its key is held and the queue is full")
		assert.NoError(t, p.Do(r.task("n1", time.Second)), "n1: no key, a free worker")
		b1 := p.Go(ctx, r.fn("b1", time.Second), TaskOption{Key: "b"})
		synctest.Wait()
		assert.False(t, isDone(b1.Done()), "b1: another key, a free worker")
		s := p.Status()
		assert.Equal(t, 3, s.Busy, "busy: a1, n1, b1")
		assert.Equal(t, 2, s.Waiting, "waiting: a2 and a3")

		assert.ErrorIs(t, p.Go(ctx, r.fn("c1", time.Second), TaskOption{Key: "c"}).Wait(), ErrQueueFull, "c1: no free worker")
		assert.ErrorIs(t, p.Do(r.task("n2", time.Second)), ErrQueueFull, "n2: no free worker")

		require.NoError(t, b1.Wait())
		s = r.stopWaitRan(t, p, "a1@0s", "b1@0s", "n1@0s", "a2@5s", "a3@6s")
		assert.Equal(t, uint64(5), s.Submitted, "submitted")
		assert.Equal(t, uint64(3), s.Rejected, "rejected: a4, c1, n2")
	})
}

// Under Block, held-back tasks fill the bound: a task of their key waits
// in its call, parked, and is admitted as room frees (when the first of
// them starts); a task of another key with a free worker is admitted at
// once.
func TestKeyLimitBlockAdmitsAParkedSubmitterAsRoomFrees(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithKeys(1, nil), WithMaxWaiting(1, Block), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		p.Go(ctx, r.fn("a1", 2*time.Second), TaskOption{Key: "a"})
		p.Go(ctx, r.fn("a2", time.Second), TaskOption{Key: "a"})
		synctest.Wait()
		require.Equal(t, 1, p.Status().Waiting, "waiting: a2 fills the bound")

		r.sleepUntil(time.Second / 2)
		p.Go(ctx, r.fn("b1", 2*time.Second), TaskOption{Key: "b"})
		assert.Equal(t, time.Second/2, r.since(), "b1's Go returned at once")
		synctest.Wait()
		assert.Equal(t, 2, p.Status().Busy, "busy at 0.5s: a1 and b1")

		admitted := make(chan time.Duration, 1)
		go func() {
			p.Go(ctx, r.fn("a3", time.Second), TaskOption{Key: "a"})
			admitted <- r.since()
		}()
		r.sleepUntil(time.Second)
		assert.Empty(t, admitted, "a3's Go returned with the queue full")
		s := p.Status()
		assert.Equal(t, 1, s.Waiting, "waiting at 1s: a2")
		assert.Equal(t, uint64(3), s.Submitted, "submitted at 1s: a3 is not accepted yet")

		r.sleepUntil(2500 * time.Millisecond)
		require.Len(t, admitted, 1, "a3's Go returned")
		assert.Equal(t, 2*time.Second, <-admitted, "a3 admitted as a2 started")
		r.stopWaitRan(t, p, "a1@0s", "b1@500ms", "a2@2s", "a3@3s")
	})
}

// Under Block, a submitter parked only because its key's limit keeps its
// task from starting does not hold back a later task that can start at
// once on a free worker (it takes no room from it); nor, once parked
// behind it, does that later task wait for it.
func TestKeyLimitBlockParkedKeyHeldSubmitterDoesNotHoldBackOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3, WithKeys(1, nil), WithMaxWaiting(1, Block), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		p.Go(ctx, r.fn("a1", 5*time.Second), TaskOption{Key: "a"})
		synctest.Wait()
		p.Go(ctx, r.fn("a2", time.Second), TaskOption{Key: "a"}) // held back: fills the bound
		parked := make(chan time.Duration, 1)
		var a3 *Task
		go func() {
			a3 = p.Go(ctx, r.fn("a3", time.Second), TaskOption{Key: "a"})
			parked <- r.since()
		}()
		r.sleepUntil(time.Second / 2)
		require.Empty(t, parked, "a3 waits for room")
		p.Go(ctx, r.fn("b1", time.Second), TaskOption{Key: "b"})
		assert.Equal(t, time.Second/2, r.since(), "b1's Go returned at once: a worker is free for it")
		r.sleepUntil(5500 * time.Millisecond)
		require.Len(t, parked, 1, "a3's Go returned")
		assert.Equal(t, 5*time.Second, <-parked, "a3 admitted as a2 started")
		assert.NoError(t, a3.Wait())
		r.stopWaitRan(t, p, "a1@0s", "b1@500ms", "a2@5s", "a3@6s")
	})
}

// Under DropOldest a held-back task counts in the bound and is the oldest
// waiting task: a task of its key that must wait drops it, with
// errDropped at once, while a task of another key that starts on a free
// worker needs no room and drops nothing. The next task of the key starts
// when the running one ends.
func TestKeyLimitDropOldestDropsAHeldBackTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithKeys(1, nil), WithMaxWaiting(1, DropOldest), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		p.Go(ctx, r.fn("a1", 3*time.Second), TaskOption{Key: "a"})
		a2 := p.Go(ctx, r.fn("a2", time.Second), TaskOption{Key: "a"})
		done := r.watch(a2)

		r.sleepUntil(time.Second / 2)
		p.Go(ctx, r.fn("b1", 2*time.Second), TaskOption{Key: "b"}) // a free worker: no room needed
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 2, s.Busy, "busy at 0.5s: a1 and b1")
		assert.Equal(t, 1, s.Waiting, "waiting at 0.5s: a2")
		assert.Zero(t, s.Dropped, "dropped at 0.5s")

		r.sleepUntil(1500 * time.Millisecond)
		p.Go(ctx, r.fn("a3", time.Second), TaskOption{Key: "a"}) // must wait: makes room
		got := requireSettled(t, done, "a2")
		assert.ErrorIs(t, got.err, errDropped, "a2")
		assert.Equal(t, 1500*time.Millisecond, got.at, "a2's Wait returned as a3 came")
		s = p.Status()
		assert.Equal(t, 1, s.Waiting, "waiting at 1.5s: a3")
		assert.Equal(t, uint64(1), s.Dropped, "dropped at 1.5s")

		s = r.stopWaitRan(t, p, "a1@0s", "b1@500ms", "a3@3s")
		assert.Equal(t, uint64(1), s.Dropped, "dropped")
		assert.Zero(t, s.Keys, "keys after the stop")
	})
}

// DropOldest drops the oldest waiting task of the pool, also when a retry
// that holds its key's slot came due after it and waits in front of it in
// its key's queue: x (queued at 0s), not a1's retry (due at 2s).
func TestKeyLimitDropOldestLooksPastAHeldRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithKeys(1, nil), WithMaxWaiting(2, DropOldest), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		a1 := p.Go(ctx, r.flakyOnce("a1", time.Second), keyOpts("a", TaskOption{Retry: fixedRetries(time.Second)})...)
		x := p.Go(ctx, r.fn("x", time.Second), TaskOption{Key: "a"})
		p.Go(ctx, r.fn("u", 10*time.Second))
		doneX := r.watch(x)

		r.sleepUntil(3 * time.Second)
		require.Equal(t, 2, p.Status().Waiting, "waiting at 3s: a1's retry and x")
		p.Go(ctx, r.fn("y", time.Second))
		got := requireSettled(t, doneX, "x")
		assert.ErrorIs(t, got.err, errDropped, "x")
		assert.Equal(t, 3*time.Second, got.at, "x's Wait returned as y came")

		require.NoError(t, a1.Wait(), "a1")
		s := r.stopWaitRan(t, p, "a1@0s", "u@1s", "a1@11s", "y@12s")
		assert.Equal(t, uint64(1), s.Dropped, "dropped")
	})
}

// --- Resize ---

// Growing the pool lets more keys run at once; the held-back task of a
// key at its limit still waits.
func TestKeyLimitGrowingLetsMoreKeysRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithKeys(1, nil), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		p.Go(ctx, r.fn("a1", 2*time.Second), TaskOption{Key: "a"})
		p.Go(ctx, r.fn("a2", time.Second), TaskOption{Key: "a"})
		p.Go(ctx, r.fn("b1", 2*time.Second), TaskOption{Key: "b"})
		p.Go(ctx, r.fn("c1", 2*time.Second), TaskOption{Key: "c"})

		r.sleepUntil(time.Second / 2)
		p.Resize(4)
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, 3, s.Busy, "busy after the Resize: a1, b1, c1")
		assert.Equal(t, 1, s.Waiting, "waiting after the Resize: a2")

		r.stopWaitRan(t, p, "a1@0s", "b1@500ms", "c1@500ms", "a2@2s")
	})
}

// Shrinking the pool keeps the key's limit: a held-back task waits both
// for its key and for the pool to fall below its new size, and a key's
// tasks never hold more than the limit.
func TestKeyLimitShrinkingKeepsTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4, WithKeys(2, nil), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		var keyA concurrencyMeter
		aFn := func(name string, d time.Duration) func(context.Context) error {
			return fnOf(keyA.wrap(func() { _ = r.fn(name, d)(ctx) }))
		}
		p.Go(ctx, aFn("a1", 2*time.Second), TaskOption{Key: "a"})
		p.Go(ctx, aFn("a2", 4*time.Second), TaskOption{Key: "a"})
		p.Go(ctx, aFn("a3", time.Second), TaskOption{Key: "a"})
		p.Go(ctx, aFn("a4", time.Second), TaskOption{Key: "a"})
		p.Go(ctx, aFn("a5", time.Second), TaskOption{Key: "a"})
		p.Go(ctx, r.fn("b1", 4*time.Second), TaskOption{Key: "b"})
		p.Go(ctx, r.fn("b2", 4*time.Second), TaskOption{Key: "b"})
		synctest.Wait()
		assert.Equal(t, 3, p.Status().Waiting, "waiting: a3, a4, a5")

		r.sleepUntil(time.Second / 2)
		p.Resize(2)
		r.sleepUntil(2500 * time.Millisecond) // a1 ended: a's slot is free, the pool's are not
		s := p.Status()
		assert.Equal(t, 3, s.Busy, "busy at 2.5s: a2, b1, b2 above the new size")
		assert.Equal(t, 3, s.Workers, "workers at 2.5s: a1's retired")
		assert.Equal(t, 3, s.Waiting, "waiting at 2.5s")

		p.StopWait()
		assert.Equal(t, []string{"a1@0s", "a2@0s", "b1@0s", "b2@0s", "a3@4s", "a4@4s", "a5@5s"}, r.runs())
		assert.Equal(t, int64(2), keyA.peak.Load(), "the most tasks of a at once")
		requireStoppedClean(t, p)
	})
}

// A Resize below the weight of a held-back keyed task drops it at once
// with ErrTooHeavy (counted in Dropped); the task behind it in its key,
// which fits beside the running one under the limit of 2, starts then.
func TestKeyLimitResizeBelowAHeldBackWeightDropsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4, WithKeys(2, nil), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		p.Go(ctx, r.fn("a1", 2*time.Second), TaskOption{Key: "a"})
		heavy := p.Go(ctx, r.fn("aH", time.Second), keyOpts("a", TaskOption{Weight: 3})...)
		p.Go(ctx, r.fn("a2", time.Second), TaskOption{Key: "a"})
		done := r.watch(heavy)
		synctest.Wait()
		require.Equal(t, 2, p.Status().Waiting, "waiting: aH until a holds no slot, a2 behind it")

		r.sleepUntil(time.Second / 2)
		p.Resize(2)
		got := requireSettled(t, done, "aH")
		assert.ErrorIs(t, got.err, ErrTooHeavy, "aH")
		assert.Equal(t, time.Second/2, got.at, "aH's Wait returned at the Resize")
		s := p.Status()
		assert.Zero(t, s.Waiting, "waiting after the Resize: a2 started")
		assert.Equal(t, uint64(1), s.Dropped, "dropped")

		s = r.stopWaitRan(t, p, "a1@0s", "a2@500ms")
		assert.Equal(t, uint64(1), s.Dropped, "dropped")
	})
}

// --- stops, Pause and WaitIdle ---

// StopWait runs every keyed task, the held-back ones included, in each
// key's order, one at a time per key, and returns when the last ends.
func TestKeyLimitStopWaitRunsHeldBackTasksInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithKeys(1, nil), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		for _, name := range []string{"a1", "a2", "a3"} {
			p.Go(ctx, r.fn(name, time.Second), TaskOption{Key: "a"})
		}
		for _, name := range []string{"b1", "b2"} {
			require.NoError(t, p.DoContext(context.Background(), r.task(name, time.Second), TaskOption{Key: "b"}))
		}
		p.StopWait()
		assert.Equal(t, 3*time.Second, r.since(), "StopWait returned")
		assert.Equal(t, []string{"a1@0s", "b1@0s", "a2@1s", "b2@1s", "a3@2s"}, r.runs())
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(5), s.Completed, "completed")
		assert.Zero(t, s.Abandoned, "abandoned")
		assert.Zero(t, s.Keys, "keys")
	})
}

// StopWait, draining the queue, lets a retry canceled meanwhile give back
// its key's slot at once too: it returns once the next task of the key
// ran, not at the hour the retry would have come due.
func TestKeyLimitStopWaitDoesNotWaitForACanceledRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithKeys(1, nil), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		a1ctx, cancelA1 := context.WithCancel(ctx)
		p.Go(a1ctx, func(ctx context.Context) error {
			_ = r.fn("a1", time.Second)(ctx)
			return errFlaky
		}, keyOpts("a", TaskOption{Retry: fixedRetries(time.Hour)})...)
		for range 3 {
			p.Go(ctx, noopFn, TaskOption{Delay: time.Second * 3 / 2})
		}
		p.Go(ctx, r.fn("a2", time.Second), TaskOption{Key: "a"})
		r.sleepUntil(time.Second * 5 / 4) // a1 waits for its run at 1h1s, a2 for a's slot
		go func() {
			time.Sleep(time.Second)
			cancelA1()
		}()
		p.StopWait()
		assert.Equal(t, 3250*time.Millisecond, r.since(), "StopWait returned as a2 ended")
		assert.Equal(t, []string{"a1@0s", "a2@2.25s"}, r.runs())
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Canceled, "canceled: a1")
	})
}

// Stop abandons the held-back keyed tasks with ErrStopped and returns
// once the running ones end.
func TestKeyLimitStopAbandonsHeldBackTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		box := new(letterBox)
		p := New(2, WithKeys(1, nil), WithHooks(Hooks{DeadLetter: box.handle}), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		p.Go(ctx, r.fn("a1", 2*time.Second), TaskOption{Key: "a"})
		a2 := p.Go(ctx, r.fn("a2", time.Second), TaskOption{Key: "a"})
		require.NoError(t, p.DoContext(context.Background(), r.task("a3", time.Second), TaskOption{Key: "a"}))
		p.Go(ctx, r.fn("b1", 2*time.Second), TaskOption{Key: "b"})
		b2 := p.Go(ctx, r.fn("b2", time.Second), TaskOption{Key: "b"})
		synctest.Wait()
		require.Equal(t, 3, p.Status().Waiting, "waiting: a2, a3, b2")

		r.sleepUntil(time.Second / 2)
		p.Stop()
		assert.Equal(t, 2*time.Second, r.since(), "Stop returned as a1 and b1 ended")
		assert.ErrorIs(t, a2.Wait(), ErrStopped, "a2")
		assert.ErrorIs(t, b2.Wait(), ErrStopped, "b2")
		letters := box.got()
		require.Len(t, letters, 1, "dead letters: a3")
		assert.ErrorIs(t, letters[0].reason, ErrStopped, "a3's letter")
		assert.Equal(t, []string{"a1@0s", "b1@0s"}, r.runs())
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(3), s.Abandoned, "abandoned: a2, a3, b2")
		assert.Equal(t, uint64(2), s.Completed, "completed")
		assert.Zero(t, s.Keys, "keys")
	})
}

// Shutdown runs held-back keyed tasks as StopWait does until its ctx is
// done, then abandons those left with ErrStopped and returns once the
// running ones end, with ctx's error.
func TestKeyLimitShutdownGivesUpOnHeldBackTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithKeys(1, nil), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		p.Go(ctx, r.fn("a1", 3*time.Second), TaskOption{Key: "a"}) // runs on past the cut: it ignores its ctx
		a2 := p.Go(ctx, r.fn("a2", time.Second), TaskOption{Key: "a"})
		a3 := p.Go(ctx, r.fn("a3", time.Second), TaskOption{Key: "a"})
		p.Go(ctx, r.fn("b1", time.Second), TaskOption{Key: "b"})
		p.Go(ctx, r.fn("b2", time.Second), TaskOption{Key: "b"})

		deadline, cancel := context.WithTimeout(ctx, 2500*time.Millisecond)
		defer cancel()
		err := p.Shutdown(deadline)
		assert.ErrorIs(t, err, context.DeadlineExceeded, "Shutdown")
		assert.Equal(t, 3*time.Second, r.since(), "Shutdown returned as a1 ended")
		assert.ErrorIs(t, a2.Wait(), ErrStopped, "a2")
		assert.ErrorIs(t, a3.Wait(), ErrStopped, "a3")
		assert.Equal(t, []string{"a1@0s", "b1@0s", "b2@1s"}, r.runs())
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(2), s.Abandoned, "abandoned: a2, a3")
		assert.Equal(t, uint64(3), s.Completed, "completed")
		assert.Zero(t, s.Keys, "keys")
	})
}

// A Pause holds the keyed tasks queued after its barrier, even with free
// workers and keys under their limits, while those queued before it,
// held-back ones included, still run; when it ends they start, each key's
// in order.
func TestKeyLimitPauseHoldsKeyedTasksAfterItsBarrier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3, WithKeys(1, nil), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		p.Go(ctx, r.fn("a1", 2*time.Second), TaskOption{Key: "a"})
		p.Go(ctx, r.fn("a2", time.Second), TaskOption{Key: "a"}) // before the barrier, held back by a1
		pauseCtx, resume := context.WithCancel(ctx)
		defer resume()
		paused := make(chan time.Duration, 1)
		go func() {
			p.Pause(pauseCtx)
			paused <- r.since()
		}()

		r.sleepUntil(time.Second / 2)
		p.Go(ctx, r.fn("a3", time.Second), TaskOption{Key: "a"})
		p.Go(ctx, r.fn("a4", time.Second), TaskOption{Key: "a"})
		p.Go(ctx, r.fn("b1", time.Second), TaskOption{Key: "b"})
		p.Go(ctx, r.fn("n1", time.Second))
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, "paused", stateOf(s), "state")
		assert.Equal(t, 1, s.Busy, "busy at 0.5s: a1")
		assert.Equal(t, 5, s.Waiting, "waiting at 0.5s: a2, and the four after the barrier")

		r.sleepUntil(3500 * time.Millisecond)
		require.Len(t, paused, 1, "Pause returned")
		assert.Equal(t, 3*time.Second, <-paused, "Pause returned as a2, the last before the barrier, ended")
		s = p.Status()
		assert.Equal(t, 0, s.Busy, "busy at 3.5s: three workers, none running")
		assert.Equal(t, 4, s.Waiting, "waiting at 3.5s")

		r.sleepUntil(4500 * time.Millisecond)
		resume()
		r.stopWaitRan(t, p, "a1@0s", "a2@2s", "a3@4.5s", "b1@4.5s", "n1@4.5s", "a4@5.5s")
	})
}

// WaitIdle waits for the held-back keyed tasks, and for a task waiting for
// a retry that holds its key: it returns when the last of them ends.
func TestKeyLimitWaitIdleWaitsForHeldBackTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithKeys(1, nil), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		runs := 0
		p.Go(ctx, func(ctx context.Context) error {
			_ = r.fn("a1", time.Second)(ctx)
			if runs++; runs == 1 {
				return errFlaky
			}
			return nil
		}, keyOpts("a", TaskOption{Retry: fixedRetries(2 * time.Second)})...)
		p.Go(ctx, r.fn("a2", time.Second), TaskOption{Key: "a"})
		idle := goWaitIdle(p, ctx, r.t0)

		r.sleepUntil(1500 * time.Millisecond)
		s := p.Status()
		assert.Equal(t, 0, s.Busy, "busy at 1.5s")
		assert.Equal(t, 1, s.Scheduled, "scheduled at 1.5s: a1's next run")
		assert.Equal(t, 1, s.Waiting, "waiting at 1.5s: a2")
		assert.False(t, idle.returned(), "WaitIdle returned at 1.5s")
		r.sleepUntil(4500 * time.Millisecond)
		assert.False(t, idle.returned(), "WaitIdle returned at 4.5s, as a2 runs")
		r.sleepUntil(5500 * time.Millisecond)
		require.True(t, idle.returned(), "WaitIdle returned")
		assert.NoError(t, idle.err, "WaitIdle")
		assert.Equal(t, 5*time.Second, idle.at, "WaitIdle returned as a2 ended")
		assert.Equal(t, []string{"a1@0s", "a1@3s", "a2@4s"}, r.runs())
	})
}

// --- dead letters and hooks ---

// keyHooks records the keys the hooks see, and the TaskInfo TaskDropped
// gets.
type keyHooks struct {
	mu                sync.Mutex
	started, finished []string
	dropped           []TaskInfo
}

func (h *keyHooks) hooks() Hooks {
	return Hooks{
		TaskStarted: func(ctx context.Context, t TaskInfo) context.Context {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.started = append(h.started, t.Key)
			return ctx
		},
		TaskFinished: func(_ context.Context, t TaskInfo) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.finished = append(h.finished, t.Key)
		},
		TaskDropped: func(t TaskInfo) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.dropped = append(h.dropped, t)
		},
	}
}

// A plain keyed task held back and abandoned by Stop goes to the
// dead-letter handler with ErrStopped, and TaskDropped sees its key;
// TaskStarted and TaskFinished see the keys of the tasks that ran.
func TestKeyLimitDeadLettersAndHooksSeeTheKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		box, h := new(letterBox), new(keyHooks)
		p := New(2, WithKeys(1, nil), WithHooks(Hooks{DeadLetter: box.handle}), WithHooks(h.hooks()), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		require.NoError(t, p.DoContext(context.Background(), r.task("a1", 2*time.Second), TaskOption{Key: "a"}))
		require.NoError(t, p.DoContext(context.Background(), r.task("a2", time.Second), TaskOption{Key: "a"}))
		p.Go(ctx, r.fn("b1", time.Second), TaskOption{Key: "b"})

		r.sleepUntil(1500 * time.Millisecond)
		p.Stop()
		assert.Equal(t, []string{"a1@0s", "b1@0s"}, r.runs())
		letters := box.got()
		require.Len(t, letters, 1, "dead letters")
		assert.ErrorIs(t, letters[0].reason, ErrStopped, "the letter's reason")
		require.Len(t, h.dropped, 1, "TaskDropped calls")
		assert.Equal(t, "a", h.dropped[0].Key, "TaskDropped's key")
		assert.ErrorIs(t, h.dropped[0].Err, ErrStopped, "TaskDropped's reason")
		slices.Sort(h.started)
		slices.Sort(h.finished)
		assert.Equal(t, []string{"a", "b"}, h.started, "TaskStarted's keys")
		assert.Equal(t, []string{"a", "b"}, h.finished, "TaskFinished's keys")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Abandoned, "abandoned")

		letters[0].task() // it is a2's func
		assert.Equal(t, []string{"a1@0s", "b1@0s", "a2@2s"}, r.runs())
	})
}

// --- a key's state lives only while it has tasks ---

// A key's state lives only while it has tasks in the pool: a pool that saw
// many distinct keys holds no more memory than one that saw ten.
func TestKeyStateIsFreedOnceKeysAreDone(t *testing.T) {
	keys, batch := 400_000, 20_000
	if testing.Short() || raceDetectorOn {
		keys, batch = 40_000, 4_000
	}
	heap := func(p *WorkerPool) uint64 {
		require.NoError(t, p.WaitIdle(context.Background()))
		require.NoError(t, p.WaitIdle(context.Background())) // the second passes after dispatch took every release
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	run := func(p *WorkerPool, n, batch int) {
		gate := newGate()
		for i := 0; i < n; {
			for range min(batch, n-i) {
				gate := gate
				p.DoContext(context.Background(), gate.wait, TaskOption{Key: "key-" + strconv.Itoa(i), Label: "x"})
				i++
			}
			gate.open()
			require.NoError(t, p.WaitIdle(context.Background()))
			gate = newGate()
		}
	}
	p := New(4, WithKeys(1, nil))
	defer p.Stop()
	run(p, 10, 10)
	afterTen := heap(p)
	run(p, keys, batch)
	afterMany := heap(p)
	assert.Equal(t, 0, p.Status().Keys)
	t.Logf("heap after 10 distinct keys: %d B; after %d more: %d B", afterTen, keys, afterMany)
	assert.Less(t, int64(afterMany)-int64(afterTen), int64(256<<10), "the pool holds no more after %d keys than after ten, but for bounded spares", keys)
}

// The same while one key stays active all along (it has a task scheduled
// for tomorrow), and under aging and a Pause, which make dispatch look at
// every key's queue: the key map, and the buffers that held every key's
// queue, give their memory back once the burst of keys is done, though
// the map never empties; they do not keep the room of their most keys and
// queues for as long as the pool lives.
func TestKeyStateIsFreedWhileAKeyStaysActive(t *testing.T) {
	const batches, batch = 3, 20_000
	p := New(4, WithKeys(1, nil), WithIdleTimeout(-1))
	defer p.Stop()
	ctx := context.Background()
	p.Go(ctx, noopFn, TaskOption{Key: "hot", Delay: 24 * time.Hour})
	// flush has dispatch take every release posted so far: it takes them
	// as it handles the Pause, whose barrier nothing holds.
	flush := func() {
		pauseCtx, resume := context.WithCancel(ctx)
		p.Pause(pauseCtx)
		resume()
	}
	run := func(n int) {
		pauseCtx, resume := context.WithCancel(ctx)
		p.Pause(pauseCtx) // the burst waits until it is all queued
		g := p.Group(ctx)
		for i := range n {
			g.Go(noopFn, TaskOption{Key: "key-" + strconv.Itoa(i)})
		}
		resume()
		require.NoError(t, g.Wait())
		flush()
		require.Equal(t, 1, p.Status().Keys, "keys once the burst is done: hot")
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	run(10)
	afterTen := heap()
	for range batches {
		run(batch)
	}
	afterMany := heap()
	t.Logf("heap after 10 distinct keys: %d B; after %d more: %d B", afterTen, batches*batch, afterMany)
	assert.Less(t, int64(afterMany)-int64(afterTen), int64(256<<10), "the pool holds no more after %d keys than after ten, but for bounded spares", batches*batch)
}

// --- bad input ---

// A negative key limit means no limit: the tasks of one key all start at
// once on free workers, and the key counts once in Status.Keys.
func TestANegativeKeyLimitIsNoLimit(t *testing.T) {
	for _, n := range []int{-1, -5} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(4, WithKeys(n, nil), WithIdleTimeout(-1))
				defer p.Stop()
				r, ctx := newStartTrace(), context.Background()
				for _, name := range []string{"a0", "a1", "a2", "a3"} {
					p.Go(ctx, r.fn(name, time.Second), TaskOption{Key: "a"})
				}
				synctest.Wait()
				assert.ElementsMatch(t, []string{"a0@0s", "a1@0s", "a2@0s", "a3@0s"}, r.order(), "WithKeys(%d, nil): no limit", n)
				s := p.Status()
				assert.Equal(t, 4, s.Busy, "busy")
				assert.Equal(t, 1, s.Keys, "keys")
				r.stopWaitRan(t, p, "a0@0s", "a1@0s", "a2@0s", "a3@0s")
			})
		})
	}
}

// A key limit of 0 would let no keyed task start: WithKeys refuses it at
// once, saying what means no limit.
func TestAKeyLimitOfZeroPanics(t *testing.T) {
	assert.PanicsWithValue(t, "workerpool: WithKeys with a limit of 0, which would let no keyed task start; a negative limit means no limit", func() {
		WithKeys(0, nil)
	})
}
