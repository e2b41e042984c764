package workerpool

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With one worker busy, waiting tasks start highest level first, and in
// submission order within a level; plain tasks are level 0, negative
// levels come after them. So for every call that takes options.
func TestPriorityOrderWithOneWorker(t *testing.T) {
	forEachOptionCall(t, func(t *testing.T, c optionCall) {
		p := New(1)
		defer p.Stop()
		g := newGate()
		p.Submit(g.task())
		l, ctx := newStartLog(), t.Context()
		plain := func(name string) func() { return func() { _ = l.fn(name)(ctx) } }
		c.give(p, ctx, l.fn("0a"))
		c.give(p, ctx, l.fn("2a"), TaskOption{Priority: 2})
		p.Submit(plain("0b"))
		c.give(p, ctx, l.fn("-1a"), TaskOption{Priority: -1})
		c.give(p, ctx, l.fn("2b"), TaskOption{Priority: 2})
		c.give(p, ctx, l.fn("1a"), TaskOption{Priority: 1})
		c.give(p, ctx, l.fn("9a"), TaskOption{Priority: 9})
		c.give(p, ctx, l.fn("0c"), TaskOption{Priority: 0})
		c.give(p, ctx, l.fn("-5a"), TaskOption{Priority: -5})
		p.Submit(plain("0d"))
		c.give(p, ctx, l.fn("-1b"), TaskOption{Priority: -1})
		c.give(p, ctx, l.fn("last"), TaskOption{Priority: 1}, TaskOption{Priority: -9}) // the last option wins
		synctest.Wait()
		assert.Equal(t, 12, p.Status().Waiting)
		g.open()
		p.StopWait()
		assert.Equal(t, []string{"9a", "2a", "2b", "1a", "0a", "0b", "0c", "0d", "-1a", "-1b", "-5a", "last"}, l.starts)
		requireStoppedClean(t, p)
	})
}

// A group's tasks take their priority too.
func TestGroupTasksHavePriorities(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		g := newGate()
		p.Submit(g.task())
		l := newStartLog()
		grp := p.Group(t.Context())
		grp.Go(l.fn("low"), TaskOption{Priority: -1})
		grp.Go(l.fn("high"), TaskOption{Priority: 3})
		grp.Go(l.fn("mid"))
		synctest.Wait()
		g.open()
		require.NoError(t, grp.Wait())
		assert.Equal(t, []string{"high", "mid", "low"}, l.starts)
	})
}

// With aging, a task's level rises by one per period it waited since it
// became due: a task of level 0 that waited 3 periods overtakes one of
// level 2 that just came. Without aging the level-2 task goes first.
func TestPriorityAgingLiftsAStarvedTask(t *testing.T) {
	for _, aging := range []time.Duration{0, time.Second} {
		t.Run(aging.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(1, WithPriorityAging(aging))
				defer p.Stop()
				p.Submit(func() { time.Sleep(3 * time.Second) })
				l, ctx := newStartLog(), t.Context()
				p.Go(ctx, l.fn("old low"))
				time.Sleep(2500 * time.Millisecond)
				p.Go(ctx, l.fn("new high"), TaskOption{Priority: 2})
				p.StopWait()
				want := []string{"new high", "old low"}
				if aging > 0 {
					want = []string{"old low", "new high"}
				}
				assert.Equal(t, want, l.starts)
			})
		})
	}
}

