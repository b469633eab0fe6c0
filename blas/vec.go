package blas

import "gonum.org/v1/gonum/blas/gonum"

// Short-vector kernels for the per-item and per-basket hot loops of ndpp
// (vectors of length d or k, usually below a few hundred). They never go
// through cgo, whatever the backend: a cgo call costs more than the whole
// operation at these lengths. From VecAsmMin on, Dot and Axpy use gonum's
// level-1 kernels, which are SIMD assembly on amd64 (about 2× faster than a
// Go loop from length ~30, measured); below it, an unrolled Go loop. Ger is
// gonum's Dger at every size.

// VecAsmMin is the length from which Dot and Axpy call gonum's assembly
// kernels.
const VecAsmMin = 24

var vecAsm gonum.Implementation

// Dot returns x·y over len(x) entries (y must be at least as long).
func Dot(x, y []float64) float64 {
	n := len(x)
	if n >= VecAsmMin {
		return vecAsm.Ddot(n, x, 1, y[:n], 1)
	}
	y = y[:n]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < n; i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// Axpy sets y += a·x over len(x) entries (y must be at least as long).
func Axpy(a float64, x, y []float64) {
	n := len(x)
	if n >= VecAsmMin {
		vecAsm.Daxpy(n, a, x, 1, y[:n], 1)
		return
	}
	y = y[:n]
	i := 0
	for ; i+4 <= n; i += 4 {
		xs, ys := x[i:i+4:i+4], y[i:i+4:i+4]
		ys[0] += a * xs[0]
		ys[1] += a * xs[1]
		ys[2] += a * xs[2]
		ys[3] += a * xs[3]
	}
	for ; i < n; i++ {
		y[i] += a * x[i]
	}
}

// Ger sets a[i·lda+j] += alpha·x[i]·y[j] for i < len(x), j < len(y): the
// rank-one update of the len(x)×len(y) row-major matrix a (row stride lda
// ≥ max(1, len(y))), by gonum's Dger (assembly on amd64), never through
// cgo.
// alpha = 0 leaves a unchanged.
func Ger(alpha float64, x, y, a []float64, lda int) {
	vecAsm.Dger(len(x), len(y), alpha, x, 1, y, 1, a, lda)
}
