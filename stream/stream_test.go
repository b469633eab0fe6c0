package stream

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/internal/ndpptest"
	"github.com/ndpp-go/ndpp/ndpp"
)

// Tolerances.
const (
	logTol = 1e-8 // agreement of log-determinants computed two ways
)

// oracleKind builds an oracle of one implementation.
type oracleKind struct {
	name string
	new  func(m *ndpp.Model, k int) (detcache.Oracle, error)
}

func naiveKind() oracleKind {
	return oracleKind{"naive", func(m *ndpp.Model, k int) (detcache.Oracle, error) { return detcache.NewNaive(m, k) }}
}

// oracleKinds lists every oracle implementation the algorithms are tested on.
func oracleKinds() []oracleKind { return append([]oracleKind{naiveKind()}, extraKinds...) }

// extraKinds holds further oracle implementations (see fast_test.go).
var extraKinds []oracleKind

// instance is a seeded random test model, sometimes near-singular.
func instance(seed uint64) *ndpp.Model {
	rng := rand.New(rand.NewPCG(seed, 7))
	d := 1 + rng.IntN(4)
	n := 2*d + 2 + rng.IntN(20)
	m := ndpp.Random(n, d, seed, ndpp.RandomOptions{Shared: rng.IntN(3) == 0, BlockDiagonal: rng.IntN(2) == 0})
	if rng.IntN(3) != 0 {
		return m
	}
	// Near-singular: some items are (almost) copies or multiples of others,
	// some are tiny.
	v, b, _, c := m.Rows()
	v, b = slices.Clone(v), slices.Clone(b)
	if m.Shared() {
		b = nil
	}
	for r := 0; r < n/3; r++ {
		i, j := rng.IntN(n), rng.IntN(n)
		s := rng.NormFloat64()
		noise := []float64{0, 1e-13, 1e-9, 1e-6}[rng.IntN(4)]
		for q := 0; q < d; q++ {
			v[i*d+q] = s*v[j*d+q] + noise*rng.NormFloat64()
			if b != nil {
				b[i*d+q] = s*b[j*d+q] + noise*rng.NormFloat64()
			}
		}
	}
	if rng.IntN(2) == 0 {
		i := rng.IntN(n)
		for q := 0; q < d; q++ {
			v[i*d+q] *= 1e-150
			if b != nil {
				b[i*d+q] *= 1e-150
			}
		}
	}
	mm, err := ndpp.NewFromRows(n, d, v, b, c)
	if err != nil {
		panic(err)
	}
	return mm
}

// withDiag returns m with a seeded diagonal added (V, B and C unchanged):
// the scale and whether it is partial follow the seed (ndpptest.DiagCase).
func withDiag(m *ndpp.Model, seed uint64) *ndpp.Model {
	scale, partial := ndpptest.DiagCase(seed)
	dm, err := ndpptest.WithDiag(m, scale, seed, partial)
	if err != nil {
		panic(err)
	}
	return dm
}

// diagLabel describes a test model's diagonal.
func diagLabel(m *ndpp.Model) string {
	if !m.HasDiag() {
		return "no diagonal"
	}
	lo, hi := math.Inf(1), 0.0
	for i := 0; i < m.N(); i++ {
		lo, hi = min(lo, m.ItemDiag(i)), max(hi, m.ItemDiag(i))
	}
	return fmt.Sprintf("diagonal in [%.3g, %.3g]", lo, hi)
}

// maxK is the largest k the tests draw for m: limit, capped by the rank
// bound MaxRank; with a diagonal up to 2d + 2 (sets beyond 2d have non-zero
// determinants), capped by limit + 2 and n.
func maxK(m *ndpp.Model, limit int) int {
	if m.HasDiag() {
		return min(m.N(), max(limit, 2*m.D()+2), limit+2)
	}
	return min(m.MaxRank(), limit)
}

type algo struct {
	name string
	mk   func(o oracleArg, k, n int) (Solver, error)
	ref  func(m *ndpp.Model, k int, order []int) refOut
}

func algos(alpha float64, stashCap int) []algo { return algosOpt(alpha, stashCap, false) }

