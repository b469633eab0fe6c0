package stream

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
)

// TestLocalSearchBudget: with MaxEvals the search stops (Budget) with a
// set whose value is at least the start's and at most that of the
// unbounded search; its work (the oracle's values plus |S|² per fresh-LU
// fallback) passes MaxEvals by at most one visit; a bound above the
// unbounded search's work changes nothing.
func TestLocalSearchBudget(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		m := ndpp.Random(300, 6, seed, ndpp.RandomOptions{Diag: 0.05})
		k := 10
		g, err := OfflineGreedy(context.Background(), m, k, GreedyOptions{})
		require.NoError(t, err)
		o, err := detcache.NewFast(m, k)
		require.NoError(t, err)
		full, err := LocalSearch(context.Background(), o, k, g.Solution, LocalSearchOptions{Eps: 1e-9, Pool: 8})
		require.NoError(t, err)
		require.False(t, full.Budget)
		for _, budget := range []int64{1, 100, 3000, full.Evals / 2} {
			o2, _ := detcache.NewFast(m, k)
			res, err := LocalSearch(context.Background(), o2, k, g.Solution, LocalSearchOptions{Eps: 1e-9, Pool: 8, MaxEvals: budget})
			require.NoError(t, err)
			require.True(t, res.Budget, "seed %d budget %d", seed, budget)
			require.GreaterOrEqual(t, res.Value.Log, g.Value.Log-1e-9*math.Abs(g.Value.Log))
			require.GreaterOrEqual(t, res.Evals, budget)
			work := res.Evals + int64(k*k)*o2.Stats().Fallbacks
			require.Less(t, work, budget+int64(k)*int64(k*k+1), "seed %d budget %d", seed, budget)
			want := logDetValue(m, res.Solution)
			require.InDelta(t, want.Log, res.Value.Log, 1e-12)
		}
		o3, _ := detcache.NewFast(m, k)
		res, err := LocalSearch(context.Background(), o3, k, g.Solution, LocalSearchOptions{Eps: 1e-9, Pool: 8, MaxEvals: 1 << 40})
		require.NoError(t, err)
		require.Equal(t, full.Solution, res.Solution)
		require.False(t, res.Budget)
	}
	o, _ := detcache.NewFast(ndpp.Random(20, 3, 1, ndpp.RandomOptions{}), 3)
	_, err := LocalSearch(context.Background(), o, 3, nil, LocalSearchOptions{MaxEvals: -1})
	require.ErrorContains(t, err, "MaxEvals")
}

// TestLocalSearchCancel: a search that would run for minutes (k = 100
// beyond the rank of a model with a small diagonal, N = 2000, every
// candidate in the pool) cancelled after ~50 ms returns within a generous
// bound with an error wrapping context.Canceled and the set reached, never
// below the start; a context done before the call gives no result.
func TestLocalSearchCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("long instance")
	}
	m := ndpp.Random(2000, 30, 3, ndpp.RandomOptions{Diag: 0.05})
	const k = 100
	g, err := OfflineGreedy(context.Background(), m, k, GreedyOptions{})
	require.NoError(t, err)
	o, err := detcache.NewFast(m, k)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(50*time.Millisecond, cancel)
	defer timer.Stop()
	t0 := time.Now()
	res, err := LocalSearch(ctx, o, k, g.Solution, LocalSearchOptions{Eps: 1e-12, Pool: -1})
	el := time.Since(t0)
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, el, 2*time.Second)
	t.Logf("returned after %v, %d swaps", el, res.Swaps)
	require.Len(t, res.Solution, k)
	require.GreaterOrEqual(t, res.Value.Log, g.Value.Log-1e-9*math.Abs(g.Value.Log))

	_, err = LocalSearch(ctx, o, k, g.Solution, LocalSearchOptions{})
	require.ErrorIs(t, err, context.Canceled)
}

// TestOfflineGreedyCancel: a done context stops the greedy with an error
// wrapping ctx.Err(); a live one changes nothing.
func TestOfflineGreedyCancel(t *testing.T) {
	m := ndpp.Random(200, 5, 1, ndpp.RandomOptions{Diag: 0.1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := OfflineGreedy(ctx, m, 8, GreedyOptions{})
	require.ErrorIs(t, err, context.Canceled)
	dctx, dcancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer dcancel()
	_, err = OfflineGreedy(dctx, m, 8, GreedyOptions{Workers: 2})
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestLocalSearchFeasible: a Feasible that rejects every solution holding
// some items gives, with single swaps, the search over the candidates
// without them; one that accepts everything changes nothing; a start set
// short of k is an error.
func TestLocalSearchFeasible(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		m := ndpp.Random(120, 5, seed, ndpp.RandomOptions{Diag: 0.05})
		const k = 6
		banned := map[int]bool{}
		var rest []int
		for i := 0; i < m.N(); i++ {
			if i%7 == int(seed%7) {
				banned[i] = true
			} else {
				rest = append(rest, i)
			}
		}
		g, err := OfflineGreedy(context.Background(), m, k, GreedyOptions{Items: rest})
		require.NoError(t, err)
		run := func(opt LocalSearchOptions) LocalSearchResult {
			o, err := detcache.NewFast(m, k)
			require.NoError(t, err)
			res, err := LocalSearch(context.Background(), o, k, g.Solution, opt)
			require.NoError(t, err)
			return res
		}
		want := run(LocalSearchOptions{Eps: 1e-9, SinglesOnly: true, Items: rest})
		got := run(LocalSearchOptions{Eps: 1e-9, SinglesOnly: true, Feasible: func(sol []int) bool {
			for _, it := range sol {
				if banned[it] {
					return false
				}
			}
			return true
		}})
		require.Equal(t, want.Solution, got.Solution, "seed %d", seed)
		all := run(LocalSearchOptions{Eps: 1e-9, Pool: 8})
		same := run(LocalSearchOptions{Eps: 1e-9, Pool: 8, Feasible: func([]int) bool { return true }})
		require.Equal(t, all.Solution, same.Solution, "seed %d", seed)
	}
	o, _ := detcache.NewFast(ndpp.Random(20, 3, 1, ndpp.RandomOptions{}), 3)
	_, err := LocalSearch(context.Background(), o, 3, []int{1}, LocalSearchOptions{Feasible: func([]int) bool { return true }})
	require.ErrorContains(t, err, "Feasible")
}
