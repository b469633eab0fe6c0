package detcache

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
	"github.com/ndpp-go/ndpp/ndpp"
)

// illModel returns a Gaussian model damaged in one of several ways that
// make kernel submatrices singular or ill-conditioned.
func illModel(t testing.TB, seed uint64, n, d int, kind int) *ndpp.Model {
	t.Helper()
	base := ndpp.Random(n, d, seed, ndpp.RandomOptions{BlockDiagonal: kind%2 == 1})
	v0, b0, _, c := base.Rows()
	v := append([]float64(nil), v0...)
	b := append([]float64(nil), b0...)
	rng := rand.New(rand.NewPCG(seed, 11))
	switch kind % 6 {
	case 0, 1: // near-duplicates of item 0..3 at several distances
		for i := 4; i < n; i += 3 {
			src := rng.IntN(4)
			delta := []float64{0, 1e-14, 1e-10, 1e-7, 1e-4}[rng.IntN(5)]
			for l := 0; l < d; l++ {
				v[i*d+l] = v[src*d+l] + delta*rng.NormFloat64()
				b[i*d+l] = b[src*d+l] + delta*rng.NormFloat64()
			}
		}
	case 2: // items in the span of the first two (low effective rank)
		for i := 2; i < n; i += 2 {
			x, y := rng.NormFloat64(), rng.NormFloat64()
			for l := 0; l < d; l++ {
				v[i*d+l] = x*v[l] + y*v[d+l]
				b[i*d+l] = x*b[l] + y*b[d+l]
			}
		}
	case 3: // zero items and wildly scaled items
		for i := 0; i < n; i++ {
			f := []float64{0, 1e-8, 1, 1, 1e8}[rng.IntN(5)]
			for l := 0; l < d; l++ {
				v[i*d+l] *= f
				b[i*d+l] *= f
			}
		}
	case 4: // nearly symmetric kernel: tiny C
		cc := append([]float64(nil), c...)
		for i := range cc {
			cc[i] *= 1e-9
		}
		c = cc
	case 5: // V tiny against B: the skew part dominates
		for i := range v {
			v[i] *= 1e-6
		}
	}
	m, err := ndpp.NewFromRows(n, d, v, b, c)
	require.NoError(t, err)
	return m
}

// TestFastIllConditioned compares every value of random operation
// sequences with a fresh LU on damaged models (illModel), without a
// diagonal and with one (ndpptest.DiagScales, some partial; k up to 3d + 4).
func TestFastIllConditioned(t *testing.T) {
	sequences := 300
	if testing.Short() || raceEnabled {
		sequences = 60
	}
	for _, withD := range []bool{false, true} {
		maxErr := 0.0
		var flagDiff, compared, byExact int
		var fallbacks, evals int64
		maxExact := 0.0
		for seed := uint64(1); seed <= uint64(sequences); seed++ {
			rng := rand.New(rand.NewPCG(seed, 5))
			d := 2 + rng.IntN(8)
			k := 1 + rng.IntN(min(2*d, 12))
			if withD && rng.IntN(2) == 0 {
				k = 2*d + 1 + rng.IntN(d+4) // beyond the rank bound of the low-rank part
			}
			n := k + 10 + rng.IntN(20)
			kind := int(seed % 6)
			m := illModel(t, seed, n, d, kind)
			label := fmt.Sprintf("seed %d kind %d (k %d, d %d, n %d)", seed, kind, k, d, n)
			if withD {
				scale, partial := ndpptest.DiagCase(seed)
				m = withDiag(t, m, scale, seed, partial)
				label += fmt.Sprintf(" diagonal %g partial %v", scale, partial)
			}
			k = min(k, m.MaxRank())
			o, err := NewFast(m, k)
			require.NoError(t, err)
			r := newOpRun(t, o, seed, logTolIll)
			r.ck.label = label
			for i := 0; i < 2*k+10; i++ {
				r.step()
			}
			maxErr = math.Max(maxErr, r.ck.maxErr)
			flagDiff += r.ck.flagDiff
			byExact += r.ck.byExact
			maxExact = math.Max(maxExact, r.ck.maxExactErr)
			compared += r.ck.compared
			st := o.Stats()
			fallbacks += st.Fallbacks
			evals += st.Evals
		}
		t.Logf("diagonal %v: %d ill-conditioned sequences, %d values compared: max |Δlog| = %.3g (tol %g), zero-flag differences near singularity %d, fallbacks %d of %d evals",
			withD, sequences, compared, maxErr, logTolIll, flagDiff, fallbacks, evals)
		t.Logf("diagonal %v: %d values where the oracle and the fresh LU differ by more than tol, judged against the exact value: max oracle error there %.3g", withD, byExact, maxExact)
		require.Positive(t, fallbacks, "the fallback path was never exercised")
	}
}

