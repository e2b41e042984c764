package workerpool

import (
	"cmp"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/gammazero/deque"
)

// flows is the waiting queue's part for keys (see TaskOption.Key): the state of each
// key with tasks in the pool, the queues of its waiting tasks, one per
// priority level, and, per level, the ring that serves them by deficit
// round robin. The waiting queue owns it (so the dispatcher does); no
// other goroutine touches it. Workers give back what a keyed task held
// through the pool's signals (signals.releases).
//
// Each level with keyed tasks queued has a ring of the queues that may
// start (their key is under its limit), and one stand-in for the level's
// tasks without a key (see keyedLevel.unkeyed), which takes its turn as a
// flow of weight 1 while such tasks wait. A queue passed over for its
// key's limit leaves the ring, its entries counted in blocked, and joins it
// again, at the back, when its key gives back slots.
type flows struct {
	sig     *signals             // the pool's: releases, key settles, and the wake-up on a release
	keys    *atomic.Int64        // the pool's counts.keys (Status.Keys)
	obs     *observer            // the pool's: a panic of the share func goes to the Panic hook
	limit   int                  // WithKeys's limit; 0: none
	weight  func(key string) int // WithKeys's share; nil: 1 each
	byKey   map[string]*flow     // the keys with tasks in the pool (see flow.members), or with settled ones still queued
	levels  []*keyedLevel        // the levels with keyed tasks queued, lowest first
	spare   spares               // emptied flows, queues and levels kept for reuse
	peak    int                  // the most keys byKey held since it was last made
	queued  int                  // entries in keyed queues, settled ones included
	scratch []*flowQueue         // queues' buffer
	// blocked counts the entries of the queues passed over for their
	// key's limit: they wait without holding a worker, so a task without
	// a key, or of another key, may start at once past them.
	blocked int
	// keySettlesSeen and holderSettlesSeen are sig.keySettles and
	// sig.holderSettles as dispatch last let go of such settled jobs (see
	// keySettled).
	keySettlesSeen, holderSettlesSeen uint64
	// paused holds the queues whose front a pause holds (see
	// waitQueue.mayLeave), taken out of their rings so that serving a
	// ring under a pause costs no more than without one; they join their
	// rings again as the pause ends.
	paused []*flowQueue
}

// A flow is one key's state while the key has tasks in the pool. Dispatch
// owns it, but for members.
type flow struct {
	key    string
	weight int          // its share, asked once as the key became active; at least 1
	held   int          // slots its tasks hold: running, or waiting for a retry (counted only under a limit)
	queues []*flowQueue // its queues with entries, one per level
	// members counts its tasks the pool holds and that may still run:
	// waiting, scheduled, running or posted for a retry. Dispatch adds
	// them as it accepts them; the party that settles one, or else
	// whoever lets go of it, takes it out (see job.leaveKey), before its
	// owner learns why it will never run. So Status.Keys, which counts
	// the flows whose members went from 0 to 1 less those that went back
	// to 0, no longer counts a key once its last task settled, though a
	// settled task's entry may wait in the queue until dispatch reaches
	// it. Dispatch forgets a flow once its members are 0 and none of its
	// queues is left: when the move to 0 reaches it through signals.releases, or
	// when its last queue empties (see forgetIfDone). A settled job that
	// dispatch still holds elsewhere (in its timer heap, say) or that a
	// worker took may then point to a forgotten flow: what it gives back
	// is told by gen, and ignored.
	members atomic.Int32
	// gen counts the times the flow was forgotten, so that a release
	// posted for it before (see flowRelease) finds it changed and is
	// ignored: the flow may serve another key by then.
	gen uint32
}

// A flowQueue holds one key's waiting tasks of one priority level, in the
// order they became ready, and its place in the level's ring.
type flowQueue struct {
	flow    *flow // nil for a level's stand-in for its tasks without a key
	level   *keyedLevel
	entries deque.Deque[flowEntry]
	deficit int  // the slots of starts it may still take this round
	turn    bool // it got its weight for its current visit
	blocked bool // passed over for its key's limit: out of the ring
	paused  int  // 1 + its index in flows.paused while a pause holds its front out of the ring; 0: not
	// prev and next link it into its level's ring, while it is in it.
	prev, next *flowQueue
}