func algosOpt(alpha float64, stashCap int, oracleOnly bool) []algo {
	opt := Options{Alpha: alpha, StashCap: stashCap, OracleOnly: oracleOnly}
	return []algo{
		{NameStreamPartition,
			func(o detcache.Oracle, k, n int) (Solver, error) { return NewStreamPartition(o, k, n, opt) },
			func(m *ndpp.Model, k int, order []int) refOut { return refPartition(m, k, order) }},
		{NameOnlineLSS,
			func(o detcache.Oracle, k, n int) (Solver, error) { return NewOnlineLSS(o, k, opt) },
			func(m *ndpp.Model, k int, order []int) refOut {
				return refLocal(m, k, order, alpha, true, false, stashCap)
			}},
		{NameOnline2Neighbor,
			func(o detcache.Oracle, k, n int) (Solver, error) { return NewOnline2Neighbor(o, k, opt) },
			func(m *ndpp.Model, k int, order []int) refOut {
				return refLocal(m, k, order, alpha, true, true, stashCap)
			}},
		{NameOnlineGreedy,
			func(o detcache.Oracle, k, n int) (Solver, error) {
				return NewOnlineGreedy(o, k, Options{OracleOnly: oracleOnly})
			},
			func(m *ndpp.Model, k int, order []int) refOut { return refLocal(m, k, order, 1, false, false, 0) }},
	}
}

func runSolver(t *testing.T, s Solver, order []int) Result {
	t.Helper()
	res, err := Run(context.Background(), s, order, RunOptions{})
	require.NoError(t, err)
	return res
}

// TestAgainstDirect: every algorithm, on every oracle, gives the solution of
// the direct implementation on hundreds of seeded random streams (some
// near-singular; a third with a diagonal, there also with k > 2d), with the
// same counters.
func TestAgainstDirect(t *testing.T) {
	streams := 240
	if testing.Short() || raceEnabled {
		streams = 60
	}
	for seed := uint64(1); seed <= uint64(streams+streams/2); seed++ {
		m := instance(seed)
		if seed > uint64(streams) { // the last third with a diagonal
			m = withDiag(m, seed)
		}
		rng := rand.New(rand.NewPCG(seed, 11))
		k := 1 + rng.IntN(maxK(m, 5))
		alpha := []float64{1, 1.01, 1.1, 2}[rng.IntN(4)]
		stashCap := []int{0, 0, 1, 3}[rng.IntN(4)]
		order := IDOrder(m.N())
		if seed%2 == 0 {
			order = RandomOrder(m.N(), seed)
		}
		for _, a := range algosOpt(alpha, stashCap, seed%3 == 0) {
			want := a.ref(m, k, order)
			for _, ok := range oracleKinds() {
				label := fmtLabel(seed, a.name, ok.name, k, alpha) + ", " + diagLabel(m)
				o, err := ok.new(m, k)
				require.NoError(t, err)
				s, err := a.mk(o, k, len(order))
				require.NoError(t, err)
				res := runSolver(t, s, order)
				require.Equal(t, want.sol, res.Solution, "%s cap=%d: solution (direct, oracle)", label, stashCap)
				if ok.name == "naive" {
					require.Equal(t, [3]int64{want.evals, want.swaps, want.adds}, [3]int64{res.Evals, res.Swaps, res.Adds}, "%s: evals, swaps, adds", label)
				}
				require.Equal(t, [3]int{int(want.swaps), want.peak, len(want.stash)}, [3]int{int(res.Swaps), res.PeakStash, res.Stash}, "%s: swaps, peak stash, stash", label)
				if ls, ok2 := s.(interface{ Stash() []int }); ok2 {
					require.Empty(t, cmp.Diff(want.stash, ls.Stash(), cmpopts.EquateEmpty()), "%s: stash (-direct +oracle)", label)
				}
				dv := direct(m, res.Solution)
				require.Equal(t, dv.Zero, res.Value.Zero, "%s: value %v, direct %v", label, res.Value, dv)
				if !dv.Zero {
					require.InDelta(t, dv.Log, res.Value.Log, logTol*(1+math.Abs(dv.Log)), "%s: value", label)
				}
				if stashCap > 0 {
					require.LessOrEqual(t, res.PeakStash, stashCap, "%s: peak stash above the cap", label)
				}
			}
		}
	}
}

