package learn

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// metricTol is the agreement of metrics with the brute-force protocol
// (they are means of exactly computed ranks; only LL has rounding).
const metricTol = 1e-9

// bruteBucket is the right-closed 3-bin cut written with explicit edges.
func bruteBucket(x, lo, hi float64) int {
	if hi == lo {
		return 0
	}
	e1, e2 := lo+(hi-lo)/3, lo+2*(hi-lo)/3
	switch {
	case x <= e1:
		return 0
	case x <= e2:
		return 1
	}
	return 2
}

func TestEvaluateMatchesBruteForce(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		n, d := 14, 4
		m := ndpp.Random(n, d, seed, ndpp.RandomOptions{Shared: seed%2 == 0})
		p := ParamsFromModel(m)
		rng := rand.New(rand.NewPCG(seed, 99))
		var test [][]int
		for len(test) < 60 {
			k := 1 + rng.IntN(min(6, d))
			s := rng.Perm(n)[:k]
			if rng.IntN(5) == 0 {
				s = append(s, s[0]) // a duplicate: the protocol removes it
			}
			test = append(test, s)
		}
		got, err := Evaluate(m, test, EvalOptions{Seed: 4})
		require.NoError(t, err)

		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		logNorm := directLogDet(directKernel(p, all, 1))
		var ll float64
		type rec struct {
			size        int
			pr, p5, p10 float64
		}
		var recs []rec
		for _, s := range test {
			u := slices.Clone(s)
			sort.Ints(u)
			u = slices.Compact(u)
			ll += directLogDet(directKernel(p, u, 0)) - logNorm
			if len(u) < 2 {
				continue
			}
			y, target := u[:len(u)-1], u[len(u)-1]
			detY := mat.Det(directKernel(p, y, 0))
			score := make([]float64, n)
			for j := 0; j < n; j++ {
				if slices.Contains(y, j) {
					continue
				}
				score[j] = mat.Det(directKernel(p, append(slices.Clone(y), j), 0)) / detY
			}
			ge, gt, nz := 0, 0, 0
			for _, sc := range score {
				if sc >= score[target] {
					ge++
				}
				if sc > score[target] {
					gt++
				}
				if sc != 0 {
					nz++
				}
			}
			recs = append(recs, rec{len(y), 1 - float64(ge)/float64(nz), b2f(gt < 5), b2f(gt < 10)})
		}
		require.InDelta(t, ll/float64(len(test)), got.TestLL, 1e-8)
		require.Equal(t, len(recs), got.Predicted)
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, r := range recs {
			lo, hi = math.Min(lo, math.Log10(float64(r.size))), math.Max(hi, math.Log10(float64(r.size)))
		}
		var bs, bc [3]float64
		var b5, b10 [3]float64
		var micro, m5, m10 float64
		for _, r := range recs {
			b := bruteBucket(math.Log10(float64(r.size)), lo, hi)
			bs[b] += r.pr
			b5[b] += r.p5
			b10[b] += r.p10
			bc[b]++
			micro += r.pr
			m5 += r.p5
			m10 += r.p10
		}
		var paper, p5, p10, nb float64
		for b := 0; b < 3; b++ {
			if bc[b] > 0 {
				paper += bs[b] / bc[b]
				p5 += b5[b] / bc[b]
				p10 += b10[b] / bc[b]
				nb++
			}
		}
		nr := float64(len(recs))
		require.InDelta(t, 100*paper/nb, got.MPR, 1e-7)
		require.InDelta(t, 100*micro/nr, got.MPRMicro, 1e-7)
		require.InDelta(t, 100*p5/nb, got.Prec5, metricTol)
		require.InDelta(t, 100*m5/nr, got.Prec5Micro, metricTol)
		require.InDelta(t, 100*p10/nb, got.Prec10, metricTol)
		require.InDelta(t, 100*m10/nr, got.Prec10Micro, metricTol)
		// AUC: reproducible for a seed, in [0, 1].
		again, err := Evaluate(m, test, EvalOptions{Seed: 4})
		require.NoError(t, err)
		require.Equal(t, got.AUC, again.AUC)
		require.Equal(t, got.AUCMicro, again.AUCMicro)
		require.True(t, got.AUC >= 0 && got.AUC <= 1 && got.AUCMicro >= 0 && got.AUCMicro <= 1)
	}
}

