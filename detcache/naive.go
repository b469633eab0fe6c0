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
	m       *ndpp.Model
	cap     int
	items   []int
	value   Value
	scratch []int
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
	return &Naive{
		m:       m,
		cap:     capacity,
		items:   make([]int, 0, capacity),
		scratch: make([]int, 0, capacity+1),
	}, nil
}

// Model returns the model the oracle scores against.
func (o *Naive) Model() *ndpp.Model { return o.m }

// Cap returns the largest solution size.
func (o *Naive) Cap() int { return o.cap }

// Reset empties the solution; statistics are kept.
func (o *Naive) Reset() {
	o.items = o.items[:0]
	o.value = Value{}
	o.version++
}

// Len returns |S|.
func (o *Naive) Len() int { return len(o.items) }

// Items returns S in position order (a view; do not modify).
func (o *Naive) Items() []int { return o.items }

// Value returns the value of S (Log 0 for the empty set).
func (o *Naive) Value() Value { return o.value }

// NewCand returns an unprepared Cand.
func (o *Naive) NewCand() *Cand { return &Cand{item: -1, dup: -1} }

// Prepare records item as c's item. It panics for an item out of range.
func (o *Naive) Prepare(c *Cand, item int) {
	checkItem(o.m, item)
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
func (o *Naive) AddValue(c *Cand) Value {
	o.Refresh(c)
	o.stats.Evals++
	o.scratch = append(append(o.scratch[:0], o.items...), c.item)
	return directValue(o.m, o.scratch)
}

// SwapValues writes the value of S − S[j] + x into dst[j] for every j.
func (o *Naive) SwapValues(c *Cand, dst []Value) {
	o.Refresh(c)
	k := len(o.items)
	if len(dst) < k {
		panic(fmt.Sprintf("detcache: SwapValues dst has length %d < |S| = %d", len(dst), k))
	}
	o.stats.Evals += int64(k)
	for j := 0; j < k; j++ {
		o.scratch = append(o.scratch[:0], o.items...)
		o.scratch[j] = c.item
		dst[j] = directValue(o.m, o.scratch)
	}
}

// PairSwapValue returns the value of S − {S[a], S[b]} + {x, y}. It panics
// for invalid positions.
func (o *Naive) PairSwapValue(x, y *Cand, a, b int) Value {
	o.Refresh(x)
	o.Refresh(y)
	if err := checkPair(a, b, len(o.items)); err != nil {
		panic(err.Error())
	}
	o.stats.Evals++
	o.scratch = append(o.scratch[:0], o.items...)
	o.scratch[a], o.scratch[b] = x.item, y.item
	return directValue(o.m, o.scratch)
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
	copy(o.items, o.scratch)
	o.changed()
	return nil
}

// changed records an accepted change and recomputes the value of S.
func (o *Naive) changed() {
	o.version++
	o.stats.Updates++
	o.value = directValue(o.m, o.items)
}

// Evals returns the number of candidate values produced.
func (o *Naive) Evals() int64 { return o.stats.Evals }

// Stats returns the counters (Refactors, Fallbacks and MaxDrift stay zero).
func (o *Naive) Stats() Stats { return o.stats }
