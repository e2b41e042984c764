package workerpoolotel

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// span is what a test checks of an ended span.
type span struct {
	Name        string
	Parent      trace.SpanID
	Start, End  time.Duration // since the test's start, on the fake clock
	Attributes  map[attribute.Key]any
	Status      codes.Code
	Description string
	Events      []map[attribute.Key]any // each event's name (as "event") and attributes, but a stack trace's
}

// spansOf sums up the spans rec saw end, in the order they ended, with
// their times since t0. It checks each span's scope, and that a stack
// trace, if any, shows wantFrame.
func spansOf(t *testing.T, rec *tracetest.SpanRecorder, t0 time.Time, wantFrame string) []span {
	t.Helper()
	var spans []span
	for _, s := range rec.Ended() {
		assert.Equal(t, ScopeName, s.InstrumentationScope().Name, "scope name of %s", s.Name())
		assert.Equal(t, Version, s.InstrumentationScope().Version, "scope version of %s", s.Name())
		assert.Equal(t, trace.SpanKindInternal, s.SpanKind(), "kind of %s", s.Name())
		got := span{
			Name:        s.Name(),
			Parent:      s.Parent().SpanID(),
			Start:       s.StartTime().Sub(t0),
			End:         s.EndTime().Sub(t0),
			Attributes:  make(map[attribute.Key]any),
			Status:      s.Status().Code,
			Description: s.Status().Description,
		}
		for _, kv := range s.Attributes() {
			got.Attributes[kv.Key] = kv.Value.AsInterface()
		}
		for _, e := range s.Events() {
			event := map[attribute.Key]any{"event": e.Name}
			for _, kv := range e.Attributes {
				if kv.Key == "exception.stacktrace" {
					assert.Contains(t, kv.Value.AsString(), wantFrame, "stack trace of %s", s.Name())
					event[kv.Key] = "(stack)"
					continue
				}
				event[kv.Key] = kv.Value.AsInterface()
			}
			got.Events = append(got.Events, event)
		}
		spans = append(spans, got)
	}
	return spans
}

// attrs are the attributes of a task's span.
func attrs(pool string, wait float64, attempt int64) map[attribute.Key]any {
	return map[attribute.Key]any{"workerpool.name": pool, "workerpool.task.wait": wait, "workerpool.task.attempt": attempt}
}

// exception is the event RecordError adds for err.
func exception(typ, message string) map[attribute.Key]any {
	return map[attribute.Key]any{"event": "exception", "exception.type": typ, "exception.message": message}
}

// newRecorded returns a TracerProvider that records every span in rec.
func newRecorded(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { assert.NoError(t, tp.Shutdown(context.Background()), "TracerProvider.Shutdown") })
	return tp, rec
}

// TestTracingSpansGoAndCall queues a Go and a Call task behind a task that
// runs 3s, on one worker: each gets a span, a child of the caller's, that
// fn's ctx holds, and that starts and ends with fn, with the exact wait.
func TestTracingSpansGoAndCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp, rec := newRecorded(t)
		p := workerpool.New(1, workerpool.WithName("traced"))
		defer p.Stop()
		tr := NewTracing(p, WithTracerProvider(tp))
		t0 := time.Now()
		ctx, parent := tp.Tracer("test").Start(t.Context(), "parent")

		p.Submit(func() { time.Sleep(3 * time.Second) })
		var inGo, inCall trace.SpanContext
		task := tr.Go(ctx, "resize", func(ctx context.Context) error {
			inGo = trace.SpanContextFromContext(ctx)
			time.Sleep(time.Second)
			return nil
		})
		future := Call(ctx, tr, "fetch", func(ctx context.Context) (int, error) {
			inCall = trace.SpanContextFromContext(ctx)
			time.Sleep(2 * time.Second)
			return 42, nil
		})
		require.NoError(t, task.Wait(), "Go's Wait")
		v, err := future.Wait()
		require.NoError(t, err, "Call's Wait")
		assert.Equal(t, 42, v, "Call's value")
		defer parent.End()

		ended := rec.Ended()
		require.Len(t, ended, 2, "ended spans")
		assert.Equal(t, inGo, ended[0].SpanContext(), "Go's span, as fn's ctx holds it")
		assert.Equal(t, inCall, ended[1].SpanContext(), "Call's span, as fn's ctx holds it")
		for _, s := range ended[:2] {
			assert.Equal(t, parent.SpanContext().TraceID(), s.SpanContext().TraceID(), "trace of %s", s.Name())
		}
		parentID := parent.SpanContext().SpanID()
		assert.Equal(t, []span{
			{Name: "resize", Parent: parentID, Start: 3 * time.Second, End: 4 * time.Second, Attributes: attrs("traced", 3, 1)},
			{Name: "fetch", Parent: parentID, Start: 4 * time.Second, End: 6 * time.Second, Attributes: attrs("traced", 4, 1)},
		}, spansOf(t, rec, t0, ""), "the tasks' spans")
	})
}

