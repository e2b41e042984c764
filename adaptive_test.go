package workerpool

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// The tests of WithAdaptiveSize run in bubbles, where the sizer's windows
// end at exact whole seconds (adaptWindow). Task times are 13 ms and a
// microsecond, so that no task ends at a sample's instant in the first
// 1300 s: a sample taken as goroutines run reads Status a moment apart,
// and may count a worker more or less busy than it is (with 13 ms, one
// in 13 samples did, and a test failed about once in a hundred runs
// under -race).
const taskTime = 13*time.Millisecond + time.Microsecond

// downstream is a service of slots parallel slots: a call beyond them
// waits for one, so that a pool larger than slots gains nothing and its
// tasks' run time rises.
type downstream chan struct{}

func newDownstream(slots int) downstream { return make(downstream, slots) }

// call holds a slot for d.
func (s downstream) call(d time.Duration) {
	s <- struct{}{}
	time.Sleep(d)
	<-s
}

// backlog keeps at least n tasks of task waiting in p, looking every
// millisecond, half a millisecond off the sizer's samples (see
// taskTime), until its stop is called; stop returns once it has.
func backlog(p *WorkerPool, n int, task func()) (stop func()) {
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for look := time.Millisecond / 2; ; look = time.Millisecond {
			for p.WaitingQueueSize() < n {
				p.Submit(task)
			}
			select {
			case <-quit:
				return
			case <-time.After(look):
			}
		}
	}()
	return func() { close(quit); <-done }
}

// arrivals submits task to p every period, until its stop is called; stop
// returns once it has.
func arrivals(p *WorkerPool, period time.Duration, task func()) (stop func()) {
	tick := time.NewTicker(period)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				p.Submit(task)
			}
		}
	}()
	return func() { close(quit); <-done }
}

// decisions records the pool's size and reason just after each of the
// next n windows ends.
func decisions(p *WorkerPool, n int) (sizes []int, reasons []string) {
	for range n {
		time.Sleep(adaptWindow)
		synctest.Wait()
		s := p.Status()
		sizes = append(sizes, s.MaxWorkers)
		reasons = append(reasons, s.SizeReason)
	}
	return sizes, reasons
}

// inWindows starts a bubble's test a millisecond past a window's end, so
// that decisions reads each window's decision after it is made.
func inWindows(t *testing.T, f func(t *testing.T)) {
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Millisecond)
		f(t)
	})
}

func TestAdaptiveSizeClimbsWhileTheRunTimeHoldsUpToItsMax(t *testing.T) {
	inWindows(t, func(t *testing.T) {
		p := New(1, WithAdaptiveSize(1, 8))
		// New's maxWorkers is where it starts; nothing decided yet.
		s := p.Status()
		assert.Equal(t, 1, s.MaxWorkers)
		assert.Equal(t, "start", s.SizeReason)
		stop := backlog(p, 32, sleeper(taskTime)) // tasks that contend for nothing
		sizes, reasons := decisions(p, 5)
		assert.Equal(t, []int{2, 4, 8, 8, 8}, sizes, "it doubles while it starts, up to max")
		assert.Equal(t, []string{"climb", "climb", "climb", "hold", "hold"}, reasons)
		stop()
		p.StopWait()
	})
}

func TestAdaptiveSizeBacksOffWhenTheRunTimeRisesWithoutAGain(t *testing.T) {
	inWindows(t, func(t *testing.T) {
		service := newDownstream(4)
		p := New(1, WithAdaptiveSize(1, 64))
		stop := backlog(p, 128, func() { service.call(taskTime) })
		sizes, reasons := decisions(p, 6)
		// Up to 8, where calls wait for the service's 4 slots: the run time
		// doubles, and the size backs off to where the best run time gives
		// the same throughput (4), plus √8 of headroom, and holds there.
		assert.Equal(t, []int{2, 4, 8, 7, 7, 7}, sizes)
		assert.Equal(t, []string{"climb", "climb", "climb", "backoff", "hold", "hold"}, reasons)
		stop()
		p.StopWait()
	})
}

