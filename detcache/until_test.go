package detcache

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
)

// TestSwapValuesUntil: with a stop that never says stop, SwapValuesUntil
// writes exactly SwapValues' values and returns true, calling stop once
// per value computed with a fresh LU (every value for Naive; Fast's
// fallbacks, which a set beyond the rank 2d forces); a stop that says stop
// at once ends it after the first fresh LU, returning false.
func TestSwapValuesUntil(t *testing.T) {
	const n, d, k = 60, 2, 12 // k ≫ 2d with a tiny diagonal: fresh LUs
	m := ndpp.Random(n, d, 5, ndpp.RandomOptions{Diag: 1e-9})
	for _, mk := range []func() (Oracle, error){
		func() (Oracle, error) { return NewFast(m, k) },
		func() (Oracle, error) { return NewNaive(m, k) },
	} {
		o, err := mk()
		require.NoError(t, err)
		_, naive := o.(*Naive)
		c := o.NewCand()
		for it := 0; it < k; it++ {
			o.Prepare(c, it)
			require.NoError(t, o.Add(c))
		}
		rng := rand.New(rand.NewPCG(5, 6))
		want, got := make([]ndpp.Value, k), make([]ndpp.Value, k)
		fresh := 0
		for range 30 {
			o.Prepare(c, k+rng.IntN(n-k))
			o.SwapValues(c, want)
			calls := 0
			fb := o.Stats().Fallbacks
			require.True(t, o.SwapValuesUntil(c, got, func() bool { calls++; return false }))
			require.Equal(t, want, got)
			if naive {
				require.Equal(t, k, calls)
			} else {
				require.Equal(t, int(o.Stats().Fallbacks-fb), calls)
			}
			fresh += calls
			if calls > 0 {
				calls = 0
				require.False(t, o.SwapValuesUntil(c, got, func() bool { calls++; return true }))
				require.Equal(t, 1, calls)
			}
		}
		require.Positive(t, fresh, "no fresh LU: the instance does not test the stop")
	}
}
