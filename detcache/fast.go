package detcache

import (
	"fmt"
	"math"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/internal/f64"
	"github.com/ndpp-go/ndpp/ndpp"
)

// Numerical rules of Fast (see the package documentation).
const (
	// ZeroCancelFactor is τ in Fast's zero rule: a determinant ratio r
	// computed as a sum of terms whose absolute values add up to mag, with
	// error bound err, is zero when |r| + err ≤ τ·ε·min(mag, N) (ε = 2⁻⁵²,
	// N the ratio's natural scale): it is below the rounding noise of its
	// own computation, and S' is numerically singular relative to the
	// norms of its items.
	ZeroCancelFactor = 64
	// FallbackErr bounds the relative error of a value Fast returns from
	// the identities: a ratio r is used when its first-order error bound
	// err (rounding of the sums, errors of the kernel entries, and errors
	// of M⁻¹, p and q of order γ = GammaSafety·ε·Σκ) satisfies
	// err ≤ FallbackErr·r. Any other ratio that is not clearly zero (in
	// particular a small or negative one) is recomputed with a fresh LU,
	// counted in Stats.Fallbacks: near-zero values then follow ndpp's zero
	// rule, like Naive's, instead of returning digits lost to cancellation.
	FallbackErr = 1e-7
	// MaxCond is the largest 1-norm condition number of the equilibrated
	// kernel D·L_S·D (D = diag(1/‖zᵢ‖)) for which Fast answers from M⁻¹.
	// Beyond it, and while L_S is singular, every value is computed with a
	// fresh LU (direct mode, counted in Stats.Fallbacks) until an accepted
	// change makes L_S well-conditioned again.
	MaxCond = 1e8
	// GammaSafety multiplies the first-order error bounds (γ = κ·ε per
	// update) to cover the dimension factors they leave out.
	GammaSafety = 4
	// RefactorEvery is the number of low-rank updates of M⁻¹ after which
	// Fast refactors L_S from scratch and records the drift in Stats. It
	// also refactors as soon as Σκ since the last refactor exceeds
	// RefactorEvery times the current κ (a badly conditioned past).
	RefactorEvery = 64
)

const eps = 0x1p-52

// Fast is the incremental oracle. For the current solution S (k = |S|) it
// keeps M = L_S, M⁻¹, log det M, and the rows vᵢ and bᵢᵀC of S's items, so
// that for an arriving item t, Prepare costs O(kd + k²), AddValue O(1),
// SwapValues O(k) for all k swaps, and PairSwapValue O(1) per pair of
// positions. Accepted changes update M⁻¹ in O(k²) (bordering for Add, a
// division-free rank-2 formula for Swap, two of them for PairSwap), with a
// full refactor every RefactorEvery updates. See the package documentation
// for the identities and the numerical rules.
//
// A Fast is not safe for concurrent use; the model it reads may be shared.
type Fast struct {
	m                    *ndpp.Model
	d, cap               int
	vRows, bRows, bcRows []float64

	items   []int
	vs, bcs []float64 // cap×d; row i = v_{S_i}, b_{S_i}ᵀC
	mk, inv []float64 // cap×cap, leading dimension cap: M = L_S and M⁻¹
	znorm   []float64 // ‖z_{S_i}‖
	izn     []float64 // 1/‖z_{S_i}‖
	logz2   []float64 // log ‖z_{S_i}‖²
	logDetE float64   // log det of the equilibrated L_S: logDet − Σ logz2
	logDet  float64   // log det M (normal mode)
	gamma   float64   // error scale of M⁻¹: GammaSafety·ε·kacc
	kacc    float64   // Σ κ(equilibrated L_S) over the updates since the last refactor
	einv    float64   // ‖E⁻¹‖₁ of the equilibrated L_S (E = D·L_S·D)
	cw      float64   // 1 + ‖C‖_F: kernel entry errors are ≤ d·ε·cw·‖zᵢ‖‖zⱼ‖
	direct  bool      // L_S singular or ill-conditioned: values by fresh LU
	value   Value
	version uint64
	stamp   uint64
	since   int    // low-rank updates since the last refactor
	chgN    int    // positions changed by the last update (−1: all)
	chgPos  [2]int // those positions
	stats   Stats

	// Scratch, sized at construction.
	set     []int
	lu, tmp []float64 // cap×cap
	piv     []int
	col     []float64 // cap
	wa, wb  []float64 // cap: column and row j of M⁻¹ in swapUpdate
	wx, wy  []float64 // cap: g and h in swapUpdate
	inner   *Cand     // the second item of a pair swap
	// Fallback buffers, (cap+1)×(cap+1) and cap+1.
	da, dlu, dinv, dz []float64
	dpiv              []int
}

var _ Oracle = (*Fast)(nil)