// Aging keeps FIFO between tasks that reach the same level: the one that
// became due first goes first, whatever its own level. Periods not yet
// whole do not count.
func TestPriorityAgingTiesGoToTheOlder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithPriorityAging(time.Second))
		defer p.Stop()
		p.Submit(func() { time.Sleep(2 * time.Second) })
		l, ctx := newStartLog(), t.Context()
		p.Go(ctx, l.fn("a: level 0, aged 2"))                                  // at 0: reaches 2 at 2s
		time.Sleep(time.Second)                                                //
		p.Go(ctx, l.fn("b: level 1, aged 1"), TaskOption{Priority: 1})         // at 1s: reaches 2 at 2s
		time.Sleep(500 * time.Millisecond)                                     //
		p.Go(ctx, l.fn("c: level 2, aged 0.5: 2"), TaskOption{Priority: 2})    // at 1.5s: 2 at 2s
		p.Go(ctx, l.fn("d: level 1, aged 0.5: 1"), TaskOption{Priority: 1})    // at 1.5s: 1 at 2s
		p.Go(ctx, l.fn("e: level -2, aged 0.5: -2"), TaskOption{Priority: -2}) // at 1.5s
		p.StopWait()
		assert.Equal(t, []string{"a: level 0, aged 2", "b: level 1, aged 1", "c: level 2, aged 0.5: 2", "d: level 1, aged 0.5: 1", "e: level -2, aged 0.5: -2"}, l.starts)
	})
}

// A pause's barrier covers the tasks of every level queued before it: they
// run, in priority order, and Pause returns after them; a task of a higher
// level submitted after it waits for the pause to end.
func TestPauseBarrierCoversEveryLevel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		g := newGate()
		p.Submit(g.task())
		l, ctx := newStartLog(), t.Context()
		p.Go(ctx, l.fn("before 1"), TaskOption{Priority: 1})
		p.Submit(func() { _ = l.fn("before 0")(ctx) })
		p.Go(ctx, l.fn("before -1"), TaskOption{Priority: -1})
		pauseCtx, endPause := context.WithCancel(ctx)
		paused := make(chan struct{})
		go func() { p.Pause(pauseCtx); close(paused) }()
		synctest.Wait()
		p.Go(ctx, l.fn("after 5"), TaskOption{Priority: 5})
		p.Submit(func() { _ = l.fn("after 0")(ctx) })
		g.open()
		<-paused
		assert.Equal(t, []string{"before 1", "before 0", "before -1"}, l.starts, "when Pause returned")
		synctest.Wait()
		assert.Equal(t, 2, p.Status().Waiting, "held by the pause")
		endPause()
		p.StopWait()
		assert.Equal(t, []string{"before 1", "before 0", "before -1", "after 5", "after 0"}, l.starts)
	})
}

// DropOldest drops the task that joined the queue first, whatever its
// level.
func TestDropOldestDropsTheOldestOfAnyLevel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var letters []string
		p := New(1, WithMaxWaiting(3, DropOldest), WithHooks(Hooks{DeadLetter: func(task func(), reason error) {
			task() // the plain tasks below record their name
			letters = append(letters, reason.Error())
		}}))
		defer p.Stop()
		g := newGate()
		p.Submit(g.task())
		l, ctx := newStartLog(), t.Context()
		var dropped []string
		plain := func(name string) func() {
			return func() { dropped = append(dropped, name) }
		}
		high := p.Go(ctx, l.fn("high"), TaskOption{Priority: 2})
		p.Submit(plain("plain"))
		p.Go(ctx, l.fn("low"), TaskOption{Priority: -1})
		p.Go(ctx, l.fn("new 1"), TaskOption{Priority: -3}) // drops "high", the oldest
		assert.ErrorIs(t, high.Wait(), errDropped)
		p.Go(ctx, l.fn("new 2"), TaskOption{Priority: 1}) // drops "plain"
		synctest.Wait()
		assert.Equal(t, []string{"plain"}, dropped)
		assert.Equal(t, []string{errDropped.Error()}, letters)
		g.open()
		p.StopWait()
		assert.Equal(t, []string{"new 2", "low", "new 1"}, l.starts)
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(2), s.Dropped)
	})
}

