package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLearnResumeRefusesOtherData: a checkpoint records a fingerprint of
// the baskets it consumed, so resuming it on other baskets of the same
// length, or on the same file split otherwise (--val), is refused with a
// message that says why (it used to train on mixed data and exit 0); the
// same data resume.
func TestLearnResumeRefusesOtherData(t *testing.T) {
	all := strings.SplitAfter(string(mustRead(t, smallApparel(t, 3000))), "\n")
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first.txt"), filepath.Join(dir, "second.txt")
	require.NoError(t, os.WriteFile(first, []byte(strings.Join(all[:1500], "")), 0o644))
	require.NoError(t, os.WriteFile(second, []byte(strings.Join(all[1500:3000], "")), 0o644))
	ck := filepath.Join(dir, "ck.bin")
	args := func(data string, extra ...string) []string {
		return append([]string{"learn", "--data", data, "--mode", "online", "--d", "5", "--val", "100", "--test", "300", "--quiet"}, extra...)
	}
	code, _, errs := runCmd(t, "", args(first, "--checkpoint", ck)...)
	require.Equal(t, 0, code, errs)
	for _, c := range [][]string{args(second, "--resume", ck), args(first, "--resume", ck, "--val", "50")} {
		code, _, errs = runCmd(t, "", c...)
		require.Equal(t, 1, code, "%v: %s", c, errs)
		require.Contains(t, errs, "--resume "+ck+": ", c)
		require.Contains(t, errs, "not the baskets the checkpoint was trained on", c)
	}
	code, _, errs = runCmd(t, "", args(first, "--resume", ck)...)
	require.Equal(t, 0, code, errs)
}
