package natsfeed_test

// The tests in this file run Feed across real processes. The test binary
// re-executes itself in a role chosen by the NATSFEED_CHILD environment
// variable (TestMain dispatches on it):
//
//   - worker: connects to NATSFEED_URL, runs Feed on the consumer
//     JOBS/workers with its own pool, and writes one JSON line on stdout
//     per job it handles, then a final line with its Stats once told to
//     stop (SIGINT, SIGTERM or its stdin closing).
//   - server: runs a JetStream server on 127.0.0.1:NATSFEED_PORT storing in
//     NATSFEED_STORE, writes a "ready" line, and runs until killed.
//   - service: answers requests on 127.0.0.1:NATSFEED_PORT after 1 ms, for
//     BenchmarkThroughput (see benchservice_test.go).
//
// So processes can be killed for real (SIGKILL) in the middle of the work.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The environment of a child process.
const (
	envRole      = "NATSFEED_CHILD"      // "worker", "server" or "service"
	envURL       = "NATSFEED_URL"        // worker: the server to connect to
	envPool      = "NATSFEED_POOL"       // worker: the pool's size
	envBound     = "NATSFEED_BOUND"      // worker: WithMaxInFlight
	envWork      = "NATSFEED_WORK"       // worker: how long the handler works on a job
	envFetchWait = "NATSFEED_FETCH_WAIT" // worker: WithFetchWait
	envPort      = "NATSFEED_PORT"       // server, service: the port to listen on
	envStore     = "NATSFEED_STORE"      // server: the JetStream store directory
)

// overall bounds each wait of these tests; none is expected to come near it.
const overall = 90 * time.Second

func TestMain(m *testing.M) {
	switch role := os.Getenv(envRole); role {
	case "":
		os.Exit(m.Run())
	case "worker":
		os.Exit(runWorker())
	case "server":
		os.Exit(runServer())
	case "service":
		os.Exit(runService())
	default:
		fmt.Fprintf(os.Stderr, "%s=%q: unknown role\n", envRole, role)
		os.Exit(2)
	}
}

// TestThreeProcessesShareTheWork proves that Feeds in three processes on
// one consumer share 10,000 jobs without losing any, that each process
// holds no more messages than its WithMaxInFlight bound, and that the
// server never has more than the sum of the bounds unacknowledged.
func TestThreeProcessesShareTheWork(t *testing.T) {
	const jobs, procs, bound = 10_000, 3, 4 // procs: the workers started below
	begin := time.Now()
	s := startServer(t, "")
	js := connectForever(t, s.ClientURL())
	cons := newConsumer(t, js, 5*time.Second)
	publish(t, js, jobs)

	var handled atomic.Int64
	cfg := workerConfig{url: s.ClientURL(), pool: 8, bound: bound, work: time.Millisecond}
	workers := startWorkers(t, &handled, cfg, cfg, cfg)
	started := time.Now()

	maxAckPending := 0
	waitAllAcked(t, cons, workers, func(info *jetstream.ConsumerInfo) {
		maxAckPending = max(maxAckPending, info.NumAckPending)
	})
	worked := time.Since(started)
	stopWorkers(t, workers)

	seen := checkWorkers(t, workers, bound)
	assertNoneLost(t, jobs, seen)
	assert.LessOrEqual(t, maxAckPending, procs*bound, "the server's NumAckPending, sampled, never above the sum of the bounds")
	assert.Positive(t, maxAckPending, "NumAckPending sampled above zero at least once")
	t.Logf("%d jobs in %v (all %v): %d handled, %d duplicates; highest NumAckPending sampled %d (bound %d)",
		jobs, worked.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond),
		handled.Load(), duplicates(seen), maxAckPending, procs*bound)
}

