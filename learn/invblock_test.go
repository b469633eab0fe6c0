package learn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// Tolerances of invertBlocked against gonum's inverse and LU. Errors of an
// inverse grow with the condition number κ₁ = ‖A‖₁‖A⁻¹‖₁, so they are
// bounded relative to it.
const (
	invBlkErrTol = 1e-13 // max|X − X_ref| / max|X_ref|, per unit of κ₁
	invBlkResTol = 1e-13 // max|A·X − I|, per unit of κ₁
	invBlkLogTol = 1e-12 // |log det − ref|, relative to max(1, |ref|), plus 1e-13·κ₁
	// invBlkSingularGap: a matrix with a repeated row may end with a
	// rounding-sized pivot (~1e-16 of its row) instead of an exact zero;
	// its log|det| must then lie at least this far (natural log, i.e. a
	// factor 1e-10) below Hadamard's bound.
	invBlkSingularGap = 10 * math.Ln10
)

// invBlkSizes are the k tested: every k up to 12, then sizes around the
// panel width and the learner's 2d = 60.
var invBlkSizes = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17, 31, 32, 33, 59, 60, 61, 64, 70}

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

// invBlkMatrix returns a seeded random k×k matrix of the given kind:
// "random" (Gaussian), "learner" (I + W G with G = ZᵀZ, W = blockdiag(I, C),
// C skew-symmetric, as the online learner refactors) or "near-singular"
// (singular values log-spaced from 1 to 1e-10).
func invBlkMatrix(rng *rand.Rand, kind string, k int) []float64 {
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

// invBlkCall runs invertBlocked on a copy of a with NaN-filled scratch (so
// that any read of stale scratch shows) and returns the result.
func invBlkCall(a []float64, k int) (inv []float64, ld, sg float64, piv []int) {
	inv = append([]float64(nil), a...)
	piv = make([]int, k)
	for i := range piv {
		piv[i] = -7
	}
	work := make([]float64, invBlockedWork(k))
	for i := range work {
		work[i] = math.NaN()
	}
	ld, sg = invertBlocked(inv, k, piv, work)
	return inv, ld, sg, piv
}

func TestInvertBlockedMatchesLU(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(71, 72))
		for _, k := range invBlkSizes {
			for _, kind := range []string{"random", "learner", "near-singular"} {
				seeds := 4
				if k >= 59 {
					seeds = 2
				}
				for seed := 0; seed < seeds; seed++ {
					a := invBlkMatrix(rng, kind, k)
					checkInvertBlocked(t, a, k, fmt.Sprintf("k=%d %s seed %d", k, kind, seed))
				}
			}
		}
	})
}

// checkInvertBlocked compares invertBlocked on the nonsingular a with
// gonum's inverse and LU log-determinant and with invert (one rank-1
// Gauss–Jordan step at a time, the same pivots).
func checkInvertBlocked(t *testing.T, a []float64, k int, name string) {
	t.Helper()
	got, ld, sg, perm := invBlkCall(a, k)
	orig := mat.NewDense(k, k, append([]float64(nil), a...))
	var lu mat.LU
	lu.Factorize(orig)
	wld, wsg := lu.LogDet()
	var ref mat.Dense
	if err := ref.Inverse(orig); err != nil {
		t.Fatalf("%s: reference inverse: %v", name, err)
	}
	cond := mat.Cond(orig, 1)
	if sg != wsg || math.Abs(ld-wld) > invBlkLogTol*math.Max(1, math.Abs(wld))+1e-13*cond {
		t.Fatalf("%s: log det %g sign %g, LU %g sign %g (κ₁ %.3g)", name, ld, sg, wld, wsg, cond)
	}
	if e := maxRelDiff(ref.RawMatrix().Data, got); !(e <= invBlkErrTol*cond) {
		t.Fatalf("%s: inverse rel. error %.3g > %.3g·κ₁ (κ₁ %.3g)", name, e, invBlkErrTol, cond)
	}
	var prod mat.Dense
	prod.Mul(orig, mat.NewDense(k, k, got))
	res := 0.0
	for r := 0; r < k; r++ {
		for c := 0; c < k; c++ {
			w := 0.0
			if r == c {
				w = 1
			}
			res = math.Max(res, math.Abs(prod.At(r, c)-w))
		}
	}
	if !(res <= invBlkResTol*cond) {
		t.Fatalf("%s: max|A·X − I| = %.3g > %.3g·κ₁ (κ₁ %.3g)", name, res, invBlkResTol, cond)
	}
	r1 := append([]float64(nil), a...)
	piv1 := make([]int, k)
	ld1, sg1 := invert(r1, k, piv1)
	// The same pivots as invert (no near-ties in these matrices):
	// invertBlocked leaves in piv the composed column permutation of its
	// interchanges.
	want := make([]int, k)
	for i := range want {
		want[i] = i
	}
	for c := k - 1; c >= 0; c-- {
		want[c], want[piv1[c]] = want[piv1[c]], want[c]
	}
	for i := range want {
		if perm[i] != want[i] {
			t.Fatalf("%s: permutation %v, invert's interchanges give %v", name, perm, want)
		}
	}
	if sg1 != sg || math.Abs(ld1-ld) > invBlkLogTol*math.Max(1, math.Abs(ld1))+1e-13*cond {
		t.Fatalf("%s: log det %g sign %g, invert %g sign %g", name, ld, sg, ld1, sg1)
	}
	if e := maxRelDiff(r1, got); !(e <= invBlkErrTol*cond) {
		t.Fatalf("%s: differs from invert by %.3g > %.3g·κ₁", name, e, invBlkErrTol)
	}
}

