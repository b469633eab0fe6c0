package learn

import (
	"math"

	gblas "gonum.org/v1/gonum/blas"

	"github.com/ndpp-go/ndpp/blas"
)

// The per-basket step of the online learner. Each basket item's gradient is
// assembled and applied in one pass over the item (no n-sized gradient
// buffers are touched), with the d×d and 2d×2d products done by assembly
// kernels (AVX2/FMA where the CPU has it, else gonum's SSE2 GEMV/GER):
//
//	C uᵢ      = −Σⱼ (P_ji − P_ij)(bⱼᵀC)ᵀ       (C is skew; see basketTerm)
//	∂/∂vᵢ     = gvᵢ + s·(K zᵢ)[:d] − 2α vᵢ/μᵢ
//	∂/∂bᵢ     = C uᵢ + s·(K zᵢ)[d:] − 2β bᵢ/μᵢ
//	∂/∂C     += bᵢ wᵢᵀ                        (the pair kept for stepD)
//
// with gv, u, w the basket term's pieces (basketWork.pieces), s = −t/μᵢ the weight
// of the exact normaliser's gradient and K its gradient map (normWork).

// gemv computes out = alpha·M x for a row-major rows×cols M: four rows at
// a time by the AVX2/FMA kernel when the CPU has it (the remaining rows
// by dot), else by gonum's GEMV.
func gemv(out, m []float64, rows, cols int, x []float64, alpha float64) {
	if rows == 0 {
		return
	}
	if !useFMA || cols == 0 {
		asm.Dgemv(gblas.NoTrans, rows, cols, alpha, m, cols, x, 1, 0, out, 1)
		return
	}
	if len(m) < (rows-1)*cols+cols || len(x) < cols || len(out) < rows {
		panic("learn: gemv: slice too short")
	}
	var q [4]float64
	r := 0
	for ; r+4 <= rows; r += 4 {
		dot4FMA(&m[r*cols], cols, &x[0], cols, &q[0])
		out[r], out[r+1], out[r+2], out[r+3] = alpha*q[0], alpha*q[1], alpha*q[2], alpha*q[3]
	}
	if r < rows && rows >= 4 {
		// The last rows as the block ending at the last row (recomputing
		// rows already done gives the same values).
		r = rows - 4
		dot4FMA(&m[r*cols], cols, &x[0], cols, &q[0])
		out[r], out[r+1], out[r+2], out[r+3] = alpha*q[0], alpha*q[1], alpha*q[2], alpha*q[3]
		return
	}
	for ; r < rows; r++ {
		out[r] = alpha * blas.Dot(m[r*cols:(r+1)*cols], x[:cols])
	}
}

// axpyF computes y += alpha·x with the AVX2/FMA kernel when the CPU has it
// (no call overhead beyond the assembly's, which matters at length d),
// else with axpy.
func axpyF(alpha float64, x, y []float64) {
	n := len(x)
	if !useFMA || n == 0 {
		blas.Axpy(alpha, x, y)
		return
	}
	if len(y) < n {
		panic("learn: axpyF: y too short")
	}
	axpyFMA(alpha, &x[0], &y[0], n)
}

// adamCoef returns the bias-corrected step size and denominator ε of
// adamStep for step count t (≥ 1), so that blocks sharing t share them. The
// powers βᵗ come from a table for small t (the same math.Pow values, computed
// once).
func adamCoef(lr float64, t int64) (step, eps float64) {
	var p1, p2 float64
	if t < adamTableLen {
		p1, p2 = adamPow1[t], adamPow2[t]
	} else {
		p1, p2 = math.Pow(adamBeta1, float64(t)), math.Pow(adamBeta2, float64(t))
	}
	c1 := 1 - p1
	sc2 := math.Sqrt(1 - p2)
	return lr * sc2 / c1, adamEps * sc2
}

// adamCoef returns adamCoef(o.opt.LR, t), from o.coef below adamTableLen
// (the same values: a lookup instead of a square root and a division per
// item and basket).
func (o *Online) adamCoef(t int64) (step, eps float64) {
	if t >= adamTableLen {
		return adamCoef(o.opt.LR, t)
	}
	for int64(len(o.coef)) <= 2*t {
		st, ep := adamCoef(o.opt.LR, int64(len(o.coef)/2))
		o.coef = append(o.coef, st, ep)
	}
	return o.coef[2*t], o.coef[2*t+1]
}

// adamTableLen bounds the step counts whose powers are tabulated.
const adamTableLen = 4096

// adamPow1[t] = β₁ᵗ, adamPow2[t] = β₂ᵗ (math.Pow).
var adamPow1, adamPow2 = func() (p1, p2 []float64) {
	p1, p2 = make([]float64, adamTableLen), make([]float64, adamTableLen)
	for t := range p1 {
		p1[t], p2[t] = math.Pow(adamBeta1, float64(t)), math.Pow(adamBeta2, float64(t))
	}
	return p1, p2
}()

