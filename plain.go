package workerpool

import "context"

// A plainJob carries a plain task given a priority, a weight, a key or a
// label (DoContext with such a TaskOption, a delay or not), and every
// DoContext task in a pool with TaskStarted or TaskFinished hooks, which
// see its ctx's values: a job with a func() and its options, owned by no
// one but the pool. (A plain task given only a delay needs no carrier: see
// dispatcher.acceptDelayed.) The pool reuses it (see
// WorkerPool.recycled.plainJobs) once it lets go of it (see job.letGo), so a plain
// task with options costs no allocation once the pool is warm. A plain
// task that never runs goes to the dead-letter handler, as Submit's does
// (see tellLost).
type plainJob struct {
	job  job
	fn   func()
	opts jobOptions      // the job's options, pooled with it
	ctx  context.Context // DoContext's ctx without its cancellation, in a timed pool; else nil
}

// parseDoOptions reads the options of a func() task given to DoContext, and
// panics if they hold a Retry, which a func() cannot use.
func (p *WorkerPool) parseDoOptions(opts []TaskOption) taskOptions {
	o := p.parseOptions(opts)
	if o.retry != nil {
		panic("workerpool: Retry given to DoContext: a func() fails only by panicking; use Go with a func that returns its error")
	}
	return o
}

// doWithOptions is DoContext for a task given options o: a plain
// task when the options change nothing (a delay alone: in the timer heap
// as it is), else a plainJob, which a DoContext task in a timed pool
// always rides, so that the hooks see its ctx's values. It returns why the
// pool refused the task, uncounted; under Block it waits for room if wait
// is set, until ctx is done.
func (p *WorkerPool) doWithOptions(task func(), o taskOptions, ctx context.Context, wait bool) error {
	if task == nil {
		return nil
	}
	keepCtx := ctx != nil && p.cfg.timed
	if !keepCtx {
		switch {
		case o.isDefault():
			return p.doPlain(task, wait, ctx)
		case o.priority == 0 && o.weight <= 1 && o.label == "" && o.key == "":
			// A delay alone: no carrier (see dispatcher.acceptDelayed).
			return p.sendOne(message{task: task, due: o.due}, wait && p.cfg.overflow == Block, ctx)
		}
	}
	pj, _ := p.recycled.plainJobs.Get().(*plainJob)
	if pj == nil {
		pj = new(plainJob)
		pj.job.init(p, pj)
	}
	pj.fn = task
	if keepCtx {
		pj.ctx = context.WithoutCancel(ctx)
	}
	pj.job.reset(o, &pj.opts)
	err := p.sendJob(&pj.job, wait, ctx)
	if err != nil {
		pj.recycle() // the pool never had it
	}
	return err
}

// call runs the task as a plain one: a panic crashes the program, or goes
// to the Panic hook.
func (pj *plainJob) call(context.Context) (panicked bool, err error) {
	return pj.job.pool.obs.callPlain(pj.fn, &pj.job)
}

// runContext is context.Background(), or the values of DoContext's ctx
// (kept only in a timed pool, where the hooks see it).
func (pj *plainJob) runContext() context.Context {
	if pj.ctx != nil {
		return pj.ctx
	}
	return context.Background()
}

// canceled is always nil: a plain task has no context.
func (pj *plainJob) canceled() error { return nil }

// ctxDone is always false: a plain task has no context.
func (pj *plainJob) ctxDone() bool { return false }

// conclude does nothing: no one waits for a plain task, and one that never
// ran went to the dead-letter handler as it settled (see tellLost).
func (pj *plainJob) conclude(error, bool) {}

// released puts the carrier back for reuse: the pool is done with it.
func (pj *plainJob) released() { pj.recycle() }

// recycle readies pj for reuse and returns it to the pool's cache; no one
// refers to it any more.
func (pj *plainJob) recycle() {
	p := pj.job.pool
	pj.fn, pj.ctx = nil, nil
	pj.opts = jobOptions{}
	pj.job.opts = nil
	if poisonReleased != nil {
		poisonReleased(pj)
		return
	}
	p.recycled.plainJobs.Put(pj)
}

// poisonReleased, set by a test, takes every released carrier instead of
// the cache, to make any later use of it fail.
var poisonReleased func(*plainJob)
