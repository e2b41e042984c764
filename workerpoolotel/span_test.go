package workerpoolotel

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
)

// newTraced returns hooks, for the pool named pool, that trace with tp and
// measure nothing.
func newTraced(t *testing.T, tp trace.TracerProvider, pool string, opts ...Option) workerpool.Hooks {
	t.Helper()
	hooks, err := NewHooks(pool, append([]Option{WithTracerProvider(tp), WithMeterProvider(metricnoop.NewMeterProvider())}, opts...)...)
	require.NoError(t, err, "NewHooks")
	return hooks
}

// testSpan is a span the test itself started: no attributes.
func testSpan(name, parent string, start, end time.Duration) span {
	return span{Name: name, Parent: parent, Start: start, End: end, Attributes: map[attribute.Key]any{}}
}

// TestSpansOnEveryPath gives a task to a pool of one worker by every call
// there is, each task running 1s, and each call in turn: every run gets a
// span, named by its label, with its exact wait; the runs of Go, GoResult,
// Group.Go and DoContext are children of the submitter's span, the others
// (and a DoContext given a ctx without a span) roots; a span the task
// starts with its ctx is a child of its run's.
func TestSpansOnEveryPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp, rec := newRecorded(t)
		p := workerpool.New(1, workerpool.WithHooks(newTraced(t, tp, "paths")))
		defer p.Stop()
		t0 := time.Now()
		test := tp.Tracer("test")
		ctx, submitter := test.Start(t.Context(), "submitter")
		second := func() { time.Sleep(time.Second) }

		p.Submit(second)
		require.NoError(t, p.DoContext(context.Background(), second, workerpool.TaskOption{Label: "do"}), "Do")
		require.NoError(t, p.DoContext(ctx, second, workerpool.TaskOption{Label: "docontext"}), "DoContext")
		done, cancel := context.WithCancel(context.Background())
		cancel()
		require.NoError(t, p.DoContext(done, second, workerpool.TaskOption{Label: "try"}), "DoContext with a ctx done: a try")
		require.NoError(t, p.DoBatch([]func(){second}), "DoBatch")
		require.NoError(t, p.DoWait(second), "DoWait")

		var inGo trace.SpanContext
		task := p.Go(ctx, func(ctx context.Context) error {
			inGo = trace.SpanContextFromContext(ctx)
			_, inside := test.Start(ctx, "inside go")
			defer inside.End()
			time.Sleep(time.Second)
			return nil
		}, workerpool.TaskOption{Label: "go", Priority: 7})
		future := workerpool.GoResult(ctx, p, func(context.Context) (int, error) {
			time.Sleep(time.Second)
			return 1, nil
		}, workerpool.TaskOption{Label: "goresult"})
		g := p.Group(ctx)
		g.Go(func(context.Context) error {
			time.Sleep(time.Second)
			return nil
		}, workerpool.TaskOption{Label: "group"})
		require.NoError(t, task.Wait(), "Go's Wait")
		_, err := future.Wait()
		require.NoError(t, err, "GoResult's Wait")
		require.NoError(t, g.Wait(), "Group's Wait")
		submitter.End()

		s := time.Second
		assert.Equal(t, []span{
			{Name: "workerpool.task", Start: 0, End: s, Attributes: attrs("paths", "", 1, 0, 0)},
			{Name: "do", Start: s, End: 2 * s, Attributes: attrs("paths", "do", 1, 0, 1)},
			{Name: "docontext", Parent: "submitter", Start: 2 * s, End: 3 * s, Attributes: attrs("paths", "docontext", 1, 0, 2)},
			{Name: "try", Start: 3 * s, End: 4 * s, Attributes: attrs("paths", "try", 1, 0, 3)},
			{Name: "workerpool.task", Start: 4 * s, End: 5 * s, Attributes: attrs("paths", "", 1, 0, 4)},
			{Name: "workerpool.task", Start: 5 * s, End: 6 * s, Attributes: attrs("paths", "", 1, 0, 5)},
			testSpan("inside go", "go", 6*s, 7*s),
			{Name: "go", Parent: "submitter", Start: 6 * s, End: 7 * s, Attributes: attrs("paths", "go", 1, 7, 0)},
			{Name: "goresult", Parent: "submitter", Start: 7 * s, End: 8 * s, Attributes: attrs("paths", "goresult", 1, 0, 1)},
			{Name: "group", Parent: "submitter", Start: 8 * s, End: 9 * s, Attributes: attrs("paths", "group", 1, 0, 2)},
			testSpan("submitter", "", 0, 9*s),
		}, spansOf(t, rec, t0, ""), "a span per run")
		ended := rec.Ended()
		assert.Equal(t, ended[7].SpanContext(), inGo, "the span in Go's fn's ctx is its run's")
	})
}

