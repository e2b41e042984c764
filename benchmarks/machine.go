package main

import (
	"bufio"
	"os"
	"runtime"
	"strings"
)

// machine describes where the suite ran.
type machine struct {
	goVersion  string
	platform   string
	cpu        string
	numCPU     int
	gomaxprocs int
	loadBefore string
}

func describeMachine() machine {
	return machine{
		goVersion:  runtime.Version(),
		platform:   runtime.GOOS + "/" + runtime.GOARCH,
		cpu:        cpuModel(),
		numCPU:     runtime.NumCPU(),
		gomaxprocs: runtime.GOMAXPROCS(0),
		loadBefore: loadAverage(),
	}
}

// cpuModel reads the processor's name on Linux.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// loadAverage reads the 1, 5 and 15 minute load averages on Linux.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
