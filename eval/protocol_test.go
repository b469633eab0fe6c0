package eval

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// TestHeldOutIsTheProtocolsLastItem: on seeded random baskets, with and
// without ids, HeldOut picks the item that the protocol's sort
// (protocolBaskets, which Evaluate scores) puts last.
func TestHeldOutIsTheProtocolsLastItem(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	n := 50
	keys := make([]int64, n)
	for i := range keys {
		keys[i] = rng.Int64N(1 << 40)
	}
	var test [][]int
	for range 200 {
		test = append(test, rng.Perm(n)[:1+rng.IntN(12)])
	}
	for _, k := range [][]int64{nil, keys} {
		sorted, err := protocolBaskets(test, n, k)
		require.NoError(t, err)
		for i, s := range test {
			require.Equal(t, sorted[i][len(sorted[i])-1], s[HeldOut(s, k)], "basket %d", i)
		}
	}
}

func TestHeldOutRefusesBadBaskets(t *testing.T) {
	require.Equal(t, -1, HeldOut(nil, nil))
	require.Equal(t, -1, HeldOut([]int{0, -1}, nil))
	require.Equal(t, -1, HeldOut([]int{0, 3}, []int64{5, 6, 7}))
	require.Equal(t, 1, HeldOut([]int{0, 2}, []int64{5, 6, 7}))
}

func TestKeys(t *testing.T) {
	voc, err := ndpp.NewVocab([]string{"30", "7", "-12"})
	require.NoError(t, err)
	require.Equal(t, []int64{30, 7, -12}, Keys(voc))
	voc.Add("A1")
	require.Nil(t, Keys(voc))
	require.Nil(t, Keys(nil))
}

// TestLastSource: the stream puts last the item the protocol holds out:
// the highest integer id while every token read so far is an integer,
// else the row of the latest first appearance; without a vocabulary, the
// highest row.
func TestLastSource(t *testing.T) {
	voc, err := ndpp.NewVocab([]string{"30", "7", "12", "5"})
	require.NoError(t, err)
	check := func(src baskets.Source, want [][]int) {
		t.Helper()
		for _, w := range want {
			b, err := src.Next()
			require.NoError(t, err)
			require.Equal(t, w, b)
		}
	}
	check(NewLastSource(baskets.SliceSource([][]int{{0, 1, 2}, {3, 1}, {2}}), voc), [][]int{{1, 2, 0}, {3, 1}, {2}})
	src := NewLastSource(baskets.SliceSource([][]int{{2, 0, 1}, {4, 0, 2}, {0, 2, 1}}), voc)
	check(src, [][]int{{2, 1, 0}})
	voc.Add("A1") // a token that is not an integer: rows from now on
	check(src, [][]int{{0, 2, 4}, {0, 1, 2}})
	check(NewLastSource(baskets.SliceSource([][]int{{3, 0, 1}}), nil), [][]int{{0, 1, 3}})
}
