package workerpool

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Helpers used by more than one test file, each written once. A helper
// used by one file only stays in that file, next to its tests.

// --- task bodies and meters ---

// gate is a task body that blocks until the test opens it.
type gate chan struct{}

func newGate() gate         { return make(gate) }
func (g gate) wait()        { <-g }
func (g gate) open()        { close(g) }
func (g gate) task() func() { return g.wait }

// release opens g unless it is open already. Tests defer it after the
// pool's Stop, so that a failed require leaves no task blocked in the bubble.
func (g gate) release() {
	if !isClosed(g) {
		g.open()
	}
}

// blockOneWorker fills a one-worker pool with a task that holds the worker
// until the returned gate opens.
func blockOneWorker(t *testing.T, p *WorkerPool) gate {
	t.Helper()
	return blockWorkers(t, p, 1)
}

// blockWorkers fills the pool's n workers with tasks that hold them until
// the returned gate opens.
func blockWorkers(t *testing.T, p *WorkerPool, n int) gate {
	t.Helper()
	g := newGate()
	for range n {
		p.Submit(g.task())
	}
	synctest.Wait()
	require.Equal(t, n, p.Status().Busy, "busy after blocking the workers")
	return g
}

// sleeper is a task that runs for d of (fake) time.
func sleeper(d time.Duration) func() {
	return func() { time.Sleep(d) }
}

// workAsWorker does with j what the worker that took it does, and returns
// the count its return goes to.
func workAsWorker(j *job) *atomic.Uint64 {
	var e ending
	count, _ := j.work(0, &e)
	e.end()
	return count
}

// noopFn is a task body that does nothing.
func noopFn(context.Context) error { return nil }

// fnOf makes body a Task's fn that returns nil.
func fnOf(body func()) func(context.Context) error {
	return func(context.Context) error { body(); return nil }
}

func panickingTask() { panic("boom") }

func panickingFn(context.Context) error { panic("boom") }

var errTask = errors.New("task failed")

var errFlaky = errors.New("flaky")

// recorder records the order in which tasks start.
type recorder struct {
	mu      sync.Mutex
	started []int
}

func (r *recorder) task(i int, body func()) func() {
	return func() {
		r.mu.Lock()
		r.started = append(r.started, i)
		r.mu.Unlock()
		if body != nil {
			body()
		}
	}
}

func (r *recorder) order() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.started...)
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// concurrencyMeter tracks how many tasks run at once.
type concurrencyMeter struct {
	running, peak atomic.Int64
}

func (m *concurrencyMeter) wrap(body func()) func() {
	return m.wrapWeighted(1, body)
}

// wrapWeighted meters body as weight running tasks: the peak is then in
// worker slots.
func (m *concurrencyMeter) wrapWeighted(weight int64, body func()) func() {
	return func() {
		n := m.running.Add(weight)
		for {
			old := m.peak.Load()
			if n <= old || m.peak.CompareAndSwap(old, n) {
				break
			}
		}
		defer m.running.Add(-weight) // also when body panics or exits
		body()
	}
}

// startLog records when each named task started, on the bubble's clock.
type startLog struct {
	mu     sync.Mutex
	t0     time.Time
	starts []string
	at     map[string]time.Duration
}

func newStartLog() *startLog { return &startLog{t0: time.Now(), at: map[string]time.Duration{}} }

func (l *startLog) fn(name string) func(context.Context) error {
	return func(context.Context) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.starts = append(l.starts, name)
		l.at[name] = time.Since(l.t0)
		return nil
	}
}

// runLog records when each run started, on the bubble's clock.
type runLog struct {
	mu sync.Mutex
	t0 time.Time
	at []time.Duration
}

func newRunLog() *runLog { return &runLog{t0: time.Now()} }

// record records a run starting now, and returns how many there were.
func (l *runLog) record() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at = append(l.at, time.Since(l.t0))
	return len(l.at)
}

// task returns a plain task that records its run.
func (l *runLog) task() func() {
	return func() { l.record() }
}

