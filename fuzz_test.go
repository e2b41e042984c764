package workerpool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// FuzzPool decodes data into a pool's options and a sequence of operations
// (Submit, Do, DoContext with a live ctx or with one already done (a try,
// tryDo), with options or without, bursts of them from other goroutines,
// DoBatch, DoWait, Go, GoResult,
// Group.Go, Task.cancel, Pause, Resize, WaitIdle, and Stop, StopWait or Shutdown from
// another goroutine while the operations go on), runs them in a synctest
// bubble, ends with a stop, and checks the contract: bounded concurrency,
// FIFO starts, a bounded queue, Status.Busy equal to the tasks running in
// the quiet moments it waits for (see checkQuiet), after every stop the
// Status invariant, no pool goroutine left and no dead-letter handler
// running, every Wait answered truthfully, every accepted plain task run or
// given to the dead-letter handler exactly once with a true reason, every
// refused one neither, every Group.Go call that cannot have been refused
// counted in Submitted (held back by SetLimit, skipped or dropped as it may
// be), and no goroutine left at all (the bubble's check). For every other
// length/4 the pool also has all three hooks and a logger, checked once the
// stop returned (see checkObserved), and for every third length/8 it
// chooses its own size (WithAdaptiveSize(1, 4), deciding every
// fuzzWindow).
//
// data[0] holds the options: bits 0-1 the size (1 to 4), bits 2-3 the idle
// timeout, bits 4-5 the overflow policy (0: no bound, then Block, Reject,
// DropOldest), bits 6-7 the bound less one and the minimum workers. The
// last byte picks the final stop; the bytes between are the operations.
//
// A first operation that cancels a handle made earlier (op 11), which would
// cancel none, is the policy byte instead: its arg picks queue policies
// that come after those the length picked, and win: arg/2 0
// WithRateLimit(100, 5), WithPriorityAging(9ms) and WithQueueTimeout(17ms),
// 1 the first two, 2 the first and the last, 3 the last two, 4 none; an odd
// arg makes the dead-letter handler resubmit (see deadLetter). The key
// byte below is then the first operation after it.
//
// A first operation that ends the oldest pause (op 4), which would end
// none, is the key byte instead: the run is keyed (see fuzzRun.keyed).
// Its arg picks the pool's key options: arg%3 the key limit (0: none,
// then WithKeys(1, nil) and (2)), arg/3 the key weights (0: none, 1:
// fuzzRun.keyWeight, 2: the same, which panics for "k3", 3: a nil func).
// In a keyed run the calls that take options (Go, GoResult, Group.Go,
// DoContext with options) give their task the key that op 5 last
// picked, and the checks add each key's limit, the start order within a
// key, the hooks' TaskInfo.Key and Status.Keys (see checkKeyed). A second
// op 4 right after the key byte, which would end no pause either, is the
// schedule byte: the pool has a size schedule whose boundary comes one
// second into the run, with a window from the start if its arg is even
// and from then if it is odd (see sizeSchedule).
func FuzzPool(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1})
	f.Add([]byte{1, 0x0e, 0x1c, 3, 0, 0, 2, 4, 5, 0})
	f.Add([]byte{3, 3, 0, 1, 2, 7, 0x0f, 6, 4, 5, 1})
	f.Add([]byte{2, 0x2a, 0x2a, 3, 3, 2, 2, 1, 1, 6, 4, 4, 5, 0})
	f.Add([]byte{1, 8, 28, 48, 68, 0, 88, 6, 2})                       // Tasks of every kind, then a Shutdown that cuts at once
	f.Add([]byte{5, 0x4c, 8, 3, 124, 4, 84, 6, 50})                    // Tasks with a pause, then Shutdown within 16ms
	f.Add([]byte{0, 10, 32, 12, 32, 11, 8, 13, 0, 10, 12, 1})          // Calls, group tasks, cancels; a Stop while submitting
	f.Add([]byte{0x11, 20, 20, 3, 20, 20, 14, 15, 19, 16, 1})          // Block, bound 1: a pause fills the queue, submitters wait
	f.Add([]byte{0x62, 20, 20, 20, 19, 19, 14, 16, 2, 8, 10})          // Reject, bound 2: refusals and dead letters
	f.Add([]byte{0xb1, 40, 3, 0, 0, 19, 19, 7, 10, 2, 16, 0})          // DropOldest, bound 3: drops while paused, then Stop
	f.Add([]byte{0x55, 20, 17, 37, 0, 0, 57, 18, 6, 38, 0, 13})        // Block with Resize and WaitIdle, a Stop from another goroutine
	f.Add([]byte{0xb0, 250, 243, 240, 20, 19, 3, 6, 4, 248, 18, 1})    // DropOldest, bound 3: delayed handles fill it, a pause, WaitIdle, StopWait
	f.Add([]byte{0x01, 255, 244, 11, 8, 241, 6, 3, 246, 0})            // delayed handles, a cancel, a pause, then Stop
	f.Add([]byte{0xb1, 200, 203, 206, 17, 210, 0, 215, 219, 13, 6, 1}) // DropOldest: plain tasks with options, a Resize to 1, a Stop from another goroutine
	f.Add([]byte{0x10, 206, 0})                                        // Block, bound 1: a try with a delay alone, abandoned by Stop: its room comes back
	f.Add([]byte{0x10, 19, 19, 61, 81, 0, 61, 33, 101, 19, 61, 1})     // Block, bound 1, one worker: bursts of submitters wait for room side by side, a StopWait races them
	f.Add([]byte{0x10, 19, 121, 141, 61, 101, 81, 0})                  // Block, bound 1, one worker: bursts wait for room when Stop refuses them
	f.Add([]byte{0x11, 19, 121, 3, 81, 4, 141, 17, 61, 5, 101, 2})     // Block, bound 1, two workers: bursts around a pause and a Resize, then Shutdown
	f.Add([]byte{0x52, 19, 161, 18, 181, 2, 53, 0})                    // Block, bound 2, three workers: bursts, a WaitIdle, a DoWait, a Shutdown from another goroutine
	f.Add([]byte{0x21, 19, 61, 81, 16, 161, 13, 1})                    // Reject, bound 1: bursts refused, a batch, a Stop racing
	// Keyed runs (see the key byte above):
	f.Add([]byte{0x01, 24, 88, 88, 70, 45, 88, 70, 25, 88, 13, 88, 70, 1})              // size 2, key limit 1: Tasks and Calls of k0, k1, k0; a Stop races the submits, then StopWait
	f.Add([]byte{0x03, 84, 2, 2, 65, 230, 231, 225, 226, 85, 227, 33, 8, 209, 1})       // size 4, limit 1, weights: DoWaits of k0, heavy and retried Tasks of k2 and k3; a StopWait racing
	f.Add([]byte{0x00, 144, 85, 222, 202, 25, 223, 203, 105, 201, 45, 221, 200, 53, 2}) // size 1, limit 1, a weight func that panics for k3: Tasks and Do with options of every key and none; a Shutdown racing
	f.Add([]byte{0x31, 24, 9, 29, 45, 69, 12, 12, 3, 8, 10, 4, 13, 8, 0})               // DropOldest, bound 1, limit 1: groups of k0 and k1, the shared group, a pause; a Stop racing
	f.Add([]byte{0x11, 104, 3, 8, 45, 8, 2, 214, 4, 6, 240, 253, 33, 2})                // Block, bound 1, limit 2, weights: a pause fills the queue with Tasks and a DoWait of k0 and k1, delayed ones; a StopWait racing, then Shutdown
	// Runs with a size schedule (see the schedule byte above):
	f.Add([]byte{0x03, 4, 4, 250, 251, 230, 231, 0, 20, 40, 186, 253, 186, 255, 1})     // size 4, one worker until 1s: delayed and heavy Tasks, fake time past the boundary, then StopWait
	f.Add([]byte{0x00, 24, 24, 250, 230, 232, 88, 254, 186, 33, 126, 255, 1})           // size 1, key limit 1, 4 workers from 1s: a StopWait from another goroutine, then the boundary passes
	f.Add([]byte{0x41, 4, 44, 17, 97, 117, 250, 251, 186, 186, 37, 117, 18, 255, 2})    // size 2, floor 1, 3 workers until 1s: Resize inside the window and after it, then Shutdown
	f.Add([]byte{0x12, 4, 64, 19, 19, 19, 250, 3, 251, 186, 186, 4, 17, 0, 19, 210, 0}) // Block, bound 1, size 3, 2 workers from 1s: a pause across the boundary, then Stop
	// Runs with the policy byte (see above):
	f.Add([]byte{0x01, 31, 7, 20, 20, 26, 149, 19, 19, 19, 19, 19, 19, 5, 26, 5, 1}) // size 2, rate limit, aging, queue timeout, resubmits: a panic, two workers, a group of three limited to one, six Submits, then StopWait
	// Map loops (op 10 with arg%3 == 2):
	f.Add([]byte{0x01, 50, 110, 170, 50, 110, 26, 170, 13, 50, 1})   // size 2: Map and MapUnordered loops, some breaking, a Stop from another goroutine, then StopWait
	f.Add([]byte{0x21, 19, 50, 3, 110, 170, 4, 50, 6, 50, 110, 2})   // Reject, bound 1: loops refused in part, a pause, then Shutdown
	f.Add([]byte{0x11, 50, 50, 110, 3, 170, 50, 4, 17, 110, 170, 0}) // Block, bound 1: loops wait for room, a pause, a Resize, then Stop
	// Runs where the pool chooses its size (lengths 16 to 23 and 40 to 47):
	f.Add([]byte{0x01, 180, 180, 180, 180, 180, 180, 46, 37, 180, 180, 46, 57, 180, 13, 180, 46, 1})        // size 2 to start: 9 ms tasks, windows pass, Resize to 2 and 3, a Stop from another goroutine
	f.Add([]byte{0x11, 180, 19, 180, 46, 3, 180, 180, 46, 4, 180, 180, 17, 66, 180, 180, 26, 0})            // Block, bound 1: bursts, a pause across windows, Resize to 1, then Stop as they decide
	f.Add([]byte{0x03, 180, 180, 180, 180, 236, 180, 180, 180, 26, 46, 180, 180, 180, 66, 180, 180, 53, 2}) // size 4: a heavy Task among 9 ms tasks, windows pass, a Shutdown from another goroutine
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 || len(data) > 256 {
			return
		}
		defer reportDeadlock(t)
		synctest.Test(t, func(t *testing.T) { runOps(t, data) })
	})
}

