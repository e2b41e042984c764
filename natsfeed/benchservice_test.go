package natsfeed_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The service role (see process_test.go) answers each one-byte request on
// a TCP connection after serviceDelay: the downstream service a handler
// calls, in a process of its own. It waits in the kernel (nanosleep on
// the connection's thread) rather than on a Go timer, so its 1 ms is the
// same whichever loop calls it; and the calling process wakes on the
// reply's arrival, a network event, not on a timer of its own.
//
// A Go timer is not precise enough for this: on Linux the runtime's
// netpoller waits in whole milliseconds (epoll_wait), so a time.Sleep of
// 1 ms wakes up to 1 ms late whenever the process's threads are parked in
// it, by how much depends on what else the process does at the time
// (golang/go#44343). BenchmarkThroughput's task=sleep1ms rows show that
// effect; the task=call1ms rows measure the feeding.
const serviceDelay = time.Millisecond

// runService is the service role: it listens on 127.0.0.1 at
// NATSFEED_PORT, writes a "ready" line, and serves until told to stop. It
// returns the exit code.
func runService() int {
	port, err := strconv.Atoi(os.Getenv(envPort))
	if err != nil {
		fmt.Fprintf(os.Stderr, "service: %s: %v\n", envPort, err)
		return 1
	}
	// A thread in nanosleep keeps its P until the runtime takes it back;
	// enough Ps that the connections never wait for one.
	runtime.GOMAXPROCS(64)
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "service: %v\n", err)
		return 1
	}
	ctx, stop := stopContext()
	defer stop()
	go func() {
		<-ctx.Done()
		_ = ln.Close()
	}()
	(&lineWriter{enc: json.NewEncoder(os.Stdout)}).write(childLine{Kind: "ready"})
	for {
		c, err := ln.Accept()
		if err != nil {
			return 0 // closed on stop
		}
		go serveCalls(c)
	}
}

// serveCalls answers each byte read from c with one byte, serviceDelay
// after it came, until c closes.
func serveCalls(c net.Conn) {
	defer c.Close()
	var buf [1]byte
	for {
		if _, err := io.ReadFull(c, buf[:]); err != nil {
			return
		}
		ts := syscall.NsecToTimespec(int64(serviceDelay))
		for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
		}
		if _, err := c.Write(buf[:]); err != nil {
			return
		}
	}
}

// A serviceClient calls the service over a set of connections, one per
// call at a time.
type serviceClient struct {
	conns chan net.Conn
}

// startService starts the service process and connects n connections to
// it; both end when tb's test does.
func startService(tb testing.TB, n int) *serviceClient {
	tb.Helper()
	port := freePort(tb)
	p := startProc(tb, "service", "service", nil, envPort+"="+strconv.Itoa(port))
	p.waitReady(tb)
	s := &serviceClient{conns: make(chan net.Conn, n)}
	for range n {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		require.NoError(tb, err, "dial the service")
		tb.Cleanup(func() { _ = c.Close() })
		s.conns <- c
	}
	return s
}

// call sends one request and waits for its answer, about serviceDelay.
func (s *serviceClient) call() error {
	c := <-s.conns
	defer func() { s.conns <- c }()
	buf := [1]byte{1}
	if _, err := c.Write(buf[:]); err != nil {
		return fmt.Errorf("call the service: %w", err)
	}
	if _, err := io.ReadFull(c, buf[:]); err != nil {
		return fmt.Errorf("call the service: %w", err)
	}
	if buf[0] != 1 {
		return errors.New("call the service: wrong answer")
	}
	return nil
}
