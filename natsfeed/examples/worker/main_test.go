package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/e86d9661/workerpool/internal/exectest"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deadline bounds each wait on the server's state.
const deadline = exectest.Deadline

// Without -url the program starts its own server, publishes -n jobs,
// handles them all and exits by itself.
func TestHandlesDemoJobsAndExits(t *testing.T) {
	p := exectest.Start(t, binary(t), "-n", "200")
	assert.Equal(t, "published 200 jobs to JOBS", p.Line(t), "first line")
	s := summaryOf(t, p)
	require.NoError(t, p.Wait(t), "exit status 0; stderr:\n%s", p.Stderr)

	assert.Equal(t, 200, s.handled, "handled")
	assert.Equal(t, 0, s.redelivered, "redelivered")
	assert.Equal(t, 0, s.duplicates, "duplicates")
	assert.Equal(t, 64, s.bound, "bound: at most eight times the default -workers")
	assert.GreaterOrEqual(t, s.maxInFlight, 1, "max in flight")
	assert.LessOrEqual(t, s.maxInFlight, s.bound, "max in flight within the bound")
}

// With -url the program works until SIGINT, then drains: every message it
// ran is acknowledged before it exits, what it fetched ahead is given
// back, and the rest stay in the stream.
func TestDrainsOnInterrupt(t *testing.T) {
	const jobs = 1000
	url := testServer(t)
	p := exectest.Start(t, binary(t), "-url", url, "-n", strconv.Itoa(jobs), "-workers", "4", "-work", "5ms")
	assert.Equal(t, fmt.Sprintf("published %d jobs to JOBS", jobs), p.Line(t), "first line")
	assert.Equal(t, "working; press Ctrl-C to drain and stop", p.Line(t), "second line")
	cons := consumer(t, url)
	// 50 acknowledged: the process fetches ahead, so what it was delivered
	// runs ahead of what it acknowledged by up to its bound.
	waitFor(t, cons, "50 acknowledged", func(i *jetstream.ConsumerInfo) bool {
		return int(i.Delivered.Consumer)-i.NumAckPending >= 50
	})

	require.NoError(t, p.Cmd.Process.Signal(os.Interrupt), "send SIGINT")
	s := summaryOf(t, p)
	require.NoError(t, p.Wait(t), "exit status 0; stderr:\n%s", p.Stderr)
	t.Logf("interrupted: %+v", s)
	assert.GreaterOrEqual(t, s.handled, 50, "handled")
	assert.Equal(t, 0, s.redelivered, "redelivered")
	assert.Equal(t, 0, s.duplicates, "duplicates")
	assert.LessOrEqual(t, s.maxInFlight, s.bound, "max in flight within the bound")

	// What the process fetched ahead and did not run it gave back with a
	// nak as it drained: those wait for redelivery (counted pending
	// acknowledgement until the server hands them out again), the rest
	// were never delivered. Nothing is left to AckWait.
	info, err := cons.Info(context.Background())
	require.NoError(t, err, "consumer info after the exit")
	assert.LessOrEqual(t, info.NumAckPending, s.bound, "messages given back at the drain, at most the bound")
	assert.Equal(t, jobs-s.handled, info.NumAckPending+int(info.NumPending), "messages left for other workers: given back or never delivered")
}

