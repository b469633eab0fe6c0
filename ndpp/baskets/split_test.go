package baskets

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func numberedBaskets(n int) [][]int {
	out := make([][]int, n)
	for i := range out {
		out[i] = []int{i}
	}
	return out
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct{ n, nVal, nTest int }{
		{0, 0, 0}, {1, 0, 1}, {1, 1, 0}, {10, 3, 2}, {10, 0, 0}, {10, 5, 5}, {2300, 300, 2000}, {14970, 300, 2000},
	} {
		in := numberedBaskets(tc.n)
		train, val, test, err := Split(in, tc.nVal, tc.nTest, 42)
		require.NoError(t, err, "%+v", tc)
		require.Len(t, val, tc.nVal, "%+v", tc)
		require.Len(t, test, tc.nTest, "%+v", tc)
		require.Len(t, train, tc.n-tc.nVal-tc.nTest, "%+v", tc)
		// Disjoint, covering, input order kept inside each part, and the
		// parts share the input's basket slices.
		count := make([]int, tc.n)
		for _, part := range [][][]int{train, val, test} {
			for i, b := range part {
				count[b[0]]++
				if i > 0 {
					require.Less(t, part[i-1][0], b[0], "%+v: part not in input order", tc)
				}
				require.Same(t, &in[b[0]][0], &b[0], "%+v: basket copied", tc)
			}
		}
		for i, c := range count {
			require.Equal(t, 1, c, "%+v: basket %d appears %d times", tc, i, c)
		}
		// Deterministic.
		train2, val2, test2, err := Split(in, tc.nVal, tc.nTest, 42)
		require.NoError(t, err)
		require.Equal(t, [][][]int{train, val, test}, [][][]int{train2, val2, test2}, "%+v: same seed, different split", tc)
	}
	// Different seeds give different splits; the split does not simply take
	// a block of the input.
	in := numberedBaskets(1000)
	_, a, _, err := Split(in, 100, 100, 1)
	require.NoError(t, err)
	_, b, _, err := Split(in, 100, 100, 2)
	require.NoError(t, err)
	require.NotEqual(t, a, b, "seeds 1 and 2 give the same validation set")
	require.GreaterOrEqual(t, a[len(a)-1][0]-a[0][0], 500, "the validation set spans only %v..%v", a[0], a[len(a)-1])
	// A pinned value: changing the generator changes every published split.
	_, v, te, err := Split(numberedBaskets(10), 2, 2, 7)
	require.NoError(t, err)
	require.Equal(t, [][]int{{3}, {9}}, v, "Split(10, 2, 2, seed 7) validation")
	require.Equal(t, [][]int{{2}, {7}}, te, "Split(10, 2, 2, seed 7) test")
}

func TestSplitErrors(t *testing.T) {
	in := numberedBaskets(10)
	for _, tc := range []struct {
		nVal, nTest int
		want        string
	}{
		{6, 5, "baskets: cannot split 10 baskets into 6 validation and 5 test baskets"},
		{11, 0, "cannot split 10"},
		{-1, 0, "must be ≥ 0"},
		{0, -3, "must be ≥ 0"},
		{1 << 62, 1 << 62, "cannot split"},
	} {
		_, _, _, err := Split(in, tc.nVal, tc.nTest, 1)
		require.ErrorContains(t, err, tc.want, "Split(10, %d, %d)", tc.nVal, tc.nTest)
	}
}
