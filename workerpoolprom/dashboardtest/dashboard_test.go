package dashboardtest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/e86d9661/workerpool/natsfeed/natsfeedtest"
	"github.com/e86d9661/workerpool/workerpoolprom"
	"github.com/e86d9661/workerpool/workerpoolprom/natsfeedprom"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/teststorage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The dashboard as Grafana reads it: only the fields the tests look at.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int        `json:"id"`
	Type       string     `json:"type"`
	Title      string     `json:"title"`
	Datasource datasource `json:"datasource"`
	GridPos    gridPos    `json:"gridPos"`
	Targets    []struct {
		RefID      string     `json:"refId"`
		Expr       string     `json:"expr"`
		Datasource datasource `json:"datasource"`
	} `json:"targets"`
}

// gridPos places a panel on Grafana's grid, 24 columns wide.
type gridPos struct {
	H int `json:"h"`
	W int `json:"w"`
	X int `json:"x"`
	Y int `json:"y"`
}

// overlaps reports whether a and b share a cell of the grid.
func (a gridPos) overlaps(b gridPos) bool {
	return a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *datasource     `json:"datasource"`
	Multi      bool            `json:"multi"`
	IncludeAll bool            `json:"includeAll"`
	AllValue   string          `json:"allValue"`
}

// promDatasource is how every panel and query names its data source: the
// dashboard's datasource variable, which Grafana offers to choose on
// import.
var promDatasource = datasource{Type: "prometheus", UID: "${datasource}"}

// The panels the dashboard must have, by title; README.md lists them.
var panelTitles = []string{
	"Throughput",
	"Queue depth",
	"Active keys",
	"Wait time p50 / p99",
	"Run time p50 / p99 by task",
	"Busy workers against size",
	"Chosen size by reason",
	"Lost tasks by reason",
	"Refusals",
	"Retries",
	"Failures by outcome",
	"Stuck work",
	"Feed messages",
	"Feed in flight",
}

// feedPanels are the panels of natsfeedprom's metrics, which follow the
// feed variable rather than the pool variable.
var feedPanels = map[string]bool{"Feed messages": true, "Feed in flight": true}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile("../dashboard.json")
	require.NoError(t, err, "read the dashboard")
	var d dashboard
	require.NoError(t, json.Unmarshal(b, &d), "dashboard.json is JSON")
	return d
}

