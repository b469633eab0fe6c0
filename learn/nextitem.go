package learn

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/eval"
	"github.com/ndpp-go/ndpp/internal/f64"
	"github.com/ndpp-go/ndpp/internal/memlimit"
)

// The next-item term of a basket S with item t held out and Y = S − t
// scores the conditional gains that the paper protocol ranks by,
// g_j(Y) = det(L_{Y+j} + εI)/det(L_Y + εI), of the held-out item against
// other items j ∉ S, pairwise:
//
//	ℓ = mean_j log σ(β (log g_t − log g_j)),
//
// a smooth count of the items ranked below t (MPR counts them exactly;
// docs/math.md, "The next-item objective"). Over all j ∉ S it is exact;
// with J items drawn uniformly from the catalogue it is an unbiased
// estimate of it. In the model's coordinates (zⱼ = [vⱼ; bⱼ],
// X = blockdiag(I, C), K = L_Y + εI, P = X Z_Y, Q = Xᵀ Z_Y) each gain is
// g_j = δ'ⱼ + ‖vⱼ‖² − L_jY K⁻¹ L_Yj with L_jY = zⱼᵀP, L_Yj = Qᵀzⱼ and
// δ'ⱼ = δⱼ + ε: O(|Y|d) per candidate after an O(|Y|²d + |Y|³) solve,
// and so is its gradient.

// nextPrep holds what the next-item term needs of every item at the
// parameters of one step, in the model's coordinates. It is read by many
// workers at once.
type nextPrep struct {
	n, d int
	z    []float64 // n×2d rows zᵢ = sᵢ[ṽᵢ; b̃ᵢ]
	cb   []float64 // n×d rows C bᵢ
	dl   []float64 // δᵢ + ε
	s    []float64 // sᵢ = √(1 + δᵢ) (1 without a diagonal)
	ct   []float64 // d×d: Cᵀ
}

// nextPrepMemory is the memory of a nextPrep for n items and rank d.
func nextPrepMemory(n, d int) int64 {
	return memlimit.Bytes(int64(n), 3*int64(d)+2, 8)
}

// prepare fills pp for the parameters p (C in c) and ε. bc, when not
// nil, holds the rows bᵢᵀC (n×d, of the rows held) that the caller has
// already formed: the rows C bᵢ are then −sᵢ(bᵢᵀC)ᵀ (C is skew) instead of
// an O(nd²) product.
func (pp *nextPrep) prepare(p *Params, c []float64, eps float64, bc []float64) {
	n, d := p.N, p.Dim
	m := 2 * d
	pp.n, pp.d = n, d
	pp.z, pp.cb = resize(pp.z, n*m), resize(pp.cb, n*d)
	pp.dl, pp.s = resize(pp.dl, n), resize(pp.s, n)
	b := p.brows()
	for i := 0; i < n; i++ {
		delta, s := p.diag(i)
		pp.dl[i], pp.s[i] = delta+eps, s
		zi := pp.z[i*m : (i+1)*m]
		for k := 0; k < d; k++ {
			zi[k] = s * p.V[i*d+k]
			zi[d+k] = s * b[i*d+k]
		}
		if bc != nil {
			for k, x := range bc[i*d : (i+1)*d] {
				pp.cb[i*d+k] = -s * x
			}
		}
	}
	if bc != nil {
		return
	}
	// Rows C bᵢ = (B Cᵀ)ᵢ.
	pp.ct = resize(pp.ct, d*d)
	for r := 0; r < d; r++ {
		for q := 0; q < d; q++ {
			pp.ct[q*d+r] = c[r*d+q]
		}
	}
	f64.GemmNN(n, d, d, pp.z[d:], m, pp.ct, d, pp.cb, d)
}