// Canceling a queued task of another level than 0 takes it out of Waiting
// at once; it never runs.
func TestCancelARankedTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		defer p.Stop()
		g := newGate()
		p.Submit(g.task())
		l, ctx := newStartLog(), t.Context()
		aCtx, cancelA := context.WithCancel(ctx)
		a := p.Go(aCtx, l.fn("a"), TaskOption{Priority: 3})
		p.Go(ctx, l.fn("b"), TaskOption{Priority: 3})
		synctest.Wait()
		cancelA()
		assert.ErrorIs(t, a.Wait(), context.Canceled)
		assert.Equal(t, 1, p.Status().Waiting)
		assert.Equal(t, uint64(1), p.Status().Canceled)
		g.open()
		p.StopWait()
		assert.Equal(t, []string{"b"}, l.starts)
		requireStoppedClean(t, p)
	})
}

// Stop abandons the queued tasks of every level; each learns ErrStopped.
func TestStopAbandonsEveryLevel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		g := newGate()
		p.Submit(g.task())
		ctx := t.Context()
		var tasks []*Task
		for _, level := range []int{4, -4, 0, 4} {
			tasks = append(tasks, p.Go(ctx, func(context.Context) error { return errors.New("ran") }, TaskOption{Priority: level}))
		}
		synctest.Wait()
		go func() { synctest.Wait(); g.open() }()
		p.Stop()
		for _, task := range tasks {
			assert.ErrorIs(t, task.Wait(), ErrStopped)
		}
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(4), s.Abandoned)
	})
}

// Aging never wraps a high level around: a task of level math.MaxInt stays
// the highest however long others waited.
func TestPriorityAgingSaturates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithPriorityAging(time.Millisecond))
		defer p.Stop()
		p.Submit(func() { time.Sleep(time.Second) })
		l, ctx := newStartLog(), t.Context()
		p.Go(ctx, l.fn("zero"))
		p.Go(ctx, l.fn("max"), TaskOption{Priority: math.MaxInt})
		time.Sleep(5 * time.Millisecond)
		p.Go(ctx, l.fn("min"), TaskOption{Priority: math.MinInt})
		p.StopWait()
		assert.Equal(t, []string{"max", "zero", "min"}, l.starts)
	})
}

// canceledOnceTidied is a context whose Err reports context.Canceled only
// when asked while the dispatcher picks the next task under aging, after
// it tidied every front (agedHead), or by the worker that takes its task:
// a job with it is canceled right after the tidy, as a cancel from another
// goroutine can be.
type canceledOnceTidied struct{ context.Context }

func (c canceledOnceTidied) Err() error {
	if stack := ownStack(); strings.Contains(stack, "(*waitQueue).agedHead(") || strings.Contains(stack, "(*job).work(") {
		return context.Canceled
	}
	return nil
}

// Under aging the dispatcher looks at every level, highest first, and
// keeps the best front so far. A lower level that empties as it is
// reached (its only task canceled) is removed, which moves the levels
// above it down: the best so far must still name the right one.
func TestPriorityAgingPicksTheRightLevelWhenALowerOneEmptiesAsItIsReached(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithPriorityAging(time.Hour))
		defer p.Stop()
		g := newGate()
		defer g.release()
		p.Submit(g.task())
		l := newStartLog()
		high := p.Go(t.Context(), l.fn("high"), TaskOption{Priority: 2})
		low := p.Go(canceledOnceTidied{context.Background()}, l.fn("low"), TaskOption{Priority: 1})
		synctest.Wait()
		g.open()
		require.NoError(t, high.Wait(), "the task of the higher level")
		assert.ErrorIs(t, low.Wait(), context.Canceled, "the task canceled as its level was reached")
		p.StopWait()
		assert.Equal(t, []string{"high"}, l.starts, "starts")
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(1), s.Canceled, "canceled")
	})
}

