package natsfeedotel_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/e86d9661/workerpool/natsfeed/natsfeedtest"
	"github.com/e86d9661/workerpool/workerpoolotel"
	"github.com/e86d9661/workerpool/workerpoolotel/natsfeedotel"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// counters and gauges name the instruments of RegisterStats.
var (
	counters = []string{
		"workerpool.feed.messages_taken",
		"workerpool.feed.messages_redelivered",
		"workerpool.feed.messages_acked",
		"workerpool.feed.messages_nacked",
		"workerpool.feed.messages_terminated",
		"workerpool.feed.messages_unsettled",
	}
	gauges = []string{
		"workerpool.feed.in_flight_messages",
		"workerpool.feed.max_in_flight_messages",
	}
)

// newMetered returns a MeterProvider whose every instrument reader reads.
func newMetered(t *testing.T) (*sdkmetric.MeterProvider, *sdkmetric.ManualReader) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { assert.NoError(t, mp.Shutdown(context.Background()), "MeterProvider.Shutdown") })
	return mp, reader
}

// collect collects from reader and returns the value of each instrument
// by feed attribute and name, as values[feed][name]. It checks the scope,
// each instrument's unit, description and kind (a cumulative monotonic
// Sum for a counter, a Gauge otherwise), and that each data point has the
// attribute feed and no other.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(t.Context(), &rm), "Collect")
	values := map[string]map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, natsfeedotel.ScopeName, sm.Scope.Name, "scope name")
		assert.Equal(t, workerpoolotel.Version, sm.Scope.Version, "scope version")
		for _, m := range sm.Metrics {
			assert.Equal(t, "{message}", m.Unit, "unit of %s", m.Name)
			assert.NotEmpty(t, m.Description, "description of %s", m.Name)
			var points []metricdata.DataPoint[int64]
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				assert.Contains(t, counters, m.Name, "%s is a counter", m.Name)
				assert.True(t, data.IsMonotonic, "%s is monotonic", m.Name)
				assert.Equal(t, metricdata.CumulativeTemporality, data.Temporality, "temporality of %s", m.Name)
				points = data.DataPoints
			case metricdata.Gauge[int64]:
				assert.Contains(t, gauges, m.Name, "%s is a gauge", m.Name)
				points = data.DataPoints
			default:
				t.Fatalf("%s is a %T", m.Name, m.Data)
			}
			for _, p := range points {
				require.Equal(t, 1, p.Attributes.Len(), "attributes of %s: %v", m.Name, p.Attributes)
				feed, ok := p.Attributes.Value("feed")
				require.True(t, ok, "%s has the attribute feed", m.Name)
				require.Equal(t, attribute.STRING, feed.Type(), "type of feed")
				if values[feed.AsString()] == nil {
					values[feed.AsString()] = map[string]int64{}
				}
				values[feed.AsString()][m.Name] = p.Value
			}
		}
	}
	return values
}

// A feed takes 20 jobs from a real server: 4 at a time, held until the
// gate opens; then job 3 fails for good and job 5 fails once. Collected
// while it holds 4 and after it returned, the instruments report its
// counts, and the final ones add up.
func TestRegisterStatsReportsAFeed(t *testing.T) {
	_, cons := natsfeedtest.Jobs(t, 20)
	mp, reader := newMetered(t)
	stats := new(natsfeed.Stats)
	reg, err := natsfeedotel.RegisterStats(stats, "workers", natsfeedotel.WithMeterProvider(mp))
	require.NoError(t, err, "RegisterStats")
	defer func() { assert.NoError(t, reg.Unregister(), "Unregister") }()

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
	held := collect(t, reader)["workers"]
	require.Len(t, held, len(counters)+len(gauges), "instruments while held")
	assert.Equal(t, int64(4), held["workerpool.feed.in_flight_messages"], "in flight while held")
	assert.Equal(t, int64(4), held["workerpool.feed.max_in_flight_messages"], "max in flight while held")
	assert.Equal(t, int64(4), held["workerpool.feed.messages_taken"], "taken while held")
	assert.Equal(t, int64(0), held["workerpool.feed.messages_acked"], "acked while held")

	close(gate)
	require.Eventually(t, func() bool {
		c := stats.Counts()
		return c.Acked == 19 && c.Terminated == 1
	}, time.Minute, time.Millisecond, "19 jobs acked and one terminated")
	require.NoError(t, stop(), "Feed")

	assert.Equal(t, map[string]map[string]int64{"workers": {
		"workerpool.feed.messages_taken":         21,
		"workerpool.feed.messages_redelivered":   1,
		"workerpool.feed.messages_acked":         19,
		"workerpool.feed.messages_nacked":        1,
		"workerpool.feed.messages_terminated":    1,
		"workerpool.feed.messages_unsettled":     0,
		"workerpool.feed.in_flight_messages":     0,
		"workerpool.feed.max_in_flight_messages": 4,
	}}, collect(t, reader), "after Feed returned")
	assert.Equal(t, natsfeed.Counts{Taken: 21, Redelivered: 1, Acked: 19, Nacked: 1, Terminated: 1, MaxInFlight: 4}, stats.Counts(),
		"Counts, which the instruments report")
}

// Two Stats registered under different names report apart; once one is
// unregistered, only the other reports.
func TestRegisterStatsTwoFeedsAndUnregister(t *testing.T) {
	mp, reader := newMetered(t)
	a, b := new(natsfeed.Stats), new(natsfeed.Stats)
	regA, err := natsfeedotel.RegisterStats(a, "a", natsfeedotel.WithMeterProvider(mp))
	require.NoError(t, err, "RegisterStats a")
	regB, err := natsfeedotel.RegisterStats(b, "b", nil, natsfeedotel.WithMeterProvider(mp))
	require.NoError(t, err, "RegisterStats b, with a nil Option")
	defer func() { assert.NoError(t, regB.Unregister(), "Unregister b") }()

	both := collect(t, reader)
	assert.Len(t, both, 2, "feeds reported")
	assert.Len(t, both["a"], len(counters)+len(gauges), "instruments of a")
	assert.Len(t, both["b"], len(counters)+len(gauges), "instruments of b")

	require.NoError(t, regA.Unregister(), "Unregister a")
	after := collect(t, reader)
	assert.NotContains(t, after, "a", "a after its Unregister")
	assert.Len(t, after["b"], len(counters)+len(gauges), "instruments of b after a's Unregister")
}

func TestRegisterStatsPanicsOnANilStats(t *testing.T) {
	assert.PanicsWithValue(t, "natsfeedotel: RegisterStats called with a nil Stats", func() {
		natsfeedotel.RegisterStats(nil, "nil")
	}, "RegisterStats(nil)")
}