// NewFast returns an empty incremental oracle for solutions of at most
// capacity items. It returns an error for a nil model and for capacity < 1,
// capacity > 2d (every larger set has determinant zero) or capacity > n.
func NewFast(m *ndpp.Model, capacity int) (*Fast, error) {
	if err := checkCapacity(m, capacity); err != nil {
		return nil, err
	}
	d, c := m.D(), capacity
	o := &Fast{m: m, d: d, cap: c,
		items: make([]int, 0, c),
		vs:    make([]float64, c*d), bcs: make([]float64, c*d),
		mk: make([]float64, c*c), inv: make([]float64, c*c),
		znorm: make([]float64, c), izn: make([]float64, c), logz2: make([]float64, c),
		set: make([]int, 0, c+1),
		lu:  make([]float64, c*c), tmp: make([]float64, c*c),
		piv: make([]int, c), col: make([]float64, c),
		da: make([]float64, (c+1)*(c+1)), dlu: make([]float64, (c+1)*(c+1)),
		dinv: make([]float64, (c+1)*(c+1)), dz: make([]float64, c+1), dpiv: make([]int, c+1),
		wa: make([]float64, c), wb: make([]float64, c),
		wx: make([]float64, c), wy: make([]float64, c),
	}
	var cRows []float64
	o.vRows, o.bRows, o.bcRows, cRows = m.Rows()
	o.cw = 1 + math.Sqrt(blas.Dot(cRows, cRows))
	o.inner = o.NewCand()
	o.inner.owner = o
	o.setCond(1, 1, true)
	return o, nil
}

// Model returns the model the oracle scores against.
func (o *Fast) Model() *ndpp.Model { return o.m }

// Cap returns the largest solution size.
func (o *Fast) Cap() int { return o.cap }

// Reset empties the solution; statistics are kept.
func (o *Fast) Reset() {
	o.items = o.items[:0]
	o.value = Value{}
	o.logDet, o.logDetE = 0, 0
	o.direct = false
	o.since = 0
	o.setCond(1, 1, true)
	o.version++
	o.chgN = -1
}

// Len returns |S|.
func (o *Fast) Len() int { return len(o.items) }

// Items returns S in position order (a view; do not modify).
func (o *Fast) Items() []int { return o.items }

// Value returns the value of S (Log 0 for the empty set).
func (o *Fast) Value() Value { return o.value }

// Direct reports whether the oracle is in direct mode: L_S is singular or
// too ill-conditioned (see MaxCond) for M⁻¹, and every value is computed
// with a fresh LU.
func (o *Fast) Direct() bool { return o.direct }

// NewCand returns an unprepared Cand with buffers for this oracle.
func (o *Fast) NewCand() *Cand {
	return &Cand{item: -1, dup: -1,
		u: make([]float64, o.cap), w: make([]float64, o.cap),
		p: make([]float64, o.cap), q: make([]float64, o.cap)}
}

func (o *Fast) itemV(i int) []float64  { return o.vRows[i*o.d : (i+1)*o.d : (i+1)*o.d] }
func (o *Fast) itemB(i int) []float64  { return o.bRows[i*o.d : (i+1)*o.d : (i+1)*o.d] }
func (o *Fast) itemBC(i int) []float64 { return o.bcRows[i*o.d : (i+1)*o.d : (i+1)*o.d] }

// entry returns L_ij.
func (o *Fast) entry(i, j int) float64 {
	return blas.Dot(o.itemV(i), o.itemV(j)) + blas.Dot(o.itemBC(i), o.itemB(j))
}

// Prepare computes c's products for item against the current S:
// u = L_{S,t} and w = L_{t,S} from the cached rows (O(kd)), p = M⁻¹u,
// q = M⁻ᵀw and the Schur complement s = L_tt − w·p (O(k²)). It panics for
// an item out of range. An item already in S is accepted: values of sets
// that would repeat it are zero.
func (o *Fast) Prepare(c *Cand, item int) {
	checkItem(o.m, item)
	if c.owner != o {
		if c.owner != nil || len(c.u) < o.cap {
			panic("detcache: Cand was created by another oracle")
		}
		c.owner = o
	}
	o.stamp++
	c.item, c.version, c.stamp = item, o.version, o.stamp
	c.pair = nil
	k := len(o.items)
	c.dup = positionOf(o.items, item)
	vt, bt, bct := o.itemV(item), o.itemB(item), o.itemBC(item)
	vv := blas.Dot(vt, vt)
	c.ltt = vv + blas.Dot(bct, bt)
	c.logz2 = math.Log(vv + blas.Dot(bt, bt))
	c.hasUW = false
	if o.direct {
		return
	}
	for i := 0; i < k; i++ {
		o.setUW(c, i)
	}
	c.hasUW = true
	o.prepareTail(c)
}

// setUW computes u_i = L_{S_i,t} and w_i = L_{t,S_i} for position i, O(d).
func (o *Fast) setUW(c *Cand, i int) {
	d := o.d
	a := blas.Dot(o.vs[i*d:(i+1)*d], o.itemV(c.item))
	b := blas.Dot(o.bcs[i*d:(i+1)*d], o.itemB(c.item))
	c.u[i], c.w[i] = a+b, a-b
}

