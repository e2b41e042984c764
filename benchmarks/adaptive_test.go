package main

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Scenario p runs only when named, and its runs' specs read back as the
// runs they name.
func TestScenarioPIsNamedAndItsRunsReadBack(t *testing.T) {
	assert.NotContains(t, strings.Split(ids(scenarios), ","), "p", "not in the default list")
	ss, load, err := pickScenarios("a, p")
	require.NoError(t, err)
	assert.True(t, load)
	require.Len(t, ss, 1)
	assert.Equal(t, "a", ss[0].id)
	ss, load, err = pickScenarios("p")
	require.NoError(t, err)
	assert.True(t, load)
	assert.Empty(t, ss)
	_, load, err = pickScenarios(ids(scenarios))
	require.NoError(t, err)
	assert.False(t, load)
	_, _, err = pickScenarios("p,zz")
	assert.ErrorContains(t, err, `unknown scenario "zz"`)

	plan := loadPlan(true, true)
	assert.Len(t, plan, 2*len(loadSweep)+1+len(openSizes)+1)
	assert.Len(t, loadPlan(true, false), 2*len(loadSweep)+len(openSizes))
	assert.Equal(t, []loadRun{
		{part: partHalve, slots: loadSlots, workers: adaptiveMin, adaptive: true},
		{part: partOpen, slots: loadSlots, workers: openAdaptiveStart, adaptive: true},
	}, loadPlan(false, true))
	for _, l := range plan {
		sid, pool, _ := strings.Cut(l.spec(), "/")
		back, err := parseLoadRun(sid, pool)
		require.NoError(t, err, l.spec())
		assert.Equal(t, l, back)
	}
	assert.Equal(t, "p:halve:c16:w1/ours+adaptive", plan[2*len(loadSweep)].spec())
	for _, bad := range []string{"p/ours", "p:sweep:c16/ours", "p:walk:c16:w4/ours", "p:sweep:c0:w4/ours", "p:sweep:c16:w4/pond", "p:sweep:16:4/ours"} {
		assert.Error(t, runChild(bad, config{scale: 0.001}), bad)
	}
}

// A run's times at a scale: whole windows, the steady spans at the end of
// each half.
func TestLoadTimes(t *testing.T) {
	h := loadRun{part: partHalve}.times(1)
	assert.Equal(t, time.Second, h.window)
	assert.Equal(t, 100*time.Millisecond, h.sample)
	assert.Equal(t, 80*time.Second, h.span)
	assert.Equal(t, 40*time.Second, h.halveAt)
	assert.Equal(t, [][2]time.Duration{{20 * time.Second, 40 * time.Second}, {60 * time.Second, 80 * time.Second}}, h.steady)
	s := loadRun{part: partSweep}.times(0.01)
	assert.Equal(t, 10*time.Millisecond, s.window)
	assert.Equal(t, 10*time.Millisecond, s.warmUp)
	assert.Equal(t, 50*time.Millisecond, s.span)
	o := loadRun{part: partOpen}.times(1e-9)
	assert.Equal(t, time.Millisecond, o.window, "at least 1 ms")
	assert.Equal(t, [][2]time.Duration{{10 * time.Millisecond, 30 * time.Millisecond}, {0, 30 * time.Millisecond}}, o.steady)
}

func TestStaysFrom(t *testing.T) {
	assert.Equal(t, 1, staysFrom([]float64{1, 9, 5, 9, 9}, 5), "5 is at the limit")
	assert.Equal(t, 4, staysFrom([]float64{9, 9, 9, 4, 9}, 5), "a later dip moves it on")
	assert.Equal(t, 0, staysFrom([]float64{5, 6}, 5))
	assert.Equal(t, -1, staysFrom([]float64{9, 4}, 5), "the last window below: never")
	assert.Equal(t, 2, below([]float64{1, 9, 4}, 5))
}

// windows is n windows of tasks each.
func windows(n, tasks int) []int {
	w := make([]int, n)
	for i := range w {
		w[i] = tasks
	}
	return w
}