func TestAdaptiveSizeProbesBelowItsKneeAndComesBack(t *testing.T) {
	inWindows(t, func(t *testing.T) {
		service := newDownstream(4)
		p := New(1, WithAdaptiveSize(1, 64))
		stop := backlog(p, 128, func() { service.call(taskTime) })
		sizes, reasons := decisions(p, 20)
		// The fourth window is the first of backlog past the start; the
		// probeEvery-th such window steps down by the headroom, to the
		// service's slots, and the next steps back.
		probe := 3 + probeEvery - 1
		assert.Equal(t, []int{7, 4, 7, 7}, sizes[probe-1:probe+3])
		assert.Equal(t, []string{"hold", "probe", "probe", "hold"}, reasons[probe-1:probe+3])
		for i, r := range reasons {
			if i != probe && i != probe+1 {
				assert.NotEqual(t, "probe", r, "window %d", i+1)
			}
		}
		stop()
		p.StopWait()
	})
}

func TestAdaptiveSizeFitsAnIdlePoolToItsBusyWorkers(t *testing.T) {
	inWindows(t, func(t *testing.T) {
		p := New(8, WithAdaptiveSize(1, 8))
		// One task of 13 ms every 10 ms, 5 ms past each sample: each sample
		// finds one task running, and none waiting.
		time.Sleep(5 * time.Millisecond)
		stop := arrivals(p, 10*time.Millisecond, sleeper(taskTime))
		time.Sleep(adaptWindow - 6*time.Millisecond) // a millisecond before the first window ends
		synctest.Wait()
		assert.Equal(t, "start", p.Status().SizeReason, "the first window is still running")
		sizes, reasons := decisions(p, 3)
		// Room for 1 busy worker and its bursts is 1+3·1+1 = 5: the size
		// comes down by half the gap each window.
		assert.Equal(t, []int{6, 5, 5}, sizes)
		assert.Equal(t, []string{"fit", "fit", "hold"}, reasons)
		stop()
		p.StopWait()
	})
}

func TestAdaptiveSizeHoldsWhilePausedAndWhileIdle(t *testing.T) {
	inWindows(t, func(t *testing.T) {
		p := New(4, WithAdaptiveSize(1, 8))
		sizes, reasons := decisions(p, 2)
		assert.Equal(t, []int{4, 4}, sizes, "idle: nothing to learn")
		assert.Equal(t, []string{"hold", "hold"}, reasons)

		ctx, resume := context.WithCancel(context.Background())
		paused := make(chan struct{})
		go func() { p.Pause(ctx); close(paused) }()
		<-paused
		for range 50 {
			p.Submit(sleeper(taskTime))
		}
		sizes, reasons = decisions(p, 2)
		assert.Equal(t, []int{4, 4}, sizes, "paused: the tasks wait for the pause, not for workers")
		assert.Equal(t, []string{"hold", "hold"}, reasons)
		resume()
		p.StopWait()
	})
}

func TestAdaptiveSizeMeasuresSlowTasksOverLongerWindows(t *testing.T) {
	inWindows(t, func(t *testing.T) {
		p := New(2, WithAdaptiveSize(1, 8))
		stop := backlog(p, 16, sleeper(650*time.Millisecond))
		// 2 workers finish about 3 tasks a second: the window goes on until
		// it has counted minCompleted (at 6.5 s), holding the size
		// meanwhile, and the seventh second decides on it.
		sizes, reasons := decisions(p, 7)
		assert.Equal(t, []int{2, 2, 2, 2, 2, 2, 4}, sizes)
		assert.Equal(t, []string{"hold", "hold", "hold", "hold", "hold", "hold", "climb"}, reasons)
		stop()
		p.StopWait()
	})
}

func TestResizeSetsTheCeilingOfAnAdaptiveSize(t *testing.T) {
	inWindows(t, func(t *testing.T) {
		p := New(1, WithAdaptiveSize(2, 8))
		assert.Equal(t, 2, p.Size(), "New's maxWorkers below min starts at min")
		stop := backlog(p, 64, sleeper(taskTime))
		sizes, _ := decisions(p, 2)
		assert.Equal(t, []int{4, 8}, sizes)

		p.Resize(3)
		assert.Equal(t, 3, p.Size(), "a lower ceiling holds at once")
		assert.Equal(t, 3, p.Status().MaxWorkers)
		sizes, reasons := decisions(p, 2)
		assert.Equal(t, []int{3, 3}, sizes)
		assert.Equal(t, []string{"hold", "hold"}, reasons)

		p.Resize(1)
		assert.Equal(t, 1, p.Size(), "a ceiling below min is the size")
		sizes, _ = decisions(p, 1)
		assert.Equal(t, []int{1}, sizes)

		p.Resize(32) // above WithAdaptiveSize's max: the new ceiling
		assert.Equal(t, 2, p.Size(), "back to min at once")
		sizes, reasons = decisions(p, 4)
		assert.Equal(t, []int{4, 8, 16, 32}, sizes, "doubling again, up to the new ceiling")
		assert.Equal(t, []string{"climb", "climb", "climb", "climb"}, reasons)
		stop()
		p.StopWait()
	})
}