// TestFastMatchesNaive drives both oracles through the same decisions and
// compares every value, the solutions and the evaluation counts, on models
// without a diagonal and (the second half) with one. Naive's values are
// fresh LUs; Fast's are compared with them as the sequence tests do
// (checker: within the tolerance, or within the LU's own error of the exact
// value, and zero flags differing only on numerically singular sets).
func TestFastMatchesNaive(t *testing.T) {
	sequences, kBeyond := 150, 12
	if testing.Short() || raceEnabled {
		sequences, kBeyond = 30, 8
	}
	maxErr := 0.0
	var flagDiff, byExact int
	for seed := uint64(1); seed <= uint64(2*sequences); seed++ {
		rng := rand.New(rand.NewPCG(seed, 9))
		d := 2 + rng.IntN(12)
		k := 1 + rng.IntN(min(2*d, 8))
		n := k + 5 + rng.IntN(30)
		m := ndpp.Random(n, d, seed, ndpp.RandomOptions{Shared: seed%2 == 0})
		label := fmt.Sprintf("seed %d (k %d, d %d, n %d)", seed, k, d, n)
		if seed > uint64(sequences) {
			scale, partial := ndpptest.DiagCase(seed)
			m = withDiag(t, m, scale, seed, partial)
			if rng.IntN(2) == 0 {
				k = min(2*d+1+rng.IntN(d+4), n-3, kBeyond) // beyond 2d for small d
			}
			label += fmt.Sprintf(" diagonal %g partial %v k %d", scale, partial, k)
		}
		k = min(k, m.MaxRank())
		f, err := NewFast(m, k)
		require.NoError(t, err)
		nv, err := NewNaive(m, k)
		require.NoError(t, err)
		ck := &checker{t: t, m: m, tol: logTolRandom, label: label}
		fx, fy, nx, ny := f.NewCand(), f.NewCand(), nv.NewCand(), nv.NewCand()
		fd, nd := make([]ndpp.Value, k), make([]ndpp.Value, k)
		same := func(a, b ndpp.Value, set []int, what string) {
			want := ndpp.ZeroValue
			if !hasDup(set) {
				want = freshValue(t, m, set)
			}
			require.Equal(t, want, b, "%s %s: naive value of %v", label, what, set)
			ck.check(a, set, what)
		}
		swapped := func(j, x int) []int {
			s := append([]int(nil), f.Items()...)
			s[j] = x
			return s
		}
		for step := 0; step < 3*k+10; step++ {
			tx, ty := rng.IntN(n), rng.IntN(n)
			f.Prepare(fx, tx)
			f.Prepare(fy, ty)
			nv.Prepare(nx, tx)
			nv.Prepare(ny, ty)
			same(f.AddValue(fx), nv.AddValue(nx), append(append([]int(nil), f.Items()...), tx), "add")
			f.SwapValues(fx, fd)
			nv.SwapValues(nx, nd)
			for j := 0; j < f.Len(); j++ {
				same(fd[j], nd[j], swapped(j, tx), "swap")
			}
			best, ba, bb := ndpp.ZeroValue, -1, -1
			for a := 0; a < f.Len(); a++ {
				for b := a + 1; b < f.Len(); b++ {
					v := nv.PairSwapValue(nx, ny, a, b)
					set := swapped(a, tx)
					set[b] = ty
					same(f.PairSwapValue(fx, fy, a, b), v, set, "pair")
					if v.Greater(best) {
						best, ba, bb = v, a, b
					}
				}
			}
			switch {
			case f.Len() < k:
				e1, e2 := f.Add(fx), nv.Add(nx)
				require.Equal(t, e1 == nil, e2 == nil)
			case ba >= 0 && rng.IntN(2) == 0:
				e1, e2 := f.PairSwap(ba, bb, fx, fy), nv.PairSwap(ba, bb, nx, ny)
				require.Equal(t, e1 == nil, e2 == nil)
			case f.Len() > 0:
				j := rng.IntN(f.Len())
				e1, e2 := f.Swap(j, fx), nv.Swap(j, nx)
				require.Equal(t, e1 == nil, e2 == nil)
			}
			require.Equal(t, nv.Items(), f.Items())
			same(f.Value(), nv.Value(), f.Items(), "value of S")
			require.Equal(t, nv.Evals(), f.Evals())
			require.Equal(t, nv.Stats().Updates, f.Stats().Updates)
		}
		maxErr = math.Max(maxErr, ck.maxErr)
		flagDiff += ck.flagDiff
		byExact += ck.byExact
	}
	t.Logf("%d sequences (half with a diagonal): max |Δlog| fast vs naive = %.3g; %d zero flags differ on numerically singular sets; %d values judged against the exact value",
		2*sequences, maxErr, flagDiff, byExact)
}