// failing returns a fn that records its run and fails its first fails
// runs with errFlaky (-1: every run).
func (l *runLog) failing(fails int) func(context.Context) error {
	return func(context.Context) error {
		if n := l.record(); fails < 0 || n <= fails {
			return errFlaky
		}
		return nil
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// --- stops and what they leave ---

// A stopMode is one way to stop a pool, and whether it abandons the queue.
// Each call blocks until it returns.
type stopMode struct {
	name     string
	abandons bool
	stop     func(p *WorkerPool)
}

var stopModes = []stopMode{
	{"Stop", true, (*WorkerPool).Stop},
	{"StopWait", false, (*WorkerPool).StopWait},
	{"Shutdown", false, func(p *WorkerPool) { _ = p.Shutdown(context.Background()) }},
	// A guard in TestGroupWaitReturnsAfterStopDropsHeldTasks: the cut
	// cancels the group's context.
	{"ShutdownGivingUp", true, func(p *WorkerPool) { _ = p.Shutdown(canceledContext()) }},
}

// raceEachStop runs round under each way to stop (a subtest each), rounds
// times, a sixth of them with -short, until a round reports failure.
func raceEachStop(t *testing.T, rounds int, round func(t *testing.T, mode stopMode, round int) bool) {
	if testing.Short() {
		rounds /= 6
	}
	for _, mode := range stopModes {
		t.Run(mode.name, func(t *testing.T) {
			for i := range rounds {
				if !round(t, mode, i) {
					return
				}
			}
		})
	}
}

// requireStoppedClean checks the accounting and emptiness guarantees that
// hold once Stop or StopWait has returned; under Block and Reject, every
// place of the bound is free again (none leaked, none given twice).
func requireStoppedClean(t *testing.T, p *WorkerPool) Status {
	t.Helper()
	s := requireStoppedCounts(t, p)
	if p.cfg.roomed {
		assert.Equal(t, uint64(p.cfg.bound), p.room.word.Load(), "room: every place free, no submitter parked")
	}
	return s
}

// requireStoppedCounts is requireStoppedClean but for the room, for a
// check made while calls may still run on other goroutines: such a call
// may have taken a place and not yet made its send, which the stop refuses
// and which then gives the place back.
func requireStoppedCounts(t *testing.T, p *WorkerPool) Status {
	t.Helper()
	s := p.Status()
	assert.Equal(t, "stopped", stateOf(s), "state")
	assert.Equal(t, 0, s.Workers, "workers")
	assert.Equal(t, 0, s.Busy, "busy")
	assert.Equal(t, 0, s.Waiting, "waiting")
	assert.Equal(t, 0, s.Scheduled, "scheduled")
	assert.Equal(t, 0, s.Keys, "keys")
	assert.Equal(t, 0, p.WaitingQueueSize(), "WaitingQueueSize")
	assert.Equal(t, s.Submitted, s.Completed+s.Abandoned+s.Canceled+s.Dropped+s.Expired, "submitted == completed + abandoned + canceled + dropped + expired")
	assert.True(t, p.Stopped(), "Stopped")
	return s
}

// neverRun is the number of tasks s counts as never run, refused ones
// included: each gets one TaskDropped.
func neverRun(s Status) uint64 {
	return s.Rejected + s.Dropped + s.Abandoned + s.Canceled + s.Expired
}

// untilFailure runs round in a fresh synctest bubble, rounds times, and
// stops at the first round that fails.
func untilFailure(t *testing.T, rounds int, round func(t *testing.T, round int)) {
	t.Helper()
	for i := range rounds {
		failed := false
		synctest.Test(t, func(t *testing.T) {
			round(t, i)
			failed = t.Failed()
		})
		if failed {
			return
		}
	}
}

// letter is one call of the dead-letter handler.
type letter struct {
	task   func()
	reason error
}

// letterBox is a dead-letter handler that records its letters in the order
// it gets them.
type letterBox struct {
	mu      sync.Mutex
	letters []letter
}

func (b *letterBox) handle(task func(), reason error) {
	b.mu.Lock()
	b.letters = append(b.letters, letter{task, reason})
	b.mu.Unlock()
}

func (b *letterBox) got() []letter {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]letter(nil), b.letters...)
}

// --- calls on their own goroutine ---

// recovered calls f and returns what it panicked with, as an error.
func recovered(f func()) (err error, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			panicked = true
			if e, ok := r.(error); ok {
				err = e
			} else {
				err = fmt.Errorf("panicked with a non-error: %v", r)
			}
		}
	}()
	f()
	return nil, false
}

