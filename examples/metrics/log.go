package main

import (
	"context"
	"log/slog"
)

// demoPanic is the value of the panics the demo makes on purpose.
type demoPanic string

// quietDemoPanics is a slog.Handler that logs the demo's own panics (a
// "panic" attribute holding a demoPanic) as one short line, at level INFO,
// without the "stack" attribute the pool's logger adds: they are expected,
// and a stack trace every second would bury the rest of the log. Records
// about any other panic, a real bug, pass through whole, stack included.
type quietDemoPanics struct{ slog.Handler }

func (h quietDemoPanics) Handle(ctx context.Context, r slog.Record) error {
	demo := false
	r.Attrs(func(a slog.Attr) bool {
		_, demo = a.Value.Any().(demoPanic)
		return !demo
	})
	if !demo {
		return h.Handler.Handle(ctx, r)
	}
	short := slog.NewRecord(r.Time, slog.LevelInfo, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "stack" {
			short.AddAttrs(a)
		}
		return true
	})
	return h.Handler.Handle(ctx, short)
}

func (h quietDemoPanics) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quietDemoPanics{h.Handler.WithAttrs(attrs)}
}

func (h quietDemoPanics) WithGroup(name string) slog.Handler {
	return quietDemoPanics{h.Handler.WithGroup(name)}
}
