package natsfeed

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/e86d9661/workerpool"
)

// An Option configures Feed. Options apply in order; the last one of a
// kind wins. An option given a bad value makes Feed return an error
// naming it, before Feed takes any message.
type Option func(*config)

type config struct {
	maxInFlight  int // 0: the default bound (see defaultBound)
	fetchWait    time.Duration
	backoff      func(attempt int, err error) (delay time.Duration, retry bool)
	progress     time.Duration // 0: no InProgress beats
	onError      func(error)
	cancelOnStop bool
	stats        *Stats
	task         workerpool.TaskOption // WithTaskOption's; its Label "" means the consumer's name
	err          error                 // the first bad option
}

const (
	// DefaultFetchWait is how long one pull request waits for messages
	// before Feed sends the next.
	DefaultFetchWait = time.Second
	// MinFetchWait and MaxFetchWait bound WithFetchWait: a shorter request
	// expires before the server can serve it, and the client's own timer
	// for a longer one would overflow.
	MinFetchWait = time.Millisecond
	MaxFetchWait = time.Hour
	// MinProgress bounds WithProgress: a beat per message more often than
	// that floods the server and tells it nothing more.
	MinProgress = time.Millisecond
)

func newConfig(opts []Option) config {
	c := config{
		fetchWait: DefaultFetchWait,
		// WithBackoff's default: from 1s to 1m, and no limit on deliveries.
		backoff: workerpool.Backoff(time.Second, time.Minute, math.MaxInt),
		onError: logError,
	}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// refuse records the first bad option.
func (c *config) refuse(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("natsfeed: "+format, args...)
	}
}

// logError is the default error handler.
func logError(err error) {
	slog.Warn("natsfeed", "err", err)
}

// WithMaxInFlight bounds the messages Feed holds at once to n: asked for
// and not yet settled, whether on their way from the server, waiting in
// the pool's queue, running or being acknowledged. The server never counts
// more of this process's messages as pending, but for the naks and terms
// it has received and not yet processed, the nak'd messages waiting out
// their delay before the server redelivers them, and the messages Feed
// failed to settle, until their AckWait ends (see the package doc). n must
// be at least 1.
//
// Within the bound Feed fetches ahead, so n above the pool's size keeps
// the workers busy: the messages beyond the running ones cover the pull
// request that brings the next messages and the acknowledgement that
// waits for the server, each a round trip. To keep w workers busy on tasks
// of t each, with a round trip of r to the server, take n of about
// w × (1 + 2r/t): twice the pool's size covers round trips up to half a
// task; a task of 1 ms behind a network of 1 ms each way asks for about
// five times the pool's size. More costs the messages a dead process
// holds until AckWait, and the wait of the messages queued behind others
// while another process could run them; n below the pool's size leaves
// workers idle for this feed.
//
// Default: that rule, measured as Feed runs. r is the time the server
// takes to confirm an acknowledgement (none confirmed, none measured), t
// the time a handler takes to return, whatever it returns (one that
// panics or calls runtime.Goexit is not timed), each a moving average in
// which a message counts for an eighth, and w the pool's size of the
// moment ([workerpool.WorkerPool.Size]); the bound is read before each
// pull request, so a Resize takes effect. It is never below twice the
// pool's size, which is the bound until both are measured and what tasks
// of at least twice a round trip get, and never above eight times it, so
// that a process never takes far more than it runs at once. A bound that
// falls (a Resize down, tasks that turn slower) takes effect as what the
// feed holds settles: what it took under the higher bound stays with it
// until its workers have run it, so tasks that turn long after a phase of
// short ones are held up to eight per worker meanwhile, though a single
// long task of sixteen round trips or more brings the bound back to twice
// the pool's size. Tasks far
// shorter than a round trip (a few microseconds against a tenth of a
// millisecond on a loopback) meet that ceiling: 8 workers doing nothing
// took 1.3x the messages per second of a Consume loop that waits for each
// DoubleAck, where twice the pool's size took 0.6x of it (see the package
// doc); give such a feed a larger bound if its round trips are longer.
func WithMaxInFlight(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.refuse("WithMaxInFlight(%d): n must be at least 1", n)
		}
		c.maxInFlight = n
	}
}

// WithFetchWait sets how long one pull request waits on the server for
// messages. A shorter wait sends more requests to an idle stream; a longer
// one delays Feed's return after its ctx is done, since Feed lets the
// requests it has sent finish rather than drop what the server is already
// sending (and gives back what they bring, and what the drain gives back,
// once they have ended). A failed request is retried after d, and a
// Resize that raises the pool's size is seen within d. d must be from
// MinFetchWait to MaxFetchWait; a consumer's MaxRequestExpires, if lower,
// lowers it.
//
// Default: DefaultFetchWait.
func WithFetchWait(d time.Duration) Option {
	return func(c *config) {
		if d < MinFetchWait || d > MaxFetchWait {
			c.refuse("WithFetchWait(%v): d must be from %v to %v", d, MinFetchWait, MaxFetchWait)
		}
		c.fetchWait = d
	}
}