// tryDo submits task with DoContext and a ctx that is already done, which
// takes the task only if it need not wait for room, and reports whether
// the pool took it.
func tryDo(p *WorkerPool, task func()) bool { return p.DoContext(doneContext, task) == nil }

// tryDoContext tries a no-op task with opts on p: DoContext with a ctx
// that is already done.
func tryDoContext(p *WorkerPool, opts ...TaskOption) error {
	return p.DoContext(doneContext, func() {}, opts...)
}

// doneContext is a context that is already canceled.
var doneContext = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// errTryFalse stands for a TryDo that returned false.
var errTryFalse = fmt.Errorf("%w: TryDo returned false", ErrQueueFull)

// callResult is what a submitter learned when its call returned.
type callResult struct {
	err      error        // returned, panicked with (panicked set), or reported by a handle already settled when the call returned; nil: accepted
	panicked bool         // Submit or SubmitWait panicked
	outcome  func() error // handles and groups: waits for the task's outcome
}

// A boundCall is one way to submit under a bound.
type boundCall struct {
	name  string
	tasks int  // tasks the call submits, each running body
	waits bool // the call returns only once its task has run (DoWait, SubmitWait)
	call  func(p *WorkerPool, ctx context.Context, body func()) callResult
}

var (
	submitCall = boundCall{"Submit", 1, false, func(p *WorkerPool, _ context.Context, body func()) callResult {
		err, panicked := recovered(func() { p.Submit(body) })
		return callResult{err: err, panicked: panicked}
	}}
	doCall = boundCall{"Do", 1, false, func(p *WorkerPool, _ context.Context, body func()) callResult {
		return callResult{err: p.Do(body)}
	}}
	doWaitCall = boundCall{"DoWait", 1, true, func(p *WorkerPool, _ context.Context, body func()) callResult {
		return callResult{err: p.DoWait(body)}
	}}
	doContextCall = boundCall{"DoContext", 1, false, func(p *WorkerPool, ctx context.Context, body func()) callResult {
		return callResult{err: p.DoContext(ctx, body)}
	}}
	tryDoCall = boundCall{"TryDo", 1, false, func(p *WorkerPool, _ context.Context, body func()) callResult {
		if !tryDo(p, body) {
			return callResult{err: errTryFalse}
		}
		return callResult{}
	}}
	submitWaitCall = boundCall{"SubmitWait", 1, true, func(p *WorkerPool, _ context.Context, body func()) callResult {
		err, panicked := recovered(func() { p.SubmitWait(body) })
		return callResult{err: err, panicked: panicked}
	}}
	goCall = boundCall{"Go", 1, false, func(p *WorkerPool, ctx context.Context, body func()) callResult {
		tk := p.Go(ctx, fnOf(body))
		r := callResult{outcome: tk.Wait}
		if isDone(tk.Done()) {
			r.err = tk.Wait()
		}
		return r
	}}
	callCall = boundCall{"Call", 1, false, func(p *WorkerPool, ctx context.Context, body func()) callResult {
		f := GoResult(ctx, p, func(context.Context) (int, error) { body(); return 7, nil })
		r := callResult{outcome: func() error {
			v, err := f.Wait()
			if err == nil && v != 7 {
				return fmt.Errorf("Future.Wait returned %d, want 7", v)
			}
			return err
		}}
		if isDone(f.Done()) {
			r.err = r.outcome()
		}
		return r
	}}
	groupGoCall = boundCall{"Group.Go", 1, false, func(p *WorkerPool, ctx context.Context, body func()) callResult {
		g := p.Group(ctx)
		g.Go(fnOf(body))
		return callResult{outcome: g.Wait}
	}}
	doBatchCall = boundCall{"DoBatch", 2, false, func(p *WorkerPool, _ context.Context, body func()) callResult {
		return callResult{err: p.DoBatch([]func(){body, nil, body})}
	}}
	doBatchOfOneCall = boundCall{"DoBatch of 1", 1, false, func(p *WorkerPool, _ context.Context, body func()) callResult {
		return callResult{err: p.DoBatch([]func(){nil, body})}
	}}
)

// pendingCall is one call on its own goroutine.
type pendingCall struct {
	done chan struct{}
	res  callResult
	at   time.Duration // when it returned, in fake time since t0
}

