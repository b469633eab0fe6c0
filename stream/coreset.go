package stream

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
)

// Composable core-sets for MAP inference over items given as vectors: a
// shard of items is solved into a small candidate set (Coreset: the union
// of several disjoint greedy solutions, so that items a shard's own
// solution displaces can still serve the merged one), candidate
// sets are merged by solving again on their union (MergeCoresets), and the
// final set of k items is solved from the last candidates (SolveCandidates).
//
// Guarantee. For symmetric kernels (DPPs, det maximisation under a
// cardinality constraint), the greedy algorithm run on each shard is a
// composable core-set: the best k-subset of the union of the shards' greedy
// solutions is within a factor k^O(k) of the best k-subset of all items
// (Mahabadi and Vuong, "Composable Coresets for Determinant Maximization:
// Greedy is Almost Optimal", 2023), and a local-search polish keeps that
// factor; a candidate set of several rounds contains the first round, the
// shard's greedy solution, so the factor holds for it too. For nonsymmetric kernels no such factor is proved: the argument
// rests on the symmetric structure (volumes of vectors), and here the
// kernel's skew part can make a set's determinant large while its items'
// symmetric volumes are small. What holds here is exact: each step is the
// offline greedy (and optional local search) of this package on the items
// it is given, so one shard is single-machine greedy (its first round is
// greedy's k items, and greedy on the candidates picks them again), and the
// result depends only on the union of the items each call is given, never
// on their order (items are sorted by id, greedy ties go to the lowest id,
// items repeated across sets are taken once). A tree of merges depends on
// its shape: merging {A, B} and then C re-solves A ∪ B first, which may
// drop items a single merge of {A, B, C} would keep.

// DefaultCoresetFactor is the default size k′ of a candidate set as a
// multiple of k.
const DefaultCoresetFactor = 5

