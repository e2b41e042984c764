package workerpoolotel

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The metric attributes, as workerpoolprom names its labels.
const (
	poolKey    = "pool"    // the pool's name, given to NewHooks and RegisterStatus
	taskKey    = "task"    // the task's label, or noLabel, or otherLabel
	outcomeKey = "outcome" // how a failed run failed: "error" or "panic"
	reasonKey  = "reason"  // why a pool made with WithAdaptiveSize has its size: Status.SizeReason
)

// The task attribute's values that are no task's own label.
const (
	noLabel    = "none"  // a task without a label
	otherLabel = "other" // a label past the cap (see WithMaxLabels)
)

// A seriesKey is what a hook looks its series up by.
type seriesKey struct{ pool, label string }

// A series is what the hooks record the runs of one kind of task in one
// pool with: the attribute sets of its measurements, made once, as the
// options the SDK takes, so that recording allocates nothing. It never
// changes once made.
type series struct {
	key      seriesKey // what the series is looked up by; zero for a pool's "other"
	pool     *poolRuns
	record   []metric.RecordOption // pool, task: the wait and run histograms
	add      []metric.AddOption    // pool, task: the reruns counter
	errored  []metric.AddOption    // pool, task, outcome="error": the failures counter
	panicked []metric.AddOption    // pool, task, outcome="panic": the failures counter
}

func newSeries(p *poolRuns, key seriesKey, task string) *series {
	pool, label := attribute.String(poolKey, p.name), attribute.String(taskKey, task)
	set := metric.WithAttributeSet(attribute.NewSet(pool, label))
	return &series{
		key:      key,
		pool:     p,
		record:   []metric.RecordOption{set},
		add:      []metric.AddOption{set},
		errored:  []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(pool, label, attribute.String(outcomeKey, "error")))},
		panicked: []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(pool, label, attribute.String(outcomeKey, "panic")))},
	}
}

// seriesSet finds the series of a task, making it the first time, and
// holds the pools the hooks have seen (the one NewHooks was given). Looking up a known series takes no
// lock: known is a map that is never changed, only replaced by a copy
// with one more series, under mu; and recent, in front of it, finds the
// series of the same strings as a recent lookup's without hashing them.
type seriesSet struct {
	recent [recentSize]atomic.Pointer[series]    // series found lately, at recentIndex of their key's strings
	known  atomic.Pointer[map[seriesKey]*series] // the series of every label that keeps its value; nil: none yet

	mu        sync.Mutex           // protects what follows, and the replacing of known
	made      func(*series)        // called, under mu, with each series as it is made; set before the first lookup
	maxLabels int                  // how many labels keep their value (see WithMaxLabels)
	labels    map[string]bool      // the labels that keep their value: at most maxLabels
	pools     map[string]*poolRuns // every pool seen, by name
}

func newSeriesSet(maxLabels int) *seriesSet {
	return &seriesSet{maxLabels: maxLabels, labels: make(map[string]bool), pools: make(map[string]*poolRuns)}
}

// recentBits is the log2 of recentSize, the number of slots in
// seriesSet.recent.
const (
	recentBits = 7
	recentSize = 1 << recentBits
)

// recentIndex is the slot of seriesSet.recent for pool and label: a hash
// of where their bytes are. A pool passes its name, and a task its
// Label's, as the same string at every run, so that the same series lands
// in the same slot without hashing the bytes; strings of equal bytes
// elsewhere only miss the slot, as they are compared in full.
func recentIndex(pool, label string) uint64 {
	h := uint64(uintptr(unsafe.Pointer(unsafe.StringData(label))))*31 + uint64(uintptr(unsafe.Pointer(unsafe.StringData(pool))))
	return (h * 0x9e3779b97f4a7c15) >> (64 - recentBits) // Fibonacci hashing
}

