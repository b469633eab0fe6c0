package detcache

import (
	"fmt"
	"math"

	gblas "gonum.org/v1/gonum/blas"

	"github.com/ndpp-go/ndpp/blas"
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
	// the same formula on inputs equal to first order: err' ≤ 2·err (the
	// tests check this), so Prepare's ratio lies within 3·err of the
	// block's.
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
	// Fast: one Cand per column whose u, w, p, q are rows of the n×cap
	// matrices below, and the gathered rows v_t and b_t (n×d).
	cands      []Cand
	u, w, p, q []float64
	vb, bb     []float64
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
		vb: make([]float64, size*d), bb: make([]float64, size*d)}
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
// then each item's Schur complement and error scales as Prepare does. It
// returns false in direct mode (every value needs a fresh LU). It counts
// no evaluations and panics for an item out of range.
func (o *Fast) ScoreBlock(b *Block, items []int) bool {
	if b == nil || b.owner != o {
		panic("detcache: Block was created by another oracle")
	}
	nb := len(items)
	if nb > len(b.cands) {
		panic(fmt.Sprintf("detcache: ScoreBlock with %d items for a block of %d", nb, len(b.cands)))
	}
	b.version, b.n, b.scored = o.version, nb, false
	if o.direct {
		return false
	}
	for c, it := range items {
		checkItem(o.m, it)
		o.begin(&b.cands[c], it)
	}
	k, d, ld := len(o.items), o.d, o.cap
	if k > 0 && nb > 0 {
		vb, bb := b.vb[:nb*d], b.bb[:nb*d]
		if lo := items[0]; consecutive(items) {
			vb, bb = o.vRows[lo*d:(lo+nb)*d], o.bRows[lo*d:(lo+nb)*d]
		} else {
			for c, it := range items {
				copy(vb[c*d:(c+1)*d], o.itemV(it))
				copy(bb[c*d:(c+1)*d], o.itemB(it))
			}
		}
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
		blas.Gemm(gblas.NoTrans, gblas.NoTrans, nb, k, k, 1, b.w, ld, o.inv, ld, 0, b.q, ld)
	}
	for c := range items {
		x := &b.cands[c]
		x.hasUW = true
		o.schur(x)
	}
	b.scored = true
	return true
}

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
// L = −Inf or NaN.
func (o *Fast) threshold(L float64) float64 {
	t := math.Exp(L-o.logDet) * (1 - blockRel - 4*eps*(math.Abs(L)+math.Abs(o.logDet)))
	if !(t > 0) {
		return 0
	}
	return t
}

// below reports whether every value the oracle can return for a ratio
// whose block computation is r with error bound err is at most the ratio
// threshold t (t > 0). Prepare's path computes the same ratio as some r'
// with r' ≤ hi = r + blockSafety·err and bound err' ≤ 2·err; its value is
// then
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
// exceeds L); false means it could not be proved. The item must not be in
// S. O(k).
func (b *Block) SwapsBelow(c int, L float64) bool {
	o, x := b.cand(c)
	t := o.threshold(L)
	if x.dup >= 0 || t == 0 {
		return false
	}
	for j := range o.items {
		if r, _, err := o.swapRatio(x, j); !below(r, err, t) {
			return false
		}
	}
	return true
}

// PairsBelow reports whether every value PairSwapValue would return for
// the items in columns cx and cy (in that order), S − {S[a], S[b]} + {x, y}
// for each pair of positions a < b, has Log ≤ L; false means it could not
// be proved. O(d + k³) (k(k−1)/2 4×4 determinants).
func (b *Block) PairsBelow(cx, cy int, L float64) bool {
	o, x := b.cand(cx)
	_, y := b.cand(cy)
	t := o.threshold(L)
	if x.dup >= 0 || y.dup >= 0 || t == 0 {
		return false
	}
	if x.item == y.item {
		return true // every value is zero
	}
	k := len(o.items)
	for a := 0; a < k; a++ {
		for bb := a + 1; bb < k; bb++ {
			if r, _, err := o.pairRatio(x, y, a, bb); !below(r, err, t) {
				return false
			}
		}
	}
	return true
}

// AddBelow reports whether the value AddValue would return for the item in
// column c, S ∪ {x}, has Log ≤ L; false means it could not be proved. O(1).
func (b *Block) AddBelow(c int, L float64) bool {
	o, x := b.cand(c)
	t := o.threshold(L)
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
func (o *Naive) ScoreBlock(b *Block, items []int) bool {
	if b == nil || b.owner != o {
		panic("detcache: Block was created by another oracle")
	}
	b.version, b.n, b.scored = o.version, len(items), false
	return false
}
