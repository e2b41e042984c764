package workerpool

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	_ "time/tzdata" // Europe/Berlin on machines without a zoneinfo database

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests for the size schedule (WithMinWorkers's windows) and the floor. Each
// runs in a synctest bubble, whose fake clock starts at 2000-01-01
// 00:00:00 UTC: the times below are computed from there, by hand.

// A sizeStep is what the pool shows from a moment on: its size and its
// live workers.
type sizeStep struct {
	at               time.Time
	maxWorkers, live int
}

// utc is a moment of 2000 in UTC.
func utc(month time.Month, day, hour, minute int) time.Time {
	return time.Date(2000, month, day, hour, minute, 0, 0, time.UTC)
}

// checkSizeSteps sleeps through steps, in order, and checks that the pool
// shows each step's sizes at its moment and still the sizes before it
// (from) a nanosecond earlier: every boundary happens exactly on time.
func checkSizeSteps(t *testing.T, p *WorkerPool, from sizeStep, steps []sizeStep) {
	t.Helper()
	check := func(at time.Time, want sizeStep, when string) {
		t.Helper()
		require.False(t, at.Before(time.Now()), "step at %v is in the past", at)
		time.Sleep(time.Until(at))
		synctest.Wait()
		s := p.Status()
		assert.Equal(t, want.maxWorkers, s.MaxWorkers, "MaxWorkers %s %v", when, want.at.UTC())
		assert.Equal(t, want.live, s.Workers, "Workers %s %v", when, want.at.UTC())
	}
	for _, step := range steps {
		check(step.at.Add(-time.Nanosecond), from, "just before")
		check(step.at, step, "at")
		from = step
	}
}

func TestSizeScheduleAppliesWindowsAtTheirBoundaries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Local time is UTC+2: the pool starts at 02:00 local, outside both
		// windows, which are adjacent (the first ends as the second begins).
		loc := time.FixedZone("UTC+2", 2*60*60)
		p := New(3, WithMinWorkers(1), WithIdleTimeout(-1), sizeSchedule(loc,
			SizeWindow{From: "09:00", To: "12:00", Min: 2, Max: 6},
			SizeWindow{From: "12:00", To: "14:00", Min: 0, Max: 1},
		))
		defer p.Stop()
		s := p.Status() // no synctest.Wait: New started the floor
		require.Equal(t, 3, s.MaxWorkers, "MaxWorkers when New returns")
		require.Equal(t, 1, s.Workers, "Workers when New returns")
		own := sizeStep{time.Now(), 3, 1}
		checkSizeSteps(t, p, own, []sizeStep{
			{utc(1, 1, 7, 0), 6, 2},  // 09:00 local: the first window's floor starts at once
			{utc(1, 1, 10, 0), 1, 1}, // 12:00: the second window; the idle worker above its Max retires at once
		})
		// Three tasks in the one-worker window: one runs, two wait.
		g := newGate()
		defer g.release()
		for range 3 {
			p.Submit(g.task())
		}
		synctest.Wait()
		s = p.Status()
		require.Equal(t, 1, s.Busy, "busy in the one-worker window")
		require.Equal(t, 2, s.Waiting, "waiting in the one-worker window")
		checkSizeSteps(t, p, sizeStep{utc(1, 1, 10, 0), 1, 1}, []sizeStep{
			{utc(1, 1, 12, 0), 3, 3}, // 14:00: the pool's own size; the waiting tasks start at once
		})
		s = p.Status()
		assert.Equal(t, 3, s.Busy, "busy once the window ended")
		assert.Equal(t, 0, s.Waiting, "waiting once the window ended")
		g.open()
		checkSizeSteps(t, p, sizeStep{utc(1, 1, 12, 0), 3, 3}, []sizeStep{
			{utc(1, 2, 7, 0), 6, 3}, // the next day, again
			{utc(1, 2, 10, 0), 1, 1},
			{utc(1, 2, 12, 0), 3, 1},
			{utc(1, 3, 7, 0), 6, 2},
		})
		p.Stop()
		s = requireStoppedClean(t, p)
		assert.Equal(t, uint64(3), s.Completed, "completed")
	})
}

func TestSizeScheduleWindowWrapsPastMidnight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4, WithMinWorkers(2), WithIdleTimeout(-1), sizeSchedule(time.UTC,
			SizeWindow{From: "22:00", To: "06:00", Min: 1, Max: 1},
		))
		defer p.Stop()
		s := p.Status() // New runs at midnight, inside the window
		require.Equal(t, 1, s.MaxWorkers, "MaxWorkers when New returns inside the window")
		require.Equal(t, 1, s.Workers, "Workers when New returns inside the window")
		require.Equal(t, 1, p.Size(), "Size when New returns inside the window")
		checkSizeSteps(t, p, sizeStep{time.Now(), 1, 1}, []sizeStep{
			{utc(1, 1, 6, 0), 4, 2}, // the pool's own, New's 4 and WithMinWorkers's 2
			{utc(1, 1, 22, 0), 1, 1},
			{utc(1, 2, 0, 0), 1, 1}, // midnight: no boundary
			{utc(1, 2, 6, 0), 4, 2},
			{utc(1, 2, 22, 0), 1, 1},
		})
	})
}

func TestSizeScheduleWholeDayWindowBeginsAgainAtItsFrom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(5, WithIdleTimeout(-1), sizeSchedule(time.UTC,
			SizeWindow{From: "06:00", To: "06:00", Min: 0, Max: 2}, // To equal to From: the whole day
		))
		defer p.Stop()
		require.Equal(t, 2, p.Size(), "Size when New returns")
		time.Sleep(10 * time.Hour)
		p.Resize(7) // inside the window: until its next boundary, tomorrow's 06:00
		checkSizeSteps(t, p, sizeStep{time.Now(), 7, 0}, []sizeStep{
			{utc(1, 2, 6, 0), 2, 0},
			{utc(1, 3, 6, 0), 2, 0},
		})
	})
}