// TestTracingRecordsFailures runs tasks that fail in every way: each span
// gets the status Error and an exception event; the handles report what
// they would without tracing.
func TestTracingRecordsFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp, rec := newRecorded(t)
		p := workerpool.New(1, workerpool.WithName("failing"))
		defer p.Stop()
		tr := NewTracing(p, WithTracerProvider(tp))
		t0 := time.Now()
		ctx := t.Context()
		errFail := errors.New("no luck")

		assert.ErrorIs(t, tr.Go(ctx, "returns", func(context.Context) error { return errFail }).Wait(), errFail, "Go's error")
		var pe *workerpool.PanicError
		require.ErrorAs(t, tr.Go(ctx, "panics", func(context.Context) error { panic("boom") }).Wait(), &pe, "Go's panic")
		assert.Equal(t, "boom", pe.Value, "panic value")
		assert.Contains(t, string(pe.Stack), "TestTracingRecordsFailures", "the pool's stack, after the span's recover, shows fn")
		assert.ErrorIs(t, tr.Go(ctx, "exits", func(context.Context) error { runtime.Goexit(); return nil }).Wait(), workerpool.ErrGoexit, "Go's Goexit")
		_, err := Call(ctx, tr, "call returns", func(context.Context) (int, error) { return 0, errFail }).Wait()
		assert.ErrorIs(t, err, errFail, "Call's error")
		_, err = Call(ctx, tr, "call panics", func(context.Context) (int, error) { panic(errFail) }).Wait()
		assert.ErrorIs(t, err, errFail, "Call's panic, unwrapped")

		const panicType, errType = "*workerpool.PanicError", "*errors.errorString"
		stackEvent := func(message string) map[attribute.Key]any {
			e := exception(panicType, message)
			e["exception.stacktrace"] = "(stack)"
			return e
		}
		assert.Equal(t, []span{
			{Name: "returns", Attributes: attrs("failing", 0, 1), Status: codes.Error, Description: "no luck",
				Events: []map[attribute.Key]any{exception(errType, "no luck")}},
			{Name: "panics", Attributes: attrs("failing", 0, 1), Status: codes.Error, Description: "workerpool: task panicked: boom",
				Events: []map[attribute.Key]any{stackEvent("workerpool: task panicked: boom")}},
			{Name: "exits", Attributes: attrs("failing", 0, 1), Status: codes.Error, Description: "workerpool: task called runtime.Goexit",
				Events: []map[attribute.Key]any{exception(errType, "workerpool: task called runtime.Goexit")}},
			{Name: "call returns", Attributes: attrs("failing", 0, 1), Status: codes.Error, Description: "no luck",
				Events: []map[attribute.Key]any{exception(errType, "no luck")}},
			{Name: "call panics", Attributes: attrs("failing", 0, 1), Status: codes.Error, Description: "workerpool: task panicked: no luck",
				Events: []map[attribute.Key]any{stackEvent("workerpool: task panicked: no luck")}},
		}, spansOf(t, rec, t0, "TestTracingRecordsFailures"), "spans of failed tasks")
	})
}

// TestTracingSpansEachRun retries a task twice, 1s after each failure, and
// delays another by 5s: each run gets a span, whose wait counts from the
// end of the run before it, or includes the delay.
func TestTracingSpansEachRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp, rec := newRecorded(t)
		p := workerpool.New(2, workerpool.WithName("retrying"))
		defer p.Stop()
		tr := NewTracing(p, WithTracerProvider(tp))
		t0 := time.Now()
		ctx := t.Context()

		runs := 0
		retried := tr.Go(ctx, "retried", func(context.Context) error {
			time.Sleep(time.Second / 2)
			if runs++; runs < 3 {
				return errors.New("not yet")
			}
			return nil
		}, workerpool.Retry(func(int, error) (time.Duration, bool) { return time.Second, true }))
		delayed := tr.Go(ctx, "", noop, workerpool.Delay(5*time.Second))
		require.NoError(t, retried.Wait(), "the retried task")
		require.NoError(t, delayed.Wait(), "the delayed task")

		failed := []map[attribute.Key]any{exception("*errors.errorString", "not yet")}
		assert.Equal(t, []span{
			{Name: "retried", Start: 0, End: time.Second / 2, Attributes: attrs("retrying", 0, 1), Status: codes.Error, Description: "not yet", Events: failed},
			{Name: "retried", Start: 3 * time.Second / 2, End: 2 * time.Second, Attributes: attrs("retrying", 1, 2), Status: codes.Error, Description: "not yet", Events: failed},
			{Name: "retried", Start: 3 * time.Second, End: 7 * time.Second / 2, Attributes: attrs("retrying", 1, 3)},
			{Name: "workerpool.task", Start: 5 * time.Second, End: 5 * time.Second, Attributes: attrs("retrying", 5, 1)},
		}, spansOf(t, rec, t0, ""), "a span per run")
	})
}