// of is the series of the tasks labelled label in the pool named pool.
// It takes a lock only the first time it sees them, and every time for a
// label past the cap.
func (s *seriesSet) of(pool, label string) *series {
	slot := &s.recent[recentIndex(pool, label)]
	if ser := slot.Load(); ser != nil && ser.key.label == label && ser.key.pool == pool {
		return ser
	}
	if m := s.known.Load(); m != nil {
		if ser, ok := (*m)[seriesKey{pool, label}]; ok {
			slot.Store(ser)
			return ser
		}
	}
	return s.create(pool, label)
}

// create is of's slow path: it makes the series of pool and label, or
// finds the one another hook made meanwhile, or the pool's "other" for a
// label past the cap.
func (s *seriesSet) create(pool, label string) *series {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := seriesKey{pool, label}
	var known map[seriesKey]*series
	if m := s.known.Load(); m != nil {
		known = *m
	}
	if ser, ok := known[key]; ok {
		return ser
	}
	p := s.pools[pool]
	if p == nil {
		p = newPoolRuns(pool)
		s.pools[pool] = p
	}
	task := label
	switch {
	case label == "":
		task = noLabel
	case s.labels[label]:
	case len(s.labels) < s.maxLabels:
		s.labels[label] = true
	default:
		if p.other == nil {
			p.other = newSeries(p, seriesKey{}, otherLabel)
			s.tellMade(p.other)
		}
		return p.other
	}
	ser := newSeries(p, key, task)
	s.tellMade(ser)
	next := maps.Clone(known)
	if next == nil {
		next = make(map[seriesKey]*series)
	}
	next[key] = ser
	s.known.Store(&next)
	return ser
}

// tellMade calls made, if set, with ser, just made. s.mu is held.
func (s *seriesSet) tellMade(ser *series) {
	if s.made != nil {
		s.made(ser)
	}
}

// observeRunning reports, for each pool seen, the work its runs have done
// so far and the time of the longest, at now (on the hooks' clock), from
// the runs between TaskStarted and TaskFinished.
func (s *seriesSet) observeRunning(o metric.Observer, unfinished, longest metric.Float64Observable, now time.Duration) {
	s.mu.Lock()
	pools := make([]*poolRuns, 0, len(s.pools))
	for _, p := range s.pools {
		pools = append(pools, p)
	}
	s.mu.Unlock()
	for _, p := range pools {
		sum, most := p.running(now)
		o.ObserveFloat64(unfinished, sum.Seconds(), p.observe)
		o.ObserveFloat64(longest, most.Seconds(), p.observe)
	}
}

// poolRuns holds the runs of one pool under way: started and not
// finished, in a list linked through the runs, for the stuck-work gauges.
type poolRuns struct {
	name    string
	observe metric.ObserveOption // pool=name
	other   *series              // the series of labels past the cap; made, under seriesSet.mu, at the first

	mu    sync.Mutex // protects the list: runs.prev and runs.next of every run in it
	first *run       // the list's first run; nil when none is under way
}

func newPoolRuns(name string) *poolRuns {
	return &poolRuns{name: name, observe: metric.WithAttributeSet(attribute.NewSet(attribute.String(poolKey, name)))}
}

// add puts r, which has started, in the list.
func (p *poolRuns) add(r *run) {
	p.mu.Lock()
	r.next = p.first
	if p.first != nil {
		p.first.prev = r
	}
	p.first = r
	p.mu.Unlock()
}

// remove takes r, which add put in the list, out of it, and reports
// whether it was there: a second remove of one run changes nothing.
func (p *poolRuns) remove(r *run) bool {
	p.mu.Lock()
	if r.prev == nil && p.first != r {
		p.mu.Unlock()
		return false
	}
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		p.first = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	}
	r.prev, r.next = nil, nil // a ctx a task kept holds no other run
	p.mu.Unlock()
	return true
}

// running is the sum and the longest of the times the runs under way have
// run at now. It walks the list: a step per run under way, once per
// collection.
func (p *poolRuns) running(now time.Duration) (sum, most time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for r := p.first; r != nil; r = r.next {
		d := max(now-r.start, 0)
		sum += d
		most = max(most, d)
	}
	return sum, most
}