// The dashboard imports as is: a datasource variable for Prometheus, a
// pool variable and a feed variable, every panel and query on the
// datasource variable, each query following the pool variable or, in the
// feed panels, the feed variable, ids and refIds unique, panels within the grid's 24 columns and none over
// another, and the panels README.md lists.
func TestDashboardShape(t *testing.T) {
	d := loadDashboard(t)
	assert.Equal(t, "workerpool", d.UID, "uid")
	require.Len(t, d.Templating.List, 3, "template variables")
	ds, pool, feed := d.Templating.List[0], d.Templating.List[1], d.Templating.List[2]
	assert.Equal(t, "datasource", ds.Name, "first variable")
	assert.Equal(t, "datasource", ds.Type, "type of the datasource variable")
	assert.JSONEq(t, `"prometheus"`, string(ds.Query), "plugin of the datasource variable")
	assert.Equal(t, "pool", pool.Name, "second variable")
	assert.Equal(t, "query", pool.Type, "type of the pool variable")
	require.NotNil(t, pool.Datasource, "datasource of the pool variable")
	assert.Equal(t, promDatasource, *pool.Datasource, "datasource of the pool variable")
	assert.True(t, pool.Multi && pool.IncludeAll, "pool variable: several pools and All")
	assert.Equal(t, ".*", pool.AllValue, "the pool variable's All")
	assert.Equal(t, "feed", feed.Name, "third variable")
	assert.Equal(t, "query", feed.Type, "type of the feed variable")
	require.NotNil(t, feed.Datasource, "datasource of the feed variable")
	assert.Equal(t, promDatasource, *feed.Datasource, "datasource of the feed variable")
	assert.True(t, feed.Multi && feed.IncludeAll, "feed variable: several feeds and All")
	assert.Equal(t, ".*", feed.AllValue, "the feed variable's All")

	var titles []string
	ids := map[int]bool{}
	for _, p := range d.Panels {
		titles = append(titles, p.Title)
		assert.False(t, ids[p.ID], "panel id %d unique", p.ID)
		ids[p.ID] = true
		assert.Equal(t, "timeseries", p.Type, "type of %q", p.Title)
		assert.Equal(t, promDatasource, p.Datasource, "datasource of %q", p.Title)
		require.NotEmpty(t, p.Targets, "queries of %q", p.Title)
		refs := map[string]bool{}
		for _, q := range p.Targets {
			assert.False(t, refs[q.RefID], "refId %s of %q unique", q.RefID, p.Title)
			refs[q.RefID] = true
			assert.Equal(t, promDatasource, q.Datasource, "datasource of %q %s", p.Title, q.RefID)
			if feedPanels[p.Title] {
				assert.Contains(t, q.Expr, `feed=~"$feed"`, "query %s of %q follows the feed variable", q.RefID, p.Title)
				assert.NotContains(t, q.Expr, "$pool", "query %s of %q follows the feed variable only", q.RefID, p.Title)
			} else {
				assert.Contains(t, q.Expr, `pool=~"$pool"`, "query %s of %q follows the pool variable", q.RefID, p.Title)
			}
		}
	}
	assert.Equal(t, panelTitles, titles, "panels")
	for i, p := range d.Panels {
		g := p.GridPos
		assert.True(t, g.W > 0 && g.H > 0 && g.X >= 0 && g.Y >= 0 && g.X+g.W <= 24, "%q within the grid: %+v", p.Title, g)
		for _, q := range d.Panels[:i] {
			assert.False(t, g.overlaps(q.GridPos), "%q over %q: %+v, %+v", p.Title, q.Title, g, q.GridPos)
		}
	}

	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err, "read README.md")
	for _, title := range titles {
		assert.Contains(t, string(readme), "**"+title+"**", "README.md lists the panel %q", title)
	}
}

// Every query of the dashboard, on two scrapes 30s apart of pools and a
// feed at work, in the text format (classic histograms only), and in protobuf with
// native histograms, as Prometheus 3 scrapes them by default (native
// only) and with always_scrape_classic_histograms (both): each parses and
// returns at least one series, for all pools and for one, or for all feeds
// and for one.
func TestDashboardQueriesReturnSeries(t *testing.T) {
	for _, f := range []struct {
		name, accept string
		keepClassic  bool
	}{
		{"format=text", "", true},
		{"format=protobuf/native-only", protoAccept, false},
		{"format=protobuf/native-and-classic", protoAccept, true},
	} {
		t.Run(f.name, func(t *testing.T) {
			d := loadDashboard(t)
			db := teststorage.New(t)
			w := startWorkload(t)
			t0 := time.Unix(1_700_000_000, 0)
			w.round(t)
			scrapeInto(t, w.srv, f.accept, f.keepClassic, db, t0)
			w.round(t)
			w.hold(t)
			scrapeInto(t, w.srv, f.accept, f.keepClassic, db, t0.Add(30*time.Second))
			w.release()

			engine := promql.NewEngine(promql.EngineOpts{
				MaxSamples:    1_000_000,
				Timeout:       time.Minute,
				LookbackDelta: 5 * time.Minute,
				Parser:        parser.NewParser(parser.Options{}), // Prometheus's defaults: no experimental functions
			})
			t.Cleanup(func() { assert.NoError(t, engine.Close(), "close the engine") })
			at := t0.Add(30 * time.Second)

			offered := func(v variable) map[string]bool {
				var selector struct{ Query string }
				require.NoError(t, json.Unmarshal(v.Query, &selector), "query of the %s variable", v.Name)
				m := regexp.MustCompile(`^label_values\((.+), ` + v.Name + `\)$`).FindStringSubmatch(selector.Query)
				require.NotNil(t, m, "the %s variable is label_values(selector, %[1]s): %s", v.Name, selector.Query)
				found := map[string]bool{}
				for _, s := range eval(t, engine, db, m[1], at) {
					found[s.Metric.Get(v.Name)] = true
				}
				return found
			}
			assert.Equal(t, map[string]bool{"dash": true, "spare": true}, offered(d.Templating.List[1]), "pools the pool variable offers")
			assert.Equal(t, map[string]bool{"workers": true}, offered(d.Templating.List[2]), "feeds the feed variable offers")

			for _, p := range d.Panels {
				label, one, values := "pool", "dash", []string{".*", "(dash)", "(dash|spare)"}
				if feedPanels[p.Title] {
					label, one, values = "feed", "workers", []string{".*", "(workers)"}
				}
				for _, q := range p.Targets {
					for _, value := range values {
						expr := substitute(q.Expr, label, value)
						series := eval(t, engine, db, expr, at)
						assert.NotEmpty(t, series, "%q %s with %s %s: %s", p.Title, q.RefID, label, value, expr)
						for _, s := range series {
							if got := s.Metric.Get(label); value == "("+one+")" {
								assert.Equal(t, one, got, "%s of %q %s with %s %s: %s", label, p.Title, q.RefID, label, value, expr)
							}
						}
					}
				}
			}
		})
	}
}

