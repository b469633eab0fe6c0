package ndpp

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/blas"
)

// TestLogDetEquilibrated: on a set's kernel matrix and squared norms it
// gives the direct log-determinant (and LogDet's bits), zero for an item
// of norm zero, and reports overflow (not zero) for a norm or an entry
// beyond float64.
func TestLogDetEquilibrated(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		d := 1 + int(seed%5)
		m := Random(3*d, d, seed, RandomOptions{Diag: float64(seed % 2)})
		items := []int{0, 1, 3*d - 1}[:min(3, m.MaxRank())]
		k := len(items)
		a, norm2 := make([]float64, k*k), make([]float64, k)
		m.KernelInto(a, items)
		for p, it := range items {
			norm2[p] = blas.Dot(m.ItemV(it), m.ItemV(it)) + blas.Dot(m.ItemB(it), m.ItemB(it)) + m.ItemDiag(it)
		}
		got, sign, ok := LogDetEquilibrated(a, norm2, k)
		require.True(t, ok)
		want, wsign, err := m.LogDet(items)
		require.NoError(t, err)
		require.Equal(t, wsign, sign, "seed %d", seed)
		require.Equal(t, math.Float64bits(want), math.Float64bits(got), "seed %d: LogDet is this computation", seed)
		if direct := directLogDet(m, items); sign == 1 && direct > -30 {
			require.InDelta(t, direct, got, logDetTol*math.Max(1, math.Abs(direct)), "seed %d", seed)
		}
	}

	ld, sign, ok := LogDetEquilibrated([]float64{1, 0, 0, 0}, []float64{1, 0}, 2)
	require.True(t, ok)
	require.Equal(t, 0.0, sign)
	require.True(t, math.IsInf(ld, -1))

	_, _, ok = LogDetEquilibrated([]float64{1, 0, 0, 1}, []float64{1, math.Inf(1)}, 2)
	require.False(t, ok, "an infinite norm is an overflow, not a zero")
	_, _, ok = LogDetEquilibrated([]float64{1, math.Inf(1), 0, 1}, []float64{1, 1}, 2)
	require.False(t, ok, "an infinite entry is an overflow, not a zero")
	_, _, ok = LogDetEquilibrated([]float64{1, 0, 0, 1}, []float64{1, math.NaN()}, 2)
	require.False(t, ok, "a NaN norm is an overflow, not a zero")
}
