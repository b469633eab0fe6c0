package detcache

import (
	"fmt"
	"math"

	"github.com/ndpp-go/ndpp/internal/f64"
	"github.com/ndpp-go/ndpp/ndpp"
)

// Candidate values of Fast: the identities with their error bounds, and the
// fresh-LU fallback.

// ratioValue turns a determinant ratio r = det L_{S'}/det L_S, the
// magnitude mag of the terms cancelled in it, a bound err on its absolute
// error and the log of its natural scale N (the ratio S' would have if its
// equilibrated determinant were 1) into a Value; ok is false when the value
// must be computed directly.
func (o *Fast) ratioValue(r, mag, err, logN float64) (v ndpp.Value, ok bool) {
	if fromIdentity(r, err) {
		return ndpp.Value{Log: o.logDet + math.Log(r)}, true
	}
	bound := math.Abs(r) + err
	tol := ZeroCancelFactor * eps
	if bound <= tol*mag && mag <= math.MaxFloat64 && math.Log(bound) <= math.Log(tol)+logN {
		return ndpp.ZeroValue, true
	}
	return ndpp.Value{}, false // NaN, or neither accurate nor clearly zero
}

// fromIdentity reports whether a ratio r with error bound err is a value:
// positive, finite and with err ≤ FallbackErr·r. A ratio that is exactly
// zero with a zero bound (a Schur complement set to zero by the rank bound)
// is not: the zero rule of ratioValue calls it zero.
func fromIdentity(r, err float64) bool {
	return r > 0 && err <= FallbackErr*r && r <= math.MaxFloat64
}

// swapRatio returns the Jacobi ratio for position j, its cancellation
// magnitude and its first-order error bound (see the package
// documentation).
func (o *Fast) swapRatio(c *Cand, j int) (r, mag, err float64) {
	mjj := o.inv[j*o.cap+j]
	pq := c.p[j] * c.q[j]
	iz := o.izn[j]
	am := math.Abs(mjj)
	r = o.swapDet(c, j)
	mag = c.smag*am + math.Abs(pq)
	err = eps*mag + c.serr*am + o.gamma*iz*(math.Abs(c.s)*o.einv*iz+c.pn*math.Abs(c.q[j])+c.qn*math.Abs(c.p[j]))
	return r, mag, err
}

// swapDet is swapRatio's ratio alone: s·(M⁻¹)_jj + p_j q_j.
func (o *Fast) swapDet(c *Cand, j int) float64 { return c.s*o.inv[j*o.cap+j] + c.p[j]*c.q[j] }

// directSet computes the value of the set in o.set with a fresh LU, in
// the oracle's own buffers (no allocation): ndpp's zero rule (see
// ndpp.ZeroRcondFactor) applied to the equilibrated kernel, with its exact
// 1-norm condition number (ndpp.Model.LogDet uses LAPACK's estimate).
func (o *Fast) directSet() ndpp.Value {
	set, rows := o.set, o.setRows
	k := len(set)
	if k == 0 {
		return ndpp.Value{}
	}
	if hasDup(set) || k > o.maxRank {
		return ndpp.ZeroValue
	}
	o.stats.Fallbacks++
	a, inv, z := o.da[:k*k], o.dinv[:k*k], o.dz[:k]
	logScale := 0.0
	for i := range set {
		zz := rows[i].norm2()
		if !(zz > 0) {
			return ndpp.ZeroValue
		}
		z[i] = 1 / math.Sqrt(zz)
		logScale += math.Log(zz)
	}
	for i := range set {
		row := a[i*k : (i+1)*k]
		for j := range set {
			row[j] = entryRows(rows[i], rows[j], i == j && o.hasDiag) * z[i] * z[j]
		}
	}
	copy(inv, a)
	logAbs, sign := f64.Inverse(inv, k, k, o.dpiv, o.dlu) // dlu: the inverse's scratch
	if sign <= 0 || !isFinite(logAbs) {
		return ndpp.ZeroValue
	}
	if ndpp.IsZeroRcond(exactRcond(a, inv, k), k) {
		return ndpp.ZeroValue
	}
	return ndpp.Value{Log: logAbs + logScale}
}

// setS sets o.set and o.setRows to S's items and rows.
func (o *Fast) setS() {
	o.set = append(o.set[:0], o.items...)
	o.setRows = o.setRows[:0]
	for i := range o.items {
		o.setRows = append(o.setRows, o.sRow(i))
	}
}

// addValue is AddValue without counting.
func (o *Fast) addValue(c *Cand) ndpp.Value {
	k := len(o.items)
	if c.dup >= 0 || k+1 > o.maxRank {
		return ndpp.ZeroValue
	}
	if !o.direct {
		if v, ok := o.ratioValue(c.s, c.smag, c.serr, c.logz2-o.logDetE); ok {
			return v
		}
	}
	o.setS()
	o.set = append(o.set, c.item)
	o.setRows = append(o.setRows, c.r)
	return o.directSet()
}