// Europe/Berlin in 2000: the clock went from 02:00 to 03:00 (CET, UTC+1,
// to CEST, UTC+2) on March 26 at 01:00 UTC, and from 03:00 back to 02:00
// on October 29 at 01:00 UTC.
func berlin(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err, "LoadLocation")
	return loc
}

func TestSizeScheduleFollowsTheClockWhenDaylightSavingTimeBegins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3, WithIdleTimeout(-1), sizeSchedule(berlin(t),
			SizeWindow{From: "02:30", To: "05:00", Min: 5, Max: 5},
			SizeWindow{From: "02:10", To: "02:20", Min: 2, Max: 2},
		))
		defer p.Stop()
		// Every day before, the last window ended at 05:00 local, leaving 3
		// workers.
		checkSizeSteps(t, p, sizeStep{time.Now(), 3, 3}, []sizeStep{
			// March 25, CET: local = UTC+1.
			{utc(3, 25, 1, 10), 2, 2}, // 02:10
			{utc(3, 25, 1, 20), 3, 2}, // 02:20: the pool's own size; the floor is 0, and no worker retires
			{utc(3, 25, 1, 30), 5, 5}, // 02:30
			{utc(3, 25, 4, 0), 3, 3},  // 05:00
			// March 26: at 01:00 UTC the clock goes from 02:00 to 03:00. The
			// window 02:10-02:20 does not occur; 02:30-05:00 begins at the
			// skip, as the clock then reads 03:00, inside it.
			{utc(3, 26, 1, 0), 5, 5},
			{utc(3, 26, 1, 10), 5, 5}, // (02:10 CET would be now: nothing happens)
			{utc(3, 26, 3, 0), 3, 3},  // 05:00 CEST
			// March 27, CEST: local = UTC+2.
			{utc(3, 27, 0, 10), 2, 2},
			{utc(3, 27, 0, 20), 3, 2},
			{utc(3, 27, 0, 30), 5, 5},
			{utc(3, 27, 3, 0), 3, 3},
		})
	})
}

func TestSizeScheduleFollowsTheClockWhenDaylightSavingTimeEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3, WithIdleTimeout(-1), sizeSchedule(berlin(t),
			SizeWindow{From: "02:15", To: "02:45", Min: 7, Max: 7},
			SizeWindow{From: "02:50", To: "04:00", Min: 4, Max: 4},
		))
		defer p.Stop()
		checkSizeSteps(t, p, sizeStep{time.Now(), 3, 3}, []sizeStep{ // as every day before
			// October 28, CEST: local = UTC+2.
			{utc(10, 28, 0, 15), 7, 7}, // 02:15
			{utc(10, 28, 0, 45), 3, 3}, // 02:45
			{utc(10, 28, 0, 50), 4, 4}, // 02:50
			{utc(10, 28, 2, 0), 3, 3},  // 04:00
			// October 29: at 01:00 UTC the clock goes from 03:00 back to
			// 02:00, out of the window 02:50-04:00, and reads 02:00 to
			// 03:00 again: each window in that hour occurs twice.
			{utc(10, 29, 0, 15), 7, 7}, // 02:15 CEST
			{utc(10, 29, 0, 45), 3, 3},
			{utc(10, 29, 0, 50), 4, 4},
			{utc(10, 29, 1, 0), 3, 3},  // 03:00 CEST is 02:00 CET: outside
			{utc(10, 29, 1, 15), 7, 7}, // 02:15 CET
			{utc(10, 29, 1, 45), 3, 3},
			{utc(10, 29, 1, 50), 4, 4},
			{utc(10, 29, 3, 0), 3, 3}, // 04:00 CET
			// October 30, CET: local = UTC+1.
			{utc(10, 30, 1, 15), 7, 7},
			{utc(10, 30, 1, 45), 3, 3},
			{utc(10, 30, 1, 50), 4, 4},
			{utc(10, 30, 3, 0), 3, 3},
		})
	})
}

func TestSizeScheduleDaylightSavingTimeInsideAWindowIsNoBoundary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3, WithIdleTimeout(-1), sizeSchedule(berlin(t),
			SizeWindow{From: "01:00", To: "04:00", Min: 0, Max: 2},
		))
		defer p.Stop()
		time.Sleep(time.Until(utc(3, 26, 0, 30))) // 01:30 CET, inside the window
		p.Resize(9)
		// At 01:00 UTC the clock goes from 02:00 to 03:00, still inside the
		// window: the Resize holds until 04:00 CEST.
		checkSizeSteps(t, p, sizeStep{time.Now(), 9, 0}, []sizeStep{
			{utc(3, 26, 1, 0), 9, 0},
			{utc(3, 26, 2, 0), 3, 0},
			{utc(3, 26, 23, 0), 2, 0}, // 01:00 CEST
		})
	})
}

