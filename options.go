package workerpool

import (
	"log/slog"
	"math"
	"time"
)

// DefaultIdleTimeout is how long the pool must go without an incoming task
// before it retires an idle worker.
const DefaultIdleTimeout = 2 * time.Second

// An Option configures a WorkerPool. Options are applied by New in the order
// given; when two set the same thing, the last one wins. A nil Option is
// ignored.
type Option func(*config)

// config holds what New's options set, and what New derives from them.
// New makes it once, before the pool's goroutines start; nothing changes
// it after, so every goroutine reads it freely.
type config struct {
	idleTimeout  time.Duration       // > 0, or < 0 for no retirement
	panicHandler func(recovered any) // nil: a task's panic crashes the program
	bound        int                 // WithMaxWaiting's n; < 0: no bound, 0: a queue with no room
	overflow     Overflow            // what a task meets when the queue is full, if bounded
	deadLetter   func(task func(), reason error)
	minWorkers   int                  // WithMinWorkers: workers kept, capped at the size
	aging        time.Duration        // WithPriorityAging's d; 0: no aging
	queueTimeout time.Duration        // WithQueueTimeout's d; 0: no expiry
	rate         rateLimit            // WithRateLimit's; rate.interval 0: no limit
	keyLimit     int                  // WithKeyLimit's n; 0: no limit
	keyWeight    func(key string) int // WithKeyWeights's w; nil: 1 each
	sizes        *sizeTable           // WithSizeSchedule's windows, checked; nil: no schedule
	name         string
	hooks        Hooks
	log          *slog.Logger // WithLogger's, with the pool's name on every record (see newConfig); nil: no logging

	// Derived by newConfig:
	bounded bool // bound >= 0: the waiting queue has a bound
	roomed  bool // Block or Reject with a bound (and DropOldest with a bound of 0): submitters take room (see room)
	timed   bool // TaskStarted or TaskFinished is set: tasks carry the time they became ready (see readyAt)
}

// newConfig applies options in order to the defaults, then derives what
// the pool reads from them.
func newConfig(options []Option) config {
	cfg := config{idleTimeout: DefaultIdleTimeout, bound: -1}
	for _, option := range options {
		if option != nil {
			option(&cfg)
		}
	}
	cfg.bounded = cfg.bound >= 0
	// With no room, DropOldest has nothing to drop: it refuses, as Reject does.
	cfg.roomed = cfg.bounded && (cfg.overflow != DropOldest || cfg.bound == 0)
	cfg.timed = cfg.hooks.timed()
	cfg.log = newLogger(cfg.log, cfg.name)
	return cfg
}

// WithIdleTimeout sets how long the pool must go without an incoming task
// before it retires one idle worker; it then retires one more per further
// period, down to zero workers. A busy worker is never retired. Zero means
// DefaultIdleTimeout; a negative d disables retirement, so workers, once
// started, live until the pool stops.
//
// Default: DefaultIdleTimeout.
func WithIdleTimeout(d time.Duration) Option {
	return func(c *config) {
		if d == 0 {
			d = DefaultIdleTimeout
		}
		c.idleTimeout = d
	}
}

// WithPanicHandler makes the pool recover a panic in a task and call h with
// the recovered value. h runs in the panicking worker goroutine, before that
// goroutine's stack unwinds, so debug.Stack inside h shows the task's frames.
// The worker then goes on with the next task, and Status counts the task in
// both Completed and Panicked. h must be safe for concurrent use: several
// workers can call it at once. A panic inside h itself is not recovered and
// crashes the program.
//
// Without a handler, or with a nil h, a panicking task crashes the program
// exactly as it would in a plain goroutine.
//
// Default: no handler.
func WithPanicHandler(h func(recovered any)) Option {
	return func(c *config) {
		c.panicHandler = h
	}
}

