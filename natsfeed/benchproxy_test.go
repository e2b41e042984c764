package natsfeed_test

import (
	"bytes"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A latencyProxy forwards TCP connections to a target with a fixed delay in
// each direction, the way a network between a process and its server
// does: each chunk read from one side is written to the other no earlier
// than delay after it was read, in order. Reading goes on while earlier
// chunks wait out their delay, so the delay adds latency and does not cap
// bandwidth (up to proxyBacklog chunks in flight per direction, beyond
// which the reader waits, as a TCP window would make a sender wait).
//
// It is safe for concurrent use. close stops it: the listener, every
// connection and every goroutine it started, and waits for them.
type latencyProxy struct {
	delay  time.Duration
	target string
	ln     net.Listener

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // open connections, both sides; guarded by mu
	closed bool                  // set by close; guarded by mu

	goroutines sync.WaitGroup // the accept loop and every connection's pipes
	chunks     atomic.Int64   // chunks forwarded, both directions
	early      atomic.Int64   // chunks written before their due time: a bug if ever above zero
}

// proxyBacklog is how many chunks one direction of a connection holds,
// read and waiting out their delay, before its reader waits.
const proxyBacklog = 4096

// startLatencyProxy starts a latencyProxy to target on a free port of
// 127.0.0.1, closed when tb's test ends.
func startLatencyProxy(tb testing.TB, target string, delay time.Duration) *latencyProxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err, "proxy: listen")
	p := &latencyProxy{delay: delay, target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.goroutines.Go(p.accept)
	tb.Cleanup(p.close)
	return p
}

// addr is the proxy's address, host:port.
func (p *latencyProxy) addr() string { return p.ln.Addr().String() }

// accept serves each connection until the listener is closed.
func (p *latencyProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !p.track(client, server) {
			return
		}
		var pipes sync.WaitGroup
		pipes.Go(func() { p.pipe(server, client) })
		pipes.Go(func() { p.pipe(client, server) })
		p.goroutines.Go(func() {
			pipes.Wait()
			p.untrack(client, server)
		})
	}
}

// track records conns as open; if the proxy is closed it closes them
// instead and returns false.
func (p *latencyProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// untrack closes conns and forgets them.
func (p *latencyProxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
		delete(p.conns, c)
	}
}

// A proxyChunk is bytes read from one side, due on the other at due.
type proxyChunk struct {
	data []byte
	due  time.Time
}

// pipe forwards src to dst, each chunk delay after it was read. It
// returns once src is done (its end is then passed on as dst's) or dst
// fails (src is then closed, so that the reader ends too).
func (p *latencyProxy) pipe(dst, src net.Conn) {
	chunks := make(chan proxyChunk, proxyBacklog) // closed by the reader below when src ends
	go func() {
		defer close(chunks)
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				chunks <- proxyChunk{data: bytes.Clone(buf[:n]), due: time.Now().Add(p.delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range chunks {
		time.Sleep(time.Until(c.due))
		if time.Now().Before(c.due) {
			p.early.Add(1)
		}
		p.chunks.Add(1)
		if _, err := dst.Write(c.data); err != nil {
			_ = src.Close()
			for range chunks { // until the reader sees the close
			}
			return
		}
	}
	if tcp, ok := dst.(*net.TCPConn); ok {
		_ = tcp.CloseWrite()
	}
}

// close stops the proxy and waits for its goroutines.
func (p *latencyProxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	p.goroutines.Wait()
}

// TestLatencyProxyForwardsInOrderAfterTheDelay proves the proxy the
// throughput benchmark puts between a process and its server: the bytes
// come back through an echo server whole and in order, in both
// directions, each chunk written no earlier than its due time, and close
// ends every connection and goroutine (a leak would hang the test).
func TestLatencyProxyForwardsInOrderAfterTheDelay(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err, "echo: listen")
	echoed := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			echoed <- err
			return
		}
		defer c.Close()
		buf := make([]byte, 1500)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if _, werr := c.Write(buf[:n]); werr != nil {
					echoed <- werr
					return
				}
			}
			if err != nil {
				echoed <- nil // the proxy passed the client's end on
				return
			}
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })

	p := startLatencyProxy(t, ln.Addr().String(), time.Millisecond)
	c, err := net.Dial("tcp", p.addr())
	require.NoError(t, err, "dial the proxy")
	defer c.Close()

	sent := make([]byte, 1<<20)
	for i := range sent {
		sent[i] = byte(i * 7 / 3)
	}
	wrote := make(chan error, 1)
	go func() {
		for rest := sent; len(rest) > 0; {
			n := min(len(rest), 1+len(rest)%9000) // chunks of many sizes
			if _, err := c.Write(rest[:n]); err != nil {
				wrote <- err
				return
			}
			rest = rest[n:]
		}
		wrote <- c.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(c)
	require.NoError(t, err, "read through the proxy until the echo server's end")
	require.NoError(t, <-wrote, "write through the proxy")
	require.NoError(t, <-echoed, "echo server")
	require.True(t, bytes.Equal(sent, got), "1 MiB through the proxy both ways: got %d bytes back, equal to those sent", len(got))
	require.Positive(t, p.chunks.Load(), "chunks forwarded")
	require.Zero(t, p.early.Load(), "chunks written before their due time")
	p.close()
	p.mu.Lock()
	defer p.mu.Unlock()
	require.Empty(t, p.conns, "connections left open after close")
}
