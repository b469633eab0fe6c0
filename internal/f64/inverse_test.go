package f64

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// Tolerances of the inversions against gonum's inverse and LU. Errors of an
// inverse grow with the condition number κ₁ = ‖A‖₁‖A⁻¹‖₁, so they are
// bounded relative to it.
const (
	invErrTol = 1e-13 // max|X − X_ref| / max|X_ref|, per unit of κ₁
	invResTol = 1e-13 // max|A·X − I|, per unit of κ₁
	invLogTol = 1e-12 // |log det − ref|, relative to max(1, |ref|), plus 1e-13·κ₁
	// invSingularGap: a matrix with a repeated row may end with a
	// rounding-sized pivot (~1e-16 of its row) instead of an exact zero;
	// its log|det| must then lie at least this far (natural log, i.e. a
	// factor 1e-10) below Hadamard's bound.
	invSingularGap = 10 * math.Ln10
)

// invSizes are the k tested: every k up to 12, then sizes around the panel
// width, BlockedMin and 2d = 60.
var invSizes = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17, 23, 24, 25, 31, 32, 33, 59, 60, 61, 64, 70}

// invMethod is one of the inversions under test: the exported routines and
// both eliminations called directly (invertBlocked with the kernels this
// build and CPU run). logDet is false for InverseSign, which returns no
// log|det|.
type invMethod struct {
	name   string
	logDet bool
	f      func(a []float64, k, lda int, piv []int, work []float64) (ld, sg float64)
	work   func(k int) int
}

var invMethods = []invMethod{
	{"Inverse", true, Inverse, InverseWork},
	{"InverseSign", false, func(a []float64, k, lda int, piv []int, work []float64) (float64, float64) {
		return math.NaN(), InverseSign(a, k, lda, piv, work)
	}, InverseWork},
	{"blocked", true, func(a []float64, k, lda int, piv []int, work []float64) (float64, float64) {
		return invertBlocked(a, k, lda, piv, work, true)
	}, blockedWork},
	{"unblocked", true, func(a []float64, k, lda int, piv []int, _ []float64) (float64, float64) {
		return invertUnblocked(a, k, lda, piv, true)
	}, func(int) int { return 0 }},
}