// AddValue returns the value of S ∪ {x}: det L_{S+t}/det M = s.
func (o *Fast) AddValue(c *Cand) ndpp.Value {
	o.Refresh(c)
	o.stats.Evals++
	return o.addValue(c)
}

// swapValue is the value of S − S[j] + x without counting; ident reports
// that it came from the identity (not from a fresh LU).
func (o *Fast) swapValue(c *Cand, j int) (v ndpp.Value, ident bool) {
	if c.dup >= 0 {
		if c.dup == j {
			return o.value, false
		}
		return ndpp.ZeroValue, false
	}
	if !o.direct {
		r, mag, err := o.swapRatio(c, j)
		if v, ok := o.ratioValue(r, mag, err, c.logz2-o.logz2[j]-o.logDetE); ok {
			return v, true
		}
	}
	o.setS()
	o.set[j], o.setRows[j] = c.item, c.r
	return o.directSet(), false
}

// SwapValues writes the value of S − S[j] + x into dst[j] for every j:
// det L_{S−j+t}/det M = s·(M⁻¹)_jj + p_j q_j (Jacobi), O(1) each.
func (o *Fast) SwapValues(c *Cand, dst []ndpp.Value) { o.SwapValuesUntil(c, dst, nil) }

// SwapValuesUntil is SwapValues that calls stop (when not nil) after each
// value it computes with a fresh LU, and returns false as soon as stop
// returns true (dst then holds only some of the values); it returns true
// when every value is written.
func (o *Fast) SwapValuesUntil(c *Cand, dst []ndpp.Value, stop func() bool) bool {
	o.Refresh(c)
	k := len(o.items)
	if len(dst) < k {
		panic(fmt.Sprintf("detcache: SwapValues dst has length %d < |S| = %d", len(dst), k))
	}
	o.stats.Evals += int64(k)
	for j := 0; j < k; j++ {
		if c.dup < 0 && !o.direct {
			if r, _, err := o.swapRatio(c, j); fromIdentity(r, err) {
				dst[j] = ndpp.Value{Log: o.logDet + math.Log(r)}
				continue
			}
		}
		var ident bool
		dst[j], ident = o.swapValue(c, j)
		if !ident && stop != nil && stop() {
			return false
		}
	}
	return true
}

// pairSigma returns Σ_xy = L_xy − w_x·p_y and Σ_yx with their cancellation
// magnitudes, cached in x for the partner y (O(d + k) once per pair of
// Cands, O(1) after).
func (o *Fast) pairSigma(x, y *Cand) {
	if x.pair == y && x.pairStamp == y.stamp && x.pairOwnStamp == x.stamp {
		return
	}
	k := len(o.items)
	lxy, lyx := entryRows(x.r, y.r, false), entryRows(y.r, x.r, false)
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
	if k == 2*o.d && o.rankBound(false, 0) {
		// Σ_xy and Σ_yx are exactly zero: with L_S full rank 2d and no
		// diagonal entry on S, the rows S + x and columns S + y of L have
		// rank ≤ 2d (δ_x, δ_y do not enter them).
		sxy, syx, mxy, myx, exy, eyx = 0, 0, 0, 0, 0, 0
	}
	x.pair, x.pairStamp, x.pairOwnStamp = y, y.stamp, x.stamp
	x.sxy, x.syx, x.sxyMag, x.syxMag, x.sxyErr, x.syxErr = sxy, syx, mxy, myx, exy, eyx
}

// pairRatio returns the ratio det L_{S−{S[a],S[b]}+{x,y}}/det M as the 4×4
// determinant of
//
//	[[(M⁻¹)_aa, (M⁻¹)_ab, p_x,a, p_y,a],
//	 [(M⁻¹)_ba, (M⁻¹)_bb, p_x,b, p_y,b],
//	 [−q_x,a,   −q_x,b,   s_x,   Σ_xy ],
//	 [−q_y,a,   −q_y,b,   Σ_yx,  s_y  ]],
//
// the magnitude size of the terms that cancel in it and a first-order bound
// err on its error. All three come from the Laplace expansion along the
// first two rows, over the six pairs of columns (i, j) with complements
// (k, l) and signs (01|23)+, (02|13)−, (03|12)+, (12|03)+, (13|02)−,
// (23|01)+: the determinant on the entries; size on their magnitudes
// (larger than |entry| for s and Σ, which are computed sums) with every
// product in absolute value; and sizeE, the same on magnitudes plus the
// entries' error bounds (γ-scaled sizes for M⁻¹, p and q; those of s and
// Σ), so that err = (sizeE − size) + 8ε·size bounds the change of the
// determinant within the entries' errors plus the rounding of the
// expansion. x and y must be prepared, not in S, with distinct items.
func (o *Fast) pairRatio(x, y *Cand, a, b int) (r, size, err float64) {
	o.pairSigma(x, y)
	r = o.pairDet(x, y, a, b)
	ld := o.cap
	a0, a1, a2, a3 := math.Abs(o.inv[a*ld+a]), math.Abs(o.inv[a*ld+b]), math.Abs(x.p[a]), math.Abs(y.p[a])
	a4, a5, a6, a7 := math.Abs(o.inv[b*ld+a]), math.Abs(o.inv[b*ld+b]), math.Abs(x.p[b]), math.Abs(y.p[b])
	a8, a9, a10, a11 := math.Abs(x.q[a]), math.Abs(x.q[b]), x.smag, x.sxyMag
	a12, a13, a14, a15 := math.Abs(y.q[a]), math.Abs(y.q[b]), x.syxMag, y.smag
	size = expansionAbs(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15)
	g, ia, ib := o.gamma, o.izn[a], o.izn[b]
	ge := g * o.einv
	sizeE := expansionAbs(
		a0+ge*ia*ia, a1+ge*ia*ib, a2+g*x.pn*ia, a3+g*y.pn*ia,
		a4+ge*ib*ia, a5+ge*ib*ib, a6+g*x.pn*ib, a7+g*y.pn*ib,
		a8+g*x.qn*ia, a9+g*x.qn*ib, a10+x.serr, a11+x.sxyErr,
		a12+g*y.qn*ia, a13+g*y.qn*ib, a14+x.syxErr, a15+y.serr)
	return r, size, (sizeE - size) + 8*eps*size
}

