package workerpool_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/e86d9661/workerpool"
)

func Example() {
	p := workerpool.New(2)
	var mu sync.Mutex
	total := 0
	for i := 1; i <= 10; i++ {
		p.Submit(func() {
			mu.Lock()
			total += i
			mu.Unlock()
		})
	}
	p.StopWait() // every submitted task has run when StopWait returns
	fmt.Println("total:", total)
	// Output: total: 55
}

func ExampleWorkerPool_SubmitWait() {
	p := workerpool.New(4)
	defer p.Stop()
	var answer int
	p.SubmitWait(func() { answer = 6 * 7 })
	fmt.Println(answer) // the task's effects are visible once SubmitWait returns
	// Output: 42
}

func ExampleWorkerPool_DoWait() {
	p := workerpool.New(1)
	p.Stop()
	err := p.DoWait(func() {})
	fmt.Println(err)
	// Output: workerpool: pool stopped
}

func ExampleWorkerPool_Pause() {
	p := workerpool.New(2)
	defer p.Stop()
	var mu sync.Mutex
	var log []string
	record := func(s string) func() {
		return func() { mu.Lock(); log = append(log, s); mu.Unlock() }
	}

	p.Submit(record("before pause"))
	ctx, resume := context.WithCancel(context.Background())
	p.Pause(ctx)                     // returns once "before pause" has run
	p.Submit(record("during pause")) // accepted, held until resume
	mu.Lock()
	fmt.Println(log)
	mu.Unlock()

	resume()
	p.StopWait()
	fmt.Println(log)
	// Output:
	// [before pause]
	// [before pause during pause]
}

func ExampleWorkerPool_Status() {
	p := workerpool.New(3, workerpool.WithPanicHandler(func(recovered any) {
		fmt.Println("recovered:", recovered)
	}))
	for range 5 {
		p.Submit(func() {})
	}
	p.Submit(func() { panic("oops") })
	p.StopWait()

	s := p.Status()
	fmt.Println(s.State, s.Submitted, s.Completed, s.Panicked, s.Abandoned)
	fmt.Println("workers:", s.Workers, "waiting:", s.Waiting)
	// Output:
	// recovered: oops
	// stopped 6 6 1 0
	// workers: 0 waiting: 0
}

func ExampleWorkerPool_Go() {
	p := workerpool.New(2)
	defer p.StopWait()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // covers queue wait and run
	defer cancel()
	task := p.Go(ctx, func(context.Context) error {
		return errors.New("disk full")
	})
	fmt.Println(task.Wait())

	// A panic comes back as an error, with the task's stack.
	var pe *workerpool.PanicError
	err := p.Go(ctx, func(context.Context) error { panic("bug") }).Wait()
	fmt.Println(errors.As(err, &pe), pe.Value)
	// Output:
	// disk full
	// true bug
}

// Fan out over the pool and stop at the first error: the failing task
// cancels the group's context, queued tasks are skipped, and running ones
// see the cancellation.
func ExampleWorkerPool_Group() {
	p := workerpool.New(4)
	defer p.StopWait()

	check := func(ctx context.Context, name string) error {
		if name == "c.txt" {
			return fmt.Errorf("check %s: checksum mismatch", name)
		}
		select {
		case <-ctx.Done(): // another task failed: give up early
			return ctx.Err()
		case <-time.After(10 * time.Millisecond): // stands in for real work
			return nil
		}
	}

	g := p.Group(context.Background())
	g.SetLimit(2) // at most two of the pool's four workers for this group
	for _, name := range []string{"a.txt", "b.txt", "c.txt", "d.txt", "e.txt"} {
		g.Go(func(ctx context.Context) error { return check(ctx, name) })
	}
	fmt.Println(g.Wait())
	// Output: check c.txt: checksum mismatch
}

