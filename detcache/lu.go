package detcache

import (
	"math"

	"github.com/ndpp-go/ndpp/blas"
)

// Small dense kernels on row-major matrices with a leading dimension, written
// for k ≤ 2d ≤ a few hundred: a cgo call to LAPACK costs more than these
// O(k³) loops at the sizes the oracle sees (see shared/docs/blas-notes.md),
// and they work in caller-owned buffers without allocating.

// luFactor overwrites the k×k matrix a (leading dimension ld) with its LU
// factors (unit lower L below the diagonal, U on and above), using partial
// pivoting; piv[i] is the row swapped with row i at step i. It returns
// log|det a| and the sign of det a (0 when a pivot is exactly zero or not
// finite).
func luFactor(a []float64, k, ld int, piv []int) (logAbs, sign float64) {
	sign = 1
	for c := 0; c < k; c++ {
		p, best := c, math.Abs(a[c*ld+c])
		for r := c + 1; r < k; r++ {
			if v := math.Abs(a[r*ld+c]); v > best {
				p, best = r, v
			}
		}
		piv[c] = p
		if !(best > 0) || math.IsInf(best, 0) {
			return math.Inf(-1), 0
		}
		if p != c {
			rc, rp := a[c*ld:c*ld+k], a[p*ld:p*ld+k]
			for j := range rc {
				rc[j], rp[j] = rp[j], rc[j]
			}
			sign = -sign
		}
		d := a[c*ld+c]
		if d < 0 {
			sign = -sign
		}
		logAbs += math.Log(math.Abs(d))
		rc := a[c*ld+c+1 : c*ld+k]
		for r := c + 1; r < k; r++ {
			f := a[r*ld+c] / d
			a[r*ld+c] = f
			if f == 0 {
				continue
			}
			rr := a[r*ld+c+1 : r*ld+k]
			for j, x := range rc {
				rr[j] -= f * x
			}
		}
	}
	return logAbs, sign
}

// luInverse writes the inverse of the matrix factorised by luFactor into inv
// (k×k, leading dimension ld), one column at a time; col has length ≥ k.
func luInverse(lu []float64, k, ld int, piv []int, inv, col []float64) {
	col = col[:k]
	for j := 0; j < k; j++ {
		for i := range col {
			col[i] = 0
		}
		col[j] = 1
		// Apply the row interchanges in order: b ← P b.
		for i := 0; i < k; i++ {
			if p := piv[i]; p != i {
				col[i], col[p] = col[p], col[i]
			}
		}
		// Forward substitution with unit lower L.
		for i := 1; i < k; i++ {
			row := lu[i*ld : i*ld+i]
			col[i] -= blas.Dot(row, col[:i])
		}
		// Back substitution with U.
		for i := k - 1; i >= 0; i-- {
			row := lu[i*ld+i+1 : i*ld+k]
			col[i] = (col[i] - blas.Dot(row, col[i+1:])) / lu[i*ld+i]
		}
		for i, x := range col {
			inv[i*ld+j] = x
		}
	}
}

// exactRcond returns the reciprocal 1-norm condition number 1/(‖A‖₁‖A⁻¹‖₁)
// of the row-major k×k matrix a, given its inverse.
func exactRcond(a, inv []float64, k int) float64 {
	n1, n2 := 0.0, 0.0
	for j := 0; j < k; j++ {
		c1, c2 := 0.0, 0.0
		for i := 0; i < k; i++ {
			c1 += math.Abs(a[i*k+j])
			c2 += math.Abs(inv[i*k+j])
		}
		n1, n2 = math.Max(n1, c1), math.Max(n2, c2)
	}
	return 1 / (n1 * n2)
}
