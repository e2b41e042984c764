package workerpool

import (
	"fmt"
	"math"
	"time"
)

// defaultIdleTimeout is how long the pool must go without an incoming task
// before it retires an idle worker, unless WithIdleTimeout says otherwise.
const defaultIdleTimeout = 2 * time.Second

// An Option configures a WorkerPool. Options are applied by New in the order
// given; when two set the same thing, the last one wins. A nil Option is
// ignored.
type Option func(*config)

// config holds what New's options set, and what New derives from them.
// New makes it once, before the pool's goroutines start; nothing changes
// it after, so every goroutine reads it freely.
type config struct {
	idleTimeout  time.Duration        // > 0, or < 0 for no retirement
	bound        int                  // WithMaxWaiting's n; < 0: no bound, 0: a queue with no room
	overflow     Overflow             // what a task meets when the queue is full, if bounded
	minWorkers   int                  // WithMinWorkers: workers kept, capped at the size
	aging        time.Duration        // WithPriorityAging's d; 0: no aging
	queueTimeout time.Duration        // WithQueueTimeout's d; 0: no expiry
	rate         rateLimit            // WithRateLimit's; rate.interval 0: no limit
	keyLimit     int                  // WithKeys's limit; 0: no limit
	keyWeight    func(key string) int // WithKeys's share; nil: 1 each
	sizes        *sizeTable           // WithMinWorkers's schedule, checked; nil: no schedule
	adaptive     sizeRange            // WithAdaptiveSize's; max 0: the size is set, not chosen
	hooks        Hooks                // WithHooks's, merged; Panic nil: a task's panic crashes the program; DeadLetter nil: counted only; Logger nil: no logging

	// Derived by newConfig:
	bounded bool // bound >= 0: the waiting queue has a bound
	roomed  bool // Block or Reject with a bound (and DropOldest with a bound of 0): submitters take room (see room)
	timed   bool // TaskStarted or TaskFinished is set: tasks carry the time they became ready (see readyAt)
	lane    bool // no rate limit, queue timeout or DropOldest: plain tasks may skip dispatch while it is quiet (see lane)
}

// newConfig applies options in order to the defaults, then derives what
// the pool reads from them.
func newConfig(options []Option) config {
	cfg := config{idleTimeout: defaultIdleTimeout, bound: -1}
	for _, option := range options {
		if option != nil {
			option(&cfg)
		}
	}
	cfg.bounded = cfg.bound >= 0
	// With no room, DropOldest has nothing to drop: it refuses, as Reject does.
	cfg.roomed = cfg.bounded && (cfg.overflow != DropOldest || cfg.bound == 0)
	cfg.timed = cfg.hooks.timed()
	cfg.lane = !cfg.dropsOldest() && !cfg.rate.limited() && cfg.queueTimeout == 0
	return cfg
}

// WithIdleTimeout sets how long the pool must go without an incoming task
// before it retires one idle worker; it then retires one more per further
// period, down to the floor WithMinWorkers sets. A busy worker is never
// retired. Zero means the default; a negative d disables retirement, so
// workers, once started, live until the pool stops.
//
// Default: 2 seconds.
func WithIdleTimeout(d time.Duration) Option {
	return func(c *config) {
		if d == 0 {
			d = defaultIdleTimeout
		}
		c.idleTimeout = d
	}
}

// WithMaxWaiting bounds the waiting queue to n tasks: tasks accepted and
// waiting for a worker, including those a Pause holds and, under Block and
// Reject, those on their way to the dispatcher with the room they took.
// Scheduled tasks (a delay, a retry's next run) count too. Running tasks
// do not count, and a task that can start on a free worker at once never
// needs room. When the queue is full, overflow says what a new task meets:
// Block waits for room, Reject refuses it with ErrQueueFull, DropOldest
// drops the oldest waiting task, with an error wrapping ErrQueueFull, to
// make room. The package documentation (Bounded queue and back-pressure)
// gives every call's behaviour. n = 0 is a queue with no room: a task runs
// at once on a free worker, or meets overflow. A negative n means no
// bound, and overflow is then unused; n above math.MaxInt32 means
// math.MaxInt32. An overflow that is not one of the three panics when New
// applies it.
//
// Default: no bound.
func WithMaxWaiting(n int, overflow Overflow) Option {
	return func(c *config) {
		if n >= 0 && overflow != Block && overflow != Reject && overflow != DropOldest {
			panic("workerpool: WithMaxWaiting with " + overflow.string())
		}
		c.bound, c.overflow = min(n, maxBound), overflow
	}
}

// maxBound is the largest bound WithMaxWaiting sets: room counts the free
// places in 32 bits.
const maxBound = math.MaxInt32

// WithMinWorkers keeps at least n workers, capped at the pool's size: New
// starts them, and idle retirement never goes below them, until the pool
// stops. A Resize below n lowers the floor to the new size, and a Resize
// back up restores min(n, size). n < 1 means none.
//
// schedule gives the pool other sizes at times of day: inside a window
// the pool runs with the window's Max as its size and its Min as its
// floor; outside every window, with its own (New's maxWorkers, as Resize
// last set it outside windows, and n). A Resize inside a window holds for
// the rest of that window only. The package documentation (Sizing by the
// clock) gives the rules for boundaries, daylight saving time and clocks
// that jump. New panics, naming the window, if a window's From or To is
// not "HH:MM", its Max is below 1, its Min below 0 or above its Max, two
// windows overlap, or the windows name different Locations.
//
// Default: 0 workers kept, and no schedule: every worker starts on demand
// and may retire, and the size changes only by Resize.
func WithMinWorkers(n int, schedule ...SizeWindow) Option {
	return func(c *config) {
		c.minWorkers = max(n, 0)
		c.sizes = newSizeTable(schedule)
	}
}