func TestATaskHeavierThanTheAdaptiveSizeStartsAloneAndHoldsThePool(t *testing.T) {
	inWindows(t, func(t *testing.T) {
		p := New(2, WithAdaptiveSize(1, 8))
		g := blockWorkers(t, p, 1)
		heavy := p.Go(context.Background(), noopFn, TaskOption{Weight: 4}) // accepted: the ceiling is 8
		light := p.Go(context.Background(), noopFn)
		synctest.Wait()
		assert.False(t, isDone(heavy.Done()), "it waits for the running task: it needs every slot")
		assert.False(t, isDone(light.Done()), "and the next task waits behind it")
		g.open()
		assert.NoError(t, heavy.Wait())
		assert.NoError(t, light.Wait())
		assert.Equal(t, 2, p.Size(), "the size did not change for it")

		assert.ErrorIs(t, p.Go(context.Background(), noopFn, TaskOption{Weight: 9}).Wait(), ErrTooHeavy, "heavier than the ceiling")
		p.StopWait()
	})
}

func TestAdaptiveSizeLogsEachChangeAtDebug(t *testing.T) {
	inWindows(t, func(t *testing.T) {
		var logs logBuffer
		p := New(1, WithAdaptiveSize(1, 4), WithHooks(Hooks{Logger: logs.logger(slog.LevelDebug)}))
		stop := backlog(p, 32, sleeper(taskTime))
		decisions(p, 3) // 2, 4, then 4 held: two changes
		stop()
		p.StopWait()
		var got []map[string]any
		for _, r := range logs.records(t, slog.LevelDebug) {
			if r["msg"] == "pool size chosen" {
				assert.Equal(t, "DEBUG", r["level"])
				got = append(got, pick(r, "from", "to", "reason"))
			}
		}
		assert.Equal(t, []map[string]any{
			{"from": 1.0, "to": 2.0, "reason": "climb"},
			{"from": 2.0, "to": 4.0, "reason": "climb"},
		}, got)
	})
}

func TestAdaptiveSizeStopsItsGoroutineWithThePool(t *testing.T) {
	// synctest.Test fails if a goroutine of the bubble is left blocked when
	// f returns: the sizing goroutine must be gone once Stop returns, as
	// must every pool goroutine.
	for _, stop := range []func(*WorkerPool){(*WorkerPool).Stop, (*WorkerPool).StopWait} {
		inWindows(t, func(t *testing.T) {
			p := New(2, WithAdaptiveSize(1, 8))
			p.Submit(sleeper(taskTime))
			time.Sleep(2*adaptWindow + adaptWindow/3)
			stop(p)
			assert.Equal(t, "hold", p.Status().SizeReason)
		})
	}
}

func TestWithAdaptiveSizeRejectsARangeUpsideDown(t *testing.T) {
	assert.PanicsWithValue(t, "workerpool: WithAdaptiveSize with max 2 below min 3", func() { WithAdaptiveSize(3, 2) })
	synctest.Test(t, func(t *testing.T) {
		p := New(5, WithAdaptiveSize(0, 3)) // min below 1 means 1
		assert.Equal(t, 3, p.Size(), "New's maxWorkers above max starts at max")
		p.Resize(100)
		p.Resize(1)
		assert.Equal(t, 1, p.Size())
		p.Stop()
	})
	synctest.Test(t, func(t *testing.T) {
		p := New(5)
		assert.Empty(t, p.Status().SizeReason, "no reason without the option")
		p.Stop()
	})
}

