package learn

// rank4FMA sets a[i·lda+j] += Σ_{s<4} x[4i+s]·y[s·ldy+j] for i < m, j < n:
// a rank-4 update of an m×n block in one pass, each entry of a loaded and
// stored once per four fused multiply-adds (AVX2 + FMA). No product is
// skipped, so a NaN or Inf in x or y reaches a. The caller checks the
// bounds.
//
//go:noescape
func rank4FMA(a *float64, lda int, x *float64, m int, y *float64, ldy int, n int)

// gjPanelFMA is one Gauss–Jordan step on a panel of four columns: for each
// row r < m but skip, with q = p[r·lda:] the row's panel and f = −q[s], it
// sets x[4r] = f, q[0..3] += f·pc[0..3] and then q[s] = f·inv. It also
// returns the pivot search of the panel's next column on the updated rows
// r ≥ from: the first row next with the largest |q[s+1]| and best = that
// |q[s+1]| (next = −1 when from ≥ m; from < m needs s < 3). The caller
// checks the bounds (x points at the step's multiplier slot of row 0).
//
//go:noescape
func gjPanelFMA(p *float64, lda int, m int, s int, skip int, x *float64, pc *float64, inv float64, from int) (next int, best float64)