// nextWork is one worker's scratch for the next-item term. Every product
// is f64.GemmNN's (C = A·B, row-major, neither transposed: the small
// register-blocked kernel, on both backends), so the factors are kept in
// the orientation that product reads: rows of Y's items and of the
// candidates, and Y's rows X zᵢ as columns.
type nextWork struct {
	kk, kit, om, coef []float64 // k×k: K then K⁻¹, K⁻ᵀ, Ω, (coef 3k×k)
	piv               []int
	work              []float64
	// zy: Y's rows zᵢ (k×2d); pyT: Y's rows X zᵢ = [vᵢ; C bᵢ] as columns
	// (2d×k); zc: the candidates' rows (c = 1 + J, c×2d).
	zy, pyT, zc []float64
	// c×k: L_cY, L_Ycᵀ, Uᵀ = (K⁻¹ L_Yc)ᵀ, ulᵀ = (K⁻ᵀ L_cYᵀ)ᵀ, then the
	// candidates' coefficients csu, csl (ω-weighted sums and differences
	// of U and ul).
	lcy, lyt, ut, ult, csu, csl []float64
	wlT, suT, slT               []float64 // k×c
	g, om1                      []float64 // c: gains and ω = ∂ℓ/∂g
	pv, pe                      []float64 // k×d: the candidates' share of Y's ∂v, ∂b
	gv, gb                      []float64 // k×d, 2k×d
	gcv, gcb                    []float64 // c×d
	ys, cs                      []int
}

// gains computes into w.g the gains g_c(Y) of the held-out item s[t]
// (c = 0) and of the candidates negs (items outside s) given Y = s − s[t],
// at the prepared parameters, keeping what term's gradient needs. It
// reports false when a determinant or a gain is not positive.
func (w *nextWork) gains(pp *nextPrep, s []int, t int, negs []int) bool {
	w.setup(pp, s, t, negs)
	k, m2 := len(w.ys), 2*pp.d
	// K = Z_Y X Z_Yᵀ + Δ'_Y.
	f64.GemmNN(k, k, m2, w.zy, m2, w.pyT, k, w.kk, k)
	for a, ya := range w.ys {
		w.kk[a*k+a] += pp.dl[ya]
	}
	return w.gainsOfK(pp, false)
}

// setup sizes w's scratch for basket s with s[t] held out against the
// candidates negs and gathers Y's rows and the candidates'.
func (w *nextWork) setup(pp *nextPrep, s []int, t int, negs []int) {
	d := pp.d
	m2 := 2 * d
	w.ys = append(w.ys[:0], s[:t]...)
	w.ys = append(w.ys, s[t+1:]...)
	w.cs = append(append(w.cs[:0], s[t]), negs...)
	ys, cs := w.ys, w.cs
	k, nc := len(ys), len(cs)
	for _, b := range []*[]float64{&w.kk, &w.kit, &w.om} {
		*b = resize(*b, k*k)
	}
	w.coef = resize(w.coef, 3*k*k)
	if cap(w.piv) < k {
		w.piv = make([]int, k)
	}
	w.piv = w.piv[:k]
	w.work = resize(w.work, f64.InverseWork(k))
	w.zy, w.pyT = resize(w.zy, k*m2), resize(w.pyT, k*m2)
	w.zc = resize(w.zc, nc*m2)
	for _, b := range []*[]float64{&w.lcy, &w.lyt, &w.ut, &w.ult, &w.csu, &w.csl, &w.wlT, &w.suT, &w.slT} {
		*b = resize(*b, nc*k)
	}
	w.g, w.om1 = resize(w.g, nc), resize(w.om1, nc)
	w.pv, w.pe, w.gv = resize(w.pv, k*d), resize(w.pe, k*d), resize(w.gv, k*d)
	w.gb = resize(w.gb, 2*k*d)
	w.gcv, w.gcb = resize(w.gcv, nc*d), resize(w.gcb, nc*d)
	z, cb := pp.z, pp.cb
	for a, i := range ys {
		zi := z[i*m2 : (i+1)*m2]
		copy(w.zy[a*m2:(a+1)*m2], zi)
		for x := 0; x < d; x++ {
			w.pyT[x*k+a] = zi[x]
			w.pyT[(d+x)*k+a] = cb[i*d+x]
		}
	}
	for c, i := range cs {
		copy(w.zc[c*m2:(c+1)*m2], z[i*m2:(i+1)*m2])
	}
}

