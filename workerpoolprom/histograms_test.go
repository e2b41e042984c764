package workerpoolprom_test

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/workerpoolprom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var histogramsNames = []string{
	"workerpool_task_wait_seconds",
	"workerpool_task_run_seconds",
	"workerpool_task_failures_total",
	"workerpool_task_reruns_total",
	"workerpool_unfinished_work_seconds",
	"workerpool_longest_running_processor_seconds",
}

// On the fake clock, with one worker: the first task starts at once and
// runs 3s, the second waits exactly 3s behind it and runs 2s.
func TestHistogramsObserveExactWaitAndRunTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := workerpoolprom.NewHistograms()
		p := workerpool.New(1, workerpool.WithHooks(h.Hooks("jobs")))
		defer p.Stop()
		p.Submit(func() { time.Sleep(3 * time.Second) })
		p.Submit(func() { time.Sleep(2 * time.Second) })
		p.StopWait()

		expected := `
# HELP workerpool_task_run_seconds Time each run of a task took, in seconds, until its func returned, panicked or called runtime.Goexit. Each retry is a run of its own.
# TYPE workerpool_task_run_seconds histogram
workerpool_task_run_seconds_bucket{pool="jobs",task="none",le="1e-08"} 0
workerpool_task_run_seconds_bucket{pool="jobs",task="none",le="1e-07"} 0
workerpool_task_run_seconds_bucket{pool="jobs",task="none",le="1e-06"} 0
workerpool_task_run_seconds_bucket{pool="jobs",task="none",le="1e-05"} 0
workerpool_task_run_seconds_bucket{pool="jobs",task="none",le="0.0001"} 0
workerpool_task_run_seconds_bucket{pool="jobs",task="none",le="0.001"} 0
workerpool_task_run_seconds_bucket{pool="jobs",task="none",le="0.01"} 0
workerpool_task_run_seconds_bucket{pool="jobs",task="none",le="0.1"} 0
workerpool_task_run_seconds_bucket{pool="jobs",task="none",le="1"} 0
workerpool_task_run_seconds_bucket{pool="jobs",task="none",le="10"} 2
workerpool_task_run_seconds_bucket{pool="jobs",task="none",le="100"} 2
workerpool_task_run_seconds_bucket{pool="jobs",task="none",le="1000"} 2
workerpool_task_run_seconds_bucket{pool="jobs",task="none",le="+Inf"} 2
workerpool_task_run_seconds_sum{pool="jobs",task="none"} 5
workerpool_task_run_seconds_count{pool="jobs",task="none"} 2
# HELP workerpool_task_wait_seconds Time each run of a task waited before it started, in seconds: from the task's acceptance, or from when it became due (a Delay, a retry), to the start of the run.
# TYPE workerpool_task_wait_seconds histogram
workerpool_task_wait_seconds_bucket{pool="jobs",task="none",le="1e-08"} 1
workerpool_task_wait_seconds_bucket{pool="jobs",task="none",le="1e-07"} 1
workerpool_task_wait_seconds_bucket{pool="jobs",task="none",le="1e-06"} 1
workerpool_task_wait_seconds_bucket{pool="jobs",task="none",le="1e-05"} 1
workerpool_task_wait_seconds_bucket{pool="jobs",task="none",le="0.0001"} 1
workerpool_task_wait_seconds_bucket{pool="jobs",task="none",le="0.001"} 1
workerpool_task_wait_seconds_bucket{pool="jobs",task="none",le="0.01"} 1
workerpool_task_wait_seconds_bucket{pool="jobs",task="none",le="0.1"} 1
workerpool_task_wait_seconds_bucket{pool="jobs",task="none",le="1"} 1
workerpool_task_wait_seconds_bucket{pool="jobs",task="none",le="10"} 2
workerpool_task_wait_seconds_bucket{pool="jobs",task="none",le="100"} 2
workerpool_task_wait_seconds_bucket{pool="jobs",task="none",le="1000"} 2
workerpool_task_wait_seconds_bucket{pool="jobs",task="none",le="+Inf"} 2
workerpool_task_wait_seconds_sum{pool="jobs",task="none"} 3
workerpool_task_wait_seconds_count{pool="jobs",task="none"} 2
# HELP workerpool_task_failures_total Runs of tasks that failed, by outcome: "panic" for a panic, "error" for an error returned or runtime.Goexit. Each failed run of a retried task counts.
# TYPE workerpool_task_failures_total counter
workerpool_task_failures_total{outcome="error",pool="jobs",task="none"} 0
workerpool_task_failures_total{outcome="panic",pool="jobs",task="none"} 0
# HELP workerpool_task_reruns_total Runs of tasks after their first, under Retry: workerpool_task_retries_total by task.
# TYPE workerpool_task_reruns_total counter
workerpool_task_reruns_total{pool="jobs",task="none"} 0
# HELP workerpool_unfinished_work_seconds Seconds of work in progress: the sum over the runs in flight of the time since each started. Grows without bound if a run is stuck.
# TYPE workerpool_unfinished_work_seconds gauge
workerpool_unfinished_work_seconds{pool="jobs"} 0
# HELP workerpool_longest_running_processor_seconds Seconds the longest run in flight has been running; 0 when none is.
# TYPE workerpool_longest_running_processor_seconds gauge
workerpool_longest_running_processor_seconds{pool="jobs"} 0
`
		assert.NoError(t, testutil.CollectAndCompare(h, strings.NewReader(expected)), "histograms")
	})
}

