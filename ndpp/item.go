package ndpp

import (
	"fmt"
	"math"
)

// Kernel describes what the items of a vector stream share: the rank
// parameter D, the skew-symmetric d×d C (row-major) of L = D_δ + VᵀV + BᵀCB,
// whether B = V (Shared: items carry no b) and whether items carry a
// diagonal entry δ (Diag). It is given once (KernelOf takes it from a
// model, npz.LoadKernel from a model file); the items bring the rest.
type Kernel struct {
	D      int
	C      []float64
	Shared bool
	Diag   bool
}

// Fits reports whether an item has the kernel's shape: id ≥ 0, v of d
// entries, b of d entries (absent when Shared), δ ≥ 0 and nonzero only
// with Diag. It does not look at the values (see ItemCheck).
func (k Kernel) Fits(it *Item) bool {
	ok := it.ID >= 0 && len(it.V) == k.D && it.Delta >= 0 && (k.Diag || it.Delta == 0)
	if k.Shared {
		return ok && it.B == nil
	}
	return ok && len(it.B) == k.D
}

// KernelOf returns the kernel description of a model (its C is the
// model's, not a copy: do not modify it).
func KernelOf(m *Model) Kernel {
	_, _, _, c := m.Rows()
	return Kernel{D: m.D(), C: c, Shared: m.Shared(), Diag: m.HasDiag()}
}

// Check validates the description: d ≥ 1, C of d×d finite entries and
// skew-symmetric within SkewTol (relative to its largest entry).
func (k Kernel) Check() error {
	if k.D < 1 {
		return fmt.Errorf("ndpp: kernel d = %d; need d ≥ 1", k.D)
	}
	if len(k.C) != k.D*k.D {
		return fmt.Errorf("ndpp: kernel C has %d entries; want d×d = %d", len(k.C), k.D*k.D)
	}
	mx := 0.0
	for i, x := range k.C {
		if !isFinite(x) {
			return fmt.Errorf("ndpp: kernel C has a non-finite entry %v at (%d, %d)", x, i/k.D, i%k.D)
		}
		mx = math.Max(mx, math.Abs(x))
	}
	if dev, i, j := SkewDeviation(k.C, k.D); dev > SkewTol*math.Max(1, mx) {
		return fmt.Errorf("ndpp: kernel C is not skew-symmetric: max |C+Cᵀ| = %.3g at (%d, %d)", dev, i, j)
	}
	return nil
}

// MaxRank returns the largest size of a set of the kernel's items that can
// have a non-zero determinant, for a stream of n items (n < 0: unknown):
// d with B = V and 2d otherwise without a diagonal, and n (unbounded when
// n is unknown) with one.
func (k Kernel) MaxRank(n int) int {
	r := math.MaxInt
	switch {
	case k.Diag:
	case k.Shared:
		r = k.D
	default:
		r = 2 * k.D
	}
	if n >= 0 {
		r = min(r, n)
	}
	return r
}

// Item is an item given by its vectors: an id (≥ 0; distinct items need
// distinct ids), v_t, b_t (nil when B = V) and its diagonal entry
// δ_t ≥ 0 (0 without a diagonal): a column of the kernel's V, B and D when
// items come from a stream rather than a model. Consumers (the oracles of
// package detcache) read V and B while preparing and keep copies of what
// they need, so the caller may reuse the slices after the call. Items of a
// model (ModelItem) are views into the model's rows.
type Item struct {
	ID    int
	V, B  []float64
	Delta float64
	bc    []float64 // bᵀC for items of a model (a view of its rows); nil otherwise
}

// ModelItem returns item i of m as an Item whose vectors are views of the
// model's rows (no copy). It panics for i out of range.
func ModelItem(m *Model, i int) Item {
	if i < 0 || i >= m.N() {
		panic(fmt.Sprintf("ndpp: ModelItem: item %d out of range [0, %d)", i, m.N()))
	}
	return Item{ID: i, V: m.ItemV(i), B: m.ItemB(i), Delta: m.ItemDiag(i), bc: m.ItemBC(i)}
}

// FromModel reports whether it is a view of a model's rows (ModelItem).
func (it Item) FromModel() bool { return it.bc != nil }

// BC returns the model's row bᵀC of an item of a model (ModelItem), a
// read-only view, and nil for any other item. Oracles use it to skip
// computing bᵀC for a model's items.
func (it Item) BC() []float64 { return it.bc }

// CopyTo returns a copy of it whose vectors live in buf (grown when
// shorter than 2d, and returned for reuse). An item of a model is returned
// as it is (its rows are immutable).
func (it Item) CopyTo(buf []float64) (Item, []float64) {
	if it.bc != nil {
		return it, buf
	}
	d := len(it.V)
	if cap(buf) < 2*d {
		buf = make([]float64, 2*d)
	}
	buf = buf[:2*d]
	out := Item{ID: it.ID, Delta: it.Delta, V: buf[:d:d]}
	copy(out.V, it.V)
	if it.B != nil {
		out.B = buf[d : 2*d : 2*d]
		copy(out.B, it.B)
	}
	return out, buf
}

// ItemError is an item that CheckItem refuses: its ID and why, Reason
// without the id (so that a caller can name the item as its user does);
// Err is what it wraps (ErrOverflow for a scale that could overflow, else
// nil). Its Error is "item ID: Reason".
type ItemError struct {
	ID     int
	Reason string
	Err    error
}

