package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
	"github.com/ndpp-go/ndpp/internal/outfile"
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
		require.Equal(t, name != "serve" && name != "backends" && name != "version", c.interruptible, name)
	}
}

// TestWritingCommandsInterrupted: baskets, items, score and figures stop
// when their context is done, before they start or midway, with exit
// status 130 and one line on stderr: baskets and items leave no output
// file, score has written a prefix of its lines (whole lines, in input
// order), figures the figures before the one it stopped at.
func TestWritingCommandsInterrupted(t *testing.T) {
	dir := t.TempDir()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	interrupted := func(args []string, code int, stdout, errs string) {
		t.Helper()
		require.Equal(t, 130, code, "%v: %s", args, errs)
		require.Contains(t, errs, "ndpp-bench "+args[0]+": interrupted: ", args)
		require.Contains(t, errs, "context canceled", args)
		require.Equal(t, 1, strings.Count(errs, "\n"), "%v: %s", args, errs)
	}
	out, kernel := filepath.Join(dir, "out"), filepath.Join(dir, "kernel.npz")
	for _, args := range [][]string{
		{"baskets", "--synthetic", "--n", "500", "--count", "20000", "--out", out},
		{"items", "--synthetic", "--n", "20000", "--d", "3", "--out", out, "--kernel-out", kernel, "--quiet"},
	} {
		for _, ctx := range []context.Context{done, ndpptest.CancelAfter(2)} {
			code, stdout, errs := runCtx(ctx, args...)
			interrupted(args, code, stdout, errs)
			require.Empty(t, stdout, args)
			require.NoFileExists(t, out, args)
		}
		code, _, errs := runCtx(context.Background(), args...)
		require.Zero(t, code, errs)
		require.FileExists(t, out, args)
		require.NoError(t, os.Remove(out))
	}
	// A stream of 10¹² items, whose generators items positions before the
	// first item is written, stops as soon as it is interrupted too.
	for _, ctx := range []context.Context{done, ndpptest.CancelAfter(2)} {
		args := []string{"items", "--synthetic", "--n", "1000000000000", "--d", "10", "--out", out, "--quiet"}
		code, stdout, errs := runCtx(ctx, args...)
		interrupted(args, code, stdout, errs)
		require.NoFileExists(t, out, args)
	}

	var in strings.Builder
	for i := 0; i < 3*scoreChunkSize+17; i++ {
		fmt.Fprintf(&in, "%d %d\n", i%30, 30+i%30)
	}
	for _, rec := range []string{"0", "3"} {
		args := []string{"score", "--model", smallModel, "--recommend", rec, "--threads", "2", "--quiet"}
		code, full, errs := runCmd(t, in.String(), args...)
		require.Zero(t, code, errs)
		for _, ctx := range []context.Context{done, ndpptest.CancelAfter(2)} {
			var stdout, stderr bytes.Buffer
			code := run(&env{stdout: &stdout, stderr: &stderr, stdin: strings.NewReader(in.String()), ctx: ctx}, args)
			interrupted(args, code, stdout.String(), stderr.String())
			require.True(t, strings.HasPrefix(full, stdout.String()), args)
			require.Less(t, stdout.Len(), len(full), args)
			if stdout.Len() > 0 {
				require.True(t, strings.HasSuffix(stdout.String(), "\n"), args)
			}
			if ctx == done {
				require.Empty(t, stdout.String(), args)
			}
		}
	}

	figs := t.TempDir()
	var rows []trajRow
	for i := int64(1); i <= 30; i++ {
		rows = append(rows, trajRow{algo: "online-lss", items: i, logValue: float64(i), size: 5, evals: 5 * i, swaps: i / 10})
	}
	require.NoError(t, writeTrajectories(outfile.Write, figs, rows))
	for _, ctx := range []context.Context{done, ndpptest.CancelAfter(2)} {
		args := []string{"figures", "--in", figs}
		code, stdout, errs := runCtx(ctx, args...)
		interrupted(args, code, stdout, errs)
		require.Empty(t, stdout, args)
		drawn, err := filepath.Glob(filepath.Join(figs, "*.png"))
		require.NoError(t, err)
		require.Less(t, len(drawn), 3, "figures drawn after the interruption") // of 3 figures
	}
}
