package workerpoolprom_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/workerpoolprom"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stuck returns the stuck-work gauges of pool: the unfinished work and
// the longest run, in seconds.
func stuck(t *testing.T, h *workerpoolprom.Histograms, pool string) (unfinished, longest float64) {
	t.Helper()
	labels := `{pool="` + pool + `"}`
	u, ok := values(t, h, "workerpool_unfinished_work_seconds")[labels]
	require.True(t, ok, "unfinished work of %s collected", pool)
	l, ok := values(t, h, "workerpool_longest_running_processor_seconds")[labels]
	require.True(t, ok, "longest run of %s collected", pool)
	return u, l
}

// On the fake clock: a run from t=0 and one from t=2s, read at t=5s, at
// t=5s after the first ended, at t=6s, and after both ended.
func TestStuckWorkGaugesExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := workerpoolprom.NewHistograms()
		p := workerpool.New(3, workerpool.WithHooks(h.Hooks("jobs")))
		defer p.Stop()
		first, second := make(chan struct{}), make(chan struct{})
		p.Submit(func() { <-first })
		time.Sleep(2 * time.Second)
		p.Submit(func() { <-second })
		time.Sleep(3 * time.Second)
		synctest.Wait()

		unfinished, longest := stuck(t, h, "jobs")
		assert.Equal(t, 8.0, unfinished, "unfinished work at 5s: 5s + 3s")
		assert.Equal(t, 5.0, longest, "longest run at 5s")

		close(first)
		synctest.Wait()
		unfinished, longest = stuck(t, h, "jobs")
		assert.Equal(t, 3.0, unfinished, "unfinished work at 5s, the first run ended")
		assert.Equal(t, 3.0, longest, "longest run at 5s, the first run ended")

		time.Sleep(time.Second)
		unfinished, longest = stuck(t, h, "jobs")
		assert.Equal(t, 4.0, unfinished, "unfinished work at 6s")
		assert.Equal(t, 4.0, longest, "longest run at 6s")

		close(second)
		synctest.Wait()
		unfinished, longest = stuck(t, h, "jobs")
		assert.Equal(t, 0.0, unfinished, "unfinished work with no run in flight")
		assert.Equal(t, 0.0, longest, "longest run with no run in flight")
		assert.Equal(t, 0, workerpoolprom.InFlight(h, "jobs"), "runs in flight")
	})
}

// Many goroutines call the hooks at once, as the workers of many pools
// do: ten runs start at each of t=0s, 1s, ..., 9s, the even ones end at
// t=10s, the odd ones at t=20s. The gauges are exact at each step.
func TestStuckWorkExactUnderConcurrentHooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const runs = 100
		h := workerpoolprom.NewHistograms()
		hooks := h.Hooks("direct")
		evens, odds := make(chan struct{}), make(chan struct{})
		var wg sync.WaitGroup
		for i := range runs {
			wg.Go(func() {
				info := workerpool.TaskInfo{Label: "kind", Attempt: 1}
				time.Sleep(time.Duration(i/10) * time.Second)
				ctx := hooks.TaskStarted(context.Background(), info)
				if i%2 == 0 {
					<-evens
				} else {
					<-odds
				}
				hooks.TaskFinished(ctx, info)
			})
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		expected := func(ended func(i int) bool, now int) (unfinished, longest float64) {
			for i := range runs {
				if !ended(i) {
					d := float64(now - i/10)
					unfinished += d
					longest = max(longest, d)
				}
			}
			return unfinished, longest
		}
		u, l := expected(func(int) bool { return false }, 10)
		require.Equal(t, 550.0, u, "the test's own sum at 10s") // 10 × (10 + 9 + ... + 1)
		unfinished, longest := stuck(t, h, "direct")
		assert.Equal(t, u, unfinished, "unfinished work at 10s")
		assert.Equal(t, l, longest, "longest run at 10s")

		close(evens)
		synctest.Wait()
		time.Sleep(10 * time.Second)
		u, l = expected(func(i int) bool { return i%2 == 0 }, 20)
		unfinished, longest = stuck(t, h, "direct")
		assert.Equal(t, u, unfinished, "unfinished work at 20s, the even runs ended")
		assert.Equal(t, l, longest, "longest run at 20s, the even runs ended")
		assert.Equal(t, runs/2, workerpoolprom.InFlight(h, "direct"), "runs in flight at 20s")

		close(odds)
		wg.Wait()
		unfinished, longest = stuck(t, h, "direct")
		assert.Equal(t, 0.0, unfinished, "unfinished work after all ended")
		assert.Equal(t, 0.0, longest, "longest run after all ended")
		assert.Equal(t, 0, workerpoolprom.InFlight(h, "direct"), "runs in flight after all ended")
		assert.Equal(t, map[string]float64{`{pool="direct",task="kind"}`: runs},
			values(t, h, "workerpool_task_run_seconds"), "runs observed")
	})
}

