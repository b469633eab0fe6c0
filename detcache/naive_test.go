package detcache

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
)

func freshValue(t testing.TB, m *ndpp.Model, set []int) ndpp.Value {
	t.Helper()
	ld, sign, err := m.LogDet(set)
	require.NoError(t, err)
	if sign == 0 {
		return ndpp.ZeroValue
	}
	return ndpp.Value{Log: ld}
}

func TestNewRejectsBadCapacity(t *testing.T) {
	m := ndpp.Random(10, 3, 1, ndpp.RandomOptions{})
	for _, c := range []struct {
		capacity int
		want     string
	}{{0, "need at least 1"}, {-3, "need at least 1"}, {7, "exceeds 2d = 6"}} {
		_, err := NewNaive(m, c.capacity)
		require.ErrorContains(t, err, c.want)
		_, err = NewFast(m, c.capacity)
		require.ErrorContains(t, err, c.want)
	}
	small := ndpp.Random(4, 3, 1, ndpp.RandomOptions{})
	_, err := NewNaive(small, 5)
	require.ErrorContains(t, err, "exceeds the number of items n = 4")
	_, err = NewFast(small, 5)
	require.ErrorContains(t, err, "exceeds the number of items n = 4")
	// B = V: the rank is d.
	shared := ndpp.Random(10, 3, 1, ndpp.RandomOptions{Shared: true})
	_, err = NewNaive(shared, 4)
	require.ErrorContains(t, err, "exceeds d = 3")
	_, err = NewFast(shared, 4)
	require.ErrorContains(t, err, "exceeds d = 3")
	// With a diagonal every size up to n can have a non-zero determinant.
	diag := ndpp.Random(10, 3, 1, ndpp.RandomOptions{Diag: 1})
	for _, c := range []int{7, 10} {
		_, err = NewNaive(diag, c)
		require.NoError(t, err)
		_, err = NewFast(diag, c)
		require.NoError(t, err)
	}
	_, err = NewFast(diag, 11)
	require.ErrorContains(t, err, "exceeds the number of items n = 10")
	_, err = NewNaive(nil, 1)
	require.ErrorContains(t, err, "nil model")
	_, err = NewFast(nil, 1)
	require.ErrorContains(t, err, "nil model")
}

func TestNaiveMatchesLogDet(t *testing.T) {
	m := ndpp.Random(40, 5, 3, ndpp.RandomOptions{})
	o, err := NewNaive(m, 6)
	require.NoError(t, err)
	require.Equal(t, ndpp.Value{}, o.Value())
	c, c2 := o.NewCand(), o.NewCand()
	for _, it := range []int{3, 7, 11, 19} {
		o.Prepare(c, it)
		want := freshValue(t, m, append(append([]int(nil), o.Items()...), it))
		require.Equal(t, want, o.AddValue(c))
		require.NoError(t, o.Add(c))
		require.Equal(t, want, o.Value())
	}
	o.Prepare(c, 25)
	dst := make([]ndpp.Value, o.Len())
	o.SwapValues(c, dst)
	for j := range dst {
		set := append([]int(nil), o.Items()...)
		set[j] = 25
		require.Equal(t, freshValue(t, m, set), dst[j])
	}
	o.Prepare(c2, 30)
	v := o.PairSwapValue(c, c2, 1, 3)
	require.Equal(t, freshValue(t, m, []int{3, 25, 11, 30}), v)
	require.NoError(t, o.PairSwap(1, 3, c, c2))
	require.Equal(t, []int{3, 25, 11, 30}, o.Items())
	require.Equal(t, v, o.Value())
	require.Equal(t, int64(4+4+1), o.Evals())
	require.Equal(t, int64(5), o.Stats().Updates)

	// Duplicates: zero values, errors on apply.
	o.Prepare(c, 11)
	require.True(t, o.AddValue(c).Zero)
	o.SwapValues(c, dst)
	require.Equal(t, o.Value(), dst[2])
	require.True(t, dst[0].Zero && dst[1].Zero && dst[3].Zero)
	require.ErrorContains(t, o.Add(c), "already in S at position 2")
	require.ErrorContains(t, o.Swap(0, c), "already in S")
	require.NoError(t, o.Swap(2, c))
	require.False(t, math.IsNaN(o.Value().Log))
}
