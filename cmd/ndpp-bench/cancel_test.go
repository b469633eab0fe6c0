package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
)

// runCtx runs a command line with the given context.
func runCtx(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(&env{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), ctx: ctx}, args)
	return code, out.String(), errb.String()
}

// TestCommandsInterrupted: infer (a model's items and a stream of item
// vectors), sample, learn (online and offline) and eval stop when their
// context is done, before they start or midway, with exit status 130, one
// line on stderr, and no output file.
func TestCommandsInterrupted(t *testing.T) {
	dir := t.TempDir()
	items := filepath.Join(dir, "items.npy")
	kernel := filepath.Join(dir, "kernel.npz")
	code, _, errs := runCtx(context.Background(), "items", "--synthetic", "--n", "3000", "--d", "4", "--seed", "2", "--out", items, "--kernel-out", kernel, "--quiet")
	require.Zero(t, code, errs)
	data := smallApparel(t, 1500)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	out := filepath.Join(dir, "samples.txt")
	for _, args := range [][]string{
		{"infer", "--synthetic", "--n", "3000", "--d", "4", "--k", "5", "--algos", "online-lss,online-2neighbor", "--quiet"},
		{"infer", "--synthetic", "--n", "3000", "--d", "4", "--k", "5", "--algos", "offline-greedy", "--quiet"},
		{"infer", "--synthetic", "--n", "3000", "--d", "4", "--k", "5", "--algos", "local-search", "--quiet"},
		{"infer", "--items", items, "--kernel", kernel, "--k", "5", "--algos", "all", "--quiet"},
		{"sample", "--model", smallModel, "--count", "500", "--out", out, "--quiet"},
		{"learn", "--data", data, "--mode", "online", "--d", "5", "--val", "100", "--test", "300", "--out", out, "--quiet"},
		{"learn", "--data", data, "--mode", "offline", "--d", "5", "--val", "100", "--test", "300", "--epochs", "3", "--out", out, "--quiet"},
		{"eval", "--model", smallModel, "--test", "testdata/golden/eval-baskets.txt", "--quiet"},
	} {
		for _, ctx := range []context.Context{done, ndpptest.CancelAfter(3)} {
			code, stdout, errs := runCtx(ctx, args...)
			require.Equal(t, 130, code, "%v: %s", args, errs)
			require.Contains(t, errs, "ndpp-bench "+args[0]+": interrupted: ", args)
			require.Contains(t, errs, "context canceled", args)
			require.Equal(t, 1, strings.Count(errs, "\n"), "%v: %s", args, errs)
			require.Empty(t, stdout, args)
			require.NoFileExists(t, out, args)
		}
	}
	_, err := os.Stat(items)
	require.NoError(t, err)
	// Only these commands take SIGINT and SIGTERM as a cancellation
	// (serve handles its own signals).
	for name, c := range commands {
		require.Equal(t, name == "infer" || name == "sample" || name == "learn" || name == "eval" || name == "demo", c.interruptible, name)
	}
}