// gainsOfK is gains after setup, with K = L_Y + εI in w.kk (which it
// inverts in place), or K⁻¹ there when inverted is set.
func (w *nextWork) gainsOfK(pp *nextPrep, inverted bool) bool {
	d := pp.d
	m2 := 2 * d
	k, nc := len(w.ys), len(w.cs)
	// With S₁ = V_c V_Yᵀ and S₂ = B_c (C B_Y)ᵀ (c×k), L_cY = S₁ + S₂ and
	// L_Ycᵀ = S₁ − S₂ (C is skew: b_yᵀC b_c = −b_cᵀC b_y).
	f64.GemmNN(nc, k, d, w.zc, m2, w.pyT, k, w.lcy, k)
	f64.GemmNN(nc, k, d, w.zc[d:], m2, w.pyT[d*k:], k, w.lyt, k)
	for q, s2 := range w.lyt {
		s1 := w.lcy[q]
		w.lcy[q], w.lyt[q] = s1+s2, s1-s2
	}
	if !inverted {
		if _, sg := f64.Inverse(w.kk, k, k, w.piv, w.work); sg <= 0 {
			return false
		}
	}
	ki, kit := w.kk, w.kit
	for a := 0; a < k; a++ {
		for b := 0; b < k; b++ {
			kit[b*k+a] = ki[a*k+b]
		}
	}
	// Uᵀ = L_Ycᵀ K⁻ᵀ, ulᵀ = L_cY K⁻¹ (c×k).
	f64.GemmNN(nc, k, k, w.lyt, k, kit, k, w.ut, k)
	f64.GemmNN(nc, k, k, w.lcy, k, ki, k, w.ult, k)
	for c, ic := range w.cs {
		vc := w.zc[c*m2 : c*m2+d]
		q := blas.Dot(w.lcy[c*k:(c+1)*k], w.ut[c*k:(c+1)*k])
		g := pp.dl[ic] + blas.Dot(vc, vc) - q
		if !(g > 0) || math.IsInf(g, 0) {
			return false
		}
		w.g[c] = g
	}
	return true
}

// term evaluates the next-item term ℓ of basket s with s[t] held out
// against the candidates negs (items outside s) at the prepared
// parameters with sharpness beta and, when acc is not nil, adds
// scale·∂ℓ into acc (in the rows held). It returns ℓ and false, with
// nothing added, when a determinant or a gain is not positive.
func (w *nextWork) term(pp *nextPrep, p *Params, s []int, t int, negs []int, beta float64, acc *accum, scale float64) (float64, bool) {
	if !w.gains(pp, s, t, negs) {
		return math.Inf(-1), false
	}
	val := w.weights(beta)
	if acc == nil {
		return val, true
	}
	w.omega()
	w.candidates()
	// Through K: ∂/∂v = (Ω + Ωᵀ)V_Y, ∂/∂b = C (Ω − Ωᵀ)B_Y, ∂C ∋ Σ b (ΩB_Y)ᵀ.
	d := pp.d
	m2 := 2 * d
	k := len(w.ys)
	cf := w.coef
	for a := 0; a < k; a++ {
		for b := 0; b < k; b++ {
			oab, oba := w.om[a*k+b], w.om[b*k+a]
			cf[a*k+b] = oab + oba
			cf[(k+a)*k+b] = oab - oba
			cf[(2*k+a)*k+b] = oab
		}
	}
	f64.GemmNN(k, d, k, cf, k, w.zy, m2, w.gv, d)
	f64.GemmNN(2*k, d, k, cf[k*k:], k, w.zy[d:], m2, w.gb, d)
	hasDiag := p.Theta != nil
	for a, ya := range w.ys {
		gv, uc, wc := w.gv[a*d:(a+1)*d], w.gb[a*d:(a+1)*d], w.gb[(k+a)*d:(k+a+1)*d]
		pv, pe := w.pv[a*d:(a+1)*d], w.pe[a*d:(a+1)*d]
		for x := 0; x < d; x++ {
			gv[x] += pv[x]
			uc[x] += pe[x]
			wc[x] += pe[x]
		}
		w.addItem(pp, p, acc, ya, scale, gv, uc, wc, w.om[a*k+a], hasDiag)
	}
	w.addCandidates(pp, p, acc, scale)
	acc.value += scale * val
	return val, true
}

