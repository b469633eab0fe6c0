package learn

import (
	"github.com/ndpp-go/ndpp/learn/internal/vecmat"
	"math"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/internal/f64"
)

// Grad holds a gradient in the shape of Params: V and B (N×Dim rows; B nil
// for shared parameters, whose whole gradient is in V), D (the generator
// of C) and T (θ, nil without a diagonal).
type Grad struct {
	V, B, D, T []float64
}

// NewGrad returns a zero gradient shaped like p.
func NewGrad(p *Params) *Grad {
	g := &Grad{V: make([]float64, len(p.V)), D: make([]float64, len(p.D))}
	if p.B != nil {
		g.B = make([]float64, len(p.B))
	}
	if p.Theta != nil {
		g.T = make([]float64, len(p.Theta))
	}
	return g
}

// accum collects the per-item pieces of a gradient so that per-basket work
// stays O(|S|²d + |S|³): with P the basket's coefficient matrix,
//
//	∂/∂vₐ  = Σ_b (P_ba + P_ab) v_b           (gv)
//	∂/∂bₐ  = C · Σ_b (P_ba − P_ab) b_b       (C·u, applied once per item in finish)
//	∂/∂C  += Σₐ bₐ (Σ_b P_ba b_b)ᵀ           (Σᵢ bᵢ wᵢᵀ, applied once in finish)
//
// gc takes direct contributions (the full normaliser's, which reaches the
// rows of V and B directly, not through accum); gt collects ∂/∂θᵢ. With a
// diagonal all pieces are with respect to the rows held (see Params):
// basketTerm scales each item's pieces by sᵢ.
type accum struct {
	n, d        int
	gv, u, w    []float64 // n×d
	gt          []float64 // n
	gc          []float64 // d×d gradient w.r.t. C
	touched     []bool
	touchedList []int
	// pieced marks the rows with basket pieces (u, w): C uᵢ and Σ bᵢwᵢᵀ
	// are formed over those only (the normaliser touches every row, with
	// direct terms).
	pieced    []bool
	pieceList []int
	value     float64
	// finish's scratch: the touched rows of u and w, C uᵢ, bᵢ by column,
	// Σ bᵢwᵢᵀ.
	fu, fw, fcu, fbt, fprod []float64
}

func newAccum(n, d int) *accum {
	a := &accum{}
	a.resize(n, d)
	return a
}

func (a *accum) resize(n, d int) {
	grow := func(s []float64, m int) []float64 {
		if cap(s) >= m {
			return s[:m]
		}
		return append(s[:cap(s)], make([]float64, m-cap(s))...)[:m]
	}
	a.n, a.d = n, d
	a.gv, a.u, a.w = grow(a.gv, n*d), grow(a.u, n*d), grow(a.w, n*d)
	a.gt = grow(a.gt, n)
	a.gc = grow(a.gc, d*d)
	for len(a.touched) < n {
		a.touched = append(a.touched, false)
		a.pieced = append(a.pieced, false)
	}
}

func (a *accum) touch(i int) {
	if !a.touched[i] {
		a.touched[i] = true
		a.touchedList = append(a.touchedList, i)
	}
}

// touchPiece marks row i as touched and holding basket pieces.
func (a *accum) touchPiece(i int) {
	a.touch(i)
	if !a.pieced[i] {
		a.pieced[i] = true
		a.pieceList = append(a.pieceList, i)
	}
}

// reset zeroes the touched rows and C.
func (a *accum) reset() {
	d := a.d
	for _, i := range a.touchedList {
		clear(a.gv[i*d : (i+1)*d])
		clear(a.u[i*d : (i+1)*d])
		clear(a.w[i*d : (i+1)*d])
		a.gt[i] = 0
		a.touched[i] = false
		a.pieced[i] = false
	}
	a.touchedList = a.touchedList[:0]
	a.pieceList = a.pieceList[:0]
	clear(a.gc)
	a.value = 0
}

