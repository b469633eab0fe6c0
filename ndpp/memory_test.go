package ndpp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRandomMemory: the estimate ndpp-bench infer --synthetic has always
// checked, growing with n and d, and -1 on overflow or negative sizes.
func TestRandomMemory(t *testing.T) {
	for _, c := range [][2]int64{{1, 1}, {1000, 10}, {1e6, 30}, {12345, 77}} {
		n, d := c[0], c[1]
		require.Equal(t, 24*n*d+32*n+256*d*d, RandomMemory(int(n), int(d)))
	}
	prev := int64(-1)
	for _, n := range []int{0, 1, 100, 1e6, 1e10} {
		m := RandomMemory(n, 10)
		require.Greater(t, m, prev)
		prev = m
	}
	prev = -1
	for _, d := range []int{1, 2, 50, 1e5} {
		m := RandomMemory(1000, d)
		require.Greater(t, m, prev)
		prev = m
	}
	require.Equal(t, int64(-1), RandomMemory(1<<40, 1<<30))
	require.Equal(t, int64(-1), RandomMemory(-1, 3))
}
