package blas

import (
	"math"
	"math/rand/v2"
	"testing"

	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	gonumblas "gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/mat"

	"github.com/ndpp-go/ndpp/internal/f64"
)

// Tolerances of the conformance suite (relative to the operands' scale).
const (
	level3Tol = 1e-12
	logDetTol = 1e-9
)

// forEachBackend runs f with every compiled-in backend selected, restoring
// the previous choice afterwards.
func forEachBackend(t *testing.T, f func(t *testing.T)) {
	prev := Backend()
	defer func() { _ = Use(prev) }()
	for _, name := range Available() {
		if err := Use(name); err != nil {
			t.Fatalf("Use(%q): %v", name, err)
		}
		t.Run("backend="+name, f)
	}
}

func randSlice(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	return x
}

// Sizes on both sides of every cut-off in crossover.go.
var gemmSizes = []int{1, 2, 3, 4, 5, 8, 9, 16, 33, 64, 129}

func TestConformanceGemm(t *testing.T) {
	forEachBackend(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		for _, m := range gemmSizes {
			for _, k := range []int{1, 5, 8, 40} {
				n := m + 3
				a, b := randSlice(rng, m*k), randSlice(rng, k*n)
				c := randSlice(rng, m*n)
				want := append([]float64(nil), c...)
				for i := 0; i < m; i++ {
					for j := 0; j < n; j++ {
						s := 0.0
						for l := 0; l < k; l++ {
							s += a[i*k+l] * b[l*n+j]
						}
						want[i*n+j] = 1.5*s - 0.5*want[i*n+j]
					}
				}
				blas64.Implementation().Dgemm(gblas.NoTrans, gblas.NoTrans, m, n, k, 1.5, a, k, b, n, -0.5, c, n)
				for i := range c {
					if math.Abs(c[i]-want[i]) > level3Tol*float64(k+1)*8 {
						t.Fatalf("Dgemm m=%d n=%d k=%d: entry %d = %v, want %v", m, n, k, i, c[i], want[i])
					}
				}
			}
		}
	})
}

func TestConformanceSyrkAndGemv(t *testing.T) {
	forEachBackend(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 4))
		for _, n := range []int{2, 8, 30, 140, 260} { // 260·265 ≥ GemvMinSize
			k := n + 5
			a := randSlice(rng, n*k)
			c := make([]float64, n*n)
			blas64.Implementation().Dsyrk(gblas.Upper, gblas.NoTrans, n, k, 1, a, k, 0, c, n)
			for i := 0; i < n; i++ {
				for j := i; j < n; j++ {
					s := 0.0
					for l := 0; l < k; l++ {
						s += a[i*k+l] * a[j*k+l]
					}
					if math.Abs(c[i*n+j]-s) > level3Tol*float64(k)*8 {
						t.Fatalf("Dsyrk n=%d: (%d,%d) = %v, want %v", n, i, j, c[i*n+j], s)
					}
				}
			}
			x := randSlice(rng, k)
			y := make([]float64, n)
			blas64.Implementation().Dgemv(gblas.NoTrans, n, k, 1, a, k, x, 1, 0, y, 1)
			for i := 0; i < n; i++ {
				s := 0.0
				for l := 0; l < k; l++ {
					s += a[i*k+l] * x[l]
				}
				if math.Abs(y[i]-s) > level3Tol*float64(k)*8 {
					t.Fatalf("Dgemv n=%d: y[%d] = %v, want %v", n, i, y[i], s)
				}
			}
		}
		for _, n := range []int{1, 100, Level1MinLen - 1, Level1MinLen, 3 * Level1MinLen} {
			x, y := randSlice(rng, n), randSlice(rng, n)
			s := 0.0
			for i := range x {
				s += x[i] * y[i]
			}
			if got := blas64.Implementation().Ddot(n, x, 1, y, 1); math.Abs(got-s) > 1e-12*float64(n) {
				t.Fatalf("Ddot n=%d: %v, want %v", n, got, s)
			}
		}
	})
}

