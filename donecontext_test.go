package workerpool

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of DoContext with a ctx that is already done: a try, which never
// waits for room. It takes the task if it can start on a free worker or
// find room at once, and else returns ErrQueueFull (counted in Rejected,
// told to TaskDropped); once stopping began it returns ErrStopped, not
// counted.

// tryOutcome is what became of one tried task: what its call returned,
// how often it ran, and how often the dead-letter handler got it.
type tryOutcome struct {
	err     error
	runs    atomic.Int32
	letters atomic.Int32
}

// tryRace is one pool under a race of tries with a stop: every task it
// tries is a closure of its own, so that the dead-letter handler knows it.
type tryRace struct {
	mu                sync.Mutex
	byFunc            map[uintptr]*tryOutcome
	dropped           atomic.Int64 // TaskDropped calls
	started, finished atomic.Int64 // TaskStarted and TaskFinished calls, in a timed round
}

func newTryRace() *tryRace {
	return &tryRace{byFunc: map[uintptr]*tryOutcome{}}
}

// hooks are the round's hooks; timed ones also count the runs, which makes
// every try ride a carrier with its ctx's values (see doWithOptions).
func (r *tryRace) hooks(timed bool) Hooks {
	if timed {
		return Hooks{
			TaskStarted:  func(ctx context.Context, _ TaskInfo) context.Context { r.started.Add(1); return ctx },
			TaskFinished: func(context.Context, TaskInfo) { r.finished.Add(1) },
		}
	}
	return Hooks{}
}

func (r *tryRace) letters() Hooks {
	return Hooks{
		TaskDropped: func(TaskInfo) { r.dropped.Add(1) },
		DeadLetter: func(task func(), _ error) {
			r.mu.Lock()
			o := r.byFunc[funcKey(task)]
			r.mu.Unlock()
			if o != nil {
				o.letters.Add(1)
			}
		},
	}
}

// task makes a task that counts its runs in a new outcome.
func (r *tryRace) task(body func()) (func(), *tryOutcome) {
	o := new(tryOutcome)
	fn := func() {
		o.runs.Add(1)
		body()
	}
	r.mu.Lock()
	r.byFunc[funcKey(fn)] = o
	r.mu.Unlock()
	return fn, o
}

// tryConfig is one configuration of the pool and of the tries.
type tryConfig struct {
	name string
	opts []Option
	task []TaskOption // each try's options, picked by the try's number
}

func tryConfigs() []tryConfig {
	var cs []tryConfig
	for _, policy := range []struct {
		name string
		opts []Option
	}{
		{"unbounded", nil},
		{"Block0", []Option{WithMaxWaiting(0, Block)}},
		{"Block1", []Option{WithMaxWaiting(1, Block)}},
		{"Reject1", []Option{WithMaxWaiting(1, Reject)}},
		{"DropOldest0", []Option{WithMaxWaiting(0, DropOldest)}},
		{"DropOldest2", []Option{WithMaxWaiting(2, DropOldest)}},
	} {
		for _, task := range []struct {
			name string
			opts []TaskOption
			pool []Option
		}{
			{"plain", nil, nil},
			{"delayed", []TaskOption{{Delay: time.Millisecond}}, nil},
			{"keyed", []TaskOption{{Key: "a"}, {Key: "b"}}, []Option{WithKeys(1, nil)}},
			{"weighted", []TaskOption{{Weight: 2}, {Priority: 1, Label: "l"}}, nil},
		} {
			cs = append(cs, tryConfig{
				name: policy.name + "/" + task.name,
				opts: append(append([]Option{WithIdleTimeout(-1)}, policy.opts...), task.pool...),
				task: task.opts,
			})
		}
	}
	return cs
}

// Tries from several goroutines race with each way to stop: every task a
// try accepted runs once or reaches the dead-letter handler once; every
// one refused never does, and is counted in Rejected and told to
// TaskDropped if refused as a full queue, neither if refused as stopped.
// After the stop the counts add up, and in the rounds with TaskStarted and
// TaskFinished (every try then rides a carrier) each run got one of each.
func TestTriesRacingAStopLoseNothingAndReportEachRefusalOnce(t *testing.T) {
	rounds := 100
	if raceDetectorOn { // CI's stress step runs it nine times under -race
		rounds = 30
	}
	if testing.Short() {
		rounds = 10
	}
	for _, c := range tryConfigs() {
		for _, mode := range stopModes {
			t.Run(c.name+"/"+mode.name, func(t *testing.T) {
				untilFailure(t, rounds, func(t *testing.T, round int) {
					tryStopRace(t, c, mode, round)
				})
			})
		}
	}
}

