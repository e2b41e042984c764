package workerpool

import (
	"sync"
	"sync/atomic"
)

// signals are what the pool's other goroutines tell the dispatcher without
// waiting for it: wake-ups, the jobs settled meanwhile, and the mailboxes
// of what comes back from workers (retries, keys' releases). Workers,
// settlers, submitters and stop calls write them; dispatch reads them on
// its own schedule, after each wake-up or step. It is the one type through
// which a goroutine that is not the dispatcher reaches the dispatcher's
// state, and it holds none of it.
type signals struct {
	// wake tells a waiting dispatcher that something it may be waiting
	// for has changed: a queued job was settled, abandoning began, a
	// worker returned work while wakeOnReturn is set (a Pause waits for
	// running tasks), a keyed job was let go while wakeOnRelease is set
	// (see flows.watch), or, while stopping, a send was refused or the
	// last settle in progress ended. Anyone signals it without blocking
	// (see wakeDispatch). Buffered (1), never closed; dispatch re-checks
	// what it waits for after every wake-up, so one pending token serves
	// any number of signals.
	wake          chan struct{}
	wakeOnReturn  atomic.Bool
	wakeOnRelease atomic.Bool

	stopOnce     sync.Once
	stopping     chan struct{} // closed by the first Stop, StopWait or Shutdown: sends are rejected from then on
	stopBegun    atomic.Bool   // set just before stopping is closed; what send and Stopped check (a load is cheaper than a receive)
	abandonBegun atomic.Bool   // set by Stop, or by a Shutdown that gives up: queued tasks are abandoned, not run
	stopped      chan struct{} // closed by dispatch as its last act: every accepted task is settled, every worker took its zero work, every count is final

	_ cacheLinePad

	// retries carries the jobs that wait for their next run from the
	// workers that ran them to dispatch (see retryInbox); retriesBack
	// counts the jobs with a retry policy that their workers are done
	// with: a worker posts a job first if it runs again, then counts it
	// back, then wakes dispatch.
	retries     mailbox[*job]
	retriesBack atomic.Uint64
	// releases carries what keyed jobs give back as the pool lets go of
	// them (see job.letGo): their flow, and the slots they held. Workers
	// post as they finish a keyed job for good; dispatch posts too, as it
	// drops one, so that every release takes one path.
	releases mailbox[flowRelease]

	// settling counts the job settles in progress (the move to canceled
	// or abandoned and its counting), and the Group.Go and SetLimit calls
	// in progress, whose tasks may be dropped (see Group.Go and SetLimit);
	// a stop waits for it to reach zero before it returns, so that no
	// count is still on its way.
	settling atomic.Int64
	// heavyDone sums weight−1 over the jobs of Weight above 1 that their
	// workers are done with, added before they count the work returned
	// (see slots.free).
	heavyDone atomic.Uint64
	// queuedSettles counts the jobs settled while queued: dispatch counts
	// the settled entries of its queue again when it has changed (see
	// waitQueue.inQueue).
	queuedSettles atomic.Uint64
	// keySettles counts the keyed jobs settled while queued, or while they
	// held their keys' slots, under a key limit (WithKeys); holderSettles
	// those that held their keys' slots (see job.countKeySettle).
	keySettles    atomic.Uint64
	holderSettles atomic.Uint64
}

func newSignals() signals {
	return signals{wake: make(chan struct{}, 1), stopping: make(chan struct{}), stopped: make(chan struct{})}
}

// wakeDispatch signals wake without blocking.
func (s *signals) wakeDispatch() {
	select {
	case s.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// beginSettle and endSettle bracket one job settle; the last settle out
// while stopping wakes dispatch, which may be waiting in awaitSettles.
func (s *signals) beginSettle() { s.settling.Add(1) }

func (s *signals) endSettle() {
	if s.settling.Add(-1) == 0 && s.stopBegun.Load() {
		s.wakeDispatch()
	}
}

// A mailbox carries values from any goroutine to the dispatcher, oldest
// first. Posting takes its lock; the dispatcher polls pending, which reads
// one atomic, and takes what was posted in one swap of two buffers, so
// that posting allocates nothing once both have grown.
type mailbox[T any] struct {
	n     atomic.Int64 // len(posts), readable without mu
	mu    sync.Mutex
	posts []T
	spare []T // the buffer take handed out last time; dispatch owns it until the next take, and empties it when done (see done)
}

func (m *mailbox[T]) post(v T) {
	m.mu.Lock()
	m.posts = append(m.posts, v)
	m.n.Add(1)
	m.mu.Unlock()
}

// pending reports whether anything was posted since the last take.
func (m *mailbox[T]) pending() bool { return m.n.Load() > 0 }

// take returns what was posted, oldest first, and empties the mailbox. The
// slice is the caller's until it calls done.
func (m *mailbox[T]) take() []T {
	m.mu.Lock()
	defer m.mu.Unlock()
	posts := m.posts
	m.posts, m.spare = m.spare[:0], posts
	m.n.Store(0)
	return posts
}

// done drops the references in the slice the last take returned, once the
// caller has handled them: the mailbox keeps the buffer for the posts to
// come, but nothing it carried, so that a task taken for a retry, once it
// has finished, is not kept reachable until the next take.
func (m *mailbox[T]) done() { clear(m.spare) }

// beginSend counts a send in begun and reports whether it may go on: not
// once stopping has begun, when it takes the send out again. A send it
// lets go on must complete: dispatch waits for it.
func (s *signals) beginSend(begun *atomic.Int64) bool {
	begun.Add(1)
	if s.stopBegun.Load() {
		s.sendRefused(begun)
		return false
	}
	return true
}

// sendRefused takes a refused send out of begun, the count it was in, and
// wakes dispatch, which may be waiting for it in admitStragglers.
func (s *signals) sendRefused(begun *atomic.Int64) {
	begun.Add(-1)
	s.wakeDispatch()
}

// abandon makes dispatch abandon the queue rather than run it: from
// now on no queued task is handed to a worker, and a job a worker has
// taken but not started is abandoned.
func (s *signals) abandon() {
	if !s.abandonBegun.Swap(true) {
		s.wakeDispatch()
	}
}