// TestSpansOfRetriesAreSiblings retries a task twice, 1s after each
// failure: each run gets a span of its own, numbered, a child of the
// submitter's span (not of the run before), which the run's ctx holds.
func TestSpansOfRetriesAreSiblings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp, rec := newRecorded(t)
		p := workerpool.New(2, workerpool.WithHooks(newTraced(t, tp, "retrying")))
		defer p.Stop()
		t0 := time.Now()
		ctx, submitter := tp.Tracer("test").Start(t.Context(), "submitter")

		var seen []trace.SpanID
		retried := p.Go(ctx, func(ctx context.Context) error {
			seen = append(seen, trace.SpanContextFromContext(ctx).SpanID())
			time.Sleep(time.Second / 2)
			if len(seen) < 3 {
				return errors.New("not yet")
			}
			return nil
		}, workerpool.TaskOption{Label: "fetch"}, workerpool.TaskOption{Retry: func(int, error) (time.Duration, bool) { return time.Second, true }})
		require.NoError(t, retried.Wait(), "the retried task")
		submitter.End()

		failed := []map[attribute.Key]any{exception("*errors.errorString", "not yet")}
		assert.Equal(t, []span{
			{Name: "fetch", Parent: "submitter", Start: 0, End: time.Second / 2, Attributes: attrs("retrying", "fetch", 1, 0, 0),
				Status: codes.Error, Description: "not yet", Events: failed},
			{Name: "fetch", Parent: "submitter", Start: 3 * time.Second / 2, End: 2 * time.Second, Attributes: attrs("retrying", "fetch", 2, 0, 0),
				Status: codes.Error, Description: "not yet", Events: failed},
			{Name: "fetch", Parent: "submitter", Start: 3 * time.Second, End: 7 * time.Second / 2, Attributes: attrs("retrying", "fetch", 3, 0, 0)},
			testSpan("submitter", "", 0, 7*time.Second/2),
		}, spansOf(t, rec, t0, ""), "a span per run")
		var ids []trace.SpanID
		for _, s := range rec.Ended()[:3] {
			ids = append(ids, s.SpanContext().SpanID())
		}
		assert.Equal(t, ids, seen, "each run's ctx holds its own span")
	})
}

// TestSpansRecordFailures runs tasks that fail in every way: each span
// gets the status Error and an exception event; a panic's event says what
// the task panicked with, and carries its stack. The handles report what
// they would without hooks.
func TestSpansRecordFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp, rec := newRecorded(t)
		p := workerpool.New(1, workerpool.WithHooks(newTraced(t, tp, "failing")),
			workerpool.WithHooks(workerpool.Hooks{Panic: func(any) {}}))
		defer p.Stop()
		t0 := time.Now()
		ctx := t.Context()
		errFail := errors.New("no luck")
		label := func(l string) workerpool.TaskOption { return workerpool.TaskOption{Label: l} }

		assert.ErrorIs(t, p.Go(ctx, func(context.Context) error { return errFail }, label("returns")).Wait(), errFail, "Go's error")
		panicked := p.Go(ctx, func(context.Context) error { panic("boom") }, label("panics")).Wait()
		var pe *workerpool.PanicError
		require.ErrorAs(t, panicked, &pe, "Go's panic")
		assert.Equal(t, "boom", pe.Value, "panic value")
		assert.ErrorIs(t, p.Go(ctx, func(context.Context) error { runtime.Goexit(); return nil }, label("exits")).Wait(), workerpool.ErrGoexit, "Go's Goexit")
		_, err := workerpool.GoResult(ctx, p, func(context.Context) (int, error) { panic(errFail) }, label("goresult panics")).Wait()
		assert.ErrorIs(t, err, errFail, "GoResult's panic, unwrapped")
		assert.NoError(t, p.DoContext(context.Background(), func() { panic(42) }, label("plain panics")), "DoContext of a func whose panic the Panic hook takes")
		p.StopWait() // the plain task has run

		const errType = "*errors.errorString"
		stackEvent := func(typ, message string) []map[attribute.Key]any {
			e := exception(typ, message)
			e["exception.stacktrace"] = "(stack)"
			return []map[attribute.Key]any{e}
		}
		assert.Equal(t, []span{
			{Name: "returns", Attributes: attrs("failing", "returns", 1, 0, 0), Status: codes.Error, Description: "no luck",
				Events: []map[attribute.Key]any{exception(errType, "no luck")}},
			{Name: "panics", Attributes: attrs("failing", "panics", 1, 0, 0), Status: codes.Error, Description: panicked.Error(),
				Events: stackEvent("string", "boom")},
			{Name: "exits", Attributes: attrs("failing", "exits", 1, 0, 0), Status: codes.Error, Description: workerpool.ErrGoexit.Error(),
				Events: []map[attribute.Key]any{exception(errType, workerpool.ErrGoexit.Error())}},
			{Name: "goresult panics", Attributes: attrs("failing", "goresult panics", 1, 0, 0), Status: codes.Error, Description: err.Error(),
				Events: stackEvent(errType, "no luck")},
			{Name: "plain panics", Attributes: attrs("failing", "plain panics", 1, 0, 0), Status: codes.Error,
				Description: (&workerpool.PanicError{Value: 42}).Error(), Events: stackEvent("int", "42")},
		}, spansOf(t, rec, t0, "TestSpansRecordFailures"), "spans of failed runs")
	})
}