// Each run of a retried task is observed once in each histogram, each
// failed run counts as a failure and each run after the first as a rerun,
// and the time a delayed task or a retry spends before it is due is not a
// wait.
func TestHistogramsObserveEveryRunOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := workerpoolprom.NewHistograms(workerpoolprom.WithWaitBuckets([]float64{1}), workerpoolprom.WithRunBuckets([]float64{1}))
		p := workerpool.New(1, workerpool.WithHooks(h.Hooks("jobs")))
		defer p.Stop()
		retry := workerpool.TaskOption{Retry: func(int, error) (time.Duration, bool) { return time.Minute, true }}
		runs := 0
		task := p.Go(t.Context(), func(context.Context) error {
			time.Sleep(time.Second)
			if runs++; runs < 3 {
				return errors.New("fails")
			}
			return nil
		}, retry, workerpool.TaskOption{Delay: time.Hour, Label: "flaky"})
		require.NoError(t, task.Wait(), "task")
		p.StopWait()

		expected := `
# HELP workerpool_task_run_seconds Time each run of a task took, in seconds, until its func returned, panicked or called runtime.Goexit. Each retry is a run of its own.
# TYPE workerpool_task_run_seconds histogram
workerpool_task_run_seconds_bucket{pool="jobs",task="flaky",le="1"} 3
workerpool_task_run_seconds_bucket{pool="jobs",task="flaky",le="+Inf"} 3
workerpool_task_run_seconds_sum{pool="jobs",task="flaky"} 3
workerpool_task_run_seconds_count{pool="jobs",task="flaky"} 3
# HELP workerpool_task_wait_seconds Time each run of a task waited before it started, in seconds: from the task's acceptance, or from when it became due (a Delay, a retry), to the start of the run.
# TYPE workerpool_task_wait_seconds histogram
workerpool_task_wait_seconds_bucket{pool="jobs",task="flaky",le="1"} 3
workerpool_task_wait_seconds_bucket{pool="jobs",task="flaky",le="+Inf"} 3
workerpool_task_wait_seconds_sum{pool="jobs",task="flaky"} 0
workerpool_task_wait_seconds_count{pool="jobs",task="flaky"} 3
# HELP workerpool_task_failures_total Runs of tasks that failed, by outcome: "panic" for a panic, "error" for an error returned or runtime.Goexit. Each failed run of a retried task counts.
# TYPE workerpool_task_failures_total counter
workerpool_task_failures_total{outcome="error",pool="jobs",task="flaky"} 2
workerpool_task_failures_total{outcome="panic",pool="jobs",task="flaky"} 0
# HELP workerpool_task_reruns_total Runs of tasks after their first, under Retry: workerpool_task_retries_total by task.
# TYPE workerpool_task_reruns_total counter
workerpool_task_reruns_total{pool="jobs",task="flaky"} 2
`
		assert.NoError(t, testutil.CollectAndCompare(h, strings.NewReader(expected), histogramsNames[:4]...), "histograms")
		assert.Equal(t, uint64(2), p.Status().Retried, "Status.Retried")
	})
}

// The wait of a run is observed when it starts, its run time when it ends.
func TestHistogramsObserveWaitAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := workerpoolprom.NewHistograms()
		p := workerpool.New(1, workerpool.WithHooks(h.Hooks("jobs")))
		defer p.Stop()
		release := make(chan struct{})
		p.Submit(func() { <-release })
		synctest.Wait()
		const none = `{pool="jobs",task="none"}`
		assert.Equal(t, uint64(1), histogramCount(t, h, "workerpool_task_wait_seconds", none), "waits observed while the task runs")
		assert.Equal(t, uint64(0), histogramCount(t, h, "workerpool_task_run_seconds", none), "runs observed while the task runs")
		close(release)
		p.StopWait()
		assert.Equal(t, uint64(1), histogramCount(t, h, "workerpool_task_run_seconds", none), "runs observed after StopWait")
	})
}

