package workerpool

import (
	"math"
	"time"
)

// Sizing itself (WithAdaptiveSize). The sizer looks at the pool as
// Status does, ten times per window, and once per window it decides the
// size for the next one. It measures no task: the throughput is the
// tasks completed in the window, and the run time follows from Little's
// law, busy workers over throughput, so that a task pays nothing for it.
// Its measure of contention is the throughput per busy worker, the
// inverse of the run time, against the best it has seen: while the two
// are equal, a worker more is a task more per run time, and the size
// climbs; once it falls (the tasks queue or contend for something
// downstream), the size backs off in proportion, to the size at which the
// best would give today's throughput, plus a little headroom (the gradient
// of Netflix's concurrency-limits and of Envoy's adaptive concurrency).
// The package documentation (Sizing itself) gives the rules.

// adaptWindow is the length of the sizer's window: it decides once per
// window, from samplesPerWindow samples. A var, for the tests in real
// time.
var adaptWindow = time.Second

const (
	samplesPerWindow = 10
	// minCompleted is the fewest completions that make a window's
	// throughput worth a decision: with fewer, and workers busy, the window
	// goes on (up to maxWindows), so that slow tasks are measured over
	// longer windows.
	minCompleted = 20
	maxWindows   = 30
	// probeEvery is how many windows of backlog pass between probes: the
	// size steps down by its headroom for one window, below the knee where
	// the run time began to rise (at min, it stays), and the best is the
	// higher of what the last two probes measured: it follows work that
	// became slower or faster, and one probe that a noisy window read low
	// does not move it. (A best that faded between probes instead let the
	// knee it implies creep up past the probe's step, from where no probe
	// measured it again, and the size climbed to the ceiling; so did one
	// probe read low.)
	probeEvery = 15
	// slowStartGain is the least gradient at which the size doubles while
	// it starts: until the run time first rises, it climbs fast.
	slowStartGain = 0.95
)

// The reasons the sizer gives for its decisions (Status.SizeReason),
// pointers into these, so that publishing one allocates nothing.
var (
	reasonStart   = "start"   // the size New gave; no decision yet
	reasonClimb   = "climb"   // tasks wait and the run time holds: the size grows
	reasonBackoff = "backoff" // the run time rose without a gain in throughput: the size shrinks
	reasonProbe   = "probe"   // one window a step lower, to measure the best run time again, and the step back
	reasonFit     = "fit"     // workers stood idle: the size comes down to the busy ones and room for bursts
	reasonHold    = "hold"    // nothing to change, or nothing to learn: a Pause, an idle pool, slow tasks still running
)

// A sample is what the sizer reads of the pool at each tick: Status's
// counts.
type sample struct {
	busy, waiting int
	completed     uint64
	paused        bool
}

// sampleOf is the sample in s.
func sampleOf(s Status) sample {
	return sample{busy: s.Busy, waiting: s.Waiting, completed: s.Completed, paused: s.Paused}
}

// sizer is the controller of WithAdaptiveSize: a plain value that the
// pool's sizing goroutine (adaptSize) owns and feeds. It sees only its
// samples and the ceiling it is given.
type sizer struct {
	min  int     // WithAdaptiveSize's min
	size int     // the size decided last (or New's), before the ceiling
	best float64 // the most completions per busy worker per second: the higher of the last two probes', or more seen since; 0: none yet
	// probed is what the last probe measured (see probeEvery).
	probed float64

	starting   bool // no rise of the run time seen yet: the size doubles while tasks wait
	sinceProbe int  // windows of backlog since the last probe
	probeFrom  int  // the size a probe stepped down from, while the probe's window runs; 0: none

	// The window being measured: its samples, summed.
	samples   int
	windows   int // windows this one has lasted (see minCompleted)
	busy      int
	waiting   int
	paused    bool
	completed uint64 // completions counted when the window began
	last      uint64 // completions counted at the last sample
}

// newSizer returns a sizer of WithAdaptiveSize's min, starting at size,
// with completed tasks counted so far.
func newSizer(min, size int, completed uint64) sizer {
	return sizer{min: min, size: size, starting: true, completed: completed, last: completed}
}

// add adds a sample to the window, and reports whether the window is
// full: time to decide.
func (s *sizer) add(x sample) (full bool) {
	s.samples++
	s.busy += x.busy
	s.waiting += x.waiting
	s.paused = s.paused || x.paused
	s.last = x.completed
	return s.samples%samplesPerWindow == 0
}

// decide ends the window, which lasted elapsed, and returns the size for
// the next one, within [min(min, ceiling), ceiling], and why. A window
// with too few completions to measure, while workers are busy, is not
// ended: it goes on, and the size holds.
func (s *sizer) decide(elapsed time.Duration, ceiling int) (size int, reason *string) {
	lo := min(s.min, ceiling)
	c := min(max(s.size, lo), ceiling)
	done := s.last - s.completed
	busy := float64(s.busy) / float64(s.samples)
	waiting := float64(s.waiting) / float64(s.samples)
	s.windows++
	if !s.paused && done < minCompleted && busy >= 0.5 && s.windows < maxWindows {
		s.size = c
		return c, &reasonHold // slow tasks: measure over a longer window
	}
	target, reason := s.plan(c, done, float64(done)/elapsed.Seconds(), busy, waiting)
	s.samples, s.windows, s.busy, s.waiting, s.paused = 0, 0, 0, 0, false
	s.completed = s.last
	s.size = min(max(target, lo), ceiling)
	switch {
	case s.size == c:
		reason = &reasonHold // whatever led to it (a fit min holds back, a probe the ceiling does), the size stays
	case reason != &reasonClimb && reason != &reasonBackoff:
	case s.size > c:
		reason = &reasonClimb
	default:
		reason = &reasonBackoff
	}
	return s.size, reason
}

