package natsfeed_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/nats-io/nats.go/jetstream"
)

// FuzzFeed races Feed against the pool's Stop, StopWait, Shutdown, Resize
// and Pause and its own ctx ending (which gives back what waits in the
// queue), on a pool whose queue may refuse, drop or expire what the feed
// fetched ahead (Reject, DropOldest, WithQueueTimeout), with
// progress beats or without, with handlers that return, fail, fail for good, panic
// and call runtime.Goexit, on fake messages (a fuzzer cannot wait for a
// real server). Whatever happens, Feed returns, every message it took is
// settled exactly once, no beat follows a settlement, its counts add up,
// and it never holds more than its bound, nor asks for more: the messages
// its pull requests may still bring count too.
//
// data[0] picks the pool's size (1-4), data[1] the bound (0: the
// default), data[2] the options (bits 0-2), the pool's queue policy
// (bits 3-4) and the acknowledgements (bit 5: each takes 1ms, longer than
// the instant handlers, so that the measured default bound swings between
// twice and eight times the pool's size as handlers of 1ms and instant
// ones alternate; bit 6: each message's first try fails and is retried,
// unmeasured); each further byte is one message: its
// low 3 bits what its handler does, its high bits what the fuzz body does
// to the pool or the feed once the handler has started.
func FuzzFeed(f *testing.F) {
	f.Add([]byte{2, 0, 0, 0, 1, 2, 3, 4, 5, 0, 0})
	f.Add([]byte{1, 3, 1, 0, 0x08, 0, 0x10, 1, 0x18, 2, 0x20})
	f.Add([]byte{4, 2, 3, 3, 4, 0x28, 0, 0, 0x30, 0x38, 1, 1})
	f.Add([]byte{2, 0, 4, 5, 5, 5, 5, 0x20, 5, 5, 5, 0})
	f.Add([]byte{3, 0, 5, 5, 0x0d, 5, 5, 1, 2, 5})
	f.Add([]byte{1, 0, 0x08, 5, 5, 5, 0x2d, 5, 5, 5})
	f.Add([]byte{2, 4, 0x11, 5, 5, 0x35, 5, 5, 1, 5})
	f.Add([]byte{1, 3, 0x1c, 5, 5, 5, 0x3d, 5, 5, 5})
	f.Add([]byte{2, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0xd0, 0, 0, 0, 0, 0, 0, 0, 0, 0x15, 5, 5, 5, 5, 0, 0, 0, 0}) // resized to 4, then 1
	f.Add([]byte{1, 0, 0x60, 0, 0xd0, 0, 0, 0, 0, 5, 0, 0, 0x15, 0, 0, 3, 0, 4, 0, 1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 3 || len(data) > 64 {
			return
		}
		size, bound, flags := 1+int(data[0]%4), int(data[1]%5), data[2]
		log := newClockLog()
		var msgs []jetstream.Msg
		for _, b := range data[3:] {
			m := &fakeMsg{log: log, action: b}
			if flags&0x20 != 0 {
				m.ackTakes = time.Millisecond
			}
			if flags&0x40 != 0 {
				m.ackErrs = []error{errors.New("ack failed")}
			}
			msgs = append(msgs, m)
		}
		cons := &fakeConsumer{log: log, ackWait: time.Minute, wait: time.Millisecond, msgs: msgs}
		for _, m := range msgs {
			m.(*fakeMsg).cons = cons
		}
		var poolOpts []workerpool.Option
		switch flags >> 3 & 3 { // a queue that refuses, drops or expires what the feed fetched ahead
		case 1:
			poolOpts = append(poolOpts, workerpool.WithMaxWaiting(1, workerpool.Reject))
		case 2:
			poolOpts = append(poolOpts, workerpool.WithMaxWaiting(1, workerpool.DropOldest))
		case 3:
			poolOpts = append(poolOpts, workerpool.WithQueueTimeout(100*time.Microsecond))
		}
		pool := workerpool.New(size, poolOpts...)
		defer pool.Stop()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		acts := make(chan byte, len(msgs))
		opts := []natsfeed.Option{natsfeed.WithFetchWait(time.Millisecond), natsfeed.WithErrorHandler(func(error) {}),
			natsfeed.WithBackoff(func(int, error) (time.Duration, bool) { return 0, flags&2 == 0 })}
		if bound > 0 {
			opts = append(opts, natsfeed.WithMaxInFlight(bound))
		}
		if flags&1 != 0 {
			opts = append(opts, natsfeed.WithCancelOnStop())
		}
		if flags&4 != 0 {
			opts = append(opts, natsfeed.WithProgress(natsfeed.MinProgress))
		}
		stats := new(natsfeed.Stats)
		opts = append(opts, natsfeed.WithStats(stats))
		done := make(chan error, 1)
		go func() {
			done <- natsfeed.Feed(ctx, pool, cons, func(hctx context.Context, msg jetstream.Msg) error {
				m := msg.(*fakeMsg)
				acts <- m.action >> 3
				switch m.action & 7 {
				case 1:
					return errors.New("failed")
				case 2:
					return workerpool.Permanent(errors.New("fails for good"))
				case 3:
					panic("handler panics")
				case 4:
					runtime.Goexit()
				case 5:
					select {
					case <-hctx.Done():
					case <-time.After(time.Millisecond):
					}
				}
				return nil
			}, opts...)
		}()
		maxSize := size
		var err error
		deadline := time.After(20 * time.Second)
	loop:
		for {
			select {
			case a := <-acts:
				switch a % 8 {
				case 1:
					go pool.Stop()
				case 2:
					n := 1 + int(a/8)%4
					maxSize = max(maxSize, n)
					pool.Resize(n)
				case 3:
					pctx, unpause := context.WithTimeout(context.Background(), time.Millisecond)
					go func() { pool.Pause(pctx); unpause() }()
				case 4:
					cancel()
				case 5:
					go pool.StopWait()
				case 6:
					sctx, giveUp := context.WithCancel(context.Background())
					giveUp()
					go func() { _ = pool.Shutdown(sctx) }() // abandons the queue at once
				case 7:
					go cancel()
					go pool.Stop()
				}
			case err = <-done:
				break loop
			case <-time.After(time.Millisecond):
				if stats.Counts().Taken == int64(len(msgs)) {
					cancel()
				}
			case <-deadline:
				t.Fatalf("Feed did not return: %+v", stats.Counts())
			}
		}
		if err != nil && !errors.Is(err, workerpool.ErrStopped) {
			t.Fatalf("Feed returned %v", err)
		}
		c := stats.Counts()
		if c.Taken != c.Acked+c.Nacked+c.Terminated+c.Unsettled || c.InFlight != 0 {
			t.Fatalf("counts do not add up: %+v", c)
		}
		limit := 8 * maxSize // the most the default bound takes: eight times the pool's size
		if bound > 0 {
			limit = bound
		}
		if c.MaxInFlight > int64(limit) {
			t.Fatalf("held %d, above the bound %d", c.MaxInFlight, limit)
		}
		if most := cons.most(); most > limit {
			t.Fatalf("asked for or held %d at once, above the bound %d", most, limit)
		}
		var settled int64
		for i, m := range msgs {
			switch n := m.(*fakeMsg).settles.Load(); {
			case n > 1:
				t.Fatalf("message %d settled %d times", i, n)
			case n == 1:
				settled++
			}
			if n := m.(*fakeMsg).late.Load(); n > 0 {
				t.Fatalf("message %d: %d beats after its settlement", i, n)
			}
		}
		if settled != c.Taken-c.Unsettled {
			t.Fatalf("%d messages settled, %d taken: %+v", settled, c.Taken, c)
		}
	})
}
