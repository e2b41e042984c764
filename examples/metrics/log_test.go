package main

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/e86d9661/workerpool"
	"github.com/stretchr/testify/assert"
)

// A pool logging through quietDemoPanics: the demo's panic is one INFO line
// without its stack; any other panic keeps its ERROR level and its stack.
func TestQuietDemoPanicsShortensOnlyTheDemosPanics(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(quietDemoPanics{slog.NewTextHandler(&buf, nil)})
	p := workerpool.New(1, workerpool.WithHooks(workerpool.Hooks{Logger: logger.With("pool", "demo"), Panic: func(any) {}}))
	_ = p.DoWait(func() { panic(demoPanic("demo task 1 panics on purpose")) })
	_ = p.DoWait(func() { panic(errors.New("a real bug")) })
	p.StopWait()

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var demo, bug string
	for _, l := range lines {
		switch {
		case strings.Contains(l, "on purpose"):
			demo = l
		case strings.Contains(l, "a real bug"):
			bug = l
		}
	}
	assert.Contains(t, demo, `level=INFO msg="task panicked" pool=demo attempt=1 panic="demo task 1 panics on purpose"`)
	assert.NotContains(t, demo, "stack=")
	assert.Contains(t, bug, "level=ERROR")
	assert.Contains(t, bug, "stack=", "a real panic keeps its stack")
	assert.Contains(t, bug, "pool=demo", "attributes from With pass through")
}
