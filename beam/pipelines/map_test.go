package pipelines

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/items"
	"github.com/ndpp-go/ndpp/ndpp/npz"
	"github.com/ndpp-go/ndpp/stream"
)

// writeKernel writes m as a model file (the kernel's source) and returns
// its path.
func writeKernel(t *testing.T, dir string, m *ndpp.Model) string {
	t.Helper()
	path := filepath.Join(dir, "kernel.npz")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, npz.Write(f, m))
	require.NoError(t, f.Close())
	return path
}

// writeNPYParts writes m's items as NPY files of the given sizes, in
// order, named so that they sort in that order.
func writeNPYParts(t *testing.T, dir string, m *ndpp.Model, sizes ...int) string {
	t.Helper()
	kern := ndpp.KernelOf(m)
	next := 0
	for p, n := range sizes {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("items-%02d.npy", p)))
		require.NoError(t, err)
		w, err := items.NewNPYWriter(f, kern, n, false)
		require.NoError(t, err)
		for range n {
			require.NoError(t, w.Write([]ndpp.Item{ndpp.ModelItem(m, next)}))
			next++
		}
		require.NoError(t, w.Close())
		require.NoError(t, f.Close())
	}
	require.Equal(t, m.N(), next)
	return filepath.Join(dir, "items-*.npy")
}

// writeTextParts writes m's items (ids = rows) as text files: the items
// in a random order of seed, dealt over files files.
func writeTextParts(t *testing.T, dir string, m *ndpp.Model, files int, seed uint64) string {
	t.Helper()
	kern := ndpp.KernelOf(m)
	order := rand.New(rand.NewPCG(seed, 3)).Perm(m.N())
	ws := make([]*items.Writer, files)
	fs := make([]*os.File, files)
	for p := range files {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("items-%02d.txt", p)))
		require.NoError(t, err)
		fs[p], ws[p] = f, items.NewTextWriter(f, kern)
	}
	for j, i := range order {
		require.NoError(t, ws[j%files].Write([]ndpp.Item{ndpp.ModelItem(m, i)}))
	}
	for p := range files {
		require.NoError(t, ws[p].Close())
		require.NoError(t, fs[p].Close())
	}
	return filepath.Join(dir, "items-*.txt")
}

// runMap runs the map pipeline on Prism and returns its result.
func runMap(t *testing.T, opt MapOptions) *MapResult {
	t.Helper()
	opt.Out = filepath.Join(t.TempDir(), "map.json")
	p, s := beam.NewPipelineWithRoot()
	out, err := Map(context.Background(), s, opt)
	require.NoError(t, err)
	passert.Count(s, out, "results", 1)
	require.NoError(t, ptest.Run(p))
	res, err := ReadMapResult(opt.Out)
	require.NoError(t, err)
	return res
}

// singleMachine is the core's offline greedy on all of m's items, then
// local search from its solution with polish.
func singleMachine(t *testing.T, m *ndpp.Model, k int, polish bool) stream.Result {
	t.Helper()
	g, err := stream.OfflineGreedy(context.Background(), m, k, stream.GreedyOptions{})
	require.NoError(t, err)
	if !polish {
		return g
	}
	o, err := detcache.NewFast(m, k)
	require.NoError(t, err)
	ls, err := stream.LocalSearch(context.Background(), o, k, g.Solution, stream.LocalSearchOptions{})
	require.NoError(t, err)
	return ls.Result
}

// singleMachineCandidates is the core's answer on one machine from the
// candidates of all of m's items: stream.Coreset (default k′), then the
// offline greedy and local search among the candidates.
func singleMachineCandidates(t *testing.T, m *ndpp.Model, k int) stream.Result {
	t.Helper()
	kern := ndpp.KernelOf(m)
	all := make([]ndpp.Item, m.N())
	for i := range all {
		all[i], _ = ndpp.ModelItem(m, i).CopyTo(nil)
	}
	c, err := stream.Coreset(context.Background(), kern, all, k, stream.CoresetOptions{})
	require.NoError(t, err)
	res, err := stream.SolveCandidates(context.Background(), kern, c, k, stream.CoresetOptions{Polish: true})
	require.NoError(t, err)
	return res
}