// WithMaxWaiting bounds the waiting queue to n tasks: tasks accepted and
// waiting for a worker, including those a Pause holds and, under Block and
// Reject, those on their way to the dispatcher with the room they took.
// Scheduled tasks (Delay, At, a retry's next run) count too. Running tasks do not count, and a task that can
// start on a free worker at once never needs room. When the queue is full,
// overflow says what a new task meets: Block waits for room, Reject
// refuses it with ErrQueueFull, DropOldest drops the oldest waiting task
// with ErrDropped to make room. The table in the package documentation
// gives every call's behaviour. n above math.MaxInt32 means
// math.MaxInt32.
//
// n = 0 is a queue with no room: a task runs at once on a free worker, or
// meets overflow (a task a Group held back, or a retry, still joins the
// queue past the bound, as with any n). Block then waits for a free
// worker (for a task of Weight k, for k free slots, and a Resize below k
// refuses it with ErrTooHeavy); Reject, and TrySubmit
// under every policy, refuse unless one is free; DropOldest has nothing to
// drop and refuses as Reject does. A task with Delay or At, which must
// wait, is refused with ErrQueueFull at once under every policy. A
// negative n means no bound, and overflow is then unused.
// An overflow that is not one of the three panics when New applies it.
//
// Default: no bound.
func WithMaxWaiting(n int, overflow Overflow) Option {
	return func(c *config) {
		if n >= 0 && overflow != Block && overflow != Reject && overflow != DropOldest {
			panic("workerpool: WithMaxWaiting with " + overflow.String())
		}
		c.bound, c.overflow = min(n, maxBound), overflow
	}
}

// maxBound is the largest bound WithMaxWaiting sets: room counts the free
// places in 32 bits.
const maxBound = math.MaxInt32

// WithDeadLetter makes the pool call h for each plain task (from Submit,
// Do, TrySubmit, DoContext or DoBatch) that will never run and whose
// submitter cannot learn it: a Submit refused under Reject (reason wraps
// ErrQueueFull), a task dropped under DropOldest (ErrDropped), one that
// expired in the queue (ErrExpired, see WithQueueTimeout), a weighted one
// that a Resize made heavier than the pool (ErrTooHeavy), a task abandoned
// by Stop or a Shutdown that gave up, queued or waiting for its due time
// (ErrStopped), and one whose TaskStarted hook ended the worker's goroutine
// with runtime.Goexit before the task's func was called (wraps ErrGoexit;
// counted in Completed, and not told to TaskDropped, as its run began). Tasks with
// a waiter (DoWait, DoWaitContext, Go, Call, groups) report the reason to it instead, and a
// call that returns an error (Do, DoContext, TrySubmit, DoBatch refused) is
// the caller's to handle.
//
// h runs on a goroutine of the pool, never on the dispatcher's, for one task
// at a time, in the order the tasks were given up (abandoned ones in queue
// order, which the package documentation defines under Stopping). Stop,
// StopWait and Shutdown return only after h has returned for
// every task given up before or during the stop, so a program can persist
// them before it exits. A panic in h is treated as a task's: recovered and
// passed to the panic handler if there is one, and otherwise it crashes the
// program. So h must not call Stop, StopWait or Shutdown: the stop would
// wait for h itself. A nil h means no handler.
//
// Default: no handler: the tasks are dropped (and counted in Status).
func WithDeadLetter(h func(task func(), reason error)) Option {
	return func(c *config) {
		c.deadLetter = h
	}
}

// WithMinWorkers keeps at least n workers, capped at the pool's size: New
// starts them, and idle retirement never goes below them, until the pool
// stops. A Resize below n lowers the floor to the new size, and a Resize
// back up restores min(n, size). n < 1 means none. SetMinWorkers changes
// n at run time, and a size window (see WithSizeSchedule) while it lasts.
//
// Default: 0: every worker starts on demand and may retire.
func WithMinWorkers(n int) Option {
	return func(c *config) {
		c.minWorkers = max(n, 0)
	}
}

