package detcache

import (
	"math"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/internal/f64"
	"github.com/ndpp-go/ndpp/ndpp"
)

// Preparation of candidates: the products of an arriving item against S.

// Prepare computes c's products for item against the current S:
// u = L_{S,t} and w = L_{t,S} from the cached rows (O(kd)), p = M⁻¹u,
// q = M⁻ᵀw and the Schur complement s = L_tt − w·p (O(k²)). It panics for
// an item out of range. An item already in S is accepted: values of sets
// that would repeat it are zero.
func (o *Fast) Prepare(c *Cand, item int) {
	if o.m == nil {
		panic(errNoModel)
	}
	checkItem(o.m, item)
	o.own(c)
	c.setModelRow(o.m, item)
	o.prepare(c, item)
}

// PrepareItem is Prepare for an item given by its vectors; c keeps copies
// of them (see Oracle.PrepareItem). It panics for vectors of the wrong
// length.
func (o *Fast) PrepareItem(c *Cand, it ndpp.Item) {
	checkItemShape(&o.kern, it)
	o.own(c)
	c.setRow(&o.kern, it)
	o.prepare(c, it.ID)
}

// own makes o the owner of c, panicking for a Cand of another oracle.
func (o *Fast) own(c *Cand) {
	if c.owner != o {
		if c.owner != nil || len(c.u) < o.cap {
			panic("detcache: Cand was created by another oracle")
		}
		c.owner = o
	}
}

// prepare computes c's products from its row c.r (item is its id).
func (o *Fast) prepare(c *Cand, item int) {
	o.begin(c, item, positionOf(o.items, item))
	vt, bt, bct := c.r.v, c.r.b, c.r.bc
	vv := blas.Dot(vt, vt)
	c.ltt = vv + blas.Dot(bct, bt)
	zz := vv + blas.Dot(bt, bt)
	if o.hasDiag {
		dt := c.r.delta
		c.ltt += dt
		zz += dt
	}
	c.logz2 = math.Log(zz)
	if o.direct {
		return
	}
	for i := range o.items {
		o.setUW(c, i)
	}
	c.hasUW = true
	o.prepareTail(c)
}

// begin starts c's preparation for item against the current S: its stamp,
// its version and its position dup in S (−1 if none).
func (o *Fast) begin(c *Cand, item, dup int) {
	o.stamp++
	c.item, c.version, c.stamp = item, o.version, o.stamp
	c.pair = nil
	c.dup = dup
	c.hasUW = false
}

// setUW computes u_i = L_{S_i,t} and w_i = L_{t,S_i} for position i, O(d).
func (o *Fast) setUW(c *Cand, i int) {
	d := o.d
	a := blas.Dot(o.vs[i*d:(i+1)*d], c.r.v)
	b := blas.Dot(o.bcs[i*d:(i+1)*d], c.r.b)
	c.u[i], c.w[i] = a+b, a-b
}

// prepareTail computes p, q, s and the error scales from u and w, O(k²).
func (o *Fast) prepareTail(c *Cand) {
	o.solve(c)
	o.schur(c, math.Exp(0.5*c.logz2))
	o.qScale(c)
}

// solve computes p = M⁻¹u and q = M⁻ᵀw, O(k²).
func (o *Fast) solve(c *Cand) {
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
}

// schur computes the Schur complement s = L_tt − w·p, the magnitude of the
// terms cancelled in it, its error bound and the error scale of p, from w,
// p and zt = ‖z_t‖, O(k): f64.SchurRows on one row, whose results for a
// row do not depend on how many rows it is given, so ScoreBlock, which
// gives it all the block's columns, gets the bits of schur.
func (o *Fast) schur(c *Cand, zt float64) {
	ltt := [1]float64{c.ltt}
	var out [5]float64
	f64.SchurRows(1, len(o.items), ltt[:], c.w, c.p, o.cap, o.znorm, o.izn, out[:], 1)
	o.setSchur(c, zt, out[0], out[1], out[2], out[3], out[4])
}

// setSchur sets c's s and error scales from SchurRows's results for it:
// s, the magnitude mag of the terms cancelled in it, pn = max_i
// |p_i|·‖z_i‖, w1 = Σ_i |w_i|/‖z_i‖ and zp = Σ_i |p_i|·‖z_i‖.
func (o *Fast) setSchur(c *Cand, zt, s, mag, pn, w1, zp float64) {
	// Kernel entries carry errors up to ε·cw·‖zᵢ‖‖zⱼ‖ (cancellation between
	// vᵢ·vⱼ and bᵢᵀCbⱼ), which reach p and q through M⁻¹ like a column of
	// size ‖z_t‖: hence the ‖z_t‖ added to the error scales pn and qn.
	c.zt, c.zp = zt, zp
	c.pn, c.w1 = pn+zt, w1
	if len(o.items) == 2*o.d && o.rankBound(true, c.r.delta) {
		// rank L_{S+t} ≤ 2d: the Schur complement of a full-rank L_S of
		// size 2d in L_{S+t} is exactly zero, and the computed s is
		// rounding noise.
		c.s, c.smag, c.serr = 0, 0, 0
		return
	}
	c.s, c.smag = s, mag
	c.serr = eps*mag + o.gamma*c.pn*w1 + eps*o.cw*zt*(zt+zp)
}

// rankBound reports whether the rank bound 2d holds on S ∪ {t} for an
// item t with diagonal entry dt (withT false: on S alone): no item of the
// set has a diagonal entry, so its kernel is the rank-2d Z_SᵀWZ_S. It is
// true for every set of a model without a diagonal. O(k) with a diagonal.
func (o *Fast) rankBound(withT bool, dt float64) bool {
	if !o.hasDiag {
		return true
	}
	if withT && dt != 0 {
		return false
	}
	for _, d := range o.deltas[:len(o.items)] {
		if d != 0 {
			return false
		}
	}
	return true
}

// qScale computes the error scale of q, max_i |q_i|·‖z_i‖ + ‖z_t‖, after
// schur, O(k).
func (o *Fast) qScale(c *Cand) {
	var qn float64
	k := len(o.items)
	zn := o.znorm[:k]
	for i, qi := range c.q[:k] {
		qn = max(qn, math.Abs(qi)*zn[i])
	}
	c.qn = qn + c.zt
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
		o.prepare(c, c.item)
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
