package workerpool

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// infoKey keys the values the tests put in contexts.
type infoKey string

// infoCall is one call path that submits a one-second task with a Label
// (where the call takes options) and waits until it ran.
type infoCall struct {
	name string
	want TaskInfo // the TaskInfo TaskFinished is to get, Pool and Ran set by the test
	run  func(t *testing.T, p *WorkerPool, task func())
}

func infoCalls() []infoCall {
	labeled := TaskInfo{Label: "resize", Priority: 2, Weight: 2, Attempt: 1}
	plain := TaskInfo{Weight: 1, Attempt: 1}
	opts := []TaskOption{{Label: "resize", Priority: 2, Weight: 2}}
	fn := func(task func()) func(context.Context) error {
		return func(context.Context) error { task(); return nil }
	}
	return []infoCall{
		{"Submit", plain, func(t *testing.T, p *WorkerPool, task func()) { p.Submit(task); p.StopWait() }},
		{"SubmitWait", plain, func(t *testing.T, p *WorkerPool, task func()) { p.SubmitWait(task) }},
		{"TryDo", plain, func(t *testing.T, p *WorkerPool, task func()) { require.True(t, tryDo(p, task)); p.StopWait() }},
		{"DoBatch", plain, func(t *testing.T, p *WorkerPool, task func()) {
			require.NoError(t, p.DoBatch([]func(){task}))
			p.StopWait()
		}},
		{"Do", plain, func(t *testing.T, p *WorkerPool, task func()) { require.NoError(t, p.Do(task)); p.StopWait() }},
		{"Do with options", labeled, func(t *testing.T, p *WorkerPool, task func()) {
			require.NoError(t, p.DoContext(context.Background(), task, opts...))
			p.StopWait()
		}},
		{"DoContext with options", labeled, func(t *testing.T, p *WorkerPool, task func()) {
			require.NoError(t, p.DoContext(t.Context(), task, opts...))
			p.StopWait()
		}},
		{"Go", labeled, func(t *testing.T, p *WorkerPool, task func()) {
			require.NoError(t, p.Go(t.Context(), fn(task), opts...).Wait())
		}},
		{"Call", labeled, func(t *testing.T, p *WorkerPool, task func()) {
			_, err := GoResult(t.Context(), p, func(ctx context.Context) (int, error) { return 0, fn(task)(ctx) }, opts...).Wait()
			require.NoError(t, err)
		}},
		{"Group.Go", labeled, func(t *testing.T, p *WorkerPool, task func()) {
			g := p.Group(t.Context())
			g.Go(fn(task), opts...)
			require.NoError(t, g.Wait())
		}},
	}
}

// Every call path tells the hooks the pool's name, the task's label,
// priority, weight and attempt, and its exact wait and run, in TaskStarted
// and TaskFinished alike.
func TestTaskInfoOnEveryCallPath(t *testing.T) {
	for _, c := range infoCalls() {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := new(hookLog)
				p := New(2, WithHooks(l.hooks()))
				defer p.Stop()
				c.run(t, p, func() { time.Sleep(time.Second) })
				synctest.Wait()
				want := c.want
				calls := l.callsNow()
				require.Len(t, calls, 2, "one start and one finish")
				assert.Equal(t, "started", calls[0].hook)
				assert.Equal(t, want, calls[0].info, "TaskStarted")
				want.Ran = time.Second
				assert.Equal(t, "finished", calls[1].hook)
				assert.Equal(t, want, calls[1].info, "TaskFinished")
			})
		})
	}
}

func (l *hookLog) callsNow() []hookCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]hookCall(nil), l.infos...)
}