// TestKillWorkerMidStream proves that no job is lost when one of three
// worker processes dies (SIGKILL) in the middle of the work: the server
// redelivers the messages it held, after AckWait, to the others, which
// finish everything.
func TestKillWorkerMidStream(t *testing.T) {
	const jobs, procs, bound, killAfter = 10_000, 3, 4, 2_000
	const ackWait = 2 * time.Second
	begin := time.Now()
	s := startServer(t, "")
	js := connectForever(t, s.ClientURL())
	cons := newConsumer(t, js, ackWait)
	publish(t, js, jobs)

	var handled atomic.Int64
	cfg := workerConfig{url: s.ClientURL(), pool: 8, bound: bound, work: 3 * time.Millisecond}
	// The victim works slower, so that when it dies it is surely in the
	// middle of handling messages: those must come back to the others.
	slow := cfg
	slow.work = 30 * time.Millisecond
	workers := startWorkers(t, &handled, slow, cfg, cfg)
	victim, survivors := workers[0], workers[1:]

	waitFor(t, fmt.Sprintf("%d jobs handled before the kill", killAfter), func() (bool, error) {
		return handled.Load() >= killAfter, anyExited(workers)
	})
	require.NoError(t, victim.cmd.Process.Kill(), "kill %s", victim.name)
	require.Error(t, victim.wait(overall), "%s dies of SIGKILL", victim.name)
	killedAt := handled.Load()
	require.Less(t, killedAt, int64(jobs), "the kill came mid-stream")

	maxAckPending := 0
	waitAllAcked(t, cons, survivors, func(info *jetstream.ConsumerInfo) {
		maxAckPending = max(maxAckPending, info.NumAckPending)
	})
	stopWorkers(t, survivors)

	seen := checkWorkers(t, survivors, bound)
	for id, n := range victim.handledIDs() {
		seen[id] += n // handled before its death; its ack may not have been
	}
	assertNoneLost(t, jobs, seen)
	assert.LessOrEqual(t, maxAckPending, procs*bound, "the server's NumAckPending, sampled, never above the sum of the bounds")

	var redelivered int64
	var redeliveredLines int
	for _, w := range survivors {
		redelivered += w.final().Counts.Redelivered
		redeliveredLines += w.redeliveredLines()
	}
	assert.Positive(t, redelivered, "the survivors took redeliveries of the killed process's messages")
	assert.Equal(t, int64(redeliveredLines), redelivered, "redeliveries counted by Stats and seen by the handlers")
	// A handling twice is one of the victim's messages handled and not yet
	// acknowledged when it died: it held at most its bound of them.
	assert.LessOrEqual(t, duplicates(seen), bound, "duplicates: at most the killed process's bound")
	t.Logf("killed %s after %d of %d jobs handled (it handled %d); survivors took %d redelivered messages; "+
		"%d duplicates; highest NumAckPending sampled %d; took %v",
		victim.name, killedAt, jobs, len(victim.handledLines()), redelivered,
		duplicates(seen), maxAckPending, time.Since(begin).Round(time.Millisecond))
}

