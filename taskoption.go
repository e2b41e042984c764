package workerpool

import (
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
}

// taskOptions is what a task's TaskOptions say, as its job keeps it.
type taskOptions struct {
	due      int64 // when the task may start, on the pool's clock (see WorkerPool.now); 0: at once
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
