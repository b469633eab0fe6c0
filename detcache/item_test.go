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
func vecItem(m *ndpp.Model, i int) Item {
	it := Item{ID: i, V: append([]float64(nil), m.ItemV(i)...), Delta: m.ItemDiag(i)}
	if !m.Shared() {
		it.B = append([]float64(nil), m.ItemB(i)...)
	}
	return it
}

// scribble overwrites an item's slices, as a reader reusing its buffers
// would: an oracle must have copied what it needs.
func scribble(it Item) {
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
	da, db   []Value
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
	its := make([]Item, n)
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
	case k < a.Cap() && (addV.Greater(ZeroValue) || any):
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
		kern := KernelOf(m)
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
			da: make([]Value, k), db: make([]Value, k), ablk: a.NewBlock(8), bblk: b.NewBlock(8), newTwinB: newB}
		for step := 0; step < 40; step++ {
			r.step()
		}
	}
}

func TestVectorKernelChecks(t *testing.T) {
	m := ndpp.Random(20, 3, 1, ndpp.RandomOptions{})
	kern := KernelOf(m)
	_, err := NewFastKernel(Kernel{D: 3, C: kern.C}, 7)
	require.ErrorContains(t, err, "capacity 7 exceeds 2d = 6")
	_, err = NewFastKernel(Kernel{D: 3, C: kern.C[:8]}, 2)
	require.ErrorContains(t, err, "C has 8 entries")
	bad := append([]float64(nil), kern.C...)
	bad[1] += 1
	_, err = NewNaiveKernel(Kernel{D: 3, C: bad}, 2)
	require.ErrorContains(t, err, "not skew-symmetric")
	o, err := NewFastKernel(Kernel{D: 3, C: kern.C, Diag: true}, 50)
	require.NoError(t, err, "with a diagonal the capacity is not bounded by 2d")
	require.Equal(t, -1, o.N())
	require.PanicsWithValue(t, errNoModel, func() { o.Prepare(o.NewCand(), 0) })

	for _, tc := range []struct {
		it   Item
		want string
	}{
		{Item{ID: -1, V: []float64{1, 2, 3}, B: []float64{1, 2, 3}}, "ids must be ≥ 0"},
		{Item{V: []float64{1, 2}, B: []float64{1, 2, 3}}, "v has 2 entries"},
		{Item{V: []float64{1, 2, 3}}, "b has 0 entries"},
		{Item{V: []float64{1, math.NaN(), 3}, B: []float64{1, 2, 3}}, "v_2 = NaN"},
		{Item{V: []float64{1, 2, 3}, B: []float64{1, 2, math.Inf(1)}}, "b_3 = +Inf"},
		{Item{V: []float64{1, 2, 3}, B: []float64{1, 2, 3}, Delta: 1}, "without a diagonal"},
	} {
		require.ErrorContains(t, CheckItem(kern, tc.it), tc.want)
	}
	require.ErrorContains(t, CheckItem(Kernel{D: 3, C: kern.C, Shared: true}, Item{V: []float64{1, 2, 3}, B: []float64{1, 2, 3}}), "B = V")
	require.ErrorContains(t, CheckItem(Kernel{D: 3, C: kern.C, Diag: true}, Item{V: []float64{1, 2, 3}, B: []float64{1, 2, 3}, Delta: -1}), "δ = -1")

	// Scale: refused exactly where (‖z‖² + δ)·(1 + d·max|C|) exceeds
	// ndpp.MaxKernelScale, as Model.CheckScale refuses a model; finite
	// entries whose squares overflow are refused too.
	mx := 0.0
	for _, x := range kern.C {
		mx = math.Max(mx, math.Abs(x))
	}
	sf := 1 + 3*mx
	edge := math.Sqrt(ndpp.MaxKernelScale / sf) // ‖z‖² = edge² at the bound
	kd := Kernel{D: 3, C: kern.C, Diag: true}
	for _, tc := range []struct {
		k    Kernel
		it   Item
		fail bool
	}{
		{kern, Item{ID: 3, V: []float64{edge * 0.999, 0, 0}, B: []float64{0, 0, 0}}, false},
		{kern, Item{ID: 3, V: []float64{edge * 1.001, 0, 0}, B: []float64{0, 0, 0}}, true},
		{kern, Item{ID: 3, V: []float64{edge * 0.8, 0, 0}, B: []float64{0, edge * 0.8, 0}}, true},
		{kern, Item{ID: 3, V: []float64{1e200, 0, 0}, B: []float64{0, 0, 0}}, true},
		{kd, Item{ID: 3, V: []float64{1, 0, 0}, B: []float64{0, 0, 0}, Delta: ndpp.MaxKernelScale / sf * 1.001}, true},
		{kd, Item{ID: 3, V: []float64{1, 0, 0}, B: []float64{0, 0, 0}, Delta: ndpp.MaxKernelScale / sf * 0.999}, false},
	} {
		err := CheckItem(tc.k, tc.it)
		n, errAll := NewItemCheck(tc.k).CheckAll([]Item{{ID: 0, V: []float64{1, 2, 3}, B: []float64{0, 1, 0}}, tc.it, {ID: 9, V: []float64{math.NaN(), 0, 0}, B: []float64{0, 0, 0}}})
		if !tc.fail {
			require.NoError(t, err, "%+v", tc.it)
			require.Equal(t, 2, n, "%+v", tc.it)
			require.ErrorContains(t, errAll, "item 9: v_1 = NaN")
			continue
		}
		require.ErrorIs(t, err, ndpp.ErrOverflow, "%+v", tc.it)
		require.ErrorContains(t, err, "item 3: ndpp: the kernel's values overflow float64: its scale")
		require.Equal(t, 1, n)
		require.Equal(t, err, errAll)
	}
	// An item of a model that passes CheckScale passes: the bound is the
	// model's, per item.
	big := ndpp.Random(30, 3, 2, ndpp.RandomOptions{Diag: 2})
	require.NoError(t, big.CheckScale())
	all := make([]Item, big.N())
	for i := range all {
		all[i] = vecItem(big, i)
	}
	n, err := NewItemCheck(KernelOf(big)).CheckAll(all)
	require.NoError(t, err)
	require.Equal(t, big.N(), n)
	for _, tc := range []struct {
		it   Item
		want string
	}{
		{Item{ID: -1, V: []float64{1, 2, 3}, B: []float64{1, 2, 3}}, "ids must be ≥ 0"},
		{Item{ID: 2, V: []float64{1, 2}, B: []float64{1, 2, 3}}, "v has 2 entries"},
		{Item{ID: 2, V: []float64{1, 2, 3}, B: []float64{1, 2, 3}, Delta: 1}, "without a diagonal"},
		{Item{ID: 2, V: []float64{1, 2, 3}, B: []float64{1, 2, math.Inf(-1)}}, "b_3 = -Inf"},
	} {
		n, err := NewItemCheck(kern).CheckAll([]Item{{ID: 0, V: []float64{1, 2, 3}, B: []float64{0, 1, 0}}, tc.it})
		require.Equal(t, 1, n)
		require.ErrorContains(t, err, tc.want)
	}

	// States do not cross between model-backed and vector oracles, nor
	// between kernels.
	f := mustFast(t, m, 4)
	st, _ := f.MarshalBinary()
	v, _ := NewFastKernel(kern, 4)
	require.ErrorContains(t, v.UnmarshalBinary(st), "model-backed")
	vs, _ := v.MarshalBinary()
	require.ErrorContains(t, f.UnmarshalBinary(vs), "oracle of vector items")
	other := KernelOf(ndpp.Random(20, 3, 2, ndpp.RandomOptions{}))
	w, _ := NewFastKernel(other, 4)
	require.ErrorContains(t, w.UnmarshalBinary(vs), "another kernel C")
}

