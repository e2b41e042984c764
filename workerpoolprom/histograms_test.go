package workerpoolprom_test

import (
	"context"
	"errors"
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

// On the fake clock, with one worker: the first task starts at once and
// runs 3s, the second waits exactly 3s behind it and runs 2s.
func TestHistogramsObserveExactWaitAndRunTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := workerpoolprom.NewHistograms("jobs")
		p := workerpool.New(1, workerpool.WithName("jobs"), workerpool.WithHooks(h.Hooks()))
		defer p.Stop()
		p.Submit(func() { time.Sleep(3 * time.Second) })
		p.Submit(func() { time.Sleep(2 * time.Second) })
		p.StopWait()

		expected := `
# HELP workerpool_task_run_seconds Time each run of a task took, in seconds, until its func returned, panicked or called runtime.Goexit. Each retry is a run of its own.
# TYPE workerpool_task_run_seconds histogram
workerpool_task_run_seconds_bucket{pool="jobs",le="1e-08"} 0
workerpool_task_run_seconds_bucket{pool="jobs",le="1e-07"} 0
workerpool_task_run_seconds_bucket{pool="jobs",le="1e-06"} 0
workerpool_task_run_seconds_bucket{pool="jobs",le="1e-05"} 0
workerpool_task_run_seconds_bucket{pool="jobs",le="0.0001"} 0
workerpool_task_run_seconds_bucket{pool="jobs",le="0.001"} 0
workerpool_task_run_seconds_bucket{pool="jobs",le="0.01"} 0
workerpool_task_run_seconds_bucket{pool="jobs",le="0.1"} 0
workerpool_task_run_seconds_bucket{pool="jobs",le="1"} 0
workerpool_task_run_seconds_bucket{pool="jobs",le="10"} 2
workerpool_task_run_seconds_bucket{pool="jobs",le="100"} 2
workerpool_task_run_seconds_bucket{pool="jobs",le="1000"} 2
workerpool_task_run_seconds_bucket{pool="jobs",le="+Inf"} 2
workerpool_task_run_seconds_sum{pool="jobs"} 5
workerpool_task_run_seconds_count{pool="jobs"} 2
# HELP workerpool_task_wait_seconds Time each run of a task waited before it started, in seconds: from the task's acceptance, or from when it became due (Delay, At, a retry), to the start of the run.
# TYPE workerpool_task_wait_seconds histogram
workerpool_task_wait_seconds_bucket{pool="jobs",le="1e-08"} 1
workerpool_task_wait_seconds_bucket{pool="jobs",le="1e-07"} 1
workerpool_task_wait_seconds_bucket{pool="jobs",le="1e-06"} 1
workerpool_task_wait_seconds_bucket{pool="jobs",le="1e-05"} 1
workerpool_task_wait_seconds_bucket{pool="jobs",le="0.0001"} 1
workerpool_task_wait_seconds_bucket{pool="jobs",le="0.001"} 1
workerpool_task_wait_seconds_bucket{pool="jobs",le="0.01"} 1
workerpool_task_wait_seconds_bucket{pool="jobs",le="0.1"} 1
workerpool_task_wait_seconds_bucket{pool="jobs",le="1"} 1
workerpool_task_wait_seconds_bucket{pool="jobs",le="10"} 2
workerpool_task_wait_seconds_bucket{pool="jobs",le="100"} 2
workerpool_task_wait_seconds_bucket{pool="jobs",le="1000"} 2
workerpool_task_wait_seconds_bucket{pool="jobs",le="+Inf"} 2
workerpool_task_wait_seconds_sum{pool="jobs"} 3
workerpool_task_wait_seconds_count{pool="jobs"} 2
`
		assert.NoError(t, testutil.CollectAndCompare(h, strings.NewReader(expected)), "histograms")
	})
}