// substitute replaces the template variables of a query as Grafana does:
// $pool or $feed, named by variable, with its value (a regex: ".*" for
// All, "(a|b)" for several pools), $__rate_interval with the rate
// interval for a 30s scrape interval (four scrape intervals, Grafana's
// minimum: 2m).
func substitute(expr, variable, value string) string {
	return strings.NewReplacer("$__rate_interval", "2m", "${"+variable+"}", value, "$"+variable, value).Replace(expr)
}

// eval evaluates expr at ts and returns its series; it fails the test if
// expr does not parse, evaluates with an error or a warning, or returns
// anything but an instant vector.
func eval(t *testing.T, engine *promql.Engine, db storage.Queryable, expr string, ts time.Time) promql.Vector {
	t.Helper()
	_, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	require.NoError(t, err, "parse %s", expr)
	q, err := engine.NewInstantQuery(t.Context(), db, nil, expr, ts)
	require.NoError(t, err, "query %s", expr)
	defer q.Close()
	res := q.Exec(t.Context())
	require.NoError(t, res.Err, "evaluate %s", expr)
	warnings, _ := res.Warnings.AsStrings(expr, 0, 0)
	assert.Empty(t, warnings, "warnings of %s", expr)
	v, err := res.Vector()
	require.NoError(t, err, "result of %s", expr)
	return v
}

// protoAccept is the Accept header with which Prometheus asks for
// protobuf, the format that carries native histograms.
const protoAccept = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"

// scrapeInto GETs /metrics from srv with accept as Accept header and
// appends every sample to db at ts, as a Prometheus scrape does: text
// through its text parser, protobuf through its protobuf parser, keeping
// the classic buckets of histograms that also have native ones only if
// keepClassic (always_scrape_classic_histograms; Prometheus 3 drops them
// by default).
func scrapeInto(t *testing.T, srv *httptest.Server, accept string, keepClassic bool, db storage.Appendable, ts time.Time) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/metrics", nil)
	require.NoError(t, err, "NewRequest")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err, "GET /metrics")
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "status of GET /metrics")
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err, "read /metrics")

	p, err := textparse.New(body, resp.Header.Get("Content-Type"), labels.NewSymbolTable(), textparse.ParserOptions{
		KeepClassicOnClassicAndNativeHistograms: keepClassic,
	})
	require.NoError(t, err, "parser for %s", resp.Header.Get("Content-Type"))
	app := db.Appender(context.Background())
	ms := ts.UnixMilli()
	var lset labels.Labels
	natives, samples := 0, 0
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "parse the scrape")
		switch entry {
		case textparse.EntrySeries:
			_, _, v := p.Series()
			p.Labels(&lset)
			_, err = app.Append(0, lset, ms, v)
			samples++
		case textparse.EntryHistogram:
			_, _, h, fh := p.Histogram()
			p.Labels(&lset)
			_, err = app.AppendHistogram(0, lset, ms, h, fh)
			natives++
		}
		require.NoError(t, err, "append %s", lset)
	}
	require.NoError(t, app.Commit(), "commit the scrape")
	require.Positive(t, samples, "samples scraped")
	if accept == protoAccept {
		require.Positive(t, natives, "native histograms scraped")
	}
}