func TestAUCMatchesPairCounting(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 50; trial++ {
		np, nn := 1+rng.IntN(30), 1+rng.IntN(30)
		draw := func() float64 {
			switch rng.IntN(6) {
			case 0:
				return math.Inf(-1) // zero determinant
			case 1:
				return float64(rng.IntN(3)) // ties
			}
			return rng.NormFloat64()
		}
		pos, neg := make([]float64, np), make([]float64, nn)
		for i := range pos {
			pos[i] = draw()
		}
		for i := range neg {
			neg[i] = draw()
		}
		want := 0.0
		for _, a := range pos {
			for _, b := range neg {
				switch {
				case a > b:
					want++
				case a == b:
					want += 0.5
				}
			}
		}
		want /= float64(np * nn)
		require.InDelta(t, want, auc(pos, neg), 1e-12)
	}
}

func TestSizeBuckets(t *testing.T) {
	sizes := []int{1, 2, 3, 5, 8, 13, 21, 1}
	lo, hi := 0.0, math.Log10(21)
	got := sizeBuckets(sizes)
	for i, s := range sizes {
		require.Equal(t, bruteBucket(math.Log10(float64(s)), lo, hi), got[i], "size %d", s)
	}
	require.Equal(t, []int{0, 0}, sizeBuckets([]int{4, 4}))
}

func TestEvaluateSortKeyAndErrors(t *testing.T) {
	m := ndpp.Random(10, 3, 1, ndpp.RandomOptions{})
	test := [][]int{{1, 2, 3}, {4, 5}, {6}}
	// Reversed keys: the held-out item becomes the lowest row.
	key := make([]int64, 10)
	for i := range key {
		key[i] = int64(100 - i)
	}
	a, err := Evaluate(m, test, EvalOptions{})
	require.NoError(t, err)
	b, err := Evaluate(m, test, EvalOptions{Key: key})
	require.NoError(t, err)
	require.Equal(t, a.TestLL, b.TestLL)
	require.Equal(t, 2, b.Predicted)
	// With reversed keys, {1, 2, 3} holds out item 1 given {2, 3}.
	one, err := Evaluate(m, [][]int{{3, 1, 2}}, EvalOptions{Key: key})
	require.NoError(t, err)
	gains := make([]float64, 10)
	require.NoError(t, m.ConditionalGains([]int{3, 2}, gains))
	ge, nz := 0, 0
	for _, g := range gains {
		if g >= gains[1] {
			ge++
		}
		if g != 0 {
			nz++
		}
	}
	require.InDelta(t, 100*(1-float64(ge)/float64(nz)), one.MPRMicro, metricTol)
	_, err = Evaluate(m, nil, EvalOptions{})
	require.Error(t, err)
	_, err = Evaluate(m, [][]int{{}}, EvalOptions{})
	require.Error(t, err)
	_, err = Evaluate(m, [][]int{{10}}, EvalOptions{})
	require.ErrorContains(t, err, "out of range")
	_, err = Evaluate(m, test, EvalOptions{Key: []int64{1}})
	require.Error(t, err)
}

// TestEvaluateCountsZeroProbabilityBaskets checks ZeroProb against the rank
// bound: with d = 1 the skew C is 0 and L = vvᵀ has rank 1, so every basket
// of two or more items has probability 0 and the test log-likelihood is
// −Inf.
func TestEvaluateCountsZeroProbabilityBaskets(t *testing.T) {
	m := ndpp.Random(8, 1, 3, ndpp.RandomOptions{})
	test := [][]int{{0, 1}, {2, 3, 4}, {5}, {1, 6, 7}, {0, 2}, {3}}
	met, err := Evaluate(m, test, EvalOptions{Seed: 1})
	require.NoError(t, err)
	require.Equal(t, 4, met.ZeroProb)
	require.True(t, math.IsInf(met.TestLL, -1))
	met, err = Evaluate(m, [][]int{{0}, {5}}, EvalOptions{Seed: 1})
	require.NoError(t, err)
	require.Zero(t, met.ZeroProb)
	require.False(t, math.IsInf(met.TestLL, 0))
}