// prepareTail computes p, q, s and the error scales from u and w, O(k²).
func (o *Fast) prepareTail(c *Cand) {
	k := len(o.items)
	u, w, p, q := c.u[:k], c.w[:k], c.p[:k], c.q[:k]
	ld := o.cap
	for j := range q {
		q[j] = 0
	}
	for i := 0; i < k; i++ {
		row := o.inv[i*ld : i*ld+k]
		p[i] = blas.Dot(row, u)
		if wi := w[i]; wi != 0 {
			for j, x := range row {
				q[j] += wi * x
			}
		}
	}
	s, mag := c.ltt, math.Abs(c.ltt)
	var pn, qn, w1, zp float64
	for i, wi := range w {
		t := wi * p[i]
		s -= t
		mag += math.Abs(t)
		z := o.znorm[i]
		ap := math.Abs(p[i]) * z
		pn = math.Max(pn, ap)
		qn = math.Max(qn, math.Abs(q[i])*z)
		w1 += math.Abs(wi) * o.izn[i]
		zp += ap
	}
	// Kernel entries carry errors up to ε·cw·‖zᵢ‖‖zⱼ‖ (cancellation between
	// vᵢ·vⱼ and bᵢᵀCbⱼ), which reach p and q through M⁻¹ like a column of
	// size ‖z_t‖: hence the ‖z_t‖ added to the error scales pn and qn.
	zt := math.Exp(0.5 * c.logz2)
	c.zt, c.zp = zt, zp
	c.pn, c.qn, c.w1 = pn+zt, qn+zt, w1
	if k == 2*o.d {
		// rank L ≤ 2d: the Schur complement of a full-rank L_S of size 2d
		// in L_{S+t} is exactly zero, and the computed s is rounding noise.
		c.s, c.smag, c.serr = 0, 0, 0
		return
	}
	c.s, c.smag = s, mag
	c.serr = eps*mag + o.gamma*c.pn*w1 + eps*o.cw*zt*(zt+zp)
}

// Refresh brings c up to date with the current S: O(1) when S did not
// change since c was prepared, O(d + k²) after one accepted change (only
// the entries of u and w at the changed positions are recomputed, then p,
// q and s), O(kd + k²) otherwise. The result equals a fresh Prepare bit
// for bit.
func (o *Fast) Refresh(c *Cand) {
	checkCand(o, c)
	if c.version == o.version {
		return
	}
	if c.version+1 != o.version || o.chgN < 0 || !c.hasUW || o.direct {
		o.Prepare(c, c.item)
		return
	}
	o.stamp++
	c.version, c.stamp, c.pair = o.version, o.stamp, nil
	c.dup = positionOf(o.items, c.item)
	for _, pos := range o.chgPos[:o.chgN] {
		o.setUW(c, pos)
	}
	o.prepareTail(c)
}

// ratioValue turns a determinant ratio r = det L_{S'}/det L_S, the
// magnitude mag of the terms cancelled in it, a bound err on its absolute
// error and the log of its natural scale N (the ratio S' would have if its
// equilibrated determinant were 1) into a Value; ok is false when the value
// must be computed directly.
func (o *Fast) ratioValue(r, mag, err, logN float64) (v Value, ok bool) {
	if err <= FallbackErr*r && r <= math.MaxFloat64 {
		return Value{Log: o.logDet + math.Log(r)}, true
	}
	bound := math.Abs(r) + err
	tol := ZeroCancelFactor * eps
	if bound <= tol*mag && mag <= math.MaxFloat64 && math.Log(bound) <= math.Log(tol)+logN {
		return ZeroValue, true
	}
	return Value{}, false // NaN, or neither accurate nor clearly zero
}

// swapRatio returns the Jacobi ratio for position j, its cancellation
// magnitude and its first-order error bound (see the package
// documentation).
func (o *Fast) swapRatio(c *Cand, j int) (r, mag, err float64) {
	mjj := o.inv[j*o.cap+j]
	pq := c.p[j] * c.q[j]
	iz := o.izn[j]
	am := math.Abs(mjj)
	r = c.s*mjj + pq
	mag = c.smag*am + math.Abs(pq)
	err = eps*mag + c.serr*am + o.gamma*iz*(math.Abs(c.s)*o.einv*iz+c.pn*math.Abs(c.q[j])+c.qn*math.Abs(c.p[j]))
	return r, mag, err
}