// TestKillServerAndRestart proves that no job is lost when the JetStream
// server dies (SIGKILL) in the middle of the work and a new one starts on
// the same store and port: Feed rides out the outage on a connection that
// reconnects forever, reporting errors but never ending, and finishes
// every job once the server is back.
func TestKillServerAndRestart(t *testing.T) {
	const jobs, bound, killAfter = 10_000, 8, 3_000
	const ackWait = 3 * time.Second
	begin := time.Now()
	dir, port := t.TempDir(), freePort(t)
	srv := startServerProc(t, "server-1", dir, port)

	js := connectForever(t, fmt.Sprintf("nats://127.0.0.1:%d", port))
	cons := newConsumer(t, js, ackWait)
	publish(t, js, jobs)

	pool := workerpool.New(bound)
	t.Cleanup(pool.Stop)
	var (
		stats   natsfeed.Stats
		errs    errorLog
		mu      sync.Mutex
		seen    = map[string]int{}
		handled atomic.Int64
	)
	h := func(_ context.Context, msg jetstream.Msg) error {
		mu.Lock()
		seen[string(msg.Data())]++
		mu.Unlock()
		handled.Add(1)
		time.Sleep(time.Millisecond)
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fed := make(chan error, 1)
	go func() {
		fed <- natsfeed.Feed(ctx, pool, cons, h, natsfeed.WithMaxInFlight(bound),
			natsfeed.WithStats(&stats), natsfeed.WithErrorHandler(errs.add),
			natsfeed.WithFetchWait(500*time.Millisecond))
	}()
	feedEnded := func() error {
		select {
		case err := <-fed:
			return fmt.Errorf("Feed returned before its ctx was done: %v", err)
		default:
			return nil
		}
	}

	waitFor(t, fmt.Sprintf("%d jobs handled before the kill", killAfter), func() (bool, error) {
		return handled.Load() >= killAfter, errors.Join(feedEnded(), srv.exitedErr())
	})
	down := time.Now()
	require.NoError(t, srv.cmd.Process.Kill(), "kill the server")
	require.Error(t, srv.wait(overall), "the server dies of SIGKILL")
	killedAt := handled.Load()
	require.Less(t, killedAt, int64(jobs), "the kill came mid-stream")
	srv2 := startServerProc(t, "server-2", dir, port)
	outage := time.Since(down)

	waitAllAcked(t, cons, nil, nil, feedEnded)
	cancel()
	select {
	case err := <-fed:
		require.NoError(t, err, "Feed drains and returns nil once its ctx is done")
	case <-time.After(overall):
		t.Fatal("Feed did not return after its ctx was done")
	}
	pool.StopWait()

	mu.Lock()
	defer mu.Unlock()
	assertNoneLost(t, jobs, seen)
	c := stats.Counts()
	assertSettled(t, c, "feed")
	assert.Zero(t, c.Nacked, "naks: the handler never fails")
	assert.Zero(t, c.Terminated, "terms: the handler never fails")
	// Errors are not asserted: how many there are depends on what was on the
	// wire at the kill (an acknowledgement the dead server never answered
	// times out; a pull request just ends empty).
	info, err := js.Stream(context.Background(), "JOBS")
	require.NoError(t, err, "stream after the restart")
	assert.Equal(t, uint64(jobs), info.CachedInfo().State.Msgs, "messages kept in the stream across the kill")
	require.NoError(t, srv2.cmd.Process.Signal(syscall.SIGTERM), "stop the server")
	assert.NoError(t, srv2.wait(overall), "the server shuts down on SIGTERM")

	t.Logf("killed the server after %d of %d jobs handled, new one ready %v later; %d duplicates; counts %+v; took %v",
		killedAt, jobs, outage.Round(time.Millisecond), duplicates(seen), c, time.Since(begin).Round(time.Millisecond))
	t.Logf("%d errors reported; the first: %q", errs.count(), errs.first(5))
}

// connectForever opens a JetStream client on url whose connection
// reconnects forever, every 100ms, and whose asynchronous publishing never
// stalls on 10,000 jobs (the default stalls at 4,000 outstanding, which a
// loaded machine reaches). It is closed when the test ends.
func connectForever(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, reconnectForever...)
	require.NoError(t, err, "connect")
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(1<<16))
	require.NoError(t, err, "jetstream")
	return js
}

// reconnectForever are the options of every connection of these tests.
var reconnectForever = []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond)}

// workerConfig configures a worker process.
type workerConfig struct {
	url   string
	pool  int           // the pool's size
	bound int           // WithMaxInFlight
	work  time.Duration // how long the handler works on a job
}

// startWorkers starts a worker process for each of cfgs and waits until
// each has bound to the consumer. handled counts the jobs they handle as
// they report them.
func startWorkers(t *testing.T, handled *atomic.Int64, cfgs ...workerConfig) []*proc {
	t.Helper()
	workers := make([]*proc, len(cfgs))
	for i, cfg := range cfgs {
		workers[i] = startProc(t, fmt.Sprintf("worker-%d", i), "worker", handled,
			envURL+"="+cfg.url,
			envPool+"="+strconv.Itoa(cfg.pool),
			envBound+"="+strconv.Itoa(cfg.bound),
			envWork+"="+cfg.work.String(),
			envFetchWait+"="+(250*time.Millisecond).String(),
		)
	}
	for _, w := range workers {
		w.waitReady(t)
	}
	return workers
}

// stopWorkers tells each worker to stop (SIGINT) and waits until each has
// drained its Feed and exited.
func stopWorkers(t *testing.T, workers []*proc) {
	t.Helper()
	for _, w := range workers {
		require.NoError(t, w.cmd.Process.Signal(os.Interrupt), "interrupt %s", w.name)
	}
	for _, w := range workers {
		require.NoError(t, w.wait(overall), "%s exits cleanly after SIGINT", w.name)
	}
}