// naiveLogDet is Gaussian elimination with partial pivoting, written out.
func naiveLogDet(a []float64, n int) (float64, float64) {
	a = append([]float64(nil), a...)
	logDet, sign := 0.0, 1.0
	for col := 0; col < n; col++ {
		p := col
		for r := col + 1; r < n; r++ {
			if math.Abs(a[r*n+col]) > math.Abs(a[p*n+col]) {
				p = r
			}
		}
		if a[p*n+col] == 0 {
			return math.Inf(-1), 0
		}
		if p != col {
			for j := 0; j < n; j++ {
				a[p*n+j], a[col*n+j] = a[col*n+j], a[p*n+j]
			}
			sign = -sign
		}
		piv := a[col*n+col]
		if piv < 0 {
			sign = -sign
		}
		logDet += math.Log(math.Abs(piv))
		for r := col + 1; r < n; r++ {
			f := a[r*n+col] / piv
			for j := col; j < n; j++ {
				a[r*n+j] -= f * a[col*n+j]
			}
		}
	}
	return logDet, sign
}

func TestConformanceFactorisations(t *testing.T) {
	forEachBackend(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 6))
		for _, n := range []int{1, 3, 8, 95, 96, 127, 128, 150} {
			a := randSlice(rng, n*n)
			for i := 0; i < n; i++ {
				a[i*n+i] += 3 // keep it well conditioned
			}
			var lu mat.LU
			lu.Factorize(mat.NewDense(n, n, append([]float64(nil), a...)))
			got, sign := lu.LogDet()
			want, wsign := naiveLogDet(a, n)
			if sign != wsign || math.Abs(got-want) > logDetTol*math.Max(1, math.Abs(want)) {
				t.Fatalf("LU n=%d: (%v, %v), want (%v, %v)", n, got, sign, want, wsign)
			}
			// SPD: AᵀA + I.
			var s mat.SymDense
			s.SymOuterK(1, mat.NewDense(n, n, a).T())
			for i := 0; i < n; i++ {
				s.SetSym(i, i, s.At(i, i)+1)
			}
			var ch mat.Cholesky
			if !ch.Factorize(&s) {
				t.Fatalf("Cholesky n=%d failed on an SPD matrix", n)
			}
			dense := mat.DenseCopyOf(&s)
			want, _ = naiveLogDet(dense.RawMatrix().Data, n)
			if got := ch.LogDet(); math.Abs(got-want) > logDetTol*math.Max(1, math.Abs(want)) {
				t.Fatalf("Cholesky n=%d: %v, want %v", n, got, want)
			}
		}
	})
}

func TestUseRejectsUnknownAndMissing(t *testing.T) {
	prev := Backend()
	if err := Use("mkl"); err == nil {
		t.Fatal("Use(mkl) succeeded")
	}
	if Backend() != prev {
		t.Fatalf("failed Use changed the backend to %s", Backend())
	}
	if !HasOpenBLAS() {
		if err := Use(OpenBLAS); err == nil {
			t.Fatal("Use(openblas) succeeded without OpenBLAS compiled in")
		}
		if got := Available(); len(got) != 1 || got[0] != Gonum {
			t.Fatalf("Available() = %v without OpenBLAS", got)
		}
	} else if got := Available(); len(got) != 3 {
		t.Fatalf("Available() = %v with OpenBLAS", got)
	}
}

// TestSyrkTransMatchesNaive checks Syrk's C = alpha·AᵀA + beta·C (upper
// triangle; the lower one untouched) on every backend, as the learners
// use it for Gram matrices of row-major item vectors.
func TestSyrkTransMatchesNaive(t *testing.T) {
	forEachBackend(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 6))
		for _, tc := range []struct{ n, k int }{{1, 1}, {4, 3}, {60, 7}, {60, 2000}, {20, 300}} {
			n, k := tc.n, tc.k
			a := randSlice(rng, k*n)
			c0 := randSlice(rng, n*n)
			c := append([]float64(nil), c0...)
			Syrk(gblas.Trans, n, k, -0.5, a, n, 2, c, n)
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					if j < i {
						if c[i*n+j] != c0[i*n+j] {
							t.Fatalf("Syrk n=%d k=%d wrote the lower triangle at (%d,%d)", n, k, i, j)
						}
						continue
					}
					s := 0.0
					for l := 0; l < k; l++ {
						s += a[l*n+i] * a[l*n+j]
					}
					want := -0.5*s + 2*c0[i*n+j]
					if math.Abs(c[i*n+j]-want) > level3Tol*float64(k+2)*8 {
						t.Fatalf("Syrk n=%d k=%d: (%d,%d) = %v, want %v", n, k, i, j, c[i*n+j], want)
					}
				}
			}
		}
	})
}

