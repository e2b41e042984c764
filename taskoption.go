package workerpool

import (
	"time"
)

// A TaskOption changes how the pool schedules one task given to Go, Call,
// Group.Go, DoContext or DoWaitContext, or what the hooks learn of it. Make
// one with Priority, Delay, At, Retry, Weight, Key or Label; the zero
// TaskOption changes nothing. Options apply in the order given: when two
// set the same thing, the last one wins (Delay and At both set the due
// time). A TaskOption holds no pointer but Retry's policy and Label's
// name, so passing options costs no allocation.
type TaskOption struct {
	kind  optionKind
	n     int64     // Delay's d, Priority's level, Weight's n
	at    time.Time // At's t
	retry RetryPolicy
	label string // Label's and Key's string
}

type optionKind uint8

const (
	optionNone optionKind = iota
	optionDelay
	optionAt
	optionPriority
	optionWeight
	optionRetry
	optionLabel
	optionKey
)

// Priority sets the task's priority level: any int, negative included; the
// default is 0, which is also the level of every plain task. Among the
// tasks that wait, the highest level starts next, and within a level the
// one that became due first (for a task without a delay, the one submitted
// first). Priority orders only waiting tasks: it never preempts a running
// one. With WithPriorityAging a waiting task's level rises as it waits.
// Each level with tasks waiting is one FIFO in the dispatcher: choosing
// the next task looks at the highest levels first, and a Pause, aging or
// DropOldest make it look at every level's front, so thousands of distinct
// levels waiting at once cost a step each that much.
func Priority(level int) TaskOption {
	return TaskOption{kind: optionPriority, n: int64(level)}
}

// Delay makes a task due d after the call that submits it (Go, Call,
// Group.Go, DoContext or DoWaitContext), measured on the clock of that moment: it does not start before
// then. Until it is due it waits in the dispatcher's timer heap, holding no
// worker and no goroutine, and counts in Status.Scheduled. A d of zero or
// less means no delay.
func Delay(d time.Duration) TaskOption {
	return TaskOption{kind: optionDelay, n: int64(d)}
}

// At makes a task due at t: it does not start before then. A t that has
// passed (the zero time included) means no delay. See Delay for where the
// task waits meanwhile.
func At(t time.Time) TaskOption {
	return TaskOption{kind: optionAt, at: t}
}

// Weight makes a task occupy n of the pool's worker slots while it runs:
// it starts only once n slots are free, and holds them until it returns, so
// the weights of the running tasks never exceed the pool's size. Tasks
// start in the order Priority gives, and a heavy task next in that order is
// not overtaken by lighter ones behind it: they wait until it has started.
// n < 1 means 1, the weight of every plain task. A task heavier than the
// pool's size is refused at once with ErrTooHeavy (counted in
// Status.Rejected); one that waits when a Resize makes the pool smaller
// than its weight is dropped with ErrTooHeavy (counted in Status.Dropped).
// Status.Busy counts running tasks, not slots.
func Weight(n int) TaskOption {
	return TaskOption{kind: optionWeight, n: int64(n)}
}

// Retry makes the pool run a task again when a run returns an error, as
// policy says (see RetryPolicy). A nil policy means no retries. Only a
// task that returns its error can be retried: DoContext and DoWaitContext,
// whose func() fails only by panicking, panic when given Retry, as a
// programming error.
func Retry(policy RetryPolicy) TaskOption {
	return TaskOption{kind: optionRetry, retry: policy}
}

// Label names what kind of task this is: hooks see it in TaskInfo.Label,
// log records carry it as "label", and the metrics and tracing modules
// group by it (workerpoolprom's task label, workerpoolotel's span name).
// It changes nothing in how the task is scheduled. A label is a kind of
// task ("resize-image", "send-mail"), never an id: metrics keep a series
// per label. The default, and Label(""), is no label.
func Label(name string) TaskOption {
	return TaskOption{kind: optionLabel, label: name}
}

// Key makes the task belong to key k: the tasks of one key start in the
// order they became ready (accepted, or due), and the dispatcher shares
// the pool fairly among the keys with tasks waiting, by deficit round
// robin over the slots they start, weighted by WithKeyWeights: a key with
// a burst of 100,000 waiting tasks delays another key's new task by at
// most one round of the keys with tasks waiting, not by the burst.
// WithKeyLimit bounds the slots one key's tasks hold at once; with 1, a
// key's tasks run one at a time, in order. Priority levels come first:
// fairness orders the tasks of one level. The default, and Key(""), is no
// key: the tasks without a key share as one more key of weight 1.
//
// A key is an id (an account, a tenant, a document), any string; the pool
// keeps a key's state only while it has tasks waiting, scheduled or
// running (Status.Keys), so millions of distinct keys over time cost no
// memory once done. With no keyed task in the pool, its order is exactly
// that of a pool without keys.
func Key(k string) TaskOption {
	return TaskOption{kind: optionKey, label: k}
}

// taskOptions is what a task's TaskOptions say, as its job keeps it.
type taskOptions struct {
	due      int64 // when the task may start, on the pool's clock (see WorkerPool.now); 0: at once
	priority int
	weight   int // at least 1
	retry    RetryPolicy
	label    string
	key      string
}

// parseOptions reads opts for a task submitted now. It reads the clock only
// if an option asks for a delay.
func (p *WorkerPool) parseOptions(opts []TaskOption) taskOptions {
	o := taskOptions{weight: 1}
	for _, opt := range opts {
		switch opt.kind {
		case optionDelay:
			o.due = 0
			if opt.n > 0 {
				o.due = later(p.now(), opt.n)
			}
		case optionAt:
			o.due = max(p.clockOf(opt.at), 0)
			if o.due <= p.now() {
				o.due = 0
			}
		case optionPriority:
			o.priority = int(opt.n)
		case optionWeight:
			o.weight = int(max(opt.n, 1))
		case optionRetry:
			o.retry = opt.retry
		case optionLabel:
			o.label = opt.label
		case optionKey:
			o.key = opt.label
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
