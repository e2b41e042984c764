package workerpool

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
)

// A task that reaches dispatch over taskQueue (a job, a task with options)
// is accepted the moment its send completes. A plain task the same
// goroutine submits after that call returned comes after it in submission
// order, so it must not start first: not by a worker taking it from the
// lane, which dispatch closes only after it received the message, nor by
// dispatch taking it back from the lane ahead of the message's task.
func TestAPlainTaskSubmittedAfterATaskForDispatchStartsAfterIt(t *testing.T) {
	for _, c := range []struct {
		name   string
		submit func(p *WorkerPool, fn func())
	}{
		{"Go", func(p *WorkerPool, fn func()) {
			p.Go(context.Background(), func(context.Context) error { fn(); return nil })
		}},
		{"Group.Go", func(p *WorkerPool, fn func()) {
			p.Group(context.Background()).Go(func(context.Context) error { fn(); return nil })
		}},
		{"DoContext with a label", func(p *WorkerPool, fn func()) {
			_ = p.DoContext(context.Background(), fn, TaskOption{Label: "l"})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1)
				openLane(t, p)     // its one worker waits at the lane
				var order []string // written by the one worker only
				c.submit(p, func() { order = append(order, "first") })
				p.Submit(func() { order = append(order, "a") })
				p.Submit(func() { order = append(order, "b") })
				p.StopWait()
				requireStoppedClean(t, p)
				assert.Equal(t, []string{"first", "a", "b"}, order)
			})
		})
	}
}