// A flowEntry is a queued keyed task: its job, where it stands among all
// queued tasks (see jobOptions.seq and after), and when it became ready,
// if tasks carry that (see waitQueue.stamped).
type flowEntry struct {
	job        *job
	seq, after uint64
	readyAt    int64
}

// A keyedLevel is one priority level's ring. cur is the member served
// next (nil: the ring is empty).
type keyedLevel struct {
	priority int
	cur      *flowQueue
	members  int       // in the ring
	unkeyed  flowQueue // stands in the ring for the level's tasks without a key
	queued   int       // entries in the level's keyed queues
}

func (l *keyedLevel) rank() int { return l.priority }

// spares keeps a few emptied parts for reuse, so that keys that come and
// go cost no allocation once the pool is warm.
type spares struct {
	flows  []*flow
	queues []*flowQueue
	levels []*keyedLevel
}

// maxSpares bounds each list of spares.
const maxSpares = 64

// mapResetPeak is how many keys the key map must have held before it is
// made anew once it holds a quarter of them (see shrink): a Go map never
// shrinks, and a pool that saw a burst of keys must give that memory back
// once they are done, even while other keys stay active.
const mapResetPeak = 1024

func (f *flows) init(sig *signals, keys *atomic.Int64, obs *observer, limit int, weight func(key string) int) {
	f.sig, f.keys, f.obs, f.limit, f.weight = sig, keys, obs, limit, weight
}

// idleFlows is how many flows dispatch may leave in its map, their keys
// done, while it sleeps: their releases wait in signals.releases until it next
// steps. With more keys active than that, it has releases wake it (see
// wantsWake), so that an idle pool holds no more key state than that.
const idleFlows = maxSpares

// wantsWake reports whether dispatch must wake when a keyed job is let go:
// a key's limit holds back queued tasks, which its slots given back may
// let start; more keys are active than it may leave to its next step (see
// idleFlows); or the map grew enough to be made anew once empty (see
// mapResetPeak).
func (f *flows) wantsWake() bool {
	return f.blocked > 0 || len(f.byKey) > idleFlows || f.peak > mapResetPeak
}

// atRest reports whether dispatch need not wake for keys: it may sleep
// on taskQueue alone, leaving what was posted to its next step.
func (f *flows) atRest() bool {
	return !f.wantsWake()
}

// watch makes whoever lets go of a keyed job wake dispatch, if it wants
// that now (see wantsWake), or stops it; then it reports whether dispatch
// must not block: something was posted already. Dispatch calls it just
// before it blocks.
func (f *flows) watch() (posted bool) {
	on := f.wantsWake()
	if f.sig.wakeOnRelease.Load() != on {
		f.sig.wakeOnRelease.Store(on)
	}
	// Set wakeOnRelease before loading n, and posters add to n before
	// loading wakeOnRelease: one of the two always sees the other.
	return f.sig.releases.pending()
}

// joinIfKeyed joins j to its key's flow if it has a key (see join).
func (f *flows) joinIfKeyed(j *job) {
	if j.key() != "" {
		f.join(j)
	}
}

// join counts j, a keyed job the pool accepts, as a member of its key's
// flow, making the flow if the key has none, and gives j the flow. A key
// whose flow dispatch has not forgotten yet, but which had no member
// left, becomes active again: its weight is asked again, as for a new
// flow.
//
// j becomes a member before it is counted, so that the party that
// settles it from then on counts it out (see job.leaveKey); if it was
// settled on its way here, it is never counted. A settle that comes
// between the two counts it out before it is counted in: if the key had
// no other task, Status.Keys shows neither; if it had one, Keys may miss
// the key for that moment.
func (f *flows) join(j *job) {
	o := j.opts
	fl := f.byKey[o.key]
	fresh := fl == nil
	if fresh {
		fl = f.activate(o.key)
	}
	o.flow, o.flowGen = fl, fl.gen
	o.member.Store(true)
	if j.settled() && o.member.Swap(false) {
		f.forgetIfDone(fl)
		return
	}
	switch fl.members.Add(1) {
	case 1:
		f.keys.Add(1)
		if !fresh {
			fl.weight = f.weightOf(fl.key)
		}
	case 0: // its settler counted it out first
		f.forgetIfDone(fl)
	}
}

