//go:build noasm || !amd64

package f64

import "unsafe"

// This build has no assembly kernels: the Go twins run.

func axpyUnitary(alpha float64, x, y []float64) { axpyUnitaryGo(alpha, x, y) }

func gemvN4(a []float64, lda int, x []float64, y *[4]float64) { gemvN4Go(a, lda, x, y) }

func gemvT(a []float64, lda int, x, y []float64) { gemvTGo(a, lda, x, y) }

func gemvT4(m, n int, a []float64, lda int, x []float64, ldx, incx int, y []float64, ldy int) {
	gemvT4Go(m, n, a, lda, x, ldx, incx, y, ldy)
}

func gemvT4Add(m, n int, a []float64, lda int, x []float64, ldx, incx int, y []float64, ldy int) {
	gemvT4AddGo(m, n, a, lda, x, ldx, incx, y, ldy)
}

func gemmNN(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	gemmNNGo(m, n, k, a, lda, b, ldb, c, ldc)
}

func ger4(m, n int, x, y []float64, ldy int, a []float64, lda int) { ger4Go(m, n, x, y, ldy, a, lda) }

func gjPanel4(p []float64, lda, m, s, skip int, x []float64, pc *[4]float64, inv float64, from int) (next int, best float64) {
	return gjPanel4Go(p, lda, m, s, skip, x, pc, inv, from)
}

func adam(x, m, v, g []float64, c *AdamCoef) float64 { return adamGo(x, m, v, g, c) }

// useAsm is false: this build has no assembly.
const useAsm = false

func prefetch(p unsafe.Pointer, n uintptr) { prefetchGo(p, n) }

func schurRows(n, k int, a, w, p []float64, ld int, zn, izn []float64, out []float64, ldo int) {
	schurRowsGo(n, k, a, w, p, ld, zn, izn, out, ldo)
}

func det4Rows(r []float64, sc *[8]float64, m1, m4, m5, m6, m7, m9, m13, c13, c12 []float64) {
	det4RowsGo(r, sc, m1, m4, m5, m6, m7, m9, m13, c13, c12)
}
