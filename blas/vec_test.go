package blas

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestVecKernels checks Dot and Axpy against plain loops at lengths on both
// sides of VecAsmMin and of the 4-way unrolling.
func TestVecKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for n := 0; n <= 3*VecAsmMin; n++ {
		x, y := randSlice(rng, n), randSlice(rng, n+2) // y longer than x is allowed
		want := 0.0
		for i := range x {
			want += x[i] * y[i]
		}
		if got := Dot(x, y); math.Abs(got-want) > 1e-13*float64(n+1) {
			t.Fatalf("Dot n=%d: %v, want %v", n, got, want)
		}
		z := append([]float64(nil), y...)
		Axpy(-0.75, x, z)
		for i := range z {
			w := y[i]
			if i < n {
				w += -0.75 * x[i]
			}
			if math.Abs(z[i]-w) > 1e-15 {
				t.Fatalf("Axpy n=%d: entry %d = %v, want %v", n, i, z[i], w)
			}
		}
	}
}

// TestGer checks Ger against the plain double loop, with a padded row
// stride whose padding must stay untouched, and alpha = 0.
func TestGer(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, m := range []int{0, 1, 2, 5, 30, 60} {
		for _, n := range []int{0, 1, 3, 4, 7, 30, 61} {
			for _, alpha := range []float64{-1, 0.5, 0} {
				lda := max(1, n) + rng.IntN(3)
				x, y := randSlice(rng, m), randSlice(rng, n)
				a := randSlice(rng, m*lda)
				got := append([]float64(nil), a...)
				Ger(alpha, x, y, got, lda)
				for i := range m {
					for j := range lda {
						w := a[i*lda+j]
						if j < n {
							w += alpha * x[i] * y[j]
						}
						if math.Abs(got[i*lda+j]-w) > 1e-15*(1+math.Abs(w)) {
							t.Fatalf("Ger m=%d n=%d alpha=%g: a[%d][%d] = %v, want %v", m, n, alpha, i, j, got[i*lda+j], w)
						}
					}
				}
			}
		}
	}
}

func BenchmarkDot(b *testing.B) {
	rng := rand.New(rand.NewPCG(8, 8))
	for _, n := range []int{8, 16, 32, 64, 128} {
		x, y := randSlice(rng, n), randSlice(rng, n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s := 0.0
			for b.Loop() {
				s += Dot(x, y)
			}
			_ = s
		})
	}
}
