package workerpoolprom_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

// noop is a task that does nothing.
func noop(context.Context) error { return nil }

// registryOf returns a pedantic registry (it checks every metric against
// its description) holding cs.
func registryOf(t *testing.T, cs ...prometheus.Collector) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range cs {
		require.NoError(t, reg.Register(c), "register")
	}
	return reg
}

// samples gathers g and returns the value of each counter and gauge by
// metric name and pool label, as samples[name][pool].
func samples(g prometheus.Gatherer) (map[string]map[string]float64, error) {
	families, err := g.Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]float64{}
	for _, f := range families {
		byPool := map[string]float64{}
		for _, m := range f.GetMetric() {
			byPool[poolOf(m)] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
		out[f.GetName()] = byPool
	}
	return out, nil
}

// sample returns the value of the counter or gauge name of pool in g.
func sample(t *testing.T, g prometheus.Gatherer, name, pool string) float64 {
	t.Helper()
	s, err := samples(g)
	require.NoError(t, err, "Gather")
	require.Contains(t, s, name, "metric families")
	v, ok := s[name][pool]
	require.True(t, ok, "%s has a series for pool %q", name, pool)
	return v
}

// poolOf returns m's pool label.
func poolOf(m *dto.Metric) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == "pool" {
			return l.GetValue()
		}
	}
	return ""
}

// values gathers c, in a pedantic registry of its own, and returns each
// series of the family name by its labels, written as {a="x",b="y"} in
// the order gathered: a counter's or a gauge's value, a histogram's
// count of observations; nil if c collects no such family.
func values(t *testing.T, c prometheus.Collector, name string) map[string]float64 {
	t.Helper()
	families, err := registryOf(t, c).Gather()
	require.NoError(t, err, "Gather")
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		out := map[string]float64{}
		for _, m := range f.GetMetric() {
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
			out[labelsOf(m)] = v
		}
		return out
	}
	return nil
}

// labelsOf writes m's labels as {a="x",b="y"}.
func labelsOf(m *dto.Metric) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range m.GetLabel() {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", l.GetName(), l.GetValue())
	}
	b.WriteByte('}')
	return b.String()
}

// histogramCount returns the number of observations in the series of the
// histogram name with labels (as labelsOf writes them) that c collects.
func histogramCount(t *testing.T, c prometheus.Collector, name, labels string) uint64 {
	t.Helper()
	v, ok := values(t, c, name)[labels]
	require.True(t, ok, "%s%s collected", name, labels)
	return uint64(v)
}
