package detcache

import (
	"fmt"
	"math"

	gblas "gonum.org/v1/gonum/blas"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/ndpp"
)

// Block scoring: the products of a block of arriving items against S by
// matrix–matrix calls, and proofs that values of the block's items stay
// below a threshold, from the same identities and error bounds as the
// one-item path.

// Margins of the block tests (see below).
const (
	// blockSafety multiplies a ratio's error bound err. The block and
	// Prepare compute the same ratio in different orders, each within its
	// own first-order bound of the exact ratio. Where the block's ratio is
	// resolved (|r| > blockSafety·err), Prepare's bound err' is the same
	// formula on inputs equal to first order: err' ≤ 2·err (the tests check
	// this), so Prepare's ratio lies within 3·err of the block's. Where a
	// ratio is zero within rounding, both bounds are made of second-order
	// terms of rounding noise (products of p_j and q_j that are themselves
	// noise) and err' can exceed 2·err (the tests see up to about 7·err);
	// below then proves only through hi ≤ t/2, and the tests check that
	// Prepare's ratio still lies within 3·err of the block's.
	blockSafety = 4
	// blockRel is the relative margin that covers the rounding of exp,
	// log and the additions that turn a ratio into a Value.
	blockRel = 1e-9
)

// Block is a block of arriving items scored together against an oracle's
// current solution: see Oracle.ScoreBlock. It belongs to the oracle that
// created it and is valid until that oracle's solution changes.
type Block struct {
	owner   Oracle
	fast    *Fast // owner, for Fast
	version uint64
	n       int  // items scored
	scored  bool // the last ScoreBlock succeeded
	qReady  bool // Q is computed (see ensureQ)
	// Fast: one Cand per column whose u, w, p, q are rows of the n×cap
	// matrices below, and the gathered rows v_t and b_t (n×d).
	cands      []Cand
	u, w, p, q []float64
	vb, bb     []float64
	bcb        []float64 // n×d rows b_tᵀC of vector items (ScoreBlockItems)
	bcOK       []bool    // the column's row of bcb is computed (ScoreBlockItems)
	lttErr     []float64 // bound added to the column's serr for its L_tt (ScoreBlockItems)
	zt         []float64 // ‖z_t‖ per column
	// max |(M⁻¹)_ij|, max |(M⁻¹)_jj|, max 1/‖z_{S_j}‖ and
	// max ‖z_{S_i}‖|(M⁻¹)_ij|‖z_{S_j}‖ (for the bounds below)
	maxInv, maxDiag, maxIzn, maxEinv float64
	// the last threshold asked for and its ratio (see threshold)
	lastL, lastT float64
}

// Len returns the number of items of the last ScoreBlock.
func (b *Block) Len() int { return b.n }

// NewBlock returns a Block for up to size items. It panics for size < 1.
func (o *Fast) NewBlock(size int) *Block {
	if size < 1 {
		panic(fmt.Sprintf("detcache: NewBlock size %d; need at least 1", size))
	}
	c, d := o.cap, o.d
	b := &Block{owner: o, fast: o, cands: make([]Cand, size),
		u: make([]float64, size*c), w: make([]float64, size*c),
		p: make([]float64, size*c), q: make([]float64, size*c),
		vb: make([]float64, size*d), bb: make([]float64, size*d), zt: make([]float64, size)}
	if o.m == nil {
		b.bcb = make([]float64, size*d)
	}
	for i := range b.cands {
		x := &b.cands[i]
		x.owner, x.item, x.dup = o, -1, -1
		x.u, x.w = b.u[i*c:(i+1)*c:(i+1)*c], b.w[i*c:(i+1)*c:(i+1)*c]
		x.p, x.q = b.p[i*c:(i+1)*c:(i+1)*c], b.q[i*c:(i+1)*c:(i+1)*c]
	}
	return b
}