// WithAdaptiveSize makes the pool choose its own size, between min and
// max, from what it measures of its tasks (see Sizing itself in the
// package documentation): New's maxWorkers is the size it starts at, and
// max is the most it chooses, until Resize or a size window sets another
// ceiling. min < 1 means 1; a max below min panics.
//
// Default: the size is New's maxWorkers, as Resize and the size schedule
// set it.
func WithAdaptiveSize(min, max int) Option {
	if min < 1 {
		min = 1
	}
	if max < min {
		panic(fmt.Sprintf("workerpool: WithAdaptiveSize with max %d below min %d", max, min))
	}
	return func(c *config) {
		c.adaptive = sizeRange{min: min, max: max}
	}
}

// WithKeys sets how the keys of tasks (TaskOption.Key) share the pool.
// limit is the most slots the tasks of one key hold at once, counting a
// heavy task's weight: with 1 the tasks of each key run one at a time, in
// the order they became ready; a negative limit means no limit, and 0,
// which would let no keyed task start, panics. A task whose key holds its
// limit waits in the queue, holding no worker, while the tasks of other
// keys go past it; a task that waits for a retry keeps its key's slots; a
// task heavier than limit starts once its key holds no slot.
//
// share gives each key its share of the pool: among the tasks of one
// priority level, a key of share w starts w times the slots of a key of
// share 1 while both have tasks waiting (the tasks without a key share as
// one key of share 1). share runs on the dispatcher goroutine, once each
// time a key becomes active, so it must be quick, must not block, and must
// not call the pool nor runtime.Goexit. A share below 1 means 1, and one
// that panics is treated like a hook that panics (see Hooks) and means 1.
// A nil share means 1 each.
//
// A task that waits for another task of its own key, while its own run
// fills the key's limit, never finishes (see Deadlocks in the package
// doc).
//
// Default: no limit, and a share of 1 each.
func WithKeys(limit int, share func(key string) int) Option {
	if limit == 0 {
		panic("workerpool: WithKeys with a limit of 0, which would let no keyed task start; a negative limit means no limit")
	}
	return func(c *config) {
		c.keyLimit = max(limit, 0)
		c.keyWeight = share
	}
}

// WithPriorityAging makes a waiting task's priority rise by one level for
// every d it has waited in the queue since it became due, so that tasks of
// low levels cannot starve: the task with the highest level so reached
// starts next (of two with the same level, the one that became due first).
// Aging orders only waiting tasks; it never preempts. A task gains at most
// 2^30 levels, and never passes math.MaxInt. With aging, each choice of the
// next task looks at the front of every level that has tasks waiting, and
// the dispatcher wakes whenever a front completes a period. d <= 0 means
// no aging.
//
// Default: no aging: a task's level is the one Priority gave it.
func WithPriorityAging(d time.Duration) Option {
	return func(c *config) {
		c.aging = max(d, 0)
	}
}

// WithQueueTimeout makes a task expire once it has waited d in the queue
// since it became due without starting (waited >= d): it never runs. A
// plain task goes to the dead-letter handler with an error wrapping
// context.DeadlineExceeded, which a DoWait call, a Task, a Future or a
// group task reports. Status counts
// it in Expired, and it leaves Waiting when it expires. Tasks a Pause holds
// expire too. (A handle's own ctx deadline covers its time in the queue and
// its run together.) The dispatcher checks a task's wait when it hands the
// task out; one handed to a worker at the very moment it expires may still
// start. d <= 0 means no expiry.
//
// Default: tasks wait as long as they must.
func WithQueueTimeout(d time.Duration) Option {
	return func(c *config) {
		c.queueTimeout = max(d, 0)
	}
}

// WithRateLimit makes tasks start at most perSecond per second on average,
// with bursts of up to burst starts: a token bucket, as
// golang.org/x/time/rate's Limiter, that starts full. A task waiting for a
// token waits in the queue, holding no worker (Stop, Pause and Shutdown
// treat it as any waiting task), and the dispatcher waits for the next
// token on its one timer. A perSecond of zero or less, NaN, or +Inf means
// no limit; burst < 1 means 1. The bucket holds at most about 146 years of
// tokens, so a very slow rate with a large burst gets a smaller burst.
//
// Default: no limit.
func WithRateLimit(perSecond float64, burst int) Option {
	return func(c *config) {
		c.rate = newRateLimit(perSecond, burst)
	}
}

// WithHooks makes the pool call h's hooks and log to h.Logger (see
// Hooks). Each non-nil field of h replaces the one an earlier WithHooks
// set, and nil ones change nothing, so that several parts of a program (a
// metrics module, a dead-letter store, a logger) each add theirs. With TaskStarted or TaskFinished set, the
// pool reads its clock as each task starts and ends, and as it joins the
// waiting queue if it must wait there; without them it reads no clock for
// a task.
//
// Default: no hooks.
func WithHooks(h Hooks) Option {
	return func(c *config) {
		c.hooks.merge(h)
	}
}

// sizeRange is WithAdaptiveSize's range: max 0 means none.
type sizeRange struct{ min, max int }
