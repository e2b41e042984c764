// Command metrics runs a worker pool on a stream of demo tasks and serves
// its Prometheus metrics, from the workerpoolprom module, on /metrics:
//
//	go run ./examples/metrics -addr 127.0.0.1:9464
//	curl -s http://127.0.0.1:9464/metrics | grep workerpool_
//
// Tasks arrive faster than the pool's four workers finish them, so its
// bounded queue drops the oldest; some tasks fail, a few panic, some are
// slow, and a few are delayed. Every 200th task panics on purpose, so that
// workerpool_tasks_panicked_total moves: the log shows each of those panics
// as one short line that says so, without the stack trace the pool's logger
// gives any other panic. On SIGINT (Ctrl-C) or SIGTERM the program shuts the
// pool down, with a deadline, then the HTTP server, prints the final counts
// and exits 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/workerpoolprom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const (
	poolName       = "demo"
	shutdownBudget = 5 * time.Second // for the queued tasks, then for the HTTP server
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9464", "address to serve /metrics on (port 0: any free port)")
	flag.Parse()
	if err := run(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "metrics example:", err)
		os.Exit(1)
	}
}

func run(addr string) error {
	// ctx is canceled on the first SIGINT or SIGTERM.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(quietDemoPanics{slog.NewTextHandler(os.Stderr, nil)}) // Info and above
	logger.Info("every 200th task panics on purpose, to show the panics counter; each is logged as one line")

	// The histograms' hooks time every run, count failures by outcome and
	// track the runs in flight, by the task labels produce gives. The pool
	// has no name of its own: its metrics and its log records get poolName
	// from here.
	hists := workerpoolprom.NewHistograms()
	pool := workerpool.New(4,
		workerpool.WithHooks(workerpool.Hooks{
			Logger: logger.With("pool", poolName),
			Panic:  func(any) {}, // the logger records each panic
		}),
		workerpool.WithMaxWaiting(20, workerpool.DropOldest),
		workerpool.WithHooks(hists.Hooks(poolName)),
	)

	reg := prometheus.NewRegistry()
	reg.MustRegister(workerpoolprom.NewCollector(pool, poolName), hists)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		pool.Stop()
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1) // Serve's error; http.ErrServerClosed after Shutdown
	go func() { served <- srv.Serve(ln) }()
	fmt.Printf("serving metrics on http://%s/metrics\n", ln.Addr())

	produce(ctx, pool)
	stop() // from now on a second signal kills the program the default way
	logger.Info("stopping", "budget", shutdownBudget)

	budget, cancel := context.WithTimeout(context.Background(), shutdownBudget)
	defer cancel()
	if err := pool.Shutdown(budget); err != nil {
		logger.Warn("pool shutdown cut short", "err", err)
	}
	if err := srv.Shutdown(budget); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	s := pool.Status()
	fmt.Printf("metrics example stopped: submitted=%d completed=%d dropped=%d panicked=%d abandoned=%d\n",
		s.Submitted, s.Completed, s.Dropped, s.Panicked, s.Abandoned)
	return nil
}

// produce submits a demo task every 5ms until ctx is done. Tasks take
// 10-30ms, every tenth 200ms: about twice what four workers can run, so
// the queue stays full and drops its oldest task. Each is labelled with its
// kind, as the metrics show it: most render, every seventh exports and
// returns an error, every 25th is a digest delayed by a second, and every
// 200th render panics.
func produce(ctx context.Context, pool *workerpool.WorkerPool) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	work := context.Background() // not canceled by the signal: Shutdown lets tasks finish
	render, export := workerpool.TaskOption{Label: "render"}, workerpool.TaskOption{Label: "export"}
	digest := workerpool.TaskOption{Label: "digest", Delay: time.Second}
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		d := time.Duration(10+rand.IntN(20)) * time.Millisecond
		if n%10 == 0 {
			d = 200 * time.Millisecond
		}
		var err error
		switch {
		case n%200 == 0:
			err = pool.DoContext(context.Background(), func() { panic(demoPanic(fmt.Sprintf("demo task %d panics on purpose", n))) }, render)
		case n%25 == 0:
			pool.Go(work, func(context.Context) error { time.Sleep(d); return nil }, digest)
		case n%7 == 0:
			pool.Go(work, func(context.Context) error {
				time.Sleep(d) // stands in for real work
				return fmt.Errorf("demo task %d failed", n)
			}, export)
		default:
			err = pool.DoContext(context.Background(), func() { time.Sleep(d) }, render)
		}
		if err != nil { // ErrStopped, which Do returns only once the pool stops: after produce
			return
		}
	}
}