func startCall(p *WorkerPool, c boundCall, ctx context.Context, body func(), t0 time.Time) *pendingCall {
	pc := &pendingCall{done: make(chan struct{})}
	go func() {
		defer close(pc.done)
		pc.res = c.call(p, ctx, body)
		pc.at = time.Since(t0)
	}()
	return pc
}

func (pc *pendingCall) returned() bool { return isClosed(pc.done) }

// returnsAtOnce calls f on its own goroutine and returns what it returned,
// if it returned by the time every goroutine of the bubble is blocked.
func returnsAtOnce(f func() error) (err error, ok bool) {
	done := make(chan error, 1)
	go func() { done <- f() }()
	synctest.Wait()
	select {
	case err := <-done:
		return err, true
	default:
		return nil, false
	}
}

// fullQueue is a pool of two workers with a bound of two waiting tasks,
// whose workers run tasks that wait for running, and whose queue holds two
// fillers (ids 0 and 1 in fillers) that wait for queued once they run:
// every worker is busy and the queue is full. Opening running frees both
// places at once, without letting any new task start.
type fullQueue struct {
	p                *WorkerPool
	running, queued  gate
	fillers          recorder
	box              *letterBox
	submittedAtStart uint64
}

func newFullQueue(t *testing.T, policy Overflow, opts ...Option) *fullQueue {
	t.Helper()
	fq := &fullQueue{running: newGate(), queued: newGate(), box: new(letterBox)}
	opts = append([]Option{WithMaxWaiting(2, policy), WithIdleTimeout(-1), WithHooks(Hooks{DeadLetter: fq.box.handle})}, opts...)
	fq.p = New(2, opts...)
	fq.p.Submit(fq.running.task())
	fq.p.Submit(fq.running.task())
	fq.p.Submit(fq.fillers.task(0, fq.queued.wait))
	fq.p.Submit(fq.fillers.task(1, fq.queued.wait))
	synctest.Wait()
	s := fq.p.Status()
	require.Equal(t, 2, s.Busy, "busy")
	require.Equal(t, 2, s.Waiting, "waiting: the queue is full")
	fq.submittedAtStart = s.Submitted
	return fq
}

// release opens both gates; tests defer it after the pool's Stop.
func (fq *fullQueue) release() {
	fq.running.release()
	fq.queued.release()
}

// waitIdleCall is one WaitIdle call on its own goroutine: what it returned,
// and when, in fake time since t0.
type waitIdleCall struct {
	done chan struct{}
	err  error
	at   time.Duration
}

func goWaitIdle(p *WorkerPool, ctx context.Context, t0 time.Time) *waitIdleCall {
	c := &waitIdleCall{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.err = p.WaitIdle(ctx)
		c.at = time.Since(t0)
	}()
	return c
}

// returned reports whether WaitIdle has returned; err and at are valid
// once it reports true.
func (c *waitIdleCall) returned() bool { return isClosed(c.done) }

// batchCall is one DoBatch call on its own goroutine.
type batchCall struct {
	done chan struct{}
	err  error
}

func goDoBatch(p *WorkerPool, tasks []func()) *batchCall {
	c := &batchCall{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.err = p.DoBatch(tasks)
	}()
	return c
}

func (c *batchCall) returned() bool { return isClosed(c.done) }

// isDone reports, without blocking, whether a handle's Done channel is closed.
func isDone(c <-chan struct{}) bool { return isClosed(c) }

// canceledContext returns a context that is done already.
func canceledContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// --- holding a goroutine at a chosen point ---

// frameStallingContext is a context whose Err stalls, once, on the first
// goroutine that calls it with frame on its stack (such as
// "(*dispatcher).acceptJob("), until release is closed: it holds that
// goroutine at a chosen point, as a slow scheduler could.
type frameStallingContext struct {
	context.Context
	frame            string
	stalled, release chan struct{}
	once             sync.Once
}

func newFrameStallingContext(ctx context.Context, frame string) *frameStallingContext {
	return &frameStallingContext{Context: ctx, frame: frame, stalled: make(chan struct{}), release: make(chan struct{})}
}

func (c *frameStallingContext) Err() error {
	if strings.Contains(ownStack(), c.frame) {
		stall := false
		c.once.Do(func() { stall = true; close(c.stalled) })
		if stall {
			<-c.release
		}
	}
	return c.Context.Err()
}

