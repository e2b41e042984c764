package workerpoolotel_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"strings"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/workerpoolotel"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func Example() {
	// A program sets these up with its exporters, or leaves the options
	// out to use the global providers. These keep what they get for the
	// example to print.
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))

	hooks, err := workerpoolotel.NewHooks("images", workerpoolotel.WithMeterProvider(mp), workerpoolotel.WithTracerProvider(tp))
	if err != nil {
		log.Fatal(err)
	}
	pool := workerpool.New(1, workerpool.WithHooks(hooks))
	reg, err := workerpoolotel.RegisterStatus(pool, "images", workerpoolotel.WithMeterProvider(mp))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Unregister()

	tracer := tp.Tracer("example")
	ctx, request := tracer.Start(context.Background(), "request")
	resize := pool.Go(ctx, func(ctx context.Context) error {
		_, decode := tracer.Start(ctx, "decode") // a child of the run's span
		decode.End()
		return nil
	}, workerpool.TaskOption{Label: "resize"})
	measure := workerpool.GoResult(ctx, pool, func(ctx context.Context) (int, error) {
		return 640, nil
	}, workerpool.TaskOption{Label: "measure"})
	pool.Submit(func() {}) // no ctx, no label: a root span named workerpool.task
	fmt.Println("resize:", resize.Wait())
	width, err := measure.Wait()
	fmt.Println("measure:", width, err)
	pool.StopWait() // the tasks' spans have ended
	request.End()

	names := make(map[string]string)
	for _, s := range spans.Ended() {
		names[s.SpanContext().SpanID().String()] = s.Name()
	}
	for _, s := range spans.Ended() {
		fmt.Printf("span %s, parent %q\n", s.Name(), names[s.Parent().SpanID().String()])
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range data.DataPoints {
					lines = append(lines, fmt.Sprintf("%s%s %s: %d", m.Name, labels(dp.Attributes.ToSlice()), m.Unit, dp.Value))
				}
			case metricdata.Gauge[int64]:
				for _, dp := range data.DataPoints {
					lines = append(lines, fmt.Sprintf("%s%s %s: %d", m.Name, labels(dp.Attributes.ToSlice()), m.Unit, dp.Value))
				}
			case metricdata.Gauge[float64]:
				for _, dp := range data.DataPoints {
					lines = append(lines, fmt.Sprintf("%s%s %s: %g", m.Name, labels(dp.Attributes.ToSlice()), m.Unit, dp.Value))
				}
			case metricdata.Histogram[float64]:
				for _, dp := range data.DataPoints {
					lines = append(lines, fmt.Sprintf("%s%s %s: %d runs", m.Name, labels(dp.Attributes.ToSlice()), m.Unit, dp.Count))
				}
			}
		}
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// resize: <nil>
	// measure: 640 <nil>
	// span decode, parent "resize"
	// span resize, parent "request"
	// span measure, parent "request"
	// span workerpool.task, parent ""
	// span request, parent ""
	// workerpool.active_keys{pool=images} {key}: 0
	// workerpool.busy_workers{pool=images} {worker}: 0
	// workerpool.longest_running_processor{pool=images} s: 0
	// workerpool.max_workers{pool=images} {worker}: 1
	// workerpool.scheduled_tasks{pool=images} {task}: 0
	// workerpool.task_failures{outcome=error,pool=images,task=measure} {task}: 0
	// workerpool.task_failures{outcome=error,pool=images,task=none} {task}: 0
	// workerpool.task_failures{outcome=error,pool=images,task=resize} {task}: 0
	// workerpool.task_failures{outcome=panic,pool=images,task=measure} {task}: 0
	// workerpool.task_failures{outcome=panic,pool=images,task=none} {task}: 0
	// workerpool.task_failures{outcome=panic,pool=images,task=resize} {task}: 0
	// workerpool.task_reruns{pool=images,task=measure} {task}: 0
	// workerpool.task_reruns{pool=images,task=none} {task}: 0
	// workerpool.task_reruns{pool=images,task=resize} {task}: 0
	// workerpool.task_retries{pool=images} {task}: 0
	// workerpool.task_run{pool=images,task=measure} s: 1 runs
	// workerpool.task_run{pool=images,task=none} s: 1 runs
	// workerpool.task_run{pool=images,task=resize} s: 1 runs
	// workerpool.task_wait{pool=images,task=measure} s: 1 runs
	// workerpool.task_wait{pool=images,task=none} s: 1 runs
	// workerpool.task_wait{pool=images,task=resize} s: 1 runs
	// workerpool.tasks_abandoned{pool=images} {task}: 0
	// workerpool.tasks_canceled{pool=images} {task}: 0
	// workerpool.tasks_completed{pool=images} {task}: 3
	// workerpool.tasks_dropped{pool=images} {task}: 0
	// workerpool.tasks_expired{pool=images} {task}: 0
	// workerpool.tasks_panicked{pool=images} {task}: 0
	// workerpool.tasks_rejected{pool=images} {task}: 0
	// workerpool.tasks_submitted{pool=images} {task}: 3
	// workerpool.unfinished_work{pool=images} s: 0
	// workerpool.waiting_tasks{pool=images} {task}: 0
	// workerpool.workers{pool=images} {worker}: 0
}