// A pool that stops leaves no run in flight, however its runs ended: a
// return, an error, a panic, runtime.Goexit, or a Shutdown that gave up
// and canceled a running task's ctx.
func TestStuckWorkNothingLeftAfterStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := workerpoolprom.NewHistograms()
		p := workerpool.New(4,
			workerpool.WithHooks(h.Hooks("jobs")),
			workerpool.WithHooks(workerpool.Hooks{Panic: func(any) {}}),
		)
		defer p.Stop()
		p.Go(t.Context(), func(context.Context) error { return errors.New("fails") })
		p.Submit(func() { panic("boom") })
		p.Submit(func() { time.Sleep(time.Second) })
		p.Go(t.Context(), func(ctx context.Context) error {
			<-ctx.Done() // ends only when Shutdown gives up
			return ctx.Err()
		})
		synctest.Wait()
		assert.Equal(t, 2, workerpoolprom.InFlight(h, "jobs"), "runs in flight before the stop")
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		assert.Error(t, p.Shutdown(ctx), "Shutdown with a task that waits for its ctx")
		assert.Equal(t, 0, workerpoolprom.InFlight(h, "jobs"), "runs in flight after Shutdown")
		unfinished, longest := stuck(t, h, "jobs")
		assert.Equal(t, 0.0, unfinished, "unfinished work after Shutdown")
		assert.Equal(t, 0.0, longest, "longest run after Shutdown")
	})
}

// A task that submits a task to its own pool with its ctx and waits for
// it: the inner run's end removes the inner run only, though its ctx
// carries the outer one too.
func TestStuckWorkNestedRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := workerpoolprom.NewHistograms()
		p := workerpool.New(2, workerpool.WithHooks(h.Hooks("jobs")))
		defer p.Stop()
		release := make(chan struct{})
		outer := p.Go(t.Context(), func(ctx context.Context) error {
			inner := p.Go(ctx, func(context.Context) error {
				time.Sleep(2 * time.Second)
				return nil
			}, workerpool.TaskOption{Label: "inner"})
			if err := inner.Wait(); err != nil {
				return err
			}
			<-release
			return nil
		}, workerpool.TaskOption{Label: "outer"})
		time.Sleep(time.Second)
		synctest.Wait()
		unfinished, longest := stuck(t, h, "jobs")
		assert.Equal(t, 2.0, unfinished, "unfinished work at 1s: both runs")
		assert.Equal(t, 1.0, longest, "longest run at 1s")

		time.Sleep(2 * time.Second)
		synctest.Wait()
		unfinished, longest = stuck(t, h, "jobs")
		assert.Equal(t, 3.0, unfinished, "unfinished work at 3s: the outer run only")
		assert.Equal(t, 3.0, longest, "longest run at 3s")
		assert.Equal(t, 1, workerpoolprom.InFlight(h, "jobs"), "runs in flight at 3s")
		close(release)
		require.NoError(t, outer.Wait(), "outer task")
		p.StopWait()
		assert.Equal(t, 0, workerpoolprom.InFlight(h, "jobs"), "runs in flight after StopWait")
	})
}

// Hooks of one's own that wrap the histograms' ctx in theirs: TaskFinished
// finds the run inside it. A TaskFinished given a ctx that carries no run
// still observes the run time, and removes nothing.
func TestStuckWorkThroughHooksOfYourOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type key struct{}
		h := workerpoolprom.NewHistograms()
		inner := h.Hooks("jobs")
		hooks := workerpool.Hooks{
			TaskStarted: func(ctx context.Context, info workerpool.TaskInfo) context.Context {
				return context.WithValue(inner.TaskStarted(ctx, info), key{}, "mine")
			},
			TaskFinished: inner.TaskFinished,
		}
		p := workerpool.New(1, workerpool.WithHooks(hooks))
		defer p.Stop()
		seen := make(chan any, 1)
		release := make(chan struct{})
		p.Go(t.Context(), func(ctx context.Context) error {
			seen <- ctx.Value(key{})
			<-release
			return nil
		})
		synctest.Wait()
		assert.Equal(t, "mine", <-seen, "the task's ctx carries the outer hook's value")
		assert.Equal(t, 1, workerpoolprom.InFlight(h, "jobs"), "runs in flight")
		close(release)
		p.StopWait()
		assert.Equal(t, 0, workerpoolprom.InFlight(h, "jobs"), "runs in flight after StopWait")

		info := workerpool.TaskInfo{Attempt: 1, Ran: time.Second}
		inner.TaskFinished(context.Background(), info)
		assert.Equal(t, 0, workerpoolprom.InFlight(h, "jobs"), "runs in flight after a foreign ctx")
		assert.Equal(t, map[string]float64{`{pool="jobs",task="none"}`: 2},
			values(t, h, "workerpool_task_run_seconds"), "runs observed")
	})
}

