package stream

import "math"

// Schur is the greedy MAP recurrence over a set of rows, shared by the
// offline greedy (OfflineGreedy) and the per-request reranker (package
// rerank): for the conditioning set y₁ … y_r it keeps, for every row x,
// the Schur complement s_x of x given the set, the magnitude μ_x of the
// terms that cancel in it, and the two coefficient families of the
// incremental LU (L is not symmetric; ndpp-math.md, "Offline greedy"):
//
//	a_m(x) = R_m(x, y_m) / s_{y_m},  b_m(x) = R_m(y_m, x),  s_x = L_xx − Σ_m a_m(x)·b_m(x),
//
// with R_m(x, y) = L_xy − Σ_{q<m} a_q(x)·b_q(y) the residual kernel. Row
// x's families are A[x·Stride : x·Stride + r] and B[…]; S and Mu hold s
// and μ. The caller owns the slices (sized rows × Stride and rows) and
// the kernel entries; Step is the recurrence.
type Schur struct {
	A, B   []float64
	Stride int
	S, Mu  []float64
}

// Step conditions row x on a new pivot y, given the pivot's first m
// coefficients ay = a_{<m}(y), by = b_{<m}(y) (m = len(ay) = len(by)),
// its Schur complement sy and the kernel entries lxy = L_{x,y} and
// lyx = L_{y,x}: it sets a_m(x) = R(x, y)/sy and b_m(x) = R(y, x), and
// s_x ← s_x − a_m(x)·b_m(x), μ_x ← μ_x + |a_m(x)·b_m(x)|. The residuals
// are summed in order of q, so results do not depend on the caller.
func (g *Schur) Step(x int, ay, by []float64, sy, lxy, lyx float64) {
	o := x * g.Stride
	m := len(ay)
	ax, bx := g.A[o:o+m], g.B[o:o+m]
	by = by[:m]
	rc, rr := lxy, lyx
	for q := range ax {
		rc -= ax[q] * by[q]
		rr -= ay[q] * bx[q]
	}
	am := rc / sy
	g.A[o+m], g.B[o+m] = am, rr
	p := am * rr
	g.S[x] -= p
	g.Mu[x] += math.Abs(p)
}

// GreedyTol is the greedy's numerical zero rule for a conditioning set of
// r items: s_x ≤ GreedyTol(r)·μ_x (or a NaN) is a zero Schur complement,
// det L_{S+x} = 0 (GreedyTol(r) = GreedyZeroFactor·(r+1)·2⁻⁵²).
func GreedyTol(r int) float64 { return GreedyZeroFactor * float64(r+1) * eps }