// Typed results, collected in submission order whatever order the tasks
// finish in.
func ExampleCall() {
	p := workerpool.New(3)
	defer p.StopWait()

	words := []string{"pool", "dispatcher", "worker", "deque"}
	futures := make([]*workerpool.Future[int], len(words))
	for i, w := range words {
		futures[i] = workerpool.Call(context.Background(), p, func(context.Context) (int, error) {
			return len(w), nil
		})
	}
	for i, f := range futures {
		n, err := f.Wait()
		fmt.Println(words[i], n, err)
	}
	// Output:
	// pool 4 <nil>
	// dispatcher 10 <nil>
	// worker 6 <nil>
	// deque 5 <nil>
}

// Graceful program exit: on SIGINT or SIGTERM, stop taking work and give the
// queued and running tasks 10 seconds, then cancel what is left. See also
// examples/shutdown.
func ExampleWorkerPool_Shutdown() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Tasks get a context the signal does not cancel, so that Shutdown can
	// let them finish; if the budget runs out, Shutdown cancels them.
	work := context.Background()
	p := workerpool.New(4)
	for range 8 {
		p.Go(work, func(ctx context.Context) error {
			time.Sleep(time.Millisecond) // stands in for real work that watches ctx
			return nil
		})
	}

	stop()       // stands in for the signal here: calling stop also ends ctx
	<-ctx.Done() // a real program serves until a signal arrives

	budget, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Shutdown(budget); err != nil {
		fmt.Println("shutdown cut short:", err) // the queue was dropped, running tasks canceled
	}
	s := p.Status()
	fmt.Println(s.Submitted, s.Completed+s.Abandoned+s.Canceled)
	// Output: 8 8
}

// Back-pressure: with a bound of 2 waiting tasks and Block, a submitter
// waits for room instead of growing the queue. (A Pause holds the queue
// here, to show it full.)
func ExampleWithMaxWaiting() {
	p := workerpool.New(2, workerpool.WithMaxWaiting(2, workerpool.Block))
	hold, resume := context.WithCancel(context.Background())
	p.Pause(hold)
	for range 2 {
		p.Submit(func() {}) // held: the queue is now full
	}
	fmt.Println("TrySubmit on a full queue:", p.TrySubmit(func() {}))

	admitted := make(chan struct{})
	go func() {
		p.Submit(func() {}) // waits for room
		close(admitted)
	}()
	resume() // the held tasks run, room frees, the waiting Submit gets in
	<-admitted
	p.StopWait()
	s := p.Status()
	fmt.Println("submitted:", s.Submitted, "completed:", s.Completed, "rejected:", s.Rejected)
	// Output:
	// TrySubmit on a full queue: false
	// submitted: 3 completed: 3 rejected: 1
}

// Dead letters: nothing is lost silently. A Submit refused by a full queue
// (Reject) and a task that Stop abandons both reach the handler, in order,
// before Stop returns.
func ExampleWithDeadLetter() {
	p := workerpool.New(1,
		workerpool.WithMaxWaiting(1, workerpool.Reject),
		workerpool.WithDeadLetter(func(task func(), reason error) {
			fmt.Println("dead letter:", reason)
		}))
	hold, resume := context.WithCancel(context.Background())
	defer resume()
	p.Pause(hold)
	p.Submit(func() {}) // held: the queue is now full
	p.Submit(func() {}) // refused under Reject: to the handler
	p.Stop()            // abandons the held task: to the handler too
	s := p.Status()
	fmt.Println("rejected:", s.Rejected, "abandoned:", s.Abandoned)
	// Output:
	// dead letter: workerpool: waiting queue full
	// dead letter: workerpool: pool stopped
	// rejected: 1 abandoned: 1
}

// Resize changes the most workers while the pool runs; Size shows the new
// size when Resize returns.
func ExampleWorkerPool_Resize() {
	p := workerpool.New(2, workerpool.WithMinWorkers(2))
	defer p.StopWait()
	fmt.Println("size:", p.Size(), "workers:", p.Status().Workers)
	p.Resize(8) // grows at once; new workers start as tasks wait
	fmt.Println("size:", p.Size())
	p.Resize(1) // idle workers retire at once, busy ones when their task ends
	fmt.Println("size:", p.Size(), "max workers:", p.Status().MaxWorkers)
	// Output:
	// size: 2 workers: 2
	// size: 8
	// size: 1 max workers: 1
}

