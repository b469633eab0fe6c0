package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
	"github.com/ndpp-go/ndpp/ndpp/npz"
	"github.com/ndpp-go/ndpp/sample"
)

// TestSampleCommand: the samples are those of the library (sample i from
// the stream (seed, i)), in order whatever the number of workers, in the
// basket format that the basket reader reads back, and contain the given
// items.
func TestSampleCommand(t *testing.T) {
	m, err := npz.Load(smallModel)
	require.NoError(t, err)
	const count = 150
	var outs []string
	for _, threads := range []string{"1", "3"} {
		code, out, errs := runCmd(t, "", "sample", "--model", smallModel, "--count", "150", "--seed", "4", "--given", "3, 17", "--threads", threads, "--quiet")
		require.Zero(t, code, errs)
		require.Empty(t, errs)
		outs = append(outs, out)
	}
	require.Equal(t, outs[0], outs[1], "output depends on --threads")
	lines := strings.Split(strings.TrimSuffix(outs[0], "\n"), "\n")
	require.Len(t, lines, count)

	s, err := sample.New(context.Background(), m, sample.Options{})
	require.NoError(t, err)
	s, err = s.Given(context.Background(), []int{3, 17})
	require.NoError(t, err)
	r := baskets.NewLineReader(strings.NewReader(outs[0]), baskets.LineOptions{Vocab: m.TokenVocab(), N: m.N()})
	for i := 0; i < count; i++ {
		want, err := s.Sample(context.Background(), rand.New(rand.NewPCG(4, uint64(i))))
		require.NoError(t, err)
		got, err := r.Next()
		require.NoError(t, err, "line %d", i)
		require.ElementsMatch(t, want, got, "sample %d", i)
		require.Contains(t, got, 3)
		require.Contains(t, got, 17)
	}
}

// TestSampleCommandFileAndJSON: --out writes the file; --json writes one
// array of tokens per line; a model with ids writes ids.
func TestSampleCommandFileAndJSON(t *testing.T) {
	dir := t.TempDir()
	m := ndpp.Random(30, 3, 2, ndpp.RandomOptions{Diag: 0.5})
	ids := make([]int64, m.N())
	for i := range ids {
		ids[i] = int64(1000 + i)
	}
	v, b, _, c := m.Rows()
	mi, err := ndpp.NewFromRows(m.N(), m.D(), v, b, c, ndpp.WithIDs(ids), ndpp.WithDiag(m.Diag()))
	require.NoError(t, err)
	path := filepath.Join(dir, "m.npz")
	require.NoError(t, npz.Save(path, mi))
	out := filepath.Join(dir, "s.txt")
	code, stdout, errs := runCmd(t, "", "sample", "--model", path, "--count", "20", "--given", "1005", "--out", out)
	require.Zero(t, code, errs)
	require.Empty(t, stdout)
	require.Contains(t, errs, "20 samples")
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		require.Contains(t, strings.Fields(line), "1005")
	}
	code, stdout, errs = runCmd(t, "", "sample", "--model", path, "--count", "5", "--json", "--quiet", "--block", "1")
	require.Zero(t, code, errs)
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var toks []string
		require.NoError(t, json.Unmarshal([]byte(line), &toks), line)
		for _, tok := range toks {
			require.True(t, strings.HasPrefix(tok, "10"), "token %q is not an id", tok)
		}
	}
}

// TestSampleCommandErrors: usage errors exit 2 with one line.
func TestSampleCommandErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sample"}, "give exactly one of --model FILE and --synthetic"},
		{[]string{"sample", "--model", smallModel, "--synthetic"}, "exactly one"},
		{[]string{"sample", "--model", smallModel, "--n", "100"}, "--n and --d apply to --synthetic only"},
		{[]string{"sample", "--synthetic", "--n", "10", "--d", "6"}, "--n ≥ 2·--d"},
		{[]string{"sample", "--model", smallModel, "--method", "fast"}, "--method"},
		{[]string{"sample", "--model", smallModel, "--size", "-1"}, "--size"},
		{[]string{"sample", "--model", smallModel, "--leaf", "-1"}, "--leaf"},
		{[]string{"sample", "--model", smallModel, "--method", "tree", "--size", "3"}, "--size needs the linear sampler"},
		{[]string{"sample", "--model", smallModel, "--method", "tree", "--given", "3"}, "--given needs the linear sampler"},
		{[]string{"sample", "--model", smallModel, "--size", "9"}, "rank bound 8"},
		{[]string{"sample", "--model", smallModel, "--size", "1", "--given", "3,4"}, "below the 2 --given items"},
		{[]string{"sample", "--model", smallModel, "--count", "-1"}, "--count"},
		{[]string{"sample", "--model", smallModel, "--block", "-2"}, "--block"},
		{[]string{"sample", "--model", smallModel, "--given", "x"}, "--given"},
		{[]string{"sample", "--model", smallModel, "--given", "3,3"}, "duplicate"},
		{[]string{"sample", "--model", smallModel, "--given", "60"}, "--given"},
	} {
		code, _, errs := runCmd(t, "", c.args...)
		require.Equal(t, 2, code, "%v: %s", c.args, errs)
		require.Contains(t, errs, c.want, c.args)
		require.Equal(t, 1, strings.Count(errs, "\n"), "%v: %q", c.args, errs)
	}
}

