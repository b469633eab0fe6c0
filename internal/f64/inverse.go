package f64

import "math"

// BlockedMin is the smallest order k that Inverse and InverseSign invert by
// the blocked elimination; smaller matrices go through the unblocked one.
const BlockedMin = 24

// panel is the width of the blocked elimination's panels: the number of
// Gauss–Jordan steps whose rank-1 updates are gathered into one rank-4
// pass (ger4).
const panel = 4

// blocked reports whether a k×k matrix is inverted by the blocked
// elimination.
func blocked(k int) bool { return k >= BlockedMin }

// InverseWork returns the number of scratch entries Inverse and
// InverseSign need for a k×k matrix (0 when they need none).
func InverseWork(k int) int {
	if blocked(k) {
		return blockedWork(k)
	}
	return 0
}

// blockedWork is the scratch of invertBlocked: the panel's multipliers
// (k×4) and pivot rows (4×k).
func blockedWork(k int) int { return 2 * panel * k }

// Inverse overwrites the k×k row-major matrix a (row stride lda ≥ k) with
// its inverse, by Gauss–Jordan elimination with partial pivoting (the row
// with the largest |entry| of the current column, the first on ties), and
// returns log|det a| and the sign of det a (±1). A pivot that is zero or not
// finite (a singular a, or a NaN or Inf that reaches a pivot) makes it
// return (−Inf, 0), with a holding garbage; a NaN or Inf that reaches no
// pivot (the unblocked elimination skips rows whose multiplier is 0) leaves
// non-finite entries in the inverse. piv (k entries) and work
// (InverseWork(k) entries) are scratch.
//
// From BlockedMin on the elimination is blocked (invertBlocked): the same
// pivots, the same results up to the order of rounding, several times
// faster with the assembly kernels. Below, it is one step at a time
// (invertUnblocked), with each multiply and add rounded on its own and
// log|det a| the sum of the pivots' logarithms.
func Inverse(a []float64, k, lda int, piv []int, work []float64) (logAbsDet, sign float64) {
	checkInverse("Inverse", a, k, lda, piv, work)
	if blocked(k) {
		return invertBlocked(a, k, lda, piv, work, true)
	}
	return invertUnblocked(a, k, lda, piv, true)
}

// InverseSign is Inverse without log|det a| (no logarithms are taken): it
// returns only the sign, 0 for a singular a. A 2×2 matrix is inverted by
// its adjugate over det a = a₀₀a₁₁ − a₀₁a₁₀ (0 when det a is zero or not
// finite).
func InverseSign(a []float64, k, lda int, piv []int, work []float64) (sign float64) {
	checkInverse("InverseSign", a, k, lda, piv, work)
	if k == 2 {
		return inverse2(a, lda)
	}
	if blocked(k) {
		_, sign = invertBlocked(a, k, lda, piv, work, false)
		return sign
	}
	_, sign = invertUnblocked(a, k, lda, piv, false)
	return sign
}

func checkInverse(name string, a []float64, k, lda int, piv []int, work []float64) {
	switch {
	case k < 0 || lda < k:
		panic("f64: " + name + ": negative k or lda below k")
	case k > 0 && len(a) < (k-1)*lda+k:
		panic("f64: " + name + ": a shorter than k rows")
	case len(piv) < k:
		panic("f64: " + name + ": piv shorter than k")
	case len(work) < InverseWork(k):
		panic("f64: " + name + ": work shorter than InverseWork(k)")
	}
}

// inverse2 inverts the 2×2 a by its adjugate and returns the sign of its
// determinant (0, and a unchanged, when the determinant is zero or not
// finite).
func inverse2(a []float64, lda int) (sign float64) {
	a00, a01, a10, a11 := a[0], a[1], a[lda], a[lda+1]
	det := a00*a11 - a01*a10
	if det == 0 || math.IsNaN(det) || math.IsInf(det, 0) {
		return 0
	}
	inv := 1 / det
	a[0], a[1], a[lda], a[lda+1] = a11*inv, -a01*inv, -a10*inv, a00*inv
	if det < 0 {
		return -1
	}
	return 1
}