// The section of scenario p from made-up runs: the best fixed sizes, the
// targets met and missed, the window table and the open loop.
func TestLoadReport(t *testing.T) {
	ms := time.Millisecond
	sweep := func(slots, workers, tasks int, p99 time.Duration) (loadRun, result) {
		return loadRun{part: partSweep, slots: slots, workers: workers}, result{Load: &loadResult{
			Window: time.Second, Done: windows(sweepSpan, tasks), Sample: 100 * ms,
			Latency: []latency{{P50: p99 - 10*ms, P99: p99}}}}
	}
	r := &run{options: options{load: true, config: config{scale: 1}}, loads: map[loadRun]result{}}
	for _, s := range []struct {
		slots, workers, tasks int
		p99                   time.Duration
	}{{16, 16, 1500, 180 * ms}, {16, 24, 1600, 160 * ms}, {16, 32, 1600, 170 * ms}, {8, 8, 800, 320 * ms}, {8, 24, 400, 640 * ms}} {
		l, res := sweep(s.slots, s.workers, s.tasks, s.p99)
		r.loads[l] = res
	}
	// The adaptive run: 100/s for 5 s, then 1600/s with a dip at 12 s;
	// after the halving 400/s for 10 s, then 800/s. Sizes 23 and 25 in
	// turn from 5 s, 8 from 50 s.
	done := slices.Concat(windows(5, 100), windows(35, 1600), windows(10, 400), windows(30, 800))
	done[12] = 1400
	sizes, reasons := make([]int, 800), make([]string, 800)
	for k := range sizes {
		switch {
		case k < 10:
			sizes[k], reasons[k] = 1, "start"
		case k < 50:
			sizes[k], reasons[k] = 1+k/2, "climb"
		case k < 500:
			sizes[k], reasons[k] = 23+2*(k%2), "hold"
		default:
			sizes[k], reasons[k] = 8, "backoff"
		}
	}
	r.loads[loadRun{part: partHalve, slots: 16, workers: 1, adaptive: true}] = result{Load: &loadResult{
		Window: time.Second, Done: done, Sample: 100 * ms, Sizes: sizes, Reasons: reasons,
		Latency: []latency{{P50: 150 * ms, P99: 200 * ms}, {P50: 300 * ms, P99: 330 * ms}}}}
	open := func(workers int, adaptive bool, p99 time.Duration, unfinished int, size int) {
		s := make([]int, openSpan*samplesPerWindow)
		for k := range s {
			s[k] = size
		}
		r.loads[loadRun{part: partOpen, slots: 16, workers: workers, adaptive: adaptive}] = result{Load: &loadResult{
			Window: time.Second, Done: windows(openSpan, 1120), Sample: 100 * ms, Sizes: s, Reasons: make([]string, len(s)),
			Latency: []latency{{P50: 11 * ms, P99: p99, Unfinished: unfinished}, {P50: 11 * ms, P99: p99, Unfinished: unfinished}},
			LagP99:  ms / 10, LagMax: 2 * ms}}
	}
	open(16, false, 16*ms, 0, 16)
	open(24, false, 15*ms, 0, 24)
	open(128, false, 900*ms, 300, 128)
	open(openAdaptiveStart, true, 19*ms, 0, 70)

	var report bytes.Buffer
	require.NoError(t, r.writeReport(&report))
	md := report.String()
	for _, row := range []string{
		"| backlogged: throughput reaches ≥ 0.9x the best fixed size's and stays | within 30 s | 13 s | yes |\n",
		"| backlogged: p99 latency in steady state vs the best fixed size's | ≤ 1.50x | 1.25x (200.0 / 160.0 ms) | yes |\n",
		"| backlogged: size std / mean in steady state | ≤ 10% | 4.2% (mean 24.0, std 1.00) | yes |\n",
		"| C halved: back at ≥ 0.9x the new best fixed size's, and stays, after the halving | within 30 s | 10 s | yes |\n",
		"| open loop at 70%: p99 latency vs the best fixed size's | ≤ 1.20x | 1.27x (19.0 / 15.0 ms, best fixed 24) | **no** |\n",
		"| open loop at 70%: mean size in steady state | ≤ 64 (max/2) | 70.0 | **no** |\n",
		"| **24** (best) | 1600 | 1.00 | 150.0 | 160.0 |\n",
		"| **8** (best) | 800 | 1.00 | 310.0 | 320.0 |\n",
		"| 12 | failed | | | |\n",
		"- steady state (20 s to 40 s): 1600 tasks/s, p50 150.0 ms, p99 200.0 ms; size mean 24.0, std 1.00 (4.2% of the mean)\n",
		"the adaptive pool reaches it and stays from 13 s; 6 of the half's 40 windows are below it, 0 of the steady state's 20\n",
		"- SizeReason of the half's 400 samples: start 10, climb 40, hold 350\n",
		"the adaptive pool reaches it and stays from 10 s after the halving;",
		"- SizeReason of the half's 400 samples: hold 100, backoff 300\n",
		"| 12 s | 16 | 1400 | 0.88x | 24.0 | 23–25 | hold 10 |\n",
		"| 40 s | 8 | 400 | 0.50x | 24.0 | 23–25 | hold 10 |\n",
		"| ours, 128 | 128.0 | 11.0 | ≥ 900.0 | ≥ 900.0 | 300 | 0.1 / 2.0 |\n",
		"| ours+adaptive, New(128, WithAdaptiveSize(1, 128)) | 70.0 | 11.0 | 19.0 | 19.0 | 0 | 0.1 / 2.0 |\n",
	} {
		assert.Contains(t, md, row)
	}
	assert.NotContains(t, md, "## ns per task", "p alone: no matrices")
	assert.NotContains(t, md, "Scale", "scale 1 says nothing of scale")

	// Without the adaptive runs the targets say what is missing.
	for l := range r.loads {
		if l.adaptive {
			delete(r.loads, l)
		}
	}
	report.Reset()
	require.NoError(t, r.writeReport(&report))
	assert.Contains(t, report.String(), "| backlogged: size std / mean in steady state | ≤ 10% | – (needs ours+adaptive) | – |\n")
	assert.Contains(t, report.String(), "The adaptive pool did not run")
}