// pairDet is pairRatio's determinant alone; pairSigma(x, y) must have run.
func (o *Fast) pairDet(x, y *Cand, a, b int) float64 {
	ld := o.cap
	m0, m1, m2, m3 := o.inv[a*ld+a], o.inv[a*ld+b], x.p[a], y.p[a]
	m4, m5, m6, m7 := o.inv[b*ld+a], o.inv[b*ld+b], x.p[b], y.p[b]
	m8, m9, m10, m11 := -x.q[a], -x.q[b], x.s, x.sxy
	m12, m13, m14, m15 := -y.q[a], -y.q[b], x.syx, y.s
	// Minors of rows 0, 1 (tij) and of rows 2, 3 (bkl).
	t01, t02, t03 := m0*m5-m1*m4, m0*m6-m2*m4, m0*m7-m3*m4
	t12, t13, t23 := m1*m6-m2*m5, m1*m7-m3*m5, m2*m7-m3*m6
	b23, b13, b12 := m10*m15-m11*m14, m9*m15-m11*m13, m9*m14-m10*m13
	b03, b02, b01 := m8*m15-m11*m12, m8*m14-m10*m12, m8*m13-m9*m12
	r := 0 + t01*b23
	r -= t02 * b13
	r += t03 * b12
	r += t12 * b03
	r -= t13 * b02
	r += t23 * b01
	return r
}

// expansionAbs is pairRatio's Laplace expansion of a 4×4 matrix (row-major
// entries c0…c15) with every product taken in absolute value, for
// nonnegative entries.
func expansionAbs(c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15 float64) float64 {
	s := 0 + (c0*c5+c1*c4)*(c10*c15+c11*c14)
	s += (c0*c6 + c2*c4) * (c9*c15 + c11*c13)
	s += (c0*c7 + c3*c4) * (c9*c14 + c10*c13)
	s += (c1*c6 + c2*c5) * (c8*c15 + c11*c12)
	s += (c1*c7 + c3*c5) * (c8*c14 + c10*c12)
	s += (c2*c7 + c3*c6) * (c8*c13 + c9*c12)
	return s
}

// pairValue is PairSwapValue without counting or checks; ident reports
// that the value came from the identity (not from a fresh LU).
func (o *Fast) pairValue(x, y *Cand, a, b int) (v ndpp.Value, ident bool) {
	if x.item == y.item {
		return ndpp.ZeroValue, false
	}
	if x.dup < 0 && y.dup < 0 && !o.direct {
		r, size, err := o.pairRatio(x, y, a, b)
		if fromIdentity(r, err) {
			return ndpp.Value{Log: o.logDet + math.Log(r)}, true
		}
		logN := x.logz2 + y.logz2 - o.logz2[a] - o.logz2[b] - o.logDetE
		if v, ok := o.ratioValue(r, size, err, logN); ok {
			return v, true
		}
	}
	o.setS()
	o.set[a], o.set[b] = x.item, y.item
	o.setRows[a], o.setRows[b] = x.r, y.r
	return o.directSet(), false
}

// PairSwapValue returns the value of S − {S[a], S[b]} + {x, y}: the 4×4
// determinant det [[(M⁻¹)_RR, P_R], [−Q_R, Σ]] with R = {a, b}, O(1) per
// pair of positions. It panics for invalid positions.
func (o *Fast) PairSwapValue(x, y *Cand, a, b int) ndpp.Value {
	o.Refresh(x)
	o.Refresh(y)
	if err := checkPair(a, b, len(o.items)); err != nil {
		panic(err.Error())
	}
	o.stats.Evals++
	v, _ := o.pairValue(x, y, a, b)
	return v
}
