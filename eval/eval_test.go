package eval

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
)

// metricTol is the agreement of metrics with the brute-force protocol
// (they are means of exactly computed ranks; only LL has rounding).
const metricTol = 1e-9

// directLogDet is log det a by gonum's LU (NaN for a non-positive
// determinant).
func directLogDet(a *mat.Dense) float64 {
	var lu mat.LU
	lu.Factorize(a)
	ld, s := lu.LogDet()
	if s <= 0 {
		return math.NaN()
	}
	return ld
}

// directKernel builds L_S (+ shift·I) entry by entry from m's V, B, C and
// diagonal with gonum: L_ij = [i = j]δᵢ + vᵢ·vⱼ + bᵢᵀCbⱼ.
func directKernel(m *ndpp.Model, items []int, shift float64) *mat.Dense {
	V, B, C := m.V(), m.B(), m.C()
	k := len(items)
	L := mat.NewDense(k, k, nil)
	for r, i := range items {
		for s, j := range items {
			var cb mat.VecDense
			cb.MulVec(C, B.ColView(j))
			x := mat.Dot(V.ColView(i), V.ColView(j)) + mat.Dot(B.ColView(i), &cb)
			if r == s {
				x += m.ItemDiag(i) + shift
			}
			L.Set(r, s, x)
		}
	}
	return L
}

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
		p := m
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
		got, err := Evaluate(context.Background(), m, test, Options{Seed: 4, Eps: -1})
		require.NoError(t, err)
		withEps, err := Evaluate(context.Background(), m, test, Options{Seed: 4, Eps: 0.01})
		require.NoError(t, err)

		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		logNorm := directLogDet(directKernel(p, all, 1))
		var ll, llEps float64
		type rec struct {
			size        int
			pr, p5, p10 float64
		}
		var recs []rec
		var terms []float64
		for _, s := range test {
			u := slices.Clone(s)
			sort.Ints(u)
			u = slices.Compact(u)
			ll += directLogDet(directKernel(p, u, 0)) - logNorm
			terms = append(terms, directLogDet(directKernel(p, u, 0))-logNorm)
			llEps += directLogDet(directKernel(p, u, 0.01)) - logNorm
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
		require.InDelta(t, ll/float64(len(test)), got.TestLLEps, 1e-8)
		require.InDelta(t, llEps/float64(len(test)), withEps.TestLLEps, 1e-8)
		// TestLL is log P(S) whatever ε.
		require.InDelta(t, ll/float64(len(test)), got.TestLL, 1e-8)
		require.Equal(t, got.TestLL, withEps.TestLL)
		require.Equal(t, got.TestLLEps, got.TestLL) // Eps < 0: no ε
		require.Equal(t, got.TestLLEpsSE, got.TestLLSE)
		require.Equal(t, 0.0, got.Eps)
		require.Equal(t, 0.01, withEps.Eps)
		require.Equal(t, got.MPR, withEps.MPR) // ε is not part of the conditional gains
		require.Equal(t, len(recs), got.Predicted)
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, r := range recs {
			lo, hi = math.Min(lo, math.Log10(float64(r.size))), math.Max(hi, math.Log10(float64(r.size)))
		}
		var bins [3][]float64
		var prs []float64
		for _, r := range recs {
			b := bruteBucket(math.Log10(float64(r.size)), lo, hi)
			bins[b] = append(bins[b], r.pr)
			prs = append(prs, r.pr)
		}
		se := func(x []float64) float64 { return stat.StdDev(x, nil) / math.Sqrt(float64(len(x))) }
		var binVar float64
		var nbins int
		for _, b := range bins {
			if len(b) > 0 {
				binVar += se(b) * se(b)
				nbins++
			}
		}
		require.InDelta(t, se(terms), got.TestLLEpsSE, 1e-8)
		require.InDelta(t, 100*se(prs), got.MPRMicroSE, 1e-7)
		require.InDelta(t, 100*math.Sqrt(binVar)/float64(nbins), got.MPRSE, 1e-7)
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
		again, err := Evaluate(context.Background(), m, test, Options{Seed: 4, Eps: -1})
		require.NoError(t, err)
		require.Equal(t, got.AUC, again.AUC)
		require.Equal(t, got.AUCMicro, again.AUCMicro)
		require.True(t, got.AUC >= 0 && got.AUC <= 1 && got.AUCMicro >= 0 && got.AUCMicro <= 1)
		require.Equal(t, got.AUCPaired, again.AUCPaired)

		// The AUCs against the same random baskets (drawn as Evaluate
		// draws them), scored by fresh LU: pairs of every size for the
		// micro AUC, each basket with its own random basket for the paired.
		negRng := rand.New(rand.NewPCG(4, 0xa0c))
		var pos, neg []float64
		for _, s := range test {
			u := slices.Compact(slices.Sorted(slices.Values(s)))
			pos = append(pos, directLogDet(directKernel(p, u, 0.01)))
			neg = append(neg, directLogDet(directKernel(p, slices.Sorted(slices.Values(sampleDistinct(negRng, n, len(u)))), 0.01)))
		}
		var pairs, paired float64
		var wins []float64
		for i, a := range pos {
			for j, b := range neg {
				w := b2f(a > b) + b2f(a == b)/2
				pairs += w
				if i == j {
					paired += w
					wins = append(wins, w)
				}
			}
		}
		require.InDelta(t, se(wins), withEps.AUCPairedSE, metricTol)
		nt := float64(len(test))
		require.InDelta(t, pairs/(nt*nt), withEps.AUCMicro, metricTol)
		require.InDelta(t, paired/nt, withEps.AUCPaired, metricTol)
	}
}

