package learn

import (
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLearnerMemory: the learners' estimates are the formula ndpp-bench
// learn has always checked (C's d×d state ×6, the normaliser's 2d×2d ×6,
// V and B's n×d state ×10, and per worker n×d×2 + d×d, in float64s; a
// minibatch learner's sums and their merge's scratch beyond them, and the
// default averaged parameters with the default next-item term), grow
// with n, d and the workers, take the default rank and workers for zero
// options, and overflow to -1.
func TestLearnerMemory(t *testing.T) {
	formula := func(d, n, w int64) int64 {
		return 8 * (6*d*d + 6*4*d*d + 10*n*d + w*(2*n*d+d*d))
	}
	// A minibatch step's sums hold n×d + n more a worker, and its finish
	// 4 n×d + d×d of scratch.
	minibatch := func(d, n, w int64) int64 {
		return 8 * (w*(n*d+n) + 4*n*d + d*d)
	}
	for _, c := range []struct{ d, n, w int }{{1, 0, 1}, {30, 0, 2}, {30, 1000, 4}, {100, 123456, 8}, {7, 5, 1}} {
		want := formula(int64(c.d), int64(c.n), int64(c.w))
		next := 8 * int64(c.n) * (3*int64(c.d) + 2)               // the next-item term's item rows
		avg := 8 * (int64(c.n)*(2*int64(c.d)+1) + int64(c.d*c.d)) // DefaultAverage's parameters
		mini := minibatch(int64(c.d), int64(c.n), int64(c.w))
		require.Equal(t, want+mini+next+avg, OfflineMemory(OfflineOptions{D: c.d, Workers: c.w}, c.n), "%+v", c)
		require.Equal(t, want+mini+next, OfflineMemory(OfflineOptions{D: c.d, Workers: c.w, Average: -1}, c.n), "%+v", c)
		require.Equal(t, want+mini, OfflineMemory(OfflineOptions{D: c.d, Workers: c.w, NextWeight: -1}, c.n), "%+v", c)
		require.Equal(t, want, OfflineMemory(OfflineOptions{D: c.d, Workers: c.w, FullBatch: true}, c.n), "%+v", c)
		require.Equal(t, want, OnlineMemory(OnlineOptions{D: c.d}, c.n, c.w), "%+v", c)
	}
	procs := int64(runtime.GOMAXPROCS(0))
	require.Equal(t, formula(DefaultOfflineD, 10, procs)+minibatch(DefaultOfflineD, 10, procs)+8*10*(3*DefaultOfflineD+2)+8*(10*(2*DefaultOfflineD+1)+DefaultOfflineD*DefaultOfflineD), OfflineMemory(OfflineOptions{}, 10))
	require.Equal(t, formula(DefaultD, 10, 1), OnlineMemory(OnlineOptions{}, 10, 0))
	prev := int64(-1)
	for _, n := range []int{0, 1, 10, 1000, 1e6, 1e9} {
		m := OfflineMemory(OfflineOptions{D: 20, Workers: 3}, n)
		require.Greater(t, m, prev, "n = %d", n)
		prev = m
	}
	prev = -1
	for _, d := range []int{1, 2, 10, 100, 1000} {
		m := OnlineMemory(OnlineOptions{D: d}, 500, 2)
		require.Greater(t, m, prev, "d = %d", d)
		prev = m
	}
	require.Greater(t, OfflineMemory(OfflineOptions{D: 5, Workers: 3}, 100), OfflineMemory(OfflineOptions{D: 5, Workers: 2}, 100))
	require.Greater(t, OfflineMemory(OfflineOptions{D: 5, Workers: 2, Average: 1}, 100), OfflineMemory(OfflineOptions{D: 5, Workers: 2, Average: -1}, 100))
	// The rank objective's strong run averages the parameters; the plain
	// run alone does not.
	rank := OfflineOptions{D: 5, Workers: 2, Objective: ObjectiveRank}
	plain := rank
	plain.NextWeight = DefaultRankNextWeight
	require.Equal(t, OfflineMemory(OfflineOptions{D: 5, Workers: 2, NextWeight: 1, Average: 0.5}, 100), OfflineMemory(rank, 100))
	require.Greater(t, OfflineMemory(rank, 100), OfflineMemory(plain, 100))
	require.Equal(t, int64(-1), OfflineMemory(OfflineOptions{D: 1 << 20, Workers: 1}, 1<<40))
	require.Equal(t, int64(-1), OnlineMemory(OnlineOptions{D: 1 << 40}, 0, 1))
}

// TestDefaultsAreTheLearnersDefaults: the constants commands print are
// what zero options select.
func TestDefaultsAreTheLearnersDefaults(t *testing.T) {
	off := OfflineOptions{}.withDefaults()
	require.Equal(t, DefaultOfflineD, off.D)
	require.Equal(t, DefaultNextWeight, off.NextWeight)
	require.Equal(t, DefaultNextShare, off.NextShare)
	require.Equal(t, DefaultLikelihoodNextNegatives, off.NextNegatives)
	rank := OfflineOptions{Objective: ObjectiveRank}.withDefaults()
	require.Equal(t, DefaultRankNextWeight, rank.NextWeight)
	require.Equal(t, 1.0, rank.NextShare)
	require.Equal(t, DefaultNextNegatives, rank.NextNegatives)
	require.Equal(t, 0.0, OfflineOptions{FullBatch: true}.withDefaults().NextWeight)
	require.Equal(t, DefaultOfflineLR, off.LR)
	require.Equal(t, DefaultRateScale, off.RateScale)
	require.Equal(t, 1.0, off.RegPower, "the reference's regulariser")
	require.Equal(t, DefaultAverageTolerance, off.Tolerance)
	require.Equal(t, DefaultTolerance, OfflineOptions{NextWeight: -1}.withDefaults().Tolerance)
	require.Equal(t, DefaultTolerance, OfflineOptions{FullBatch: true}.withDefaults().Tolerance)
	require.Equal(t, DefaultTolerance, OfflineOptions{Objective: ObjectiveRank}.withDefaults().Tolerance)
	require.Zero(t, OfflineOptions{Tolerance: -1}.withDefaults().Tolerance)
	require.Equal(t, DefaultMaxStalls, off.MaxStalls)
	require.Equal(t, math.MaxInt, OfflineOptions{MaxStalls: -1}.withDefaults().MaxStalls, "negative: no bound")
	require.Equal(t, DefaultAverage, off.Average)
	for name, o := range map[string]OfflineOptions{
		"negative": {Average: -1}, "likelihood alone": {NextWeight: -1},
		"full batch": {FullBatch: true}, "rank": {Objective: ObjectiveRank},
	} {
		require.Zero(t, o.withDefaults().Average, name)
	}
	require.Equal(t, 2.0, OfflineOptions{Average: 2}.withDefaults().Average)
	require.Equal(t, DefaultRankRetries, off.RankRetries)
	require.Zero(t, OfflineOptions{RankRetries: -1}.withDefaults().RankRetries)
	require.Equal(t, float64(DefaultFloorSE), off.FloorSE)
	require.Zero(t, OfflineOptions{FloorSE: -1}.withDefaults().FloorSE, "negative: no margin")
	require.Equal(t, 2.5, OfflineOptions{FloorSE: 2.5}.withDefaults().FloorSE)
	o, err := NewOnline(OnlineOptions{})
	require.NoError(t, err)
	on := o.Options()
	require.Equal(t, DefaultD, on.D)
	require.Equal(t, DefaultNextNegatives, on.NextNegatives)
	require.Equal(t, DefaultRateScale, on.RateScale)
	require.Equal(t, DefaultOnlineDiagLR, on.DiagLR)
	const d = 16
	init := InitOptions{}.withDefaultsFor(d, true)
	require.Equal(t, DefaultInitScaleDiag/4, init.Scale)
	require.Equal(t, DefaultOfflineInitShare, init.Share)
	require.Equal(t, DefaultInitScaleLowRank/4, InitOptions{}.withDefaultsFor(d, false).Scale)
}