// TestFastLongRunDrift applies many accepted swaps and checks that the
// periodic refactors find little drift, without and with a diagonal (there
// also with k > 2d).
func TestFastLongRunDrift(t *testing.T) {
	for _, sz := range []struct {
		k, d int
		diag float64
	}{{5, 5, 0}, {20, 12, 0}, {40, 40, 0}, {20, 6, 1e-2}, {30, 10, 1}, {12, 40, 1e-6}} {
		m := ndpp.Random(400, sz.d, uint64(sz.k), ndpp.RandomOptions{Diag: sz.diag})
		o, err := NewFast(m, sz.k)
		require.NoError(t, err)
		c := o.NewCand()
		dst := make([]ndpp.Value, sz.k)
		rng := rand.New(rand.NewPCG(uint64(sz.d), 1))
		for i := 0; i < sz.k; i++ {
			o.Prepare(c, i)
			require.NoError(t, o.Add(c))
		}
		swaps := 0
		for t0 := 0; swaps < 300; t0++ {
			o.Prepare(c, sz.k+rng.IntN(400-sz.k))
			o.SwapValues(c, dst)
			j := rng.IntN(sz.k)
			if c.dup < 0 && dst[j].Greater(ndpp.ZeroValue) && dst[j].Log > o.Value().Log-3 {
				require.NoError(t, o.Swap(j, c))
				swaps++
			}
		}
		st := o.Stats()
		want := freshValue(t, m, o.Items())
		t.Logf("k=%d d=%d diagonal %g: %d swaps, %d refactors, %d fallbacks, max drift M⁻¹ %.3g, log det %.3g; final |Δlog| %.3g",
			sz.k, sz.d, sz.diag, swaps, st.Refactors, st.Fallbacks, st.MaxDrift, st.MaxLogDetDrift, math.Abs(want.Log-o.Value().Log))
		require.GreaterOrEqual(t, st.Refactors, int64(300/RefactorEvery))
		require.Less(t, st.MaxDrift, driftTol)
		require.Less(t, st.MaxLogDetDrift, logTolRandom)
		require.InDelta(t, want.Log, o.Value().Log, logTolRandom)
	}
}

// driftTol bounds the relative drift of M⁻¹ between refactors on Gaussian
// models.
const driftTol = 1e-8