// An independent-items model with one rate for every item gives every basket
// of a size the same score: the paired AUC is exactly one half, and a
// basket's random partner never decides it. The micro AUC compares sizes.
func TestAUCPairedComparesEqualSizes(t *testing.T) {
	n := 40
	m, err := independentModel(slices.Repeat([]float64{3}, n), 100)
	require.NoError(t, err)
	var test [][]int
	for k := 1; k <= 8; k++ {
		for r := 0; r < 5; r++ {
			test = append(test, rand.New(rand.NewPCG(uint64(k), uint64(r))).Perm(n)[:k])
		}
	}
	got, err := Evaluate(context.Background(), m, test, Options{Seed: 1})
	require.NoError(t, err)
	require.Equal(t, 0.5, got.AUCPaired)
	require.Equal(t, 0.5, got.AUCMicro) // the same sizes on both sides: symmetric
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
	got := sizeBucketsIn(sizes, sizes)
	for i, s := range sizes {
		require.Equal(t, bruteBucket(math.Log10(float64(s)), lo, hi), got[i], "size %d", s)
	}
	require.Equal(t, []int{0, 0}, sizeBucketsIn([]int{4, 4}, []int{4, 4}))
	// Edges from another set: sizes outside its range go to the end bins.
	require.Equal(t, []int{0, 0, 1, 2, 2}, sizeBucketsIn([]int{1, 2, 4, 8, 100}, []int{2, 4, 8}))
	require.Equal(t, []int{0, 0}, sizeBucketsIn([]int{3, 5}, nil))
}

func TestEvaluateSortKeyAndErrors(t *testing.T) {
	m := ndpp.Random(10, 3, 1, ndpp.RandomOptions{})
	test := [][]int{{1, 2, 3}, {4, 5}, {6}}
	// Reversed keys: the held-out item becomes the lowest row.
	key := make([]int64, 10)
	for i := range key {
		key[i] = int64(100 - i)
	}
	a, err := Evaluate(context.Background(), m, test, Options{})
	require.NoError(t, err)
	b, err := Evaluate(context.Background(), m, test, Options{Key: key})
	require.NoError(t, err)
	require.Equal(t, a.TestLLEps, b.TestLLEps)
	require.Equal(t, 2, b.Predicted)
	// With reversed keys, {1, 2, 3} holds out item 1 given {2, 3}.
	one, err := Evaluate(context.Background(), m, [][]int{{3, 1, 2}}, Options{Key: key})
	require.NoError(t, err)
	gains := make([]float64, 10)
	require.NoError(t, m.ConditionalGains([]int{3, 2}, gains))
	require.InDelta(t, 100*shareBelow(gains, 1), one.MPRMicro, metricTol)
	_, err = Evaluate(context.Background(), m, nil, Options{})
	require.Error(t, err)
	_, err = Evaluate(context.Background(), m, [][]int{{}}, Options{})
	require.Error(t, err)
	_, err = Evaluate(context.Background(), m, [][]int{{10}}, Options{})
	require.ErrorContains(t, err, "out of range")
	_, err = Evaluate(context.Background(), m, test, Options{Key: []int64{1}})
	require.Error(t, err)
}

// TestEvaluateCountsZeroProbabilityBaskets checks ZeroProb against the rank
// bound: with d = 1 the skew C is 0 and L = vvᵀ has rank 1, so every basket
// of two or more items has probability 0 and the test log-likelihood is
// −Inf.
func TestEvaluateCountsZeroProbabilityBaskets(t *testing.T) {
	m := ndpp.Random(8, 1, 3, ndpp.RandomOptions{})
	test := [][]int{{0, 1}, {2, 3, 4}, {5}, {1, 6, 7}, {0, 2}, {3}}
	met, err := Evaluate(context.Background(), m, test, Options{Seed: 1, Eps: -1})
	require.NoError(t, err)
	require.Equal(t, 4, met.ZeroProb)
	require.Equal(t, 4, met.ZeroProbEps) // no ε: the same baskets
	require.Equal(t, 2, met.BeyondRank)  // three items, rank 2d = 2
	require.True(t, math.IsInf(met.TestLLEps, -1))
	require.True(t, math.IsInf(met.TestLL, -1))
	require.True(t, math.IsNaN(met.TestLLEpsSE)) // no spread of an infinite mean
	met, err = Evaluate(context.Background(), m, [][]int{{0}, {5}}, Options{Seed: 1, Eps: -1})
	require.NoError(t, err)
	require.Zero(t, met.ZeroProb)
	require.False(t, math.IsInf(met.TestLLEps, 0))
	require.False(t, math.IsNaN(met.TestLLEpsSE))
}