// TaskStarted gets the context the task's call says, and the one it
// returns is the one the task runs with and TaskFinished gets: a Go task
// sees both the submitter's values and the hook's, and the cancel of its
// ctx still reaches it; a group task runs with the group's context; DoContext's
// task gets its ctx's values but not its cancellation; the other plain
// calls start from context.Background().
func TestTaskStartedContextIsTheTasksAndTheOneItRunsWith(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := make(chan context.Context, 10)
		p := New(1, WithHooks(Hooks{
			TaskStarted: func(ctx context.Context, _ TaskInfo) context.Context {
				got <- ctx
				return context.WithValue(ctx, infoKey("span"), "run")
			},
			TaskFinished: func(ctx context.Context, _ TaskInfo) { got <- ctx },
		}))
		defer p.Stop()
		parent := context.WithValue(t.Context(), infoKey("request"), "r1")

		inside := make(chan context.Context, 1)
		running := newGate()
		taskCtx, cancelTask := context.WithCancel(parent)
		task := p.Go(taskCtx, func(ctx context.Context) error {
			inside <- ctx
			running.open()
			<-ctx.Done()
			return context.Cause(ctx)
		})
		running.wait()
		started, ran := <-got, <-inside
		assert.Equal(t, "r1", started.Value(infoKey("request")), "TaskStarted sees the submitter's values")
		assert.Nil(t, started.Value(infoKey("span")))
		assert.Equal(t, "r1", ran.Value(infoKey("request")), "the task sees the submitter's values")
		assert.Equal(t, "run", ran.Value(infoKey("span")), "and the hook's")
		cancelTask()
		require.ErrorIs(t, task.Wait(), context.Canceled, "the cancel of the task's ctx reaches the ctx the hook returned")
		assert.Equal(t, "run", (<-got).Value(infoKey("span")), "TaskFinished gets the ctx TaskStarted returned")

		g := p.Group(parent)
		g.Go(func(ctx context.Context) error { inside <- ctx; return nil })
		require.NoError(t, g.Wait())
		started, ran = <-got, <-inside
		<-got
		assert.Equal(t, "r1", started.Value(infoKey("request")), "a group task starts from the group's context")
		assert.Equal(t, "run", ran.Value(infoKey("span")), "and runs with the hook's")

		canceled, cancel := context.WithCancel(parent)
		gate := newGate()
		require.NoError(t, p.DoContext(canceled, gate.wait))
		cancel()
		gate.open()
		synctest.Wait()
		started = <-got
		<-got
		assert.Equal(t, "r1", started.Value(infoKey("request")), "DoContext: its ctx's values")
		assert.NoError(t, started.Err(), "without its cancellation")
		assert.Nil(t, started.Done())

		require.NoError(t, p.DoWait(func() {}))
		assert.Equal(t, context.Background(), <-got, "DoWait starts from context.Background()")
		<-got
		p.Submit(func() {})
		synctest.Wait()
		assert.Equal(t, context.Background(), <-got, "Submit starts from context.Background()")
		<-got
	})
}

// A TaskStarted that returns nil, or panics under a panic handler, or
// calls runtime.Goexit, leaves the task its own context; TaskFinished gets
// it after a nil, and is not called for a run whose TaskStarted did not
// return (what that TaskStarted began for the run it never handed on, so
// a TaskFinished could only end some other run's).
func TestTaskStartedNilOrPanicKeepsTheContext(t *testing.T) {
	for _, tc := range []struct {
		name     string
		start    func(context.Context, TaskInfo) context.Context
		finished bool
	}{
		{"nil", func(context.Context, TaskInfo) context.Context { return nil }, true},
		{"panic", func(context.Context, TaskInfo) context.Context { panic("hook") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				finished := make(chan context.Context, 1)
				p := New(1, WithHooks(Hooks{Panic: func(any) {}}), WithHooks(Hooks{
					TaskStarted:  tc.start,
					TaskFinished: func(ctx context.Context, _ TaskInfo) { finished <- ctx },
				}))
				defer p.Stop()
				parent := context.WithValue(t.Context(), infoKey("request"), "r1")
				var seen context.Context
				require.NoError(t, p.Go(parent, func(ctx context.Context) error { seen = ctx; return nil }).Wait())
				assert.Equal(t, "r1", seen.Value(infoKey("request")), "the task's own context")
				if tc.finished {
					assert.Same(t, seen, <-finished, "TaskFinished gets it too")
				} else {
					assert.Empty(t, finished, "no TaskFinished for a run whose TaskStarted panicked")
				}
			})
		})
	}
}

