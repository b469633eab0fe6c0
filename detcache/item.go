package detcache

import (
	"fmt"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/ndpp"
)

// errNoModel is the panic of the index-based methods of vector oracles.
const errNoModel = "detcache: oracle of a vector kernel has no model: use PrepareItem and ScoreBlockItems"

// row is an item's vectors as the oracle reads them: v, b, bᵀC and δ.
type row struct {
	v, b, bc []float64
	delta    float64
}

// modelRow returns the row of item i of m (views).
func modelRow(m *ndpp.Model, i int) row {
	return row{v: m.ItemV(i), b: m.ItemB(i), bc: m.ItemBC(i), delta: m.ItemDiag(i)}
}

// modelItemRow returns the row of an item of a model (ndpp.ModelItem):
// views of the model's rows.
func modelItemRow(it ndpp.Item) row {
	return row{v: it.V, b: it.B, bc: it.BC(), delta: it.Delta}
}

// itemRow returns it's row: views for an item of a model, otherwise copies
// of v and b in buf (len ≥ 3d) with bᵀC computed as the model computes
// its rows (ndpp.RowTimesC), so that the bits agree.
func itemRow(k *ndpp.Kernel, it ndpp.Item, buf []float64) row {
	if it.FromModel() {
		return modelItemRow(it)
	}
	d := k.D
	r := row{v: buf[:d:d], bc: buf[2*d : 3*d : 3*d], delta: it.Delta}
	copy(r.v, it.V)
	if k.Shared {
		r.b = r.v
	} else {
		r.b = buf[d : 2*d : 2*d]
		copy(r.b, it.B)
	}
	ndpp.RowTimesC(r.bc, r.b, k.C)
	return r
}

// item returns r as an Item with id (views of r's vectors).
func (r row) item(id int, shared bool) ndpp.Item {
	it := ndpp.Item{ID: id, V: r.v, B: r.b, Delta: r.delta}
	if shared {
		it.B = nil
	}
	return it
}

// entryRows returns L_xy = [same]δ_x + v_x·v_y + (b_xᵀC)·b_y.
func entryRows(x, y row, same bool) float64 {
	e := blas.Dot(x.v, y.v) + blas.Dot(x.bc, y.b)
	if same {
		e += x.delta
	}
	return e
}

// norm2 returns ‖z‖² = v·v + b·b + δ.
func (r row) norm2() float64 {
	return blas.Dot(r.v, r.v) + blas.Dot(r.b, r.b) + r.delta
}

// checkKernelCapacity validates a vector oracle's constructor arguments.
func checkKernelCapacity(k ndpp.Kernel, capacity int) error {
	if err := k.Check(); err != nil {
		return err
	}
	if capacity < 1 {
		return fmt.Errorf("detcache: capacity %d; need at least 1", capacity)
	}
	if capacity > k.MaxRank(-1) {
		if k.Shared {
			return fmt.Errorf("detcache: capacity %d exceeds d = %d, the rank of a kernel with B = V and no diagonal (every larger set has determinant zero)", capacity, k.D)
		}
		return fmt.Errorf("detcache: capacity %d exceeds 2d = %d, the rank of a kernel without a diagonal (every larger set has determinant zero)", capacity, 2*k.D)
	}
	return nil
}

// checkItemShape panics for an item whose vectors do not fit the kernel (a
// programmer error: callers validate items with ndpp.CheckItem).
func checkItemShape(k *ndpp.Kernel, it ndpp.Item) {
	if len(it.V) != k.D || !k.Shared && len(it.B) != k.D || k.Shared && it.B != nil && len(it.B) != k.D {
		panic(fmt.Sprintf("detcache: item %d has vectors of lengths %d, %d for d = %d (B = V: %v)", it.ID, len(it.V), len(it.B), k.D, k.Shared))
	}
}