// ScoreBlock computes, for every item of items (len(items) ≤ the block's
// size), the products Prepare computes, by matrix–matrix calls through
// blas.Gemm (O(nkd + nk²) for n items): with the block's rows stacked in
// V_blk and B_blk,
//
//	Uᵀ = V_blk V_Sᵀ + B_blk (B_SᵀC)ᵀ,  Wᵀ = V_blk V_Sᵀ − B_blk (B_SᵀC)ᵀ,
//	Pᵀ = Uᵀ M⁻ᵀ,  Qᵀ = Wᵀ M⁻¹,
//
// then each item's Schur complement and error scales as Prepare does (Q
// only when a swap or pair test first needs it). It returns false in
// direct mode (every value needs a fresh LU). It counts no evaluations and
// panics for an item out of range.
func (o *Fast) ScoreBlock(b *Block, items []int) bool {
	if o.m == nil {
		panic(errNoModel)
	}
	if !o.startBlock(b, len(items)) {
		return false
	}
	nb, d := len(items), o.d
	inS := o.inSMask()
	vRows, bRows, bcRows, _ := o.m.Rows()
	for c, it := range items {
		checkItem(o.m, it)
		x := &b.cands[c]
		// Of the row only δ is set here; colRows sets the rest for the
		// pair tests, so that filling a block writes little per item.
		x.item, x.r = it, row{delta: o.m.ItemDiag(it)}
		lo, hi := it*d, (it+1)*d
		o.blockCand(b, c, inS, vRows[lo:hi], bRows[lo:hi], bcRows[lo:hi])
	}
	vb, bb := b.vb[:nb*d], b.bb[:nb*d]
	if len(o.items) > 0 && nb > 0 {
		if lo := items[0]; consecutive(items) {
			vb, bb = vRows[lo*d:(lo+nb)*d], bRows[lo*d:(lo+nb)*d]
		} else {
			for c, it := range items {
				copy(vb[c*d:(c+1)*d], vRows[it*d:(it+1)*d])
				copy(bb[c*d:(c+1)*d], bRows[it*d:(it+1)*d])
			}
		}
	}
	o.scoreBlock(b, vb, bb)
	return true
}

// ScoreBlockItems is ScoreBlock for items given by their vectors: the
// block copies them into its rows, so the caller may reuse the slices. For
// an exactly skew-symmetric C (C_lk = −C_kl bit for bit, the case of
// ndpp.Random and of the learners) the block does not compute b_tᵀC: in
// L_tt = δ + v·v + b_tᵀCb_t the last term is exactly zero, and the bound on
// the rounding that PrepareItem's computed term carries is added to the
// column's error bound; b_tᵀC is then computed (as PrepareItem does) only
// for the columns of a pair test. It panics for vectors of the wrong
// length.
func (o *Fast) ScoreBlockItems(b *Block, items []Item) bool {
	if !o.startBlock(b, len(items)) {
		return false
	}
	nb, d := len(items), o.d
	if b.bcb == nil {
		b.bcb = make([]float64, len(b.cands)*d)
	}
	if len(b.lttErr) < len(b.cands) {
		b.lttErr = make([]float64, len(b.cands))
		b.bcOK = make([]bool, len(b.cands))
	}
	inS := o.inSMask()
	vb, bb, bcb := b.vb[:nb*d], b.bb[:nb*d], b.bcb[:nb*d]
	for c := range items {
		it := &items[c]
		if len(it.V) != d || len(it.B) != d && (it.B != nil || !o.kern.Shared) {
			checkItemShape(&o.kern, *it)
		}
		x := &b.cands[c]
		lo, hi := c*d, (c+1)*d
		r := row{v: vb[lo:hi:hi], b: bb[lo:hi:hi], bc: bcb[lo:hi:hi], delta: it.Delta}
		copy(r.v, it.V)
		if it.B != nil {
			copy(r.b, it.B)
		} else {
			copy(r.b, it.V)
		}
		x.item, x.r = it.ID, r
		switch {
		case it.bc != nil:
			copy(r.bc, it.bc)
			b.bcOK[c], b.lttErr[c] = true, 0
			o.blockCand(b, c, inS, r.v, r.b, r.bc)
		case o.skew:
			b.bcOK[c] = false
			bsq := o.blockCandSkew(b, c, inS, r.v, r.b)
			b.lttErr[c] = o.skewErr * bsq
		default:
			ndpp.RowTimesC(r.bc, r.b, o.kern.C)
			b.bcOK[c], b.lttErr[c] = true, 0
			o.blockCand(b, c, inS, r.v, r.b, r.bc)
		}
	}
	o.scoreBlock(b, vb, bb)
	if o.skew {
		for c := range nb {
			// serr = 0 only where schur proved s exactly zero (the rank
			// bound), whatever L_tt is.
			if x := &b.cands[c]; x.serr != 0 {
				x.serr += b.lttErr[c]
			}
		}
	}
	return true
}

