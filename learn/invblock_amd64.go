package learn

// rank4FMA sets a[i·lda+j] += Σ_{s<4} x[4i+s]·y[s·ldy+j] for i < m, j < n:
// a rank-4 update of an m×n block in one pass, each entry of a loaded and
// stored once per four fused multiply-adds (AVX2 + FMA). No product is
// skipped, so a NaN or Inf in x or y reaches a. The caller checks the
// bounds.
//
//go:noescape
func rank4FMA(a *float64, lda int, x *float64, m int, y *float64, ldy int, n int)