// The sizer alone, on samples given by hand.
func TestSizerDecisions(t *testing.T) {
	window := func(s *sizer, busy, waiting int, done uint64) {
		for range samplesPerWindow {
			s.add(sample{busy: busy, waiting: waiting, completed: s.last + done/samplesPerWindow})
		}
	}
	s := newSizer(1, 10, 0)
	window(&s, 10, 50, 1000)
	size, reason := s.decide(time.Second, 100)
	assert.Equal(t, 20, size)
	assert.Equal(t, "climb", *reason)
	// Twice the workers, the same throughput: the run time doubled.
	window(&s, 20, 50, 1000)
	size, reason = s.decide(time.Second, 100)
	assert.Equal(t, 10+4, size, "20·½ plus √20 of headroom")
	assert.Equal(t, "backoff", *reason)
	// The ceiling bounds every decision: at 12 the run time is back at
	// its best, and 12+√12 is above it.
	window(&s, 12, 50, 1200)
	size, reason = s.decide(time.Second, 12)
	assert.Equal(t, 12, size)
	assert.Equal(t, "hold", *reason)
	// A third of the workers idle, none waiting: room for 8+3·√8+1 = 18
	// is more than 12, which left workers idle: hold.
	window(&s, 8, 0, 800)
	size, reason = s.decide(time.Second, 100)
	assert.Equal(t, 12, size, "never above the size that left workers idle")
	assert.Equal(t, "hold", *reason)
	window(&s, 2, 0, 200)
	size, reason = s.decide(time.Second, 100)
	assert.Equal(t, 10, size, "2 busy: room for 2+3·√2+1 = 8, half the gap at a time")
	assert.Equal(t, "fit", *reason)
	// Too few completions while workers are busy: the window goes on.
	window(&s, 10, 5, 10)
	size, reason = s.decide(time.Second, 100)
	assert.Equal(t, 10, size)
	assert.Equal(t, "hold", *reason)
	assert.Equal(t, samplesPerWindow, s.samples, "not reset: the window goes on")
}

// In real time, on a downstream of 4 slots: once settled, the size stays
// between the slots and twice them, past which calls would only queue in
// the downstream: in at least 27 of 30 windows, so that a window the
// machine's load disturbs (the race detector, other tests) does not fail
// it. (Windows of 100 ms, so that it converges in seconds.)
func TestAdaptiveSizeConvergesInRealTime(t *testing.T) {
	defer func(w time.Duration) { adaptWindow = w }(adaptWindow)
	adaptWindow = 100 * time.Millisecond
	service := newDownstream(4)
	p := New(1, WithAdaptiveSize(1, 64))
	defer p.Stop()
	stop := backlog(p, 128, func() { service.call(5 * time.Millisecond) })
	defer stop()
	time.Sleep(20 * adaptWindow)
	reasons, sizes, within := map[string]int{}, []int{}, 0
	for range 30 {
		time.Sleep(adaptWindow)
		s := p.Status()
		if s.MaxWorkers >= 4 && s.MaxWorkers <= 8 {
			within++
		}
		sizes = append(sizes, s.MaxWorkers)
		reasons[s.SizeReason]++
	}
	assert.GreaterOrEqual(t, within, 27, "sizes %v: below the downstream's 4 slots, or above 8, where calls only queue in it", sizes)
	t.Logf("sizes over the last 30 windows: %v; reasons: %v", sizes, reasons)
}

// One disturbed window costs at most half the size: a stall of the
// machine reads as a run time forty times longer.
func TestSizerBacksOffAtMostByHalfAWindow(t *testing.T) {
	s := newSizer(1, 40, 0)
	s.starting = false
	var sizes []int
	for _, done := range []uint64{4000, 100, 100} {
		for range samplesPerWindow {
			s.add(sample{busy: s.size, waiting: 100, completed: s.last + done/samplesPerWindow})
		}
		size, _ := s.decide(time.Second, 100)
		sizes = append(sizes, size)
	}
	assert.Equal(t, []int{40 + 6, 46 / 2, (23 + 1) / 2}, sizes, "a climb by √40, then halved twice")
}

// A decision the sizer made just as stopping began reaches no dispatcher:
// the size and the reason stay as the stop found them.
func TestAdaptiveSizeChangesNothingOnceStoppingBegan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithAdaptiveSize(1, 8))
		p.Stop()
		// The sizer as it is when it took its tick a moment before the
		// stop began: it has not seen stopping yet, and dispatch refuses
		// its change.
		a := &autoSizer{sizes: &p.size, resize: p.tellResize}
		a.choose(4, &reasonClimb)
		s := p.Status()
		assert.Equal(t, 2, s.MaxWorkers, "the size the stop ran on")
		assert.Equal(t, 2, p.Size())
		assert.Equal(t, "start", s.SizeReason)
	})
}