// resume lets the stalled goroutine go on; it may be called again.
func (c *frameStallingContext) resume() {
	if !isClosed(c.release) {
		close(c.release)
	}
}

// stallingHandler is a slog.Handler that stalls the goroutine that logs a
// record with message match, once, until release is closed: it holds a
// call at a known point, such as the "pool stopping" record that Stop logs
// after it began abandoning and before its stop message.
type stallingHandler struct {
	match            string
	stalled, release chan struct{}
	once             sync.Once
}

func newStallingHandler(match string) *stallingHandler {
	return &stallingHandler{match: match, stalled: make(chan struct{}), release: make(chan struct{})}
}

func (h *stallingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *stallingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *stallingHandler) WithGroup(string) slog.Handler            { return h }

func (h *stallingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.match {
		stall := false
		h.once.Do(func() { stall = true; close(h.stalled) })
		if stall {
			<-h.release
		}
	}
	return nil
}

// resume lets the stalled goroutine go on; it may be called again.
func (h *stallingHandler) resume() {
	if !isClosed(h.release) {
		close(h.release)
	}
}

// gatedErrContext is a context that is never done, whose Err blocks once,
// on its first call after arm, until release is closed. Dispatch calls a
// Task's ctx.Err (through job.settleIfBlocked), so this holds dispatch at
// an exact point of acceptJob, as a preemption there would.
type gatedErrContext struct {
	context.Context
	armed   atomic.Bool
	entered chan struct{} // closed when Err blocks
	release chan struct{}
}

func newGatedErrContext() *gatedErrContext {
	return &gatedErrContext{Context: context.Background(), entered: make(chan struct{}), release: make(chan struct{})}
}

func (c *gatedErrContext) arm() { c.armed.Store(true) }

func (c *gatedErrContext) Err() error {
	if c.armed.CompareAndSwap(true, false) {
		close(c.entered)
		<-c.release
	}
	return c.Context.Err()
}

// --- goroutines and their stacks ---

// stackInto returns runtime.Stack's dump of the calling goroutine, or of
// every goroutine (all), written into buf or, if it does not fit there,
// into a buffer grown until it does, which it returns for the next dump.
func stackInto(buf []byte, all bool) (string, []byte) {
	for {
		if n := runtime.Stack(buf, all); n < len(buf) {
			return string(buf[:n]), buf
		}
		buf = make([]byte, 2*len(buf))
	}
}

// currentStack is the calling goroutine's stack: its header
// ("goroutine 7 [running]:"), its frames, and the line that names its
// creator.
func currentStack() string {
	stack, _ := stackInto(make([]byte, 4<<10), false)
	return stack
}

// A stackDump takes dumps of every goroutine's stack in one buffer, grown
// to fit once and kept, so that a dump taken right after a call returns
// allocates nothing first.
type stackDump struct{ buf []byte }

// all is a dump of every goroutine's stack (see goroutineStacks).
func (d *stackDump) all() string {
	if d.buf == nil {
		d.buf = make([]byte, 1<<20)
	}
	dump, buf := stackInto(d.buf, true)
	d.buf = buf
	return dump
}

// allStacks is a dump of every goroutine's stack, for a failure message.
func allStacks() string { return new(stackDump).all() }

// goroutineStacks splits a dump of every goroutine into their stacks; the
// calling goroutine's comes first.
func goroutineStacks(dump string) []string { return strings.Split(dump, "\n\n") }

// ownStack is the calling goroutine's stack, up to the line that names
// its creator.
func ownStack() string {
	stack := currentStack()
	if i := strings.Index(stack, "\ncreated by "); i >= 0 {
		stack = stack[:i]
	}
	return stack
}

// onDispatcher reports whether the calling goroutine is the dispatcher:
// its stack shows dispatcher.run. (A worker's shows the dispatcher's
// closure that started it, not run.)
func onDispatcher() bool {
	return strings.Contains(ownStack(), "(*dispatcher).run(")
}

// goroutineIDOf returns the id in a goroutine's stack header.
func goroutineIDOf(stack string) string {
	id, _, _ := strings.Cut(strings.TrimPrefix(stack, "goroutine "), " ")
	return id
}

