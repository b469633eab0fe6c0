package rerank

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/stream"
)

// polish improves the greedy result held in w (K items) by local search
// over single and pair swaps (stream.LocalSearch) on the request's kernel
// L′ = diag(q)·L·diag(q) conditioned on the shown items the greedy kept,
// and rewrites w's output when the search moved: the new set, ordered
// greedily given the shown items (with constraints: in the list's order,
// swaps replacing items in place), with its gains. It builds a model of the
// kept shown items and the choosable candidates (vectors scaled by qᵢ,
// diagonal by qᵢ²) and a fast oracle over it, so it allocates. When ctx's
// deadline passes and the request may degrade, it keeps the best set the
// search reached and sets w.degraded; when ctx is otherwise done it
// returns an error wrapping ctx.Err(). greedyTime is how long the greedy
// took (for the time the ordering will take).
func (w *Workspace) polish(ctx context.Context, m *ndpp.Model, req *Request, greedyTime time.Duration) error {
	w.polishSwaps = 0
	if len(w.outItems) < req.K {
		return nil // greedy found no K-set with a non-zero determinant
	}
	pm, fixedRows, err := w.candidateModel(m, req)
	if err != nil {
		return fmt.Errorf("rerank: polish: %w", err)
	}
	nf, d := len(fixedRows), w.d
	o, err := detcache.NewFast(pm, nf+req.K)
	if err != nil {
		return fmt.Errorf("rerank: polish: %w", err)
	}
	// Rows of pm: fixed 0…nf−1, candidate row x at nf + x.
	rowOf := make(map[int]int, w.nc)
	for x := 0; x < w.nc; x++ {
		rowOf[w.item[x]] = nf + x
	}
	fixed := make([]int, nf)
	for i := range fixed {
		fixed[i] = i
	}
	cands := make([]int, w.nc)
	for x := range cands {
		cands[x] = nf + x
	}
	start := make([]int, len(w.outItems))
	for i, it := range w.outItems {
		start[i] = rowOf[it]
	}
	pool := req.PolishPool
	if pool == 0 {
		pool = DefaultPolishPool
	}
	budget := req.PolishMaxRatios
	if budget == 0 {
		budget = DefaultPolishMaxRatios
	}
	lsOpt := stream.LocalSearchOptions{Eps: req.PolishEps, Pool: pool, Fixed: fixed, Items: cands, MaxEvals: budget}
	if len(w.cons) > 0 {
		// Swaps keep positions: the solution in position order is the
		// list, which must keep the constraints after the shown items.
		lsOpt.Feasible = func(sol []int) bool {
			w.resetConstraints()
			for _, r := range sol {
				p := w.pos[r-nf]
				if !w.feasible(p) {
					return false
				}
				w.place(p)
			}
			return true
		}
	}
	// A deadline the result may degrade at stops the search early by what
	// the answer still needs once it stops: the ordering of the set (the
	// greedy's measured time scaled to the set's rows) and the overrun of
	// the fresh LU the search may be in (O(k²(k + d)) for k = |F| + K,
	// reckoned at a conservative nanosecond per operation).
	sctx := ctx
	if dl, ok := ctx.Deadline(); ok && req.Degrade {
		k := nf + req.K
		reserve := time.Duration(float64(greedyTime)*float64(k)/float64(w.p)) + time.Duration(k*k*(k+d))
		var cancel context.CancelFunc
		sctx, cancel = context.WithDeadline(ctx, dl.Add(-reserve))
		defer cancel()
	}
	res, err := stream.LocalSearch(sctx, o, req.K, start, lsOpt)
	if err != nil {
		early := ctx.Err() == nil && req.Degrade && errors.Is(sctx.Err(), context.DeadlineExceeded)
		if !early && (ctx.Err() == nil || !mayDegrade(ctx, req)) {
			return fmt.Errorf("rerank: polish: %w", err)
		}
		// The deadline passed: keep what the search reached (nothing
		// when it had not started: the greedy's set).
		w.degraded = DegradedPolish
	}
	w.polishCapped = res.Budget
	if res.Swaps == 0 {
		return nil
	}
	w.polishSwaps = int(res.Swaps)
	return w.orderSolution(m, pm, o, res.Solution, fixedRows, len(w.cons) > 0)
}

// candidateModel returns a model of the rows the conditioning set keeps
// of the shown ones (fixedRows, in order) followed by the choosable
// candidate rows 0…nc−1 (at nf + x for nf = len(fixedRows)): vectors
// scaled by qᵢ, diagonal by qᵢ² (shown rows unscaled), the model's C.
func (w *Workspace) candidateModel(m *ndpp.Model, req *Request) (*ndpp.Model, []int, error) {
	// The conditioning set without a window: the kept shown rows, then the
	// chosen rows but the last.
	var fixedRows []int
	for _, x := range w.cond {
		if x >= w.nc {
			fixedRows = append(fixedRows, x)
		}
	}
	nf, d := len(fixedRows), w.d
	rows := append(fixedRows, make([]int, w.nc)...)
	for x := 0; x < w.nc; x++ {
		rows[nf+x] = x
	}
	np := len(rows)
	v := make([]float64, np*d)
	var b []float64
	if !w.shared {
		b = make([]float64, np*d)
	}
	delta := make([]float64, np)
	diag := m.HasDiag()
	for r, x := range rows {
		q := 1.0
		if x < w.nc {
			q = math.Sqrt(w.q2[x])
		}
		for j := 0; j < d; j++ {
			v[r*d+j] = q * w.gt[j*w.p+x]
			if b != nil {
				b[r*d+j] = q * w.gt[(d+j)*w.p+x]
			}
		}
		if diag {
			delta[r] = q * q * w.diagOf(m, req, w.item[x])
		}
	}
	_, _, _, c := m.Rows()
	var opts []ndpp.Option
	if diag {
		opts = append(opts, ndpp.WithDiag(delta))
	}
	pm, err := ndpp.NewFromRows(np, d, v, b, c, opts...)
	return pm, fixedRows[:nf:nf], err
}

