package baskets

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheck(t *testing.T) {
	require.NoError(t, Check(nil, 0))
	require.NoError(t, Check([][]int{{0, 2}, {1}}, 3))
	for _, tc := range []struct {
		b    [][]int
		want string
	}{
		{[][]int{{0}, {}}, "basket 1 is empty"},
		{[][]int{{0, 3}}, "basket 0: item 3 out of range [0, 3)"},
		{[][]int{{1}, {-1}}, "basket 1: item -1 out of range [0, 3)"},
		{[][]int{{2, 0, 2}}, "basket 0: duplicate item 2"},
	} {
		require.EqualError(t, Check(tc.b, 3), tc.want)
	}
}
