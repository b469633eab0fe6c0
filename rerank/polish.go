package rerank

import (
	"context"
	"fmt"
	"math"

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
// returns an error wrapping ctx.Err().
func (w *Workspace) polish(ctx context.Context, m *ndpp.Model, req *Request) error {
	w.polishSwaps = 0
	if len(w.outItems) < req.K {
		return nil // greedy found no K-set with a non-zero determinant
	}
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
			v[r*d+j] = q * w.vg[x*d+j]
			if b != nil {
				b[r*d+j] = q * w.bg[x*d+j]
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
	if err != nil {
		return fmt.Errorf("rerank: polish: %w", err)
	}
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
	res, err := stream.LocalSearch(ctx, o, req.K, start, lsOpt)
	if err != nil {
		if ctx.Err() == nil || !mayDegrade(ctx, req) {
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
	// Order the new set greedily given the fixed rows, with its gains.
	o.Reset()
	cand := o.NewCand()
	for _, f := range fixed {
		o.Prepare(cand, f)
		if err := o.Add(cand); err != nil {
			return fmt.Errorf("rerank: polish: %w", err)
		}
	}
	rest := append([]int(nil), res.Solution...)
	w.outItems, w.outGains = w.outItems[:0], w.outGains[:0]
	for len(rest) > 0 {
		cur := o.Value()
		bi, bv := -1, ndpp.ZeroValue
		for i, r := range rest {
			o.Prepare(cand, r)
			if v := o.AddValue(cand); bi < 0 || v.Greater(bv) {
				bi, bv = i, v
			}
			if len(w.cons) > 0 { // the list's order, which keeps the constraints
				break
			}
		}
		r := rest[bi]
		o.Prepare(cand, r)
		if err := o.Add(cand); err != nil {
			return fmt.Errorf("rerank: polish: %w", err)
		}
		gain := 0.0
		if !bv.Zero {
			gain = math.Exp(bv.Log - cur.Log)
			if cur.Zero {
				gain = math.Exp(bv.Log)
			}
		}
		w.outItems = append(w.outItems, w.item[r-nf])
		w.outGains = append(w.outGains, gain)
		rest = append(rest[:bi], rest[bi+1:]...)
	}
	return nil
}