// lastFuzzPool is the pool of the last run FuzzPool made, for
// reportDeadlock.
var lastFuzzPool *WorkerPool

// reportDeadlock, deferred around synctest.Test, turns its panic (such as
// a deadlock: every goroutine in the bubble blocked) into a failure that
// shows every goroutine's stack, taken while the blocked ones still wait:
// the fuzzer's own report shows only the panicking goroutine.
func reportDeadlock(t *testing.T) {
	if r := recover(); r != nil {
		state := ""
		if p := lastFuzzPool; p != nil {
			w := p.room.word.Load()
			// Counters only: the pool's channels belong to the bubble.
			state = fmt.Sprintf("room free %d, parked %d; waiting %d; workers %d; size %d; returned %d; sends %d, control %d",
				uint32(w), w>>32, p.counts.waiting.Load(), p.counts.workers.Load(), p.size.max.Load(), p.counts.returnedWork(), p.taskSends.Load(), p.controlSends.Load())
		}
		t.Fatalf("%v\npool: %s\nevery goroutine:\n%s", r, state, allStacks())
	}
}

// fuzzOps is the number of operations a byte below plainOptionOps
// encodes: op = b % fuzzOps, arg = b / fuzzOps. A byte from delayedOps up
// is op fuzzOps (a delayed handle) with arg = b - delayedOps, one from
// optionOps up is op fuzzOps+1 (a Task with options) with arg = b -
// optionOps, and one from plainOptionOps up is op fuzzOps+2 (a plain task
// with options, through Do or DoContext) with arg = b - plainOptionOps.
const (
	fuzzOps        = 20
	plainOptionOps = 200
	optionOps      = 220
	delayedOps     = 240
)

// decodeOp splits an operation byte into its op and arg.
func decodeOp(b byte) (op byte, arg int) {
	switch {
	case b >= delayedOps:
		return fuzzOps, int(b - delayedOps)
	case b >= optionOps:
		return fuzzOps + 1, int(b - optionOps)
	case b >= plainOptionOps:
		return fuzzOps + 2, int(b - plainOptionOps)
	}
	return b % fuzzOps, int(b / fuzzOps)
}

type fuzzRun struct {
	t       *testing.T
	p       *WorkerPool
	size    int          // New's maxWorkers
	sized   bool         // the pool has a size schedule (see sizeSchedule)
	adapts  bool         // the pool chooses its size (WithAdaptiveSize(1, 4)), deciding every fuzzWindow
	maxSize atomic.Int64 // the largest size the pool had
	policy  Overflow
	bounded bool // WithMaxWaiting(bound, policy)
	bound   int
	meter   concurrencyMeter
	order   recorder // start order of the op 0 tasks
	nextID  int

	mu      sync.Mutex
	plains  map[uintptr]*plainTask // every plain task of the run, by funcKey
	letters int                    // dead letters delivered
	strays  int                    // dead letters for tasks that are not plain tasks of the run

	maybe         atomic.Int64 // tasks with a waiter, which may or may not have been accepted
	groupTasks    atomic.Int64 // of maybe, group tasks: the pool may have rejected or dropped them unseen
	groupSure     atomic.Int64 // of groupTasks, those whose Group.Go call the pool cannot have refused: counted in Submitted
	rejectedSure  atomic.Int64 // refusals the pool must have counted in Rejected
	rejectedMaybe atomic.Int64 // tryDo falses: counted unless a stop refused them
	droppedSure   atomic.Int64 // handles that reported errDropped
	ran           atomic.Int64 // task bodies that ran
	panics        atomic.Int64 // task panics
	handlerPanics atomic.Int64 // dead-letter handler panics
	handled       atomic.Int64 // panics the Panic hook took
	inHandler     atomic.Int64 // dead-letter handler calls in progress
	running       atomic.Int64 // task funcs running (see track): in a quiet moment, Status.Busy
	resubmits     atomic.Int64 // dead letters the handler may still resubmit (see deadLetter); 0 unless the policy byte asks for it

	cancels   []context.CancelFunc    // of the pauses in effect, oldest first
	handles   []interface{ cancel() } // canceled as the pool cancels its own (Task.cancel)
	shared    *Group                  // made by the first op 12
	pending   sync.WaitGroup          // DoWait, Pause, WaitIdle and Wait callers, and stops from other goroutines
	anyStop   atomic.Bool             // a stop began: sends may be refused
	delayed   atomic.Bool             // a delayed handle, or one that retries, was made: under DropOldest, scheduled tasks may fill the bound
	expires   bool                    // the pool has WithQueueTimeout
	tooHeavy  atomic.Int64            // handles that reported ErrTooHeavy: refused (Rejected) or dropped by a Resize (Dropped)
	mapUnseen atomic.Int64            // items of Map loops whose outcome the loop did not yield (it broke): refused or dropped as they may be
	canceled  atomic.Int64            // handle cancels called
	retrying  atomic.Bool             // a task that retries was made: retries join the queue over the bound when it is full
	unrerun   atomic.Int64            // tasks whose last run was posted for a retry that never ran: it counts in Ran, not in Completed or Retried
	dropping  atomic.Bool             // Stop or Shutdown was called: queued tasks may be abandoned

	hooked bool        // the pool has every hook and a logger (see observe)
	hooks  fuzzHooks   // what the hooks saw
	logs   countingLog // what the logger got

	// keyed says the input's first op is the key byte (see FuzzPool): the
	// calls that take options give their task key, which op 5 picks from
	// fuzzKeys. keyLimit is WithKeys's limit (0: none); the key shares
	// are keyWeight's, which panics for "k3" if weightPanics.
	keyed          bool
	key            string
	keyLimit       int
	weightPanics   bool
	keysUsed       map[string]bool // the keys given to tasks so far
	keyedCalls     atomic.Int64    // calls made with a key: each can make its key active once
	maps           int             // Map loops begun (see mapItems)
	weightCalls    atomic.Int64    // keyWeight calls
	weightPanicked atomic.Int64    // of weightCalls, those that panicked
	weightOff      atomic.Int64    // of weightCalls, those not on the dispatcher goroutine
	keyRuns        keyMeter        // the slots each key's running tasks hold
	starts         startOrder      // the start order of the ordered tasks, by key and priority
	nextSeq        int             // numbers the ordered tasks in the order of their calls
}

// fuzzKeys are the keys of a keyed run: four that its tasks share, so
// that keys collide, and no key.
var fuzzKeys = [...]string{"k0", "k1", "k2", "k3", ""}

// keyWeight is the run's WithKeys share: 1, 2 and 3 for "k0" to
// "k2", and for any other key 0 (which means 1), or a panic if the run
// has weightPanics (the pool has a Panic hook, so the key then weighs
// 1). The pool calls it on the dispatcher goroutine.
func (r *fuzzRun) keyWeight(key string) int {
	r.weightCalls.Add(1)
	if !onDispatcher() {
		r.weightOff.Add(1)
	}
	switch key {
	case "k0", "k1", "k2":
		return int(key[1]-'0') + 1
	}
	if r.weightPanics {
		r.weightPanicked.Add(1)
		panic("key weight")
	}
	return 0
}

// A fuzzTask is what the key checks know of a task: its key ("" for
// none), weight and priority, and its place among the ordered tasks (seq;
// -1: not one of them). An ordered task is one whose call, made in op
// order, is where it became ready: it has no delay and no retry, and
// neither a group's limit nor a wait for room off the fuzz's goroutine (a
// DoWait under Block) can let a later call overtake it.
type fuzzTask struct {
	key              string
	weight, priority int
	seq              int
	// A task that may retry holds its key's slots from its first run
	// until it ends for good (hold; nil for one that runs once). again
	// reports whether its last run asked for a retry.
	hold  *keyHold
	again func() bool
}

// keyMeter tracks the slots each key's tasks hold (their weights): a task
// holds them while it runs, and one that may retry from its first run
// until it ends for good, as the key's limit counts them. It notes every
// start that took a key past its limit: under a limit a task starts only
// if its weight fits, or as the only holder of its key (a task heavier
// than the limit); a retry continues its task's hold.
type keyMeter struct {
	mu    sync.Mutex
	holds map[string][]*keyHold // by key
	over  []string              // starts that took a key past its limit
	noKey int                   // keyed runs that saw Status.Keys below 1
}

// A keyHold is one task's hold on its key's slots.
type keyHold struct {
	key     string
	weight  int
	running bool // a run of the task is under way
	// done is the handle's, once its call returned, for a task that may
	// retry: closed once it ended for good, which it may do between runs
	// (a Task.cancel, a stop), before the pool lets go of its slots.
	done <-chan struct{}
}

// start counts h's run starting, and notes it if it took h's key past
// limit. The holds of tasks that ended between runs are dropped first; if
// it cannot tell whether one did (its call has not returned), it checks
// nothing.
func (m *keyMeter) start(limit int, h *keyHold) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.holds == nil {
		m.holds = map[string][]*keyHold{}
	}
	if h.running = true; slices.Contains(m.holds[h.key], h) {
		return // a retry: its task holds its slots already
	}
	held, known := 0, true
	m.holds[h.key] = slices.DeleteFunc(m.holds[h.key], func(o *keyHold) bool {
		if o.running {
			held += o.weight
			return false
		}
		if o.done == nil {
			known = false
		} else if isClosed(o.done) {
			return true
		}
		held += o.weight
		return false
	})
	if known && limit > 0 && held > 0 && held+h.weight > limit {
		m.over = append(m.over, fmt.Sprintf("%s: a task of weight %d started while its key held %d slots, limit %d", h.key, h.weight, held, limit))
	}
	m.holds[h.key] = append(m.holds[h.key], h)
}