func TestFastEdgeCases(t *testing.T) {
	m := ndpp.Random(30, 3, 4, ndpp.RandomOptions{})
	for _, mk := range []func(int) (Oracle, error){
		func(k int) (Oracle, error) { return NewFast(m, k) },
		func(k int) (Oracle, error) { return NewNaive(m, k) },
	} {
		// k = 1.
		o, err := mk(1)
		require.NoError(t, err)
		require.Equal(t, ndpp.Value{}, o.Value())
		c, c2 := o.NewCand(), o.NewCand()
		dst := make([]ndpp.Value, 1)
		o.Prepare(c, 5)
		o.SwapValues(c, dst) // |S| = 0: nothing to write
		require.Equal(t, freshValue(t, m, []int{5}), o.AddValue(c))
		require.NoError(t, o.Add(c))
		o.Prepare(c2, 6)
		require.ErrorIs(t, o.Add(c2), ErrFull)
		o.SwapValues(c2, dst)
		require.InDelta(t, freshValue(t, m, []int{6}).Log, dst[0].Log, logTolRandom)
		require.NoError(t, o.Swap(0, c2))
		require.Equal(t, []int{6}, o.Items())
		require.Panics(t, func() { o.PairSwapValue(c, c2, 0, 1) })
		require.ErrorContains(t, o.Swap(1, c), "out of range")

		// k = 2d = 6: S ∪ {t} is always zero, swaps and pairs are not.
		o, err = mk(6)
		require.NoError(t, err)
		c, c2 = o.NewCand(), o.NewCand()
		for i := 0; i < 6; i++ {
			o.Prepare(c, i)
			require.NoError(t, o.Add(c))
		}
		require.InDelta(t, freshValue(t, m, o.Items()).Log, o.Value().Log, logTolRandom)
		o.Prepare(c, 10)
		o.Prepare(c2, 11)
		require.Equal(t, ndpp.ZeroValue, o.AddValue(c))
		dst = make([]ndpp.Value, 6)
		o.SwapValues(c, dst)
		for j := range dst {
			set := append([]int(nil), o.Items()...)
			set[j] = 10
			require.InDelta(t, freshValue(t, m, set).Log, dst[j].Log, logTolRandom, "j %d", j)
		}
		v := o.PairSwapValue(c, c2, 1, 4)
		require.InDelta(t, freshValue(t, m, []int{0, 10, 2, 3, 11, 5}).Log, v.Log, logTolRandom)
		require.NoError(t, o.PairSwap(1, 4, c, c2))
		require.Equal(t, []int{0, 10, 2, 3, 11, 5}, o.Items())
		require.InDelta(t, v.Log, o.Value().Log, logTolRandom)

		// Errors for bad changes; a stale Cand is refreshed on use.
		require.ErrorContains(t, o.PairSwap(2, 2, c, c2), "positions are equal")
		require.ErrorContains(t, o.PairSwap(0, 9, c, c2), "out of range")
		o.Prepare(c, 12)
		o.Prepare(c2, 2)                                                          // in S at position 2
		require.ErrorContains(t, o.PairSwap(0, 1, c, c2), "repeats an item of S") // 2 stays at position 2
		require.NoError(t, o.PairSwap(0, 2, c, c2))                               // 2 moves onto itself
		require.Equal(t, []int{12, 10, 2, 3, 11, 5}, o.Items())
		o.Prepare(c, 20)
		stale := o.NewCand()
		o.Prepare(stale, 21)
		require.NoError(t, o.Swap(3, c))
		require.InDelta(t, freshValue(t, m, []int{12, 10, 2, 21, 11, 5}).Log, func() ndpp.Value {
			o.SwapValues(stale, dst)
			return dst[3]
		}().Log, logTolRandom)
		o.Reset()
		require.Equal(t, 0, o.Len())
		require.Equal(t, ndpp.Value{}, o.Value())
		require.Panics(t, func() { o.Prepare(c, 30) }, "item out of range")
	}
	// A Cand of one oracle used with another.
	f1, _ := NewFast(m, 2)
	f2, _ := NewFast(m, 2)
	c := f1.NewCand()
	f1.Prepare(c, 1)
	require.Panics(t, func() { f2.AddValue(c) })
	n1, _ := NewNaive(m, 2)
	require.Panics(t, func() { n1.Prepare(c, 1); f1.AddValue(c) })
}

