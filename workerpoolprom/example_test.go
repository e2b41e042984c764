package workerpoolprom_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"
	"strings"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/workerpoolprom"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// A pool named "images" exports its Status and its task timings to a
// registry of its own. A program would serve reg with
// promhttp.HandlerFor(reg, promhttp.HandlerOpts{}); here the example
// gathers it once the pool has stopped and prints a few values.
func Example() {
	hists := workerpoolprom.NewHistograms()
	pool := workerpool.New(4,
		workerpool.WithHooks(hists.Hooks("images")),
	)
	reg := prometheus.NewRegistry()
	reg.MustRegister(workerpoolprom.NewCollector(pool, "images"), hists)

	for i := range 10 {
		pool.Go(context.Background(), func(context.Context) error {
			if i%5 == 4 {
				return errors.New("corrupt image") // fails, but completes
			}
			return nil
		}, workerpool.TaskOption{Label: "resize"})
	}
	pool.Submit(func() {}) // no label: task="none"
	pool.StopWait()

	printSeries(reg,
		"workerpool_tasks_submitted_total",
		"workerpool_tasks_completed_total",
		"workerpool_workers",
		"workerpool_task_run_seconds",
		"workerpool_task_failures_total",
		"workerpool_unfinished_work_seconds",
	)
	// Output:
	// workerpool_task_failures_total{outcome="error",pool="images",task="none"} 0
	// workerpool_task_failures_total{outcome="error",pool="images",task="resize"} 2
	// workerpool_task_failures_total{outcome="panic",pool="images",task="none"} 0
	// workerpool_task_failures_total{outcome="panic",pool="images",task="resize"} 0
	// workerpool_task_run_seconds_count{pool="images",task="none"} 1
	// workerpool_task_run_seconds_count{pool="images",task="resize"} 10
	// workerpool_tasks_completed_total{pool="images"} 11
	// workerpool_tasks_submitted_total{pool="images"} 11
	// workerpool_unfinished_work_seconds{pool="images"} 0
	// workerpool_workers{pool="images"} 0
}

// One Histograms serves two pools; past the cap of WithMaxLabels, labels
// count as "other". The tasks run one after the other (each Go's Wait
// returns before the next), so that which labels come first is known.
func ExampleWithMaxLabels() {
	hists := workerpoolprom.NewHistograms(workerpoolprom.WithMaxLabels(2))
	mail := workerpool.New(2, workerpool.WithHooks(hists.Hooks("mail")))
	images := workerpool.New(2, workerpool.WithHooks(hists.Hooks("images")))
	reg := prometheus.NewRegistry()
	reg.MustRegister(hists)

	send := func(context.Context) error { return nil }
	for _, label := range []string{"welcome", "digest", "welcome", "receipt"} {
		if err := mail.Go(context.Background(), send, workerpool.TaskOption{Label: label}).Wait(); err != nil {
			log.Fatal(err)
		}
	}
	if err := images.Go(context.Background(), send, workerpool.TaskOption{Label: "resize"}).Wait(); err != nil {
		log.Fatal(err)
	}
	mail.StopWait()
	images.StopWait()

	printSeries(reg, "workerpool_task_run_seconds")
	// Output:
	// workerpool_task_run_seconds_count{pool="images",task="other"} 1
	// workerpool_task_run_seconds_count{pool="mail",task="digest"} 1
	// workerpool_task_run_seconds_count{pool="mail",task="other"} 1
	// workerpool_task_run_seconds_count{pool="mail",task="welcome"} 2
}

// Hooks of one's own call the histograms' hooks, and pass TaskFinished
// the ctx TaskStarted returned, as the pool does.
func ExampleHistograms_Hooks() {
	hists := workerpoolprom.NewHistograms()
	h := hists.Hooks("mail")
	pool := workerpool.New(1,
		workerpool.WithHooks(workerpool.Hooks{
			TaskStarted: h.TaskStarted,
			TaskFinished: func(ctx context.Context, t workerpool.TaskInfo) {
				h.TaskFinished(ctx, t)
				if t.Err != nil {
					fmt.Printf("mail task %s failed: %v\n", t.Label, t.Err)
				}
			},
		}),
	)
	pool.Go(context.Background(), func(context.Context) error {
		return errors.New("smtp: connection refused")
	}, workerpool.TaskOption{Label: "welcome"})
	pool.StopWait()

	reg := prometheus.NewRegistry()
	reg.MustRegister(hists)
	printSeries(reg, "workerpool_task_failures_total")
	// Output:
	// mail task welcome failed: smtp: connection refused
	// workerpool_task_failures_total{outcome="error",pool="mail",task="welcome"} 1
	// workerpool_task_failures_total{outcome="panic",pool="mail",task="welcome"} 0
}

