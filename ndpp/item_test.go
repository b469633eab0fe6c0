package ndpp

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// vectorItem returns item i of m as an item whose slices are fresh copies
// (not views of the model), as a stream would deliver it.
func vectorItem(m *Model, i int) Item {
	it := Item{ID: i, V: append([]float64(nil), m.ItemV(i)...), Delta: m.ItemDiag(i)}
	if !m.Shared() {
		it.B = append([]float64(nil), m.ItemB(i)...)
	}
	return it
}

// TestCheckItem: CheckItem and ItemCheck.CheckAll name the first bad item
// and its fault, and refuse exactly the items beyond the scale bound.
func TestCheckItem(t *testing.T) {
	m := Random(20, 3, 1, RandomOptions{})
	kern := KernelOf(m)
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
	// MaxKernelScale, as Model.CheckScale refuses a model; finite
	// entries whose squares overflow are refused too.
	mx := 0.0
	for _, x := range kern.C {
		mx = math.Max(mx, math.Abs(x))
	}
	sf := 1 + 3*mx
	edge := math.Sqrt(MaxKernelScale / sf) // ‖z‖² = edge² at the bound
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
		{kd, Item{ID: 3, V: []float64{1, 0, 0}, B: []float64{0, 0, 0}, Delta: MaxKernelScale / sf * 1.001}, true},
		{kd, Item{ID: 3, V: []float64{1, 0, 0}, B: []float64{0, 0, 0}, Delta: MaxKernelScale / sf * 0.999}, false},
	} {
		err := CheckItem(tc.k, tc.it)
		n, errAll := NewItemCheck(tc.k).CheckAll([]Item{{ID: 0, V: []float64{1, 2, 3}, B: []float64{0, 1, 0}}, tc.it, {ID: 9, V: []float64{math.NaN(), 0, 0}, B: []float64{0, 0, 0}}})
		if !tc.fail {
			require.NoError(t, err, "%+v", tc.it)
			require.Equal(t, 2, n, "%+v", tc.it)
			require.ErrorContains(t, errAll, "item 9: v_1 = NaN")
			continue
		}
		require.ErrorIs(t, err, ErrOverflow, "%+v", tc.it)
		require.ErrorContains(t, err, "item 3: ndpp: the kernel's values overflow float64: its scale")
		require.Equal(t, 1, n)
		require.Equal(t, err, errAll)
	}
	// An item of a model that passes CheckScale passes: the bound is the
	// model's, per item.
	big := Random(30, 3, 2, RandomOptions{Diag: 2})
	require.NoError(t, big.CheckScale())
	all := make([]Item, big.N())
	for i := range all {
		all[i] = vectorItem(big, i)
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

// TestKernelCheck: a kernel description is refused for d < 1, a C of the
// wrong size, a non-finite entry and a C that is not skew-symmetric.
func TestKernelCheck(t *testing.T) {
	kern := KernelOf(Random(20, 3, 1, RandomOptions{}))
	require.NoError(t, kern.Check())
	require.ErrorContains(t, Kernel{D: 0}.Check(), "need d ≥ 1")
	require.ErrorContains(t, Kernel{D: 3, C: kern.C[:8]}.Check(), "C has 8 entries")
	bad := append([]float64(nil), kern.C...)
	bad[5] = math.Inf(1)
	require.ErrorContains(t, Kernel{D: 3, C: bad}.Check(), "non-finite entry +Inf at (1, 2)")
	bad = append([]float64(nil), kern.C...)
	bad[1] += 1
	require.ErrorContains(t, Kernel{D: 3, C: bad}.Check(), "not skew-symmetric")
}

// TestKernelMaxRank: d with B = V, 2d without, unbounded with a diagonal,
// and never above a known n.
func TestKernelMaxRank(t *testing.T) {
	for _, tc := range []struct {
		k       Kernel
		n, want int
	}{
		{Kernel{D: 3, Shared: true}, -1, 3},
		{Kernel{D: 3}, -1, 6},
		{Kernel{D: 3}, 4, 4},
		{Kernel{D: 3, Diag: true}, -1, math.MaxInt},
		{Kernel{D: 3, Diag: true}, 10, 10},
	} {
		require.Equal(t, tc.want, tc.k.MaxRank(tc.n), "%+v n=%d", tc.k, tc.n)
	}
	for _, opts := range []RandomOptions{{}, {Shared: true}, {Diag: 1}} {
		m := Random(9, 3, 1, opts)
		require.Equal(t, m.MaxRank(), KernelOf(m).MaxRank(m.N()), "%+v", opts)
	}
}

// TestModelItem: an item of a model is a view of its rows (BC is the
// model's bᵀC row) and CopyTo returns it as it is; a vector item is copied
// into the buffer and has no BC.
func TestModelItem(t *testing.T) {
	m := Random(6, 3, 1, RandomOptions{Diag: 1})
	it := ModelItem(m, 4)
	require.True(t, it.FromModel())
	require.Equal(t, 4, it.ID)
	require.Equal(t, m.ItemV(4), it.V)
	require.Equal(t, m.ItemB(4), it.B)
	require.Equal(t, m.ItemBC(4), it.BC())
	require.Equal(t, m.ItemDiag(4), it.Delta)
	require.True(t, KernelOf(m).Fits(&it))
	same, buf := it.CopyTo(nil)
	require.Nil(t, buf)
	require.Same(t, &it.V[0], &same.V[0], "a model's item is not copied")
	require.PanicsWithValue(t, "ndpp: ModelItem: item 6 out of range [0, 6)", func() { ModelItem(m, 6) })

	vec := vectorItem(m, 2)
	require.False(t, vec.FromModel())
	require.Nil(t, vec.BC())
	cp, buf := vec.CopyTo(make([]float64, 1))
	require.Len(t, buf, 6)
	require.Equal(t, vec, cp)
	require.Same(t, &buf[0], &cp.V[0])
	require.Same(t, &buf[3], &cp.B[0])
	cp2, buf2 := ModelItem(m, 1).CopyTo(buf) // the buffer comes back unused
	require.True(t, cp2.FromModel())
	require.Same(t, &buf[0], &buf2[0])
	shared := Item{ID: 1, V: []float64{1, 2}}
	cs, _ := shared.CopyTo(nil)
	require.Nil(t, cs.B)
	require.Equal(t, shared.V, cs.V)
}

// TestValueGreater: a zero value is below every non-zero one, including
// one of log −Inf, and not above another zero.
func TestValueGreater(t *testing.T) {
	require.True(t, Value{Log: -1e300}.Greater(ZeroValue))
	require.False(t, ZeroValue.Greater(Value{Log: -1e300}))
	require.False(t, ZeroValue.Greater(ZeroValue))
	require.True(t, Value{Log: 2}.Greater(Value{Log: 1}))
	require.False(t, Value{Log: 1}.Greater(Value{Log: 1}))
	require.True(t, Value{Log: math.Inf(-1)}.Greater(ZeroValue))
}