// adamApply is adamStep with precomputed coefficients (adamCoef), by the
// AVX kernel where the CPU has it (the same operations, so the same
// results). It returns the sum of the new x, which is finite exactly when no entry overflowed
// or became NaN (up to overflow of the sum itself, itself a divergence).
func adamApply(x, m, v, g []float64, step, eps float64) float64 {
	x, m, v = x[:len(g)], m[:len(g)], v[:len(g)]
	if useFMA && len(g) > 0 {
		if useAVX512 {
			k := [7]float64{adamBeta1, 1 - adamBeta1, adamBeta2, 1 - adamBeta2, step, eps, 0}
			return adamAVX512(&x[0], &m[0], &v[0], &g[0], &g[0], len(g), &x[0], &m[0], &v[0], &g[0], &g[0], 0, &k[0])
		}
		k := [6]float64{adamBeta1, 1 - adamBeta1, adamBeta2, 1 - adamBeta2, step, eps}
		return adamAVX(&x[0], &m[0], &v[0], &g[0], len(g), &k[0])
	}
	return adamApplyGo(x, m, v, g, step, eps)
}

// adamApply2 is adamApply on two sets of entries of the same length with
// the same coefficients (an item's rows of V and B): one call of the
// AVX-512 kernel on both where the CPU has it (the divisions of both sets
// overlap), else two adamApply. The same bits either way; it returns the sum of both
// sets' new x.
func adamApply2(x, m, v, g, x2, m2, v2, g2 []float64, step, eps float64) float64 {
	n := len(g)
	if useFMA && useAVX512 && n > 0 {
		x, m, v = x[:n], m[:n], v[:n]
		x2, m2, v2, g2 = x2[:n], m2[:n], v2[:n], g2[:n]
		k := [7]float64{adamBeta1, 1 - adamBeta1, adamBeta2, 1 - adamBeta2, step, eps, 0}
		return adamAVX512(&x[0], &m[0], &v[0], &g[0], &g[0], n, &x2[0], &m2[0], &v2[0], &g2[0], &g2[0], n, &k[0])
	}
	return adamApply(x, m, v, g, step, eps) + adamApply(x2, m2, v2, g2, step, eps)
}

// adamGrad2 is adamApply2 with gradients g = base + sc·kz and
// g2 = base2 + sc·kz2 assembled by the AVX-512 kernel (saving the copies
// and two calls per item), each entry one fused multiply-add as axpyF's: it
// gives the bits of axpyF into copies of base and base2 followed by
// adamApply2. base, kz, base2 and kz2 are only read; all have the length
// of base (≥ 1). Only for CPUs with AVX-512 (useAVX512): it panics
// otherwise.
func adamGrad2(x, m, v, base, kz, x2, m2, v2, base2, kz2 []float64, sc, step, eps float64) float64 {
	if !useAVX512 {
		panic("learn: adamGrad2 without AVX-512")
	}
	n := len(base)
	x, m, v, kz = x[:n], m[:n], v[:n], kz[:n]
	x2, m2, v2, base2, kz2 = x2[:n], m2[:n], v2[:n], base2[:n], kz2[:n]
	k := [7]float64{adamBeta1, 1 - adamBeta1, adamBeta2, 1 - adamBeta2, step, eps, sc}
	return adamAVX512(&x[0], &m[0], &v[0], &base[0], &kz[0], n, &x2[0], &m2[0], &v2[0], &base2[0], &kz2[0], n, &k[0])
}

// adamApplyGo is adamApply in Go.
func adamApplyGo(x, m, v, g []float64, step, eps float64) float64 {
	s := 0.0
	for i, gi := range g {
		// The explicit conversions keep the compiler from fusing
		// multiply-adds (it may, from GOAMD64=v3), so that the kernels'
		// separate multiplies and adds give the same bits.
		mi := float64(adamBeta1*m[i]) + float64((1-adamBeta1)*gi)
		vi := float64(adamBeta2*v[i]) + float64((1-adamBeta2)*gi*gi)
		m[i], v[i] = mi, vi
		xi := x[i] + float64(step*mi)/(math.Sqrt(vi)+eps)
		x[i] = xi
		s += xi
	}
	return s
}

