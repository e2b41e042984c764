package workerpool

import (
	"sync/atomic"
	"time"
)

// A TaskOption says how the pool schedules one task, given to a call of
// the package documentation's table of calls that take options, and what
// the hooks learn of it. Set the fields you need; a zero field changes
// nothing, so the zero TaskOption is a plain task's defaults. When several
// options are given, each field is taken from the last option that sets it.
// Passing options costs no allocation.
//
//	t := p.Go(ctx, send, workerpool.TaskOption{Priority: 1, Key: account, Label: "send-mail"})
type TaskOption struct {
	// Priority is the task's level, any int: among the waiting tasks the
	// highest level starts next, and within a level the one that became due
	// first. It orders only waiting tasks, never preempts a running one,
	// and rises with WithPriorityAging. Default 0, every plain task's.
	Priority int
	// Delay makes the task due d after the call that submits it: until
	// then it waits in the dispatcher's timer heap, holding no worker and no
	// goroutine, and counts in Status.Scheduled. For a moment t, use
	// time.Until(t). Zero or less: no delay.
	Delay time.Duration
	// Weight makes the task occupy Weight of the pool's Size slots while it
	// runs, so that the weights of the running tasks never exceed Size; a
	// heavy task next in order is not overtaken by lighter ones behind it.
	// A task heavier than Size is refused with ErrTooHeavy. Below 1: 1.
	// Under WithAdaptiveSize, the weight is checked against the ceiling
	// instead, and a task heavier than Size starts alone and holds every
	// slot (see Sizing itself in the package documentation).
	Weight int
	// Key makes the task belong to a key (an account, a tenant, a
	// document): the tasks of one key start in the order they became
	// ready, and the keys with tasks waiting share the pool fairly, so a
	// burst of one key delays another key's task by at most one round of
	// the keys. It does not run a key's tasks one at a time: WithKeys(1,
	// nil) does. The pool keeps a key's state only while it has tasks
	// (Status.Keys). "" is no key.
	Key string
	// Label names what kind of task this is ("resize-image", never an
	// id): hooks see it in TaskInfo.Label, log records carry it, and the
	// metrics and tracing modules group by it. It changes nothing in how
	// the task is scheduled. "" is no label.
	Label string
	// Retry makes the pool run the task again when a run fails, as the
	// policy says: given the number of runs so far (attempt, 1 after the
	// first) and the run's error (a *PanicError for a panic), it returns
	// whether to retry and after what delay. Backoff makes the usual one.
	// The policy runs on the worker, one call at a time per task, and must
	// not block; the package documentation (Retries) gives the rules. A
	// plain func(), which fails only by panicking, takes no Retry: its
	// calls panic when given one. nil: no retry.
	Retry func(attempt int, err error) (delay time.Duration, retry bool)
	// Window bounds a Map or MapUnordered loop: the most items it takes
	// from its input ahead of what it has yielded. 0: twice the pool's
	// size as the loop starts; negative: no limit. The other calls, which
	// take one task, ignore it.
	Window int
}

// taskOptions is what a task's TaskOptions say, as its job keeps it.
type taskOptions struct {
	due      int64 // when the task may start, on the pool's clock (see clock.now); 0: at once
	priority int
	weight   int // at least 1
	retry    retryPolicy
	label    string
	key      string
}

// parseOptions reads opts for a task submitted now. It reads the clock only
// if an option asks for a delay.
func (p *WorkerPool) parseOptions(opts []TaskOption) taskOptions {
	o := taskOptions{weight: 1}
	for i := range opts {
		opt := &opts[i]
		switch {
		case opt.Delay > 0:
			o.due = later(p.clock.now(), int64(opt.Delay))
		case opt.Delay < 0: // set, to no delay: it wins over an earlier one
			o.due = 0
		}
		if opt.Priority != 0 {
			o.priority = opt.Priority
		}
		if opt.Weight != 0 {
			o.weight = max(opt.Weight, 1)
		}
		if opt.Retry != nil {
			o.retry = opt.Retry
		}
		if opt.Label != "" {
			o.label = opt.Label
		}
		if opt.Key != "" {
			o.key = opt.Key
		}
	}
	return o
}