// WithSizeSchedule changes the pool's sizes by the time of day: inside
// each window the pool runs with the window's Max as its size and its Min
// as its floor, as Resize(Max) and SetMinWorkers(Min) would set them; outside
// every window it runs with its own, New's maxWorkers and WithMinWorkers's
// n, as Resize and SetMinWorkers last set them outside windows. The change
// happens at each boundary, the moment the clock in loc reads a window's
// From or To, exactly as those calls make it: growing starts workers for
// waiting tasks and up to the floor at once, shrinking retires idle
// workers at once and busy ones as their task ends, and a Max below a
// waiting or scheduled task's weight drops it with ErrTooHeavy. Size and
// Status.MaxWorkers show the size in effect; New starts in the window in
// effect when it runs.
//
// A Resize or SetMinWorkers call inside a window sets the size or floor
// for the rest of that window only: at its end the pool returns to its own
// sizes (or enters the window that begins), and the call's value is
// forgotten. A call outside every window sets the pool's own, which the
// next window then replaces until it ends. A call made as a boundary
// passes counts as made just before it or just after it, never both nor
// neither: one that returned before the boundary's time counts as made
// before it.
//
// Whether a window is in effect depends only on what the clock in loc
// reads: its wall clock, so a machine that slept, or a clock that was set
// forward, is followed at the next boundary the dispatcher wakes for. (A
// clock that was set back is followed from the boundary the pool expected
// next, once the clock reads it: the pool keeps its sizes, and skips the
// boundaries the clock reads again, until then.) On a day that clock skips
// forward (daylight saving time begins), a boundary in the skipped time
// takes effect at the skip: with the clock going from 02:00 to 03:00, a
// window 02:30-05:00 begins at 03:00, and a window 02:10-02:40 does not
// occur that day. On a day the clock goes back, the time it reads twice is
// inside or outside a window each time: with the clock going from 03:00
// back to 02:00, a window 02:10-02:40 occurs twice, and a window
// 02:30-05:00 begins at the first 02:30, ends as the clock goes back to
// 02:00, and begins again at the second 02:30. A window the clock stays in
// as it changes ends and begins again at the change if the clock skips its
// To and skips or lands on its From (a window 03:00-02:30 as the clock goes
// from 02:00 to 03:00), or goes back to its From (a window 02:00-05:00 as
// it goes from 03:00 back to 02:00): a Resize made inside it before the
// change is forgotten then, as at its end on any other day.
//
// The boundaries run on the dispatcher's one timer: a schedule costs no
// goroutine, and a pool without one pays nothing for it. With one, the
// timer is always armed, so the dispatcher always waits on it as well as
// on new tasks, as it does while a delayed task waits: each hand-off of a
// task costs a little more (about a quarter more for a trivial task
// submitted to a pool with free workers). Once stopping has begun no
// boundary changes the sizes: a StopWait runs the queue on the sizes it
// began with.
//
// New panics, with a message that names the window by its index and its
// From-To, if a window's From or To is not "HH:MM" (00:00 to 23:59), its
// Max is below 1, its Min below 0 or above its Max, or two windows
// overlap (a window ends as the next begins: 08:00-12:00 and 12:00-18:00
// do not overlap); and if loc is nil. With no windows there is no
// schedule.
//
// Default: no schedule: the sizes change only by Resize and SetMinWorkers.
func WithSizeSchedule(loc *time.Location, windows ...SizeWindow) Option {
	return func(c *config) {
		c.sizes = newSizeTable(loc, windows)
	}
}

// WithKeyLimit lets at most n tasks of one key (see Key) hold the pool's
// slots at once, counting a heavy task's weight: a task whose key already
// holds n slots waits in the queue, holding no worker, while the tasks of
// other keys and those without a key go past it. With n = 1 the tasks of
// each key run one at a time, in the order they became ready (highest
// priority first, where levels differ). A task that waits for a retry
// keeps its key's slots, so the next task of its key starts only after it
// ended for good, and a Pause does not hold its next run; a delayed task
// holds none until it is due. A task
// heavier than n starts once its key holds no slot, and then holds its
// weight. The tasks held back count in Status.Waiting and in
// WithMaxWaiting's bound.
//
// A task that waits for another task of its own key, while its own run
// fills the key's limit, never finishes (see Deadlocks in the package
// doc).
//
// Default, and n < 1: no limit.
func WithKeyLimit(n int) Option {
	return func(c *config) {
		c.keyLimit = max(n, 0)
	}
}

