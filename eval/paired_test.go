package eval

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
)

// bruteBasket is one test basket's log P(S) and percentile rank (NaN when
// it is not predicted) under m, by fresh LU and determinant ratios.
func bruteBasket(m *ndpp.Model, u []int, logNorm float64) (ll, pr float64) {
	ll = directLogDet(directKernel(m, u, 0)) - logNorm
	if len(u) < 2 {
		return ll, math.NaN()
	}
	y, target := u[:len(u)-1], u[len(u)-1]
	detY := mat.Det(directKernel(m, y, 0))
	score := make([]float64, m.N())
	for j := range score {
		if !slices.Contains(y, j) {
			score[j] = mat.Det(directKernel(m, append(slices.Clone(y), j), 0)) / detY
		}
	}
	return ll, shareBelow(score, target)
}

// TestPairedMatchesBruteForce: Paired's differences and standard errors
// are those of the per-basket differences computed directly (fresh LU,
// brute-force ranks), binned as the paper MPR bins, on seeded random
// models of one catalogue, near-singular ones included.
func TestPairedMatchesBruteForce(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		n := 14
		a := ndpp.Random(n, 4, seed, ndpp.RandomOptions{})
		b := ndpp.Random(n, 5, seed+10, ndpp.RandomOptions{Shared: seed%2 == 0})
		if seed == 4 {
			// Near-singular: two items of a almost the same vector.
			v := a.V()
			for r := 0; r < v.RawMatrix().Rows; r++ {
				v.Set(r, 1, v.At(r, 0)*(1+1e-9))
			}
			var err error
			a, err = ndpp.New(v, a.B(), a.C())
			require.NoError(t, err)
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		var test [][]int
		for len(test) < 50 {
			test = append(test, rng.Perm(n)[:1+rng.IntN(4)])
		}
		opt := Options{Seed: 3, Eps: -1}
		ma, err := Evaluate(context.Background(), a, test, opt)
		require.NoError(t, err)
		mb, err := Evaluate(context.Background(), b, test, opt)
		require.NoError(t, err)
		got, err := Paired(ma, mb)
		require.NoError(t, err)

		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		na, nb := directLogDet(directKernel(a, all, 1)), directLogDet(directKernel(b, all, 1))
		var dll, dpr []float64
		var sizes, allSizes []int
		for _, s := range test {
			u := slices.Sorted(slices.Values(s))
			la, pa := bruteBasket(a, u, na)
			lb, pb := bruteBasket(b, u, nb)
			dll = append(dll, la-lb)
			if len(u) >= 2 {
				allSizes = append(allSizes, len(u)-1)
			}
			if !math.IsNaN(pa) && !math.IsNaN(pb) {
				dpr, sizes = append(dpr, pa-pb), append(sizes, len(u)-1)
			}
		}
		se := func(x []float64) float64 { return stat.StdDev(x, nil) / math.Sqrt(float64(len(x))) }
		require.InDelta(t, stat.Mean(dll, nil), got.TestLL, 1e-7)
		require.InDelta(t, se(dll), got.TestLLSE, 1e-7)
		require.InDelta(t, ma.TestLL-mb.TestLL, got.TestLL, 1e-9)
		require.Equal(t, got.TestLL, got.TestLLEps) // Eps < 0: no ε
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, s := range allSizes {
			lo, hi = math.Min(lo, math.Log10(float64(s))), math.Max(hi, math.Log10(float64(s)))
		}
		var bins [3][]float64
		for i, x := range dpr {
			k := bruteBucket(math.Log10(float64(sizes[i])), lo, hi)
			bins[k] = append(bins[k], x)
		}
		var sum, ss float64
		var nbins int
		for _, x := range bins {
			if len(x) > 0 {
				sum += stat.Mean(x, nil)
				ss += se(x) * se(x)
				nbins++
			}
		}
		require.Equal(t, len(dpr), got.Predicted)
		require.InDelta(t, 100*sum/float64(nbins), got.MPR, 1e-7)
		require.InDelta(t, 100*math.Sqrt(ss)/float64(nbins), got.MPRSE, 1e-7)
		if ma.Predicted == got.Predicted && mb.Predicted == got.Predicted {
			require.InDelta(t, ma.MPR-mb.MPR, got.MPR, 1e-9)
		}
		// A model against itself: no difference, no error.
		same, err := Paired(ma, ma)
		require.NoError(t, err)
		require.Equal(t, 0.0, same.MPR)
		require.Equal(t, 0.0, same.MPRSE)
		require.Equal(t, 0.0, same.TestLLEpsSE)
	}
}

