package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The program's whole output, the same on every run: which mails were
// sent, retried and given up, and the digests saved at exit.
func TestOutput(t *testing.T) {
	var out strings.Builder
	run(&out)
	want, err := os.ReadFile("testdata/output.txt")
	require.NoError(t, err)
	assert.Equal(t, string(want), out.String())
}