// TestHardInstance: V = 0, B = I (n = d items), C block-diagonal with blocks
// [[0, x], [−x, 0]]. Every singleton has determinant 0, so for k = 2 every
// online algorithm ends with an empty solution (f_k = 0) while the optimum
// is x². With a diagonal added, every algorithm fills its solution.
func TestHardInstance(t *testing.T) {
	for _, dd := range []int{2, 4, 8} {
		n := dd
		v := make([]float64, n*dd)
		b := make([]float64, n*dd)
		c := make([]float64, dd*dd)
		for i := 0; i < n; i++ {
			b[i*dd+i] = 1
		}
		x := 1.5
		for j := 0; j+1 < dd; j += 2 {
			c[j*dd+j+1], c[(j+1)*dd+j] = x, -x
		}
		m, err := ndpp.NewFromRows(n, dd, v, b, c)
		require.NoError(t, err)
		const k = 2
		opt, err := ExactMAP(context.Background(), m, k, nil)
		require.NoError(t, err)
		require.False(t, opt.Value.Zero, "d=%d: exact MAP value zero", dd)
		require.InDelta(t, 2*math.Log(x), opt.Value.Log, logTol, "d=%d: exact MAP value, want log x²", dd)
		for _, a := range algos(DefaultAlpha, 0) {
			for _, ok := range oracleKinds() {
				o, err := ok.new(m, k)
				require.NoError(t, err)
				s, err := a.mk(o, k, n)
				require.NoError(t, err)
				res := runSolver(t, s, IDOrder(n))
				require.Empty(t, res.Solution, "d=%d %s/%s: want ∅", dd, a.name, ok.name)
				require.True(t, res.Objective().Zero, "d=%d %s/%s: want f = 0", dd, a.name, ok.name)
				require.Equal(t, int64(n), res.Evals, "d=%d %s/%s: want one evaluation per item", dd, a.name, ok.name)
			}
		}
		// Offline greedy: no singleton has a positive gain either.
		g, err := OfflineGreedy(context.Background(), m, k, GreedyOptions{})
		require.NoError(t, err)
		require.Empty(t, g.Solution, "d=%d offline greedy: want ∅", dd)
		require.True(t, g.Objective().Zero, "d=%d offline greedy: want f = 0", dd)

		// With a diagonal the instance is no longer hard: every singleton
		// has det δ > 0, and every algorithm fills S.
		delta := make([]float64, n)
		for i := range delta {
			delta[i] = 0.1
		}
		md, err := ndpp.NewFromRows(n, dd, v, b, c, ndpp.WithDiag(delta))
		require.NoError(t, err)
		for _, kd := range []int{2, min(n, dd+1)} {
			opt, err := ExactMAP(context.Background(), md, kd, nil)
			require.NoError(t, err)
			require.False(t, opt.Value.Zero)
			for _, a := range algos(DefaultAlpha, 0) {
				for _, ok := range oracleKinds() {
					o, err := ok.new(md, kd)
					require.NoError(t, err)
					s, err := a.mk(o, kd, n)
					require.NoError(t, err)
					res := runSolver(t, s, IDOrder(n))
					require.Len(t, res.Solution, kd, "d=%d k=%d %s/%s with a diagonal", dd, kd, a.name, ok.name)
					require.False(t, res.Objective().Zero)
					require.LessOrEqual(t, res.Value.Log, opt.Value.Log+logTol)
				}
			}
			g, err := OfflineGreedy(context.Background(), md, kd, GreedyOptions{})
			require.NoError(t, err)
			require.Len(t, g.Solution, kd)
		}
	}
}

// TestApproximationRatios compares each algorithm with exact MAP on small n,
// on models without and with a diagonal (then k up to 2d + 2): no algorithm
// may beat the optimum, and the ratios f(S)/OPT are logged.
func TestApproximationRatios(t *testing.T) {
	for _, withD := range []bool{false, true} {
		approximationRatios(t, withD)
	}
}

