package pipelines

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/learn"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
	"github.com/ndpp-go/ndpp/ndpp/npz"
)

func init() {
	register.Function2x0[Scored, func(string)](splitLines)
}

// splitLines emits the output lines of a scored chunk.
func splitLines(s Scored, emit func(string)) {
	for l := range strings.SplitSeq(strings.TrimSuffix(s.Text, "\n"), "\n") {
		emit(l)
	}
}

// ndppBench is the path of the ndpp-bench binary built by TestMain.
var ndppBench string

// TestMain runs the pipelines on Prism, in process, and builds ndpp-bench
// (from the parent module) for the scoring comparisons.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ndpp-beam-test-")
	if err != nil {
		panic(err)
	}
	ndppBench = filepath.Join(dir, "ndpp-bench")
	build := exec.Command("go", "build", "-o", ndppBench, "./cmd/ndpp-bench")
	build.Dir = filepath.Join("..", "..") // in the parent module, with its dependencies
	out, err := build.CombinedOutput()
	if err != nil {
		panic(fmt.Sprintf("building ndpp-bench: %v\n%s", err, out))
	}
	// The Beam SDK leaves an empty beamloopbackworker-* file in the
	// temporary directory at every loopback job: keep them in dir.
	os.Setenv("TMPDIR", dir)
	code := ptest.MainRetWithDefault(m, "prism")
	os.RemoveAll(dir)
	os.Exit(code)
}

func runner(_ context.Context, p *beam.Pipeline) error { return ptest.Run(p) }

// writeBaskets writes count random baskets of 1–maxSize distinct tokens of
// tok(i) for i < n (popular items more often) to path, with some blank
// lines and repeated tokens, and returns nothing but the file.
func writeBaskets(t *testing.T, path string, n, count, maxSize int, seed uint64, tok func(int) string) {
	rng := rand.New(rand.NewPCG(seed, 7))
	var sb strings.Builder
	for b := range count {
		if b%37 == 5 {
			sb.WriteString("\n")
		}
		k := 1 + rng.IntN(maxSize)
		for j := range k {
			if j > 0 {
				sb.WriteString(" ")
			}
			i := int(float64(n) * math.Pow(rng.Float64(), 1.7))
			sb.WriteString(tok(i))
		}
		if b%23 == 3 {
			sb.WriteString(" " + tok(0))
		}
		sb.WriteString("\n")
	}
	require.NoError(t, os.WriteFile(path, []byte(sb.String()), 0o644))
}

func strToken(i int) string { return fmt.Sprintf("sku-%03d", i) }

func sortedLines(s string) []string {
	ls := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	slices.Sort(ls)
	return ls
}

