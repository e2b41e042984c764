package workerpool

import (
	"fmt"
	"slices"
	"time"
)

// A SizeWindow is a time of day during which the pool runs with other
// sizes than its own (see WithMinWorkers): at most Max workers, as
// Resize(Max) sets, and at least Min kept however idle.
//
// From and To are times of day, "HH:MM" (00:00 to 23:59), on the clock of
// Location; the window begins when that clock reads From and ends when it
// reads To. A To at or before From wraps past midnight: "22:00" to "06:00"
// is the night, and a To equal to From is the whole day (which then begins
// again, as a boundary, at From).
type SizeWindow struct {
	From, To string         // "HH:MM" on Location's clock; To at or before From wraps past midnight
	Min, Max int            // the workers kept (0 <= Min <= Max) and the most workers (Max >= 1) inside the window
	Location *time.Location // the clock From and To are read on, the same for every window of a schedule; nil: time.Local
}

// locationOf is w's Location: time.Local for nil.
func locationOf(w SizeWindow) *time.Location {
	if w.Location == nil {
		return time.Local
	}
	return w.Location
}

// minutesPerDay is the length of the clock's day that a schedule divides.
const minutesPerDay = 24 * 60

// sizeTable is a size schedule as WithMinWorkers checked it: the
// windows, which window each minute of the day belongs to, and the
// minutes at which a window begins or ends. It never changes after New.
type sizeTable struct {
	loc     *time.Location
	windows []SizeWindow
	owner   [minutesPerDay]int16 // the window each minute of the day belongs to, or -1: none
	marks   []int                // the minutes of the day at which a window begins or ends, ascending, each once
}

// newSizeTable checks windows and returns their table, or nil if there are
// none. It panics, naming the window, if one is malformed, two overlap, or
// two name different Locations.
func newSizeTable(windows []SizeWindow) *sizeTable {
	if len(windows) == 0 {
		return nil
	}
	loc := locationOf(windows[0])
	for i, w := range windows {
		if locationOf(w) != loc {
			panic(fmt.Sprintf("workerpool: WithMinWorkers %s names another Location than the first window", windowName(i, w)))
		}
	}
	t := &sizeTable{loc: loc, windows: slices.Clone(windows)}
	for m := range t.owner {
		t.owner[m] = -1
	}
	for i, w := range t.windows {
		from, to := t.check(i)
		length := (to - from + minutesPerDay) % minutesPerDay
		if length == 0 {
			length = minutesPerDay // To equal to From: the whole day
		}
		for k := range length {
			m := (from + k) % minutesPerDay
			if o := t.owner[m]; o >= 0 {
				panic(fmt.Sprintf("workerpool: WithMinWorkers %s overlaps %s", windowName(i, w), windowName(int(o), t.windows[o])))
			}
			t.owner[m] = int16(i)
		}
		t.marks = append(t.marks, from, to)
	}
	slices.Sort(t.marks)
	t.marks = slices.Compact(t.marks)
	return t
}

// check checks window i's fields, panicking with what is wrong, and
// returns its From and To as minutes of the day.
func (t *sizeTable) check(i int) (from, to int) {
	w := t.windows[i]
	bad := func(format string, args ...any) {
		panic(fmt.Sprintf("workerpool: WithMinWorkers %s: ", windowName(i, w)) + fmt.Sprintf(format, args...))
	}
	from, okFrom := parseClock(w.From)
	to, okTo := parseClock(w.To)
	switch {
	case !okFrom:
		bad("From %q is not a time of day \"HH:MM\"", w.From)
	case !okTo:
		bad("To %q is not a time of day \"HH:MM\"", w.To)
	case w.Max < 1:
		bad("Max %d is below 1", w.Max)
	case w.Min < 0:
		bad("Min %d is below 0", w.Min)
	case w.Min > w.Max:
		bad("Min %d is above Max %d", w.Min, w.Max)
	}
	return from, to
}

// windowName names window i of a schedule in a panic's message.
func windowName(i int, w SizeWindow) string {
	return fmt.Sprintf("window %d (%s-%s)", i, w.From, w.To)
}

// parseClock reads "HH:MM", 00:00 to 23:59, as minutes of the day.
func parseClock(s string) (int, bool) {
	digit := func(c byte) int {
		if c < '0' || c > '9' {
			return -100
		}
		return int(c - '0')
	}
	if len(s) != 5 || s[2] != ':' {
		return 0, false
	}
	h, m := 10*digit(s[0])+digit(s[1]), 10*digit(s[3])+digit(s[4])
	if h < 0 || h > 23 || m < 0 || m > 59 {
		return 0, false
	}
	return 60*h + m, true
}

// windowAt returns the window in effect at t, by what the clock of the
// schedule's location reads then, or -1 for none.
func (t *sizeTable) windowAt(at time.Time) int {
	h, m, _ := at.In(t.loc).Clock()
	return int(t.owner[60*h+m])
}

