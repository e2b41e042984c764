package workerpool

import (
	"sync"
	"sync/atomic"
)

// A setting is a number that callers change and dispatch reads: the pool's
// size and its floor of workers. Each write makes a new cell, so a caller
// whose change the pool refused takes back its own write only, never one
// that came after it, whatever its value.
type setting struct {
	cur atomic.Pointer[int64] // written by New, by callers through change, and by dispatch at size boundaries
}

// Load returns the value, 0 before the first write (a WorkerPool not made
// by New: its Size is 0, as it was when the value was a plain integer).
func (s *setting) Load() int64 {
	if v := s.cur.Load(); v != nil {
		return *v
	}
	return 0
}

func (s *setting) Store(v int64) { s.cur.Store(&v) }

// Swap writes v and returns the value it replaced.
func (s *setting) Swap(v int64) int64 { return *s.cur.Swap(&v) }

// sizeSettings are the pool's size settings: max, the most workers (New's
// maxWorkers, then the last Resize's or size window's), and floor, the
// workers kept however idle before its cap at max (WithMinWorkers's n,
// then a size window's). Dispatch re-reads both on a resize. mu
// serializes the callers of change, so that of two calls the stop
// refused, the second restores what was there before the first.
type sizeSettings struct {
	max, floor setting
	mu         sync.Mutex
	// Under WithAdaptiveSize (lowest > 0, its min, set by New): max is the
	// ceiling, chosen the size the sizer chose (see size), and reason why
	// (Status.SizeReason). Written by the sizing goroutine (adaptive.go).
	lowest int64
	chosen setting
	reason atomic.Pointer[string]
}

// size is the pool's size: max, or under WithAdaptiveSize the size
// chosen, kept within [min(lowest, max), max], so that a Resize or a size
// window that lowers the ceiling takes effect at once.
func (s *sizeSettings) size() int64 { return s.read().size(s.lowest) }

// sizesRead are the size settings as one read found them: what dispatch
// runs on from its last resize (see dispatcher.ranOn).
type sizesRead struct{ max, floor, chosen int64 }

// read reads the settings.
func (s *sizeSettings) read() sizesRead {
	return sizesRead{max: s.max.Load(), floor: s.floor.Load(), chosen: s.chosen.Load()}
}

// size is the pool's size by these settings (see sizeSettings.size).
func (r sizesRead) size(lowest int64) int64 {
	if lowest == 0 {
		return r.max
	}
	return min(max(r.chosen, min(lowest, r.max)), r.max)
}

// keep writes back r, what dispatch read at its last resize, in cells of
// its own, once no change can reach dispatch any more (the stop has taken
// every message sent before it): so the settings say what the stop runs
// on. A change the stop refused takes back only its own write (see
// change), and dispatch may have read that write already, resizing for
// another message or a boundary between the change's swap and its refusal;
// its take-back then finds these cells, and leaves them.
func (s *sizeSettings) keep(r sizesRead) {
	s.max.Store(r.max)
	s.floor.Store(r.floor)
	if s.lowest > 0 {
		s.chosen.Store(r.chosen)
	}
}

// change writes v to s, one of these settings, and tells dispatch to
// re-read them with tell (which sends it the resize message). It returns
// the value it replaced, or false if tell failed because stopping had
// begun: then the pool refused the change, and s holds what it held
// before, unless a size boundary wrote to it meanwhile, or the stop wrote
// back what it runs on (see keep). It blocks until dispatch takes the
// message, as Resize does.
func (ss *sizeSettings) change(s *setting, v int64, tell func() error) (from int64, ok bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	to := &v
	old := s.cur.Swap(to)
	if tell() != nil {
		s.cur.CompareAndSwap(to, old)
		return 0, false
	}
	return *old, true
}

// tellResize tells dispatch to re-read the size settings, as Resize does:
// ErrStopped once stopping has begun.
func (p *WorkerPool) tellResize() error { return sendControl(p, message{req: &resizeTick}) }