// TestScoreMatchesNdppBench: the score pipeline's output files hold the
// lines `ndpp-bench score` writes for each input file — log-likelihoods,
// recommendations, text and JSON — for models with and without a diagonal
// and a vocabulary, whatever the shards and chunks, each line naming its
// file when several files are read; each file's lines are in file and line
// order; every shard has its file, also when it holds no basket; the
// summary counts each file's baskets and each shard's lines.
func TestScoreMatchesNdppBench(t *testing.T) {
	dir := t.TempDir()
	n, d := 40, 4
	// A model over tokens (with a diagonal) and one over 0-based rows.
	base := ndpp.Random(n, d, 3, ndpp.RandomOptions{Diag: 0.4})
	toks := make([]string, n)
	for i := range toks {
		toks[i] = strToken(i)
	}
	voc, err := ndpp.NewVocab(toks)
	require.NoError(t, err)
	vm, err := learn.ParamsFromModel(base).Model(ndpp.WithVocab(voc))
	require.NoError(t, err)
	models := map[string]*ndpp.Model{"vocab-diag": vm, "rows": ndpp.Random(n, d, 4, ndpp.RandomOptions{Shared: true})}
	for name, m := range models {
		require.NoError(t, npz.Save(filepath.Join(dir, name+".npz"), m))
		tok := strToken
		if name == "rows" {
			tok = func(i int) string { return fmt.Sprint(i) }
		}
		writeBaskets(t, filepath.Join(dir, name+"-a.txt"), n, 150, 6, 1, tok)
		writeBaskets(t, filepath.Join(dir, name+"-b.txt"), n, 90, 6, 2, tok)
		writeBaskets(t, filepath.Join(dir, name+"-c.txt"), n, 5, 6, 3, tok) // a part of one block: the other shards are empty
	}
	cases := []struct {
		model         string
		shards, chunk int
		recommend     int
		json          bool
		files         string
		fileColumn    bool
	}{
		{model: "vocab-diag", shards: 1, chunk: 0, files: "a"},
		{model: "vocab-diag", shards: 3, chunk: 7, files: "ab"},
		{model: "vocab-diag", shards: 2, chunk: 5, recommend: 4, files: "a"},
		{model: "vocab-diag", shards: 2, chunk: 9, recommend: 3, json: true, files: "ab"},
		{model: "vocab-diag", shards: 4, chunk: 30, files: "abc"},
		{model: "vocab-diag", shards: 4, chunk: 2, json: true, files: "c"},
		{model: "vocab-diag", shards: 5, chunk: 2, files: "c", fileColumn: true},
		{model: "rows", shards: 4, chunk: 6, json: true, files: "a"},
		{model: "rows", shards: 3, chunk: 8, recommend: 5, files: "ab"},
		{model: "rows", shards: 4, chunk: 40, recommend: 2, json: true, files: "ac"},
	}
	for ci, c := range cases {
		t.Run(fmt.Sprintf("%s/shards=%d/recommend=%d/json=%v/files=%s", c.model, c.shards, c.recommend, c.json, c.files), func(t *testing.T) {
			model := filepath.Join(dir, c.model+".npz")
			named := len(c.files) > 1 || c.fileColumn
			// ndpp-bench score on each file, the file named as the
			// pipeline names it.
			var want []string
			perFile := map[string]int{}
			for _, f := range c.files {
				path := filepath.Join(dir, c.model+"-"+string(f)+".txt")
				args := []string{"score", "--model", model, "--input", path, "--quiet", "--threads", "2"}
				if c.recommend > 0 {
					args = append(args, "--recommend", fmt.Sprint(c.recommend))
				}
				if c.json {
					args = append(args, "--json")
				}
				out, err := exec.Command(ndppBench, args...).Output()
				require.NoError(t, err)
				lines := sortedLines(string(out))
				perFile[path] = len(lines)
				for _, l := range lines {
					switch {
					case !named:
					case c.json:
						q, err := json.Marshal(path)
						require.NoError(t, err)
						l = `{"file":` + string(q) + "," + l[1:]
					default:
						l = path + "\t" + l
					}
					want = append(want, l)
				}
			}
			slices.Sort(want)
			glob := filepath.Join(dir, c.model+"-["+c.files+"].txt")
			if len(c.files) == 1 {
				glob = filepath.Join(dir, c.model+"-"+c.files+".txt")
			}
			prefix := filepath.Join(dir, fmt.Sprintf("out%d", ci))
			summary := filepath.Join(dir, fmt.Sprintf("summary%d.json", ci))
			p, s := beam.NewPipelineWithRoot()
			scored, err := Score(context.Background(), s, ScoreOptions{Model: model, Input: glob, Output: prefix,
				Recommend: c.recommend, JSON: c.json, Shards: c.shards, ChunkSize: c.chunk, FileColumn: c.fileColumn, Summary: summary})
			require.NoError(t, err)
			wantAny := make([]any, len(want))
			for i, l := range want {
				wantAny[i] = l
			}
			passert.Equals(s, beam.ParDo(s, splitLines, scored), wantAny...)
			require.NoError(t, ptest.Run(p))

			outs, err := filepath.Glob(prefix + "-*")
			require.NoError(t, err)
			require.Len(t, outs, c.shards, "every shard has its file")
			sum, err := ReadScoreSummary(context.Background(), summary)
			require.NoError(t, err)
			require.True(t, sum.Complete)
			require.Len(t, sum.Files, len(c.files))
			for _, fc := range sum.Files {
				require.Equal(t, perFile[fc.File], fc.Baskets, fc.File)
			}
			require.Equal(t, len(want), sum.Baskets)
			require.Equal(t, len(want), sum.Lines)
			require.Len(t, sum.Shards, c.shards)
			var got []string
			empty := 0
			for i, o := range outs {
				require.Equal(t, ShardName(prefix, i, c.shards), o)
				data, err := os.ReadFile(o)
				require.NoError(t, err)
				require.Equal(t, ShardCount{File: o, Lines: bytes.Count(data, []byte{'\n'})}, sum.Shards[i])
				if len(data) == 0 {
					empty++
					continue
				}
				lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
				if !named && !c.json {
					// One input file: a shard's lines are in line order.
					var nums []int
					for _, l := range lines {
						var k int
						_, err := fmt.Sscanf(l, "%d", &k)
						require.NoError(t, err)
						nums = append(nums, k)
					}
					require.True(t, slices.IsSorted(nums), "%s not in line order", o)
				}
				got = append(got, lines...)
			}
			if c.files == "c" {
				require.Positive(t, empty, "a shard without baskets")
			}
			slices.Sort(got)
			require.Equal(t, want, got)
		})
	}
}