// blockCandSkew is blockCand for a kernel with an exactly skew-symmetric C,
// whose b_tᵀCb_t is zero: L_tt = δ + v·v. It returns ‖b‖².
func (o *Fast) blockCandSkew(b *Block, c int, inS uint64, v, bv []float64) float64 {
	x := &b.cands[c]
	o.begin(x, x.item, o.posInS(x.item, inS))
	vv, bsq := sumSq2(v, bv)
	ltt, zz := vv, vv+bsq
	if o.hasDiag {
		dt := x.r.delta
		ltt += dt
		zz += dt
	}
	x.ltt, b.zt[c] = ltt, math.Sqrt(zz)
	x.logz2 = math.NaN() // only the value methods' zero rule reads it
	return bsq
}

// startBlock checks the block and records its size; false in direct mode.
func (o *Fast) startBlock(b *Block, nb int) bool {
	if b == nil || b.owner != Oracle(o) {
		panic("detcache: Block was created by another oracle")
	}
	if nb > len(b.cands) {
		panic(fmt.Sprintf("detcache: ScoreBlock with %d items for a block of %d", nb, len(b.cands)))
	}
	b.version, b.n, b.scored, b.qReady = o.version, nb, false, false
	b.lastL, b.lastT = math.NaN(), 0
	return !o.direct
}

// inSMask returns a mask with bit item mod 64 of every item of S: most
// items of a block skip positionOf.
func (o *Fast) inSMask() uint64 {
	var inS uint64
	for _, it := range o.items {
		inS |= 1 << (uint(it) & 63)
	}
	return inS
}

// posInS is the position in S of item it, or −1; inS is inSMask's mask.
func (o *Fast) posInS(it int, inS uint64) int {
	if inS&(1<<(uint(it)&63)) == 0 {
		return -1
	}
	return positionOf(o.items, it)
}

// blockCand starts column c of a block, whose item and δ are set, from
// its vectors v, b and bᵀC: its stamp, position in S, L_tt and ‖z_t‖.
func (o *Fast) blockCand(b *Block, c int, inS uint64, v, bv, bc []float64) {
	x := &b.cands[c]
	o.begin(x, x.item, o.posInS(x.item, inS))
	vv, bsq, bcb := rowDots(v, bv, bc)
	ltt, zz := vv+bcb, vv+bsq
	if o.hasDiag {
		dt := x.r.delta
		ltt += dt
		zz += dt
	}
	x.ltt, b.zt[c] = ltt, math.Sqrt(zz)
	x.logz2 = math.NaN() // only the value methods' zero rule reads it
}

// scoreBlock computes the products of the block's columns, started by
// blockCand, with their v and b rows stacked in vb and bb (n×d).
func (o *Fast) scoreBlock(b *Block, vb, bb []float64) {
	nb := b.n
	k, d, ld := len(o.items), o.d, o.cap
	if k > 0 && nb > 0 {
		blas.Gemm(gblas.NoTrans, gblas.Trans, nb, k, d, 1, vb, d, o.vs, d, 0, b.u, ld)
		blas.Gemm(gblas.NoTrans, gblas.Trans, nb, k, d, 1, bb, d, o.bcs, d, 0, b.w, ld)
		for c := 0; c < nb; c++ {
			u, w := b.u[c*ld:c*ld+k], b.w[c*ld:c*ld+k]
			for i, x := range u {
				y := w[i]
				u[i], w[i] = x+y, x-y
			}
		}
		blas.Gemm(gblas.NoTrans, gblas.Trans, nb, k, k, 1, b.u, ld, o.inv, ld, 0, b.p, ld)
	}
	for c := 0; c < nb; c++ {
		x := &b.cands[c]
		x.hasUW = true
		o.schur(x, b.zt[c])
	}
	b.maxInv, b.maxDiag, b.maxIzn, b.maxEinv = 0, 0, 0, 0
	for i := 0; i < k; i++ {
		zi := o.znorm[i]
		for j, v := range o.inv[i*ld : i*ld+k] {
			b.maxInv = max(b.maxInv, math.Abs(v))
			b.maxEinv = max(b.maxEinv, zi*math.Abs(v)*o.znorm[j])
		}
		b.maxDiag = max(b.maxDiag, math.Abs(o.inv[i*ld+i]))
		b.maxIzn = max(b.maxIzn, o.izn[i])
	}
	b.scored = true
}

