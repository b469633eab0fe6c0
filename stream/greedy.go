package stream

import (
	"context"
	"fmt"
	"sync"
	"time"

	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/ndpp"
)

// GreedyOptions configures OfflineGreedy.
type GreedyOptions struct {
	// Items restricts the candidates to these items (nil = all n items).
	// They are validated: non-empty, in range, no duplicates.
	Items []int
	// Workers is the number of goroutines sharing each round's pass over
	// the items (≤ 1 = one). Results do not depend on it.
	Workers int
}

// GreedyZeroFactor sets the offline greedy's numerical zero rule: a Schur
// complement s_x ≤ GreedyZeroFactor·(r+1)·ε·μ_x, where r = |S|, ε = 2⁻⁵² and
// μ_x = L_xx + Σ_m |a_m(x)·b_m(x)| bounds the magnitude of the terms that
// cancel in s_x, is a zero gain (det L_{S+x} = 0). So is a NaN. It mirrors
// ndpp.ZeroRcondFactor.
const GreedyZeroFactor = ndpp.ZeroRcondFactor

const eps = 0x1p-52

// OfflineGreedy is the offline greedy MAP baseline of Gartrell et al. (2021,
// Alg. 1): k rounds, each adding the item x with the largest
// det L_{S+x} = det L_S · s_x, where s_x = L_xx − L_{x,S} L_S⁻¹ L_{S,x} is x's
// Schur complement. It starts from s_x = L_xx = δ_x + ‖v_x‖² (b_xᵀCb_x = 0
// for a skew C; δ_x is the model's diagonal entry, 0 without one) and keeps,
// for every item, s_x and two families of
// coefficients (L is not symmetric): with j_m the m-th chosen item and
// R_r(x, y) = L_xy − Σ_{m<r} a_m(x)·b_m(y) the residual kernel,
//
//	a_r(x) = R_r(x, j_r) / s_{j_r},  b_r(x) = R_r(j_r, x),  s_x ← s_x − a_r(x)·b_r(x).
//
// The new kernel column and row, L_{x,j} = v_x·v_j − b_x·(b_jᵀC) and
// L_{j,x} = v_x·v_j + b_x·(b_jᵀC) (off the diagonal for x ≠ j, so without δ),
// cost one pass over the items (matrix–vector products through the blas
// backend), so a run costs O(n·k·(k + d)). With a diagonal, k may exceed 2d
// (up to n: ndpp.Model.MaxRank). Chosen
// items are masked; the run stops early when no item has a positive gain
// (a non-zero determinant under GreedyZeroFactor's rule); NaNs and
// overflowed (infinite) gains never win.
// Ties go to the lowest candidate position.
//
// The reported Value is log det L_S of the solution recomputed by
// ndpp.Model.LogDet; Evals counts the candidate gains computed.
//
// ctx is looked at before each round (one pass over the items, O(n·(k +
// d))); once it is done the run stops and returns an error wrapping
// ctx.Err() and no result.
func OfflineGreedy(ctx context.Context, m *ndpp.Model, k int, opt GreedyOptions) (Result, error) {
	if m == nil {
		return Result{}, fmt.Errorf("stream: nil model")
	}
	if err := checkK(m, k, -1); err != nil {
		return Result{}, err
	}
	cands := opt.Items
	if cands != nil {
		if err := m.CheckItems(cands); err != nil {
			return Result{}, fmt.Errorf("stream: greedy candidates: %w", err)
		}
	}
	N := m.N()
	if cands != nil {
		N = len(cands)
	}
	if k > N {
		return Result{}, fmt.Errorf("stream: k = %d exceeds the number of items %d", k, N)
	}
	start := time.Now()
	g := newGreedy(m, cands, N, k, max(1, opt.Workers))
	sol, err := g.run(ctx)
	if err != nil {
		return Result{}, err
	}
	res := Result{Algo: NameOfflineGreedy, K: k, Solution: sol, Evals: g.evals, Adds: int64(len(sol)), Items: int64(N)}
	res.Value = logDetValue(m, sol)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// logDetValue is log det L_S as a Value (∅ has Log 0).
func logDetValue(m *ndpp.Model, s []int) ndpp.Value {
	if len(s) == 0 {
		return ndpp.Value{}
	}
	ld, sign, err := m.LogDet(s)
	if err != nil || sign <= 0 {
		return ndpp.ZeroValue
	}
	return ndpp.Value{Log: ld}
}

type greedy struct {
	m       *ndpp.Model
	cands   []int // nil = all items
	n, k, d int
	workers int

	Schur  // the recurrence: n rows, families of stride k
	chosen []bool
	col    []float64 // L_{x,j} then R(x,j) (n)
	row    []float64 // L_{j,x} then R(j,x) (n)
	evals  int64
}

func newGreedy(m *ndpp.Model, cands []int, n, k, workers int) *greedy {
	return &greedy{
		m: m, cands: cands, n: n, k: k, d: m.D(), workers: min(workers, max(1, n/4096)),
		Schur:  Schur{S: make([]float64, n), Mu: make([]float64, n), A: make([]float64, n*k), B: make([]float64, n*k), Stride: k},
		chosen: make([]bool, n),
		col:    make([]float64, n), row: make([]float64, n),
	}
}

func (g *greedy) item(x int) int {
	if g.cands == nil {
		return x
	}
	return g.cands[x]
}

// parallel runs f on [lo, hi) chunks and returns the best candidate.
func (g *greedy) parallel(f func(lo, hi int) (int, float64)) int {
	if g.workers == 1 {
		x, _ := f(0, g.n)
		return x
	}
	chunk := (g.n + g.workers - 1) / g.workers
	bx := make([]int, g.workers)
	bs := make([]float64, g.workers)
	var wg sync.WaitGroup
	for w := 0; w < g.workers; w++ {
		lo, hi := w*chunk, min((w+1)*chunk, g.n)
		bx[w] = -1
		if lo >= hi {
			continue
		}
		wg.Add(1)
		go func(w, lo, hi int) {
			defer wg.Done()
			bx[w], bs[w] = f(lo, hi)
		}(w, lo, hi)
	}
	wg.Wait()
	best, bestS := -1, 0.0
	for w := range bx { // chunks are in order: strict > keeps the lowest index
		if bx[w] >= 0 && (best < 0 || bs[w] > bestS) {
			best, bestS = bx[w], bs[w]
		}
	}
	return best
}

func (g *greedy) run(ctx context.Context) ([]int, error) {
	var sol []int
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("stream: greedy: %w", err)
	}
	r := 0
	tol := func() float64 { return GreedyTol(r) }
	// Round 0: s_x = L_xx = δ_x + ‖v_x‖², since b_xᵀCb_x = 0 for a skew C.
	diag := g.m.HasDiag()
	best := g.parallel(func(lo, hi int) (int, float64) {
		bx, bs, t := -1, 0.0, tol()
		for x := lo; x < hi; x++ {
			it := g.item(x)
			v := g.m.ItemV(it)
			vv := blas.Dot(v, v)
			if diag {
				vv += g.m.ItemDiag(it)
			}
			g.S[x], g.Mu[x] = vv, vv
			if vv > t*vv && (bx < 0 || vv > bs) {
				bx, bs = x, vv
			}
		}
		return bx, bs
	})
	g.evals += int64(g.n)
	for {
		if best < 0 {
			return sol, nil
		}
		j := best
		g.chosen[j] = true
		sol = append(sol, g.item(j))
		r++
		if r == g.k {
			return sol, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("stream: greedy: %w", err)
		}
		g.kernelColRow(g.item(j))
		sj := g.S[j]
		aj := append([]float64(nil), g.A[j*g.k:j*g.k+r-1]...)
		bj := append([]float64(nil), g.B[j*g.k:j*g.k+r-1]...)
		m := r - 1 // index of the new coefficient
		k := g.k
		t := tol()
		best = g.parallel(func(lo, hi int) (int, float64) {
			bx, bs := -1, 0.0
			for x := lo; x < hi; x++ {
				if g.chosen[x] {
					continue
				}
				ax, bxr := g.A[x*k:x*k+m], g.B[x*k:x*k+m]
				rc, rr := g.col[x], g.row[x]
				for q := 0; q < m; q++ {
					rc -= ax[q] * bj[q]
					rr -= aj[q] * bxr[q]
				}
				g.Update(x, m, rc, rr, sj)
				if g.S[x] > t*g.Mu[x] && (bx < 0 || g.S[x] > bs) {
					bx, bs = x, g.S[x]
				}
			}
			return bx, bs
		})
		g.evals += int64(g.n - r)
	}
}