// goroutineID returns the id of the calling goroutine, from its stack.
func goroutineID() string { return goroutineIDOf(currentStack()) }

// bubbleOf returns the synctest bubble named in a goroutine's stack header,
// such as "synctest bubble 3", or "" if it is in none.
func bubbleOf(stack string) string {
	header, _, _ := strings.Cut(stack, "\n")
	i := strings.Index(header, "synctest bubble ")
	if i < 0 {
		return ""
	}
	return strings.TrimRight(header[i:], "]:")
}

// currentBubble returns the synctest bubble of the calling goroutine, or
// "" if it is in none (see bubbleOf).
func currentBubble() string { return bubbleOf(currentStack()) }

// poolPackageFrame is how a stack dump names a function of this package.
const poolPackageFrame = "github.com/e86d9661/workerpool."

// poolFrame returns the name of the innermost frame of this package in a
// goroutine's stack, without its arguments, or "" if it has none ("created
// by" lines name the creator, not a frame).
func poolFrame(stack string) string {
	for _, line := range strings.Split(stack, "\n") {
		if strings.HasPrefix(line, poolPackageFrame) {
			name, _, _ := strings.Cut(strings.TrimPrefix(line, poolPackageFrame), "(0x")
			return strings.TrimSuffix(strings.TrimSuffix(name, "(...)"), "()")
		}
	}
	return ""
}

// poolGoroutines returns, by goroutine id, the stack of every goroutine of
// dump (see stackDump) but the caller that has a frame of this package
// (see poolFrame).
func poolGoroutines(dump string) map[string]string {
	found := map[string]string{}
	for i, block := range goroutineStacks(dump) {
		if i == 0 {
			continue // runtime.Stack puts the calling goroutine first
		}
		if finishingGoexit(block) {
			continue
		}
		if poolFrame(block) != "" {
			found[goroutineIDOf(block)] = block
		}
	}
	return found
}

// finishingGoexit reports whether a goroutine is inside runtime.Goexit.
// Seen after a stop returned, that is a worker whose task called Goexit and
// which has run its deferred calls into the pool, and is at most finishing
// the last one, its WaitGroup's Done: the stop could not have returned
// before Done had counted it. The runtime keeps a Goexit'd goroutine's
// frames until it frees it, and nothing can wait for that; it runs no pool
// code, and never will.
func finishingGoexit(block string) bool {
	return strings.Contains(block, "\nruntime.Goexit(")
}

// --- logs, child processes, benchmarks ---

// logBuffer collects a JSON handler's records, one map per record.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// logger returns a logger that writes every record of level and above to b.
func (b *logBuffer) logger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: level}))
}

// records returns the records logged at level or above.
func (b *logBuffer) records(t *testing.T, level slog.Level) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for line := range strings.Lines(b.buf.String()) {
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &r), "record %q", line)
		var l slog.Level
		require.NoError(t, l.UnmarshalText([]byte(r["level"].(string))))
		if l >= level {
			out = append(out, r)
		}
	}
	return out
}

// requireChildPanics runs the test named test again in a child process,
// with the environment variable env set to 1 so that it knows it is the
// child, requires the child to exit as an unrecovered panic makes a
// program exit, and returns what it printed.
func requireChildPanics(t *testing.T, test, env string) string {
	t.Helper()
	out, err := runChild(t, test, env)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "child exited cleanly:\n%s", out)
	assert.Equal(t, 2, exit.ExitCode(), "exit code of an unrecovered panic")
	return out
}

// runChild runs test again in a child process with env=1 and returns its
// output and exit error.
func runChild(t *testing.T, test, env string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), env+"=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// benchmarkSubmit submits no-op tasks to a pool of workers made with
// options, one at a time, and waits for all of them.
func benchmarkSubmit(b *testing.B, workers int, options ...Option) {
	p, wg := New(workers, options...), new(sync.WaitGroup)
	defer p.StopWait()
	task := wg.Done
	b.ReportAllocs()
	for b.Loop() {
		wg.Add(1)
		p.Submit(task)
	}
	wg.Wait()
}

// --- task options over every call that takes them ---