// next returns the first boundary after from: the first moment the clock
// of the schedule's location reaches a window's From or To, or a change of
// that clock (daylight saving time) moves it into another window or out
// of one. Between changes the clock runs evenly, so the next From or To is
// found by arithmetic; a change that comes first is a boundary if the
// clock lands in another window than the one it left, or if it skips a
// From or To or lands on one, and otherwise the search goes on from it. On
// a day the clock skips the time of a boundary, the window it lands in so
// begins at the skip (also the window it left, which then ends and begins
// again); on a day it goes back, a boundary it reads twice happens twice.
//
// A zone period that ZoneBounds says ends no later than at is none: on the
// last UTC day of a leap year that a zone's rule serves (the years after
// its list of changes), it reports an end at that day's midnight, and
// again from then on (https://github.com/golang/go/issues/81583); taken
// for a change, it kept the search on the same moment forever.
func (t *sizeTable) next(from time.Time) time.Time {
	at := from.In(t.loc)
	for {
		mark := at.Add(t.untilMark(at))
		_, change := at.ZoneBounds()
		if change.IsZero() || !change.After(at) || mark.Before(change) {
			return mark
		}
		left := t.windowAt(at)
		_, before := at.Zone()
		at = change
		_, after := at.Zone()
		// The clock jumps from reading mark's time, or earlier, by
		// after-before: forward, it skips or lands on mark if the jump
		// reaches it; back, it lands on a From or To only if it reads one
		// exactly then.
		jump := time.Duration(after-before) * time.Second
		if t.windowAt(at) != left || jump > 0 && !mark.After(change.Add(jump)) || t.isMark(at) {
			return at
		}
	}
}

// isMark reports whether the clock of the schedule's location reads a
// window's From or To exactly at at.
func (t *sizeTable) isMark(at time.Time) bool {
	h, m, s := at.Clock()
	return s == 0 && at.Nanosecond() == 0 && slices.Contains(t.marks, 60*h+m)
}

// untilMark is how long the clock of the schedule's location, running
// evenly from at, takes to read the next From or To after its reading at
// at (at a boundary itself, the one after).
func (t *sizeTable) untilMark(at time.Time) time.Duration {
	h, m, s := at.Clock()
	now := time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second +
		time.Duration(at.Nanosecond())
	for _, mark := range t.marks {
		if d := time.Duration(mark)*time.Minute - now; d > 0 {
			return d
		}
	}
	return time.Duration(t.marks[0]+minutesPerDay)*time.Minute - now // tomorrow's first
}

// sizing is the dispatcher's part for the size schedule (see
// WithMinWorkers): which window is in effect, the pool's own sizes
// while one is, and the next boundary, which it asks the dispatcher's one
// timer to wake it for (see dispatcher.timerFired). At a boundary it sets
// the pool's sizeSettings to the sizes of the period that begins and resizes, as a
// Resize call does. The dispatcher owns it.
//
// A Resize call swaps its value into the settings before it sends its message, and a boundary swaps too: so
// the two are ordered by their swaps. A value a boundary swaps out as a
// window begins is the pool's own (what the calls before the boundary
// set), even if the call's message comes after; one it swaps out as a
// window ends was set inside the window, and is dropped.
type sizing struct {
	settings *sizeSettings // the pool's: a boundary swaps the period's sizes into them
	table    *sizeTable    // the schedule, from the config; nil: none
	// on says the schedule is set and the pool has not begun to stop:
	// from then on no boundary changes anything, and the timer is not
	// armed for one.
	on bool
	in int // the window in effect, or -1: the pool's own sizes apply
	// own are the pool's own sizes while a window is in effect: New's
	// maxWorkers and WithMinWorkers's n, as Resize last
	// set them outside windows. (Outside, they are in settings.)
	ownMax, ownMin int64
	next           time.Time // the next boundary, on the wall clock
}

// init takes the window in effect as New runs, before the crew reads the
// sizes, and returns how long until the next boundary (ok false: no
// schedule).
func (s *sizing) init(table *sizeTable, settings *sizeSettings) (wait time.Duration, ok bool) {
	s.settings, s.table, s.in = settings, table, -1
	if s.table == nil {
		return 0, false
	}
	s.on = true
	wall := time.Now().Round(0) // the wall clock alone: see fire
	s.enter(s.table.windowAt(wall))
	s.next = s.table.next(wall)
	return s.next.Sub(wall), true
}

// fire is called whenever the dispatcher's timer fires while a schedule
// is on: at or after the next boundary it enters the period that begins
// (entered: the caller resizes the pool to it, see dispatcher.resize); it
// returns how long until the next boundary, for the caller to arm the
// timer. Once stopping has begun it turns the schedule off (ok false): a
// stop runs on the sizes it began with.
//
// It reads the wall clock, not the pool's monotonic one: a boundary is a
// reading of the clock in the schedule's location, and the wall clock
// follows that clock's settings (a sleeping machine, a corrected clock)
// when the monotonic one does not. The timer, which runs on the monotonic
// clock, only wakes it; one that wakes it early re-arms for the rest. (So
// a clock set back keeps the period in effect until it reads s.next.)
func (s *sizing) fire(stopping bool) (entered bool, wait time.Duration, ok bool) {
	if stopping {
		s.on = false
		return false, 0, false
	}
	wall := time.Now().Round(0)
	if !wall.Before(s.next) {
		s.enter(s.table.windowAt(wall))
		entered = true
		s.next = s.table.next(wall)
	}
	return entered, s.next.Sub(wall), true
}

// enter makes window w (-1: none) the period in effect: it swaps the
// window's sizes, or the pool's own, into the settings, and, as
// it leaves the pool's own period, keeps what it swapped out as the
// pool's own. The caller resizes.
func (s *sizing) enter(w int) {
	if w < 0 && s.in < 0 {
		return // no window before or now: the pool's own sizes stay
	}
	maxWorkers, minWorkers := s.ownMax, s.ownMin
	if w >= 0 {
		maxWorkers, minWorkers = int64(s.table.windows[w].Max), int64(s.table.windows[w].Min)
	}
	prevMax, prevMin := s.settings.max.Swap(maxWorkers), s.settings.floor.Swap(minWorkers)
	if s.in < 0 {
		s.ownMax, s.ownMin = prevMax, prevMin
	}
	s.in = w
}
