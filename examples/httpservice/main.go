// Command httpservice is an HTTP service that does its work on a bounded
// worker pool and says so when it is full: a request that finds the pool's
// queue full is answered at once with 503 Service Unavailable and a
// Retry-After header, instead of piling up goroutines and memory until
// every request is slow. On SIGINT (Ctrl-C) or SIGTERM it shuts down
// gracefully: the server stops taking connections and lets the requests in
// flight finish, then the pool's Shutdown gives the queued and running jobs
// a budget, after which it cancels them.
//
//	go run ./examples/httpservice -addr 127.0.0.1:8080
//	curl -i 'http://127.0.0.1:8080/render?ms=200'   # 200, or 503 with Retry-After when full
//
// With -demo it runs on a free port, loads itself with a burst of requests,
// sends itself SIGINT while requests are in flight, and exits 0 once they
// have been answered: a short, offline run for CI. It prints how many
// requests the pool held at the signal and how each request of that wave
// was answered: every one held at the signal is served.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/e86d9661/workerpool"
)

const (
	// retryAfter is what a refused client is told to wait, in seconds.
	retryAfter = "1"
	// shutdownBudget bounds the graceful shutdown, for the HTTP server
	// and the pool each.
	shutdownBudget = 10 * time.Second
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on (port 0: any free port)")
	workers := flag.Int("workers", 4, "jobs rendered at once")
	queue := flag.Int("queue", 8, "jobs waiting for a worker before requests are refused with 503")
	demo := flag.Bool("demo", false, "listen on a free port, load the service with requests, stop it with SIGINT, print a summary")
	flag.Parse()
	if *demo {
		*addr = "127.0.0.1:0"
	}
	if err := run(*addr, *workers, *queue, *demo); err != nil {
		fmt.Fprintln(os.Stderr, "httpservice:", err)
		os.Exit(1)
	}
}

// service answers requests with jobs run on pool.
type service struct {
	pool *workerpool.WorkerPool
}

// newService returns a service whose pool runs at most workers jobs at
// once and queues at most queue more; the caller stops the pool.
func newService(workers, queue int) *service {
	return &service{pool: workerpool.New(workers,
		workerpool.WithMaxWaiting(queue, workerpool.Reject), // a full queue refuses: back-pressure to the client
	)}
}

// render runs a job of ?ms= milliseconds (default 50) on the pool and
// waits for it. A full queue is a 503 with Retry-After, at once; so is a
// pool that is shutting down.
func (s *service) render(w http.ResponseWriter, r *http.Request) {
	ms, err := strconv.Atoi(r.URL.Query().Get("ms"))
	if err != nil || ms < 0 {
		ms = 50
	}
	// The request's context covers the job: a client that goes away
	// cancels its job, queued or running.
	task := s.pool.Go(r.Context(), func(ctx context.Context) error {
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond): // stands in for real work
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	switch err := task.Wait(); {
	case err == nil:
		fmt.Fprintf(w, "rendered in %dms\n", ms)
	case errors.Is(err, workerpool.ErrQueueFull), errors.Is(err, workerpool.ErrStopped):
		w.Header().Set("Retry-After", retryAfter)
		http.Error(w, "busy, retry later", http.StatusServiceUnavailable)
	case r.Context().Err() != nil:
		// The client is gone: nobody reads the answer.
	default:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

func (s *service) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /render", s.render)
	return mux
}

func run(addr string, workers, queue int, demo bool) error {
	// ctx ends on the first SIGINT or SIGTERM.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	s := newService(workers, queue)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.pool.Stop()
		return err
	}
	srv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1) // Serve's error: http.ErrServerClosed after Shutdown
	go func() { served <- srv.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	fmt.Printf("serving on %s/render (%d workers, %d queued at most); press Ctrl-C to stop\n", url, workers, queue)

	var loaded chan struct{} // closed once the demo's load has been answered
	if demo {
		loaded = make(chan struct{})
		interrupt := func(inFlight int) {
			fmt.Printf("sending SIGINT with %d requests in flight\n", inFlight)
			self, _ := os.FindProcess(os.Getpid())
			if err := self.Signal(os.Interrupt); err != nil {
				stop() // no signals to send here (Windows): end ctx as the signal would
			}
		}
		go func() { defer close(loaded); load(url, s.pool, workers+queue, interrupt) }()
	}

	<-ctx.Done()
	stop() // a second signal now ends the program at once
	fmt.Println("signal received: shutting down")

	// First the server: no new connections; the requests in flight finish,
	// and so their jobs. Then the pool, for whatever is left.
	budget, cancel := context.WithTimeout(context.Background(), shutdownBudget)
	defer cancel()
	if err := srv.Shutdown(budget); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	if err := s.pool.Shutdown(budget); err != nil {
		fmt.Println("pool shutdown cut short:", err)
	}
	if loaded != nil {
		<-loaded
	}
	st := s.pool.Status()
	fmt.Printf("pool: submitted %d, completed %d, refused %d, canceled %d, abandoned %d\n",
		st.Submitted, st.Completed, st.Rejected, st.Canceled, st.Abandoned)
	fmt.Println("shutdown complete")
	return nil
}

// load is the demo's client. A burst of 5×room requests at once, where
// room is what the pool holds (its workers and its queue): those that find
// room are served, the others are told to retry. Then room requests more,
// interrupt (SIGINT to this process, given how many requests the pool
// holds) while they are in flight, and every request in flight at the
// signal is served before the program exits.
func load(url string, pool *workerpool.WorkerPool, room int, interrupt func(inFlight int)) {
	client := &http.Client{Timeout: time.Minute}
	get := func(ms int) (status int, retry string) {
		resp, err := client.Get(fmt.Sprintf("%s/render?ms=%d", url, ms))
		if err != nil {
			return 0, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	var answered atomic.Int64 // requests of the current burst answered so far
	burst := func(n, ms int, started func()) map[string]int {
		answered.Store(0)
		var mu sync.Mutex
		counts := map[string]int{}
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				status, retry := get(ms)
				answered.Add(1)
				mu.Lock()
				defer mu.Unlock()
				switch status {
				case http.StatusServiceUnavailable:
					counts["refused (503, Retry-After: "+retry+")"]++
				case 0:
					counts["not answered ("+retry+")"]++
				default:
					counts[fmt.Sprint(status)]++
				}
			})
		}
		if started != nil {
			started()
		}
		wg.Wait()
		return counts
	}

	fmt.Println("burst:", fmtCounts(burst(5*room, 500, nil)))

	// The signal comes once the pool holds every request of this wave, or
	// as soon as one of them has been answered (on a loaded machine the
	// first job may end before the last request arrives): no fixed wait.
	// Whatever the pool holds then is in flight, and must be served.
	atSignal := 0
	inFlight := func() {
		s := pool.Status()
		for s.Busy+s.Waiting < room && answered.Load() == 0 {
			time.Sleep(5 * time.Millisecond)
			s = pool.Status()
		}
		atSignal = s.Busy + s.Waiting
		interrupt(atSignal)
	}
	counts := burst(room, 300, inFlight)
	fmt.Printf("in flight at the signal: %d of %d; answered: %s\n", atSignal, room, fmtCounts(counts))
}

// fmtCounts prints counts by status, served first.
func fmtCounts(counts map[string]int) string {
	out := fmt.Sprintf("%d served (200)", counts["200"])
	delete(counts, "200")
	for k, v := range counts {
		out += fmt.Sprintf(", %d %s", v, k)
	}
	return out
}
