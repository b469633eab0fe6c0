package detcache

import (
	"fmt"
	"math"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/ndpp"
)

// Candidate values of Fast: the identities with their error bounds, and the
// fresh-LU fallback.

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
	a, lu, inv, z := o.da[:k*k], o.dlu[:k*k], o.dinv[:k*k], o.dz[:k]
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
	copy(lu, a)
	logAbs, sign := luFactor(lu, k, k, o.dpiv)
	if sign <= 0 || !isFinite(logAbs) {
		return ZeroValue
	}
	luInverse(lu, k, k, o.dpiv, inv, z)
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

// pairRatio returns the ratio det L_{S−{S[a],S[b]}+{x,y}}/det M as the 4×4
// determinant det [[(M⁻¹)_RR, P_R], [−Q_R, Σ]] (R = {a, b}), the magnitude
// of the terms cancelled in it and its first-order error bound (see det4),
// from the entries' own bounds: γ-scaled sizes for M⁻¹, p and q, and those
// of s and Σ. x and y must be prepared, not in S, with distinct items.
func (o *Fast) pairRatio(x, y *Cand, a, b int) (r, size, err float64) {
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
	return det4(&mtx, &mag, &errs)
}

// pairValue is PairSwapValue without counting or checks; ident reports
// that the value came from the identity (not from a fresh LU).
func (o *Fast) pairValue(x, y *Cand, a, b int) (v Value, ident bool) {
	if x.item == y.item {
		return ZeroValue, false
	}
	if x.dup < 0 && y.dup < 0 && !o.direct {
		r, size, err := o.pairRatio(x, y, a, b)
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
