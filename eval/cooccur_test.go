package eval

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// TestCooccurrenceByHand checks the paper protocol's figures of the
// co-occurrence baseline on a split small enough to rank by hand.
func TestCooccurrenceByHand(t *testing.T) {
	train := [][]int{{0, 1}, {0, 1}, {1, 2}, {0, 3}, {3}}
	c, err := NewCooccurrence(10, 0)
	require.NoError(t, err)
	for _, s := range train {
		require.NoError(t, c.Add(s))
	}
	// Counts: c(0) = 3, c(1) = 3, c(2) = 1, c(3) = 2; c(0,1) = 2,
	// c(1,2) = 1, c(0,3) = 1.
	//
	// {1, 0}: sorted {0, 1}, t = 1, Y = {0}: candidates 1, 2, 3 score 2, 0,
	// 1, so t is first: PR = 1 − 1/3, in the top 5.
	// {3, 2}: t = 3, Y = {2}: candidates 0, 1, 3 score 0, 1, 0; 0 and 3
	// tie at 0 and c(0) = 3 > c(3) = 2 puts 3 last: PR = 1 − 3/3 = 0, and
	// two candidates are strictly above it.
	// {2}: nothing held out.
	test := [][]int{{1, 0}, {3, 2}, {2}}
	m, err := c.Evaluate(context.Background(), test, 4, CooccurCount, Options{})
	require.NoError(t, err)
	require.Equal(t, 2, m.Predicted)
	require.Equal(t, 3, m.Baskets)
	require.InDelta(t, 100*(2.0/3+0)/2, m.MPR, 1e-12) // one size: one bin
	require.InDelta(t, m.MPR, m.MPRMicro, 1e-12)
	require.Equal(t, 100.0, m.Prec5)
	require.Equal(t, 100.0, m.Prec10)
	require.True(t, math.IsNaN(m.TestLLEps) && math.IsNaN(m.AUC) && math.IsNaN(m.AUCPaired))

	// Sorting by other ids holds out another item: keys 3, 2, 1, 0 hold
	// out 0 of {0, 1} (Y = {1}: 0 scores 2, 2 scores 1, 3 scores 0: PR =
	// 2/3) and 2 of {2, 3} (Y = {3}: 0 scores 1, 1 and 2 score 0 and
	// c(1) = 3 > c(2) = 1: PR = 0).
	m, err = c.Evaluate(context.Background(), test, 4, CooccurCount, Options{Key: []int64{3, 2, 1, 0}})
	require.NoError(t, err)
	require.InDelta(t, 100.0/3, m.MPR, 1e-12)
}

// bruteScores scores every candidate given y from pair counts enumerated
// anew from the training baskets.
func bruteScores(train [][]int, n int, y []int, norm CooccurNorm) (score, pop []float64) {
	cnt := make([]float64, n)
	pair := make([][]float64, n)
	for i := range pair {
		pair[i] = make([]float64, n)
	}
	for _, s := range train {
		for _, a := range s {
			cnt[a]++
			for _, b := range s {
				if a != b {
					pair[a][b]++
				}
			}
		}
	}
	score, pop = make([]float64, n), make([]float64, n)
	for j := range n {
		pop[j] = cnt[j] + 1
		for _, it := range y {
			c := pair[j][it]
			if c == 0 {
				continue
			}
			switch norm {
			case CooccurCount:
				score[j] += c
			case CooccurSqrt:
				score[j] += c / math.Sqrt(cnt[j])
			case CooccurGivenCandidate:
				score[j] += c / cnt[j]
			case CooccurGivenItem:
				score[j] += c / cnt[it]
			case CooccurCosine:
				score[j] += c / math.Sqrt(cnt[j]*cnt[it])
			}
		}
	}
	for _, it := range y {
		score[it], pop[it] = 0, 0
	}
	return score, pop
}

