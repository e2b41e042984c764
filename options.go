package workerpool

import "time"

// DefaultIdleTimeout is how long the pool must go without an incoming task
// before it retires an idle worker.
const DefaultIdleTimeout = 2 * time.Second

// An Option configures a WorkerPool. Options are applied by New in the order
// given; when two set the same thing, the last one wins. A nil Option is
// ignored.
type Option func(*config)

// config holds what New's options set. It is read only by New, which copies
// what the pool needs.
type config struct {
	idleTimeout  time.Duration
	panicHandler func(recovered any)
}

func newConfig(options []Option) config {
	cfg := config{idleTimeout: DefaultIdleTimeout}
	for _, option := range options {
		if option != nil {
			option(&cfg)
		}
	}
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
