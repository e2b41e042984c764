package natsfeed_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// startServer starts an embedded JetStream server on a free port, storing
// in dir (t.TempDir() if empty), and shuts it down when the test ends.
func startServer(t testing.TB, dir string) *server.Server {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir,
		NoLog: true, NoSigs: true,
	})
	require.NoError(t, err, "new server")
	s.Start()
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	require.True(t, s.ReadyForConnections(10*time.Second), "server ready")
	return s
}

// connect opens a JetStream client on url, closed when the test ends.
func connect(t testing.TB, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	require.NoError(t, err, "connect")
	t.Cleanup(nc.Close)
	// publish keeps up to a batch of tests' size unconfirmed.
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(16384))
	require.NoError(t, err, "jetstream")
	return js
}

// jobsConfig is the stream the tests publish jobs to: subjects jobs.>.
var jobsConfig = jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}}

// newConsumer creates the stream JOBS and a durable pull consumer on it
// with explicit acks and ackWait.
func newConsumer(t testing.TB, js jetstream.JetStream, ackWait time.Duration) jetstream.Consumer {
	t.Helper()
	ctx := context.Background()
	st, err := js.CreateOrUpdateStream(ctx, jobsConfig)
	require.NoError(t, err, "stream")
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "workers", AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait,
	})
	require.NoError(t, err, "consumer")
	registerConsumer(js, cons)
	return cons
}

// publish publishes n jobs with bodies "0" to "n-1", each confirmed, in
// batches of at most publishBatch unconfirmed (below connect's and
// connectForever's WithPublishAsyncMaxPending, which would stall).
func publish(t testing.TB, js jetstream.JetStream, n int) {
	t.Helper()
	for i := range n {
		_, err := js.PublishAsync(fmt.Sprintf("jobs.%d", i%16), []byte(fmt.Sprint(i)))
		require.NoError(t, err, "publish")
		if (i+1)%publishBatch == 0 || i == n-1 {
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(30 * time.Second):
				t.Fatal("publishing did not complete")
			}
		}
	}
}

// publishBatch is how many jobs publish leaves unconfirmed at most.
const publishBatch = 10_000

// listen subscribes a core NATS connection of its own to subject on url,
// and records each message with record, on the subscription's goroutine.
// The returned flush waits until every message published so far on conns
// has been recorded: the connections' flush has them routed to the
// listener before the server answers, and a marker (a subject that begins
// with markPrefix, which no message of the tests' does) the listener then
// publishes to itself comes to its handler after them. A flush of the
// listener's connection alone would return while its handler, which runs
// on a goroutine of its own, still has some to record.
func listen(t *testing.T, url, subject, markPrefix string, record func(*nats.Msg)) (flush func(conns ...*nats.Conn)) {
	t.Helper()
	nc, err := nats.Connect(url)
	require.NoError(t, err, "connect the listener")
	t.Cleanup(nc.Close)
	marks := make(chan string, 1)
	_, err = nc.Subscribe(subject, func(m *nats.Msg) {
		if mark, ok := strings.CutPrefix(m.Subject, markPrefix); ok {
			marks <- mark
			return
		}
		record(m)
	})
	require.NoError(t, err, "subscribe to %s", subject)
	require.NoError(t, nc.Flush(), "the subscription reached the server")
	n := 0
	return func(conns ...*nats.Conn) {
		for _, c := range conns {
			require.NoError(t, c.Flush(), "flush the feed's connection")
		}
		n++
		mark := fmt.Sprint(n)
		require.NoError(t, nc.Publish(markPrefix+mark, nil), "publish the marker")
		select {
		case got := <-marks:
			require.Equal(t, mark, got, "the marker recorded")
		case <-time.After(time.Minute):
			t.Fatal("the marker did not come back to the listener")
		}
	}
}
