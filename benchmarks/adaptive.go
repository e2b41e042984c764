package main

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/e86d9661/workerpool"
)

// Scenario p measures WithAdaptiveSize against a downstream whose best
// concurrency is known: a service (service.go) with loadSlots slots and a
// service time of loadServe, which slows every call once more than twice
// its slots are in it. Its throughput is C/S for any pool size from C to 2C
// and falls beyond, so the best fixed size is known, and a sweep of fixed
// sizes measures it. Unlike the other scenarios, p runs for minutes and on
// the clock (its tasks sleep); it runs only when -scenarios names it, once
// and quiet whatever -reps and -hog say, each of its runs (a loadRun) in a
// child process of its own.

// Scenario p's setting.
const (
	loadServe    = 10 * time.Millisecond // S
	loadSlots    = 16                    // C at the start; the halving run halves it
	loadClients  = 256                   // the closed loop's clients
	loadOpenRate = 0.7                   // the open loop's arrivals, a fraction of the service's C/S
	loadSeed     = 38                    // the open loop's arrivals: the same for every pool
	adaptiveMin  = 1                     // the adaptive pool: New(adaptiveMin, WithAdaptiveSize(adaptiveMin, adaptiveMax))
	adaptiveMax  = 128
	// openAdaptiveStart is where the adaptive pool starts in the open loop:
	// at max, since the question there is whether it finds a size far
	// below max; started at 1, its first seconds of climbing would queue
	// arrivals (as the backlogged run shows), and their drain would fill
	// the steady state's tail.
	openAdaptiveStart = adaptiveMax
)

var (
	loadSweep = []int{4, 8, 12, 16, 20, 24, 32, 48, 64, 128} // fixed sizes, backlogged, at C and at C/2
	openSizes = []int{16, 24, 32, 128}                       // fixed sizes in the open loop
)

// The length of p's runs, in throughput windows (loadWindow at scale 1;
// -scale multiplies the window, so every span with it). Sizes are sampled
// samplesPerWindow times a window.
const (
	loadWindow       = time.Second
	samplesPerWindow = 10
	sweepWarmUp      = 1  // before a fixed size's measured span, not counted
	sweepSpan        = 5  // a fixed size's measured span
	halfSpan         = 40 // each half of the halving run: at C, then at C/2
	steadySpan       = 20 // the end of each half, and of the open loop: the steady state
	openSpan         = 30
	openGrace        = 1  // after the open loop's last arrival, how long its tasks may take to finish
	reachWithin      = 30 // target: windows until the throughput reaches 0.9x the best fixed size's and stays
)

// The parts of scenario p.
const (
	partSweep = "sweep" // backlogged, a fixed size: sweepWarmUp, then sweepSpan measured
	partHalve = "halve" // backlogged: halfSpan at C, then the service's slots halved for halfSpan
	partOpen  = "open"  // open loop: Poisson arrivals at loadOpenRate of C/S for openSpan
)

// A loadRun is one run of scenario p.
type loadRun struct {
	part     string // partSweep, partHalve or partOpen
	slots    int    // the service's C at the start
	workers  int    // New's maxWorkers
	adaptive bool   // with WithAdaptiveSize(adaptiveMin, adaptiveMax): the pool ours+adaptive; else ours
}

// loadPlan is scenario p's runs: the fixed sizes (pool ours) if fixed, the
// adaptive pool (ours+adaptive) if adaptive. The backlogged adaptive run
// and the halving are one run: its first half is the backlogged run.
func loadPlan(fixed, adaptive bool) []loadRun {
	var plan []loadRun
	if fixed {
		for _, slots := range []int{loadSlots, loadSlots / 2} {
			for _, w := range loadSweep {
				plan = append(plan, loadRun{part: partSweep, slots: slots, workers: w})
			}
		}
	}
	if adaptive {
		plan = append(plan, loadRun{part: partHalve, slots: loadSlots, workers: adaptiveMin, adaptive: true})
	}
	if fixed {
		for _, w := range openSizes {
			plan = append(plan, loadRun{part: partOpen, slots: loadSlots, workers: w})
		}
	}
	if adaptive {
		plan = append(plan, loadRun{part: partOpen, slots: loadSlots, workers: openAdaptiveStart, adaptive: true})
	}
	return plan
}