// printSeries gathers reg and prints each series of the families named,
// as the text format would, with a histogram as its _count, in the order
// gathered (by name, then labels).
func printSeries(reg *prometheus.Registry, names ...string) {
	families, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range families {
		if !slices.Contains(names, f.GetName()) {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			name, v := f.GetName(), m.GetCounter().GetValue()+m.GetGauge().GetValue()
			if f.GetType() == dto.MetricType_HISTOGRAM {
				name, v = name+"_count", float64(m.GetHistogram().GetSampleCount())
			}
			fmt.Printf("%s{%s} %v\n", name, strings.Join(labels, ","), v)
		}
	}
}

// Buckets to match a service level: the wait histogram counts tasks that
// waited more than 10ms for a worker. Here the second task waits behind a
// first that takes 20ms, on the pool's one worker.
func ExampleWithWaitBuckets() {
	hists := workerpoolprom.NewHistograms(workerpoolprom.WithWaitBuckets([]float64{0.01, 60}))
	pool := workerpool.New(1, workerpool.WithHooks(hists.Hooks("mail")))
	pool.DoContext(context.Background(), func() { time.Sleep(20 * time.Millisecond) }, workerpool.TaskOption{Label: "first"})
	pool.DoContext(context.Background(), func() {}, workerpool.TaskOption{Label: "behind"})
	pool.StopWait()

	reg := prometheus.NewRegistry()
	reg.MustRegister(hists)
	printBuckets(reg, "workerpool_task_wait_seconds", "behind")
	// Output:
	// workerpool_task_wait_seconds_bucket{task="behind",le="0.01"} 0
	// workerpool_task_wait_seconds_bucket{task="behind",le="60"} 1
	// workerpool_task_wait_seconds_bucket{task="behind",le="+Inf"} 1
}

// Run-time buckets for tasks that take seconds rather than microseconds.
func ExampleWithRunBuckets() {
	hists := workerpoolprom.NewHistograms(workerpoolprom.WithRunBuckets([]float64{0.01, 1, 60}))
	pool := workerpool.New(2, workerpool.WithHooks(hists.Hooks("reports")))
	pool.DoContext(context.Background(), func() { time.Sleep(20 * time.Millisecond) }, workerpool.TaskOption{Label: "render"})
	pool.StopWait()

	reg := prometheus.NewRegistry()
	reg.MustRegister(hists)
	printBuckets(reg, "workerpool_task_run_seconds", "render")
	// Output:
	// workerpool_task_run_seconds_bucket{task="render",le="0.01"} 0
	// workerpool_task_run_seconds_bucket{task="render",le="1"} 1
	// workerpool_task_run_seconds_bucket{task="render",le="60"} 1
	// workerpool_task_run_seconds_bucket{task="render",le="+Inf"} 1
}

// Pools share a registry when their names differ; a second Collector for a
// name already registered is refused.
func ExampleNewCollector() {
	mail := workerpool.New(2)
	images := workerpool.New(4)
	reg := prometheus.NewRegistry()
	reg.MustRegister(workerpoolprom.NewCollector(mail, "mail"), workerpoolprom.NewCollector(images, "images"))

	err := reg.Register(workerpoolprom.NewCollector(mail, "mail"))
	var dup prometheus.AlreadyRegisteredError
	fmt.Println("the same name again refused:", errors.As(err, &dup))

	mail.StopWait()
	images.StopWait()
	printSeries(reg, "workerpool_max_workers")
	// Output:
	// the same name again refused: true
	// workerpool_max_workers{pool="images"} 4
	// workerpool_max_workers{pool="mail"} 2
}

// printBuckets prints the cumulative buckets of the histogram family name
// for the series with the task label given, as the text format would.
func printBuckets(reg *prometheus.Registry, name, task string) {
	families, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == "task" && l.GetValue() == task }) {
				continue
			}
			h := m.GetHistogram()
			for _, b := range h.GetBucket() {
				fmt.Printf("%s_bucket{task=%q,le=\"%v\"} %d\n", name, task, b.GetUpperBound(), b.GetCumulativeCount())
			}
			fmt.Printf("%s_bucket{task=%q,le=\"+Inf\"} %d\n", name, task, h.GetSampleCount())
		}
	}
}

// One Histograms times the tasks of any number of pools, told apart by
// their names: give each pool its Hooks, and register it once.
func ExampleNewHistograms() {
	hists := workerpoolprom.NewHistograms()
	mail := workerpool.New(2, workerpool.WithHooks(hists.Hooks("mail")))
	images := workerpool.New(2, workerpool.WithHooks(hists.Hooks("images")))
	for range 3 {
		mail.DoContext(context.Background(), func() {}, workerpool.TaskOption{Label: "welcome"})
	}
	images.DoContext(context.Background(), func() {}, workerpool.TaskOption{Label: "resize"})
	mail.StopWait()
	images.StopWait()

	reg := prometheus.NewRegistry()
	reg.MustRegister(hists)
	printSeries(reg, "workerpool_task_run_seconds")
	// Output:
	// workerpool_task_run_seconds_count{pool="images",task="resize"} 1
	// workerpool_task_run_seconds_count{pool="mail",task="welcome"} 3
}
