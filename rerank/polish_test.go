package rerank

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/stream"
)

// polishLogDet is log det L′_{F ∪ S} for the request's kernel
// L′ = diag(q)·L·diag(q) (shown items unscaled), from a dense LU; ok is
// false when it is zero.
func polishLogDet(t *testing.T, m *ndpp.Model, req Request, fixed, set []int) (float64, bool) {
	ld, sign, err := m.LogDet(append(slices.Clone(fixed), set...))
	require.NoError(t, err)
	if sign <= 0 {
		return 0, false
	}
	for _, it := range set {
		if req.Quality != nil {
			q := req.Quality[slices.Index(req.Candidates, it)]
			ld += 2 * math.Log(q)
		}
	}
	return ld, true
}

// TestRerankPolishIsLocalOptimum: on seeded models with a diagonal (so that
// every shown item is conditioned on), with quality scores and shown items,
// the polished result is never below the greedy's determinant, no single
// swap with any choosable candidate multiplies det L′ given the shown items
// by more than 1 + ε (dense determinants; also when local search left the
// greedy's result alone, which is then returned exactly), and the gains
// multiply to det L′_{F∪S}/det L′_F.
func TestRerankPolishIsLocalOptimum(t *testing.T) {
	var ws, wg Workspace
	moved := 0
	for seed := uint64(1); seed <= 500; seed++ {
		rng := rand.New(rand.NewPCG(seed, 23))
		d := 1 + rng.IntN(4)
		n := 8 + rng.IntN(20)
		m := ndpp.Random(n, d, seed, ndpp.RandomOptions{Diag: 0.02 + 0.5*rng.Float64(), Shared: seed%4 == 0})
		req := randomRequest(rng, n)
		req.Window = 0
		req.Polish = true
		req.PolishEps = []float64{0, 1e-9, 1e-9, 0.05}[seed%4]
		req.PolishPool = []int{0, 0, 1, 3, 50}[seed%5]
		greq := req
		greq.Polish = false
		g, err := wg.Rerank(context.Background(), m, greq)
		require.NoError(t, err)
		res, err := ws.Rerank(context.Background(), m, req)
		require.NoError(t, err)
		label := fmt.Sprintf("seed %d (n = %d, k = %d, shown %d)", seed, n, req.K, len(req.Shown))
		if res.PolishSwaps == 0 {
			require.Equal(t, g.Items, res.Items, label)
			require.Equal(t, g.Gains, res.Gains, label)
		}
		if len(g.Items) < req.K {
			continue
		}
		require.Zero(t, res.ShownSkipped, label)
		fixed := req.Shown
		gl, ok := polishLogDet(t, m, req, fixed, g.Items)
		require.True(t, ok, label)
		pl, ok := polishLogDet(t, m, req, fixed, res.Items)
		require.True(t, ok, label)
		if res.PolishSwaps > 0 {
			moved++
			require.Greater(t, pl, gl, "%s: a polish that moved must gain", label)
			// The polished set is in greedy order given the shown items,
			// with the greedy's gains: the greedy over it alone agrees.
			sub := req
			sub.Polish, sub.Candidates, sub.K, sub.Quality = false, slices.Clone(res.Items), len(res.Items), nil
			if req.Quality != nil {
				for _, it := range res.Items {
					sub.Quality = append(sub.Quality, req.Quality[slices.Index(req.Candidates, it)])
				}
			}
			items, gains := slices.Clone(res.Items), slices.Clone(res.Gains)
			o, err := wg.Rerank(context.Background(), m, sub)
			require.NoError(t, err)
			require.Equal(t, o.Items, items, "%s: the polished set in greedy order", label)
			for i, gn := range o.Gains {
				require.InDelta(t, gn, gains[i], 1e-9*math.Max(1, math.Abs(gn)), "%s: gain %d", label, i)
			}
		}
		eps := req.PolishEps
		if eps == 0 {
			eps = stream.DefaultLocalSearchEps
		}
		for j := range res.Items {
			for p, c := range req.Candidates {
				if slices.Contains(res.Items, c) || slices.Contains(req.Shown, c) || (req.Quality != nil && req.Quality[p] == 0) {
					continue
				}
				sw := slices.Clone(res.Items)
				sw[j] = c
				if v, ok := polishLogDet(t, m, req, fixed, sw); ok {
					require.LessOrEqual(t, v, pl+math.Log1p(eps)+1e-9, "%s: swapping %d for %d", label, res.Items[j], c)
				}
			}
		}
		fl := 0.0
		if len(fixed) > 0 {
			fl, ok = polishLogDet(t, m, req, fixed, nil)
			require.True(t, ok, label)
		}
		sum := 0.0
		for _, gn := range res.Gains {
			sum += math.Log(gn)
		}
		require.InDelta(t, pl-fl, sum, 1e-8*math.Max(1, math.Abs(pl)), label)
	}
	t.Logf("requests where local search moved: %d of 500", moved)
	require.GreaterOrEqual(t, moved, 5)
}