// kernelColRow fills col[x] = L_{x,j} and row[x] = L_{j,x} for every
// candidate x: with α_x = v_x·v_j and γ_x = b_x·(b_jᵀC), L_{x,j} = α − γ and
// L_{j,x} = α + γ (Cᵀ = −C).
func (g *greedy) kernelColRow(j int) {
	vj, bcj := g.m.ItemV(j), g.m.ItemBC(j)
	if g.cands != nil {
		for x, it := range g.cands {
			al, ga := blas.Dot(g.m.ItemV(it), vj), blas.Dot(g.m.ItemB(it), bcj)
			g.col[x], g.row[x] = al-ga, al+ga
		}
		return
	}
	vRows, bRows, _, _ := g.m.Rows()
	impl := blas64.Implementation()
	n, d := g.n, g.d
	chunk := (n + g.workers - 1) / g.workers
	var wg sync.WaitGroup
	for w := 0; w < g.workers; w++ {
		lo, hi := w*chunk, min((w+1)*chunk, n)
		if lo >= hi {
			continue
		}
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			al, ga := g.col[lo:hi], g.row[lo:hi]
			impl.Dgemv(gblas.NoTrans, hi-lo, d, 1, vRows[lo*d:hi*d], d, vj, 1, 0, al, 1)
			impl.Dgemv(gblas.NoTrans, hi-lo, d, 1, bRows[lo*d:hi*d], d, bcj, 1, 0, ga, 1)
			for x := range al {
				a, c := al[x], ga[x]
				al[x], ga[x] = a-c, a+c
			}
		}(lo, hi)
	}
	wg.Wait()
}
