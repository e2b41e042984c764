package workerpoolprom

import (
	"context"
	"sync"
	"time"
)

// A run is one run of a task in flight, from TaskStarted to TaskFinished:
// its start, its series, and its place among its pool's runs in flight.
// It is also the ctx that TaskStarted returns, so that the task runs with
// it and TaskFinished gets it back: the ctx TaskStarted was given, plus the
// run as the value of runKey{h}. Being the ctx itself saves the allocation
// of a context.WithValue.
//
// The run of a task that has a ctx (Go, GoResult, Group.Go, DoContext: the
// ctx TaskStarted gets is not context.Background()) is allocated and never
// reused: the task may keep its ctx after it returns (a goroutine it
// started, say), and a reused run would hand that goroutine another
// task's ctx. The run of a plain task (Submit, Do, DoWait: TaskStarted
// gets context.Background()) is reused from Histograms.plainRuns: the
// pool gives that ctx to TaskFinished only, never to the task. Reuse
// writes only s, start and index; Value reads only Context and h, which a
// reused run keeps, so that a hook of the user's that reads the ctx after
// the histograms' TaskFinished returned still reads it safely.
type run struct {
	context.Context             // the ctx TaskStarted was given: context.Background() for a run of h.plainRuns, and only then
	h               *Histograms // whose run it is: the key that finds it
	s               *series     // its pool's and task label's series
	start           int64       // when it started, as h.now()
	index           int         // its place in s.runs.runs while in flight, -1 after; guarded by s.runs.mu
}

// runKey{h} is the context key under which a ctx carries a run of h.
type runKey struct{ h *Histograms }

// reused reports whether r is a plain task's run, from h.plainRuns.
func (r *run) reused() bool { return r.Context == context.Background() }

// Value returns r for runKey{r.h}, and otherwise asks the ctx r wraps.
func (r *run) Value(key any) any {
	if key == (runKey{r.h}) {
		return r
	}
	return r.Context.Value(key)
}

// String names r as the context package names its own contexts.
func (r *run) String() string {
	return "workerpoolprom.run"
}

// inflight holds the runs in flight of one pool: TaskStarted adds each
// run, TaskFinished removes it, and Collect reads the set to compute the
// stuck-work gauges. Its lock is held for an append or a swap-remove only,
// and, at a scrape, for one pass over the runs. A run is removed by the
// TaskFinished of the same run, which the pool calls after every run that
// started (returned, panicked or ended by runtime.Goexit) before Stop,
// StopWait or Shutdown returns: a pool that stops leaves no run behind.
type inflight struct {
	pool string // the pool's name, as exported

	mu   sync.Mutex // protects runs and each run's index
	runs []*run     // the runs in flight, in no order
}

// add records r as in flight.
func (f *inflight) add(r *run) {
	f.mu.Lock()
	r.index = len(f.runs)
	f.runs = append(f.runs, r)
	f.mu.Unlock()
}

// remove records that r has ended, and reports whether r was in flight:
// its place goes to the last run. A run removed already is left alone, so
// that a TaskFinished that finds an enclosing task's run (see
// Histograms.Hooks) cannot remove it twice.
func (f *inflight) remove(r *run) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := r.index
	if i < 0 || i >= len(f.runs) || f.runs[i] != r {
		return false
	}
	last := len(f.runs) - 1
	f.runs[i] = f.runs[last]
	f.runs[i].index = i
	f.runs[last] = nil // no reference to an ended run
	f.runs = f.runs[:last]
	r.index = -1
	return true
}

// stuck returns, at now, the sum over the runs in flight of the time since
// each started, and the longest of those times; 0 and 0 with none.
func (f *inflight) stuck(now int64) (unfinished, longest time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.runs {
		d := time.Duration(max(now-r.start, 0))
		unfinished += d
		longest = max(longest, d)
	}
	return unfinished, longest
}

// count returns the number of runs in flight.
func (f *inflight) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.runs)
}
