package workerpool

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

// gammazeroPool is gammazero/workerpool v1.3's method set, with its exact
// signatures: code that mocks the pool behind this interface compiles
// against this package too.
type gammazeroPool interface {
	Size() int
	Stop()
	StopWait()
	Stopped() bool
	Do(task func()) error
	DoWait(task func()) error
	Submit(task func())
	SubmitWait(task func())
	WaitingQueueSize() int
	Pause(ctx context.Context)
}

var _ gammazeroPool = (*WorkerPool)(nil)

// The method expressions gammazero's own tests pass around, with their
// exact types: adding a parameter (variadic options included) to any of
// them breaks this file's build.
var (
	_ func(*WorkerPool) int              = (*WorkerPool).Size
	_ func(*WorkerPool)                  = (*WorkerPool).Stop
	_ func(*WorkerPool)                  = (*WorkerPool).StopWait
	_ func(*WorkerPool) bool             = (*WorkerPool).Stopped
	_ func(*WorkerPool, func()) error    = (*WorkerPool).Do
	_ func(*WorkerPool, func()) error    = (*WorkerPool).DoWait
	_ func(*WorkerPool, func())          = (*WorkerPool).Submit
	_ func(*WorkerPool, func())          = (*WorkerPool).SubmitWait
	_ func(*WorkerPool) int              = (*WorkerPool).WaitingQueueSize
	_ func(*WorkerPool, context.Context) = (*WorkerPool).Pause
	_ func(int, ...Option) *WorkerPool   = New
)

// TestGammazeroMethodValuesWork calls the pool through gammazero's
// interface and its method values, as gammazero's tests do (they run
// each table case with (*WorkerPool).Do or (*WorkerPool).DoWait).
func TestGammazeroMethodValuesWork(t *testing.T) {
	var p gammazeroPool = New(2)
	ran := make(chan int, 2)
	for i, do := range []func(*WorkerPool, func()) error{(*WorkerPool).Do, (*WorkerPool).DoWait} {
		assert.NoError(t, do(p.(*WorkerPool), func() { ran <- i }), "call %d", i)
	}
	p.StopWait()
	assert.Len(t, ran, 2, "tasks run")
	assert.True(t, p.Stopped(), "stopped")
	assert.Zero(t, p.WaitingQueueSize(), "waiting after stop")
	assert.Equal(t, 2, p.Size(), "size")
}