// requireSameSolution checks that the pipeline found the single-machine
// solution: the same ids, and the log det of that set as the model
// computes it (m.LogDet over the ids in order, which is how the pipeline
// computes it; the greedy's own value is its running sum of gains, equal
// to rounding).
func requireSameSolution(t *testing.T, m *ndpp.Model, want stream.Result, got *MapResult) {
	t.Helper()
	w := slices.Sorted(slices.Values(want.Solution))
	require.Equal(t, w, got.IDs, "ids")
	ld, sign, err := m.LogDet(w)
	require.NoError(t, err)
	require.Positive(t, sign)
	require.Equal(t, ld, got.LogDet, "log det")
	require.InEpsilon(t, want.Value.Log, got.LogDet, 1e-12, "log det against the solver's value")
}

// With one shard (and a buffer that holds it), the pipeline is the core's
// offline greedy on all items, exactly: the shard's k′ candidates hold
// greedy's first k picks, and greedy on them picks them again.
func TestMapOneShardEqualsOfflineGreedy(t *testing.T) {
	for _, diag := range []float64{0, 0.3} {
		for _, format := range []string{"npy", "text"} {
			t.Run(fmt.Sprintf("diag=%v/%s", diag, format), func(t *testing.T) {
				m := ndpp.Random(700, 6, 11, ndpp.RandomOptions{Diag: diag})
				dir := t.TempDir()
				kernel := writeKernel(t, dir, m)
				glob := writeNPYParts(t, dir, m, 300, 1, 399)
				if format == "text" {
					glob = writeTextParts(t, dir, m, 3, 5)
				}
				res := runMap(t, MapOptions{Items: glob, Kernel: kernel, K: 7, Shards: 1, Polish: PolishNone, ChunkSize: 64})
				requireSameSolution(t, m, singleMachine(t, m, 7, false), res)
				require.Equal(t, int64(700), res.Items)
				require.Len(t, res.PerShard, 1)
				require.Equal(t, 0, res.PerShard[0].Reductions)
				require.Equal(t, 0, res.Buffer, "the shard held whole by default")
				// By default the final solution is polished: greedy and then
				// local search among greedy's k′ candidates, as the core
				// computes them on one machine.
				res = runMap(t, MapOptions{Items: glob, Kernel: kernel, K: 7, Shards: 1, ChunkSize: 64})
				requireSameSolution(t, m, singleMachineCandidates(t, m, 7), res)
				require.Equal(t, "final", res.Polish)
			})
		}
	}
}

// When the core-sets keep every item (k′ ≥ n), the result is the
// single-machine one — greedy and greedy with local search — whatever the
// number of shards.
func TestMapWholeShardsEqualSingleMachine(t *testing.T) {
	m := ndpp.Random(90, 4, 3, ndpp.RandomOptions{Diag: 0.5})
	dir := t.TempDir()
	kernel := writeKernel(t, dir, m)
	glob := writeNPYParts(t, dir, m, 50, 40)
	for _, polish := range []Polish{PolishNone, PolishFinal, PolishAll} {
		want := singleMachine(t, m, 6, polish != PolishNone)
		for _, shards := range []int{1, 2, 4} {
			res := runMap(t, MapOptions{Items: glob, Kernel: kernel, K: 6, Shards: shards, Coreset: 90, Polish: polish, ChunkSize: 16})
			requireSameSolution(t, m, want, res)
			require.Equal(t, shards, res.Shards)
			require.Len(t, res.PerShard, shards)
		}
	}
}

