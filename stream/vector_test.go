package stream

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
)

// vectorOracle builds the oracle of the same implementation as ok over m's
// kernel, for vector items.
func vectorOracle(t *testing.T, okName string, m *ndpp.Model, k int) detcache.Oracle {
	t.Helper()
	var o detcache.Oracle
	var err error
	if okName == "naive" {
		o, err = detcache.NewNaiveKernel(ndpp.KernelOf(m), k)
	} else {
		o, err = detcache.NewFastKernel(ndpp.KernelOf(m), k)
	}
	require.NoError(t, err)
	return o
}

// chunky is a source that hands out a model's items as vectors in chunks of
// random sizes (buffers reused, as readers do).
type chunky struct {
	src LenSource
	rng *rand.Rand
}

func (c *chunky) Next(max int) ([]ndpp.Item, error) {
	return c.src.Next(1 + c.rng.IntN(max))
}

// TestVectorStreamsMatchModel: streaming a model's items as vectors (copies
// in reused buffers, in chunks of random sizes) through a solver on an
// oracle of the model's kernel gives the same solutions, values, evaluation,
// add and swap counts, stashes, trajectories and block-scoring skips as the
// model-backed run — every algorithm, both oracles, one at a time and with
// block scoring, without and with a diagonal (also k > 2d) and B = V.
func TestVectorStreamsMatchModel(t *testing.T) {
	seeds := 24
	if testing.Short() || raceEnabled {
		seeds = 10
	}
	var skipped int64
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		rng := rand.New(rand.NewPCG(seed, 41))
		var m *ndpp.Model
		if seed%4 == 0 {
			m = instance(seed)
		} else {
			d := 2 + rng.IntN(5)
			m = ndpp.Random(200+rng.IntN(300), d, seed, ndpp.RandomOptions{Shared: seed%3 == 0})
		}
		if seed%2 == 1 {
			m = withDiag(m, seed)
		}
		k := 1 + rng.IntN(maxK(m, 8))
		alpha := []float64{1, 1.01, 1.1}[rng.IntN(3)]
		order := RandomOrder(m.N(), seed)
		every := 1 + rng.IntN(100)
		for _, oracleOnly := range []bool{false, true} {
			for _, a := range algosOpt(alpha, []int{0, 2}[rng.IntN(2)], oracleOnly) {
				order := order
				if a.name == NameOnline2Neighbor {
					order = order[:min(len(order), 120)]
				}
				for _, ok := range oracleKinds() {
					for _, one := range []bool{false, true} {
						label := fmt.Sprintf("%s oracle-only=%v one=%v, %s", fmtLabel(seed, a.name, ok.name, k, alpha), oracleOnly, one, diagLabel(m))
						om, err := ok.new(m, k)
						require.NoError(t, err)
						sm, err := a.mk(om, k, len(order))
						require.NoError(t, err)
						var tm, tv []Point
						want, err := Run(context.Background(), sm, order, RunOptions{OneAtATime: one, Every: every, Trajectory: func(p Point) { tm = append(tm, p) }})
						require.NoError(t, err)

						sv, err := a.mk(vectorOracle(t, ok.name, m, k), k, len(order))
						require.NoError(t, err)
						src := &chunky{src: ModelSource(m, order), rng: rand.New(rand.NewPCG(seed, 3))}
						got, err := RunItems(context.Background(), sv, src, RunOptions{OneAtATime: one, Every: every, Trajectory: func(p Point) { tv = append(tv, p) }})
						require.NoError(t, err)
						require.Empty(t, cmp.Diff(want, got, ignoreTime), "%s: result (-model +vectors)", label)
						require.Empty(t, cmp.Diff(tm, tv), "%s: trajectory (-model +vectors)", label)
						if st, ok := sm.(interface{ Stash() []int }); ok {
							require.Equal(t, st.Stash(), sv.(interface{ Stash() []int }).Stash(), label)
						}
						if ls, ok := sm.(interface{ skippedItems() int64 }); ok {
							require.Equal(t, ls.skippedItems(), sv.(interface{ skippedItems() int64 }).skippedItems(), "%s: skipped items", label)
							skipped += ls.skippedItems()
						}
					}
				}
			}
		}
	}
	require.Positive(t, skipped, "block scoring skipped nothing")
}

