package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/beam/pipelines"
	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/items"
	"github.com/ndpp-go/ndpp/ndpp/npz"
	"github.com/ndpp-go/ndpp/stream"
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
	require.NotContains(t, stderr, "level=INFO", "Beam's and Prism's INFO logs need --verbose")
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
		{[]string{"map", "--items", "x"}, "--items, --kernel, --out and --k ≥ 1 are required"},
		{[]string{"map", "--items", "x", "--kernel", "nowhere.npz", "--k", "3", "--out", "y"}, "nowhere.npz"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
	} {
		stderr, code := ndppBeam(t, c.args...)
		require.NotEqual(t, 0, code, "%v: %s", c.args, stderr)
		require.Contains(t, stderr, c.want, "%v", c.args)
	}
	stderr, code := ndppBeam(t)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "usage: ndpp-beam")
	stderr, code = ndppBeam(t, "-h")
	require.Equal(t, 0, code)
	require.Contains(t, stderr, "usage: ndpp-beam")
}

// TestHelp: a command's -h lists its own flags first, then Beam's runner
// flags apart.
func TestHelp(t *testing.T) {
	for cmd, own := range map[string][]string{
		"score": {"-model", "-input", "-output", "-summary", "-file-column", "-verbose"},
		"learn": {"-data", "-steps", "-work-dir", "-verbose"},
		"map":   {"-items", "-kernel", "-k", "-verbose"},
	} {
		stderr, _ := ndppBeam(t, cmd, "-h")
		i := strings.Index(stderr, "\nBeam runner flags:\n")
		require.Positive(t, i, "%s: %s", cmd, stderr)
		head, tail := stderr[:i], stderr[i:]
		lists := func(s, f string) bool {
			return strings.Contains(s, "\n  "+f+" ") || strings.Contains(s, "\n  "+f+"\n")
		}
		for _, f := range own {
			require.True(t, lists(head, f) && !lists(tail, f), "%s: %s", cmd, f)
		}
		for _, f := range []string{"-runner", "-endpoint", "-environment_type", "-job_name"} {
			require.True(t, lists(tail, f) && !lists(head, f), "%s: %s", cmd, f)
		}
	}
}

// TestMap: ndpp-beam map over two NPY files writes the JSON result, equal
// to the core's offline greedy on all items (one shard).
func TestMap(t *testing.T) {
	dir := t.TempDir()
	m := ndpp.Random(300, 4, 9, ndpp.RandomOptions{Diag: 0.1})
	f, err := os.Create(filepath.Join(dir, "kernel.npz"))
	require.NoError(t, err)
	require.NoError(t, npz.Write(f, m))
	require.NoError(t, f.Close())
	kern := detcache.KernelOf(m)
	for p, rows := range [][2]int{{0, 120}, {120, 300}} {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("items-%d.npy", p)))
		require.NoError(t, err)
		w, err := items.NewNPYWriter(f, kern, rows[1]-rows[0], false)
		require.NoError(t, err)
		for i := rows[0]; i < rows[1]; i++ {
			require.NoError(t, w.Write([]detcache.Item{detcache.ModelItem(m, i)}))
		}
		require.NoError(t, w.Close())
		require.NoError(t, f.Close())
	}
	out := filepath.Join(dir, "map.json")
	stderr, code := ndppBeam(t, "map", "--items", filepath.Join(dir, "items-*.npy"), "--kernel", filepath.Join(dir, "kernel.npz"),
		"--k", "5", "--shards", "1", "--polish", "none", "--out", out)
	require.Equal(t, 0, code, stderr)
	res, err := pipelines.ReadMapResult(out)
	require.NoError(t, err)
	g, err := stream.OfflineGreedy(m, 5, stream.GreedyOptions{})
	require.NoError(t, err)
	require.Equal(t, slices.Sorted(slices.Values(g.Solution)), res.IDs)
	require.Equal(t, int64(300), res.Items)
	require.Equal(t, 1, res.Shards)
	require.Equal(t, "none", res.Polish)

	// The default polishes the final solution by local search: never
	// below greedy.
	stderr, code = ndppBeam(t, "map", "--items", filepath.Join(dir, "items-*.npy"), "--kernel", filepath.Join(dir, "kernel.npz"),
		"--k", "5", "--shards", "2", "--out", out)
	require.Equal(t, 0, code, stderr)
	res, err = pipelines.ReadMapResult(out)
	require.NoError(t, err)
	require.Equal(t, "final", res.Polish)
	require.GreaterOrEqual(t, res.LogDet, g.Value.Log-1e-9)
	ld, _, err := m.LogDet(res.IDs)
	require.NoError(t, err)
	require.Equal(t, ld, res.LogDet)

	stderr, code = ndppBeam(t, "map", "--items", filepath.Join(dir, "items-*.npy"), "--kernel", filepath.Join(dir, "kernel.npz"),
		"--k", "5", "--polish", "some", "--out", out)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "want final, none or all")
}