// An optionCall is one way to give a task TaskOptions: a handle (Go, Call,
// Group.Go), a plain task with a waiter (DoWaitContext) or a plain task
// without one (DoContext). give gives body to p with
// opts and returns what to wait on: a handle's outcome, or, for a plain
// task, the call's error (nil once it was accepted; a plain task that
// never runs goes to the dead-letter handler).
type optionCall struct {
	name  string
	plain bool
	give  func(p *WorkerPool, ctx context.Context, body func(context.Context) error, opts ...TaskOption) (wait func() error)
}

// optionCalls are the calls that take TaskOptions. A test of an option's
// rule runs over all of them.
var optionCalls = []optionCall{
	{"Go", false, func(p *WorkerPool, ctx context.Context, body func(context.Context) error, opts ...TaskOption) func() error {
		return p.Go(ctx, body, opts...).Wait
	}},
	{"Call", false, func(p *WorkerPool, ctx context.Context, body func(context.Context) error, opts ...TaskOption) func() error {
		f := GoResult(ctx, p, func(ctx context.Context) (int, error) { return 0, body(ctx) }, opts...)
		return func() error { _, err := f.Wait(); return err }
	}},
	{"Group.Go", false, func(p *WorkerPool, ctx context.Context, body func(context.Context) error, opts ...TaskOption) func() error {
		g := p.Group(ctx)
		g.Go(body, opts...)
		return g.Wait
	}},
	{"DoContext", true, func(p *WorkerPool, ctx context.Context, body func(context.Context) error, opts ...TaskOption) func() error {
		err := p.DoContext(ctx, func() { _ = body(ctx) }, opts...)
		return func() error { return err }
	}},
}

// forEachOptionCall runs test in a synctest bubble for each optionCall.
func forEachOptionCall(t *testing.T, test func(t *testing.T, c optionCall)) {
	forEachCall(t, optionCalls, test)
}

// forEachPlainOptionCall is forEachOptionCall for the calls of plain
// tasks without a waiter (DoContext), whose lost tasks go to the
// dead-letter handler.
func forEachPlainOptionCall(t *testing.T, test func(t *testing.T, c optionCall)) {
	var plain []optionCall
	for _, c := range optionCalls {
		if c.plain {
			plain = append(plain, c)
		}
	}
	forEachCall(t, plain, test)
}

func forEachCall(t *testing.T, calls []optionCall, test func(t *testing.T, c optionCall)) {
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { test(t, c) })
		})
	}
}

// recordingLog is a slog.Handler that keeps every record with the
// attributes its logger added.
type recordingLog struct {
	parent *recordingLog
	with   []slog.Attr
	mu     chan struct{} // a one-slot lock, which a synctest bubble can wait on
	recs   []loggedRecord
}

type loggedRecord struct {
	msg string
	kv  map[string]string
}

func (r loggedRecord) attrs(keys ...string) map[string]string {
	m := map[string]string{}
	for _, k := range keys {
		if v, ok := r.kv[k]; ok {
			m[k] = v
		}
	}
	return m
}

func (l *recordingLog) root() *recordingLog {
	if l.parent != nil {
		return l.parent.root()
	}
	if l.mu == nil {
		l.mu = make(chan struct{}, 1)
	}
	return l
}

func (l *recordingLog) Enabled(context.Context, slog.Level) bool { return true }

func (l *recordingLog) WithAttrs(as []slog.Attr) slog.Handler {
	return &recordingLog{parent: l.root(), with: append(append([]slog.Attr(nil), l.with...), as...)}
}

func (l *recordingLog) WithGroup(string) slog.Handler { return l }

func (l *recordingLog) Handle(_ context.Context, r slog.Record) error {
	rec := loggedRecord{msg: r.Message, kv: map[string]string{}}
	for _, a := range l.with {
		rec.kv[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.kv[a.Key] = a.Value.String()
		return true
	})
	root := l.root()
	root.mu <- struct{}{}
	root.recs = append(root.recs, rec)
	<-root.mu
	return nil
}

func (l *recordingLog) withMessage(msg string) []loggedRecord {
	root := l.root()
	root.mu <- struct{}{}
	defer func() { <-root.mu }()
	var out []loggedRecord
	for _, r := range root.recs {
		if strings.EqualFold(r.msg, msg) {
			out = append(out, r)
		}
	}
	return out
}

