package workerpoolprom_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/workerpoolprom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// protoAccept is the Accept header with which Prometheus asks for
// protobuf, the format that carries native histograms.
const protoAccept = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"

// scrapeServer runs 10 tasks, 2 of them failing and 1 panicking, on a pool
// named "scrape" with both collectors, stops it, and serves its registry
// on /metrics.
func scrapeServer(t *testing.T) *httptest.Server {
	t.Helper()
	h := workerpoolprom.NewHistograms("scrape")
	p := workerpool.New(2,
		workerpool.WithName("scrape"),
		workerpool.WithHooks(h.Hooks()),
		workerpool.WithPanicHandler(func(any) {}),
	)
	defer p.Stop()
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(workerpoolprom.NewCollector(p)), "register Collector")
	require.NoError(t, reg.Register(h), "register Histograms")
	for i := range 10 {
		switch i {
		case 3, 6:
			p.Go(t.Context(), func(context.Context) error { return errors.New("fails") })
		case 9:
			p.Submit(func() { panic("boom") })
		default:
			p.Submit(func() {})
		}
	}
	p.StopWait()

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// scrape GETs /metrics from srv with accept as Accept header, checks the
// response's format, and decodes it.
func scrape(t *testing.T, srv *httptest.Server, accept string, want expfmt.FormatType) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/metrics", nil)
	require.NoError(t, err, "NewRequest")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err, "GET /metrics")
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "status of GET /metrics")
	format := expfmt.ResponseFormat(resp.Header)
	require.Equal(t, want, format.FormatType(), "format of %s", resp.Header.Get("Content-Type"))

	families := map[string]*dto.MetricFamily{}
	dec := expfmt.NewDecoder(resp.Body, format)
	for {
		f := new(dto.MetricFamily)
		err := dec.Decode(f)
		if err == io.EOF {
			return families
		}
		require.NoError(t, err, "decode")
		families[f.GetName()] = f
	}
}

// A plain GET, as curl does, gets the text format: counters, gauges and
// the classic histograms, labelled with the pool.
func TestScrapeTextOverHTTP(t *testing.T) {
	families := scrape(t, scrapeServer(t), "", expfmt.TypeTextPlain)
	require.Len(t, families, len(counterNames)+len(gaugeNames)+2, "metric families")
	for name, f := range families {
		require.Len(t, f.GetMetric(), 1, "series of %s", name)
		assert.Equal(t, "scrape", poolOf(f.GetMetric()[0]), "pool label of %s", name)
	}
	value := func(name string) float64 {
		m := families[name].GetMetric()[0]
		return m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	assert.Equal(t, 10.0, value("workerpool_tasks_submitted_total"), "submitted")
	assert.Equal(t, 10.0, value("workerpool_tasks_completed_total"), "completed")
	assert.Equal(t, 1.0, value("workerpool_tasks_panicked_total"), "panicked")
	assert.Equal(t, 2.0, value("workerpool_max_workers"), "max workers")
	assert.Equal(t, 0.0, value("workerpool_workers"), "workers after StopWait")
	for _, name := range []string{"workerpool_task_wait_seconds", "workerpool_task_run_seconds"} {
		require.Equal(t, dto.MetricType_HISTOGRAM, families[name].GetType(), "type of %s", name)
		hist := families[name].GetMetric()[0].GetHistogram()
		assert.Equal(t, uint64(10), hist.GetSampleCount(), "count of %s", name)
		assert.Len(t, hist.GetBucket(), 13, "classic buckets of %s, +Inf included in text", name)
		assert.Equal(t, int32(0), hist.GetSchema(), "text carries no native schema for %s", name)
		assert.Empty(t, hist.GetPositiveSpan(), "text carries no native spans for %s", name)
	}
}

// A scrape in protobuf, as Prometheus makes with native histograms
// enabled, gets both the classic and the native buckets of each histogram.
func TestScrapeProtobufCarriesNativeHistograms(t *testing.T) {
	families := scrape(t, scrapeServer(t), protoAccept, expfmt.TypeProtoDelim)
	assert.Equal(t, 10.0, families["workerpool_tasks_completed_total"].GetMetric()[0].GetCounter().GetValue(), "completed")
	for _, name := range []string{"workerpool_task_wait_seconds", "workerpool_task_run_seconds"} {
		require.Contains(t, families, name, "metric families")
		m := families[name].GetMetric()[0]
		assert.Equal(t, "scrape", poolOf(m), "pool label of %s", name)
		hist := m.GetHistogram()
		assert.Equal(t, uint64(10), hist.GetSampleCount(), "count of %s", name)
		assert.Len(t, hist.GetBucket(), 12, "classic buckets of %s, +Inf implied in protobuf", name)

		// Factor 1.1 gives schema 3: 2^(2^-3) ≈ 1.09 per bucket.
		require.NotNil(t, hist.Schema, "native schema of %s", name)
		assert.Equal(t, int32(3), hist.GetSchema(), "native schema of %s", name)
		assert.Equal(t, 2.938735877055719e-39, hist.GetZeroThreshold(), "zero threshold of %s", name)
		// Every observation is in the zero bucket or a positive one: the
		// spans and deltas (absolute counts are running sums of deltas)
		// account for all of them.
		count := hist.GetZeroCount()
		var bucket int64
		spanned := uint32(0)
		for _, s := range hist.GetPositiveSpan() {
			spanned += s.GetLength()
		}
		require.Len(t, hist.GetPositiveDelta(), int(spanned), "deltas of %s", name)
		for _, d := range hist.GetPositiveDelta() {
			bucket += d
			count += uint64(bucket)
		}
		assert.Equal(t, hist.GetSampleCount(), count, "observations in the native buckets of %s", name)
		assert.Empty(t, hist.GetNegativeSpan(), "negative spans of %s", name)
	}
	// The run of a task takes more than 0s on the real clock, so the run
	// histogram has positive spans (a wait can be 0s).
	assert.NotEmpty(t, families["workerpool_task_run_seconds"].GetMetric()[0].GetHistogram().GetPositiveSpan(), "positive spans of the run histogram")
}
