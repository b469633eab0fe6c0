package rerank

import (
	"context"
	"fmt"
	"math"

	"github.com/ndpp-go/ndpp/internal/f64"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/stream"
)

// ZeroFactor sets the numerical zero rule of the greedy, as in
// stream.GreedyZeroFactor: a Schur complement s_x ≤ ZeroFactor·(r+1)·ε·μ_x,
// with r the size of the conditioning set, ε = 2⁻⁵² and μ_x = L_xx + Σ_m
// |a_m(x)·b_m(x)| the magnitude of the terms that cancel in s_x, is zero
// (det L_{S+x} = 0). So is a NaN.
const ZeroFactor = stream.GreedyZeroFactor

func tol(r int) float64 { return stream.GreedyTol(r) }

// Row states.
const (
	stCand uint8 = iota // a candidate that may still be chosen
	stCond              // in the conditioning set
	stSkip              // in the window, left out of the conditioning set (zero pivot)
	stDead              // chosen or shown and no longer in the window
)

// Workspace holds the buffers of one request at a time; they grow to the
// largest request served and are then reused, so that a steady stream of
// requests allocates nothing. A Workspace is not safe for concurrent use:
// give each goroutine its own, or keep them in a sync.Pool. Its memory is
// O(n) for a model of n items plus O(P·(d + w)) for P = candidates + shown
// items and a conditioning set of up to w items.
type Workspace struct {
	// Per-item stamps over the model's items (validation, shown test).
	candStamp, shownStamp []uint32
	candPos               []int32
	gen                   uint32

	// Working rows: the candidates that can be chosen (in request order),
	// then the shown items that are conditioned on.
	nc, p, d, w int
	item        []int
	q2          []float64 // squared quality (candidate rows)
	st          []uint8
	lxx         []float64 // L_xx
	// The recurrence (stream.Schur, shared with the offline greedy): s,
	// μ and the p×w coefficient families (row x = working row x, stride
	// w).
	stream.Schur
	// The gathered vectors, transposed: gt is gs×p, column x holding vₓ
	// (rows 0…d−1) and, when the model does not share B = V, bₓ (rows
	// d…2d−1), so that the kernel entries of all rows against a pivot y
	// are vector–matrix products streaming along the rows; kv and kb hold
	// vₓ·v_y and bₓ·(b_yᵀC) for the current pivot, vy its v_y.
	gt, kv, kb, vy []float64
	// The families transposed (row q of at holds a_q(x) of every row x,
	// row stride p; bt likewise), for the products with a pivot's own,
	// and those products for the current pivot.
	at, bt, fa, fb []float64
	gs             int
	shared         bool

	cond  []int // working rows of the conditioning set, in order
	seq   []int // working rows of the window (kept or skipped), in order
	nSkip int   // rows of seq in state stSkip

	// Downdate scratch (per position of the conditioning set).
	al, be, sNew, muNew               []float64
	stepA, stepB, stepS, stepP, stepC []float64

	relQ2        []float64        // squared quality from Relevance (per candidate)
	newPos       map[int]int      // new item id → index in Request.NewItems
	newUsed      []int32          // per new item: its candidate position (−1: none)
	newBC        []float64        // bᵀC of each new item (row-major)
	nModel       int              // the model's n (rows ≥ it are new items)
	order        []int            // relevance order (candidate positions)
	cons         []cons           // the request's constraints
	codes        map[string]int32 // attribute value → code (scratch of setupConstraints)
	pos          []int            // candidate position of each candidate row
	short        string
	outItems     []int
	outGains     []float64
	shownSkipped int
	polishSwaps  int
	polishCapped bool
	degraded     string
	rebuilds     int // slides that rebuilt the conditioning set (tests)
	// The best candidate row after the last add (−1: none found there),
	// valid while nothing else changed the rows (see best).
	next      int
	nextValid bool
}

// grow returns s resized to n, reallocating only when its capacity is
// short (contents are not kept).
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}

// run executes the greedy for a validated request. It returns an error
// wrapping ctx.Err() when ctx is done before a step; the candidate rows
// (item, q2 for rows 0…nc−1) are then built.
func (w *Workspace) run(ctx context.Context, m *ndpp.Model, req *Request) error {
	if err := w.setup(ctx, m, req); err != nil {
		return err
	}
	return w.steps(ctx, m, req.K, req.Window, false)
}