// directSet computes the value of the set in o.set with a fresh LU, in
// the oracle's own buffers (no allocation): ndpp's zero rule (see
// ndpp.ZeroRcondFactor) applied to the equilibrated kernel, with its exact
// 1-norm condition number (ndpp.Model.LogDet uses LAPACK's estimate).
func (o *Fast) directSet() Value {
	set := o.set
	k := len(set)
	if k == 0 {
		return Value{}
	}
	if hasDup(set) || k > 2*o.d {
		return ZeroValue
	}
	o.stats.Fallbacks++
	a, inv, z := o.da[:k*k], o.dinv[:k*k], o.dz[:k]
	logScale := 0.0
	for i, it := range set {
		v, b := o.itemV(it), o.itemB(it)
		zz := blas.Dot(v, v) + blas.Dot(b, b)
		if !(zz > 0) {
			return ZeroValue
		}
		z[i] = 1 / math.Sqrt(zz)
		logScale += math.Log(zz)
	}
	for i, it := range set {
		row := a[i*k : (i+1)*k]
		for j, jt := range set {
			row[j] = o.entry(it, jt) * z[i] * z[j]
		}
	}
	copy(inv, a)
	logAbs, sign := f64.Inverse(inv, k, k, o.dpiv, o.dlu) // dlu: the inverse's scratch
	if sign <= 0 || !isFinite(logAbs) {
		return ZeroValue
	}
	if ndpp.IsZeroRcond(exactRcond(a, inv, k), k) {
		return ZeroValue
	}
	return Value{Log: logAbs + logScale}
}

// addValue is AddValue without counting.
func (o *Fast) addValue(c *Cand) Value {
	k := len(o.items)
	if c.dup >= 0 || k+1 > 2*o.d {
		return ZeroValue
	}
	if !o.direct {
		if v, ok := o.ratioValue(c.s, c.smag, c.serr, c.logz2-o.logDetE); ok {
			return v
		}
	}
	o.set = append(append(o.set[:0], o.items...), c.item)
	return o.directSet()
}

// AddValue returns the value of S ∪ {x}: det L_{S+t}/det M = s.
func (o *Fast) AddValue(c *Cand) Value {
	o.Refresh(c)
	o.stats.Evals++
	return o.addValue(c)
}

// swapValue is the value of S − S[j] + x without counting; ident reports
// that it came from the identity (not from a fresh LU).
func (o *Fast) swapValue(c *Cand, j int) (v Value, ident bool) {
	if c.dup >= 0 {
		if c.dup == j {
			return o.value, false
		}
		return ZeroValue, false
	}
	if !o.direct {
		r, mag, err := o.swapRatio(c, j)
		if v, ok := o.ratioValue(r, mag, err, c.logz2-o.logz2[j]-o.logDetE); ok {
			return v, true
		}
	}
	o.set = append(o.set[:0], o.items...)
	o.set[j] = c.item
	return o.directSet(), false
}

// SwapValues writes the value of S − S[j] + x into dst[j] for every j:
// det L_{S−j+t}/det M = s·(M⁻¹)_jj + p_j q_j (Jacobi), O(1) each.
func (o *Fast) SwapValues(c *Cand, dst []Value) {
	o.Refresh(c)
	k := len(o.items)
	if len(dst) < k {
		panic(fmt.Sprintf("detcache: SwapValues dst has length %d < |S| = %d", len(dst), k))
	}
	o.stats.Evals += int64(k)
	if c.dup < 0 && !o.direct {
		for j := 0; j < k; j++ {
			r, _, err := o.swapRatio(c, j)
			if err <= FallbackErr*r && r <= math.MaxFloat64 {
				dst[j] = Value{Log: o.logDet + math.Log(r)}
			} else {
				dst[j], _ = o.swapValue(c, j)
			}
		}
		return
	}
	for j := 0; j < k; j++ {
		dst[j], _ = o.swapValue(c, j)
	}
}

// pairSigma returns Σ_xy = L_xy − w_x·p_y and Σ_yx with their cancellation
// magnitudes, cached in x for the partner y (O(d + k) once per pair of
// Cands, O(1) after).
func (o *Fast) pairSigma(x, y *Cand) {
	if x.pair == y && x.pairStamp == y.stamp && x.pairOwnStamp == x.stamp {
		return
	}
	k := len(o.items)
	lxy, lyx := o.entry(x.item, y.item), o.entry(y.item, x.item)
	sxy, syx := lxy, lyx
	mxy, myx := math.Abs(lxy), math.Abs(lyx)
	wx, wy, px, py := x.w[:k], y.w[:k], x.p[:k], y.p[:k]
	for i := range wx {
		a, b := wx[i]*py[i], wy[i]*px[i]
		sxy -= a
		syx -= b
		mxy += math.Abs(a)
		myx += math.Abs(b)
	}
	exy := eps*mxy + o.gamma*y.pn*x.w1 + eps*o.cw*x.zt*(y.zt+y.zp)
	eyx := eps*myx + o.gamma*x.pn*y.w1 + eps*o.cw*y.zt*(x.zt+x.zp)
	if k == 2*o.d {
		// Σ = L_XX − L_{X,S}M⁻¹L_{S,X} is exactly zero (rank L ≤ 2d).
		sxy, syx, mxy, myx, exy, eyx = 0, 0, 0, 0, 0, 0
	}
	x.pair, x.pairStamp, x.pairOwnStamp = y, y.stamp, x.stamp
	x.sxy, x.syx, x.sxyMag, x.syxMag, x.sxyErr, x.syxErr = sxy, syx, mxy, myx, exy, eyx
}