func TestResizeInsideASizeWindowHoldsUntilItsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, WithIdleTimeout(-1), sizeSchedule(time.UTC,
			SizeWindow{From: "10:00", To: "12:00", Min: 1, Max: 4},
			SizeWindow{From: "12:00", To: "13:00", Min: 0, Max: 2},
		))
		defer p.Stop()
		checkSizeSteps(t, p, sizeStep{time.Now(), 2, 0}, []sizeStep{
			{utc(1, 1, 10, 0), 4, 1},
		})
		time.Sleep(30 * time.Minute)
		p.Resize(8)
		synctest.Wait()
		s := p.Status()
		require.Equal(t, 8, s.MaxWorkers, "MaxWorkers after Resize(8) inside the window")
		// The dispatcher's timer fires for a delayed task inside the window:
		// no boundary, the calls' sizes hold.
		var ran atomic.Bool
		require.NoError(t, p.DoContext(context.Background(), func() { ran.Store(true) }, TaskOption{Delay: 10 * time.Minute}), "Do with Delay")
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		require.True(t, ran.Load(), "the delayed task ran")
		checkSizeSteps(t, p, sizeStep{time.Now(), 8, 1}, []sizeStep{
			{utc(1, 1, 12, 0), 2, 1}, // the next window's size, not the call's
		})
		time.Sleep(30 * time.Minute)
		p.Resize(5)
		synctest.Wait()
		require.Equal(t, 5, p.Status().MaxWorkers, "MaxWorkers after Resize(5) inside the second window")
		checkSizeSteps(t, p, sizeStep{time.Now(), 5, 1}, []sizeStep{
			{utc(1, 1, 13, 0), 2, 1}, // the pool's own: New's 2, not 8 nor 5
		})
		// Outside every window, the calls set the pool's own sizes, which
		// the windows replace while they last.
		time.Sleep(time.Hour)
		p.Resize(6)
		synctest.Wait()
		s = p.Status()
		require.Equal(t, 6, s.MaxWorkers, "MaxWorkers after Resize(6) outside the windows")
		checkSizeSteps(t, p, sizeStep{time.Now(), 6, 1}, []sizeStep{
			{utc(1, 2, 10, 0), 4, 1},
			{utc(1, 2, 12, 0), 2, 1},
			{utc(1, 2, 13, 0), 6, 1},
		})
	})
}

func TestWithMinWorkersBadScheduleMakesNewPanicNamingTheWindow(t *testing.T) {
	ok := SizeWindow{From: "08:00", To: "10:00", Min: 1, Max: 2}
	cases := []struct {
		name    string
		loc     *time.Location
		windows []SizeWindow
		want    string
	}{
		{"two Locations", nil, []SizeWindow{{From: "08:00", To: "09:00", Max: 1, Location: time.UTC}, {From: "10:00", To: "11:00", Max: 1}},
			"workerpool: WithMinWorkers window 1 (10:00-11:00) names another Location than the first window"},
		{"From without a leading zero", time.UTC, []SizeWindow{ok, {From: "9:00", To: "12:00", Max: 1}},
			`workerpool: WithMinWorkers window 1 (9:00-12:00): From "9:00" is not a time of day "HH:MM"`},
		{"To 24:00", time.UTC, []SizeWindow{{From: "22:00", To: "24:00", Max: 1}},
			`workerpool: WithMinWorkers window 0 (22:00-24:00): To "24:00" is not a time of day "HH:MM"`},
		{"minute 60", time.UTC, []SizeWindow{{From: "12:60", To: "13:00", Max: 1}},
			`workerpool: WithMinWorkers window 0 (12:60-13:00): From "12:60" is not a time of day "HH:MM"`},
		{"letters", time.UTC, []SizeWindow{{From: "ab:cd", To: "13:00", Max: 1}},
			`workerpool: WithMinWorkers window 0 (ab:cd-13:00): From "ab:cd" is not a time of day "HH:MM"`},
		{"empty To", time.UTC, []SizeWindow{{From: "12:00", Max: 1}},
			`workerpool: WithMinWorkers window 0 (12:00-): To "" is not a time of day "HH:MM"`},
		{"seconds", time.UTC, []SizeWindow{{From: "12:00:00", To: "13:00", Max: 1}},
			`workerpool: WithMinWorkers window 0 (12:00:00-13:00): From "12:00:00" is not a time of day "HH:MM"`},
		{"a sign", time.UTC, []SizeWindow{{From: "-1:00", To: "13:00", Max: 1}},
			`workerpool: WithMinWorkers window 0 (-1:00-13:00): From "-1:00" is not a time of day "HH:MM"`},
		{"one digit each", time.UTC, []SizeWindow{{From: "1:0", To: "13:00", Max: 1}},
			`workerpool: WithMinWorkers window 0 (1:0-13:00): From "1:0" is not a time of day "HH:MM"`},
		{"a leading space", time.UTC, []SizeWindow{{From: " 9:00", To: "13:00", Max: 1}},
			`workerpool: WithMinWorkers window 0 ( 9:00-13:00): From " 9:00" is not a time of day "HH:MM"`},
		{"a trailing space", time.UTC, []SizeWindow{{From: "08:00", To: "9:00 ", Max: 1}},
			`workerpool: WithMinWorkers window 0 (08:00-9:00 ): To "9:00 " is not a time of day "HH:MM"`},
		{"a plus sign", time.UTC, []SizeWindow{{From: "+9:00", To: "13:00", Max: 1}},
			`workerpool: WithMinWorkers window 0 (+9:00-13:00): From "+9:00" is not a time of day "HH:MM"`},
		{"To minute 60", time.UTC, []SizeWindow{{From: "08:00", To: "09:60", Max: 1}},
			`workerpool: WithMinWorkers window 0 (08:00-09:60): To "09:60" is not a time of day "HH:MM"`},
		{"Arabic-Indic digits", time.UTC, []SizeWindow{{From: "٠٩:٠٠", To: "13:00", Max: 1}},
			`workerpool: WithMinWorkers window 0 (٠٩:٠٠-13:00): From "٠٩:٠٠" is not a time of day "HH:MM"`},
		{"a two-byte letter before the colon", time.UTC, []SizeWindow{{From: "é:00", To: "13:00", Max: 1}},
			`workerpool: WithMinWorkers window 0 (é:00-13:00): From "é:00" is not a time of day "HH:MM"`},
		{"Max 0", time.UTC, []SizeWindow{ok, {From: "07:00", To: "08:00", Max: 1}, {From: "10:00", To: "11:00", Max: 0}},
			"workerpool: WithMinWorkers window 2 (10:00-11:00): Max 0 is below 1"},
		{"Min -1", time.UTC, []SizeWindow{{From: "10:00", To: "11:00", Min: -1, Max: 3}},
			"workerpool: WithMinWorkers window 0 (10:00-11:00): Min -1 is below 0"},
		{"Min above Max", time.UTC, []SizeWindow{ok, {From: "10:00", To: "11:00", Min: 5, Max: 3}},
			"workerpool: WithMinWorkers window 1 (10:00-11:00): Min 5 is above Max 3"},
		{"overlap", time.UTC, []SizeWindow{ok, {From: "09:59", To: "11:00", Max: 3}},
			"workerpool: WithMinWorkers window 1 (09:59-11:00) overlaps window 0 (08:00-10:00)"},
		{"overlap past midnight", time.UTC, []SizeWindow{{From: "01:00", To: "03:00", Max: 1}, ok, {From: "23:00", To: "01:01", Max: 3}},
			"workerpool: WithMinWorkers window 2 (23:00-01:01) overlaps window 0 (01:00-03:00)"},
		{"a night window over an early morning one", time.UTC, []SizeWindow{{From: "05:00", To: "07:00", Max: 1}, {From: "22:00", To: "05:01", Max: 3}},
			"workerpool: WithMinWorkers window 1 (22:00-05:01) overlaps window 0 (05:00-07:00)"},
		{"a window inside another", time.UTC, []SizeWindow{ok, {From: "08:30", To: "09:00", Max: 3}},
			"workerpool: WithMinWorkers window 1 (08:30-09:00) overlaps window 0 (08:00-10:00)"},
		{"a whole day and another", time.UTC, []SizeWindow{{From: "20:00", To: "20:00", Max: 3}, ok},
			"workerpool: WithMinWorkers window 1 (08:00-10:00) overlaps window 0 (20:00-20:00)"},
		{"the same window twice", time.UTC, []SizeWindow{ok, ok},
			"workerpool: WithMinWorkers window 1 (08:00-10:00) overlaps window 0 (08:00-10:00)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				windows := c.windows
				if c.loc != nil {
					windows = inLocation(c.loc, windows)
				}
				option := WithMinWorkers(0, windows...) // checked as New applies it
				assert.PanicsWithValue(t, c.want, func() { New(2, option) }, "New")
			})
		})
	}
}

