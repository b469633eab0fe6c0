package ndpp

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

const gainTol = 1e-8 // relative to max(1, |s_j|)

func TestConditionalGainsMatchDeterminantRatios(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		d := 2 + int(seed%6)
		n := 4*d + 3
		diag := 0.0
		if seed > 40 {
			diag = 0.1 // with a diagonal, Y may be larger than 2d
		}
		m := Random(n, d, seed, RandomOptions{Shared: seed%4 == 0, Diag: diag})
		k := int(seed) % (2 * d) // 0..2d−1
		if diag > 0 {
			k = int(seed) % (n - 1)
		}
		y := make([]int, k)
		for i := range y {
			y[i] = (i*5 + int(seed)) % n
		}
		if k > 0 && m.CheckItems(y) != nil {
			continue
		}
		got := make([]float64, n)
		err := m.ConditionalGains(y, got)
		if err == ErrSingularCondition {
			continue
		}
		require.NoError(t, err)
		base := 0.0
		if k > 0 {
			base, _, _ = m.LogDet(y)
		}
		for j := 0; j < n; j++ {
			in := false
			for _, i := range y {
				in = in || i == j
			}
			if in {
				require.Zero(t, got[j])
				continue
			}
			// Brute force: det L_{Y+j} / det L_Y from the dense determinant.
			want := math.Exp(directLogDet(m, append(append([]int(nil), y...), j)) - base)
			if math.IsNaN(want) {
				want = 0
			}
			require.InDelta(t, want, got[j], gainTol*math.Max(1, math.Abs(want)), "seed %d j %d", seed, j)
		}
	}
}

func TestConditionalGainsErrors(t *testing.T) {
	m := Random(10, 2, 1, RandomOptions{})
	require.Error(t, m.ConditionalGains([]int{1}, make([]float64, 3)))
	require.ErrorContains(t, m.ConditionalGains([]int{1, 11}, make([]float64, 10)), "out of range")
	// Five items with d = 2: L_Y is singular.
	require.ErrorIs(t, m.ConditionalGains([]int{0, 1, 2, 3, 4}, make([]float64, 10)), ErrSingularCondition)
}

func TestTokens(t *testing.T) {
	m := Random(3, 2, 1, RandomOptions{})
	require.Nil(t, m.TokenVocab())
	require.Equal(t, "2", m.Token(2))
	v, _, _, c := m.Rows()
	mi, err := NewFromRows(3, 2, v, nil, c, WithIDs([]int64{10, 20, 30}))
	require.NoError(t, err)
	require.Equal(t, "20", mi.Token(1))
	row, ok := mi.TokenVocab().Lookup("30")
	require.True(t, ok)
	require.Equal(t, 2, row)
	_, err = NewFromRows(3, 2, v, nil, c, WithIDs([]int64{10, 20, 10}))
	require.ErrorContains(t, err, "duplicate id 10")
	voc, err := NewVocab([]string{"a", "b", "c"})
	require.NoError(t, err)
	mv, err := NewFromRows(3, 2, v, nil, c, WithVocab(voc))
	require.NoError(t, err)
	require.Equal(t, "c", mv.Token(2))
	_, err = NewVocab([]string{"a", "a"})
	require.Error(t, err)
}