// sgdApply performs x += lr·g and returns the sum of the new x (see
// adamApply).
func sgdApply(x, g []float64, lr float64) float64 {
	x = x[:len(g)]
	s := 0.0
	for i, gi := range g {
		xi := x[i] + float64(lr*gi) // not fused (see adamApplyGo)
		x[i] = xi
		s += xi
	}
	return s
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
	// With Adam, V ≠ B, the exact normaliser and no regulariser, the
	// AVX-512 kernel assembles each gradient itself (adamGrad2; the same
	// bits as below).
	fused := useAVX512 && o.np != nil && p.B != nil && o.opt.Optimizer == Adam && o.opt.Alpha == 0 && o.opt.Beta == 0
	ok := true
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
			kz, sc = o.np.kz[i*m:(i+1)*m], -float64(o.pos)/o.mu[i]
		}
		if !fused {
			copy(gv, bgv)
			if kz != nil {
				axpyF(sc, kz[:d], gv)
				axpyF(sc, kz[d:], gb)
			}
			if p.B == nil {
				axpyF(1, gb, gv) // B = V: both roles' gradients act on vᵢ
			}
			if o.opt.Alpha != 0 {
				axpyF(-2*o.opt.Alpha/o.mu[i], vi, gv)
			}
			if p.B != nil && o.opt.Beta != 0 {
				axpyF(-2*o.opt.Beta/o.mu[i], bi, gb)
			}
		}
		// ∂/∂C += bᵢ wᵢᵀ, kept as the pair (wᵢ, bᵢ) before bᵢ moves. A
		// single item's term P bᵢbᵢᵀ is symmetric: it adds nothing to
		// ∂/∂D = G_C − G_Cᵀ.
		if len(basket) > 1 {
			o.pendBW = append(o.pendBW, bw...)
			o.pendBW = append(o.pendBW, bi...)
			if len(o.pendBW) >= 2*d*maxPendPairs {
				o.foldPairs()
			}
		}
		if o.np != nil {
			o.markDirty(i)
		}
		o.t[i]++
		var sum float64
		if o.opt.Optimizer == SGD {
			sum = sgdApply(vi, gv, o.opt.LR)
			if p.B != nil {
				sum += sgdApply(bi, gb, o.opt.LR)
			}
		} else {
			st, eps := o.adamCoef(o.t[i])
			switch {
			case fused:
				sum = adamGrad2(vi, o.mom.V[r:r+d], o.sq.V[r:r+d], bgv, kz[:d], bi, o.mom.B[r:r+d], o.sq.B[r:r+d], gb, kz[d:], sc, st, eps)
			case p.B != nil:
				sum = adamApply2(vi, o.mom.V[r:r+d], o.sq.V[r:r+d], gv, bi, o.mom.B[r:r+d], o.sq.B[r:r+d], gb, st, eps)
			default:
				sum = adamApply(vi, o.mom.V[r:r+d], o.sq.V[r:r+d], gv, st, eps)
			}
		}
		ok = ok && finite(sum)
	}
	return ok
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
// xᵣᵀ W with W the rows wₜ and xᵣ = (b₁[r], b₂[r], …): with the AVX2/FMA
// kernels, four rows at a time read straight from the pairs (the entries
// of xᵣ are 2d apart, the four rows' entries adjacent), the sums kept in
// registers; otherwise the xᵣ are gathered into rows first, for vecmatN.
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
	if useFMA && d >= 4 {
		for r := 0; r < d; r += 4 {
			// The last group ends at row d−1 (rows it recomputes get
			// the same bits).
			r0 := min(r, d-4)
			vecmat4(&cs.prod[r0*d], d, &y[d+r0], 1, &y[0], k, d, 2*d, 2*d)
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
	vecmatN(cs.prod, d, bt, k, d, y, k, d, 2*d, 1)
	return cs.prod
}

// stepD steps C = D − Dᵀ every CEvery baskets with the mean of the pending
// gradients (∂/∂D = G_C − G_Cᵀ, G_C = pendC + the pairs' sum) and reports
// whether D stayed finite. The element-wise optimiser step runs on the
// whole d×d D by adamApply's kernel; as ∂/∂D is skew, the update of entry
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

// vecmat computes out = alpha·xᵀM for a row-major rows×cols M (out_j =
// alpha·Σ_l x_l M_lj): the AVX2/FMA kernel keeps a chunk of out in
// registers while it streams M's rows, which at these sizes is about twice
// as fast as four-row dot products (gemv). For symmetric M it is M x; for
// skew C, xᵀC = −(C x)ᵀ.
func vecmat(out, m []float64, rows, cols int, x []float64, alpha float64) {
	vecmatLD(out, m, rows, cols, cols, x, alpha)
}

// vecmatLD is vecmat for a matrix with row stride ld ≥ cols.
func vecmatLD(out, m []float64, rows, cols, ld int, x []float64, alpha float64) {
	if rows == 0 || cols == 0 {
		clear(out[:cols])
		return
	}
	if !useFMA {
		asm.Dgemv(gblas.Trans, rows, cols, alpha, m, ld, x, 1, 0, out, 1)
		return
	}
	if len(m) < (rows-1)*ld+cols || len(x) < rows || len(out) < cols {
		panic("learn: vecmat: slice too short")
	}
	vecmatFMA(&out[0], &x[0], &m[0], rows, cols, ld)
	if alpha != 1 {
		for j := range out[:cols] {
			out[j] *= alpha
		}
	}
}
