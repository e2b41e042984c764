//go:build !linux

package main

import (
	"os/exec"
	"runtime"
)

func setHogAttr(*exec.Cmd) {}

// pinThread does not pin: sched_setaffinity is Linux's.
func pinThread() string {
	return "not pinned (pinning is implemented on Linux only, not " + runtime.GOOS + ")"
}
