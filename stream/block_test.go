package stream

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
)

// ignoreTime compares Results without their wall time.
var ignoreTime = cmpopts.IgnoreFields(Result{}, "Seconds")

// skipTol bounds how far a fresh LU's value of a move the block scoring
// proved not to exceed the bar may lie above it: the oracle's values differ
// from fresh LUs by their own error bounds (see detcache's package
// documentation), not by more.
const skipTol = 1e-6

// checkSkips makes s report every decision its block scoring takes without
// the oracle and checks each against fresh determinants of the moves it
// rules out (single swaps, pairs with the previous item, the add of
// Stream-Partition, or a stash round's moves). It returns the number of
// decisions checked.
func checkSkips(t *testing.T, s Solver, m *ndpp.Model, label string) *int {
	checked := new(int)
	hs, ok := s.(interface{ setSkipHook(skipFunc) })
	if !ok {
		return checked
	}
	pairs := s.Name() == NameOnline2Neighbor
	hs.setSkipHook(func(item, prev int, bar float64) {
		*checked++
		sol := s.Solution()
		at := func(set []int, what string) {
			v := direct(m, set)
			require.False(t, v.Greater(ndpp.Value{Log: bar + skipTol*(1+math.Abs(bar))}),
				"%s: block scoring ruled out %s %v (value %v), above the bar %v", label, what, set, v, bar)
		}
		if s.Name() == NameStreamPartition {
			at(append(slices.Clone(sol), item), "the add")
			return
		}
		moved := []int{item}
		if item < 0 {
			moved = s.(interface{ Stash() []int }).Stash()
		}
		for _, x := range moved {
			for j := range sol {
				at(with(sol, j, x), "the swap")
			}
		}
		if !pairs {
			return
		}
		var xy [][2]int
		if item >= 0 && prev >= 0 {
			xy = append(xy, [2]int{prev, item})
		}
		for i := range moved {
			for j := i + 1; item < 0 && j < len(moved); j++ {
				xy = append(xy, [2]int{moved[i], moved[j]})
			}
		}
		for _, p := range xy {
			for a := range sol {
				for b := a + 1; b < len(sol); b++ {
					at(with(with(sol, a, p[0]), b, p[1]), "the pair swap")
				}
			}
		}
	})
	return checked
}

// TestBatchIdentical: block scoring (ObserveBatch through Run) gives the
// same solutions, values, counters and trajectories as observing one item at
// a time, on many seeded streams including near-singular models and models
// with a diagonal (there also k > 2d), on every oracle; every move it rules
// out without the oracle has a fresh determinant below the bar it was ruled
// out by; and it actually skips items.
func TestBatchIdentical(t *testing.T) {
	seeds := 32
	if testing.Short() || raceEnabled {
		seeds = 16
	}
	var skippedTotal, itemsTotal int64
	checkedTotal := 0
	for seed := uint64(1); seed <= uint64(seeds+seeds/2); seed++ {
		rng := rand.New(rand.NewPCG(seed, 21))
		var m *ndpp.Model
		if seed%4 == 0 {
			m = instance(seed) // small, often near-singular
		} else {
			d := 2 + rng.IntN(5)
			m = ndpp.Random(250+rng.IntN(400), d, seed, ndpp.RandomOptions{Shared: seed%3 == 0, BlockDiagonal: seed%5 == 0})
		}
		if seed > uint64(seeds) { // the last third with a diagonal
			m = withDiag(m, seed)
		}
		k := 1 + rng.IntN(maxK(m, 8))
		if m.N() > 200 && raceEnabled {
			k = min(k, 4)
		}
		alpha := []float64{1, 1.01, 1.1, 1.5}[rng.IntN(4)]
		order := IDOrder(m.N())
		if seed%2 == 1 {
			order = RandomOrder(m.N(), seed)
		}
		every := 1 + rng.IntN(200)
		for _, a := range algos(alpha, []int{0, 2}[rng.IntN(2)]) {
			order := order
			if a.name == NameOnline2Neighbor {
				order = order[:min(len(order), 150)] // 2-neighbor on the naive oracle is slow
			}
			for _, ok := range oracleKinds() {
				label := fmtLabel(seed, a.name, ok.name, k, alpha) + ", " + diagLabel(m)
				var res [2]Result
				var traj [2][]Point
				var skipped int64
				for p, one := range []bool{true, false} {
					o, err := ok.new(m, k)
					require.NoError(t, err)
					s, err := a.mk(o, k, len(order))
					require.NoError(t, err)
					checked := checkSkips(t, s, m, label)
					res[p], err = Run(context.Background(), s, order, RunOptions{OneAtATime: one, Every: every, Trajectory: func(pt Point) { traj[p] = append(traj[p], pt) }})
					require.NoError(t, err)
					checkedTotal += *checked
					if ls, ok := s.(interface{ skippedItems() int64 }); ok {
						skipped = ls.skippedItems()
					}
				}
				require.Empty(t, cmp.Diff(res[0], res[1], ignoreTime), "%s: result (-one at a time +batched)", label)
				require.Empty(t, cmp.Diff(traj[0], traj[1]), "%s: trajectory (-one at a time +batched)", label)
				if ok.name == "fast" {
					skippedTotal += skipped
					itemsTotal += res[1].Items
				} else {
					require.Zero(t, skipped, "%s: skipped items without block scoring", label)
				}
			}
		}
	}
	t.Logf("block scoring skipped %d of %d items on the fast oracle; %d decisions checked against fresh determinants", skippedTotal, itemsTotal, checkedTotal)
	require.GreaterOrEqual(t, skippedTotal, itemsTotal/2, "block scoring skips too little")
}

