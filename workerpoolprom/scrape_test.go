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

// scrapeServer runs 10 tasks, 2 of them failing (labelled "import") and 1
// panicking, on a pool named "scrape" with both collectors, stops it, and
// serves its registry on /metrics.
func scrapeServer(t *testing.T) *httptest.Server {
	t.Helper()
	h := workerpoolprom.NewHistograms()
	p := workerpool.New(2,
		workerpool.WithHooks(h.Hooks("scrape")),
		workerpool.WithHooks(workerpool.Hooks{Panic: func(any) {}}),
	)
	defer p.Stop()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(workerpoolprom.NewCollector(p, "scrape")), "register Collector")
	require.NoError(t, reg.Register(h), "register Histograms")
	for i := range 10 {
		switch i {
		case 3, 6:
			p.Go(t.Context(), func(context.Context) error { return errors.New("fails") }, workerpool.TaskOption{Label: "import"})
		case 9:
			p.Submit(func() { panic("boom") })
		default:
			p.Submit(func() {})
		}
	}
	p.StopWait()
	return serve(t, reg)
}

// serve serves reg on /metrics of a new test server.
func serve(t *testing.T, reg *prometheus.Registry) *httptest.Server {
	t.Helper()
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
// the classic histograms, labelled with the pool, and by task for those of
// the Histograms.
func TestScrapeTextOverHTTP(t *testing.T) {
	families := scrape(t, scrapeServer(t), "", expfmt.TypeTextPlain)
	require.Len(t, families, len(counterNames)+len(gaugeNames)+len(histogramsNames), "metric families")
	for name, f := range families {
		for _, m := range f.GetMetric() {
			assert.Equal(t, "scrape", poolOf(m), "pool label of %s", name)
		}
	}
	value := func(name, labels string) float64 {
		for _, m := range families[name].GetMetric() {
			if labelsOf(m) == labels {
				return m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
			}
		}
		t.Errorf("no series %s%s", name, labels)
		return -1
	}
	const pool = `{pool="scrape"}`
	assert.Equal(t, 10.0, value("workerpool_tasks_submitted_total", pool), "submitted")
	assert.Equal(t, 10.0, value("workerpool_tasks_completed_total", pool), "completed")
	assert.Equal(t, 1.0, value("workerpool_tasks_panicked_total", pool), "panicked")
	assert.Equal(t, 2.0, value("workerpool_max_workers", pool), "max workers")
	assert.Equal(t, 0.0, value("workerpool_workers", pool), "workers after StopWait")
	assert.Equal(t, 0.0, value("workerpool_unfinished_work_seconds", pool), "unfinished work after StopWait")
	assert.Equal(t, 0.0, value("workerpool_longest_running_processor_seconds", pool), "longest run after StopWait")
	assert.Equal(t, 2.0, value("workerpool_task_failures_total", `{outcome="error",pool="scrape",task="import"}`), "errors of import")
	assert.Equal(t, 0.0, value("workerpool_task_failures_total", `{outcome="panic",pool="scrape",task="import"}`), "panics of import")
	assert.Equal(t, 0.0, value("workerpool_task_failures_total", `{outcome="error",pool="scrape",task="none"}`), "errors of none")
	assert.Equal(t, 1.0, value("workerpool_task_failures_total", `{outcome="panic",pool="scrape",task="none"}`), "panics of none")
	assert.Equal(t, 0.0, value("workerpool_task_reruns_total", `{pool="scrape",task="import"}`), "reruns of import")
	for _, name := range []string{"workerpool_task_wait_seconds", "workerpool_task_run_seconds"} {
		require.Equal(t, dto.MetricType_HISTOGRAM, families[name].GetType(), "type of %s", name)
		assert.Equal(t, 2.0, value(name, `{pool="scrape",task="import"}`), "count of %s for import", name)
		assert.Equal(t, 8.0, value(name, `{pool="scrape",task="none"}`), "count of %s for none", name)
		for _, m := range families[name].GetMetric() {
			hist := m.GetHistogram()
			assert.Len(t, hist.GetBucket(), 13, "classic buckets of %s, +Inf included in text", name)
			assert.Equal(t, int32(0), hist.GetSchema(), "text carries no native schema for %s", name)
			assert.Empty(t, hist.GetPositiveSpan(), "text carries no native spans for %s", name)
		}
	}
}

// A run in flight shows in the stuck-work gauges of a real scrape, and
// no longer once it has ended.
func TestScrapeShowsStuckWork(t *testing.T) {
	h := workerpoolprom.NewHistograms()
	p := workerpool.New(2, workerpool.WithHooks(h.Hooks("stuck")))
	defer p.Stop()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(h), "register Histograms")
	srv := serve(t, reg)
	release := make(chan struct{})
	started := make(chan struct{})
	p.Submit(func() {
		close(started)
		<-release
	})
	<-started
	gauge := func(name string) float64 {
		f := scrape(t, srv, "", expfmt.TypeTextPlain)[name]
		require.NotNil(t, f, "family %s", name)
		require.Len(t, f.GetMetric(), 1, "series of %s", name)
		return f.GetMetric()[0].GetGauge().GetValue()
	}
	assert.Positive(t, gauge("workerpool_unfinished_work_seconds"), "unfinished work while a run is in flight")
	assert.Positive(t, gauge("workerpool_longest_running_processor_seconds"), "longest run while a run is in flight")
	close(release)
	p.StopWait()
	assert.Zero(t, gauge("workerpool_unfinished_work_seconds"), "unfinished work after StopWait")
	assert.Zero(t, gauge("workerpool_longest_running_processor_seconds"), "longest run after StopWait")
}