func approximationRatios(t *testing.T, withD bool) {
	const instances = 40
	sum := map[string]float64{}
	worst := map[string]float64{}
	names := []string{}
	for seed := uint64(1000); seed < 1000+instances; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		d := 2 + rng.IntN(3)
		n := 14
		k := 2 + rng.IntN(3)
		m := ndpp.Random(n, d, seed, ndpp.RandomOptions{})
		if withD {
			m = withDiag(m, seed)
			k = 2 + rng.IntN(2*d+1) // up to 2d + 2
		}
		opt, err := ExactMAP(context.Background(), m, k, nil)
		require.NoError(t, err)
		require.False(t, opt.Value.Zero, "seed %d: generic model with zero optimum", seed)
		require.InDelta(t, direct(m, opt.Solution).Log, opt.Value.Log, logTol, "seed %d: exact value", seed)
		record := func(name string, r Result) {
			ratio := 0.0
			if ob := r.Objective(); !ob.Zero {
				require.LessOrEqual(t, ob.Log, opt.Value.Log+logTol, "seed %d %s: value beats the exact optimum", seed, name)
				ratio = math.Exp(ob.Log - opt.Value.Log)
			}
			if _, seen := worst[name]; !seen {
				names = append(names, name)
				worst[name] = 1
			}
			sum[name] += ratio
			worst[name] = min(worst[name], ratio)
		}
		for _, a := range algos(DefaultAlpha, 0) {
			o, _ := detcache.NewNaive(m, k)
			s, err := a.mk(o, k, n)
			require.NoError(t, err)
			record(a.name, runSolver(t, s, RandomOrder(n, seed)))
		}
		g, err := OfflineGreedy(context.Background(), m, k, GreedyOptions{})
		require.NoError(t, err)
		record(NameOfflineGreedy, g)
	}
	for _, name := range names {
		mean := sum[name] / instances
		t.Logf("diagonal %-5v %-17s mean f(S)/OPT %.3f, worst %.3f (n=14, k=2..4 (2..2d+2 with a diagonal), d=2..4, random order)", withD, name, mean, worst[name])
		// Sanity bounds: the local-search and greedy algorithms are far
		// from random on these instances.
		if name != NameStreamPartition {
			require.GreaterOrEqual(t, mean, 0.3, "%s: mean ratio implausibly low", name)
		}
		require.True(t, mean > 0 && mean <= 1+1e-9, "%s: mean ratio %.3f outside (0, 1]", name, mean)
	}
}

// TestSnapshotContinues: saving the state mid-stream and restoring it into a
// fresh solver on a fresh oracle continues with identical results (models
// without and with a diagonal). A snapshot does not restore onto a model
// with another diagonal.
func TestSnapshotContinues(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		m := instance(seed)
		if seed > 40 {
			m = withDiag(m, seed)
		}
		rng := rand.New(rand.NewPCG(seed, 5))
		k := 1 + rng.IntN(maxK(m, 4))
		order := RandomOrder(m.N(), seed)
		cut := rng.IntN(len(order) + 1)
		for _, a := range algos(1.05, []int{0, 2}[seed%2]) {
			for _, ok := range oracleKinds() {
				o1, _ := ok.new(m, k)
				full, err := a.mk(o1, k, len(order))
				require.NoError(t, err)
				want := runSolver(t, full, order)

				o2, _ := ok.new(m, k)
				first, _ := a.mk(o2, k, len(order))
				runSolver(t, first, order[:cut])
				snap, err := first.MarshalBinary()
				require.NoError(t, err)
				o3, _ := ok.new(m, k)
				second, _ := a.mk(o3, k, len(order))
				// Give the second solver a history of its own first: the
				// restore must replace all of it.
				runSolver(t, second, RandomOrder(m.N(), seed+99))
				require.NoError(t, second.UnmarshalBinary(snap), "seed %d %s/%s: restore", seed, a.name, ok.name)
				got := runSolver(t, second, order[cut:])
				require.Empty(t, cmp.Diff(want, got, ignoreTime), "seed %d %s/%s cut %d: run (-uninterrupted +restored)", seed, a.name, ok.name, cut)
				// A damaged snapshot is an error.
				require.Error(t, second.UnmarshalBinary(snap[:len(snap)/2]), "%s: truncated snapshot accepted", a.name)
				require.Error(t, second.UnmarshalBinary([]byte("garbage")), "%s: garbage snapshot accepted", a.name)
			}
		}
	}
	for _, ok := range oracleKinds() {
		m := withDiag(instance(7), 1)
		o1, _ := ok.new(m, 3)
		s1, _ := NewOnlineLSS(o1, 3, Options{})
		runSolver(t, s1, RandomOrder(m.N(), 1))
		snap, err := s1.MarshalBinary()
		require.NoError(t, err)
		for _, other := range []*ndpp.Model{instance(7), withDiag(instance(7), 2)} {
			o2, _ := ok.new(other, 3)
			s2, _ := NewOnlineLSS(o2, 3, Options{})
			require.ErrorContains(t, s2.UnmarshalBinary(snap), "diagonal", "%s: snapshot restored onto %s", ok.name, diagLabel(other))
		}
	}
	m := instance(3)
	o1, _ := detcache.NewNaive(m, 2)
	lss, _ := NewOnlineLSS(o1, 2, Options{})
	snap, _ := lss.MarshalBinary()
	o2, _ := detcache.NewNaive(m, 2)
	g, _ := NewOnlineGreedy(o2, 2, Options{})
	require.ErrorContains(t, g.UnmarshalBinary(snap), `snapshot of "online-lss" cannot restore a "online-greedy" solver`)
}