// rowDots returns v·v, b·b and bc·b (the block's L_tt = δ + v·v + bc·b and
// ‖z‖² = v·v + b·b + δ) in one pass, two terms at a time.
func rowDots(v, b, bc []float64) (vv, bb, bcb float64) {
	n := len(v)
	b, bc = b[:n], bc[:n]
	var vv1, bb1, bcb1 float64
	i := 0
	for ; i+2 <= n; i += 2 {
		x0, x1, y0, y1 := v[i], v[i+1], b[i], b[i+1]
		vv += x0 * x0
		vv1 += x1 * x1
		bb += y0 * y0
		bb1 += y1 * y1
		bcb += bc[i] * y0
		bcb1 += bc[i+1] * y1
	}
	if i < n {
		x, y := v[i], b[i]
		vv += x * x
		bb += y * y
		bcb += bc[i] * y
	}
	return vv + vv1, bb + bb1, bcb + bcb1
}

// ensureQ computes Qᵀ = Wᵀ M⁻¹ for the block's columns, once per
// ScoreBlock: only the swap and pair tests need it. The error scale of q
// (qScale) is computed per column when a test needs the exact bound
// (ensureQn); the first tests use a bound on it (qnBound).
func (b *Block) ensureQ() {
	if b.qReady {
		return
	}
	o, nb, k, ld := b.fast, b.n, len(b.fast.items), b.fast.cap
	if k > 0 && nb > 0 {
		blas.Gemm(gblas.NoTrans, gblas.NoTrans, nb, k, k, 1, b.w, ld, o.inv, ld, 0, b.q, ld)
	}
	for c := range b.cands[:nb] {
		b.cands[c].qn = math.NaN() // not computed yet
	}
	b.qReady = true
}

// ensureQn computes x's error scale of q if it was not yet.
func (b *Block) ensureQn(x *Cand) {
	if math.IsNaN(x.qn) {
		b.fast.qScale(x)
	}
}

// qnBound bounds x's qn = max_j |q_j|·‖z_j‖ + ‖z_t‖ without computing it:
// q_j = Σ_i w_i (M⁻¹)_ij, so |q_j|·‖z_j‖ ≤ Σ_i (|w_i|/‖z_i‖)·‖z_i‖|(M⁻¹)_ij|‖z_j‖
// ≤ w1·maxEinv. It is doubled for rounding.
func (b *Block) qnBound(x *Cand) float64 { return 2*x.w1*b.maxEinv + x.zt }

// consecutive reports whether items is a run of consecutive indices.
func consecutive(items []int) bool {
	for i := 1; i < len(items); i++ {
		if items[i] != items[i-1]+1 {
			return false
		}
	}
	return true
}

// cand returns column c's Cand of a block scored against the current S.
func (b *Block) cand(c int) (*Fast, *Cand) {
	o := b.fast
	switch {
	case !b.scored:
		panic("detcache: Block was not scored (ScoreBlock returned false or was not called)")
	case o.version != b.version:
		panic("detcache: Block is stale: the solution changed after ScoreBlock")
	case c < 0 || c >= b.n:
		panic(fmt.Sprintf("detcache: Block column %d out of range [0, %d)", c, b.n))
	}
	return o, &b.cands[c]
}

// threshold turns a log threshold L into the ratio threshold t the block
// tests use: a ratio r' ≤ t gives a value logDet + log r' ≤ L despite the
// rounding of exp, log and the sums. It is 0 (nothing can be proved) for
// L = −Inf or NaN. The block keeps the last one (S is fixed while it is
// valid).
func (b *Block) threshold(L float64) float64 {
	if L == b.lastL {
		return b.lastT
	}
	o := b.fast
	t := math.Exp(L-o.logDet) * (1 - blockRel - 4*eps*(math.Abs(L)+math.Abs(o.logDet)))
	if !(t > 0) {
		t = 0
	}
	b.lastL, b.lastT = L, t
	return t
}

