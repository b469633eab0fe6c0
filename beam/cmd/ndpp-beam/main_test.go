package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/beam/pipelines"
	"github.com/ndpp-go/ndpp/internal/ndpptest"
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
		os.Exit(run(args, os.Stdout, os.Stderr))
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
// output file per shard. Neither leaves a file in the temporary directory
// (the Beam SDK's loopback placeholders go to a directory of the job's own).
func TestLearnThenScore(t *testing.T) {
	dir := t.TempDir()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
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
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, left, "files left in $TMPDIR")
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
	kern := ndpp.KernelOf(m)
	for p, rows := range [][2]int{{0, 120}, {120, 300}} {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("items-%d.npy", p)))
		require.NoError(t, err)
		w, err := items.NewNPYWriter(f, kern, rows[1]-rows[0], false)
		require.NoError(t, err)
		for i := rows[0]; i < rows[1]; i++ {
			require.NoError(t, w.Write([]ndpp.Item{ndpp.ModelItem(m, i)}))
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
	g, err := stream.OfflineGreedy(context.Background(), m, 5, stream.GreedyOptions{})
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

	// --out -: the result on standard output; a FIFO: written through.
	mapArgs := []string{"map", "--items", filepath.Join(dir, "items-*.npy"), "--kernel", filepath.Join(dir, "kernel.npz"), "--k", "5", "--shards", "2"}
	stdout, stderr, code := ndppBeamOut(t, append(mapArgs, "--out", "-")...)
	require.Equal(t, 0, code, stderr)
	require.JSONEq(t, string(readFile(t, out)), stdout)
	fifo, read := ndpptest.FIFO(t)
	stderr, code = ndppBeam(t, append(mapArgs, "--out", fifo)...)
	require.Equal(t, 0, code, stderr)
	require.JSONEq(t, stdout, string(<-read))
	st, err := os.Lstat(fifo)
	require.NoError(t, err)
	require.Equal(t, os.ModeNamedPipe, st.Mode().Type(), "the FIFO was replaced")

	stderr, code = ndppBeam(t, "map", "--items", filepath.Join(dir, "items-*.npy"), "--kernel", filepath.Join(dir, "kernel.npz"),
		"--k", "5", "--polish", "some", "--out", out)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "want final, none or all")
}

// TestLearnMemoryBudget: as ndpp-bench learn, ndpp-beam learn refuses a
// learner whose memory estimate exceeds the budget of --max-memory (else
// NDPP_MAX_MEMORY): the d-sized state before the data is read, the items'
// once the vocabulary is built.
func TestLearnMemoryBudget(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m.npz")
	data := filepath.Join("..", "..", "..", "testdata", "1_100_100_100_apparel_regs.csv")
	stderr, code := ndppBeam(t, "learn", "--data", data, "--d", "100000", "--steps", "1", "--out", out, "--max-memory", "1K")
	require.Equal(t, 1, code, stderr)
	require.Regexp(t, `^ndpp-beam learn: learning with d = 100000 needs about [0-9.]+ TiB of memory, more than the limit of 1 KiB \(from --max-memory\)\n$`, stderr)

	stderr, code = ndppBeam(t, "learn", "--data", data, "--d", "3", "--steps", "1", "--out", out, "--max-memory", "20K", "--quiet")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "learning 100 items with d = 3 needs about 30.3 KiB of memory, more than the limit of 20 KiB (from --max-memory)")
	require.NoFileExists(t, out)

	t.Setenv("NDPP_MAX_MEMORY", "1K")
	stderr, code = ndppBeam(t, "learn", "--data", data, "--d", "3", "--steps", "1", "--out", out)
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "(from NDPP_MAX_MEMORY)")
	stderr, code = ndppBeam(t, "learn", "--data", data, "--d", "3", "--steps", "1", "--out", out, "--max-memory", "lots")
	require.NotEqual(t, 0, code, stderr)
	require.Contains(t, stderr, "--max-memory: bad size")
}

// ndppBeamOut runs ndpp-beam as ndppBeam does and also returns its
// standard output.
func ndppBeamOut(t *testing.T, args ...string) (stdout, stderr string, code int) {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "NDPP_BEAM_MAIN=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return out.String(), errb.String(), code
}

