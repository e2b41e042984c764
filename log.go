package workerpool

import (
	"context"
	"log/slog"
	"runtime/debug"
)

// logPanic logs a recovered panic: what panicked, its value and stack.
func (p *WorkerPool) logPanic(what string, e *PanicError) {
	if p.cfg.log != nil {
		p.cfg.log.Error(what+" panicked", "panic", e.Value, "stack", string(e.Stack))
	}
}

// logTaskPanic logs a recovered panic of a task's run, or of what it
// calls (its retry policy), with the task's label, if it has one, and
// attempt: of job j, or of a plain task if j is nil.
func (p *WorkerPool) logTaskPanic(what string, e *PanicError, j *job) {
	if p.cfg.log == nil {
		return
	}
	info := p.infoOf(nil, 1, nil)
	if j != nil {
		info = j.info(nil)
	}
	args := make([]any, 0, 8)
	if info.Label != "" {
		args = append(args, "label", info.Label)
	}
	args = append(args, "attempt", info.Attempt, "panic", e.Value, "stack", string(e.Stack))
	p.cfg.log.Error(what+" panicked", args...)
}

// panicErrorFor makes the *PanicError for a panic just recovered, r, from
// the frames still on the stack. Call it in the deferred func that
// recovered r.
func panicErrorFor(r any) *PanicError {
	return &PanicError{Value: r, Stack: debug.Stack()}
}

// logDebug logs msg at Debug, if the logger takes Debug records.
func (p *WorkerPool) logDebug(msg string, args ...any) {
	if p.cfg.log != nil && p.cfg.log.Enabled(context.Background(), slog.LevelDebug) {
		p.cfg.log.Debug(msg, args...)
	}
}

// logResized logs a Resize.
func (p *WorkerPool) logResized(from, to int64) {
	if p.cfg.log != nil {
		p.cfg.log.Info("pool resized", "from", from, "to", to)
	}
}

// logStopped logs the final counts of a pool that has stopped.
func (p *WorkerPool) logStopped() {
	if p.cfg.log == nil {
		return
	}
	s := p.Status()
	p.cfg.log.Info("pool stopped",
		"submitted", s.Submitted,
		"completed", s.Completed,
		"panicked", s.Panicked,
		"abandoned", s.Abandoned,
		"canceled", s.Canceled,
		"dropped", s.Dropped,
		"expired", s.Expired,
		"retried", s.Retried,
		"rejected", s.Rejected,
	)
}