// TestRerankPolishIsLocalSearch: with all of the catalogue as candidates,
// no quality and nothing shown, the polished set is stream.LocalSearch's
// from the offline greedy's solution (with the reranker's default pool).
func TestRerankPolishIsLocalSearch(t *testing.T) {
	var ws Workspace
	for seed := uint64(1); seed <= 30; seed++ {
		d := 2 + int(seed%5)
		n := 30 + int(seed*37%200)
		m := ndpp.Random(n, d, seed, ndpp.RandomOptions{Diag: []float64{0, 0.1}[seed%2], Shared: seed%3 == 0})
		k := min(m.MaxRank(), 3+int(seed%8))
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		res, err := ws.Rerank(context.Background(), m, Request{Candidates: all, K: k, Polish: true})
		require.NoError(t, err)
		g, err := stream.OfflineGreedy(context.Background(), m, k, stream.GreedyOptions{})
		require.NoError(t, err)
		o, err := detcache.NewFast(m, k)
		require.NoError(t, err)
		ls, err := stream.LocalSearch(context.Background(), o, k, g.Solution, stream.LocalSearchOptions{Pool: DefaultPolishPool})
		require.NoError(t, err)
		want, got := slices.Sorted(slices.Values(ls.Solution)), slices.Sorted(slices.Values(res.Items))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("seed %d: polished set vs local search (-want +got):\n%s", seed, diff)
		}
		require.Equal(t, int(ls.Swaps), res.PolishSwaps, "seed %d", seed)
	}
}

func TestRerankPolishErrors(t *testing.T) {
	m := ndpp.Random(10, 3, 1, ndpp.RandomOptions{})
	var ws Workspace
	for _, c := range []struct {
		req   Request
		field string
	}{
		{Request{Candidates: []int{1, 2, 3}, K: 2, Polish: true, Window: 2}, "window"},
		{Request{Candidates: []int{1, 2, 3}, K: 2, Polish: true, PolishEps: -1}, "polish_eps"},
		{Request{Candidates: []int{1, 2, 3}, K: 2, Polish: true, PolishEps: math.NaN()}, "polish_eps"},
		{Request{Candidates: []int{1, 2, 3}, K: 2, Polish: true, PolishPool: -1}, "polish_pool"},
		{Request{Candidates: []int{1, 2, 3}, K: 2, Polish: true, PolishPool: MaxPolishPool + 1}, "polish_pool"},
		{Request{Candidates: []int{1, 2, 3}, K: 2, Polish: true, PolishMaxRatios: -1}, "polish_max_ratios"},
	} {
		_, err := ws.Rerank(context.Background(), m, c.req)
		var re *RequestError
		require.ErrorAs(t, err, &re, "%+v", c.req)
		require.Equal(t, c.field, re.Field)
	}
}