// randBaskets draws m baskets of 1–maxSize distinct items of n, skewed
// towards low ids and towards pairs within groups of 4.
func randBaskets(rng *rand.Rand, m, n, maxSize int) [][]int {
	out := make([][]int, m)
	for i := range out {
		k := 1 + rng.IntN(maxSize)
		g := 4 * rng.IntN(n/4)
		var s []int
		for len(s) < k {
			j := g + rng.IntN(4)
			if rng.IntN(3) == 0 {
				j = int(float64(n) * rng.Float64() * rng.Float64())
			}
			if !slices.Contains(s, j) {
				s = append(s, j)
			}
		}
		out[i] = s
	}
	return out
}

// TestCooccurrenceBruteForce ranks the held-out items of random splits by
// brute-force scores and compares every figure with Evaluate's.
func TestCooccurrenceBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	const n = 24
	for trial := range 4 {
		train := randBaskets(rng, 150, n, 6)
		test := randBaskets(rng, 60, n, 7)
		var key []int64
		if trial%2 == 1 {
			key = make([]int64, n)
			for i, p := range rng.Perm(n) {
				key[i] = int64(p)
			}
		}
		for norm := CooccurCount; norm <= CooccurCosine; norm++ {
			c, err := NewCooccurrence(1000, 0)
			require.NoError(t, err)
			for _, s := range train {
				require.NoError(t, c.Add(s))
			}
			require.Zero(t, c.Evictions())
			got, err := c.Evaluate(context.Background(), test, n, norm, Options{Key: key, Workers: 3})
			require.NoError(t, err)

			var pr, p5, p10 []float64
			var sizes, all []int
			for _, s := range test {
				u := slices.Clone(s)
				slices.SortFunc(u, func(a, b int) int { return cmpInt64(sortKey(key)(a), sortKey(key)(b)) })
				if len(u) < 2 {
					continue
				}
				tt, y := u[len(u)-1], u[:len(u)-1]
				score, pop := bruteScores(train, n, y, norm)
				// Rank t among the candidates outside Y: (score, pop)
				// lexicographically, ties counted against t.
				atLeast, above := 0, 0
				for j := range n {
					if slices.Contains(y, j) {
						continue
					}
					if score[j] > score[tt] || (score[j] == score[tt] && pop[j] > pop[tt]) {
						above++
					}
					if score[j] > score[tt] || (score[j] == score[tt] && pop[j] >= pop[tt]) {
						atLeast++
					}
				}
				pr = append(pr, 1-float64(atLeast)/float64(n-len(y)))
				p5, p10 = append(p5, b2f(above < 5)), append(p10, b2f(above < 10))
				sizes = append(sizes, len(y))
				all = append(all, len(y))
			}
			bk := sizeBucketsIn(sizes, all)
			require.Equal(t, len(pr), got.Predicted, norm.String())
			require.InDelta(t, 100*mean(pr), got.MPRMicro, 1e-9, norm.String())
			require.InDelta(t, 100*bucketMean(pr, bk), got.MPR, 1e-9, norm.String())
			require.InDelta(t, 100*mean(p5), got.Prec5Micro, 1e-9, norm.String())
			require.InDelta(t, 100*bucketMean(p10, bk), got.Prec10, 1e-9, norm.String())
			require.InDelta(t, 100*stdErr(pr), got.MPRMicroSE, 1e-9, norm.String())
		}
	}
}