// TestVectorSnapshotContinues: a solver of vector items saved mid-stream
// and restored into a fresh solver on a fresh oracle of the kernel
// continues exactly as the uninterrupted run (stash and previous item
// vectors travel in the snapshot); snapshots do not cross between
// model-backed and vector solvers.
func TestVectorSnapshotContinues(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		m := instance(seed)
		if seed%2 == 0 {
			m = withDiag(m, seed)
		}
		rng := rand.New(rand.NewPCG(seed, 5))
		k := 1 + rng.IntN(maxK(m, 4))
		order := RandomOrder(m.N(), seed)
		cut := rng.IntN(len(order) + 1)
		for _, a := range algos(1.05, []int{0, 2}[seed%2]) {
			for _, ok := range oracleKinds() {
				full, err := a.mk(vectorOracle(t, ok.name, m, k), k, len(order))
				require.NoError(t, err)
				want, err := RunItems(context.Background(), full, ModelSource(m, order), RunOptions{})
				require.NoError(t, err)

				first, _ := a.mk(vectorOracle(t, ok.name, m, k), k, len(order))
				_, err = RunItems(context.Background(), first, ModelSource(m, order[:cut]), RunOptions{})
				require.NoError(t, err)
				snap, err := first.MarshalBinary()
				require.NoError(t, err)
				second, _ := a.mk(vectorOracle(t, ok.name, m, k), k, len(order))
				_, err = RunItems(context.Background(), second, ModelSource(m, RandomOrder(m.N(), seed+99)[:len(order)/2]), RunOptions{})
				require.NoError(t, err)
				require.NoError(t, second.UnmarshalBinary(snap), "seed %d %s/%s: restore", seed, a.name, ok.name)
				got, err := RunItems(context.Background(), second, ModelSource(m, order[cut:]), RunOptions{})
				require.NoError(t, err)
				require.Empty(t, cmp.Diff(want, got, ignoreTime), "seed %d %s/%s cut %d: run (-uninterrupted +restored)", seed, a.name, ok.name, cut)

				om, _ := ok.new(m, k)
				sm, _ := a.mk(om, k, len(order))
				require.ErrorContains(t, sm.UnmarshalBinary(snap), "vector items")
				msnap, err := sm.MarshalBinary()
				require.NoError(t, err)
				require.ErrorContains(t, second.UnmarshalBinary(msnap), "model-backed")
			}
		}
	}
}

// TestVectorItemErrors: bad items are errors naming them, and the two kinds
// of solvers refuse each other's items.
func TestVectorItemErrors(t *testing.T) {
	m := ndpp.Random(30, 3, 1, ndpp.RandomOptions{})
	o, err := detcache.NewFastKernel(ndpp.KernelOf(m), 3)
	require.NoError(t, err)
	s, err := NewOnlineLSS(o, 3, Options{})
	require.NoError(t, err)
	require.ErrorIs(t, s.Observe(0), errVectors)
	require.ErrorContains(t, s.ObserveItem(ndpp.Item{ID: 4, V: []float64{1, 2}}), "item 4: v has 2 entries")
	items := []ndpp.Item{
		{ID: 0, V: []float64{1, 0, 0}, B: []float64{0, 1, 0}},
		{ID: 1, V: []float64{0, 1, 0}, B: []float64{1, 0, 0}},
		{ID: 1, V: []float64{0, 0, 1}, B: []float64{1, 0, 0}},
	}
	_, err = RunItems(context.Background(), s, SliceSource(items), RunOptions{})
	require.ErrorContains(t, err, "item 2 of the stream")
	require.ErrorContains(t, err, "item 1 is already in the solution")

	// An item whose scale would overflow the kernel's values (as
	// Model.CheckScale refuses a model), or with a NaN or an infinity, in
	// the middle of a batch: every algorithm, with and without block
	// scoring (which scores such an item with the others, proving nothing
	// about it), stops at it and has observed the items before it.
	for bi, bad := range []float64{1e80, -1e80, 1e76, math.NaN(), math.Inf(1), math.Inf(-1)} {
		for _, oracleOnly := range []bool{false, true} {
			for _, a := range algosOpt(DefaultAlpha, 0, oracleOnly) {
				huge := make([]ndpp.Item, 300)
				for i := range huge {
					huge[i] = ndpp.ModelItem(m, i%m.N())
					huge[i].V = append([]float64(nil), huge[i].V...)
					huge[i].B = append([]float64(nil), huge[i].B...)
					huge[i].ID = i
				}
				if bi%2 == 0 {
					huge[201].B[bi%3] = bad
				} else {
					huge[201].V[bi%3] = bad
				}
				s, err := a.mk(vectorOracle(t, "fast", m, 3), 3, len(huge))
				require.NoError(t, err)
				_, err = RunItems(context.Background(), s, SliceSource(huge), RunOptions{})
				if !math.IsNaN(bad) && !math.IsInf(bad, 0) {
					require.ErrorIs(t, err, ndpp.ErrOverflow, a.name)
					require.ErrorContains(t, err, "item 201 of the stream: stream: item 201: ndpp: the kernel's values overflow float64: its scale", a.name)
				} else {
					require.ErrorContains(t, err, "item 201 of the stream: stream: item 201: ", a.name)
					require.ErrorContains(t, err, fmt.Sprintf(" = %v is not finite", bad), a.name)
				}
				require.Equal(t, int64(201), s.Stats().Items, a.name)
			}
		}
	}

	om, _ := detcache.NewFast(m, 3)
	sm, _ := NewOnlineLSS(om, 3, Options{})
	require.ErrorContains(t, sm.ObserveItem(items[0]), "not an item of the solver's model")
	require.NoError(t, sm.ObserveItem(ndpp.ModelItem(m, 3)))

	// Stream-Partition needs n: a source may know it.
	n, known := SourceLen(ModelSource(m, IDOrder(7)))
	require.True(t, known)
	require.Equal(t, 7, n)
	_, known = SourceLen(&chunky{src: ModelSource(m, IDOrder(7))})
	require.False(t, known)
	src := SliceSource(nil)
	_, err = src.Next(5)
	require.ErrorIs(t, err, io.EOF)
}