// A Resize that lowers the ceiling below the chosen size changes the size
// at once; the sizer's next decision, which keeps it there, is no change
// to log.
func TestAdaptiveSizeLogsNoChangeALowerCeilingMadeAlready(t *testing.T) {
	inWindows(t, func(t *testing.T) {
		var logs logBuffer
		p := New(1, WithAdaptiveSize(1, 8), WithHooks(Hooks{Logger: logs.logger(slog.LevelDebug)}))
		stop := backlog(p, 64, sleeper(taskTime))
		decisions(p, 3) // 2, 4, 8
		p.Resize(3)
		sizes, reasons := decisions(p, 2)
		assert.Equal(t, []int{3, 3}, sizes)
		assert.Equal(t, []string{"hold", "hold"}, reasons)
		stop()
		p.StopWait()
		var got []map[string]any
		for _, r := range logs.records(t, slog.LevelDebug) {
			if r["msg"] == "pool size chosen" {
				got = append(got, pick(r, "from", "to", "reason"))
			}
		}
		assert.Equal(t, []map[string]any{
			{"from": 1.0, "to": 2.0, "reason": "climb"},
			{"from": 2.0, "to": 4.0, "reason": "climb"},
			{"from": 4.0, "to": 8.0, "reason": "climb"},
		}, got)
	})
}

// A decision that leaves the size as it was says hold, whatever led to it:
// here a fit that min holds back.
func TestAdaptiveSizeSaysHoldWhenAFitAtMinChangesNothing(t *testing.T) {
	inWindows(t, func(t *testing.T) {
		p := New(6, WithAdaptiveSize(6, 8))
		// One task of 13 ms every 10 ms, as in
		// TestAdaptiveSizeFitsAnIdlePoolToItsBusyWorkers: room for 5, but
		// min is 6.
		time.Sleep(5 * time.Millisecond)
		stop := arrivals(p, 10*time.Millisecond, sleeper(taskTime))
		sizes, reasons := decisions(p, 3)
		assert.Equal(t, []int{6, 6, 6}, sizes)
		assert.Equal(t, []string{"hold", "hold", "hold"}, reasons)
		stop()
		p.StopWait()
	})
}

// A probe that the ceiling keeps at the size changes nothing either: its
// two windows say hold.
func TestSizerSaysHoldWhenAProbeAtTheCeilingChangesNothing(t *testing.T) {
	window := func(s *sizer, busy int, done uint64) {
		for range samplesPerWindow {
			s.add(sample{busy: busy, waiting: 50, completed: s.last + done/samplesPerWindow})
		}
	}
	s := newSizer(1, 8, 0)
	window(&s, 8, 1000)
	s.decide(time.Second, 8)
	window(&s, 8, 500) // the run time doubled: the start is over
	size, _ := s.decide(time.Second, 8)
	for i := range 2 * probeEvery {
		window(&s, size, uint64(125*size)) // the run time back at its best: the ceiling holds the size
		from := size
		var reason *string
		size, reason = s.decide(time.Second, 8)
		if size == from {
			assert.Equal(t, "hold", *reason, "window %d at %d", i+1, size)
		}
	}
}

// On a downstream of more slots than a probe's step below its knee, the
// size settles a little above the slots and stays there: a best that
// faded between probes let the size creep up, past where a probe
// measured the best again, to the ceiling.
func TestAdaptiveSizeSettlesAboveADownstreamOfEightSlots(t *testing.T) {
	inWindows(t, func(t *testing.T) {
		service := newDownstream(8)
		p := New(1, WithAdaptiveSize(1, 64))
		stop := backlog(p, 128, func() { service.call(10 * taskTime) })
		sizes, _ := decisions(p, 300)
		for i, size := range sizes[20:] {
			assert.GreaterOrEqual(t, size, 8-3, "window %d: below a probe's step under the slots", 21+i)
			assert.LessOrEqual(t, size, 8+2*3, "window %d: far above the slots", 21+i)
		}
		stop()
		p.StopWait()
	})
}

// Work that contends for nothing and turns ten times slower lowers the
// throughput per busy worker as contention would: the size backs off, down
// to min, and the next probe (at min, in place) measures the best again,
// from which it climbs back to max. (A probe only ever raised the best,
// and none ran at min: the size stayed at 1 for some 16 minutes.)
func TestAdaptiveSizeClimbsBackWhenTheWorkTurnsSlower(t *testing.T) {
	inWindows(t, func(t *testing.T) {
		p := New(1, WithAdaptiveSize(1, 8))
		var slow atomic.Bool
		stop := backlog(p, 64, func() {
			if slow.Load() {
				time.Sleep(10 * taskTime)
			} else {
				time.Sleep(taskTime)
			}
		})
		sizes, _ := decisions(p, 4)
		assert.Equal(t, []int{2, 4, 8, 8}, sizes)
		slow.Store(true)
		sizes, _ = decisions(p, 60)
		assert.Equal(t, 1, sizes[3], "backed off to min")
		assert.Equal(t, 8, sizes[59], "back at max within a minute")
		stop()
		p.StopWait()
	})
}