// Every outcome of a run, through every kind of task: a return, an error,
// a panic (of a Task, and of a plain func under a Panic hook) and
// runtime.Goexit. Only the failures count, by outcome; every run is
// observed, and none stays in flight.
func TestHistogramsCountFailuresByOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := workerpoolprom.NewHistograms()
		p := workerpool.New(2,
			workerpool.WithHooks(h.Hooks("jobs")),
			workerpool.WithHooks(workerpool.Hooks{Panic: func(any) {}}),
		)
		defer p.Stop()
		ok := p.Go(t.Context(), func(context.Context) error { return nil }, workerpool.TaskOption{Label: "ok"})
		failed := p.Go(t.Context(), func(context.Context) error { return errors.New("fails") }, workerpool.TaskOption{Label: "error"})
		panicked := p.Go(t.Context(), func(context.Context) error { panic("boom") }, workerpool.TaskOption{Label: "panic"})
		exited := p.Go(t.Context(), func(context.Context) error {
			runtime.Goexit()
			return nil
		}, workerpool.TaskOption{Label: "goexit"})
		require.NoError(t, p.DoContext(context.Background(), func() { panic("plain") }, workerpool.TaskOption{Label: "plain-panic"}), "Do")
		require.NoError(t, p.DoContext(context.Background(), func() { runtime.Goexit() }, workerpool.TaskOption{Label: "plain-goexit"}), "Do")
		p.StopWait()
		assert.NoError(t, ok.Wait(), "ok")
		assert.EqualError(t, failed.Wait(), "fails", "failed")
		var pe *workerpool.PanicError
		assert.ErrorAs(t, panicked.Wait(), &pe, "panicked")
		assert.ErrorIs(t, exited.Wait(), workerpool.ErrGoexit, "exited")

		assert.Equal(t, map[string]float64{
			`{outcome="error",pool="jobs",task="ok"}`:           0,
			`{outcome="panic",pool="jobs",task="ok"}`:           0,
			`{outcome="error",pool="jobs",task="error"}`:        1,
			`{outcome="panic",pool="jobs",task="error"}`:        0,
			`{outcome="error",pool="jobs",task="panic"}`:        0,
			`{outcome="panic",pool="jobs",task="panic"}`:        1,
			`{outcome="error",pool="jobs",task="goexit"}`:       1,
			`{outcome="panic",pool="jobs",task="goexit"}`:       0,
			`{outcome="error",pool="jobs",task="plain-panic"}`:  0,
			`{outcome="panic",pool="jobs",task="plain-panic"}`:  1,
			`{outcome="error",pool="jobs",task="plain-goexit"}`: 1,
			`{outcome="panic",pool="jobs",task="plain-goexit"}`: 0,
		}, values(t, h, "workerpool_task_failures_total"), "failures")
		runs := values(t, h, "workerpool_task_run_seconds")
		assert.Len(t, runs, 6, "run series")
		for labels, n := range runs {
			assert.Equal(t, 1.0, n, "runs of %s", labels)
		}
		assert.Equal(t, 0, workerpoolprom.InFlight(h, "jobs"), "runs in flight after StopWait")
	})
}

// Each call that takes a Label gives its runs that task label; a plain
// Submit and a task without Label count as "none".
func TestHistogramsLabelEveryKindOfTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := workerpoolprom.NewHistograms()
		p := workerpool.New(2, workerpool.WithHooks(h.Hooks("jobs")))
		defer p.Stop()
		resize, mail := workerpool.TaskOption{Label: "resize"}, workerpool.TaskOption{Label: "mail"}
		require.NoError(t, p.DoContext(context.Background(), func() {}, resize), "Do")
		require.NoError(t, p.DoContext(t.Context(), func() {}, resize), "DoContext")
		done, cancel := context.WithCancel(t.Context())
		cancel()
		require.NoError(t, p.DoContext(done, func() {}, resize), "DoContext with a ctx done: a try")
		require.NoError(t, p.Go(t.Context(), noop, mail).Wait(), "Go")
		_, err := workerpool.GoResult(t.Context(), p, func(context.Context) (int, error) { return 1, nil }, mail).Wait()
		require.NoError(t, err, "GoResult")
		g := p.Group(t.Context())
		g.Go(noop, mail)
		g.Go(noop, workerpool.TaskOption{Label: "batch"})
		require.NoError(t, g.Wait(), "Group")
		p.Submit(func() {})
		require.NoError(t, p.Go(t.Context(), noop).Wait(), "Go without a label")
		p.StopWait()

		assert.Equal(t, map[string]float64{
			`{pool="jobs",task="resize"}`: 3,
			`{pool="jobs",task="mail"}`:   3,
			`{pool="jobs",task="batch"}`:  1,
			`{pool="jobs",task="none"}`:   2,
		}, values(t, h, "workerpool_task_run_seconds"), "runs by task")
		assert.Equal(t, map[string]float64{
			`{pool="jobs",task="resize"}`: 3,
			`{pool="jobs",task="mail"}`:   3,
			`{pool="jobs",task="batch"}`:  1,
			`{pool="jobs",task="none"}`:   2,
		}, values(t, h, "workerpool_task_wait_seconds"), "waits by task")
	})
}