// Scenario p end to end at a tiny scale: every run of the plan, the open
// loop's adaptive run in a child process (this test binary, as TestMain
// lets it), the others in this process as a child runs them (with its
// check that no goroutine outlives the pool; a race-enabled child process
// takes a second to start), and the section written from them.
func TestScenarioPAtATinyScale(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	lib := func(name string) library { l, err := findLibrary(name); require.NoError(t, err); return l }
	r := &run{options: options{load: true, timeout: time.Minute, libraries: []library{lib("ours"), lib("ours+adaptive")}, config: config{scale: 0.01}}}
	inChild := loadRun{part: partOpen, slots: loadSlots, workers: openAdaptiveStart, adaptive: true}
	children := 0
	r.runLoadPlan(func(l loadRun, timeout time.Duration) (result, error) {
		if l == inChild {
			children++
			return r.loadChild(exe)(l, timeout)
		}
		sid, pool, _ := strings.Cut(l.spec(), "/")
		return runLoadChild(sid, pool, r.config)
	})
	require.Empty(t, r.failures)
	require.Len(t, r.loads, len(loadPlan(true, true)))
	assert.Equal(t, 1, children)
	for l, res := range r.loads {
		tm := l.times(r.scale)
		if l.part != partSweep { // a sweep's 50 ms may end before a slow size's first task
			assert.Positive(t, res.Tasks, l.spec())
		}
		assert.Len(t, res.Load.Done, int(tm.span/tm.window), l.spec())
		assert.Len(t, res.Load.Sizes, int(tm.span/tm.sample), l.spec())
		assert.Len(t, res.Load.Latency, len(tm.steady), l.spec())
		for k, size := range res.Load.Sizes {
			if l.adaptive {
				assert.True(t, size >= adaptiveMin && size <= adaptiveMax, "size %d out of range", size)
				assert.Contains(t, []string{"start", "climb", "backoff", "probe", "fit", "hold"}, res.Load.Reasons[k])
			} else {
				assert.Equal(t, l.workers, size, "a fixed pool's MaxWorkers: %s", l.spec())
				assert.Empty(t, res.Load.Reasons[k], "a fixed pool gives no SizeReason")
			}
		}
	}
	var report bytes.Buffer
	require.NoError(t, r.writeReport(&report))
	md := report.String()
	for _, h := range []string{"## p: the pool finds its own size", "### Targets", "### Backlogged", "### C halved mid-run", "### Open loop at 70%", "**Scale 0.01**"} {
		assert.Contains(t, md, h)
	}
	assert.NotContains(t, md, "– (needs")
}
