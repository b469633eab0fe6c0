package blas

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	gblas "gonum.org/v1/gonum/blas"
	gonumblas "gonum.org/v1/gonum/blas/gonum"

	"github.com/ndpp-go/ndpp/internal/f64"
)

// refGemm is C = alpha·op(A)·op(B) + beta·C by the definition.
func refGemm(tA, tB gblas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			s := 0.0
			for l := 0; l < k; l++ {
				ia, ib := i*lda+l, l*ldb+j
				if tA == gblas.Trans {
					ia = l*lda + i
				}
				if tB == gblas.Trans {
					ib = j*ldb + l
				}
				s += a[ia] * b[ib]
			}
			if beta == 0 {
				c[i*ldc+j] = alpha * s
			} else {
				c[i*ldc+j] = alpha*s + beta*c[i*ldc+j]
			}
		}
	}
}

// TestGemm checks Gemm against the definition on every backend, for shapes
// on both sides of GemmGoMaxNK, both transposes of B (and of A, which
// always goes to Dgemm), padded leading dimensions, and the scalars
// (beta = 0 must ignore NaNs in C).
func TestGemm(t *testing.T) {
	forEachBackend(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 4))
		shapes := []struct{ m, n, k int }{
			{0, 3, 2}, {3, 0, 2}, {3, 2, 0}, {1, 1, 1}, {5, 3, 2}, {257, 8, 10}, {257, 8, 8},
			{256, 16, 20}, {33, 16, 32}, {9, 16, 33}, {8, 50, 50}, {7, 1, 1}, {2, 7, 3},
		}
		for _, sh := range shapes {
			for _, tA := range []gblas.Transpose{gblas.NoTrans, gblas.Trans} {
				for _, tB := range []gblas.Transpose{gblas.NoTrans, gblas.Trans} {
					for _, sc := range []struct{ alpha, beta float64 }{{1, 0}, {1.5, -0.5}, {-2, 1}, {0, 0.25}} {
						m, n, k := sh.m, sh.n, sh.k
						pad := 1 + rng.IntN(3)
						ar, ac := m, k
						if tA == gblas.Trans {
							ar, ac = k, m
						}
						br, bc := k, n
						if tB == gblas.Trans {
							br, bc = n, k
						}
						lda, ldb, ldc := max(1, ac)+pad, max(1, bc)+pad, max(1, n)+pad
						a, b := randSlice(rng, max(1, ar)*lda), randSlice(rng, max(1, br)*ldb)
						c := randSlice(rng, max(1, m)*ldc)
						if sc.beta == 0 {
							for i := range c {
								c[i] = math.NaN()
							}
						}
						want := append([]float64(nil), c...)
						refGemm(tA, tB, m, n, k, sc.alpha, a, lda, b, ldb, sc.beta, want, ldc)
						Gemm(tA, tB, m, n, k, sc.alpha, a, lda, b, ldb, sc.beta, c, ldc)
						for i := 0; i < m; i++ {
							for j := 0; j < n; j++ {
								g, w := c[i*ldc+j], want[i*ldc+j]
								if math.IsNaN(g) || math.Abs(g-w) > level3Tol*float64(k+1)*(1+math.Abs(w)) {
									t.Fatalf("%v%v m=%d n=%d k=%d α=%v β=%v: C[%d,%d] = %v, want %v", tA, tB, m, n, k, sc.alpha, sc.beta, i, j, g, w)
								}
							}
							for j := n; j < ldc && i*ldc+j < len(c); j++ {
								if g, w := c[i*ldc+j], want[i*ldc+j]; !(g == w || math.IsNaN(g) && math.IsNaN(w)) {
									t.Fatalf("%v%v m=%d n=%d k=%d: padding C[%d,%d] changed", tA, tB, m, n, k, i, j)
								}
							}
						}
					}
				}
			}
		}
	})
}

// TestGemmPanics: bad arguments on the Go kernel's path panic with the
// package name.
func TestGemmPanics(t *testing.T) {
	prev := Backend()
	defer func() { _ = Use(prev) }()
	if err := Use(Gonum); err != nil {
		t.Fatal(err)
	}
	x := make([]float64, 16)
	for name, f := range map[string]func(){
		"negative": func() { Gemm(gblas.NoTrans, gblas.Trans, -1, 2, 2, 1, x, 2, x, 2, 0, x, 2) },
		"lda":      func() { Gemm(gblas.NoTrans, gblas.Trans, 2, 2, 3, 1, x, 2, x, 3, 0, x, 2) },
		"ldc":      func() { Gemm(gblas.NoTrans, gblas.NoTrans, 2, 3, 2, 1, x, 2, x, 3, 0, x, 2) },
		"short c":  func() { Gemm(gblas.NoTrans, gblas.NoTrans, 4, 4, 2, 1, x, 2, x, 4, 0, x[:10], 4) },
	} {
		func() {
			defer func() {
				r := recover()
				if s, ok := r.(string); !ok || len(s) < 6 || s[:6] != "blas: " {
					t.Errorf("%s: panic %v, want a blas: message", name, r)
				}
			}()
			f()
		}()
	}
}

// BenchmarkGemm compares, for the shapes of the oracle's block products (m
// rows of a block against an n×k matrix), Gemm on the pure-Go backend (its
// Go kernel up to GemmGoMaxNK) with gonum's Dgemm and with OpenBLAS.
func BenchmarkGemm(b *testing.B) {
	prev := Backend()
	defer func() { _ = Use(prev) }()
	rng := rand.New(rand.NewPCG(1, 1))
	for _, sh := range []struct{ n, k int }{{8, 8}, {8, 10}, {16, 20}, {16, 50}, {32, 32}, {32, 50}, {50, 50}} {
		m := 257
		a, x, c := randSlice(rng, m*sh.k), randSlice(rng, sh.n*sh.k), make([]float64, m*sh.n)
		for _, tB := range []gblas.Transpose{gblas.Trans, gblas.NoTrans} {
			ldb := sh.k
			if tB == gblas.NoTrans {
				ldb = sh.n
			}
			run := func(name string, f func()) {
				b.Run(fmt.Sprintf("B=%c/m=%d/n=%d/k=%d/%s", byte(tB), m, sh.n, sh.k, name), func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						f()
					}
				})
			}
			if err := Use(Gonum); err != nil {
				b.Fatal(err)
			}
			run("Gemm-gonum", func() { Gemm(gblas.NoTrans, tB, m, sh.n, sh.k, 1, a, sh.k, x, ldb, 0, c, sh.n) })
			run("Dgemm-gonum", func() {
				gonumblas.Implementation{}.Dgemm(gblas.NoTrans, tB, m, sh.n, sh.k, 1, a, sh.k, x, ldb, 0, c, sh.n)
			})
			if impl, ok := Impl(OpenBLAS); ok {
				run("Dgemm-openblas", func() { impl.Dgemm(gblas.NoTrans, tB, m, sh.n, sh.k, 1, a, sh.k, x, ldb, 0, c, sh.n) })
			}
			// internal/f64's kernel, on op(B) stored k×n (for B=T, the
			// transposed copy the oracle keeps).
			xn := x
			if tB == gblas.Trans {
				xn = make([]float64, len(x))
				for j := range sh.n {
					for l := range sh.k {
						xn[l*sh.n+j] = x[j*sh.k+l]
					}
				}
			}
			run("GemmNN-f64", func() { f64.GemmNN(m, sh.n, sh.k, a, sh.k, xn, sh.n, c, sh.n) })
		}
	}
}