// Two pools on one Histograms, each with several workers and submitters,
// on the real clock under -race: every run is observed once and none is
// left in flight once both pools have stopped.
func TestStuckWorkStress(t *testing.T) {
	const tasks = 2000
	h := workerpoolprom.NewHistograms()
	pools := []*workerpool.WorkerPool{
		workerpool.New(8, workerpool.WithHooks(h.Hooks("a")), workerpool.WithHooks(workerpool.Hooks{Panic: func(any) {}})),
		workerpool.New(3, workerpool.WithHooks(h.Hooks("b")), workerpool.WithHooks(workerpool.Hooks{Panic: func(any) {}})),
	}
	var submitters sync.WaitGroup
	for _, p := range pools {
		defer p.Stop()
		for s := range 4 {
			submitters.Go(func() {
				for i := range tasks / 4 {
					label := workerpool.TaskOption{Label: []string{"x", "y", ""}[(s+i)%3]}
					switch rand.IntN(4) {
					case 0:
						p.Go(context.Background(), func(context.Context) error { return errors.New("fails") }, label)
					case 1:
						assert.NoError(t, p.DoContext(context.Background(), func() { panic("boom") }, label), "Do")
					default:
						assert.NoError(t, p.DoContext(context.Background(), func() {}, label), "Do")
					}
				}
			})
		}
	}
	submitters.Wait()
	for _, p := range pools {
		p.StopWait()
	}
	for _, name := range []string{"a", "b"} {
		assert.Equal(t, 0, workerpoolprom.InFlight(h, name), "runs of %s in flight", name)
		runs := values(t, h, "workerpool_task_run_seconds")
		total := 0.0
		for _, task := range []string{"x", "y", "none"} {
			total += runs[`{pool="`+name+`",task="`+task+`"}`]
		}
		assert.Equal(t, float64(tasks), total, "runs of %s observed", name)
		unfinished, longest := stuck(t, h, name)
		assert.Equal(t, 0.0, unfinished, "unfinished work of %s", name)
		assert.Equal(t, 0.0, longest, "longest run of %s", name)
	}
}

// Hooks of one's own that read the ctx after the histograms' TaskFinished
// returned, as the package documentation's example logs with it, while
// other workers start runs: under -race, no run is shared unsafely, and
// the values the ctx carries stay its own.
func TestStuckWorkCtxReadAfterFinish(t *testing.T) {
	type key struct{}
	h := workerpoolprom.NewHistograms()
	inner := h.Hooks("jobs")
	var mismatches sync.Map
	hooks := workerpool.Hooks{
		TaskStarted: inner.TaskStarted,
		TaskFinished: func(ctx context.Context, info workerpool.TaskInfo) {
			inner.TaskFinished(ctx, info)
			if ctx.Value(key{}) != nil || ctx.Err() != nil {
				mismatches.Store(info.Label, true)
			}
		},
	}
	p := workerpool.New(4, workerpool.WithHooks(hooks))
	defer p.Stop()
	for i := range 2000 {
		if i%2 == 0 {
			assert.NoError(t, p.DoContext(context.Background(), func() {}, workerpool.TaskOption{Label: "plain"}), "Do")
		} else {
			p.Go(context.WithValue(context.Background(), key{}, nil), func(context.Context) error { return nil }, workerpool.TaskOption{Label: "go"})
		}
	}
	p.StopWait()
	mismatches.Range(func(label, _ any) bool {
		t.Errorf("the ctx of a run of %s read wrong after TaskFinished", label)
		return true
	})
	assert.Equal(t, 0, workerpoolprom.InFlight(h, "jobs"), "runs in flight after StopWait")
}