func TestWithMinWorkersAcceptsAdjacentWindowsAndNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, sizeSchedule(time.UTC,
			SizeWindow{From: "00:00", To: "08:00", Min: 0, Max: 1},
			SizeWindow{From: "08:00", To: "23:59", Min: 0, Max: 3},
			SizeWindow{From: "23:59", To: "00:00", Min: 0, Max: 5}, // the last minute of the day
		))
		assert.Equal(t, 1, p.Size(), "Size at midnight")
		time.Sleep(24*time.Hour - time.Minute)
		synctest.Wait()
		assert.Equal(t, 5, p.Size(), "Size at 23:59")
		p.Stop()
		// No windows: no schedule, also after one (the last option wins).
		p = New(2, WithMinWorkers(0, SizeWindow{From: "00:00", To: "00:00", Max: 9}), WithMinWorkers(0))
		assert.Equal(t, 2, p.Size(), "Size with no windows")
		p.Stop()
	})
}

func TestSizeScheduleChangesNothingOnceStoppingBegan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, d := start(2, []Option{WithIdleTimeout(-1), sizeSchedule(time.UTC,
			SizeWindow{From: "01:00", To: "02:00", Min: 4, Max: 4},
		)})
		defer p.Stop()
		g := newGate()
		defer g.release()
		for range 3 {
			p.Submit(g.task())
		}
		synctest.Wait()
		go p.StopWait()
		synctest.Wait()
		require.Equal(t, "stopping", stateOf(p.Status()), "state while a task runs")
		// 01:00 passes while StopWait waits: the stop drains on 2 workers.
		checkSizeSteps(t, p, sizeStep{time.Now(), 2, 2}, []sizeStep{
			{utc(1, 1, 1, 0), 2, 2},
		})
		assert.Equal(t, 1, p.Status().Waiting, "waiting while stopping")
		g.open()
		p.StopWait()
		s := requireStoppedClean(t, p)
		assert.Equal(t, uint64(3), s.Completed, "completed")
		// The dispatcher has exited (Stop waited for it): its timer is
		// neither armed nor running.
		assert.False(t, d.timers.armed, "timer armed after the stop")
		assert.False(t, d.timers.timer.Stop(), "timer running after the stop")
		assert.False(t, d.sizes.on, "schedule on after the stop")
		time.Sleep(48 * time.Hour)
		synctest.Wait()
		s = p.Status()
		assert.Equal(t, 2, s.MaxWorkers, "MaxWorkers two days after the stop")
		assert.Equal(t, 0, s.Workers, "Workers two days after the stop")
		// The bubble's end checks that no goroutine is left.
	})
}

func TestSizeScheduleStopReleasesTheTimerAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, d := start(2, []Option{sizeSchedule(time.UTC,
			SizeWindow{From: "01:00", To: "02:00", Min: 1, Max: 4},
		)})
		time.Sleep(90 * time.Minute)
		synctest.Wait()
		require.Equal(t, 1, p.Status().Workers, "workers inside the window")
		p.Stop()
		requireStoppedClean(t, p)
		assert.False(t, d.timers.armed, "timer armed after Stop")
		assert.False(t, d.timers.timer.Stop(), "timer running after Stop")
		assert.Equal(t, 4, p.Size(), "Size after Stop: the window's")
	})
}