// The README's recipe in small: one process serves the stream and works,
// another joins it, publishes and works; both drain on SIGINT and share
// the jobs between them, each once.
func TestServeAndJoin(t *testing.T) {
	const jobs = 300
	bin := binary(t)
	host := exectest.Start(t, bin, "-serve", "127.0.0.1:0", "-n", "0", "-workers", "2", "-work", "2ms")
	url, ok := strings.CutPrefix(host.Line(t), "serving NATS at ")
	require.True(t, ok, "first line names the server's URL")
	assert.Equal(t, "working; press Ctrl-C to drain and stop", host.Line(t), "second line")

	joined := exectest.Start(t, bin, "-url", url, "-n", strconv.Itoa(jobs), "-workers", "2", "-work", "2ms")
	assert.Equal(t, fmt.Sprintf("published %d jobs to JOBS", jobs), joined.Line(t), "first line")
	assert.Equal(t, "working; press Ctrl-C to drain and stop", joined.Line(t), "second line")
	cons := consumer(t, url)
	waitFor(t, cons, "every job acknowledged", func(i *jetstream.ConsumerInfo) bool {
		return i.AckFloor.Stream == jobs && i.NumAckPending == 0
	})

	var total int
	for _, p := range []*exectest.Process{joined, host} { // the server last
		require.NoError(t, p.Cmd.Process.Signal(os.Interrupt), "send SIGINT")
		s := summaryOf(t, p)
		require.NoError(t, p.Wait(t), "exit status 0; stderr:\n%s", p.Stderr)
		t.Logf("%s: %+v", p.Cmd.Args[1:3], s)
		assert.Equal(t, 0, s.redelivered, "redelivered")
		assert.Equal(t, 0, s.duplicates, "duplicates")
		assert.LessOrEqual(t, s.maxInFlight, s.bound, "max in flight within the bound")
		total += s.handled
	}
	assert.Equal(t, jobs, total, "handled by both processes")
}

// summary is the program's last two lines.
type summary struct {
	handled, redelivered, duplicates int
	maxInFlight, bound               int
}

var (
	handledLine  = regexp.MustCompile(`^handled (\d+) messages \((\d+) redelivered, (\d+) duplicates\) in \S+$`)
	inFlightLine = regexp.MustCompile(`^max in flight (\d+) \(bound at most (\d+)\)$`)
)

// summaryOf reads the summary from the program's stdout.
func summaryOf(t *testing.T, p *exectest.Process) summary {
	t.Helper()
	var s summary
	scan(t, handledLine, p.Line(t), &s.handled, &s.redelivered, &s.duplicates)
	scan(t, inFlightLine, p.Line(t), &s.maxInFlight, &s.bound)
	return s
}

// scan matches line against re and parses its groups into ints.
func scan(t *testing.T, re *regexp.Regexp, line string, ints ...*int) {
	t.Helper()
	m := re.FindStringSubmatch(line)
	require.NotNil(t, m, "line %q matches %s", line, re)
	for i, n := range ints {
		v, err := strconv.Atoi(m[i+1])
		require.NoError(t, err, "number in %q", line)
		*n = v
	}
}

// testServer starts a JetStream server for the test, on a free port, and
// returns its URL.
func testServer(t *testing.T) string {
	t.Helper()
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true,
	})
	require.NoError(t, err, "new server")
	s.Start()
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	require.True(t, s.ReadyForConnections(10*time.Second), "server ready")
	return s.ClientURL()
}

// consumer connects to url and returns the program's consumer, JOBS's
// workers, to watch it.
func consumer(t *testing.T, url string) jetstream.Consumer {
	t.Helper()
	nc, err := nats.Connect(url)
	require.NoError(t, err, "connect to %s", url)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err, "jetstream")
	cons, err := js.Consumer(context.Background(), "JOBS", "workers")
	require.NoError(t, err, "the program's consumer")
	return cons
}

// waitFor polls cons's info until ok holds.
func waitFor(t *testing.T, cons jetstream.Consumer, what string, ok func(*jetstream.ConsumerInfo) bool) {
	t.Helper()
	for stop := time.Now().Add(deadline); ; {
		info, err := cons.Info(context.Background())
		require.NoError(t, err, "consumer info")
		if ok(info) {
			return
		}
		require.True(t, time.Now().Before(stop), "%s within %v; last info: %+v", what, deadline, info)
		time.Sleep(10 * time.Millisecond) // polling a real process, not timing it
	}
}

// The program, built once for all tests.
var (
	buildOnce sync.Once
	built     string // path of the binary
	buildErr  error
	buildDir  string // removed by TestMain
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// binary builds the program on first use and returns its path.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "worker-test-"); buildErr != nil {
			return
		}
		built = filepath.Join(buildDir, "worker")
		out, err := exec.Command("go", "build", "-o", built, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	require.NoError(t, buildErr, "build the program")
	return built
}