// TestSampleCommandSize: --size k writes the library's k-NDPP samples
// (sample i from the stream (seed, i)), each of k items holding the given
// ones, and reports the scale and the expected rejections.
func TestSampleCommandSize(t *testing.T) {
	m, err := npz.Load(smallModel)
	require.NoError(t, err)
	dir := t.TempDir()
	out := filepath.Join(dir, "s.txt")
	code, stdout, errs := runCmd(t, "", "sample", "--model", smallModel, "--size", "4", "--given", "3", "--count", "40", "--seed", "2", "--threads", "2", "--out", out, "--json")
	require.Zero(t, code, errs)
	var rep map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	require.Equal(t, "linear", rep["method"])
	require.Equal(t, 4.0, rep["size"])
	require.Equal(t, 4.0, rep["mean_size"])
	require.Positive(t, rep["scale"])
	require.Contains(t, rep, "expected_rejections")
	require.Contains(t, rep, "observed_rejections")
	ks, err := sample.NewK(context.Background(), m, 4, sample.KOptions{Given: []int{3}})
	require.NoError(t, err)
	got := jsonSamples(t, m, out)
	require.Len(t, got, 40)
	for i := range got {
		want, err := ks.Sample(context.Background(), rand.New(rand.NewPCG(2, uint64(i))))
		require.NoError(t, err)
		require.ElementsMatch(t, want, got[i], "sample %d", i)
		require.Contains(t, got[i], 3)
	}
}

// jsonSamples reads the samples of a --json output file (one JSON array
// of tokens per line) as rows of m.
func jsonSamples(t *testing.T, m *ndpp.Model, path string) [][]int {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out [][]int
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var toks []string
		require.NoError(t, json.Unmarshal([]byte(line), &toks), line)
		var rows []int
		for _, tok := range toks {
			r, ok := m.Row(tok)
			require.True(t, ok, tok)
			rows = append(rows, r)
		}
		out = append(out, rows)
	}
	return out
}

// TestSampleCommandTree: --synthetic with --method tree writes the tree
// sampler's samples of the synthetic kernel and reports the expected
// rejections (Theorem 2's too, equal on this orthogonal kernel), the
// observed mean, the times and the tree's memory; auto takes the tree on a
// large synthetic kernel and the linear sampler on a model with a
// diagonal, saying why.
func TestSampleCommandTree(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "s.txt")
	code, stdout, errs := runCmd(t, "", "sample", "--synthetic", "--n", "3000", "--d", "8", "--seed", "5", "--method", "tree", "--leaf", "16", "--count", "30", "--out", out, "--json")
	require.Zero(t, code, errs)
	var rep map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	for _, k := range []string{"seconds_per_sample", "preprocess_seconds", "expected_rejections", "observed_rejections", "theorem2_rejections", "tree_bytes"} {
		require.Contains(t, rep, k)
	}
	require.Equal(t, "tree", rep["method"])
	require.Equal(t, 16.0, rep["leaf"])
	require.InDelta(t, 15, rep["expected_rejections"], 1e-6, "2^{d/2} − 1 for d = 8")
	require.InDelta(t, rep["expected_rejections"], rep["theorem2_rejections"], 1e-6)
	m, err := sample.Synthetic(context.Background(), 3000, 8, 5, sample.SyntheticOptions{})
	require.NoError(t, err)
	p, err := sample.NewProposal(context.Background(), m)
	require.NoError(t, err)
	ts, err := sample.NewTree(context.Background(), p, sample.TreeOptions{Leaf: 16})
	require.NoError(t, err)
	got := jsonSamples(t, m, out)
	require.Len(t, got, 30)
	for i := range got {
		want, err := ts.Sample(context.Background(), rand.New(rand.NewPCG(5, uint64(i))))
		require.NoError(t, err)
		require.ElementsMatch(t, want, got[i], "sample %d", i)
	}

	code, stdout, errs = runCmd(t, "", "sample", "--synthetic", "--n", "50000", "--d", "10", "--count", "20", "--out", out, "--json")
	require.Zero(t, code, errs)
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	require.Equal(t, "tree", rep["method"], rep["method_reason"])
	require.Contains(t, rep["method_reason"], "estimated work")

	md := ndpp.Random(50, 3, 2, ndpp.RandomOptions{Diag: 0.5})
	path := filepath.Join(dir, "m.npz")
	require.NoError(t, npz.Save(path, md))
	code, _, errs = runCmd(t, "", "sample", "--model", path, "--count", "5", "--out", out)
	require.Zero(t, code, errs)
	require.Contains(t, errs, "method linear")
	code, _, errs = runCmd(t, "", "sample", "--model", path, "--method", "tree")
	require.Equal(t, 2, code, errs)
	require.Contains(t, errs, "has a diagonal")
	code, _, errs = runCmd(t, "", "sample", "--synthetic", "--n", "3000", "--d", "8", "--method", "tree", "--max-memory", "100K", "--out", out)
	require.Equal(t, 1, code, errs)
	require.Contains(t, errs, "of memory, more than the limit of 100 KiB (from --max-memory)")
}