// The shards are item id mod S and each shard's core-set depends on its
// items only: how items are laid out in files, their order and their
// format do not change the result.
func TestMapIndependentOfLayout(t *testing.T) {
	m := ndpp.Random(500, 5, 21, ndpp.RandomOptions{})
	var results []*MapResult
	for layout := range 3 {
		dir := t.TempDir()
		kernel := writeKernel(t, dir, m)
		var glob string
		switch layout {
		case 0:
			glob = writeNPYParts(t, dir, m, 500)
		case 1:
			glob = writeTextParts(t, dir, m, 2, 1)
		default:
			glob = writeTextParts(t, dir, m, 5, 2)
		}
		for _, polish := range []Polish{PolishFinal, PolishNone, PolishAll} {
			res := runMap(t, MapOptions{Items: glob, Kernel: kernel, K: 5, Shards: 3, Polish: polish, ChunkSize: 32})
			if layout == 0 {
				results = append(results, res)
				continue
			}
			want := results[polish]
			require.Equal(t, want.IDs, res.IDs)
			require.Equal(t, want.LogDet, res.LogDet)
			require.Equal(t, want.PerShard, res.PerShard)
			require.Equal(t, want.Merge, res.Merge)
		}
	}
	// Three shards of about 167 items: the merge is a real one, over the
	// disjoint candidate sets of the shards.
	require.Len(t, results[0].IDs, 5)
	union := 0
	for _, s := range results[0].PerShard {
		require.Positive(t, s.Candidates)
		require.Equal(t, stream.DefaultCoresetFactor*5, s.Candidates) // k′ beyond the rank bound 2d = 10: rounds
		union += s.Candidates
	}
	require.Equal(t, union, results[0].Merge.Union)
	require.Less(t, results[0].Merge.Union, 500)
}

func TestMapBadInputs(t *testing.T) {
	ctx := context.Background()
	m := ndpp.Random(40, 3, 5, ndpp.RandomOptions{})
	dir := t.TempDir()
	kernel := writeKernel(t, dir, m)
	glob := writeNPYParts(t, dir, m, 40)
	build := func(opt MapOptions) error {
		_, s := beam.NewPipelineWithRoot()
		_, err := Map(ctx, s, opt)
		return err
	}

	err := build(MapOptions{Items: glob, Kernel: filepath.Join(dir, "missing.npz"), K: 3})
	require.ErrorContains(t, err, "missing.npz")

	err = build(MapOptions{Items: glob, Kernel: kernel, K: 7})
	require.ErrorContains(t, err, "k = 7 exceeds the kernel's rank bound 6")

	err = build(MapOptions{Items: filepath.Join(dir, "none-*.npy"), Kernel: kernel, K: 3})
	require.ErrorContains(t, err, "no file matches")

	// NPY rows of another width.
	other := t.TempDir()
	writeNPYParts(t, other, ndpp.Random(10, 4, 1, ndpp.RandomOptions{}), 10)
	err = build(MapOptions{Items: filepath.Join(other, "items-*.npy"), Kernel: kernel, K: 3})
	require.ErrorContains(t, err, "rows of 8 values; want 6")

	// NPY and text files together.
	writeTextParts(t, dir, m, 1, 1)
	err = build(MapOptions{Items: filepath.Join(dir, "items-*"), Kernel: kernel, K: 3})
	require.ErrorContains(t, err, "mix")

	// A bad row fails the pipeline with its line.
	bad := t.TempDir()
	txt := writeTextParts(t, bad, m, 1, 1)
	data, err := os.ReadFile(filepath.Join(bad, "items-00.txt"))
	require.NoError(t, err)
	lines := strings.Split(string(data), "\n")
	lines[6] = "17 1 2 3"
	require.NoError(t, os.WriteFile(filepath.Join(bad, "items-00.txt"), []byte(strings.Join(lines, "\n")), 0o644))
	p, s := beam.NewPipelineWithRoot()
	_, err = Map(ctx, s, MapOptions{Items: txt, Kernel: kernel, K: 3, Out: filepath.Join(bad, "out.json")})
	require.NoError(t, err)
	err = ptest.Run(p)
	require.ErrorContains(t, err, "line 7")
}

// An accumulator that outgrows its buffer is reduced to its k′ candidates
// (merge and reduce): the shards still see every item, and the result is
// a solution of k distinct items whose log det is the model's.
func TestMapReducesBeyondBuffer(t *testing.T) {
	m := ndpp.Random(600, 4, 8, ndpp.RandomOptions{Diag: 0.2})
	dir := t.TempDir()
	kernel := writeKernel(t, dir, m)
	glob := writeNPYParts(t, dir, m, 600)
	res := runMap(t, MapOptions{Items: glob, Kernel: kernel, K: 4, Shards: 2, Buffer: 40, ChunkSize: 16})
	require.Equal(t, int64(600), res.Items)
	reductions := 0
	for _, s := range res.PerShard {
		require.Equal(t, int64(300), s.Items)
		require.Equal(t, stream.DefaultCoresetFactor*4, s.Candidates)
		reductions += s.Reductions
	}
	require.Positive(t, reductions)
	require.Equal(t, 40, res.Buffer)
	require.Len(t, res.IDs, 4)
	require.True(t, slices.IsSorted(res.IDs))
	require.Len(t, slices.Compact(slices.Clone(res.IDs)), 4)
	ld, _, err := m.LogDet(res.IDs)
	require.NoError(t, err)
	require.Equal(t, ld, res.LogDet)
}

