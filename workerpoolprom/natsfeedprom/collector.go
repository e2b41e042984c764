package natsfeedprom

import (
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/prometheus/client_golang/prometheus"
)

// A Collector is a prometheus.Collector that exports the counts of a
// [natsfeed.Stats]: a counter for each count of messages and a gauge for
// each of InFlight and MaxInFlight, all with the const label feed set to
// the name given to NewCollector. It calls
// Stats.Counts once per scrape, when the registry calls Collect, and
// costs nothing per message. It is safe for concurrent use: a registry
// may collect it for several scrapes at once.
//
// A Collector holds no goroutine and needs no cleanup. It keeps exporting
// the last counts after the feeds have returned; Unregister it when the
// Stats is dropped, or keep it to show the final counts.
type Collector struct {
	stats *natsfeed.Stats
	descs [len(specs)]*prometheus.Desc // one per spec, labelled feed=name
}

// A spec describes one metric: its name, its help text (Counts's comment
// on the field), counter or gauge, and the field's value. Exporting a new
// field of Counts is one more line here.
type spec struct {
	name, help string
	kind       prometheus.ValueType
	value      func(*natsfeed.Counts) int64
}

var specs = [...]spec{
	{"workerpool_feed_messages_taken_total", "Messages the feed received from the server, redeliveries included.",
		prometheus.CounterValue, func(c *natsfeed.Counts) int64 { return c.Taken }},
	{"workerpool_feed_messages_redelivered_total", "Messages taken that the server had delivered before (delivery count above 1).",
		prometheus.CounterValue, func(c *natsfeed.Counts) int64 { return c.Redelivered }},
	{"workerpool_feed_messages_acked_total", "Messages whose handler returned nil and whose acknowledgement the server confirmed.",
		prometheus.CounterValue, func(c *natsfeed.Counts) int64 { return c.Acked }},
	{"workerpool_feed_messages_nacked_total", "Messages given back for redelivery: the handler failed, panicked or called runtime.Goexit, or the pool refused to run it.",
		prometheus.CounterValue, func(c *natsfeed.Counts) int64 { return c.Nacked }},
	{"workerpool_feed_messages_terminated_total", "Messages terminated, never to be redelivered: a permanent error, or the backoff policy gave up.",
		prometheus.CounterValue, func(c *natsfeed.Counts) int64 { return c.Terminated }},
	{"workerpool_feed_messages_unsettled_total", "Messages left to the server's AckWait: acknowledging failed until it ran out, or a nak or term failed; the server redelivers them.",
		prometheus.CounterValue, func(c *natsfeed.Counts) int64 { return c.Unsettled }},
	{"workerpool_feed_in_flight_messages", "Messages received and not settled yet: waiting for a worker, running, or being settled.",
		prometheus.GaugeValue, func(c *natsfeed.Counts) int64 { return c.InFlight }},
	{"workerpool_feed_max_in_flight_messages", "The most messages the feed has held in flight at once.",
		prometheus.GaugeValue, func(c *natsfeed.Counts) int64 { return c.MaxInFlight }},
}

// NewCollector returns a Collector for stats, labelled feed=name. Name it
// as the feed names its tasks: the consumer's name, or the Label given
// with natsfeed.WithTaskOption.
// Register it in a registry of your own ([prometheus.NewRegistry]); two
// Collectors can share a registry only if their names differ: registering
// a second Collector with a name already registered fails with a
// [prometheus.AlreadyRegisteredError]. A name that is not valid UTF-8
// makes registration fail too. The empty name is valid, and Prometheus
// shows it as no label feed.
//
// NewCollector panics if stats is nil.
func NewCollector(stats *natsfeed.Stats, name string) *Collector {
	if stats == nil {
		panic("natsfeedprom: NewCollector called with a nil Stats")
	}
	c := &Collector{stats: stats}
	labels := prometheus.Labels{"feed": name}
	for i, s := range specs {
		c.descs[i] = prometheus.NewDesc(s.name, s.help, nil, labels)
	}
	return c
}

// Describe sends the description of each metric to ch. It
// implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect reads the Stats's counts once and sends each metric to ch. It never blocks on a feed, also once they have returned. It
// implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	counts := c.stats.Counts()
	for i, s := range specs {
		m, err := prometheus.NewConstMetric(c.descs[i], s.kind, float64(s.value(&counts)))
		if err != nil { // a name that is not valid UTF-8: fail the scrape, do not panic
			m = prometheus.NewInvalidMetric(c.descs[i], err)
		}
		ch <- m
	}
}