// weights returns ℓ = mean_j log σ(β(log g_t − log g_j)) from the gains
// and sets ω_c = ∂ℓ/∂g_c.
func (w *nextWork) weights(beta float64) float64 {
	nc := len(w.cs)
	lt := math.Log(w.g[0])
	var val, wt float64
	inv := 1 / float64(nc-1)
	for c := 1; c < nc; c++ {
		x := beta * (lt - math.Log(w.g[c]))
		val += inv * logSigmoid(x)
		r := inv * beta * sigmoid(-x) // ∂/∂x log σ(x) = σ(−x)
		wt += r
		w.om1[c] = -r / w.g[c]
	}
	w.om1[0] = wt / w.g[0]
	return val
}

// omega sets Ω = ∂ℓ/∂K from the weights. With Ψ = ∂ℓ/∂K⁻¹ =
// −Σ_c ω_c L_cYᵀ L_Ycᵀ, Ω = −K⁻ᵀ Ψ K⁻ᵀ = Σ_c ω_c (L_cY K⁻¹)ᵀ (L_Ycᵀ K⁻ᵀ)
// = (diag(ω) ulᵀ)ᵀ Uᵀ: one k×c by c×k product from the rows gains
// keeps, O(k²c) with no product through K⁻¹.
func (w *nextWork) omega() {
	k, nc := len(w.ys), len(w.cs)
	for c := 0; c < nc; c++ {
		oc := w.om1[c]
		for a := 0; a < k; a++ {
			w.wlT[a*nc+c] = oc * w.ult[c*k+a]
		}
	}
	f64.GemmNN(k, k, nc, w.wlT, nc, w.ut, k, w.om, k)
}

// candidates computes the candidates' own gradient into w.gcv and w.gcb
// (c×d, before addCandidates) and, in w.pv and w.pe (k×d), the share of
// Y's rows that comes through L_cY and L_Yc, for the caller to add with
// the share through K. Each
// candidate directly: ω_c([2v_c; 0] − P U_c − Q ul_c); the v part is
// csu V_Y + 2ω_c v_c, the b part C·(csl B_Y), with the c×k coefficients
// csu = −ω∘(U + ul)ᵀ and csl = ω∘(ul − U)ᵀ. Through the products
// P = X Z_Y and Q = Xᵀ Z_Y, Y's rows get ∂/∂v += csuᵀ V_c and
// ∂/∂b += C·(−cslᵀ B_c), ∂C ∋ Σ b (−cslᵀ B_c)ᵀ.
func (w *nextWork) candidates() {
	m2 := len(w.zy) / len(w.ys)
	d := m2 / 2
	k, nc := len(w.ys), len(w.cs)
	for c := 0; c < nc; c++ {
		oc := w.om1[c]
		for a := 0; a < k; a++ {
			u, l := w.ut[c*k+a], w.ult[c*k+a]
			su, sl := -oc*(u+l), oc*(l-u)
			w.csu[c*k+a], w.csl[c*k+a] = su, sl
			w.suT[a*nc+c], w.slT[a*nc+c] = su, -sl
		}
	}
	f64.GemmNN(k, d, nc, w.suT, nc, w.zc, m2, w.pv, d)
	f64.GemmNN(k, d, nc, w.slT, nc, w.zc[d:], m2, w.pe, d)
	f64.GemmNN(nc, d, k, w.csu, k, w.zy, m2, w.gcv, d)
	f64.GemmNN(nc, d, k, w.csl, k, w.zy[d:], m2, w.gcb, d)
}