// pool is the name of the pool the run uses.
func (l loadRun) pool() string {
	if l.adaptive {
		return "ours+adaptive"
	}
	return "ours"
}

// spec is the run as -child takes it: p:part:cSLOTS:wWORKERS/pool.
func (l loadRun) spec() string {
	return fmt.Sprintf("p:%s:c%d:w%d/%s", l.part, l.slots, l.workers, l.pool())
}

// parseLoadRun reads a run of scenario p from -child's scenario and pool.
func parseLoadRun(sid, pool string) (loadRun, error) {
	bad := fmt.Errorf("-child wants p:%s|%s|%s:cSLOTS:wWORKERS/ours or /ours+adaptive, got %s/%s", partSweep, partHalve, partOpen, sid, pool)
	f := strings.Split(sid, ":")
	if len(f) != 4 || f[0] != "p" || !strings.HasPrefix(f[2], "c") || !strings.HasPrefix(f[3], "w") {
		return loadRun{}, bad
	}
	l := loadRun{part: f[1], adaptive: pool == "ours+adaptive"}
	var err1, err2 error
	l.slots, err1 = strconv.Atoi(f[2][1:])
	l.workers, err2 = strconv.Atoi(f[3][1:])
	switch {
	case err1 != nil || err2 != nil || l.slots < 1 || l.workers < 1:
		return loadRun{}, bad
	case l.part != partSweep && l.part != partHalve && l.part != partOpen:
		return loadRun{}, bad
	case pool != "ours" && pool != "ours+adaptive":
		return loadRun{}, bad
	}
	return l, nil
}

// open starts the run's pool: New(workers), or with the adaptive size.
func (l loadRun) open() *workerpool.WorkerPool {
	if l.adaptive {
		return workerpool.New(l.workers, workerpool.WithAdaptiveSize(adaptiveMin, adaptiveMax))
	}
	return workerpool.New(l.workers)
}

// loadTimes are a run's times at a scale.
type loadTimes struct {
	window  time.Duration      // a throughput window: loadWindow × scale, at least 1 ms
	sample  time.Duration      // between size samples
	warmUp  time.Duration      // before the measured span; not counted
	span    time.Duration      // the measured span, a whole number of windows
	halveAt time.Duration      // into the span, when the service's slots are halved; 0: never
	grace   time.Duration      // open loop: how long tasks may take to finish after the last arrival
	steady  [][2]time.Duration // into the span: the spans whose latencies the run reports, in order
}

func (l loadRun) times(scale float64) loadTimes {
	w := max(time.Millisecond, time.Duration(float64(loadWindow)*scale).Round(time.Microsecond))
	t := loadTimes{window: w, sample: w / samplesPerWindow}
	switch l.part {
	case partSweep:
		t.warmUp, t.span = sweepWarmUp*w, sweepSpan*w
		t.steady = [][2]time.Duration{{0, t.span}}
	case partHalve:
		t.span, t.halveAt = 2*halfSpan*w, halfSpan*w
		t.steady = [][2]time.Duration{{(halfSpan - steadySpan) * w, halfSpan * w}, {(2*halfSpan - steadySpan) * w, 2 * halfSpan * w}}
	case partOpen:
		t.span, t.grace = openSpan*w, openGrace*w
		t.steady = [][2]time.Duration{{(openSpan - steadySpan) * w, t.span}, {0, t.span}}
	}
	return t
}