// below reports whether every value the oracle can return for a ratio
// whose block computation is r with error bound err is at most the ratio
// threshold t (t > 0). Prepare's path computes the same ratio as some r'
// with r' ≤ hi = r + blockSafety·err, and with bound err' ≤ 2·err where r
// is resolved (see blockSafety); its value is then
//
//   - from the identity when err' ≤ FallbackErr·r', which is certain when
//     2·err ≤ FallbackErr·(r − blockSafety·err) (only possible for a
//     resolved r): then hi ≤ t suffices;
//   - zero, which is below every threshold;
//   - otherwise from a fresh LU, whose result is within a small relative
//     error of the exact ratio (the set passed ndpp's zero rule), itself at
//     most r + err: hi ≤ t/2 leaves room for that error and for the drift
//     of log det M.
//
// A NaN anywhere gives false.
func below(r, err, t float64) bool {
	hi := r + blockSafety*err
	if !(hi <= t) {
		return false
	}
	return hi <= t/2 || 2*err <= FallbackErr*(r-blockSafety*err)
}

// SwapsBelow reports whether every value SwapValues would return for the
// item in column c, S − S[j] + x for each position j, has Log ≤ L (so none
// exceeds L); false means it could not be proved. Each position is tested
// with its ratio and swapErrBound first, and with swapRatio's own bound
// only when that does not suffice: O(k).
func (b *Block) SwapsBelow(c int, L float64) bool {
	o, x := b.cand(c)
	t := b.threshold(L)
	if x.dup >= 0 || t == 0 {
		return false
	}
	b.ensureQ()
	bound := b.swapErrBound(x)
	// below(r, bound, t) holds when hi = r + blockSafety·bound ≤ t/2 (the
	// common case: a test that rarely fails, with no other work per
	// position); the full test runs only when some position fails it.
	margin, half, easy := blockSafety*bound, t/2, true
	for j := range o.items {
		if !(o.swapDet(x, j)+margin <= half) {
			easy = false
			break
		}
	}
	if easy {
		return true
	}
	for j := range o.items {
		if below(o.swapDet(x, j), bound, t) {
			continue // below with a larger bound: below with swapRatio's own
		}
		b.ensureQn(x)
		if r, _, err := o.swapRatio(x, j); !below(r, err, t) {
			return false
		}
	}
	return true
}

// swapErrBound returns a bound on the err of swapRatio(x, j) that holds for
// every position j, O(1): swapRatio's bound with |(M⁻¹)_jj| ≤ maxDiag,
// 1/‖z_j‖ ≤ maxIzn and |p_j| ≤ pn·maxIzn, |q_j| ≤ qn·maxIzn (pn and qn bound
// |p_i|·‖z_i‖ and |q_i|·‖z_i‖; qn by qnBound), doubled for the rounding of
// both.
func (b *Block) swapErrBound(x *Cand) float64 {
	o, dm, z := b.fast, b.maxDiag, b.maxIzn
	pqz := x.pn * b.qnBound(x) * z // bounds pn·|q_j| and qn·|p_j|
	return 2 * (eps*(x.smag*dm+pqz*z) + x.serr*dm + o.gamma*z*(math.Abs(x.s)*o.einv*z+2*pqz))
}

// PairsBelow reports whether every value PairSwapValue would return for
// the items in columns cx and cy (in that order), S − {S[a], S[b]} + {x, y}
// for each pair of positions a < b, has Log ≤ L; false means it could not
// be proved. Each pair is tested with its determinant and pairErrBound
// first, and with pairRatio's own bound only when that does not suffice:
// O(d + k²) in all.
func (b *Block) PairsBelow(cx, cy int, L float64) bool {
	o, x := b.cand(cx)
	_, y := b.cand(cy)
	t := b.threshold(L)
	if x.dup >= 0 || y.dup >= 0 || t == 0 {
		return false
	}
	if x.item == y.item {
		return true // every value is zero
	}
	b.ensureQ()
	b.colRows(cx, cy)
	o.pairSigma(x, y)
	bound := b.pairErrBound(cx, cy)
	k := len(o.items)
	margin, half := blockSafety*bound, t/2
	for a := 0; a < k; a++ {
		for bb := a + 1; bb < k; bb++ {
			// As SwapsBelow: hi ≤ t/2 is below's common case.
			if r := o.pairDet(x, y, a, bb); r+margin <= half || below(r, bound, t) {
				continue // below with a larger bound: below with pairRatio's own
			}
			b.ensureQn(x)
			b.ensureQn(y)
			if r, _, err := o.pairRatio(x, y, a, bb); !below(r, err, t) {
				return false
			}
		}
	}
	return true
}

