package ndpp

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestModelAccessorsPanicNamingTheBadIndex: out-of-range indices and short
// destinations are programmer errors whose panics name the package, the
// method and the bad argument (not a runtime slice-bounds message).
func TestModelAccessorsPanicNamingTheBadIndex(t *testing.T) {
	m := Random(5, 3, 1, RandomOptions{Diag: 0.5})
	panicsWith := func(msg string, f func()) {
		t.Helper()
		defer func() {
			t.Helper()
			r := recover()
			require.NotNil(t, r, "no panic, want %q", msg)
			var s string
			switch v := r.(type) {
			case error:
				s = v.Error()
			case string:
				s = v
			}
			require.Equal(t, msg, s)
		}()
		f()
	}
	panicsWith("ndpp: Model.Entry(-1, 0): index out of range [0, 5)", func() { m.Entry(-1, 0) })
	panicsWith("ndpp: Model.Entry(0, 5): index out of range [0, 5)", func() { m.Entry(0, 5) })
	panicsWith("ndpp: Model.ItemV: item 5 out of range [0, 5)", func() { m.ItemV(5) })
	panicsWith("ndpp: Model.ItemV: item -1 out of range [0, 5)", func() { m.ItemV(-1) })
	panicsWith("ndpp: Model.ItemB: item 5 out of range [0, 5)", func() { m.ItemB(5) })
	panicsWith("ndpp: Model.ItemBC: item 7 out of range [0, 5)", func() { m.ItemBC(7) })
	panicsWith("ndpp: Model.ItemDiag: item 5 out of range [0, 5)", func() { m.ItemDiag(5) })
	panicsWith("ndpp: Model.Token: item -2 out of range [0, 5)", func() { m.Token(-2) })
	panicsWith("ndpp: Model.KernelInto: dst has length 3; want at least 2×2 = 4", func() { m.KernelInto(make([]float64, 3), []int{0, 1}) })
	panicsWith("ndpp: Model.KernelInto: item 9 (position 1) out of range [0, 5)", func() { m.KernelInto(make([]float64, 4), []int{0, 9}) })
	voc, err := NewVocab([]string{"a", "b"})
	require.NoError(t, err)
	panicsWith("ndpp: Vocab.Token: row 2 out of range [0, 2)", func() { voc.Token(2) })
	panicsWith("ndpp: Random needs n, d ≥ 1", func() { Random(0, 3, 1, RandomOptions{}) })

	// In range, the accessors agree with the kernel.
	a := make([]float64, 4)
	m.KernelInto(a, []int{4, 0})
	require.Equal(t, []float64{m.Entry(4, 4), m.Entry(4, 0), m.Entry(0, 4), m.Entry(0, 0)}, a)
}

// TestOverflowingKernelIsReportedNotZero: a model with finite but huge
// parameters is flagged by CheckScale, and its determinants, likelihoods
// and conditional gains are errors wrapping ErrOverflow rather than a zero
// determinant, NaN or −Inf.
func TestOverflowingKernelIsReportedNotZero(t *testing.T) {
	for _, diag := range []float64{0, 0.3} {
		huge := Random(20, 3, 2, RandomOptions{Scale: 1e200, Diag: diag})
		require.ErrorIs(t, huge.CheckScale(), ErrOverflow)
		require.ErrorContains(t, huge.CheckScale(), "exceeds 1e+150")

		_, _, err := huge.LogDet([]int{1, 2})
		require.ErrorIs(t, err, ErrOverflow)
		require.ErrorContains(t, err, "[1 2]")
		_, _, err = huge.LogDetEps([]int{3}, 1e-5)
		require.ErrorIs(t, err, ErrOverflow)
		_, err = huge.LogDets([][]int{{0}, {1, 2}}, 2)
		require.ErrorIs(t, err, ErrOverflow)
		require.ErrorContains(t, err, "basket 0")
		_, err = huge.LogLikelihood([][]int{{0}})
		require.ErrorIs(t, err, ErrOverflow)
		dst := make([]float64, huge.N())
		require.ErrorIs(t, huge.ConditionalGains([]int{4}, dst), ErrOverflow)
		errs := make([]error, 2)
		require.NoError(t, huge.ConditionalGainsBatch([][]int{{4}, {5, 6}}, [][]float64{dst, make([]float64, huge.N())}, errs))
		require.ErrorIs(t, errs[0], ErrOverflow)
		require.ErrorIs(t, errs[1], ErrOverflow)
		norm := huge.LogNormalizer()
		require.True(t, math.IsNaN(norm) || math.IsInf(norm, 0), "normaliser %v of an overflowing kernel", norm)

		// Within MaxKernelScale, values are finite and exact: L scales by
		// s², so log det L_S grows by 2|S|·log s.
		const s = 1e70
		big := Random(20, 3, 2, RandomOptions{Scale: s, Diag: diag * s * s})
		unit := Random(20, 3, 2, RandomOptions{Scale: 1, Diag: diag})
		require.NoError(t, big.CheckScale())
		require.NoError(t, unit.CheckScale())
		for _, set := range [][]int{{0}, {3, 7}, {1, 5, 9, 11}} {
			ld, sign, err := big.LogDet(set)
			require.NoError(t, err)
			want, wsign, err := unit.LogDet(set)
			require.NoError(t, err)
			require.Equal(t, wsign, sign)
			require.InDelta(t, want+2*float64(len(set))*math.Log(s), ld, 1e-9*math.Abs(ld), "set %v", set)
		}
		ll, err := big.LogLikelihood([][]int{{0, 1}, {2}})
		require.NoError(t, err)
		require.False(t, math.IsNaN(ll) || math.IsInf(ll, 0), "LL %v", ll)
		require.NoError(t, big.ConditionalGains([]int{2}, dst))
	}
	require.False(t, errors.Is(ErrSingularCondition, ErrOverflow))
}