// SetMinWorkers keeps warm workers from now on, as WithMinWorkers does
// from New.
func ExampleWorkerPool_SetMinWorkers() {
	p := workerpool.New(8)
	defer p.Stop()
	p.SetMinWorkers(3)                   // started at once, and never retired however idle
	_ = p.WaitIdle(context.Background()) // the dispatcher took the change before it answers
	fmt.Println("workers:", p.Status().Workers)
	p.SetMinWorkers(20) // at most the size
	_ = p.WaitIdle(context.Background())
	fmt.Println("workers:", p.Status().Workers)
	// Output:
	// workers: 3
	// workers: 8
}

// A size schedule gives the pool other sizes by the time of day. The
// windows must not overlap: New panics, naming them, if they do.
func ExampleWithSizeSchedule() {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		fmt.Println(err)
		return
	}
	p := workerpool.New(4, workerpool.WithMinWorkers(1), workerpool.WithSizeSchedule(berlin,
		workerpool.SizeWindow{From: "12:00", To: "16:00", Min: 10, Max: 20}, // the afternoon peak
		workerpool.SizeWindow{From: "22:00", To: "06:00", Min: 0, Max: 1},   // nights: To before From wraps
	)) // the rest of the day: 1 to 4 workers, New's and WithMinWorkers's
	defer p.Stop()

	defer func() { fmt.Println(recover()) }()
	workerpool.New(4, workerpool.WithSizeSchedule(berlin,
		workerpool.SizeWindow{From: "08:00", To: "12:00", Min: 2, Max: 8},
		workerpool.SizeWindow{From: "11:30", To: "14:00", Min: 0, Max: 2},
	))
	// Output: workerpool: WithSizeSchedule window 1 (11:30-14:00) overlaps window 0 (08:00-12:00)
}