// TestCooccurrenceBaselineMatchesCounter checks CooccurrenceBaseline
// against a counter fed the same baskets through Counting, and that the
// baseline beats popularity on data with pair structure.
func TestCooccurrenceBaselineMatchesCounter(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const n = 40
	train := randBaskets(rng, 400, n, 5)
	test := randBaskets(rng, 100, n, 5)
	got, err := CooccurrenceBaseline(context.Background(), train, test, n, Options{})
	require.NoError(t, err)
	c, err := NewCooccurrence(DefaultCooccurPairs, 0)
	require.NoError(t, err)
	src := c.Counting(baskets.SliceSource(train))
	for {
		_, err := src.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	require.Equal(t, int64(len(train)), c.Baskets())
	want, err := c.Evaluate(context.Background(), test, n, DefaultCooccurNorm, Options{})
	require.NoError(t, err)
	require.Equal(t, want.MPR, got.MPR)
	require.Equal(t, want.Prec10Micro, got.Prec10Micro)
	pop, err := IndependentBaseline(context.Background(), train, test, n, Options{})
	require.NoError(t, err)
	require.Greater(t, got.MPR, pop.MPR)
}

// exactPairs counts the pairs of baskets by enumeration.
func exactPairs(baskets [][]int) (map[[2]int]int64, int64) {
	out := map[[2]int]int64{}
	var total int64
	for _, s := range baskets {
		u := slices.Compact(slices.Sorted(slices.Values(s)))
		for p, a := range u {
			for _, b := range u[p+1:] {
				out[[2]int{a, b}]++
				total++
			}
		}
	}
	return out, total
}

// TestCooccurrenceBudget checks the counter against exact counts: equal
// below the budget, and the space-saving guarantees beyond it.
func TestCooccurrenceBudget(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 5))
	const n = 30
	train := randBaskets(rng, 500, n, 6)
	exact, total := exactPairs(train)

	// Below the budget (and exactly at it): exact.
	for _, budget := range []int{len(exact), len(exact) + 100} {
		c, err := NewCooccurrence(budget, 0)
		require.NoError(t, err)
		for _, s := range train {
			require.NoError(t, c.Add(s))
		}
		require.Zero(t, c.Evictions())
		require.Equal(t, len(exact), c.Pairs())
		require.Equal(t, total, c.Increments())
		for p, want := range exact {
			lo, hi := c.Count(p[1], p[0])
			require.Equal(t, want, lo)
			require.Equal(t, want, hi)
		}
	}

	// Beyond it.
	for _, budget := range []int{1, 7, 40, len(exact) / 2, len(exact) - 1} {
		c, err := NewCooccurrence(budget, 0)
		require.NoError(t, err)
		for _, s := range train {
			require.NoError(t, c.Add(s))
		}
		require.LessOrEqual(t, c.Pairs(), budget, "the bound holds")
		require.Equal(t, budget, c.Pairs())
		require.Positive(t, c.Evictions())
		min := c.MinCount()
		require.LessOrEqual(t, min*int64(budget), total, "min count ≤ N/P")
		var sum int64
		held := 0
		for i := range n {
			require.Equal(t, exactItem(train, i), c.ItemCount(i), "item counts are exact")
			for j := i + 1; j < n; j++ {
				want := exact[[2]int{i, j}]
				lo, hi := c.Count(i, j)
				if hi == 0 {
					require.LessOrEqual(t, want, min, "a pair not held is seen at most the min count")
					continue
				}
				held++
				sum += hi
				require.LessOrEqual(t, lo, want, "lower bound")
				require.GreaterOrEqual(t, hi, want, "upper bound")
				require.GreaterOrEqual(t, hi, min)
			}
		}
		require.Equal(t, c.Pairs(), held)
		require.LessOrEqual(t, sum, total, "held counts add up to at most N")
		// Evaluation still works from the held pairs.
		_, err = c.Evaluate(context.Background(), train[:50], n, DefaultCooccurNorm, Options{})
		require.NoError(t, err)
	}
}

func exactItem(baskets [][]int, i int) int64 {
	var k int64
	for _, s := range baskets {
		if slices.Contains(s, i) {
			k++
		}
	}
	return k
}

