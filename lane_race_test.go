package workerpool

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Plain tasks that go through the lane (Submit, Do, DoBatch) from many
// goroutines, racing each way to stop: every accepted task runs exactly
// once or is abandoned and given to the dead-letter handler, a refused one
// never runs, none starts after the stop returned (nor, under Stop and a
// Shutdown that gives up, after abandoning began for a task no worker had
// taken), and the counts balance.
func TestLaneSubmitsRacingStops(t *testing.T) {
	raceEachStop(t, 60, laneSubmitsRaceStop)
}

func laneSubmitsRaceStop(t *testing.T, mode stopMode, round int) bool {
	const submitters, perSubmitter = 6, 300
	var (
		dead        atomic.Int64
		ran         [submitters * perSubmitter * 3]atomic.Int32
		accepted    [submitters * perSubmitter * 3]atomic.Bool
		stopped     atomic.Bool // the stop returned
		lateStarts  atomic.Int64
		panicsSeen  atomic.Int64
		goexitsSeen atomic.Int64
	)
	opts := []Option{WithHooks(Hooks{
		DeadLetter: func(func(), error) { dead.Add(1) },
		Panic:      func(any) { panicsSeen.Add(1) },
	})}
	if round%3 == 1 {
		opts = append(opts, WithIdleTimeout(time.Microsecond))
	}
	if round%3 == 2 {
		opts = append(opts, WithMinWorkers(2))
	}
	p := New(1+round%4, opts...)
	var warm atomic.Uint64
	for range 8 { // warm up: the lane opens
		p.Submit(func() { warm.Add(1) })
	}
	task := func(id int) func() {
		return func() {
			if stopped.Load() {
				lateStarts.Add(1)
			}
			ran[id].Add(1)
			switch id % 97 {
			case 13:
				panic("boom")
			case 29:
				goexitsSeen.Add(1)
				runtime.Goexit()
			}
		}
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range submitters {
		wg.Go(func() {
			<-start
			for i := range perSubmitter {
				id := (g*perSubmitter + i) * 3
				switch i % 3 {
				case 0:
					err, panicked := recovered(func() { p.Submit(task(id)) })
					if !panicked {
						accepted[id].Store(true)
					} else {
						require.ErrorIs(t, err, ErrStopped)
					}
				case 1:
					if err := p.Do(task(id)); err == nil {
						accepted[id].Store(true)
					} else {
						require.ErrorIs(t, err, ErrStopped)
					}
				case 2:
					if err := p.DoBatch([]func(){task(id), nil, task(id + 1), task(id + 2)}); err == nil {
						accepted[id].Store(true)
						accepted[id+1].Store(true)
						accepted[id+2].Store(true)
					} else {
						require.ErrorIs(t, err, ErrStopped)
					}
				}
				if i%50 == 49 {
					runtime.Gosched()
				}
			}
		})
	}
	close(start)
	time.Sleep(time.Duration(round%5) * 50 * time.Microsecond)
	mode.stop(p)
	stopped.Store(true)
	s := requireStoppedClean(t, p)
	wg.Wait()
	time.Sleep(time.Millisecond) // a task started late would show now
	var nAccepted, nRan uint64
	for id := range ran {
		r := ran[id].Load()
		if accepted[id].Load() {
			nAccepted++
			nRan += uint64(r)
			if !assert.LessOrEqual(t, r, int32(1), "task %d ran more than once", id) {
				return false
			}
		} else if !assert.Zero(t, r, "refused task %d ran", id) {
			return false
		}
	}
	ok := assert.Zero(t, lateStarts.Load(), "tasks started after the stop returned")
	ok = assert.Equal(t, nAccepted+8, s.Submitted, "submitted: the accepted tasks") && ok
	ok = assert.Equal(t, nRan+warm.Load(), s.Completed, "completed: the tasks that ran") && ok
	ok = assert.Equal(t, uint64(dead.Load()), s.Abandoned, "every abandoned task went to the dead-letter handler") && ok
	ok = assert.Equal(t, s.Submitted, s.Completed+s.Abandoned, "nothing lost") && ok
	if !mode.abandons {
		ok = assert.Zero(t, s.Abandoned, "a draining stop abandons nothing") && ok
	}
	return ok
}

// With one worker, the order tasks run in is the order they start: each
// goroutine's tasks, whichever call queued them (the lane's Submit, Do and
// DoBatch, or dispatch's Go, DoContext with options, DoWait and Group.Go),
// run in the order it submitted them, while Pause, WaitIdle and Resize
// close and reopen the lane all along.
func TestLaneKeepsEachSubmittersOrderAcrossCalls(t *testing.T) {
	rounds := 20
	if testing.Short() {
		rounds = 4
	}
	for round := range rounds {
		p := New(1)
		const submitters, per = 4, 400
		var mu sync.Mutex
		last := make([]int, submitters)
		for i := range last {
			last[i] = -1
		}
		var bad atomic.Int64
		rec := func(g, i int) func() {
			return func() {
				mu.Lock()
				if i <= last[g] {
					bad.Add(1)
					t.Errorf("round %d submitter %d: task %d ran after %d", round, g, i, last[g])
				}
				last[g] = i
				mu.Unlock()
			}
		}
		var wg sync.WaitGroup
		for g := range submitters {
			wg.Go(func() {
				grp := p.Group(context.Background())
				for i := 0; i < per; i++ {
					switch (i + g) % 9 {
					case 0, 1, 2:
						p.Submit(rec(g, i))
					case 3:
						require.NoError(t, p.Do(rec(g, i)))
					case 4:
						require.NoError(t, p.DoBatch([]func(){rec(g, i), rec(g, i+1)}))
						i++
					case 5:
						p.Go(context.Background(), func(context.Context) error { rec(g, i)(); return nil })
					case 6:
						require.NoError(t, p.DoContext(context.Background(), rec(g, i), TaskOption{Label: "l"}))
					case 7:
						grp.Go(func(context.Context) error { rec(g, i)(); return nil })
					case 8:
						if i%4 == 0 {
							require.NoError(t, p.DoWait(rec(g, i)))
						} else {
							p.Submit(rec(g, i))
						}
					}
				}
				require.NoError(t, grp.Wait())
			})
		}
		done := make(chan struct{})
		var ctl sync.WaitGroup
		ctl.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-done:
					return
				default:
				}
				switch k % 3 {
				case 0:
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Microsecond)
					p.Pause(ctx)
					<-ctx.Done()
					cancel()
				case 1:
					ctx, cancel := context.WithTimeout(context.Background(), 50*time.Microsecond)
					_ = p.WaitIdle(ctx)
					cancel()
				case 2:
					p.Resize(1)
				}
			}
		})
		wg.Wait()
		close(done)
		ctl.Wait()
		p.StopWait()
		requireStoppedClean(t, p)
		if bad.Load() > 0 {
			return
		}
	}
}