// TestKernelFits: the shape test that batch validation and ItemCheck share,
// on every kind of kernel and every way an item can miss its shape.
func TestKernelFits(t *testing.T) {
	v, b := make([]float64, 3), make([]float64, 3)
	cases := []struct {
		name string
		k    Kernel
		it   Item
		want bool
	}{
		{"v and b", Kernel{D: 3}, Item{ID: 0, V: v, B: b}, true},
		{"shared, no b", Kernel{D: 3, Shared: true}, Item{ID: 7, V: v}, true},
		{"shared with b", Kernel{D: 3, Shared: true}, Item{ID: 7, V: v, B: b}, false},
		{"missing b", Kernel{D: 3}, Item{ID: 1, V: v}, false},
		{"short v", Kernel{D: 3}, Item{ID: 1, V: v[:2], B: b}, false},
		{"short b", Kernel{D: 3}, Item{ID: 1, V: v, B: b[:2]}, false},
		{"negative id", Kernel{D: 3}, Item{ID: -1, V: v, B: b}, false},
		{"δ with a diagonal", Kernel{D: 3, Diag: true}, Item{ID: 2, V: v, B: b, Delta: 0.5}, true},
		{"δ without a diagonal", Kernel{D: 3}, Item{ID: 2, V: v, B: b, Delta: 0.5}, false},
		{"negative δ", Kernel{D: 3, Diag: true}, Item{ID: 2, V: v, B: b, Delta: -0.5}, false},
		{"NaN δ", Kernel{D: 3, Diag: true}, Item{ID: 2, V: v, B: b, Delta: math.NaN()}, false},
	}
	for _, c := range cases {
		require.Equal(t, c.want, c.k.Fits(&c.it), c.name)
	}
}
