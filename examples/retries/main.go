// Command retries sends mail on a worker pool, retrying failures with
// backoff and keeping what cannot be done as dead letters, so that no
// message is lost silently:
//
//   - a send that fails for a while (the mail server is busy) is retried
//     under TaskOption{Retry: Backoff(...)}: the task waits for its next
//     run in the pool's timer heap, holding no worker and no goroutine;
//   - a send that cannot succeed (an invalid address) returns a Permanent
//     error and is not retried;
//   - a send that still fails after the last retry, and the permanent
//     failures, become dead letters, with the reason and the attempts;
//   - plain tasks scheduled for later (a digest, due in an hour) that the
//     program's exit abandons reach the pool's dead-letter handler
//     (Hooks.DeadLetter) before Stop returns, to be saved for the next run.
//
// It runs offline and prints the same every time:
//
//	go run ./examples/retries
//
// A real program would keep its dead letters in a table or a queue of
// their own; this one prints them.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/e86d9661/workerpool"
)

// retries is how many times a failed send runs again at most: it runs
// retries+1 times in all.
const retries = 3

// errBusy is the mail server's answer while it is busy: worth retrying.
var errBusy = errors.New("421 service busy, try again later")

// A mailServer stands in for SMTP: which addresses fail, how, and how
// often each was tried.
type mailServer struct {
	mu    sync.Mutex
	tries map[string]int
}

// send fails for good for an address without "@", fails with errBusy for
// the first two tries of a "slow" address and for every try of a "down"
// one, and succeeds otherwise.
func (s *mailServer) send(ctx context.Context, to string) error {
	s.mu.Lock()
	s.tries[to]++
	try := s.tries[to]
	s.mu.Unlock()
	switch {
	case !strings.Contains(to, "@"):
		return workerpool.Permanent(fmt.Errorf("550 invalid address %q", to))
	case strings.HasPrefix(to, "down") || strings.HasPrefix(to, "slow") && try <= 2:
		return errBusy
	}
	return ctx.Err()
}

// tried returns how many times mail to to was tried.
func (s *mailServer) tried(to string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tries[to]
}

// A deadLetters keeps what could not be done, with why.
type deadLetters struct {
	mu    sync.Mutex
	lines []string
}

func (d *deadLetters) add(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lines = append(d.lines, fmt.Sprintf(format, args...))
}

func main() { run(os.Stdout) }

// run sends the demo's mail and prints the outcome to w.
func run(w io.Writer) {
	server := &mailServer{tries: map[string]int{}}
	dead := &deadLetters{}
	pool := workerpool.New(4,
		// Plain tasks that will never run: refused, dropped, expired, or
		// abandoned by the stop. The handler runs before Stop returns.
		workerpool.WithHooks(workerpool.Hooks{DeadLetter: func(task func(), reason error) {
			dead.add("a scheduled digest: %v (saved for the next run)", reason)
		}}),
	)

	// Daily digests, due in an hour: this run exits long before.
	for range 2 {
		if err := pool.DoContext(context.Background(), func() { fmt.Fprintln(w, "digest sent") }, workerpool.TaskOption{Delay: time.Hour}); err != nil {
			fmt.Fprintln(w, "digest:", err)
		}
	}

	recipients := []string{
		"ann@example.com", "bob@example.com", "slow-cat@example.com", "dan@example.com",
		"no-at-sign.example.com", "eve@example.com", "down-fay@example.com", "slow-gus@example.com",
		"hal@example.com", "ivy@example.com",
	}
	send := workerpool.TaskOption{Label: "send", Retry: workerpool.Backoff(5*time.Millisecond, 50*time.Millisecond, retries)}
	tasks := make([]*workerpool.Task, len(recipients))
	for i, to := range recipients {
		tasks[i] = pool.Go(context.Background(), func(ctx context.Context) error {
			return server.send(ctx, to)
		}, send)
	}

	sent := 0
	for i, t := range tasks {
		to := recipients[i]
		if err := t.Wait(); err != nil {
			dead.add("mail to %s: %v (attempts: %d)", to, err, server.tried(to))
			continue
		}
		sent++
	}
	pool.Stop() // abandons the digests, which reach the dead-letter handler first

	s := pool.Status()
	fmt.Fprintf(w, "sent %d of %d mails; %d retries\n", sent, len(recipients), s.Retried)
	slices.Sort(dead.lines)
	fmt.Fprintf(w, "%d dead letters:\n", len(dead.lines))
	for _, l := range dead.lines {
		fmt.Fprintln(w, " ", l)
	}
	fmt.Fprintf(w, "pool: submitted %d = completed %d + abandoned %d\n", s.Submitted, s.Completed, s.Abandoned)
}