// TestPairedSkipsWhatEitherSkips: a basket one model cannot predict (a
// singular conditioning set) leaves the paired MPR, which is over the
// baskets both predict; the bins stay those of every test basket.
func TestPairedSkipsWhatEitherSkips(t *testing.T) {
	low := ndpp.Random(30, 2, 5, ndpp.RandomOptions{}) // no 26-item conditioning set of rank 4
	high := ndpp.Random(30, 15, 6, ndpp.RandomOptions{})
	big := make([]int, 27)
	for i := range big {
		big[i] = 3 + i
	}
	test := [][]int{{0, 1}, {2, 3, 4}, {5, 6, 7, 8}, big}
	ml, err := Evaluate(context.Background(), low, test, Options{Seed: 1})
	require.NoError(t, err)
	mh, err := Evaluate(context.Background(), high, test, Options{Seed: 1})
	require.NoError(t, err)
	require.Equal(t, 1, ml.Skipped)
	require.Equal(t, 4, mh.Predicted)
	d, err := Paired(mh, ml)
	require.NoError(t, err)
	require.Equal(t, 3, d.Predicted)
	edges := []int{1, 2, 3, 26}
	var bins [3][]float64
	for i, s := range test[:3] {
		k := sizeBucketsIn([]int{len(s) - 1}, edges)[0]
		require.True(t, mh.per.predicted[i] && ml.per.predicted[i])
		bins[k] = append(bins[k], mh.per.pr[i]-ml.per.pr[i])
	}
	require.InDelta(t, 100*(mean(bins[0])+mean(bins[1]))/2, d.MPR, metricTol)
}

// TestPairedBaselines: the baselines' evaluations pair with a model's; the
// co-occurrence baseline has no log-likelihood, so its differences are NaN.
func TestPairedBaselines(t *testing.T) {
	n := 12
	m := ndpp.Random(n, 3, 2, ndpp.RandomOptions{})
	rng := rand.New(rand.NewPCG(2, 2))
	var train, test [][]int
	for len(train) < 200 {
		train = append(train, rng.Perm(n)[:1+rng.IntN(4)])
	}
	for len(test) < 40 {
		test = append(test, rng.Perm(n)[:1+rng.IntN(4)])
	}
	cmp, err := Compare(context.Background(), []*ndpp.Model{m}, test, Training{Baskets: train}, CompareOptions{Options: Options{Seed: 1}})
	require.NoError(t, err)
	for _, base := range []*Metrics{cmp.Independent, cmp.LatentClass} {
		d, err := Paired(cmp.Models[0], base)
		require.NoError(t, err)
		require.InDelta(t, cmp.Models[0].TestLL-base.TestLL, d.TestLL, 1e-9)
		require.InDelta(t, cmp.Models[0].MPR-base.MPR, d.MPR, 1e-9)
		require.False(t, math.IsNaN(d.TestLLSE) || math.IsNaN(d.MPRSE))
	}
	d, err := Paired(cmp.Models[0], cmp.Cooccurrence)
	require.NoError(t, err)
	require.InDelta(t, cmp.Models[0].MPR-cmp.Cooccurrence.MPR, d.MPR, 1e-9)
	require.True(t, math.IsNaN(d.TestLL) && math.IsNaN(d.TestLLSE))
}

// TestPairedRefusesOtherBaskets: evaluations of other baskets, or of the
// same baskets in another protocol order, or made by hand, do not pair.
func TestPairedRefusesOtherBaskets(t *testing.T) {
	m := ndpp.Random(10, 3, 1, ndpp.RandomOptions{})
	test := [][]int{{0, 1, 2}, {3, 4}, {5, 6, 7}}
	ctx := context.Background()
	a, err := Evaluate(ctx, m, test, Options{Seed: 1})
	require.NoError(t, err)
	other, err := Evaluate(ctx, m, [][]int{{0, 1, 2}, {3, 4}, {5, 6, 8}}, Options{Seed: 1})
	require.NoError(t, err)
	keys := []int64{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}
	reordered, err := Evaluate(ctx, m, test, Options{Seed: 1, Key: keys})
	require.NoError(t, err)
	for _, b := range []*Metrics{other, reordered, {MPR: 50}, nil} {
		_, err := Paired(a, b)
		require.Error(t, err)
	}
	_, err = Paired(nil, a)
	require.Error(t, err)
}
