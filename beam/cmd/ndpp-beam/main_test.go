package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp/npz"
)

// TestMain runs the command itself when the test binary is started with
// NDPP_BEAM_MAIN set (the arguments after "--"), so that each command runs
// in its own process with its own flags, as from a shell.
func TestMain(m *testing.M) {
	if os.Getenv("NDPP_BEAM_MAIN") != "" {
		args := os.Args
		for i, a := range args {
			if a == "--" {
				args = append([]string{args[0]}, args[i+1:]...)
				break
			}
		}
		os.Exit(run(args, os.Stderr))
	}
	os.Exit(m.Run())
}

func ndppBeam(t *testing.T, args ...string) (string, int) {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "NDPP_BEAM_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return stderr.String(), code
}

// TestLearnThenScore: ndpp-beam learn writes a model over the data's
// tokens; ndpp-beam score scores every basket of the file with it, one
// output file per shard.
func TestLearnThenScore(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join("..", "..", "..", "testdata", "1_100_100_100_apparel_regs.csv")
	model := filepath.Join(dir, "m.npz")
	stderr, code := ndppBeam(t, "learn", "--data", data, "--d", "3", "--steps", "2", "--shards", "2", "--out", model, "--runner=prism")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, "step 2/2")
	m, err := npz.Load(model)
	require.NoError(t, err)
	require.Equal(t, 100, m.N())
	require.Equal(t, 3, m.D())
	require.True(t, m.HasDiag())

	prefix := filepath.Join(dir, "scores")
	stderr, code = ndppBeam(t, "score", "--model", model, "--input", data, "--output", prefix, "--shards", "3", "--recommend", "2")
	require.Equal(t, 0, code, stderr)
	outs, err := filepath.Glob(prefix + "-*-of-00003")
	require.NoError(t, err)
	require.Len(t, outs, 3)
	lines := 0
	for _, o := range outs {
		b, err := os.ReadFile(o)
		require.NoError(t, err)
		for l := range strings.SplitSeq(strings.TrimSuffix(string(b), "\n"), "\n") {
			require.Len(t, strings.Fields(l), 3, "line %q", l) // line number and two items
			lines++
		}
	}
	require.Equal(t, 14970, lines)
}

// TestUsage: missing flags, a cluster runner without a shared work
// directory and unknown commands are refused with a message.
func TestUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"score", "--input", "x"}, "--model, --input and --output are required"},
		{[]string{"learn", "--data", "x", "--out", "y"}, "--steps ≥ 1 are required"},
		{[]string{"learn", "--data", "x", "--out", "y", "--steps", "1", "--runner=flink"}, "--work-dir is required with --runner=flink"},
		{[]string{"map"}, `unknown command "map"`},
	} {
		stderr, code := ndppBeam(t, c.args...)
		require.NotEqual(t, 0, code, "%v: %s", c.args, stderr)
		require.Contains(t, stderr, c.want, "%v", c.args)
	}
	stderr, code := ndppBeam(t)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "usage: ndpp-beam")
}
