package detcache

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/internal/f64"
	"github.com/ndpp-go/ndpp/internal/ndpptest"
	"github.com/ndpp-go/ndpp/ndpp"
)

// Tolerances on |Fast's log value − fresh-LU log det| (the relative error of
// the determinant).
const (
	// logTolRandom: Gaussian models. Fast returns a value from the
	// identities only when its first-order error bound is below
	// FallbackErr (1e-7) of the value; the bound is pessimistic, and the
	// fresh LU carries an error of its own (about κ·ε).
	logTolRandom = 1e-6
	// logTolIll: models with near-duplicate, tiny and huge items, where the
	// fresh LU's own error grows with the condition number.
	logTolIll = 1e-5
)

// checker compares oracle values with fresh-LU values and accumulates the
// worst errors.
type checker struct {
	t        testing.TB
	m        *ndpp.Model
	tol      float64
	maxErr   float64
	compared int
	// zero-flag disagreements, allowed only near the zero threshold (see
	// nearZero)
	flagDiff int
	label    string // names the run in failure messages
	// values judged against the exact determinant, and the oracle's
	// largest error there
	byExact     int
	maxExactErr float64
}

// check compares v (the value of set from an oracle) with a fresh LU.
func (ck *checker) check(v ndpp.Value, set []int, what string) {
	ck.t.Helper()
	want := ndpp.Value{} // the empty set
	if hasDup(set) {
		want = ndpp.ZeroValue
	} else if len(set) > 0 {
		want = freshValue(ck.t, ck.m, set)
	}
	ck.compared++
	require.False(ck.t, math.IsNaN(v.Log), "%s: NaN value", what)
	require.True(ck.t, v.Zero || !math.IsInf(v.Log, 0), "%s %s: non-zero value with Log %v", ck.label, what, v.Log)
	if v.Zero != want.Zero {
		// Either rule may call a set zero that the other scores: this is
		// allowed only when the set is numerically singular by a looser
		// test (a relative condition estimate the zero rules do not reach).
		nz := v
		if v.Zero {
			nz = want
		}
		require.True(ck.t, nearZero(ck.m, set), "%s %s: zero flags differ (oracle %+v, fresh %+v) on set %v", ck.label, what, v, want, set)
		_ = nz
		ck.flagDiff++
		return
	}
	if v.Zero {
		require.True(ck.t, math.IsInf(v.Log, -1), "%s: zero value with Log %v", what, v.Log)
		return
	}
	e := math.Abs(v.Log - want.Log)
	if e > ck.tol {
		// The fresh LU has an error of its own on ill-conditioned sets, of
		// order k·κ·ε: judge the oracle against the exact value (256-bit
		// arithmetic), allowing condFactor·k·κ·ε with κ the 1-norm
		// condition number of the set's equilibrated kernel.
		exact := bigLogDet(ck.m, set)
		ef := math.Abs(v.Log - exact)
		allowed := condFactor * float64(len(set)) * eps / setRcond(ck.m, set)
		ck.byExact++
		ck.maxExactErr = math.Max(ck.maxExactErr, ef)
		require.LessOrEqual(ck.t, ef, math.Max(ck.tol, allowed),
			"%s %s: log value %v, fresh %v, exact %v, set %v", ck.label, what, v.Log, want.Log, exact, set)
		return
	}
	ck.maxErr = math.Max(ck.maxErr, e)
}

// condFactor scales the backward-stability bound k·κ·ε on the relative
// error of a determinant from an LU.
const condFactor = 16

// nearZeroRcond: sets whose equilibrated kernel has a reciprocal condition
// number below this count as numerically singular for flag comparisons.
const nearZeroRcond = 1e-10

// nearZero reports whether the set's equilibrated kernel has reciprocal
// condition number below nearZeroRcond (or a repeated item).
func nearZero(m *ndpp.Model, set []int) bool {
	return !(setRcond(m, set) >= nearZeroRcond)
}

// setRcond returns the reciprocal 1-norm condition number of the set's
// equilibrated kernel (0 for a repeated item or a singular kernel).
func setRcond(m *ndpp.Model, set []int) float64 {
	if hasDup(set) || len(set) > m.MaxRank() {
		return 0
	}
	k := len(set)
	a := make([]float64, k*k)
	m.KernelInto(a, set)
	z := make([]float64, k)
	for i, it := range set {
		v, b := m.ItemV(it), m.ItemB(it)
		z[i] = math.Sqrt(blas.Dot(v, v) + blas.Dot(b, b) + m.ItemDiag(it))
		if z[i] == 0 {
			return 0
		}
	}
	for i := 0; i < k; i++ {
		for j := 0; j < k; j++ {
			a[i*k+j] /= z[i] * z[j]
		}
	}
	inv := append([]float64(nil), a...)
	if _, sign := f64.Inverse(inv, k, k, make([]int, k), make([]float64, f64.InverseWork(k))); sign == 0 {
		return 0
	}
	return exactRcond(a, inv, k)
}