// TestFastEdgeCasesDiag: with a diagonal the capacity may exceed 2d and sets
// larger than 2d have non-zero values; with a partial diagonal the rank
// bound still holds on the items without one: at |S| = 2d (no diagonal on
// S) adding t multiplies det L_S by exactly δ_t (the low-rank part's Schur
// complement is zero), so S ∪ {t} is zero for δ_t = 0 and not otherwise.
func TestFastEdgeCasesDiag(t *testing.T) {
	m := ndpp.Random(30, 3, 4, ndpp.RandomOptions{Diag: 0.5})
	for _, mk := range []func(int) (Oracle, error){
		func(k int) (Oracle, error) { return NewFast(m, k) },
		func(k int) (Oracle, error) { return NewNaive(m, k) },
	} {
		o, err := mk(9) // > 2d = 6
		require.NoError(t, err)
		c, c2 := o.NewCand(), o.NewCand()
		for i := 0; i < 9; i++ {
			o.Prepare(c, i)
			v := o.AddValue(c)
			want := freshValue(t, m, append(append([]int(nil), o.Items()...), i))
			require.False(t, v.Zero, "|S| = %d: S ∪ {t} zero", i)
			require.InDelta(t, want.Log, v.Log, logTolRandom, "|S| = %d", i)
			require.NoError(t, o.Add(c))
			require.InDelta(t, want.Log, o.Value().Log, logTolRandom)
		}
		o.Prepare(c, 20)
		require.ErrorIs(t, o.Add(c), ErrFull)
		dst := make([]ndpp.Value, 9)
		o.SwapValues(c, dst)
		for j := range dst {
			set := append([]int(nil), o.Items()...)
			set[j] = 20
			require.InDelta(t, freshValue(t, m, set).Log, dst[j].Log, logTolRandom, "swap %d", j)
		}
		o.Prepare(c2, 21)
		for a := 0; a < 9; a++ {
			for b := a + 1; b < 9; b++ {
				set := append([]int(nil), o.Items()...)
				set[a], set[b] = 20, 21
				require.InDelta(t, freshValue(t, m, set).Log, o.PairSwapValue(c, c2, a, b).Log, logTolRandom, "pair (%d, %d)", a, b)
			}
		}
		require.NoError(t, o.PairSwap(2, 7, c, c2))
		require.InDelta(t, freshValue(t, m, o.Items()).Log, o.Value().Log, logTolRandom)
	}

	// Partial diagonal: items 0..9 have none, the others δ = 0.25·(i − 9);
	// d = 4 (a skew C of odd order is singular and caps the rank at 2d − 1).
	v, b, _, c := ndpp.Random(30, 4, 4, ndpp.RandomOptions{}).Rows()
	delta := make([]float64, 30)
	for i := 10; i < 30; i++ {
		delta[i] = 0.25 * float64(i-9)
	}
	mp, err := ndpp.NewFromRows(30, 4, v, b, c, ndpp.WithDiag(delta))
	require.NoError(t, err)
	require.Equal(t, 30, mp.MaxRank())
	for _, mk := range []func(int) (Oracle, error){
		func(k int) (Oracle, error) { return NewFast(mp, k) },
		func(k int) (Oracle, error) { return NewNaive(mp, k) },
	} {
		o, err := mk(10)
		require.NoError(t, err)
		x, y := o.NewCand(), o.NewCand()
		for i := 0; i < 8; i++ {
			o.Prepare(x, i)
			require.NoError(t, o.Add(x))
		}
		base := o.Value()
		require.False(t, base.Zero)
		o.Prepare(x, 9) // δ = 0: L_{S+9} has rank 2d = 8
		require.Equal(t, ndpp.ZeroValue, o.AddValue(x), "%T: S ∪ {9} without a diagonal entry", o)
		for _, it := range []int{10, 15, 29} {
			o.Prepare(x, it)
			require.InDelta(t, base.Log+math.Log(delta[it]), o.AddValue(x).Log, logTolRandom, "S ∪ {%d}", it)
		}
		// Pairs and swaps of items with and without a diagonal entry.
		dst := make([]ndpp.Value, 8)
		for _, p := range [][2]int{{8, 9}, {9, 12}, {12, 20}} {
			o.Prepare(x, p[0])
			o.Prepare(y, p[1])
			o.SwapValues(y, dst)
			for j := range dst {
				set := append([]int(nil), o.Items()...)
				set[j] = p[1]
				want := freshValue(t, mp, set)
				if want.Zero {
					require.True(t, dst[j].Zero, "swap %d → %d", j, p[1])
				} else {
					require.InDelta(t, want.Log, dst[j].Log, logTolRandom, "swap %d → %d", j, p[1])
				}
			}
			for a := 0; a < 8; a++ {
				for bb := a + 1; bb < 8; bb++ {
					set := append([]int(nil), o.Items()...)
					set[a], set[bb] = p[0], p[1]
					want, got := freshValue(t, mp, set), o.PairSwapValue(x, y, a, bb)
					require.Equal(t, want.Zero, got.Zero, "pair %v at (%d, %d)", p, a, bb)
					if !want.Zero {
						require.InDelta(t, want.Log, got.Log, logTolRandom, "pair %v at (%d, %d)", p, a, bb)
					}
				}
			}
		}
		// Grow beyond 2d with items that have a diagonal entry.
		for _, it := range []int{12, 25} {
			o.Prepare(x, it)
			want := freshValue(t, mp, append(append([]int(nil), o.Items()...), it))
			require.InDelta(t, want.Log, o.AddValue(x).Log, logTolRandom)
			require.NoError(t, o.Add(x))
			require.InDelta(t, want.Log, o.Value().Log, logTolRandom)
		}
	}
}

