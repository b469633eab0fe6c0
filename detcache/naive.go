package detcache

import (
	"fmt"

	"github.com/ndpp-go/ndpp/ndpp"
)

// Naive is the reference oracle: every candidate value is recomputed from
// scratch with a fresh LU of the candidate set's kernel (ndpp.Model.LogDet),
// O(k²d + k³) per value. It keeps no factorisation, so it cannot drift; tests
// compare Fast with it, and algorithms can select it for side-by-side
// benchmarks. Its zero rule is ndpp's (see ndpp.ZeroRcondFactor).
type Naive struct {
	m       *ndpp.Model // nil for an oracle of a vector kernel
	kern    ndpp.Kernel
	maxRank int
	cap     int
	items   []int
	rows    []row     // rows of S's items
	store   []float64 // cap×3d: copies of S's vectors (vector kernel)
	value   ndpp.Value
	scratch []int
	srows   []row // the rows of scratch
	lbuf    []float64
	version uint64
	stats   Stats
	dprint  diagPrint // the diagonal's fingerprint in states
}

var _ Oracle = (*Naive)(nil)

// NewNaive returns an empty naive oracle for solutions of at most capacity
// items. It returns an error for a nil model and for capacity < 1,
// capacity > n or capacity > m.MaxRank() (2d, or d when B = V, for a model
// without a diagonal: every larger set has determinant zero).
func NewNaive(m *ndpp.Model, capacity int) (*Naive, error) {
	if err := checkCapacity(m, capacity); err != nil {
		return nil, err
	}
	o := newNaive(ndpp.KernelOf(m), capacity, m.MaxRank())
	o.m = m
	return o, nil
}

// NewNaiveKernel returns an empty naive oracle for items given as vectors
// of the kernel k (see NewFastKernel). It keeps copies of the vectors of S.
func NewNaiveKernel(k ndpp.Kernel, capacity int) (*Naive, error) {
	if err := checkKernelCapacity(k, capacity); err != nil {
		return nil, err
	}
	k.C = append([]float64(nil), k.C...)
	o := newNaive(k, capacity, k.MaxRank(-1))
	o.store = make([]float64, capacity*3*k.D)
	return o, nil
}

func newNaive(k ndpp.Kernel, capacity, maxRank int) *Naive {
	return &Naive{
		kern: k, maxRank: maxRank,
		cap:     capacity,
		items:   make([]int, 0, capacity),
		rows:    make([]row, 0, capacity),
		scratch: make([]int, 0, capacity+1),
		srows:   make([]row, 0, capacity+1),
	}
}

// Model returns the model the oracle scores against (nil for an oracle of
// a vector kernel).
func (o *Naive) Model() *ndpp.Model { return o.m }

// Kernel returns the kernel description.
func (o *Naive) Kernel() ndpp.Kernel { return o.kern }

// N returns the model's number of items, or −1 without a model.
func (o *Naive) N() int {
	if o.m == nil {
		return -1
	}
	return o.m.N()
}

// ItemAt returns S's item at position pos (see Oracle.ItemAt).
func (o *Naive) ItemAt(pos int) ndpp.Item {
	if o.m != nil {
		return ndpp.ModelItem(o.m, o.items[pos])
	}
	return o.rows[pos].item(o.items[pos], o.kern.Shared)
}

// setRow stores r at position pos of S: for a vector kernel a copy in the
// position's slot of store.
func (o *Naive) setRow(pos int, r row) {
	if o.store != nil {
		d := o.kern.D
		slot := o.store[pos*3*d : (pos+1)*3*d]
		nr := row{v: slot[:d:d], b: slot[d : 2*d : 2*d], bc: slot[2*d : 3*d : 3*d], delta: r.delta}
		copy(nr.v, r.v)
		copy(nr.b, r.b)
		copy(nr.bc, r.bc)
		r = nr
	}
	if pos == len(o.rows) {
		o.rows = append(o.rows, r)
	} else {
		o.rows[pos] = r
	}
}

// direct returns the value of scratch (rows srows) with a fresh LU.
func (o *Naive) direct() ndpp.Value {
	if len(o.scratch) > 0 && hasDup(o.scratch) {
		return ndpp.ZeroValue
	}
	var v ndpp.Value
	v, o.lbuf = rowsValue(o.srows, o.maxRank, o.kern.Diag, o.lbuf)
	return v
}

// scratchS sets scratch and srows to S.
func (o *Naive) scratchS() {
	o.scratch = append(o.scratch[:0], o.items...)
	o.srows = append(o.srows[:0], o.rows...)
}

// Cap returns the largest solution size.
func (o *Naive) Cap() int { return o.cap }

// Reset empties the solution; statistics are kept.
func (o *Naive) Reset() {
	o.items = o.items[:0]
	o.rows = o.rows[:0]
	o.value = ndpp.Value{}
	o.version++
}

// Len returns |S|.
func (o *Naive) Len() int { return len(o.items) }

// Items returns S in position order (a view; do not modify).
func (o *Naive) Items() []int { return o.items }

// Value returns the value of S (Log 0 for the empty set).
func (o *Naive) Value() ndpp.Value { return o.value }

// NewCand returns an unprepared Cand.
func (o *Naive) NewCand() *Cand { return &Cand{item: -1, dup: -1} }