// end counts h's run ending; again says it asked for a retry, so that its
// task keeps its slots.
func (m *keyMeter) end(h *keyHold, again bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h.running = false
	if !again {
		m.holds[h.key] = slices.DeleteFunc(m.holds[h.key], func(o *keyHold) bool { return o == h })
	}
}

// returned gives h its task's done channel, once the call returned.
func (m *keyMeter) returned(h *keyHold, done <-chan struct{}) {
	m.mu.Lock()
	h.done = done
	m.mu.Unlock()
}

// startOrder records the seq of each ordered task as it starts, by its
// key and priority.
type startOrder struct {
	mu     sync.Mutex
	starts map[orderClass][]int
}

type orderClass struct {
	key      string
	priority int
}

func (o *startOrder) record(t fuzzTask) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.starts == nil {
		o.starts = map[orderClass][]int{}
	}
	c := orderClass{t.key, t.priority}
	o.starts[c] = append(o.starts[c], t.seq)
}

// keyRun wraps run, one run of task t: it records an ordered task's start
// and, if t has a key, counts its slots in the key meter (see keyMeter),
// runs for at least a millisecond of fake time (so that runs of one key
// that must not overlap would), and checks Status.Keys (see checkKeys).
func (r *fuzzRun) keyRun(t fuzzTask, run func()) func() {
	return func() {
		if t.seq >= 0 {
			r.starts.record(t)
		}
		if t.key == "" {
			run()
			return
		}
		h := t.hold
		if h == nil {
			h = &keyHold{key: t.key, weight: t.weight}
		}
		r.keyRuns.start(r.keyLimit, h)
		defer func() { r.keyRuns.end(h, t.again != nil && t.again()) }() // also when run panics or exits
		if !r.checkKeys(1, len(fuzzKeys)-1) {
			r.keyRuns.mu.Lock()
			r.keyRuns.noKey++
			r.keyRuns.mu.Unlock()
		}
		time.Sleep(time.Millisecond)
		run()
	}
}

// newTask describes a task of priority and weight about to be given to
// the pool, with the run's key if it is keyed; ordered says its call is
// where it becomes ready (see fuzzTask), which numbers it.
func (r *fuzzRun) newTask(priority, weight int, ordered bool) fuzzTask {
	t := fuzzTask{weight: weight, priority: priority, seq: -1}
	if r.keyed {
		t.key = r.key
	}
	if t.key != "" {
		r.keyedCalls.Add(1)
		r.keysUsed[t.key] = true
	}
	if ordered {
		t = r.number(t)
	}
	return t
}

// number gives t, an ordered task, the next seq.
func (r *fuzzRun) number(t fuzzTask) fuzzTask {
	t.seq = r.nextSeq
	r.nextSeq++
	return t
}

// keyOptions are the options that give t its key: in a keyed run Key
// with a Label that names it (see fuzzLabel), or TaskOption{Key: ""} for a task
// without one; none in a run without keys. A caller that gives t a Label
// of its own passes label false.
func (r *fuzzRun) keyOptions(t fuzzTask, label bool) []TaskOption {
	switch {
	case !r.keyed:
		return nil
	case t.key == "" || !label:
		return []TaskOption{{Key: t.key}}
	}
	return []TaskOption{{Key: t.key, Label: fuzzLabel(t.priority, t.weight, t.key)}}
}

// checkKeys reports whether Status.Keys, as the pool counts it (Status
// clamps it at 0), is at least least and at most most.
func (r *fuzzRun) checkKeys(least, most int) bool {
	n := r.p.counts.keys.Load()
	return n >= int64(least) && n <= int64(most)
}

// fuzzHooks count the hook calls of a run.
type fuzzHooks struct {
	started, finished, dropped atomic.Int64
	onDispatcher               atomic.Int64 // calls made on the dispatcher goroutine
	negative                   atomic.Int64 // waits or runs below zero
	wrongInfo                  atomic.Int64 // TaskInfos that do not match their task (see fuzzLabel)

	mu    sync.Mutex
	wrong []string // the first TaskInfos that did not match, described
}

// fuzzLabel is the Label the fuzz gives a task with options: it names the
// priority, weight and key the task was given, which the hooks check
// against the TaskInfo they get. Every keyed task has one.
func fuzzLabel(priority, weight int, key string) string {
	if key == "" {
		return fmt.Sprintf("p%d w%d", priority, weight)
	}
	return fmt.Sprintf("p%d w%d key %s", priority, weight, key)
}

func (h *fuzzHooks) hooks() Hooks {
	return Hooks{
		TaskStarted: func(ctx context.Context, ti TaskInfo) context.Context {
			h.check(ti, 0)
			h.started.Add(1)
			return ctx
		},
		TaskFinished: func(_ context.Context, ti TaskInfo) {
			h.check(ti, ti.Ran)
			h.finished.Add(1)
		},
		TaskDropped: func(ti TaskInfo) {
			h.check(ti, 0)
			h.dropped.Add(1)
		},
	}
}

func (h *fuzzHooks) check(ti TaskInfo, ran time.Duration) {
	if ti.Waited < 0 || ran < 0 {
		h.negative.Add(1)
	}
	if ti.Attempt < 1 || ti.Weight < 1 ||
		ti.Label != "" && ti.Label != fuzzLabel(ti.Priority, ti.Weight, ti.Key) ||
		ti.Label == "" && ti.Key != "" {
		if h.wrongInfo.Add(1) <= 3 {
			h.mu.Lock()
			h.wrong = append(h.wrong, fmt.Sprintf("%+v", ti))
			h.mu.Unlock()
		}
	}
	if onDispatcher() {
		h.onDispatcher.Add(1)
	}
}

// countingLog is a slog.Handler that counts the records it gets by
// message, and keeps the stop summary's submitted count. It holds the stop
// call that logs "pool stopping" for holdStopping yields of its goroutine:
// a stop then has begun (a Stop abandons from its first act) but its
// message has not reached the dispatcher, while the other goroutines go
// on, workers come free and submitters wait for room. (Yields, not fake
// time: another stop call waits for this one on a mutex, which a synctest
// bubble does not count as durably blocked, so its clock would stand
// still.)
type countingLog struct {
	holdStopping int

	mu        sync.Mutex
	counts    map[string]int
	submitted uint64
}

func (l *countingLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *countingLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *countingLog) WithGroup(string) slog.Handler            { return l }

func (l *countingLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "pool stopping" {
		for range l.holdStopping {
			runtime.Gosched()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts == nil {
		l.counts = map[string]int{}
	}
	l.counts[r.Message]++
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "submitted" {
			l.submitted = a.Value.Uint64()
		}
		return true
	})
	return nil
}

// A plainTask is one plain task of the run (Submit, Do, DoContext,
// DoBatch): what its call said, how often a worker ran it, and
// the dead letters it got.
type plainTask struct {
	fn      func()       // what was submitted; kept so that its funcKey stays unique
	verdict atomic.Int32 // what the call said
	runs    atomic.Int32
	letters []error // reasons given to the dead-letter handler, guarded by fuzzRun.mu
}

const (
	verdictNone      = iota // the call has not returned
	verdictAccepted         // the call said accepted
	verdictRefused          // the call returned an error or false
	verdictSubmitted        // Submit returned: accepted, unless it became a dead letter with ErrQueueFull
)

// funcKey identifies a func value by the closure it points to: every
// plain task is a closure of its own, kept reachable by r.plains.
func funcKey(f func()) uintptr { return *(*uintptr)(unsafe.Pointer(&f)) }

func runOps(t *testing.T, data []byte) {
	opts := data[0]
	r := &fuzzRun{t: t, size: 1 + int(opts%4), plains: map[uintptr]*plainTask{}}
	r.maxSize.Store(int64(r.size))
	idle := []time.Duration{time.Second, -1, 10 * time.Millisecond, defaultIdleTimeout}[opts/4%4]
	options := []Option{
		WithIdleTimeout(idle),
		WithHooks(Hooks{Panic: func(any) { r.handled.Add(1) }}),
		WithHooks(Hooks{DeadLetter: r.deadLetter}),
		WithMinWorkers(int(opts >> 6)),
	}
	if policy := opts >> 4 & 3; policy > 0 {
		r.policy, r.bounded, r.bound = Overflow(policy-1), true, []int{1, 2, 3, 0}[opts>>6]
		options = append(options, WithMaxWaiting(r.bound, r.policy))
	}
	if len(data)/4%2 == 1 { // hooks and a logger, picked by the input's length
		r.hooked = true
		r.logs.holdStopping = 100
		options = append(options, WithHooks(r.hooks.hooks()), WithHooks(Hooks{Logger: slog.New(&r.logs)}))
	}
	switch len(data) % 4 { // the queue policies of issue 12, picked by the input's length
	case 1:
		options = append(options, WithPriorityAging(50*time.Millisecond))
	case 2:
		options = append(options, WithQueueTimeout(300*time.Millisecond))
		r.expires = true
	case 3:
		options = append(options, WithRateLimit(20, 2))
	}
	if len(data)/8%3 == 2 { // the pool chooses its own size, picked by the input's length
		r.adapts = true
		r.maxSize.Store(4)
		defer func(w time.Duration) { adaptWindow = w }(adaptWindow)
		adaptWindow = fuzzWindow
		options = append(options, WithAdaptiveSize(1, 4))
	}
	ops := data[1 : len(data)-1]
	if op, arg := firstOp(ops); op == 11 { // the policy byte
		ops = ops[1:]
		options = append(options, r.policiesOf(arg)...)
	}
	if op, arg := firstOp(ops); op == 4 { // the key byte
		ops = ops[1:]
		options = append(options, r.keyOptionsOf(arg)...)
		if op, arg := firstOp(ops); op == 4 { // the schedule byte
			ops = ops[1:]
			options = append(options, r.sizeSchedule(arg%2 == 1))
		}
	}
	r.p = New(r.size, options...)
	lastFuzzPool = r.p
	for _, b := range ops {
		r.do(decodeOp(b))
	}
	last := data[len(data)-1]
	r.stop(int(last%3), int(last/3))
	r.pending.Wait()
	r.check(last%3 == 1)
}

