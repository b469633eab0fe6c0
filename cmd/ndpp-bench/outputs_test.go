package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sentinel writes a file whose bytes a test checks afterwards.
func sentinel(t *testing.T, path string) []byte {
	t.Helper()
	b := []byte("keep me\n")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return b
}

func requireUnchanged(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "%s was replaced", path)
}

// TestOutputsAreCheckedBeforeWorkAndFailedRunsReplaceNothing runs every
// command whose outputs can collide with its inputs or each other, or sit
// in a missing directory, and checks that it refuses before doing any work
// and that no existing file is touched.
func TestOutputsAreCheckedBeforeWorkAndFailedRunsReplaceNothing(t *testing.T) {
	data := smallApparel(t, 300)
	dir := t.TempDir()
	keep := filepath.Join(dir, "keep.npz")
	keepBytes := sentinel(t, keep)
	dataBytes, err := os.ReadFile(data)
	require.NoError(t, err)
	missing := filepath.Join(dir, "nonexistent", "t.csv")
	// A hard link is the same file under another name.
	link := filepath.Join(dir, "link.txt")
	require.NoError(t, os.Link(data, link))
	model := filepath.Join(dir, "m.npz")
	require.NoError(t, os.WriteFile(model, mustRead(t, smallModel), 0o644))
	modelBytes := mustRead(t, model)

	learnArgs := []string{"learn", "--data", data, "--mode", "offline", "--d", "3", "--epochs", "1", "--val", "20", "--test", "20", "--quiet"}
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"learn trace in a missing directory", append(learnArgs, "--out", keep, "--trace", missing), 1, "--trace"},
		{"learn out in a missing directory", append(learnArgs, "--out", missing), 1, "--out"},
		{"learn out is trace", append(learnArgs, "--out", keep, "--trace", keep), 2, "same file"},
		{"learn out is data", append(learnArgs, "--out", data), 2, "input file of --data"},
		{"learn out is data by another name", append(learnArgs, "--out", filepath.Dir(data)+"/./"+filepath.Base(data)), 2, "input file"},
		{"learn out is a hard link of data", append(learnArgs, "--out", link), 2, "input file"},
		{"learn checkpoint is out", []string{"learn", "--data", data, "--mode", "online", "--d", "3", "--quiet", "--out", keep, "--checkpoint", keep}, 2, "same file"},
		{"learn trace is resume", []string{"learn", "--data", data, "--mode", "online", "--d", "3", "--quiet", "--resume", keep, "--trace", keep}, 2, "input file of --resume"},
		{"infer trajectory is model", []string{"infer", "--model", model, "--k", "3", "--trajectory", model, "--quiet"}, 2, "input file of --model"},
		{"infer trajectory in a missing directory", []string{"infer", "--model", model, "--k", "3", "--trajectory", missing, "--quiet"}, 1, "--trajectory"},
		{"sample out is model", []string{"sample", "--model", model, "--out", model}, 2, "input file of --model"},
		{"baskets out in a missing directory", []string{"baskets", "--synthetic", "--out", missing}, 1, "--out"},
		{"demo data inside out", []string{"demo", "--data", filepath.Join(dir, "model.npz"), "--out", dir, "--quiet"}, 2, "input file of --data"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := runCmd(t, "", c.args...)
			require.Equal(t, c.code, code, errs)
			require.Contains(t, errs, c.msg)
			require.Equal(t, 1, strings.Count(strings.TrimSpace(errs), "\n")+1, "one line: %s", errs)
			requireUnchanged(t, keep, keepBytes)
			requireUnchanged(t, data, dataBytes)
			requireUnchanged(t, model, modelBytes)
			_, err := os.Stat(filepath.Dir(missing))
			require.True(t, os.IsNotExist(err))
		})
	}
	// Resuming into the checkpoint it was read from is allowed.
	ck := filepath.Join(dir, "ck.bin")
	code, _, errs := runCmd(t, "", "learn", "--data", data, "--mode", "online", "--d", "3", "--val", "20", "--test", "20", "--quiet", "--checkpoint", ck)
	require.Equal(t, 0, code, errs)
	code, _, errs = runCmd(t, "", "learn", "--data", data, "--mode", "online", "--d", "3", "--val", "20", "--test", "20", "--quiet", "--checkpoint", ck, "--resume", ck)
	require.Equal(t, 0, code, errs)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// TestStaleTempFilesOfKilledWritesAreCleaned: the temporary files that a
// killed checkpoint or model write leaves (".NAME.tmp-DIGITS") are removed
// by the next write of the same file; other files are not touched.
func TestStaleTempFilesOfKilledWritesAreCleaned(t *testing.T) {
	data := smallApparel(t, 300)
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	stale := []string{".ck.bin.tmp-12345", ".m.npz.tmp-4294967295"}
	keep := []string{".ck.bin.tmp-x1", "ck.bin.tmp-1", ".other.tmp-1"}
	for _, name := range append(slices.Clone(stale), keep...) {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("partial"), 0o600))
		require.NoError(t, os.Chtimes(p, old, old))
	}
	code, _, errs := runCmd(t, "", "learn", "--data", data, "--mode", "online", "--d", "3", "--val", "20", "--test", "20", "--quiet",
		"--checkpoint", filepath.Join(dir, "ck.bin"), "--out", filepath.Join(dir, "m.npz"))
	require.Equal(t, 0, code, errs)
	for _, name := range stale {
		require.NoFileExists(t, filepath.Join(dir, name))
	}
	for _, name := range keep {
		require.FileExists(t, filepath.Join(dir, name))
	}
}
