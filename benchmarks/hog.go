package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// The CPU hog stands for the other work of a busy host: one process that
// spins on one CPU while a measured child runs. It is this binary run with
// hogFlag; the parent starts it before a measured child and kills it (and
// waits for it) after, whatever the child did. Its CPU time is not in the
// child's: the child measures its own process (getrusage RUSAGE_SELF), and
// the hog is the parent's child, not the measured child's.
const hogFlag = "-hog-child"

// The -hog modes.
const (
	hogOff  = "off"  // every run quiet
	hogOn   = "on"   // every run beside the hog
	hogBoth = "both" // every scenario and pool quiet and beside the hog, in turn
)

// hogModes are the modes the run measures: false for quiet, true beside
// the hog.
func hogModes(mode string) ([]bool, error) {
	switch mode {
	case hogOff:
		return []bool{false}, nil
	case hogOn:
		return []bool{true}, nil
	case hogBoth:
		return []bool{false, true}, nil
	}
	return nil, fmt.Errorf("-hog wants %s, %s or %s, got %q", hogOff, hogOn, hogBoth, mode)
}

// A hog is a running hog process.
type hog struct {
	cmd  *exec.Cmd
	note string // what the hog said of its pinning: "pinned to CPU 0", or why not
}

// hogStarted is called with the pid of every hog once it spins (tests).
var hogStarted = func(pid int) {}

// startHog starts a hog and returns once it spins. Should the parent die
// without stopping it, the hog ends by itself: it exits when its stdin, a
// pipe from the parent, reaches EOF, and on Linux the kernel kills it
// with the parent (Pdeathsig).
func startHog(exe string) (*hog, error) {
	cmd := exec.Command(exe, hogFlag)
	setHogAttr(cmd)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if _, err := cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("CPU hog: %w", err)
	}
	h := &hog{cmd: cmd}
	ready := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		if s.Scan() {
			ready <- s.Text()
		}
		close(ready)
	}()
	select {
	case note, ok := <-ready:
		if ok {
			h.note = note
			hogStarted(cmd.Process.Pid)
			return h, nil
		}
		h.stop()
		return nil, fmt.Errorf("CPU hog exited before it spun: %s", strings.TrimSpace(stderr.String()))
	case <-time.After(10 * time.Second):
		h.stop()
		return nil, errors.New("CPU hog did not start spinning within 10s")
	}
}

// stop kills the hog and waits for it, so that no hog outlives its run.
func (h *hog) stop() {
	_ = h.cmd.Process.Kill() // fails only if it has exited already; Wait reaps it either way
	_ = h.cmd.Wait()         // "signal: killed"
}

// runHog is the hog process: it pins its thread to one CPU where it can,
// says so on stdout, and spins until it is killed or its stdin closes.
func runHog() {
	runtime.LockOSThread()
	note := pinThread()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0) // the parent is gone
	}()
	fmt.Println(note)
	x := uint64(1)
	for {
		x = x*6364136223846793005 + 1442695040888963407 // a step of an LCG: work, no memory
	}
}