// Under Retry each run is one start and one finish with its attempt
// number; a task given up while it waits for a retry is told to
// TaskDropped with the attempt that never ran.
func TestTaskInfoAttemptsUnderRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := new(hookLog)
		p := New(1, WithHooks(l.hooks()))
		always := TaskOption{Retry: func(int, error) (time.Duration, bool) { return time.Second, true }}
		runs := 0
		task := p.Go(t.Context(), func(context.Context) error {
			runs++
			if runs < 3 {
				return errFlaky
			}
			return nil
		}, always, TaskOption{Label: "sync"})
		require.NoError(t, task.Wait())

		stuck := p.Go(t.Context(), func(context.Context) error { return errFlaky }, always, TaskOption{Label: "stuck"})
		time.Sleep(time.Second / 2) // its first run failed; its second is a second away
		p.Stop()
		require.ErrorIs(t, stuck.Wait(), ErrStopped)

		var got []string
		for _, c := range l.callsNow() {
			got = append(got, c.hook+" "+c.info.Label+" "+itoa(int64(c.info.Attempt))+" "+errString(c.info.Err))
		}
		assert.Equal(t, []string{
			"started sync 1 <nil>", "finished sync 1 " + errFlaky.Error(),
			"started sync 2 <nil>", "finished sync 2 " + errFlaky.Error(),
			"started sync 3 <nil>", "finished sync 3 <nil>",
			"started stuck 1 <nil>", "finished stuck 1 " + errFlaky.Error(),
			"dropped stuck 2 workerpool: pool stopped (last run: flaky)",
		}, got)
	})
}

// TaskDropped learns the label, priority and weight of every task that
// never runs, however it is lost: refused by a full queue, dropped for a
// newer one, expired, abandoned by a stop, or queued or held by a group
// whose context ended.
func TestTaskDroppedKnowsWhichTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := new(hookLog)
		p := New(1, WithMaxWaiting(1, DropOldest), WithQueueTimeout(time.Minute), WithHooks(l.hooks()))
		gate := blockOneWorker(t, p)
		require.NoError(t, p.DoContext(context.Background(), func() {}, TaskOption{Label: "dropped", Priority: 1}))
		require.NoError(t, p.DoContext(context.Background(), func() {}, TaskOption{Label: "expired", Weight: 1})) // drops "dropped"
		time.Sleep(time.Minute)
		synctest.Wait()
		groupCtx, cancel := context.WithCancel(t.Context())
		g := p.Group(groupCtx)
		g.SetLimit(1)
		g.Go(noopFn, TaskOption{Label: "queued"})            // waits behind the gate
		g.Go(noopFn, TaskOption{Label: "held", Priority: 3}) // held by the limit
		cancel()
		require.ErrorIs(t, g.Wait(), context.Canceled)
		abandoned := p.Go(t.Context(), noopFn, TaskOption{Label: "abandoned", Priority: -1})
		stopped := make(chan struct{})
		go func() { p.Stop(); close(stopped) }()
		synctest.Wait()
		gate.open()
		<-stopped
		require.ErrorIs(t, abandoned.Wait(), ErrStopped)

		byLabel := map[string]TaskInfo{}
		for _, c := range l.callsNow() {
			if c.hook == "dropped" {
				byLabel[c.info.Label] = c.info
			}
		}
		assert.Equal(t, TaskInfo{Label: "dropped", Priority: 1, Weight: 1, Attempt: 1, Err: errDropped}, byLabel["dropped"])
		assert.Equal(t, TaskInfo{Label: "expired", Weight: 1, Attempt: 1, Err: errExpired}, byLabel["expired"])
		assert.Equal(t, TaskInfo{Label: "abandoned", Priority: -1, Weight: 1, Attempt: 1, Err: ErrStopped}, byLabel["abandoned"])
		assert.Equal(t, TaskInfo{Label: "queued", Weight: 1, Attempt: 1, Err: context.Canceled}, byLabel["queued"], "a queued group task")
		assert.Equal(t, TaskInfo{Label: "held", Priority: 3, Weight: 1, Attempt: 1, Err: context.Canceled}, byLabel["held"], "a group task the limit held")
	})
}

