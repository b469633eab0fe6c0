package baskets

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func drain(t *testing.T, s Source) [][]int {
	t.Helper()
	var out [][]int
	for {
		b, err := s.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		out = append(out, b)
	}
}

func TestSyntheticStream(t *testing.T) {
	opt := SyntheticOptions{N: 5000, Count: 20000, Seed: 3}
	s, err := NewSynthetic(opt)
	require.NoError(t, err)
	all := drain(t, s)
	require.Len(t, all, 20000)
	counts := make([]int, opt.N)
	total := 0
	for _, b := range all {
		require.NotEmpty(t, b)
		require.LessOrEqual(t, len(b), 100)
		seen := map[int]bool{}
		for _, it := range b {
			require.True(t, it >= 0 && it < opt.N, "item %d", it)
			require.False(t, seen[it], "duplicate %d", it)
			seen[it] = true
			counts[it]++
		}
		total += len(b)
	}
	mean := float64(total) / float64(len(all))
	require.InDelta(t, 8, mean, 0.5, "mean basket size")
	// Popularity falls off: the most popular tenth of the ids holds more
	// than half of the occurrences.
	head := 0
	for _, c := range counts[:opt.N/10] {
		head += c
	}
	require.Greater(t, float64(head)/float64(total), 0.5)
	// Deterministic.
	again, err := NewSynthetic(opt)
	require.NoError(t, err)
	require.Equal(t, all, drain(t, again))
	opt.Seed = 4
	other, err := NewSynthetic(opt)
	require.NoError(t, err)
	require.NotEqual(t, all[:10], drain(t, other)[:10])
}

func TestSyntheticRejectsBadOptions(t *testing.T) {
	for _, o := range []SyntheticOptions{
		{N: 0, Count: 1}, {N: 10, Count: -1}, {N: 10, Count: 1, Topics: 11}, {N: 10, Count: 1, MeanSize: 0.5},
		{N: 10, Count: 1, Zipf: 1}, {N: 10, Count: 1, Mix: 2}, {N: 10, Count: 1, MeanSize: 20},
	} {
		_, err := NewSynthetic(o)
		require.Error(t, err, "%+v", o)
	}
}
