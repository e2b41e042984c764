package workerpool

import (
	"context"
	"testing"
	"time"
)

// A group's ctx ends while a delayed task of it is on its way to dispatch:
// once scheduled, the task is canceled at once (dispatch looks at the group
// again after it schedules the job), and the group's Wait does not wait
// for the delay. Stress on real scheduling.
func TestGroupCancelRacesADelayedGo(t *testing.T) {
	p := New(2)
	defer p.Stop()
	deadline := time.Now().Add(time.Second)
	n := 0
	for time.Now().Before(deadline) {
		n++
		ctx, cancel := context.WithCancel(context.Background())
		g := p.Group(ctx)
		g.Go(func(context.Context) error { return nil }, Delay(time.Millisecond)) // watched from now on
		go cancel()
		g.Go(func(context.Context) error { return nil }, Delay(time.Hour))
		done := make(chan error, 1)
		go func() { done <- g.Wait() }()
		select {
		case <-done:
		case <-time.After(time.Second):
			t.Fatalf("round %d: Group.Wait blocked 1s after its ctx was canceled: %+v", n, p.Status())
		}
	}
	t.Logf("%d rounds", n)
}