// apply gives j the options o, kept out of line (see jobOptions):
// into store, or into a new jobOptions if store is nil; a task that uses no
// option gets none (see job.opts).
func (j *job) apply(o taskOptions, store *jobOptions) {
	if o.isDefault() {
		j.opts = nil
		return
	}
	if store == nil {
		store = new(jobOptions)
	}
	*store = jobOptions{taskOptions: o}
	j.opts = store
}

// isDefault reports whether o changes nothing: the options of a plain
// task, which has no label or key either.
func (o taskOptions) isDefault() bool {
	return o.due == 0 && o.priority == 0 && o.weight <= 1 && o.retry == nil && o.label == "" && o.key == ""
}

// --- a job's copy of its options, and what it reads of them ---

// jobOptions is the state a job needs only when its task uses an option
// (see TaskOption): the options themselves, the retry state, and where the
// job stands among the queued jobs of its priority level.
type jobOptions struct {
	taskOptions // due also written by the worker that posts it for a retry

	// attempt counts the runs so far and lastErr is the error of the last
	// one, once it is to be retried: written by the worker that ran it.
	attempt int
	lastErr error

	// Dispatch's own: seq orders the job among the queued jobs of other
	// levels than 0 (see waitQueue.levels); after is the number of level-0
	// entries queued before it; readyAt is when it last joined such a
	// level, on the pool's clock, if tasks carry it (see waitQueue.stamped;
	// level 0 keeps its entries' readyAt itself).
	seq     uint64
	after   uint64
	readyAt int64

	// For a keyed task (see TaskOption.Key): flow is its key's state, set by
	// dispatch as it accepts the job, and kept until the job is reused.
	// member says the job counts among flow.members: set by dispatch as
	// it gives the job its flow, and swapped off, once, by whoever takes
	// the job out (see leaveKey): the party that settles it, or else the
	// one that lets go of it. keyHeld says the job holds its weight of
	// its key's slots: set by the worker that takes it, kept while it
	// waits for a retry, and given back as the pool lets go of the job
	// (see letGo). keyHeld is atomic because a party that settles the job
	// while it waits reads it (see settleFrom).
	flow    *flow
	flowGen uint32 // flow.gen as dispatch gave the job its flow
	member  atomic.Bool
	keyHeld atomic.Bool
}

// key is the job's key (see TaskOption.Key), "" for none.
func (j *job) key() string {
	if j.opts == nil {
		return ""
	}
	return j.opts.key
}

// flow is the job's key's state once dispatch accepted it, or nil.
func (j *job) flow() *flow {
	if j.opts == nil {
		return nil
	}
	return j.opts.flow
}

// keyHeld reports whether the job holds its key's slots (see
// jobOptions.keyHeld).
func (j *job) keyHeld() bool {
	return j.opts != nil && j.opts.keyHeld.Load()
}

// options is the job's task options, nil for a task that uses none.
func (j *job) options() *taskOptions {
	if j.opts == nil {
		return nil
	}
	return &j.opts.taskOptions
}

// info is the TaskInfo of the job's next run, or of the job given up
// with why before it.
func (j *job) info(why error) TaskInfo {
	attempt := 1
	if j.opts != nil {
		attempt += j.opts.attempt
	}
	return infoOf(j.options(), attempt, why)
}

// weight is the slots the job's task takes (see Weight): 1 unless an
// option says otherwise.
func (j *job) weight() int {
	if j.opts == nil {
		return 1
	}
	return j.opts.weight
}

// priority is the job's priority level (see Priority).
func (j *job) priority() int {
	if j.opts == nil {
		return 0
	}
	return j.opts.priority
}

// due is when the job may start, on the pool's clock; 0: at once.
func (j *job) due() int64 {
	if j.opts == nil {
		return 0
	}
	return j.opts.due
}

// retriable reports whether the job has a retry policy: it may come back
// for another run.
func (j *job) retriable() bool {
	return j.opts != nil && j.opts.retry != nil
}

// lastErr is the error of the job's last run, once it was to be retried;
// nil before.
func (j *job) lastErr() error {
	if j.opts == nil {
		return nil
	}
	return j.opts.lastErr
}