// opRun drives an oracle through a random sequence of prepares, value
// queries and accepted changes, checking every value it looks at against a
// fresh LU. Large k checks a sample of positions to keep the test fast.
type opRun struct {
	rng      *rand.Rand
	o        Oracle
	ck       *checker
	x, y     *Cand
	dst      []ndpp.Value
	maxCheck int // positions / pairs checked per step
}

func newOpRun(t testing.TB, o Oracle, seed uint64, tol float64) *opRun {
	return &opRun{
		rng: rand.New(rand.NewPCG(seed, 77)),
		o:   o,
		ck:  &checker{t: t, m: o.Model(), tol: tol},
		x:   o.NewCand(), y: o.NewCand(),
		dst:      make([]ndpp.Value, o.Cap()),
		maxCheck: 6,
	}
}

func (r *opRun) randItem() int {
	items := r.o.Items()
	if len(items) > 0 && r.rng.IntN(10) == 0 {
		return items[r.rng.IntN(len(items))] // an item already in S
	}
	return r.rng.IntN(r.o.Model().N())
}

func (r *opRun) withSwap(j, item int) []int {
	s := append([]int(nil), r.o.Items()...)
	s[j] = item
	return s
}

// step scores two arriving items and applies one change.
func (r *opRun) step() {
	o, ck := r.o, r.ck
	items := o.Items()
	k := len(items)
	tx, ty := r.randItem(), r.randItem()
	o.Prepare(r.x, tx)
	o.Prepare(r.y, ty)
	addV := o.AddValue(r.x)
	ck.check(addV, append(append([]int(nil), items...), tx), "add")
	o.SwapValues(r.x, r.dst)
	for n := 0; n < min(k, r.maxCheck); n++ {
		j := n
		if k > r.maxCheck {
			j = r.rng.IntN(k)
		}
		ck.check(r.dst[j], r.withSwap(j, tx), "swap")
	}
	var pa, pb int
	var pairV ndpp.Value
	if k >= 2 {
		for n := 0; n < min(k*(k-1)/2, r.maxCheck); n++ {
			a, b := r.rng.IntN(k), r.rng.IntN(k-1)
			if b >= a {
				b++
			}
			v := o.PairSwapValue(r.x, r.y, a, b)
			set := r.withSwap(a, tx)
			set[b] = ty
			ck.check(v, set, "pair")
			pa, pb, pairV = a, b, v
		}
	}
	// Apply a change: fill first, then swaps and pair swaps, preferring
	// non-zero values most of the time but sometimes accepting anything.
	any := r.rng.IntN(8) == 0
	switch {
	case k < o.Cap() && (addV.Greater(ndpp.ZeroValue) || any):
		_ = o.Add(r.x)
	case k >= 2 && r.rng.IntN(3) == 0 && (pairV.Greater(ndpp.ZeroValue) || any):
		_ = o.PairSwap(pa, pb, r.x, r.y)
	case k >= 1:
		j := r.rng.IntN(k)
		if r.dst[j].Greater(ndpp.ZeroValue) || any {
			_ = o.Swap(j, r.x)
		}
	}
	ck.check(o.Value(), o.Items(), "value of S")
}

// randomSize samples (k, d, n) with k ≤ 2d, skewed to small sizes; with
// beyond, a third of the draws have 2d < k ≤ 3d + 4 (for models with a
// diagonal, whose sets larger than 2d can have non-zero determinants).
func randomSize(rng *rand.Rand, beyond bool) (k, d, n int) {
	switch rng.IntN(10) {
	case 0:
		d = 2 + rng.IntN(99)
		k = 1 + rng.IntN(min(64, 2*d))
	case 1, 2:
		d = 2 + rng.IntN(30)
		k = 1 + rng.IntN(min(24, 2*d))
	default:
		d = 2 + rng.IntN(10)
		k = 1 + rng.IntN(min(12, 2*d))
	}
	if rng.IntN(6) == 0 {
		k = min(2*d, 64) // full rank
	}
	if beyond && rng.IntN(3) == 0 {
		k = min(2*d+1+rng.IntN(d+4), 64)
	}
	n = k + 3 + rng.IntN(3*k+10)
	return k, d, n
}

