package learn

import (
	"math"

	"gonum.org/v1/gonum/blas/gonum"

	"github.com/ndpp-go/ndpp/blas"
)

// asm is gonum's pure-Go BLAS, whose level-1 kernels are SIMD assembly on
// amd64: about 2× faster than a Go loop from length ~30 (measured), while a
// cgo BLAS would lose on vectors this short.
var asm gonum.Implementation

// Small dense kernels for the per-basket work (|S| ≲ 25, d ≲ 100). They are
// plain loops on row-major slices: at these sizes a BLAS call costs more than
// it saves, and the loops allocate nothing.

// rowTimes computes out = xᵀM for a row-major d×d M (out_k = Σ_l x_l M_lk).
func rowTimes(out, x, m []float64, d int) {
	clear(out[:d])
	for l, xl := range x[:d] {
		if xl == 0 {
			continue
		}
		blas.Axpy(xl, m[l*d:(l+1)*d], out)
	}
}

// invert overwrites the row-major k×k matrix a with its inverse by
// Gauss–Jordan elimination with partial pivoting and returns log|det a| and
// the sign of det a (0 when a pivot is exactly zero or not finite, in which
// case a holds garbage). piv needs k entries.
func invert(a []float64, k int, piv []int) (logAbsDet, sign float64) {
	return invertLog(a, k, piv, true)
}

// invertLog is invert, computing log|det a| only when wantLog is set (else
// it returns 0 for it: no logarithms are taken).
func invertLog(a []float64, k int, piv []int, wantLog bool) (logAbsDet, sign float64) {
	sign = 1
	for c := 0; c < k; c++ {
		pv, s := pivotStep(a, k, c, piv)
		if s == 0 {
			return math.Inf(-1), 0
		}
		sign *= s
		if wantLog {
			logAbsDet += math.Log(math.Abs(pv))
		}
		rowc := a[c*k : (c+1)*k]
		for r := 0; r < k; r++ {
			if r == c {
				continue
			}
			rowr := a[r*k : (r+1)*k]
			f := rowr[c]
			if f == 0 {
				continue
			}
			rowr[c] = 0
			if k <= 8 {
				// A call costs more than these few entries; the
				// conversion keeps the compiler from fusing the multiply
				// and add, so the bits are blas.Axpy's.
				rowr = rowr[:len(rowc)]
				for j, x := range rowc {
					rowr[j] += float64(-f * x)
				}
			} else {
				blas.Axpy(-f, rowc, rowr)
			}
		}
	}
	unpivotColumns(a, k, piv)
	return logAbsDet, sign
}

// pivotStep is the pivot step of column c of Gauss–Jordan elimination on
// the row-major k×k a: it swaps the row with the largest |a[r][c]|, r ≥ c,
// into row c (recorded in piv[c]) and divides row c by the pivot, leaving
// the pivot's position holding 1/pivot. It returns the pivot and the sign
// change (±1, counting the row swap), or sign 0 when the pivot is zero or
// not finite.
func pivotStep(a []float64, k, c int, piv []int) (pivot, sign float64) {
	p, best := c, math.Abs(a[c*k+c])
	for r := c + 1; r < k; r++ {
		if v := math.Abs(a[r*k+c]); v > best {
			p, best = r, v
		}
	}
	if best == 0 || math.IsNaN(best) || math.IsInf(best, 0) {
		return 0, 0
	}
	piv[c] = p
	sign = 1
	if p != c {
		rc, rp := a[c*k:(c+1)*k], a[p*k:(p+1)*k]
		for j := range rc {
			rc[j], rp[j] = rp[j], rc[j]
		}
		sign = -1
	}
	rowc := a[c*k : (c+1)*k]
	pv := rowc[c]
	if pv < 0 {
		sign = -sign
	}
	inv := 1 / pv
	rowc[c] = 1
	for j := range rowc {
		rowc[j] *= inv
	}
	return pv, sign
}

// unpivotColumns undoes Gauss–Jordan's row interchanges (piv) on the
// computed inverse as column interchanges, in reverse order.
func unpivotColumns(a []float64, k int, piv []int) {
	for c := k - 1; c >= 0; c-- {
		if p := piv[c]; p != c {
			for r := 0; r < k; r++ {
				row := a[r*k : (r+1)*k]
				row[c], row[p] = row[p], row[c]
			}
		}
	}
}

// prefetchShare hints the CPU to fetch share k of w (k < w) of the cache
// lines of s: for writing when write is set and the CPU has PREFETCHW, else
// for reading. Spreading a buffer's lines over w calls lets the transfers
// overlap with other work.
func prefetchShare(s []float64, k, w int, write bool) {
	const perLine = 8 // float64s per 64-byte line
	lo, n := lineShare((len(s)+perLine-1)/perLine, k, w)
	if n == 0 {
		return
	}
	prefetchLines(&s[lo*perLine], n, write && hasPrefetchW)
}

// lineShare returns the first line and the number of lines of share k of w
// of lines lines: the shares are consecutive, cover every line once, and
// all but the last ones have ⌈lines/w⌉ lines.
func lineShare(lines, k, w int) (lo, n int) {
	per := (lines + w - 1) / w
	lo = k * per
	if lo >= lines {
		return lines, 0
	}
	return lo, min(per, lines-lo)
}