func tryStopRace(t *testing.T, c tryConfig, mode stopMode, round int) {
	r := newTryRace()
	timed := round%2 == 1
	p := New(2, append(c.opts, WithHooks(r.letters()), WithHooks(r.hooks(timed)))...)
	rng := rand.New(rand.NewPCG(uint64(round), 35))
	var all []*tryOutcome
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 3 {
		seed := rng.Uint64()
		wg.Go(func() {
			gr := rand.New(rand.NewPCG(seed, uint64(g)))
			for i := range 12 {
				fn, o := r.task(sleepFor(gr.IntN(3)))
				var opts []TaskOption
				if len(c.task) > 0 {
					opts = []TaskOption{c.task[i%len(c.task)]}
				}
				o.err = p.DoContext(doneContext, fn, opts...)
				mu.Lock()
				all = append(all, o)
				mu.Unlock()
				if gr.IntN(3) == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	time.Sleep(time.Duration(rng.IntN(4)) * time.Millisecond)
	mode.stop(p)
	wg.Wait()
	s := requireStoppedClean(t, p)
	var full, stopped uint64
	var runs int64
	for i, o := range all {
		runs += int64(o.runs.Load())
		switch {
		case o.err == nil:
			assert.Equal(t, int32(1), o.runs.Load()+o.letters.Load(), "try %d accepted: runs %d, letters %d", i, o.runs.Load(), o.letters.Load())
		case errors.Is(o.err, ErrStopped):
			stopped++
			assert.Zero(t, o.runs.Load()+o.letters.Load(), "try %d refused as stopped, then ran or was a letter", i)
		case refusedFull(o.err), errors.Is(o.err, ErrTooHeavy):
			full++
			assert.Zero(t, o.runs.Load()+o.letters.Load(), "try %d refused, then ran or was a letter", i)
		default:
			assert.Fail(t, "try's error", "try %d: %v", i, o.err)
		}
	}
	assert.Equal(t, full, s.Rejected, "round %d: Rejected counts the tries refused as full, no more", round)
	assert.Equal(t, uint64(len(all))-full-stopped, s.Submitted, "round %d: Submitted counts the tries accepted", round)
	assert.Equal(t, int64(neverRun(s)), r.dropped.Load(), "round %d: one TaskDropped per task never run: %+v", round, s)
	if timed {
		assert.Equal(t, runs, r.started.Load(), "round %d: one TaskStarted per run", round)
		assert.Equal(t, runs, r.finished.Load(), "round %d: one TaskFinished per run", round)
	}
}

// A try of a task that could start at once on a free worker, under a key
// limit, is not refused because submitters wait for room that only their
// keys' limits keep from starting: they would not start on that worker,
// and a Go or a DoContext with a live ctx starts at once past them.
func TestATryStartsAtOncePastSubmittersThatOnlyTheirKeysHoldBack(t *testing.T) {
	for _, task := range []struct {
		name string
		opts []TaskOption
	}{
		{"another key", []TaskOption{{Key: "b"}}},
		{"no key", nil},
		{"no key, a label", []TaskOption{{Label: "l"}}},
	} {
		t.Run(task.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(3, WithKeys(1, nil), WithMaxWaiting(1, Block), WithIdleTimeout(-1))
				defer p.Stop()
				r, ctx := newStartTrace(), context.Background()
				p.Go(ctx, r.fn("a1", 5*time.Second), TaskOption{Key: "a"})
				synctest.Wait()
				p.Go(ctx, r.fn("a2", time.Second), TaskOption{Key: "a"}) // held back by its key: fills the bound
				parked := make(chan *Task, 1)
				go func() { parked <- p.Go(ctx, r.fn("a3", time.Second), TaskOption{Key: "a"}) }()
				r.sleepUntil(time.Second / 2)
				require.Empty(t, parked, "a3 waits for room")
				require.Equal(t, 1, p.Status().Busy, "busy: a1 alone; two workers are free")

				assert.NoError(t, p.DoContext(doneContext, r.task("try", time.Second), task.opts...),
					"a try that can start at once on a free worker")
				r.sleepUntil(5500 * time.Millisecond)
				require.Len(t, parked, 1, "a3's Go returned")
				assert.NoError(t, (<-parked).Wait())
				s := r.stopWaitRan(t, p, "a1@0s", "try@500ms", "a2@5s", "a3@6s")
				assert.Zero(t, s.Rejected, "rejected")
			})
		})
	}
}

// A try still never overtakes a submitter that waits for room and is not
// held back by its key alone: under a key limit, with a parked submitter
// that a free worker could start (a batch, which needs room for all its
// tasks), a try is refused as ErrQueueFull.
func TestATryUnderAKeyLimitNeverOvertakesAWaitingBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3, WithKeys(1, nil), WithMaxWaiting(1, Block), WithIdleTimeout(-1))
		defer p.Stop()
		r, ctx := newStartTrace(), context.Background()
		p.Go(ctx, r.fn("a1", 5*time.Second), TaskOption{Key: "a"})
		synctest.Wait()
		p.Go(ctx, r.fn("a2", time.Second), TaskOption{Key: "a"}) // held back by its key: fills the bound
		batch := goDoBatch(p, []func(){r.task("b1", time.Second)})
		r.sleepUntil(time.Second / 2)
		require.False(t, batch.returned(), "the batch waits for room")

		err := p.DoContext(doneContext, r.task("try", time.Second), TaskOption{Key: "c"})
		assert.ErrorIs(t, err, ErrQueueFull, "a try behind a waiting batch")
		r.sleepUntil(5500 * time.Millisecond)
		require.True(t, batch.returned(), "the batch was admitted")
		assert.NoError(t, batch.err)
		s := r.stopWaitRan(t, p, "a1@0s", "a2@5s", "b1@5s")
		assert.Equal(t, uint64(1), s.Rejected, "rejected: the try")
	})
}
