package workerpoolprom_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/workerpoolprom"
	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkCollect measures one scrape of each collector: Collect into a
// channel, as a registry does, and a registry's whole Gather of both (the
// metrics written out as protobuf messages, not yet encoded).
func BenchmarkCollect(b *testing.B) {
	h := workerpoolprom.NewHistograms()
	p := workerpool.New(4, workerpool.WithHooks(h.Hooks("bench")))
	defer p.StopWait()
	for i := range 1000 {
		p.DoContext(context.Background(), func() {}, workerpool.TaskOption{Label: []string{"", "resize", "mail"}[i%3]})
	}
	b.Run("collector=status", func(b *testing.B) {
		benchmarkCollect(b, workerpoolprom.NewCollector(p, "bench"))
	})
	b.Run("collector=histograms", func(b *testing.B) {
		benchmarkCollect(b, h)
	})
	b.Run("gather=both", func(b *testing.B) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(workerpoolprom.NewCollector(p, "bench"), h)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := reg.Gather(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchmarkCollect collects c into a channel that holds a whole scrape,
// and drains it after each Collect: a channel smaller than what c sends
// (the histograms of BenchmarkCollect send 17 metrics) would block Collect
// for good.
func benchmarkCollect(b *testing.B, c prometheus.Collector) {
	ch := make(chan prometheus.Metric, 256)
	b.ReportAllocs()
	for b.Loop() {
		c.Collect(ch)
		for len(ch) > 0 {
			<-ch
		}
	}
}

// BenchmarkHooks measures the histograms' hooks alone, as a worker calls
// them around each run: TaskStarted (a series lookup, a wait observed,
// the run recorded as in flight) then TaskFinished (a run time observed,
// the run removed), for a labelled task of one pool. plain is a plain
// task's run (TaskStarted given context.Background(): its run is reused);
// ctx a run of a task with a ctx (Go, GoResult, Group.Go, DoContext: its run is
// allocated, as it is the task's ctx); failed a plain task's failed run;
// parallel plain runs on GOMAXPROCS goroutines at once, all on one pool,
// so they contend for its runs in flight. baseline is the two observations
// alone, in histograms with the same settings and no label: all that the
// hooks did before they had task labels and stuck work.
func BenchmarkHooks(b *testing.B) {
	info := workerpool.TaskInfo{Label: "resize", Weight: 1, Attempt: 1, Waited: time.Millisecond, Ran: time.Millisecond}
	b.Run("run=baseline", func(b *testing.B) {
		opts := prometheus.HistogramOpts{
			Name:                            "baseline_seconds",
			Help:                            "Baseline.",
			Buckets:                         []float64{1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10, 100, 1000},
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  100,
			NativeHistogramMinResetDuration: time.Hour,
		}
		wait, run := prometheus.NewHistogram(opts), prometheus.NewHistogram(opts)
		b.ReportAllocs()
		for b.Loop() {
			wait.Observe(info.Waited.Seconds())
			run.Observe(info.Ran.Seconds())
		}
	})
	failed := info
	failed.Err = errors.New("fails")
	for _, c := range []struct {
		name string
		ctx  context.Context
		info workerpool.TaskInfo
	}{
		{"run=plain", context.Background(), info},
		{"run=ctx", context.WithoutCancel(context.Background()), info},
		{"run=failed", context.Background(), failed},
	} {
		b.Run(c.name, func(b *testing.B) {
			hooks := workerpoolprom.NewHistograms().Hooks("bench")
			b.ReportAllocs()
			for b.Loop() {
				hooks.TaskFinished(hooks.TaskStarted(c.ctx, c.info), c.info)
			}
		})
	}
	b.Run("run=plain/parallel", func(b *testing.B) {
		hooks := workerpoolprom.NewHistograms().Hooks("bench")
		ctx := context.Background()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				hooks.TaskFinished(hooks.TaskStarted(ctx, info), info)
			}
		})
	})
}

// BenchmarkSubmit measures the per-task cost of the histograms' hooks:
// no-op tasks on 4 workers, without hooks and with them.
func BenchmarkSubmit(b *testing.B) {
	b.Run("hooks=none", func(b *testing.B) {
		benchmarkSubmit(b, workerpool.New(4))
	})
	b.Run("hooks=histograms", func(b *testing.B) {
		h := workerpoolprom.NewHistograms()
		benchmarkSubmit(b, workerpool.New(4, workerpool.WithHooks(h.Hooks("bench"))))
	})
}

func benchmarkSubmit(b *testing.B, p *workerpool.WorkerPool) {
	wg := new(sync.WaitGroup)
	defer p.StopWait()
	b.ReportAllocs()
	for b.Loop() {
		wg.Add(1)
		p.Submit(wg.Done)
	}
	wg.Wait()
}
