package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/eval"
	"github.com/ndpp-go/ndpp/internal/cmdenv"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
	"github.com/ndpp-go/ndpp/ndpp/npz"
	"github.com/ndpp-go/ndpp/serve"
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
		require.Equal(t, 1, strings.Count(errs, "junk.txt"), "the file named once: %s", errs)
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

// hugeModel writes the small test model with every vector scaled by scale.
func hugeModel(t *testing.T, scale float64) string {
	t.Helper()
	m, err := npz.Load(smallModel)
	require.NoError(t, err)
	v, b, _, c := m.Rows()
	sv := make([]float64, len(v))
	sb := make([]float64, len(b))
	for i := range v {
		sv[i] = v[i] * scale
		sb[i] = b[i] * scale
	}
	if m.Shared() {
		sb = nil
	}
	big, err := ndpp.NewFromRows(m.N(), m.D(), sv, sb, c, ndpp.WithDiag(m.Diag()))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "huge.npz")
	require.NoError(t, npz.Save(path, big))
	return path
}

// TestModelsThatOverflowAreRefused: a model with finite but huge entries
// (×1e200) is refused with an overflow error by every command that loads
// a model, instead of NaN scores, empty JSON lines or an empty solution.
func TestModelsThatOverflowAreRefused(t *testing.T) {
	path := hugeModel(t, 1e200)
	test := filepath.Join(t.TempDir(), "b.txt")
	require.NoError(t, os.WriteFile(test, []byte("1 2\n3 4\n2 5 6\n"), 0o644))
	for _, args := range [][]string{
		{"serve", "--model", path},
		{"score", "--model", path, "--input", test},
		{"score", "--model", path, "--input", test, "--json"},
		{"score", "--model", path, "--input", test, "--recommend", "3"},
		{"eval", "--model", path, "--test", test},
		{"infer", "--model", path, "--k", "3"},
		{"sample", "--model", path, "--count", "2"},
	} {
		code, stdout, errs := runCmd(t, "", args...)
		require.Equal(t, 1, code, "%v: %s", args, stdout)
		require.Contains(t, errs, "overflow", "%v", args)
		require.Empty(t, stdout, "%v", args)
	}
	_, err := serve.New(context.Background(), serve.File(path, npz.LoadOptions{}), serve.DefaultOptions())
	require.ErrorIs(t, err, ndpp.ErrOverflow)
	// A large but harmless scale is accepted.
	code, _, errs := runCmd(t, "", "score", "--model", hugeModel(t, 1e10), "--input", test)
	require.Equal(t, 0, code, errs)
}

// TestLearnDivergedTrainingSavesNoModel: a learning rate or an initial
// scale far too large is an error (exit 1) that keeps the earlier --out
// file, not a garbage model saved with exit 0; --val 0 prints no NaN.
func TestLearnDivergedTrainingSavesNoModel(t *testing.T) {
	data := smallApparel(t, 600)
	out := filepath.Join(t.TempDir(), "keep.npz")
	keep := sentinel(t, out)
	for _, bad := range [][]string{
		{"--mode", "offline", "--diag=false", "--init-scale", "1e10"},
		{"--mode", "online", "--diag=false", "--init-scale", "1e10"},
		{"--mode", "offline", "--diag=false", "--lr", "1e6"},
		{"--mode", "online", "--lr", "1e6"},
		{"--mode", "offline", "--init-scale", "1e200", "--diag=false"},
	} {
		args := append([]string{"learn", "--data", data, "--d", "4", "--epochs", "2", "--val", "50", "--test", "100", "--quiet", "--out", out}, bad...)
		code, stdout, errs := runCmd(t, "", args...)
		require.Equal(t, 1, code, "%v: %s", bad, stdout)
		require.Regexp(t, "diverged|non-finite", errs, "%v", bad)
		requireUnchanged(t, out, keep)
	}
	for _, mode := range []string{"offline", "online"} {
		code, stdout, errs := runCmd(t, "", "learn", "--data", data, "--mode", mode, "--d", "4", "--epochs", "2", "--val", "0", "--test", "100", "--quiet")
		require.Equal(t, 0, code, errs)
		require.NotContains(t, stdout, "NaN")
		require.Contains(t, stdout, "none (--val 0)")
	}
}

