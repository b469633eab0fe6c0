package blas

import (
	"fmt"
	"math/rand/v2"
	"testing"

	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack"
)

// The benchmarks below measure each routine on each backend directly (not
// through the process-wide switch), so one run gives the ratios that set the
// cut-offs in crossover.go:
//
//	go test -tags openblas -run '^$' -bench . ./blas

func backendsForBench() []string {
	if HasOpenBLAS() {
		return []string{Gonum, OpenBLAS}
	}
	return []string{Gonum}
}

func BenchmarkDgemm(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{4, 8, 16, 32, 64, 128, 256} {
		x, y, z := randSlice(rng, n*n), randSlice(rng, n*n), make([]float64, n*n)
		for _, name := range backendsForBench() {
			impl, _ := Impl(name)
			b.Run(fmt.Sprintf("n=%d/backend=%s", n, name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					impl.Dgemm(gblas.NoTrans, gblas.NoTrans, n, n, n, 1, x, n, y, n, 0, z, n)
				}
			})
		}
	}
}

func BenchmarkGram(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 1))
	for _, d := range []int{10, 30, 100} {
		n := 10000
		z := randSlice(rng, n*2*d)
		g := make([]float64, 4*d*d)
		for _, name := range backendsForBench() {
			impl, _ := Impl(name)
			b.Run(fmt.Sprintf("n=%d/d=%d/backend=%s", n, d, name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					impl.Dgemm(gblas.Trans, gblas.NoTrans, 2*d, 2*d, n, 1, z, 2*d, z, 2*d, 0, g, 2*d)
				}
			})
		}
	}
}

func BenchmarkDgemv(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 1))
	for _, n := range []int{8, 32, 128, 512} {
		a, x, y := randSlice(rng, n*n), randSlice(rng, n), make([]float64, n)
		for _, name := range backendsForBench() {
			impl, _ := Impl(name)
			b.Run(fmt.Sprintf("n=%d/backend=%s", n, name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					impl.Dgemv(gblas.NoTrans, n, n, 1, a, n, x, 1, 0, y, 1)
				}
			})
		}
	}
}

func BenchmarkDdot(b *testing.B) {
	rng := rand.New(rand.NewPCG(4, 1))
	for _, n := range []int{8, 128, 256, 512, 1024, 4096} {
		x, y := randSlice(rng, n), randSlice(rng, n)
		for _, name := range backendsForBench() {
			impl, _ := Impl(name)
			b.Run(fmt.Sprintf("n=%d/backend=%s", n, name), func(b *testing.B) {
				for b.Loop() {
					_ = impl.Ddot(n, x, 1, y, 1)
				}
			})
		}
	}
}

func benchFactor(b *testing.B, f func(impl lapack.Float64, a []float64, n int, ipiv []int)) {
	rng := rand.New(rand.NewPCG(5, 1))
	for _, n := range []int{8, 32, 64, 96, 128, 256, 512} {
		src := randSlice(rng, n*n)
		for i := 0; i < n; i++ {
			src[i*n+i] += float64(n) // diagonally dominant: SPD-ish and well conditioned
		}
		for i := 0; i < n; i++ {
			for j := 0; j < i; j++ {
				src[i*n+j] = src[j*n+i]
			}
		}
		a, ipiv := make([]float64, n*n), make([]int, n)
		for _, name := range backendsForBench() {
			impl, _ := LAPACKImpl(name)
			b.Run(fmt.Sprintf("n=%d/backend=%s", n, name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					copy(a, src)
					f(impl, a, n, ipiv)
				}
			})
		}
	}
}

func BenchmarkLU(b *testing.B) {
	benchFactor(b, func(impl lapack.Float64, a []float64, n int, ipiv []int) { impl.Dgetrf(n, n, a, n, ipiv) })
}

func BenchmarkCholesky(b *testing.B) {
	benchFactor(b, func(impl lapack.Float64, a []float64, n int, _ []int) { impl.Dpotrf(gblas.Upper, n, a, n) })
}

// BenchmarkSyrk is the Gram matrix of the online learner's exact
// normaliser, ZᵀZ for Z of n rows of 2d = 60 (the upper triangle): Syrk's
// Go path (the gonum backend) and OpenBLAS's Dsyrk.
func BenchmarkSyrk(b *testing.B) {
	rng := rand.New(rand.NewPCG(4, 1))
	const m = 60
	for _, n := range []int{1000, 100000} {
		z := randSlice(rng, n*m)
		g := make([]float64, m*m)
		for _, name := range backendsForBench() {
			b.Run(fmt.Sprintf("n=%d/backend=%s", n, name), func(b *testing.B) {
				prev := Backend()
				defer func() { _ = Use(prev) }()
				if err := Use(name); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(8 * n * m))
				b.ReportAllocs()
				for b.Loop() {
					Syrk(gblas.Trans, m, n, 1, z, m, 0, g, m)
				}
			})
		}
	}
}