// A scrape in protobuf, as Prometheus makes with native histograms
// enabled, gets both the classic and the native buckets of each histogram.
func TestScrapeProtobufCarriesNativeHistograms(t *testing.T) {
	families := scrape(t, scrapeServer(t), protoAccept, expfmt.TypeProtoDelim)
	assert.Equal(t, 10.0, families["workerpool_tasks_completed_total"].GetMetric()[0].GetCounter().GetValue(), "completed")
	for _, name := range []string{"workerpool_task_wait_seconds", "workerpool_task_run_seconds"} {
		require.Contains(t, families, name, "metric families")
		require.Len(t, families[name].GetMetric(), 2, "series of %s: tasks import and none", name)
		observed := uint64(0)
		for _, m := range families[name].GetMetric() {
			assert.Equal(t, "scrape", poolOf(m), "pool label of %s", name)
			hist := m.GetHistogram()
			observed += hist.GetSampleCount()
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
		assert.Equal(t, uint64(10), observed, "count of %s", name)
	}
	// The run of a task takes more than 0s on the real clock, so the run
	// histogram has positive spans (a wait can be 0s).
	for _, m := range families["workerpool_task_run_seconds"].GetMetric() {
		assert.NotEmpty(t, m.GetHistogram().GetPositiveSpan(), "positive spans of the run histogram%s", labelsOf(m))
	}
}

// A real scrape of two pools, in text and in protobuf: the one made with
// WithAdaptiveSize has one series of workerpool_size_reason, reason
// "start" (it has made no decision: it has run nothing), and the one
// without has none; workerpool_max_workers is the size each started at.
// A scrape of the pool without the option alone has no such family.
func TestScrapeShowsSizeReason(t *testing.T) {
	adaptive := workerpool.New(3, workerpool.WithAdaptiveSize(1, 8))
	defer adaptive.Stop()
	fixed := workerpool.New(2)
	defer fixed.Stop()
	both := serve(t, registryOf(t, workerpoolprom.NewCollector(adaptive, "adaptive"), workerpoolprom.NewCollector(fixed, "fixed")))
	alone := serve(t, registryOf(t, workerpoolprom.NewCollector(fixed, "fixed")))
	for _, f := range []struct {
		accept string
		format expfmt.FormatType
	}{{"", expfmt.TypeTextPlain}, {protoAccept, expfmt.TypeProtoDelim}} {
		families := scrape(t, both, f.accept, f.format)
		require.Contains(t, families, reasonName, "metric families scraped in %s", f.format)
		reason := families[reasonName]
		assert.Equal(t, dto.MetricType_GAUGE, reason.GetType(), "type of %s in %s", reasonName, f.format)
		require.Len(t, reason.GetMetric(), 1, "series of %s in %s: the adaptive pool's only", reasonName, f.format)
		m := reason.GetMetric()[0]
		assert.Equal(t, `{pool="adaptive",reason="start"}`, labelsOf(m), "labels of %s in %s", reasonName, f.format)
		assert.Equal(t, 1.0, m.GetGauge().GetValue(), "value of %s in %s", reasonName, f.format)
		sizes := map[string]float64{}
		for _, m := range families["workerpool_max_workers"].GetMetric() {
			sizes[poolOf(m)] = m.GetGauge().GetValue()
		}
		assert.Equal(t, map[string]float64{"adaptive": 3, "fixed": 2}, sizes, "workerpool_max_workers in %s", f.format)

		families = scrape(t, alone, f.accept, f.format)
		assert.Contains(t, families, "workerpool_max_workers", "metric families of the pool without WithAdaptiveSize, in %s", f.format)
		assert.NotContains(t, families, reasonName, "metric families of the pool without WithAdaptiveSize, in %s", f.format)
	}
}