// A workload is two pools, "dash" and "spare", with one Histograms and a
// Collector each, and a feed, "workers", that takes jobs from a JetStream
// server embedded in the test and runs them on spare, with natsfeedprom's
// Collector, all served on /metrics by srv. dash is made with
// WithAdaptiveSize, pinned to its size, 2, so that it reports why it has
// that size; spare is not.
type workload struct {
	srv      *httptest.Server
	dash     *workerpool.WorkerPool
	spare    *workerpool.WorkerPool
	held     chan struct{} // closed by release: ends the tasks and the job hold started
	released sync.Once
	js       jetstream.JetStream
	stats    *natsfeed.Stats
	settled  int64        // jobs the rounds published: each is acked or terminated
	stopFeed func() error // ends the feed and returns its error; safe to call more than once
}

func startWorkload(t *testing.T) *workload {
	t.Helper()
	h := workerpoolprom.NewHistograms()
	w := &workload{
		dash: workerpool.New(2,
			workerpool.WithAdaptiveSize(2, 2),
			workerpool.WithHooks(h.Hooks("dash")),
			workerpool.WithHooks(workerpool.Hooks{Panic: func(any) {}}),
		),
		spare: workerpool.New(1, workerpool.WithHooks(h.Hooks("spare"))),
		held:  make(chan struct{}),
	}
	t.Cleanup(w.dash.Stop)
	t.Cleanup(w.spare.Stop)
	t.Cleanup(w.release) // first: a test that failed while holding
	w.startFeed(t)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(workerpoolprom.NewCollector(w.dash, "dash"), workerpoolprom.NewCollector(w.spare, "spare"), h,
		natsfeedprom.NewCollector(w.stats, "workers"))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	w.srv = httptest.NewServer(mux)
	t.Cleanup(w.srv.Close)
	return w
}

// startFeed starts an embedded JetStream server with the stream JOBS and
// the consumer "workers", and a feed of it on spare, counting in w.stats:
// the job "bad" fails for good (terminated), "hold" runs until release,
// any other succeeds (acked).
func (w *workload) startFeed(t *testing.T) {
	t.Helper()
	var cons jetstream.Consumer
	w.js, cons = natsfeedtest.Jobs(t, 0)
	w.stats = new(natsfeed.Stats)
	stop := natsfeedtest.Run(t, func(ctx context.Context) error {
		return natsfeed.Feed(ctx, w.spare, cons, func(ctx context.Context, msg jetstream.Msg) error {
			switch string(msg.Data()) {
			case "bad":
				return workerpool.Permanent(errors.New("bad job"))
			case "hold":
				<-w.held
			}
			return nil
		}, natsfeed.WithStats(w.stats))
	})
	w.stopFeed = sync.OnceValue(stop)
}

// publish publishes the job body, confirmed by the server.
func (w *workload) publish(t *testing.T, body string) {
	t.Helper()
	_, err := w.js.Publish(t.Context(), "jobs.dash", []byte(body))
	require.NoError(t, err, "publish %s", body)
}

