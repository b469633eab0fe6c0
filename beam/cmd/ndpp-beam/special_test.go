//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
)

// TestSummaryMustBeARegularFile: score --summary on a FIFO, a socket or a
// device is refused before the job starts (the command reads the summary
// back: a FIFO hung, a device failed after the whole job), naming the
// flag and what the path is; no shard file is written.
func TestSummaryMustBeARegularFile(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join("..", "..", "..", "testdata", "1_100_100_100_apparel_regs.csv")
	model := filepath.Join("..", "..", "..", "testdata", "small-model.npz")
	fifo, _ := ndpptest.FIFO(t)
	defer ndpptest.ReleaseFIFO(fifo)
	specials := map[string]string{"named pipe (FIFO)": fifo, "socket": ndpptest.Socket(t)}
	if os.Geteuid() == 0 {
		specials["device"] = ndpptest.NullDevice(t)
	}
	prefix := filepath.Join(dir, "scores")
	for kind, path := range specials {
		stderr, code := ndppBeam(t, "score", "--model", model, "--input", data, "--output", prefix, "--summary", path)
		require.Equal(t, 2, code, "%s: %s", kind, stderr)
		require.Contains(t, stderr, "--summary "+path+" is a "+kind+": ", kind)
		require.Equal(t, 1, strings.Count(stderr, "\n"), "%s: %s", kind, stderr)
		outs, err := filepath.Glob(prefix + "*")
		require.NoError(t, err)
		require.Empty(t, outs, "the job ran")
	}
}

// TestLearnWorkDirChecked: a --work-dir that is missing, not a directory
// or (as a user other than root) not writable is refused before the job,
// in one line naming the flag, as --out is (it used to fail inside the
// pipeline with Beam's multi-line log).
func TestLearnWorkDirChecked(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join("..", "..", "..", "testdata", "1_100_100_100_apparel_regs.csv")
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	cases := map[string]string{filepath.Join(dir, "missing"): "no such file or directory", file: "not a directory"}
	if os.Geteuid() != 0 {
		ro := filepath.Join(dir, "read-only")
		require.NoError(t, os.Mkdir(ro, 0o555))
		cases[ro] = "permission denied"
	}
	for work, want := range cases {
		out := filepath.Join(dir, "m.npz")
		stderr, code := ndppBeam(t, "learn", "--data", data, "--d", "2", "--steps", "1", "--out", out, "--work-dir", work, "--quiet")
		require.Equal(t, 1, code, "%s: %s", work, stderr)
		require.Equal(t, 1, strings.Count(stderr, "\n"), "%s: %s", work, stderr)
		require.Contains(t, stderr, "ndpp-beam learn: --work-dir: cannot write in "+work+": ", work)
		require.Contains(t, stderr, want, work)
		require.NoFileExists(t, out)
	}
}