// colRows sets the rows of two columns of a model's block (views of the
// model's rows; ScoreBlock sets only δ), for pairSigma; for the columns of
// ScoreBlockItems it computes b_tᵀC where the block left it out.
func (b *Block) colRows(cx, cy int) {
	o := b.fast
	if m := o.m; m != nil {
		x, y := &b.cands[cx], &b.cands[cy]
		x.r, y.r = modelRow(m, x.item), modelRow(m, y.item)
		return
	}
	for _, c := range [2]int{cx, cy} {
		if !b.bcOK[c] {
			z := &b.cands[c]
			ndpp.RowTimesC(z.r.bc, z.r.b, o.kern.C)
			b.bcOK[c] = true
		}
	}
}

// pairErrBound returns a bound on the err of pairRatio for the items of
// columns cx, cy (their Σ computed) that holds for every pair of positions,
// O(1). With every top-row entry (rows a, b: M⁻¹, p) of magnitude at most
// MT and error bound at most ET, and every bottom-row entry (−q, s, Σ) at
// most MB and EB (|p_j| ≤ pn·maxIzn and |q_j| ≤ qn·maxIzn as in
// swapErrBound), each of the six Laplace terms of pairRatio has
// tops(mag + e)·bots(mag + e) − tops(mag)·bots(mag) ≤ DT·BE + T·DB with
// T = 2MT², TE = 2(MT + ET)², DT = 4ET(MT + ET) and likewise B, BE, DB; so
// err ≤ 6(DT·BE + T·DB) + 8ε·6·TE·BE, plus the rounding of the two
// expansions (12ε·6·TE·BE), doubled for the rounding of this bound. Since
// below is monotone in the error bound, a pair below with it is below with
// pairRatio's.
func (b *Block) pairErrBound(cx, cy int) float64 {
	o, x, y := b.fast, &b.cands[cx], &b.cands[cy]
	g, z := o.gamma, b.maxIzn
	qn := max(b.qnBound(x), b.qnBound(y))
	et := max(g*o.einv*z*z, g*max(x.pn, y.pn)*z)
	mt := max(b.maxInv, max(x.pn, y.pn)*z)
	eb := max(g*qn*z, x.serr, x.sxyErr, x.syxErr, y.serr)
	mb := max(qn*z, x.smag, x.sxyMag, x.syxMag, y.smag)
	dt, db := 4*et*(mt+et), 4*eb*(mb+eb)
	tt := 2 * mt * mt
	te, be := 2*(mt+et)*(mt+et), 2*(mb+eb)*(mb+eb)
	return 2 * (6*(dt*be+tt*db) + 20*eps*6*te*be)
}

// AddBelow reports whether the value AddValue would return for the item in
// column c, S ∪ {x}, has Log ≤ L; false means it could not be proved. O(1).
func (b *Block) AddBelow(c int, L float64) bool {
	_, x := b.cand(c)
	t := b.threshold(L)
	if x.dup >= 0 || t == 0 {
		return false
	}
	return below(x.s, x.serr, t)
}

// NewBlock returns a Block for up to size items; Naive never scores blocks.
func (o *Naive) NewBlock(size int) *Block {
	if size < 1 {
		panic(fmt.Sprintf("detcache: NewBlock size %d; need at least 1", size))
	}
	return &Block{owner: o}
}

// ScoreBlock returns false: Naive computes every value with a fresh LU and
// has no products to share across a block.
func (o *Naive) ScoreBlock(b *Block, items []int) bool { return o.noBlock(b, len(items)) }

// ScoreBlockItems returns false, as ScoreBlock.
func (o *Naive) ScoreBlockItems(b *Block, items []Item) bool { return o.noBlock(b, len(items)) }

func (o *Naive) noBlock(b *Block, n int) bool {
	if b == nil || b.owner != Oracle(o) {
		panic("detcache: Block was created by another oracle")
	}
	b.version, b.n, b.scored = o.version, n, false
	return false
}