// addCandidates adds scale times the candidates' gradient (candidates)
// into acc.
func (w *nextWork) addCandidates(pp *nextPrep, p *Params, acc *accum, scale float64) {
	d := pp.d
	m2 := 2 * d
	hasDiag := p.Theta != nil
	for c, ic := range w.cs {
		gv, uc := w.gcv[c*d:(c+1)*d], w.gcb[c*d:(c+1)*d]
		f64.AxpyUnitary(2*w.om1[c], w.zc[c*m2:c*m2+d], gv)
		w.addItem(pp, p, acc, ic, scale, gv, uc, nil, w.om1[c], hasDiag)
	}
}

// nextFusion evaluates a basket's next-item term inside the basket term's
// pieces (basketWork.next; offline steps, unrestricted, with the term's
// gradient only). The basket term builds A = L_S + εI and its inverse P
// and takes its gradient through products of P with the basket's rows;
// K = L_Y + εI is A without the held-out row and column, and the term's
// share through K, Ω = ∂ℓ/∂K, enters the same products as P does (its
// gradient has the form of the basket term's with Ωᵀ for P). So the term
// needs no K of its own and no products through K: P gains f·Ωᵀ on Y's
// rows and columns, f the term's weight over the basket term's, and Y's
// share through L_cY and L_Yc joins the basket term's rows (f times, before
// the basket term adds them with its weight). The candidates' gradient
// and the term's ∂/∂θ (which the basket term's closed form for its own
// does not cover) are added here.
type nextFusion struct {
	w     *nextWork
	pp    *nextPrep
	t     int // the held-out position
	negs  []int
	beta  float64
	acc   *accum
	scale float64   // the term's weight in acc
	f     float64   // scale over the basket term's
	khat  []float64 // K̂ = K − Δ'_Y (k×k), for ∂/∂θ
	ok    bool      // the term was added
}

// fromA sets up the term for basket items with K read from a = L_S + εI
// (before its inversion).
func (nf *nextFusion) fromA(items []int, a []float64) {
	w, pp := nf.w, nf.pp
	nf.ok = false
	w.setup(pp, items, nf.t, nf.negs)
	ks, k := len(items), len(w.ys)
	nf.khat = resize(nf.khat, k*k)
	for r := 0; r < k; r++ {
		rs := r + b2i(r >= nf.t)
		for q := 0; q < k; q++ {
			w.kk[r*k+q] = a[rs*ks+q+b2i(q >= nf.t)]
		}
		copy(nf.khat[r*k:(r+1)*k], w.kk[r*k:(r+1)*k])
		nf.khat[r*k+r] -= pp.dl[w.ys[r]]
	}
}

