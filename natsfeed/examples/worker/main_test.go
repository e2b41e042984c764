package main

import (
	"bufio"
	"bytes"
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

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deadline bounds each wait on a real process: generous, as a loaded
// machine (or -race) can be slow to build and start it.
const deadline = 60 * time.Second

// Without -url the program starts its own server, publishes -n jobs,
// handles them all and exits by itself.
func TestHandlesDemoJobsAndExits(t *testing.T) {
	p := start(t, binary(t), "-n", "200")
	assert.Equal(t, "published 200 jobs to JOBS", p.line(t), "first line")
	s := p.summary(t)
	require.NoError(t, p.wait(t), "exit status 0; stderr:\n%s", p.stderr)

	assert.Equal(t, 200, s.handled, "handled")
	assert.Equal(t, 0, s.redelivered, "redelivered")
	assert.Equal(t, 0, s.duplicates, "duplicates")
	assert.Equal(t, 8, s.bound, "bound: the default -workers")
	assert.GreaterOrEqual(t, s.maxInFlight, 1, "max in flight")
	assert.LessOrEqual(t, s.maxInFlight, s.bound, "max in flight within the bound")
}

// With -url the program works until SIGINT, then drains: every message it
// took is acknowledged before it exits, and the rest stay in the stream.
func TestDrainsOnInterrupt(t *testing.T) {
	const jobs = 1000
	url := testServer(t)
	p := start(t, binary(t), "-url", url, "-n", strconv.Itoa(jobs), "-workers", "4", "-work", "5ms")
	assert.Equal(t, fmt.Sprintf("published %d jobs to JOBS", jobs), p.line(t), "first line")
	assert.Equal(t, "working; press Ctrl-C to drain and stop", p.line(t), "second line")
	cons := consumer(t, url)
	waitFor(t, cons, "50 deliveries", func(i *jetstream.ConsumerInfo) bool { return i.Delivered.Consumer >= 50 })

	require.NoError(t, p.cmd.Process.Signal(os.Interrupt), "send SIGINT")
	s := p.summary(t)
	require.NoError(t, p.wait(t), "exit status 0; stderr:\n%s", p.stderr)
	t.Logf("interrupted: %+v", s)
	assert.GreaterOrEqual(t, s.handled, 50, "handled")
	assert.Equal(t, 0, s.redelivered, "redelivered")
	assert.Equal(t, 0, s.duplicates, "duplicates")
	assert.LessOrEqual(t, s.maxInFlight, s.bound, "max in flight within the bound")

	info, err := cons.Info(context.Background())
	require.NoError(t, err, "consumer info after the exit")
	assert.Equal(t, 0, info.NumAckPending, "messages taken and not settled")
	assert.Equal(t, uint64(s.handled), info.AckFloor.Stream, "ack floor: every message up to the last taken acknowledged")
	assert.Equal(t, uint64(jobs-s.handled), info.NumPending, "messages left for other workers")
}

// The README's recipe in small: one process serves the stream and works,
// another joins it, publishes and works; both drain on SIGINT and share
// the jobs between them, each once.
func TestServeAndJoin(t *testing.T) {
	const jobs = 300
	bin := binary(t)
	host := start(t, bin, "-serve", "127.0.0.1:0", "-n", "0", "-workers", "2", "-work", "2ms")
	url, ok := strings.CutPrefix(host.line(t), "serving NATS at ")
	require.True(t, ok, "first line names the server's URL")
	assert.Equal(t, "working; press Ctrl-C to drain and stop", host.line(t), "second line")

	joined := start(t, bin, "-url", url, "-n", strconv.Itoa(jobs), "-workers", "2", "-work", "2ms")
	assert.Equal(t, fmt.Sprintf("published %d jobs to JOBS", jobs), joined.line(t), "first line")
	assert.Equal(t, "working; press Ctrl-C to drain and stop", joined.line(t), "second line")
	cons := consumer(t, url)
	waitFor(t, cons, "every job acknowledged", func(i *jetstream.ConsumerInfo) bool {
		return i.AckFloor.Stream == jobs && i.NumAckPending == 0
	})

	var total int
	for _, p := range []*process{joined, host} { // the server last
		require.NoError(t, p.cmd.Process.Signal(os.Interrupt), "send SIGINT")
		s := p.summary(t)
		require.NoError(t, p.wait(t), "exit status 0; stderr:\n%s", p.stderr)
		t.Logf("%s: %+v", p.cmd.Args[1:3], s)
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
	inFlightLine = regexp.MustCompile(`^max in flight (\d+) \(bound (\d+)\)$`)
)

// summary reads the summary from the program's stdout.
func (p *process) summary(t *testing.T) summary {
	t.Helper()
	var s summary
	scan(t, handledLine, p.line(t), &s.handled, &s.redelivered, &s.duplicates)
	scan(t, inFlightLine, p.line(t), &s.maxInFlight, &s.bound)
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

// process is the program running: its stdout line by line, its stderr,
// and its exit.
type process struct {
	cmd    *exec.Cmd
	lines  <-chan string // stdout, closed at EOF
	stderr *bytes.Buffer // read only once exited has been received from
	exited <-chan error  // cmd.Wait's result, once stdout is drained
	waited bool          // exited has been received from
}

// start starts bin with args; the test's cleanup kills it if it is still
// running.
func start(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr := new(bytes.Buffer)
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err, "StdoutPipe")
	require.NoError(t, cmd.Start(), "start %s", bin)

	// The reader owns stdout: it sends each line, closes lines at EOF (the
	// program has exited), then calls Wait, which must follow the reads.
	// The program prints a few lines, so it never blocks on lines.
	lines, exited := make(chan string, 16), make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	p := &process{cmd: cmd, lines: lines, stderr: stderr, exited: exited}
	t.Cleanup(func() {
		if !p.waited {
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	return p
}

// line returns the next line of the program's stdout.
func (p *process) line(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			err := p.wait(t)
			require.FailNow(t, "stdout ended", "exit: %v; stderr:\n%s", err, p.stderr)
		}
		return l
	case <-time.After(deadline):
		require.FailNow(t, "no line on stdout", "after %v", deadline)
		return ""
	}
}

// wait waits for the program to exit, logging any further stdout, and
// returns cmd.Wait's error.
func (p *process) wait(t *testing.T) error {
	t.Helper()
	timeout, lines := time.After(deadline), p.lines
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				lines = nil // EOF: wait for exited alone
				continue
			}
			t.Logf("more stdout: %s", l)
		case err := <-p.exited:
			p.waited = true
			return err
		case <-timeout:
			require.FailNow(t, "program did not exit", "after %v", deadline)
		}
	}
}