// TestSnapshotRejectsAnyChangedByte: changing any one byte of a solver's
// snapshot (its own fields, the oracle's embedded state, the header or the
// checksum) is refused, and leaves the solver as it was.
func TestSnapshotRejectsAnyChangedByte(t *testing.T) {
	for _, m := range []*ndpp.Model{instance(5), withDiag(instance(5), 4)} {
		snapshotRejectsAnyChangedByte(t, m)
	}
}

func snapshotRejectsAnyChangedByte(t *testing.T, m *ndpp.Model) {
	k := min(m.MaxRank(), 3)
	for _, a := range algos(1.05, 2) {
		for _, ok := range oracleKinds() {
			o1, _ := ok.new(m, k)
			src, err := a.mk(o1, k, m.N())
			require.NoError(t, err)
			runSolver(t, src, RandomOrder(m.N(), 5)[:m.N()/2])
			snap, err := src.MarshalBinary()
			require.NoError(t, err)
			o2, _ := ok.new(m, k)
			dst, _ := a.mk(o2, k, m.N())
			before, _ := dst.MarshalBinary()
			for i := range snap {
				for _, x := range []byte{0x01, 0x80, 0xff} {
					bad := slices.Clone(snap)
					bad[i] ^= x
					require.Error(t, dst.UnmarshalBinary(bad), "%s/%s: byte %d ^ %#x of %d accepted", a.name, ok.name, i, x, len(snap))
				}
			}
			after, _ := dst.MarshalBinary()
			require.Equal(t, before, after, "%s/%s: a refused snapshot changed the solver", a.name, ok.name)
			require.NoError(t, dst.UnmarshalBinary(snap))
		}
	}
}

// TestSnapshotRefusesOldFormat: a snapshot of the format before binfmt
// (version 1) is refused with an error naming the version.
func TestSnapshotRefusesOldFormat(t *testing.T) {
	m := instance(5)
	o, _ := detcache.NewNaive(m, 2)
	s, _ := NewOnlineLSS(o, 2, Options{})
	old := binary.LittleEndian.AppendUint64([]byte("NDPPSTRM"), 1)
	old = binary.LittleEndian.AppendUint64(old, uint64(len(NameOnlineLSS)))
	old = append(old, NameOnlineLSS...)
	old = append(old, make([]byte, 64)...)
	require.ErrorContains(t, s.UnmarshalBinary(old), "format version 1")
}