// A Resize made as a boundary passes counts as made just before it (then
// it sets the pool's own size, which the window replaces until its end) or
// just after it (then it holds for the window only): never both, never
// neither. Either way the sizes inside the window and after it agree.
func TestResizeRacingABoundaryCountsOnOneSideOfIt(t *testing.T) {
	seen := map[[2]int]int{}
	for range 200 {
		synctest.Test(t, func(t *testing.T) {
			p := New(2, WithIdleTimeout(-1), sizeSchedule(time.UTC,
				SizeWindow{From: "01:00", To: "02:00", Min: 0, Max: 4},
			))
			defer p.Stop()
			time.Sleep(time.Hour) // 01:00: the boundary's timer fires now too
			p.Resize(8)
			synctest.Wait()
			inside := p.Status().MaxWorkers
			time.Sleep(time.Hour)
			synctest.Wait()
			after := p.Status().MaxWorkers
			seen[[2]int{inside, after}]++
			assert.Contains(t, [][2]int{{4, 8}, {8, 2}}, [2]int{inside, after}, "MaxWorkers inside the window, after it")
		})
	}
	t.Logf("outcomes (inside, after): %v", seen)
}

// A change of the clock that leaves it in the window it was in, but skips
// the window's To and From (or lands on its From again), is a boundary:
// the window ends and begins again, so that a Resize made inside it holds
// no longer than on any other day. Lord Howe Island's clock skips from
// 02:00 to 02:30 (UTC+10:30 to UTC+11) on 2000-08-27 at 15:30 UTC, the
// day before; Berlin's goes back from 03:00 to 02:00 on 2000-10-29 at
// 01:00 UTC; Santiago's goes back at midnight, from 24:00 to 23:00 on
// 2000-03-11, at 03:00 UTC on the 12th.
func TestSizeScheduleClockChangeThatPassesABoundaryInsideAWindowIsOne(t *testing.T) {
	load := func(t *testing.T, name string) *time.Location {
		t.Helper()
		loc, err := time.LoadLocation(name)
		require.NoError(t, err, "LoadLocation %s", name)
		return loc
	}
	cases := []struct {
		name   string
		zone   string
		window SizeWindow
		resize time.Time  // inside the window, the day of the change
		steps  []sizeStep // from the Resize(7) on
	}{
		{"the clock skips a whole-day window's From", "Australia/Lord_Howe",
			SizeWindow{From: "02:15", To: "02:15", Max: 2}, utc(8, 26, 15, 0), // 01:30 +1030
			[]sizeStep{
				{utc(8, 26, 15, 30), 2, 0}, // the skip: 02:15 is skipped, the window begins again
				{utc(8, 27, 15, 15), 2, 0}, // 02:15 +11, as every day
			}},
		{"the clock goes back to a window's From", "Europe/Berlin",
			SizeWindow{From: "02:00", To: "05:00", Max: 2}, utc(10, 29, 0, 30), // 02:30 CEST
			[]sizeStep{
				{utc(10, 29, 1, 0), 2, 0}, // 02:00 CET: the window begins again
				{utc(10, 29, 4, 0), 5, 0}, // 05:00 CET
			}},
		{"the clock goes back at midnight to a window's From", "America/Santiago",
			SizeWindow{From: "23:00", To: "06:00", Max: 2}, utc(3, 12, 2, 30), // 23:30 -03 on the 11th
			[]sizeStep{
				{utc(3, 12, 3, 0), 2, 0},  // 23:00 -04 on the 11th: the window begins again
				{utc(3, 12, 10, 0), 5, 0}, // 06:00 -04
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			loc := load(t, c.zone)
			synctest.Test(t, func(t *testing.T) {
				p := New(5, WithIdleTimeout(-1), sizeSchedule(loc, c.window))
				defer p.Stop()
				time.Sleep(time.Until(c.resize))
				synctest.Wait()
				require.Equal(t, 2, p.Size(), "Size inside the window before the Resize")
				p.Resize(7) // inside the window: until its end
				checkSizeSteps(t, p, sizeStep{time.Now(), 7, 0}, c.steps)
			})
		})
	}
}

// scanBoundary is the reference for sizeTable.next, minute by minute: the
// first whole minute after from at which the window in effect differs from
// the one just before, or a window is in effect and the clock reached a
// window's From or To, or jumped forward over one. (A boundary outside
// every window before and after changes nothing: next may return it or
// not.) It holds for zones whose offsets are whole minutes.
func scanBoundary(tb *sizeTable, from time.Time) time.Time {
	marks := map[int]bool{}
	for _, m := range tb.marks {
		marks[m] = true
	}
	reading := func(t time.Time) time.Time { // what the clock reads, to the minute, as a time in UTC
		l := t.In(tb.loc)
		return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), 0, 0, time.UTC)
	}
	passed := func(t time.Time) bool {
		before, now := reading(t.Add(-time.Minute)), reading(t)
		if !now.After(before) { // the clock went back: only the reading it lands on
			return marks[60*now.Hour()+now.Minute()]
		}
		for r := before.Add(time.Minute); !r.After(now); r = r.Add(time.Minute) {
			if marks[60*r.Hour()+r.Minute()] {
				return true
			}
		}
		return false
	}
	t := from.Truncate(time.Minute)
	for range 3 * minutesPerDay {
		t = t.Add(time.Minute)
		w := tb.windowAt(t)
		if w != tb.windowAt(t.Add(-time.Nanosecond)) || w >= 0 && passed(t) {
			return t
		}
	}
	panic("no boundary in three days")
}

// nextChange is sizeTable.next, past the boundaries outside every window
// before and after, which change nothing. Each boundary is after the one
// before.
func nextChange(t *testing.T, tb *sizeTable, from time.Time) time.Time {
	for range 10 {
		b := tb.next(from)
		require.True(t, b.After(from), "next(%v) = %v, not after it", from, b)
		if tb.windowAt(b) >= 0 || tb.windowAt(b.Add(-time.Nanosecond)) >= 0 {
			return b
		}
		from = b
	}
	require.FailNow(t, "ten boundaries in a row that change nothing", "from %v", from)
	return time.Time{}
}

