package learn

import "math"

// invBlock is the panel width of invertBlocked: the number of Gauss–Jordan
// steps whose rank-1 updates are gathered into one rank-invBlock pass
// (rank4FMA).
const invBlock = 4

// invBlockedWork returns the number of scratch entries invertBlocked needs
// for a k×k matrix: the panel's multipliers (k×invBlock) and pivot rows
// (invBlock×k).
func invBlockedWork(k int) int { return 2 * invBlock * k }

// invertBlocked is invert (in-place Gauss–Jordan inversion with partial
// pivoting by column, linalg.go) with the elimination delayed and blocked: it
// overwrites the row-major k×k a with its inverse and returns log|det a|
// and its sign (±1), or (−Inf, 0) when a is singular or holds a NaN or an
// Inf (a then holds garbage). piv needs k entries and work
// invBlockedWork(k); both are scratch (on success piv holds the column
// permutation of unpivotRows, composed of the pivots' interchanges).
//
// Step c of Gauss–Jordan adds x yᵀ to every row but the pivot row c (x the
// negated column c, y the scaled pivot row) and replaces row c by y and
// column c by x/pivot. Done one step at a time (invert), each of the
// k steps loads and stores all k² entries for k² multiply-adds, so it is
// bound by memory traffic, not by the FMA units. Here the steps go in
// panels of invBlock consecutive columns c0..c1−1. Within a panel, only the
// panel's own columns are kept up to date (O(k·invBlock) per step), which
// is all the pivot search needs; the pivot row is brought up to date by the
// panel's earlier steps alone (O(k·invBlock)) before it is scaled. The
// other columns (earlier panels, holding the inverse, and later ones) then
// receive the panel's invBlock rank-1 updates in a single rank-invBlock
// pass, a[r][j] += Σ_s x_s[r]·y_s[j], with y_s zero on the panel's columns:
// each entry is loaded and stored once per invBlock FMAs. A row swap also
// swaps the rows' pending multipliers; a pivot row's multipliers of the
// panel's earlier steps are zeroed once applied. Pivots are chosen exactly
// as pivotStep does (largest |entry| of the up-to-date column, first one on
// ties), so log det and sign agree with an LU's; results agree with
// invert's up to the order of rounding.
//
// No product is skipped for a zero factor, so a NaN or Inf anywhere in a
// spreads to every row it touches and reaches a later pivot search, which
// rejects it.
//
// With the AVX2/FMA kernels, a full panel's step is gjPanelFMA (one 4-wide
// FMA per row on the panel's four columns) and the rank-4 pass rank4FMA
// (rows in pairs: 6 loads per 8 vector FMAs instead of 2 per FMA); without
// them (useFMA false) both are Go loops, same algorithm. Blocking the
// Gauss–Jordan sweep was preferred to LU followed by triangular inversion
// and solves: it keeps invert's pivot sequence and single in-place
// pass, and every bulk update is a full-width rank-4 sweep rather than the
// shrinking triangular pieces of the three-phase method.
func invertBlocked(a []float64, k int, piv []int, work []float64) (logAbsDet, sign float64) {
	if k < 0 || len(a) < k*k || len(piv) < k || len(work) < invBlockedWork(k) {
		panic("learn: invertBlocked: short a, piv or work")
	}
	const nb = invBlock
	x := work[:nb*k]         // x[r·nb+s]: multiplier of row r in panel step s
	y := work[nb*k : 2*nb*k] // y[s·k+j]: pivot row of panel step s, 0 on the panel
	sign = 1
	// |det| = detMant·2^detExp, renormalised each step: one Log at the end
	// instead of one per pivot.
	detMant, detExp := 1.0, 0
	for c0 := 0; c0 < k; c0 += nb {
		w := min(nb, k-c0)
		c1 := c0 + w
		fused := useFMA && w == nb // gjPanelFMA steps, fused pivot search
		var p int
		var best float64
		for s := 0; s < w; s++ {
			c := c0 + s
			if s == 0 || !fused {
				p, best = c, math.Abs(a[c*k+c])
				for r := c + 1; r < k; r++ {
					if v := math.Abs(a[r*k+c]); v > best {
						p, best = r, v
					}
				}
			}
			if best == 0 || math.IsNaN(best) || math.IsInf(best, 0) {
				return math.Inf(-1), 0
			}
			piv[c] = p
			if p != c {
				rc, rp := a[c*k:(c+1)*k], a[p*k:(p+1)*k]
				for j := range rc {
					rc[j], rp[j] = rp[j], rc[j]
				}
				xc, xp := x[c*nb:c*nb+s], x[p*nb:p*nb+s]
				for t := range xc {
					xc[t], xp[t] = xp[t], xc[t]
				}
				sign = -sign
			}
			rowc := a[c*k : (c+1)*k]
			// Bring the pivot row up to date outside the panel (y_t is zero
			// on it, and the panel's columns are current already).
			xc := x[c*nb : c*nb+nb]
			for t := 0; t < s; t++ {
				axpyAll(xc[t], y[t*k:(t+1)*k], rowc)
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
			pc := rowc[c0:c1]
			if fused {
				from := k // the panel's last step: no search
				if s < nb-1 {
					from = c + 1
				}
				p, best = gjPanelFMA(&a[c0], k, k, s, c, &x[s], &pc[0], inv, from)
				continue
			}
			for r := 0; r < k; r++ {
				if r == c {
					continue
				}
				row := a[r*k+c0 : r*k+c1]
				f := -row[s]
				x[r*nb+s] = f
				for j, v := range pc {
					row[j] += f * v
				}
				row[s] = f * inv
			}
		}
		if w < nb {
			for r := 0; r < k; r++ {
				clear(x[r*nb+w : r*nb+nb])
			}
			clear(y[w*k : nb*k])
		}
		rank4(a, k, x, y)
	}
	unpivotRows(a, k, piv, work)
	return math.Log(detMant) + float64(detExp)*math.Ln2, sign
}

// unpivotRows is unpivotColumns done as one gather per row. The
// interchanges, applied for c = k−1 down to 0, compose to a permutation
// with new row[j] = old row[perm[j]]; perm overwrites piv in place (swap c
// of perm touches only entries ≥ c, whose piv entries are consumed). Each
// row is then copied to tmp (k entries) and gathered back, branch-free and
// in L1, instead of each interchange sweeping down all k rows.
func unpivotRows(a []float64, k int, piv []int, tmp []float64) {
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
	for r := 0; r < k; r++ {
		row := a[r*k : (r+1)*k]
		copy(tmp, row)
		for j, p := range piv {
			row[j] = tmp[p]
		}
	}
}

// axpyAll sets dst[j] += alpha·src[j] for all j, without skipping alpha = 0
// (so that a NaN or Inf in src still spreads).
func axpyAll(alpha float64, src, dst []float64) {
	if useFMA && len(dst) > 0 {
		axpyFMA(alpha, &src[0], &dst[0], len(dst))
		return
	}
	src = src[:len(dst)]
	for j, v := range src {
		dst[j] += alpha * v
	}
}

// rank4 sets a[r][j] += Σ_{s<4} x[4r+s]·y[s·k+j] for the row-major k×k a.
func rank4(a []float64, k int, x, y []float64) {
	if k == 0 {
		return
	}
	if len(a) < k*k || len(x) < 4*k || len(y) < 4*k {
		panic("learn: rank4: short a, x or y")
	}
	if useFMA {
		rank4FMA(&a[0], k, &x[0], k, &y[0], k, k)
		return
	}
	y0, y1, y2, y3 := y[:k], y[k:2*k], y[2*k:3*k], y[3*k:4*k]
	for r := 0; r < k; r++ {
		row := a[r*k : (r+1)*k]
		xr := x[4*r : 4*r+4]
		x0, x1, x2, x3 := xr[0], xr[1], xr[2], xr[3]
		for j := range row {
			row[j] += x0*y0[j] + x1*y1[j] + x2*y2[j] + x3*y3[j]
		}
	}
}
