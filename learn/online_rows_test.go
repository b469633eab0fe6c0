package learn

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// TestRowIndex checks rowIndex against a map, over small, large and
// scattered ids (ids mapped to the map before the slice grew past them
// included).
func TestRowIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var x rowIndex
	want := map[int]int{}
	for r := 0; r < 20000; r++ {
		var id int
		switch r % 4 {
		case 0:
			id = rng.IntN(1 << 20)
		case 1:
			id = rng.IntN(1 << 40)
		default:
			id = rng.IntN(1 << 16)
		}
		if _, ok := want[id]; ok {
			continue
		}
		want[id] = r
		x.set(id, r)
	}
	for id, r := range want {
		got, ok := x.get(id)
		require.True(t, ok, "id %d", id)
		require.Equal(t, r, got, "id %d", id)
	}
	for i := 0; i < 20000; i++ {
		id := rng.IntN(1 << 21)
		r, ok := want[id]
		got, gok := x.get(id)
		require.Equal(t, ok, gok, "id %d", id)
		if ok {
			require.Equal(t, r, got, "id %d", id)
		}
	}
}

// reusingSource returns baskets in one buffer it overwrites at every call,
// and err after its baskets (a nil err: it panics).
type reusingSource struct {
	b   [][]int
	buf []int
	i   int
	err error
}

func (s *reusingSource) Next() ([]int, error) {
	if s.i == len(s.b) {
		if s.err == nil {
			panic("reusingSource: no more baskets")
		}
		return nil, s.err
	}
	s.buf = append(s.buf[:0], s.b[s.i]...)
	s.i++
	return s.buf, nil
}

// TestRunReadAhead checks a pass over a source read ahead
// (baskets.NewReadAhead, whose next basket Run brings into the caches)
// against one that reads it basket by basket: the same parameters bit for
// bit, from a source that reuses its buffer; and that a source's error, a
// bad basket and a panic in the source end the pass after the baskets
// before them.
func TestRunReadAhead(t *testing.T) {
	const chunk = 256 // baskets.ReadAhead's chunk of baskets
	data := benchBaskets(300, 3*chunk+17, 5)
	opt := OnlineOptions{D: 6, Seed: 2}
	ra := baskets.NewReadAhead(&reusingSource{b: data, err: io.EOF})
	ahead, err := TrainOnline(context.Background(), ra, opt, OnlineRun{})
	require.NoError(t, err)
	require.NoError(t, ra.Close())
	direct, err := TrainOnline(context.Background(), &reusingSource{b: data, err: io.EOF}, opt, OnlineRun{})
	require.NoError(t, err)
	require.Equal(t, len(data), ahead.Baskets)
	if diff := cmp.Diff(direct.Params, ahead.Params); diff != "" {
		t.Fatalf("read ahead vs basket by basket (-want +got):\n%s", diff)
	}

	bad := errors.New("bad source")
	o, err := NewOnline(opt)
	require.NoError(t, err)
	ra = baskets.NewReadAhead(&reusingSource{b: data[:chunk+3], err: bad})
	_, err = o.Run(context.Background(), ra, OnlineRun{})
	require.ErrorIs(t, err, bad)
	require.Equal(t, int64(chunk+3), o.Position())
	require.NoError(t, ra.Close())

	broken := append(append([][]int(nil), data[:10]...), []int{-1})
	o, err = NewOnline(opt)
	require.NoError(t, err)
	ra = baskets.NewReadAhead(baskets.SliceSource(append(broken, data...)))
	_, err = o.Run(context.Background(), ra, OnlineRun{})
	require.Error(t, err)
	require.Equal(t, int64(10), o.Position())
	require.NoError(t, ra.Close())

	// A panic in the source's Next reaches Run's caller, after the
	// baskets before it.
	o, err = NewOnline(opt)
	require.NoError(t, err)
	ra = baskets.NewReadAhead(&reusingSource{b: data[:20]})
	require.PanicsWithValue(t, "reusingSource: no more baskets", func() {
		_, _ = o.Run(context.Background(), ra, OnlineRun{})
	})
	require.Equal(t, int64(20), o.Position())
	require.NoError(t, ra.Close())
}

// TestItemRows checks that itemRows keeps every row's values and hands
// out zero rows as it grows, one row at a time and in jumps, across the
// first chunk's doublings and the chunk boundaries.
func TestItemRows(t *testing.T) {
	for _, steps := range [][]int{{1}, {3, 1, 2*itemChunk + 5}, {itemChunk - 1, 1, 1, itemChunk}} {
		s := itemRows{stride: 3}
		n := 0
		for _, k := range steps {
			for range k {
				s.grow(n + 1)
				require.Equal(t, []float64{0, 0, 0}, s.row(n), "new row %d", n)
				r := s.row(n)
				r[0], r[1], r[2] = float64(n), float64(-n), 1
				n++
			}
			s.grow(n + k) // a jump, then back to one at a time
			for i := n; i < n+k; i++ {
				require.Equal(t, []float64{0, 0, 0}, s.row(i), "row %d after a jump", i)
				r := s.row(i)
				r[0], r[1], r[2] = float64(i), float64(-i), 1
			}
			n += k
			s.grow(n - 1) // not a shrink
			require.Equal(t, n, s.n)
		}
		for i := range n {
			require.Equal(t, []float64{float64(i), float64(-i), 1}, s.row(i), "row %d", i)
		}
	}
}
