package eval

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// refCooccur is the batched space-saving pair counter written plainly (Go
// maps of counts and overcounts, a batch merged by sorting the held pairs
// on count): the reference that Cooccurrence's sorted arrays, radix sort,
// selection and background merges must follow batch by batch, drops (and
// so ties) included.
type refCooccur struct {
	maxPairs, batch int
	cnt, over       map[uint64]int64
	pend            []uint64
	floor           int64
	evictions       int64
}

func newRefCooccur(maxPairs, batch int) *refCooccur {
	return &refCooccur{maxPairs: maxPairs, batch: batch, cnt: map[uint64]int64{}, over: map[uint64]int64{}}
}

func (c *refCooccur) add(basket []int) {
	s := slices.Compact(slices.Sorted(slices.Values(basket)))
	for p, a := range s {
		for _, b := range s[p+1:] {
			c.pend = append(c.pend, pairKey(a, b))
			if len(c.pend) == c.batch {
				c.merge()
			}
		}
	}
}

// merge merges the pending increments, as a query does.
func (c *refCooccur) merge() {
	agg := map[uint64]int64{}
	for _, k := range c.pend {
		agg[k]++
	}
	c.pend = nil
	for k, n := range agg {
		if _, ok := c.cnt[k]; ok {
			c.cnt[k] += n
		} else {
			c.cnt[k], c.over[k] = n+c.floor, c.floor
		}
	}
	if len(c.cnt) <= c.maxPairs {
		return
	}
	keys := make([]uint64, 0, len(c.cnt))
	for k := range c.cnt {
		keys = append(keys, k)
	}
	// Largest counts first, smaller keys first among equal counts.
	slices.SortFunc(keys, func(a, b uint64) int {
		return cmp.Or(cmp.Compare(c.cnt[b], c.cnt[a]), cmp.Compare(a, b))
	})
	for _, k := range keys[c.maxPairs:] {
		c.floor = max(c.floor, c.cnt[k])
		delete(c.cnt, k)
		delete(c.over, k)
		c.evictions++
	}
}

// TestCooccurrenceFollowsReference checks that Cooccurrence holds the
// reference counter's pairs with its counts and overcounts, its drops and
// its floor, at queries every 50 baskets, below and beyond the budget (the
// held pairs growing, merged on their goroutine, pairs dropped and coming
// back), with the default batches and with small ones (many merges
// between two queries, baskets split across batches). The scores depend on
// the held pairs and their counts only, so equal counts give the
// reference's evaluation.
func TestCooccurrenceFollowsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 3))
	for _, tc := range []struct{ n, size, budget, batch int }{
		{40, 8, 1, 0}, {40, 8, 5, 0}, {60, 10, 300, 0}, {200, 12, 2000, 0}, {200, 12, 1 << 20, 0}, {3000, 20, 5000, 0},
		{40, 8, 5, 3}, {200, 12, 2000, 97}, {3000, 20, 5000, 1000}, {1 << 20, 20, 5000, 700},
	} {
		train := randBaskets(rng, 600, tc.n, tc.size)
		c, err := NewCooccurrence(tc.budget, 0)
		require.NoError(t, err)
		if tc.batch > 0 {
			c.batch = tc.batch
		}
		ref := newRefCooccur(tc.budget, c.batch)
		for b, s := range train {
			require.NoError(t, c.Add(s))
			ref.add(s)
			if b%50 != 49 && b != len(train)-1 {
				continue
			}
			ref.merge()
			require.Equal(t, len(ref.cnt), c.Pairs())
			require.Equal(t, ref.evictions, c.Evictions())
			require.Equal(t, ref.floor, c.MinCount())
			for k, n := range ref.cnt {
				lo, hi := c.Count(int(k>>32), int(k&0xffffffff))
				require.Equal(t, n-ref.over[k], lo, "pair %d–%d", k>>32, k&0xffffffff)
				require.Equal(t, n, hi)
			}
		}
		if tc.budget >= 1<<20 {
			require.Zero(t, c.Evictions())
		} else {
			require.Positive(t, c.Evictions())
		}
	}
}

// TestSortPairKeys checks the radix sort against slices.Sort on keys of
// every id width, including one digit shared by all keys.
func TestSortPairKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, w := range []int{1, 2, 5, 11, 12, 17, 23, 31} {
		for _, n := range []int{0, 1, 2, 3, 100, 5000} {
			keys := make([]uint64, n)
			for i := range keys {
				a, b := rng.IntN(1<<w), rng.IntN(1<<w)
				if w > 20 && i%2 == 0 {
					a = 7 // a digit shared by half of the keys
				}
				keys[i] = pairKey(a, b)
			}
			want := slices.Sorted(slices.Values(slices.Clone(keys)))
			got := sortPairKeys(keys, make([]uint64, n), w)
			require.Equal(t, len(want), len(got))
			require.True(t, slices.Equal(want, got), "w=%d n=%d", w, n)
		}
	}
}

// TestKthLargest checks the selection against a sort, on counts with many
// ties.
func TestKthLargest(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, n := range []int{1, 2, 3, 10, 1000} {
		for _, spread := range []int{1, 3, 1 << 20} {
			a := make([]uint64, n)
			for i := range a {
				a[i] = uint64(rng.IntN(spread))
			}
			sorted := slices.Sorted(slices.Values(a))
			for _, k := range []int{1, 2, n / 2, n} {
				if k < 1 || k > n {
					continue
				}
				require.Equal(t, sorted[n-k], kthLargest(slices.Clone(a), k), "n=%d k=%d", n, k)
			}
		}
	}
}
