package main

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

const ms = time.Millisecond

// callsInOrder starts n calls to s, one after another at the same fake
// instant (each is waiting or served before the next starts), and returns
// a func that waits for them all and gives when each returned, since the
// first started.
func callsInOrder(s *service, n int) (returned func() []time.Duration) {
	start := time.Now()
	ends := make([]time.Duration, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s.Call()
			ends[i] = time.Since(start)
		})
		synctest.Wait()
	}
	return func() []time.Duration {
		wg.Wait()
		return ends
	}
}

func TestServiceCallTakesTheServiceTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newService(16, 10*ms)
		start := time.Now()
		s.Call()
		assert.Equal(t, 10*ms, time.Since(start), "one call alone")
		assert.Equal(t, []time.Duration{10 * ms, 10 * ms, 10 * ms}, callsInOrder(s, 3)(), "three calls in 16 slots")
	})
}

// Calls beyond the slots wait, first come first served; up to twice the
// slots in the service none is slowed.
func TestServiceQueuesCallsBeyondItsSlotsInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newService(2, 10*ms)
		assert.Equal(t, []time.Duration{10 * ms, 10 * ms, 20 * ms, 20 * ms}, callsInOrder(s, 4)(), "2 slots, 4 calls: 2C, no slowdown")

		s = newService(1, 10*ms)
		assert.Equal(t, []time.Duration{10 * ms, 20 * ms, 30 * ms}, callsInOrder(s, 3)(), "one slot, 3 calls: one after another, in order")
	})
}

// A call that gets its slot while more than 2C calls are in the service
// (itself counted, the call that just returned not) is served for
// S × (1 + (inflight − 2C)/C).
func TestServiceSlowsCallsBeyondTwiceItsSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newService(2, 10*ms)
		returned := callsInOrder(s, 6)
		// At 10 ms calls 1 and 2 return. Call 3 gets a slot with 5 in the
		// service: 10 × (1 + 1/2) = 15 ms, until 25. Call 4 with 4: 10 ms,
		// until 20. At 20 call 5 gets call 4's slot with 3 in: until 30; at
		// 25 call 6 gets call 3's with 2 in: until 35.
		assert.Equal(t, []time.Duration{10 * ms, 10 * ms, 25 * ms, 20 * ms, 30 * ms, 35 * ms}, returned())
	})
}

// SetSlots lowers C at once: served calls keep their slots and times,
// waiting calls get a slot only under the new C, and the slowdown counts
// against the new C.
func TestServiceSetSlotsHalvesWhileCallsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newService(4, 10*ms)
		returned := callsInOrder(s, 10) // 4 served, 6 waiting
		s.SetSlots(2)
		// At 10 ms the four served calls return; the slots free under C = 2
		// go to calls 5 (7 in the service: 10 × (1 + 3/2) = 25 ms, until
		// 35) and 6 (6 in: 20 ms, until 30). At 30 call 7 gets a slot with
		// 5 in (15 ms, until 45), at 35 call 8 with 4 in (10 ms, until 45),
		// at 45 calls 9 and 10 with 3 and 2 in (10 ms each, until 55).
		assert.Equal(t, []time.Duration{10 * ms, 10 * ms, 10 * ms, 10 * ms, 35 * ms, 30 * ms, 45 * ms, 45 * ms, 55 * ms, 55 * ms}, returned())
	})
}

// Raising C gives waiting calls their slots at once.
func TestServiceSetSlotsUpAdmitsWaitingCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newService(1, 10*ms)
		returned := callsInOrder(s, 2)
		time.Sleep(5 * ms)
		s.SetSlots(2)
		assert.Equal(t, []time.Duration{10 * ms, 15 * ms}, returned(), "the second call starts at 5 ms")
		s.SetSlots(0)
		assert.Equal(t, []time.Duration{10 * ms, 20 * ms}, callsInOrder(s, 2)(), "SetSlots(0) means 1")
	})
}
