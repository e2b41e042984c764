// Package natsfeed feeds a [workerpool.WorkerPool] from a NATS JetStream
// consumer, so that the same program run in many processes, on many
// machines, shares one stream of work: each message is handled at least
// once, none is lost when a process or the server dies, and each process
// holds no more unsettled messages than its bound.
//
// [Feed] pulls with Fetch, asking for exactly as many messages as it has
// free slots (never Consume, which prefetches hundreds), runs the [Handler]
// on the pool, and settles each message by the handler's result: nil
// acknowledges it (confirmed by the server), an error naks it with a
// backoff delay by its delivery count, an error wrapping [ErrPermanent]
// terminates it. The pool's bounded concurrency becomes an exact bound on
// the messages in flight: min(WithMaxInFlight, pool size) per process, and
// their sum across a cluster.
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
// make it longer than a handler runs, or use WithProgress. Its MaxDeliver,
// if set, ends the redeliveries of a message that always fails; its
// MaxAckPending (1,000 by default) must be at least the sum of the
// processes' bounds, or the server holds back what they ask for, plus the
// nak'd messages waiting for their redelivery, which the server counts
// there too.
//
// # Stopping
//
// Feed runs until its ctx is done, then drains: it sends no more pull
// requests, lets the one it has sent finish (at most the fetch wait, see
// [WithFetchWait]), and waits until every message it took has been settled,
// handlers included: by default their ctx does not end, so they finish and
// their messages are acknowledged; with [WithCancelOnStop] it ends, and
// they are settled by what they return. A drained feed leaves nothing for
// the server to redeliver. Feed never stops the pool; stop it after Feed
// returns (StopWait).
//
// # Observability
//
// Each message's handler runs in the pool as a task with a
// [workerpool.Label]: the consumer's name, or [WithLabel]'s. The pool's
// hooks see it in TaskInfo.Label, so workerpoolprom's histograms and
// workerpoolotel's spans tell the feed's tasks from the pool's others.
// [WithStats] counts what the feed took and how it settled it.
package natsfeed