// orderSolution writes the set sol (rows of the candidate model pm of
// candidateModel: nf + x for candidate row x) into w's output, ordered
// greedily given the fixed rows (with inOrder, in sol's order) with its
// gains: the greedy's recurrence over those rows alone, O(K²·(K + d)) (a
// deadline may have passed, so this must be cheap), or, when a zero gain
// stops it (a kernel whose principal minors vanish), the oracle o over
// pm's values (built here when nil), with fresh determinants where they
// need them.
func (w *Workspace) orderSolution(m, pm *ndpp.Model, o *detcache.Fast, sol, fixedRows []int, inOrder bool) error {
	nf := len(fixedRows)
	setItems := make([]int, len(sol))
	setRows := make([]int, len(sol))
	for i, r := range sol {
		setItems[i], setRows[i] = w.item[r-nf], r-nf
	}
	if w.reorder(m, setRows, fixedRows, inOrder) {
		return nil
	}
	if o == nil {
		var err error
		if o, err = detcache.NewFast(pm, nf+len(sol)); err != nil {
			return fmt.Errorf("rerank: ordering: %w", err)
		}
	}
	o.Reset()
	cand := o.NewCand()
	for f := 0; f < nf; f++ {
		o.Prepare(cand, f)
		if err := o.Add(cand); err != nil {
			return fmt.Errorf("rerank: ordering: %w", err)
		}
	}
	rest := append([]int(nil), sol...)
	w.outItems, w.outGains = w.outItems[:0], w.outGains[:0]
	for len(rest) > 0 {
		cur := o.Value()
		bi, bv := -1, ndpp.ZeroValue
		for i, r := range rest {
			o.Prepare(cand, r)
			if v := o.AddValue(cand); bi < 0 || v.Greater(bv) {
				bi, bv = i, v
			}
			if inOrder { // the list's order, which keeps the constraints
				break
			}
		}
		r := rest[bi]
		o.Prepare(cand, r)
		if err := o.Add(cand); err != nil {
			return fmt.Errorf("rerank: ordering: %w", err)
		}
		gain := 0.0
		if !bv.Zero {
			gain = math.Exp(bv.Log - cur.Log)
			if cur.Zero {
				gain = math.Exp(bv.Log)
			}
		}
		w.outItems = append(w.outItems, setItems[r-nf])
		w.outGains = append(w.outGains, gain)
		rest = append(rest[:bi], rest[bi+1:]...)
	}
	return nil
}

// reorder writes the candidate rows set in greedy order given the rows
// fixed (the kept shown rows, conditioned on in order) into w's output,
// with their gains, by the greedy's recurrence over those rows alone:
// the rows are gathered to the front of the working rows (rows set, then
// fixed) so that a step costs O((K + |fixed|)·(d + K)). With inOrder the
// order of set is kept (its gains are those of that order). It reports
// false when a fixed row or a step had a zero Schur complement under the
// zero rule; w's output is then to be rewritten by the caller.
func (w *Workspace) reorder(m *ndpp.Model, set, fixed []int, inOrder bool) bool {
	k, nf, gs, p := len(set), len(fixed), w.gs, w.p
	rows := append(append(make([]int, 0, k+nf), set...), fixed...)
	np := len(rows)
	item, pos := make([]int, np), make([]int, np)
	q2, lxx := make([]float64, np), make([]float64, np)
	g := make([]float64, np*gs)
	for i, x := range rows {
		item[i], lxx[i] = w.item[x], w.lxx[x]
		if x < w.nc {
			pos[i], q2[i] = w.pos[x], w.q2[x]
		}
		for j := range gs {
			g[j*np+i] = w.gt[j*p+x]
		}
	}
	copy(w.item, item)
	copy(w.pos, pos)
	w.q2 = append(w.q2[:0], q2[:k]...)
	copy(w.lxx, lxx)
	copy(w.gt, g)
	w.nc, w.p = k, np
	for x := 0; x < np; x++ {
		w.st[x] = stCand
		if x >= k {
			w.st[x] = stSkip
		}
	}
	w.seq = w.seq[:0]
	for x := k; x < np; x++ {
		w.seq = append(w.seq, x)
	}
	w.rebuild(m)
	if w.nSkip > 0 {
		return false
	}
	w.resetConstraints()
	w.outItems, w.outGains = w.outItems[:0], w.outGains[:0]
	// Bounded work: no context (a passed deadline must not stop it).
	_ = w.steps(context.Background(), m, k, 0, inOrder)
	return len(w.outItems) == k
}