// fuzzWindow is the sizer's window in runs where the pool chooses its
// size: short, so that its decisions race with the operations and stops.
const fuzzWindow = 20 * time.Millisecond

// firstOp decodes the first of ops; with no ops it is an op that no
// special byte is (fuzzOps+3).
func firstOp(ops []byte) (op byte, arg int) {
	if len(ops) == 0 {
		return fuzzOps + 3, 0
	}
	return decodeOp(ops[0])
}

// policiesOf returns the queue policies that the policy byte's arg picks
// (see FuzzPool), and makes the dead-letter handler resubmit if it says
// so. They come after the ones the input's length picks, and win.
func (r *fuzzRun) policiesOf(arg int) []Option {
	if arg%2 == 1 {
		r.resubmits.Store(maxResubmits)
	}
	picks := [...]struct{ rate, aging, timeout bool }{
		{true, true, true}, {true, true, false}, {true, false, true}, {false, true, true}, {},
	}[arg/2]
	var options []Option
	if picks.rate {
		options = append(options, WithRateLimit(100, 5))
	}
	if picks.aging {
		options = append(options, WithPriorityAging(9*time.Millisecond))
	}
	if picks.timeout {
		options = append(options, WithQueueTimeout(17*time.Millisecond))
		r.expires = true
	}
	return options
}

// maxResubmits bounds the dead letters a run's handler resubmits: under
// DropOldest each resubmit may drop another task, whose letter is
// resubmitted in turn.
const maxResubmits = 20

// sizeSchedule is a size schedule whose one window has the pool's size
// turned around (1 for 4, 4 for 1) as its Max, and half that as its Min.
// Its clock reads 00:59:59 as the run begins, at midnight UTC: inside a
// window from 00:00, the pool starts with the window's sizes and returns
// to its own one second in; with one from 01:00, it starts with its own
// and takes the window's then. The largest size counts the window's.
func (r *fuzzRun) sizeSchedule(late bool) Option {
	r.sized = true
	w := SizeWindow{From: "00:00", To: "01:00", Max: 5 - r.size}
	if late {
		w.From, w.To = "01:00", "01:01"
	}
	w.Min = w.Max / 2
	r.maxSize.Store(int64(max(r.size, w.Max)))
	return sizeSchedule(time.FixedZone("fuzz", 59*60+59), w)
}

// keyOptionsOf makes the run keyed, and returns the pool's key options
// that the key byte's arg picks (see FuzzPool).
func (r *fuzzRun) keyOptionsOf(arg int) []Option {
	r.keyed, r.key, r.keysUsed = true, fuzzKeys[0], map[string]bool{}
	r.keyLimit = arg % 3
	limit := r.keyLimit
	if limit == 0 {
		limit = -1 // no limit
	}
	var share func(string) int
	switch arg / 3 {
	case 1:
		share = r.keyWeight
	case 2:
		r.weightPanics = true
		share = r.keyWeight
	}
	return []Option{WithKeys(limit, share)}
}

func (r *fuzzRun) do(op byte, arg int) {
	p := r.p
	switch op {
	case 0: // a task that takes arg ms of fake time, never with a key
		id := r.nextID
		r.nextID++
		t := r.number(fuzzTask{weight: 1})
		r.submit(r.keyRun(t, r.order.task(id, func() { time.Sleep(time.Duration(arg) * time.Millisecond) })))
	case 1: // with arg 0, a task that submits a child task from inside; otherwise a burst of plain submits from other goroutines (see burst)
		if arg == 0 {
			r.submit(r.submitChild)
			return
		}
		r.burst(arg)
	case 2: // DoWait, or with an odd arg (or options) Go with a ctx that ends after arg ms, waited for, from another goroutine, sent before the next op (under Block it may wait for room: not ordered)
		r.maybe.Add(1)
		t := r.newTask(0, 1, !(r.bounded && r.policy == Block))
		opts := r.keyOptions(t, true)
		body := r.track(r.body(r.keyRun(t, func() {})))
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if arg%2 == 1 {
			ctx, cancel = context.WithTimeout(ctx, time.Duration(arg)*time.Millisecond)
		}
		r.pending.Go(func() {
			defer cancel()
			if arg%2 == 0 && len(opts) == 0 {
				r.checkHandleErr(p.DoWait(body), false, "DoWait")
				return
			}
			r.checkHandleErr(p.Go(ctx, func(context.Context) error { body(); return nil }, opts...).Wait(), arg%2 == 1, "Go waited for")
		})
		synctest.Wait()
	case 3: // Pause until a later cancel (or a stop), registered before the next op
		r.pause()
	case 4: // end the oldest pause
		if len(r.cancels) > 0 {
			r.cancels[0]()
			r.cancels = r.cancels[1:]
		}
	case 5: // observe, then check a quiet moment; in a keyed run an arg from 1 up picks the key of the tasks that follow
		r.observe()
		r.checkQuiet()
		if r.keyed && arg > 0 {
			r.key = fuzzKeys[(arg-1)%len(fuzzKeys)]
		}
	case 6: // let fake time pass, then check a quiet moment
		time.Sleep(time.Duration(arg) * 100 * time.Millisecond)
		r.checkQuiet()
	case 7: // a task that panics or calls runtime.Goexit
		if arg%2 == 0 {
			r.submit(func() { r.panics.Add(1); panic(arg) })
		} else {
			r.submit(runtime.Goexit)
		}
	case 8: // a Task that takes arg ms, canceled in one of four ways
		r.goTask(arg)
	case 9: // a Group of arg%5+1 tasks, maybe limited, maybe failing
		r.group(arg)
	case 10: // a GoResult whose value is checked, or with arg%3 == 2 a Map loop (see mapItems)
		if arg%3 == 2 {
			r.mapItems(arg/3 + 3*r.maps) // arg/3 is at most 3: the loops before it vary the rest
			r.maps++
			return
		}
		r.call(arg)
	case 11: // cancel a handle made earlier
		if n := len(r.handles); n > 0 {
			r.canceled.Add(1)
			r.handles[n-1-arg%n].cancel()
		}
	case 12: // a task of the run's one long-lived group
		r.sharedGo(arg)
	case 13: // a stop from another goroutine while the ops go on
		r.pending.Go(func() { r.stop(arg%3, arg/3) })
	case 14: // try (tryDo: DoContext with a done ctx) a task that takes arg ms
		r.tryDo(sleepFor(arg))
	case 15: // DoContext with a ctx that ends after arg ms, or never, or is already done (a try)
		r.doContext(arg)
	case 16: // DoBatch of arg%5+1 tasks, with a nil among them when arg%3 == 0
		r.doBatch(arg)
	case 17: // Resize to arg%4+1
		r.resize(arg%4 + 1)
	case 18: // WaitIdle from another goroutine, until idle or for arg*10ms
		r.waitIdle(arg)
	case 19: // Submit a task that takes arg ms: refused ones become dead letters
		r.submitPlain(sleepFor(arg))
	case fuzzOps: // a Task or a Future due arg*100ms from now
		r.delayedTask(arg)
	case fuzzOps + 1: // a Task with a priority, and a retry policy, a weight, or both
		r.optionTask(arg)
	case fuzzOps + 2: // a plain task with a priority, maybe a delay, maybe a weight
		r.plainOptionTask(arg)
	}
}

func sleepFor(ms int) func() {
	return sleeper(time.Duration(ms) * time.Millisecond)
}

// pause pauses the pool from another goroutine until a later op 4 or the
// run's end. Under Block the pause also ends after a second of fake time,
// so that a submitter waiting for room always gets it in the end.
func (r *fuzzRun) pause() {
	ctx, cancel := context.WithCancel(context.Background())
	if r.bounded && r.policy == Block {
		ctx, cancel = context.WithTimeout(context.Background(), time.Second)
	}
	r.cancels = append(r.cancels, cancel)
	r.pending.Go(func() { r.p.Pause(ctx) })
	synctest.Wait()
}

// stop stops the pool in one of three ways (Stop, StopWait, Shutdown that
// gives up after ms milliseconds of fake time) and checks the pool right
// after the call returns. Ops on other goroutines may still be in a
// submit, holding a place of room until the stop refuses their send: the
// room is checked once they all returned (see check).
func (r *fuzzRun) stop(way, ms int) {
	r.anyStop.Store(true)
	switch way {
	case 0:
		r.dropping.Store(true)
		r.p.Stop()
	case 1:
		r.p.StopWait()
	case 2:
		r.dropping.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(ms)*time.Millisecond)
		err := r.p.Shutdown(ctx)
		cancel()
		if err != nil {
			assert.True(r.t, errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrStopped), "Shutdown: %v", err)
		}
	}
	s := requireStoppedCounts(r.t, r.p)
	assert.Zero(r.t, s.Keys, "Status.Keys when a stop returned")
	assert.Zero(r.t, r.p.counts.keys.Load(), "keys counted when a stop returned")
	assert.Empty(r.t, poolGoroutinesRunning(), "pool goroutines left when a stop returned")
	assert.Zero(r.t, r.inHandler.Load(), "dead-letter handler running when a stop returned")
}