// plan is the size for the next window, and why, from the window's
// measures at size c: done tasks completed, at rate per second, with busy
// workers and waiting tasks on average.
func (s *sizer) plan(c int, done uint64, rate, busy, waiting float64) (int, *string) {
	switch {
	case s.paused:
		return c, &reasonHold
	case done == 0 || busy < 0.5:
		return c, &reasonHold // idle: nothing to learn
	case s.probeFrom > 0:
		// Measured below the knee: the best as the work is now, higher or
		// lower, but for one probe read low.
		s.best = max(s.probed, rate/busy)
		s.probed = rate / busy
		from := s.probeFrom
		s.probeFrom = 0
		return from, &reasonProbe
	}
	perWorker := rate / busy
	s.best = max(s.best, perWorker)
	gradient := perWorker / s.best
	if busy < 0.9*float64(c) || waiting < 1 {
		return s.fit(c, busy)
	}
	if s.starting && gradient >= slowStartGain {
		return 2 * c, &reasonClimb
	}
	s.starting = false
	// At most halved in a window: one disturbed window (a stall of the
	// machine, a pause of the downstream) costs half the size, not all.
	target := max(int(math.Round(float64(c)*gradient))+headroom(c), (c+1)/2)
	if s.sinceProbe++; s.sinceProbe >= probeEvery {
		s.sinceProbe = 0
		s.probeFrom = target
		return target - headroom(target), &reasonProbe
	}
	return target, &reasonClimb // or backoff, or hold: see decide
}

// fit is the size for a pool whose workers stood idle at size c, busy
// on average: room for the busy ones and their bursts (three standard
// deviations of a Poisson count), approached by half the gap so that the
// size does not swing with the load; never more than c, since c left
// workers idle.
func (s *sizer) fit(c int, busy float64) (int, *string) {
	need := int(math.Ceil(busy+3*math.Sqrt(busy))) + 1
	if need >= c {
		return c, &reasonHold
	}
	return c - (c-need+1)/2, &reasonFit
}

// headroom is how far above the size where the run time holds the sizer
// settles, and the step of a climb once it has started: √c, at least 1.
func headroom(c int) int {
	return max(1, int(math.Round(math.Sqrt(float64(c)))))
}

// autoSizer is the pool's sizing goroutine under WithAdaptiveSize, and
// what it sees of the pool: it samples Status samplesPerWindow times per
// window and, at the end of each, gives the size its sizer decides to
// dispatch, as Resize does. It returns when stopping begins; a stop runs
// on the size it began with.
type autoSizer struct {
	sizer    sizer
	status   func() Status   // the pool's Status
	sizes    *sizeSettings   // the pool's: the ceiling it reads, the size and reason it writes
	resize   func() error    // tells dispatch to re-read the sizes, as Resize does; ErrStopped once stopping began
	stopping <-chan struct{} // the pool's signals.stopping
	clock    clock           // the pool's
	obs      *observer       // for the Debug record of each change
}

// run is the goroutine: New starts it in the pool's goroutines.
func (a *autoSizer) run() {
	tick := time.NewTicker(adaptWindow / samplesPerWindow)
	defer tick.Stop()
	began := a.clock.now()
	for {
		select {
		case <-a.stopping:
			return
		case <-tick.C:
		}
		if !a.sizer.add(sampleOf(a.status())) {
			continue
		}
		now := a.clock.now()
		from := int(a.sizes.size()) // as the pool has it: a lower ceiling may hold it below the chosen size
		size, reason := a.sizer.decide(time.Duration(now-began), int(a.sizes.max.Load()))
		if a.sizer.samples == 0 { // the window ended
			began = now
		}
		if a.choose(size, reason) && size != from {
			a.obs.logDebug("pool size chosen", "from", from, "to", size, "reason", *reason)
		}
	}
}

// choose makes size the pool's chosen size, for the reason given, tells
// dispatch if it changed, and reports whether the pool took it. Once
// stopping has begun dispatch no longer takes a change: the size and the
// reason stay as the stop found them, and the stop runs on the size it
// began with.
func (a *autoSizer) choose(size int, reason *string) bool {
	if isClosed(a.stopping) {
		return false
	}
	if a.sizes.chosen.Load() != int64(size) { // only this goroutine writes it
		if _, ok := a.sizes.change(&a.sizes.chosen, int64(size), a.resize); !ok {
			return false // refused: stopping began meanwhile; the goroutine returns at its next tick
		}
	}
	a.sizes.reason.Store(reason)
	return true
}