// pairValue is PairSwapValue without counting or checks; ident reports
// that the value came from the identity (not from a fresh LU).
func (o *Fast) pairValue(x, y *Cand, a, b int) (v Value, ident bool) {
	if x.item == y.item {
		return ZeroValue, false
	}
	if x.dup < 0 && y.dup < 0 && !o.direct {
		o.pairSigma(x, y)
		ld := o.cap
		var mtx, mag [16]float64
		mtx[0], mtx[1], mtx[2], mtx[3] = o.inv[a*ld+a], o.inv[a*ld+b], x.p[a], y.p[a]
		mtx[4], mtx[5], mtx[6], mtx[7] = o.inv[b*ld+a], o.inv[b*ld+b], x.p[b], y.p[b]
		mtx[8], mtx[9], mtx[10], mtx[11] = -x.q[a], -x.q[b], x.s, x.sxy
		mtx[12], mtx[13], mtx[14], mtx[15] = -y.q[a], -y.q[b], x.syx, y.s
		for i, v := range mtx {
			mag[i] = math.Abs(v)
		}
		mag[10], mag[11], mag[14], mag[15] = x.smag, x.sxyMag, x.syxMag, y.smag
		g, ia, ib := o.gamma, o.izn[a], o.izn[b]
		ge := g * o.einv
		errs := [16]float64{
			ge * ia * ia, ge * ia * ib, g * x.pn * ia, g * y.pn * ia,
			ge * ib * ia, ge * ib * ib, g * x.pn * ib, g * y.pn * ib,
			g * x.qn * ia, g * x.qn * ib, x.serr, x.sxyErr,
			g * y.qn * ia, g * y.qn * ib, x.syxErr, y.serr,
		}
		r, size, err := det4(&mtx, &mag, &errs)
		if err <= FallbackErr*r && r <= math.MaxFloat64 {
			return Value{Log: o.logDet + math.Log(r)}, true
		}
		logN := x.logz2 + y.logz2 - o.logz2[a] - o.logz2[b] - o.logDetE
		if v, ok := o.ratioValue(r, size, err, logN); ok {
			return v, true
		}
	}
	o.set = append(o.set[:0], o.items...)
	o.set[a], o.set[b] = x.item, y.item
	return o.directSet(), false
}

// PairSwapValue returns the value of S − {S[a], S[b]} + {x, y}: the 4×4
// determinant det [[(M⁻¹)_RR, P_R], [−Q_R, Σ]] with R = {a, b}, O(1) per
// pair of positions. It panics for invalid positions.
func (o *Fast) PairSwapValue(x, y *Cand, a, b int) Value {
	o.Refresh(x)
	o.Refresh(y)
	if err := checkPair(a, b, len(o.items)); err != nil {
		panic(err.Error())
	}
	o.stats.Evals++
	v, _ := o.pairValue(x, y, a, b)
	return v
}

// Add appends x to S. It fails if S is full or x is already in S. The new
// inverse is the bordered one,
// M'⁻¹ = [[M⁻¹ + p qᵀ/s, −p/s], [−qᵀ/s, 1/s]], O(k²).
func (o *Fast) Add(c *Cand) error {
	o.Refresh(c)
	k := len(o.items)
	if k >= o.cap {
		return ErrFull
	}
	if c.dup >= 0 {
		return fmt.Errorf("detcache: item %d is already in S at position %d", c.item, c.dup)
	}
	if o.direct {
		o.items = append(o.items, c.item)
		o.rebuild()
		o.changed(k)
		return nil
	}
	v, ok := o.ratioValue(c.s, c.smag, c.serr, c.logz2-o.logDetE)
	o.items = append(o.items, c.item)
	o.setRow(k, c.item)
	ld := o.cap
	for i := 0; i < k; i++ {
		o.mk[i*ld+k] = c.u[i]
		o.mk[k*ld+i] = c.w[i]
	}
	o.mk[k*ld+k] = c.ltt
	if !ok || v.Zero {
		o.refactor(false)
		o.changed(k)
		return nil
	}
	s := c.s
	p, q := c.p[:k], c.q[:k]
	for i := 0; i < k; i++ {
		row := o.inv[i*ld : i*ld+k]
		f := p[i] / s
		for j, qj := range q {
			row[j] += f * qj
		}
		o.inv[i*ld+k] = -f
		o.inv[k*ld+i] = -q[i] / s
	}
	o.inv[k*ld+k] = 1 / s
	o.logDet = v.Log
	o.value = v
	o.since++
	o.checkAfterUpdate()
	o.changed(k)
	return nil
}