func (e *ItemError) Error() string { return fmt.Sprintf("item %d: %s", e.ID, e.Reason) }

func (e *ItemError) Unwrap() error { return e.Err }

func itemErr(id int, wrapped error, format string, args ...any) error {
	return &ItemError{ID: id, Reason: fmt.Sprintf(format, args...), Err: wrapped}
}

// CheckItem validates a vector item against the kernel: len(V) = d, B nil
// for B = V and of length d otherwise, finite entries, δ finite and ≥ 0 (0
// for a kernel without a diagonal), and a scale that cannot overflow:
//
//	(‖z‖² + δ)·(1 + d·max|C_kl|) ≤ MaxKernelScale,  z = [v; b],
//
// the bound Model.CheckScale applies to a model, taken per item (an
// error wrapping ErrOverflow names the item). It bounds every kernel
// entry of a set of such items, so that the determinants formed from them
// stay finite; every item of a model that passes CheckScale passes it. An
// item with a negative ID is a plain error; any other refusal is an
// *ItemError. It costs O(d²) for max|C|: to check many items, use an
// ItemCheck.
func CheckItem(k Kernel, it Item) error { return NewItemCheck(k).Check(it) }

// ItemCheck validates items against a kernel as CheckItem does, with the
// kernel's scale factor 1 + d·max|C| computed once.
type ItemCheck struct {
	k Kernel
	f float64 // 1 + d·max|C_kl|
}

// NewItemCheck returns the validator of items of k (k itself is not
// validated: see Kernel.Check).
func NewItemCheck(k Kernel) ItemCheck {
	mx := 0.0
	for _, x := range k.C {
		mx = math.Max(mx, math.Abs(x))
	}
	return ItemCheck{k: k, f: 1 + float64(k.D)*mx}
}

// Scale returns the kernel's scale factor 1 + d·max|C_kl|: an item passes
// the scale test when (‖z‖² + δ)·Scale() ≤ MaxKernelScale, its squares
// summed two at a time as Check sums them.
func (c ItemCheck) Scale() float64 { return c.f }

// Check validates one item (see CheckItem), O(d).
func (c ItemCheck) Check(it Item) error {
	k := c.k
	d := k.D
	if it.ID < 0 {
		return fmt.Errorf("item id %d; ids must be ≥ 0", it.ID)
	}
	if len(it.V) != d {
		return itemErr(it.ID, nil, "v has %d entries; want d = %d", len(it.V), d)
	}
	switch {
	case k.Shared && it.B != nil:
		return itemErr(it.ID, nil, "has a b for a kernel with B = V")
	case !k.Shared && len(it.B) != d:
		return itemErr(it.ID, nil, "b has %d entries; want d = %d", len(it.B), d)
	}
	for i, x := range it.V {
		if !isFinite(x) {
			return itemErr(it.ID, nil, "v_%d = %v is not finite", i+1, x)
		}
	}
	for i, x := range it.B {
		if !isFinite(x) {
			return itemErr(it.ID, nil, "b_%d = %v is not finite", i+1, x)
		}
	}
	if !isFinite(it.Delta) || it.Delta < 0 {
		return itemErr(it.ID, nil, "diagonal entry δ = %v; need finite and ≥ 0", it.Delta)
	}
	if it.Delta != 0 && !k.Diag {
		return itemErr(it.ID, nil, "diagonal entry δ = %v for a kernel without a diagonal", it.Delta)
	}
	if z := sumSq(it.V) + sumSq(it.B); !((z+it.Delta)*c.f <= MaxKernelScale) {
		return itemErr(it.ID, ErrOverflow, "%v: its scale (‖z‖² + δ)·(1 + d·max|C|) = %.3g exceeds %g (‖z‖² = %.3g, δ = %.3g, max |C| = %.3g); such values come from diverged training or a rescaled file",
			ErrOverflow, (z+it.Delta)*c.f, MaxKernelScale, z, it.Delta, (c.f-1)/float64(d))
	}
	return nil
}

// CheckAll validates items in order and returns the number of leading
// valid items and the error of the first invalid one (nil when all are
// valid), O(nd). Valid items pass one test each: their shape, and a sum of
// squares that is finite and within the scale bound (a NaN or an infinity
// fails it); the first failing item goes through Check for its message.
func (c ItemCheck) CheckAll(items []Item) (int, error) {
	f := c.f
	for i := range items {
		it := &items[i]
		ok := c.k.Fits(it)
		if ok {
			z := sumSq(it.V) + sumSq(it.B)
			ok = (z+it.Delta)*f <= MaxKernelScale
		}
		if !ok {
			if err := c.Check(*it); err != nil {
				return i, err
			}
		}
	}
	return len(items), nil
}

// sumSq returns Σ x², two terms at a time (NaN or +Inf for a non-finite
// entry).
func sumSq(x []float64) float64 {
	var s0, s1 float64
	i := 0
	for ; i+2 <= len(x); i += 2 {
		s0 += x[i] * x[i]
		s1 += x[i+1] * x[i+1]
	}
	if i < len(x) {
		s0 += x[i] * x[i]
	}
	return s0 + s1
}

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