// checkWorkers checks the final report of each stopped worker and returns
// how many times each job was handled by them all.
func checkWorkers(t *testing.T, workers []*proc, bound int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for _, w := range workers {
		f := w.final()
		require.NotNil(t, f, "%s's final report", w.name)
		c := f.Counts
		lines := w.handledLines()
		assert.Empty(t, f.Err, "%s: Feed's result", w.name)
		assert.Positive(t, len(lines), "%s handled some of the jobs", w.name)
		assert.Positive(t, c.MaxInFlight, "%s: MaxInFlight", w.name)
		assert.LessOrEqual(t, c.MaxInFlight, int64(bound), "%s: MaxInFlight within WithMaxInFlight", w.name)
		assert.Equal(t, int64(len(lines)), c.Taken, "%s: messages taken and handled", w.name)
		assertSettled(t, *c, w.name)
		for id, n := range w.handledIDs() {
			seen[id] += n
		}
		t.Logf("%s: handled %d, max in flight %d, redelivered %d, unsettled %d, %d errors %q",
			w.name, len(lines), c.MaxInFlight, c.Redelivered, c.Unsettled, f.Errors, f.Sample)
	}
	return seen
}

// assertNoneLost checks that each of the jobs "0" to "jobs-1" was handled.
func assertNoneLost(t *testing.T, jobs int, seen map[string]int) {
	t.Helper()
	var lost []int
	for i := range jobs {
		if seen[strconv.Itoa(i)] == 0 {
			lost = append(lost, i)
		}
	}
	assert.Empty(t, lost, "jobs never handled (%d of %d)", len(lost), jobs)
	assert.Len(t, seen, jobs, "distinct jobs handled")
	total := 0
	for _, n := range seen {
		total += n
	}
	assert.GreaterOrEqual(t, total, jobs, "handlings")
}

// duplicates is how many handlings were of a job handled before.
func duplicates(seen map[string]int) int {
	n := 0
	for _, k := range seen {
		n += k - 1
	}
	return n
}

// waitAllAcked polls the consumer until every message has been delivered
// and acknowledged (NumPending and NumAckPending both zero), passing each
// answer to sample if it is not nil. It fails the test at once if one of
// workers exits, or a check returns an error, and after overall. Errors
// from the server (while it is down) are retried.
func waitAllAcked(t *testing.T, cons jetstream.Consumer, workers []*proc, sample func(*jetstream.ConsumerInfo), checks ...func() error) {
	t.Helper()
	var last *jetstream.ConsumerInfo
	var lastErr error
	waitFor(t, "all messages acknowledged", func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		info, err := cons.Info(ctx)
		if err != nil {
			lastErr = err
			return false, errors.Join(anyExited(workers), runChecks(checks))
		}
		last = info
		if sample != nil {
			sample(info)
		}
		return info.NumPending == 0 && info.NumAckPending == 0, errors.Join(anyExited(workers), runChecks(checks))
	}, func() string {
		if last == nil {
			return fmt.Sprintf("no consumer info; last error %v", lastErr)
		}
		return fmt.Sprintf("NumPending %d, NumAckPending %d, NumRedelivered %d; last error %v",
			last.NumPending, last.NumAckPending, last.NumRedelivered, lastErr)
	})
}

