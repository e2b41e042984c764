package natsfeedotel

import (
	"context"
	"errors"
	"fmt"

	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/e86d9661/workerpool/workerpoolotel"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ScopeName is the instrumentation scope name of the meter this package
// makes: its import path. The scope's version is workerpoolotel.Version,
// the version of the module.
const ScopeName = "github.com/e86d9661/workerpool/workerpoolotel/natsfeedotel"

// An Option configures RegisterStats. Options apply in the order given;
// when two set the same thing, the last one wins. A nil Option is
// ignored.
type Option func(*config)

// config holds what the options set.
type config struct {
	meterProvider metric.MeterProvider
}

// WithMeterProvider makes RegisterStats create its instruments with mp. A
// nil mp means the global provider.
//
// Default: the global MeterProvider, otel.GetMeterProvider(), read when
// RegisterStats is called (a global provider set later still receives the
// measurements, as otel's global delegates to it).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) {
		c.meterProvider = mp
	}
}

// An instrument is one field of natsfeed.Counts: its name, its
// description, whether it is a Counter (else a Gauge), and the field's
// value. Reporting a new field of Counts is one more line in instruments.
type instrument struct {
	name, description string
	counter           bool
	value             func(*natsfeed.Counts) int64
}

// The unit of every instrument: a count of messages, which adds no
// suffix to a Prometheus name.
const unit = "{message}"

// The names follow workerpoolotel's (workerpool. and a name that the
// Prometheus exporter turns into natsfeedprom's: workerpool.feed.
// messages_taken into workerpool_feed_messages_taken_total).
var instruments = [...]instrument{
	{"workerpool.feed.messages_taken", "Messages the feed received from the server, redeliveries included.",
		true, func(c *natsfeed.Counts) int64 { return c.Taken }},
	{"workerpool.feed.messages_redelivered", "Messages taken that the server had delivered before (delivery count above 1).",
		true, func(c *natsfeed.Counts) int64 { return c.Redelivered }},
	{"workerpool.feed.messages_acked", "Messages whose handler returned nil and whose acknowledgement the server confirmed.",
		true, func(c *natsfeed.Counts) int64 { return c.Acked }},
	{"workerpool.feed.messages_nacked", "Messages given back for redelivery: the handler failed, panicked or called runtime.Goexit, or the pool refused to run it.",
		true, func(c *natsfeed.Counts) int64 { return c.Nacked }},
	{"workerpool.feed.messages_terminated", "Messages terminated, never to be redelivered: a permanent error, or the backoff policy gave up.",
		true, func(c *natsfeed.Counts) int64 { return c.Terminated }},
	{"workerpool.feed.messages_unsettled", "Messages left to the server's AckWait: acknowledging failed until it ran out, or a nak or term failed; the server redelivers them.",
		true, func(c *natsfeed.Counts) int64 { return c.Unsettled }},
	{"workerpool.feed.in_flight_messages", "Messages received and not settled yet: waiting for a worker, running, or being settled.",
		false, func(c *natsfeed.Counts) int64 { return c.InFlight }},
	{"workerpool.feed.max_in_flight_messages", "The most messages the feed has held in flight at once.",
		false, func(c *natsfeed.Counts) int64 { return c.MaxInFlight }},
}

// RegisterStats creates observable instruments that report
// stats.Counts() (see the package documentation for their names), each
// with the attribute feed set to name, and registers one callback for all
// of them: stats is read once per collection, when the MeterProvider
// collects, and never per message. Use WithMeterProvider to choose the
// provider.
//
// It never blocks. The callback goes on reporting after the feeds have
// returned (their final counts) until the returned Registration's
// Unregister is called, and until then the MeterProvider keeps stats
// reachable: call Unregister when stats is no longer needed. Register
// each Stats once, under a name of its own: two of the same name report
// the same series, which the SDK cannot tell apart.
//
// It returns an error, and registers nothing, if the meter refuses an
// instrument or the callback. RegisterStats panics if stats is nil. Safe
// for concurrent use.
func RegisterStats(stats *natsfeed.Stats, name string, opts ...Option) (metric.Registration, error) {
	if stats == nil {
		panic("natsfeedotel: RegisterStats called with a nil Stats")
	}
	var c config
	for _, opt := range opts {
		if opt != nil {
			opt(&c)
		}
	}
	if c.meterProvider == nil {
		c.meterProvider = otel.GetMeterProvider()
	}
	meter := c.meterProvider.Meter(ScopeName, metric.WithInstrumentationVersion(workerpoolotel.Version))

	observables := make([]metric.Observable, len(instruments))
	var errs []error
	for i, in := range instruments {
		var err error
		if in.counter {
			observables[i], err = meter.Int64ObservableCounter(in.name, metric.WithUnit(unit), metric.WithDescription(in.description))
		} else {
			observables[i], err = meter.Int64ObservableGauge(in.name, metric.WithUnit(unit), metric.WithDescription(in.description))
		}
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("natsfeedotel: RegisterStats: %w", err)
	}
	attrs := metric.WithAttributeSet(attribute.NewSet(attribute.String("feed", name)))
	reg, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		counts := stats.Counts()
		for i, in := range instruments {
			o.ObserveInt64(observables[i].(metric.Int64Observable), in.value(&counts), attrs)
		}
		return nil
	}, observables...)
	if err != nil {
		return nil, fmt.Errorf("natsfeedotel: RegisterStats: %w", err)
	}
	return reg, nil
}
