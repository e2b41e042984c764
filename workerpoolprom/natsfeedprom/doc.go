// Package natsfeedprom exports the counts of a [natsfeed.Stats] to
// Prometheus, through github.com/prometheus/client_golang: what the feeds
// counting in it took from a NATS JetStream consumer and how they settled
// it. It is a package of its own so that a program that imports
// workerpoolprom without natsfeed does not compile nats.go.
//
// # Metrics
//
// [Collector] reads [natsfeed.Stats.Counts] once per scrape and costs
// nothing per message. Every series has the label feed, the name given to
// [NewCollector]: name it as the feed names its tasks, the consumer's name
// (or the Label given with natsfeed.WithTaskOption), so that a dashboard
// can put a feed next to the task label of its runs in workerpoolprom's
// histograms. The names follow workerpoolprom's (the prefix workerpool_,
// then what is counted, in the plural; _total on counters), and the
// instruments of workerpoolotel's natsfeedotel turn into the same series
// through the OpenTelemetry Prometheus exporter:
//
//	metric                                       type     Counts field
//	workerpool_feed_messages_taken_total         counter  Taken: received from the server, redeliveries included
//	workerpool_feed_messages_redelivered_total   counter  Redelivered: of those taken, delivered before
//	workerpool_feed_messages_acked_total         counter  Acked: handled, acknowledgement confirmed by the server
//	workerpool_feed_messages_nacked_total        counter  Nacked: given back for redelivery
//	workerpool_feed_messages_terminated_total    counter  Terminated: never to be redelivered
//	workerpool_feed_messages_unsettled_total     counter  Unsettled: settling failed, the server redelivers it
//	workerpool_feed_in_flight_messages           gauge    InFlight: received and not settled yet
//	workerpool_feed_max_in_flight_messages       gauge    MaxInFlight: the highest InFlight has been
//
// Once every feed counting in the Stats has returned, taken equals acked
// + nacked + terminated + unsettled, and in flight is 0; while they run,
// in flight makes up the difference (give or take the counts read a
// moment apart). So the rate of taken minus the rates of the four
// outcomes is how fast in flight grows, and
// workerpool_feed_max_in_flight_messages, compared with the feed's bound
// (natsfeed.WithMaxInFlight), tells whether the bound was ever reached.
//
// # Usage
//
//	stats := new(natsfeed.Stats)
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(natsfeedprom.NewCollector(stats, "workers"))
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//	err := natsfeed.Feed(ctx, pool, cons, handle, natsfeed.WithStats(stats))
//
// One Collector per Stats: several feeds that share a Stats share its
// series. The workerpoolprom module's dashboard.json has two panels of
// these metrics, Feed messages and Feed in flight, with a variable feed.
package natsfeedprom