// invertUnblocked is Inverse one Gauss–Jordan step at a time: step c
// swaps the pivot row into row c, divides it by the pivot (leaving 1/pivot
// in column c) and subtracts f times it from every other row r with
// f = a[r][c] ≠ 0 (after setting a[r][c] = 0); the row interchanges are
// then undone on the columns, in reverse order. log|det a| is the sum of
// the pivots' logarithms, computed only when wantLog is set (else 0 is
// returned for it).
func invertUnblocked(a []float64, k, lda int, piv []int, wantLog bool) (logAbsDet, sign float64) {
	sign = 1
	for c := range k {
		p, best := pivotSearch(a, k, lda, c)
		if badPivot(best) {
			return math.Inf(-1), 0
		}
		piv[c] = p
		rowc := a[c*lda : c*lda+k]
		if p != c {
			swapRows(rowc, a[p*lda:p*lda+k])
			sign = -sign
		}
		pv := rowc[c]
		if pv < 0 {
			sign = -sign
		}
		if wantLog {
			logAbsDet += math.Log(math.Abs(pv))
		}
		inv := 1 / pv
		rowc[c] = 1
		for j := range rowc {
			rowc[j] *= inv
		}
		for r := range k {
			if r == c {
				continue
			}
			rowr := a[r*lda : r*lda+k]
			f := rowr[c]
			if f == 0 {
				continue
			}
			rowr[c] = 0
			for j, x := range rowc {
				rowr[j] += float64(-f * x) // not fused
			}
		}
	}
	for c := k - 1; c >= 0; c-- {
		if p := piv[c]; p != c {
			for r := range k {
				row := a[r*lda : r*lda+k]
				row[c], row[p] = row[p], row[c]
			}
		}
	}
	return logAbsDet, sign
}

// invertBlocked is Inverse with the elimination delayed and blocked; work
// needs blockedWork(k) entries. On success piv holds the column
// permutation of unpivotRows, composed of the pivots' interchanges. log|det
// a| is the logarithm of the product of the pivots' magnitudes, kept as a
// mantissa and a power of two; it is computed only when wantLog is set
// (else 0 is returned for it).
//
// Step c of Gauss–Jordan adds x yᵀ to every row but the pivot row c (x the
// negated column c, y the scaled pivot row) and replaces row c by y and
// column c by x/pivot. Done one step at a time, each of the k steps loads
// and stores all k² entries for k² multiply-adds, so it is bound by memory
// traffic, not by the FMA units. Here the steps go in panels of 4
// consecutive columns c0..c1−1. Within a panel, only the panel's own
// columns are kept up to date (O(4k) per step, gjPanel4), which is all the
// pivot search needs; the pivot row is brought up to date by the panel's
// earlier steps alone (O(4k)) before it is scaled. The other columns
// (earlier panels, holding the inverse, and later ones) then receive the
// panel's 4 rank-1 updates in a single rank-4 pass (ger4), a[r][j] += Σ_s
// x_s[r]·y_s[j], with y_s zero on the panel's columns: each entry is loaded
// and stored once per 4 multiply-adds. A row swap also swaps the rows'
// pending multipliers; a pivot row's multipliers of the panel's earlier
// steps are zeroed once applied. Pivots are chosen as invertUnblocked
// chooses them, so log det and sign agree with an LU's; results agree with
// invertUnblocked's up to the order of rounding. A last panel narrower
// than 4 is eliminated in Go, with its multipliers and pivot rows padded
// with zeros for the rank-4 pass.
//
// No product is skipped for a zero factor, so a NaN or Inf anywhere in a
// spreads to every row it touches and reaches a later pivot search, which
// rejects it. Blocking the Gauss–Jordan sweep was preferred to LU followed
// by triangular inversion and solves: it keeps the unblocked pivot
// sequence and single in-place pass, and every bulk update is a full-width
// rank-4 sweep rather than the shrinking triangular pieces of the
// three-phase method.
func invertBlocked(a []float64, k, lda int, piv []int, work []float64, wantLog bool) (logAbsDet, sign float64) {
	const nb = panel
	x := work[:nb*k]         // x[r·nb+s]: multiplier of row r in panel step s
	y := work[nb*k : 2*nb*k] // y[s·k+j]: pivot row of panel step s, 0 on the panel
	sign = 1
	// |det| = detMant·2^detExp, renormalised each step: one Log at the end
	// instead of one per pivot.
	detMant, detExp := 1.0, 0
	for c0 := 0; c0 < k; c0 += nb {
		w := min(nb, k-c0)
		c1 := c0 + w
		full := w == nb // gjPanel4 steps, with the next pivot search fused
		var p int
		var best float64
		for s := range w {
			c := c0 + s
			if s == 0 || !full {
				p, best = pivotSearch(a, k, lda, c)
			}
			if badPivot(best) {
				return math.Inf(-1), 0
			}
			piv[c] = p
			rowc := a[c*lda : c*lda+k]
			if p != c {
				swapRows(rowc, a[p*lda:p*lda+k])
				swapRows(x[c*nb:c*nb+s], x[p*nb:p*nb+s])
				sign = -sign
			}
			// Bring the pivot row up to date outside the panel (y_t is zero
			// on it, and the panel's columns are current already).
			xc := x[c*nb : c*nb+nb]
			for t := range s {
				axpyUnitary(xc[t], y[t*k:(t+1)*k], rowc)
				xc[t] = 0
			}
			pv := rowc[c]
			if pv < 0 {
				sign = -sign
			}
			m, e := math.Frexp(detMant * math.Abs(pv))
			detMant, detExp = m, detExp+e
			inv := 1 / pv
			rowc[c] = 1
			for j := range rowc {
				rowc[j] *= inv
			}
			ys := y[s*k : (s+1)*k]
			copy(ys, rowc)
			clear(ys[c0:c1])
			// Column c, the multipliers, and the panel's other columns.
			xc[s] = 0
			if full {
				from := k // the panel's last step: no search
				if s < nb-1 {
					from = c + 1
				}
				p, best = gjPanel4(a[c0:], lda, k, s, c, x[s:], (*[4]float64)(rowc[c0:c1]), inv, from)
				continue
			}
			pc := rowc[c0:c1]
			for r := range k {
				if r == c {
					continue
				}
				row := a[r*lda+c0 : r*lda+c1]
				f := -row[s]
				x[r*nb+s] = f
				for j, v := range pc {
					row[j] += f * v
				}
				row[s] = f * inv
			}
		}
		if w < nb {
			for r := range k {
				clear(x[r*nb+w : r*nb+nb])
			}
			clear(y[w*k : nb*k])
		}
		ger4(k, k, x, y, k, a, lda)
	}
	unpivotRows(a, k, lda, piv, work[:k])
	if !wantLog {
		return 0, sign
	}
	return math.Log(detMant) + float64(detExp)*math.Ln2, sign
}

