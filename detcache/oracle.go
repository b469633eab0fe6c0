package detcache

import (
	"encoding"

	"github.com/ndpp-go/ndpp/ndpp"
)

// Cand is a candidate item prepared against the oracle's current solution S:
// the products (L_{S,x}, L_{x,S}, M⁻¹L_{S,x}, L_{x,S}M⁻¹, Schur complement)
// that make every value involving x cheap. A Cand belongs to one oracle; it is
// valid until the solution changes, after which Refresh brings it up to date.
// Cands are reused to keep the hot path free of allocations.
type Cand struct {
	item    int
	version uint64 // oracle version the products were computed at
	u, w    []float64
	p, q    []float64
	s       float64

	r   row       // the item's vectors: views of a model's rows or of buf
	buf []float64 // 3d: copies of a vector item's v, b and bᵀC
	own bool      // r is in buf (a vector item), not views of a model
	mi  ndpp.Item // the model's item whose views r holds (own false), or zero

	owner Oracle // the oracle that prepared c (nil before the first Prepare)
	dup   int    // position of item in S when prepared, or -1
	hasUW bool   // u and w hold L_{S,t} and L_{t,S} (not in direct mode)
	stamp uint64 // unique per Prepare, keys the pair cache
	ltt   float64
	logz2 float64 // log ‖z_item‖²
	smag  float64 // magnitude of the terms cancelled in s
	serr  float64 // first-order bound on the error of s
	// max_i |p_i|·‖z_i‖, max_i |q_i|·‖z_i‖, Σ_i |w_i|/‖z_i‖ (error bounds)
	pn, qn, w1 float64
	zt, zp     float64 // ‖z_item‖ and Σ_i ‖z_i‖·|p_i|

	// Pair cache: Σ_xy = L_xy − w_x·p_y and Σ_yx for the partner y.
	pair           *Cand
	pairStamp      uint64 // pair.stamp when cached
	pairOwnStamp   uint64 // stamp when cached
	sxy, syx       float64
	sxyMag, syxMag float64
	sxyErr, syxErr float64
}

// Item returns the candidate's item index (its id for a vector item).
func (c *Cand) Item() int { return c.item }

// Vectors returns c's item as an Item (after Prepare or PrepareItem):
// views of its vectors, which c owns for a vector item (valid until c is
// prepared again) and which are the model's for a model item. For a kernel
// with B = V, B equals V.
func (c *Cand) Vectors() ndpp.Item {
	if !c.own && c.mi.FromModel() {
		return c.mi
	}
	return ndpp.Item{ID: c.item, V: c.r.v, B: c.r.b, Delta: c.r.delta}
}

// setModelRow points c at the views of item i of m.
func (c *Cand) setModelRow(m *ndpp.Model, i int) {
	c.mi = ndpp.ModelItem(m, i)
	c.r, c.own = modelItemRow(c.mi), false
}

// setRow points c at item's vectors: views for an item of a model,
// otherwise copies in c's own buffer (k describes the kernel).
func (c *Cand) setRow(k *ndpp.Kernel, it ndpp.Item) {
	model := it.FromModel()
	if !model && len(c.buf) < 3*k.D {
		c.buf = make([]float64, 3*k.D)
	}
	c.r = itemRow(k, it, c.buf)
	c.own = !model
	c.mi = ndpp.Item{}
	if model {
		c.mi = it
	}
}

