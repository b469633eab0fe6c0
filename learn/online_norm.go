package learn

import (
	"github.com/ndpp-go/ndpp/blas"
)

// The online learner's side of the exact normaliser (exactnorm.Pipe).
//
// Every FactorEvery baskets (at positions 1, F+1, 2F+1, …) the learner
// submits the columns changed since the previous snapshot (marked at
// stDirty in their rows, listed in dirtyList), their current values and C;
// the result takes effect Lag baskets later (Schedule.Lag; 0 with
// FactorEvery = 1: every basket sees the factorisation of the parameters
// it starts from, the exact gradient).
//
// Between two results K is fixed, and K zᵢ is computed at most once per
// item per result, from zᵢ when the item first occurs after the result
// took effect (the basket's items four at a time), and kept in the item's
// row (kzRow, its generation at stKZGen) for the item's later occurrences
// in the same period; when the catalogue is small against the columns
// that change in a period, every item's K zᵢ is computed as the result
// takes effect instead, four items per pass over K (from the same zᵢ, as a
// column changes only when its item occurs). The normaliser's gradient an
// item sees is therefore that of parameters Lag to Lag + FactorEvery
// baskets old.

// kzScratch holds up to four zᵢ and their K zᵢ, and the items.
type kzScratch struct {
	zq, kzq []float64
	qi      [4]int
}

// normStep runs the exact normaliser's schedule at the start of basket
// o.pos: the pending result takes effect if this is its position, and a new
// snapshot is submitted every FactorEvery baskets. It reports false if A
// stayed singular after a recomputation of G from scratch (divergence).
func (o *Online) normStep() bool {
	np := o.np
	if np.Due(o.pos) {
		if !o.applyJob() {
			return false
		}
		// K zᵢ of every item now, four per pass over K, when that costs
		// less than computing those of the items that occur in the period
		// one by one (at least as many as changed since the snapshot),
		// from the zᵢ the items' first occurrences would see, as a column
		// changes only when its item occurs.
		if n := o.p.N; n <= 4*len(o.dirtyList) {
			nq := 0
			for i := range n {
				nq = o.queueKZ(i, nq)
			}
			o.kzBatch(nq)
		}
	}
	if o.factored && (o.pos-1)%int64(o.opt.Schedule.FactorEvery) != 0 {
		return true
	}
	now := !o.factored || o.np.Lag() == 0
	o.snapshot(now)
	if now {
		if !o.applyJob() {
			return false
		}
		o.factored = true
	}
	return true
}

// applyJob makes the submitted job's result active (exactnorm.Pipe.Take).
func (o *Online) applyJob() bool {
	o.flushNormC()
	return o.np.Take(o.pos, o.redo, o.c)
}

// redoRow writes item i's current zᵢ for a recomputation of G from all
// columns after a failed job (exactnorm.Pipe.Take, rows in order): the
// changed columns are then no longer pending.
func (o *Online) redoRow(dst []float64, i int) {
	if i == 0 {
		o.clearDirty()
	}
	zRow(dst, o.p, i)
}

// snapshot submits the columns changed since the last snapshot, their
// values and C (run at once when now is set).
func (o *Online) snapshot(now bool) {
	m := 2 * o.p.Dim
	z1 := o.np.NextColumns(len(o.dirtyList))
	for r, i := range o.dirtyList {
		o.itemRow(i)[stDirty] = 0
		zRow(z1[r*m:], o.p, i)
	}
	o.np.Submit(o.pos, o.dirtyList, o.c, now)
	o.dirtyList = o.dirtyList[:0]
}

// clearDirty marks no column as changed since the last snapshot.
func (o *Online) clearDirty() {
	for _, i := range o.dirtyList {
		o.itemRow(i)[stDirty] = 0
	}
	o.dirtyList = o.dirtyList[:0]
}

// markDirty records that item i's column changes, for the next snapshot.
func (o *Online) markDirty(i int) {
	if r := o.itemRow(i); r[stDirty] == 0 {
		r[stDirty] = 1
		o.dirtyList = append(o.dirtyList, i)
	}
}

// flushNormC adds the exact normaliser's C gradient of the baskets since the
// last flush to pendC.
func (o *Online) flushNormC() {
	if o.np != nil && o.normCount > 0 {
		blas.Axpy(-float64(o.normCount), o.np.GC(), o.pendC)
		o.normCount = 0
	}
}

// zRow writes item i's zᵢ = [vᵢ; bᵢ] of p into dst[:2d].
func zRow(dst []float64, p *Params, i int) {
	d := p.Dim
	copy(dst[:d], p.V[i*d:(i+1)*d])
	copy(dst[d:2*d], p.brows()[i*d:(i+1)*d])
}

// resize returns s with length n, reallocated if its capacity is short.
func resize(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// kzRow returns item i's K zᵢ (2d floats in its row of st).
func (o *Online) kzRow(i int) []float64 {
	m := 2 * o.p.Dim
	return o.st.row(i)[o.kzOff : o.kzOff+m : o.kzOff+m]
}

// kzCurrent reports whether item i's K zᵢ is of the active K.
func (o *Online) kzCurrent(i int) bool {
	return o.st.row(i)[stKZGen] == float64(o.np.Gen())
}

// prepareKZ makes K zᵢ of the active factorisation current for the basket's
// items (kzRow), computing those the active result has none of yet from
// their zᵢ now, up to four per pass over K.
func (o *Online) prepareKZ(basket []int) {
	nq := 0
	for _, i := range basket {
		nq = o.queueKZ(i, nq)
	}
	o.kzBatch(nq)
}

// queueKZ adds item i, unless its K zᵢ is current, to the nq items queued
// for kzBatch, running the batch when it holds four; it returns the number
// queued.
func (o *Online) queueKZ(i, nq int) int {
	if o.kzCurrent(i) {
		return nq
	}
	m, ks := 2*o.p.Dim, &o.kz
	zRow(ks.zq[nq*m:], o.p, i)
	ks.qi[nq] = i
	if nq++; nq == 4 {
		o.kzBatch(nq)
		nq = 0
	}
	return nq
}

// kzBatch computes K zᵢ of the active K for the nq ≤ 4 queued items into
// their rows (exactnorm.Pipe.KZ).
func (o *Online) kzBatch(nq int) {
	m, ks := 2*o.p.Dim, &o.kz
	o.np.KZ(ks.zq, ks.kzq, nq)
	gen := float64(o.np.Gen())
	for q, i := range ks.qi[:nq] {
		copy(o.kzRow(i), ks.kzq[q*m:(q+1)*m])
		o.st.row(i)[stKZGen] = gen
	}
}
