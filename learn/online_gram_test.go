package learn

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	gblas "gonum.org/v1/gonum/blas"

	"github.com/ndpp-go/ndpp/blas"
)

// TestGramShared checks the recomputation of G shared between the job and
// a helper (gramShared, normPipe.help), and a job launched and waited for
// (run by the worker or by the waiting goroutine), against blas.Syrk,
// mirrored: the same bits, whoever computes which rows (on the pure-Go
// backend; on another gramShared is gramFrom).
func TestGramShared(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, d := range []int{1, 2, 3, 5, 30, 31} {
		for _, k := range []int{0, 1, 7, 500, gramBlock, 3*gramBlock + 5} {
			t.Run(fmt.Sprintf("d=%d/k=%d", d, k), func(t *testing.T) {
				m := 2 * d
				z := make([]float64, k*m)
				for i := range z {
					z[i] = rng.NormFloat64()
				}
				want := make([]float64, m*m)
				if k > 0 {
					blas.Syrk(gblas.Trans, m, k, 1, z, m, 0, want, m)
				}
				for r := 0; r < m; r++ {
					for s := r + 1; s < m; s++ {
						want[s*m+r] = want[r*m+s]
					}
				}
				for _, help := range []bool{false, true} {
					np := newNormPipe(d, 1)
					for i := range np.nw.g {
						np.nw.g[i] = rng.NormFloat64() // overwritten
					}
					np.job = normJob{full: true, zs: z, c: make([]float64, d*d)}
					if help {
						// Another goroutine claims groups as the job offers them.
						var stop atomic.Bool
						helped := make(chan struct{})
						go func() {
							defer close(helped)
							for !stop.Load() {
								np.help()
								runtime.Gosched()
							}
						}()
						np.run()
						stop.Store(true)
						<-helped
					} else {
						np.launch(false)
						np.wait()
					}
					require.Equal(t, want, np.nw.g, "helped: %v", help)
				}
			})
		}
	}
}

// TestGramGroup checks each group of gramUnit against blas.Syrk's rows on
// the pure-Go backend (Z in one block and in several), and that the groups
// together write exactly the upper triangle, whatever the units.
func TestGramGroup(t *testing.T) {
	if !pureGoBLAS() {
		t.Skip("gramUnit matches blas.Syrk on the pure-Go backend only")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, m := range []int{4, 6, 10, 60, 62} {
		for _, k := range []int{33, 2*gramBlock + 1} {
			z := make([]float64, k*m)
			for i := range z {
				z[i] = rng.NormFloat64()
			}
			want := make([]float64, m*m)
			blas.Syrk(gblas.Trans, m, k, 1, z, m, 0, want, m)
			got := make([]float64, m*m)
			y := make([]float64, 4*m*((m+3)/4))
			for gi := (m+3)/4 - 1; gi >= 0; gi-- { // any order, one group a unit
				gramUnit(got, z, k, m, gi, gi+1, y)
			}
			got2 := make([]float64, m*m)
			newGramTask(z, k, m, got2).work(nil)
			require.Equal(t, got, got2, "m = %d, k = %d: units of newGramTask", m, k)
			for r := 0; r < m; r++ {
				for s := 0; s < r; s++ {
					want[r*m+s] = 0 // Syrk does not reference the lower triangle
				}
			}
			require.Equal(t, want, got, "m = %d, k = %d", m, k)
		}
	}
}

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

// TestRunPrefetch checks a pass that reads its source ahead (Run without
// MaxBaskets or TraceSource) against one that reads it basket by basket
// (MaxBaskets): the same parameters bit for bit, from a source that reuses
// its buffer; and that a source's error, a bad basket and a panic in the
// source end the pass after the baskets before them.
func TestRunPrefetch(t *testing.T) {
	data := benchBaskets(300, 3*prefetchBaskets+17, 5)
	opt := OnlineOptions{D: 6, Seed: 2}
	ahead, err := TrainOnline(&reusingSource{b: data, err: io.EOF}, opt, OnlineRun{})
	require.NoError(t, err)
	direct, err := TrainOnline(SliceSource(data), opt, OnlineRun{MaxBaskets: int64(len(data))})
	require.NoError(t, err)
	require.Equal(t, len(data), ahead.Baskets)
	if diff := cmp.Diff(direct.Params, ahead.Params); diff != "" {
		t.Fatalf("read ahead vs basket by basket (-want +got):\n%s", diff)
	}

	bad := errors.New("bad source")
	o, err := NewOnline(opt)
	require.NoError(t, err)
	_, err = o.Run(&reusingSource{b: data[:prefetchBaskets+3], err: bad}, OnlineRun{})
	require.ErrorIs(t, err, bad)
	require.Equal(t, int64(prefetchBaskets+3), o.Position())

	broken := append(append([][]int(nil), data[:10]...), []int{-1})
	for len(broken) < 10+(prefetchChunks+4)*prefetchBaskets {
		broken = append(broken, data...)
	}
	o, err = NewOnline(opt)
	require.NoError(t, err)
	src := &reusingSource{b: broken, err: io.EOF}
	_, err = o.Run(src, OnlineRun{})
	require.Error(t, err)
	require.Equal(t, int64(10), o.Position())
	require.LessOrEqual(t, src.i, 10+(prefetchChunks+3)*prefetchBaskets, "the source was read on after the pass stopped")

	// A panic in the source's Next reaches Run's caller, after the
	// baskets before it.
	o, err = NewOnline(opt)
	require.NoError(t, err)
	require.PanicsWithValue(t, "reusingSource: no more baskets", func() {
		_, _ = o.Run(&reusingSource{b: data[:20]}, OnlineRun{})
	})
	require.Equal(t, int64(20), o.Position())
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
