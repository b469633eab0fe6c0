package stream

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
)

// vecItems returns m's items as vector items (copies), ids = indices.
func vecItems(m *ndpp.Model) []ndpp.Item {
	var out []ndpp.Item
	src := ModelSource(m, IDOrder(m.N()))
	for {
		its, err := src.Next(1000)
		if err != nil {
			return out
		}
		for _, it := range its {
			c, _ := it.CopyTo(nil)
			out = append(out, c)
		}
	}
}

// TestCoresetOneShardIsGreedy: one shard with k′ = k is the offline
// greedy's solution (and value); with local search it is at least as good.
func TestCoresetOneShardIsGreedy(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		m := ndpp.Random(300+int(seed)*20, 5, seed, ndpp.RandomOptions{Shared: seed%4 == 0})
		if seed%2 == 0 {
			m = withDiag(m, seed)
		}
		k := 2 + int(seed)%5
		kern := ndpp.KernelOf(m)
		g, err := OfflineGreedy(context.Background(), m, k, GreedyOptions{})
		require.NoError(t, err)
		c, err := Coreset(context.Background(), kern, vecItems(m), k, CoresetOptions{Size: k})
		require.NoError(t, err)
		want := slices.Clone(g.Solution)
		slices.Sort(want)
		require.Equal(t, want, c.IDs(), "seed %d", seed)
		require.InDelta(t, g.Value.Log, c.Value.Log, 1e-9)
		res, err := SolveCandidates(context.Background(), kern, c, k, CoresetOptions{})
		require.NoError(t, err)
		require.Equal(t, want, sortedCopy(res.Solution))
		p, err := SolveCandidates(context.Background(), kern, Candidates{Items: vecItems(m)}, k, CoresetOptions{Polish: true})
		require.NoError(t, err)
		require.GreaterOrEqual(t, p.Value.Log, g.Value.Log-1e-9, "seed %d: local search below greedy", seed)
	}
}

func sortedCopy(x []int) []int { y := slices.Clone(x); slices.Sort(y); return y }

// TestCoresetMergeOrder: merging candidate sets gives the same candidates
// whatever the order of the sets and of the items in them (repeated items
// taken once); shards and merges compose to a solution close to the
// single-machine greedy's (logged).
func TestCoresetMergeOrder(t *testing.T) {
	m := withDiag(ndpp.Random(4000, 6, 7, ndpp.RandomOptions{}), 2)
	kern := ndpp.KernelOf(m)
	all := vecItems(m)
	k := 6
	rng := rand.New(rand.NewPCG(7, 1))
	shards := make([][]ndpp.Item, 8)
	for _, it := range all {
		s := rng.IntN(8)
		shards[s] = append(shards[s], it)
	}
	var sets []Candidates
	for _, sh := range shards {
		c, err := Coreset(context.Background(), kern, sh, k, CoresetOptions{})
		require.NoError(t, err)
		require.Len(t, c.Items, DefaultCoresetFactor*k)
		sets = append(sets, c)
	}
	want, err := MergeCoresets(context.Background(), kern, sets, k, CoresetOptions{})
	require.NoError(t, err)
	require.Equal(t, 8, want.Shards)
	require.Equal(t, int64(len(all)), want.Seen)
	for trial := 0; trial < 5; trial++ {
		perm := slices.Clone(sets)
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		for i := range perm {
			its := slices.Clone(perm[i].Items)
			rng.Shuffle(len(its), func(a, b int) { its[a], its[b] = its[b], its[a] })
			perm[i].Items = its
		}
		perm = append(perm, perm[0]) // a set given twice
		got, err := MergeCoresets(context.Background(), kern, perm, k, CoresetOptions{})
		require.NoError(t, err)
		require.Empty(t, cmp.Diff(want.IDs(), got.IDs()))
		require.Equal(t, want.Value, got.Value)
	}
	final, err := SolveCandidates(context.Background(), kern, want, k, CoresetOptions{Polish: true})
	require.NoError(t, err)
	g, err := OfflineGreedy(context.Background(), m, k, GreedyOptions{})
	require.NoError(t, err)
	t.Logf("8 shards, k′ = %d: log det %.4f, single-machine greedy %.4f", DefaultCoresetFactor*k, final.Value.Log, g.Value.Log)

	// The same id with other vectors is an error.
	bad := sets[0].Items[0]
	bad.V = slices.Clone(bad.V)
	bad.V[0] += 1
	_, err = MergeCoresets(context.Background(), kern, []Candidates{sets[0], {Items: []ndpp.Item{bad}}}, k, CoresetOptions{})
	require.ErrorContains(t, err, "appears with different vectors")
	_, err = Coreset(context.Background(), kern, all[:10], k, CoresetOptions{Size: k - 1})
	require.ErrorContains(t, err, "below k")
}

