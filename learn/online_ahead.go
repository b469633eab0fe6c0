package learn

import (
	"math"
	"runtime"
	"slices"
	"sync/atomic"
)

// Work on the next basket, done ahead by the exact normaliser's worker
// between its jobs (worker.poll) while the learner learns from the current
// basket (Run only, which reads the baskets ahead): K zᵢ of the next
// basket's items, and the next basket's term.
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
// q.
//
// Likewise C changes only at the baskets where it steps (every CEvery), and
// an item's rows, μᵢ and φᵢ only at its own baskets. When none of the items
// of q + 1 is in q and C does not step at q (piecesAhead), the helper
// computes the basket term of q + 1 (basketWork.pieces, as basketTerm calls
// it) from the rows, C and the δᵢ that q + 1 will begin with — δᵢ of one
// more occurrence at one more position, as setTheta will compute it — into
// a basketWork of its own, which the learner takes as its own when it
// claims the finished task.
//
// A basket with an item that has no row yet, or one not seen yet (its rows
// are drawn when the basket begins), or a repeated item (Observe refuses
// it) is left to the learner whole. The learner claims the task when q + 1
// begins: it waits for a task the helper has started, and cancels one it
// has not (prepareKZ and basketTerm then compute it), so the results are
// the same bits whoever computes them and whenever the helper runs.
//
// While a task runs, the helper reads K, C, the rows zᵢ of its items and
// their rows of per-item state, and writes K zᵢ and its generation in those
// rows and its own basketWork; the learner touches none of them during
// basket q (its writes are to the rows of basket q's items, and to C only
// when C steps), and grows no arrays before it has claimed the task.
type kzAhead struct {
	// state is seq<<2 | phase, phase kzPosted, kzRunning, kzDone or
	// kzCancelled, for the task numbered seq.
	state  atomic.Uint64
	seq    uint64
	posted bool // a task was posted and not claimed
	rows   []int
	excl   []int // the current basket's rows
	// kz: the task computes K zᵢ of k (result gen) for the rows not in
	// excl and not current.
	kz  bool
	k   []float64
	gen int64
	zq  []float64
	kzq []float64
	qi  [4]int
	p   *Params
	// pieces: the task computes the basket term of rows at position pos
	// (with C c, the rows' μᵢ and φᵢ at the post) into bw, with result ok.
	pieces     bool
	pos        int64
	c          []float64
	eps        float64
	restricted bool
	mu, phi    []float64
	bw         basketWork
	ok         bool
	// ready is the position of the basket term the learner took from a
	// finished task into Online.w (0: none), for the rows readyRows;
	// used counts those basketTerm used.
	ready     int64
	readyRows []int
	used      int64
}

const (
	kzPosted = iota
	kzRunning
	kzDone
	kzCancelled
)

// postKZAhead posts the task for the next basket's ids (nil: none) when
// the learner has just begun basket o.pos (the previous task claimed): K zᵢ
// when K changes neither at this basket nor at the next one, and the next
// basket's term when piecesAhead allows.
func (o *Online) postKZAhead(ids []int) {
	np := o.np
	if ids == nil || np == nil {
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
	a.kz = o.factored && np.lag != 0 && np.swapAt != o.pos && np.swapAt != o.pos+1
	a.pieces = o.piecesAhead(a.rows)
	if !a.kz && !a.pieces {
		return
	}
	a.excl = append(a.excl[:0], o.rows...)
	a.k, a.gen, a.p = np.k, np.gen, o.p
	if a.pieces {
		a.pos, a.c, a.eps, a.restricted = o.pos+1, o.c, o.opt.Eps, o.opt.Normalizer == NormBasket
		a.mu, a.phi = a.mu[:0], a.phi[:0]
		for _, i := range a.rows {
			a.mu, a.phi = append(a.mu, o.mu(i)), append(a.phi, o.phi(i))
		}
	}
	a.seq++
	a.state.Store(a.seq << 2)
	a.posted = true
}

// piecesAhead reports whether the term of the next basket, of rows, can
// be computed while the learner learns from the current one (o.rows): C
// does not step at this basket, and every item of rows has been seen and
// is not in this basket.
func (o *Online) piecesAhead(rows []int) bool {
	if !o.opt.FixC && o.pos%int64(o.opt.CEvery) == 0 {
		return false
	}
	for _, i := range rows {
		if o.mu(i) == 0 || slices.Contains(o.rows, i) {
			return false
		}
	}
	return true
}

// claimKZAhead claims the posted task, if any: it cancels it if the
// helper has not started it, and else waits until it is done and takes the
// basket term it computed, if any, into o.w (for takeAhead).
func (o *Online) claimKZAhead() {
	a := o.ahead
	if a == nil || !a.posted {
		return
	}
	a.posted = false
	a.ready = 0
	s := a.seq << 2
	if a.state.CompareAndSwap(s, s|kzCancelled) { // not started: cancel
		return
	}
	for a.state.Load() != s|kzDone {
		runtime.Gosched()
		osYield() // the helper may be waiting for this processor
	}
	if a.pieces {
		o.w, a.bw = a.bw, o.w
		a.ready = a.pos
		a.readyRows = append(a.readyRows[:0], a.rows...)
	}
}

// takeAhead reports whether o.w holds the term of the basket of rows at the
// current position computed ahead (see claimKZAhead), and its result.
func (o *Online) takeAhead(rows []int) (taken, ok bool) {
	a := o.ahead
	if a == nil || a.ready == 0 {
		return false, false
	}
	pos := a.ready
	a.ready = 0
	if pos != o.pos || !slices.Equal(a.readyRows, rows) {
		return false, false
	}
	a.used++
	return true, a.ok
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

// compute computes the task's basket term, then its K zᵢ.
func (a *kzAhead) compute(np *normPipe) {
	if a.pieces {
		a.computePieces()
	}
	if a.kz {
		a.computeKZ(np)
	}
}

// computePieces computes what basketTerm computes at position a.pos for the
// basket a.rows, into a.bw, with the items' δᵢ and sᵢ = √(1 + δᵢ) of that
// position: log δᵢ = log rᵢ + φᵢ, rᵢ = (μᵢ + 1)/(t − μᵢ + 1) with the
// basket's occurrence counted in μᵢ, as setTheta computes it.
func (a *kzAhead) computePieces() {
	p, w := a.p, &a.bw
	if p.Theta != nil {
		w.ensure(len(a.rows), p.Dim)
		t := float64(a.pos)
		for r := range a.rows {
			mu := a.mu[r] + 1
			delta := math.Exp(math.Log((mu+1)/(t-mu+1)) + a.phi[r])
			w.ds[r], w.ss[r] = delta, math.Sqrt(1+delta)
		}
		w.diagGiven = true
	}
	_, a.ok = w.pieces(p, a.rows, nil, a.c, a.eps, a.restricted, false, true)
	w.diagGiven = false
}

// computeKZ computes the task's K zᵢ.
func (a *kzAhead) computeKZ(np *normPipe) {
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