// TestValidation: bad parameters and items are errors, never panics.
func TestValidation(t *testing.T) {
	m := ndpp.Random(10, 2, 1, ndpp.RandomOptions{})
	o, _ := detcache.NewNaive(m, 4)
	cases := []struct {
		name string
		f    func() error
	}{
		{"k=0", func() error { _, err := NewOnlineLSS(o, 0, Options{}); return err }},
		{"k>2d", func() error { _, err := NewOnlineLSS(o, 5, Options{}); return err }},
		{"k>cap", func() error {
			o3, _ := detcache.NewNaive(m, 2)
			_, err := NewOnlineGreedy(o3, 3, Options{})
			return err
		}},
		{"α<1", func() error { _, err := NewOnlineLSS(o, 2, Options{Alpha: 0.9}); return err }},
		{"α=NaN", func() error { _, err := NewOnline2Neighbor(o, 2, Options{Alpha: math.NaN()}); return err }},
		{"α=Inf", func() error { _, err := NewOnline2Neighbor(o, 2, Options{Alpha: math.Inf(1)}); return err }},
		{"cap<0", func() error { _, err := NewOnlineLSS(o, 2, Options{StashCap: -1}); return err }},
		{"nil oracle", func() error { _, err := NewOnlineLSS(nil, 2, Options{}); return err }},
		{"partition k>N", func() error {
			small := ndpp.Random(3, 2, 1, ndpp.RandomOptions{})
			o3, _ := detcache.NewNaive(small, 3)
			_, err := NewStreamPartition(o3, 4, 3, Options{})
			return err
		}},
		{"partition n=0", func() error { _, err := NewStreamPartition(o, 1, 0, Options{}); return err }},
		{"greedy k>n", func() error {
			_, err := OfflineGreedy(context.Background(), m, 3, GreedyOptions{Items: []int{1, 2}})
			return err
		}},
		{"greedy k>2d", func() error { _, err := OfflineGreedy(context.Background(), m, 5, GreedyOptions{}); return err }},
		{"greedy k=0", func() error { _, err := OfflineGreedy(context.Background(), m, 0, GreedyOptions{}); return err }},
		{"greedy bad item", func() error {
			_, err := OfflineGreedy(context.Background(), m, 1, GreedyOptions{Items: []int{10}})
			return err
		}},
		{"greedy dup item", func() error {
			_, err := OfflineGreedy(context.Background(), m, 1, GreedyOptions{Items: []int{1, 1}})
			return err
		}},
		{"exact too big", func() error {
			_, err := ExactMAP(context.Background(), ndpp.Random(200, 4, 1, ndpp.RandomOptions{}), 8, nil)
			return err
		}},
		{"exact k>n", func() error { _, err := ExactMAP(context.Background(), m, 3, []int{0, 1}); return err }},
		{"trajectory every<0", func() error {
			s, _ := NewOnlineLSS(o, 2, Options{})
			_, err := Run(context.Background(), s, []int{1}, RunOptions{Every: -1})
			return err
		}},
	}
	for _, c := range cases {
		require.Error(t, c.f(), c.name)
	}
	// B = V: the rank is d; with a diagonal k may exceed 2d (up to n).
	shared := ndpp.Random(10, 2, 1, ndpp.RandomOptions{Shared: true})
	_, err := OfflineGreedy(context.Background(), shared, 3, GreedyOptions{})
	require.ErrorContains(t, err, "exceeds d = 2")
	_, err = ExactMAP(context.Background(), shared, 3, nil)
	require.ErrorContains(t, err, "exceeds d = 2")
	_, err = OfflineGreedy(context.Background(), m, 5, GreedyOptions{})
	require.ErrorContains(t, err, "exceeds 2d = 4")
	md := ndpp.Random(10, 2, 1, ndpp.RandomOptions{Diag: 0.5})
	od, _ := detcache.NewNaive(md, 7)
	_, err = NewOnlineLSS(od, 7, Options{})
	require.NoError(t, err)
	g, err := OfflineGreedy(context.Background(), md, 7, GreedyOptions{})
	require.NoError(t, err)
	require.Len(t, g.Solution, 7)
	_, err = OfflineGreedy(context.Background(), md, 11, GreedyOptions{})
	require.ErrorContains(t, err, "exceeds the number of items n = 10")
	for _, a := range algos(1.1, 0) {
		o, _ := detcache.NewNaive(m, 2)
		s, err := a.mk(o, 2, 10)
		require.NoError(t, err)
		for _, bad := range []int{-1, 10, 1 << 40} {
			require.Error(t, s.Observe(bad), "%s: item %d accepted", a.name, bad)
		}
		require.Equal(t, Stats{}, s.Stats(), "%s: rejected items changed the state", a.name)
		// An item of the solution arriving again is an error.
		for i := 0; i < 10 && len(s.Solution()) == 0; i++ {
			require.NoError(t, s.Observe(i))
		}
		if sol := s.Solution(); len(sol) > 0 {
			require.Error(t, s.Observe(sol[0]), "%s: item %d of the solution accepted again", a.name, sol[0])
		}
	}
	o4, _ := detcache.NewNaive(m, 2)
	sp, _ := NewStreamPartition(o4, 2, 3, Options{})
	for i := 0; i < 3; i++ {
		require.NoError(t, sp.Observe(i))
	}
	require.Error(t, sp.Observe(5), "stream-partition accepted an item beyond n")
}