// Each run of a retried task is observed once in each histogram, and the
// time a delayed task or a retry spends before it is due is not a wait.
func TestHistogramsObserveEveryRunOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := workerpoolprom.NewHistograms("jobs", workerpoolprom.WithWaitBuckets([]float64{1}), workerpoolprom.WithRunBuckets([]float64{1}))
		p := workerpool.New(1, workerpool.WithName("jobs"), workerpool.WithHooks(h.Hooks()))
		defer p.Stop()
		retry := workerpool.Retry(func(int, error) (time.Duration, bool) { return time.Minute, true })
		runs := 0
		task := p.Go(t.Context(), func(context.Context) error {
			time.Sleep(time.Second)
			if runs++; runs < 3 {
				return errors.New("fails")
			}
			return nil
		}, retry, workerpool.Delay(time.Hour))
		require.NoError(t, task.Wait(), "task")
		p.StopWait()

		expected := `
# HELP workerpool_task_run_seconds Time each run of a task took, in seconds, until its func returned, panicked or called runtime.Goexit. Each retry is a run of its own.
# TYPE workerpool_task_run_seconds histogram
workerpool_task_run_seconds_bucket{pool="jobs",le="1"} 3
workerpool_task_run_seconds_bucket{pool="jobs",le="+Inf"} 3
workerpool_task_run_seconds_sum{pool="jobs"} 3
workerpool_task_run_seconds_count{pool="jobs"} 3
# HELP workerpool_task_wait_seconds Time each run of a task waited before it started, in seconds: from the task's acceptance, or from when it became due (Delay, At, a retry), to the start of the run.
# TYPE workerpool_task_wait_seconds histogram
workerpool_task_wait_seconds_bucket{pool="jobs",le="1"} 3
workerpool_task_wait_seconds_bucket{pool="jobs",le="+Inf"} 3
workerpool_task_wait_seconds_sum{pool="jobs"} 0
workerpool_task_wait_seconds_count{pool="jobs"} 3
`
		assert.NoError(t, testutil.CollectAndCompare(h, strings.NewReader(expected)), "histograms")
		assert.Equal(t, uint64(2), p.Status().Retried, "Status.Retried")
	})
}

// The wait of a run is observed when it starts, its run time when it ends.
func TestHistogramsObserveWaitAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := workerpoolprom.NewHistograms("jobs")
		p := workerpool.New(1, workerpool.WithName("jobs"), workerpool.WithHooks(h.Hooks()))
		defer p.Stop()
		release := make(chan struct{})
		p.Submit(func() { <-release })
		synctest.Wait()
		assert.Equal(t, uint64(1), histogramCount(t, h, "workerpool_task_wait_seconds"), "waits observed while the task runs")
		assert.Equal(t, uint64(0), histogramCount(t, h, "workerpool_task_run_seconds"), "runs observed while the task runs")
		close(release)
		p.StopWait()
		assert.Equal(t, uint64(1), histogramCount(t, h, "workerpool_task_run_seconds"), "runs observed after StopWait")
	})
}

func TestHistogramsLintClean(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := workerpoolprom.NewHistograms("lint")
		p := workerpool.New(1, workerpool.WithName("lint"), workerpool.WithHooks(h.Hooks()))
		p.Submit(func() {})
		p.StopWait()
		problems, err := testutil.CollectAndLint(h)
		require.NoError(t, err, "CollectAndLint")
		assert.Empty(t, problems, "lint problems")
	})
}

func TestHistogramsSameNameIsADuplicate(t *testing.T) {
	reg := prometheus.NewRegistry()
	first := workerpoolprom.NewHistograms("same")
	require.NoError(t, reg.Register(first), "register the first")
	err := reg.Register(workerpoolprom.NewHistograms("same"))
	var dup prometheus.AlreadyRegisteredError
	require.ErrorAs(t, err, &dup, "register the second")
	assert.Same(t, first, dup.ExistingCollector, "existing collector")
	assert.NoError(t, reg.Register(workerpoolprom.NewHistograms("other")), "register another name")
}

func TestNewHistogramsPanicsOnUnsortedBuckets(t *testing.T) {
	assert.Panics(t, func() {
		workerpoolprom.NewHistograms("jobs", workerpoolprom.WithRunBuckets([]float64{1, 0.5}))
	}, "decreasing run buckets")
	assert.Panics(t, func() {
		workerpoolprom.NewHistograms("jobs", workerpoolprom.WithWaitBuckets([]float64{1, 1}))
	}, "repeated wait buckets")
}

// WithWaitBuckets copies its argument, and an empty list restores the
// default.
func TestHistogramBucketOptions(t *testing.T) {
	buckets := []float64{0.5, 2}
	h := workerpoolprom.NewHistograms("jobs", workerpoolprom.WithWaitBuckets(buckets), workerpoolprom.WithRunBuckets(nil))
	buckets[0] = 100
	families := gatherHistograms(t, h)
	var waitBounds []float64
	for _, b := range families["workerpool_task_wait_seconds"].GetHistogram().GetBucket() {
		waitBounds = append(waitBounds, b.GetUpperBound())
	}
	assert.Equal(t, []float64{0.5, 2}, waitBounds, "wait buckets")
	assert.Len(t, families["workerpool_task_run_seconds"].GetHistogram().GetBucket(), 12, "default run buckets")
}