// round runs a dozen tasks on dash, labelled by kind, some failing, some
// panicking, one retried once, one refused as too heavy, and one on spare;
// feeds a job that succeeds and one that fails for good; and waits until
// both pools are idle and both jobs settled.
func (w *workload) round(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	kinds := []string{"resize", "mail", ""}
	for i := range 12 {
		label := workerpool.TaskOption{Label: kinds[i%len(kinds)]}
		switch i % 4 {
		case 0:
			w.dash.Go(ctx, func(context.Context) error { return errors.New("fails") }, label)
		case 1:
			require.NoError(t, w.dash.DoContext(context.Background(), func() { panic("boom") }, label), "Do")
		default:
			require.NoError(t, w.dash.Go(context.Background(), func(context.Context) error { return nil }, label).Wait(), "Go")
		}
	}
	runs := 0
	retried := w.dash.Go(ctx, func(context.Context) error {
		if runs++; runs == 1 {
			return errors.New("first run fails")
		}
		return nil
	}, workerpool.TaskOption{Label: "resize", Retry: func(attempt int, _ error) (time.Duration, bool) { return 0, attempt < 2 }})
	require.NoError(t, retried.Wait(), "retried task")
	assert.ErrorIs(t, w.dash.DoContext(context.Background(), func() {}, workerpool.TaskOption{Weight: 3}), workerpool.ErrTooHeavy, "a task heavier than the pool")
	require.NoError(t, w.spare.DoWait(func() {}), "spare")
	require.NoError(t, w.dash.WaitIdle(ctx), "dash idle")
	w.publish(t, "ok")
	w.publish(t, "bad")
	w.settled += 2
	require.Eventually(t, func() bool {
		c := w.stats.Counts()
		return c.Acked+c.Terminated == w.settled
	}, time.Minute, time.Millisecond, "the round's jobs settled")
}

// hold starts two tasks on dash that run until release, so that both
// workers are busy and the stuck-work gauges grow, and queues three
// behind them; and feeds a job that runs until release, on spare. The tasks have keys: account-1 runs and waits, account-2
// runs, account-3 waits, and the last task waiting has no key, so that
// three keys are active.
func (w *workload) hold(t *testing.T) {
	t.Helper()
	started := make(chan struct{}, 2)
	for _, key := range []string{"account-1", "account-2"} {
		require.NoError(t, w.dash.DoContext(context.Background(), func() {
			started <- struct{}{}
			<-w.held
		}, workerpool.TaskOption{Label: "import", Key: key}), "Do")
	}
	<-started
	<-started
	for _, key := range []string{"account-1", "account-3", ""} {
		require.NoError(t, w.dash.DoContext(context.Background(), func() {}, workerpool.TaskOption{Label: "import", Key: key}), "Do")
	}
	// Do returns once dispatch has the task; it counts it as waiting a
	// moment later.
	for deadline := time.Now().Add(10 * time.Second); w.dash.Status().Waiting < 3 && time.Now().Before(deadline); {
		runtime.Gosched()
	}
	require.Equal(t, 3, w.dash.Status().Waiting, "waiting tasks")
	w.publish(t, "hold")
	require.Eventually(t, func() bool { return w.stats.Counts().InFlight == 1 }, time.Minute, time.Millisecond, "the feed holds the job")
}

// release ends the tasks and the job hold started, ends the feed and
// lets both pools finish. Safe to call more than once.
func (w *workload) release() {
	w.released.Do(func() { close(w.held) })
	if err := w.stopFeed(); err != nil {
		panic(err) // Feed returns an error only for bad input, which the workload never gives
	}
	w.dash.StopWait()
	w.spare.StopWait()
}