func TestCooccurrenceErrors(t *testing.T) {
	_, err := NewCooccurrence(0, 0)
	require.Error(t, err)
	c, err := NewCooccurrence(4, 0)
	require.NoError(t, err)
	require.Error(t, c.Add([]int{1, -1}))
	require.Zero(t, c.Baskets(), "a refused basket leaves the counter unchanged")
	require.NoError(t, c.Add([]int{2, 5, 5}))
	lo, _ := c.Count(2, 5)
	require.Equal(t, int64(1), lo, "a repeated item counts once")
	require.Equal(t, int64(1), c.ItemCount(5))
	_, err = c.Evaluate(context.Background(), [][]int{{0, 1}}, 4, CooccurCount, Options{})
	require.Error(t, err, "item 5 was counted, n = 4")
	_, err = c.Evaluate(context.Background(), [][]int{{0, 1}}, 6, CooccurNorm(9), Options{})
	require.Error(t, err)
	_, err = c.Evaluate(context.Background(), [][]int{{0, 7}}, 6, CooccurCount, Options{})
	require.Error(t, err)
	_, err = c.Evaluate(context.Background(), nil, 6, CooccurCount, Options{})
	require.Error(t, err)
	_, err = CooccurrenceBaseline(context.Background(), [][]int{{0, 0}}, [][]int{{0, 1}}, 2, Options{})
	require.Error(t, err)
	// Counts are held in 32 bits: the basket after MaxCooccurBaskets is
	// refused.
	c.baskets = MaxCooccurBaskets
	require.ErrorContains(t, c.Add([]int{1, 2}), "more than")
	require.Equal(t, int64(MaxCooccurBaskets), c.Baskets())
	require.Zero(t, c.ItemCount(1))
}

// TestCooccurrenceEachPair: EachPair visits every pair with a positive
// count exactly once, with Count's figure, below and beyond the budget,
// and stops when told.
func TestCooccurrenceEachPair(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	train := randBaskets(rng, 200, 30, 6)
	for _, budget := range []int{10000, 40} {
		c, err := NewCooccurrence(budget, 0)
		require.NoError(t, err)
		for _, s := range train {
			require.NoError(t, c.Add(s))
		}
		seen := map[[2]int]bool{}
		c.EachPair(func(i, j int, n int64) bool {
			require.Less(t, i, j)
			require.False(t, seen[[2]int{i, j}])
			seen[[2]int{i, j}] = true
			lo, _ := c.Count(i, j)
			require.Equal(t, lo, n)
			return true
		})
		want := 0
		for i := range 30 {
			for j := i + 1; j < 30; j++ {
				if lo, _ := c.Count(i, j); lo > 0 {
					want++
				}
			}
		}
		require.Equal(t, want, len(seen), "budget %d", budget)
		calls := 0
		c.EachPair(func(int, int, int64) bool { calls++; return false })
		require.Equal(t, 1, calls)
	}
}

// BenchmarkCooccurrenceAdd counts 5·10⁴ random baskets of 8 items over 10⁵
// items (1.4·10⁶ pair increments, nearly all distinct pairs) in the
// default budget (exact) and in a quarter of it (pairs dropped), queries
// included: ns/increment is the counting's cost per pair increment.
func BenchmarkCooccurrenceAdd(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	const n, m, k = 100000, 50000, 8
	train := make([][]int, m)
	var incs float64
	for i := range train {
		s := make([]int, k)
		for j := range s {
			s[j] = rng.IntN(n)
		}
		train[i] = s
		u := len(slices.Compact(slices.Sorted(slices.Values(s))))
		incs += float64(u * (u - 1) / 2)
	}
	for _, bc := range []struct {
		name  string
		pairs int
	}{{"regime=exact", DefaultCooccurPairs}, {"regime=bounded", DefaultCooccurPairs / 4}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c, err := NewCooccurrence(bc.pairs, 0)
				if err != nil {
					b.Fatal(err)
				}
				for _, s := range train {
					if err := c.Add(s); err != nil {
						b.Fatal(err)
					}
				}
				if c.Pairs() == 0 {
					b.Fatal("no pairs")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/incs, "ns/increment")
		})
	}
}