func fmtLabel(seed uint64, algo, oracle string, k int, alpha float64) string {
	return fmt.Sprintf("seed %d %s/%s k=%d α=%v", seed, algo, oracle, k, alpha)
}

// TestBatchErrors: a bad item inside a batch is reported with its stream
// position; the items before it were processed.
func TestBatchErrors(t *testing.T) {
	m := ndpp.Random(600, 4, 5, ndpp.RandomOptions{})
	for _, kind := range oracleKinds() {
		for _, bad := range []int{-1, 600} {
			o, _ := kind.new(m, 3)
			s, _ := NewOnlineLSS(o, 3, Options{})
			order := IDOrder(500)
			order[400] = bad
			_, err := Run(context.Background(), s, order, RunOptions{})
			require.Error(t, err, "%s: bad item %d accepted", kind.name, bad)
			require.Equal(t, int64(400), s.Stats().Items, "%s: items processed before the bad one (%v)", kind.name, err)
		}
		// An item of the solution repeated later in the batch.
		o, _ := kind.new(m, 3)
		s, _ := NewOnlineLSS(o, 3, Options{})
		require.NoError(t, s.ObserveBatch(context.Background(), IDOrder(300)))
		sol := s.Solution()
		err := s.ObserveBatch(context.Background(), []int{300, 301, sol[1], 302})
		var be *BatchError
		require.True(t, errors.As(err, &be), "%s: error %v, want a BatchError", kind.name, err)
		require.Equal(t, 2, be.Index, "%s: %v", kind.name, err)
	}
}

// TestBatchNearTies: streams full of (near-)copies of earlier items put
// many swap ratios at or within rounding of 1 and of α (also with a
// diagonal); block scoring must still agree with the one-at-a-time path,
// and every move it rules out must have a fresh determinant below its bar.
func TestBatchNearTies(t *testing.T) {
	seeds := uint64(8)
	if raceEnabled {
		seeds = 3
	}
	for seed := uint64(1); seed <= seeds+seeds/2; seed++ {
		rng := rand.New(rand.NewPCG(seed, 77))
		d, n := 3, 250
		base := ndpp.Random(n, d, seed, ndpp.RandomOptions{})
		v, b, _, c := base.Rows()
		v, b = slices.Clone(v), slices.Clone(b)
		for i := 60; i < n; i++ {
			j := rng.IntN(60)
			s := []float64{1, -1, 1.05, 0.999}[rng.IntN(4)] * (1 + []float64{0, 1e-12, 1e-8}[rng.IntN(3)])
			// Some copies get a small independent perturbation, so that a
			// solution holding an item and its copy has a condition number
			// around the filter's limit rather than far beyond it.
			pert := []float64{0, 0, 1e-2, 1e-3, 1e-4}[rng.IntN(5)]
			for q := 0; q < d; q++ {
				v[i*d+q] = s*v[j*d+q] + pert*rng.NormFloat64()
				b[i*d+q] = s*b[j*d+q] + pert*rng.NormFloat64()
			}
		}
		m, err := ndpp.NewFromRows(n, d, v, b, c)
		require.NoError(t, err)
		k := 2 + rng.IntN(4)
		if seed > seeds { // the last third with a diagonal, k around 2d
			m = withDiag(m, seed)
			k = 2*d - 1 + rng.IntN(3)
		}
		stashCap := 0
		if m.HasDiag() {
			stashCap = 4 // large k and many swaps: keep the naive 2-neighbor's stash search short
		}
		for _, alpha := range []float64{1, 1.05 * 1.05, 1.1} {
			for _, a := range algos(alpha, stashCap) {
				for _, ok := range oracleKinds() {
					var res [2]Result
					label := fmtLabel(seed, a.name, ok.name, k, alpha) + ", " + diagLabel(m)
					for p, one := range []bool{true, false} {
						o, _ := ok.new(m, k)
						s, err := a.mk(o, k, n)
						require.NoError(t, err)
						checkSkips(t, s, m, label)
						res[p], err = Run(context.Background(), s, IDOrder(n), RunOptions{OneAtATime: one})
						require.NoError(t, err)
					}
					require.Empty(t, cmp.Diff(res[0], res[1], ignoreTime), "%s: result (-one at a time +batched)", label)
				}
			}
		}
	}
}
