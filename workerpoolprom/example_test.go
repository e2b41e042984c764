package workerpoolprom_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/workerpoolprom"
	"github.com/prometheus/client_golang/prometheus"
)

// A pool named "images" exports its Status and its task timings to a
// registry of its own. A program would serve reg with
// promhttp.HandlerFor(reg, promhttp.HandlerOpts{}); here the example
// gathers it once the pool has stopped and prints a few values.
func Example() {
	hists := workerpoolprom.NewHistograms("images")
	pool := workerpool.New(4,
		workerpool.WithName("images"),
		workerpool.WithHooks(hists.Hooks()),
	)
	reg := prometheus.NewRegistry()
	reg.MustRegister(workerpoolprom.NewCollector(pool), hists)

	for i := range 10 {
		pool.Go(context.Background(), func(context.Context) error {
			if i%5 == 4 {
				return errors.New("corrupt image") // fails, but completes
			}
			return nil
		})
	}
	pool.StopWait()

	families, err := reg.Gather() // sorted by name
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			pool := m.GetLabel()[0].GetValue() // the one label: pool
			switch f.GetName() {
			case "workerpool_tasks_submitted_total", "workerpool_tasks_completed_total":
				fmt.Printf("%s{pool=%q} %v\n", f.GetName(), pool, m.GetCounter().GetValue())
			case "workerpool_workers":
				fmt.Printf("%s{pool=%q} %v\n", f.GetName(), pool, m.GetGauge().GetValue())
			case "workerpool_task_wait_seconds", "workerpool_task_run_seconds":
				fmt.Printf("%s_count{pool=%q} %v\n", f.GetName(), pool, m.GetHistogram().GetSampleCount())
			}
		}
	}
	// Output:
	// workerpool_task_run_seconds_count{pool="images"} 10
	// workerpool_task_wait_seconds_count{pool="images"} 10
	// workerpool_tasks_completed_total{pool="images"} 10
	// workerpool_tasks_submitted_total{pool="images"} 10
	// workerpool_workers{pool="images"} 0
}
