package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLearnRefusesHeaderAndJunkTokens: a header line or a junk token in an
// integer-id basket file is an error naming the line and the flag that
// changes the rule, not a new item; --header and --tokens any accept them.
func TestLearnRefusesHeaderAndJunkTokens(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
		return p
	}
	body := "1 2\n3 4 5\n2 3\n1 5\n4 2\n"
	hdr := write("hdr.txt", "item_a item_b\n"+body)
	junk := write("junk.txt", body+"3 NaN\n")
	for _, mode := range []string{"offline", "online"} {
		args := []string{"learn", "--mode", mode, "--d", "2", "--val", "0", "--test", "1", "--epochs", "1", "--quiet"}
		code, _, errs := runCmd(t, "", append(args, "--data", hdr)...)
		require.Equal(t, 1, code, errs)
		require.Contains(t, errs, "hdr.txt:1: the first line looks like a header")
		require.Contains(t, errs, "--header")
		code, _, errs = runCmd(t, "", append(args, "--data", junk)...)
		require.Equal(t, 1, code, errs)
		require.Contains(t, errs, `junk.txt:6: bad item token "NaN"`)
		require.Contains(t, errs, "--tokens any")

		out := filepath.Join(dir, mode+".npz")
		code, _, errs = runCmd(t, "", append(args, "--data", hdr, "--header", "--out", out)...)
		require.Equal(t, 0, code, errs)
		code, _, errs = runCmd(t, "", append(args, "--data", junk, "--tokens", "any")...)
		require.Equal(t, 0, code, errs)
	}
	code, _, errs := runCmd(t, "", "learn", "--data", hdr, "--tokens", "ints")
	require.Equal(t, 2, code, errs)
}