// intoP evaluates the term from K (fromA), adds the candidates' gradient
// and every ∂/∂θ of the term into acc, and adds f·Ωᵀ to pm, the basket
// term's P (|S|×|S|), on Y's rows and columns; Y's share through L_cY and
// L_Yc waits in w.pv and w.pe for intoRows. A term whose gains cannot be
// computed is left out (nf.ok false), as term leaves it.
func (nf *nextFusion) intoP(p *Params, items []int, pm []float64) {
	w, pp := nf.w, nf.pp
	if !w.gainsOfK(pp, nf.downdate(pm, len(items))) {
		return
	}
	nf.ok = true
	val := w.weights(nf.beta)
	w.omega()
	w.candidates()
	d := pp.d
	ks, k := len(items), len(w.ys)
	if p.Theta != nil {
		// Y's ∂/∂θ as addItem's: δ(∂/∂δ + (∂/∂z·z)/(2(1 + δ))), with
		// ∂/∂δ = Ω_aa and ∂/∂z·z = Σ_b Ω_ab K̂_ab + Ω_ba K̂_ba through K,
		// pv·v − pe·(C b) through L_cY and L_Yc.
		for a, ya := range w.ys {
			gz := blas.Dot(w.pv[a*d:(a+1)*d], pp.z[ya*2*d:ya*2*d+d]) - blas.Dot(w.pe[a*d:(a+1)*d], pp.cb[ya*d:(ya+1)*d])
			for b := 0; b < k; b++ {
				gz += w.om[a*k+b]*nf.khat[a*k+b] + w.om[b*k+a]*nf.khat[b*k+a]
			}
			delta := math.Exp(p.Theta[ya])
			nf.acc.gt[ya] += nf.scale * delta * (w.om[a*k+a] + gz/(2*(1+delta)))
		}
	}
	w.addCandidates(pp, p, nf.acc, nf.scale)
	nf.acc.value += nf.scale * val
	for a := 0; a < k; a++ {
		as := a + b2i(a >= nf.t)
		for b := 0; b < k; b++ {
			pm[(b+b2i(b >= nf.t))*ks+as] += nf.f * w.om[a*k+b]
		}
	}
}

// intoRows adds f times Y's share through L_cY and L_Yc (intoP) to the
// basket term's rows gv, w and u (basketWork.wu: |S| rows of w, then of
// u), which the basket term then adds into acc with its weight.
func (nf *nextFusion) intoRows(gv, wu []float64) {
	if !nf.ok {
		return
	}
	w := nf.w
	d, ks := nf.pp.d, len(w.ys)+1
	for a := range w.ys {
		as := a + b2i(a >= nf.t)
		pv, pe := w.pv[a*d:(a+1)*d], w.pe[a*d:(a+1)*d]
		f64.AxpyUnitary(nf.f, pv, gv[as*d:(as+1)*d])
		f64.AxpyUnitary(nf.f, pe, wu[as*d:(as+1)*d])
		f64.AxpyUnitary(nf.f, pe, wu[(ks+as)*d:(ks+as+1)*d])
	}
}

// downdateTol bounds the relative residual of a downdated K⁻¹ (downdate):
// some 10⁴ times a backward-stable inverse's.
const downdateTol = 1e-10

// downdate replaces K in w.kk (fromA) by K⁻¹ from the basket term's
// A⁻¹ (pm, |S|×|S|), without an inversion of its own: with α = (A⁻¹)_tt =
// det K/det A, a and b column and row t of A⁻¹ without their t-th
// entries and Ã the rest, K⁻¹ = Ã − a bᵀ/α (O(k²)). Where A is far worse
// conditioned than K, the difference cancels: the result must solve
// K y = 1 for y = K⁻¹1 to a relative residual of downdateTol (‖K y − 1‖∞
// ≤ tol·‖K‖∞‖y‖∞). It reports false, w.kk still K for a fresh inversion,
// when that fails or α is not positive (det K ≤ 0 then, as the inversion
// reports).
func (nf *nextFusion) downdate(pm []float64, ks int) bool {
	w, t := nf.w, nf.t
	k := len(w.ys)
	alpha := pm[t*ks+t]
	if !(alpha > 0) || math.IsInf(alpha, 0) {
		return false
	}
	inv := w.om // scratch until omega
	for r := 0; r < k; r++ {
		rs := r + b2i(r >= t)
		f := pm[rs*ks+t] / alpha
		for q := 0; q < k; q++ {
			qs := q + b2i(q >= t)
			inv[r*k+q] = pm[rs*ks+qs] - f*pm[t*ks+qs]
		}
	}
	var ry, rk, res float64
	y := w.pv[:k] // scratch until candidates
	for r := 0; r < k; r++ {
		var x float64
		for _, v := range inv[r*k : (r+1)*k] {
			x += v
		}
		y[r] = x
		ry = math.Max(ry, math.Abs(x))
	}
	for r := 0; r < k; r++ {
		var x, nk float64
		for q, v := range w.kk[r*k : (r+1)*k] {
			x += v * y[q]
			nk += math.Abs(v)
		}
		rk = math.Max(rk, nk)
		res = math.Max(res, math.Abs(x-1))
	}
	if !(res <= downdateTol*rk*ry) {
		return false
	}
	copy(w.kk, inv)
	return true
}

