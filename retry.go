package workerpool

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// A retryPolicy is TaskOption.Retry's func: given the number of runs so
// far (attempt, 1 after the first) and the last run's error, it says
// whether to run the task again and after what delay. The package
// documentation (Retries) gives the rules.
type retryPolicy = func(attempt int, err error) (delay time.Duration, retry bool)

// Backoff returns a retry policy (for TaskOption.Retry) of exponential
// backoff with full jitter: it retries a task up to retries times after
// its first run, so a task runs at most retries+1 times, and the delay
// before retry k is random in [0, min(max, base·2^(k−1))]. It does not
// retry a panic (a *PanicError: a bug, not a passing failure); a policy of
// your own sees the *PanicError and may. retries < 1 means no retry; a
// base or max of zero or less means no delay.
func Backoff(base, max time.Duration, retries int) func(attempt int, err error) (delay time.Duration, retry bool) {
	return func(attempt int, err error) (time.Duration, bool) {
		if attempt > retries {
			return 0, false
		}
		if pe := (*PanicError)(nil); errors.As(err, &pe) {
			return 0, false
		}
		ceiling := int64(backoffCeiling(base, max, attempt))
		if ceiling <= 0 {
			return 0, true
		}
		if ceiling < math.MaxInt64 {
			ceiling++ // [0, ceiling], not [0, ceiling)
		}
		return time.Duration(rand.Int64N(ceiling)), true
	}
}

// backoffCeiling is min(max, base·2^(attempt−1)), without overflow.
func backoffCeiling(base, max time.Duration, attempt int) time.Duration {
	if base <= 0 || max <= 0 {
		return 0
	}
	ceiling := base
	for i := 1; i < attempt && ceiling < max; i++ {
		ceiling *= 2
		if ceiling <= 0 { // overflowed
			return max
		}
	}
	return min(ceiling, max)
}

// Permanent marks err as one that must not be retried: a task whose run
// returns it (or an error wrapping it) ends with it, whatever its retry
// policy says, which is not asked. errors.Is and errors.As see through it,
// and its message is err's. Code that settles work by the same rule finds
// the mark as it finds net.Error's Timeout: the error has a method
// Permanent() bool that reports true, so errors.As(err, &p), with p an
// interface{ Permanent() bool }, finds it. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string   { return e.err.Error() }
func (e *permanentError) Unwrap() error   { return e.err }
func (e *permanentError) Permanent() bool { return true }

// isPermanent reports whether err is, or wraps, an error marked with
// Permanent.
func isPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// withLastRun is err, the reason a task waiting for its next run never ran
// again, joined with the error of its last run, so that errors.Is finds
// both.
func withLastRun(err, last error) error {
	return fmt.Errorf("%w (last run: %w)", err, last)
}

// retryLater, called on the worker as a run of j ends with err (not a
// Goexit), decides whether j runs again (see retryPolicy). If so it moves j
// to scheduled, due after the policy's delay, sets e.posted, and posts it
// to dispatch (see retries): the pool keeps its reference to the job.
// Otherwise it returns the task's outcome: err, or, if the policy
// panicked, a *PanicError with its value joined with err.
func (j *job) retryLater(err error, e *ending) error {
	if !j.retriable() || err == nil || isPermanent(err) || j.owner.ctxDone() {
		return err
	}
	delay, again, panicked := j.askPolicy(err, e)
	switch {
	case panicked != nil:
		return withLastRun(panicked, err)
	case !again:
		return err
	}
	j.opts.attempt++
	e.posted = true
	p := j.pool
	j.opts.lastErr = err
	j.opts.due = later(p.clock.now(), max(int64(delay), 0))
	if p.cfg.roomed {
		j.place.Store(p.room.take(1)) // never waits: without a free place it goes over the bound
	}
	j.postForRetry()
	return nil
}

// askPolicy asks j's policy about err, the error of run j.opts.attempt+1,
// and returns what it panicked with, as a *PanicError, if it did. A
// policy that calls runtime.Goexit ends the task with ErrGoexit joined
// with err, as the goroutine ends.
func (j *job) askPolicy(err error, e *ending) (delay time.Duration, again bool, panicked error) {
	asked := false
	defer func() {
		if r := recover(); r != nil {
			e := panicErrorFor(r)
			j.pool.obs.logTaskPanic("retry policy", e, j)
			panicked = e
		} else if !asked { // runtime.Goexit: the run's deferred settle will not go on
			j.finish(withLastRun(ErrGoexit, err), e)
		}
	}()
	delay, again = j.opts.retry(j.opts.attempt+1, err)
	asked = true
	return delay, again, nil
}

// cancelRetry settles a job waiting for its next run whose context is
// done: as settleIfBlocked does, or, after its Task.cancel, canceled.
func (j *job) cancelRetry() {
	if !j.settleIfBlocked() {
		j.settle(jobCanceled, context.Canceled)
	}
}

// retryInbox is the dispatcher's side of retries: it counts the jobs with
// a retryPolicy it hands to workers, and takes those that come back through
// the mailbox (signals.retries). The dispatcher owns it.
type retryInbox struct {
	sig  *signals // the mailbox, and the count of jobs back
	sent uint64   // jobs with a retryPolicy handed to workers
}

// out reports whether jobs with a retryPolicy are out with workers or
// posted for dispatch to take. It loads the count of those back before it
// looks at the posted ones.
func (r *retryInbox) out() bool {
	if r.sent == 0 {
		return false
	}
	return r.sig.retriesBack.Load() != r.sent || r.sig.retries.pending()
}

// posted reports whether jobs may wait in the mailbox.
func (r *retryInbox) posted() bool {
	return r.sent > 0 && r.sig.retries.pending()
}

// take returns the jobs posted for a retry, oldest first (see
// dispatcher.takeRetries); the slice is the caller's until it calls done.
func (r *retryInbox) take() []*job { return r.sig.retries.take() }

// done drops the references the slice take returned holds (see mailbox.done).
func (r *retryInbox) done() { r.sig.retries.done() }

// took counts a job a worker took, which out describes.
func (r *retryInbox) took(out jobOut) {
	if out.retriable {
		r.sent++
	}
}

// abandonAll settles the jobs posted for a retry as a stop that abandons
// its tasks does. Dispatch calls it once every worker has returned, so
// none posts any more.
func (r *retryInbox) abandonAll() {
	for _, j := range r.take() {
		j.abandon()
		j.letGo()
	}
	r.done()
}