// TestPartitionShapes: n < k and n not a multiple of k.
func TestPartitionShapes(t *testing.T) {
	m := ndpp.Random(40, 6, 9, ndpp.RandomOptions{})
	for _, k := range []int{1, 3, 7, 10} {
		for _, n := range []int{1, k - 1, k, k + 1, 2*k - 1, 3*k + 2, 40} {
			if n < 1 {
				continue
			}
			if n > 40 {
				continue
			}
			order := RandomOrder(40, uint64(n*100+k))[:n]
			o, _ := detcache.NewNaive(m, k)
			s, err := NewStreamPartition(o, k, n, Options{})
			require.NoError(t, err)
			res := runSolver(t, s, order)
			want := refPartition(m, k, order)
			require.Equal(t, want.sol, res.Solution, "k=%d n=%d: solution (direct, oracle)", k, n)
			require.Len(t, res.Solution, min(k, n), "k=%d n=%d: |S| on a generic model", k, n)
		}
	}
}

// TestOfflineGreedy compares the incremental greedy with the direct one
// (fresh determinant per candidate), also restricted to a candidate subset,
// with several workers, and on models with a diagonal (also k > 2d).
func TestOfflineGreedy(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		m := instance(seed)
		if seed > 200 { // with a diagonal
			m = withDiag(m, seed)
		}
		rng := rand.New(rand.NewPCG(seed, 13))
		k := 1 + rng.IntN(maxK(m, m.N()))
		var cands []int
		if seed%3 == 0 {
			cands = RandomOrder(m.N(), seed)[:k+rng.IntN(m.N()-k+1)]
		}
		res, err := OfflineGreedy(context.Background(), m, k, GreedyOptions{Items: cands})
		require.NoError(t, err)
		want := refGreedy(m, k, cands)
		require.Equal(t, want, res.Solution, "seed %d k=%d %s: solution (direct, greedy); values %v, %v", seed, k, diagLabel(m), direct(m, want), res.Value)
	}
	// A diagonal, k > 2d, several workers: the brute-force greedy's solution.
	md := ndpp.Random(3000, 4, 5, ndpp.RandomOptions{Diag: 0.05})
	res, err := OfflineGreedy(context.Background(), md, 14, GreedyOptions{Workers: 3})
	require.NoError(t, err)
	require.Equal(t, refGreedy(md, 14, nil), res.Solution)
	require.InDelta(t, direct(md, res.Solution).Log, res.Value.Log, logTol)
	// Parallel passes give the same result.
	m := ndpp.Random(20000, 6, 4, ndpp.RandomOptions{})
	one, _ := OfflineGreedy(context.Background(), m, 8, GreedyOptions{Workers: 1})
	two, _ := OfflineGreedy(context.Background(), m, 8, GreedyOptions{Workers: 3})
	require.Len(t, one.Solution, 8)
	require.Equal(t, one.Solution, two.Solution, "workers 1 and 3")
	require.Equal(t, int64(20000*8-28), one.Evals, "evals, want Σ(n−r)")
}

// TestRandomOrder: a deterministic permutation.
func TestRandomOrder(t *testing.T) {
	a, b := RandomOrder(1000, 7), RandomOrder(1000, 7)
	require.Equal(t, a, b, "same seed, different orders")
	require.NotEqual(t, a, RandomOrder(1000, 8), "different seeds, same order")
	require.Equal(t, IDOrder(1000), slices.Sorted(slices.Values(a)), "not a permutation")
}

// TestTrajectory: samples every m items and after the last one, consistent
// with the final result.
func TestTrajectory(t *testing.T) {
	m := ndpp.Random(103, 4, 2, ndpp.RandomOptions{})
	o, _ := detcache.NewNaive(m, 4)
	s, _ := NewOnlineLSS(o, 4, Options{})
	var pts []Point
	res, err := Run(context.Background(), s, IDOrder(103), RunOptions{Every: 10, Trajectory: func(p Point) { pts = append(pts, p) }})
	require.NoError(t, err)
	require.Len(t, pts, 11)
	for i, p := range pts[:10] {
		require.Equal(t, int64(10*(i+1)), p.Items, "point %d", i)
	}
	last := pts[len(pts)-1]
	require.Equal(t, Point{Items: 103, Value: res.Value, Size: len(res.Solution), Evals: res.Evals, Swaps: res.Swaps, Stash: res.Stash}, last, "last point")
	for i := 1; i < len(pts); i++ {
		require.True(t, pts[i].Evals >= pts[i-1].Evals && pts[i].Swaps >= pts[i-1].Swaps, "counters decrease at point %d", i)
	}
}

