package blas

import (
	"fmt"

	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	gonumblas "gonum.org/v1/gonum/blas/gonum"

	"github.com/ndpp-go/ndpp/internal/f64"
)

// Gemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices (C is
// m×n, op(A) m×k, op(B) k×n), like blas64's Dgemm, through the backend in
// use. On the pure-Go backend a product C = A·op(B) (alpha = 1, beta = 0)
// with a small op(B) (n·k ≤ GemmGoMaxNK) runs in a register-blocked Go
// kernel instead: products of a few hundred rows against a small matrix
// (ndpp's conditional batches, the sampler's blocks), where the overheads
// of gonum's blocked Dgemm dominate. (The oracle's block products use
// internal/f64.GemmNN directly, on both backends.) Results agree with Dgemm to rounding;
// the summation order may differ. It panics, with the bad argument named,
// for negative sizes, short leading dimensions or short slices.
func Gemm(tA, tB gblas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	impl := blas64.Implementation()
	if _, pure := impl.(gonumblas.Implementation); !pure || tA != gblas.NoTrans || n*k > GemmGoMaxNK ||
		(tB != gblas.NoTrans && tB != gblas.Trans) || alpha != 1 || beta != 0 {
		impl.Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	checkGemm(tB, m, n, k, a, lda, b, ldb, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	if tB == gblas.Trans {
		gemmNT(m, n, k, a, lda, b, ldb, c, ldc)
	} else {
		gemmNN(m, n, k, a, lda, b, ldb, c, ldc)
	}
}

// checkGemm validates the arguments of the Go kernels (op(A) = A).
func checkGemm(tB gblas.Transpose, m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	bRows, bCols := k, n
	if tB == gblas.Trans {
		bRows, bCols = n, k
	}
	switch {
	case m < 0 || n < 0 || k < 0:
		panic(fmt.Sprintf("blas: Gemm with negative size m = %d, n = %d, k = %d", m, n, k))
	case lda < max(1, k):
		panic(fmt.Sprintf("blas: Gemm lda = %d < max(1, k = %d)", lda, k))
	case ldb < max(1, bCols):
		panic(fmt.Sprintf("blas: Gemm ldb = %d < %d", ldb, max(1, bCols)))
	case ldc < max(1, n):
		panic(fmt.Sprintf("blas: Gemm ldc = %d < max(1, n = %d)", ldc, n))
	case m > 0 && k > 0 && len(a) < (m-1)*lda+k:
		panic(fmt.Sprintf("blas: Gemm len(a) = %d too short for %d×%d with lda %d", len(a), m, k, lda))
	case bRows > 0 && bCols > 0 && len(b) < (bRows-1)*ldb+bCols:
		panic(fmt.Sprintf("blas: Gemm len(b) = %d too short for %d×%d with ldb %d", len(b), bRows, bCols, ldb))
	case m > 0 && n > 0 && len(c) < (m-1)*ldc+n:
		panic(fmt.Sprintf("blas: Gemm len(c) = %d too short for %d×%d with ldc %d", len(c), m, n, ldc))
	}
}

// gemmNT computes C = A·Bᵀ in 2×2 blocks of C, each entry a dot product of
// a row of A and a row of B.
func gemmNT(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	row := func(x []float64, ld, i int) []float64 { return x[i*ld : i*ld+k : i*ld+k] }
	i := 0
	for ; i+2 <= m; i += 2 {
		a0, a1 := row(a, lda, i), row(a, lda, i+1)
		c0, c1 := c[i*ldc:i*ldc+n:i*ldc+n], c[(i+1)*ldc:(i+1)*ldc+n:(i+1)*ldc+n]
		j := 0
		for ; j+2 <= n; j += 2 {
			b0, b1 := row(b, ldb, j), row(b, ldb, j+1)
			a1, b0, b1 := a1[:len(a0)], b0[:len(a0)], b1[:len(a0)]
			var s00, s01, s10, s11 float64
			for l, x0 := range a0 {
				x1, y0, y1 := a1[l], b0[l], b1[l]
				s00 += x0 * y0
				s01 += x0 * y1
				s10 += x1 * y0
				s11 += x1 * y1
			}
			c0[j], c0[j+1], c1[j], c1[j+1] = s00, s01, s10, s11
		}
		if j < n {
			b0 := row(b, ldb, j)
			a1, b0 := a1[:len(a0)], b0[:len(a0)]
			var s00, s10 float64
			for l, x0 := range a0 {
				s00 += x0 * b0[l]
				s10 += a1[l] * b0[l]
			}
			c0[j], c1[j] = s00, s10
		}
	}
	if i < m {
		a0 := row(a, lda, i)
		c0 := c[i*ldc : i*ldc+n : i*ldc+n]
		for j := range c0 {
			b0 := row(b, ldb, j)[:len(a0)]
			var s float64
			for l, x := range a0 {
				s += x * b0[l]
			}
			c0[j] = s
		}
	}
}

// gemmNN computes C = A·B one row of C at a time, adding two scaled rows of
// B per pass.
func gemmNN(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	brow := func(l int) []float64 { return b[l*ldb : l*ldb+n : l*ldb+n] }
	for i := 0; i < m; i++ {
		cr := c[i*ldc : i*ldc+n : i*ldc+n]
		clear(cr)
		ar := a[i*lda : i*lda+k : i*lda+k]
		l := 0
		for ; l+2 <= k; l += 2 {
			x0, x1 := ar[l], ar[l+1]
			b0, b1 := brow(l)[:len(cr)], brow(l + 1)[:len(cr)]
			for j := range cr {
				cr[j] += x0*b0[j] + x1*b1[j]
			}
		}
		if l < k {
			x0 := ar[l]
			b0 := brow(l)[:len(cr)]
			for j := range cr {
				cr[j] += x0 * b0[j]
			}
		}
	}
}

// Syrk computes the upper triangle of C = alpha·AᵀA + beta·C (tA =
// Trans: A is k×n, C n×n) or alpha·AAᵀ + beta·C (NoTrans: A is n×k) for
// row-major matrices, through the backend in use (BLAS's Dsyrk): the
// symmetric product costs half a Gemm's work. The strictly lower triangle
// of C is not referenced. On the pure-Go backend AᵀA runs in a kernel of
// four-row products (internal/f64.GemvT4, 4×12 entries of C in registers),
// blocked: A is read from memory once, in blocks of rows that stay in cache
// while every group of four rows of C passes over them, each entry summed in
// row order (the same bits as unblocked). At the Gram matrices' shapes (n =
// 2d ≤ a few hundred, k up to millions) it runs at OpenBLAS's Dsyrk's speed
// and several times faster than gonum's (blas/bench_test.go,
// BenchmarkSyrk).
func Syrk(tA gblas.Transpose, n, k int, alpha float64, a []float64, lda int, beta float64, c []float64, ldc int) {
	impl := blas64.Implementation()
	if _, pure := impl.(gonumblas.Implementation); !pure || tA != gblas.Trans || n == 0 {
		impl.Dsyrk(gblas.Upper, tA, n, k, alpha, a, lda, beta, c, ldc)
		return
	}
	if n < 0 {
		panic(fmt.Sprintf("blas: Syrk with negative size n = %d", n))
	}
	checkSyrk("Syrk", n, k, a, lda, c, ldc)
	if n < 4 {
		syrkSmall(n, k, alpha, a, lda, beta, c, ldc)
		return
	}
	// Rows r0..r0+3 of C from column r0 on, for the groups r0 = 0, 4, 8, …
	// (the last group ends at row n−1): syrkGroups, then scaled into C.
	groups := SyrkGroups(n)
	var stack [2560]float64
	y := stack[:]
	if need := syrkScratch(n, 0, groups); need > len(y) {
		y = make([]float64, need)
	}
	syrkGroups(n, k, a, lda, 0, groups, y)
	syrkStore(n, 0, groups, y, alpha, beta, c, ldc)
}

// syrkStore writes groups g0…g1−1 of syrkGroups' y into the upper
// triangle of C: alpha·y, plus beta·C when beta ≠ 0 (alpha = 1, beta = 0
// copies y's bits).
func syrkStore(n, g0, g1 int, y []float64, alpha, beta float64, c []float64, ldc int) {
	off := 0
	for g := g0; g < g1; g++ {
		r := 4 * g
		r0 := min(r, n-4)
		w := n - r0
		yg := y[off : off+4*w]
		off += 4 * w
		for v := r - r0; v < 4; v++ {
			row := c[(r0+v)*ldc+r0+v : (r0+v)*ldc+n]
			src := yg[v*w+v : v*w+w]
			for j, x := range src {
				if beta == 0 {
					row[j] = alpha * x
				} else {
					row[j] = alpha*x + beta*row[j]
				}
			}
		}
	}
}

// SyrkGroups returns the number of groups of rows in which Syrk's Go path
// computes AᵀA (n ≥ 4 columns of A): group g is rows 4g…4g+3 of the upper
// triangle, from the diagonal on (the last group ends at row n−1 and
// starts where the one before ends). Its cost is about proportional to the
// group's width n − min(4g, n−4).
func SyrkGroups(n int) int { return (n + 3) / 4 }

// SyrkGoPath reports whether Syrk with tA = Trans runs its Go path, the one
// SyrkPart splits.
func SyrkGoPath() bool {
	_, pure := blas64.Implementation().(gonumblas.Implementation)
	return pure
}

// SyrkPart computes groups g0…g1−1 (SyrkGroups) of the upper triangle of C
// = AᵀA for the k×n row-major A (n ≥ 4): the bits of Syrk's Go path with
// alpha = 1 and beta = 0 in those rows, whichever groups another call
// computes, so that the groups of one product can be computed by several
// goroutines. It writes only the group's rows from the diagonal on; y is
// scratch, grown as needed, and returned. It panics, with the bad argument
// named, on short slices or leading dimensions.
func SyrkPart(n, k int, a []float64, lda int, c []float64, ldc int, g0, g1 int, y []float64) []float64 {
	switch {
	case n < 4:
		panic(fmt.Sprintf("blas: SyrkPart with n = %d < 4", n))
	case g0 < 0 || g1 > SyrkGroups(n) || g0 > g1:
		panic(fmt.Sprintf("blas: SyrkPart groups %d…%d of %d", g0, g1, SyrkGroups(n)))
	}
	checkSyrk("SyrkPart", n, k, a, lda, c, ldc)
	if need := syrkScratch(n, g0, g1); cap(y) < need {
		y = make([]float64, need)
	}
	y = y[:cap(y)]
	syrkGroups(n, k, a, lda, g0, g1, y)
	syrkStore(n, g0, g1, y, 1, 0, c, ldc)
	return y
}

// checkSyrk validates the arguments of Syrk's Go path and SyrkPart (n ≥ 0,
// A k×n with lda, C n×n with ldc), panicking with the bad one named.
func checkSyrk(name string, n, k int, a []float64, lda int, c []float64, ldc int) {
	switch {
	case k < 0:
		panic(fmt.Sprintf("blas: %s with negative k = %d", name, k))
	case lda < n || ldc < n:
		panic(fmt.Sprintf("blas: %s lda = %d or ldc = %d below n = %d", name, lda, ldc, n))
	case k > 0 && len(a) < (k-1)*lda+n:
		panic(fmt.Sprintf("blas: %s len(a) = %d too short for %d×%d with lda %d", name, len(a), k, n, lda))
	case len(c) < (n-1)*ldc+n:
		panic(fmt.Sprintf("blas: %s len(c) = %d too short for %d×%d with ldc %d", name, len(c), n, n, ldc))
	}
}

// syrkScratch is the scratch syrkGroups needs for groups g0…g1−1.
func syrkScratch(n, g0, g1 int) int {
	s := 0
	for g := g0; g < g1; g++ {
		s += 4 * (n - min(4*g, n-4))
	}
	return s
}

// syrkGroups computes groups g0…g1−1 of AᵀA (n ≥ 4) into y, group after
// group, each 4×w row-major (w = n − r0): y[v][j] = Σ_l A[l][r0+v]·A[l][r0+j].
// A is taken in blocks of rows that stay in cache while every group passes
// over them (f64.GemvT4 on the first block, f64.GemvT4Add on the next,
// which continues each entry's sum in row order: the same bits as one
// pass over all rows).
func syrkGroups(n, k int, a []float64, lda int, g0, g1 int, y []float64) {
	if k == 0 {
		clear(y[:syrkScratch(n, g0, g1)])
		return
	}
	kb := syrkBlockRows(lda)
	for l0 := 0; ; l0 += kb {
		rows := min(kb, k-l0)
		off := 0
		for g := g0; g < g1; g++ {
			r0 := min(4*g, n-4)
			w := n - r0
			blk := a[l0*lda+r0:]
			if l0 == 0 {
				f64.GemvT4(rows, w, blk, lda, blk, 1, lda, y[off:], w)
			} else {
				f64.GemvT4Add(rows, w, blk, lda, blk, 1, lda, y[off:], w)
			}
			off += 4 * w
		}
		if l0+kb >= k {
			return
		}
	}
}

// syrkBlockBytes is the size of the blocks of A's rows that Syrk's Go path
// keeps in cache while every group of four rows of C passes over them.
const syrkBlockBytes = 64 << 10

// syrkBlockRows returns the rows of A in one of Syrk's blocks (at least 16).
func syrkBlockRows(lda int) int { return max(16, syrkBlockBytes/(8*lda)) }

// syrkSmall is Syrk's Go path for n < 4: each entry a dot product of two
// columns of A.
func syrkSmall(n, k int, alpha float64, a []float64, lda int, beta float64, c []float64, ldc int) {
	for v := 0; v < n; v++ {
		for j := v; j < n; j++ {
			s := 0.0
			for l := 0; l < k; l++ {
				s += a[l*lda+v] * a[l*lda+j]
			}
			if beta == 0 {
				c[v*ldc+j] = alpha * s
			} else {
				c[v*ldc+j] = alpha*s + beta*c[v*ldc+j]
			}
		}
	}
}
