package stream

import "math"

// Schur is the greedy MAP recurrence over a set of rows, shared by the
// offline greedy (OfflineGreedy) and the per-request reranker (package
// rerank): for the conditioning set y₁ … y_r it keeps, for every row x,
// the Schur complement s_x of x given the set, the magnitude μ_x of the
// terms that cancel in it, and the two coefficient families of the
// incremental LU (L is not symmetric; docs/math.md, "Offline greedy"):
//
//	a_m(x) = R_m(x, y_m) / s_{y_m},  b_m(x) = R_m(y_m, x),  s_x = L_xx − Σ_m a_m(x)·b_m(x),
//
// with R_m(x, y) = L_xy − Σ_{q<m} a_q(x)·b_q(y) the residual kernel. Row
// x's families are A[x·Stride : x·Stride + r] and B[…]; S and Mu hold s
// and μ. The caller owns the slices (sized rows × Stride and rows) and
// the kernel entries; Update is the recurrence, GreedyTol its zero rule.
type Schur struct {
	A, B   []float64
	Stride int
	S, Mu  []float64
}

// Update conditions row x on the m-th pivot y (0-based: m earlier
// pivots), given the residuals rc = R_m(x, y) = L_{x,y} − Σ_{q<m}
// a_q(x)·b_q(y) and rr = R_m(y, x) = L_{y,x} − Σ_{q<m} a_q(y)·b_q(x)
// (the caller computes these matrix–vector products over its rows as
// suits it: the offline greedy row by row in order of q, the reranker
// through the BLAS backend) and the pivot's Schur complement sy: it sets
// a_m(x) = rc/sy and b_m(x) = rr, and s_x ← s_x − a_m(x)·b_m(x),
// μ_x ← μ_x + |a_m(x)·b_m(x)|.
func (g *Schur) Update(x, m int, rc, rr, sy float64) {
	am := rc / sy
	o := x*g.Stride + m
	g.A[o], g.B[o] = am, rr
	p := am * rr
	g.S[x] -= p
	g.Mu[x] += math.Abs(p)
}

// GreedyTol is the greedy's numerical zero rule for a conditioning set of
// r items: s_x ≤ GreedyTol(r)·μ_x (or a NaN) is a zero Schur complement,
// det L_{S+x} = 0 (GreedyTol(r) = GreedyZeroFactor·(r+1)·2⁻⁵²).
func GreedyTol(r int) float64 { return GreedyZeroFactor * float64(r+1) * eps }