// CoresetOptions configures Coreset, MergeCoresets and SolveCandidates.
type CoresetOptions struct {
	// Size is k′ ≥ k, the number of candidates a set keeps, picked in
	// rounds: each round is the offline greedy for k items (at most the
	// kernel's rank bound) on the items the earlier rounds left, so the
	// first round is the set's own greedy solution. Zero means
	// DefaultCoresetFactor·k.
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
	Items  []ndpp.Item
	Value  ndpp.Value // log det L of the first round's picks: greedy's k items on the set given
	Shards int        // shards merged into it (1 for a shard's own set)
	Seen   int64      // items those shards held
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
// k′ items (CoresetOptions.Size): rounds of the offline greedy for k items
// (lowest id on ties), each on the items the earlier rounds left and
// polished by local search with opt.Polish. A shard of at most k′ items is
// kept whole. It returns an error for invalid items, repeated
// ids with different vectors, or k < 1.
//
// Coreset, MergeCoresets and SolveCandidates stop once ctx is done, with an
// error wrapping ctx.Err() (ctx is checked between the greedy rounds and
// passed to each).
func Coreset(ctx context.Context, kern ndpp.Kernel, items []ndpp.Item, k int, opt CoresetOptions) (Candidates, error) {
	c, err := solveUnion(ctx, kern, [][]ndpp.Item{items}, k, opt)
	if err != nil {
		return Candidates{}, err
	}
	c.Shards, c.Seen = 1, int64(len(items))
	return c, nil
}

// MergeCoresets merges candidate sets by solving again on their union, as
// Coreset does: the result depends on the union only (see the guarantee
// above).
func MergeCoresets(ctx context.Context, kern ndpp.Kernel, sets []Candidates, k int, opt CoresetOptions) (Candidates, error) {
	if len(sets) == 0 {
		return Candidates{}, errors.New("stream: MergeCoresets without candidate sets")
	}
	parts := make([][]ndpp.Item, len(sets))
	shards, seen := 0, int64(0)
	for i, s := range sets {
		parts[i] = s.Items
		shards += s.Shards
		seen += s.Seen
	}
	c, err := solveUnion(ctx, kern, parts, k, opt)
	if err != nil {
		return Candidates{}, err
	}
	c.Shards, c.Seen = shards, seen
	return c, nil
}

// SolveCandidates returns the final solution of k items from a candidate
// set: offline greedy (and local search with opt.Polish) on its items; the
// Result's Solution holds ids.
func SolveCandidates(ctx context.Context, kern ndpp.Kernel, c Candidates, k int, opt CoresetOptions) (Result, error) {
	opt.Size = k
	out, err := solveUnion(ctx, kern, [][]ndpp.Item{c.Items}, k, opt)
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
func solveUnion(ctx context.Context, kern ndpp.Kernel, parts [][]ndpp.Item, k int, opt CoresetOptions) (Candidates, error) {
	if err := ctx.Err(); err != nil {
		return Candidates{}, fmt.Errorf("stream: core-set: %w", err)
	}
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
	var all []ndpp.Item
	for _, p := range parts {
		for _, it := range p {
			if err := ndpp.CheckItem(kern, it); err != nil {
				return Candidates{}, fmt.Errorf("stream: %w", err)
			}
			all = append(all, it)
		}
	}
	slices.SortStableFunc(all, func(a, b ndpp.Item) int { return a.ID - b.ID })
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
		return Candidates{Value: ndpp.Value{}}, nil
	}
	size = min(size, n)
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
	sol, first, err := coresetRounds(ctx, m, size, k, opt)
	if err != nil {
		return Candidates{}, err
	}
	slices.Sort(first)
	val := logDetValue(m, first)
	slices.Sort(sol)
	out := Candidates{Items: make([]ndpp.Item, len(sol)), Value: val}
	for i, x := range sol {
		out.Items[i], _ = uniq[x].CopyTo(nil)
	}
	return out, nil
}

// coresetRounds picks size of m's items (all of them if there are no
// more) in rounds: each round is the offline greedy for k items (at most
// the kernel's rank bound), polished by local search with opt.Polish, on
// the items earlier rounds left. A round that finds no item of nonzero
// gain ends the rounds. It returns the picks and the first round's (the
// greedy's k items on all of m, also when m is kept whole).
func coresetRounds(ctx context.Context, m *ndpp.Model, size, k int, opt CoresetOptions) (sol, first []int, err error) {
	n := m.N()
	k = min(k, m.MaxRank())
	if n <= size {
		sol = IDOrder(n)
		if n <= k {
			return sol, sol, nil
		}
		g, err := OfflineGreedy(ctx, m, k, GreedyOptions{Workers: opt.Workers})
		if err != nil {
			return nil, nil, err
		}
		return sol, g.Solution, nil
	}
	var rest []int // items no round has picked (nil: all)
	taken := make([]bool, n)
	for len(sol) < size {
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("stream: core-set: %w", err)
		}
		avail := n - len(sol)
		r := min(size-len(sol), k, avail)
		g, err := OfflineGreedy(ctx, m, r, GreedyOptions{Workers: opt.Workers, Items: rest})
		if err != nil {
			return nil, nil, err
		}
		pick := g.Solution
		if opt.Polish && len(pick) == r && r < avail {
			o, err := detcache.NewFast(m, r)
			if err != nil {
				return nil, nil, err
			}
			ls, err := LocalSearch(ctx, o, r, pick, LocalSearchOptions{Items: rest})
			if err != nil {
				return nil, nil, err
			}
			pick = ls.Solution
		}
		if len(pick) == 0 {
			break
		}
		if first == nil {
			first = slices.Clone(pick)
		}
		sol = append(sol, pick...)
		for _, x := range pick {
			taken[x] = true
		}
		rest = rest[:0]
		for x := range n {
			if !taken[x] {
				rest = append(rest, x)
			}
		}
	}
	return sol, first, nil
}

// sameItem reports whether two items have the same vectors, bit for bit.
func sameItem(a, b ndpp.Item) bool {
	eq := func(x, y []float64) bool {
		return slices.EqualFunc(x, y, func(p, q float64) bool { return math.Float64bits(p) == math.Float64bits(q) })
	}
	return eq(a.V, b.V) && eq(a.B, b.B) && math.Float64bits(a.Delta) == math.Float64bits(b.Delta)
}
