package stream

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
)

// Composable core-sets for MAP inference over items given as vectors: a
// shard of items is solved into a small candidate set (Coreset), candidate
// sets are merged by solving again on their union (MergeCoresets), and the
// final set of k items is solved from the last candidates (SolveCandidates).
//
// Guarantee. For symmetric kernels (DPPs, det maximisation under a
// cardinality constraint), the greedy algorithm run on each shard is a
// composable core-set: the best k-subset of the union of the shards' greedy
// solutions is within a factor k^O(k) of the best k-subset of all items
// (Mahabadi and Vuong, "Composable Coresets for Determinant Maximization:
// Greedy is Almost Optimal", 2023), and a local-search polish keeps that
// factor. For nonsymmetric kernels no such factor is proved: the argument
// rests on the symmetric structure (volumes of vectors), and here the
// kernel's skew part can make a set's determinant large while its items'
// symmetric volumes are small. What holds here is exact: each step is the
// offline greedy (and optional local search) of this package on the items
// it is given, so one shard with k′ = k is single-machine greedy, and the
// result depends only on the union of the items each call is given, never
// on their order (items are sorted by id, greedy ties go to the lowest id,
// items repeated across sets are taken once). A tree of merges depends on
// its shape: merging {A, B} and then C re-solves A ∪ B first, which may
// drop items a single merge of {A, B, C} would keep.

// DefaultCoresetFactor is the default size k′ of a candidate set as a
// multiple of k.
const DefaultCoresetFactor = 3

// CoresetOptions configures Coreset, MergeCoresets and SolveCandidates.
type CoresetOptions struct {
	// Size is k′ ≥ k, the number of candidates a set keeps (capped by the
	// kernel's rank bound). Zero means DefaultCoresetFactor·k.
	Size int
	// Polish improves each greedy solution by local search
	// (LocalSearch with its default options).
	Polish bool
	// Workers is the offline greedy's number of goroutines.
	Workers int
}

// Candidates is a candidate set: at most k′ items (copies of their
// vectors), sorted by id, and what produced it.
type Candidates struct {
	Items  []detcache.Item
	Value  Value // log det L over Items
	Shards int   // shards merged into it (1 for a shard's own set)
	Seen   int64 // items those shards held
}

// IDs returns the candidates' ids.
func (c Candidates) IDs() []int {
	out := make([]int, len(c.Items))
	for i, it := range c.Items {
		out[i] = it.ID
	}
	return out
}

// Coreset solves a shard of items of the kernel k into a candidate set of
// k′ items (CoresetOptions.Size): the offline greedy's k′ items (lowest id
// on ties), polished by local search with opt.Polish. A shard of at most
// k′ items is kept whole. It returns an error for invalid items, repeated
// ids with different vectors, or k < 1.
func Coreset(kern detcache.Kernel, items []detcache.Item, k int, opt CoresetOptions) (Candidates, error) {
	c, err := solveUnion(kern, [][]detcache.Item{items}, k, opt)
	if err != nil {
		return Candidates{}, err
	}
	c.Shards, c.Seen = 1, int64(len(items))
	return c, nil
}

// MergeCoresets merges candidate sets by solving again on their union, as
// Coreset does: the result depends on the union only (see the guarantee
// above).
func MergeCoresets(kern detcache.Kernel, sets []Candidates, k int, opt CoresetOptions) (Candidates, error) {
	if len(sets) == 0 {
		return Candidates{}, errors.New("stream: MergeCoresets without candidate sets")
	}
	parts := make([][]detcache.Item, len(sets))
	shards, seen := 0, int64(0)
	for i, s := range sets {
		parts[i] = s.Items
		shards += s.Shards
		seen += s.Seen
	}
	c, err := solveUnion(kern, parts, k, opt)
	if err != nil {
		return Candidates{}, err
	}
	c.Shards, c.Seen = shards, seen
	return c, nil
}

