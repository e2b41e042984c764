package workerpoolotel

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope name of every meter and tracer
// this package makes: its import path.
const ScopeName = "github.com/e86d9661/workerpool/workerpoolotel"

// Version is this package's version, reported as the instrumentation scope
// version.
const Version = "0.2.0"

// DefaultMaxLabels is how many distinct task labels one NewHooks's
// metrics keep by default (see WithMaxLabels).
const DefaultMaxLabels = 100

// An Option configures RegisterStatus or NewHooks. Options apply in the
// order given; when two set the same thing, the last one wins. A nil
// Option is ignored, and each function ignores the options that do not
// concern it (RegisterStatus ignores WithTracerProvider and
// WithMaxLabels).
type Option func(*config)

// config holds what the options set.
type config struct {
	meterProvider  metric.MeterProvider
	tracerProvider trace.TracerProvider
	maxLabels      int
}

func newConfig(opts []Option) config {
	c := config{maxLabels: DefaultMaxLabels}
	for _, opt := range opts {
		if opt != nil {
			opt(&c)
		}
	}
	if c.meterProvider == nil {
		c.meterProvider = otel.GetMeterProvider()
	}
	if c.tracerProvider == nil {
		c.tracerProvider = otel.GetTracerProvider()
	}
	return c
}

// meter is the Meter of this package's scope.
func (c *config) meter() metric.Meter {
	return c.meterProvider.Meter(ScopeName, metric.WithInstrumentationVersion(Version))
}

// tracer is the Tracer of this package's scope.
func (c *config) tracer() trace.Tracer {
	return c.tracerProvider.Tracer(ScopeName, trace.WithInstrumentationVersion(Version))
}

// WithMeterProvider makes RegisterStatus and NewHooks create their
// instruments with mp. A nil mp means the global provider.
//
// Default: the global MeterProvider, otel.GetMeterProvider(), read when
// RegisterStatus or NewHooks is called (a global provider set later still
// receives the measurements, as otel's global delegates to it).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) {
		c.meterProvider = mp
	}
}

// WithTracerProvider makes NewHooks start its spans with tp. A nil tp
// means the global provider. A provider whose tracers do not record (such
// as go.opentelemetry.io/otel/trace/noop's) turns the spans off: each run
// then costs a span that does nothing.
//
// Default: the global TracerProvider, otel.GetTracerProvider(), read when
// NewHooks is called (a global provider set later still gets the spans, as
// otel's global delegates to it).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) {
		c.tracerProvider = tp
	}
}

// WithMaxLabels caps the task labels that NewHooks's metrics keep: the
// first n distinct labels the hooks see keep their value in the task
// attribute; a task whose label comes later is counted under
// task="other". Tasks without a label are counted under task="none"
// whatever the cap. The cap bounds the series: the pool has at most n+2
// values of task. Spans are not capped: a span is named by its
// task's own label. n < 0 means 0: every labelled task counts as "other".
//
// Default: DefaultMaxLabels.
func WithMaxLabels(n int) Option {
	return func(c *config) {
		c.maxLabels = max(n, 0)
	}
}