// WaitIdle waits until nothing runs or waits, without stopping the pool.
func ExampleWorkerPool_WaitIdle() {
	p := workerpool.New(4)
	defer p.Stop()
	var done atomic.Int64
	for range 100 {
		p.Submit(func() { done.Add(1) })
	}
	if err := p.WaitIdle(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Println("done:", done.Load())
	p.Submit(func() { done.Add(1) }) // the pool still runs
	_ = p.WaitIdle(context.Background())
	fmt.Println("done:", done.Load())
	// Output:
	// done: 100
	// done: 101
}

// DoBatch queues many tasks in one hand-off to the dispatcher, in order.
func ExampleWorkerPool_DoBatch() {
	p := workerpool.New(1)
	var out []int
	batch := make([]func(), 5)
	for i := range batch {
		batch[i] = func() { out = append(out, i) } // one worker: no race
	}
	if err := p.DoBatch(batch); err != nil {
		fmt.Println(err)
	}
	p.StopWait()
	fmt.Println(out)
	// Output: [0 1 2 3 4]
}

// Delayed tasks wait in the dispatcher's timer heap, holding no goroutine,
// and start in the order they come due.
func ExampleDelay() {
	p := workerpool.New(1)
	ctx := context.Background()
	say := func(s string) func(context.Context) error {
		return func(context.Context) error { fmt.Println(s); return nil }
	}
	later := p.Go(ctx, say("20ms later"), workerpool.Delay(20*time.Millisecond))
	p.Go(ctx, say("10ms later"), workerpool.Delay(10*time.Millisecond))
	_ = p.Go(ctx, say("at once"), workerpool.At(time.Now())).Wait()
	fmt.Println("scheduled:", p.Status().Scheduled)
	_ = later.Wait()
	p.StopWait()
	// Output:
	// at once
	// scheduled: 2
	// 10ms later
	// 20ms later
}

// Do takes the same options for a fire-and-forget func(): a delayed plain
// task waits in the timer heap, with no handle and no goroutine, and one
// that a stop abandons goes to the dead-letter handler.
func ExampleWorkerPool_Do() {
	p := workerpool.New(1, workerpool.WithDeadLetter(func(_ func(), err error) {
		fmt.Println("dead letter:", err)
	}))
	ran := make(chan struct{})
	_ = p.Do(func() { fmt.Println("10ms later"); close(ran) }, workerpool.Delay(10*time.Millisecond))
	_ = p.Do(func() { fmt.Println("an hour later") }, workerpool.Delay(time.Hour))
	<-ran
	fmt.Println("scheduled:", p.Status().Scheduled)
	p.Stop() // abandons the task due in an hour
	// Output:
	// 10ms later
	// scheduled: 1
	// dead letter: workerpool: pool stopped
}

// Among waiting tasks the highest level starts first, and tasks of one level
// start in the order they were submitted. (Here the one worker is kept busy
// so that all five wait.)
func ExamplePriority() {
	p := workerpool.New(1)
	started, release := make(chan struct{}), make(chan struct{})
	p.Submit(func() { close(started); <-release }) // keeps the one worker busy
	<-started

	ctx := context.Background()
	for _, t := range []struct {
		name  string
		level int
	}{{"backup", -1}, {"email a", 0}, {"alert", 10}, {"email b", 0}, {"report", 5}} {
		p.Go(ctx, func(context.Context) error {
			fmt.Println(t.name)
			return nil
		}, workerpool.Priority(t.level))
	}
	close(release)
	p.StopWait()
	// Output:
	// alert
	// report
	// email a
	// email b
	// backup
}

// Each account's operations run one at a time, in the order they were
// submitted, while different accounts run in parallel: WithKeyLimit(1)
// with the account as the key.
func ExampleKey() {
	p := workerpool.New(4, workerpool.WithKeyLimit(1))
	ctx := context.Background()
	var mu sync.Mutex
	ledgers := map[string][]string{}
	for _, op := range []struct{ account, entry string }{
		{"acct-1", "+100"}, {"acct-2", "+50"}, {"acct-1", "-30"},
		{"acct-2", "-50"}, {"acct-1", "+5"}, {"acct-2", "+20"},
	} {
		p.Go(ctx, func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			ledgers[op.account] = append(ledgers[op.account], op.entry)
			return nil
		}, workerpool.Key(op.account))
	}
	p.StopWait()
	fmt.Println("acct-1:", ledgers["acct-1"])
	fmt.Println("acct-2:", ledgers["acct-2"])
	fmt.Println("keys left:", p.Status().Keys)
	// Output:
	// acct-1: [+100 -30 +5]
	// acct-2: [+50 -50 +20]
	// keys left: 0
}

// A tenant with a backlog does not starve another: keys share the pool by
// deficit round robin, here with twice the share for "big".
func ExampleWithKeyWeights() {
	p := workerpool.New(1, workerpool.WithKeyWeights(func(tenant string) int {
		if tenant == "big" {
			return 2
		}
		return 1
	}))
	started, release := make(chan struct{}), make(chan struct{})
	p.Submit(func() { close(started); <-release }) // keeps the one worker busy
	<-started

	var order []string
	for _, tenant := range []string{"big", "big", "big", "big", "big", "big", "small", "small"} {
		p.Do(func() { order = append(order, tenant) }, workerpool.Key(tenant))
	}
	close(release)
	p.StopWait()
	fmt.Println(strings.Join(order, " "))
	// Output:
	// big big small big big small big big
}