// SolveCandidates returns the final solution of k items from a candidate
// set: offline greedy (and local search with opt.Polish) on its items; the
// Result's Solution holds ids.
func SolveCandidates(kern detcache.Kernel, c Candidates, k int, opt CoresetOptions) (Result, error) {
	opt.Size = k
	out, err := solveUnion(kern, [][]detcache.Item{c.Items}, k, opt)
	if err != nil {
		return Result{}, err
	}
	res := Result{Algo: NameOfflineGreedy, K: k, Solution: out.IDs(), Value: out.Value, Items: int64(len(c.Items)), Adds: int64(len(out.Items))}
	if opt.Polish {
		res.Algo = NameLocalSearch
	}
	return res, nil
}

// solveUnion validates and deduplicates the union of parts, sorts it by id
// and solves it into at most k′ items.
func solveUnion(kern detcache.Kernel, parts [][]detcache.Item, k int, opt CoresetOptions) (Candidates, error) {
	if err := kern.Check(); err != nil {
		return Candidates{}, fmt.Errorf("stream: %w", err)
	}
	if k < 1 {
		return Candidates{}, fmt.Errorf("stream: k = %d; need k ≥ 1", k)
	}
	size := opt.Size
	if size == 0 {
		size = DefaultCoresetFactor * k
	}
	if size < k {
		return Candidates{}, fmt.Errorf("stream: core-set size k′ = %d below k = %d", size, k)
	}
	var all []detcache.Item
	for _, p := range parts {
		for _, it := range p {
			if err := detcache.CheckItem(kern, it); err != nil {
				return Candidates{}, fmt.Errorf("stream: %w", err)
			}
			all = append(all, it)
		}
	}
	slices.SortStableFunc(all, func(a, b detcache.Item) int { return a.ID - b.ID })
	uniq := all[:0]
	for _, it := range all {
		if n := len(uniq); n > 0 && uniq[n-1].ID == it.ID {
			if !sameItem(uniq[n-1], it) {
				return Candidates{}, fmt.Errorf("stream: item %d appears with different vectors", it.ID)
			}
			continue
		}
		uniq = append(uniq, it)
	}
	n, d := len(uniq), kern.D
	if n == 0 {
		return Candidates{Value: Value{}}, nil
	}
	size = min(size, kern.MaxRank(n))
	v := make([]float64, 0, n*d)
	var b []float64
	var delta []float64
	for _, it := range uniq {
		v = append(v, it.V...)
		if !kern.Shared {
			b = append(b, it.B...)
		}
		if kern.Diag {
			delta = append(delta, it.Delta)
		}
	}
	var mopts []ndpp.Option
	if kern.Diag {
		mopts = append(mopts, ndpp.WithDiag(delta))
	}
	m, err := ndpp.NewFromOwnedRows(n, d, v, b, append([]float64(nil), kern.C...), mopts...)
	if err != nil {
		return Candidates{}, fmt.Errorf("stream: %w", err)
	}
	var sol []int
	if n <= size {
		sol = IDOrder(n)
	} else {
		g, err := OfflineGreedy(m, size, GreedyOptions{Workers: opt.Workers})
		if err != nil {
			return Candidates{}, err
		}
		sol = g.Solution
		if opt.Polish && len(sol) == size {
			o, err := detcache.NewFast(m, size)
			if err != nil {
				return Candidates{}, err
			}
			ls, err := LocalSearch(o, size, sol, LocalSearchOptions{})
			if err != nil {
				return Candidates{}, err
			}
			sol = ls.Solution
		}
	}
	slices.Sort(sol)
	out := Candidates{Items: make([]detcache.Item, len(sol)), Value: logDetValue(m, sol)}
	for i, x := range sol {
		out.Items[i], _ = uniq[x].CopyTo(nil)
	}
	return out, nil
}

// sameItem reports whether two items have the same vectors, bit for bit.
func sameItem(a, b detcache.Item) bool {
	eq := func(x, y []float64) bool {
		return slices.EqualFunc(x, y, func(p, q float64) bool { return math.Float64bits(p) == math.Float64bits(q) })
	}
	return eq(a.V, b.V) && eq(a.B, b.B) && math.Float64bits(a.Delta) == math.Float64bits(b.Delta)
}