// TestScoreFailsOnUnknownToken: a token outside the model's vocabulary
// fails the pipeline with the core reader's message.
func TestScoreFailsOnUnknownToken(t *testing.T) {
	dir := t.TempDir()
	m := ndpp.Random(5, 2, 1, ndpp.RandomOptions{})
	voc, err := ndpp.NewVocab([]string{"a", "b", "c", "d", "e"})
	require.NoError(t, err)
	vm, err := learn.ParamsFromModel(m).Model(ndpp.WithVocab(voc))
	require.NoError(t, err)
	require.NoError(t, npz.Save(filepath.Join(dir, "m.npz"), vm))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "in.txt"), []byte("a b\nc zz\n"), 0o644))
	p, s := beam.NewPipelineWithRoot()
	_, err = Score(context.Background(), s, ScoreOptions{Model: filepath.Join(dir, "m.npz"), Input: filepath.Join(dir, "in.txt"), Output: filepath.Join(dir, "out")})
	require.NoError(t, err)
	err = ptest.Run(p)
	require.Error(t, err)
	require.Contains(t, err.Error(), `bad item token "zz"`)
}

// TestReaderPartsPartitionTheFile: the read tasks of a file's parts give
// every basket of the file once, at its line, in both formats, also with
// lines longer than the readers' buffers.
func TestReaderPartsPartitionTheFile(t *testing.T) {
	dir := t.TempDir()
	lines := filepath.Join(dir, "b.txt")
	writeBaskets(t, lines, 30, 200, 5, 9, strToken)
	// Lines longer than the readers' buffers (64 KiB) between short ones.
	long := filepath.Join(dir, "long.txt")
	var sb strings.Builder
	for l := range 40 {
		k := 2
		if l%5 == 1 {
			k = 15000
		}
		for j := range k {
			fmt.Fprintf(&sb, "t%d-%d ", l%7, j)
		}
		sb.WriteString("\n")
	}
	require.NoError(t, os.WriteFile(long, []byte(sb.String()), 0o644))
	csvPath := filepath.Join("..", "..", "testdata", "transactions.csv")
	for _, c := range []struct {
		path   string
		format BasketFormat
	}{
		{lines, BasketFormat{}},
		{lines, BasketFormat{MaxSize: 3}},
		{long, BasketFormat{}},
		{csvPath, BasketFormat{Format: "csv", BasketCol: "InvoiceNo", ItemCol: "StockCode"}},
	} {
		type basket struct {
			line int
			toks string
		}
		read := func(parts, chunk int) []basket {
			r := reader{Files: []string{c.path}, Format: c.format, Parts: parts, ChunkSize: chunk}
			var out []basket
			for p := range parts {
				voc, err := ndpp.NewVocab(nil)
				require.NoError(t, err)
				require.NoError(t, r.each(context.Background(), task{File: 0, Part: p}, voc, true, 0, func(line int, b []int) error {
					var ts []string
					for _, i := range b {
						ts = append(ts, voc.Token(i))
					}
					out = append(out, basket{line, strings.Join(ts, " ")})
					return nil
				}))
			}
			slices.SortFunc(out, func(a, b basket) int { return a.line - b.line })
			return out
		}
		whole := read(1, 0)
		require.NotEmpty(t, whole)
		for _, parts := range []int{2, 3, 7} {
			for _, chunk := range []int{1, 4, 50} {
				require.Equal(t, whole, read(parts, chunk), "%s parts %d chunk %d", c.path, parts, chunk)
			}
		}
	}
}