// Past the cap, labels count as "other"; tasks without a label stay
// "none" and do not count against the cap, and a label admitted stays
// admitted.
func TestHistogramsCapLabels(t *testing.T) {
	for _, c := range []struct {
		name     string
		max      int
		expected map[string]float64
	}{
		{"max=2", 2, map[string]float64{
			`{pool="jobs",task="a"}`:     3,
			`{pool="jobs",task="b"}`:     1,
			`{pool="jobs",task="other"}`: 3,
			`{pool="jobs",task="none"}`:  2,
		}},
		{"max=0", 0, map[string]float64{
			`{pool="jobs",task="other"}`: 7,
			`{pool="jobs",task="none"}`:  2,
		}},
		{"max=-1", -1, map[string]float64{
			`{pool="jobs",task="other"}`: 7,
			`{pool="jobs",task="none"}`:  2,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := workerpoolprom.NewHistograms(workerpoolprom.WithMaxLabels(c.max))
				p := workerpool.New(1, workerpool.WithHooks(h.Hooks("jobs")))
				defer p.Stop()
				for _, label := range []string{"a", "", "b", "c", "a", "d", "", "c", "a"} {
					require.NoError(t, p.Go(context.Background(), noop, workerpool.TaskOption{Label: label}).Wait(), "Go %q", label)
				}
				p.StopWait()
				assert.Equal(t, c.expected, values(t, h, "workerpool_task_run_seconds"), "runs by task")
				assert.Len(t, values(t, h, "workerpool_task_failures_total"), 2*len(c.expected), "failure series")
			})
		})
	}
}

// The default cap is DefaultMaxLabels: the 101st label is "other".
func TestHistogramsDefaultCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := workerpoolprom.NewHistograms()
		hooks := h.Hooks("jobs")
		for i := range workerpoolprom.DefaultMaxLabels + 1 {
			info := workerpool.TaskInfo{Label: "kind-" + strconv.Itoa(i), Attempt: 1}
			hooks.TaskFinished(hooks.TaskStarted(t.Context(), info), info)
		}
		runs := values(t, h, "workerpool_task_run_seconds")
		assert.Len(t, runs, workerpoolprom.DefaultMaxLabels+1, "run series")
		assert.Equal(t, 1.0, runs[`{pool="jobs",task="other"}`], "runs counted as other")
		assert.Equal(t, 1.0, runs[`{pool="jobs",task="kind-0"}`], "runs of the first label")
	})
}

// One Histograms serves several pools: each has its series, and the cap
// counts the labels of all of them.
func TestHistogramsServeSeveralPools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := workerpoolprom.NewHistograms(workerpoolprom.WithMaxLabels(1))
		x := workerpool.New(1, workerpool.WithHooks(h.Hooks("x")))
		defer x.Stop()
		y := workerpool.New(3, workerpool.WithHooks(h.Hooks("y")))
		defer y.Stop()
		release := make(chan struct{})
		require.NoError(t, x.Go(context.Background(), noop, workerpool.TaskOption{Label: "a"}).Wait(), "x: a")
		require.NoError(t, x.Go(context.Background(), noop, workerpool.TaskOption{Label: "a"}).Wait(), "x: a")
		require.NoError(t, y.Go(context.Background(), noop, workerpool.TaskOption{Label: "a"}).Wait(), "y: a")
		require.NoError(t, y.Go(context.Background(), noop, workerpool.TaskOption{Label: "b"}).Wait(), "y: b")
		y.Submit(func() { <-release })
		time.Sleep(time.Second)
		synctest.Wait()

		assert.Equal(t, map[string]float64{
			`{pool="x",task="a"}`:     2,
			`{pool="y",task="a"}`:     1,
			`{pool="y",task="other"}`: 1,
			`{pool="y",task="none"}`:  1,
		}, values(t, h, "workerpool_task_wait_seconds"), "waits by pool and task")
		assert.Equal(t, map[string]float64{`{pool="x"}`: 0, `{pool="y"}`: 1},
			values(t, h, "workerpool_unfinished_work_seconds"), "unfinished work by pool")
		assert.Equal(t, map[string]float64{`{pool="x"}`: 0, `{pool="y"}`: 1},
			values(t, h, "workerpool_longest_running_processor_seconds"), "longest run by pool")
		close(release)
		x.StopWait()
		y.StopWait()
		assert.Equal(t, 0, workerpoolprom.InFlight(h, "x"), "runs of x in flight")
		assert.Equal(t, 0, workerpoolprom.InFlight(h, "y"), "runs of y in flight")
	})
}