// poolGoroutinesRunning returns the stacks of the goroutines of the
// caller's synctest bubble that run the dispatcher, a worker, the idle
// clock or the dead-letter deliverer. (Goroutines of other bubbles are
// other runs': a fuzzing process keeps those of a run that failed.) It
// narrows poolGoroutines, which returns every goroutine of the process but
// the caller that has a frame of this package (a submitter inside Submit
// included, in any bubble or none), to the caller's bubble and to the
// goroutines the pool itself runs.
func poolGoroutinesRunning() []string {
	bubble := currentBubble()
	var found []string
	for _, block := range poolGoroutines(allStacks()) {
		if bubbleOf(block) != bubble {
			continue
		}
		for _, fn := range []string{"(*dispatcher).run", "(*workerSide).worker", "(*crew).awaitIdlePeriod", "(*observer).deliverDeadLetters"} {
			if strings.Contains(block, "workerpool."+fn+"(") {
				found = append(found, block)
				break
			}
		}
	}
	return found
}

// The check FuzzPool makes after every stop sees a running pool's
// dispatcher, workers, idle clock and dead-letter deliverer.
func TestPoolGoroutinesRunningSeesARunningPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		handler := newGate()
		p := New(2, WithIdleTimeout(time.Second), WithMaxWaiting(1, Reject), WithHooks(Hooks{DeadLetter: func(func(), error) { handler.wait() }}))
		g := newGate()
		p.Submit(g.task())
		p.Submit(g.task())
		p.Submit(g.task())
		p.Submit(g.task()) // refused: the deliverer waits in the handler
		synctest.Wait()
		assert.Len(t, poolGoroutinesRunning(), 5, "the dispatcher, two workers, the idle clock and the deliverer")
		g.open()
		handler.open()
		p.Stop()
		assert.Empty(t, poolGoroutinesRunning(), "after Stop")
	})
}

// observe checks what holds at any moment.
func (r *fuzzRun) observe() {
	s := r.p.Status()
	assert.LessOrEqual(r.t, s.Busy, s.Workers, "busy <= workers")
	assert.LessOrEqual(r.t, s.Workers, int(r.maxSize.Load()), "workers <= the largest size")
	assert.GreaterOrEqual(r.t, s.Waiting, 0, "waiting >= 0")
	// Tasks a group held back join without room; under DropOldest a task
	// with a handle counts until the worker it was handed to starts it; a
	// retry takes a place only if one is free.
	if r.bounded && r.groupTasks.Load() == 0 && r.policy != DropOldest && !r.retrying.Load() {
		assert.LessOrEqual(r.t, s.Waiting, r.bound, "waiting <= bound")
	}
	assert.True(r.t, r.checkKeys(0, len(r.keysUsed)), "Status.Keys %d with %d keys given", r.p.counts.keys.Load(), len(r.keysUsed))
}

// checkQuiet waits for a quiet moment, every other goroutine of the
// bubble blocked, and checks what holds then: Status.Busy is the number of
// task funcs running (see track). A task handed to a worker has started by
// then, or been skipped; a send that a stop refused has been taken out.
func (r *fuzzRun) checkQuiet() {
	synctest.Wait()
	s := r.p.Status()
	assert.Equal(r.t, int(r.running.Load()), s.Busy, "Status.Busy in a quiet moment: %+v", s)
}

// group runs a Group of arg%5+1 tasks that take arg ms each, limited to
// arg%3 at once (0: no limit); with arg%4 == 0 the first one fails. A
// goroutine waits for it and checks what Wait says.
func (r *fuzzRun) group(arg int) {
	g := r.p.Group(context.Background())
	if arg%3 > 0 {
		g.SetLimit(arg % 3)
	}
	for i := range arg%5 + 1 {
		t := r.newTask(0, 1, arg%3 == 0) // a limit holds tasks back: not ordered
		r.groupGo(g, func(ctx context.Context) (err error) {
			r.keyRun(t, func() {
				r.body(func() {})()
				if i == 0 && arg%4 == 0 {
					err = errTask
					return
				}
				err = sleepOrCause(ctx, arg)
			})()
			return err
		}, r.keyOptions(t, true)...)
	}
	r.pending.Go(func() {
		// ErrStopped is possible under StopWait too: tasks the limit held
		// back had not reached the pool when it stopped taking tasks.
		r.checkGroupErr(g.Wait(), "Group.Wait")
	})
	synctest.Wait()
}

// checkGroupErr checks what a group's Wait returned.
func (r *fuzzRun) checkGroupErr(err error, what string) {
	switch {
	case err == nil, errors.Is(err, errTask), errors.Is(err, ErrStopped):
	case refusedFull(err):
		assert.True(r.t, r.bounded && r.refuses(), "%s: ErrQueueFull under %v: %v", what, r.policy, err)
	case errors.Is(err, errDropped):
		assert.True(r.t, r.bounded && r.policy == DropOldest, "%s: errDropped under %v: %v", what, r.policy, err)
	case errors.Is(err, errExpired):
		assert.True(r.t, r.expires, "%s: errExpired without WithQueueTimeout", what)
	default:
		assert.Fail(r.t, what, "%v", err)
	}
}

// sharedGo gives a task that takes arg ms to the run's one group, limited
// to 2 at once; every seventh fails. The group is waited for once the pool
// has stopped.
func (r *fuzzRun) sharedGo(arg int) {
	if r.shared == nil {
		r.shared = r.p.Group(context.Background())
		r.shared.SetLimit(2)
		g := r.shared
		r.pending.Go(func() {
			<-r.p.sig.stopped
			r.checkGroupErr(g.Wait(), "shared Group.Wait")
		})
	}
	t := r.newTask(0, 1, false) // limited: not ordered
	r.groupGo(r.shared, func(ctx context.Context) (err error) {
		r.keyRun(t, func() {
			r.body(func() {})()
			if arg%7 == 0 {
				err = errTask
				return
			}
			err = sleepOrCause(ctx, arg)
		})()
		return err
	}, r.keyOptions(t, true)...)
}

// groupGo gives fn to g. Every Group.Go call is counted in Submitted, held
// back, skipped or dropped as it may be, but for one refused as any submit
// is: on a stopping pool, by a full queue (Reject, or DropOldest once
// scheduled tasks may fill it), or under Block when the group's context
// ends while it waits for room. So a call that returned while the pool was
// not stopping, under none of those policies, is surely counted.
func (r *fuzzRun) groupGo(g *Group, fn func(context.Context) error, opts ...TaskOption) {
	r.maybe.Add(1)
	r.groupTasks.Add(1)
	mayRefuse := r.bounded && (r.policy == Block || r.refuses())
	g.Go(trackFn(r, fn), opts...)
	if !mayRefuse && !r.p.Stopped() {
		r.groupSure.Add(1)
	}
}