// randomSizeTable makes a valid schedule of 1 to 4 windows in loc, their
// times mostly around midnight and the hours of daylight saving time.
func randomSizeTable(r *rand.Rand, loc *time.Location) *sizeTable {
	clock := func() string {
		m := []int{0, 30, 60, 90, 120, 135, 150, 180, 1320, 1380, 1410, 1439}[r.IntN(12)]
		if r.IntN(3) == 0 {
			m = r.IntN(minutesPerDay)
		}
		return fmt.Sprintf("%02d:%02d", m/60, m%60)
	}
	for {
		windows := make([]SizeWindow, 1+r.IntN(4))
		for i := range windows {
			windows[i] = SizeWindow{From: clock(), To: clock(), Max: 1}
		}
		if tb := func() (tb *sizeTable) {
			defer func() { _ = recover() }() // overlapping: try again
			return newSizeTable(inLocation(loc, windows))
		}(); tb != nil {
			return tb
		}
	}
}

// The next boundary, as the schedule computes it, is the one a scan of the
// clock minute by minute finds: in zones whose clock changes by an hour,
// by 30 minutes (Lord Howe), by two hours (Troll), at midnight (Santiago,
// Havana, Beirut), at 00:01 (St. John's in those years), several times a
// year (Casablanca), or skips a whole day (Apia, 2011-12-30), from times
// around each change from 2000 to 2012, at random, and around the ends of
// the years 2037 to 2044 (see TestSizeTableNextPastABadZoneBoundAtTheEndOfALeapYear).
func TestSizeTableNextMatchesAScanOfTheClock(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 2000))
	trials := 300
	if raceDetectorOn { // no goroutines to race: the detector only slows it
		trials = 60
	}
	for _, zone := range []string{"UTC", "Europe/Berlin", "Australia/Lord_Howe", "Antarctica/Troll",
		"America/Santiago", "America/Havana", "Asia/Beirut", "America/St_Johns", "Africa/Casablanca", "Pacific/Apia"} {
		loc, err := time.LoadLocation(zone)
		require.NoError(t, err, "LoadLocation %s", zone)
		var changes []time.Time
		for at := time.Date(2000, 1, 1, 0, 0, 0, 0, loc); at.Year() < 2013; {
			_, end := at.ZoneBounds()
			if end.IsZero() {
				break
			}
			changes = append(changes, end)
			at = end
		}
		for trial := range trials {
			tb := randomSizeTable(r, loc)
			from := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(int64(13 * 365 * 24 * time.Hour))))
			if len(changes) > 0 && trial%4 != 0 { // within a day of a change
				from = changes[r.IntN(len(changes))].Add(time.Duration(r.Int64N(int64(48*time.Hour))) - 24*time.Hour)
			}
			if trial%5 == 4 { // within a day and a half of the end of a year that the zone's rule serves
				end := time.Date(2037+r.IntN(8), 12, 31, 12, 0, 0, 0, time.UTC)
				from = end.Add(time.Duration(r.Int64N(int64(72*time.Hour))) - 36*time.Hour)
			}
			if trial%3 == 0 {
				from = from.Truncate(time.Minute) // at a boundary, perhaps
			}
			got, want := nextChange(t, tb, from), scanBoundary(tb, from)
			if !assert.True(t, want.Equal(got), "%s, windows %v, from %v (%v): next boundary %v, the scan's %v",
				zone, tb.windows, from.UTC(), from.In(loc), got.In(loc), want.In(loc)) {
				return
			}
		}
	}
}

// Time.ZoneBounds reports a zone period that ends on the last UTC day of a
// leap year, at its midnight, for the years a zone's rule (the TZif
// footer) serves rather than its list of changes: from 2038 for the usual
// zoneinfo files, from the zone's last change in the past for the slim ones
// (the zoneinfo.zip of GOROOT and time/tzdata: 2024 and 2028 for Berlin).
// From that moment on it returns that same end, which is then no later
// than the time asked about (https://github.com/golang/go/issues/81583). next must not take it
// for a change of the clock: it looped forever on the same moment, and so
// did the dispatcher, which then ran no task and never stopped. The check
// waits for next on another goroutine, a minute at most (it takes
// microseconds), so that a loop fails the test instead of hanging it.
func TestSizeTableNextPastABadZoneBoundAtTheEndOfALeapYear(t *testing.T) {
	loc := berlin(t)
	at := func(month time.Month, day, hour, minute int) time.Time {
		return time.Date(2040, month, day, hour, minute, 0, 0, loc)
	}
	tb := newSizeTable(inLocation(loc, []SizeWindow{{From: "12:00", To: "13:00", Max: 1}}))
	for _, c := range []struct{ from, want time.Time }{
		{at(12, 30, 14, 0), at(12, 31, 12, 0)},  // the bad end, 2040-12-31 00:00 UTC, comes first
		{at(12, 31, 1, 0), at(12, 31, 12, 0)},   // at the bad end
		{at(12, 31, 12, 30), at(12, 31, 13, 0)}, // past it: ZoneBounds returns an end before from
		{at(12, 31, 13, 0), time.Date(2041, 1, 1, 12, 0, 0, 0, loc)},
	} {
		done := make(chan time.Time, 1)
		go func() { done <- tb.next(c.from) }()
		select {
		case got := <-done:
			assert.True(t, c.want.Equal(got), "next(%v) = %v, want %v", c.from, got, c.want)
		case <-time.After(time.Minute):
			require.FailNow(t, "next loops", "next(%v) has not returned after a minute", c.from)
		}
	}
}