type oracleArg = detcache.Oracle

// TestGreedyNaNProof: items whose kernel entries overflow (Inf, and NaN in
// the Schur updates) never win a round, and the run completes.
func TestGreedyNaNProof(t *testing.T) {
	base := ndpp.Random(30, 3, 8, ndpp.RandomOptions{})
	v, b, _, c := base.Rows()
	v, b = slices.Clone(v), slices.Clone(b)
	for _, i := range []int{0, 7} {
		for q := 0; q < 3; q++ {
			v[i*3+q] *= 1e200
			b[i*3+q] *= 1e200
		}
	}
	m, err := ndpp.NewFromRows(30, 3, v, b, c)
	require.NoError(t, err)
	res, err := OfflineGreedy(context.Background(), m, 4, GreedyOptions{})
	require.NoError(t, err)
	require.NotContains(t, res.Solution, 0, "overflowing item chosen")
	require.NotContains(t, res.Solution, 7, "overflowing item chosen")
	require.Len(t, res.Solution, 4)
	require.True(t, !res.Value.Zero && !math.IsNaN(res.Value.Log) && !math.IsInf(res.Value.Log, 0), "value %v", res.Value)
}

// TestExactMAPBruteForce: ExactMAP's value and solution are those of a
// separate enumeration of all subsets of n ≤ 14 items (by bit masks, in
// lexicographic order of positions) with fresh determinants, on models
// without and with a diagonal (k up to n there), on all items and on a
// candidate subset.
func TestExactMAPBruteForce(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		rng := rand.New(rand.NewPCG(seed, 19))
		d := 1 + rng.IntN(4)
		n := 4 + rng.IntN(11)
		m := ndpp.Random(n, d, seed, ndpp.RandomOptions{Shared: seed%4 == 0})
		if seed%2 == 0 {
			m = withDiag(m, seed)
		}
		items := IDOrder(n)
		if seed%5 == 0 {
			items = RandomOrder(n, seed)[:n-1-rng.IntN(3)]
		}
		k := 1 + rng.IntN(min(m.MaxRank(), len(items)))
		res, err := ExactMAP(context.Background(), m, k, items)
		require.NoError(t, err)
		// Brute force: every subset of positions of size k, lexicographic.
		best, bestSet := ndpp.ZeroValue, []int(nil)
		var masks []uint32
		for mask := uint32(0); mask < 1<<len(items); mask++ {
			if bitsSet(mask) == k {
				masks = append(masks, mask)
			}
		}
		slices.SortFunc(masks, func(a, b uint32) int { return slices.Compare(positions(a), positions(b)) })
		for _, mask := range masks {
			var set []int
			for _, p := range positions(mask) {
				set = append(set, items[p])
			}
			if v := direct(m, set); v.Greater(best) {
				best, bestSet = v, set
			}
		}
		label := fmt.Sprintf("seed %d n %d d %d k %d %s", seed, n, d, k, diagLabel(m))
		require.Equal(t, bestSet, res.Solution, "%s: solution", label)
		require.Equal(t, best, res.Value, "%s: value", label)
		require.Equal(t, int64(len(masks)), res.Evals, "%s: evaluations", label)
		if m.HasDiag() && !slices.ContainsFunc(IDOrder(m.N()), func(i int) bool { return m.ItemDiag(i) == 0 }) {
			require.False(t, res.Value.Zero, "%s: a full diagonal gives every set a non-zero determinant", label)
		}
	}
}

func bitsSet(x uint32) int {
	c := 0
	for ; x != 0; x &= x - 1 {
		c++
	}
	return c
}

// positions returns the set bits of mask in increasing order.
func positions(mask uint32) []int {
	var p []int
	for i := 0; mask>>i != 0; i++ {
		if mask>>i&1 == 1 {
			p = append(p, i)
		}
	}
	return p
}