// activate makes the flow of a key that becomes active, asking its weight.
func (f *flows) activate(key string) *flow {
	if f.byKey == nil {
		f.byKey = make(map[string]*flow)
	}
	fl := f.spare.flow()
	fl.key, fl.weight = key, f.weightOf(key)
	f.byKey[key] = fl
	f.peak = max(f.peak, len(f.byKey))
	return fl
}

// weightOf asks WithKeys's share for key's weight: below 1, or if
// it panics (with a Panic hook; see Hooks), 1.
func (f *flows) weightOf(key string) (w int) {
	w = 1
	if f.weight == nil {
		return w
	}
	if f.obs.hooks.Panic != nil {
		defer f.obs.recoverCallbackPanic("key weight func")
	}
	return max(f.weight(key), 1)
}

// takeMail takes what was posted for keyed jobs that settled or that the
// pool let go of (see job.leaveFlow): a flow that gave back slots may
// start again; one whose members went to 0, and still are, is forgotten
// if none of its queues is left (see forgetIfDone). A release for a flow
// forgotten since is ignored.
func (f *flows) takeMail() {
	for _, r := range f.sig.releases.take() {
		fl := r.flow
		if fl.gen != r.gen {
			continue
		}
		fl.held -= r.held
		switch {
		case r.last && f.forgetIfDone(fl):
		case r.held > 0:
			f.unblock(fl)
		}
	}
	f.sig.releases.done()
}

// forgetIfDone forgets fl, and reports true, if it has no member left
// and no queue: its settled tasks still queued keep it until dispatch
// drops the last of them (see drop).
func (f *flows) forgetIfDone(fl *flow) bool {
	if fl.members.Load() != 0 || len(fl.queues) > 0 {
		return false
	}
	f.forget(fl)
	return true
}

// takeMailIfAny takes what was posted, if anything was, so that a
// decision about a key reads its slots as they are.
func (f *flows) takeMailIfAny() {
	if f.sig.releases.pending() {
		f.takeMail()
	}
}

// keySettled reports whether a keyed job that waited under a key limit,
// queued or holding its key's slots, was settled since it last reported
// true (see job.countKeySettle).
func (f *flows) keySettled() bool {
	return advanced(&f.sig.keySettles, &f.keySettlesSeen)
}

// holderSettled is keySettled for the jobs that held their keys' slots,
// which may wait in the timer heap.
func (f *flows) holderSettled() bool {
	return advanced(&f.sig.holderSettles, &f.holderSettlesSeen)
}

// advanced reports whether count moved since seen, and records it in seen.
func advanced(count *atomic.Uint64, seen *uint64) bool {
	n := count.Load()
	if n == *seen {
		return false
	}
	*seen = n
	return true
}

// forget drops a flow with no tasks left in the pool, nor queued.
func (f *flows) forget(fl *flow) {
	delete(f.byKey, fl.key)
	if f.peak > mapResetPeak && len(f.byKey) <= f.peak/4 {
		f.shrink()
	}
	fl.gen++
	f.spare.putFlow(fl)
}

// shrink makes the key map anew with the keys it holds, a quarter of its
// peak or fewer, and lets go of the buffers sized for the queues of every
// key at that peak (see queues and pause), so that their memory goes once
// the keys are done. Each copy costs at most a third of the keys forgotten
// since the last one.
func (f *flows) shrink() {
	if len(f.byKey) == 0 {
		f.byKey = nil
	} else {
		m := make(map[string]*flow, len(f.byKey)) // maps.Clone would keep the room
		maps.Copy(m, f.byKey)
		f.byKey = m
	}
	f.peak = len(f.byKey)
	f.scratch = nil
	if len(f.paused) == 0 {
		f.paused = nil
	}
}

// took counts the slots a keyed task takes as a worker takes it,
// under a limit, unless it holds them already (a retry), or its flow was
// forgotten (it settled, and was its key's last task: the worker skips
// it, and what it gives back is ignored).
func (f *flows) took(out jobOut) {
	if out.flow != nil && f.limit > 0 && !out.keyHeld && out.flow.gen == out.flowGen {
		out.flow.held += out.weight
	}
}