// pivotSearch returns the pivot row of column c of the k×k a: the first
// row r ≥ c with the largest |a[r][c]|, and that magnitude (a NaN is never
// larger; a NaN at row c stays the best).
func pivotSearch(a []float64, k, lda, c int) (p int, best float64) {
	p, best = c, math.Abs(a[c*lda+c])
	for r := c + 1; r < k; r++ {
		if v := math.Abs(a[r*lda+c]); v > best {
			p, best = r, v
		}
	}
	return p, best
}

// badPivot reports a pivot magnitude that is zero or not finite.
func badPivot(best float64) bool { return best == 0 || math.IsNaN(best) || math.IsInf(best, 0) }

// swapRows exchanges the entries of x and y (len(y) ≥ len(x)).
func swapRows(x, y []float64) {
	y = y[:len(x)]
	for j := range x {
		x[j], y[j] = y[j], x[j]
	}
}

// unpivotRows undoes the interchanges of invertBlocked on its columns. The
// interchanges, applied for c = k−1 down to 0, compose to a permutation
// with new row[j] = old row[perm[j]]; perm overwrites piv in place (swap c
// of perm touches only entries ≥ c, whose piv entries are consumed). Each
// row is then copied to tmp (k entries) and gathered back, instead of each
// interchange sweeping down all k rows.
func unpivotRows(a []float64, k, lda int, piv []int, tmp []float64) {
	piv, tmp = piv[:k], tmp[:k]
	identity := true
	for c := k - 1; c >= 0; c-- {
		p := piv[c]
		piv[c] = c
		if p != c {
			piv[c], piv[p] = piv[p], piv[c]
			identity = false
		}
	}
	if identity {
		return
	}
	for r := range k {
		row := a[r*lda : r*lda+k]
		copy(tmp, row)
		for j, p := range piv {
			row[j] = tmp[p]
		}
	}
}