// A startTrace records when each named run started, since the trace was
// made, on the bubble's clock (the keys and key limit tests use it).
type startTrace struct {
	mu     sync.Mutex
	t0     time.Time
	starts []traceStart
}

type traceStart struct {
	name string
	at   time.Duration
}

func newStartTrace() *startTrace { return &startTrace{t0: time.Now()} }

// since is the time since the trace was made.
func (r *startTrace) since() time.Duration { return time.Since(r.t0) }

func (r *startTrace) record(name string) {
	r.mu.Lock()
	r.starts = append(r.starts, traceStart{name, r.since()})
	r.mu.Unlock()
}

// fn is a Task's fn that records its start as name and runs for d.
func (r *startTrace) fn(name string, d time.Duration) func(context.Context) error {
	return func(context.Context) error {
		r.record(name)
		time.Sleep(d)
		return nil
	}
}

// task is fn as a plain task.
func (r *startTrace) task(name string, d time.Duration) func() {
	return func() { _ = r.fn(name, d)(context.Background()) }
}

// runs are the starts as "name@time", by time; runs that started at one
// instant are sorted by name, as workers that start at once record in any
// order.
func (r *startTrace) runs() []string {
	r.mu.Lock()
	starts := slices.Clone(r.starts)
	r.mu.Unlock()
	slices.SortStableFunc(starts, func(a, b traceStart) int {
		return cmp.Or(cmp.Compare(a.at, b.at), strings.Compare(a.name, b.name))
	})
	out := make([]string, len(starts))
	for i, s := range starts {
		out[i] = s.name + "@" + s.at.String()
	}
	return out
}

// order is the starts as "name@time" in the order they were recorded.
func (r *startTrace) order() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.starts))
	for i, s := range r.starts {
		out[i] = s.name + "@" + s.at.String()
	}
	return out
}

// stopWaitRan stops p with StopWait, asserts that the runs were want, and
// requires p stopped clean (see requireStoppedClean), whose Status it
// returns.
func (r *startTrace) stopWaitRan(t *testing.T, p *WorkerPool, want ...string) Status {
	t.Helper()
	p.StopWait()
	assert.Equal(t, want, r.runs(), "runs")
	return requireStoppedClean(t, p)
}

// sleepUntil sleeps until the trace's clock reads at.
func (r *startTrace) sleepUntil(at time.Duration) {
	time.Sleep(at - r.since())
	synctest.Wait()
}

// settledAt is a handle's outcome and when, on the trace's clock, its Wait
// returned.
type settledAt struct {
	err error
	at  time.Duration
}

// watch waits for tk on its own goroutine; the outcome is read once the
// returned channel has it.
func (r *startTrace) watch(tk *Task) <-chan settledAt {
	c := make(chan settledAt, 1)
	go func() {
		err := tk.Wait()
		c <- settledAt{err, r.since()}
	}()
	return c
}

// requireSettled requires c to hold the outcome by now.
func requireSettled(t *testing.T, c <-chan settledAt, what string) settledAt {
	t.Helper()
	synctest.Wait()
	select {
	case s := <-c:
		return s
	default:
		require.FailNow(t, what+": Wait has not returned")
		return settledAt{}
	}
}

// stateOf names the life-cycle stage a Status shows: "running", "paused",
// "stopping" or "stopped".
func stateOf(s Status) string {
	switch {
	case s.Stopped:
		return "stopped"
	case s.Stopping:
		return "stopping"
	case s.Paused:
		return "paused"
	}
	return "running"
}

// sizeSchedule is WithMinWorkers's schedule alone, with every window read
// on loc's clock: it leaves the floor as other options set it.
func sizeSchedule(loc *time.Location, windows ...SizeWindow) Option {
	table := newSizeTable(inLocation(loc, windows))
	return func(c *config) { c.sizes = table }
}

// inLocation is a copy of windows, each read on loc's clock.
func inLocation(loc *time.Location, windows []SizeWindow) []SizeWindow {
	windows = slices.Clone(windows)
	for i := range windows {
		windows[i].Location = loc
	}
	return windows
}

// refusedFull reports whether err says a full queue refused the task, as
// opposed to dropping it for a newer one (errDropped, which also wraps
// ErrQueueFull).
func refusedFull(err error) bool {
	return errors.Is(err, ErrQueueFull) && !errors.Is(err, errDropped)
}
