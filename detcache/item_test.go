package detcache

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
	"github.com/ndpp-go/ndpp/ndpp"
)

// vecItem returns item i of m as a vector item whose slices are fresh
// copies (not views of the model), as a stream would deliver it.
func vecItem(m *ndpp.Model, i int) ndpp.Item {
	it := ndpp.Item{ID: i, V: append([]float64(nil), m.ItemV(i)...), Delta: m.ItemDiag(i)}
	if !m.Shared() {
		it.B = append([]float64(nil), m.ItemB(i)...)
	}
	return it
}

// scribble overwrites an item's slices, as a reader reusing its buffers
// would: an oracle must have copied what it needs.
func scribble(it ndpp.Item) {
	for i := range it.V {
		it.V[i] = math.NaN()
	}
	for i := range it.B {
		it.B[i] = math.NaN()
	}
}

// twinRun drives a model-backed oracle and an oracle of the model's kernel
// fed with vector copies of its items through the same random operations
// and block scorings, and requires identical values and answers.
type twinRun struct {
	t        *testing.T
	rng      *rand.Rand
	m        *ndpp.Model
	a, b     Oracle
	ax, ay   *Cand
	bx, by   *Cand
	da, db   []ndpp.Value
	ablk     *Block
	bblk     *Block
	newTwinB func() Oracle
}

func (r *twinRun) randItem() int {
	items := r.a.Items()
	if len(items) > 0 && r.rng.IntN(10) == 0 {
		return items[r.rng.IntN(len(items))]
	}
	return r.rng.IntN(r.m.N())
}

func (r *twinRun) step() {
	t, a, b := r.t, r.a, r.b
	tx, ty := r.randItem(), r.randItem()
	a.Prepare(r.ax, tx)
	a.Prepare(r.ay, ty)
	vx, vy := vecItem(r.m, tx), vecItem(r.m, ty)
	b.PrepareItem(r.bx, vx)
	b.PrepareItem(r.by, vy)
	scribble(vx)
	scribble(vy)
	k := a.Len()
	addV := a.AddValue(r.ax)
	require.Equal(t, addV, b.AddValue(r.bx), "add")
	a.SwapValues(r.ax, r.da)
	b.SwapValues(r.bx, r.db)
	require.Empty(t, cmp.Diff(r.da[:k], r.db[:k]), "swap values (-model +vectors)")
	var pa, pb int
	if k >= 2 {
		pa, pb = r.rng.IntN(k), r.rng.IntN(k-1)
		if pb >= pa {
			pb++
		}
		require.Equal(t, a.PairSwapValue(r.ax, r.ay, pa, pb), b.PairSwapValue(r.bx, r.by, pa, pb), "pair")
	}
	// Block scoring of random items: the same answers.
	n := 1 + r.rng.IntN(8)
	ids := make([]int, n)
	its := make([]ndpp.Item, n)
	for c := range ids {
		ids[c] = r.randItem()
		its[c] = vecItem(r.m, ids[c])
	}
	sa, sb := a.ScoreBlock(r.ablk, ids), b.ScoreBlockItems(r.bblk, its)
	for _, it := range its {
		scribble(it)
	}
	require.Equal(t, sa, sb, "scored")
	if sa {
		for c := 0; c < n; c++ {
			L := a.Value().Log + r.rng.NormFloat64()
			require.Equal(t, r.ablk.SwapsBelow(c, L), r.bblk.SwapsBelow(c, L), "swaps below")
			require.Equal(t, r.ablk.AddBelow(c, L), r.bblk.AddBelow(c, L), "add below")
			if c > 0 && k >= 2 {
				require.Equal(t, r.ablk.PairsBelow(c-1, c, L), r.bblk.PairsBelow(c-1, c, L), "pairs below")
			}
		}
	}
	any := r.rng.IntN(8) == 0
	var ea, eb error
	switch {
	case k < a.Cap() && (addV.Greater(ndpp.ZeroValue) || any):
		ea, eb = a.Add(r.ax), b.Add(r.bx)
	case k >= 2 && r.rng.IntN(3) == 0:
		ea, eb = a.PairSwap(pa, pb, r.ax, r.ay), b.PairSwap(pa, pb, r.bx, r.by)
	case k >= 1:
		j := r.rng.IntN(k)
		ea, eb = a.Swap(j, r.ax), b.Swap(j, r.bx)
	}
	require.Equal(t, ea == nil, eb == nil, "change errors %v, %v", ea, eb)
	require.Equal(t, a.Items(), b.Items())
	require.Equal(t, a.Value(), b.Value(), "value of S")
	require.Equal(t, a.Stats(), b.Stats())
	for p := range a.Items() {
		ia, ib := a.ItemAt(p), b.ItemAt(p)
		require.Equal(t, ia.V, ib.V)
		require.Equal(t, ia.Delta, ib.Delta)
		if !r.m.Shared() {
			require.Equal(t, ia.B, ib.B)
		}
	}
	// Now and then, b continues from its saved state in a new oracle.
	if r.rng.IntN(5) == 0 {
		st, err := b.MarshalBinary()
		require.NoError(t, err)
		nb := r.newTwinB()
		require.NoError(t, nb.UnmarshalBinary(st))
		r.b, r.bx, r.by, r.bblk = nb, nb.NewCand(), nb.NewCand(), nb.NewBlock(8)
	}
}

func TestVectorItemsMatchModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 1))
	for seq := 0; seq < 120; seq++ {
		seed := uint64(seq)
		k, d, n := randomSize(rng, false)
		k, d = min(k, 16), min(d, 12)
		k = min(k, 2*d)
		var m *ndpp.Model
		switch seq % 4 {
		case 0:
			m = ndpp.Random(n, d, seed, ndpp.RandomOptions{})
		case 1:
			scale, partial := ndpptest.DiagCase(seed)
			m = withDiag(t, ndpp.Random(n, d, seed, ndpp.RandomOptions{}), scale, seed, partial)
			if rng.IntN(2) == 0 {
				k = min(2*d+1+rng.IntN(4), n)
			}
		case 2:
			m = ndpp.Random(n, d, seed, ndpp.RandomOptions{Shared: true})
			k = min(k, d)
		case 3:
			m = illModel(t, seed, n, d, seq%5)
			k = min(k, m.MaxRank())
		}
		naive := seq%6 == 5
		kern := ndpp.KernelOf(m)
		var a, b Oracle
		var err error
		newB := func() Oracle {
			var o Oracle
			if naive {
				o, err = NewNaiveKernel(kern, k)
			} else {
				o, err = NewFastKernel(kern, k)
			}
			require.NoError(t, err)
			return o
		}
		if naive {
			a = mustNaive(t, m, k)
		} else {
			a = mustFast(t, m, k)
		}
		b = newB()
		require.Nil(t, b.Model())
		r := &twinRun{t: t, rng: rand.New(rand.NewPCG(seed, 5)), m: m, a: a, b: b,
			ax: a.NewCand(), ay: a.NewCand(), bx: b.NewCand(), by: b.NewCand(),
			da: make([]ndpp.Value, k), db: make([]ndpp.Value, k), ablk: a.NewBlock(8), bblk: b.NewBlock(8), newTwinB: newB}
		for step := 0; step < 40; step++ {
			r.step()
		}
	}
}

func TestVectorKernelChecks(t *testing.T) {
	m := ndpp.Random(20, 3, 1, ndpp.RandomOptions{})
	kern := ndpp.KernelOf(m)
	_, err := NewFastKernel(ndpp.Kernel{D: 3, C: kern.C}, 7)
	require.ErrorContains(t, err, "capacity 7 exceeds 2d = 6")
	_, err = NewFastKernel(ndpp.Kernel{D: 3, C: kern.C[:8]}, 2)
	require.ErrorContains(t, err, "C has 8 entries")
	bad := append([]float64(nil), kern.C...)
	bad[1] += 1
	_, err = NewNaiveKernel(ndpp.Kernel{D: 3, C: bad}, 2)
	require.ErrorContains(t, err, "not skew-symmetric")
	o, err := NewFastKernel(ndpp.Kernel{D: 3, C: kern.C, Diag: true}, 50)
	require.NoError(t, err, "with a diagonal the capacity is not bounded by 2d")
	require.Equal(t, -1, o.N())
	require.PanicsWithValue(t, errNoModel, func() { o.Prepare(o.NewCand(), 0) })

	// States do not cross between model-backed and vector oracles, nor
	// between kernels.
	f := mustFast(t, m, 4)
	st, _ := f.MarshalBinary()
	v, _ := NewFastKernel(kern, 4)
	require.ErrorContains(t, v.UnmarshalBinary(st), "model-backed")
	vs, _ := v.MarshalBinary()
	require.ErrorContains(t, f.UnmarshalBinary(vs), "oracle of vector items")
	other := ndpp.KernelOf(ndpp.Random(20, 3, 2, ndpp.RandomOptions{}))
	w, _ := NewFastKernel(other, 4)
	require.ErrorContains(t, w.UnmarshalBinary(vs), "another kernel C")
}
