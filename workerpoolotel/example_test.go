package workerpoolotel_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"strings"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/workerpoolotel"
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

	hooks, err := workerpoolotel.NewHooks("images", workerpoolotel.WithMeterProvider(mp))
	if err != nil {
		log.Fatal(err)
	}
	pool := workerpool.New(1, workerpool.WithName("images"), workerpool.WithHooks(hooks))
	reg, err := workerpoolotel.RegisterStatus(pool, workerpoolotel.WithMeterProvider(mp))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Unregister()
	tracing := workerpoolotel.NewTracing(pool, workerpoolotel.WithTracerProvider(tp))

	ctx, request := tp.Tracer("example").Start(context.Background(), "request")
	resize := tracing.Go(ctx, "resize", func(ctx context.Context) error {
		return nil
	})
	measure := workerpoolotel.Call(ctx, tracing, "measure", func(ctx context.Context) (int, error) {
		return 640, nil
	})
	fmt.Println("resize:", resize.Wait())
	width, err := measure.Wait()
	fmt.Println("measure:", width, err)
	request.End()
	pool.StopWait()

	for _, s := range spans.Ended() {
		fmt.Printf("span %s: child of request: %t\n", s.Name(), s.Parent().SpanID() == request.SpanContext().SpanID())
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
					name, _ := dp.Attributes.Value("workerpool.name")
					lines = append(lines, fmt.Sprintf("%s{workerpool.name=%s} %s: %d", m.Name, name.AsString(), m.Unit, dp.Value))
				}
			case metricdata.Histogram[float64]:
				for _, dp := range data.DataPoints {
					name, _ := dp.Attributes.Value("workerpool.name")
					lines = append(lines, fmt.Sprintf("%s{workerpool.name=%s} %s: %d runs", m.Name, name.AsString(), m.Unit, dp.Count))
				}
			}
		}
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// resize: <nil>
	// measure: 640 <nil>
	// span resize: child of request: true
	// span measure: child of request: true
	// span request: child of request: false
	// workerpool.task.retries{workerpool.name=images} {retry}: 0
	// workerpool.task.run.duration{workerpool.name=images} s: 2 runs
	// workerpool.task.wait.duration{workerpool.name=images} s: 2 runs
	// workerpool.tasks.abandoned{workerpool.name=images} {task}: 0
	// workerpool.tasks.canceled{workerpool.name=images} {task}: 0
	// workerpool.tasks.completed{workerpool.name=images} {task}: 2
	// workerpool.tasks.dropped{workerpool.name=images} {task}: 0
	// workerpool.tasks.expired{workerpool.name=images} {task}: 0
	// workerpool.tasks.panicked{workerpool.name=images} {task}: 0
	// workerpool.tasks.rejected{workerpool.name=images} {task}: 0
	// workerpool.tasks.scheduled{workerpool.name=images} {task}: 0
	// workerpool.tasks.submitted{workerpool.name=images} {task}: 2
	// workerpool.tasks.waiting{workerpool.name=images} {task}: 0
	// workerpool.workers.busy{workerpool.name=images} {worker}: 0
	// workerpool.workers.max{workerpool.name=images} {worker}: 1
	// workerpool.workers{workerpool.name=images} {worker}: 0
}

// ExampleNewHooks adds hooks of one's own to NewHooks's: set the fields
// you need, and call NewHooks's from yours.
func ExampleNewHooks() {
	otelHooks, err := workerpoolotel.NewHooks("mail")
	if err != nil {
		log.Fatal(err)
	}
	hooks := otelHooks
	hooks.TaskStarted = func(waited time.Duration) {
		otelHooks.TaskStarted(waited)
		fmt.Println("started") // your hook; like every hook, safe for concurrent use
	}
	hooks.TaskDropped = func(reason error) {
		fmt.Println("dropped:", reason) // NewHooks leaves TaskDropped nil
	}
	pool := workerpool.New(1, workerpool.WithName("mail"), workerpool.WithHooks(hooks),
		workerpool.WithMaxWaiting(1, workerpool.Reject))
	running, release := make(chan struct{}), make(chan struct{})
	pool.Submit(func() {
		close(running)
		<-release
	})
	<-running
	pool.Submit(func() {})    // waits: the queue is full
	pool.TrySubmit(func() {}) // refused
	close(release)
	pool.StopWait()
	// Output:
	// started
	// dropped: workerpool: waiting queue full
	// started
}
