package workerpoolotel

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// TestPrometheusExporterNames exports every instrument of RegisterStatus
// and NewHooks with the OpenTelemetry Prometheus exporter (its default
// translation; no scope labels, no target_info) to a registry of its own,
// and checks that the families are workerpoolprom's, by name, type and
// label names, as the shared vocabulary lists them. A second pool, made
// with WithAdaptiveSize, gives workerpool_size_reason its one series, as
// workerpoolprom's Collector does; the first, without, gives it none.
func TestPrometheusExporterNames(t *testing.T) {
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	require.NoError(t, err, "the exporter")
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer func() { assert.NoError(t, mp.Shutdown(context.Background()), "MeterProvider.Shutdown") }()
	hooks, err := NewHooks("names", WithMeterProvider(mp), WithTracerProvider(tracenoop.NewTracerProvider()))
	require.NoError(t, err, "NewHooks")
	p := workerpool.New(2, workerpool.WithHooks(hooks))
	defer p.Stop()
	reg, err := RegisterStatus(p, "names", WithMeterProvider(mp))
	require.NoError(t, err, "RegisterStatus")
	defer func() { assert.NoError(t, reg.Unregister(), "Unregister") }()
	adaptive := workerpool.New(2, workerpool.WithAdaptiveSize(1, 4))
	defer adaptive.Stop()
	regA, err := RegisterStatus(adaptive, "adaptive", WithMeterProvider(mp))
	require.NoError(t, err, "RegisterStatus(adaptive)")
	defer func() { assert.NoError(t, regA.Unregister(), "Unregister(adaptive)") }()

	// A run that fails, one retried, and one that panics: every
	// instrument gets a data point.
	ctx := t.Context()
	runs := 0
	require.NoError(t, p.Go(ctx, func(context.Context) error {
		if runs++; runs < 2 {
			return errors.New("not yet")
		}
		return nil
	}, workerpool.TaskOption{Label: "resize"}, workerpool.TaskOption{Retry: func(int, error) (time.Duration, bool) { return 0, true }}).Wait(), "the retried task")
	var pe *workerpool.PanicError
	require.ErrorAs(t, p.Go(ctx, func(context.Context) error { panic("boom") }).Wait(), &pe, "the task that panics")
	p.StopWait()
	adaptive.StopWait() // its last decision, read below, is final

	families, err := registry.Gather()
	require.NoError(t, err, "Gather")
	type family struct {
		Name, Type string
		Labels     []string
	}
	var got []family
	for _, f := range families {
		var labels []string
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if !slices.Contains(labels, l.GetName()) {
					labels = append(labels, l.GetName())
				}
			}
		}
		slices.Sort(labels)
		got = append(got, family{f.GetName(), f.GetType().String(), labels})
	}
	pool, task, outcome := []string{"pool"}, []string{"pool", "task"}, []string{"outcome", "pool", "task"}
	assert.ElementsMatch(t, []family{
		{"workerpool_workers", "GAUGE", pool},
		{"workerpool_busy_workers", "GAUGE", pool},
		{"workerpool_max_workers", "GAUGE", pool},
		{"workerpool_waiting_tasks", "GAUGE", pool},
		{"workerpool_scheduled_tasks", "GAUGE", pool},
		{"workerpool_active_keys", "GAUGE", pool},
		{"workerpool_size_reason", "GAUGE", []string{"pool", "reason"}},
		{"workerpool_tasks_submitted_total", "COUNTER", pool},
		{"workerpool_tasks_completed_total", "COUNTER", pool},
		{"workerpool_tasks_panicked_total", "COUNTER", pool},
		{"workerpool_tasks_abandoned_total", "COUNTER", pool},
		{"workerpool_tasks_canceled_total", "COUNTER", pool},
		{"workerpool_tasks_rejected_total", "COUNTER", pool},
		{"workerpool_tasks_dropped_total", "COUNTER", pool},
		{"workerpool_tasks_expired_total", "COUNTER", pool},
		{"workerpool_task_retries_total", "COUNTER", pool},
		{"workerpool_task_wait_seconds", "HISTOGRAM", task},
		{"workerpool_task_run_seconds", "HISTOGRAM", task},
		{"workerpool_task_failures_total", "COUNTER", outcome},
		{"workerpool_task_reruns_total", "COUNTER", task},
		{"workerpool_unfinished_work_seconds", "GAUGE", pool},
		{"workerpool_longest_running_processor_seconds", "GAUGE", pool},
	}, got, "the families the exporter makes")

	for _, f := range families {
		if f.GetName() != "workerpool_size_reason" {
			continue
		}
		require.Len(t, f.GetMetric(), 1, "series of %s: the adaptive pool's only", f.GetName())
		var labels []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
		assert.Equal(t, []string{"pool=adaptive", "reason=" + adaptive.Status().SizeReason}, labels, "labels of %s", f.GetName())
		assert.Equal(t, 1.0, f.GetMetric()[0].GetGauge().GetValue(), "value of %s", f.GetName())
	}
	for _, f := range families {
		if f.GetName() != "workerpool_task_run_seconds" {
			continue
		}
		var bounds []float64
		for _, b := range f.GetMetric()[0].GetHistogram().GetBucket() {
			bounds = append(bounds, b.GetUpperBound())
		}
		assert.Equal(t, []float64{1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10, 100, 1000}, bounds, "le of %s", f.GetName())
	}
}