func TestInvertBlockedSingular(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(73, 74))
		for _, k := range invBlkSizes {
			for seed := 0; seed < 3; seed++ {
				base := invBlkMatrix(rng, "random", k)
				at := func(i int) (r, c int) { return i / k, i % k }
				// A zero column and a zero row stay exactly zero under
				// elimination: the pivot is exactly 0.
				zc, zr := rng.IntN(k), rng.IntN(k)
				a := append([]float64(nil), base...)
				for r := 0; r < k; r++ {
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
	})
}

// expectSingular checks that invertBlocked reports a singular a: sign 0 and
// log det −Inf, or, unless exact, a log|det| invBlkSingularGap below
// Hadamard's bound Σ log‖row‖.
func expectSingular(t *testing.T, a []float64, k int, name string, exact bool) {
	t.Helper()
	_, ld, sg, _ := invBlkCall(a, k)
	if sg == 0 {
		if !math.IsInf(ld, -1) {
			t.Fatalf("%s: sign 0 with log det %g", name, ld)
		}
		return
	}
	bound, finite := 0.0, true
	for r := 0; r < k; r++ {
		s := 0.0
		for _, v := range a[r*k : (r+1)*k] {
			s += v * v
			finite = finite && !math.IsNaN(v) && !math.IsInf(v, 0)
		}
		bound += 0.5 * math.Log(s)
	}
	if exact || !finite || !(ld < bound-invBlkSingularGap) {
		t.Fatalf("%s: log det %g sign %g, want singular (Hadamard bound %g)", name, ld, sg, bound)
	}
}

func TestRank4MatchesLoop(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(75, 76))
		for k := 1; k <= 21; k++ {
			a := make([]float64, k*k)
			x := make([]float64, 4*k)
			y := make([]float64, 4*k)
			for _, s := range [][]float64{a, x, y} {
				for i := range s {
					s[i] = rng.NormFloat64()
				}
			}
			want := append([]float64(nil), a...)
			for r := 0; r < k; r++ {
				for j := 0; j < k; j++ {
					for s := 0; s < 4; s++ {
						want[r*k+j] += x[4*r+s] * y[s*k+j]
					}
				}
			}
			rank4(a, k, x, y)
			if e := maxRelDiff(want, a); e > 1e-14 {
				t.Fatalf("k=%d: rank4 differs from the loop by %.3g", k, e)
			}
		}
	})
}

func BenchmarkInvert(b *testing.B) {
	rng := rand.New(rand.NewPCG(77, 78))
	for _, k := range []int{20, 60} {
		a := invBlkMatrix(rng, "learner", k)
		m := make([]float64, k*k)
		piv := make([]int, k)
		work := make([]float64, invBlockedWork(k))
		for _, method := range []string{"blocked", "gauss-jordan"} {
			b.Run(fmt.Sprintf("k=%d/method=%s", k, method), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					copy(m, a)
					var sg float64
					switch method {
					case "blocked":
						_, sg = invertBlocked(m, k, piv, work)
					default:
						_, sg = invert(m, k, piv)
					}
					if sg == 0 {
						b.Fatal("singular")
					}
				}
			})
		}
	}
}
