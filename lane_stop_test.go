package workerpool

import (
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// From the moment Stop (or a Shutdown that gives up) is called, no task
// waiting in the lane starts: Stop first marks abandoning (sig.abandon)
// and only then shuts the lane. A task in the lane that no worker waits
// for, which dispatch answers by starting a new worker with it while
// fewer than the size exist, must be given up like one a worker takes
// from the lane, not started.
func TestStopStartsNoLaneTaskDispatchAnswersOnceAbandoningBegan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dead atomic.Int64
		p := New(3, WithHooks(Hooks{DeadLetter: func(func(), error) { dead.Add(1) }}))
		openLane(t, p)
		g := blockWorkers(t, p, 1) // the one worker the lane's opening started: none waits at the lane
		defer g.release()
		require.Less(t, p.Status().Workers, p.Size(), "fewer workers than the size: an append asks dispatch to start one")

		p.sig.abandon() // Stop's first step: from here no queued task may start
		var ran atomic.Bool
		p.Submit(func() { ran.Store(true) }) // the lane is not shut yet: accepted, racing the stop
		synctest.Wait()
		assert.False(t, ran.Load(), "a lane task started after Stop was called")

		g.open()
		p.Stop()
		s := requireStoppedClean(t, p)
		if !ran.Load() {
			assert.Equal(t, uint64(1), s.Abandoned, "abandoned")
			assert.Equal(t, int64(1), dead.Load(), "dead letters")
		}
	})
}