// A task that fails twice runs a third time: Backoff waits a random delay of
// up to 1ms, then up to 2ms, between the runs, and gives up after 5 runs.
func ExampleRetry() {
	p := workerpool.New(2)
	runs := 0 // the runs of one task never overlap
	task := p.Go(context.Background(), func(context.Context) error {
		runs++
		if runs < 3 {
			err := errors.New("connection refused")
			fmt.Printf("run %d: %v\n", runs, err)
			return err
		}
		fmt.Printf("run %d: ok\n", runs)
		return nil
	}, workerpool.Retry(workerpool.Backoff(time.Millisecond, 10*time.Millisecond, 5)))
	err := task.Wait() // the last run's error
	p.StopWait()
	fmt.Println("err:", err, "retried:", p.Status().Retried)
	// Output:
	// run 1: connection refused
	// run 2: connection refused
	// run 3: ok
	// err: <nil> retried: 2
}

// An error that retrying cannot fix ends the task at once, whatever its
// RetryPolicy says; errors.Is still finds it.
func ExamplePermanent() {
	p := workerpool.New(2)
	errNotFound := errors.New("user not found")
	runs := 0
	err := p.Go(context.Background(), func(context.Context) error {
		runs++
		return workerpool.Permanent(errNotFound)
	}, workerpool.Retry(workerpool.Backoff(time.Millisecond, 10*time.Millisecond, 5))).Wait()
	p.StopWait()
	fmt.Println("runs:", runs)
	fmt.Println(err, errors.Is(err, errNotFound))
	// Output:
	// runs: 1
	// user not found true
}

// A heavy task takes several of the pool's slots: beside a task of weight 3,
// a pool of size 4 runs one light task at a time. A task heavier than the
// pool is refused.
func ExampleWeight() {
	p := workerpool.New(4)
	ctx := context.Background()
	var mu sync.Mutex
	inUse, most := 0, 0 // slots taken by running tasks, and the most seen
	take := func(n int) func() {
		mu.Lock()
		inUse += n
		most = max(most, inUse)
		mu.Unlock()
		return func() { mu.Lock(); inUse -= n; mu.Unlock() }
	}

	started, release := make(chan struct{}), make(chan struct{})
	heavy := p.Go(ctx, func(context.Context) error {
		defer take(3)()
		close(started)
		<-release
		return nil
	}, workerpool.Weight(3))
	<-started
	var light []*workerpool.Task
	for range 3 {
		light = append(light, p.Go(ctx, func(context.Context) error {
			defer take(1)()
			return nil
		}))
	}
	for _, t := range light {
		_ = t.Wait() // all three run while the heavy task holds its 3 slots
	}
	close(release)
	_ = heavy.Wait()
	fmt.Println("most slots in use:", most)

	err := p.Go(ctx, func(context.Context) error { return nil }, workerpool.Weight(5)).Wait()
	fmt.Println(err)
	p.StopWait()
	// Output:
	// most slots in use: 4
	// workerpool: task heavier than the pool
}

// Aging keeps low levels from starving: a waiting task's level rises by one
// for every period it has waited, so a task queued long ago overtakes tasks
// of higher levels queued since. Here the report, at level -1, has waited
// two periods (level 1 by then) when a request at level 0 comes in.
func ExampleWithPriorityAging() {
	p := workerpool.New(1, workerpool.WithPriorityAging(10*time.Millisecond))
	started, release := make(chan struct{}), make(chan struct{})
	p.Submit(func() { close(started); <-release }) // keeps the one worker busy
	<-started

	ctx := context.Background()
	say := func(s string) func(context.Context) error {
		return func(context.Context) error { fmt.Println(s); return nil }
	}
	p.Go(ctx, say("report"), workerpool.Priority(-1))
	p.Go(ctx, say("cleanup"), workerpool.Priority(math.MinInt)) // the lowest level: last, however long it waits
	time.Sleep(20 * time.Millisecond)
	p.Go(ctx, say("request"), workerpool.Priority(0))
	close(release)
	p.StopWait()
	// Output:
	// report
	// request
	// cleanup
}