// setup builds the working rows of a validated request (the choosable
// candidates, then the shown items of the window) and conditions on the
// shown items, oldest first. It returns an error wrapping ctx.Err() when
// ctx is done before the conditioning; the candidate rows (item, q2 for
// rows 0…nc−1) are then built.
func (w *Workspace) setup(ctx context.Context, m *ndpp.Model, req *Request) error {
	d := m.D()
	shown := req.Shown
	if req.Window > 0 && len(shown) > req.Window {
		shown = shown[len(shown)-req.Window:]
	}
	maxP := len(req.Candidates) + len(shown)
	w.item = grow(w.item, maxP)[:0]
	w.q2 = grow(w.q2, maxP)[:0]
	w.pos = grow(w.pos, maxP)[:0]
	if req.Relevance != nil {
		w.relevanceQ2(req)
	}
	for pos, it := range req.Candidates {
		if w.shown(it, w.nModel) {
			continue
		}
		q2 := 1.0
		switch {
		case req.Quality != nil:
			q2 = req.Quality[pos] * req.Quality[pos]
		case req.Relevance != nil:
			q2 = w.relQ2[pos]
		}
		if q2 == 0 {
			continue
		}
		w.item = append(w.item, it)
		w.q2 = append(w.q2, q2)
		w.pos = append(w.pos, pos)
	}
	w.nc = len(w.item)
	w.item = append(w.item, shown...)
	p := len(w.item)
	w.p, w.d = p, d
	// The sequence never holds more than the shown items used and k − 1
	// chosen ones, whatever the window. (A sample's set is ordered given
	// the shown items without a window: room for all of them.)
	w.w = len(shown) + req.K
	if req.Window > 0 && !req.Sample {
		w.w = min(w.w, req.Window)
	}
	w.st = grow(w.st, p)
	w.lxx = grow(w.lxx, p)
	w.S = grow(w.S, p)
	w.Mu = grow(w.Mu, p)
	w.A = grow(w.A, p*w.w)
	w.B = grow(w.B, p*w.w)
	w.Stride = w.w
	w.kv = grow(w.kv, p)
	w.kb = grow(w.kb, p)
	w.vy = grow(w.vy, d)
	w.at = grow(w.at, w.w*p)
	w.bt = grow(w.bt, w.w*p)
	w.fa = grow(w.fa, p)
	w.fb = grow(w.fb, p)
	w.shared = m.Shared()
	w.gs = d
	if !w.shared {
		w.gs = 2 * d
	}
	w.gt = grow(w.gt, w.gs*p)
	// Gather four items at a time, so that each row of gt is written four
	// entries at a time.
	var vs, bs [4][]float64
	for x0 := 0; x0 < p; x0 += 4 {
		nb := min(4, p-x0)
		for i := range nb {
			x := x0 + i
			it := w.item[x]
			var delta float64
			if it >= w.nModel {
				ni := &req.NewItems[w.newPos[it]]
				vs[i], bs[i], delta = ni.V, ni.B, ni.Delta
			} else {
				vs[i], bs[i], delta = m.ItemV(it), m.ItemB(it), m.ItemDiag(it)
			}
			var vv float64
			for _, f := range vs[i] {
				vv += f * f
			}
			w.lxx[x] = vv + delta // bₓᵀCbₓ = 0
			w.st[x] = stCand
		}
		gatherT(w.gt, p, x0, vs[:nb])
		if !w.shared {
			gatherT(w.gt[d*p:], p, x0, bs[:nb])
		}
	}
	for x := w.nc; x < p; x++ {
		w.st[x] = stSkip // live until conditioned on
	}
	for _, grown := range []*[]float64{&w.al, &w.be, &w.sNew, &w.muNew, &w.stepA, &w.stepB, &w.stepS, &w.stepP, &w.stepC} {
		*grown = grow(*grown, w.w)
	}
	w.cond = grow(w.cond, w.w)[:0]
	w.seq = grow(w.seq, w.w)[:0]
	w.outItems = grow(w.outItems, req.K)[:0]
	w.outGains = grow(w.outGains, req.K)[:0]

	// Condition on the shown items, oldest first.
	for x := w.nc; x < p; x++ {
		w.seq = append(w.seq, x)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("rerank: greedy: %w", err)
	}
	w.rebuild(m)
	w.shownSkipped = w.nSkip
	return nil
}