// TestRunItemsAll: one pass over a source feeds several solvers, each with
// the result (and trajectory) of its own run.
func TestRunItemsAll(t *testing.T) {
	m := withDiag(ndpp.Random(400, 4, 3, ndpp.RandomOptions{}), 2)
	order := RandomOrder(m.N(), 3)
	var solvers []Solver
	var want []Result
	var wantTraj [][]Point
	for _, a := range algos(1.1, 0) {
		s, err := a.mk(vectorOracle(t, "fast", m, 6), 6, len(order))
		require.NoError(t, err)
		solvers = append(solvers, s)
		s2, _ := a.mk(vectorOracle(t, "fast", m, 6), 6, len(order))
		var tr []Point
		r, err := RunItems(context.Background(), s2, ModelSource(m, order), RunOptions{Every: 37, Trajectory: func(p Point) { tr = append(tr, p) }})
		require.NoError(t, err)
		want, wantTraj = append(want, r), append(wantTraj, tr)
	}
	got := make([][]Point, len(solvers))
	res, read, err := RunItemsAll(context.Background(), solvers, ModelSource(m, order), RunOptions{Every: 37, SolverTrajectory: func(i int, p Point) { got[i] = append(got[i], p) }})
	require.NoError(t, err)
	require.Positive(t, read)
	require.Empty(t, cmp.Diff(want, res, ignoreTime))
	require.Empty(t, cmp.Diff(wantTraj, got))
}

// TestSnapshotVersion2: a model-backed solver reads a snapshot of format
// version 2 (without the vector flag) and continues as from version 3.
func TestSnapshotVersion2(t *testing.T) {
	m := withDiag(instance(11), 3)
	order := RandomOrder(m.N(), 11)
	for _, a := range algos(1.05, 0) {
		o1, _ := detcache.NewFast(m, 3)
		s1, err := a.mk(o1, 3, len(order))
		require.NoError(t, err)
		_, err = Run(context.Background(), s1, order[:len(order)/2], RunOptions{})
		require.NoError(t, err)
		v3, err := s1.MarshalBinary()
		require.NoError(t, err)
		flag := 12 + 8 + len(a.name) + 8 + 32 + 8
		require.Equal(t, byte(0), v3[flag])
		v2 := append(append([]byte(nil), v3[:flag]...), v3[flag+1:len(v3)-4]...)
		binary.LittleEndian.PutUint32(v2[8:12], 2)
		v2 = binary.LittleEndian.AppendUint32(v2, crc32.Checksum(v2, crc32.MakeTable(crc32.Castagnoli)))
		var res [2]Result
		for i, snap := range [][]byte{v3, v2} {
			o, _ := detcache.NewFast(m, 3)
			s, _ := a.mk(o, 3, len(order))
			require.NoError(t, s.UnmarshalBinary(snap), a.name)
			res[i], err = Run(context.Background(), s, order[len(order)/2:], RunOptions{})
			require.NoError(t, err)
		}
		require.Empty(t, cmp.Diff(res[0], res[1], ignoreTime), a.name)
		vo, _ := detcache.NewFastKernel(ndpp.KernelOf(m), 3)
		vs, _ := a.mk(vo, 3, len(order))
		require.ErrorContains(t, vs.UnmarshalBinary(v2), "format version 2")
	}
}
