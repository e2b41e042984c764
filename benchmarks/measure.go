package main

import (
	"runtime"
	"time"
)

// measure runs body once for n tasks and reports its wall time, the process's
// CPU time and the heap allocations made meanwhile. The garbage collector runs
// first so that one run's garbage is not charged to the next.
func measure(n int, body func()) result {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu := cpuTime()
	start := time.Now()
	body()
	wall := time.Since(start)
	cpu = cpuTime() - cpu
	runtime.ReadMemStats(&after)
	return result{
		Tasks:   n,
		Wall:    float64(wall),
		CPU:     float64(cpu),
		Mallocs: float64(after.Mallocs - before.Mallocs),
		Bytes:   float64(after.TotalAlloc - before.TotalAlloc),
	}
}

// awaitGoroutines waits up to limit for the goroutine count to fall to want
// and returns the count it saw last. Some libraries let their goroutines exit
// just after Close returns.
func awaitGoroutines(want int, limit time.Duration) int {
	deadline := time.Now().Add(limit)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(time.Millisecond)
	}
}
