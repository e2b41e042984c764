package workerpool

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// messages returns the messages of records.
func messages(records []map[string]any) []string {
	var msgs []string
	for _, r := range records {
		msgs = append(msgs, r["msg"].(string))
	}
	return msgs
}

func panicsPlain() { panic("plain") }

// pick returns r's values for keys.
func pick(r map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		out[k] = r[k]
	}
	return out
}

// At Info and above the logger gets exactly: an Error record with the
// stack for each recovered panic (plain tasks, DoWait, handles, hooks, the
// retry policy, the dead-letter handler), an Info record per Resize, and
// one Info summary at stop with the final counts; never a record per task.
// Every record carries the attributes of the logger it was given.
func TestLoggerRecordsAtInfo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logBuffer
		hookPanicked := false
		p := New(1, WithHooks(Hooks{Logger: logs.logger(slog.LevelDebug).With("pool", "images")}),
			WithHooks(Hooks{Panic: func(any) {}}), WithMaxWaiting(1, Reject),
			WithHooks(Hooks{DeadLetter: func(func(), error) { panic("letter") }}),
			WithHooks(Hooks{TaskStarted: func(ctx context.Context, _ TaskInfo) context.Context {
				if !hookPanicked {
					hookPanicked = true
					panic("hook")
				}
				return ctx
			}}))
		ctx := t.Context()
		require.NoError(t, p.DoWait(func() {})) // its TaskStarted panics
		for range 100 {
			require.NoError(t, p.DoWait(func() {}))
		}
		p.Submit(panicsPlain)
		require.NoError(t, p.DoWait(panicsPlain))
		assert.Error(t, p.Go(ctx, func(context.Context) error { panic("handle") }).Wait())
		assert.Error(t, p.Go(ctx, func(context.Context) error { return errFlaky },
			TaskOption{Retry: func(int, error) (time.Duration, bool) { panic("policy") }}).Wait())
		g := newGate()
		p.Submit(g.task())
		synctest.Wait()
		p.Submit(func() {})
		p.Submit(func() {}) // refused: a dead letter, whose handler panics
		synctest.Wait()
		p.Resize(3)
		p.Resize(3)
		g.open()
		p.StopWait()
		s := requireStoppedClean(t, p)

		records := logs.records(t, slog.LevelInfo)
		assert.Equal(t, []string{"TaskStarted hook panicked", "task panicked", "task panicked", "task panicked", "retry policy panicked",
			"dead-letter handler panicked", "pool resized", "pool resized", "pool stopped"}, messages(records), "records at Info and above")
		for _, r := range records {
			assert.Equal(t, "images", r["pool"], "pool of %v", r["msg"])
			if strings.HasSuffix(r["msg"].(string), "panicked") {
				assert.Equal(t, "ERROR", r["level"], "level of %v", r["msg"])
				assert.Contains(t, r["stack"], "runtime/debug.Stack", "stack of %v", r["msg"])
				assert.NotEmpty(t, r["panic"], "panic value of %v", r["msg"])
			} else {
				assert.Equal(t, "INFO", r["level"], "level of %v", r["msg"])
			}
		}
		assert.Contains(t, records[1]["stack"], "panicsPlain", "a plain task's panic shows its frames")
		assert.Equal(t, "handle", records[3]["panic"], "panic value")
		assert.Equal(t, map[string]any{"from": 1.0, "to": 3.0}, pick(records[6], "from", "to"), "first Resize")
		assert.Equal(t, map[string]any{"from": 3.0, "to": 3.0}, pick(records[7], "from", "to"), "second Resize")
		assert.Equal(t, map[string]any{
			"submitted": float64(s.Submitted), "completed": float64(s.Completed), "panicked": float64(s.Panicked),
			"abandoned": float64(s.Abandoned), "canceled": float64(s.Canceled), "dropped": float64(s.Dropped),
			"expired": float64(s.Expired), "retried": float64(s.Retried), "rejected": float64(s.Rejected),
		}, pick(records[8], "submitted", "completed", "panicked", "abandoned", "canceled", "dropped", "expired", "retried", "rejected"),
			"the stop summary holds the final counts")
		assert.Equal(t, 1.0, records[8]["rejected"], "rejected in the summary")

		debug := messages(logs.records(t, slog.LevelDebug))
		assert.Contains(t, debug, "pool started", "Debug records")
		assert.Contains(t, debug, "pool stopping", "Debug records")
	})
}

// A logger at Info gets no Debug record; a Shutdown that gives up says so at
// Debug; a Resize on a stopped pool, which does nothing, logs nothing.
func TestLoggerLevels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var info, debug logBuffer
		for _, b := range []*logBuffer{&info, &debug} {
			level := slog.LevelInfo
			if b == &debug {
				level = slog.LevelDebug
			}
			p := New(1, WithHooks(Hooks{Logger: b.logger(level)}))
			g := newGate()
			p.Submit(g.task())
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			go func() { time.Sleep(2 * time.Second); g.open() }()
			assert.ErrorIs(t, p.Shutdown(ctx), context.DeadlineExceeded)
			cancel()
			p.Resize(5)
		}
		assert.Equal(t, []string{"pool stopped"}, messages(info.records(t, slog.LevelDebug)), "an Info logger's records")
		assert.Equal(t, []string{"pool started", "pool stopping", "shutdown gave up", "pool stopped"}, messages(debug.records(t, slog.LevelDebug)),
			"a Debug logger's records")
	})
}

// The logger gets one Info record per Resize on a running pool, a Resize
// to the same size included (doc.go), none once stopping has begun, and
// the stop's summary last, each with the logger's own attributes.
func TestObserveResizeLogsOncePerResizeOnRunningPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b logBuffer
		p := New(3, WithHooks(Hooks{Logger: b.logger(slog.LevelInfo).With("pool", "rz")}))
		p.Resize(3)
		p.Resize(0)  // 1
		p.Resize(-5) // still 1
		p.StopWait()
		p.Resize(7) // stopped: nothing
		records := b.records(t, slog.LevelInfo)
		assert.Equal(t, []string{"pool resized", "pool resized", "pool resized", "pool stopped"}, messages(records))
		for _, r := range records {
			assert.Equal(t, "rz", r["pool"], "pool name on %v", r["msg"])
		}
	})
}
