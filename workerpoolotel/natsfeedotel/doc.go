// Package natsfeedotel reports the counts of a [natsfeed.Stats] to
// OpenTelemetry: what the feeds counting in it took from a NATS JetStream
// consumer and how they settled it. It is a package of its own so that a
// program that imports workerpoolotel without natsfeed does not compile
// nats.go.
//
// [RegisterStats] creates observable instruments, a Counter for each count
// of messages and a Gauge for each of InFlight and MaxInFlight, and
// registers one callback for them all, which reads
// [natsfeed.Stats.Counts] once per collection: nothing per message.
//
// # Instruments
//
// The names follow workerpoolotel's, so that the OpenTelemetry Prometheus
// exporter (with its default translation) exports them under the names
// and label of workerpoolprom/natsfeedprom's metrics: dots become
// underscores, a Counter gets _total, and a unit in braces adds nothing.
//
//	instrument                             kind                unit       Prometheus name                             from Counts
//	workerpool.feed.messages_taken         observable Counter  {message}  workerpool_feed_messages_taken_total        Taken: received from the server, redeliveries included
//	workerpool.feed.messages_redelivered   observable Counter  {message}  workerpool_feed_messages_redelivered_total  Redelivered: of those taken, delivered before
//	workerpool.feed.messages_acked         observable Counter  {message}  workerpool_feed_messages_acked_total        Acked: handled, acknowledgement confirmed by the server
//	workerpool.feed.messages_nacked        observable Counter  {message}  workerpool_feed_messages_nacked_total       Nacked: given back for redelivery
//	workerpool.feed.messages_terminated    observable Counter  {message}  workerpool_feed_messages_terminated_total   Terminated: never to be redelivered
//	workerpool.feed.messages_unsettled     observable Counter  {message}  workerpool_feed_messages_unsettled_total    Unsettled: settling failed, the server redelivers it
//	workerpool.feed.in_flight_messages     observable Gauge    {message}  workerpool_feed_in_flight_messages          InFlight: received and not settled yet
//	workerpool.feed.max_in_flight_messages observable Gauge    {message}  workerpool_feed_max_in_flight_messages      MaxInFlight: the highest InFlight has been
//
// Each data point has one attribute, feed: the name given to
// RegisterStats. Name it as the feed names its tasks, the consumer's name
// (or the Label given with natsfeed.WithTaskOption), which
// workerpoolotel's spans and histograms show as the task's label. The meter is named [ScopeName], with
// workerpoolotel's Version.
//
// # Usage
//
//	stats := new(natsfeed.Stats)
//	reg, err := natsfeedotel.RegisterStats(stats, "workers")
//	if err != nil {
//		return err
//	}
//	defer reg.Unregister()
//	err = natsfeed.Feed(ctx, pool, cons, handle, natsfeed.WithStats(stats))
package natsfeedotel
