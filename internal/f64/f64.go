package f64

import (
	"math"
	"unsafe"
)

// The exported kernels check their arguments (a violation is a programmer
// error and panics with the kernel's name) and call the implementation
// selected for the build and CPU (stubs_amd64.go, stubs_noasm.go).

// AxpyUnitary is
//
//	for i, v := range x {
//		y[i] += alpha * v
//	}
//
// with each entry one fused multiply-add in the assembly kernel. y must be
// at least as long as x; alpha = 0 is not skipped (a NaN or Inf in x
// reaches y).
func AxpyUnitary(alpha float64, x, y []float64) {
	if len(y) < len(x) {
		panic("f64: AxpyUnitary: y shorter than x")
	}
	if len(x) == 0 {
		return
	}
	axpyUnitary(alpha, x, y[:len(x)])
}

// GemvN4 sets y[q] = Σ_{j<n} a[q·lda+j]·x[j] for q = 0..3, n = len(x): the
// product of the 4×n row-major matrix at a (row stride lda ≥ n) with x.
// Each row is summed in eight interleaved partial sums (entries j mod 8 of
// the leading multiple of 8), folded to four, then one more group of four,
// the four reduced as (s₀+s₂)+(s₁+s₃), then the last n mod 4 entries in
// order; fused multiply-adds in the assembly kernel.
func GemvN4(a []float64, lda int, x []float64, y *[4]float64) {
	n := len(x)
	switch {
	case lda < n:
		panic("f64: GemvN4: lda below len(x)")
	case n > 0 && len(a) < 3*lda+n:
		panic("f64: GemvN4: a shorter than four rows")
	}
	if n == 0 {
		*y = [4]float64{}
		return
	}
	gemvN4(a, lda, x, y)
}

// GemvT sets y[j] = Σ_{i<m} x[i]·a[i·lda+j] for j < n, m = len(x), n =
// len(y): xᵀ times the m×n row-major matrix at a (row stride lda ≥ n), or A
// x for a symmetric A. Every y[j] is the sum of the even rows' terms plus
// the sum of the odd rows' terms (the last row of an odd m in the even
// sum), each accumulated in row order; fused multiply-adds in the assembly
// kernel. y is overwritten (zero for m = 0).
func GemvT(a []float64, lda int, x, y []float64) {
	m, n := len(x), len(y)
	switch {
	case lda < n:
		panic("f64: GemvT: lda below len(y)")
	case m > 0 && n > 0 && len(a) < (m-1)*lda+n:
		panic("f64: GemvT: a shorter than len(x) rows")
	}
	if m == 0 || n == 0 {
		clear(y)
		return
	}
	gemvT(a, lda, x, y)
}

// GemvT4 sets y[v·ldy+j] = Σ_{i<m} x[v·ldx+i·incx]·a[i·lda+j] for v < 4,
// j < n: four vectors of length m, whose entries are incx apart and whose
// starts are ldx apart, times the m×n row-major matrix at a (row stride
// lda ≥ n), in one pass over a. Every entry is summed in row order (fused
// multiply-adds in the assembly kernel). Only the 4 output rows' first n
// entries are written, and only the entries named are read (ldx may be
// below m·incx: interleaved vectors). m, n ≥ 0, ldx ≥ 0, incx ≥ 1,
// ldy ≥ n.
func GemvT4(m, n int, a []float64, lda int, x []float64, ldx, incx int, y []float64, ldy int) {
	checkGemvT4("GemvT4", m, n, a, lda, x, ldx, incx, y, ldy)
	if n == 0 {
		return
	}
	if m == 0 {
		for v := range 4 {
			clear(y[v*ldy : v*ldy+n])
		}
		return
	}
	gemvT4(m, n, a, lda, x, ldx, incx, y, ldy)
}

// GemvT4Add is GemvT4 adding to y instead of overwriting it:
// y[v·ldy+j] += Σ_{i<m} x[v·ldx+i·incx]·a[i·lda+j] for v < 4, j < n, each
// entry's sum continuing from its value in y in row order (fused
// multiply-adds in the assembly kernel). So GemvT4 over rows 0…m−1 gives
// the same bits as GemvT4 over rows 0…k−1 followed by GemvT4Add over rows
// k…m−1 (the matrix and the vectors' entries advanced by k rows): a long
// matrix can be taken in blocks that stay in cache. The arguments are
// GemvT4's; m = 0 leaves y as it is.
func GemvT4Add(m, n int, a []float64, lda int, x []float64, ldx, incx int, y []float64, ldy int) {
	checkGemvT4("GemvT4Add", m, n, a, lda, x, ldx, incx, y, ldy)
	if n == 0 || m == 0 {
		return
	}
	gemvT4Add(m, n, a, lda, x, ldx, incx, y, ldy)
}