// The pool passes the end of 2040 in Berlin, where Time.ZoneBounds
// reports a bad zone bound (see
// TestSizeTableNextPastABadZoneBoundAtTheEndOfALeapYear): the dispatcher
// spun on it, so that no boundary came any more, no task started and no
// stop returned.
func TestSizeSchedulePassesTheEndOfALeapYearInTheZonesRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(3, WithIdleTimeout(-1), sizeSchedule(berlin(t),
			SizeWindow{From: "12:00", To: "13:00", Min: 1, Max: 1},
		))
		defer p.Stop()
		at := func(year int, month time.Month, day, hour int) time.Time {
			return time.Date(year, month, day, hour, 0, 0, 0, time.UTC)
		}
		time.Sleep(time.Until(at(2040, 12, 30, 0)))
		checkSizeSteps(t, p, sizeStep{time.Now(), 3, 1}, []sizeStep{ // CET: local = UTC+1
			{at(2040, 12, 30, 11), 1, 1},
			{at(2040, 12, 30, 12), 3, 1},
			{at(2040, 12, 31, 11), 1, 1}, // after the bad bound, 2040-12-31 00:00 UTC
			{at(2040, 12, 31, 12), 3, 1},
			{at(2041, 1, 1, 11), 1, 1},
			{at(2041, 1, 1, 12), 3, 1},
		})
		var ran atomic.Bool
		p.Submit(func() { ran.Store(true) })
		p.StopWait()
		assert.True(t, ran.Load(), "a task submitted on 2041-01-01 ran")
	})
}

// A window whose Max is below the weight of a waiting, held-back or
// scheduled task drops it with ErrTooHeavy as it begins, as a Resize to
// its Max does (a plain task goes to the dead-letter handler); a running
// one finishes. Inside the window such a task is refused at its call; after
// it, it is accepted again.
func TestSizeWindowBelowATasksWeightDropsItAsResizeDoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var letters letterBox
		p := New(4, WithIdleTimeout(-1), WithKeys(3, nil), WithHooks(Hooks{DeadLetter: letters.handle}), sizeSchedule(time.UTC,
			SizeWindow{From: "01:00", To: "02:00", Min: 0, Max: 2},
		))
		defer p.Stop()
		ctx := context.Background()
		g := newGate()
		defer g.release()
		running := p.Go(ctx, fnOf(g.wait), TaskOption{Weight: 3})                      // runs through the window
		waiting := p.Go(ctx, noopFn, TaskOption{Weight: 3})                            // waits for slots
		heldBack := p.Go(ctx, noopFn, TaskOption{Key: "k", Weight: 3})                 // behind waiting
		scheduled := p.Go(ctx, noopFn, TaskOption{Weight: 3, Delay: 90 * time.Minute}) // due inside the window
		plain := func() {}
		require.NoError(t, p.DoContext(context.Background(), plain, TaskOption{Weight: 3}), "Do with TaskOption{Weight: 3} before the window")
		light := p.Go(ctx, noopFn, TaskOption{Weight: 2})
		synctest.Wait()
		require.Equal(t, 1, p.Status().Busy, "busy before the window")
		require.Equal(t, 4, p.Status().Waiting, "waiting before the window")

		time.Sleep(time.Hour) // 01:00
		synctest.Wait()
		for name, task := range map[string]*Task{"waiting": waiting, "held back": heldBack, "scheduled": scheduled} {
			require.True(t, isDone(task.Done()), "%s task settled at 01:00", name)
			assert.ErrorIs(t, task.Wait(), ErrTooHeavy, "%s task", name)
		}
		if got := letters.got(); assert.Len(t, got, 1, "dead letters") {
			assert.ErrorIs(t, got[0].reason, ErrTooHeavy, "the plain task's dead letter")
		}
		s := p.Status()
		assert.Equal(t, uint64(4), s.Dropped, "dropped at 01:00")
		assert.Equal(t, 1, s.Busy, "busy at 01:00: the running task finishes")
		assert.Equal(t, 1, s.Waiting, "waiting at 01:00: the light task, for slots")
		assert.ErrorIs(t, p.Go(ctx, noopFn, TaskOption{Weight: 3}).Wait(), ErrTooHeavy, "TaskOption{Weight: 3} inside the window")
		assert.ErrorIs(t, p.DoContext(context.Background(), plain, TaskOption{Weight: 3}), ErrTooHeavy, "Do with TaskOption{Weight: 3} inside the window")

		g.open()
		assert.NoError(t, light.Wait(), "the light task")
		require.NoError(t, running.Wait(), "the running task")
		time.Sleep(time.Hour) // 02:00
		synctest.Wait()
		assert.NoError(t, p.Go(ctx, noopFn, TaskOption{Weight: 3}).Wait(), "TaskOption{Weight: 3} after the window")
		p.StopWait()
		s = requireStoppedClean(t, p)
		assert.Equal(t, uint64(4), s.Dropped, "dropped")
		assert.Equal(t, uint64(2), s.Rejected, "rejected: the two calls inside the window")
	})
}