// coreBaskets reads files one after the other with one growing
// vocabulary, as the core's learner would read their concatenation.
func coreBaskets(t *testing.T, files []string, format BasketFormat) ([][]int, *ndpp.Vocab) {
	voc, err := ndpp.NewVocab(nil)
	require.NoError(t, err)
	var all [][]int
	for _, f := range files {
		var br *baskets.Reader
		if format.csv() {
			br, err = baskets.OpenCSV(f, baskets.CSVOptions{BasketColumn: format.BasketCol, ItemColumn: format.ItemCol, Vocab: voc, Grow: true, MaxSize: format.MaxSize, Comma: ','})
			require.NoError(t, err)
		} else {
			br, err = baskets.Open(f, baskets.LineOptions{Vocab: voc, Grow: true, MaxSize: format.MaxSize})
			require.NoError(t, err)
		}
		for {
			b, err := br.Next()
			if err != nil {
				require.ErrorIs(t, err, io.EOF)
				break
			}
			all = append(all, b)
		}
		require.NoError(t, br.Close())
	}
	return all, voc
}

// relDiff is max |a − b| over max |a|.
func relDiff(a, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	diff, scale := 0.0, 0.0
	for i := range a {
		if math.IsInf(a[i], 0) || math.IsInf(b[i], 0) {
			if a[i] != b[i] {
				return math.Inf(1)
			}
			continue
		}
		diff = math.Max(diff, math.Abs(a[i]-b[i]))
		scale = math.Max(scale, math.Abs(a[i]))
	}
	return diff / math.Max(scale, 1e-300)
}

// TestLearnEqualsTrainOffline: the learn pipeline's parameters after T
// steps are those of learn.TrainOffline's full-batch mode with the same
// options on the same baskets (MaxEpochs = T, no validation) to 1e-6
// relative, its vocabulary the core reader's, for kernels with and
// without a diagonal, B = V, several files, shards and chunk sizes, the
// CSV format and MaxSize.
func TestLearnEqualsTrainOffline(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "part-a.txt"), filepath.Join(dir, "part-b.txt")
	writeBaskets(t, a, 45, 400, 7, 11, strToken)
	writeBaskets(t, b, 60, 250, 7, 12, strToken) // items 45–59 first appear here
	csvPath, err := filepath.Abs(filepath.Join("..", "..", "testdata", "transactions.csv"))
	require.NoError(t, err)
	cases := []struct {
		name          string
		glob          string
		files         []string
		format        BasketFormat
		opt           learn.OfflineOptions
		shards, chunk int
		steps         int
	}{
		{"diag", filepath.Join(dir, "part-*.txt"), []string{a, b}, BasketFormat{}, learn.OfflineOptions{D: 4, Seed: 3}, 3, 16, 5},
		{"lowrank-shared", filepath.Join(dir, "part-*.txt"), []string{a, b}, BasketFormat{MaxSize: 5},
			learn.OfflineOptions{D: 3, Seed: 5, LowRank: true, Shared: true, Alpha: 0.1, LR: 0.02}, 2, 50, 4},
		{"diag-regularised", a, []string{a}, BasketFormat{}, learn.OfflineOptions{D: 5, Seed: 7, Alpha: 0.2, Beta: 0.1, DiagLR: 0.03}, 1, 0, 3},
		{"csv", csvPath, []string{csvPath}, BasketFormat{Format: "csv", BasketCol: "InvoiceNo", ItemCol: "StockCode"}, learn.OfflineOptions{D: 3, Seed: 1}, 2, 3, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			train, voc := coreBaskets(t, c.files, c.format)
			opt := c.opt
			opt.FullBatch, opt.MaxEpochs, opt.Workers = true, c.steps, 1
			want, err := learn.TrainOffline(context.Background(), train, nil, voc.Len(), opt)
			require.NoError(t, err)
			require.Equal(t, c.steps, want.Iterations)

			steps := 0
			got, err := Learn(context.Background(), runner, LearnOptions{Data: c.glob, Format: c.format, Learner: c.opt, Steps: c.steps,
				Shards: c.shards, ChunkSize: c.chunk, WorkDir: t.TempDir(),
				Progress: func(step int, sum *learn.GradSum) { steps++; require.Equal(t, len(train), sum.Baskets) }})
			require.NoError(t, err)
			require.Equal(t, c.steps, steps)
			require.Equal(t, voc.Tokens(), got.Vocab.Tokens())
			require.Equal(t, len(train), got.Baskets)
			w, g := want.Params, got.Params
			require.Equal(t, w.N, g.N)
			require.Equal(t, w.B == nil, g.B == nil)
			require.Equal(t, w.Theta == nil, g.Theta == nil)
			for _, pr := range []struct {
				name string
				w, g []float64
			}{{"V", w.V, g.V}, {"B", w.B, g.B}, {"D", w.D, g.D}, {"Theta", w.Theta, g.Theta}} {
				t.Logf("%s: relative difference %.2g", pr.name, relDiff(pr.w, pr.g))
				require.LessOrEqual(t, relDiff(pr.w, pr.g), 1e-6, "%s", pr.name)
			}
			// The model is over the vocabulary.
			require.Equal(t, voc.Len(), got.Model.N())
			require.Equal(t, voc.Token(voc.Len()-1), got.Model.Token(voc.Len()-1))
			require.False(t, got.Model.IntItems(), "string tokens stay strings")
		})
	}
}