// checkGemvT4 panics, naming fn, when GemvT4's arguments do not hold.
func checkGemvT4(fn string, m, n int, a []float64, lda int, x []float64, ldx, incx int, y []float64, ldy int) {
	switch {
	case m < 0 || n < 0 || ldx < 0 || incx < 1:
		panic("f64: " + fn + ": negative size or stride, or incx below 1")
	case lda < n || ldy < n:
		panic("f64: " + fn + ": lda or ldy below n")
	case n > 0 && len(y) < 3*ldy+n:
		panic("f64: " + fn + ": y shorter than four rows")
	case m > 0 && len(x) < 3*ldx+(m-1)*incx+1:
		panic("f64: " + fn + ": x too short")
	case m > 0 && n > 0 && len(a) < (m-1)*lda+n:
		panic("f64: " + fn + ": a shorter than m rows")
	}
}

// GemmNN sets c[i·ldc+j] = Σ_{l<k} a[i·lda+l]·b[l·ldb+j] for i < m, j < n:
// C = A·B for row-major A (m×k, row stride lda ≥ k), B (k×n, ldb ≥ n) and
// C (m×n, ldc ≥ n), BLAS's Dgemm with neither operand transposed, α = 1
// and β = 0. It is made for products with few columns n (up to a few
// tens) and many rows m: the assembly kernel holds a block of four rows of
// C by up to twelve columns in registers while the rows of B stream past,
// with no packing and no call per block. Every entry is summed in the
// order of l from zero (fused multiply-adds in the assembly kernel), so a
// NaN or Inf in a row of A or a column of B reaches the entries of its row
// or column. Only C's m×n entries are written (k = 0 sets them to zero),
// and c must not overlap a or b.
func GemmNN(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	switch {
	case m < 0 || n < 0 || k < 0:
		panic("f64: GemmNN: negative size")
	case lda < k || ldb < n || ldc < n:
		panic("f64: GemmNN: lda below k, or ldb or ldc below n")
	case m > 0 && k > 0 && len(a) < (m-1)*lda+k:
		panic("f64: GemmNN: a shorter than m rows")
	case k > 0 && n > 0 && len(b) < (k-1)*ldb+n:
		panic("f64: GemmNN: b shorter than k rows")
	case m > 0 && n > 0 && len(c) < (m-1)*ldc+n:
		panic("f64: GemmNN: c shorter than m rows")
	}
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		for i := range m {
			clear(c[i*ldc : i*ldc+n])
		}
		return
	}
	gemmNN(m, n, k, a, lda, b, ldb, c, ldc)
}

// AdamCoef holds the coefficients of Adam's update, in the order the
// assembly kernel reads them. Beta1c and Beta2c are passed rather than
// computed (normally 1 − β₁ and 1 − β₂ rounded once, as constant
// expressions are).
type AdamCoef struct {
	Beta1, Beta1c float64 // β₁ and 1 − β₁
	Beta2, Beta2c float64 // β₂ and 1 − β₂
	Step, Eps     float64 // the bias-corrected step size and denominator ε
}

// Adam applies Adam's update to the len(g) entries of x, m and v with
// gradient g:
//
//	m[i] = Beta1·m[i] + Beta1c·g[i]
//	v[i] = Beta2·v[i] + (Beta2c·g[i])·g[i]
//	x[i] += Step·m[i] / (√v[i] + Eps)
//
// every operation rounded on its own (no fused multiply-adds, in any build,
// so the assembly kernel and the Go twin give the same bits). It returns
// the sum of the new x in four interleaved partial sums (entries i mod 4 of
// the leading multiple of 4) reduced as (s₀+s₂)+(s₁+s₃), then the rest in
// order: finite exactly when every new x is, unless the sum itself
// overflows. x, m and v must be at least as long as g.
func Adam(x, m, v, g []float64, c *AdamCoef) (sum float64) {
	n := len(g)
	if len(x) < n || len(m) < n || len(v) < n {
		panic("f64: Adam: x, m or v shorter than g")
	}
	if n == 0 {
		return 0
	}
	return adam(x[:n], m[:n], v[:n], g, c)
}

// Assembly reports whether the assembly kernels run in this process (a
// choice made once at start-up from the build and the CPU). Results depend
// on it in their last bits, so tests that compare with bits written by
// another process use it.
func Assembly() bool { return useAsm }

