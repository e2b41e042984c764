package workerpoolprom_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

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

// gatherHistograms returns the one metric of each family that c
// collects, by family name.
func gatherHistograms(t *testing.T, c prometheus.Collector) map[string]*dto.Metric {
	t.Helper()
	families, err := registryOf(t, c).Gather()
	require.NoError(t, err, "Gather")
	out := map[string]*dto.Metric{}
	for _, f := range families {
		require.Len(t, f.GetMetric(), 1, "series of %s", f.GetName())
		out[f.GetName()] = f.GetMetric()[0]
	}
	return out
}

// histogramCount returns the number of observations in the histogram name
// that c collects.
func histogramCount(t *testing.T, c prometheus.Collector, name string) uint64 {
	t.Helper()
	m, ok := gatherHistograms(t, c)[name]
	require.True(t, ok, "%s collected", name)
	return m.GetHistogram().GetSampleCount()
}