// TestLearnIntegerIDs: a model learned from baskets of integer ids records
// them as ids (ndpp.WithIDs), so that every tool names its items by the
// same integers, as ndpp-bench learn does.
func TestLearnIntegerIDs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ids.txt")
	writeBaskets(t, path, 20, 120, 5, 4, func(i int) string { return fmt.Sprint(1000 + 7*i) })
	got, err := Learn(context.Background(), runner, LearnOptions{Data: path, Learner: learn.OfflineOptions{D: 3, Seed: 1}, Steps: 1,
		Shards: 1, WorkDir: t.TempDir()})
	require.NoError(t, err)
	require.True(t, got.Model.IntItems())
	for i := range got.Model.N() {
		id, ok := got.Model.ID(i)
		require.True(t, ok)
		require.Equal(t, got.Vocab.Token(i), fmt.Sprint(id))
	}
}

// TestScoreCSVWithLearnedModel: a model learned by the pipeline from a
// transaction CSV scores the CSV (with --max-size) as `ndpp-bench score`
// does, log-likelihoods and recommendations.
func TestScoreCSVWithLearnedModel(t *testing.T) {
	dir := t.TempDir()
	csvPath, err := filepath.Abs(filepath.Join("..", "..", "testdata", "transactions.csv"))
	require.NoError(t, err)
	format := BasketFormat{Format: "csv", BasketCol: "InvoiceNo", ItemCol: "StockCode"}
	res, err := Learn(context.Background(), runner, LearnOptions{Data: csvPath, Format: format, Learner: learn.OfflineOptions{D: 3, Seed: 2},
		Steps: 2, Shards: 2, ChunkSize: 4, WorkDir: t.TempDir()})
	require.NoError(t, err)
	model := filepath.Join(dir, "m.npz")
	require.NoError(t, SaveModel(context.Background(), model, res.Model))
	format.MaxSize = 6
	for _, rec := range []int{0, 3} {
		args := []string{"score", "--model", model, "--input", csvPath, "--quiet", "--format", "csv", "--basket-col", "InvoiceNo",
			"--item-col", "StockCode", "--max-size", "6", "--recommend", fmt.Sprint(rec)}
		out, err := exec.Command(ndppBench, args...).Output()
		require.NoError(t, err)
		want := sortedLines(string(out))
		require.Greater(t, len(want), 1)
		prefix := filepath.Join(dir, fmt.Sprintf("rec%d", rec))
		p, s := beam.NewPipelineWithRoot()
		_, err = Score(context.Background(), s, ScoreOptions{Model: model, Input: csvPath, Format: format, Output: prefix, Recommend: rec, Shards: 3, ChunkSize: 2})
		require.NoError(t, err)
		require.NoError(t, ptest.Run(p))
		outs, err := filepath.Glob(prefix + "-*")
		require.NoError(t, err)
		var got []string
		for _, o := range outs {
			data, err := os.ReadFile(o)
			require.NoError(t, err)
			got = append(got, sortedLines(string(data))...)
		}
		slices.Sort(got)
		require.Equal(t, want, got, "recommend %d", rec)
	}
}