// Prefetch asks the processor to bring the cache lines holding x into its
// caches, for a later access that would otherwise wait for memory. It
// neither reads nor writes x as far as the program can tell (values and
// faults are unaffected; the Go twin does nothing).
func Prefetch[T any](x []T) {
	if len(x) == 0 {
		return
	}
	prefetch(unsafe.Pointer(&x[0]), uintptr(len(x))*unsafe.Sizeof(x[0]))
}

// SchurRows computes, for every row r < n of the row-major n×k matrices W
// and P (row stride ld ≥ k) and with the weights zn and izn of the k
// columns, the Schur complement a[r] − Σ_i w_ri·p_ri of a row and the
// sums that bound its rounding:
//
//	out[r]       = a[r] − Σ_i w_ri·p_ri          (subtracted one by one)
//	out[ldo+r]   = |a[r]| + Σ_i |w_ri·p_ri|
//	out[2·ldo+r] = max_i |p_ri|·zn_i             (as unsigned bit patterns)
//	out[3·ldo+r] = Σ_i |w_ri|·izn_i
//	out[4·ldo+r] = Σ_i |p_ri|·zn_i
//
// Every sum runs in the order of i from its start (0 for the last two),
// every product rounded on its own (no fused multiply-adds, in any build):
// the assembly kernel, which takes four rows at a time, gives the bits of
// the loop over one row at a time, so a row's results do not depend on n.
// The maximum is taken over the bit patterns as unsigned integers, which
// order the nonnegative values as the values do and put a NaN above them
// all; a NaN anywhere in a row reaches its results. ldo ≥ n, len(a) ≥ n,
// len(zn), len(izn) ≥ k; n, k ≥ 0.
func SchurRows(n, k int, a, w, p []float64, ld int, zn, izn []float64, out []float64, ldo int) {
	switch {
	case n < 0 || k < 0:
		panic("f64: SchurRows: negative size")
	case ld < k || ldo < n:
		panic("f64: SchurRows: ld below k or ldo below n")
	case len(a) < n || len(zn) < k || len(izn) < k:
		panic("f64: SchurRows: a shorter than n, or zn or izn shorter than k")
	case n > 0 && k > 0 && (len(w) < (n-1)*ld+k || len(p) < (n-1)*ld+k):
		panic("f64: SchurRows: w or p shorter than n rows")
	case n > 0 && len(out) < 4*ldo+n:
		panic("f64: SchurRows: out shorter than five rows")
	}
	if n == 0 {
		return
	}
	if k == 0 {
		for r, x := range a[:n] {
			out[r], out[ldo+r], out[2*ldo+r], out[3*ldo+r], out[4*ldo+r] = x, math.Abs(x), 0, 0, 0
		}
		return
	}
	schurRows(n, k, a, w, p, ld, zn, izn, out, ldo)
}

// Det4Rows sets, for j < n = len(r), r[j] to the Laplace expansion along
// its top two rows of the 4×4 determinant
//
//	| m0     m1[j]  m2     m3     |
//	| m4[j]  m5[j]  m6[j]  m7[j]  |
//	| m8     m9[j]  ·      ·      |
//	| m12    m13[j] ·      ·      |
//
// whose bottom rows enter through their 2×2 minors: with sc = (m0, m2, m3,
// m8, m12, b03, b02, b23) and the minors c13[j], c12[j] of the bottom rows'
// columns (1, 3) and (1, 2), tij = the top rows' minor of columns i, j and
// b01 = m8·m13[j] − m9[j]·m12,
//
//	r = 0 + t01·b23;  r −= t02·c13;  r += t03·c12;  r += t12·b03;  r −= t13·b02;  r += t23·b01
//
// with tij = m_i·m_{4+j} − m_j·m_{4+i} (top-row entry times second-row
// entry), every operation rounded on its own (no fused multiply-adds, in
// any build), so the assembly kernel, four entries at a time, gives the
// bits of the expression written out for one j. The slices must be at
// least n long.
func Det4Rows(r []float64, sc *[8]float64, m1, m4, m5, m6, m7, m9, m13, c13, c12 []float64) {
	n := len(r)
	if len(m1) < n || len(m4) < n || len(m5) < n || len(m6) < n || len(m7) < n ||
		len(m9) < n || len(m13) < n || len(c13) < n || len(c12) < n {
		panic("f64: Det4Rows: an input shorter than r")
	}
	if n == 0 {
		return
	}
	det4Rows(r, sc, m1[:n], m4[:n], m5[:n], m6[:n], m7[:n], m9[:n], m13[:n], c13[:n], c12[:n])
}