// TestTracingNoSpanForTasksThatNeverRun cancels one traced task before it
// starts and lets Stop abandon another: neither gets a span.
func TestTracingNoSpanForTasksThatNeverRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp, rec := newRecorded(t)
		p := workerpool.New(1)
		defer p.Stop()
		tr := NewTracing(p, WithTracerProvider(tp))
		ctx, cancel := context.WithCancel(t.Context())

		p.Submit(func() { time.Sleep(time.Second) })
		canceled := tr.Go(ctx, "canceled", noop)
		abandoned := Call(t.Context(), tr, "abandoned", func(context.Context) (int, error) { return 1, nil })
		cancel()
		assert.ErrorIs(t, canceled.Wait(), context.Canceled, "the canceled task")
		p.Stop()
		_, err := abandoned.Wait()
		assert.ErrorIs(t, err, workerpool.ErrStopped, "the abandoned task")
		assert.Empty(t, rec.Started(), "spans started")
	})
}

func TestTracingPanicsOnBadInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := workerpool.New(1)
		defer p.Stop()
		tr := NewTracing(p, WithTracerProvider(tracenoop.NewTracerProvider()))
		var nilCtx context.Context
		call := func(ctx context.Context, tr *Tracing, fn func(context.Context) (int, error)) func() {
			return func() { Call(ctx, tr, "call", fn) }
		}
		value := func(context.Context) (int, error) { return 0, nil }
		for _, tc := range []struct {
			want string
			call func()
		}{
			{"workerpoolotel: NewTracing called with a nil pool", func() { NewTracing(nil) }},
			{"workerpoolotel: Go called with a nil context", func() { tr.Go(nilCtx, "go", noop) }},
			{"workerpoolotel: Go called with a nil func", func() { tr.Go(t.Context(), "go", nil) }},
			{"workerpoolotel: Call called with a nil Tracing", call(t.Context(), nil, value)},
			{"workerpoolotel: Call called with a nil context", call(nilCtx, tr, value)},
			{"workerpoolotel: Call called with a nil func", call(t.Context(), tr, nil)},
		} {
			assert.PanicsWithValue(t, tc.want, tc.call, tc.want)
		}
		assert.Equal(t, workerpool.Status{MaxWorkers: 1}, p.Status(), "the pool got no task")
	})
}

// discard is a SpanProcessor that drops every span: the spans are made and
// recorded, as under a real exporter, but not kept.
type discard struct{}

func (discard) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (discard) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (discard) Shutdown(context.Context) error                  { return nil }
func (discard) ForceFlush(context.Context) error                { return nil }

// BenchmarkGo measures what Tracing.Go adds to a no-op task over the
// pool's own Go: with a no-op TracerProvider (the global one when no SDK
// is set up), and with the SDK recording every span.
func BenchmarkGo(b *testing.B) {
	run := func(b *testing.B, goFn func(p *workerpool.WorkerPool) func(ctx context.Context, fn func(context.Context) error)) {
		p, wg := workerpool.New(2), new(sync.WaitGroup)
		defer p.StopWait()
		submit := goFn(p)
		ctx := context.Background()
		task := func(context.Context) error {
			wg.Done()
			return nil
		}
		b.ReportAllocs()
		for b.Loop() {
			wg.Add(1)
			submit(ctx, task)
		}
		wg.Wait()
	}
	b.Run("pool.Go", func(b *testing.B) {
		run(b, func(p *workerpool.WorkerPool) func(context.Context, func(context.Context) error) {
			return func(ctx context.Context, fn func(context.Context) error) { p.Go(ctx, fn) }
		})
	})
	for _, tc := range []struct {
		name string
		tp   trace.TracerProvider
	}{
		{"Tracing.Go/noop", tracenoop.NewTracerProvider()},
		{"Tracing.Go/sdk", sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(discard{}))},
	} {
		b.Run(tc.name, func(b *testing.B) {
			run(b, func(p *workerpool.WorkerPool) func(context.Context, func(context.Context) error) {
				tr := NewTracing(p, WithTracerProvider(tc.tp))
				return func(ctx context.Context, fn func(context.Context) error) { tr.Go(ctx, "bench", fn) }
			})
		})
	}
}