func TestHistogramsLintClean(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := workerpoolprom.NewHistograms()
		p := workerpool.New(1, workerpool.WithHooks(h.Hooks("lint")))
		p.Submit(func() {})
		require.NoError(t, p.DoContext(context.Background(), func() {}, workerpool.TaskOption{Label: "labelled"}), "Do")
		p.StopWait()
		problems, err := testutil.CollectAndLint(h)
		require.NoError(t, err, "CollectAndLint")
		assert.Empty(t, problems, "lint problems")
	})
}

// One Histograms per registry: a second one collides, whatever its pools.
func TestHistogramsTwoInOneRegistryCollide(t *testing.T) {
	reg := prometheus.NewRegistry()
	first := workerpoolprom.NewHistograms()
	require.NoError(t, reg.Register(first), "register the first")
	err := reg.Register(workerpoolprom.NewHistograms())
	var dup prometheus.AlreadyRegisteredError
	require.ErrorAs(t, err, &dup, "register the second")
	assert.Same(t, first, dup.ExistingCollector, "existing collector")
}

// Pool names and labels that are not valid UTF-8 are exported with
// U+FFFD in their place, and the scrape stays valid.
func TestHistogramsReplaceInvalidUTF8(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := workerpoolprom.NewHistograms()
		p := workerpool.New(1, workerpool.WithHooks(h.Hooks("bad\xff")))
		defer p.Stop()
		require.NoError(t, p.DoContext(context.Background(), func() {}, workerpool.TaskOption{Label: "kind\xfe"}), "Do")
		p.StopWait()
		assert.Equal(t, map[string]float64{"{pool=\"bad\ufffd\",task=\"kind\ufffd\"}": 1},
			values(t, h, "workerpool_task_run_seconds"), "runs")
		assert.Equal(t, map[string]float64{"{pool=\"bad\ufffd\"}": 0},
			values(t, h, "workerpool_unfinished_work_seconds"), "unfinished work")
	})
}

func TestNewHistogramsPanicsOnUnsortedBuckets(t *testing.T) {
	assert.PanicsWithValue(t, "workerpoolprom: buckets not in strictly increasing order: 1 then 0.5", func() {
		workerpoolprom.NewHistograms(workerpoolprom.WithRunBuckets([]float64{1, 0.5}))
	}, "decreasing run buckets")
	assert.PanicsWithValue(t, "workerpoolprom: buckets not in strictly increasing order: 1 then 1", func() {
		workerpoolprom.NewHistograms(workerpoolprom.WithWaitBuckets([]float64{1, 1}))
	}, "repeated wait buckets")
}

// WithWaitBuckets copies its argument, and an empty list restores the
// default.
func TestHistogramBucketOptions(t *testing.T) {
	buckets := []float64{0.5, 2}
	h := workerpoolprom.NewHistograms(workerpoolprom.WithWaitBuckets(buckets), workerpoolprom.WithRunBuckets(nil))
	buckets[0] = 100
	hooks := h.Hooks("jobs")
	info := workerpool.TaskInfo{Attempt: 1}
	hooks.TaskFinished(hooks.TaskStarted(context.Background(), info), info)
	families, err := registryOf(t, h).Gather()
	require.NoError(t, err, "Gather")
	bounds := map[string][]float64{}
	for _, f := range families {
		for _, b := range f.GetMetric()[0].GetHistogram().GetBucket() {
			bounds[f.GetName()] = append(bounds[f.GetName()], b.GetUpperBound())
		}
	}
	assert.Equal(t, []float64{0.5, 2}, bounds["workerpool_task_wait_seconds"], "wait buckets")
	assert.Equal(t, []float64{1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10, 100, 1000},
		bounds["workerpool_task_run_seconds"], "default run buckets")
}