// merge adds o into a.
func (a *accum) merge(o *accum) {
	d := a.d
	for _, i := range o.pieceList {
		a.touchPiece(i)
	}
	for _, i := range o.touchedList {
		a.touch(i)
		r := i * d
		// A unit axpy rounds as an add: the same sums as blas.Axpy's.
		f64.AxpyUnitary(1, o.gv[r:r+d], a.gv[r:r+d])
		f64.AxpyUnitary(1, o.u[r:r+d], a.u[r:r+d])
		f64.AxpyUnitary(1, o.w[r:r+d], a.w[r:r+d])
		a.gt[i] += o.gt[i]
	}
	blas.Axpy(1, o.gc, a.gc)
	a.value += o.value
}

// finish turns the accumulated pieces into the gradient w.r.t. p's
// parameters, added into g for the touched rows and, when projectD is set,
// g.D; otherwise the gradient w.r.t. C is left in a.gc for the caller.
func (a *accum) finish(p *Params, c []float64, g *Grad, projectD bool) {
	d := a.d
	b := p.brows()
	t := len(a.pieceList)
	// Over the rows with pieces at once: C uᵢ = −(uᵢᵀC)ᵀ (C skew) and
	// Σ bᵢwᵢᵀ (row s: (bᵢ[s])ᵢᵀ W), as four-vector products.
	a.fu, a.fw, a.fcu = resize(a.fu, t*d), resize(a.fw, t*d), resize(a.fcu, t*d)
	a.fbt, a.fprod = resize(a.fbt, d*t), resize(a.fprod, d*d)
	for q, i := range a.pieceList {
		copy(a.fu[q*d:(q+1)*d], a.u[i*d:(i+1)*d])
		copy(a.fw[q*d:(q+1)*d], a.w[i*d:(i+1)*d])
		for s, x := range b[i*d : (i+1)*d] {
			a.fbt[s*t+q] = x
		}
	}
	vecmat.N(a.fcu, d, a.fu, d, t, c, d, d, d, -1)
	if t > 0 {
		vecmat.N(a.fprod, d, a.fbt, t, d, a.fw, t, d, d, 1)
		blas.Axpy(1, a.fprod, a.gc)
	}
	for q, i := range a.pieceList {
		r := i * d
		gbi := g.V[r : r+d]
		if g.B != nil {
			gbi = g.B[r : r+d]
		}
		blas.Axpy(1, a.fcu[q*d:(q+1)*d], gbi)
	}
	for _, i := range a.touchedList {
		r := i * d
		blas.Axpy(1, a.gv[r:r+d], g.V[r:r+d])
		if g.T != nil {
			g.T[i] += a.gt[i]
		}
	}
	if !projectD {
		return
	}
	// C = D − Dᵀ: ∂/∂D = G_C − G_Cᵀ.
	for r := 0; r < d; r++ {
		for s := 0; s < d; s++ {
			g.D[r*d+s] += a.gc[r*d+s] - a.gc[s*d+r]
		}
	}
}

// basketWork holds the scratch and the results of one basket evaluation
// (pieces).
type basketWork struct {
	a, a2  []float64
	piv    []int
	work   []float64 // the inverse's scratch (f64.InverseWork)
	zl, zr []float64 // rows [vᵢ; bᵢᵀC] and [vᵢ; bᵢ] (zr at least 4 rows)
	xs     []float64 // 3|S|×|S| coefficient rows
	// The pieces, rows by basket position: gv (|S|×d), wu (2|S|×d: the wᵢ,
	// then the uᵢ) and cu (|S|×d, C uᵢ); with a diagonal, dd (|S|: ∂t/∂δᵢ)
	// and the items' sᵢ = √(1 + δᵢ) and δᵢ.
	gv, wu, cu []float64
	dd, ss, ds []float64
	k, d       int
	// next, when set, adds a next-item term of the same basket through
	// the basket's own products (nextFusion); the pieces must then be
	// unrestricted, their P being A⁻¹.
	next *nextFusion
}