// steps runs k steps of the greedy from the conditioning set built so
// far (with a sliding window of the given size when positive), appending
// to w's output. In order, step t takes candidate row t instead of the
// best one (the gains of a given order); it stops at a zero gain. It
// returns an error wrapping ctx.Err() when ctx is done before a step.
func (w *Workspace) steps(ctx context.Context, m *ndpp.Model, k, window int, inOrder bool) error {
	for t := 0; t < k; t++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("rerank: greedy: %w", err)
		}
		best := t
		if !inOrder {
			best = -1
			if w.nextValid {
				best = w.next
			}
			if best < 0 {
				best = w.best()
			}
		} else if !(w.S[t] > tol(len(w.cond))*w.Mu[t]) || math.IsInf(w.q2[t]*w.S[t], 1) {
			best = -1
		}
		if best < 0 {
			return nil
		}
		if len(w.cons) > 0 {
			w.place(w.pos[best])
		}
		w.outItems = append(w.outItems, w.item[best])
		w.outGains = append(w.outGains, w.q2[best]*w.S[best])
		if t == k-1 {
			return nil
		}
		if window > 0 && len(w.seq) == window {
			w.slide(m)
		}
		w.seq = append(w.seq, best)
		w.tryAdd(m, best)
	}
	return nil
}

// gatherT writes the vectors rows (of one length) as the columns x0, x0+1,
// … of the row-major matrix at dst (row stride p).
func gatherT(dst []float64, p, x0 int, rows [][]float64) {
	if len(rows) == 4 {
		r0, r1, r2, r3 := rows[0], rows[1], rows[2], rows[3]
		r1, r2, r3 = r1[:len(r0)], r2[:len(r0)], r3[:len(r0)]
		for j, f := range r0 {
			c := dst[j*p+x0 : j*p+x0+4]
			c[0], c[1], c[2], c[3] = f, r1[j], r2[j], r3[j]
		}
		return
	}
	for i, r := range rows {
		for j, f := range r {
			dst[j*p+x0+i] = f
		}
	}
}

// best returns the candidate row with the largest positive, finite gain
// q²·s (the first on ties) among those the constraints allow next, or −1
// (setting w.short).
func (w *Workspace) best() int {
	t := tol(len(w.cond))
	bx, bg := -1, 0.0
	blocked := false
	for x := 0; x < w.nc; x++ {
		if w.st[x] != stCand || !(w.S[x] > t*w.Mu[x]) {
			continue
		}
		if g := w.q2[x] * w.S[x]; g > bg && !math.IsInf(g, 1) {
			if len(w.cons) > 0 && !w.feasible(w.pos[x]) {
				blocked = true
				continue
			}
			bx, bg = x, g
		}
	}
	if bx < 0 {
		w.short = ShortZeroGain
		if blocked {
			w.short = ShortConstraints
		}
	}
	return bx
}

// tryAdd conditions on row y (a member of the window) if its Schur
// complement is positive under the zero rule, and marks it skipped
// otherwise.
func (w *Workspace) tryAdd(m *ndpp.Model, y int) {
	w.nextValid = false
	if w.S[y] > tol(len(w.cond))*w.Mu[y] {
		w.add(m, y)
		return
	}
	w.st[y] = stSkip
	w.nSkip++
}

