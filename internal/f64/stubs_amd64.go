//go:build !noasm

package f64

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// useAsm selects the assembly kernels, once, at start-up: they need AVX2
// and FMA (cpu.X86.HasAVX2 also means the OS saves the ymm state). Without
// them the Go twins run.
var useAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// The assembly kernels (AVX2 + FMA) take pointers and sizes; the callers
// below pass checked, non-empty slices.

//go:noescape
func axpyUnitaryAVX2(alpha float64, x *float64, y *float64, n int)

//go:noescape
func gemvN4AVX2(a *float64, stride int, x *float64, n int, out *float64)

//go:noescape
func gemvTAVX2(out *float64, x *float64, m *float64, rows, cols, ld int)

//go:noescape
func gemvT4AVX2(out *float64, ldo int, x *float64, ldx int, m *float64, rows, cols, ld, incx int)

//go:noescape
func gemvT4AddAVX2(out *float64, ldo int, x *float64, ldx int, m *float64, rows, cols, ld, incx int)

//go:noescape
func gemmNNAVX2(c *float64, ldc int, a *float64, lda int, b *float64, ldb int, m, n, k int)

//go:noescape
func ger4AVX2(a *float64, lda int, x *float64, m int, y *float64, ldy int, n int)

//go:noescape
func gjPanel4AVX2(p *float64, lda int, m int, s int, skip int, x *float64, pc *float64, inv float64, from int) (next int, best float64)

//go:noescape
func adamAVX2(x, m, v, gr *float64, n int, k *AdamCoef) (sum float64)

func axpyUnitary(alpha float64, x, y []float64) {
	if useAsm {
		axpyUnitaryAVX2(alpha, &x[0], &y[0], len(x))
		return
	}
	axpyUnitaryGo(alpha, x, y)
}

func gemvN4(a []float64, lda int, x []float64, y *[4]float64) {
	if useAsm {
		gemvN4AVX2(&a[0], lda, &x[0], len(x), &y[0])
		return
	}
	gemvN4Go(a, lda, x, y)
}

func gemvT(a []float64, lda int, x, y []float64) {
	if useAsm {
		gemvTAVX2(&y[0], &x[0], &a[0], len(x), len(y), lda)
		return
	}
	gemvTGo(a, lda, x, y)
}

func gemvT4(m, n int, a []float64, lda int, x []float64, ldx, incx int, y []float64, ldy int) {
	if useAsm {
		gemvT4AVX2(&y[0], ldy, &x[0], ldx, &a[0], m, n, lda, incx)
		return
	}
	gemvT4Go(m, n, a, lda, x, ldx, incx, y, ldy)
}

func gemvT4Add(m, n int, a []float64, lda int, x []float64, ldx, incx int, y []float64, ldy int) {
	if useAsm {
		gemvT4AddAVX2(&y[0], ldy, &x[0], ldx, &a[0], m, n, lda, incx)
		return
	}
	gemvT4AddGo(m, n, a, lda, x, ldx, incx, y, ldy)
}

func gemmNN(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	switch {
	case !useAsm:
		gemmNNGo(m, n, k, a, lda, b, ldb, c, ldc)
	case m >= 4:
		gemmNNAVX2(&c[0], ldc, &a[0], lda, &b[0], ldb, m, n, k)
	default:
		// The kernel takes rows in fours: each row as four copies of
		// itself (strides 0), written to one place.
		for i := range m {
			gemmNNAVX2(&c[i*ldc], 0, &a[i*lda], 0, &b[0], ldb, 4, n, k)
		}
	}
}

func ger4(m, n int, x, y []float64, ldy int, a []float64, lda int) {
	if useAsm {
		ger4AVX2(&a[0], lda, &x[0], m, &y[0], ldy, n)
		return
	}
	ger4Go(m, n, x, y, ldy, a, lda)
}

func gjPanel4(p []float64, lda, m, s, skip int, x []float64, pc *[4]float64, inv float64, from int) (next int, best float64) {
	if useAsm {
		return gjPanel4AVX2(&p[0], lda, m, s, skip, &x[0], &pc[0], inv, from)
	}
	return gjPanel4Go(p, lda, m, s, skip, x, pc, inv, from)
}

func adam(x, m, v, g []float64, c *AdamCoef) float64 {
	if useAsm {
		return adamAVX2(&x[0], &m[0], &v[0], &g[0], len(g), c)
	}
	return adamGo(x, m, v, g, c)
}

//go:noescape
func prefetchAsm(p unsafe.Pointer, n uintptr)

// prefetch needs no AVX2: PREFETCHT0 is in every amd64 CPU.
func prefetch(p unsafe.Pointer, n uintptr) {
	if n > 0 {
		prefetchAsm(p, n)
	}
}

//go:noescape
func schurRowsAVX2(out *float64, ldo int, a, w, p *float64, ld int, zn, izn *float64, n, k int)

func schurRows(n, k int, a, w, p []float64, ld int, zn, izn []float64, out []float64, ldo int) {
	if !useAsm || n < 4 {
		schurRowsGo(n, k, a, w, p, ld, zn, izn, out, ldo)
		return
	}
	schurRowsAVX2(&out[0], ldo, &a[0], &w[0], &p[0], ld, &zn[0], &izn[0], n, k)
}

//go:noescape
func det4RowsAVX2(r *float64, sc *[8]float64, m1, m4, m5, m6, m7, m9, m13, c13, c12 *float64, n int)

func det4Rows(r []float64, sc *[8]float64, m1, m4, m5, m6, m7, m9, m13, c13, c12 []float64) {
	if useAsm {
		det4RowsAVX2(&r[0], sc, &m1[0], &m4[0], &m5[0], &m6[0], &m7[0], &m9[0], &m13[0], &c13[0], &c12[0], len(r))
		return
	}
	det4RowsGo(r, sc, m1, m4, m5, m6, m7, m9, m13, c13, c12)
}