// A Do refused by a full queue tells TaskDropped, in the call, which task
// it was.
func TestRefusedDoTellsTaskDroppedItsLabel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := new(hookLog)
		p := New(1, WithMaxWaiting(0, Reject), WithHooks(l.hooks()))
		defer p.Stop()
		gate := blockOneWorker(t, p)
		defer gate.open()
		require.ErrorIs(t, p.DoContext(context.Background(), func() {}, TaskOption{Label: "thumb", Priority: 4}), ErrQueueFull)
		require.ErrorIs(t, tryDoContext(p, TaskOption{Label: "try"}), ErrQueueFull)
		calls := l.callsNow()
		var dropped []TaskInfo
		for _, c := range calls {
			if c.hook == "dropped" {
				dropped = append(dropped, c.info)
			}
		}
		assert.Equal(t, []TaskInfo{
			{Label: "thumb", Priority: 4, Weight: 1, Attempt: 1, Err: ErrQueueFull},
			{Label: "try", Weight: 1, Attempt: 1, Err: ErrQueueFull},
		}, dropped)
	})
}

// TaskDropped learns the key of a keyed task that the call refuses (a
// full queue, a weight above the pool's size) and of one a group skips or
// drops while it holds it, which never reach the dispatcher: the hooks
// build those TaskInfos from the options alone.
func TestTaskDroppedKnowsTheKeyOfATaskNeverQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := new(hookLog)
		p := New(1, WithMaxWaiting(0, Reject), WithHooks(l.hooks()))
		gate := blockOneWorker(t, p)
		require.ErrorIs(t, p.DoContext(context.Background(), func() {}, TaskOption{Key: "full", Label: "do"}), ErrQueueFull)
		require.ErrorIs(t, tryDoContext(p, TaskOption{Key: "full", Label: "try"}), ErrQueueFull)
		require.ErrorIs(t, p.Go(t.Context(), noopFn, TaskOption{Key: "heavy", Label: "go", Weight: 2}).Wait(), ErrTooHeavy)
		g := p.Group(t.Context())
		g.Go(noopFn, TaskOption{Key: "heavy", Label: "group", Weight: 2})
		require.ErrorIs(t, g.Wait(), ErrTooHeavy)
		g.Go(noopFn, TaskOption{Key: "skipped", Label: "skipped"}) // the group's context is done: skipped
		gate.open()
		p.Stop()

		keys := map[string]string{}
		for _, c := range l.callsNow() {
			if c.hook == "dropped" {
				keys[c.info.Label] = c.info.Key
			}
		}
		assert.Equal(t, map[string]string{"do": "full", "try": "full", "go": "heavy", "group": "heavy", "skipped": "skipped"}, keys)
	})
}

// A task's panic is logged with its label and attempt, besides the pool's
// name.
func TestTaskPanicLogCarriesLabelAndAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := new(recordingLog)
		p := New(1, WithHooks(Hooks{Logger: slog.New(logs), Panic: func(any) {}}))
		defer p.Stop()
		runs := 0
		task := p.Go(t.Context(), func(context.Context) error {
			runs++
			if runs == 2 {
				panic("boom")
			}
			return errFlaky
		}, TaskOption{Label: "resize", Retry: Backoff(time.Second, time.Second, 1)})
		require.Error(t, task.Wait())
		require.NoError(t, p.DoWait(func() { panic("plain") }))
		records := logs.withMessage("task panicked")
		require.Len(t, records, 2)
		assert.Equal(t, map[string]string{"label": "resize", "attempt": "2", "panic": "boom"}, records[0].attrs("label", "attempt", "panic"))
		assert.Equal(t, map[string]string{"attempt": "1", "panic": "plain"}, records[1].attrs("label", "attempt", "panic"),
			"a plain task has no label")
	})
}