// TaskOption{Priority: math.MinInt/MaxInt}, with and without aging: order is kept and
// nothing overflows.
func TestPriorityExtremes(t *testing.T) {
	for _, aging := range []time.Duration{0, time.Nanosecond, time.Millisecond, time.Duration(math.MaxInt64)} {
		synctest.Test(t, func(t *testing.T) {
			p := New(1, WithPriorityAging(aging))
			block := make(chan struct{})
			p.Submit(func() { <-block })
			var order []int
			for _, lvl := range []int{0, math.MinInt, math.MaxInt, -1, 1, math.MinInt + 1, math.MaxInt - 1} {
				p.Go(context.Background(), func(context.Context) error { order = append(order, lvl); return nil }, TaskOption{Priority: lvl})
			}
			synctest.Wait()
			close(block)
			p.StopWait()
			if aging == 0 || aging == time.Duration(math.MaxInt64) {
				assert.Equal(t, []int{math.MaxInt, math.MaxInt - 1, 1, 0, -1, math.MinInt + 1, math.MinInt}, order, "aging %v", aging)
			} else {
				assert.Len(t, order, 7)
			}
			requireStoppedClean(t, p)
		})
	}
}

// The same with as many levels waiting at once as the spares hold
// (maxSpareLevels): levels that empty and fill again reuse them, so a task
// with Priority costs only its options (one allocation, see jobOptions)
// more than one without.
func TestGoWithManyLevelsAllocs(t *testing.T) {
	if raceDetectorOn {
		t.Skip("allocation counts differ under -race")
	}
	p := New(1)
	defer p.StopWait()
	ctx := context.Background()
	var wg sync.WaitGroup
	block := make(chan struct{})
	const tasks = 64
	queued := func(ranked bool) float64 {
		return testing.AllocsPerRun(20, func() {
			p.Submit(func() { <-block })
			wg.Add(tasks)
			for i := range tasks {
				fn := func(context.Context) error { wg.Done(); return nil }
				if ranked {
					p.Go(ctx, fn, TaskOption{Priority: i + 1})
				} else {
					p.Go(ctx, fn)
				}
			}
			block <- struct{}{}
			wg.Wait()
		})
	}
	plain, ranked := queued(false), queued(true)
	if ranked > plain+tasks {
		t.Errorf("%d queued Go at %d levels: %v allocs per round, without Priority: %v (%.2f extra per task, 1 allowed)",
			tasks, tasks, ranked, plain, (ranked-plain)/tasks)
	}
}

// benchmarkQueuedLevels queues the tasks of BenchmarkPriorityLevels over
// levels priority levels; with 1, it passes no option at all.
func benchmarkQueuedLevels(b *testing.B, levels int) {
	tasks := 100_000
	if testing.Short() {
		tasks = 10_000
	}
	p, wg := New(4), new(sync.WaitGroup)
	defer p.StopWait()
	fn := func(context.Context) error { wg.Done(); return nil }
	b.ReportAllocs()
	for b.Loop() {
		ctx, resume := context.WithCancel(context.Background())
		p.Pause(ctx)
		wg.Add(tasks)
		for i := range tasks {
			if levels == 1 {
				p.Go(context.Background(), fn)
			} else {
				p.Go(context.Background(), fn, TaskOption{Priority: i % levels})
			}
		}
		resume()
		wg.Wait()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tasks), "ns/task")
}

// BenchmarkPriorityLevels queues 100,000 no-op tasks per iteration on a pool
// of 4 and runs them all: "fifo" with no options, "levels8" spread over 8
// priority levels (task i at level i%8), so that the queue orders them by
// level. It reports ns per task and allocs per iteration (divide by 100,000
// for per task).
//
// The pool is paused while the tasks are submitted, so that all 100,000 wait
// in the queue and leave it in priority order once the pause ends: without
// the pause, idle workers would take most tasks as they arrive and the
// ordering would be exercised only as far as the scheduler happened to let
// the queue build up, differently from run to run. Each iteration thus
// measures one Pause, 100,000 Go calls into a waiting queue, and draining it.
//
// With -short each iteration queues 10,000 tasks instead, so that a smoke
// run at -benchtime=100x takes seconds rather than half a minute.
func BenchmarkPriorityLevels(b *testing.B) {
	b.Run("fifo", func(b *testing.B) { benchmarkQueuedLevels(b, 1) })
	b.Run("levels8", func(b *testing.B) { benchmarkQueuedLevels(b, 8) })
}