// withDiag returns m with a seeded diagonal of the given scale added
// (ndpptest.WithDiag).
func withDiag(t testing.TB, m *ndpp.Model, scale float64, seed uint64, partial bool) *ndpp.Model {
	t.Helper()
	dm, err := ndpptest.WithDiag(m, scale, seed, partial)
	require.NoError(t, err)
	return dm
}

// seqTotals accumulates what the random-sequence tests saw.
type seqTotals struct {
	ck                          checker
	fallbacks, refactors, evals int64
	maxDrift, maxLD             float64
}

func (tot *seqTotals) add(r *opRun, st Stats) {
	tot.ck.maxErr = math.Max(tot.ck.maxErr, r.ck.maxErr)
	tot.ck.compared += r.ck.compared
	tot.ck.flagDiff += r.ck.flagDiff
	tot.ck.byExact += r.ck.byExact
	tot.ck.maxExactErr = math.Max(tot.ck.maxExactErr, r.ck.maxExactErr)
	tot.fallbacks += st.Fallbacks
	tot.refactors += st.Refactors
	tot.evals += st.Evals
	tot.maxDrift = math.Max(tot.maxDrift, st.MaxDrift)
	tot.maxLD = math.Max(tot.maxLD, st.MaxLogDetDrift)
}

func (tot *seqTotals) log(t *testing.T, what string, sequences int) {
	t.Logf("%s: %d sequences, %d values compared with fresh LU: max |Δlog| = %.3g (tol %g), zero-flag differences near singularity %d",
		what, sequences, tot.ck.compared, tot.ck.maxErr, logTolRandom, tot.ck.flagDiff)
	t.Logf("%s: %d values where the oracle and the fresh LU differ by more than tol, judged against the exact value: max oracle error there %.3g",
		what, tot.ck.byExact, tot.ck.maxExactErr)
	t.Logf("%s: evals %d, fallbacks %d (%.3g%%), refactors %d, max inverse drift %.3g, max log-det drift %.3g",
		what, tot.evals, tot.fallbacks, 100*float64(tot.fallbacks)/float64(tot.evals), tot.refactors, tot.maxDrift, tot.maxLD)
}

// TestFastRandomSequences compares every value of random operation
// sequences with a fresh LU, on Gaussian models without a diagonal (k ≤ 2d)
// and with one (ndpptest.DiagScales, some partial; k up to 3d + 4).
func TestFastRandomSequences(t *testing.T) {
	sequences := 1500
	if testing.Short() || raceEnabled {
		sequences = 60
	}
	for _, withD := range []bool{false, true} {
		tot := &seqTotals{}
		count := sequences
		if withD {
			count = sequences / 3
		}
		for seed := uint64(1); seed <= uint64(count); seed++ {
			rng := rand.New(rand.NewPCG(seed, 3))
			k, d, n := randomSize(rng, withD)
			m := ndpp.Random(n, d, seed, ndpp.RandomOptions{Shared: seed%4 == 0, BlockDiagonal: seed%3 == 0})
			label := fmt.Sprintf("seed %d (k %d, d %d, n %d)", seed, k, d, n)
			if withD {
				scale, partial := ndpptest.DiagCase(seed)
				m = withDiag(t, m, scale, seed, partial)
				label += fmt.Sprintf(" diagonal %g partial %v", scale, partial)
			}
			k = min(k, m.MaxRank())
			o, err := NewFast(m, k)
			require.NoError(t, err)
			r := newOpRun(t, o, seed, logTolRandom)
			r.ck.label = label
			steps := 2*k + 10
			if k > 24 {
				steps = k + 20
			}
			for i := 0; i < steps; i++ {
				r.step()
			}
			tot.add(r, o.Stats())
		}
		what := "without a diagonal"
		if withD {
			what = "with a diagonal"
		}
		tot.log(t, what, count)
	}
}

// boundStats accumulates TestFastErrorBoundsHold's measurements: the
// largest |r − exact|/err over the ratios Fast would use (err ≤
// FallbackErr·r) and over all others, and how many of each.
type boundStats struct {
	used, other       int
	maxUsed, maxOther float64
}

