package eval

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIndependentIsTheProductModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 12
	var train, test [][]int
	for range 200 {
		train = append(train, rng.Perm(n)[:1+rng.IntN(4)])
	}
	for range 50 {
		test = append(test, rng.Perm(n)[:1+rng.IntN(n-1)]) // also beyond any rank
	}
	m, err := Independent(train, n)
	require.NoError(t, err)
	counts := make([]float64, n)
	for _, s := range train {
		for _, i := range s {
			counts[i]++
		}
	}
	p := func(i int) float64 { return (counts[i] + 1) / (float64(len(train)) + 2) }
	met, err := Evaluate(context.Background(), m, test, Options{Seed: 1, Eps: -1})
	require.NoError(t, err)
	want := 0.0
	for _, s := range test {
		for i := 0; i < n; i++ {
			if slices.Contains(s, i) {
				want += math.Log(p(i))
			} else {
				want += math.Log1p(-p(i))
			}
		}
	}
	want /= float64(len(test))
	require.InDelta(t, want, met.TestLLEps, 1e-9*math.Abs(want))
	require.Zero(t, met.ZeroProb)
	require.Zero(t, met.BeyondRank)

	// Popularity: the held-out (highest-id) item's rank among the items not
	// in the rest of the basket, by training count.
	var pr []float64
	for _, s := range test {
		u := slices.Clone(s)
		sort.Ints(u)
		if len(u) < 2 {
			continue
		}
		y, t0 := u[:len(u)-1], u[len(u)-1]
		ge, nz := 0, 0
		for j := 0; j < n; j++ {
			if slices.Contains(y, j) {
				continue
			}
			nz++
			if counts[j] >= counts[t0] {
				ge++
			}
		}
		pr = append(pr, 1-float64(ge)/float64(nz))
	}
	require.InDelta(t, 100*mean(pr), met.MPRMicro, 1e-9)

	b, err := IndependentBaseline(context.Background(), train, test, n, Options{Seed: 1, Eps: -1})
	require.NoError(t, err)
	require.Equal(t, met, b)
}

func TestIndependentRejectsBadInput(t *testing.T) {
	_, err := Independent([][]int{{0, 1}}, 0)
	require.ErrorContains(t, err, "n = 0")
	_, err = Independent([][]int{{0, 3}}, 3)
	require.ErrorContains(t, err, "out of range")
	_, err = Independent([][]int{{1, 1}}, 3)
	require.ErrorContains(t, err, "duplicate")
}