// Prepare records item as c's item. It panics for an item out of range.
func (o *Naive) Prepare(c *Cand, item int) {
	if o.m == nil {
		panic(errNoModel)
	}
	checkItem(o.m, item)
	c.setModelRow(o.m, item)
	o.prepare(c, item)
}

// PrepareItem records it as c's item, with copies of its vectors.
func (o *Naive) PrepareItem(c *Cand, it ndpp.Item) {
	checkItemShape(&o.kern, it)
	c.setRow(&o.kern, it)
	o.prepare(c, it.ID)
}

func (o *Naive) prepare(c *Cand, item int) {
	c.owner = o
	c.item = item
	c.version = o.version
	c.dup = positionOf(o.items, item)
}

// Refresh brings c up to date with the current S.
func (o *Naive) Refresh(c *Cand) {
	checkCand(o, c)
	if c.version != o.version {
		c.version = o.version
		c.dup = positionOf(o.items, c.item)
	}
}

// AddValue returns the value of S ∪ {x} (zero if x is already in S).
func (o *Naive) AddValue(c *Cand) ndpp.Value {
	o.Refresh(c)
	o.stats.Evals++
	o.scratchS()
	o.scratch = append(o.scratch, c.item)
	o.srows = append(o.srows, c.r)
	return o.direct()
}

// SwapValues writes the value of S − S[j] + x into dst[j] for every j.
func (o *Naive) SwapValues(c *Cand, dst []ndpp.Value) { o.SwapValuesUntil(c, dst, nil) }

// SwapValuesUntil is SwapValues that calls stop (when not nil) after each
// value (each a fresh LU), and returns false as soon as stop returns true
// (dst then holds only some of the values); it returns true when every
// value is written.
func (o *Naive) SwapValuesUntil(c *Cand, dst []ndpp.Value, stop func() bool) bool {
	o.Refresh(c)
	k := len(o.items)
	if len(dst) < k {
		panic(fmt.Sprintf("detcache: SwapValues dst has length %d < |S| = %d", len(dst), k))
	}
	o.stats.Evals += int64(k)
	for j := 0; j < k; j++ {
		o.scratchS()
		o.scratch[j], o.srows[j] = c.item, c.r
		dst[j] = o.direct()
		if stop != nil && stop() {
			return false
		}
	}
	return true
}

// PairSwapValue returns the value of S − {S[a], S[b]} + {x, y}. It panics
// for invalid positions.
func (o *Naive) PairSwapValue(x, y *Cand, a, b int) ndpp.Value {
	o.Refresh(x)
	o.Refresh(y)
	if err := checkPair(a, b, len(o.items)); err != nil {
		panic(err.Error())
	}
	o.stats.Evals++
	o.scratchS()
	o.scratch[a], o.scratch[b] = x.item, y.item
	o.srows[a], o.srows[b] = x.r, y.r
	return o.direct()
}

// Add appends x to S. It fails if S is full or x is already in S.
func (o *Naive) Add(c *Cand) error {
	o.Refresh(c)
	if len(o.items) >= o.cap {
		return ErrFull
	}
	if c.dup >= 0 {
		return fmt.Errorf("detcache: item %d is already in S at position %d", c.item, c.dup)
	}
	o.items = append(o.items, c.item)
	o.setRow(len(o.items)-1, c.r)
	o.changed()
	return nil
}

// Swap replaces S[pos] with x. It fails for pos out of range or x already
// elsewhere in S.
func (o *Naive) Swap(pos int, c *Cand) error {
	o.Refresh(c)
	if pos < 0 || pos >= len(o.items) {
		return fmt.Errorf("detcache: swap position %d out of range [0, %d)", pos, len(o.items))
	}
	if c.dup >= 0 && c.dup != pos {
		return fmt.Errorf("detcache: item %d is already in S at position %d", c.item, c.dup)
	}
	o.items[pos] = c.item
	o.setRow(pos, c.r)
	o.changed()
	return nil
}

// PairSwap replaces S[a] with x and S[b] with y. The resulting set must not
// repeat an item.
func (o *Naive) PairSwap(a, b int, x, y *Cand) error {
	o.Refresh(x)
	o.Refresh(y)
	if err := checkPair(a, b, len(o.items)); err != nil {
		return err
	}
	o.scratch = append(o.scratch[:0], o.items...)
	o.scratch[a], o.scratch[b] = x.item, y.item
	if hasDup(o.scratch) {
		return fmt.Errorf("detcache: pair swap of items %d, %d at positions %d, %d repeats an item of S", x.item, y.item, a, b)
	}
	o.items[a], o.items[b] = x.item, y.item
	o.setRow(a, x.r)
	o.setRow(b, y.r)
	o.changed()
	return nil
}

// changed records an accepted change and recomputes the value of S.
func (o *Naive) changed() {
	o.version++
	o.stats.Updates++
	o.scratchS()
	o.value = o.direct()
}

// Evals returns the number of candidate values produced.
func (o *Naive) Evals() int64 { return o.stats.Evals }

// Stats returns the counters (Refactors, Fallbacks and MaxDrift stay zero).
func (o *Naive) Stats() Stats { return o.stats }