// Tasks that wait in the queue too long expire instead of running late: a
// plain task goes to the dead-letter handler, and a Task's Wait reports
// ErrExpired.
func ExampleWithQueueTimeout() {
	p := workerpool.New(1,
		workerpool.WithQueueTimeout(10*time.Millisecond),
		workerpool.WithDeadLetter(func(task func(), reason error) {
			fmt.Println("dead letter:", reason)
		}))
	started, release := make(chan struct{}), make(chan struct{})
	p.Submit(func() { close(started); <-release }) // keeps the one worker busy
	<-started

	p.Submit(func() { fmt.Println("never runs") })
	task := p.Go(context.Background(), func(context.Context) error {
		fmt.Println("never runs either")
		return nil
	})
	err := task.Wait() // returns once the task has waited 10ms
	close(release)
	p.StopWait() // the dead-letter handler has returned by now
	fmt.Println(err, errors.Is(err, workerpool.ErrExpired))
	fmt.Println("expired:", p.Status().Expired)
	// Output:
	// dead letter: workerpool: task expired in the queue
	// workerpool: task expired in the queue true
	// expired: 2
}

// A rate limit spaces out the starts, not the submits: the bucket starts
// full, so a burst of 2 tasks starts at once, and the others wait in the
// queue for tokens, here one a minute. Stop abandons them.
func ExampleWithRateLimit() {
	p := workerpool.New(5, workerpool.WithRateLimit(1.0/60, 2))
	started := make(chan struct{}, 5)
	for range 5 {
		p.Submit(func() { started <- struct{}{} })
	}
	<-started
	<-started // the burst
	p.Stop()  // the three others still wait for a token
	s := p.Status()
	fmt.Println("completed:", s.Completed, "abandoned:", s.Abandoned)
	// Output: completed: 2 abandoned: 3
}

// Hooks see which task each call is about: they count runs and failures
// by label, and report every task that will never run, with its label and
// why: here one a full queue refused and one a Shutdown abandoned.
func ExampleWithHooks() {
	var mu sync.Mutex
	runs := map[string]int{}
	var failed, lost []string
	p := workerpool.New(1, workerpool.WithName("files"), workerpool.WithMaxWaiting(1, workerpool.Reject), workerpool.WithHooks(workerpool.Hooks{
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
				failed = append(failed, fmt.Sprintf("%s/%s attempt %d: %v", t.Pool, t.Label, t.Attempt, t.Err))
			}
		},
		TaskDropped: func(t workerpool.TaskInfo) {
			mu.Lock()
			defer mu.Unlock()
			lost = append(lost, fmt.Sprintf("%s: %v", t.Label, t.Err))
		},
	}))
	ctx := context.Background()
	fmt.Println(p.Go(ctx, func(context.Context) error { return errors.New("no such file") }, workerpool.Label("open")).Wait())
	running := make(chan struct{})
	p.Go(ctx, func(ctx context.Context) error { close(running); <-ctx.Done(); return ctx.Err() }, workerpool.Label("watch"))
	<-running
	p.Do(func() {}, workerpool.Label("index"))                  // waits in the queue, which is now full
	fmt.Println(p.Do(func() {}, workerpool.Label("thumbnail"))) // refused: TaskDropped runs before Do returns
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
	// files/open attempt 1: no such file
	// files/watch attempt 1: context canceled
	// [thumbnail: workerpool: waiting queue full index: workerpool: pool stopped]
}

// The logger gets one record per Resize and a summary when the pool stops,
// never a record per task.
func ExampleWithLogger() {
	noTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: noTime}))
	p := workerpool.New(2, workerpool.WithName("thumbnails"), workerpool.WithLogger(logger))
	for range 100 {
		p.Submit(func() {})
	}
	p.Resize(4)
	p.StopWait()
	// Output:
	// level=INFO msg="pool resized" pool=thumbnails from=2 to=4
	// level=INFO msg="pool stopped" pool=thumbnails submitted=100 completed=100 panicked=0 abandoned=0 canceled=0 dropped=0 expired=0 retried=0 rejected=0
}
