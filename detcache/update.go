package detcache

import (
	"fmt"
	"math"
)

// Accepted changes: the O(k²) updates of M and M⁻¹.

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
		o.setRow(k, c.r)
		o.rebuild()
		o.changed(k)
		return nil
	}
	v, ok := o.ratioValue(c.s, c.smag, c.serr, c.logz2-o.logDetE)
	o.items = append(o.items, c.item)
	o.setRow(k, c.r)
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
		o.setRow(pos, c.r)
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
		o.setRow(pos, c.r)
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
		o.pairRows(a, b, x, y)
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
		c.r = second.r
		o.prepare(c, second.item)
		if r, _, e := o.swapRatio(c, ps); r > 0 && e <= FallbackErr*r {
			o.swapUpdate(ps, c)
			o.logDet, o.value = v.Log, v
			o.since += 2
			o.checkAfterUpdate()
			done = true
		}
	}
	if !done {
		o.pairRows(a, b, x, y)
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
	o.setRow(j, c.r)
}

// pairRows puts x's item at position a and y's at b, with their rows.
func (o *Fast) pairRows(a, b int, x, y *Cand) {
	o.items[a], o.items[b] = x.item, y.item
	o.setRow(a, x.r)
	o.setRow(b, y.r)
}

// setRow copies an item's row to position pos.
func (o *Fast) setRow(pos int, r row) {
	d := o.d
	copy(o.vs[pos*d:(pos+1)*d], r.v)
	copy(o.bs[pos*d:(pos+1)*d], r.b)
	copy(o.bcs[pos*d:(pos+1)*d], r.bc)
	o.deltas[pos] = r.delta
	o.znorm[pos] = math.Sqrt(r.norm2())
	o.izn[pos] = 1 / o.znorm[pos]
	o.logz2[pos] = 2 * math.Log(o.znorm[pos])
}

// changed records an accepted change.
func (o *Fast) changed(pos ...int) {
	o.version++
	o.stats.Updates++
	o.chgN = copy(o.chgPos[:], pos)
}