// WithKeyWeights gives each key (see Key) its share of the pool: among the
// tasks of one priority level, a key of weight w starts w times the slots
// of a key of weight 1 while both have tasks waiting (the tasks without a
// key share as one key of weight 1). w is called on the dispatcher
// goroutine, once each time a key becomes active (it had no task waiting,
// scheduled or running), so it must be quick, must not block, and must
// not call the pool nor runtime.Goexit (which would end the dispatcher:
// no task would start and no stop would return). A w below 1 means 1; a w
// that panics is treated like a hook that panics (see Hooks) and means 1.
//
// Default, and a nil w: weight 1 each.
func WithKeyWeights(w func(key string) int) Option {
	return func(c *config) {
		c.keyWeight = w
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
// plain task goes to the dead-letter handler with ErrExpired; a DoWait
// call, a Task, a Future or a group task reports ErrExpired. Status counts
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

// WithLogger makes the pool log to l. At Info and above it logs exactly:
//   - one Error record for each panic it recovers, with the panic value and
//     the stack: a task's (plain tasks under a panic handler, and handles,
//     which always recover), a hook's, a RetryPolicy's, and the dead-letter
//     handler's;
//   - one Info record per Resize on a pool that has not begun to stop (a
//     Resize to the same size included), with the old and the new size;
//   - one Info record per pool when it has stopped, with the final counts
//     of Status, logged before Stop, StopWait and Shutdown return.
//
// Never one record per task. Everything else it logs (the pool's start,
// the start of a stop, a Shutdown that gives up) is at Debug. Every record
// carries pool=Name() and further slog key/value pairs. Records are logged
// on the goroutine where the event happens, never while the dispatcher
// waits for them, but the stop summary, which the dispatcher logs as its
// last act. A nil l logs nothing.
//
// Default: no logger.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		c.log = l
	}
}

// WithName names the pool: the name is shown in logs and used as the pool label by
// integrations (the workerpoolprom and workerpoolotel modules). Any string
// is allowed; pools need not have different names, but a metrics registry
// may refuse two that share one.
//
// Default: "" (no name).
func WithName(name string) Option {
	return func(c *config) {
		c.name = name
	}
}

// WithHooks makes the pool call h's hooks (see Hooks). With TaskStarted or
// TaskFinished set, the pool reads its clock as each task starts and as it
// ends, and as it joins the waiting queue if it must wait there: a task
// that a worker takes as soon as it is accepted (or comes due) waited 0,
// and one that waited in the queue waited from the moment it joined it to
// its start. Without them the pool reads no clock for a task.
//
// TaskStarted and TaskFinished run in the worker goroutine, around the
// task's func: TaskFinished before the task's Wait returns, before DoWait
// returns, and before the worker takes its next task. A task that never
// starts gets neither.
//
// TaskDropped runs in the goroutine of the submitting call that refuses
// the task before handing it to the dispatcher, before that call returns
// (Do, DoWait, DoContext, DoWaitContext, TrySubmit, DoBatch, Go, Call and Group.Go, when
// they find the queue full under Block or Reject, or the task heavier than
// the pool); for every other task that will never run, on the pool's
// delivery goroutine, the dead-letter handler's (see WithDeadLetter), one
// call at a time in the order the tasks were given up, just before the
// dead-letter handler gets a plain one. (So a task a Group held back, then
// dropped or released once the pool is too small for it, is told there.)
// Stop, StopWait and Shutdown return only once it has run for every task
// given up before or during the stop. A task refused because the pool is
// stopping (ErrStopped at the call) was never accepted nor counted, and
// gets no call.
//
// A hook must not call Stop, StopWait or Shutdown, nor wait for anything
// that needs the pool to go on: a stop waits for the hooks that run (the
// workers' and the delivery goroutine's), so it would wait for itself.
//
// Default: no hooks.
func WithHooks(h Hooks) Option {
	return func(c *config) {
		c.hooks = h
	}
}
