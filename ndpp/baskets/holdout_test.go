package baskets

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// numbered returns n one-item baskets {i}: the basket names its position.
func numbered(n int) [][]int {
	b := make([][]int, n)
	for i := range b {
		b[i] = []int{i}
	}
	return b
}

func TestHoldOutPartitionsTheStream(t *testing.T) {
	for _, tc := range []struct{ n, nVal, nTest int }{{10, 3, 4}, {8, 0, 7}, {100, 30, 0}, {5000, 300, 2000}, {2301, 300, 2000}} {
		for seed := uint64(1); seed <= 5; seed++ {
			train, val, test, err := HoldOutSlice(numbered(tc.n), tc.nVal, tc.nTest, seed)
			require.NoError(t, err)
			require.Len(t, val, tc.nVal)
			require.Len(t, test, tc.nTest)
			require.Len(t, train, tc.n-tc.nVal-tc.nTest)
			seen := make([]int, tc.n)
			for _, part := range [][][]int{train, val, test} {
				for _, b := range part {
					seen[b[0]]++
				}
			}
			for i, c := range seen {
				require.Equal(t, 1, c, "basket %d appears %d times (n %d, seed %d)", i, c, tc.n, seed)
			}
			for _, part := range [][][]int{val, test} {
				require.True(t, slices.IsSortedFunc(part, func(a, b []int) int { return a[0] - b[0] }), "held-out baskets in stream order")
			}
			again, av, at, err := HoldOutSlice(numbered(tc.n), tc.nVal, tc.nTest, seed)
			require.NoError(t, err)
			require.Equal(t, train, again)
			require.Equal(t, val, av)
			require.Equal(t, test, at)
		}
	}
}

// TestHoldOutIsUniform: over many seeds every basket is held out with
// probability (nVal + nTest)/n and is a validation basket with probability
// nVal/n (chi-square at a fixed seed range; the statistic is logged).
func TestHoldOutIsUniform(t *testing.T) {
	const n, nVal, nTest, runs = 20, 3, 5, 20000
	var val, test [n]float64
	for seed := uint64(0); seed < runs; seed++ {
		_, v, te, err := HoldOutSlice(numbered(n), nVal, nTest, seed)
		require.NoError(t, err)
		for _, b := range v {
			val[b[0]]++
		}
		for _, b := range te {
			test[b[0]]++
		}
	}
	chi := func(obs [n]float64, p float64) float64 {
		x := 0.0
		for _, o := range obs {
			e := runs * p
			x += (o - e) * (o - e) / e
		}
		return x
	}
	// 19 degrees of freedom: P(χ² > 43.8) = 0.001.
	cv, ct := chi(val, float64(nVal)/n), chi(test, float64(nTest)/n)
	t.Logf("chi-square over %d positions: validation %.1f, test %.1f (19 df)", n, cv, ct)
	require.Less(t, cv, 43.8)
	require.Less(t, ct, 43.8)
}

func TestHoldOutStreamsLikeTheSlice(t *testing.T) {
	var sb strings.Builder
	for i := range 500 {
		sb.WriteString(strconv.Itoa(i) + " " + strconv.Itoa(i+1000) + "\n")
	}
	r := NewLineReader(strings.NewReader(sb.String()), LineOptions{N: 2000})
	h, err := NewHoldOut(r, 20, 50, 9)
	require.NoError(t, err)
	var train [][]int
	for {
		b, err := h.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		train = append(train, b)
		// The validation baskets so far are among those read.
		for _, v := range h.Validation() {
			require.Less(t, int64(v[0]), h.Read())
		}
	}
	require.EqualValues(t, 500, h.Read())
	val, test, err := h.Held()
	require.NoError(t, err)
	require.Equal(t, val, h.Validation())
	path := filepath.Join(t.TempDir(), "b.txt")
	require.NoError(t, os.WriteFile(path, []byte(sb.String()), 0o644))
	all, err := ReadFile(path, LineOptions{N: 2000})
	require.NoError(t, err)
	wt, wv, wte, err := HoldOutSlice(all, 20, 50, 9)
	require.NoError(t, err)
	require.Equal(t, wt, train)
	require.Equal(t, wv, val)
	require.Equal(t, wte, test)
	_, err = h.Next()
	require.ErrorIs(t, err, io.EOF)
}

type failingSource struct{ n int }

func (f *failingSource) Next() ([]int, error) {
	if f.n == 0 {
		return nil, errors.New("disk on fire")
	}
	f.n--
	return []int{f.n}, nil
}

func TestHoldOutErrors(t *testing.T) {
	_, err := NewHoldOut(nil, 1, 1, 1)
	require.Error(t, err)
	_, err = NewHoldOut(SliceSource(nil), -1, 1, 1)
	require.ErrorContains(t, err, "must be ≥ 0")
	_, _, _, err = HoldOutSlice(numbered(5), 2, 3, 1)
	require.ErrorContains(t, err, "the stream has 5 baskets; need more than 2 validation + 3 test baskets")
	// A learner reading such a stream gets the same error from Next, at
	// its end, instead of io.EOF (it learns from nothing).
	short, err := NewHoldOut(SliceSource(numbered(5)), 2, 3, 1)
	require.NoError(t, err)
	_, err = short.Next()
	require.ErrorContains(t, err, "the stream has 5 baskets; need more than 2 validation + 3 test baskets")
	_, err = short.Next()
	require.ErrorContains(t, err, "need more than", "repeated")
	_, _, _, err = HoldOutSlice(numbered(1), 2, 3, 1)
	require.ErrorContains(t, err, "the stream has 1 basket; need more than")

	h, err := NewHoldOut(&failingSource{n: 7}, 2, 2, 1)
	require.NoError(t, err)
	_, _, err = h.Held()
	require.ErrorContains(t, err, "before the end")
	for {
		if _, err = h.Next(); err != nil {
			break
		}
	}
	require.ErrorContains(t, err, "disk on fire")
	_, err = h.Next()
	require.ErrorContains(t, err, "disk on fire")
}

// The package's streams are Sources.
var (
	_ Source = (*Reader)(nil)
	_ Source = (*HoldOut)(nil)
)