// itemFiles bounds the number of text items by the files' sizes (at
// least two bytes per field), and gives up on compressed files.
func TestMapItemFilesBound(t *testing.T) {
	ctx := context.Background()
	m := ndpp.Random(200, 3, 4, ndpp.RandomOptions{})
	kern := ndpp.KernelOf(m)
	dir := t.TempDir()
	writeTextParts(t, dir, m, 2, 1)
	files, err := MatchFiles(ctx, filepath.Join(dir, "items-*.txt"))
	require.NoError(t, err)
	_, total, bound, err := itemFiles(ctx, files, kern)
	require.NoError(t, err)
	require.Equal(t, -1, total)
	require.GreaterOrEqual(t, bound, 200)

	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err = zw.Write(data)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(files[0], buf.Bytes(), 0o644))
	_, _, bound, err = itemFiles(ctx, files, kern)
	require.NoError(t, err)
	require.Equal(t, -1, bound)

	npyDir := t.TempDir()
	writeNPYParts(t, npyDir, m, 150, 50)
	files, err = MatchFiles(ctx, filepath.Join(npyDir, "items-*.npy"))
	require.NoError(t, err)
	offsets, total, bound, err := itemFiles(ctx, files, kern)
	require.NoError(t, err)
	require.Equal(t, []int{0, 150}, offsets)
	require.Equal(t, 200, total)
	require.Equal(t, 200, bound)
}

// Without --buffer the shards are held whole when their items fit the
// memory budget, and reduced every DefaultMapBuffer items when they do
// not.
func TestMapAutoBuffer(t *testing.T) {
	kern := ndpp.KernelOf(ndpp.Random(10, 4, 1, ndpp.RandomOptions{}))
	b, rep := autoBuffer(100000, 40, kern, 0)
	require.Equal(t, 100000, b)
	require.Equal(t, 0, rep)
	b, rep = autoBuffer(10, 40, kern, 0)
	require.Equal(t, 41, b, "more than k′")
	require.Equal(t, 0, rep)
	b, rep = autoBuffer(-1, 40, kern, 0)
	require.Equal(t, DefaultMapBuffer, b, "text: unknown count")
	require.Equal(t, DefaultMapBuffer, rep)
	// 10⁵ items of 9 values (with the id) take 16·7.2 MB held whole.
	require.Equal(t, int64(16*8*9*100000), MapBufferMemory(100000, items.Width(kern)))
	b, rep = autoBuffer(100000, 40, kern, 100<<20)
	require.Equal(t, DefaultMapBuffer, b)
	require.Equal(t, DefaultMapBuffer, rep)
	b, _ = autoBuffer(100000, 40, kern, 200<<20)
	require.Equal(t, 100000, b)
	// The environment is a command default only.
	t.Setenv("NDPP_MAX_MEMORY", "100M")
	b, _ = autoBuffer(100000, 40, kern, 200<<20)
	require.Equal(t, 100000, b)
}

// TestMapBufferMemory: the estimate grows with the items and their width
// and overflows to -1.
func TestMapBufferMemory(t *testing.T) {
	prev := int64(-1)
	for _, n := range []int{0, 1, 1000, 1e9} {
		m := MapBufferMemory(n, 8)
		require.Greater(t, m, prev)
		prev = m
	}
	require.Less(t, MapBufferMemory(1000, 8), MapBufferMemory(1000, 9))
	require.Equal(t, int64(-1), MapBufferMemory(1<<60, 8))
	require.Equal(t, int64(-1), MapBufferMemory(-1, 8))
}