// Swap replaces S[pos] with x. It fails for pos out of range or x already
// elsewhere in S. M⁻¹ is updated in O(k²) (see swapUpdate).
func (o *Fast) Swap(pos int, c *Cand) error {
	o.Refresh(c)
	k := len(o.items)
	if pos < 0 || pos >= k {
		return fmt.Errorf("detcache: swap position %d out of range [0, %d)", pos, k)
	}
	if c.dup >= 0 {
		if c.dup != pos {
			return fmt.Errorf("detcache: item %d is already in S at position %d", c.item, c.dup)
		}
		o.changed(pos)
		return nil
	}
	if o.direct {
		o.items[pos] = c.item
		o.rebuild()
		o.changed(pos)
		return nil
	}
	v, ident := o.swapValue(c, pos)
	if ident && !v.Zero {
		o.swapUpdate(pos, c)
		o.logDet, o.value = v.Log, v
		o.since++
		o.checkAfterUpdate()
	} else {
		o.items[pos] = c.item
		o.rebuild()
	}
	o.changed(pos)
	return nil
}

// PairSwap replaces S[a] with x and S[b] with y. The resulting set must not
// repeat an item. M⁻¹ is updated by two swaps in O(kd + k²), in the order
// whose intermediate set is further from singular; when neither is safe,
// L_S is refactored.
func (o *Fast) PairSwap(a, b int, x, y *Cand) error {
	o.Refresh(x)
	o.Refresh(y)
	k := len(o.items)
	if err := checkPair(a, b, k); err != nil {
		return err
	}
	o.set = append(o.set[:0], o.items...)
	o.set[a], o.set[b] = x.item, y.item
	if hasDup(o.set) {
		return fmt.Errorf("detcache: pair swap of items %d, %d at positions %d, %d repeats an item of S", x.item, y.item, a, b)
	}
	if o.direct || x.dup >= 0 || y.dup >= 0 {
		copy(o.items, o.set)
		o.rebuild()
		o.changed(a, b)
		return nil
	}
	v, ident := o.pairValue(x, y, a, b)
	// Safety of each first step: the relative error bound of its ratio.
	first, second, pf, ps := x, y, a, b
	ra, _, ea := o.swapRatio(x, a)
	rb, _, eb := o.swapRatio(y, b)
	okA, okB := ra > 0 && ea <= FallbackErr*ra, rb > 0 && eb <= FallbackErr*rb
	if okB && (!okA || eb/rb < ea/ra) {
		first, second, pf, ps = y, x, b, a
	}
	done := false
	if ident && !v.Zero && (okA || okB) {
		o.swapUpdate(pf, first)
		c := o.inner
		o.Prepare(c, second.item)
		if r, _, e := o.swapRatio(c, ps); r > 0 && e <= FallbackErr*r {
			o.swapUpdate(ps, c)
			o.logDet, o.value = v.Log, v
			o.since += 2
			o.checkAfterUpdate()
			done = true
		}
	}
	if !done {
		copy(o.items, o.set)
		o.rebuild()
	}
	o.changed(a, b)
	return nil
}

// swapUpdate replaces S[j] by c's item and updates M and M⁻¹ in O(k²).
// With m = (M⁻¹)_jj, α = column j and β = row j of M⁻¹ and the swap ratio
// r = s·m + p_j q_j, the inverse of M' (N = L_{S+t} with index j deleted)
// is, for i, l ≠ j,
//
//	M'⁻¹_il = M⁻¹_il + p_i g_l − α_i h_l,
//	g_l = (m q_l − q_j β_l)/r,  h_l = (s β_l + p_j q_l)/r,
//
// with new row j = −g, new column j = (α p_j − p m)/r and new diagonal
// m/r. It follows from the bordered inverse of N scaled by s, so it never
// divides by s and holds when L_{S+t} is singular (s = 0, e.g. k = 2d).
func (o *Fast) swapUpdate(j int, c *Cand) {
	k, ld := len(o.items), o.cap
	alpha, beta, g, h := o.wa[:k], o.wb[:k], o.wx[:k], o.wy[:k]
	m := o.inv[j*ld+j]
	for i := 0; i < k; i++ {
		alpha[i] = o.inv[i*ld+j]
	}
	copy(beta, o.inv[j*ld:j*ld+k])
	s, p, q := c.s, c.p[:k], c.q[:k]
	pj, qj := p[j], q[j]
	r := s*m + pj*qj
	ir := 1 / r
	for l := range g {
		g[l] = (m*q[l] - qj*beta[l]) * ir
		h[l] = (s*beta[l] + pj*q[l]) * ir
	}
	for i := 0; i < k; i++ {
		if i == j {
			continue
		}
		row := o.inv[i*ld : i*ld+k]
		pi, ai := p[i], alpha[i]
		for l := range row {
			row[l] += pi*g[l] - ai*h[l]
		}
		row[j] = (ai*pj - pi*m) * ir
	}
	row := o.inv[j*ld : j*ld+k]
	for l := range row {
		row[l] = -g[l]
	}
	row[j] = m * ir
	// M' and the cached rows.
	for i := 0; i < k; i++ {
		o.mk[i*ld+j] = c.u[i]
		o.mk[j*ld+i] = c.w[i]
	}
	o.mk[j*ld+j] = c.ltt
	o.items[j] = c.item
	o.setRow(j, c.item)
}