// TestSpansNoneForTasksThatNeverRun cancels one task before it starts and
// lets Stop abandon another: neither gets a span; the task that held the
// worker does.
func TestSpansNoneForTasksThatNeverRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp, rec := newRecorded(t)
		p := workerpool.New(1, workerpool.WithHooks(newTraced(t, tp, "")))
		defer p.Stop()
		ctx, cancel := context.WithCancel(t.Context())
		release := make(chan struct{})

		p.Submit(func() { <-release })
		canceled := p.Go(ctx, noop, workerpool.TaskOption{Label: "canceled"})
		abandoned := workerpool.GoResult(t.Context(), p, func(context.Context) (int, error) { return 1, nil }, workerpool.TaskOption{Label: "abandoned"})
		cancel()
		assert.ErrorIs(t, canceled.Wait(), context.Canceled, "the canceled task")
		stopped := make(chan struct{})
		go func() {
			p.Stop()
			close(stopped)
		}()
		synctest.Wait() // Stop has abandoned the queued task and waits for the running one
		close(release)
		<-stopped
		_, err := abandoned.Wait()
		assert.ErrorIs(t, err, workerpool.ErrStopped, "the abandoned task")
		require.Len(t, rec.Ended(), 1, "spans")
		assert.Equal(t, defaultSpanName, rec.Ended()[0].Name(), "the one span: the task that ran")
	})
}

// TestSpanOfAKeyedTaskCarriesItsKey: a keyed task's span carries its key,
// on every call that takes one; the span of a task without a key has no
// key attribute.
func TestSpanOfAKeyedTaskCarriesItsKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp, rec := newRecorded(t)
		p := workerpool.New(1, workerpool.WithHooks(newTraced(t, tp, "keys")))
		defer p.Stop()
		t0 := time.Now()
		key := workerpool.TaskOption{Key: "account-7"}
		require.NoError(t, p.Go(t.Context(), func(context.Context) error { return nil }, key, workerpool.TaskOption{Label: "go"}).Wait(), "Go")
		require.NoError(t, p.DoContext(context.Background(), func() {}, key, workerpool.TaskOption{Label: "docontext"}), "DoContext")
		require.NoError(t, p.DoContext(context.Background(), func() {}, workerpool.TaskOption{Label: "none"}), "DoContext without a key")
		p.StopWait() // both plain tasks have run
		keyed := func(label string) map[attribute.Key]any {
			a := attrs("keys", label, 1, 0, 0)
			a["workerpool.task.key"] = "account-7"
			return a
		}
		assert.Equal(t, []span{
			{Name: "go", Attributes: keyed("go")},
			{Name: "docontext", Attributes: keyed("docontext")},
			{Name: "none", Attributes: attrs("keys", "none", 1, 0, 0)},
		}, spansOf(t, rec, t0, ""))
	})
}