// Oracle holds a current solution S (an ordered list of distinct items, at
// most Cap() of them) and answers "what is det L over S with these items
// swapped in" for candidate items. Positions 0..Len()-1 index S; Swap and
// PairSwap replace items in place, so positions are stable.
//
// Two implementations share this interface: Fast (the incremental oracle) and
// Naive (a fresh LU per candidate value). Algorithms take the interface.
//
// Every value an oracle returns counts as one determinant evaluation (the
// unit of the online-MAP paper); Evals returns the count.
type Oracle interface {
	// Model returns the model the oracle scores against, or nil for an
	// oracle of a vector kernel (NewFastKernel, NewNaiveKernel), which
	// takes items only as vectors.
	Model() *ndpp.Model
	// Kernel returns the kernel description (d, C, B = V, diagonal).
	Kernel() ndpp.Kernel
	// N returns the model's number of items, or −1 without a model.
	N() int
	// ItemAt returns the item of S at position pos: the model's item, or
	// views of the oracle's copies of its vectors, valid until S changes.
	ItemAt(pos int) ndpp.Item
	// Cap returns the largest solution size the oracle accepts.
	Cap() int
	// Reset empties the solution (statistics are kept).
	Reset()
	// Len returns |S|.
	Len() int
	// Items returns S in position order. The slice is a view: do not modify.
	Items() []int
	// Value returns the value of S itself (the empty set has Log 0).
	Value() ndpp.Value

	// NewCand returns a Cand with buffers sized for this oracle.
	NewCand() *Cand
	// Prepare computes c's products for item against the current S:
	// O(kd + k²) for Fast. An item already in S is accepted (values of
	// sets that would repeat it are zero; swapping it onto its own
	// position gives Value()). It panics for an item out of range: callers
	// validate ids.
	Prepare(c *Cand, item int)
	// PrepareItem is Prepare for an item given by its vectors (an oracle
	// of a vector kernel), or by ndpp.ModelItem of the oracle's model. The
	// Cand keeps copies of the vectors, so it stays valid when the
	// caller reuses them. It panics for vectors of the wrong length; the
	// caller validates items (ndpp.CheckItem).
	PrepareItem(c *Cand, it ndpp.Item)
	// Refresh brings c up to date with the current S if it changed since c
	// was prepared (O(d + k²) for Fast after one accepted change). The
	// value methods and the changes refresh their Cands themselves.
	Refresh(c *Cand)

	// AddValue returns the value of S ∪ {x}.
	AddValue(c *Cand) ndpp.Value
	// SwapValues writes into dst[j] the value of S − S[j] + x for every
	// position j (len(dst) ≥ Len()).
	SwapValues(c *Cand, dst []ndpp.Value)
	// SwapValuesUntil is SwapValues that calls stop (when not nil) after
	// each value it computes with a fresh LU (O(k²·(k + d)) each), and
	// returns false as soon as stop returns true, with only some of the
	// values written; it returns true when every value is written. A
	// caller bounding its time (a deadline) uses it when a set's values
	// may need many fresh LUs.
	SwapValuesUntil(c *Cand, dst []ndpp.Value, stop func() bool) bool
	// PairSwapValue returns the value of S − {S[a], S[b]} + {x, y}, a ≠ b.
	// It panics for positions out of range or equal.
	PairSwapValue(x, y *Cand, a, b int) ndpp.Value

	// NewBlock returns a Block for scoring up to size arriving items at
	// once. It panics for size < 1.
	NewBlock(size int) *Block
	// ScoreBlock scores items against the current S in one pass of
	// matrix–matrix products and reports whether it could: then the
	// Block's SwapsBelow, PairsBelow and AddBelow prove, from the same
	// identities and error bounds as the value methods, that an item's
	// values cannot exceed a threshold, until S changes. Fast scores
	// blocks except in direct mode; Naive never does (every item then goes
	// through Prepare and the value methods). It counts no evaluations;
	// callers that skip an item count the evaluations they did not make.
	// It panics for an item out of range.
	ScoreBlock(b *Block, items []int) bool
	// ScoreBlockItems is ScoreBlock for items given by their vectors: the
	// block keeps copies of them, so the caller may reuse the slices.
	ScoreBlockItems(b *Block, items []ndpp.Item) bool

	// Add appends x to S. It returns an error if S is full or x's value is
	// zero and the oracle cannot represent the singular solution.
	Add(c *Cand) error
	// Swap replaces S[pos] with x.
	Swap(pos int, c *Cand) error
	// PairSwap replaces S[a] with x and S[b] with y.
	PairSwap(a, b int, x, y *Cand) error

	// Evals returns the number of candidate values produced so far.
	Evals() int64
	// Stats returns the oracle's counters.
	Stats() Stats

	// The oracle's state (solution, factorisations, counters) can be saved
	// and restored, continuing with identical results.
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

// Stats are an oracle's counters.
type Stats struct {
	Evals     int64 // candidate values produced (determinant evaluations)
	Updates   int64 // accepted changes applied (adds, swaps, pair swaps)
	Refactors int64 // full refactorisations of L_S
	// Fallbacks counts values computed with a fresh LU because L_S was
	// singular or ill-conditioned, or because a value's error bound was
	// too large (see the package documentation).
	Fallbacks int64
	// MaxDrift is the largest relative difference max|ΔM⁻¹|/max|M⁻¹|
	// between the incrementally updated inverse and a fresh one, measured
	// at the periodic refactors.
	MaxDrift float64
	// MaxLogDetDrift is the largest absolute difference between the
	// incrementally updated log det L_S and a fresh one at the periodic
	// refactors.
	MaxLogDetDrift float64
}