// b2i is 1 for true, 0 for false.
func b2i(x bool) int {
	if x {
		return 1
	}
	return 0
}

// addItem adds scale times an item's gradient in the model's coordinates
// — gv (∂/∂v), ∂/∂b = C·uc, ∂/∂C ∋ b wcᵀ (wc may be nil) and gdl (∂/∂δ) —
// into acc in the rows held: ∂/∂z̃ = s ∂/∂z and
// ∂/∂θ = δ(∂/∂δ + (∂/∂z·z)/(2(1 + δ))).
func (w *nextWork) addItem(pp *nextPrep, p *Params, acc *accum, i int, scale float64, gv, uc, wc []float64, gdl float64, hasDiag bool) {
	d := pp.d
	s := pp.s[i]
	o := i * d
	acc.touchPiece(i)
	f64.AxpyUnitary(scale*s, gv, acc.gv[o:o+d])
	f64.AxpyUnitary(scale*s, uc, acc.u[o:o+d])
	if wc != nil {
		f64.AxpyUnitary(scale*s, wc, acc.w[o:o+d])
	}
	if hasDiag {
		delta := math.Exp(p.Theta[i])
		zi := pp.z[i*2*d : (i+1)*2*d]
		// ∂/∂z·z = gv·v + (C uc)·b = gv·v − uc·(C b).
		gz := blas.Dot(gv, zi[:d]) - blas.Dot(uc, pp.cb[o:o+d])
		acc.gt[i] += scale * delta * (gdl + gz/(2*(1+delta)))
	}
}

// sigmoid is 1/(1 + e^−x).
func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// logSigmoid is log σ(x), without overflow.
func logSigmoid(x float64) float64 {
	if x >= 0 {
		return -math.Log1p(math.Exp(-x))
	}
	return x - math.Log1p(math.Exp(x))
}

// nextDraw draws the held-out position of a basket and its candidates
// (choice), reseeding one generator at each draw.
type nextDraw struct {
	pcg rand.PCG
	rng *rand.Rand
}

// choice draws the held-out position of basket s and its candidates:
// k distinct items of [0, n) outside s, uniformly (all of them when
// k ≥ n − |s|, in order). The held-out position is drawn uniformly, or,
// when last is set, is that of the basket's last item in the order of key
// (eval.HeldOut). The draw depends only on the seed, the step and the basket's
// place in the minibatch.
func (nd *nextDraw) choice(seed uint64, step, idx int, s []int, n, k int, last bool, key []int64, negs []int) (int, []int) {
	nd.pcg.Seed(seed^0x4e787431, uint64(step)<<32|uint64(uint32(idx)))
	if nd.rng == nil {
		nd.rng = rand.New(&nd.pcg)
	}
	rng := nd.rng
	t := rng.IntN(len(s))
	if last {
		t = eval.HeldOut(s, key)
	}
	negs = negs[:0]
	if k >= n-len(s) {
		for j := 0; j < n; j++ {
			if !contains(s, j) {
				negs = append(negs, j)
			}
		}
		return t, negs
	}
	for len(negs) < k {
		j := rng.IntN(n)
		if contains(s, j) || contains(negs, j) {
			continue
		}
		negs = append(negs, j)
	}
	return t, negs
}