func (w *basketWork) ensure(k, d int) {
	if cap(w.a) < k*k {
		w.a, w.a2 = make([]float64, k*k), make([]float64, k*k)
		w.piv = make([]int, k)
	}
	w.a, w.a2, w.piv = w.a[:k*k], w.a2[:k*k], w.piv[:k]
	w.work = resize(w.work, f64.InverseWork(k))
	// gv, cu and xs have room for the four vectors vecmatRoom computes
	// when the basket has two or three items.
	kr := max(k, 4)
	w.gv, w.wu, w.cu = resize(w.gv, kr*d)[:k*d], resize(w.wu, 2*k*d), resize(w.cu, kr*d)[:k*d]
	w.xs = resize(w.xs, 3*k*k+4*k)[:3*k*k]
	w.dd, w.ss, w.ds = resize(w.dd, k), resize(w.ss, k), resize(w.ds, k)
	w.k, w.d = k, d
}

// row returns basket item q's rows of gv, w and u.
func (w *basketWork) row(q int) (gv, wi, u []float64) {
	k, d := w.k, w.d
	return w.gv[q*d : (q+1)*d], w.wu[q*d : (q+1)*d], w.wu[(k+q)*d : (k+q+1)*d]
}

// pieces evaluates, for validated items, the gradient pieces of
//
//	t(S) = log det(L_S + εI) − [restricted] log det(I + L_S).
//
// For A = L_S + εI (not symmetric) d log det A = tr(A⁻¹ dA) gives
// ∂/∂V_S = V_S(A⁻¹ + A⁻ᵀ), ∂/∂B_S = C B_S(A⁻¹ − A⁻ᵀ), ∂/∂C = B_S A⁻ᵀ B_Sᵀ;
// the restricted normaliser is the same with I + L_S, so both terms share
// one coefficient matrix P = A⁻¹ − (I + L_S)⁻¹. The pieces are the rows
//
//	gvᵢ = Σⱼ (P_ji + P_ij) vⱼ,   wᵢ = Σⱼ P_ji bⱼ,   uᵢ = Σⱼ (P_ji − P_ij) bⱼ
//
// of (P + Pᵀ)V_S, PᵀB_S and (Pᵀ − P)B_S (four-vector products, vecmatN)
// and, when withCU is set (else cu is left as it was for baskets of two or
// more items), C uᵢ = Σⱼ (P_ji − P_ij) C bⱼ with C bⱼ = −(bⱼᵀC)ᵀ (C skew),
// from the rows bⱼᵀC at hand (|S|²d instead of |S|d²). Entries of
// L_S are single dots of length 2d, [vᵢ; Cᵀbᵢ]·[vⱼ; bⱼ]. bcS holds the rows
// bᵢᵀC, or is nil to have them computed from c. A single item (bᵀCb = 0,
// P a scalar, u = 0) takes a closed form. With value set, t(S) is returned
// (else 0, and baskets of two items invert in closed form). It returns
// false, with zero pieces, when a determinant is not positive (only
// possible with ε = 0).
//
// With a diagonal (p.Theta), L_S = Δ_S + S_S Z̃_SᵀWZ̃_S S_S for the rows held
// (see Params): the pieces are built from the item vectors sᵢz̃ᵢ and are
// the gradient with respect to them, and dd holds the total derivative with
// respect to δᵢ (through Δ and sᵢ, the rows held fixed),
//
//	∂t/∂δᵢ = (1 + (1 − ε)(A⁻¹)ᵢᵢ)/(1 + δᵢ)   [− 1/(1 + δᵢ) restricted]:
//
// d log det(Δ + SMS + εI)/dsᵢ = ((A⁻¹L̂)ᵢᵢ + (L̂A⁻¹)ᵢᵢ)/sᵢ with L̂ = SMS =
// A − Δ − εI, and dsᵢ/dδᵢ = 1/(2sᵢ); the restricted normaliser is the same
// with ε = 1.
func (w *basketWork) pieces(p *Params, items []int, bcS, c []float64, eps float64, restricted, value, withCU bool) (float64, bool) {
	d, k := p.Dim, len(items)
	if w.next != nil && restricted {
		panic("learn: a next-item term fused with a restricted basket term")
	}
	w.ensure(k, d)
	v, b := p.V, p.brows()
	diag := p.Theta != nil
	if diag {
		for r, i := range items {
			w.ds[r], w.ss[r] = p.diag(i)
		}
	}
	if k == 1 {
		i := items[0]
		vi, bi := v[i*d:(i+1)*d], b[i*d:(i+1)*d]
		l := blas.Dot(vi, vi)
		sc := 1.0
		if diag {
			sc = w.ss[0]
			l = sc*sc*l + w.ds[0]
		}
		a := l + eps
		if !(a > 0) || math.IsInf(a, 0) {
			return w.fail()
		}
		clear(w.wu[d:]) // u = 0
		clear(w.cu)
		pm, val := 1/a, 0.0
		if value {
			val = math.Log(a)
		}
		if diag {
			w.dd[0] = 1 + (1-eps)*pm
			if restricted {
				w.dd[0] = (1 - eps) * pm
			}
			w.dd[0] /= 1 + w.ds[0]
		}
		if restricted {
			pm -= 1 / (1 + l)
			if value {
				val -= math.Log1p(l)
			}
		}
		for j, x := range vi {
			w.gv[j] = 2 * pm * (sc * x)
		}
		for j, x := range bi {
			w.wu[j] = pm * (sc * x)
		}
		return val, true
	}
	kr := max(k, 4) // zl and zr have at least 4 rows (f64.GemvN4, vecmatRoom)
	w.zl = resize(w.zl, kr*2*d)
	w.zr = resize(w.zr, kr*2*d)
	zl, zr := w.zl, w.zr
	for r, i := range items {
		copy(zl[2*r*d:], v[i*d:(i+1)*d])
		copy(zr[2*r*d:], v[i*d:(i+1)*d])
		copy(zr[(2*r+1)*d:], b[i*d:(i+1)*d])
		if diag {
			scaleVec(w.ss[r], zl[2*r*d:(2*r+1)*d])
			scaleVec(w.ss[r], zr[2*r*d:2*(r+1)*d])
		}
	}
	if bcS != nil {
		for r := range items {
			copy(zl[(2*r+1)*d:], bcS[r*d:(r+1)*d])
			if diag {
				scaleVec(w.ss[r], zl[(2*r+1)*d:2*(r+1)*d])
			}
		}
	} else {
		vecmat.Room(zl[d:], 2*d, zr[d:], 2*d, k, c, d, d, d, 1) // rows bᵢᵀC
	}
	a := w.a
	for r := 0; r < k; r++ {
		zi := zl[2*r*d : 2*(r+1)*d]
		if k < 4 {
			// Rows k..3 of zr are scratch; their products are dropped.
			var q [4]float64
			f64.GemvN4(zr, 2*d, zi, &q)
			copy(a[r*k:(r+1)*k], q[:k])
		} else {
			gemv(a[r*k:(r+1)*k], zr, k, 2*d, zi, 1)
		}
	}
	if diag {
		for r := 0; r < k; r++ {
			a[r*k+r] += w.ds[r]
		}
	}
	if restricted {
		copy(w.a2, a)
		for r := 0; r < k; r++ {
			w.a2[r*k+r]++
		}
	}
	for r := 0; r < k; r++ {
		a[r*k+r] += eps
	}
	if w.next != nil {
		w.next.fromA(items, a)
	}
	val, ok := invertValue(a, k, w.piv, w.work, value)
	if !ok {
		return w.fail()
	}
	if diag {
		for r := 0; r < k; r++ {
			x := 1 + (1-eps)*a[r*k+r]
			if restricted {
				x = (1 - eps) * a[r*k+r]
			}
			w.dd[r] = x / (1 + w.ds[r])
		}
	}
	pm := a
	if restricted {
		val2, ok2 := invertValue(w.a2, k, w.piv, w.work, value)
		if !ok2 {
			return w.fail()
		}
		val -= val2
		for t := range pm {
			pm[t] -= w.a2[t]
		}
	}
	if w.next != nil {
		w.next.intoP(p, items, pm)
	}
	xs := w.xs
	for i := 0; i < k; i++ {
		for j := 0; j < k; j++ {
			pji, pij := pm[j*k+i], pm[i*k+j]
			xs[i*k+j] = pji + pij
			xs[(k+i)*k+j] = pji
			xs[(2*k+i)*k+j] = pji - pij
		}
	}
	vecmat.Room(w.gv[:cap(w.gv)], d, xs[:cap(xs)], k, k, zr, k, d, 2*d, 1)
	vecmat.N(w.wu, d, xs[k*k:], k, 2*k, zr[d:], k, d, 2*d, 1)
	if w.next != nil {
		w.next.intoRows(w.gv, w.wu)
	}
	if withCU {
		vecmat.Room(w.cu[:cap(w.cu)], d, xs[2*k*k:cap(xs)], k, k, zl[d:], k, d, 2*d, -1)
	}
	return val, true
}