func runChecks(checks []func() error) error {
	var errs []error
	for _, c := range checks {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

// waitFor polls cond every 20ms until it is true, and fails the test if
// cond returns an error or overall passes; state, if given, describes the
// state in the failure message.
func waitFor(t *testing.T, what string, cond func() (bool, error), state ...func() string) {
	t.Helper()
	deadline := time.Now().Add(overall)
	for {
		ok, err := cond()
		require.NoError(t, err, "while waiting for %s", what)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("timed out after %v waiting for %s", overall, what)
			for _, s := range state {
				msg += ": " + s()
			}
			require.FailNow(t, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err, "listen")
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close(), "close listener")
	return port
}

// startServerProc starts a server process on port storing in dir, and
// waits until it is ready for connections.
func startServerProc(t testing.TB, name, dir string, port int) *proc {
	t.Helper()
	p := startProc(t, name, "server", nil, envStore+"="+dir, envPort+"="+strconv.Itoa(port))
	p.waitReady(t)
	return p
}

// A proc is a child process: the test binary re-executed in a role.
type proc struct {
	name    string
	cmd     *exec.Cmd
	stderr  lockedBuffer
	ready   chan struct{} // closed on the "ready" line
	exited  chan struct{} // closed once stdout is read to the end and the process waited for
	exitErr error         // the process's exit, once exited is closed
	handled *atomic.Int64 // counts "handled" lines, if not nil

	mu      sync.Mutex
	lines   []childLine // the "handled" lines, in order
	done    *childLine  // the final line
	unknown []string    // lines that are not childLines
}

// startProc starts the test binary in role with env added to the
// environment; the process is killed when the test ends, if still alive.
func startProc(t testing.TB, name, role string, handled *atomic.Int64, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{envRole + "=" + role}, env...)...)
	p := &proc{name: name, cmd: cmd, ready: make(chan struct{}), exited: make(chan struct{}), handled: handled}
	cmd.Stderr = &p.stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err, "%s: stdout pipe", name)
	// The child stops when its stdin closes: if this process dies, so do its children.
	_, err = cmd.StdinPipe()
	require.NoError(t, err, "%s: stdin pipe", name)
	require.NoError(t, cmd.Start(), "start %s", name)
	go p.read(stdout)
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if s := p.stderr.String(); s != "" {
			t.Logf("%s stderr (exit %v):\n%s", name, p.exitErr, s)
		}
		if len(p.unknown) > 0 {
			t.Logf("%s wrote %d unexpected lines, the first %q", name, len(p.unknown), p.unknown[0])
		}
	})
	return p
}

// read collects the child's stdout lines until it ends, then waits for the
// process.
func (p *proc) read(stdout io.Reader) {
	defer close(p.exited)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l childLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			p.mu.Lock()
			p.unknown = append(p.unknown, sc.Text())
			p.mu.Unlock()
			continue
		}
		switch l.Kind {
		case "ready":
			close(p.ready)
		case "handled":
			p.mu.Lock()
			p.lines = append(p.lines, l)
			p.mu.Unlock()
			if p.handled != nil {
				p.handled.Add(1)
			}
		case "done":
			p.mu.Lock()
			p.done = &l
			p.mu.Unlock()
		}
	}
	_, _ = io.Copy(io.Discard, stdout) // after a line too long to scan
	p.exitErr = p.cmd.Wait()
}

// waitReady waits for the child's "ready" line.
func (p *proc) waitReady(t testing.TB) {
	t.Helper()
	select {
	case <-p.ready:
	case <-p.exited:
		require.FailNow(t, p.name+" exited before it was ready", "exit %v; stderr:\n%s", p.exitErr, p.stderr.String())
	case <-time.After(overall):
		require.FailNow(t, p.name+" not ready in time")
	}
}

// wait waits until the child has exited and returns how it ended; if it
// does not exit within timeout, it is killed.
func (p *proc) wait(timeout time.Duration) error {
	select {
	case <-p.exited:
		return p.exitErr
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not exit within %v (killed: %v)", p.name, timeout, p.exitErr)
	}
}

// exitedErr is an error if the child has exited.
func (p *proc) exitedErr() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited (%v); stderr:\n%s", p.name, p.exitErr, p.stderr.String())
	default:
		return nil
	}
}

// anyExited is an error if one of procs has exited.
func anyExited(procs []*proc) error {
	for _, p := range procs {
		if err := p.exitedErr(); err != nil {
			return err
		}
	}
	return nil
}

func (p *proc) handledLines() []childLine {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.lines)
}

// handledIDs is how many times the child handled each job.
func (p *proc) handledIDs() map[string]int {
	ids := map[string]int{}
	for _, l := range p.handledLines() {
		ids[l.ID]++
	}
	return ids
}

// redeliveredLines is how many of the jobs the child handled had been
// delivered before.
func (p *proc) redeliveredLines() int {
	n := 0
	for _, l := range p.handledLines() {
		if l.Delivered > 1 {
			n++
		}
	}
	return n
}

