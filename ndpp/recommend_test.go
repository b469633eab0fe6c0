package ndpp

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// TestTopItems: against a full sort (gain descending, index ascending on
// ties), items of y excluded, on random gains with many ties and zeros.
func TestTopItems(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 500; trial++ {
		n := 1 + rng.IntN(40)
		g := make([]float64, n)
		for j := range g {
			g[j] = float64(rng.IntN(5)) // ties and zeros
		}
		var y []int
		for j := range g {
			if rng.IntN(4) == 0 {
				y = append(y, j)
				g[j] = 0
			}
		}
		var all []int
		for j := range g {
			if !slices.Contains(y, j) {
				all = append(all, j)
			}
		}
		sort.SliceStable(all, func(a, b int) bool { return g[all[a]] > g[all[b]] })
		top := rng.IntN(n + 2)
		want := append([]int{}, all[:min(top, len(all))]...)
		require.Equal(t, want, append([]int{}, topItems(g, y, top)...), "trial %d", trial)
	}
}

// bruteKernel returns the n×n kernel L_ij = δᵢ[i = j] + vᵢ·vⱼ + bᵢᵀ C bⱼ
// built from the item vectors and C, entry by entry.
func bruteKernel(m *Model) *mat.Dense {
	n, d := m.N(), m.D()
	_, _, _, c := m.Rows()
	l := mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			x := 0.0
			for a := range d {
				x += m.ItemV(i)[a] * m.ItemV(j)[a]
				for b := range d {
					x += m.ItemB(i)[a] * c[a*d+b] * m.ItemB(j)[b]
				}
			}
			if i == j {
				x += m.ItemDiag(i)
			}
			l.Set(i, j, x)
		}
	}
	return l
}

// bruteDet is det L_S by a fresh LU of the submatrix.
func bruteDet(l *mat.Dense, s []int) float64 {
	if len(s) == 0 {
		return 1
	}
	sub := mat.NewDense(len(s), len(s), nil)
	for a, i := range s {
		for b, j := range s {
			sub.Set(a, b, l.At(i, j))
		}
	}
	return mat.Det(sub)
}

// TestRecommendMatchesBruteForce: Recommend's items and gains are the
// ranking of every item j ∉ S by det L_{S+j}/det L_S, each determinant
// computed from scratch, best first with ties to the lower row, on small
// models with and without a diagonal, B = V or not; RecommendBatch with
// rows for two baskets at a time gives the gains of one basket at a time
// to rounding.
func TestRecommendMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ctx := context.Background()
	for trial := range 40 {
		n, d := 3+rng.IntN(10), 1+rng.IntN(3)
		m := Random(n, d, uint64(trial), RandomOptions{Shared: trial%3 == 0, Diag: []float64{0, 0.3}[trial%2]})
		l := bruteKernel(m)
		var baskets [][]int
		for range 5 {
			k := rng.IntN(min(n, m.MaxRank())) // within the rank: det L_S > 0
			baskets = append(baskets, rng.Perm(n)[:k])
		}
		top := rng.IntN(n + 2)
		gains := [][]float64{make([]float64, n), make([]float64, n)}
		recs, errs, err := m.RecommendBatch(ctx, baskets, top, RecommendOptions{Gains: gains})
		require.NoError(t, err)
		for b, s := range baskets {
			require.NoError(t, errs[b])
			ds := bruteDet(l, s)
			require.Greater(t, ds, 0.0)
			type cand struct {
				j int
				g float64
			}
			var all []cand
			for j := range n {
				if !slices.Contains(s, j) {
					all = append(all, cand{j, bruteDet(l, append(slices.Clone(s), j)) / ds})
				}
			}
			sort.SliceStable(all, func(a, b int) bool { return all[a].g > all[b].g })
			want := all[:min(top, len(all))]
			require.Len(t, recs[b], len(want), "trial %d basket %v", trial, s)
			for r, w := range want {
				got := recs[b][r]
				tol := 1e-8 * math.Max(1, math.Abs(w.g))
				require.InDelta(t, w.g, got.Gain, tol, "trial %d basket %v rank %d", trial, s, r)
				if got.Item != w.j { // only a near tie may swap
					require.InDelta(t, w.g, all[slices.IndexFunc(all, func(c cand) bool { return c.j == got.Item })].g, tol)
				}
			}
			// Alone, in another grouping of the stacked products: the
			// same to rounding.
			one, err := m.Recommend(ctx, s, top, RecommendOptions{})
			require.NoError(t, err)
			require.Len(t, one, len(recs[b]))
			for r := range one {
				require.InDelta(t, recs[b][r].Gain, one[r].Gain, 1e-12*math.Max(1, math.Abs(one[r].Gain)))
			}
		}
	}
}

// TestRecommendErrors: a basket with det L_S = 0 gives ErrSingularCondition
// and an invalid basket its validation error, each for its basket only;
// a negative n, short rows of gains and a done context are errors of the
// call.
func TestRecommendErrors(t *testing.T) {
	ctx := context.Background()
	m := Random(8, 1, 1, RandomOptions{}) // rank 2: three items have det 0
	recs, errs, err := m.RecommendBatch(ctx, [][]int{{0, 1, 2}, {9}, {0, 0}, {3}}, 2, RecommendOptions{})
	require.NoError(t, err)
	require.ErrorIs(t, errs[0], ErrSingularCondition)
	require.Error(t, errs[1])
	require.Error(t, errs[2])
	require.NoError(t, errs[3])
	require.Equal(t, []Recommendation{}, recs[0])
	require.Len(t, recs[3], 2)
	_, err = m.Recommend(ctx, []int{0, 1, 2}, 2, RecommendOptions{})
	require.ErrorIs(t, err, ErrSingularCondition)

	recs0, err := m.Recommend(ctx, []int{3}, 0, RecommendOptions{})
	require.NoError(t, err)
	require.Empty(t, recs0)
	_, err = m.Recommend(ctx, []int{3}, -1, RecommendOptions{})
	require.Error(t, err)
	_, err = m.Recommend(ctx, []int{3}, 2, RecommendOptions{Gains: [][]float64{make([]float64, 7)}})
	require.Error(t, err)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, _, err = m.RecommendBatch(cctx, [][]int{{3}}, 2, RecommendOptions{})
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	recs, errs, err = m.RecommendBatch(ctx, nil, 2, RecommendOptions{})
	require.NoError(t, err)
	require.Empty(t, recs)
	require.Empty(t, errs)
}
