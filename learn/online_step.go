package learn

import (
	"github.com/ndpp-go/ndpp/learn/internal/vecmat"
	"math"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/internal/f64"
)

// The per-basket step of the online learner. Each basket item's gradient is
// assembled and applied in one pass over the item (no n-sized gradient
// buffers are touched), with the d×d and 2d×2d products done by the
// kernels of internal/f64:
//
//	C uᵢ      = −Σⱼ (P_ji − P_ij)(bⱼᵀC)ᵀ       (C is skew; see basketTerm)
//	∂/∂vᵢ     = gvᵢ + s·(K zᵢ)[:d] − 2α vᵢ/μᵢ
//	∂/∂bᵢ     = C uᵢ + s·(K zᵢ)[d:] − 2β bᵢ/μᵢ
//	∂/∂C     += bᵢ wᵢᵀ                        (the pair kept for stepD)
//
// with gv, u, w the basket term's pieces (basketWork.pieces), s = −t/μᵢ the weight
// of the exact normaliser's gradient and K its gradient map (exactnorm).

// gemv computes out = alpha·M x for a row-major rows×cols M: four rows at
// a time by f64.GemvN4 (rows past the last multiple of four as the block
// ending at the last row), fewer than four rows by dot products.
func gemv(out, m []float64, rows, cols int, x []float64, alpha float64) {
	if rows == 0 {
		return
	}
	if len(m) < (rows-1)*cols+cols || len(x) < cols || len(out) < rows {
		panic("learn: gemv: slice too short")
	}
	x = x[:cols]
	var q [4]float64
	r := 0
	for ; r+4 <= rows; r += 4 {
		f64.GemvN4(m[r*cols:], cols, x, &q)
		out[r], out[r+1], out[r+2], out[r+3] = alpha*q[0], alpha*q[1], alpha*q[2], alpha*q[3]
	}
	if r < rows && rows >= 4 {
		// The last rows as the block ending at the last row (recomputing
		// rows already done gives the same values).
		r = rows - 4
		f64.GemvN4(m[r*cols:], cols, x, &q)
		out[r], out[r+1], out[r+2], out[r+3] = alpha*q[0], alpha*q[1], alpha*q[2], alpha*q[3]
		return
	}
	for ; r < rows; r++ {
		out[r] = alpha * blas.Dot(m[r*cols:(r+1)*cols], x)
	}
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// stepScratch holds the per-item buffers of stepItems.
type stepScratch struct {
	gv []float64
}

func (s *stepScratch) ensure(d int) {
	if len(s.gv) != d {
		s.gv = make([]float64, d)
	}
}

// stepItems assembles each basket item's gradient from acc (filled by
// basketTerm) and, for the exact normaliser, K zᵢ; adds the item's share of
// ∂/∂C to pendBW; records the item's old column for the next Gram update; and
// applies the optimiser to the item's rows. It reports whether the new rows
// are finite.
func (o *Online) stepItems(basket []int) bool {
	p, d, bk := o.p, o.p.Dim, &o.w
	b := p.brows()
	s := &o.ss
	s.ensure(d)
	gv, cu := s.gv, bk.cu
	if o.np != nil {
		o.prepareKZ(basket)
	}
	ok := true
	diag := p.Theta != nil
	for q, i := range basket {
		r := i * d
		vi, bi := p.V[r:r+d], b[r:r+d]
		bgv, bw, _ := bk.row(q)
		gb := cu[q*d : (q+1)*d]
		var kz []float64
		var sc float64
		if o.np != nil {
			// The item's share of −∂ log det(I + L), weighted by t/μᵢ (see
			// Observe).
			m := 2 * d
			kz, sc = o.kzRow(i)[:m], -float64(o.pos)/o.mu(i)
		}
		copy(gv, bgv)
		if diag {
			// The basket term's pieces are with respect to sᵢz̃ᵢ; the rows
			// held are z̃ᵢ (see Params). The normaliser's K z̃ᵢ is already
			// with respect to them.
			scaleVec(bk.ss[q], gv)
			scaleVec(bk.ss[q], gb)
		}
		if kz != nil {
			f64.AxpyUnitary(sc, kz[:d], gv)
			f64.AxpyUnitary(sc, kz[d:], gb)
		}
		if p.B == nil {
			f64.AxpyUnitary(1, gb, gv) // B = V: both roles' gradients act on vᵢ
		}
		if nx := o.nx; nx != nil && nx.set {
			// The next-item term's, already with respect to the rows held
			// (with B = V all in its V rows).
			f64.AxpyUnitary(1, nx.gv[q*d:(q+1)*d], gv)
			if p.B != nil {
				f64.AxpyUnitary(1, nx.gb[q*d:(q+1)*d], gb)
			}
		}
		if o.opt.Alpha != 0 {
			f64.AxpyUnitary(-2*o.opt.Alpha/o.mu(i), vi, gv)
		}
		if p.B != nil && o.opt.Beta != 0 {
			f64.AxpyUnitary(-2*o.opt.Beta/o.mu(i), bi, gb)
		}
		// ∂/∂C += bᵢ wᵢᵀ, kept as the pair (wᵢ, bᵢ) before bᵢ moves. A
		// single item's term P bᵢbᵢᵀ is symmetric: it adds nothing to
		// ∂/∂D = G_C − G_Cᵀ.
		if len(basket) > 1 {
			o.pendBW = append(o.pendBW, bw...)
			if diag { // bᵢwᵢᵀ = b̃ᵢ(sᵢwᵢ)ᵀ
				scaleVec(bk.ss[q], o.pendBW[len(o.pendBW)-d:])
			}
			o.pendBW = append(o.pendBW, bi...)
			if len(o.pendBW) >= 2*d*maxPendPairs {
				o.foldPairs()
			}
		}

		if o.np != nil {
			o.markDirty(i)
		}
		row := o.itemRow(i)
		row[stT]++
		t := int64(row[stT])
		var sum float64
		if o.opt.Optimizer == SGD {
			sum = sgdApply(vi, gv, o.opt.LR)
			if p.B != nil {
				sum += sgdApply(bi, gb, o.opt.LR)
			}
		} else {
			st, eps := o.adamCoef(t)
			if diag && o.opt.RateScale > 0 {
				// Adam's steps do not shrink with the gradient: scale the
				// item's by its rate, min(1, √(δᵢ/RateScale)).
				st *= math.Min(1, math.Sqrt(bk.ds[q]/o.opt.RateScale))
			}
			mv, sv, mb, sb := o.moments(i)
			sum = adamApply(vi, mv, sv, gv, st, eps)
			if p.B != nil {
				sum += adamApply(bi, mb, sb, gb, st, eps)
			}
		}
		ok = ok && finite(sum)
		if diag {
			ok = o.stepPhi(q, i) && ok
		}
	}
	return ok
}

// stepPhi steps the diagonal's correction φᵢ of basket item q (row i):
// ∂ψ/∂φᵢ = δᵢ ∂ψ/∂δᵢ, from the basket term (basketWork.dd) and, for the
// exact normaliser, its term log(1 + δᵢ) weighted by t/μᵢ as the rows'
// share (see Observe). The optimiser is the rows' (Adam with the item's
// step count, or SGD) at the rate DiagLR. It reports whether φᵢ stays
// finite.
func (o *Online) stepPhi(q, i int) bool {
	bk := &o.w
	delta := bk.ds[q]
	g := delta * bk.dd[q]
	if o.np != nil {
		g -= float64(o.pos) / o.mu(i) * delta / (1 + delta)
	}
	if nx := o.nx; nx != nil && nx.set {
		g += nx.gt[q] // ∂/∂θᵢ = ∂/∂φᵢ
	}
	lr := o.opt.DiagLR
	sc := o.itemRow(i)[:stScalars]
	if o.opt.Optimizer == SGD {
		sc[stPhi] += lr * g
	} else {
		st, eps := coefLookup(&o.coefPhi, lr, int64(sc[stT]))
		m := float64(adamBeta1*sc[stPhiM]) + float64((1-adamBeta1)*g)
		v := float64(adamBeta2*sc[stPhiV]) + float64((1-adamBeta2)*g*g)
		sc[stPhiM], sc[stPhiV] = m, v
		sc[stPhi] += float64(st*m) / (math.Sqrt(v) + eps)
	}
	return finite(sc[stPhi]) && math.Log(o.odds(i))+sc[stPhi] <= maxTheta
}

// maxPendPairs bounds the pairs kept between two steps of D (CEvery
// baskets); more are folded into pendC, so memory does not grow with
// CEvery.
const maxPendPairs = 256

// foldPairs adds the pairs' sum to pendC and empties pendBW.
func (o *Online) foldPairs() {
	blas.Axpy(1, o.pendProduct(), o.pendC)
	o.pendBW = o.pendBW[:0]
}

// cStepScratch holds stepD's buffers.
type cStepScratch struct {
	bt, prod, g []float64
}

// pendProduct returns Σₜ bₜwₜᵀ (d×d) over the pairs of pendBW. Row r is
// xᵣᵀ W with W the rows wₜ and xᵣ = (b₁[r], b₂[r], …): four rows at a time
// by f64.GemvT4 read straight from the pairs (the entries of xᵣ are 2d
// apart, the four rows' entries adjacent); for d < 4 the xᵣ are gathered
// into rows first, for vecmatN.
func (o *Online) pendProduct() []float64 {
	d := o.p.Dim
	cs := &o.cstep
	cs.prod = resize(cs.prod, d*d)
	k := len(o.pendBW) / (2 * d)
	if k == 0 {
		clear(cs.prod)
		return cs.prod
	}
	y := o.pendBW[:2*d*k]
	if d >= 4 {
		for r := 0; r < d; r += 4 {
			// The last group ends at row d−1 (rows it recomputes get
			// the same bits).
			r0 := min(r, d-4)
			f64.GemvT4(k, d, y, 2*d, y[d+r0:], 1, 2*d, cs.prod[r0*d:], d)
		}
		return cs.prod
	}
	cs.bt = resize(cs.bt, d*k)
	bt := cs.bt
	for r := 0; r < d; r++ {
		row, src := bt[r*k:(r+1)*k], y[d+r:]
		for t := range row {
			row[t] = src[2*t*d]
		}
	}
	vecmat.N(cs.prod, d, bt, k, d, y, k, d, 2*d, 1)
	return cs.prod
}

// stepD steps C = D − Dᵀ every CEvery baskets with the mean of the pending
// gradients (∂/∂D = G_C − G_Cᵀ, G_C = pendC + the pairs' sum) and reports
// whether D stayed finite. The element-wise optimiser step runs on the
// whole d×d D by adamApply; as ∂/∂D is skew, the update of entry
// (s, r) is exactly the negative of that of (r, s) (negation commutes with
// rounding), the moments keep m skew and v symmetric, the diagonal never
// moves, and C = D − Dᵀ stays exactly skew.
func (o *Online) stepD() bool {
	if o.pos%int64(o.opt.CEvery) != 0 {
		return true
	}
	o.flushNormC()
	ok := true
	if !o.opt.FixC {
		p, d := o.p, o.p.Dim
		dm, c, pc := p.D, o.c, o.pendC
		pr := o.pendProduct()
		cs := &o.cstep
		cs.g = resize(cs.g, d*d)
		g := cs.g
		s := 1 / float64(o.opt.CEvery)
		for r := 0; r < d; r++ {
			g[r*d+r] = 0
			for q := r + 1; q < d; q++ {
				u, l := r*d+q, q*d+r
				x := s * ((pc[u] + pr[u]) - (pc[l] + pr[l]))
				g[u], g[l] = x, -x
			}
		}
		o.tc++
		if o.opt.Optimizer == SGD {
			sgdApply(dm, g, o.opt.LR)
		} else {
			st, eps := o.adamCoef(o.tc)
			adamApply(dm, o.mom.D, o.sq.D, g, st, eps)
		}
		sum := 0.0
		for r := 0; r < d; r++ {
			c[r*d+r] = 0
			for q := r + 1; q < d; q++ {
				u, l := r*d+q, q*d+r
				x := dm[u] - dm[l]
				c[u], c[l] = x, -x
				sum += x
			}
		}
		ok = finite(sum)
	}
	clear(o.pendC)
	o.pendBW = o.pendBW[:0]
	return ok
}

// basketTerm computes the basket term's gradient pieces into o.w
// (basketWork.pieces without the value, with C uᵢ): zero pieces, and false,
// when a determinant is not positive. With ε > 0 that means the parameters
// have blown up: L_S + εI has a positive definite symmetric part (VᵀV is
// positive semidefinite, BᵀCB skew), so its determinant is positive unless
// L_S overflowed or holds NaN. With ε = 0 a singular L_S is possible, and
// the basket only adds no gradient.
func (o *Online) basketTerm(items []int) bool {
	_, ok := o.w.pieces(o.p, items, nil, o.c, o.opt.Eps, o.opt.Normalizer == NormBasket, false, true)
	return ok
}
