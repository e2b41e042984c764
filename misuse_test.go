package workerpool

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Values that their constructors did not make: a zero WorkerPool has no
// dispatcher, and a zero or nil Task, Future or Group belongs to no pool.
// Every call that would wait forever on one, or fail with a bare nil
// dereference, panics with a message that says what went wrong; the calls
// that only read report a pool of size 0 that is not stopped.

// Every call on a zero WorkerPool that would reach its dispatcher panics,
// saying to use New, instead of waiting forever (in a bubble, a call that
// waited forever would fail the test as a deadlock).
func TestZeroWorkerPoolPanicsSayingToUseNew(t *testing.T) {
	ctx := context.Background()
	task := func() {}
	for name, call := range map[string]func(p *WorkerPool){
		"Submit":        func(p *WorkerPool) { p.Submit(task) },
		"Do":            func(p *WorkerPool) { _ = p.Do(task) },
		"DoWait":        func(p *WorkerPool) { _ = p.DoWait(task) },
		"SubmitWait":    func(p *WorkerPool) { p.SubmitWait(task) },
		"DoContext":     func(p *WorkerPool) { _ = p.DoContext(ctx, task, TaskOption{Label: "l"}) },
		"TryDo":         func(p *WorkerPool) { tryDo(p, task) },
		"DoBatch":       func(p *WorkerPool) { _ = p.DoBatch([]func(){task}) },
		"Go":            func(p *WorkerPool) { p.Go(ctx, noopFn) },
		"Go with Delay": func(p *WorkerPool) { p.Go(ctx, noopFn, TaskOption{Delay: 1}) },
		"Call":          func(p *WorkerPool) { GoResult(ctx, p, func(context.Context) (int, error) { return 0, nil }) },
		"Group.Go":      func(p *WorkerPool) { p.Group(ctx).Go(noopFn) },
		// A zero WorkerPool has size 0: without the check, a weighted task
		// would be refused as too heavy (counted in Rejected), and a
		// group whose context is done would count its tasks as canceled.
		"Go with Weight": func(p *WorkerPool) { p.Go(ctx, noopFn, TaskOption{Weight: 2}) },
		"Call with Weight": func(p *WorkerPool) {
			GoResult(ctx, p, func(context.Context) (int, error) { return 0, nil }, TaskOption{Weight: 2})
		},
		"DoContext with Weight":    func(p *WorkerPool) { _ = p.DoContext(ctx, task, TaskOption{Weight: 2}) },
		"Group":                    func(p *WorkerPool) { p.Group(ctx) },
		"Group.Go, canceled group": func(p *WorkerPool) { p.Group(canceledContext()).Go(noopFn) },
		"Pause":                    func(p *WorkerPool) { p.Pause(ctx) },
		"WaitIdle":                 func(p *WorkerPool) { _ = p.WaitIdle(ctx) },
		"Resize":                   func(p *WorkerPool) { p.Resize(2) },
		"Stop":                     func(p *WorkerPool) { p.Stop() },
		"StopWait":                 func(p *WorkerPool) { p.StopWait() },
		"Shutdown":                 func(p *WorkerPool) { _ = p.Shutdown(ctx) },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var p WorkerPool
				err, panicked := recovered(func() { call(&p) })
				require.True(t, panicked, "%s on a zero WorkerPool panics", name)
				assert.ErrorContains(t, err, "without New", "the panic's message")
				s := p.Status()
				assert.Zero(t, s.Submitted+s.Rejected+s.Canceled, "counted")
			})
		})
	}
}

// The calls that only read work on a zero WorkerPool, as on any pool: it
// has size 0, is not stopped, and nothing waits.
func TestZeroWorkerPoolReadsAsEmpty(t *testing.T) {
	var p WorkerPool
	assert.Zero(t, p.Size(), "Size")
	assert.False(t, p.Stopped(), "Stopped")
	assert.Zero(t, p.WaitingQueueSize(), "WaitingQueueSize")
	s := p.Status()
	assert.Zero(t, s.Submitted+s.Completed, "Status")
}

// A handle that Go, GoResult or WorkerPool.Group did not make, or a nil
// one, panics with a message naming the method, not with a nil
// dereference: all but Done on a nil *Future, which is its embedded
// Task's, reached through the nil pointer (see Future).
func TestHandlesNotMadeByThePoolPanicSayingSo(t *testing.T) {
	var nilTask *Task
	var nilFuture *Future[int]
	var nilGroup *Group
	for name, call := range map[string]func(){
		"Task.Wait on a nil Task":     func() { _ = nilTask.Wait() },
		"Task.Done on a zero Task":    func() { (&Task{}).Done() },
		"Task.Wait on a zero Task":    func() { _ = (&Task{}).Wait() },
		"Future.Wait on a nil Future": func() { _, _ = nilFuture.Wait() },
		"Future.Wait on a zero one":   func() { _, _ = (&Future[int]{}).Wait() },
		"Future.Done on a zero one":   func() { (&Future[int]{}).Done() },
		"Future.Task.Wait on a zero":  func() { _ = (&Future[int]{}).Task.Wait() },
		"Group.Wait on a nil Group":   func() { _ = nilGroup.Wait() },
		"Group.Go on a zero Group":    func() { (&Group{}).Go(noopFn) },
		"Group.Wait on a zero Group":  func() { _ = (&Group{}).Wait() },
		"Group.SetLimit on a zero":    func() { (&Group{}).SetLimit(1) },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				err, panicked := recovered(call)
				require.True(t, panicked, "%s panics", name)
				assert.ErrorContains(t, err, "workerpool: ", "the panic's message")
				assert.ErrorContains(t, err, " called on a ", "the panic's message")
			})
		})
	}
}
