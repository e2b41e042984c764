// Package natsfeed feeds a [workerpool.WorkerPool] from a NATS JetStream
// consumer, so that the same program run in many processes, on many
// machines, shares one stream of work: each message is handled at least
// once, none is lost when a process or the server dies, and each process
// holds no more unsettled messages than its bound.
//
// [Feed] pulls with Fetch, never holding more messages than its bound
// (never Consume, which prefetches hundreds), runs the [Handler] on the
// pool, and settles each message by the handler's result: nil
// acknowledges it (confirmed by the server, off the worker), an error naks
// it with a backoff delay by its delivery count, an error marked with
// [workerpool.Permanent] terminates it, and a panic naks it and is
// reported to the feed's error handler, never crashing the program. The
// bound ([WithMaxInFlight], by default 2 to 8 times the pool's size, as
// the round trip to the server and the handlers' time ask) counts every
// message from the pull request that asks for it to its settlement, so it
// is exact: it is what the server counts pending for the process, and a
// cluster holds at most the sum of its processes' bounds. One margin: an
// acknowledgement is confirmed by the server before its place is given
// back, but a nak or a term is only sent (nats.go's jetstream API has no
// confirmed nak or term), so the server's count can pass the bound by the
// naks and terms it has received and not yet processed, for the moment it
// takes to process them. And the server counts a message nak'd with a
// delay (the backoff after a failure) as pending until it redelivers it,
// though the feed has given its place back: with handlers failing, the
// server's count for the consumer grows past the bounds by the messages
// waiting out their delay, up to the consumer's MaxAckPending (see The
// consumer below). So does a message Feed failed to settle (counted
// Unsettled: an acknowledgement given up after its tries, or a nak or term
// that could not be sent), until its AckWait ends.
//
// # Fetching ahead
//
// Within the bound Feed keeps a pull request out whenever it holds fewer
// messages than the bound, so the messages beyond the running ones wait in
// the pool's queue and a worker that finishes one finds the next there,
// instead of waiting a round trip to the server. The default bound sizes
// itself for that: w × (1 + 2r/t) for w workers, the round trip r it
// measures on the acknowledgements the server confirms and the handlers'
// time t, from twice to eight times the pool's size (twice until both are
// measured); see [WithMaxInFlight]. Messages that wait in the queue when Feed stops (its ctx
// ends, or the pool stops) are given back with a nak of no delay, for the
// server to redeliver without waiting for AckWait, as soon as Feed's last
// pull request has ended (so that it cannot take them back itself). Feed
// keeps at most two pull requests out at once.
//
//	pool := workerpool.New(8)
//	defer pool.StopWait()
//	err := natsfeed.Feed(ctx, pool, cons, func(ctx context.Context, msg jetstream.Msg) error {
//		return resize(ctx, string(msg.Data())) // nil acks, an error naks: must be idempotent
//	})
//	// Feed returns once ctx is done and every message it took is settled.
//
// # At least once: handlers must be idempotent
//
// JetStream redelivers every message that is not acknowledged within the
// consumer's AckWait. That is what makes a crash lose nothing, and it is
// also why a message can be handled twice: a process killed after its
// handler ran and before the server received the acknowledgement, a server
// killed before it stored one, an acknowledgement lost on a broken
// connection, a handler slower than AckWait (see [WithProgress]). So a
// handler must be idempotent: handling a message twice must have the effect
// of handling it once (an upsert, a check of the message's id, a
// deduplicating store).
//
// This module's tests measure it with 10,000 messages through three worker
// processes of their own, each with its own pool and a bound of 4. No
// message was lost in any of them. In one run: with no failure, no message
// was handled twice, and the server never counted more than 12 messages
// unacknowledged; killing one worker process with SIGKILL mid-stream, 4
// messages were handled twice (those it held); killing the server process
// with SIGKILL and restarting it on the same store, 128 were, since the
// server comes back with the consumer state it last wrote to disk, older
// than the acknowledgements it had confirmed (a replicated stream on a
// cluster of three servers, or the server's sync_always, narrows that).
//
// # The consumer
//
// Give Feed a durable pull consumer with explicit acknowledgement
// (jetstream.AckExplicitPolicy; Feed refuses any other), shared by every
// process. Its AckWait is how
// long a message held by a dead process waits before another takes it:
// make it longer than a handler runs, by a tenth, or use WithProgress
// (a message that waits in the pool's queue is kept alive there: see
// [Feed]). Its MaxDeliver,
// if set, ends the redeliveries of a message that always fails; its
// MaxAckPending (1,000 by default) must be at least the sum of the
// processes' bounds, or the server holds back what they ask for, plus the
// nak'd messages waiting for their redelivery, which the server counts
// there too. Its MaxWaiting (512 by default) bounds the pull requests the
// server keeps waiting, from all processes together, and refuses one
// beyond it: a Feed keeps at most two out, so give it at least twice the
// number of Feeds on the consumer.
//
// # Stopping
//
// Feed runs until its ctx is done, then drains: it sends no more pull
// requests, lets those it has sent finish (at most the fetch wait, see
// [WithFetchWait]), gives back (a nak with no delay, once those requests
// have ended) the messages that wait in the pool's queue and those the
// last requests bring, and
// waits until every running handler has returned and its message is
// settled: by default their ctx does not end, so they finish and their
// messages are acknowledged; with [WithCancelOnStop] it ends, and they are
// settled by what they return. A drained feed leaves nothing for the
// server to redeliver after AckWait: when Feed returns, it has sent the
// naks of what it gave back, each after the server had ended the feed's
// pull requests (their batch full, or expired), so the next pull request
// of any consumer brings those messages. Until one asks, the server counts
// them as pending acknowledgement (NumAckPending), not in NumPending.
// Naks and terms go out on cons's connection without waiting for the
// server: close or drain that connection before the process exits, which
// sends what is buffered. Feed never stops the pool; stop it after Feed
// returns (StopWait).
//
// # Progress
//
// [WithProgress] tells the server, every period, that each message the
// feed holds (waiting or running) is still being worked on. A message's
// beats end, and the beat in flight is sent, before its acknowledgement,
// nak or term: no beat follows a settlement on the wire, where it would
// restart the server's AckWait for a nak'd message and delay its
// redelivery past its backoff.
//
// # Performance
//
// Throughput against a nats-server in its own process, one process with 8
// workers, five interleaved passes of BenchmarkThroughput (see it for how
// to run it), medians; an Intel(R) Xeon(R) Processor, 2 cores under KVM,
// go1.26.8. The 1 ms call is a call to a service in a
// process of its own that answers after 1 ms; the 1 ms sleep is
// time.Sleep(time.Millisecond):
//
//	task                      Feed (default)    Consume+Ack          Consume+DoubleAck
//	1 ms call                 6,183 msgs/s      6,344 (Feed 0.97x)   5,174 (Feed 1.19x)
//	1 ms sleep                4,631 msgs/s      6,319 (0.73x)        5,400 (0.87x)
//	no-op                     46,400 msgs/s     186,640 (0.25x)      35,330 (1.29x)
//	1 ms call, +1 ms each way 4,562 msgs/s      -                    1,878 (2.45x)
//
// The Consume loops let the server count 500 to 1,000 messages as taken
// by the process; Feed holds its bound (24 to 64 here). Compare Feed with the
// DoubleAck loop: both wait for the server to confirm each
// acknowledgement. The sleep row trails because a 1 ms time.Sleep wakes up
// to 1 ms late when the process's threads wait in Go's netpoller, which
// waits in whole milliseconds on Linux (golang/go#44343), and Feed's
// workers, which go from message to message without waiting for the
// server, meet that more often: traced, their sleeps took 1.57 ms on
// average against 1.25 ms in the Consume loop.
//
// # Observability
//
// Each message's handler runs in the pool as a task (of WorkerPool.Go)
// with a Label ([workerpool.TaskOption]): the consumer's name, or the one
// [WithTaskOption] gives. The pool's hooks see it in TaskInfo.Label, so
// workerpoolprom's histograms and workerpoolotel's spans tell the feed's
// tasks from the pool's others.
// [WithStats] counts what the feed took and how it settled it; the
// subpackages workerpoolprom/natsfeedprom (a Prometheus collector) and
// workerpoolotel/natsfeedotel (observable instruments) export those counts
// under the pool's metric naming rules.
package natsfeed