func TestStdErrNeedsTwoValues(t *testing.T) {
	require.True(t, math.IsNaN(stdErr(nil)))
	require.True(t, math.IsNaN(stdErr([]float64{3})))
	require.True(t, math.IsNaN(stdErr([]float64{1, math.Inf(-1)})))
	require.InDelta(t, 0.5, stdErr([]float64{1, 2}), 1e-15) // sd √(1/2), over √2
	// A bin with one basket leaves the binned mean's error undefined.
	require.True(t, math.IsNaN(bucketStdErr([]float64{1, 2, 3}, []int{0, 0, 2})))
	require.InDelta(t, math.Sqrt(0.25+0.25)/2, bucketStdErr([]float64{1, 2, 5, 6}, []int{0, 0, 1, 1}), 1e-15)
}

// TestEvaluateEpsKeepsLikelihoodFinite: with the default ε every basket,
// also one beyond the rank, has a finite term, equal to the direct
// log det(L_S + εI); the counts still say which baskets exceed the rank.
func TestEvaluateEpsKeepsLikelihoodFinite(t *testing.T) {
	m := ndpp.Random(8, 1, 3, ndpp.RandomOptions{})
	p := m
	test := [][]int{{0, 1}, {2, 3, 4}, {5}, {1, 6, 7}, {0, 2}, {3}}
	met, err := Evaluate(context.Background(), m, test, Options{Seed: 1})
	require.NoError(t, err)
	require.Equal(t, DefaultEps, met.Eps)
	require.Zero(t, met.ZeroProbEps)
	require.Equal(t, 4, met.ZeroProb) // probability 0 under the model itself
	require.True(t, math.IsInf(met.TestLL, -1))
	require.Equal(t, 2, met.BeyondRank)
	all := []int{0, 1, 2, 3, 4, 5, 6, 7}
	want := 0.0
	for _, s := range test {
		want += directLogDet(directKernel(p, s, DefaultEps))
	}
	want = want/float64(len(test)) - directLogDet(directKernel(p, all, 1))
	require.InDelta(t, want, met.TestLLEps, 1e-6*math.Abs(want))
}

// TestEvaluateBinsIgnoreSkippedBaskets: the paper protocol's size bins are
// cut from every test basket, so a basket whose conditioning set is
// singular (skipped) does not move the other baskets' bins.
func TestEvaluateBinsIgnoreSkippedBaskets(t *testing.T) {
	m := ndpp.Random(30, 2, 5, ndpp.RandomOptions{})
	big := make([]int, 27) // with d = 2 its 26-item conditioning set is singular
	for i := range big {
		big[i] = 3 + i
	}
	test := [][]int{{0, 1}, {2, 3, 4}, {5, 6, 7, 8}, big}
	met, err := Evaluate(context.Background(), m, test, Options{Seed: 1})
	require.NoError(t, err)
	require.Equal(t, 1, met.Skipped)
	require.Equal(t, 3, met.Predicted)
	// Cut over sizes 1…26 (after the hold-out), sizes 1 and 2 share the
	// first bin and 3 is in the second; cut over the predicted sizes 1…3
	// alone, each would have a bin of its own (another mean).
	edges := []int{1, 2, 3, 26}
	require.Equal(t, []int{0, 0, 1}, sizeBucketsIn([]int{1, 2, 3}, edges))
	gains := make([]float64, 30)
	var pr [3][]float64
	for _, s := range test[:3] {
		y, t0 := s[:len(s)-1], s[len(s)-1]
		require.NoError(t, m.ConditionalGains(y, gains))
		b := sizeBucketsIn([]int{len(y)}, edges)[0]
		pr[b] = append(pr[b], shareBelow(gains, t0))
	}
	want := 100 * (mean(pr[0]) + mean(pr[1])) / 2
	require.InDelta(t, want, met.MPR, metricTol)
	require.NotEqual(t, 100*(pr[0][0]+pr[0][1]+pr[1][0])/3, met.MPR)
}

// shareBelow is the share of the items with a non-zero score (the
// candidates: a basket's own items score 0) that score below target's,
// ties counting as above: 1 − #{score ≥ score[target]}/#{score ≠ 0}.
func shareBelow(score []float64, target int) float64 {
	ge, nz := 0, 0
	for _, sc := range score {
		if sc >= score[target] {
			ge++
		}
		if sc != 0 {
			nz++
		}
	}
	return 1 - float64(ge)/float64(nz)
}
