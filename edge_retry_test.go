package workerpool

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// "Cancel or the task's ctx removes a scheduled task at once"; "a done ctx
// (Cancel included) end the retries": a Cancel while the policy decides
// (made from inside the policy, standing for a Cancel from another
// goroutine at that moment) finds the job started and only cancels its
// context; the worker sees it once the job is scheduled, and settles it.
func TestCancelWhileRetryIsDecidedEndsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		var task *Task
		var runs atomic.Int32
		policy := func(int, error) (time.Duration, bool) {
			task.Cancel() // a concurrent Cancel, landing while the worker decides
			return time.Hour, true
		}
		ready := make(chan struct{})
		task = p.Go(context.Background(), func(context.Context) error {
			<-ready
			runs.Add(1)
			return errFlaky
		}, Retry(policy))
		close(ready)
		done := make(chan error, 1)
		go func() { done <- task.Wait() }()
		time.Sleep(time.Second)
		select {
		case err := <-done:
			assert.ErrorIs(t, err, context.Canceled)
			assert.ErrorIs(t, err, errFlaky)
		default:
			s := p.Status()
			t.Errorf("Wait still blocked 1s after Cancel: Scheduled %d, Canceled %d; it waits for the 1h retry delay", s.Scheduled, s.Canceled)
		}
		assert.Equal(t, int32(1), runs.Load())
	})
}

// In a group: a sibling's error cancels the group while a task's retry is
// being decided; the group's Wait must not wait for the retry delay.
func TestGroupCanceledWhileRetryIsDecided(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2)
		defer p.Stop()
		g := p.Group(context.Background())
		failSibling := make(chan struct{})
		var gctx context.Context
		policy := func(int, error) (time.Duration, bool) {
			close(failSibling)
			<-gctx.Done() // the sibling's error cancels the group meanwhile
			return time.Hour, true
		}
		g.Go(func(ctx context.Context) error { gctx = ctx; return errFlaky }, Retry(policy))
		g.Go(func(context.Context) error {
			<-failSibling
			return errTask
		})
		done := make(chan error, 1)
		go func() { done <- g.Wait() }()
		time.Sleep(time.Second)
		select {
		case err := <-done:
			assert.ErrorIs(t, err, errTask)
		default:
			t.Errorf("Group.Wait still blocked 1s after the group was canceled: Scheduled %d", p.Status().Scheduled)
		}
	})
}

var _ = errors.Is

// The same race without calling Cancel from the policy: a Cancel from
// another goroutine as the failing run returns. Real scheduling, ≤1s.
func TestCancelRacesARetryStress(t *testing.T) {
	p := New(2)
	defer p.Stop()
	policy := func(int, error) (time.Duration, bool) { return time.Hour, true }
	deadline := time.Now().Add(time.Second)
	n := 0
	for time.Now().Before(deadline) {
		n++
		returning := make(chan struct{})
		task := p.Go(context.Background(), func(context.Context) error {
			close(returning)
			return errFlaky
		}, Retry(policy))
		<-returning
		for range n % 64 {
			runtimeGosched()
		}
		task.Cancel()
		select {
		case <-task.Done():
		case <-time.After(time.Second):
			t.Fatalf("round %d: Wait blocked 1s after Cancel (retry due in 1h): %+v", n, p.Status())
		}
	}
	t.Logf("%d rounds", n)
}

// After that race the Cancel is not forgotten: the task never runs again,
// and Wait reports context.Canceled.
func TestCanceledTaskIsNotRerun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		var task *Task
		var runs atomic.Int32
		policy := func(attempt int, _ error) (time.Duration, bool) {
			if attempt == 1 {
				task.Cancel() // a concurrent Cancel, landing while the worker decides
			}
			return time.Hour, true
		}
		ready := make(chan struct{})
		task = p.Go(context.Background(), func(context.Context) error {
			<-ready
			if runs.Add(1) > 1 {
				return nil
			}
			return errFlaky
		}, Retry(policy))
		close(ready)
		time.Sleep(2 * time.Hour)
		assert.Equal(t, int32(1), runs.Load(), "runs after Cancel")
		err := task.Wait()
		assert.ErrorIs(t, err, context.Canceled, "Wait after Cancel")
	})
}
