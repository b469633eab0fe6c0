package detcache

import (
	"fmt"
	"math"

	"github.com/ndpp-go/ndpp/internal/f64"
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
	// own first-order bound of the exact ratio, and Prepare's bound err' is
	// the same formula on its own inputs. The block evaluates it with the
	// inputs that are rounding noise where they vanish (s, p_j, q_j) raised
	// by twice their error bounds (swapErr, pairErr), so that they are at
	// least Prepare's: err' ≤ 2·err (the tests check this), and Prepare's
	// ratio lies within 3·err of the block's.
	blockSafety = 4
	// blockRel is the relative margin that covers the rounding of exp,
	// log and the additions that turn a ratio into a Value.
	blockRel = 1e-9
)

// Block is a block of arriving items scored together against an oracle's
// current solution: see Oracle.ScoreBlock. It belongs to the oracle that
// created it and is valid until that oracle's solution changes.
//
// Between accepted changes the arriving items of the online algorithms are
// scored against the same S, so their products can be shared: ScoreBlock
// computes u, w, p and q for a block of items with matrix–matrix products
// (internal/f64.GemmNN on both backends, with S's rows and M⁻¹ copied
// transposed once per change of S, so that every product takes rows of k
// entries whole), then each item's Schur complement and error scales with
// the code Prepare uses. The Block's SwapsBelow (SwapsBelowFrom for a run
// of columns), PairsBelow and AddBelow then prove that every value
// SwapValues, PairSwapValue or AddValue would return for an item is at
// most a threshold L, from the same ratios (swapRatio, pairRatio, s) and
// the same error bounds as the values. With r' and err' the ratio and bound
// the one-item path would compute, the block's r and err satisfy
// |r' − r| ≤ 3·err and err' ≤ 2·err to first order (the two are the same
// formulas evaluated in different orders, the block's with s, p and q
// raised by twice their own error bounds, so that rounding noise where
// they vanish cannot make Prepare's larger; the tests measure it), and with
// t = exp(L − log det M) reduced by a relative 10⁻⁹ for the rounding of
// exp, log and the sums, a ratio is below when hi = r + 4·err ≤ t and
// either the one-item path would surely take its value from the identity
// (2·err ≤ FallbackErr·(r − 4·err)) or hi ≤ t/2, which leaves room for a
// fresh LU's error and for the drift of log det M when it would fall back.
// Each test first tries a bound on err that holds for all positions
// (swaps) or pairs of positions (pairs), O(1) to form, and computes a
// ratio's own bound only when that does not suffice; since the test is
// monotone in the bound, the answers are those of the own bounds. Naive
// never scores blocks, and Fast does not in direct mode. Block scoring
// counts no evaluations: a caller that skips an item counts those it did
// not make. It allocates nothing. A vector block tests its items' values
// as ItemCheck does (a failing column proves nothing), so that a caller
// that validates what it observes need not validate before scoring.
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
	cb         []float64 // n×cap scratch: B_blk (B_SᵀC)ᵀ, before u and w
	vb, bb     []float64
	bcb        []float64 // n×d rows b_tᵀC of vector items (ScoreBlockItems)
	bcOK       []bool    // the column's row of bcb is computed (ScoreBlockItems)
	lttErr     []float64 // bound added to the column's serr for its L_tt (ScoreBlockItems)
	// The columns' scalars, one entry per column (the tests of a run of
	// columns read these and touch a column's Cand only when its first
	// test does not decide; see col): item, δ, position in S (−1 if
	// none), L_tt and ‖z_t‖, and serr; s, smag, pn (with ‖z_t‖ added), w1
	// and zp are the rows of sch.
	item    []int
	delta   []float64
	dup     []int
	zt      []float64 // ‖z_t‖ per column
	ltt     []float64 // L_tt per column, for f64.SchurRows
	serr    []float64
	sch     []float64 // f64.SchurRows's results: five rows of the block's size
	gen     uint64    // incremented by every ScoreBlock
	candGen []uint64  // cands[c] holds column c's scalars when candGen[c] == gen
	// Transposed copies for the products (see transposed): V_Sᵀ and
	// (B_SᵀC)ᵀ (d×cap) and (M⁻¹)ᵀ (cap×cap), of the oracle's version tVer
	// when tOK.
	vsT, bcsT, invT []float64
	diag            []float64 // the diagonal of M⁻¹ (cap)
	tVer            uint64
	tOK             bool
	// PairsBelow's per-position terms (cap each)
	px, py, nqx, nqy, b13, b12 []float64
	pr                         []float64 // one position's pair determinants (cap)
	// max |(M⁻¹)_ij|, max |(M⁻¹)_jj|, max 1/‖z_{S_j}‖ and
	// max ‖z_{S_i}‖|(M⁻¹)_ij|‖z_{S_j}‖ (for the bounds below)
	maxInv, maxDiag, maxIzn, maxEinv float64
	sw                               [4]float64 // swapErrBound's factors c₁…c₄
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
		u: make([]float64, size*c), w: make([]float64, size*c), cb: make([]float64, size*c),
		p: make([]float64, size*c), q: make([]float64, size*c),
		vb: make([]float64, size*d), bb: make([]float64, size*d), zt: make([]float64, size),
		ltt: make([]float64, size), sch: make([]float64, 5*size),
		item: make([]int, size), delta: make([]float64, size), dup: make([]int, size),
		serr: make([]float64, size), candGen: make([]uint64, size),
		vsT: make([]float64, d*c), bcsT: make([]float64, d*c), invT: make([]float64, c*c),
		diag: make([]float64, c),
		px:   make([]float64, c), py: make([]float64, c), nqx: make([]float64, c), nqy: make([]float64, c),
		b13: make([]float64, c), b12: make([]float64, c), pr: make([]float64, c)}
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
// size), the products Prepare computes, by matrix–matrix products
// (internal/f64.GemmNN, O(nkd + nk²) for n items): with the block's rows
// stacked in V_blk and B_blk,
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
	nb, d, m := len(items), o.d, o.m
	inS := o.inSMask()
	vRows, bRows, bcRows, _ := m.Rows()
	if nb > 0 && consecutive(items) && items[0] >= 0 && items[nb-1] < m.N() {
		// A run of the model's items: the block's rows are views of the
		// model's, read in one sweep.
		lo, hi := items[0]*d, (items[nb-1]+1)*d
		vb, bb := vRows[lo:hi], bRows[lo:hi]
		rowDots(d, vb, bb, bcRows[lo:hi], b.ltt[:nb], b.zt[:nb])
		for c, it := range items {
			o.finishCol(b, c, it, m.ItemDiag(it), inS)
		}
		o.scoreBlock(b, vb, bb)
		return true
	}
	vb, bb := b.vb[:nb*d], b.bb[:nb*d]
	for c, it := range items {
		checkItem(m, it)
		lo, hi := it*d, (it+1)*d
		v, bv := vRows[lo:hi:hi], bRows[lo:hi:hi]
		o.startColumn(b, c, it, m.ItemDiag(it), inS, v, bv, bcRows[lo:hi:hi])
		if len(o.items) > 0 {
			copy(vb[c*d:(c+1)*d], v)
			copy(bb[c*d:(c+1)*d], bv)
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
// column's error bound; b_tᵀC is then computed only for the columns of a
// pair test (f64.GemvT: the same values as PrepareItem's to rounding, which
// the bounds cover as they cover the products' other orders). A column whose item fails ndpp.ItemCheck's
// tests of its values (a NaN or an infinity, δ or the scale
// (‖z‖² + δ)·(1 + d·max|C|) beyond ndpp.MaxKernelScale) proves nothing:
// its tests return false, so a caller that validates every item it goes
// on to observe (the one-item path does) may score items before
// validating them. It panics for vectors of the wrong length.
func (o *Fast) ScoreBlockItems(b *Block, items []ndpp.Item) bool {
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
		lo, hi := c*d, (c+1)*d
		rv, rb, rbc := vb[lo:hi:hi], bb[lo:hi:hi], bcb[lo:hi:hi]
		vv := copySumSq(rv, it.V)
		bsq := vv
		if it.B != nil {
			bsq = copySumSq(rb, it.B)
		} else {
			copy(rb, rv)
		}
		// colRows sets the Cand's views of the block's rows for the pair
		// tests.
		switch {
		case it.FromModel():
			copy(rbc, it.BC())
			b.bcOK[c], b.lttErr[c] = true, 0
			o.startColumn(b, c, it.ID, it.Delta, inS, rv, rb, rbc)
		case o.skew:
			b.bcOK[c] = false
			o.startCol(b, c, it.ID, it.Delta, inS, vv, vv+bsq)
			b.lttErr[c] = o.skewErr * bsq
		default:
			ndpp.RowTimesC(rbc, rb, o.kern.C)
			b.bcOK[c], b.lttErr[c] = true, 0
			o.startColumn(b, c, it.ID, it.Delta, inS, rv, rb, rbc)
		}
		if !((vv+bsq+it.Delta)*o.scale <= ndpp.MaxKernelScale) {
			// ndpp.ItemCheck's test of the values (the same sums): a NaN L_tt
			// and ‖z_t‖ make every bound of the column NaN.
			b.ltt[c], b.zt[c] = math.NaN(), math.NaN()
		}
	}
	o.scoreBlock(b, vb, bb)
	if o.skew {
		for c, e := range b.serr[:nb] {
			// serr = 0 only where schur proved s exactly zero (the rank
			// bound), whatever L_tt is.
			if e != 0 {
				b.serr[c] = e + b.lttErr[c]
			}
		}
	}
	return true
}

// copySumSq copies src to dst (as long) and returns Σ x², summed as
// ndpp.ItemCheck sums it (two at a time), in the same pass.
func copySumSq(dst, src []float64) float64 {
	dst = dst[:len(src)]
	var s0, s1 float64
	i := 0
	for ; i+2 <= len(src); i += 2 {
		x0, x1 := src[i], src[i+1]
		dst[i], dst[i+1] = x0, x1
		s0 += x0 * x0
		s1 += x1 * x1
	}
	if i < len(src) {
		x := src[i]
		dst[i] = x
		s0 += x * x
	}
	return s0 + s1
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

// startColumn starts column c of a block for item it with diagonal entry
// delta, from its vectors v, b and bᵀC: see finishCol.
func (o *Fast) startColumn(b *Block, c, it int, delta float64, inS uint64, v, bv, bc []float64) {
	rowDots(o.d, v, bv, bc, b.ltt[c:c+1], b.zt[c:c+1])
	o.finishCol(b, c, it, delta, inS)
}

// startCol starts column c from L_tt and ‖z_t‖² without the item's δ: see
// finishCol.
func (o *Fast) startCol(b *Block, c, it int, delta float64, inS uint64, ltt, zz float64) {
	b.ltt[c], b.zt[c] = ltt, zz
	o.finishCol(b, c, it, delta, inS)
}

// finishCol starts column c, whose b.ltt and b.zt hold L_tt and ‖z_t‖²
// without the item's δ (added here with a diagonal): its item, δ,
// position in S, L_tt and ‖z_t‖. The Cand is set from these when a test
// first needs it (col).
func (o *Fast) finishCol(b *Block, c, it int, delta float64, inS uint64) {
	ltt, zz := b.ltt[c], b.zt[c]
	if o.hasDiag {
		ltt += delta
		zz += delta
	}
	b.item[c], b.delta[c], b.dup[c] = it, delta, o.posInS(it, inS)
	b.ltt[c], b.zt[c] = ltt, math.Sqrt(zz)
}

// scoreBlock computes the products of the block's columns, started by
// startCol, with their v and b rows stacked in vb and bb (n×d), and the
// columns' Schur complements and error scales (setSchur's, column by
// column in the block's arrays).
func (o *Fast) scoreBlock(b *Block, vb, bb []float64) {
	nb := b.n
	k, d, ld := len(o.items), o.d, o.cap
	if k > 0 && nb > 0 {
		vsT, bcsT, invT := b.transposed()
		// a = V_blk V_Sᵀ in u, c = B_blk (B_SᵀC)ᵀ in cb, then u = a + c and
		// w = a − c, each entry rounded once: y + (±1)·x is y ± x exactly
		// rounded, fused or not (the entries between rows, when ld > k,
		// are never read).
		f64.GemmNN(nb, k, d, vb, d, vsT, ld, b.u, ld)
		f64.GemmNN(nb, k, d, bb, d, bcsT, ld, b.cb, ld)
		n := (nb-1)*ld + k
		copy(b.w[:n], b.u[:n])
		f64.AxpyUnitary(1, b.cb[:n], b.u[:n])
		f64.AxpyUnitary(-1, b.cb[:n], b.w[:n])
		f64.GemmNN(nb, k, k, b.u, ld, invT, ld, b.p, ld)
	}
	// Every column's schur at once, with schur's bits.
	size := len(b.cands)
	f64.SchurRows(nb, k, b.ltt, b.w, b.p, ld, o.znorm, o.izn, b.sch, size)
	o.setSchurCols(b)
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
	dm, z, g := b.maxDiag, b.maxIzn, o.gamma
	f := 1 + 2*g
	b.sw = [4]float64{2 * eps * dm, 2 * dm, 2 * g * z * o.einv * z, 2 * (eps*f*f + 2*g*f) * z * z}
	b.gen++
	b.scored = true
}

// setSchurCols is setSchur for every column of the block, from
// f64.SchurRows's results in b.sch, in the block's arrays: s, smag, pn and
// w1, zp stay in the rows of sch (pn with ‖z_t‖ added), serr in b.serr.
func (o *Fast) setSchurCols(b *Block) {
	nb, size := b.n, len(b.cands)
	sch := b.sch
	s, mag, pn := sch[:nb], sch[size:size+nb], sch[2*size:2*size+nb]
	w1, zp := sch[3*size:3*size+nb], sch[4*size:4*size+nb]
	zt, serr, delta := b.zt[:nb], b.serr[:nb], b.delta[:nb]
	full := len(o.items) == 2*o.d
	g, cw := o.gamma, o.cw
	for c := range s {
		z := zt[c]
		pn[c] += z
		if full && o.rankBound(true, delta[c]) {
			// See setSchur: s is exactly zero.
			s[c], mag[c], serr[c] = 0, 0, 0
			continue
		}
		serr[c] = eps*mag[c] + g*pn[c]*w1[c] + eps*cw*z*(z+zp[c])
	}
}

// col returns column c's Cand with the column's scalars, setting it from
// the block's arrays the first time it is asked for after a ScoreBlock
// (as Prepare's begin and setSchur set a Cand; its q error scale qn is
// computed on demand, see ensureQn).
func (b *Block) col(c int) *Cand {
	x := &b.cands[c]
	if b.candGen[c] == b.gen {
		return x
	}
	o, size := b.fast, len(b.cands)
	o.begin(x, b.item[c], b.dup[c])
	x.r = row{delta: b.delta[c]}
	x.hasUW = true
	x.ltt, x.logz2 = b.ltt[c], math.NaN() // only the value methods' zero rule reads logz2
	x.zt, x.zp = b.zt[c], b.sch[4*size+c]
	x.pn, x.w1 = b.sch[2*size+c], b.sch[3*size+c]
	x.s, x.smag, x.serr = b.sch[c], b.sch[size+c], b.serr[c]
	x.qn = math.NaN()
	b.candGen[c] = b.gen
	return x
}

// transposed returns V_Sᵀ and (B_SᵀC)ᵀ (d×k) and (M⁻¹)ᵀ (k×k), row
// stride cap, for the block's products: rows of k entries that the
// products take whole; and it sets b.diag to the diagonal of M⁻¹. They
// are copied from the oracle once per version (every change of S, M⁻¹ or
// the rows bumps it), O(kd + k²).
func (b *Block) transposed() (vsT, bcsT, invT []float64) {
	o := b.fast
	if !b.tOK || b.tVer != o.version {
		k, d, ld := len(o.items), o.d, o.cap
		for i := 0; i < k; i++ {
			v, bc := o.vs[i*d:(i+1)*d], o.bcs[i*d:(i+1)*d]
			for l := range v {
				b.vsT[l*ld+i], b.bcsT[l*ld+i] = v[l], bc[l]
			}
			for j, x := range o.inv[i*ld : i*ld+k] {
				b.invT[j*ld+i] = x
			}
			b.diag[i] = o.inv[i*ld+i]
		}
		b.tVer, b.tOK = o.version, true
	}
	return b.vsT, b.bcsT, b.invT
}

// rowDots sets, for the len(ltt) rows of d entries of v, b and bc (rows
// one after another), ltt[r] = v·v + bc·b and zz[r] = v·v + b·b (the
// block's L_tt and ‖z‖² without δ), each dot product summed two terms at a
// time (even and odd entries, then added), in one pass over the rows.
func rowDots(d int, v, b, bc, ltt, zz []float64) {
	n := len(ltt)
	if n == 0 {
		return
	}
	v, b, bc, zz = v[:n*d], b[:n*d], bc[:n*d], zz[:n]
	for r := range ltt {
		rv, rb, rbc := v[:d], b[:d], bc[:d]
		v, b, bc = v[d:], b[d:], bc[d:]
		rb, rbc = rb[:len(rv)], rbc[:len(rv)]
		var vv, vv1, bb, bb1, bcb, bcb1 float64
		i := 0
		for ; i+2 <= len(rv); i += 2 {
			x0, x1, y0, y1 := rv[i], rv[i+1], rb[i], rb[i+1]
			vv += x0 * x0
			vv1 += x1 * x1
			bb += y0 * y0
			bb1 += y1 * y1
			bcb += rbc[i] * y0
			bcb1 += rbc[i+1] * y1
		}
		if i < len(rv) {
			x, y := rv[i], rb[i]
			vv += x * x
			bb += y * y
			bcb += rbc[i] * y
		}
		vv += vv1
		ltt[r], zz[r] = vv+(bcb+bcb1), vv+(bb+bb1)
	}
}

// ensureQ computes Qᵀ = Wᵀ M⁻¹ for the block's columns, once per
// ScoreBlock: only the swap and pair tests need it. The error scale of q
// (qScale) is computed per column when a test needs the exact bound
// (ensureQn, on the column's Cand); the first tests use a bound on it
// (qnBound).
func (b *Block) ensureQ() {
	if b.qReady {
		return
	}
	o, nb, k, ld := b.fast, b.n, len(b.fast.items), b.fast.cap
	if k > 0 && nb > 0 {
		f64.GemmNN(nb, k, k, b.w, ld, o.inv, ld, b.q, ld)
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
func (b *Block) qnBound(x *Cand) float64 { return b.qnBoundOf(x.w1, x.zt) }

// qnBoundOf is qnBound for a column with w1 and ‖z_t‖ = zt.
func (b *Block) qnBoundOf(w1, zt float64) float64 { return 2*w1*b.maxEinv + zt }

// consecutive reports whether items is a run of consecutive indices.
func consecutive(items []int) bool {
	for i := 1; i < len(items); i++ {
		if items[i] != items[i-1]+1 {
			return false
		}
	}
	return true
}

// check panics unless column c of a block scored against the current S
// exists.
func (b *Block) check(c int) {
	switch {
	case !b.scored:
		panic("detcache: Block was not scored (ScoreBlock returned false or was not called)")
	case b.fast.version != b.version:
		panic("detcache: Block is stale: the solution changed after ScoreBlock")
	case c < 0 || c >= b.n:
		panic(fmt.Sprintf("detcache: Block column %d out of range [0, %d)", c, b.n))
	}
}

// cand returns column c's Cand of a block scored against the current S.
func (b *Block) cand(c int) (*Fast, *Cand) {
	b.check(c)
	return b.fast, b.col(c)
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
// with r' ≤ hi = r + blockSafety·err and bound err' ≤ 2·err (see
// blockSafety); its value is then
//
//   - from the identity when err' ≤ FallbackErr·r', which is certain when
//     2·err ≤ FallbackErr·(r − blockSafety·err): then hi ≤ t suffices;
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
// with its ratio and swapErrBound first, and with swapErr's bound only
// when that does not suffice: O(k).
func (b *Block) SwapsBelow(c int, L float64) bool {
	b.check(c)
	t := b.threshold(L)
	if t == 0 {
		return false
	}
	b.ensureQ()
	return b.swapsBelow(c, t)
}

// SwapsBelowFrom returns the first column c ≥ from for which SwapsBelow(c,
// L) is false, or Len() when there is none: the swap tests of a run of
// columns in one call, with the same answers. It panics for from out of
// range.
func (b *Block) SwapsBelowFrom(from int, L float64) int {
	b.check(from)
	t := b.threshold(L)
	if t == 0 {
		return from
	}
	b.ensureQ()
	o, ld, size := b.fast, b.fast.cap, len(b.cands)
	k := len(o.items)
	// swapsBelow's first test (with swapErrBound) for each column in
	// turn, with the block's factors held; swapsBelow decides a column it
	// does not.
	sw0, sw1, sw2, sw3, me := b.sw[0], b.sw[1], b.sw[2], b.sw[3], b.maxEinv
	half := t / 2
	diag := b.diag[:k]
	sch := b.sch
	s, smag, pn, w1 := sch[:b.n], sch[size:size+b.n], sch[2*size:2*size+b.n], sch[3*size:3*size+b.n]
	serr, zt, dup := b.serr[:b.n], b.zt[:b.n], b.dup[:b.n]
	for c := from; c < b.n; c++ {
		if dup[c] >= 0 {
			return c
		}
		// swapErrBound(c), in its operations and order
		e := serr[c]
		sc := s[c]
		sa := math.Abs(sc) + 2*e
		bound := sw0*smag[c] + sw1*e + sw2*sa + sw3*(pn[c]*(2*w1[c]*me+zt[c]))
		margin := blockSafety * bound
		p, q := b.p[c*ld:c*ld+k], b.q[c*ld:c*ld+k]
		p, q = p[:len(diag)], q[:len(diag)]
		easy := true
		for j, m := range diag {
			if !(sc*m+p[j]*q[j]+margin <= half) {
				easy = false
				break
			}
		}
		if !easy && !b.swapsBelow(c, t) {
			return c
		}
	}
	return b.n
}

// swapsBelow is SwapsBelow for column c and the ratio threshold t > 0 of
// L (Q computed). Its first test reads the block's arrays only; the
// column's Cand is set up (col) when that test does not decide.
func (b *Block) swapsBelow(c int, t float64) bool {
	if b.dup[c] >= 0 {
		return false
	}
	bound := b.swapErrBound(c)
	// below(r, bound, t) holds when hi = r + blockSafety·bound ≤ t/2 (the
	// common case: a test that rarely fails, with no other work per
	// position); the full test runs only when some position fails it. The
	// ratio is swapDet's, with (M⁻¹)_jj from b.diag.
	o, ld := b.fast, b.fast.cap
	k := len(o.items)
	margin, half := blockSafety*bound, t/2
	s, diag := b.sch[c], b.diag[:k]
	p, q := b.p[c*ld:c*ld+k], b.q[c*ld:c*ld+k]
	p, q = p[:len(diag)], q[:len(diag)]
	easy := true
	for j, m := range diag {
		if !(s*m+p[j]*q[j]+margin <= half) {
			easy = false
			break
		}
	}
	if easy {
		return true
	}
	x := b.col(c)
	for j := range o.items {
		r := o.swapDet(x, j)
		if below(r, bound, t) {
			continue // below with a larger bound: below with swapErr's
		}
		b.ensureQn(x)
		if !below(r, b.swapErr(x, j), t) {
			return false
		}
	}
	return true
}

// swapErr returns the error bound SwapsBelow gives the swap ratio of
// column x at position j when swapErrBound does not suffice (x's qn
// computed): swapRatio's bound with |s|, |p_j| and |q_j| raised by twice
// their own error bounds (serr, γ·pn/‖z_j‖, γ·qn/‖z_j‖). Prepare's s, p_j
// and q_j differ from the block's by at most about those sums, so
// Prepare's bound, the same formula on its own values, is at most this one
// to first order even where s, p_j or q_j vanish and both computations
// return rounding noise of different sizes.
func (b *Block) swapErr(x *Cand, j int) float64 {
	o := b.fast
	g, iz := o.gamma, o.izn[j]
	am := math.Abs(o.inv[j*o.cap+j])
	s := math.Abs(x.s) + 2*x.serr
	p := math.Abs(x.p[j]) + 2*g*x.pn*iz
	q := math.Abs(x.q[j]) + 2*g*x.qn*iz
	return eps*(x.smag*am+p*q) + x.serr*am + g*iz*(s*o.einv*iz+x.pn*q+x.qn*p)
}

// swapErrBound returns a bound on swapErr(x, j) that holds for every
// position j, O(1): swapErr's bound with |(M⁻¹)_jj| ≤ maxDiag, 1/‖z_j‖ ≤
// maxIzn and the raised |p_j| ≤ pn·maxIzn·f, |q_j| ≤ qn·maxIzn·f (pn and qn
// bound |p_i|·‖z_i‖ and |q_i|·‖z_i‖; qn by qnBound; f = 1 + 2γ covers the
// raise), doubled for the rounding of both:
//
//	2·(ε·(smag·dm + pqz·z·f) + serr·dm + γ·z·((|s| + 2·serr)·einv·z + 2·pqz)),
//	pqz = pn·qnBound·z·f,
//
// evaluated as c₁·smag + c₂·serr + c₃·(|s| + 2·serr) + c₄·pn·qnBound with
// the factors of the block's S (b.sw, set by scoreBlock), which rounds
// differently and is covered by the same doubling.
func (b *Block) swapErrBound(c int) float64 {
	size := len(b.cands)
	serr := b.serr[c]
	s := math.Abs(b.sch[c]) + 2*serr
	pn, w1 := b.sch[2*size+c], b.sch[3*size+c]
	return b.sw[0]*b.sch[size+c] + b.sw[1]*serr + b.sw[2]*s + b.sw[3]*(pn*b.qnBoundOf(w1, b.zt[c]))
}

// PairsBelow reports whether every value PairSwapValue would return for
// the items in columns cx and cy (in that order), S − {S[a], S[b]} + {x, y}
// for each pair of positions a < b, has Log ≤ L; false means it could not
// be proved. Each pair is tested with its determinant and pairErrBound
// first, and with pairErr's bound only when that does not suffice:
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
	k, ld := len(o.items), o.cap
	margin, half := blockSafety*bound, t/2
	// pairDet(x, y, a, bb) for every pair, in its operations and order (the
	// same bits: f64.Det4Rows), with what depends on one position only
	// computed once per position: the entries of p and −q, and the bottom
	// minors b13, b12 (b03, b02 for the first position).
	_, _, invT := b.transposed()
	diag := b.diag[:k]
	px, py, nqx, nqy := b.px[:k], b.py[:k], b.nqx[:k], b.nqy[:k]
	b13s, b12s := b.b13[:k], b.b12[:k]
	sx, sy, sxy, syx := x.s, y.s, x.sxy, x.syx
	for j := range px {
		px[j], py[j], nqx[j], nqy[j] = x.p[j], y.p[j], -x.q[j], -y.q[j]
		b13s[j] = nqx[j]*sy - sxy*nqy[j]
		b12s[j] = nqx[j]*syx - sx*nqy[j]
	}
	b23 := sx*sy - sxy*syx
	for a := 0; a < k; a++ {
		b03, b02 := b13s[a], b12s[a]
		rowA, colA := o.inv[a*ld:a*ld+k], invT[a*ld:a*ld+k] // m1, m4
		// pairDet(x, y, a, bb) for every bb > a at once.
		sc := [8]float64{diag[a], px[a], py[a], nqx[a], nqy[a], b03, b02, b23}
		lo := a + 1
		rs := b.pr[lo:k]
		f64.Det4Rows(rs, &sc, rowA[lo:], colA[lo:], diag[lo:], px[lo:], py[lo:], nqx[lo:], nqy[lo:], b13s[lo:], b12s[lo:])
		for i, r := range rs {
			// As SwapsBelow: hi ≤ t/2 is below's common case.
			if r+margin <= half || below(r, bound, t) {
				continue // below with a larger bound: below with pairErr's
			}
			b.ensureQn(x)
			b.ensureQn(y)
			if !below(r, b.pairErr(x, y, a, lo+i), t) {
				return false
			}
		}
	}
	return true
}

// colRows sets the rows of two columns, for pairSigma (ScoreBlock and
// ScoreBlockItems set only δ): views of a model's rows, or of the block's
// copies for the columns of ScoreBlockItems, whose b_tᵀC it computes where
// the block left it out.
func (b *Block) colRows(cx, cy int) {
	o := b.fast
	if m := o.m; m != nil {
		x, y := &b.cands[cx], &b.cands[cy]
		x.r, y.r = modelRow(m, x.item), modelRow(m, y.item)
		return
	}
	d := o.d
	for _, c := range [2]int{cx, cy} {
		z := &b.cands[c]
		lo, hi := c*d, (c+1)*d
		z.r.v, z.r.b, z.r.bc = b.vb[lo:hi:hi], b.bb[lo:hi:hi], b.bcb[lo:hi:hi]
		if !b.bcOK[c] {
			f64.GemvT(o.kern.C, d, z.r.b, z.r.bc)
			b.bcOK[c] = true
		}
	}
}

// pairErr returns the error bound PairsBelow gives the pair ratio of
// columns x, y at positions a, b when pairErrBound does not suffice (the
// qn of both computed, their Σ too): pairRatio's bound with the magnitudes
// of the entries p and q raised by twice their own error bounds, as
// swapErr does (those of M⁻¹ are the oracle's, and those of s and Σ are
// already the magnitudes of the terms summed).
func (b *Block) pairErr(x, y *Cand, a, bb int) float64 {
	o := b.fast
	ld := o.cap
	g, ia, ib := o.gamma, o.izn[a], o.izn[bb]
	ge := g * o.einv
	e0, e1, e2, e3 := ge*ia*ia, ge*ia*ib, g*x.pn*ia, g*y.pn*ia
	e4, e5, e6, e7 := ge*ib*ia, ge*ib*ib, g*x.pn*ib, g*y.pn*ib
	e8, e9, e10, e11 := g*x.qn*ia, g*x.qn*ib, x.serr, x.sxyErr
	e12, e13, e14, e15 := g*y.qn*ia, g*y.qn*ib, x.syxErr, y.serr
	a0, a1 := math.Abs(o.inv[a*ld+a]), math.Abs(o.inv[a*ld+bb])
	a2, a3 := math.Abs(x.p[a])+2*e2, math.Abs(y.p[a])+2*e3
	a4, a5 := math.Abs(o.inv[bb*ld+a]), math.Abs(o.inv[bb*ld+bb])
	a6, a7 := math.Abs(x.p[bb])+2*e6, math.Abs(y.p[bb])+2*e7
	a8, a9, a10, a11 := math.Abs(x.q[a])+2*e8, math.Abs(x.q[bb])+2*e9, x.smag, x.sxyMag
	a12, a13, a14, a15 := math.Abs(y.q[a])+2*e12, math.Abs(y.q[bb])+2*e13, x.syxMag, y.smag
	size := expansionAbs(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15)
	sizeE := expansionAbs(
		a0+e0, a1+e1, a2+e2, a3+e3, a4+e4, a5+e5, a6+e6, a7+e7,
		a8+e8, a9+e9, a10+e10, a11+e11, a12+e12, a13+e13, a14+e14, a15+e15)
	return (sizeE - size) + 8*eps*size
}

// pairErrBound returns a bound on pairErr for the items of columns cx, cy
// (their Σ computed) that holds for every pair of positions, O(1). With
// every top-row entry (rows a, b: M⁻¹, p) of magnitude at most MT and
// error bound at most ET, and every bottom-row entry (−q, s, Σ) at most MB
// and EB (the raised |p_j| ≤ pn·maxIzn·f and |q_j| ≤ qn·maxIzn·f as in
// swapErrBound), each of the six Laplace terms of pairRatio has
// tops(mag + e)·bots(mag + e) − tops(mag)·bots(mag) ≤ DT·BE + T·DB with
// T = 2MT², TE = 2(MT + ET)², DT = 4ET(MT + ET) and likewise B, BE, DB; so
// err ≤ 6(DT·BE + T·DB) + 8ε·6·TE·BE, plus the rounding of the two
// expansions (12ε·6·TE·BE), doubled for the rounding of this bound. Since
// below is monotone in the error bound, a pair below with it is below with
// pairErr's.
func (b *Block) pairErrBound(cx, cy int) float64 {
	o, x, y := b.fast, &b.cands[cx], &b.cands[cy]
	g, z := o.gamma, b.maxIzn
	f := 1 + 2*g
	qn := max(b.qnBound(x), b.qnBound(y))
	et := max(g*o.einv*z*z, g*max(x.pn, y.pn)*z)
	mt := max(b.maxInv, max(x.pn, y.pn)*z*f)
	eb := max(g*qn*z, x.serr, x.sxyErr, x.syxErr, y.serr)
	mb := max(qn*z*f, x.smag, x.sxyMag, x.syxMag, y.smag)
	dt, db := 4*et*(mt+et), 4*eb*(mb+eb)
	tt := 2 * mt * mt
	te, be := 2*(mt+et)*(mt+et), 2*(mb+eb)*(mb+eb)
	return 2 * (6*(dt*be+tt*db) + 20*eps*6*te*be)
}

// AddBelow reports whether the value AddValue would return for the item in
// column c, S ∪ {x}, has Log ≤ L; false means it could not be proved. O(1).
func (b *Block) AddBelow(c int, L float64) bool {
	b.check(c)
	t := b.threshold(L)
	if b.dup[c] >= 0 || t == 0 {
		return false
	}
	return below(b.sch[c], b.serr[c], t)
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
func (o *Naive) ScoreBlockItems(b *Block, items []ndpp.Item) bool { return o.noBlock(b, len(items)) }

func (o *Naive) noBlock(b *Block, n int) bool {
	if b == nil || b.owner != Oracle(o) {
		panic("detcache: Block was created by another oracle")
	}
	b.version, b.n, b.scored = o.version, n, false
	return false
}