// WithBackoff sets the delay of the nak that follows a handler error. p is
// a retry policy, as for workerpool.TaskOption.Retry ([workerpool.Backoff]
// makes one), called with the message's delivery count as the attempt (1
// on its first delivery) and the handler's error (for a handler that
// panicked or called runtime.Goexit, an error that says so). If p returns
// retry false, the message is terminated instead, as for an error marked
// with [workerpool.Permanent], for which p is not called. p is called on
// the worker that ran the handler and must not block. p must not be nil.
//
// Default: workerpool.Backoff(time.Second, time.Minute, math.MaxInt):
// exponential from 1s to 1m with full jitter, and no limit on deliveries
// (the consumer's MaxDeliver sets one).
func WithBackoff(p func(attempt int, err error) (delay time.Duration, retry bool)) Option {
	return func(c *config) {
		if p == nil {
			c.refuse("WithBackoff(nil)")
		}
		c.backoff = p
	}
}

// WithProgress makes Feed tell the server every period that a message it
// holds is still being worked on (InProgress), from the moment it arrives
// until it is settled, so that a handler longer than the consumer's AckWait
// does not get its message redelivered elsewhere. Choose every well below
// AckWait. every must be at least MinProgress, and below the consumer's
// AckWait (as Feed reads it when it starts): a beat any later comes after
// the server has redelivered the message, and the beats of WithProgress
// replace those that keep a message waiting in the pool's queue alive.
//
// Default: no progress beats for a running message; one that waits in
// the pool's queue is beaten once it has waited half of AckWait, and when
// a worker takes it (see Feed).
func WithProgress(every time.Duration) Option {
	return func(c *config) {
		if every < MinProgress {
			c.refuse("WithProgress(%v): every must be at least %v", every, MinProgress)
		}
		c.progress = every
	}
}

// WithErrorHandler sets the function that learns of every error Feed meets
// and does not return: a failed fetch (retried after the fetch wait), a
// failed acknowledgement (retried), a failed nak, term or progress beat, a
// message the pool refused to run (nak'd), a handler or a backoff policy
// that panicked or called runtime.Goexit (nak'd; the error wraps the
// pool's [*workerpool.PanicError], with the stack, or
// [workerpool.ErrGoexit]).
// f is called from Feed's and the pool's goroutines, possibly at once, and
// must not block for long or panic. f must not be nil.
//
// Default: each error is logged with [slog.Warn].
func WithErrorHandler(f func(error)) Option {
	return func(c *config) {
		if f == nil {
			c.refuse("WithErrorHandler(nil)")
		}
		c.onError = f
	}
}

// WithCancelOnStop makes the handlers' context end when Feed's ctx does,
// so that running handlers can give up at once; their messages are then
// settled by what they return, and a handler that returns its ctx's error
// has its message given back as the drain gives back what waits (see
// Feed), its attempt not counted as a failure. Without it, the handlers' context carries
// ctx's values but never ends, and a drain lets every handler finish.
func WithCancelOnStop() Option {
	return func(c *config) {
		c.cancelOnStop = true
	}
}

// WithStats makes Feed count what it does in s, which can be read at any
// time with [Stats.Counts]. Several feeds may share one Stats. s must not
// be nil.
func WithStats(s *Stats) Option {
	return func(c *config) {
		if s == nil {
			c.refuse("WithStats(nil)")
		}
		c.stats = s
	}
}

// WithTaskOption sets the options of the pool's task that handles each
// message (see [workerpool.TaskOption]): its Priority, Weight, Key and
// Delay schedule it among the pool's other tasks, and its Label is the name the
// pool's hooks, logs, metrics and spans know these tasks by, so that a
// pool fed by several consumers, or also running tasks of its own, tells
// them apart. A label is a kind of task, never a message id; an empty
// Label means the consumer's name. o.Retry must be nil: a failed message
// is nak'd for redelivery as WithBackoff says, never run again in place.
//
// Default: the zero TaskOption: each message's task has the pool's default
// priority and weight, no key and no delay, and the consumer's name as its
// Label.
func WithTaskOption(o workerpool.TaskOption) Option {
	return func(c *config) {
		if o.Retry != nil {
			c.refuse("WithTaskOption: Retry must be nil (WithBackoff sets how a failed message is redelivered)")
		}
		c.task = o
	}
}