// nextTakes reports whether basket idx of the minibatch at step adds the
// next-item term when a share of the baskets does (a hash of seed, step and
// idx against share; always for share ≥ 1).
func nextTakes(seed uint64, step, idx int, share float64) bool {
	if share >= 1 {
		return true
	}
	x := seed ^ 0x9e3779b97f4a7c15*uint64(step+1) ^ uint64(idx)*0xbf58476d1ce4e5b9
	x ^= x >> 31
	x *= 0x94d049bb133111eb
	x ^= x >> 29
	return float64(x>>11)/(1<<53) < share
}

// nextValuePerBasket is the next-item term summed over the baskets of val
// that carry it (eachValBasket's: two items or more, held-out items and
// candidates fixed for the run) and divided by the number of all of val's
// baskets, each of the others adding nothing: times the weight per
// carrying basket (nextBasketWeight) it is the term's share of the
// objective per basket as training weighs it, to add to the mean basket
// log-likelihood. It checks ctx every 32 baskets.
func nextValuePerBasket(ctx context.Context, p *Params, val [][]int, negatives int, beta float64, key []int64, eps float64, seed uint64) (float64, error) {
	var sum float64
	err := eachValBasket(ctx, p, val, negatives, key, eps, seed, func(w *nextWork, pp *nextPrep, s []int, t int, negs []int) {
		v, ok := w.term(pp, p, s, t, negs, beta, nil, 0)
		if !ok {
			v = math.Inf(-1)
		}
		sum += v
	})
	if err != nil || len(val) == 0 {
		return 0, err
	}
	return sum / float64(len(val)), nil
}

// eachValBasket calls f for each basket of val with at least two items and
// at least one candidate, with its held-out position — the basket's last
// item in key's order, as the paper protocol holds out — and candidates
// drawn as nextDraw.choice does for the step math.MaxInt32, and a prepared
// nextPrep and nextWork. It checks ctx every 32 baskets.
func eachValBasket(ctx context.Context, p *Params, val [][]int, negatives int, key []int64, eps float64, seed uint64, f func(w *nextWork, pp *nextPrep, s []int, t int, negs []int)) error {
	var pp nextPrep
	pp.prepare(p, p.CInto(nil), eps, nil)
	var w nextWork
	var negs []int
	var nd nextDraw
	for q, s := range val {
		if q%32 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("learn: validation stopped after %d baskets: %w", q, err)
			}
		}
		if len(s) < 2 {
			continue
		}
		t, ng := nd.choice(seed, math.MaxInt32, q, s, p.N, negatives, true, key, negs)
		negs = ng
		if len(negs) == 0 {
			continue
		}
		f(&w, &pp, s, t, negs)
	}
	return nil
}

// rankEstimate is the share of a basket's candidates ranked below its
// held-out item by their gains (ties count half), from the gains of the
// last call to gains.
func (w *nextWork) rankEstimate() float64 {
	gt := w.g[0]
	var below float64
	for _, g := range w.g[1:] {
		switch {
		case g < gt:
			below++
		case g == gt:
			below += 0.5
		}
	}
	return below / float64(len(w.g)-1)
}

// valRanking estimates the validation micro MPR of the paper protocol (in
// percent): the mean over the baskets of val with at least two items of
// the share of candidates ranked below the held-out item (eachValBasket's
// last item and draws; all items when negatives ≥ n, exact). A basket whose gains cannot be computed
// counts as ranked last. NaN when no basket qualifies.
func valRanking(ctx context.Context, p *Params, val [][]int, negatives int, key []int64, eps float64, seed uint64) (float64, error) {
	var sum float64
	var cnt int
	err := eachValBasket(ctx, p, val, negatives, key, eps, seed, func(w *nextWork, pp *nextPrep, s []int, t int, negs []int) {
		if w.gains(pp, s, t, negs) {
			sum += w.rankEstimate()
		}
		cnt++
	})
	if err != nil {
		return 0, err
	}
	if cnt == 0 {
		return math.NaN(), nil
	}
	return 100 * sum / float64(cnt), nil
}

// contains reports whether x is in s.
func contains(s []int, x int) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}
