package natsfeedprom_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/e86d9661/workerpool/natsfeed/natsfeedtest"
	"github.com/e86d9661/workerpool/workerpoolprom/natsfeedprom"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// families names the metrics of a Collector and their types.
var families = map[string]dto.MetricType{
	"workerpool_feed_messages_taken_total":       dto.MetricType_COUNTER,
	"workerpool_feed_messages_redelivered_total": dto.MetricType_COUNTER,
	"workerpool_feed_messages_acked_total":       dto.MetricType_COUNTER,
	"workerpool_feed_messages_nacked_total":      dto.MetricType_COUNTER,
	"workerpool_feed_messages_terminated_total":  dto.MetricType_COUNTER,
	"workerpool_feed_messages_unsettled_total":   dto.MetricType_COUNTER,
	"workerpool_feed_in_flight_messages":         dto.MetricType_GAUGE,
	"workerpool_feed_max_in_flight_messages":     dto.MetricType_GAUGE,
}

// scrape GETs /metrics from srv, as a Prometheus server does, and returns
// the value of each series of families by metric name, checking each
// family's type, help and that its one series is labelled feed=feed.
func scrape(t *testing.T, srv *httptest.Server, feed string) map[string]float64 {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	require.NoError(t, err, "GET /metrics")
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "status of GET /metrics")
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	values := map[string]float64{}
	for {
		f := new(dto.MetricFamily)
		if err := dec.Decode(f); err == io.EOF {
			break
		} else {
			require.NoError(t, err, "decode the scrape")
		}
		want, ok := families[f.GetName()]
		require.True(t, ok, "unexpected family %s", f.GetName())
		assert.Equal(t, want, f.GetType(), "type of %s", f.GetName())
		assert.NotEmpty(t, f.GetHelp(), "help of %s", f.GetName())
		require.Len(t, f.GetMetric(), 1, "series of %s", f.GetName())
		m := f.GetMetric()[0]
		require.Len(t, m.GetLabel(), 1, "labels of %s", f.GetName())
		assert.Equal(t, "feed", m.GetLabel()[0].GetName(), "label of %s", f.GetName())
		assert.Equal(t, feed, m.GetLabel()[0].GetValue(), "feed of %s", f.GetName())
		values[f.GetName()] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	assert.Len(t, values, len(families), "families scraped")
	return values
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

// A feed takes 20 jobs from a real server: 4 at a time, held until the
// gate opens; then job 3 fails for good and job 5 fails once. Scraped
// over HTTP while it holds 4 and after it returned, the Collector shows
// its counts, and the final ones add up.
func TestCollectorScrapedOverHTTP(t *testing.T) {
	_, cons := natsfeedtest.Jobs(t, 20)
	stats := new(natsfeed.Stats)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(natsfeedprom.NewCollector(stats, "workers")), "register")
	srv := serve(t, reg)

	pool := workerpool.New(4)
	defer pool.StopWait()
	gate := make(chan struct{})
	handle := func(ctx context.Context, msg jetstream.Msg) error {
		<-gate
		md, err := msg.Metadata()
		if err != nil {
			return err
		}
		switch job, _ := strconv.Atoi(string(msg.Data())); {
		case job == 3:
			return workerpool.Permanent(errors.New("job 3: malformed"))
		case job == 5 && md.NumDelivered == 1:
			return errors.New("job 5: not yet")
		}
		return nil
	}
	soon := func(int, error) (time.Duration, bool) { return time.Millisecond, true }
	stop := natsfeedtest.Run(t, func(ctx context.Context) error {
		return natsfeed.Feed(ctx, pool, cons, handle,
			natsfeed.WithStats(stats), natsfeed.WithMaxInFlight(4), natsfeed.WithBackoff(soon))
	})

	require.Eventually(t, func() bool { return stats.Counts().InFlight == 4 }, time.Minute, time.Millisecond, "the feed holds 4")
	held := scrape(t, srv, "workers")
	assert.Equal(t, 4.0, held["workerpool_feed_in_flight_messages"], "in flight while held")
	assert.Equal(t, 4.0, held["workerpool_feed_max_in_flight_messages"], "max in flight while held")
	assert.Equal(t, 4.0, held["workerpool_feed_messages_taken_total"], "taken while held")
	assert.Equal(t, 0.0, held["workerpool_feed_messages_acked_total"], "acked while held")

	close(gate)
	require.Eventually(t, func() bool {
		c := stats.Counts()
		return c.Acked == 19 && c.Terminated == 1
	}, time.Minute, time.Millisecond, "19 jobs acked and one terminated")
	require.NoError(t, stop(), "Feed")

	c := stats.Counts()
	final := scrape(t, srv, "workers")
	assert.Equal(t, map[string]float64{
		"workerpool_feed_messages_taken_total":       21,
		"workerpool_feed_messages_redelivered_total": 1,
		"workerpool_feed_messages_acked_total":       19,
		"workerpool_feed_messages_nacked_total":      1,
		"workerpool_feed_messages_terminated_total":  1,
		"workerpool_feed_messages_unsettled_total":   0,
		"workerpool_feed_in_flight_messages":         0,
		"workerpool_feed_max_in_flight_messages":     4,
	}, final, "after Feed returned")
	assert.Equal(t, natsfeed.Counts{Taken: 21, Redelivered: 1, Acked: 19, Nacked: 1, Terminated: 1, MaxInFlight: 4}, c,
		"Counts, which the scrape shows")
}

// CollectAndLint checks the names, help and types against Prometheus's
// naming rules (the linter promtool check metrics runs).
func TestCollectorLintsClean(t *testing.T) {
	problems, err := testutil.CollectAndLint(natsfeedprom.NewCollector(new(natsfeed.Stats), "lint"))
	require.NoError(t, err, "CollectAndLint")
	assert.Empty(t, problems, "lint problems")
}

// Two Stats with different names share a registry, each with its own
// series; a second Collector with a name already registered is refused.
func TestCollectorTwoFeedsInOneRegistry(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(natsfeedprom.NewCollector(new(natsfeed.Stats), "a")), "register a")
	require.NoError(t, reg.Register(natsfeedprom.NewCollector(new(natsfeed.Stats), "b")), "register b")
	var already prometheus.AlreadyRegisteredError
	assert.ErrorAs(t, reg.Register(natsfeedprom.NewCollector(new(natsfeed.Stats), "a")), &already, "a second a")

	gathered, err := reg.Gather()
	require.NoError(t, err, "Gather")
	assert.Len(t, gathered, len(families), "families")
	for _, f := range gathered {
		var feeds []string
		for _, m := range f.GetMetric() {
			feeds = append(feeds, m.GetLabel()[0].GetValue())
		}
		assert.Equal(t, []string{"a", "b"}, feeds, "series of %s", f.GetName())
	}
}

// A name that is not valid UTF-8 makes registration fail, as a pool name
// does in workerpoolprom, rather than a scrape.
func TestCollectorRefusesANameNotUTF8(t *testing.T) {
	err := prometheus.NewRegistry().Register(natsfeedprom.NewCollector(new(natsfeed.Stats), "bad\xff"))
	assert.ErrorContains(t, err, "valid UTF-8", "register")
}

func TestNewCollectorPanicsOnANilStats(t *testing.T) {
	assert.PanicsWithValue(t, "natsfeedprom: NewCollector called with a nil Stats", func() {
		natsfeedprom.NewCollector(nil, "nil")
	}, "NewCollector(nil)")
}
