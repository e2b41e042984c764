// Package exectest runs a built example program in a test and reads its
// standard output line by line. It serves the examples' tests, in this
// module and in the nested ones.
package exectest

import (
	"bufio"
	"bytes"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Deadline bounds each wait on the program: generous, as a loaded machine
// (or -race) can be slow to start it and to let it finish.
const Deadline = 60 * time.Second

// A Process is the program running: its stdout line by line, its stderr,
// and its exit.
type Process struct {
	Cmd    *exec.Cmd
	Stderr *bytes.Buffer // read only once Wait has returned
	lines  <-chan string // stdout, closed at EOF
	exited <-chan error  // cmd.Wait's result, once stdout is drained
	waited bool          // exited has been received from
}

// Start starts bin with args; the test's cleanup kills it if it is still
// running.
func Start(t testing.TB, bin string, args ...string) *Process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr := new(bytes.Buffer)
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err, "StdoutPipe")
	require.NoError(t, cmd.Start(), "start %s", bin)

	// The reader owns stdout: it sends each line, closes lines at EOF (the
	// program has exited), then calls Wait, which must follow the reads.
	// The programs print a few lines, so it never blocks on lines.
	lines, exited := make(chan string, 16), make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	p := &Process{Cmd: cmd, Stderr: stderr, lines: lines, exited: exited}
	t.Cleanup(func() {
		if !p.waited {
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	return p
}

// Line returns the next line of the program's stdout, failing the test if
// there is none within Deadline or the program exits first.
func (p *Process) Line(t testing.TB) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			err := p.Wait(t)
			require.FailNow(t, "stdout ended", "exit: %v; stderr:\n%s", err, p.Stderr)
		}
		return l
	case <-time.After(Deadline):
		require.FailNow(t, "no line on stdout", "after %v", Deadline)
		return ""
	}
}

// Wait waits for the program to exit, logging any further stdout, and
// returns cmd.Wait's error. It fails the test if the program has not
// exited within Deadline.
func (p *Process) Wait(t testing.TB) error {
	t.Helper()
	timeout, lines := time.After(Deadline), p.lines
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				lines = nil // EOF: wait for exited alone
				continue
			}
			t.Logf("more stdout: %s", l)
		case err := <-p.exited:
			p.waited = true
			return err
		case <-timeout:
			require.FailNow(t, "program did not exit", "after %v", Deadline)
		}
	}
}