// TestHugeSizesAreRefusedBeforeAllocating: sizes whose memory exceeds the
// budget are refused with a one-line error (exit 1, the runtime-error
// code) naming the need and the budget, not a Go out-of-memory crash; the
// budget comes from --max-memory or NDPP_MAX_MEMORY.
func TestHugeSizesAreRefusedBeforeAllocating(t *testing.T) {
	data := smallApparel(t, 300)
	for _, args := range [][]string{
		{"infer", "--synthetic", "--n", "10000000000", "--k", "5"},
		{"infer", "--synthetic", "--d", "100000", "--k", "5"},
		{"learn", "--data", data, "--d", "100000"},
		{"learn", "--data", data, "--mode", "online", "--d", "100000"},
		{"learn", "--data", data, "--d", "5000", "--max-memory", "4G"},
		{"eval", "--model", smallModel, "--test", data, "--max-memory", "1K"},
		{"score", "--model", smallModel, "--input", data, "--max-memory", "1K"},
		{"infer", "--model", smallModel, "--k", "3", "--max-memory", "1K"},
		{"sample", "--model", smallModel, "--max-memory", "1K"},
		{"serve", "--model", smallModel, "--max-memory", "1K"},
	} {
		code, _, errs := runCmd(t, "", args...)
		require.Equal(t, 1, code, "%v: %s", args, errs)
		require.Contains(t, errs, "of memory, more than the limit of", "%v", args)
		require.Equal(t, 1, strings.Count(strings.TrimSpace(errs), "\n")+1, "%v: %s", args, errs)
	}
	// The model reader's refusal names the command's budget.
	code, _, errs := runCmd(t, "", "score", "--model", smallModel, "--input", data, "--max-memory", "1K")
	require.Equal(t, 1, code, errs)
	require.Equal(t, "ndpp-bench score: npz: "+smallModel+": array V: decoding the model's arrays (up to V) needs about 7.5 KiB of memory, more than the limit of 1 KiB (from --max-memory)\n", errs)
	code, _, errs = runCmd(t, "", "infer", "--synthetic", "--n", "10000000000", "--k", "5")
	require.Equal(t, 1, code, errs)
	require.Regexp(t, `^ndpp-bench infer: a synthetic model of n = 10000000000 items and d = \d+ needs about [0-9.]+ [TP]iB of memory, more than the limit of [0-9.]+ [KMGT]iB \(3/4 of the [^;]*; NDPP_MAX_MEMORY or ndpp-bench --max-memory raises it\)\n$`, errs)
	t.Setenv(cmdenv.MemoryVar, "1K")
	code, _, errs = runCmd(t, "", "sample", "--model", smallModel)
	require.Equal(t, 1, code, errs)
	require.Contains(t, errs, "more than the limit of 1 KiB (from "+cmdenv.MemoryVar+")")
	code, _, errs = runCmd(t, "", "learn", "--data", data, "--d", "3")
	require.Equal(t, 1, code, errs)
	require.Contains(t, errs, "from "+cmdenv.MemoryVar)
	// --max-memory raises the budget above the environment's.
	code, _, errs = runCmd(t, "", "learn", "--data", data, "--d", "3", "--epochs", "1", "--val", "20", "--test", "20", "--quiet", "--max-memory", "1G")
	require.Equal(t, 0, code, errs)
	code, _, errs = runCmd(t, "", "learn", "--data", data, "--max-memory", "lots")
	require.Equal(t, 2, code, errs)
}

// TestEvalReadsTokensThroughTheModelsVocabulary is the apparel case: a
// model learned on the apparel registries (1-based ids) and evaluated on a
// subset of the file scores the baskets its vocabulary names. Reading the
// tokens as 0-based rows (what a model without ids or vocabulary implies)
// scores other baskets and ranks held-out baskets barely above chance.
func TestEvalReadsTokensThroughTheModelsVocabulary(t *testing.T) {
	all := mustRead(t, filepath.Join("..", "..", "testdata", "1_100_100_100_apparel_regs.csv"))
	lines := strings.SplitAfter(string(all), "\n")
	dir := t.TempDir()
	train, subset := filepath.Join(dir, "train.txt"), filepath.Join(dir, "subset.txt")
	require.NoError(t, os.WriteFile(train, []byte(strings.Join(lines[:4000], "")), 0o644))
	// The subset leaves out baskets with item 100, which has no row when
	// tokens are read as 0-based rows of a 100-item model.
	var sub []string
	for _, l := range lines[4000:6000] {
		if !slices.Contains(strings.Fields(l), "100") {
			sub = append(sub, l)
		}
	}
	require.NoError(t, os.WriteFile(subset, []byte(strings.Join(sub, "")), 0o644))
	model := filepath.Join(dir, "m.npz")
	code, _, errs := runCmd(t, "", "learn", "--data", train, "--mode", "online", "--d", "10", "--val", "100", "--test", "300", "--quiet", "--out", model)
	require.Equal(t, 0, code, errs)
	m, err := npz.Load(model)
	require.NoError(t, err)
	require.NotNil(t, m.IDs(), "learn saves the item ids it trained on")

	code, stdout, errs := runCmd(t, "", "eval", "--model", model, "--test", subset, "--json", "--quiet")
	require.Equal(t, 0, code, errs)
	var got metricsJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))

	voc := m.TokenVocab()
	right, err := baskets.ReadFile(subset, baskets.LineOptions{Vocab: voc})
	require.NoError(t, err)
	want, err := eval.Evaluate(context.Background(), m, right, eval.Options{Seed: 1, Key: eval.Keys(voc)})
	require.NoError(t, err)
	require.Equal(t, want.TestLLEps, *got.TestLLEps)
	require.Equal(t, want.AUC, *got.AUC)

	wrongRows, err := baskets.ReadFile(subset, baskets.LineOptions{N: m.N()})
	require.NoError(t, err)
	wrong, err := eval.Evaluate(context.Background(), m, wrongRows, eval.Options{Seed: 1, Key: eval.Keys(voc)})
	require.NoError(t, err)
	t.Logf("tokens through the vocabulary: LL %.3f, AUC %.3f; tokens as rows: LL %.3f, AUC %.3f", want.TestLLEps, want.AUC, wrong.TestLLEps, wrong.AUC)
	require.Greater(t, want.TestLLEps, wrong.TestLLEps+1)
	require.Greater(t, want.AUC, wrong.AUC+0.1)
}