// labels writes attributes as {key=value,...}.
func labels(kvs []attribute.KeyValue) string {
	var b strings.Builder
	b.WriteString("{")
	for i, kv := range kvs {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(string(kv.Key) + "=" + kv.Value.String())
	}
	b.WriteString("}")
	return b.String()
}

// ExampleNewHooks adds hooks of one's own to NewHooks's: WithHooks merges,
// so a later WithHooks adds a TaskDropped (NewHooks leaves it nil) and
// replaces TaskStarted with one that calls NewHooks's (a TaskFinished of
// one's own would pass NewHooks's the ctx that TaskStarted returned).
func ExampleNewHooks() {
	otelHooks, err := workerpoolotel.NewHooks("mail") // the global providers
	if err != nil {
		log.Fatal(err)
	}
	pool := workerpool.New(1,
		workerpool.WithHooks(otelHooks),
		workerpool.WithHooks(workerpool.Hooks{
			TaskStarted: func(ctx context.Context, t workerpool.TaskInfo) context.Context {
				ctx = otelHooks.TaskStarted(ctx, t)
				fmt.Printf("started %q\n", t.Label) // your hook; like every hook, safe for concurrent use
				return ctx
			},
			TaskDropped: func(t workerpool.TaskInfo) {
				fmt.Println("dropped", t.Label+":", t.Err)
			},
		}),
		workerpool.WithMaxWaiting(1, workerpool.Reject))
	running, release := make(chan struct{}), make(chan struct{})
	pool.Submit(func() {
		close(running)
		<-release
	})
	<-running
	_ = pool.DoContext(context.Background(), func() {}, workerpool.TaskOption{Label: "send"}) // waits: the queue is now full
	err = pool.DoContext(context.Background(), func() {}, workerpool.TaskOption{Label: "retry"})
	fmt.Println("refused:", err)
	close(release)
	pool.StopWait()
	// Output:
	// started ""
	// dropped retry: workerpool: waiting queue full
	// refused: workerpool: waiting queue full
	// started "send"
}

// Example_prometheus exports the metrics with the OpenTelemetry Prometheus
// exporter: without the scope labels and target_info, they are the
// metrics of workerpoolprom, by name and by label.
func Example_prometheus() {
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		log.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	hooks, err := workerpoolotel.NewHooks("images", workerpoolotel.WithMeterProvider(mp))
	if err != nil {
		log.Fatal(err)
	}
	pool := workerpool.New(2, workerpool.WithHooks(hooks))
	reg, err := workerpoolotel.RegisterStatus(pool, "images", workerpoolotel.WithMeterProvider(mp))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Unregister()
	_ = pool.DoContext(context.Background(), func() {}, workerpool.TaskOption{Label: "resize"})
	pool.StopWait()

	families, err := registry.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "workerpool_task") || f.GetName() == "workerpool_workers" {
			var names []string
			for _, l := range f.GetMetric()[0].GetLabel() {
				names = append(names, l.GetName()+"="+l.GetValue())
			}
			fmt.Println(f.GetType(), f.GetName(), names)
		}
	}
	// Output:
	// COUNTER workerpool_task_failures_total [outcome=error pool=images task=resize]
	// COUNTER workerpool_task_reruns_total [pool=images task=resize]
	// COUNTER workerpool_task_retries_total [pool=images]
	// HISTOGRAM workerpool_task_run_seconds [pool=images task=resize]
	// HISTOGRAM workerpool_task_wait_seconds [pool=images task=resize]
	// COUNTER workerpool_tasks_abandoned_total [pool=images]
	// COUNTER workerpool_tasks_canceled_total [pool=images]
	// COUNTER workerpool_tasks_completed_total [pool=images]
	// COUNTER workerpool_tasks_dropped_total [pool=images]
	// COUNTER workerpool_tasks_expired_total [pool=images]
	// COUNTER workerpool_tasks_panicked_total [pool=images]
	// COUNTER workerpool_tasks_rejected_total [pool=images]
	// COUNTER workerpool_tasks_submitted_total [pool=images]
	// GAUGE workerpool_workers [pool=images]
}

