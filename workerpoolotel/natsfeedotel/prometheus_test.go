package natsfeedotel_test

import (
	"context"
	"slices"
	"testing"

	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/e86d9661/workerpool/workerpoolotel/natsfeedotel"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// The OpenTelemetry Prometheus exporter (its default translation; no
// scope labels, no target_info) turns the instruments into the families
// of workerpoolprom/natsfeedprom, by name, type and label.
func TestPrometheusExporterNames(t *testing.T) {
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	require.NoError(t, err, "the exporter")
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer func() { assert.NoError(t, mp.Shutdown(context.Background()), "MeterProvider.Shutdown") }()
	reg, err := natsfeedotel.RegisterStats(new(natsfeed.Stats), "workers", natsfeedotel.WithMeterProvider(mp))
	require.NoError(t, err, "RegisterStats")
	defer func() { assert.NoError(t, reg.Unregister(), "Unregister") }()

	families, err := registry.Gather()
	require.NoError(t, err, "Gather")
	type family struct{ Name, Type, Labels string }
	var got []family
	for _, f := range families {
		var labels []string
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
		}
		slices.Sort(labels)
		got = append(got, family{f.GetName(), f.GetType().String(), labels[0]})
		assert.Len(t, labels, 1, "labels of %s", f.GetName())
	}
	const feed = "feed=workers"
	assert.ElementsMatch(t, []family{
		{"workerpool_feed_messages_taken_total", "COUNTER", feed},
		{"workerpool_feed_messages_redelivered_total", "COUNTER", feed},
		{"workerpool_feed_messages_acked_total", "COUNTER", feed},
		{"workerpool_feed_messages_nacked_total", "COUNTER", feed},
		{"workerpool_feed_messages_terminated_total", "COUNTER", feed},
		{"workerpool_feed_messages_unsettled_total", "COUNTER", feed},
		{"workerpool_feed_in_flight_messages", "GAUGE", feed},
		{"workerpool_feed_max_in_flight_messages", "GAUGE", feed},
	}, got, "the families the exporter makes")
}