// sleepOrCause waits ms milliseconds, or returns the cause if ctx ends
// first.
func sleepOrCause(ctx context.Context, ms int) error {
	select {
	case <-time.After(time.Duration(ms) * time.Millisecond):
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// goTask makes a Task whose fn sleeps arg ms and watches its context;
// arg%4 picks a plain ctx, a deadline, a Task.cancel, or a ctx canceled at
// once.
// A goroutine waits for it and checks what Wait says.
func (r *fuzzRun) goTask(arg int) {
	ctx, cancel := context.WithCancel(context.Background())
	if arg%4 == 1 {
		ctx, cancel = context.WithTimeout(context.Background(), time.Duration(arg)*time.Millisecond)
	}
	var ran atomic.Bool
	t := r.newTask(0, 1, true)
	stopped := r.p.Stopped()
	task := r.p.Go(ctx, trackFn(r, func(ctx context.Context) (err error) {
		r.keyRun(t, func() {
			ran.Store(true)
			r.body(func() {})()
			err = sleepOrCause(ctx, arg)
		})()
		return err
	}), r.keyOptions(t, true)...)
	r.checkHandleRefusedAsStopped(stopped, task, "Go")
	r.maybe.Add(1)
	r.handles = append(r.handles, task)
	switch arg % 4 {
	case 2:
		task.cancel()
	case 3:
		cancel()
	}
	r.pending.Go(func() {
		defer cancel()
		err := task.Wait()
		if err == nil {
			assert.True(r.t, ran.Load(), "Task.Wait returned nil but fn never ran")
		}
		r.checkHandleErr(err, true, "Task.Wait")
	})
	synctest.Wait()
}

// delayedTask makes a handle due arg*100ms from now: a Task by Delay for an
// even arg, a Future by At for an odd one. Under DropOldest, scheduled
// tasks that fill the bound make the pool refuse new tasks (ErrQueueFull).
func (r *fuzzRun) delayedTask(arg int) {
	r.delayed.Store(true)
	wait := time.Duration(arg) * 100 * time.Millisecond
	due := time.Now().Add(wait)
	ranEarly := func(what string) {
		assert.False(r.t, time.Now().Before(due), "%s ran before it was due", what)
	}
	r.maybe.Add(1)
	t := r.newTask(0, 1, false) // ready when due: not ordered
	stopped := r.p.Stopped()
	if arg%2 == 0 {
		task := r.p.Go(context.Background(), trackFn(r, func(ctx context.Context) error {
			ranEarly("a delayed Task")
			r.keyRun(t, r.body(func() {}))()
			return nil
		}), append(r.keyOptions(t, true), TaskOption{Delay: wait})...)
		r.checkHandleRefusedAsStopped(stopped, task, "Go with Delay")
		r.handles = append(r.handles, task)
		r.pending.Go(func() { r.checkHandleErr(task.Wait(), true, "delayed Task.Wait") })
		return
	}
	f := GoResult(context.Background(), r.p, trackCall(r, func(ctx context.Context) (int, error) {
		ranEarly("a delayed Future")
		r.keyRun(t, r.body(func() {}))()
		return arg, nil
	}), append(r.keyOptions(t, true), TaskOption{Delay: time.Until(due)})...)
	r.checkHandleRefusedAsStopped(stopped, f, "GoResult with a Delay")
	r.handles = append(r.handles, f)
	r.pending.Go(func() {
		v, err := f.Wait()
		if err == nil {
			assert.Equal(r.t, arg, v, "delayed Future value")
		}
		r.checkHandleErr(err, true, "delayed Future.Wait")
	})
}

// optionTask makes a Task with per-task options picked by arg (0 to 19):
// a priority from -2 to 2, and by arg/5 a Backoff retry with fn failing its
// first arg%3 runs; a weight of arg%4+1, which may be more than the pool's
// size; a weight of 2 with a retry after one failure; or a policy that
// always retries, ended by a Permanent error; and a Label (see fuzzLabel).
// Its fn meters the slots it takes. Wait must report success, a Permanent
// end after one run, or why the task stopped.
func (r *fuzzRun) optionTask(arg int) {
	opts := []TaskOption{{Priority: arg%5 - 2}}
	weight, fails, permanent := 1, 0, false
	switch arg / 5 {
	case 0:
		opts, fails = append(opts, TaskOption{Retry: Backoff(10*time.Millisecond, 40*time.Millisecond, 2)}), arg%3
	case 1:
		weight = arg%4 + 1
		opts = append(opts, TaskOption{Weight: weight})
	case 2:
		weight, fails = 2, 1
		opts = append(opts, TaskOption{Weight: weight, Retry: Backoff(10*time.Millisecond, 40*time.Millisecond, 1)})
	default:
		fails, permanent = 1, true
		opts = append(opts, TaskOption{Retry: func(int, error) (time.Duration, bool) { return 0, true }})
	}
	t := r.newTask(arg%5-2, weight, fails == 0 || permanent) // a Permanent end after one run: no retry
	opts = append(opts, TaskOption{Label: fuzzLabel(arg%5-2, max(weight, 1), t.key)})
	opts = append(opts, r.keyOptions(t, false)...)
	if fails > 0 {
		r.delayed.Store(true)
		r.retrying.Store(true)
	}
	var runs atomic.Int32
	if t.key != "" && fails > 0 && !permanent {
		t.hold = &keyHold{key: t.key, weight: weight}
		t.again = func() bool { return int(runs.Load()) <= fails }
	}
	body := r.meter.wrapWeighted(int64(weight), func() { r.ran.Add(1) })
	stopped := r.p.Stopped()
	task := r.p.Go(context.Background(), trackFn(r, func(ctx context.Context) (err error) {
		r.keyRun(t, func() {
			body()
			switch n := runs.Add(1); {
			case int(n) > fails:
				err = nil
			case permanent:
				err = Permanent(errTask)
			default:
				err = errTask
			}
		})()
		return err
	}), opts...)
	if t.hold != nil {
		r.keyRuns.returned(t.hold, task.Done())
	}
	r.checkHandleRefusedAsStopped(stopped, task, "Go with options")
	r.maybe.Add(1)
	r.handles = append(r.handles, task)
	r.pending.Go(func() {
		err := task.Wait()
		if final := err == nil || err == errTask || isPermanent(err); !final && runs.Load() > 0 {
			r.unrerun.Add(1)
		}
		switch {
		case errors.Is(err, ErrTooHeavy):
			assert.Greater(r.t, weight, 1, "a task of weight 1 was too heavy")
			r.tooHeavy.Add(1)
		case err == errTask || isPermanent(err): // a run's own error, not why a retry never came
			// Retries end early only when the task's context ends: a Task.cancel
			// or a Shutdown that gave up, while it ran.
			ended := permanent && runs.Load() == 1 || !permanent && (r.anyStop.Load() || r.canceled.Load() > 0)
			assert.True(r.t, ended, "a task ended with its run's error after %d runs (permanent %v): %v", runs.Load(), permanent, err)
		default:
			r.checkHandleErr(err, true, "option Task.Wait")
		}
	})
}

// call makes a Future whose fn returns arg, and checks what Wait returns.
func (r *fuzzRun) call(arg int) {
	t := r.newTask(0, 1, true)
	f := GoResult(context.Background(), r.p, trackCall(r, func(ctx context.Context) (v int, err error) {
		r.keyRun(t, func() {
			r.body(func() {})()
			v, err = arg, sleepOrCause(ctx, arg)
		})()
		return v, err
	}), r.keyOptions(t, true)...)
	r.maybe.Add(1)
	r.handles = append(r.handles, f)
	r.pending.Go(func() {
		v, err := f.Wait()
		if err == nil {
			assert.Equal(r.t, arg, v, "Future value")
		}
		r.checkHandleErr(err, true, "Future.Wait")
	})
}

// mapItems ranges, from another goroutine, over a Map (an even arg) or a
// MapUnordered of arg%4+2 items that take arg ms each, with a window of
// arg%3 (0: the default), breaking after arg%5 outcomes (0: never). It
// checks each outcome as a handle's, the order of Map's results, and that
// none of the loop's tasks runs once the loop returned.
func (r *fuzzRun) mapItems(arg int) {
	n, window, breakAt := arg%4+2, arg%3, arg%5
	mapper := Map[int, int]
	if arg%2 == 1 {
		mapper = MapUnordered[int, int]
	}
	tasks := make([]fuzzTask, n)
	for i := range tasks {
		tasks[i] = r.newTask(0, 1, false) // submitted from the loop's goroutine: not ordered
	}
	r.maybe.Add(int64(n))
	var running atomic.Int64 // the loop's fns running
	fn := func(ctx context.Context, item int) (v int, err error) {
		running.Add(1)
		defer running.Add(-1)
		r.track(r.keyRun(tasks[item], func() {
			r.body(func() {})()
			v, err = item, sleepOrCause(ctx, arg)
		}))()
		return v, err
	}
	opts := append(r.keyOptions(tasks[0], true), TaskOption{Window: window})
	r.pending.Go(func() {
		seen := map[int]bool{}
		k := 0
		for v, err := range mapper(context.Background(), r.p, slices.Values(seq(n)), fn, opts...) {
			if err == nil {
				assert.False(r.t, seen[v], "Map yielded item %d twice", v)
				seen[v] = true
				if arg%2 == 0 {
					assert.Equal(r.t, k, v, "Map's result %d", k)
				}
			}
			r.checkHandleErr(err, false, "Map item")
			if k++; k == breakAt {
				break
			}
		}
		assert.LessOrEqual(r.t, k, n, "outcomes of a Map loop")
		r.mapUnseen.Add(int64(n - k))
		assert.Zero(r.t, running.Load(), "items of a Map loop running once it returned")
	})
	synctest.Wait()
}

// checkHandleErr checks what a handle's Wait (or DoWait) returned, and
// counts its refusals and drops. ctxErrs says whether the task's context
// may have ended.
// checkHandleRefusedAsStopped is checkRefusedAsStopped for a handle, which
// a refusing call settles before it returns.
func (r *fuzzRun) checkHandleRefusedAsStopped(stopped bool, h interface{ Done() <-chan struct{} }, what string) {
	if !stopped {
		return
	}
	if !assert.True(r.t, isClosed(h.Done()), "%s on a stopping pool returned an unsettled handle", what) {
		return
	}
	var err error
	switch h := h.(type) {
	case *Task:
		err = h.Wait()
	case *Future[int]:
		_, err = h.Wait()
	}
	assert.ErrorIs(r.t, err, ErrStopped, "%s called on a stopping pool", what)
}

func (r *fuzzRun) checkHandleErr(err error, ctxErrs bool, what string) {
	switch {
	case err == nil:
	case errors.Is(err, ErrStopped):
		assert.True(r.t, r.anyStop.Load(), "%s: ErrStopped without a stop: %v", what, err)
	case refusedFull(err):
		assert.True(r.t, r.bounded && r.refuses(), "%s: ErrQueueFull under %v: %v", what, r.policy, err)
		r.rejectedSure.Add(1)
	case errors.Is(err, errDropped):
		assert.True(r.t, r.bounded && r.policy == DropOldest, "%s: errDropped under %v: %v", what, r.policy, err)
		r.droppedSure.Add(1)
	case errors.Is(err, errExpired):
		assert.True(r.t, r.expires, "%s: errExpired without WithQueueTimeout", what)
	default:
		assert.True(r.t, ctxErrs && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)), "%s: %v", what, err)
	}
}

// body wraps a task so that the run counts and meters it.
func (r *fuzzRun) body(task func()) func() {
	return r.meter.wrap(func() {
		r.ran.Add(1)
		task()
	})
}

// track wraps a task so that the run counts it in running while it runs,
// until it returns, panics or calls runtime.Goexit.
func (r *fuzzRun) track(task func()) func() {
	return func() {
		r.running.Add(1)
		defer r.running.Add(-1)
		task()
	}
}

// trackFn is track for a Task's or a group task's fn.
func trackFn(r *fuzzRun, fn func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		r.running.Add(1)
		defer r.running.Add(-1)
		return fn(ctx)
	}
}

// trackCall is track for a Future's fn.
func trackCall[T any](r *fuzzRun, fn func(context.Context) (T, error)) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) {
		r.running.Add(1)
		defer r.running.Add(-1)
		return fn(ctx)
	}
}

// plain makes a plain task of the run around task.
func (r *fuzzRun) plain(task func()) *plainTask {
	pt := &plainTask{}
	pt.fn = r.track(r.body(func() {
		pt.runs.Add(1)
		task()
	}))
	r.mu.Lock()
	r.plains[funcKey(pt.fn)] = pt
	r.mu.Unlock()
	return pt
}