// TestCoresetRounds: a candidate set of k′ items is the union of rounds
// of the offline greedy for k items, each on the items the earlier rounds
// left (computed here on a model of those items only, ids mapped back),
// also beyond the kernel's rank bound; its Value is the first round's log
// det, greedy's on all items. With Polish each round is local search from
// that round's greedy, over the items left.
func TestCoresetRounds(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		opt := ndpp.RandomOptions{Shared: seed%3 == 0}
		m := ndpp.Random(120+int(seed)*7, 3, seed, opt) // rank bound 6 (3 with B = V)
		if seed%4 == 1 {
			m = withDiag(m, seed)
		}
		k := min(2+int(seed)%3, m.MaxRank())
		size := k*3 + int(seed)%k // beyond the rank bound for most seeds
		polish := seed%2 == 0
		kern := ndpp.KernelOf(m)
		c, err := Coreset(context.Background(), kern, vecItems(m), k, CoresetOptions{Size: size, Polish: polish})
		require.NoError(t, err)

		var want []int
		rest := IDOrder(m.N())
		var first ndpp.Value
		for len(want) < size {
			sub := subModel(t, m, rest)
			r := min(k, size-len(want))
			g, err := OfflineGreedy(context.Background(), sub, r, GreedyOptions{})
			require.NoError(t, err)
			pick := g.Solution
			if polish {
				o, err := detcache.NewFast(sub, r)
				require.NoError(t, err)
				ls, err := LocalSearch(context.Background(), o, r, pick, LocalSearchOptions{})
				require.NoError(t, err)
				pick = ls.Solution
			}
			if len(want) == 0 {
				first = logDetValue(sub, pick)
			}
			taken := map[int]bool{}
			for _, x := range pick {
				want = append(want, rest[x])
				taken[rest[x]] = true
			}
			rest = slices.DeleteFunc(rest, func(x int) bool { return taken[x] })
		}
		slices.Sort(want)
		require.Equal(t, want, c.IDs(), "seed %d", seed)
		require.InDelta(t, first.Log, c.Value.Log, 1e-9, "seed %d", seed)
		require.Len(t, c.Items, size)
		for _, it := range c.Items {
			require.True(t, sameItem(it, vecItems(m)[it.ID]))
		}
	}
}

// subModel is the model of m's items rows, in that order.
func subModel(t *testing.T, m *ndpp.Model, rows []int) *ndpp.Model {
	t.Helper()
	d := m.D()
	var v, b, delta []float64
	for _, i := range rows {
		v = append(v, m.ItemV(i)...)
		if !m.Shared() {
			b = append(b, m.ItemB(i)...)
		}
		if m.HasDiag() {
			delta = append(delta, m.ItemDiag(i))
		}
	}
	var opts []ndpp.Option
	if m.HasDiag() {
		opts = append(opts, ndpp.WithDiag(delta))
	}
	sub, err := ndpp.NewFromOwnedRows(len(rows), d, v, b, slices.Clone(ndpp.KernelOf(m).C), opts...)
	require.NoError(t, err)
	return sub
}