// A stop at the very moment of a boundary, with a Resize made then too, counts the boundary on one side of it: the
// stop returns, with no worker, no goroutine and no armed timer left, Size
// the size the pool ran on as it stopped (the one before the boundary,
// the window's or the Resize's), and the sizes change no more afterwards.
func TestSizeScheduleBoundaryRacingEachStop(t *testing.T) {
	stops := map[string]func(p *WorkerPool){
		"Stop":     (*WorkerPool).Stop,
		"StopWait": (*WorkerPool).StopWait,
		"Shutdown": func(p *WorkerPool) { _ = p.Shutdown(context.Background()) },
	}
	for name, stop := range stops {
		t.Run(name, func(t *testing.T) {
			seen := map[int]int{}
			for range 50 {
				synctest.Test(t, func(t *testing.T) {
					p, d := start(2, []Option{WithIdleTimeout(-1), sizeSchedule(time.UTC,
						SizeWindow{From: "01:00", To: "02:00", Min: 4, Max: 4},
					)})
					defer p.Stop()
					for range 5 {
						p.Submit(sleeper(time.Hour)) // two run until 01:00, three wait
					}
					var calls sync.WaitGroup
					calls.Go(func() { time.Sleep(time.Hour); p.Resize(3) })
					time.Sleep(time.Hour) // 01:00: the boundary's timer fires now too
					stop(p)
					calls.Wait() // a Resize the stop refused restores the size as it returns
					s := requireStoppedClean(t, p)
					seen[s.MaxWorkers]++
					assert.Equal(t, d.crew.max, s.MaxWorkers, "MaxWorkers when the stop returned: the size the pool ran on")
					assert.False(t, d.timers.armed, "timer armed after the stop")
					assert.False(t, d.timers.timer.Stop(), "timer running after the stop")
					time.Sleep(48 * time.Hour)
					synctest.Wait()
					later := p.Status()
					assert.Equal(t, s.MaxWorkers, later.MaxWorkers, "MaxWorkers two days after the stop")
					assert.Zero(t, later.Workers, "workers two days after the stop")
				})
			}
			t.Logf("MaxWorkers after %s: %v", name, seen)
		})
	}
}

// A boundary that grows the pool starts no task a Pause holds, nor one a
// key's limit holds back; one that shrinks it below the busy workers lets
// them finish and starts nothing until they are below the window's Max.
// WaitIdle waits through both.
func TestSizeScheduleBoundaryKeepsPausesAndKeyLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1, WithIdleTimeout(-1), WithKeys(1, nil), sizeSchedule(time.UTC,
			SizeWindow{From: "01:00", To: "02:00", Min: 0, Max: 4},
		))
		defer p.Stop()
		ctx := context.Background()
		pauseCtx, endPause := context.WithCancel(ctx)
		p.Pause(pauseCtx) // returns at once: nothing runs
		for range 2 {
			p.Submit(sleeper(time.Minute))
		}
		synctest.Wait()
		require.Equal(t, 2, p.Status().Waiting, "waiting in the pause")
		time.Sleep(time.Hour) // 01:00: the pool grows to 4, the pause holds
		synctest.Wait()
		s := p.Status()
		require.Equal(t, 4, s.MaxWorkers, "MaxWorkers at 01:00")
		assert.Equal(t, 0, s.Busy, "busy at 01:00 in the pause")
		assert.Equal(t, 2, s.Waiting, "waiting at 01:00 in the pause")
		endPause()
		synctest.Wait()
		assert.Equal(t, 2, p.Status().Busy, "busy once the pause ended")
		time.Sleep(time.Minute)
		// Four tasks of one key under a limit of 1, and three without: four
		// start, the key's others wait for it.
		for range 4 {
			require.NoError(t, p.DoContext(context.Background(), sleeper(40*time.Minute), TaskOption{Key: "k"}))
		}
		for range 3 {
			p.Submit(sleeper(2 * time.Hour))
		}
		synctest.Wait()
		s = p.Status()
		require.Equal(t, 4, s.Busy, "busy: one task of the key and three without")
		require.Equal(t, 3, s.Waiting, "waiting: the key's other three")
		t0 := time.Now() // 01:01
		idle := goWaitIdle(p, ctx, t0)
		// 01:41: the key's next task starts; 02:00: the pool shrinks to 1
		// with 4 busy: nothing starts until the three long tasks end, at
		// 03:01, and then the key's tasks run one by one on 1 worker.
		for _, c := range []struct {
			at                 time.Duration
			busy, waiting, max int
		}{
			{40 * time.Minute, 4, 2, 4},
			{59 * time.Minute, 4, 2, 1},
			{80 * time.Minute, 3, 2, 1},
			{2 * time.Hour, 1, 1, 1},
			{160 * time.Minute, 1, 0, 1},
		} {
			time.Sleep(time.Until(t0.Add(c.at)))
			synctest.Wait()
			s := p.Status()
			assert.Equal(t, c.max, s.MaxWorkers, "MaxWorkers at t0+%v", c.at)
			assert.Equal(t, c.busy, s.Busy, "busy at t0+%v", c.at)
			assert.Equal(t, c.waiting, s.Waiting, "waiting at t0+%v", c.at)
			assert.False(t, idle.returned(), "WaitIdle returned at t0+%v", c.at)
		}
		time.Sleep(time.Until(t0.Add(200 * time.Minute)))
		synctest.Wait()
		require.True(t, idle.returned(), "WaitIdle returned once the last task ended")
		assert.NoError(t, idle.err, "WaitIdle")
		assert.Equal(t, 200*time.Minute, idle.at, "WaitIdle returned when the last task ended")
	})
}

// A window without a Location reads the local clock.
func TestASizeWindowWithoutALocationReadsTheLocalClock(t *testing.T) {
	assert.Same(t, time.Local, newSizeTable([]SizeWindow{{From: "08:00", To: "09:00", Max: 1}}).loc)
	assert.Same(t, time.UTC, newSizeTable(inLocation(time.UTC, []SizeWindow{{From: "08:00", To: "09:00", Max: 1}})).loc)
}

// A window without a Location is on time.Local: a schedule whose windows
// name time.Local, some by nil and some by name, has one Location, and New
// takes it, whichever window comes first.
func TestSizeWindowsOfNilAndTimeLocalShareOneLocation(t *testing.T) {
	for _, first := range []*time.Location{nil, time.Local} {
		second := time.Local
		if first != nil {
			second = nil
		}
		windows := []SizeWindow{{From: "08:00", To: "09:00", Max: 1, Location: first}, {From: "10:00", To: "11:00", Max: 2, Location: second}}
		var tb *sizeTable
		require.NotPanics(t, func() { tb = newSizeTable(windows) }, "first window's Location %v, second's %v", first, second)
		assert.Same(t, time.Local, tb.loc, "the schedule's Location")
	}
}
