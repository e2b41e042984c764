package workerpool_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/e86d9661/workerpool"
)

// Hooks see which task each call is about: they count runs and failures
// by label, and report every task that will never run, with its label and
// why: here one a full queue refused and one a Shutdown abandoned.
func ExampleWithHooks() {
	var mu sync.Mutex
	runs := map[string]int{}
	var failed, lost []string
	p := workerpool.New(1, workerpool.WithMaxWaiting(1, workerpool.Reject), workerpool.WithHooks(workerpool.Hooks{
		TaskStarted: func(ctx context.Context, t workerpool.TaskInfo) context.Context {
			mu.Lock()
			defer mu.Unlock()
			runs[t.Label]++
			return ctx // the ctx the task runs with: here unchanged
		},
		TaskFinished: func(_ context.Context, t workerpool.TaskInfo) {
			if t.Err != nil {
				mu.Lock()
				defer mu.Unlock()
				failed = append(failed, fmt.Sprintf("%s attempt %d: %v", t.Label, t.Attempt, t.Err))
			}
		},
		TaskDropped: func(t workerpool.TaskInfo) {
			mu.Lock()
			defer mu.Unlock()
			lost = append(lost, fmt.Sprintf("%s: %v", t.Label, t.Err))
		},
	}))
	ctx := context.Background()
	fmt.Println(p.Go(ctx, func(context.Context) error { return errors.New("no such file") }, workerpool.TaskOption{Label: "open"}).Wait())
	running := make(chan struct{})
	p.Go(ctx, func(ctx context.Context) error { close(running); <-ctx.Done(); return ctx.Err() }, workerpool.TaskOption{Label: "watch"})
	<-running
	p.DoContext(context.Background(), func() {}, workerpool.TaskOption{Label: "index"})                  // waits in the queue, which is now full
	fmt.Println(p.DoContext(context.Background(), func() {}, workerpool.TaskOption{Label: "thumbnail"})) // refused: TaskDropped runs before Do returns
	now, cancel := context.WithCancel(ctx)
	cancel()
	fmt.Println(p.Shutdown(now)) // abandons the queued task and cancels the running one
	fmt.Println(runs)
	fmt.Println(strings.Join(failed, "\n"))
	fmt.Println(lost)
	// Output:
	// no such file
	// workerpool: waiting queue full
	// context canceled
	// map[open:1 watch:1]
	// open attempt 1: no such file
	// watch attempt 1: context canceled
	// [thumbnail: workerpool: waiting queue full index: workerpool: pool stopped]
}

// Hooks.Logger gets one record per Resize and a summary when the pool stops,
// never a record per task. Each record carries the logger's attributes.
func ExampleHooks_logger() {
	noTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: noTime}))
	p := workerpool.New(2, workerpool.WithHooks(workerpool.Hooks{Logger: logger.With("pool", "thumbnails")}))
	for range 100 {
		p.Submit(func() {})
	}
	p.Resize(4)
	p.StopWait()
	// Output:
	// level=INFO msg="pool resized" pool=thumbnails from=2 to=4
	// level=INFO msg="pool stopped" pool=thumbnails submitted=100 completed=100 panicked=0 abandoned=0 canceled=0 dropped=0 expired=0 retried=0 rejected=0
}

// A Label names the kind of a task for hooks, logs and metrics; it
// changes nothing in how the task runs.
func ExampleTaskOption_label() {
	var mu sync.Mutex
	runs := map[string]int{}
	p := workerpool.New(2, workerpool.WithHooks(workerpool.Hooks{
		TaskFinished: func(_ context.Context, t workerpool.TaskInfo) {
			mu.Lock()
			defer mu.Unlock()
			runs[t.Label]++
		},
	}))
	for range 3 {
		p.DoContext(context.Background(), func() {}, workerpool.TaskOption{Label: "resize"})
	}
	p.DoContext(context.Background(), func() {}, workerpool.TaskOption{Label: "send-mail"})
	p.Do(func() {}) // no label
	p.StopWait()
	fmt.Println(runs)
	// Output: map[:1 resize:3 send-mail:1]
}

// With a Panic hook a panicking task is recovered, the hook gets the value
// on the panicking goroutine (debug.Stack there shows the task), and the
// worker goes on. Without one, the panic crashes the program, as in a
// plain goroutine.
func ExampleHooks_panic() {
	p := workerpool.New(1, workerpool.WithHooks(workerpool.Hooks{Panic: func(recovered any) {
		fmt.Println("recovered:", recovered)
		fmt.Println("stack shows the task:", strings.Contains(string(debug.Stack()), "ExampleHooks_panic"))
	}}))
	p.Submit(func() { panic("bad image") })
	p.Submit(func() { fmt.Println("the worker goes on") })
	p.StopWait()
	fmt.Println("panicked:", p.Status().Panicked)
	// Output:
	// recovered: bad image
	// stack shows the task: true
	// the worker goes on
	// panicked: 1
}