// TestSyrkGoPathMatchesDsyrk checks Syrk's blocked Go path (the gonum
// backend) against gonum's Dsyrk and, when compiled in, OpenBLAS's, on
// Gram shapes whose rows span several of its blocks (lda > n included),
// and that the blocking leaves the bits of one unblocked pass
// (f64.GemvT4 over all rows).
func TestSyrkGoPathMatchesDsyrk(t *testing.T) {
	prev := Backend()
	defer func() { _ = Use(prev) }()
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct{ n, lda, k int }{{4, 4, 5000}, {7, 9, 3000}, {60, 60, 20000}, {61, 64, 1500}, {60, 60, syrkBlockRows(60)}, {30, 31, 1}} {
		n, lda, k := tc.n, tc.lda, tc.k
		a := randSlice(rng, k*lda)
		c0 := randSlice(rng, n*n)
		if err := Use(Gonum); err != nil {
			t.Fatal(err)
		}
		got := append([]float64(nil), c0...)
		Syrk(gblas.Trans, n, k, 0.75, a, lda, -1.5, got, n)
		// One unblocked pass: the bits of the path before blocking.
		y := make([]float64, 4*n)
		for r := 0; r < n; r += 4 {
			r0 := min(r, n-4)
			w := n - r0
			f64.GemvT4(k, w, a[r0:], lda, a[r0:], 1, lda, y, w)
			for v := r - r0; v < 4; v++ {
				for j := v; j < w; j++ {
					want := 0.75*y[v*w+j] + -1.5*c0[(r0+v)*n+r0+j]
					if g := got[(r0+v)*n+r0+j]; g != want {
						t.Fatalf("n=%d lda=%d k=%d: (%d,%d) = %v, one pass gives %v", n, lda, k, r0+v, r0+j, g, want)
					}
				}
			}
		}
		refs := []gblas.Float64{gonumblas.Implementation{}}
		if native, ok := Impl(OpenBLAS); ok {
			refs = append(refs, native)
		}
		for _, ref := range refs {
			want := append([]float64(nil), c0...)
			ref.Dsyrk(gblas.Upper, gblas.Trans, n, k, 0.75, a, lda, -1.5, want, n)
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					if j < i {
						if got[i*n+j] != c0[i*n+j] {
							t.Fatalf("n=%d k=%d: lower triangle written at (%d,%d)", n, k, i, j)
						}
						continue
					}
					if math.Abs(got[i*n+j]-want[i*n+j]) > level3Tol*float64(k+2)*8 {
						t.Fatalf("%T n=%d lda=%d k=%d: (%d,%d) = %v, Dsyrk gives %v", ref, n, lda, k, i, j, got[i*n+j], want[i*n+j])
					}
				}
			}
		}
	}
}

// TestSyrkPartMatchesSyrk checks that groups of Syrk's Go path computed
// apart (SyrkPart, in any split) give Syrk's bits, and write only their
// rows of the upper triangle.
func TestSyrkPartMatchesSyrk(t *testing.T) {
	prev := Backend()
	defer func() { _ = Use(prev) }()
	if err := Use(Gonum); err != nil {
		t.Fatal(err)
	}
	require := func(ok bool, format string, args ...any) {
		t.Helper()
		if !ok {
			t.Fatalf(format, args...)
		}
	}
	require(SyrkGoPath(), "SyrkGoPath() false on the gonum backend")
	rng := rand.New(rand.NewPCG(9, 10))
	for _, tc := range []struct{ n, lda, k int }{{4, 4, 0}, {4, 5, 3}, {7, 7, 700}, {60, 60, 3000}, {61, 66, 1000}} {
		n, lda, k := tc.n, tc.lda, tc.k
		a := randSlice(rng, max(1, k*lda))
		want := make([]float64, n*n)
		Syrk(gblas.Trans, n, k, 1, a, lda, 0, want, n)
		groups := SyrkGroups(n)
		for split := 0; split <= groups; split++ {
			got := make([]float64, n*n)
			for i := range got {
				got[i] = math.NaN()
			}
			// The second call reuses the first's scratch.
			y := SyrkPart(n, k, a, lda, got, n, split, groups, nil)
			SyrkPart(n, k, a, lda, got, n, 0, split, y)
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					if j < i {
						require(math.IsNaN(got[i*n+j]), "n=%d k=%d split %d: lower triangle written at (%d,%d)", n, k, split, i, j)
						continue
					}
					require(got[i*n+j] == want[i*n+j], "n=%d k=%d split %d: (%d,%d) = %v, Syrk gives %v", n, k, split, i, j, got[i*n+j], want[i*n+j])
				}
			}
		}
	}
}
