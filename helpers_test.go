package workerpool

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"sync"
)

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
// record with message match, once, until release is closed.
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

// blockedSendingIn reports whether some goroutine of the process is blocked
// in a channel send with frame on its stack.
func blockedSendingIn(frame string) bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for block := range strings.SplitSeq(string(buf), "\n\n") {
		header, _, _ := strings.Cut(block, "\n")
		if strings.Contains(header, "[chan send") && strings.Contains(block, frame) {
			return true
		}
	}
	return false
}
