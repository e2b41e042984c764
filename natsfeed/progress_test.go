package natsfeed_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ackWire records, in the order the server routes them, the messages
// published on the acknowledgement subjects ($JS.ACK.>): the beats,
// acknowledgements, naks and terms of every delivery. The reply subject
// of a delivery is its own, so a subject names one delivery of one
// message.
type ackWire struct {
	mu     sync.Mutex
	events []ackEvent
}

type ackEvent struct {
	subject string // the delivery's reply subject
	kind    string // "+WPI", "+ACK", "-NAK" or "+TERM"
}

// listenAcks subscribes a core NATS connection of its own to $JS.ACK.>
// on url (see listen). The returned flush waits until every message
// published so far on conns has been recorded.
func listenAcks(t *testing.T, url string) (*ackWire, func(conns ...*nats.Conn)) {
	t.Helper()
	w := new(ackWire)
	flush := listen(t, url, "$JS.ACK.>", ackMarkPrefix, func(m *nats.Msg) {
		kind, _, _ := bytes.Cut(m.Data, []byte(" "))
		w.mu.Lock()
		w.events = append(w.events, ackEvent{m.Subject, string(kind)})
		w.mu.Unlock()
	})
	return w, flush
}

// ackMarkPrefix begins the subjects of listenAcks's markers, which no
// delivery's reply subject begins with.
const ackMarkPrefix = "$JS.ACK.natsfeed-test-mark."

// late returns the beats seen after their delivery was settled, and how
// many of each kind were seen.
func (w *ackWire) late() (late []string, kinds map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	settled := map[string]string{}
	kinds = map[string]int{}
	for _, e := range w.events {
		kinds[e.kind]++
		if e.kind == "+WPI" {
			if how, ok := settled[e.subject]; ok {
				late = append(late, fmt.Sprintf("+WPI after %s on %s", how, e.subject))
			}
			continue
		}
		settled[e.subject] = e.kind
	}
	return late, kinds
}

// TestProgressNeverFollowsSettlement watches the wire under
// WithProgress(1ms) with handlers that work a few milliseconds and fail
// half the time (nak'd or terminated): no beat of a delivery is published
// after its acknowledgement, nak or term, where it would restart the
// server's AckWait for a message already settled (and so delay a nak'd
// message's redelivery past its backoff).
func TestProgressNeverFollowsSettlement(t *testing.T) {
	const n = 300
	url, js, cons := setupAt(t, 30*time.Second, n)
	wire, flush := listenAcks(t, url)
	pool := workerpool.New(8)
	defer pool.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stats := new(natsfeed.Stats)
	wait := run(ctx, pool, cons, func(_ context.Context, msg jetstream.Msg) error {
		id := job(msg)
		time.Sleep(time.Duration(2+id%3) * time.Millisecond)
		if delivered(msg) > 1 {
			return nil
		}
		switch id % 4 {
		case 1:
			return fmt.Errorf("job %d fails once", id)
		case 3:
			return workerpool.Permanent(fmt.Errorf("job %d", id))
		}
		return nil
	}, natsfeed.WithStats(stats), natsfeed.WithProgress(time.Millisecond),
		natsfeed.WithBackoff(func(int, error) (time.Duration, bool) { return 0, true }))
	eventually(t, func() bool { c := stats.Counts(); return c.Acked == 3*n/4 && c.Terminated == n/4 }, "every job acked or terminated")
	cancel()
	require.NoError(t, wait(), "Feed")
	flush(js.Conn())
	late, kinds := wire.late()
	assert.Zero(t, len(late), "beats published after their delivery was settled; the first: %q", late[:min(5, len(late))])
	assert.Equal(t, 3*n/4, kinds["+ACK"], "acknowledgements on the wire")
	assert.Equal(t, n/4, kinds["-NAK"], "naks on the wire")
	assert.Equal(t, n/4, kinds["+TERM"], "terms on the wire")
	assert.Positive(t, kinds["+WPI"], "beats on the wire")
}

// TestProgressNeverFollowsTheDrainsNaks: as
// TestProgressNeverFollowsSettlement, with the settlements the other test
// does not reach: handlers that panic or call runtime.Goexit (nak'd on the
// way out), messages fetched ahead and given back by the drain when Feed's
// ctx ends or the pool stops (nak'd from the drain or from the pool's
// refusal), under WithProgress(1ms) and a bound of four times the pool.
func TestProgressNeverFollowsTheDrainsNaks(t *testing.T) {
	for _, how := range []string{"ctx", "pool Stop"} {
		t.Run(how, func(t *testing.T) {
			const n = 400
			url, js, cons := setupAt(t, 30*time.Second, n)
			wire, flush := listenAcks(t, url)
			pool := workerpool.New(2)
			defer pool.Stop()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stats := new(natsfeed.Stats)
			wait := run(ctx, pool, cons, func(_ context.Context, msg jetstream.Msg) error {
				time.Sleep(2 * time.Millisecond)
				if delivered(msg) == 1 {
					switch job(msg) % 4 {
					case 1:
						panic("panics once")
					case 2:
						runtime.Goexit()
					case 3:
						return fmt.Errorf("job %d fails once", job(msg))
					}
				}
				return nil
			}, natsfeed.WithStats(stats), natsfeed.WithProgress(time.Millisecond), natsfeed.WithMaxInFlight(8),
				natsfeed.WithBackoff(func(int, error) (time.Duration, bool) { return 0, true }),
				natsfeed.WithErrorHandler(func(error) {}))
			eventually(t, func() bool { return stats.Counts().Acked >= 60 }, "some jobs acked")
			if how == "ctx" {
				cancel()
			} else {
				pool.Stop()
			}
			err := wait()
			if how == "ctx" {
				require.NoError(t, err, "Feed")
			} else {
				require.ErrorIs(t, err, workerpool.ErrStopped, "Feed")
			}
			c := stats.Counts()
			flush(js.Conn())
			late, kinds := wire.late()
			assert.Zero(t, len(late), "beats published after their delivery was settled; the first: %q", late[:min(5, len(late))])
			assert.Equal(t, int(c.Nacked), kinds["-NAK"], "naks on the wire: %+v", c)
			assert.Positive(t, kinds["+WPI"], "beats on the wire")
		})
	}
}

// TestProgressKeepsAQueuedMessageAlivePastAckWait: a message that waits in
// the pool's queue behind other work for three times the consumer's
// AckWait is kept alive by WithProgress's beats: it is handled once, not
// redelivered.
func TestProgressKeepsAQueuedMessageAlivePastAckWait(t *testing.T) {
	const ackWait = time.Second
	_, cons := setup(t, ackWait, 1)
	pool := workerpool.New(1)
	defer pool.Stop()
	pool.Submit(func() { time.Sleep(3 * ackWait) }) // the other work
	ctx, cancel := context.WithCancel(context.Background())
	stats := new(natsfeed.Stats)
	var runs atomic.Int64
	wait := run(ctx, pool, cons, func(context.Context, jetstream.Msg) error {
		runs.Add(1)
		return nil
	}, natsfeed.WithStats(stats), natsfeed.WithProgress(ackWait/5), natsfeed.WithFetchWait(200*time.Millisecond))
	eventually(t, func() bool { return stats.Counts().Acked == 1 }, "acked")
	time.Sleep(ackWait + 200*time.Millisecond) // a redelivery would come by now
	cancel()
	require.NoError(t, wait(), "Feed")
	assert.Equal(t, int64(1), runs.Load(), "runs")
	assert.Equal(t, natsfeed.Counts{Taken: 1, Acked: 1, MaxInFlight: 1}, stats.Counts(), "counts")
}