// checkBound compares a ratio r with error bound err against the exact
// ratio exp(exactNew − exactOld) (256-bit determinants).
func (bs *boundStats) checkBound(t *testing.T, r, err, exactNew, exactOld float64, what string) {
	t.Helper()
	exact := 0.0
	if !math.IsInf(exactNew, -1) {
		exact = math.Exp(exactNew - exactOld)
	}
	if math.IsNaN(r) || math.IsInf(exact, 0) {
		return
	}
	// The exact ratio through exp of a difference of logs carries a
	// relative error of order ε·|log det|.
	dev := math.Max(0, math.Abs(r-exact)-1e-12*exact*(1+math.Abs(exactNew)+math.Abs(exactOld)))
	q := 0.0
	if dev > 0 {
		q = dev / err
	}
	if fromIdentity(r, err) {
		bs.used++
		bs.maxUsed = math.Max(bs.maxUsed, q)
		require.LessOrEqual(t, dev, err, "%s: ratio %v, exact %v, bound %v", what, r, exact, err)
		return
	}
	bs.other++
	bs.maxOther = math.Max(bs.maxOther, q)
}

// TestFastErrorBoundsHold: the first-order error bounds of the ratios
// (s for an add, swapRatio, pairRatio) bound their actual error against
// exact ratios of 256-bit determinants, on random and ill-conditioned
// models without and with a diagonal (where the item norms include δᵢ).
// Every ratio Fast would use as a value must lie within its bound; the
// largest |r − exact|/err is logged for those and for the others.
func TestFastErrorBoundsHold(t *testing.T) {
	sequences := 60
	if testing.Short() || raceEnabled {
		sequences = 10
	}
	for _, withD := range []bool{false, true} {
		bs := &boundStats{}
		for seed := uint64(1); seed <= uint64(sequences); seed++ {
			rng := rand.New(rand.NewPCG(seed, 41))
			d := 2 + rng.IntN(5)
			k := 2 + rng.IntN(2*d-1)
			if withD && rng.IntN(2) == 0 {
				k = 2*d + 1 + rng.IntN(d+2)
			}
			n := k + 10 + rng.IntN(20)
			var m *ndpp.Model
			kind := -1
			if seed%2 == 0 {
				kind = int(seed/2) % 6
				m = illModel(t, seed, n, d, kind)
			} else {
				m = ndpp.Random(n, d, seed, ndpp.RandomOptions{Shared: seed%5 == 0, BlockDiagonal: seed%3 == 0})
			}
			label := fmt.Sprintf("seed %d kind %d (d %d, n %d)", seed, kind, d, n)
			if withD {
				scale, partial := ndpptest.DiagCase(seed)
				m = withDiag(t, m, scale, seed, partial)
				label += fmt.Sprintf(" diagonal %g partial %v", scale, partial)
			}
			k = min(k, m.MaxRank())
			o := mustFast(t, m, k)
			r := newOpRun(t, o, seed, logTolIll)
			x, y := o.NewCand(), o.NewCand()
			for step := 0; step < 2*k+6; step++ {
				r.step()
				kk := o.Len()
				if o.Direct() || kk == 0 {
					continue
				}
				tx, ty := rng.IntN(n), rng.IntN(n)
				o.Prepare(x, tx)
				o.Prepare(y, ty)
				if x.dup >= 0 || y.dup >= 0 || tx == ty {
					continue
				}
				at := fmt.Sprintf("%s k %d step %d", label, k, step)
				old := bigLogDet(m, o.Items())
				if kk+1 <= m.MaxRank() {
					bs.checkBound(t, x.s, x.serr, bigLogDet(m, append(append([]int(nil), o.Items()...), tx)), old, at+" add")
				}
				for j := 0; j < kk; j++ {
					set := append([]int(nil), o.Items()...)
					set[j] = tx
					rr, _, e := o.swapRatio(x, j)
					bs.checkBound(t, rr, e, bigLogDet(m, set), old, fmt.Sprintf("%s swap %d", at, j))
				}
				for p := 0; p < min(kk*(kk-1)/2, 4); p++ {
					a, b := rng.IntN(kk), rng.IntN(kk-1)
					if b >= a {
						b++
					}
					set := append([]int(nil), o.Items()...)
					set[a], set[b] = tx, ty
					rr, _, e := o.pairRatio(x, y, a, b)
					bs.checkBound(t, rr, e, bigLogDet(m, set), old, fmt.Sprintf("%s pair (%d, %d)", at, a, b))
				}
			}
		}
		t.Logf("diagonal %v: %d ratios within FallbackErr, largest |r − exact|/err %.3g; %d others, largest %.3g",
			withD, bs.used, bs.maxUsed, bs.other, bs.maxOther)
		require.Positive(t, bs.used)
	}
}