// The scrape holds what the dashboard shows: sanity checks on the data,
// so that an empty series list could not pass for a dashboard that works.
func TestDashboardSeesTheWorkload(t *testing.T) {
	db := teststorage.New(t)
	w := startWorkload(t)
	t0 := time.Unix(1_700_000_000, 0)
	w.round(t)
	scrapeInto(t, w.srv, "", true, db, t0)
	w.round(t)
	w.hold(t)
	scrapeInto(t, w.srv, "", true, db, t0.Add(30*time.Second))
	w.release()
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute, Parser: parser.NewParser(parser.Options{})})
	t.Cleanup(func() { assert.NoError(t, engine.Close(), "close the engine") })
	at := t0.Add(30 * time.Second)
	value := func(expr string) float64 {
		v := eval(t, engine, db, expr, at)
		require.Len(t, v, 1, "series of %s", expr)
		return v[0].F
	}
	assert.Equal(t, 2.0, value(`workerpool_busy_workers{pool="dash"}`), "busy workers while held")
	assert.Equal(t, 3.0, value(`workerpool_waiting_tasks{pool="dash"}`), "waiting tasks while held")
	assert.Equal(t, 3.0, value(`workerpool_active_keys{pool="dash"}`), "active keys while held")
	assert.Equal(t, 0.0, value(`workerpool_active_keys{pool="dash"} offset 30s`), "active keys while idle")
	// dash, made with WithAdaptiveSize(2, 2), has one reason for its size,
	// 2, whichever decision it last made; spare, without, has none. (The
	// test storage has no staleness markers, so the reason of the second
	// scrape is read alone: an earlier one would still be in the lookback.)
	const reason = `last_over_time(workerpool_size_reason{pool="dash"}[10s])`
	reasons := eval(t, engine, db, reason, at)
	require.Len(t, reasons, 1, "reasons of dash's size")
	assert.Equal(t, 1.0, reasons[0].F, "value of dash's reason")
	assert.Contains(t, []string{"start", "climb", "backoff", "probe", "fit", "hold"}, reasons[0].Metric.Get("reason"), "dash's reason")
	assert.Equal(t, 2.0, value(reason+` * ignoring (reason) group_left workerpool_max_workers{pool="dash"}`), "dash's size by reason")
	assert.Empty(t, eval(t, engine, db, `workerpool_size_reason{pool="spare"}`, at), "reasons of spare's size")
	assert.Positive(t, value(`workerpool_unfinished_work_seconds{pool="dash"}`), "unfinished work while held")
	assert.Positive(t, value(`workerpool_longest_running_processor_seconds{pool="dash"}`), "longest run while held")
	// Between the scrapes, one round: 3 errors and the retried task's first
	// run, 3 panics, one rerun, one refusal.
	grown := func(selector string) float64 {
		return value(`sum(` + selector + `) - sum(` + selector + ` offset 30s)`)
	}
	assert.Equal(t, 4.0, grown(`workerpool_task_failures_total{pool="dash",outcome="error"}`), "errors in a round")
	assert.Equal(t, 3.0, grown(`workerpool_task_failures_total{pool="dash",outcome="panic"}`), "panics in a round")
	assert.Equal(t, 1.0, grown(`workerpool_task_reruns_total{pool="dash"}`), "reruns in a round")
	assert.Equal(t, 1.0, grown(`workerpool_tasks_rejected_total{pool="dash"}`), "refusals in a round")
	kinds := eval(t, engine, db, `sum by (task) (workerpool_task_run_seconds_count{pool="dash"}) > 0`, at)
	var tasks []string
	for _, s := range kinds {
		tasks = append(tasks, s.Metric.Get("task"))
	}
	slices.Sort(tasks)
	assert.Equal(t, []string{"mail", "none", "resize"}, tasks, "task labels of the finished runs")
	assert.Equal(t, 2.0, value(`workerpool_task_wait_seconds_count{pool="dash",task="import"}`), "runs of import started, none finished")
	// Between the scrapes, a round's two jobs and the held one.
	assert.Equal(t, 3.0, grown(`workerpool_feed_messages_taken_total{feed="workers"}`), "jobs taken")
	assert.Equal(t, 1.0, grown(`workerpool_feed_messages_acked_total{feed="workers"}`), "jobs acked")
	assert.Equal(t, 1.0, grown(`workerpool_feed_messages_terminated_total{feed="workers"}`), "jobs terminated")
	assert.Equal(t, 1.0, value(`workerpool_feed_in_flight_messages{feed="workers"}`), "jobs in flight while held")
	assert.Equal(t, 0.0, value(`workerpool_feed_in_flight_messages{feed="workers"} offset 30s`), "jobs in flight after a round")
	// Feed's default bound is twice spare's size: the held job, and one
	// fetched ahead once the next round's jobs are published.
	most := value(`workerpool_feed_max_in_flight_messages{feed="workers"}`)
	assert.GreaterOrEqual(t, most, 1.0, "most jobs in flight: the held one")
	assert.LessOrEqual(t, most, 2.0, "most jobs in flight: within the bound, twice spare's size")
}
