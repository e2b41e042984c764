package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/e86d9661/workerpool/internal/exectest"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deadline bounds the wait for the counters to move.
const deadline = 30 * time.Second

// The program end to end: build it, start it on a free port, scrape it
// over HTTP until its counters and histograms have moved, then stop it
// with SIGINT and expect a clean exit and the final line.
func TestServesMetricsUntilInterrupted(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "metrics")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	p := exectest.Start(t, bin, "-addr", "127.0.0.1:0")
	line := p.Line(t)
	url, ok := strings.CutPrefix(line, "serving metrics on ")
	require.True(t, ok, "first line %q", line)
	require.True(t, strings.HasPrefix(url, "http://127.0.0.1:") && strings.HasSuffix(url, "/metrics"), "metrics URL %q", url)

	watched := []string{
		"workerpool_tasks_submitted_total",
		"workerpool_tasks_completed_total",
		"workerpool_tasks_dropped_total",
		"workerpool_tasks_panicked_total", // one of the demo's panics on purpose has run
		"workerpool_task_wait_seconds_count",
		"workerpool_task_run_seconds_count",
		"workerpool_task_failures_total",
	}
	first := scrape(t, url)
	var second map[string]float64
	grown := func() bool {
		for _, name := range watched {
			if second[name] <= first[name] {
				return false
			}
		}
		return true
	}
	for stop := time.Now().Add(deadline); !grown() && time.Now().Before(stop); {
		time.Sleep(100 * time.Millisecond) // polling a real process, not timing it
		second = scrape(t, url)
	}
	for _, name := range watched {
		assert.Greater(t, second[name], first[name], "%s between two scrapes", name)
	}
	// The Collector's 15 families from the start, the Histograms' 6 from
	// the first run on.
	assert.Len(t, second, 21, "workerpool_ families: %v", second)

	require.NoError(t, p.Cmd.Process.Signal(os.Interrupt), "send SIGINT")
	last := p.Line(t)
	assert.Regexp(t, `^metrics example stopped: submitted=\d+ completed=\d+ dropped=\d+ `, last, "final line")
	err = p.Wait(t)
	require.NoError(t, err, "exit status 0; stderr:\n%s", p.Stderr)

	// Each panic the demo makes on purpose is one short log line that
	// says so, with no stack trace; the final line counts them.
	m := regexp.MustCompile(`panicked=(\d+)`).FindStringSubmatch(last)
	require.NotNil(t, m, "panicked count in %q", last)
	var panicLines []string
	for line := range strings.Lines(p.Stderr.String()) {
		if strings.Contains(line, `msg="task panicked"`) {
			panicLines = append(panicLines, line)
			assert.Contains(t, line, "on purpose", "panic log line")
			assert.NotContains(t, line, "stack=", "panic log line")
			assert.NotContains(t, line, "level=ERROR", "panic log line")
		}
	}
	assert.NotEmpty(t, panicLines, "panic log lines; stderr:\n%s", p.Stderr)
	assert.Equal(t, m[1], strconv.Itoa(len(panicLines)), "a log line per panic")
	assert.Contains(t, p.Stderr.String(), "panics on purpose, to show the panics counter", "the log says why")
}

// The task labels the program gives, and the outcomes of failures.
var (
	tasks    = []string{"render", "export", "digest"}
	outcomes = []string{"error", "panic"}
)

// scrape GETs url and returns the value of each workerpool_ family of the
// pool named demo, by name, summed over its series (histograms as
// name_count); it fails if a series is of another pool, of a task label
// the program does not give, or has a label of another name.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	client := &http.Client{Timeout: deadline}
	resp, err := client.Get(url)
	require.NoError(t, err, "GET %s", url)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "status of GET %s", url)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err, "parse the exposition")

	samples := map[string]float64{}
	for name, f := range families {
		if !strings.HasPrefix(name, "workerpool_") {
			continue
		}
		require.NotEmpty(t, f.GetMetric(), "series of %s", name)
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "pool":
					assert.Equal(t, "demo", l.GetValue(), "pool of %s", name)
				case "task":
					assert.Contains(t, tasks, l.GetValue(), "task of %s", name)
				case "outcome":
					assert.Contains(t, outcomes, l.GetValue(), "outcome of %s", name)
				default:
					t.Errorf("%s has a label %s", name, l.GetName())
				}
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				samples[name] += m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				samples[name] += m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				samples[name+"_count"] += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return samples
}