// TestOutputPolicy: an output that is an input (a file the input glob
// matches, or a link to one) is refused before any work and left as it
// was; "-" is refused where a flag cannot stream; learn --out - and map
// --out - write standard output; a symbolic link given as --out keeps
// being a link and its target gets the model; a FIFO is written through.
func TestOutputPolicy(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("..", "..", "..", "testdata", "1_100_100_100_apparel_regs.csv")
	lines := strings.SplitAfter(string(readFile(t, src)), "\n")
	train := []string{filepath.Join(dir, "train-1.txt"), filepath.Join(dir, "train-2.txt")}
	require.NoError(t, os.WriteFile(train[0], []byte(strings.Join(lines[:400], "")), 0o644))
	require.NoError(t, os.WriteFile(train[1], []byte(strings.Join(lines[400:800], "")), 0o644))
	itemsFile := filepath.Join(dir, "items.npy")
	require.NoError(t, os.WriteFile(itemsFile, []byte("\x93NUMPY not really"), 0o644))
	link := filepath.Join(dir, "link.txt")
	require.NoError(t, os.Symlink("train-2.txt", link))
	glob := filepath.Join(dir, "train-*.txt")
	before := map[string][]byte{}
	for _, p := range append(train, itemsFile) {
		before[p] = readFile(t, p)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"learn", "--data", glob, "--steps", "1", "--out", train[0]}, "is " + train[0] + ", an input file of --data"},
		{[]string{"learn", "--data", glob, "--steps", "1", "--out", link}, "an input file of --data"},
		{[]string{"map", "--items", itemsFile, "--kernel", "nowhere.npz", "--k", "3", "--out", itemsFile}, "input file of --items"},
		{[]string{"learn", "--data", "-", "--steps", "1", "--out", "m.npz"}, "--data cannot be standard input (-)"},
		{[]string{"learn", "--data", glob, "--steps", "1", "--out", "m.npz", "--work-dir", "-"}, "--work-dir cannot be standard input or output (-)"},
		{[]string{"score", "--model", "-", "--input", glob, "--output", "x"}, "--model cannot be standard input (-)"},
		{[]string{"score", "--model", "m.npz", "--input", "-", "--output", "x"}, "--input cannot be standard input (-)"},
		{[]string{"score", "--model", "m.npz", "--input", glob, "--output", "-"}, "--output cannot be standard output (-): the output is one file per shard"},
		{[]string{"map", "--items", "-", "--kernel", "k.npz", "--k", "3", "--out", "x"}, "--items cannot be standard input (-)"},
		{[]string{"map", "--items", itemsFile, "--kernel", "-", "--k", "3", "--out", "x"}, "--kernel cannot be standard input (-)"},
		{[]string{"map", "--items", itemsFile, "--kernel", "k.npz", "--k", "3", "--out", "-", "--runner=flink"}, "--out cannot be standard output (-): with --runner=flink a worker writes the result"},
	} {
		stderr, code := ndppBeam(t, c.args...)
		require.Equal(t, 2, code, "%v: %s", c.args, stderr)
		require.Contains(t, stderr, c.want, "%v", c.args)
		for p, b := range before {
			require.Equal(t, b, readFile(t, p), "%s changed", p)
		}
	}
	// score: a shard's output file that an input glob matches.
	shard := filepath.Join(dir, "train-x-00000-of-00001")
	require.NoError(t, os.WriteFile(shard, []byte("1 2\n"), 0o644))
	stderr, code := ndppBeam(t, "score", "--model", "m.npz", "--input", filepath.Join(dir, "train-*"), "--output", filepath.Join(dir, "train-x"))
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "--output "+shard+" is "+shard+", an input file of --input")
	require.Equal(t, "1 2\n", string(readFile(t, shard)))
	require.NoError(t, os.Remove(shard))

	// learn --out through a symbolic link, and to standard output.
	require.NoError(t, os.Mkdir(filepath.Join(dir, "models"), 0o755))
	realModel := filepath.Join(dir, "models", "real.npz")
	require.NoError(t, os.WriteFile(realModel, []byte("old"), 0o600))
	current := filepath.Join(dir, "current.npz")
	require.NoError(t, os.Symlink("models/real.npz", current))
	learnArgs := []string{"learn", "--data", glob, "--d", "2", "--steps", "1", "--quiet"}
	stderr, code = ndppBeam(t, append(learnArgs, "--out", current)...)
	require.Equal(t, 0, code, stderr)
	target, err := os.Readlink(current)
	require.NoError(t, err, "the link was replaced")
	require.Equal(t, "models/real.npz", target)
	m, err := npz.Load(realModel)
	require.NoError(t, err)
	require.Equal(t, 2, m.D())
	st, err := os.Stat(realModel)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	out, stderr, code := ndppBeamOut(t, append(learnArgs, "--out", "-")...)
	require.Equal(t, 0, code, stderr)
	fromStdout, err := npz.Read(strings.NewReader(out), int64(len(out)))
	require.NoError(t, err)
	require.Equal(t, m.N(), fromStdout.N())
	_, err = os.Lstat("-")
	require.True(t, os.IsNotExist(err), "a file named - was made")
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}
