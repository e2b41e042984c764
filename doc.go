// Package workerpool runs funcs on a bounded number of goroutines. A
// [WorkerPool] runs submitted tasks on at most a fixed number of workers,
// queues the rest in FIFO order (unbounded by default, so that the submitter
// never blocks; or bounded, with back-pressure, rejection or drop-oldest),
// and shuts down without losing track of a single task. Use it to bound
// fan-out (HTTP calls, crawls, file or image work, message handling) where
// starting one goroutine per task would overload a CPU, a remote service or
// memory.
//
//	p := workerpool.New(4)
//	for _, url := range urls {
//		p.Submit(func() { fetch(url) }) // never blocks: at most 4 run, the rest wait
//	}
//	task := p.Go(ctx, func(ctx context.Context) error { return upload(ctx, file) })
//	err := task.Wait() // nil, upload's error, a *PanicError, or why it never ran (ErrStopped...)
//	p.StopWait()       // returns once every accepted task has run
//
// It is a drop-in superset of github.com/gammazero/workerpool v1.3: the
// same ten methods with the same signatures and behaviour (Size, Stop,
// StopWait, Stopped, Do, DoWait, Submit, SubmitWait, WaitingQueueSize,
// Pause), plus task handles with errors, results and contexts, groups, a
// shutdown with a deadline, a bounded queue, dead letters, sizing at run
// time and by the time of day, a scheduler (priorities with aging, delays,
// retries with backoff, expiry, weights, keys with fair shares and limits,
// a rate limit; none of which holds a goroutine while it waits),
// Map over Go iterators, [WorkerPool.Status], hooks and a logger.
//
// This comment is the full contract. The tables below say which call does
// what, with which options, and which errors mean what; the headings after
// them give the rules: the dispatcher; tasks, results and groups; mapping a
// sequence; the bounded queue; dead letters; sizing; scheduling and keys; task states;
// stopping; Status; observability; idle workers; pausing; panics; and the
// calls that deadlock by design. A method's own documentation says what it
// does, what it blocks on and what it returns, and links here.
//
// # Calls
//
// gammazero's calls take a plain func() and no option:
//
//	gammazero       blocks on                       returns, and after a stop
//	Submit          room, under Block               nothing; panics (ErrStopped) once stopping began
//	SubmitWait      room, then the task's end       nothing; panics with why the task never ran
//	Do              room, under Block               ErrStopped, ErrQueueFull, or nil once accepted
//	DoWait          room, then the task's end       why the task never ran (the table of errors), or nil
//
// A plain task no one waits for (Submit, Do, DoContext, DoBatch) that never
// runs goes to [Hooks].DeadLetter with why. The calls of this package take
// a [TaskOption] each (several combine field by field):
//
//	Call                   blocks on                         reports                          the task's ctx
//	WorkerPool.Go          room, under Block, until ctx      *Task: Wait, Done                ctx (canceled by the caller, by a Shutdown that gives up)
//	GoResult               as Go                             *Future[T]: a Task with a value  as Go
//	Group.Go               as Go, with the group's ctx       the group's Wait                 the group's ctx
//	WorkerPool.DoContext   room, under Block, until ctx      error at the call; DeadLetter    ctx's values, without its cancellation
//	Map                    as Go for each item, and the      iter.Seq2: each item's result    ctx (canceled by a break)
//	                       next result, within a window      and error, in the input's order
//	MapUnordered           as Map                            as Map, as the tasks end         as Map
//
// DoContext with a ctx that is already done never waits: it takes the task
// if it can start or find room at once, and else returns [ErrQueueFull].
// [WorkerPool.DoBatch] queues many plain tasks in one step, all or none.
// A func() fails only by panicking, so DoContext panics when given a
// TaskOption.Retry. The handles always recover their func's panic into a
// [*PanicError] with the stack, and report [ErrGoexit] for
// runtime.Goexit; a plain task's panic crashes the program unless
// Hooks.Panic is set (see Panics). Every call is safe for concurrent use,
// and every call refuses a nil ctx with a panic.
//
// # Options
//
// The pool's options, each set once at [New] (the last one given wins; for
// WithHooks, each hook and the Logger):
//
//	Option               default                 zero and negative values
//	WithMaxWaiting       no bound                n < 0: no bound; 0: a queue with no room; above math.MaxInt32: math.MaxInt32
//	WithIdleTimeout      2s                      0: the default; d < 0: workers never retire
//	WithMinWorkers       0, no schedule          n < 1: none kept; no windows: no schedule
//	WithAdaptiveSize     the size is set         min < 1: 1; max below min panics
//	WithKeys             no limit, share 1       limit < 0: no limit; 0 panics; a share below 1, or one that panics: 1
//	WithRateLimit        no limit                perSecond <= 0, NaN or +Inf: no limit; burst < 1: 1
//	WithPriorityAging    no aging                d <= 0: no aging
//	WithQueueTimeout     no expiry               d <= 0: no expiry
//	WithHooks            no hooks, no logging    a nil hook or Logger: none (a later nil changes nothing)
//
// Limits follow one rule: a negative limit means no limit, and n >= 0
// means at most n. A concurrency limit of 0, which would let no task start
// (WithKeys's limit, [Group.SetLimit]), panics. Sizes are at least 1: New
// and [WorkerPool.Resize] read n < 1 as 1. The fields of [TaskOption] say
// what their zero values mean: each is the default.
//
// # Errors
//
// Each error says why a task never ran, or how it ended; calls often wrap
// it with detail, so test with errors.Is:
//
//	Error          why                                              reported by                      counted in Status
//	ErrStopped     submitted once stopping began, or abandoned      the call; a waiter; DeadLetter   Abandoned (the call's own: not accepted, not counted)
//	ErrQueueFull   refused by a full queue, or dropped for a newer  the call; a waiter; DeadLetter   Rejected; a drop, Dropped
//	ErrTooHeavy    heavier than the pool, at once or after Resize   the call; a waiter; DeadLetter   Rejected; after a Resize, Dropped
//	ErrGoexit      the func (or TaskStarted) called runtime.Goexit  a waiter; DeadLetter             Completed
//
// A task that waited in the queue longer than WithQueueTimeout reports,
// to a waiter and to DeadLetter, an error that wraps the standard
// context.DeadlineExceeded ("workerpool: task expired in the queue"): the
// deadline it had to start passed, as a ctx deadline does. Status counts
// it in Expired.
//
// A task canceled before it started (its ctx ended) reports its ctx's
// error and counts in Canceled. A task a stop abandoned while it waited for
// a retry reports ErrStopped joined with its last run's error. TaskDropped
// hears of every task counted in Rejected, Dropped, Abandoned, Canceled or
// Expired, with the same error.
//
// # Dispatcher
//
// New starts one dispatcher goroutine and no workers. The dispatcher owns
// the order of the tasks, the waiting queue, the worker count and every
// policy: it gives a task to a ready worker, starts a new worker if fewer
// than the maximum exist, or else puts the task at the back of the waiting
// queue; while that queue is not empty, workers are fed from its front. It
// stops a worker by sending it a nil func, and retires one after a whole
// idle period (see [WithIdleTimeout]).
//
// A task reaches the dispatcher in one of two ways. Over an unbuffered
// channel: the send completing is the moment the task is accepted. Or,
// while the dispatcher has nothing to order (no task queued or scheduled,
// no Pause, no task of a weight above 1 running, no submitter waiting for
// room, and no rate limit, queue timeout or DropOldest configured), through
// its lane, which it opens for plain tasks once they come: Submit, Do and
// DoBatch append the task under a lock held for the append, which is the
// moment it is accepted (under Block and Reject the append takes the task's
// place in the bound, as a send does, and the worker that takes the task
// gives it back; under Block a plain task that finds no place waits in the
// lane, behind those that came before it, for the place a worker frees, and
// the dispatcher takes the ones still waiting, in order, when it closes the
// lane), and wake a
// waiting worker for it or ask the dispatcher for one (a ready worker
// first, else a new one while fewer than the maximum exist); a worker done
// with its task takes the lane's front before it waits again. So a plain
// task then costs no hand-off with the dispatcher at all. The moment
// anything else reaches the dispatcher (a task with a handle or options, a
// Pause, a Resize, a stop), it closes the lane and takes back, oldest
// first, the tasks no worker has taken, ahead of what came. So:
//   - tasks start in submission order (FIFO), within a priority level (see
//     Scheduling; plain tasks are all of level 0) and a key (see Keys);
//   - concurrency never exceeds [WorkerPool.Size], and reaches it whenever
//     enough tasks wait;
//   - the dispatcher alone decides the order and the worker count: the
//     submit path makes no allocation and holds a lock only for an append,
//     and the read-only accessors read counters, never block and never
//     wait for the dispatcher. Tasks in the lane count as waiting.
//
// # Tasks, results and groups
//
// [WorkerPool.Go] queues a func(ctx) error like Submit and returns a [Task]:
// Wait returns the func's error, and Done is closed when Wait would return.
// The ctx given to Go is the one way to cancel the task: done before the
// task starts, it cancels the task, so a deadline covers the time in the
// queue as well as the run; canceled while it runs, it cancels the func's
// context. A handle always recovers its func's panic and returns it as a
// [*PanicError] carrying the stack; runtime.Goexit is reported as
// [ErrGoexit]. [GoResult] does the same for a func that returns a value,
// with a typed [Future].
//
// [WorkerPool.Group] gives errgroup semantics on the shared pool: the first
// error cancels the group's context, so its queued tasks are canceled and
// its running ones see the cancellation, and Wait returns that error once
// every started task has returned. [Group.SetLimit] caps the group's share
// of the workers; the tasks it holds back wait in the group, never in the
// pool, so a group never delays other users of the pool. Once its tasks have
// finished, the pool keeps no reference to a group, waited for or not.
//
// # Mapping a sequence
//
// [Map] runs fn on each item of an iter.Seq as a task of the pool and
// yields each item's result and error, as an iter.Seq2, in the order of
// the input; [MapUnordered] yields them in the order their tasks end:
//
//	for thumb, err := range workerpool.Map(ctx, p, slices.Values(paths), makeThumbnail) {
//		if err != nil {
//			return err // a break: the items in flight are canceled
//		}
//		save(thumb)
//	}
//
// The rules:
//   - Window. A loop takes an item from the input only while fewer than its
//     window of items are in flight (taken and not yet yielded: waiting,
//     running, or ended and waiting for their turn to be yielded):
//     TaskOption.Window, 0 for twice the pool's Size as the loop starts,
//     negative for no limit. So a slow item holds Map at the window, and
//     MapUnordered only in its own place, never the whole input in memory.
//   - Goroutines. The loop is the caller's goroutine: it ranges over the
//     input there, one item at a time, gives each item to the pool as Go
//     does (under Block, waiting for room until ctx is done), and yields
//     there; fn runs on workers only. The loop starts no goroutine of its
//     own and allocates one carrier per item. So it yields between items: while
//     it waits for the input's next item, or for room, an outcome that
//     ends meanwhile waits too, and is yielded once the input gives an
//     item or ends (or room is found).
//   - Tasks. Each item is a task like one of Go, with the options given
//     (priority, key, weight, label, retry...): it counts in Status, the
//     hooks see it, its ctx is canceled when ctx is, and a panic in fn is
//     its *PanicError.
//   - Outcomes. Each item's error is yielded in its place, with the value fn
//     returned with it (R's zero value if fn did not run), and the loop goes
//     on; an item the pool refused or dropped yields why (the table of
//     errors).
//   - Break. Once the loop body breaks (or panics), no item is taken and
//     nothing more is yielded: the items in flight are canceled (the waiting
//     ones at once, even under a Pause; the running ones through their ctx)
//     and the loop returns once every one has ended. None of its tasks is
//     then left in the pool's counts.
//   - ctx. Once ctx is done, no item is taken: the items in flight are
//     canceled as on a break and, once every one has ended, ctx's error is
//     yielded, once, last. A ctx that ends after the last outcome changes
//     nothing; one done at the start yields its error and takes no item.
//   - Stop. Once the pool is stopping, no item is taken: the items in flight
//     yield their outcomes (ErrStopped for those the stop abandoned, as a
//     Stop does with waiting tasks and StopWait does not), and the loop ends.
//     An item taken as the stop begins, or on a stopped pool, yields
//     ErrStopped.
//   - Ranging again over the iter.Seq2 is a new loop, over the input again.
//
// # Bounded queue and back-pressure
//
// By default the waiting queue has no bound and no submit ever waits.
// [WithMaxWaiting](n, overflow) bounds it: at most n tasks wait for a
// worker (running tasks do not count, tasks a Pause holds do, and a task
// that can start on a free worker at once never needs room: whatever room
// it took on its way is free again by the time the pool answers the next
// submit, whether or not its worker has started it). By the time a task's
// Wait reports its outcome (a handle's or a group's Wait, DoWait,
// SubmitWait), its worker counts as free, and the slots of
// its weight and of its key are given back: a program that submits one
// task after another, each once the last one's Wait returned, never meets
// a fuller pool than the last task left. With a full queue, each call
// meets the overflow policy:
//
//	full queue            Block                          Reject                                   DropOldest
//	Submit                waits for room                 not queued: Rejected, dead letter         accepted; oldest dropped
//	Do, DoWait            waits                          ErrQueueFull                             accepted; oldest dropped
//	DoContext             waits until room or ctx done   ErrQueueFull                             accepted; oldest dropped
//	DoContext, ctx done   ErrQueueFull at once           ErrQueueFull                             accepted; oldest dropped
//	SubmitWait            waits                          panics (wraps ErrQueueFull)              accepted; oldest dropped
//	Go, GoResult          wait until room or ctx done    handle reports ErrQueueFull              accepted; oldest dropped
//	Group.Go              waits until room or the        the group's error becomes ErrQueueFull   accepted; oldest dropped
//	                      group's context is done
//	DoBatch (k tasks)     waits until all k fit          ErrQueueFull unless all k fit            accepted; oldest dropped
//
// Under DropOldest, while scheduled tasks (which are never dropped) alone
// fill the bound, and with a bound of 0, there is nothing to drop: every
// call meets Reject's column.
//
// A dropped task's waiter learns an error wrapping [ErrQueueFull] that
// says it was dropped; a dropped plain task goes to the dead-letter
// handler. Submitters that wait for room get it strictly in arrival order:
// a waiting batch at the head holds back the submitters behind it, and a
// DoContext whose ctx is done never overtakes a waiting submitter (under
// WithKeys, a submitter that only its key's limit keeps from starting
// holds back no task that can start at once on a free worker, a try's
// included).
// A canceled queued task frees its room at once, also one whose context
// ends while no one waits for it. A DoBatch is one
// admission: it needs room for all its tasks, even those that then start
// at once, and one larger than the bound gets ErrQueueFull at once under
// every policy. Tasks a [Group] holds
// back because of SetLimit join the queue without room when a finished
// group task releases them, even if the queue is full (under DropOldest
// they drop no task), so that a worker never waits for room (the group's
// limit bounds them); Group.Go itself
// waits or is refused like Go. Stop, StopWait and Shutdown release every
// waiting submitter at once, and admit none of them from the moment they
// are called: Submit and SubmitWait panic with an error wrapping
// ErrStopped, as after any stop, and the other calls return or report
// ErrStopped. A call on a stopping pool is refused as stopped before any
// check of the bound or of its weight, so it is never counted in Rejected.
// While the queue is full the dispatcher still serves Pause, canceled
// tasks, Resize, WaitIdle, idle retirement and stops.
//
// WithMaxWaiting(0, overflow) is a queue with no room: "run now on a free
// worker, or meet the overflow". Block waits for a free worker; Reject
// refuses unless one is free, and so does DropOldest, which has nothing to
// drop; a DoContext whose ctx is done never waits; a DoBatch never fits. A
// task with a Delay, which must wait, is refused with ErrQueueFull at once
// under every policy, and a task of Weight n starts once n slots are free
// at once. A negative n means no bound.
//
// # Dead letters
//
// Nothing is lost silently: every accepted task runs, or its waiter learns
// why not, or, for a plain task whose submitter cannot learn it,
// [Hooks].DeadLetter gets it with the reason (the table of errors): a
// Submit refused under Reject, a task dropped, a task that expired in the
// queue, a task abandoned by Stop or a Shutdown that gave up, queued or
// scheduled, a weighted task that a Resize made too heavy. DeadLetter runs
// on a goroutine of the pool, never the dispatcher's, for one task at a
// time, in the order the tasks were given up; Stop, StopWait and Shutdown
// return only after it has returned for every task given up before or
// during the stop. Without it such tasks are only counted in [Status].
//
// # Size at run time
//
// [WorkerPool.Resize] changes the most workers while the pool runs:
// growing starts workers for waiting tasks at once, shrinking retires idle
// workers at once and busy ones as their task ends, and no task starts
// while the running ones are at or above the new size. [WithMinWorkers]
// keeps a floor of warm workers that New starts and idle retirement never
// removes. [WorkerPool.WaitIdle] waits, without stopping or holding back
// anything, for a moment at which no task runs or waits.
// [WorkerPool.DoBatch] queues many tasks in one step: one hand-off to the
// dispatcher, or one append to its lane (see Dispatcher).
//
// # Sizing by the clock
//
// WithMinWorkers(n, windows...) also gives the pool other sizes at times of
// day: inside a [SizeWindow] "09:00" to "17:00" it runs with the window's
// Max as its size and its Min as its floor; outside every window, with its
// own (New's maxWorkers, as Resize last set it outside windows, and n). A
// To at or before From wraps past midnight, so "22:00" to "06:00" is the
// night. At each boundary the pool changes exactly as Resize would change
// it, on the dispatcher's one timer: no goroutine and no timer of its own,
// and nothing at all in a pool without a schedule (with one, the
// dispatcher always waits on its timer too, which makes each hand-off a
// little dearer, as while a delayed task waits).
//
// A Resize inside a window holds for the rest of that window only: when it
// ends, the pool returns to its own sizes, or takes the next window's if
// one begins there; a Resize outside every window sets the pool's own. A
// call made as a boundary passes counts as made just before it or just
// after it, never both nor neither. Whether a window is in effect depends
// only on what the clock of the windows' Location reads (its wall clock: a
// machine that slept, or a clock set forward, is followed at the next
// boundary the dispatcher wakes for; a clock set back is followed from the
// boundary the pool expected next, once the clock reads it). When daylight
// saving time begins and the clock skips an hour, a boundary in it takes
// effect at the skip (with the clock going from 02:00 to 03:00, a window
// from 02:30 begins at 03:00, and one that lies in the skipped hour does
// not occur that day); when it ends and the clock reads an hour twice, a
// window in that hour occurs twice, and a window that the clock leaves by
// going back ends at that moment and begins again when the clock reaches
// its From. A change that skips a window's To and skips or lands on its
// From, or goes back to its From, while the clock stays in the window ends
// it and begins it again. Once stopping has begun the sizes no longer
// change. Overlapping windows, a From or To that is not "HH:MM", a Max
// below 1, a Min below 0 or above Max, and windows of different Locations
// make New panic with a message naming the window.
//
// # Sizing itself
//
// With [WithAdaptiveSize](min, max) the pool chooses its own size between
// min and max, starting from New's maxWorkers, and keeps choosing it as
// the work changes. It measures nothing per task: a goroutine of the pool
// reads Status ten times a second, and once a second (a window) it
// decides the size for the next one from the window's throughput (tasks
// completed per second), its busy workers and its waiting tasks. The run
// time follows from Little's law (busy workers over throughput), so the
// throughput per busy worker is one over it; the pool keeps the best it
// has seen and compares each window's with it. Each probe measures the
// best again (at min, where the size cannot step down, at min), and the
// best becomes the higher of the last two probes' measures, so the size
// follows work that became slower or faster, and one noisy probe does
// not move it.
// Each decision is one of these, in Status.SizeReason:
//
//	reason   when                                                      the size
//	start    no window has ended yet                                   New's maxWorkers, within [min, max]
//	climb    tasks wait, every worker is busy, the run time holds      doubles until the run time first rises; then grows by √size
//	backoff  tasks wait, and the run time rose without a gain          size·(best run time/run time) + √size: where the best would give the throughput of now, plus headroom; at most halved
//	probe    every 15 windows of backlog                               one window √size lower, below the knee, to measure the best again; then back
//	fit      workers stood idle (fewer than 90% busy, or none waiting) down by half the gap to the busy workers plus room for bursts (busy + 3√busy + 1), never up
//	hold     a Pause, an idle pool, or the size is where it should be  unchanged
//
// A decision that leaves the size as it was (min or the ceiling holding
// it there) reads hold, whatever led to it.
//
// So on a downstream that takes C calls at a time and queues the rest, the
// size settles a little above C, where throughput is at its best and the
// run time is not yet longer than it must be; work that contends for
// nothing (sleeps, calls that scale) climbs to max; CPU-bound work settles
// a little above GOMAXPROCS. A window with fewer than 20 completions while
// workers are busy goes on, holding the size, up to 30 windows, so slow
// tasks are measured over longer windows. The slog logger records each
// change at Debug ("pool size chosen", with from, to and reason), and the
// metrics modules show the size and the reason (workerpool_size_reason).
//
// Beside it, [WorkerPool.Resize] and a size window (Sizing by the clock)
// set the ceiling: the pool chooses at most that, and a lower ceiling
// holds at once (the size drops to it as Resize's would); a ceiling above
// max lets it climb past max. The size never goes below min, but for a
// ceiling below min, which is then the size. [WithMinWorkers]'s floor of
// warm workers is capped at the chosen size. A task's weight is checked
// against the ceiling (ErrTooHeavy above it), never the chosen size, so a
// smaller chosen size drops nothing: a task heavier than the chosen size
// starts once no other task runs, and holds every slot while it runs.
// [WorkerPool.Size] and
// Status.MaxWorkers report the chosen size. Once stopping begins the size
// no longer changes, and the goroutine is gone when Stop returns. Without
// the option there is no such goroutine and nothing is read.
//
// # Scheduling
//
// The calls that take a [TaskOption] (the table of calls) make the pool a
// scheduler, not just a queue, and pool options (the table of options) set
// its policies: aging, expiry, a rate limit and keys. Each
// is state the dispatcher owns: waiting never costs a goroutine, a worker
// or a time.Timer per task (the dispatcher keeps one timer for the
// earliest moment it waits for). Tasks given no option, gammazero's calls
// and DoBatch among them, keep the defaults (priority 0, no delay, no
// retry, weight 1, no key), and their path takes no lock and makes no
// allocation.
//
// Plain tasks with options. DoContext gives a func() any option but Retry,
// under the same rules and with the same errors as a handle's. It returns
// once the task is accepted, and its task that never runs (abandoned by a
// stop, also while it waits for its due time; dropped; expired; too heavy
// after a Resize) goes to the dead-letter handler once, with why, as any
// plain task does. A plain task with only a delay waits in the timer heap
// as it is; one with a priority, a weight, a key or a label rides a carrier
// the pool reuses (so does every DoContext task in a pool with TaskStarted
// or TaskFinished hooks, with its ctx's values: see Observability). Neither
// allocates once the pool is warm (but for those values), and neither
// holds a goroutine: at 10,000 tasks a delayed DoContext costs the CPU of a
// time.AfterFunc(d, func() { p.Submit(f) }) per task and a quarter of its
// memory, and at a million pending tasks under a third of both (see the
// benchmarks' README).
//
// Priority. TaskOption.Priority takes any int; the default, and the level
// of every plain task, is 0. The queue is a FIFO per level: the highest
// level waiting starts next, and within a level the task that became due
// first (for a task without a delay, the one submitted first). Priority
// orders only waiting tasks; it never preempts a running one. With
// WithPriorityAging(d), a waiting task's level rises by one for each d it
// has waited in the queue (at most 2^30 levels, never past math.MaxInt), so
// low levels cannot starve; of two tasks that reach the same level, the
// one that joined the queue first starts first.
//
// Delayed tasks. With TaskOption.Delay a task is not due before a moment.
// Until then it waits in the dispatcher's timer heap and counts in
// Status.Scheduled, not Waiting. When it comes due it is handled as a task
// accepted then: it starts on a free worker or joins the back of its
// level. Tasks due at the same moment keep their submission order. A
// handle's context ending removes a scheduled task at once: it leaves
// Scheduled and joins Canceled before Wait returns. A plain task
// of DoContext has no context: once accepted it runs when due, or a stop
// abandons it.
//
// Retries. With TaskOption.Retry, a run that returns an error (a
// *PanicError included) asks the policy with attempt 1, 2, ...; if it says
// retry, the task goes back through the timer heap for the delay it gave,
// holding no worker, and runs again. The policy is not asked, and the task
// ends, when the error wraps a [Permanent] one, when the run called
// runtime.Goexit, or when the task's context is done (its ctx, the
// group's context, or a Shutdown that gave up); Wait then returns the last
// run's error. A policy that panics ends the retries: the task ends with a
// *PanicError carrying the panic value, joined with the run's error.
// [Backoff](base, max, retries) is exponential backoff with full jitter,
// for up to retries retries; it never retries a panic. A task waiting for
// its next run is a scheduled task in every respect below; if it never runs
// again (canceled, abandoned, expired, dropped), Wait returns why, joined
// with the last run's error, so that errors.Is finds both. Status.Retried
// counts the runs after a task's first. In a Group only a task's final
// error counts: a run that will be retried does not cancel the group. So a
// policy that always retries a task that always fails keeps StopWait
// waiting; Stop, or a Shutdown with a deadline, ends it.
//
// Expiry. With WithQueueTimeout(d), a task that has waited d in the queue
// since it became due without starting expires at that moment, wherever it
// is in the queue: a plain task goes to the dead-letter handler with an
// error wrapping context.DeadlineExceeded, a waiter or handle reports it
// (SubmitWait panics with it), and Status counts it in Expired instead of Waiting. Tasks a
// Pause holds expire too. A handle's own ctx deadline covers its time in
// the queue and its run together.
//
// Weights. A task of TaskOption.Weight n starts only once n of the pool's Size
// worker slots are free, and holds them until it returns, so the weights of
// the running tasks never exceed Size (Status.Busy counts tasks, not
// slots). The task to start next, in priority order, is never overtaken:
// lighter tasks behind a heavy one wait until it has started. n < 1 means 1;
// a task heavier than Size is refused at once with [ErrTooHeavy] (counted
// in Rejected, not Submitted), and a Resize below the weight of a waiting
// or scheduled task drops it with ErrTooHeavy (counted in Dropped), as it
// does a task a Group holds back, once the group releases it. Under
// WithAdaptiveSize both check the ceiling, not Size (Sizing itself).
//
// Rate limit. With WithRateLimit(perSecond, burst), tasks start at most
// perSecond per second on average, with bursts of up to burst: a token
// bucket, as golang.org/x/time/rate's, that starts full. A task waiting for
// a token waits in the queue, holding no worker, and Stop, Pause and
// Shutdown treat it as any waiting task.
//
// Stops, pauses and idleness. Stop abandons scheduled tasks at once
// (ErrStopped); StopWait runs each when it is due, retries included, so it
// returns only after the last one ran; Shutdown(ctx) does the same until
// ctx is done, then abandons the rest. A Pause's barrier covers the tasks
// of every level that were queued, or due, when Pause was called; tasks
// that come due during a pause wait in the queue for it to end. A task
// whose run failed and waits for a retry is such a task: Pause may return
// before its next run, which the pause then holds (but for a keyed task
// under a key limit, whose retry keeps its key's slots: the pause lets it
// run, as the tasks of its key before the barrier wait for it). WaitIdle
// waits until no task is scheduled either.
//
// Keys. TaskOption.Key makes a task belong to a key (an account, a tenant,
// a document); the tasks without a key share as one more key of share 1.
// A key orders its tasks' starts and shares the pool fairly; it does not
// run a key's tasks one at a time: WithKeys(1, nil) does. Within a key,
// the tasks of one priority level start in the order they became ready
// (accepted, or due for a delay or a retry). Among the
// tasks of one level that may start, the dispatcher serves the keys by
// deficit round robin, counting slots (a task of Weight 3 uses 3): a round
// gives each key with tasks waiting its share in starts ([WithKeys]'s
// share, 1 by default), a key with no task waiting keeps no credit, so a
// key of share w gets w times the starts of a key of share 1 while both
// have tasks waiting, and a key with a backlog of 100,000
// tasks delays another key's new task by at most one round of the keys
// with tasks waiting, not by the backlog. Picking the next key costs the
// same whatever the number of keys. Priority levels come first: fairness
// orders the tasks of one level. With no keyed task in the pool, the
// order is exactly that of a pool without keys.
//
// Under WithKeys(n, share), at most n slots of one key's tasks are out with
// workers at once: a task whose key holds n waits in the queue holding no
// worker, and the tasks of other keys and those without a key go past it
// (a task that can start at once needs no room under a bound). With n = 1
// the tasks of each key run one at a time, in order. A task heavier than n
// starts once its key holds no slot, and then holds its weight. A task
// waiting for a retry keeps its key's slots, and when due goes before the
// key's waiting tasks, so the next task of its key starts only after it
// ended for good; a delayed task holds nothing until due. A heavy task
// that the fair order picks waits for free slots as heavy tasks do, and
// the lighter tasks of other keys do not overtake it. The held-back tasks
// are waiting tasks in every respect: they count in Status.Waiting and in
// the bound (DropOldest drops the oldest waiting task of the whole pool,
// which may be one), they expire, their ctx removes them at once (the
// next task of the key may then start), a Pause holds them, StopWait runs
// them in order and Stop abandons them. WaitIdle waits for them.
//
// The pool keeps a key's state only while the key has tasks waiting,
// scheduled or running (Status.Keys counts those keys): a pool that has
// seen millions of distinct keys holds no more memory than one that has
// seen ten once they are done, up to the state of a few dozen keys kept
// for reuse. A keyed task rides a carrier (a handle is made with its
// options in one allocation; a plain task's carrier is reused), and on a
// key
// that is already active it allocates nothing more. A Pause, expiry,
// aging and DropOldest look at the front of every key's queue, and so does
// dispatch after a keyed task waiting under a key limit is canceled
// (that its key's next task may start at once), so their steps cost in
// proportion to the keys with tasks waiting.
//
// Bounds. Under [WithMaxWaiting], scheduled tasks count with the waiting
// ones. Under Block and Reject they hold room as waiting tasks do (a
// delayed task never starts without room, as a task due at once may; a
// retry takes a free place but never waits for one, so with the queue full
// it waits over the bound rather than hold its worker); under DropOldest,
// which drops the oldest waiting task of any level and never a scheduled
// one, a new task that finds the bound filled by scheduled tasks alone is
// refused as under Reject: ErrQueueFull for the calls that report, the
// dead-letter handler for Submit. A delayed task holds its place from the
// moment its call returns, so the next call sees it; only a task that
// races with the one that fills the bound, from another goroutine, may
// still join the queue past it (the dispatcher never refuses a task whose
// send completed). A task that a worker has taken from the queue but not
// started holds no place under DropOldest; under Block and Reject its
// worker gives its room back as it starts it, as the task leaves Waiting.
//
// # Task states
//
// Every task someone waits for (a DoWait call, a Task, a Future or a group
// task), and every plain task with a priority or a weight (Do and
// DoContext with options, in a carrier), moves through one state machine, and each move happens exactly once,
// decided by an atomic compare-and-swap, whoever attempts it:
//
//	queued ──► started ──► finished
//	   │          │
//	   │          └──► scheduled (a run to be retried) ──► queued
//	   ├─────► canceled | abandoned | dropped | expired
//	scheduled (not due yet) ──► queued, or canceled | abandoned | dropped
//
// The states:
//   - queued: accepted, and not started yet: waiting in the queue (counted
//     in Status.Waiting), or handed to a worker that has not called it.
//   - started: a worker called the func. finished: the func returned,
//     panicked or called runtime.Goexit; Wait returns its outcome.
//   - canceled: the task's context ended before it started. Wait, Done,
//     the dispatcher or the worker that took it, whichever sees it first,
//     settles it; Wait returns the context's error at once, even while the
//     task is still in the queue. A task canceled while it waits in the queue
//     never takes a worker; one canceled while the dispatcher is handing it
//     out may still reach a worker, which skips it.
//   - abandoned: Stop, or a Shutdown that gave up, came before it started,
//     wherever it was (in the queue, or handed to a worker); Wait returns
//     ErrStopped. A task whose own context ended first is canceled instead.
//   - dropped: a full queue dropped it to make room for a newer task
//     (DropOldest); Wait returns an error wrapping ErrQueueFull. Or a Resize made the pool
//     smaller than its weight; Wait returns ErrTooHeavy.
//   - expired: it waited in the queue longer than WithQueueTimeout; Wait
//     returns an error wrapping context.DeadlineExceeded.
//   - scheduled: not due yet (a Delay), or waiting for its next run
//     (Retry); counted in Status.Scheduled.
//
// A settled task (canceled, abandoned, dropped or expired) has left
// Status.Waiting and Status.Scheduled (and Status.Keys no longer counts its
// key, if it was the key's last task) and is counted in Status.Canceled,
// Abandoned, Dropped or Expired by the time its Wait or Done reports it.
// Plain tasks from Submit and Do have no waiter: they are scheduled (given
// a Delay), queued, then started and finished, or abandoned, dropped
// or expired (and given to the dead-letter handler).
//
// # Stopping
//
// Three calls cover the four classic ways to stop, as http.Server's
// Shutdown and Close do:
//   - drain everything: [WorkerPool.StopWait] rejects new tasks, runs every
//     accepted task to the end, then stops the workers;
//   - finish the running tasks and drop the queued ones: [WorkerPool.Stop]
//     abandons the queue, releasing its closures at once, and lets the
//     running tasks finish;
//   - drain until a deadline, then cut: [WorkerPool.Shutdown] drains like
//     StopWait until its context is done, then abandons the rest of the
//     queue and cancels the contexts of the running Tasks, Futures and group
//     tasks (a plain func cannot be canceled, so Shutdown waits for it);
//   - cut now: Shutdown with a context that is already done: no queued
//     task starts.
//
// A stop that abandons the queue gives its tasks up in queue order: the
// order in which the pool would start them were each to end before the
// next is chosen, from the moment of the stop, with nothing holding any
// back: the highest priority level first (under WithPriorityAging, the
// highest level reached), the keys' turns within a level (a key that its
// limit held back takes its turn after the keys in line, see Keys),
// first in first out within a key and level; then the scheduled tasks, in
// the order they come due (a retry whose worker had not handed it back to
// the dispatcher yet comes last). The tasks with a waiter learn ErrStopped,
// TaskDropped learns of each task, and the dead-letter handler gets each
// plain one, in that order; only a task a worker took but had not started
// is given up by that worker, whenever it comes to it.
//
// Shutdown returns nil only if the stop abandoned no accepted task (tasks
// dropped, expired or canceled for their own reasons do not count), the
// context's error if it gave up, and an error wrapping ErrStopped if tasks
// were abandoned all the same: by a Stop during it, or tasks a Group held
// back because of SetLimit, which every stop drops.
//
// All three return only once every pool goroutine (the dispatcher, the
// workers, the idle clock and the dead-letter deliverer) has exited, and
// the dead-letter handler has returned for every task given up: no
// function of this package is on any goroutine's stack, no timer is armed, and no task starts after that.
// (One exception, which runs no code of the pool: a worker whose task
// called runtime.Goexit may still be finishing its last deferred call, its
// WaitGroup's Done, and the runtime keeps its frames until it frees the
// goroutine a moment later.) From the moment Stop, or a Shutdown that gives
// up, is called, no queued task starts, however soon a worker comes free:
// the dispatcher hands none to a worker, and a worker that takes the one
// it was offering as the stop began, or a task from the lane after it
// began, gives it up (abandoned, as the rest of the queue); only a task a
// worker had taken before may still start.
// All are idempotent and safe to call from many goroutines at once; a Stop
// during a StopWait or Shutdown abandons what has not started yet. Once
// stopping has begun, Submit and SubmitWait panic with an error wrapping
// ErrStopped, Do and DoWait return [ErrStopped], a Task or Future made by
// Go or GoResult reports ErrStopped, and a Group's Wait reports it unless an
// earlier error came first. Every Wait returns once the pool has stopped.
//
// Admission is linearizable: a submit that races with a stop is either
// accepted (it then runs exactly once, or is abandoned or canceled) or
// rejected with ErrStopped. No channel that submitters send on is ever
// closed.
//
// # Status
//
// [WorkerPool.Status] reads counters that the pool's goroutines keep as
// they go; it never blocks and never waits for the dispatcher. While tasks
// flow, its fields are read a moment apart (the waiting count, for one, is
// published when the dispatcher has nothing else to do; with a bound it is
// published at every change, and under Block and Reject Waiting never shows
// more than the bound, tasks a Group held back and retries, which join the
// queue past a full bound, aside; under DropOldest a task with a handle
// that was just handed to a worker counts until the worker starts it). Once the pool has stopped the snapshot is exact:
//
//	Submitted == Completed + Abandoned + Canceled + Dropped + Expired
//
// and Workers, Busy, Waiting and Scheduled are zero: each accepted task is
// in exactly one of those buckets, however many times it was retried
// (Retried counts the extra runs apart). Panicked is part of Completed:
// the tasks whose last run panicked, each counted once as it completes;
// earlier runs of a retried task that panicked are not counted, so a task
// that panicked, ran again and returned is not in Panicked, and one that
// Stop abandoned while it waited for its next run is in neither. Rejected
// counts the tasks refused because the queue was full or they were too
// heavy; they were never accepted, so they are not in Submitted. A group
// task counts from its Group.Go call, also one that never reaches the
// dispatcher: held back by SetLimit and then dropped, in Canceled if the
// group's context ended and in Abandoned if the pool stopped, or skipped
// because the group's context was done, in Canceled. Only a Group.Go
// refused as any submit is (on a stopping pool, too heavy, by a full
// queue, or under Block when the group's context ends while it waits for
// room) is not in Submitted.
//
// # Observability
//
// Operators ask how long tasks wait, how long they run, and what was lost.
// [WorkerPool.Status] answers the counts at any moment; [WithHooks], with
// its hooks and its Logger, answers the rest, and costs nothing when not
// set: without TaskStarted and TaskFinished the pool reads no clock for a
// task, and the submit and run paths allocate nothing either way.
//
// Each hook learns which task it is about in a [TaskInfo], passed by value
// (no allocation): the task's label, key, priority, weight and attempt (1
// for the first run, 2, ... under a retry), and the times and outcome of
// the run. TaskStarted and TaskFinished run in the worker goroutine around
// each run of a task, a retried task's every attempt included, with its
// wait (from the moment it joined the queue, accepted or come due, to its
// start; 0 for a task that a worker took at once) and, for TaskFinished,
// its run time and error: the handle's error, a [*PanicError] for every
// recovered panic, [ErrGoexit], or nil for a plain func that returned.
// TaskFinished runs before the task's Wait returns, before DoWait returns,
// and before the worker takes its next task.
//
// TaskStarted gets a context and returns the one the task runs with, which
// TaskFinished gets too (nil means unchanged): the task's ctx of the table
// of calls, and context.Background() for gammazero's calls and DoBatch. A
// Go task's ctx is the caller's (or the group's): its cancellation, and a
// Shutdown that gives up, still cancel whatever TaskStarted derived from
// it; DoContext's is its ctx's values without its cancellation
// (context.WithoutCancel: the task may run after ctx is done). So a span
// started in TaskStarted is a child of the submitter's span and the parent
// of everything the task does (a plain func() cannot see it, but its span
// is still the submitter's child for DoContext). A TaskStarted that panics
// (under a Panic hook) leaves the task its own context, and its run gets
// no TaskFinished: a TaskFinished is the end of what its TaskStarted began,
// so one whose TaskStarted did not return could only end another run's.
// Hooks that chain others must pass each TaskStarted the ctx the one
// before returned. A TaskStarted that calls runtime.Goexit ends the run
// before the task's func is called: the task never runs, its waiter learns
// an error wrapping ErrGoexit that says so (a plain task goes to the
// dead-letter handler with it), and it counts in Completed, as a run that
// ended in runtime.Goexit.
//
// TaskDropped runs exactly once for each task that never runs, with why in
// TaskInfo.Err (the table of errors, or the task's context error) and the
// attempt that never ran: in the call that refused the task, before it
// returns, and otherwise on the dead-letter goroutine, one call at a time
// in the order the tasks were given up, just before a plain task goes to
// DeadLetter. No hook ever runs on the dispatcher, and every hook call for
// tasks given up before or during a stop has returned when Stop, StopWait
// or Shutdown returns. So after a stop TaskStarted has been called once
// per run, TaskFinished once per run whose TaskStarted returned, and
// TaskDropped once per task in the buckets of Status that count tasks
// which never ran (see Status). A task refused because the pool is
// stopping was never accepted nor counted, and gets no call. A panicking
// hook is treated like a task's panic (see Panics), but not counted as
// one.
//
// A label costs a task what any option costs (see Scheduling): a Go with a
// label allocates its options beside its Task; a plain task with a label
// rides a carrier the pool reuses, so DoContext with a label allocates
// nothing once the pool is warm. In a pool with TaskStarted or
// TaskFinished, every DoContext task rides such a carrier, with its ctx's
// values (one allocation, context.WithoutCancel's).
//
// [Hooks].Logger gets, at Info and above, exactly one Error record with the
// stack per recovered panic (a task's, a handle's, a hook's, a retry
// policy's, the dead-letter handler's), one Info record per Resize on a
// pool that has not begun to stop (the same size included), and one Info
// summary of the final counts when the pool has stopped, logged before the
// stop returns: never a record per task. Everything else (the pool's
// start, the start of a stop, a Shutdown that gives up) is at Debug. Every
// record carries the logger's own attributes (give it the pool's name with
// slog.Logger.With); the record of a task's panic, or of its retry
// policy's, also carries its label (if it has one) and attempt. Records
// are logged on the goroutine where the event happens, never while the
// dispatcher waits for them, but the stop summary, which the dispatcher
// logs as its last act.
//
// The nested modules github.com/e86d9661/workerpool/workerpoolprom
// (Prometheus) and github.com/e86d9661/workerpool/workerpoolotel
// (OpenTelemetry) export Status at scrape time, and, fed by the hooks, the
// wait and run times by label, failures by outcome and the work still
// running, under one vocabulary; workerpoolotel also makes a span for
// every run, on every call path.
//
// # Idle workers
//
// When no task comes in for a whole idle period (see [WithIdleTimeout]), the
// dispatcher retires one idle worker, then one more per further period, down
// to zero, or to the floor [WithMinWorkers] or a size window keeps. Busy workers are never
// retired, and a task submitted after the pool shrank starts a new worker.
// An idle pool with no workers above the floor arms no timer.
//
// # Pausing
//
// [WorkerPool.Pause] is a barrier: it returns once every task submitted
// before it has finished. Tasks submitted after it are accepted and held
// until its context is done. Pauses queue behind each other, and Stop,
// StopWait or Shutdown ends them all. A pause is state in the dispatcher,
// not a task: it occupies no worker and never shows up in WaitingQueueSize
// or Status.
//
// # Panics
//
// By default a plain task that panics crashes the program, exactly as a
// panic in a plain goroutine does: hidden panics hide bugs. (Tasks, Futures
// and groups return the panic as an error instead; someone waits for it.)
// With [Hooks].Panic, the pool recovers the panic and calls the hook
// in the panicking goroutine, where debug.Stack still shows the task's
// frames; the worker then goes on, and the logger, if any, gets the panic
// with its stack. A panic in a hook or in the dead-letter handler is
// treated the same way, without counting in Status.Panicked (a
// retry policy's panic is always recovered: it ends the task's retries with
// a *PanicError). A task that calls runtime.Goexit (as
// t.FailNow does) ends its worker goroutine, and a new goroutine takes its
// place, so neither a panic nor Goexit ever costs the pool a worker or
// hangs a stop.
//
// # Deadlocks
//
// These waits are by design and the pool does not try to guess around them:
//   - SubmitWait, DoWait or Pause called from inside a task waits for other
//     tasks to get a worker, so it waits forever when every worker is busy
//     (always, with one worker). An external Stop or Shutdown still ends
//     it: DoWait returns ErrStopped, SubmitWait panics with it, Pause
//     returns.
//   - Map or MapUnordered ranged over inside a task waits for items that
//     need other workers, so forever when every worker does so; a break,
//     ctx ending, Stop or a Shutdown that gives up still ends it (StopWait,
//     and Shutdown until it gives up, wait for those items: forever).
//   - WaitIdle called from inside a task waits for that task, so until its
//     context is done or a stop begins (then it returns ErrStopped).
//   - Stop, StopWait or Shutdown called from inside a task waits for that
//     task to finish, forever, and called from inside the dead-letter
//     handler or a hook, for the handler or the hook to return. So does a Task's Wait, or a
//     Group's, called from inside a task while the awaited tasks cannot get
//     a worker.
//   - A Pause with a context that is never done holds later tasks until a
//     stop. Under Block, tasks it holds fill the queue, and submitters then
//     wait for room until the pause ends.
//   - Under Block, a submit from inside a task waits for room that only a
//     worker taking a queued task frees: when every worker does so at once,
//     they wait forever. Use DoContext with a deadline, or with a ctx that
//     is already done (which never waits), there.
//   - Under WithKeys(n, share), a task that waits (DoWait, a Task's Wait, a
//     Group's Wait) for another task of its own key, while the tasks of
//     its key running with it fill the limit, waits forever: the awaited
//     task cannot start before the waiting one returns. With n = 1 that is
//     any such wait.
package workerpool
