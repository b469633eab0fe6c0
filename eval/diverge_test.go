package eval

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
)

// divergeBaskets returns m random baskets of 1…maxSize distinct items of n.
func divergeBaskets(n, m, maxSize int, seed uint64) [][]int {
	rng := rand.New(rand.NewPCG(seed, 3))
	out := make([][]int, m)
	for i := range out {
		out[i] = rng.Perm(n)[:1+rng.IntN(maxSize)]
	}
	return out
}

// TestCheckDivergedFollowsTheRule: on models of growing scale, CheckDiverged
// refuses exactly those whose mean log-likelihood on the baskets within
// their rank, computed here from the baskets directly, is below
// 2·ℓ₀ − DivergedMargin; an overflowing kernel is refused with ErrOverflow.
func TestCheckDivergedFollowsTheRule(t *testing.T) {
	const n, d = 40, 3
	held := divergeBaskets(n, 60, 9, 1) // some beyond the rank 2d = 6
	indep, err := Independent(divergeBaskets(n, 200, 4, 2), n)
	require.NoError(t, err)
	refused, accepted := 0, 0
	for _, scale := range []float64{1e-6, 1e-3, 0.1, 0.5, 1, 3, 10, 100, 1e4, 1e8} {
		m := ndpp.Random(n, d, 7, ndpp.RandomOptions{Scale: scale})
		var in [][]int
		for _, b := range held {
			if len(b) <= m.MaxRank() {
				in = append(in, b)
			}
		}
		require.NotEmpty(t, in)
		require.Less(t, len(in), len(held))
		ll, err := LogLikelihoodEps(context.Background(), m, in, 0)
		require.NoError(t, err)
		l0, err := LogLikelihoodEps(context.Background(), indep, in, 0)
		require.NoError(t, err)
		err = CheckDiverged(context.Background(), m, indep, held)
		if !(ll >= 2*l0-DivergedMargin) { // NaN too
			refused++
			var de *DivergedError
			require.ErrorAs(t, err, &de, "scale %g", scale)
			require.Contains(t, err.Error(), "training diverged")
		} else {
			accepted++
			require.NoError(t, err, "scale %g", scale)
		}
	}
	require.Positive(t, refused)
	require.Positive(t, accepted)

	// The independent-items model itself is accepted.
	require.NoError(t, CheckDiverged(context.Background(), indep, indep, held))
	// Without held-out baskets only the scale is checked.
	require.NoError(t, CheckDiverged(context.Background(), ndpp.Random(n, d, 7, ndpp.RandomOptions{Scale: 100}), nil, nil))

	// An overflowing kernel.
	v := make([]float64, n*d)
	c := make([]float64, d*d)
	for i := range v {
		v[i] = 1e200
	}
	huge, err := ndpp.NewFromRows(n, d, v, v, c)
	require.NoError(t, err)
	err = CheckDiverged(context.Background(), huge, indep, held)
	require.True(t, errors.Is(err, ndpp.ErrOverflow), "%v", err)
	var de *DivergedError
	require.ErrorAs(t, err, &de)
	require.ErrorIs(t, CheckDiverged(context.Background(), huge, nil, nil), ndpp.ErrOverflow)

	require.Error(t, CheckDiverged(context.Background(), nil, indep, held))
	require.ErrorContains(t, CheckDiverged(context.Background(), indep, nil, held), "independent-items model")
}