// A loadResult is what a run of scenario p measured, in the child's result.
type loadResult struct {
	Window  time.Duration `json:"window_ns"`
	Done    []int         `json:"done"`      // tasks finished in each window of the measured span
	Sample  time.Duration `json:"sample_ns"` // between size samples
	Sizes   []int         `json:"sizes"`     // Status().MaxWorkers every Sample from the span's start
	Reasons []string      `json:"reasons"`   // Status().SizeReason at the same samples
	Latency []latency     `json:"latency"`   // over each of the run's steady spans (loadTimes.steady), in order

	// The open loop's submitter: how late it submitted arrivals against
	// their schedule (it sleeps until each is due; a late one comes in a
	// burst with those due meanwhile), p99 and max.
	LagP99 time.Duration `json:"lag_p99_ns,omitempty"`
	LagMax time.Duration `json:"lag_max_ns,omitempty"`
}

// latency is a span's task latencies. Backlogged, a task counts in the
// span in which it finished and its latency runs from its submit until
// DoWait returned; in the open loop it counts in the span in which it
// arrived and its latency runs from its submit until it finished, or, for a
// task still unfinished when the pool stopped, until then (a lower bound).
type latency struct {
	From       time.Duration `json:"from_ns"`
	To         time.Duration `json:"to_ns"`
	Tasks      int           `json:"tasks"`
	P50        time.Duration `json:"p50_ns"`
	P99        time.Duration `json:"p99_ns"`
	Unfinished int           `json:"unfinished"`
}

// runLoadChild runs one run of scenario p in this process: the -child side
// of p. It fails if a goroutine outlives the pool.
func runLoadChild(sid, pool string, c config) (result, error) {
	l, err := parseLoadRun(sid, pool)
	if err != nil {
		return result{}, err
	}
	base := runtime.NumGoroutine()
	r := runLoad(l, l.times(c.scale))
	if n := awaitGoroutines(base, 10*time.Second); n > base {
		return result{}, fmt.Errorf("%s: %d goroutines still running after Stop", l.spec(), n-base)
	}
	return r, nil
}

// runLoad runs l with times t and stops its pool.
func runLoad(l loadRun, t loadTimes) result {
	svc := newService(l.slots, loadServe)
	wp := l.open()
	var lr loadResult
	r := measure(0, func() {
		if l.part == partOpen {
			lr = openLoop(wp, svc, t, loadOpenRate*float64(l.slots)/loadServe.Seconds())
		} else {
			lr = closedLoop(wp, svc, t, l.slots/2)
		}
	})
	for _, d := range lr.Done {
		r.Tasks += d
	}
	r.Load = &lr
	return r
}

// A loadTask is one finished task of the closed loop: when it finished
// (into the measured span) and its latency.
type loadTask struct{ at, latency time.Duration }

// closedLoop runs loadClients clients, each giving wp a call to svc and
// waiting for it (DoWait), again and again, through t's warm-up and span;
// at t.halveAt into the span it sets the service's slots to halved. Then it
// stops wp, which abandons the calls still queued (their DoWait returns
// ErrStopped and the client returns) and waits for those running.
func closedLoop(wp *workerpool.WorkerPool, svc *service, t loadTimes, halved int) loadResult {
	start := time.Now()
	from := start.Add(t.warmUp)
	var stop atomic.Bool
	tasks := make([][]loadTask, loadClients) // tasks[i]: client i's, written by it alone until clients.Wait
	var clients sync.WaitGroup
	for i := range loadClients {
		clients.Go(func() {
			call := svc.Call
			for !stop.Load() {
				begin := time.Now()
				if wp.DoWait(call) != nil {
					return // stopped: the run is over
				}
				end := time.Now()
				if end.After(from) {
					tasks[i] = append(tasks[i], loadTask{end.Sub(from), end.Sub(begin)})
				}
			}
		})
	}
	sizes := sampleSizes(wp, from, t)
	if t.halveAt > 0 {
		time.Sleep(time.Until(from.Add(t.halveAt)))
		svc.SetSlots(halved)
	}
	time.Sleep(time.Until(from.Add(t.span)))
	stop.Store(true)
	wp.Stop()
	clients.Wait()
	all := slices.Concat(tasks...)
	r := loadResult{Window: t.window, Done: make([]int, t.span/t.window), Sample: t.sample}
	for _, k := range all {
		if k.at < t.span {
			r.Done[k.at/t.window]++
		}
	}
	for _, s := range t.steady {
		var in []time.Duration
		for _, k := range all {
			if k.at >= s[0] && k.at < s[1] {
				in = append(in, k.latency)
			}
		}
		r.Latency = append(r.Latency, percentiles(s, in, 0))
	}
	r.Sizes, r.Reasons = sizes()
	return r
}