// add appends row y to the conditioning set: for every live row x
// (candidates and skipped window rows), stream.Schur.Update with the
// residuals R(x, y) and R(y, x):
//
//	a_r(x) = R(x, y) / s_y,  b_r(x) = R(y, x),  s_x ← s_x − a_r(x)·b_r(x),
//
// with r = |cond| and R(x, z) = L_xz − Σ_{q<r} a_q(x)·b_q(z) the residual
// kernel. The kernel entries L_{x,y} = vₓ·v_y − bₓ·(b_yᵀC) and L_{y,x} =
// vₓ·v_y + bₓ·(b_yᵀC) of all rows are two vector–matrix products over the
// transposed gathered vectors (the streaming kernel of internal/f64 that
// the oracle's products use, on both backends).
func (w *Workspace) add(m *ndpp.Model, y int) {
	r, W, d, p := len(w.cond), w.Stride, w.d, w.p
	it := w.item[y]
	var bc []float64
	if it >= w.nModel {
		i := w.newPos[it]
		bc = w.newBC[i*d : (i+1)*d]
	} else {
		bc = m.ItemBC(it)
	}
	vy := w.vy[:d]
	for j := range vy {
		vy[j] = w.gt[j*p+y]
	}
	off := 0 // bₓ's rows in gt
	if !w.shared {
		off = d * p
	}
	f64.GemvT(w.gt, p, vy, w.kv[:p])
	f64.GemvT(w.gt[off:], p, bc, w.kb[:p])
	// The families' terms Σ_q a_q(x)·b_q(y) and Σ_q a_q(y)·b_q(x).
	ay, by := w.A[y*W:y*W+r], w.B[y*W:y*W+r]
	fa, fb := w.fa[:p], w.fb[:p]
	f64.GemvT(w.at, p, by, fa)
	f64.GemvT(w.bt, p, ay, fb)
	at, bt := w.at[r*p:(r+1)*p], w.bt[r*p:(r+1)*p]
	sy := w.S[y]
	// The next step's best candidate, as best finds it, in the same pass.
	t := tol(r + 1)
	bx, bg := -1, 0.0
	for x := 0; x < p; x++ {
		switch w.st[x] {
		case stCand, stSkip:
		case stCond:
			w.A[x*W+r], w.B[x*W+r] = 0, 0
			at[x], bt[x] = 0, 0
			continue
		default:
			continue
		}
		if x == y {
			continue
		}
		kv, kb := w.kv[x], w.kb[x]
		w.Update(x, r, kv-kb-fa[x], kv+kb-fb[x], sy)
		at[x], bt[x] = w.A[x*W+r], w.B[x*W+r]
		if x < w.nc && w.st[x] == stCand && w.S[x] > t*w.Mu[x] {
			if g := w.q2[x] * w.S[x]; g > bg && !math.IsInf(g, 1) && (len(w.cons) == 0 || w.feasible(w.pos[x])) {
				bx, bg = x, g
			}
		}
	}
	w.next, w.nextValid = bx, true
	at[y], bt[y] = 1, sy
	w.A[y*W+r], w.B[y*W+r] = 1, sy
	w.S[y] = 0
	w.st[y] = stCond
	w.cond = append(w.cond, y)
}

// slide drops the oldest row of the window.
func (w *Workspace) slide(m *ndpp.Model) {
	old := w.seq[0]
	copy(w.seq, w.seq[1:])
	w.seq = w.seq[:len(w.seq)-1]
	if w.st[old] == stSkip {
		w.nSkip--
		w.st[old] = stDead
		return
	}
	// old is the first row of the conditioning set.
	w.st[old] = stDead
	if w.nSkip > 0 || !w.downdate() {
		w.rebuilds++
		w.rebuild(m)
	}
}

// rebuild conditions from scratch on the rows of the window, in order,
// skipping those with a zero pivot.
func (w *Workspace) rebuild(m *ndpp.Model) {
	w.nextValid = false
	for x := 0; x < w.p; x++ {
		if w.st[x] == stCond {
			w.st[x] = stSkip
		}
		if w.st[x] == stCand || w.st[x] == stSkip {
			w.S[x], w.Mu[x] = w.lxx[x], w.lxx[x]
		}
	}
	w.cond = w.cond[:0]
	w.nSkip = 0
	for _, y := range w.seq {
		w.tryAdd(m, y)
	}
}

