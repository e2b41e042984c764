//go:build !race

// The race detector makes sync.Pool drop some of what it is given, so the
// allocations are counted without it.

package workerpoolprom_test

import (
	"context"
	"testing"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/workerpoolprom"
	"github.com/stretchr/testify/assert"
)

// The run of a plain task (TaskStarted given context.Background()) is
// reused: its hooks allocate nothing once its series exist. The run of a
// task with a ctx is the task's ctx, allocated for each run.
func TestHooksAllocations(t *testing.T) {
	hooks := workerpoolprom.NewHistograms().Hooks("jobs")
	info := workerpool.TaskInfo{Label: "kind", Attempt: 1}
	withCtx := context.WithoutCancel(context.Background())
	hooks.TaskFinished(hooks.TaskStarted(context.Background(), info), info) // makes the series
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		hooks.TaskFinished(hooks.TaskStarted(context.Background(), info), info)
	}), "allocations of a plain task's run")
	assert.Equal(t, 1.0, testing.AllocsPerRun(1000, func() {
		hooks.TaskFinished(hooks.TaskStarted(withCtx, info), info)
	}), "allocations of the run of a task with a ctx")
}
