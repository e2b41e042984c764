package workerpool

import "sync/atomic"

// A job in its worker's hands: the worker starts it unless it settled
// meanwhile, runs it between its hooks, and finishes it or posts it to
// dispatch for a retry. The moves of its state are job.go's (start,
// finish, postForRetry), as every move of a job's state is.

// work runs on the worker that took the job, which became ready at readyAt
// (see work.readyAt): it starts the job and runs its task, or skips it if
// it was settled or must not start. It returns
// the count of p.counts the work goes to: completed, skipped, or
// posted for a retry (then the pool keeps its reference to the job); and,
// if completed, whether the run that ended the task for good panicked
// (see workerSide.returned), which earlier runs, retried, do not decide.
func (j *job) work(readyAt int64, e *ending) (count *atomic.Uint64, panicked bool) {
	p, weight, retriable := j.pool, j.weight(), j.retriable()
	defer func() {
		if !e.posted {
			j.leaveFlowIfKeyed() // its key's slots, before the work is counted returned
			e.job = j            // the owner learns the outcome, and the pool lets go, after that (see ending)
		}
		if weight > 1 {
			p.sig.heavyDone.Add(uint64(weight - 1)) // before the worker counts the work returned
		}
		if retriable {
			p.sig.retriesBack.Add(1)
			p.sig.wakeDispatch()
		}
	}()
	if j.flow() != nil {
		j.opts.keyHeld.Store(true) // dispatch counted its slots as it handed it out
	}
	if j.settled() || j.settleTaken(e) || !j.start() {
		return &p.counts.skipped, false
	}
	if panicked = j.run(readyAt, e); e.posted {
		return &p.counts.posted, false
	}
	return &p.counts.completed, panicked
}

// run calls the task and settles the job with its outcome, or posts it for
// a retry and sets *posted; it reports whether the run panicked. The
// deferred call also runs when the task panics past the owner or calls
// runtime.Goexit, which is then the outcome; in a timed pool the hooks run
// inside it (see finishRun), with the run's wait counted from readyAt. It
// sets *posted before it posts the job, so that a TaskFinished hook that
// then ends the goroutine leaves the worker knowing the pool keeps it.
func (j *job) run(readyAt int64, e *ending) (panicked bool) {
	p := j.pool
	err := ErrGoexit
	defer func() {
		if e.started && err != ErrGoexit {
			if err = j.retryLater(err, e); e.posted {
				return
			}
		}
		j.finish(err, e)
	}()
	ctx := j.owner.runContext()
	if p.cfg.timed {
		r := p.obs.startRun(readyAt, j.info(nil), ctx)
		defer p.obs.finishRun(&r, &err)
		ctx = p.obs.taskStarted(&r)
	}
	e.started = true
	panicked, err = j.owner.call(ctx)
	return panicked
}