// RegisterStatus reports a pool's Status on each collection, also after the
// pool stopped, until Unregister: call it when the pool is no longer
// needed.
func ExampleRegisterStatus() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	pool := workerpool.New(3)
	reg, err := workerpoolotel.RegisterStatus(pool, "mail", workerpoolotel.WithMeterProvider(mp))
	if err != nil {
		log.Fatal(err)
	}
	for range 5 {
		pool.Submit(func() {})
	}
	pool.StopWait()
	printInts(reader, "workerpool.max_workers", "workerpool.tasks_completed")
	if err := reg.Unregister(); err != nil {
		log.Fatal(err)
	}
	printInts(reader, "workerpool.max_workers") // nothing once unregistered
	// Output:
	// workerpool.max_workers{pool=mail}: 3
	// workerpool.tasks_completed{pool=mail}: 5
}

// Past the cap of WithMaxLabels, labels count as task="other" in the
// metrics; spans keep every label.
func ExampleWithMaxLabels() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	hooks, err := workerpoolotel.NewHooks("mail", workerpoolotel.WithMeterProvider(mp), workerpoolotel.WithMaxLabels(1))
	if err != nil {
		log.Fatal(err)
	}
	pool := workerpool.New(1, workerpool.WithHooks(hooks))
	send := func(context.Context) error { return nil }
	for _, label := range []string{"welcome", "digest", "receipt", "welcome"} {
		_ = pool.Go(context.Background(), send, workerpool.TaskOption{Label: label}).Wait() // one after the other: "welcome" comes first
	}
	pool.StopWait()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == "workerpool.task_run" {
				var lines []string
				for _, dp := range h.DataPoints {
					lines = append(lines, fmt.Sprintf("%s%s: %d runs", m.Name, labels(dp.Attributes.ToSlice()), dp.Count))
				}
				slices.Sort(lines)
				fmt.Println(strings.Join(lines, "\n"))
			}
		}
	}
	// Output:
	// workerpool.task_run{pool=mail,task=other}: 2 runs
	// workerpool.task_run{pool=mail,task=welcome}: 2 runs
}

// Spans only: a span per run, named by the task's label, a child of the
// submitter's span. (Without WithTracerProvider the hooks use the global
// provider.)
func ExampleWithTracerProvider() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	hooks, err := workerpoolotel.NewHooks("images", workerpoolotel.WithTracerProvider(tp))
	if err != nil {
		log.Fatal(err)
	}
	pool := workerpool.New(2, workerpool.WithHooks(hooks))
	ctx, request := tp.Tracer("example").Start(context.Background(), "request")
	_ = pool.Go(ctx, func(context.Context) error { return nil }, workerpool.TaskOption{Label: "resize"}).Wait()
	pool.StopWait()
	request.End()
	for _, s := range spans.Ended() {
		fmt.Println(s.Name(), "child of request:", s.Parent().SpanID() == request.SpanContext().SpanID())
	}
	// Output:
	// resize child of request: true
	// request child of request: false
}

// printInts collects reader and prints the integer data points of the
// metrics named, in the order named, each metric's sorted by attributes.
func printInts(reader *sdkmetric.ManualReader, names ...string) {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	for _, name := range names {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != name {
					continue
				}
				var points []metricdata.DataPoint[int64]
				switch data := m.Data.(type) {
				case metricdata.Sum[int64]:
					points = data.DataPoints
				case metricdata.Gauge[int64]:
					points = data.DataPoints
				}
				var lines []string // the SDK gives data points in no set order
				for _, dp := range points {
					lines = append(lines, fmt.Sprintf("%s%s: %d", m.Name, labels(dp.Attributes.ToSlice()), dp.Value))
				}
				slices.Sort(lines)
				fmt.Print(strings.Join(append(lines, ""), "\n"))
			}
		}
	}
}

// Metrics only: the hooks record to the MeterProvider given (without
// WithMeterProvider, to the global one).
func ExampleWithMeterProvider() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	hooks, err := workerpoolotel.NewHooks("mail", workerpoolotel.WithMeterProvider(mp))
	if err != nil {
		log.Fatal(err)
	}
	pool := workerpool.New(2, workerpool.WithHooks(hooks))
	for range 3 {
		pool.DoContext(context.Background(), func() {}, workerpool.TaskOption{Label: "welcome"})
	}
	pool.StopWait()
	printInts(reader, "workerpool.task_failures")
	// Output:
	// workerpool.task_failures{outcome=error,pool=mail,task=welcome}: 0
	// workerpool.task_failures{outcome=panic,pool=mail,task=welcome}: 0
}
