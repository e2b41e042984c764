package workerpool

import (
	"context"
	"iter"
	"math"
	"sync"
)

// Map runs fn on each item of in as a task of p, opts scheduling each,
// and yields each item's result and error in the order of in: an item's
// error comes in its place, and the loop goes on. It ranges over in on the
// caller's goroutine, taking an item only while fewer than a window of
// items are in flight (TaskOption.Window; by default twice p.Size()), and
// blocks there for room under Block and for the next result; fn runs on
// workers only. A break cancels the items in flight and returns once they
// ended; ctx ending does the same, then yields ctx's error once; a stopping
// pool ends the loop, with ErrStopped for the items that did not run. The
// package documentation (Mapping a sequence) gives the rules. Map panics if
// ctx, p, in or fn is nil.
func Map[T, R any](ctx context.Context, p *WorkerPool, in iter.Seq[T], fn func(ctx context.Context, item T) (R, error), opts ...TaskOption) iter.Seq2[R, error] {
	return mapOver(ctx, p, in, fn, opts, true, "Map")
}

// MapUnordered is Map, but it yields the items' results in the order
// their tasks end, each as soon as the loop is free to: at once, unless
// it waits for the input's next item or for room under Block (it yields
// between items; see Map). The window bounds the items in flight as Map's
// does, but a slow item holds only its own place in it.
func MapUnordered[T, R any](ctx context.Context, p *WorkerPool, in iter.Seq[T], fn func(ctx context.Context, item T) (R, error), opts ...TaskOption) iter.Seq2[R, error] {
	return mapOver(ctx, p, in, fn, opts, false, "MapUnordered")
}

// mapOver checks Map's arguments and returns the sequence that streams
// in through p.
func mapOver[T, R any](ctx context.Context, p *WorkerPool, in iter.Seq[T], fn func(context.Context, T) (R, error), opts []TaskOption, ordered bool, name string) iter.Seq2[R, error] {
	if p == nil {
		panic("workerpool: " + name + " called with a nil pool")
	}
	if in == nil {
		panic("workerpool: " + name + " called with a nil input")
	}
	mustHave(ctx, fn != nil, name)
	return func(yield func(R, error) bool) {
		s := &stream[T, R]{ctx: ctx, ctxDone: ctx.Done(), p: p, fn: fn, opts: opts, ordered: ordered, yield: yield, window: windowOf(p, opts), ended: make(chan struct{}, 1)}
		s.run(in)
	}
}

// windowOf is the window of a Map loop starting now: the last
// TaskOption.Window set, or twice the pool's size; negative means no limit.
func windowOf(p *WorkerPool, opts []TaskOption) int {
	w := 0
	for i := range opts {
		if opts[i].Window != 0 {
			w = opts[i].Window
		}
	}
	if w == 0 {
		w = 2 * min(p.Size(), math.MaxInt/2) // a size past that means no limit anyway
	}
	return w
}

// A stream is one loop over a Map's sequence: the items it took from the
// input and has not yielded yet, and their outcomes as tasks end.
type stream[T, R any] struct {
	ctx     context.Context
	ctxDone <-chan struct{} // ctx.Done()
	p       *WorkerPool
	fn      func(context.Context, T) (R, error)
	opts    []TaskOption
	ordered bool
	window  int // the most items in flight; negative: no limit
	yield   func(R, error) bool

	// Owned by the loop's goroutine. The items in flight are linked from
	// first to last in the order they were taken; running counts those
	// whose outcome the loop has not taken from ended yet.
	first, last *mapItem[T, R]
	inFlight    int
	running     int
	broke       bool // yield returned false: yield no more
	cut         bool // ctx ended the stream: yield its error once no task is left

	// The items whose task ended, linked by nextEnded in the order they
	// ended, for the loop to take: written by whoever concludes a task
	// (a worker, dispatch, the loop itself), under mu. ended holds a
	// token once one was added since the loop last looked.
	mu                    sync.Mutex
	endedFirst, endedLast *mapItem[T, R]
	ended                 chan struct{}
}

// A mapItem is one item of a stream as a task: its Task carries it
// through the pool, and its outcome comes back to the stream.
type mapItem[T, R any] struct {
	Task
	stream     *stream[T, R]
	in         T
	out        R
	prev, next *mapItem[T, R] // in flight, in the order taken (the loop's)
	nextEnded  *mapItem[T, R] // ended, in the order they ended (under stream.mu, then the loop's)
	done       bool           // its outcome reached the loop (the loop's)
}

// run streams in through the pool until in ends, the loop body breaks, ctx
// is done or the pool stops. Whatever ends it, a panic included, it
// returns only once no task of the stream is left on the pool.
func (s *stream[T, R]) run(in iter.Seq[T]) {
	var zero R
	if err := s.ctx.Err(); err != nil {
		s.yield(zero, err)
		return
	}
	defer s.cancelAll()
	s.pull(in)
	for s.inFlight > 0 && !s.broke && !s.cut && s.deliver(true) {
	}
	if s.cut {
		s.cancelAll() // first, so that none of the stream's tasks is left when the loop body sees the error
		s.yield(zero, s.ctx.Err())
	}
}