// openLoop gives wp one task per arrival, Poisson at rate per second (the
// same fixed-seed arrivals for every pool) through t's span; each task
// calls svc. After the last arrival it waits up to t.grace for the tasks
// to finish, then stops wp, abandoning those still queued.
func openLoop(wp *workerpool.WorkerPool, svc *service, t loadTimes, rate float64) loadResult {
	rng := rand.New(rand.NewPCG(loadSeed, loadSeed))
	var arrivals []time.Duration // into the span
	for at := time.Duration(0); ; {
		at += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
		if at >= t.span {
			break
		}
		arrivals = append(arrivals, at)
	}
	n := len(arrivals)
	var start time.Time                   // set before the first submit
	submitted := make([]time.Duration, n) // written by the submitter (this goroutine)
	finished := make([]atomic.Int64, n)   // written by the task: since start, 0 while unfinished
	var left atomic.Int64
	left.Store(int64(n))
	tasks := make([]func(), n) // built before the run, one per arrival
	for i := range tasks {
		tasks[i] = func() {
			svc.Call()
			finished[i].Store(int64(time.Since(start)))
			left.Add(-1)
		}
	}
	start = time.Now()
	sizes := sampleSizes(wp, start, t)
	for i, at := range arrivals {
		time.Sleep(time.Until(start.Add(at)))
		submitted[i] = time.Since(start)
		wp.Submit(tasks[i])
	}
	for deadline := start.Add(t.span + t.grace); left.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	stopped := time.Since(start)
	wp.Stop()
	r := loadResult{Window: t.window, Done: make([]int, t.span/t.window), Sample: t.sample}
	lags := make([]time.Duration, n)
	for i := range lags {
		lags[i] = submitted[i] - arrivals[i]
	}
	if n > 0 {
		r.LagP99, r.LagMax = percentiles([2]time.Duration{}, lags, 0).P99, slices.Max(lags)
	}
	for i := range finished {
		if at := time.Duration(finished[i].Load()); at > 0 && at < t.span {
			r.Done[at/t.window]++
		}
	}
	for _, s := range t.steady {
		var in []time.Duration
		unfinished := 0
		for i, at := range submitted {
			if at < s[0] || at >= s[1] {
				continue
			}
			end := time.Duration(finished[i].Load())
			if end == 0 {
				end = stopped
				unfinished++
			}
			in = append(in, end-at)
		}
		r.Latency = append(r.Latency, percentiles(s, in, unfinished))
	}
	r.Sizes, r.Reasons = sizes()
	return r
}

// sampleSizes reads wp's Status every t.sample through t.span from from,
// in a goroutine of its own; samples waits for the last and returns the
// sizes (MaxWorkers) and reasons (SizeReason) it read.
func sampleSizes(wp *workerpool.WorkerPool, from time.Time, t loadTimes) (samples func() ([]int, []string)) {
	n := int(t.span / t.sample)
	sizes, reasons := make([]int, n), make([]string, n)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k := range n {
			time.Sleep(time.Until(from.Add(time.Duration(k) * t.sample)))
			s := wp.Status()
			sizes[k], reasons[k] = s.MaxWorkers, s.SizeReason
		}
	}()
	return func() ([]int, []string) {
		<-done
		return sizes, reasons
	}
}

// percentiles is the p50 and p99 of the latencies of span s.
func percentiles(s [2]time.Duration, latencies []time.Duration, unfinished int) latency {
	l := latency{From: s[0], To: s[1], Tasks: len(latencies), Unfinished: unfinished}
	if len(latencies) > 0 {
		slices.Sort(latencies)
		l.P50 = latencies[len(latencies)*50/100]
		l.P99 = latencies[min(len(latencies)-1, len(latencies)*99/100)]
	}
	return l
}