// TestFastNoAllocsInHotPath: Prepare, AddValue, SwapValues and
// PairSwapValue allocate nothing, including values that take the fallback
// (a fresh LU in the oracle's own buffers).
func TestFastNoAllocsInHotPath(t *testing.T) {
	// The last case is full rank (k = 2d; d even, as a skew C of odd order
	// is singular and caps the rank at 2d − 1), where some values take the
	// fallback; the fourth is singular (direct mode: every value does).
	// The last two have a diagonal and k > 2d.
	for _, sz := range []struct {
		k, d, fill int
		diag       float64
	}{{8, 10, 8, 0}, {16, 20, 9, 0}, {12, 6, 12, 0}, {6, 3, 6, 0}, {12, 4, 12, 0.1}, {10, 2, 10, 1e-9}} {
		m := ndpp.Random(200, sz.d, 1, ndpp.RandomOptions{Diag: sz.diag})
		o, err := NewFast(m, sz.k)
		require.NoError(t, err)
		x, y := o.NewCand(), o.NewCand()
		for i := 0; i < sz.fill; i++ {
			o.Prepare(x, i)
			require.NoError(t, o.Add(x))
		}
		dst := make([]ndpp.Value, sz.k)
		item := sz.k
		allocs := testing.AllocsPerRun(100, func() {
			item = sz.k + (item+1)%(200-sz.k)
			o.Prepare(x, item)
			o.Prepare(y, sz.k+(item*7)%(200-sz.k))
			_ = o.AddValue(x)
			o.SwapValues(x, dst)
			for a := 0; a < o.Len(); a++ {
				for b := a + 1; b < o.Len(); b++ {
					_ = o.PairSwapValue(x, y, a, b)
				}
			}
		})
		require.Zero(t, allocs, "k=%d d=%d |S|=%d diagonal %g", sz.k, sz.d, sz.fill, sz.diag)
		t.Logf("k=%d d=%d |S|=%d diagonal %g: 0 allocs, %d fallbacks of %d values, direct mode %v",
			sz.k, sz.d, sz.fill, sz.diag, o.Stats().Fallbacks, o.Stats().Evals, o.Direct())
	}
}

// TestFastRefreshMatchesPrepare: a stash of Cands held across accepted
// changes and refreshed (incrementally after one change) equals freshly
// prepared Cands bit for bit, so values do not depend on how a Cand was
// brought up to date (models without and with a diagonal).
func TestFastRefreshMatchesPrepare(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		rng := rand.New(rand.NewPCG(seed, 21))
		d := 2 + rng.IntN(8)
		k := 1 + rng.IntN(min(2*d, 10))
		n := k + 20
		m := ndpp.Random(n, d, seed, ndpp.RandomOptions{})
		if seed > 40 { // with a diagonal, k up to 2d + 3
			scale, partial := ndpptest.DiagCase(seed)
			m = withDiag(t, m, scale, seed, partial)
			k = 1 + rng.IntN(2*d+3)
		}
		o, err := NewFast(m, k)
		require.NoError(t, err)
		stash := make([]*Cand, 4)
		for i := range stash {
			stash[i] = o.NewCand()
			o.Prepare(stash[i], rng.IntN(n))
		}
		fresh, c := o.NewCand(), o.NewCand()
		dst := make([]ndpp.Value, k)
		incremental := 0
		for step := 0; step < 3*k+5; step++ {
			o.Prepare(c, rng.IntN(n))
			switch {
			case o.Len() < k:
				_ = o.Add(c)
			case o.Len() >= 2 && rng.IntN(3) == 0:
				_ = o.PairSwap(0, o.Len()-1, c, stash[rng.IntN(len(stash))])
			default:
				_ = o.Swap(rng.IntN(o.Len()), c)
			}
			if rng.IntN(3) == 0 {
				continue // let some Cands fall two changes behind
			}
			for _, s := range stash {
				if s.version+1 == o.version {
					incremental++
				}
				sv, shas := s.version, s.hasUW
				o.Refresh(s)
				o.Prepare(fresh, s.item)
				kk := o.Len()
				require.Equal(t, fresh.dup, s.dup)
				if o.Direct() {
					continue // no products in direct mode
				}
				require.Equal(t, fresh.u[:kk], s.u[:kk], "seed %d step %d: version %d→%d hasUW %v", seed, step, sv, o.version, shas)
				require.Equal(t, fresh.w[:kk], s.w[:kk])
				require.Equal(t, fresh.p[:kk], s.p[:kk])
				require.Equal(t, fresh.q[:kk], s.q[:kk])
				require.Equal(t, []float64{fresh.s, fresh.smag, fresh.serr, fresh.pn, fresh.qn}, []float64{s.s, s.smag, s.serr, s.pn, s.qn})
				o.SwapValues(s, dst)
			}
		}
		require.Positive(t, incremental)
	}
}