// final is the child's final report, nil if it wrote none.
func (p *proc) final() *childLine {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// A childLine is one line a child writes on its stdout, as JSON.
type childLine struct {
	Kind      string           `json:"kind"`                // "ready", "handled" or "done"
	ID        string           `json:"id,omitempty"`        // handled: the job (the message's body)
	Delivered uint64           `json:"delivered,omitempty"` // handled: the server's delivery count
	Counts    *natsfeed.Counts `json:"counts,omitempty"`    // done: the feed's Stats
	Errors    int              `json:"errors,omitempty"`    // done: errors reported to the error handler
	Sample    []string         `json:"sample,omitempty"`    // done: the first of them
	Err       string           `json:"err,omitempty"`       // done: Feed's result
}

// A lineWriter writes childLines to stdout, one Write each.
type lineWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (w *lineWriter) write(l childLine) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = w.enc.Encode(l) // the parent may be gone
}

// An errorLog collects the errors a feed reports.
type errorLog struct {
	mu   sync.Mutex
	n    int
	errs []string // the first 20
}

func (l *errorLog) add(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if len(l.errs) < 20 {
		l.errs = append(l.errs, err.Error())
	}
}

func (l *errorLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *errorLog) first(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.errs[:min(n, len(l.errs))])
}

// A lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// stopContext is done on SIGINT or SIGTERM, or once stdin closes (the
// parent closed it or died).
func stopContext() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	return ctx, func() { cancel(); stop() }
}

// runWorker is the worker role: Feed on the consumer JOBS/workers until
// told to stop, then a final report. It returns the exit code.
func runWorker() int {
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "worker: %s: %v\n", what, err)
		return 1
	}
	poolSize, err := strconv.Atoi(os.Getenv(envPool))
	if err != nil {
		return fail(envPool, err)
	}
	bound, err := strconv.Atoi(os.Getenv(envBound))
	if err != nil {
		return fail(envBound, err)
	}
	work, err := time.ParseDuration(os.Getenv(envWork))
	if err != nil {
		return fail(envWork, err)
	}
	fetchWait, err := time.ParseDuration(os.Getenv(envFetchWait))
	if err != nil {
		return fail(envFetchWait, err)
	}
	ctx, stop := stopContext()
	defer stop()

	nc, err := nats.Connect(os.Getenv(envURL), reconnectForever...)
	if err != nil {
		return fail("connect", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fail("jetstream", err)
	}
	cons, err := js.Consumer(ctx, "JOBS", "workers")
	if err != nil {
		return fail("consumer", err)
	}

	out := &lineWriter{enc: json.NewEncoder(os.Stdout)}
	out.write(childLine{Kind: "ready"})
	pool := workerpool.New(poolSize)
	var stats natsfeed.Stats
	var errs errorLog
	h := func(_ context.Context, msg jetstream.Msg) error {
		l := childLine{Kind: "handled", ID: string(msg.Data()), Delivered: 1}
		if md, err := msg.Metadata(); err == nil {
			l.Delivered = md.NumDelivered
		}
		out.write(l)
		time.Sleep(work)
		return nil
	}
	err = natsfeed.Feed(ctx, pool, cons, h, natsfeed.WithMaxInFlight(bound), natsfeed.WithStats(&stats),
		natsfeed.WithErrorHandler(errs.add), natsfeed.WithFetchWait(fetchWait))
	pool.StopWait()

	c := stats.Counts()
	done := childLine{Kind: "done", Counts: &c, Errors: errs.count(), Sample: errs.first(5)}
	if err != nil {
		done.Err = err.Error()
	}
	out.write(done)
	return 0
}

// runServer is the server role: a JetStream server on 127.0.0.1 at a
// fixed port and store, until killed, or shut down when told to stop. It
// returns the exit code.
func runServer() int {
	port, err := strconv.Atoi(os.Getenv(envPort))
	if err != nil {
		fmt.Fprintf(os.Stderr, "server: %s: %v\n", envPort, err)
		return 1
	}
	ctx, stop := stopContext()
	defer stop()
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: os.Getenv(envStore),
		NoLog: true, NoSigs: true,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "server: %v\n", err)
		return 1
	}
	s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		fmt.Fprintln(os.Stderr, "server: not ready for connections")
		return 1
	}
	(&lineWriter{enc: json.NewEncoder(os.Stdout)}).write(childLine{Kind: "ready"})
	<-ctx.Done()
	s.Shutdown()
	s.WaitForShutdown()
	return 0
}