// randOrthogonal returns a random k×k orthogonal matrix (Q of a Gaussian
// matrix's QR).
func randOrthogonal(rng *rand.Rand, k int) *mat.Dense {
	g := mat.NewDense(k, k, nil)
	for r := 0; r < k; r++ {
		for c := 0; c < k; c++ {
			g.Set(r, c, rng.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(g)
	var q mat.Dense
	qr.QTo(&q)
	return &q
}

// invMatrix returns a seeded random k×k matrix of the given kind:
// "random" (Gaussian), "learner" (I + W G with G = ZᵀZ, W = blockdiag(I, C),
// C skew-symmetric, as the online learner refactors) or "near-singular"
// (singular values log-spaced from 1 to 1e-10).
func invMatrix(rng *rand.Rand, kind string, k int) []float64 {
	a := make([]float64, k*k)
	switch kind {
	case "random":
		for i := range a {
			a[i] = rng.NormFloat64()
		}
	case "learner":
		n := 1 + rng.IntN(3*k)
		z := make([]float64, n*k)
		for i := range z {
			z[i] = rng.NormFloat64() / math.Sqrt(float64(n))
		}
		g := make([]float64, k*k)
		for r := 0; r < k; r++ {
			for c := 0; c < k; c++ {
				s := 0.0
				for l := 0; l < n; l++ {
					s += z[l*k+r] * z[l*k+c]
				}
				g[r*k+c] = s
			}
		}
		d := k / 2 // W = blockdiag(I_{k−d}, C_d)
		w := make([]float64, k*k)
		for r := 0; r < k-d; r++ {
			w[r*k+r] = 1
		}
		for r := k - d; r < k; r++ {
			for c := r + 1; c < k; c++ {
				v := 2 * rng.NormFloat64()
				w[r*k+c], w[c*k+r] = v, -v
			}
		}
		for r := 0; r < k; r++ {
			a[r*k+r] = 1
			for c := 0; c < k; c++ {
				s := 0.0
				for l := 0; l < k; l++ {
					s += w[r*k+l] * g[l*k+c]
				}
				a[r*k+c] += s
			}
		}
	case "near-singular":
		u, v := randOrthogonal(rng, k), randOrthogonal(rng, k)
		for r := 0; r < k; r++ {
			for c := 0; c < k; c++ {
				s := 0.0
				for l := 0; l < k; l++ {
					sigma := 1.0
					if k > 1 {
						sigma = math.Pow(1e-10, float64(l)/float64(k-1))
					}
					s += u.At(r, l) * sigma * v.At(c, l)
				}
				a[r*k+c] = s
			}
		}
	default:
		panic("unknown kind " + kind)
	}
	return a
}

// invCall runs method on a copy of the k×k a stored with row stride lda
// (the padding NaN), with NaN-filled scratch (so that any read of stale
// scratch shows), checks that the padding is untouched, and returns the
// inverse (k×k, stride k).
func invCall(t *testing.T, m invMethod, a []float64, k, lda int) (inv []float64, ld, sg float64) {
	t.Helper()
	buf := filled(max(0, (k-1)*lda+k), math.NaN())
	for r := range k {
		copy(buf[r*lda:r*lda+k], a[r*k:(r+1)*k])
	}
	piv := make([]int, k)
	for i := range piv {
		piv[i] = -7
	}
	work := filled(m.work(k), math.NaN())
	ld, sg = m.f(buf, k, lda, piv, work)
	inv = make([]float64, k*k)
	for r := range k {
		copy(inv[r*k:(r+1)*k], buf[r*lda:r*lda+k])
		for j := k; j < lda && r*lda+j < len(buf); j++ {
			if !math.IsNaN(buf[r*lda+j]) {
				t.Fatalf("%s k=%d lda=%d: padding of row %d written", m.name, k, lda, r)
			}
		}
	}
	return inv, ld, sg
}

// maxRelDiff returns max|a − b| / max(1e-300, max|a|).
func maxRelDiff(a, b []float64) float64 {
	diff, size := 0.0, 1e-300
	for i := range a {
		diff = math.Max(diff, math.Abs(a[i]-b[i]))
		size = math.Max(size, math.Abs(a[i]))
	}
	return diff / size
}

// TestInverseMatchesLU compares every inversion with gonum's inverse and
// LU log-determinant on random, learner-like and ill-conditioned matrices
// (κ ≈ 1e10), with and without padded rows.
func TestInverseMatchesLU(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	for _, k := range invSizes {
		for _, kind := range []string{"random", "learner", "near-singular"} {
			seeds := 3
			if k >= 59 {
				seeds = 1
			}
			for seed := range seeds {
				a := invMatrix(rng, kind, k)
				lda := k + seed%2*(1+rng.IntN(3))
				checkAgainstLU(t, a, k, lda, fmt.Sprintf("k=%d lda=%d %s seed %d", k, lda, kind, seed))
			}
		}
	}
}

// checkAgainstLU compares each method on the nonsingular a with gonum's
// inverse and LU log-determinant, and the blocked elimination with the
// unblocked one (the same pivots).
func checkAgainstLU(t *testing.T, a []float64, k, lda int, name string) {
	t.Helper()
	orig := mat.NewDense(k, k, append([]float64(nil), a...))
	var lu mat.LU
	lu.Factorize(orig)
	wld, wsg := lu.LogDet()
	var ref mat.Dense
	if err := ref.Inverse(orig); err != nil {
		t.Fatalf("%s: reference inverse: %v", name, err)
	}
	cond := mat.Cond(orig, 1)
	for _, m := range invMethods {
		got, ld, sg := invCall(t, m, a, k, lda)
		if sg != wsg || m.logDet && math.Abs(ld-wld) > invLogTol*math.Max(1, math.Abs(wld))+1e-13*cond {
			t.Fatalf("%s %s: log det %g sign %g, LU %g sign %g (κ₁ %.3g)", m.name, name, ld, sg, wld, wsg, cond)
		}
		if e := maxRelDiff(ref.RawMatrix().Data, got); !(e <= invErrTol*cond) {
			t.Fatalf("%s %s: inverse rel. error %.3g > %.3g·κ₁ (κ₁ %.3g)", m.name, name, e, invErrTol, cond)
		}
		var prod mat.Dense
		prod.Mul(orig, mat.NewDense(k, k, got))
		res := 0.0
		for r := range k {
			for c := range k {
				w := 0.0
				if r == c {
					w = 1
				}
				res = math.Max(res, math.Abs(prod.At(r, c)-w))
			}
		}
		if !(res <= invResTol*cond) {
			t.Fatalf("%s %s: max|A·X − I| = %.3g > %.3g·κ₁ (κ₁ %.3g)", m.name, name, res, invResTol, cond)
		}
	}
	// The blocked elimination leaves in piv the composed column permutation
	// of its interchanges; the unblocked one's interchanges must compose to
	// it (no near-ties in these matrices).
	b := append([]float64(nil), a...)
	piv := make([]int, k)
	invertBlocked(b, k, k, piv, make([]float64, blockedWork(k)), true)
	u := append([]float64(nil), a...)
	upiv := make([]int, k)
	invertUnblocked(u, k, k, upiv, true)
	want := make([]int, k)
	for i := range want {
		want[i] = i
	}
	for c := k - 1; c >= 0; c-- {
		want[c], want[upiv[c]] = want[upiv[c]], want[c]
	}
	for i := range want {
		if piv[i] != want[i] {
			t.Fatalf("%s: blocked permutation %v, the unblocked interchanges give %v", name, piv, want)
		}
	}
	if e := maxRelDiff(u, b); !(e <= invErrTol*cond) {
		t.Fatalf("%s: blocked and unblocked differ by %.3g > %.3g·κ₁", name, e, invErrTol)
	}
}

// TestInverseSingular checks that every inversion reports singular
// matrices: zero rows and columns, repeated rows, NaN and Inf anywhere.
func TestInverseSingular(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	for _, k := range invSizes {
		for range 2 {
			base := invMatrix(rng, "random", k)
			at := func(i int) (r, c int) { return i / k, i % k }
			// A zero column and a zero row stay exactly zero under
			// elimination: the pivot is exactly 0.
			zc, zr := rng.IntN(k), rng.IntN(k)
			a := append([]float64(nil), base...)
			for r := range k {
				a[r*k+zc] = 0
			}
			expectSingular(t, a, k, fmt.Sprintf("k=%d zero column %d", k, zc), true)
			a = append(a[:0], base...)
			clear(a[zr*k : (zr+1)*k])
			expectSingular(t, a, k, fmt.Sprintf("k=%d zero row %d", k, zr), true)
			if k > 1 {
				// A repeated row: exactly singular, but rounding may leave a
				// tiny pivot instead of 0.
				r0, r1 := rng.IntN(k), rng.IntN(k-1)
				if r1 >= r0 {
					r1++
				}
				a = append(a[:0], base...)
				copy(a[r1*k:(r1+1)*k], a[r0*k:(r0+1)*k])
				expectSingular(t, a, k, fmt.Sprintf("k=%d row %d = row %d", k, r1, r0), false)
			}
			// NaN and Inf anywhere, including the last column and row,
			// which the last pivot search sees only through the
			// elimination.
			for _, i := range []int{rng.IntN(k * k), k - 1, k*k - 1, (k - 1) * k, 0} {
				for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
					a = append(a[:0], base...)
					a[i] = bad
					r, c := at(i)
					expectSingular(t, a, k, fmt.Sprintf("k=%d a[%d][%d] = %g", k, r, c, bad), true)
				}
			}
		}
	}
	// Small exact cases.
	for _, a := range [][]float64{{1, 2, 2, 4}, {math.NaN(), 0, 0, 1}, {1, math.NaN(), 0, 1}, {1, 0, 0, math.Inf(1)}, {0}, {math.NaN()}} {
		k := int(math.Sqrt(float64(len(a))))
		expectSingular(t, a, k, fmt.Sprint(a), false)
	}
}

// expectSingular checks that every method reports the singular or
// non-finite a: sign 0 and (where returned) log det −Inf, or, unless exact,
// a log|det| invSingularGap below Hadamard's bound Σ log‖row‖ (a repeated
// row may leave a rounding-sized pivot). The unblocked elimination skips
// rows whose multiplier is 0, so a NaN or Inf need not reach a pivot; it
// then reaches the inverse, which must hold a non-finite entry. The
// blocked one skips nothing and must reject it.
func expectSingular(t *testing.T, a []float64, k int, name string, exact bool) {
	t.Helper()
	bound, finite := 0.0, true
	for r := range k {
		s := 0.0
		for _, v := range a[r*k : (r+1)*k] {
			s += v * v
			finite = finite && !math.IsNaN(v) && !math.IsInf(v, 0)
		}
		bound += 0.5 * math.Log(s)
	}
	for _, m := range invMethods {
		inv, ld, sg := invCall(t, m, a, k, k)
		if sg == 0 {
			if m.logDet && !math.IsInf(ld, -1) {
				t.Fatalf("%s %s: sign 0 with log det %g", m.name, name, ld)
			}
			continue
		}
		if !finite && m.name != "blocked" {
			bad := false
			for _, v := range inv {
				bad = bad || math.IsNaN(v) || math.IsInf(v, 0)
			}
			if bad {
				continue
			}
		}
		if exact || !finite || m.logDet && !(ld < bound-invSingularGap) {
			t.Fatalf("%s %s: log det %g sign %g, want singular (Hadamard bound %g)", m.name, name, ld, sg, bound)
		}
	}
}

// TestInverse2 checks InverseSign's 2×2 adjugate formula bit for bit.
func TestInverse2(t *testing.T) {
	rng := rand.New(rand.NewPCG(75, 76))
	for range 100 {
		a := randSlice(rng, 2)
		a = append(a, randSlice(rng, 2)...)
		lda := 2 + rng.IntN(3)
		buf := filled(lda+2, math.NaN())
		copy(buf, a[:2])
		copy(buf[lda:], a[2:])
		sg := InverseSign(buf, 2, lda, make([]int, 2), nil)
		det := a[0]*a[3] - a[1]*a[2]
		inv := 1 / det
		want := []float64{a[3] * inv, -a[1] * inv, -a[2] * inv, a[0] * inv}
		if got := []float64{buf[0], buf[1], buf[lda], buf[lda+1]}; !sameBits(got, want) || sg != math.Copysign(1, det) {
			t.Fatalf("a = %v: inverse %v sign %v, want %v sign of %v", a, got, sg, want, det)
		}
	}
}

// TestInversePanics checks the arguments' checks.
func TestInversePanics(t *testing.T) {
	a := make([]float64, 16)
	piv := make([]int, 4)
	cases := []panicCase{
		{"Inverse", func() { Inverse(a, 4, 3, piv, nil) }},
		{"Inverse", func() { Inverse(a[:15], 4, 4, piv, nil) }},
		{"Inverse", func() { Inverse(a, 4, 4, piv[:3], nil) }},
		{"InverseSign", func() { InverseSign(a, -1, 4, piv, nil) }},
	}
	if w := InverseWork(30); w > 0 {
		cases = append(cases, panicCase{"Inverse", func() { Inverse(make([]float64, 30*30), 30, 30, make([]int, 30), make([]float64, w-1)) }})
	}
	expectPanics(t, cases)
}

// TestGer4 checks the rank-4 update this build runs against the plain loop.
func TestGer4(t *testing.T) {
	rng := rand.New(rand.NewPCG(77, 78))
	for m := 1; m <= 21; m++ {
		for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 16, 21} {
			lda, ldy := n+rng.IntN(3), n+rng.IntN(3)
			a := randSlice(rng, (m-1)*lda+n)
			x, y := randSlice(rng, 4*m), randSlice(rng, 3*ldy+n)
			got := append([]float64(nil), a...)
			ger4(m, n, x, y, ldy, got, lda)
			for i := range m {
				for j := range n {
					want, mag := a[i*lda+j], math.Abs(a[i*lda+j])
					for s := range 4 {
						want += x[4*i+s] * y[s*ldy+j]
						mag += math.Abs(x[4*i+s] * y[s*ldy+j])
					}
					if !withinSum(got[i*lda+j], want, mag, 4) {
						t.Fatalf("m=%d n=%d: a[%d][%d] = %v, want %v", m, n, i, j, got[i*lda+j], want)
					}
				}
			}
		}
	}
}

// BenchmarkInverse compares the blocked and unblocked eliminations (the
// blocked one on the kernels this build and CPU run).
func BenchmarkInverse(b *testing.B) {
	rng := rand.New(rand.NewPCG(79, 80))
	for _, k := range []int{4, 8, 16, 24, 32, 60, 100} {
		a := invMatrix(rng, "learner", k)
		m := make([]float64, k*k)
		piv := make([]int, k)
		work := make([]float64, blockedWork(k))
		for _, method := range []string{"blocked", "unblocked"} {
			b.Run(fmt.Sprintf("k=%d/method=%s", k, method), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					copy(m, a)
					var sg float64
					if method == "blocked" {
						_, sg = invertBlocked(m, k, k, piv, work, true)
					} else {
						_, sg = invertUnblocked(m, k, k, piv, true)
					}
					if sg == 0 {
						b.Fatal("singular")
					}
				}
			})
		}
	}
}