// fail zeroes the pieces and reports a non-positive determinant.
func (w *basketWork) fail() (float64, bool) {
	clear(w.gv)
	clear(w.wu)
	clear(w.cu)
	clear(w.dd)
	return math.Inf(-1), false
}

// scaleVec multiplies x by s.
func scaleVec(s float64, x []float64) {
	for j := range x {
		x[j] *= s
	}
}

// invertValue inverts the k×k matrix a in place and reports whether its
// determinant was positive (else a is unspecified), returning log det a
// when value is set (f64.Inverse), else 0 (f64.InverseSign: no logarithms
// are taken, and baskets of two items invert in closed form). piv and work
// are the inverse's scratch.
func invertValue(a []float64, k int, piv []int, work []float64, value bool) (float64, bool) {
	if !value {
		return 0, f64.InverseSign(a, k, k, piv, work) > 0
	}
	ld, sg := f64.Inverse(a, k, k, piv, work)
	if sg <= 0 {
		return 0, false
	}
	return ld, true
}

// basketTerm evaluates t(S) (see pieces) for validated items and adds
// scale·∂t into acc, and scale·t(S) into acc.value when value is set. bcS
// must hold the rows bₐᵀC of the basket's items (|S|×d). It returns the
// value (0 without value) and false when a determinant is not positive
// (with ε > 0 only when L_S overflowed; see Online.basketTerm), in which
// case acc is unchanged.
func (w *basketWork) basketTerm(p *Params, bcS []float64, items []int, eps float64, restricted, value bool, acc *accum, scale float64) (float64, bool) {
	val, ok := w.pieces(p, items, bcS, nil, eps, restricted, value, false)
	if !ok {
		return val, false
	}
	d := p.Dim
	for q, i := range items {
		acc.touchPiece(i)
		o := i * d
		gv, wi, u := w.row(q)
		sc := scale
		if p.Theta != nil {
			// The pieces are with respect to sᵢz̃ᵢ; the rows held are z̃ᵢ.
			sc *= w.ss[q]
			acc.gt[i] += scale * w.ds[q] * w.dd[q] // ∂/∂θᵢ = δᵢ ∂/∂δᵢ
		}
		f64.AxpyUnitary(sc, gv, acc.gv[o:o+d])
		f64.AxpyUnitary(sc, wi, acc.w[o:o+d])
		if len(items) > 1 {
			f64.AxpyUnitary(sc, u, acc.u[o:o+d])
		}
	}
	acc.value += scale * val
	return val, true
}

// diagNorm returns item i's term log(1 + δᵢ) of the full normaliser (see
// Params) and its derivative with respect to θᵢ, δᵢ/(1 + δᵢ); 0 and 0
// without a diagonal.
func diagNorm(p *Params, i int) (value, dtheta float64) {
	if p.Theta == nil {
		return 0, 0
	}
	delta, _ := p.diag(i)
	return math.Log1p(delta), delta / (1 + delta)
}
