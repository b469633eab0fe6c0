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
		{[]string{"sample"}, "--model is required"},
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