// deadLetter is the run's dead-letter handler: it records the letter on
// its task and, if the policy byte says so, submits a new plain task for
// each of the first maxResubmits letters (see submitChild); every seventh
// letter it then panics, and every seventh after the fifth it calls
// runtime.Goexit.
func (r *fuzzRun) deadLetter(task func(), reason error) {
	r.inHandler.Add(1)
	defer r.inHandler.Add(-1)
	r.mu.Lock()
	if pt := r.plains[funcKey(task)]; pt != nil {
		pt.letters = append(pt.letters, reason)
	} else {
		r.strays++
	}
	n := r.letters
	r.letters++
	r.mu.Unlock()
	if r.resubmits.Add(-1) >= 0 {
		r.submitChild() // a new plain task, from the deliverer goroutine
	}
	switch n % 7 {
	case 3:
		r.handlerPanics.Add(1)
		panic("dead-letter handler")
	case 5:
		runtime.Goexit()
	}
}

// settle records what a call that returns an error said about pt.
func (r *fuzzRun) settle(pt *plainTask, err error, what string) {
	if err == nil {
		pt.verdict.Store(verdictAccepted)
		return
	}
	pt.verdict.Store(verdictRefused)
	switch {
	case errors.Is(err, ErrStopped):
		assert.True(r.t, r.anyStop.Load(), "%s refused without a stop: %v", what, err)
	case refusedFull(err):
		assert.True(r.t, r.bounded && r.refuses(), "%s: ErrQueueFull under %v", what, r.policy)
		r.rejectedSure.Add(1)
	case errors.Is(err, context.DeadlineExceeded):
		assert.True(r.t, r.bounded && r.policy == Block, "%s: gave up waiting for room under %v", what, r.policy)
	case errors.Is(err, ErrTooHeavy):
		r.rejectedSure.Add(1)
	default:
		assert.Fail(r.t, what, "%v", err)
	}
}

// submit submits a plain task with Do.
func (r *fuzzRun) submit(task func()) {
	pt := r.plain(task)
	stopped := r.p.Stopped()
	err := r.p.Do(pt.fn)
	r.checkRefusedAsStopped(stopped, err, "Do")
	r.settle(pt, err, "Do")
}

// checkRefusedAsStopped checks that a call made once the pool was stopping
// (stopped: Stopped reported true before the call) was refused as stopped:
// never as a full queue or a task too heavy, which would count it.
func (r *fuzzRun) checkRefusedAsStopped(stopped bool, err error, what string) {
	if stopped {
		assert.ErrorIs(r.t, err, ErrStopped, "%s called on a stopping pool", what)
	}
}

// submitChild is a task that submits a child: with tryDo under Block,
// so that workers never all wait for room that only a worker can free.
func (r *fuzzRun) submitChild() {
	if r.bounded && r.policy == Block {
		r.tryDo(func() {})
		return
	}
	r.submit(func() {})
}

// plainOptionTask gives a plain task options through DoContext, with a
// live ctx when arg is odd and with one already done when it is even (a
// try, which never waits for room and may be refused as ErrQueueFull under
// every bound): a priority (none for a try with a delay), a delay of 150
// or 200ms when arg%4 >= 2, and a
// weight of 2 when arg%3 == 2 (too heavy for a pool of one, or after a
// Resize to one); the live ones, and keyed ones, carry a Label (see
// fuzzLabel), and a try with a delay alone takes the path without a
// carrier. A task lost once accepted goes to the dead-letter handler, which
// checkPlainTasks checks.
func (r *fuzzRun) plainOptionTask(arg int) {
	priority, try := arg%5-2, arg%2 == 0
	if try && arg%4 >= 2 {
		priority = 0 // a try with a delay has no priority: with a delay alone it takes the path without a carrier
	}
	opts := []TaskOption{{Priority: priority}}
	if arg%4 >= 2 {
		r.delayed.Store(true)
		opts = append(opts, TaskOption{Delay: time.Duration(arg%4+1) * 50 * time.Millisecond})
	}
	weight := 1
	if arg%3 == 2 {
		weight = 2
		opts = append(opts, TaskOption{Weight: 2})
	}
	t := r.newTask(priority, weight, arg%4 < 2)
	if !try || t.key != "" { // the live ones have a label; the tries with a delay alone keep their carrier-less path, unless keyed
		opts = append(opts, TaskOption{Label: fuzzLabel(priority, weight, t.key)})
	}
	opts = append(opts, r.keyOptions(t, false)...)
	pt := r.plain(r.keyRun(t, sleepFor(arg%5)))
	ctx := context.Background()
	if try {
		ctx = doneContext
	}
	stopped := r.p.Stopped()
	err := r.p.DoContext(ctx, pt.fn, opts...)
	r.checkRefusedAsStopped(stopped, err, "DoContext with options")
	if try && refusedFull(err) {
		assert.True(r.t, r.bounded, "a try with options refused as ErrQueueFull without a bound")
		pt.verdict.Store(verdictRefused)
		r.rejectedSure.Add(1)
		return
	}
	r.settle(pt, err, "DoContext with options")
}

// submitPlain submits a plain task with Submit, which panics once a stop
// began.
func (r *fuzzRun) submitPlain(task func()) {
	pt := r.plain(task)
	defer func() {
		if v := recover(); v != nil {
			err, _ := v.(error)
			assert.ErrorIs(r.t, err, ErrStopped, "Submit panicked")
			assert.True(r.t, r.anyStop.Load(), "Submit panicked without a stop")
			pt.verdict.Store(verdictRefused)
		}
	}()
	stopped := r.p.Stopped()
	r.p.Submit(pt.fn)
	assert.False(r.t, stopped, "Submit on a stopping pool did not panic")
	pt.verdict.Store(verdictSubmitted)
}

// burst submits arg%4+2 plain tasks at once, each from a goroutine of its
// own, with Submit, Do, or DoContext with a ctx that ends after a few ms,
// and waits until each was accepted, refused, or waits for room (under
// Block, in the lane while it is open, or parked with dispatch). So
// submitters wait for room side by side, give up, get room as workers
// take tasks, or are refused by a stop (op 13) that races with them. Its
// tasks are not ordered: concurrent calls have no order.
func (r *fuzzRun) burst(arg int) {
	for i := range arg%4 + 2 {
		r.pending.Go(func() {
			switch (arg + i) % 3 {
			case 0:
				r.submitPlain(sleepFor(i))
			case 1:
				r.submit(sleepFor(i))
			default:
				r.doContext(3*i + 1) // a ctx that ends after 3i+1 ms
			}
		})
	}
	synctest.Wait()
}

// tryDo submits a plain task with DoContext and a ctx already done: a try.
func (r *fuzzRun) tryDo(task func()) {
	pt := r.plain(task)
	if tryDo(r.p, pt.fn) {
		pt.verdict.Store(verdictAccepted)
		return
	}
	pt.verdict.Store(verdictRefused)
	assert.True(r.t, r.anyStop.Load() || r.bounded && (r.policy != DropOldest || r.refuses()), "a try refused under %v, bound %d, without a stop", r.policy, r.bound)
	r.rejectedMaybe.Add(1)
}

// doContext submits a plain task with DoContext; its ctx ends after arg ms
// when arg%3 > 0.
func (r *fuzzRun) doContext(arg int) {
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	try := arg%6 == 3 // a ctx already done: a try, which never waits for room
	switch {
	case try:
		ctx = doneContext
	case arg%3 > 0:
		ctx, cancel = context.WithTimeout(ctx, time.Duration(arg)*time.Millisecond)
	}
	defer cancel()
	pt := r.plain(sleepFor(arg % 7))
	stopped := r.p.Stopped()
	err := r.p.DoContext(ctx, pt.fn)
	r.checkRefusedAsStopped(stopped, err, "DoContext")
	if try && refusedFull(err) {
		assert.True(r.t, r.bounded, "a try refused as ErrQueueFull without a bound")
		pt.verdict.Store(verdictRefused)
		r.rejectedSure.Add(1)
		return
	}
	r.settle(pt, err, "DoContext")
}

// doBatch submits arg%5+1 plain tasks with DoBatch, with a nil among them
// when arg%3 == 0; all of them share the call's verdict.
func (r *fuzzRun) doBatch(arg int) {
	var batch []func()
	var pts []*plainTask
	for i := range arg%5 + 1 {
		if i == 1 && arg%3 == 0 {
			batch = append(batch, nil)
		}
		pt := r.plain(sleepFor(arg % 4))
		pts = append(pts, pt)
		batch = append(batch, pt.fn)
	}
	stopped := r.p.Stopped()
	err := r.p.DoBatch(batch)
	r.checkRefusedAsStopped(stopped, err, "DoBatch")
	switch {
	case refusedFull(err):
		assert.True(r.t, r.bounded && (len(pts) > r.bound || r.refuses()), "DoBatch of %d: ErrQueueFull under %v, bound %d", len(pts), r.policy, r.bound)
		r.rejectedSure.Add(int64(len(pts)))
		for _, pt := range pts {
			pt.verdict.Store(verdictRefused)
		}
	default:
		for _, pt := range pts {
			r.settle(pt, err, "DoBatch")
		}
	}
}

// resize resizes the pool to n; the new size shows at once unless a stop
// began. (A Resize that races with a stop may still apply, so the largest
// size counts it either way.)
func (r *fuzzRun) resize(n int) {
	if int64(n) > r.maxSize.Load() {
		r.maxSize.Store(int64(n))
	}
	r.p.Resize(n)
	switch {
	case r.anyStop.Load() || r.sized: // (a boundary may come before the check)
	case r.adapts:
		assert.LessOrEqual(r.t, r.p.Size(), n, "Size after Resize: the ceiling holds at once")
	default:
		assert.Equal(r.t, n, r.p.Size(), "Size after Resize")
	}
}

// waitIdle calls WaitIdle from another goroutine: with a ctx that ends
// after arg*10ms when arg is odd, and otherwise one that never ends.
func (r *fuzzRun) waitIdle(arg int) {
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if arg%2 == 1 {
		ctx, cancel = context.WithTimeout(ctx, time.Duration(arg)*10*time.Millisecond)
	}
	r.pending.Go(func() {
		defer cancel()
		switch err := r.p.WaitIdle(ctx); {
		case err == nil:
		case errors.Is(err, ErrStopped):
			assert.True(r.t, r.anyStop.Load(), "WaitIdle: ErrStopped without a stop")
		default:
			assert.True(r.t, arg%2 == 1 && errors.Is(err, context.DeadlineExceeded), "WaitIdle: %v", err)
		}
	})
	synctest.Wait()
}