// pull takes the items of in, each once the window has room for it,
// yielding what it can as it goes, until in ends or the stream stops
// taking: the loop body broke, ctx is done, or the pool is stopping.
func (s *stream[T, R]) pull(in iter.Seq[T]) {
	for item := range in {
		if isClosed(s.ctxDone) {
			s.cut = true // the item is dropped: it never became a task
			return
		}
		s.take(item)
		if !s.deliver(false) {
			return
		}
		for s.window >= 0 && s.inFlight >= s.window {
			if !s.deliver(true) {
				return
			}
		}
		if s.p.sig.stopBegun.Load() || s.p.sig.abandonBegun.Load() {
			return // what it would take now, the pool would refuse or abandon
		}
	}
}

// take queues item as a task of the pool, last in flight.
func (s *stream[T, R]) take(item T) {
	o := s.p.parseOptions(s.opts)
	var m *mapItem[T, R]
	var store *jobOptions
	if o.isDefault() {
		m = new(mapItem[T, R])
	} else {
		mo := new(mapItemWithOptions[T, R]) // one allocation for the item and its options
		m, store = &mo.mapItem, &mo.opts
	}
	m.stream, m.in, m.prev = s, item, s.last
	if s.last != nil {
		s.last.next = m
	} else {
		s.first = m
	}
	s.last = m
	s.inFlight++
	s.running++
	m.Task.init(s.p, s.ctx, m)
	m.Task.job.apply(o, store)
	m.Task.submit()
}

// mapItemWithOptions is a mapItem and the options its job keeps, made in
// one allocation (see take), as taskWithOptions is for Go.
type mapItemWithOptions[T, R any] struct {
	mapItem[T, R]
	opts jobOptions
}

// deliver yields the outcomes the stream can yield now: for Map, those of
// the first items in flight that ended; for MapUnordered, those of the
// items that ended since it last looked, in the order they ended. With
// wait, it first waits until it can yield one. It reports whether the
// stream goes on: false once the loop body broke, or ctx is done (then
// cut is set).
func (s *stream[T, R]) deliver(wait bool) bool {
	for {
		yielded, ok := s.yieldEnded()
		if !ok || yielded || !wait || s.running == 0 {
			return ok
		}
		select {
		case <-s.ended:
		case <-s.ctxDone:
			s.cut = true
			return false
		}
	}
}

// yieldEnded takes the items whose task ended since the loop last looked,
// and yields what it can (see deliver).
func (s *stream[T, R]) yieldEnded() (yielded, ok bool) {
	ended := s.takeEnded()
	if s.ordered {
		for s.first != nil && s.first.done {
			if !s.yieldItem(s.first) {
				return yielded, false
			}
			yielded = true
		}
		return yielded, true
	}
	for m := ended; m != nil; {
		next := m.nextEnded
		m.nextEnded = nil
		if !s.yieldItem(m) {
			return yielded, false
		}
		yielded = true
		m = next
	}
	return yielded, true
}

// yieldItem yields m's outcome and forgets m, unless ctx is done (then it
// sets cut). It reports whether the stream goes on.
func (s *stream[T, R]) yieldItem(m *mapItem[T, R]) bool {
	if isClosed(s.ctxDone) {
		s.cut = true
		return false
	}
	s.unlink(m)
	if !s.yield(m.out, m.Task.err) {
		s.broke = true
		return false
	}
	return true
}

// takeEnded takes the items whose task ended since the loop last looked,
// marks them done and returns them, linked by nextEnded in the order they
// ended.
func (s *stream[T, R]) takeEnded() *mapItem[T, R] {
	s.mu.Lock()
	ended := s.endedFirst
	s.endedFirst, s.endedLast = nil, nil
	s.mu.Unlock()
	for m := ended; m != nil; m = m.nextEnded {
		m.done = true
		s.running--
	}
	return ended
}

// unlink takes m out of the items in flight.
func (s *stream[T, R]) unlink(m *mapItem[T, R]) {
	if m.prev != nil {
		m.prev.next = m.next
	} else {
		s.first = m.next
	}
	if m.next != nil {
		m.next.prev = m.prev
	} else {
		s.last = m.prev
	}
	m.prev, m.next = nil, nil
	s.inFlight--
}

// cancelAll cancels the items in flight that have not ended (their ctx,
// and the queued ones at once) and waits until every one has.
func (s *stream[T, R]) cancelAll() {
	s.takeEnded()
	if s.running == 0 {
		return
	}
	for m := s.first; m != nil; m = m.next {
		if !m.done {
			m.Task.cancel()
		}
	}
	for s.running > 0 {
		<-s.ended
		s.takeEnded()
	}
}

// call runs fn on the item, on the worker that started the task.
func (m *mapItem[T, R]) call(ctx context.Context) (panicked bool, err error) {
	return m.Task.job.callRecovering(ctx, m.run)
}

func (m *mapItem[T, R]) run(ctx context.Context) error {
	var zero R
	m.out = zero // an earlier run's value is not this run's
	v, err := m.stream.fn(ctx, m.in)
	m.out = v
	return err
}

// conclude gives the item its outcome and hands it to its stream. When fn
// was not called for it, the value an earlier run left is not the
// outcome's.
func (m *mapItem[T, R]) conclude(err error, ran bool) {
	if !ran {
		var zero R
		m.out = zero
	}
	m.Task.conclude(err, ran)
	s := m.stream
	s.mu.Lock()
	if s.endedLast != nil {
		s.endedLast.nextEnded = m
	} else {
		s.endedFirst = m
	}
	s.endedLast = m
	s.mu.Unlock()
	select {
	case s.ended <- struct{}{}:
	default: // a token is there already: the loop looks at every item ended
	}
}
