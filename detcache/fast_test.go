package detcache

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/internal/f64"
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
func (ck *checker) check(v Value, set []int, what string) {
	ck.t.Helper()
	want := Value{}
	if hasDup(set) {
		want = ZeroValue
	} else {
		want = freshValue(ck.t, ck.m, set)
	}
	ck.compared++
	require.False(ck.t, math.IsNaN(v.Log), "%s: NaN value", what)
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
	if hasDup(set) || len(set) > 2*m.D() {
		return 0
	}
	k := len(set)
	a := make([]float64, k*k)
	m.KernelInto(a, set)
	z := make([]float64, k)
	for i, it := range set {
		v, b := m.ItemV(it), m.ItemB(it)
		z[i] = math.Sqrt(blas.Dot(v, v) + blas.Dot(b, b))
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
	dst      []Value
	maxCheck int // positions / pairs checked per step
}

func newOpRun(t testing.TB, o Oracle, seed uint64, tol float64) *opRun {
	return &opRun{
		rng: rand.New(rand.NewPCG(seed, 77)),
		o:   o,
		ck:  &checker{t: t, m: o.Model(), tol: tol},
		x:   o.NewCand(), y: o.NewCand(),
		dst:      make([]Value, o.Cap()),
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
	var pairV Value
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
	case k < o.Cap() && (addV.Greater(ZeroValue) || any):
		_ = o.Add(r.x)
	case k >= 2 && r.rng.IntN(3) == 0 && (pairV.Greater(ZeroValue) || any):
		_ = o.PairSwap(pa, pb, r.x, r.y)
	case k >= 1:
		j := r.rng.IntN(k)
		if r.dst[j].Greater(ZeroValue) || any {
			_ = o.Swap(j, r.x)
		}
	}
	ck.check(o.Value(), o.Items(), "value of S")
}

// randomSize samples (k, d, n) with k ≤ 2d, skewed to small sizes.
func randomSize(rng *rand.Rand) (k, d, n int) {
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
	n = k + 3 + rng.IntN(3*k+10)
	return k, d, n
}

func TestFastRandomSequences(t *testing.T) {
	sequences := 1500
	if testing.Short() || raceEnabled {
		sequences = 60
	}
	total := &checker{}
	var fallbacks, refactors, evals int64
	maxDrift, maxLD := 0.0, 0.0
	for seed := uint64(1); seed <= uint64(sequences); seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		k, d, n := randomSize(rng)
		m := ndpp.Random(n, d, seed, ndpp.RandomOptions{Shared: seed%4 == 0, BlockDiagonal: seed%3 == 0})
		o, err := NewFast(m, k)
		require.NoError(t, err)
		r := newOpRun(t, o, seed, logTolRandom)
		r.ck.label = fmt.Sprintf("seed %d (k %d, d %d, n %d)", seed, k, d, n)
		steps := 2*k + 10
		if k > 24 {
			steps = k + 20
		}
		for i := 0; i < steps; i++ {
			r.step()
		}
		total.maxErr = math.Max(total.maxErr, r.ck.maxErr)
		total.compared += r.ck.compared
		total.flagDiff += r.ck.flagDiff
		total.byExact += r.ck.byExact
		total.maxExactErr = math.Max(total.maxExactErr, r.ck.maxExactErr)
		st := o.Stats()
		fallbacks += st.Fallbacks
		refactors += st.Refactors
		evals += st.Evals
		maxDrift = math.Max(maxDrift, st.MaxDrift)
		maxLD = math.Max(maxLD, st.MaxLogDetDrift)
	}
	t.Logf("%d sequences, %d values compared with fresh LU: max |Δlog| = %.3g (tol %g), zero-flag differences near singularity %d",
		sequences, total.compared, total.maxErr, logTolRandom, total.flagDiff)
	t.Logf("%d values where the oracle and the fresh LU differ by more than tol, judged against the exact value: max oracle error there %.3g",
		total.byExact, total.maxExactErr)
	t.Logf("evals %d, fallbacks %d (%.3g%%), refactors %d, max inverse drift %.3g, max log-det drift %.3g",
		evals, fallbacks, 100*float64(fallbacks)/float64(evals), refactors, maxDrift, maxLD)
}