// keyAllows reports whether fq's front may start as far as its key's limit
// allows: no limit, it holds its slots already (a retry), its key holds
// none, or they fit under the limit.
func (f *flows) keyAllows(fq *flowQueue) bool {
	j := fq.entries.Front().job
	fl := fq.flow
	return f.limit == 0 || j.opts.keyHeld.Load() || fl.held == 0 || fl.held+j.opts.weight <= f.limit
}

// maySkipKey reports whether j, a keyed job that nothing else waits
// before, may skip its flow: no task of its key waits, and its key's
// limit lets it start (a retry that holds its slots goes before the
// tasks of its key that wait).
func (f *flows) maySkipKey(j *job) bool {
	f.takeMailIfAny()
	return f.holdsSlots(j) || f.freeFor(j.opts.flow, j.opts.weight)
}

// holdsSlots reports whether j, a keyed job, holds its key's slots under
// a limit: it ran, and waits for a retry. It continues the run that holds
// them, so it goes before the tasks of its key that wait, which a limit
// of 1 holds back until it ends for good, and a pause does not hold it
// (see waitQueue.mayLeave). Without a limit a retry holds nothing: it
// comes due as a new task of its key.
func (f *flows) holdsSlots(j *job) bool {
	return f.limit > 0 && j.opts.keyHeld.Load()
}

// keyFreeFor is maySkipQueue for a task of key and weight not
// accepted yet (a ticket's).
func (f *flows) keyFreeFor(key string, weight int) bool {
	f.takeMailIfAny()
	fl := f.byKey[key]
	return fl == nil || f.freeFor(fl, weight)
}

// freeFor reports whether a task of fl of weight may start at once: none of
// fl's tasks waits, and its limit lets it.
func (f *flows) freeFor(fl *flow, weight int) bool {
	return len(fl.queues) == 0 && (f.limit == 0 || fl.held == 0 || fl.held+weight <= f.limit)
}

func (s *spares) flow() *flow {
	return takeSpare(&s.flows)
}

func (s *spares) putFlow(fl *flow) {
	fl.key, fl.weight, fl.held = "", 0, 0
	keepSpare(&s.flows, fl)
}

func (s *spares) queue() *flowQueue {
	return takeSpare(&s.queues)
}

func (s *spares) putQueue(fq *flowQueue) {
	fq.flow, fq.level, fq.deficit, fq.turn, fq.blocked = nil, nil, 0, false, false
	keepSpare(&s.queues, fq)
}

func (s *spares) putLevel(l *keyedLevel) {
	*l = keyedLevel{}
	keepSpare(&s.levels, l)
}

// takeSpare takes a spare from list, or makes a new one if it is empty.
func takeSpare[T any](list *[]*T) *T {
	n := len(*list)
	if n == 0 {
		return new(T)
	}
	v := (*list)[n-1]
	(*list)[n-1] = nil
	*list = (*list)[:n-1]
	return v
}

// keepSpare keeps v in list for reuse, unless it holds maxSpares already.
func keepSpare[T any](list *[]*T, v *T) {
	if len(*list) < maxSpares {
		*list = append(*list, v)
	}
}

// liftLimit lifts the key limit for a stop that gives up the queue in
// order (see waitQueue.abandonAll): as if each task ended before the next
// were chosen, no key holds slots when its next task's turn comes. The
// queues the limit held back join their rings again, in the order their
// fronts joined the queue.
func (f *flows) liftLimit() {
	f.limit = 0
	held := slices.DeleteFunc(f.queues(), func(fq *flowQueue) bool { return !fq.blocked })
	slices.SortFunc(held, func(a, b *flowQueue) int {
		return cmp.Compare(a.entries.Front().seq, b.entries.Front().seq)
	})
	for _, fq := range held {
		f.enterRing(fq)
	}
}

// stopped lets go of the spares, once a stop has emptied every queue; the
// flows go as their jobs are let go.
func (f *flows) stopped() {
	f.levels, f.spare, f.paused = nil, spares{}, nil
}

// A flowRelease is one keyed job leaving its flow, as it settles or as
// the pool lets go of it: its flow as of gen (see flow.gen), the slots it
// held there, and whether it was the flow's last member.
type flowRelease struct {
	flow *flow
	gen  uint32
	held int
	last bool
}
