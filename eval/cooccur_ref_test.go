package eval

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// refCooccur is the space-saving pair counter written plainly (a Go map
// from pair key to slot, a min-heap of slots on their counts): the
// reference that Cooccurrence's open-addressing table and heap must follow
// increment by increment, evictions (and so ties) included.
type refCooccur struct {
	maxPairs  int
	idx       map[uint64]int32
	keys      []uint64
	cnt, over []int64
	heap, pos []int32
	evictions int64
}

func (c *refCooccur) add(basket []int) {
	s := slices.Compact(slices.Sorted(slices.Values(basket)))
	for p, a := range s {
		for _, b := range s[p+1:] {
			c.inc(pairKey(a, b))
		}
	}
}

func (c *refCooccur) inc(key uint64) {
	if i, ok := c.idx[key]; ok {
		c.cnt[i]++
		if c.heap != nil {
			c.down(int(c.pos[i]))
		}
		return
	}
	if len(c.keys) < c.maxPairs {
		c.idx[key] = int32(len(c.keys))
		c.keys = append(c.keys, key)
		c.cnt = append(c.cnt, 1)
		c.over = append(c.over, 0)
		return
	}
	if c.heap == nil {
		c.heap, c.pos = make([]int32, len(c.keys)), make([]int32, len(c.keys))
		for i := range c.heap {
			c.heap[i], c.pos[i] = int32(i), int32(i)
		}
		for i := len(c.heap)/2 - 1; i >= 0; i-- {
			c.down(i)
		}
	}
	r := c.heap[0]
	delete(c.idx, c.keys[r])
	c.evictions++
	m := c.cnt[r]
	c.keys[r], c.cnt[r], c.over[r] = key, m+1, m
	c.idx[key] = r
	c.down(0)
}

func (c *refCooccur) down(i int) {
	h, n := c.heap, len(c.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && c.cnt[h[r]] < c.cnt[h[l]] {
			j = r
		}
		if c.cnt[h[i]] <= c.cnt[h[j]] {
			return
		}
		h[i], h[j] = h[j], h[i]
		c.pos[h[i]], c.pos[h[j]] = int32(i), int32(j)
		i = j
	}
}

// TestCooccurrenceFollowsReference checks that Cooccurrence holds the
// reference counter's pairs with its counts and overcounts, its evictions
// and its smallest held count, basket by basket, below and beyond the
// budget (the table growing, the heap built, pairs evicted and coming
// back). The scores depend on the held pairs and their counts only, so
// equal counts give the reference's evaluation.
func TestCooccurrenceFollowsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 3))
	for _, tc := range []struct{ n, size, budget int }{{40, 8, 1}, {40, 8, 5}, {60, 10, 300}, {200, 12, 2000}, {200, 12, 1 << 20}, {3000, 20, 5000}} {
		train := randBaskets(rng, 600, tc.n, tc.size)
		c, err := NewCooccurrence(tc.budget, 0)
		require.NoError(t, err)
		ref := &refCooccur{maxPairs: tc.budget, idx: map[uint64]int32{}}
		for b, s := range train {
			require.NoError(t, c.Add(s))
			ref.add(s)
			if b%50 != 49 && b != len(train)-1 {
				continue
			}
			require.Equal(t, len(ref.keys), c.Pairs())
			require.Equal(t, ref.evictions, c.Evictions())
			wantMin := int64(0)
			if ref.heap != nil {
				wantMin = ref.cnt[ref.heap[0]]
			}
			require.Equal(t, wantMin, c.MinCount())
			for s, k := range ref.keys {
				lo, hi := c.Count(int(k>>32), int(k&0xffffffff))
				require.Equal(t, ref.cnt[s]-ref.over[s], lo, "pair %d–%d", k>>32, k&0xffffffff)
				require.Equal(t, ref.cnt[s], hi)
			}
		}
		if tc.budget >= 1<<20 {
			require.Zero(t, c.Evictions())
		} else {
			require.Positive(t, c.Evictions())
		}
	}
}