// setRow caches item's rows at position pos.
func (o *Fast) setRow(pos, item int) {
	d := o.d
	copy(o.vs[pos*d:(pos+1)*d], o.itemV(item))
	copy(o.bcs[pos*d:(pos+1)*d], o.itemBC(item))
	v, b := o.itemV(item), o.itemB(item)
	o.znorm[pos] = math.Sqrt(blas.Dot(v, v) + blas.Dot(b, b))
	o.izn[pos] = 1 / o.znorm[pos]
	o.logz2[pos] = 2 * math.Log(o.znorm[pos])
}

// checkAfterUpdate runs after a low-rank update: a periodic refactor
// (measuring drift), or an early one when the equilibrated condition number
// of L_S exceeds MaxCond.
func (o *Fast) checkAfterUpdate() {
	o.setLogDetE()
	kappa, einv := o.cond(o.inv)
	tooLarge := o.setCond(kappa, einv, false)
	if o.since >= RefactorEvery || tooLarge || o.kacc > RefactorEvery*math.Max(kappa, 1) {
		o.refactor(true)
	}
}

// setLogDetE records log det of the equilibrated L_S.
func (o *Fast) setLogDetE() {
	o.logDetE = o.logDet
	for _, l := range o.logz2[:len(o.items)] {
		o.logDetE -= l
	}
}

// setCond records the condition number κ of the equilibrated L_S and the
// norm of its inverse, which scale the error bounds of the identities.
// Rounding errors of M⁻¹ accumulate over low-rank updates, each adding
// about κ·ε at the κ of its time, so γ = GammaSafety·ε·Σκ sums κ since the
// last refactor (reset). It reports whether κ exceeds MaxCond (or is not
// finite).
func (o *Fast) setCond(kappa, einv float64, reset bool) (tooLarge bool) {
	if reset {
		o.kacc = 0
	}
	// Entry errors of L_S are about ε·cw in equilibrated units, so an
	// inverse with a large norm amplifies them even when κ is small (L_S
	// tiny against its items' norms): κ_eff = max(κ, cw·‖E⁻¹‖₁).
	kappa = math.Max(kappa, o.cw*einv)
	o.kacc += math.Max(kappa, 1)
	o.gamma = GammaSafety * o.kacc * eps
	o.einv = einv
	return !(kappa <= MaxCond)
}

// cond returns the 1-norm condition number of the equilibrated kernel
// E = D·M·D, D = diag(1/‖zᵢ‖), given M⁻¹ (E⁻¹ = D⁻¹M⁻¹D⁻¹), and ‖E⁻¹‖₁,
// in O(k²).
func (o *Fast) cond(inv []float64) (kappa, einv float64) {
	k, ld := len(o.items), o.cap
	col := o.col[:k]
	colMax := func() float64 {
		mx := 0.0
		for _, x := range col {
			if !(x <= mx) {
				mx = x
			}
		}
		return mx
	}
	for j := range col {
		col[j] = 0
	}
	for i := 0; i < k; i++ {
		zi := o.izn[i]
		for j, x := range o.mk[i*ld : i*ld+k] {
			col[j] += math.Abs(x) * zi * o.izn[j]
		}
	}
	n1 := colMax()
	for j := range col {
		col[j] = 0
	}
	for i := 0; i < k; i++ {
		zi := o.znorm[i]
		for j, x := range inv[i*ld : i*ld+k] {
			col[j] += math.Abs(x) * zi * o.znorm[j]
		}
	}
	n2 := colMax()
	return n1 * n2, n2
}

// refactor recomputes log det M and M⁻¹ from M with a fresh LU, O(k³).
// With measure, the difference from the incrementally updated inverse and
// log-determinant is recorded in Stats. A singular or ill-conditioned M
// (condition number above MaxCond) switches to direct mode.
func (o *Fast) refactor(measure bool) {
	k, ld := len(o.items), o.cap
	o.since = 0
	if k == 0 {
		o.direct, o.logDet, o.logDetE, o.value = false, 0, 0, Value{}
		o.setCond(1, 1, true)
		return
	}
	o.stats.Refactors++
	for i := 0; i < k; i++ {
		copy(o.tmp[i*ld:i*ld+k], o.mk[i*ld:i*ld+k])
	}
	logAbs, sign := f64.Inverse(o.tmp, k, ld, o.piv, o.lu) // lu: the inverse's scratch
	if sign <= 0 || !isFinite(logAbs) {
		o.enterDirect()
		return
	}
	if kappa, einv := o.cond(o.tmp); o.setCond(kappa, einv, true) {
		o.enterDirect()
		return
	}
	if measure && !o.direct {
		diff, size := 0.0, 0.0
		for i := 0; i < k; i++ {
			for j := 0; j < k; j++ {
				f := o.tmp[i*ld+j]
				diff = math.Max(diff, math.Abs(o.inv[i*ld+j]-f))
				size = math.Max(size, math.Abs(f))
			}
		}
		if size > 0 {
			o.stats.MaxDrift = math.Max(o.stats.MaxDrift, diff/size)
		}
		o.stats.MaxLogDetDrift = math.Max(o.stats.MaxLogDetDrift, math.Abs(o.logDet-logAbs))
	}
	for i := 0; i < k; i++ {
		copy(o.inv[i*ld:i*ld+k], o.tmp[i*ld:i*ld+k])
	}
	o.direct = false
	o.logDet = logAbs
	o.value = Value{Log: logAbs}
	o.setLogDetE()
}

