package learn

import (
	"runtime"
	"sync/atomic"
)

// K zᵢ of the next basket's items, computed ahead by the exact
// normaliser's worker between its jobs (worker.poll) while the learner
// learns from the current basket (Run only, which reads the baskets
// ahead).
//
// Between two normaliser results K is fixed, and an item's zᵢ changes only
// when the item occurs. So while the learner learns from basket q, the
// items of basket q + 1 that are not in basket q have the zᵢ they will have
// when q + 1 begins, and whether their K zᵢ is current (normPipe.kzCurrent)
// does not change either; when no result takes effect at q or q + 1, the
// helper computes exactly what prepareKZ would compute at q + 1 — the items
// whose K zᵢ is not current, in the basket's order, four per pass over K
// and a single remaining item by vecmat (normPipe.kzInto) — and prepareKZ
// at q + 1 finds them current. Items of q + 1 in basket q are current after
// q. A basket with an item that has no row yet, or one not seen yet (its zᵢ
// is drawn when the basket begins), or a repeated item (Observe refuses it)
// is left to prepareKZ whole. The learner claims the task when q + 1
// begins: it waits for a task the helper has started, and cancels one it
// has not (prepareKZ then computes it), so the results are the same bits
// whoever computes them and whenever the helper runs.
//
// While a task runs, the helper reads K, the rows zᵢ of its items and their
// rows of per-item state, and writes K zᵢ and its generation in those rows;
// the learner touches none of them during basket q (its writes are to the
// rows of basket q's items), and grows no arrays before it has claimed the
// task.
type kzAhead struct {
	// state is seq<<2 | phase, phase kzPosted, kzRunning, kzDone or
	// kzCancelled, for the task numbered seq.
	state  atomic.Uint64
	seq    uint64
	posted bool // a task was posted and not claimed
	rows   []int
	excl   []int // the current basket's rows
	k      []float64
	gen    int64
	zq     []float64
	kzq    []float64
	qi     [4]int
	p      *Params
}

const (
	kzPosted = iota
	kzRunning
	kzDone
	kzCancelled
)

// postKZAhead posts the task for the next basket's ids (nil: none) when
// the learner has just begun basket o.pos (the previous task claimed) and
// K changes neither at it nor at the next one.
func (o *Online) postKZAhead(ids []int) {
	np := o.np
	if ids == nil || np == nil || !o.factored || np.lag == 0 || np.swapAt == o.pos || np.swapAt == o.pos+1 {
		return
	}
	a := o.ahead
	a.rows = a.rows[:0]
	for _, id := range ids {
		i, ok := o.knownRow(id)
		if !ok || i >= o.p.N {
			return
		}
		for _, r := range a.rows {
			if r == i {
				return
			}
		}
		a.rows = append(a.rows, i)
	}
	a.excl = append(a.excl[:0], o.rows...)
	a.k, a.gen, a.p = np.k, np.gen, o.p
	a.seq++
	a.state.Store(a.seq << 2)
	a.posted = true
}

// claimKZAhead claims the posted task, if any: it cancels it if the
// helper has not started it, and else waits until it is done.
func (o *Online) claimKZAhead() {
	a := o.ahead
	if a == nil || !a.posted {
		return
	}
	a.posted = false
	s := a.seq << 2
	if a.state.CompareAndSwap(s, s|kzCancelled) { // not started: cancel
		return
	}
	for a.state.Load() != s|kzDone {
		runtime.Gosched()
	}
}

// newKZAhead returns o's kzAhead, run by the exact normaliser's worker
// between jobs (worker.poll): set before the worker starts.
func newKZAhead(o *Online) *kzAhead {
	m := 2 * o.p.Dim
	a := &kzAhead{zq: make([]float64, 4*m), kzq: make([]float64, 4*m)}
	a.state.Store(kzCancelled) // no task 0
	np := o.np
	np.w.poll = func() { a.run(np) }
	return a
}

// run runs the posted task unless the learner has claimed it.
func (a *kzAhead) run(np *normPipe) {
	s := a.state.Load()
	if s&3 != kzPosted || !a.state.CompareAndSwap(s, s|kzRunning) {
		return
	}
	a.compute(np)
	a.state.Store(s | kzDone)
}

// compute computes the task's K zᵢ (see kzAhead).
func (a *kzAhead) compute(np *normPipe) {
	for _, i := range a.rows {
		if np.st.row(i)[stMu] == 0 {
			return // seen for the first time at the next basket
		}
	}
	m := 2 * np.d
	nq := 0
rows:
	for _, i := range a.rows {
		for _, e := range a.excl {
			if e == i {
				continue rows
			}
		}
		if np.st.row(i)[stKZGen] == float64(a.gen) {
			continue
		}
		zRow(a.zq[nq*m:], a.p, i)
		a.qi[nq] = i
		if nq++; nq == 4 {
			np.kzInto(a.k, a.gen, a.zq, a.kzq, a.qi[:nq])
			nq = 0
		}
	}
	np.kzInto(a.k, a.gen, a.zq, a.kzq, a.qi[:nq])
}