// downdate removes the first row of the conditioning set, y₁, from the
// factorisation of the others, as Chen et al.'s sliding window does for a
// Cholesky factor, with the nonsymmetric (LU) form of the rank-one update
// (Bennett 1965). With the families written as L = Σ_m a_m b_mᵀ + R over
// the live rows, removing y₁ leaves c·α βᵀ (c = 1, α = a₁, β = b₁) to be
// folded into the pivots y₂ … y_r in turn: at pivot m, with α_m = α(y_m),
// β_m = β(y_m) and s_m the old pivot, the new pivot is
// p_m = s_m + c·α_m·β_m (computed as L_{y_m y_m} − Σ_{l<m} a′_l b′_l, which
// it equals) and
//
//	a′_m = (c·β_m·α + s_m·a_m) / p_m,  b′_m = b_m + c·α_m·β,
//	α ← α − α_m·a_m,  β ← β − (β_m/s_m)·b_m,  c ← c·s_m/p_m,
//
// and what is left, c·α βᵀ, joins the residual: s_x = L_xx − Σ a′_m(x)b′_m(x).
// A new pivot that is zero under the zero rule (possible for nonsymmetric
// kernels: det L_Y > 0 does not make the minors of Y positive) stops it;
// it returns false and the caller rebuilds.
func (w *Workspace) downdate() bool {
	r, W := len(w.cond), w.w
	cond := w.cond
	// Phase 1: the conditioning rows give the step scalars.
	for i := 1; i < r; i++ {
		x := cond[i]
		w.al[i], w.be[i] = w.A[x*W], w.B[x*W]
		w.sNew[i], w.muNew[i] = w.lxx[x], w.lxx[x]
	}
	c := 1.0
	for m := 1; m < r; m++ {
		ym := cond[m]
		am, bm, sm := w.al[m], w.be[m], w.B[ym*W+m]
		// The new pivot p = s_m + c·α_m·β_m, taken as L_yy − Σ a′b′ over
		// the new terms before it, the value and magnitude a rebuild
		// would test.
		p := w.sNew[m]
		if !(p > tol(m-1)*w.muNew[m]) {
			return false
		}
		w.stepA[m], w.stepB[m], w.stepS[m], w.stepP[m], w.stepC[m] = am, bm, sm, p, c
		for i := m + 1; i < r; i++ {
			x := cond[i]
			xa, xb := w.A[x*W+m], w.B[x*W+m]
			na := (c*bm*w.al[i] + sm*xa) / p
			nb := xb + c*am*w.be[i]
			w.al[i] -= am * xa
			w.be[i] -= bm / sm * xb
			w.A[x*W+m-1], w.B[x*W+m-1] = na, nb
			w.sNew[i] -= na * nb
			w.muNew[i] += math.Abs(na * nb)
		}
		// The pivot's own row: a′ = 1, b′ = p, nothing after it.
		w.A[ym*W+m-1], w.B[ym*W+m-1] = 1, p
		c = c * sm / p
	}
	for i := 1; i < r; i++ {
		x := cond[i]
		for q := i; q < r; q++ {
			w.A[x*W+q], w.B[x*W+q] = 0, 0
		}
	}
	// Phase 2: every other live row.
	for x := 0; x < w.p; x++ {
		if st := w.st[x]; st != stCand && st != stSkip {
			continue
		}
		fa, fb := w.A[x*W:x*W+r], w.B[x*W:x*W+r]
		al, be := fa[0], fb[0]
		s, mu := w.lxx[x], w.lxx[x]
		for m := 1; m < r; m++ {
			xa, xb := fa[m], fb[m]
			cm := w.stepC[m]
			na := (cm*w.stepB[m]*al + w.stepS[m]*xa) / w.stepP[m]
			nb := xb + cm*w.stepA[m]*be
			al -= w.stepA[m] * xa
			be -= w.stepB[m] / w.stepS[m] * xb
			fa[m-1], fb[m-1] = na, nb
			pr := na * nb
			s -= pr
			mu += math.Abs(pr)
		}
		w.S[x], w.Mu[x] = s, mu
	}
	copy(w.cond, w.cond[1:])
	w.cond = w.cond[:r-1]
	// The transposed families follow.
	p := w.p
	for q := 0; q < r-1; q++ {
		at, bt := w.at[q*p:(q+1)*p], w.bt[q*p:(q+1)*p]
		for x := range at {
			at[x], bt[x] = w.A[x*W+q], w.B[x*W+q]
		}
	}
	return true
}