// enterDirect switches to direct mode; the value of S comes from a fresh LU
// (ndpp's zero rule).
func (o *Fast) enterDirect() {
	o.direct = true
	o.logDet = 0
	o.value = directValue(o.m, o.items)
}

// rebuild recomputes the cached rows and M from the model for the current
// items and refactors.
func (o *Fast) rebuild() {
	ld := o.cap
	for p, it := range o.items {
		o.setRow(p, it)
	}
	for i, a := range o.items {
		for j, b := range o.items {
			o.mk[i*ld+j] = o.entry(a, b)
		}
	}
	o.refactor(false)
}

// changed records an accepted change.
func (o *Fast) changed(pos ...int) {
	o.version++
	o.stats.Updates++
	o.chgN = copy(o.chgPos[:], pos)
}

// Evals returns the number of candidate values produced.
func (o *Fast) Evals() int64 { return o.stats.Evals }

// Stats returns the counters.
func (o *Fast) Stats() Stats { return o.stats }

// MarshalBinary saves the exact state (solution, M, M⁻¹, log det, mode and
// counters), so that a restored oracle continues bit-identically. The model
// is not saved: restore into an oracle built with the same model and
// capacity.
func (o *Fast) MarshalBinary() ([]byte, error) {
	var e encoder
	k, ld := len(o.items), o.cap
	encodeHeader(&e, magicFast, o.m.N(), o.d, o.cap)
	e.i64(int64(o.since))
	e.bool(o.direct)
	e.i64(int64(k))
	for _, it := range o.items {
		e.i64(int64(it))
	}
	e.f64(o.logDet)
	e.f64(o.kacc)
	e.f64(o.einv)
	e.f64(o.value.Log)
	e.bool(o.value.Zero)
	for i := 0; i < k; i++ {
		e.f64s(o.mk[i*ld : i*ld+k])
	}
	for i := 0; i < k; i++ {
		e.f64s(o.inv[i*ld : i*ld+k])
	}
	encodeStats(&e, o.stats)
	return e.finish(), nil
}

// UnmarshalBinary restores a state saved by MarshalBinary. It returns an
// error for corrupt data and for a state saved with a different n, d or
// capacity; o is unchanged on error. Cands prepared before must be prepared
// again.
func (o *Fast) UnmarshalBinary(data []byte) error {
	dec, err := newDecoder(data, magicFast)
	if err != nil {
		return err
	}
	if err := decodeHeader(dec, o.m.N(), o.d, o.cap); err != nil {
		return err
	}
	since := dec.int("updates since refactor", 0, RefactorEvery)
	direct := dec.bool()
	k := dec.int("|S|", 0, o.cap)
	items := make([]int, k, o.cap)
	for i := range items {
		items[i] = dec.int("item", 0, o.m.N()-1)
	}
	logDet := dec.f64()
	kacc, einv := dec.f64(), dec.f64()
	var v Value
	v.Log = dec.f64()
	v.Zero = dec.bool()
	mk := make([]float64, k*k)
	inv := make([]float64, k*k)
	dec.f64s(mk)
	dec.f64s(inv)
	stats := decodeStats(dec)
	if err := dec.done(); err != nil {
		return err
	}
	if hasDup(items) {
		return fmt.Errorf("detcache: corrupt state: repeated item in S")
	}
	if !(kacc >= 1 && kacc <= math.MaxFloat64) || !(einv >= 0 && einv <= math.MaxFloat64) {
		return fmt.Errorf("detcache: corrupt state: condition record (%g, %g)", kacc, einv)
	}
	for _, x := range append(mk, inv...) {
		if !isFinite(x) {
			return fmt.Errorf("detcache: corrupt state: non-finite matrix entry")
		}
	}
	ld := o.cap
	o.items = items
	for p, it := range items {
		o.setRow(p, it)
		copy(o.mk[p*ld:p*ld+k], mk[p*k:(p+1)*k])
		copy(o.inv[p*ld:p*ld+k], inv[p*k:(p+1)*k])
	}
	o.logDet, o.value, o.direct, o.since, o.stats = logDet, v, direct, since, stats
	o.kacc, o.gamma, o.einv = kacc, GammaSafety*kacc*eps, einv
	o.setLogDetE()
	// Cands prepared before are refreshed on use. The version and stamps
	// only track this object's Cands, so they are not part of the state.
	o.version++
	o.chgN = -1
	return nil
}