func (r *fuzzRun) check(stopWaitOnly bool) {
	t := r.t
	for _, cancel := range r.cancels {
		cancel()
	}
	s := requireStoppedClean(t, r.p)
	stopWaitOnly = stopWaitOnly && !r.dropping.Load()
	accepted, droppedLetters, rejectedLetters := r.checkPlainTasks()
	maybe := uint64(r.maybe.Load())
	assert.GreaterOrEqual(t, s.Submitted, accepted+uint64(r.groupSure.Load()), "submitted: accepted plain tasks and group tasks counted from their Go call")
	assert.LessOrEqual(t, s.Submitted, accepted+maybe, "submitted")
	assert.Equal(t, r.panics.Load()+r.handlerPanics.Load()+r.weightPanicked.Load(), r.handled.Load(), "panics handled: tasks', the dead-letter handler's and the key weight func's")
	assert.Equal(t, uint64(r.panics.Load()), s.Panicked, "panicked: task panics only")
	assert.LessOrEqual(t, r.meter.peak.Load(), r.maxSize.Load(), "peak concurrency")
	assert.Equal(t, uint64(r.ran.Load()), s.Completed+s.Retried+uint64(r.unrerun.Load()), "completed + retried + runs whose retry never ran == task bodies run")
	if !r.expires {
		assert.Zero(t, s.Expired, "expired without WithQueueTimeout")
	}
	assert.LessOrEqual(t, s.Canceled, maybe, "only Tasks, Futures and group tasks are canceled")
	dropped := droppedLetters + uint64(r.droppedSure.Load())
	assert.GreaterOrEqual(t, s.Dropped, dropped, "dropped")
	assert.LessOrEqual(t, s.Dropped, dropped+uint64(r.groupTasks.Load()+r.tooHeavy.Load()+r.mapUnseen.Load()), "dropped")
	rejected := rejectedLetters + uint64(r.rejectedSure.Load())
	assert.GreaterOrEqual(t, s.Rejected, rejected, "rejected")
	assert.LessOrEqual(t, s.Rejected, rejected+uint64(r.rejectedMaybe.Load()+r.groupTasks.Load()+r.tooHeavy.Load()+r.mapUnseen.Load()), "rejected")
	if !r.bounded || r.policy != DropOldest || r.bound == 0 {
		assert.LessOrEqual(t, s.Dropped, uint64(r.tooHeavy.Load()), "dropped without DropOldest, but for tasks too heavy")
	}
	if stopWaitOnly { // but for the group tasks that SetLimit held back, which every stop drops
		assert.LessOrEqual(t, s.Abandoned, uint64(r.groupTasks.Load()), "StopWait abandoned tasks")
	}
	if r.maxSize.Load() == 1 {
		order := r.order.order()
		assert.True(t, sortedInts(order), "FIFO start order %v", order)
	}
	r.checkKeyed()
	if r.hooked {
		r.checkObserved(s)
	}
}

// checkKeyed checks, once the pool stopped, what the keyed runs saw: no
// key past its limit (a task that waits for a retry keeps its slots, see
// keyMeter), Status.Keys at least 1 while a keyed task ran, the
// weight func called on dispatch and at most once per keyed call; and the
// start order of the ordered tasks: within a key (the tasks without one
// included) and a priority level, the order of their calls, in a pool of
// one worker (never resized up), and under WithKeys(1, nil) for each key,
// whose tasks then run one at a time.
func (r *fuzzRun) checkKeyed() {
	t := r.t
	r.keyRuns.mu.Lock()
	assert.Empty(t, r.keyRuns.over, "keys past their limit")
	assert.Zero(t, r.keyRuns.noKey, "keyed runs that saw Status.Keys below 1")
	r.keyRuns.mu.Unlock()
	assert.Zero(t, r.weightOff.Load(), "key weight calls off the dispatcher goroutine")
	assert.LessOrEqual(t, r.weightCalls.Load(), r.keyedCalls.Load(), "key weight calls <= calls with a key")
	r.starts.mu.Lock()
	defer r.starts.mu.Unlock()
	for c, seqs := range r.starts.starts {
		if r.maxSize.Load() == 1 || c.key != "" && r.keyLimit == 1 {
			assert.True(t, sortedInts(seqs), "start order of key %q at priority %d: %v", c.key, c.priority, seqs)
		}
	}
}

// checkObserved checks what the hooks and the logger got, which is
// complete once the stop returned: a start and a finish per run, a
// TaskDropped per task counted as never run, none on the dispatcher; an
// Error record per panic the handler took, one stop summary with the final
// counts.
func (r *fuzzRun) checkObserved(s Status) {
	t, h := r.t, &r.hooks
	assert.Equal(t, r.ran.Load(), h.started.Load(), "TaskStarted calls == task bodies run")
	assert.Equal(t, h.started.Load(), h.finished.Load(), "TaskFinished calls == TaskStarted calls")
	assert.Equal(t, neverRun(s), uint64(h.dropped.Load()),
		"TaskDropped calls == rejected + dropped + abandoned + canceled + expired")
	assert.Zero(t, h.onDispatcher.Load(), "hook calls on the dispatcher")
	assert.Zero(t, h.negative.Load(), "negative waits or runs")
	h.mu.Lock()
	assert.Zero(t, h.wrongInfo.Load(), "TaskInfos that do not match their task, such as %v", h.wrong)
	h.mu.Unlock()
	r.logs.mu.Lock()
	defer r.logs.mu.Unlock()
	assert.Equal(t, 1, r.logs.counts["pool stopped"], "stop summaries")
	assert.Equal(t, s.Submitted, r.logs.submitted, "the stop summary's submitted count")
	assert.Equal(t, int(r.panics.Load()), r.logs.counts["task panicked"], "task panic records")
	assert.Equal(t, int(r.handlerPanics.Load()), r.logs.counts["dead-letter handler panicked"], "dead-letter handler panic records")
	assert.Equal(t, int(r.weightPanicked.Load()), r.logs.counts["key weight func panicked"], "key weight func panic records")
}

// checkPlainTasks checks every plain task against what its call said, and
// returns how many were accepted, and how many of the dead letters were
// drops and Submits refused under Reject.
func (r *fuzzRun) checkPlainTasks() (accepted, droppedLetters, rejectedLetters uint64) {
	t := r.t
	r.mu.Lock()
	defer r.mu.Unlock()
	assert.Zero(t, r.strays, "dead letters for tasks that are not plain tasks")
	for _, pt := range r.plains {
		runs, letters := int(pt.runs.Load()), pt.letters
		desc := fmt.Sprintf("verdict %d, runs %d, letters %v", pt.verdict.Load(), runs, letters)
		switch pt.verdict.Load() {
		case verdictRefused:
			assert.True(t, runs == 0 && len(letters) == 0, "a refused plain task ran or became a dead letter: %s", desc)
			continue
		case verdictNone:
			assert.Fail(t, "a plain task's call never returned", desc)
			continue
		case verdictSubmitted:
			if len(letters) == 1 && refusedFull(letters[0]) {
				assert.True(t, runs == 0 && r.bounded && r.refuses(), "a Submit refused as ErrQueueFull: %s, under %v", desc, r.policy)
				rejectedLetters++
				continue
			}
		}
		accepted++
		if !assert.Equal(t, 1, runs+len(letters), "an accepted plain task runs or becomes a dead letter, exactly once: %s", desc) {
			continue
		}
		for _, reason := range letters {
			switch {
			case errors.Is(reason, errDropped):
				assert.True(t, r.bounded && r.policy == DropOldest, "errDropped under %v", r.policy)
				droppedLetters++
			case errors.Is(reason, ErrStopped):
				assert.True(t, r.dropping.Load(), "a dead letter for ErrStopped without Stop or Shutdown")
			case errors.Is(reason, errExpired):
				assert.True(t, r.expires, "a dead letter for errExpired without WithQueueTimeout")
			case errors.Is(reason, ErrTooHeavy): // a Resize made the pool smaller than its weight
				r.tooHeavy.Add(1)
				droppedLetters++
			default:
				assert.Fail(t, "dead letter reason", "%v", reason)
			}
		}
	}
	return accepted, droppedLetters, rejectedLetters
}

// refuses reports whether a full queue may refuse a task with ErrQueueFull:
// under Reject, and under DropOldest once scheduled tasks may fill it.
func (r *fuzzRun) refuses() bool {
	switch {
	case r.policy == Reject:
		return true
	case r.bound == 0: // no room: DropOldest refuses as Reject, and every policy refuses a delayed task
		return r.policy == DropOldest || r.delayed.Load()
	}
	return r.policy == DropOldest && r.delayed.Load()
}

func sortedInts(s []int) bool {
	for i := 1; i < len(s); i++ {
		if s[i] < s[i-1] {
			return false
		}
	}
	return true
}

// A FuzzPool input with many tasks that call runtime.Goexit: a worker that
// Goexits may still be inside its last deferred call (the WaitGroup's Done)
// when the stop returns, which the stack checks accept (see
// finishingGoexit); nothing else of the pool may be running.
func TestGoexitWorkerRunsNoPoolCodeAfterStop(t *testing.T) {
	data := []byte("\x00P\xcbCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC\x1aC\xf9CCCCCCCCCCCCCCCCB\x01")
	deadline := time.Now().Add(1500 * time.Millisecond)
	runs := 0
	for ; time.Now().Before(deadline) && !t.Failed(); runs++ {
		synctest.Test(t, func(t *testing.T) { runOps(t, data) })
	}
	t.Logf("%d runs", runs)
}
