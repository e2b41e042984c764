package workerpoolotel

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func noop(context.Context) error { return nil }

// newRecorded returns a TracerProvider that records every span in rec.
func newRecorded(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { assert.NoError(t, tp.Shutdown(context.Background()), "TracerProvider.Shutdown") })
	return tp, rec
}

// newMetered returns a MeterProvider whose every instrument reader reads.
func newMetered(t *testing.T) (*sdkmetric.MeterProvider, *sdkmetric.ManualReader) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { assert.NoError(t, mp.Shutdown(context.Background()), "MeterProvider.Shutdown") })
	return mp, reader
}

// span is what a test checks of an ended span.
type span struct {
	Name        string
	Parent      string        // the parent span's name; "" for a root span
	Start, End  time.Duration // since the test's start, on the fake clock
	Attributes  map[attribute.Key]any
	Status      codes.Code
	Description string
	Events      []map[attribute.Key]any // each event's name (as "event") and attributes, but a stack trace's
}

// spansOf sums up the spans rec saw end, in the order they ended, with
// their times since t0 and their parent's name, looked up among them. It
// checks each span's trace, the scope and kind of this package's spans,
// and that a stack trace, if any, shows wantFrame.
func spansOf(t *testing.T, rec *tracetest.SpanRecorder, t0 time.Time, wantFrame string) []span {
	t.Helper()
	ended := rec.Ended()
	names := make(map[trace.SpanID]string)
	traces := make(map[trace.SpanID]trace.TraceID)
	for _, s := range ended {
		names[s.SpanContext().SpanID()] = s.Name()
		traces[s.SpanContext().SpanID()] = s.SpanContext().TraceID()
	}
	var spans []span
	for _, s := range ended {
		if s.InstrumentationScope().Name == ScopeName {
			assert.Equal(t, Version, s.InstrumentationScope().Version, "scope version of %s", s.Name())
			assert.Equal(t, trace.SpanKindInternal, s.SpanKind(), "kind of %s", s.Name())
		}
		got := span{
			Name:        s.Name(),
			Start:       s.StartTime().Sub(t0),
			End:         s.EndTime().Sub(t0),
			Attributes:  make(map[attribute.Key]any),
			Status:      s.Status().Code,
			Description: s.Status().Description,
		}
		if parent := s.Parent().SpanID(); parent.IsValid() {
			name, ok := names[parent]
			require.True(t, ok, "the parent of %s has not ended", s.Name())
			got.Parent = name
			assert.Equal(t, traces[parent], s.SpanContext().TraceID(), "trace of %s", s.Name())
		}
		for _, kv := range s.Attributes() {
			got.Attributes[kv.Key] = kv.Value.AsInterface()
		}
		for _, e := range s.Events() {
			event := map[attribute.Key]any{"event": e.Name}
			for _, kv := range e.Attributes {
				if kv.Key == exceptionStacktrace {
					assert.Contains(t, kv.Value.AsString(), wantFrame, "stack trace of %s", s.Name())
					event[kv.Key] = "(stack)"
					continue
				}
				event[kv.Key] = kv.Value.AsInterface()
			}
			got.Events = append(got.Events, event)
		}
		spans = append(spans, got)
	}
	return spans
}

// attrs are the attributes of a run's span.
func attrs(pool, label string, attempt, priority int64, wait float64) map[attribute.Key]any {
	return map[attribute.Key]any{
		"pool":                     pool,
		"task":                     label,
		"workerpool.task.attempt":  attempt,
		"workerpool.task.priority": priority,
		"workerpool.task.wait":     wait,
	}
}

// exception is the event RecordError adds for an error of type typ, or
// NewHooks for a panic with a value of type typ.
func exception(typ, message string) map[attribute.Key]any {
	return map[attribute.Key]any{"event": "exception", "exception.type": typ, "exception.message": message}
}

// A point is one data point of the hooks' metrics: its instrument and
// attributes, as "instrument{key=value,...}" with the keys in order.
type point = string

// histogram is what one histogram data point says, in short.
type histogram struct {
	Count   uint64
	Sum     float64
	Buckets map[float64]uint64 // count per bucket, by upper bound; +Inf for the last; empty buckets left out
}

// hookMetrics is what the hooks' instruments report in one collection;
// each map is nil if they report nothing of its kind.
type hookMetrics struct {
	Histograms map[point]histogram // the wait and run histograms
	Counters   map[point]int64     // the failures and reruns counters
	Gauges     map[point]float64   // the stuck-work gauges
}

// collectHooks collects from reader and returns what NewHooks's
// instruments report. It checks the scope, each instrument's unit, kind,
// temporality and description, and the histograms' bounds, as it goes, and
// ignores RegisterStatus's instruments.
func collectHooks(t *testing.T, reader *sdkmetric.ManualReader) hookMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(t.Context(), &rm), "Collect")
	var got hookMetrics
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, ScopeName, sm.Scope.Name, "scope name")
		assert.Equal(t, Version, sm.Scope.Version, "scope version")
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Histogram[float64]:
				assert.Equal(t, "s", m.Unit, "unit of %s", m.Name)
				assert.Equal(t, metricdata.CumulativeTemporality, data.Temporality, "temporality of %s", m.Name)
				for _, dp := range data.DataPoints {
					assert.Equal(t, durationBounds, dp.Bounds, "bounds of %s", m.Name)
					h := histogram{Count: dp.Count, Sum: dp.Sum, Buckets: make(map[float64]uint64)}
					for i, n := range dp.BucketCounts {
						if n == 0 {
							continue
						}
						bound := math.Inf(1)
						if i < len(dp.Bounds) {
							bound = dp.Bounds[i]
						}
						h.Buckets[bound] = n
					}
					if got.Histograms == nil {
						got.Histograms = make(map[point]histogram)
					}
					got.Histograms[pointOf(m.Name, dp.Attributes)] = h
				}
			case metricdata.Sum[int64]:
				if _, ok := statusInstruments[m.Name]; ok {
					continue
				}
				assert.Equal(t, "{task}", m.Unit, "unit of %s", m.Name)
				assert.True(t, data.IsMonotonic, "%s is monotonic", m.Name)
				assert.Equal(t, metricdata.CumulativeTemporality, data.Temporality, "temporality of %s", m.Name)
				for _, dp := range data.DataPoints {
					if got.Counters == nil {
						got.Counters = make(map[point]int64)
					}
					got.Counters[pointOf(m.Name, dp.Attributes)] = dp.Value
				}
			case metricdata.Gauge[float64]:
				assert.Equal(t, "s", m.Unit, "unit of %s", m.Name)
				for _, dp := range data.DataPoints {
					if got.Gauges == nil {
						got.Gauges = make(map[point]float64)
					}
					got.Gauges[pointOf(m.Name, dp.Attributes)] = dp.Value
				}
			case metricdata.Gauge[int64]:
				if _, ok := statusInstruments[m.Name]; ok {
					continue
				}
				t.Errorf("unexpected int64 gauge %s", m.Name)
			default:
				t.Errorf("unexpected instrument %s: %T", m.Name, m.Data)
			}
			assert.NotEmpty(t, m.Description, "description of %s", m.Name)
		}
	}
	return got
}

// pointOf is the point of instrument name with attributes set.
func pointOf(name string, set attribute.Set) point {
	p := name + "{"
	for i, kv := range set.ToSlice() {
		if i > 0 {
			p += ","
		}
		p += string(kv.Key) + "=" + kv.Value.String()
	}
	return p + "}"
}
