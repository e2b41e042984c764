//go:build !unix

package main

import "time"

// cpuTime is not measured on this system; the report shows 0.
func cpuTime() time.Duration { return 0 }
