package workerpool

import "sync/atomic"

// A job in its worker's hands: started unless it settled meanwhile, run
// between its hooks, finished (its owner told, its slots given back), or
// posted to dispatch for a retry.

// work runs on the worker that took the job, which became ready at readyAt
// (see work.readyAt): it starts the job and runs its task, or skips it if
// it was settled or must not start. It returns
// the count of p.counts the work goes to: completed, skipped, or
// posted for a retry (then the pool keeps its reference to the job); and,
// if completed, whether the run that ended the task for good panicked
// (see WorkerPool.returned), which earlier runs, retried, do not decide.
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

// start moves the job to started, and reports false if it was settled
// meanwhile. A started job leaves Waiting if it was queued, then gives back
// its room: the worker that took it does this, never dispatch, which must
// not touch a job once a worker has it (it may be finished and reused).
func (j *job) start() bool {
	switch {
	case j.state.CompareAndSwap(jobPending, jobStarted):
	case j.state.CompareAndSwap(jobQueued, jobStarted):
		j.pool.counts.waiting.Add(-1)
	default:
		return false
	}
	j.givePlace()
	if j.opts != nil && j.opts.attempt > 0 {
		j.pool.counts.reruns.Add(1)
	}
	return true
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

// finish moves the started job to finished, and leaves its owner the
// outcome of its last run in e, to learn once the worker is free (see
// ending): err, or errTaskStartedGoexit if its func was never called (its
// TaskStarted hook ended the goroutine), which a plain task with no one
// waiting for it takes to the dead-letter handler. A retry whose func was
// never called ran no more: its owner learns why joined with the last
// run's error, as for a retry that never runs again (see withLastRun).
func (j *job) finish(err error, e *ending) {
	j.state.CompareAndSwap(jobStarted, jobFinished) // only this worker moves a started job
	e.tell, e.ran, e.err = true, e.started, err
	if !e.started {
		e.err = errTaskStartedGoexit
		if last := j.lastErr(); last != nil {
			e.err = withLastRun(errTaskStartedGoexit, last)
		}
		j.tellNotRun(errTaskStartedGoexit)
	}
}

// postForRetry moves a started job whose run is to be retried to
// scheduled and counts it in Status.Scheduled, on the worker that ran it;
// then it posts the job to dispatch (see signals.retries). A Cancel, or the end of
// the group's context, that came while the policy decided found the job
// started and only canceled its context: it ends the retries now.
func (j *job) postForRetry() {
	p := j.pool
	p.counts.scheduled.Add(1)
	j.state.CompareAndSwap(jobStarted, jobScheduled) // only this worker moves a started job
	if j.owner.ctxDone() {
		j.cancelRetry()
	}
	p.sig.retries.post(j)
}
