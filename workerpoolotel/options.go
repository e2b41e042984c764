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
const Version = "0.1.0"

// An Option configures RegisterStatus, NewHooks or NewTracing. Options
// apply in the order given; when two set the same thing, the last one
// wins. A nil Option is ignored, and each function ignores the options
// that do not concern it (NewTracing ignores WithMeterProvider).
type Option func(*config)

// config holds what the options set.
type config struct {
	meterProvider  metric.MeterProvider
	tracerProvider trace.TracerProvider
}

func newConfig(opts []Option) config {
	var c config
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

// WithTracerProvider makes NewTracing start its spans with tp. A nil tp
// means the global provider.
//
// Default: the global TracerProvider, otel.GetTracerProvider(), read when
// NewTracing is called (a global provider set later still gets the spans,
// as otel's global delegates to it).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) {
		c.tracerProvider = tp
	}
}

// nameKey is the attribute that carries the pool's name on every metric and
// span.
const nameKey = "workerpool.name"
