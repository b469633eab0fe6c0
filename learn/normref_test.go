package learn

import (
	"math"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/internal/f64"
)

// The tests' direct computation of the exact normaliser, which the
// learners' (package exactnorm) is checked against: G by rank-1 updates,
// A = I + WG by row operations.

// normWork is the tests' reference for the full normaliser
// log det(I + L) = log det(I_2d + WG) (Sylvester) from a 2d×2d Gram matrix
// G = Σᵢ zᵢzᵢᵀ, zᵢ = [vᵢ; bᵢ], W = blockdiag(I, C). With A = I + WG:
//
//	∂/∂zᵢ = K zᵢ,  K = A⁻¹W + WᵀA⁻ᵀ,
//	∂/∂C  = (G[d:,:] · A⁻¹[:,d:])ᵀ.
type normWork struct {
	d      int
	g      []float64 // 2d×2d Gram
	a      []float64 // A, then A⁻¹
	k      []float64 // K
	gc     []float64 // ∂/∂C
	piv    []int
	work   []float64 // the inverse's scratch (f64.InverseWork)
	tmp    []float64
	logDet float64
}

func newNormWork(d int) *normWork {
	m := 2 * d
	return &normWork{d: d, g: make([]float64, m*m), a: make([]float64, m*m), k: make([]float64, m*m),
		gc: make([]float64, d*d), piv: make([]int, m), work: make([]float64, f64.InverseWork(m)), tmp: make([]float64, m)}
}

// gram recomputes G from all items of p.
func (nw *normWork) gram(p *Params) {
	d, m := nw.d, 2*nw.d
	clear(nw.g)
	v, b := p.V, p.brows()
	z := nw.tmp
	for i := 0; i < p.N; i++ {
		copy(z[:d], v[i*d:(i+1)*d])
		copy(z[d:], b[i*d:(i+1)*d])
		for r := 0; r < m; r++ {
			if z[r] != 0 {
				blas.Axpy(z[r], z[r:], nw.g[r*m+r:(r+1)*m])
			}
		}
	}
	nw.symmetrize()
}

// symmetrize copies the upper triangle of G to the lower.
func (nw *normWork) symmetrize() {
	m := 2 * nw.d
	for r := 0; r < m; r++ {
		for s := r + 1; s < m; s++ {
			nw.g[s*m+r] = nw.g[r*m+s]
		}
	}
}

// factor computes A = I + WG, its inverse, log det A, K and ∂/∂C. It
// returns false when A is singular (not possible in exact arithmetic: the
// eigenvalues of WG are those of L plus zeros, with non-negative real part).
func (nw *normWork) factor(c []float64) bool {
	d, m := nw.d, 2*nw.d
	a, g := nw.a, nw.g
	copy(a[:d*m], g[:d*m])
	for r := 0; r < d; r++ {
		row := a[(d+r)*m : (d+r+1)*m]
		clear(row)
		for l := 0; l < d; l++ {
			if x := c[r*d+l]; x != 0 {
				blas.Axpy(x, g[(d+l)*m:(d+l+1)*m], row)
			}
		}
	}
	for r := 0; r < m; r++ {
		a[r*m+r]++
	}
	ld, sg := f64.Inverse(a, m, m, nw.piv, nw.work)
	if sg <= 0 {
		return false
	}
	nw.logDet = ld
	// X = A⁻¹W: X[:, :d] = A⁻¹[:, :d], X[:, d:] = A⁻¹[:, d:] C. K = X + Xᵀ.
	k := nw.k
	for r := 0; r < m; r++ {
		ar := a[r*m : (r+1)*m]
		kr := k[r*m : (r+1)*m]
		copy(kr[:d], ar[:d])
		rowTimes(kr[d:], ar[d:], c, d)
	}
	for r := 0; r < m; r++ {
		for s := r; s < m; s++ {
			x := k[r*m+s] + k[s*m+r]
			k[r*m+s], k[s*m+r] = x, x
		}
	}
	// ∂/∂C = Yᵀ, Y = G[d:, :] A⁻¹[:, d:]  (d×d): gc[s][r] = Σ_t G[d+r][t] A⁻¹[t][d+s].
	clear(nw.gc)
	for r := 0; r < d; r++ {
		grow := g[(d+r)*m : (d+r+1)*m]
		for t, x := range grow {
			if x == 0 {
				continue
			}
			at := a[t*m+d : t*m+m]
			for s, y := range at {
				nw.gc[s*d+r] += x * y
			}
		}
	}
	return true
}

// applyItem adds scale·K zᵢ to acc's row of item i (its v part) and to
// gb, item i's direct row of B (n×d; the rows of V with B = V).
func (nw *normWork) applyItem(p *Params, i int, acc *accum, gb []float64, scale float64) {
	d, m := nw.d, 2*nw.d
	v, b := p.V, p.brows()
	z := nw.tmp
	copy(z[:d], v[i*d:(i+1)*d])
	copy(z[d:], b[i*d:(i+1)*d])
	acc.touch(i)
	o := i * d
	for r := 0; r < m; r++ {
		x := scale * blas.Dot(nw.k[r*m:(r+1)*m], z)
		if r < d {
			acc.gv[o+r] += x
		} else {
			gb[o+r-d] += x
		}
	}
}

// applyC adds scale·∂/∂C to acc.
func (nw *normWork) applyC(acc *accum, scale float64) {
	blas.Axpy(scale, nw.gc, acc.gc)
}

// rowTimes computes out = xᵀM for a row-major d×d M (out_k = Σ_l x_l M_lk),
// one axpy per non-zero x_l.
func rowTimes(out, x, m []float64, d int) {
	clear(out[:d])
	for l, xl := range x[:d] {
		if xl == 0 {
			continue
		}
		blas.Axpy(xl, m[l*d:(l+1)*d], out)
	}
}

// sameBits reports whether a and b hold the same float64 bits.
func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}
