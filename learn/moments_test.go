package learn

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/eval"
	"github.com/ndpp-go/ndpp/ndpp"
)

// randTrain draws m baskets over n items, each item in a basket with
// probability p (empty baskets dropped).
func randTrain(rng *rand.Rand, m, n int, p float64) [][]int {
	var train [][]int
	for range m {
		var s []int
		for i := range n {
			if rng.Float64() < p {
				s = append(s, i)
			}
		}
		if len(s) > 0 {
			train = append(train, s)
		}
	}
	return train
}

func countPairs(t *testing.T, train [][]int, n int) *eval.Cooccurrence {
	t.Helper()
	co, err := eval.CountCooccurrence(train, n, 1<<20, 0)
	require.NoError(t, err)
	return co
}

// TestMomentGradient checks the moment fit's loss against a direct sum and
// its gradient against finite differences, with every column and with a
// sample of them (then the loss is the estimate of the doc comment).
func TestMomentGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n, d := 12, 4
	train := randTrain(rng, 40, n, 0.3)
	pcs := cosinesOf(countPairs(t, train, n), n)
	c := make([]float64, d*d)
	for k := 0; k+1 < d; k += 2 {
		c[k*d+k+1], c[(k+1)*d+k] = 1, -1
	}
	b := make([]float64, n*d)
	for i := range b {
		b[i] = rng.NormFloat64() * 0.5
	}
	rows := []int{0, 3, 4, 7, 11}
	for _, cols := range [][]int{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 3, 9, 11}} {
		f := &momentFit{pcs: pcs, d: d, b: b, c: c, cols: len(cols), bc: make([]float64, n*d), grad: make([]float64, n*d),
			a: make([]float64, len(rows)*len(cols)), bj: make([]float64, len(rows)*d), gj: make([]float64, len(rows)*d),
			bk: make([]float64, len(cols)*d), gk: make([]float64, len(cols)*d)}
		loss := func() float64 {
			res, _ := f.gradient(rows, cols)
			return res
		}
		coupling := func(j, y int) float64 {
			var a float64
			for k := range d {
				for l := range d {
					a += b[j*d+k] * c[k*d+l] * b[y*d+l]
				}
			}
			return a
		}
		cosine := func(j, y int) float64 {
			for e := pcs.start[j]; e < pcs.start[j+1]; e++ {
				if int(pcs.col[e]) == y {
					return pcs.val[e]
				}
			}
			return 0
		}
		var direct float64
		for _, j := range rows {
			for _, y := range cols {
				a := coupling(j, y)
				direct += float64(n) / float64(len(cols)) * a * a * a * a
			}
			for y := range n {
				if t := cosine(j, y); t > 0 {
					a := coupling(j, y)
					direct += (a*a-t)*(a*a-t) - a*a*a*a
				}
			}
		}
		require.InDelta(t, direct, loss(), 1e-10*(1+math.Abs(direct)))
		f.gradient(rows, cols)
		grad := append([]float64(nil), f.grad...)
		fdCheckFn(t, fmt.Sprintf("B, %d columns", len(cols)), b, grad, loss, 1e-7)
	}
}

// TestFitMomentsFits: on baskets drawn from a few groups of items the fit
// lowers the residual and the couplings it finds are larger within groups
// than across them; it stops when ctx is done and refuses a fit beyond its
// memory budget.
func TestFitMomentsFits(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	n, groups := 40, 4
	var train [][]int
	for range 600 {
		g := rng.IntN(groups)
		var s []int
		for i := g * n / groups; i < (g+1)*n/groups; i++ {
			if rng.Float64() < 0.4 {
				s = append(s, i)
			}
		}
		if len(s) > 0 {
			train = append(train, s)
		}
	}
	co := countPairs(t, train, n)
	var first, last float64
	b, c, err := FitMoments(context.Background(), co, n, 8, MomentOptions{Steps: 200, Seed: 1, Progress: func(step, _ int, r float64) {
		if step == 1 {
			first = r
		}
		last = r
	}})
	require.NoError(t, err)
	require.Less(t, last, first/2)
	m, err := ndpp.NewFromRows(n, 8, make([]float64, n*8), b, c)
	require.NoError(t, err)
	var in, out float64
	var nin, nout int
	cm := m.C()
	for j := range n {
		for y := range n {
			if j == y {
				continue
			}
			var a float64
			for k := range 8 {
				for l := range 8 {
					a += b[j*8+k] * cm.At(k, l) * b[y*8+l]
				}
			}
			if j*groups/n == y*groups/n {
				in, nin = in+a*a, nin+1
			} else {
				out, nout = out+a*a, nout+1
			}
		}
	}
	require.Greater(t, in/float64(nin), 5*out/float64(nout))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = FitMoments(ctx, co, n, 8, MomentOptions{})
	require.ErrorIs(t, err, context.Canceled)
	_, _, err = FitMoments(context.Background(), co, n, 8, MomentOptions{MaxMemory: 1000})
	require.ErrorIs(t, err, ndpp.ErrMemoryBudget)
	_, _, err = FitMoments(context.Background(), co, n, 1, MomentOptions{})
	require.Error(t, err)
}

// TestMomentScaleScore: the moment start takes the scale of the best
// validation objective, scored as training weighs it: the mean basket
// log-likelihood plus the next-item term (fresh-LU gains) of each basket
// of two items or more at its weight per carrying basket, summed and
// divided by all the baskets, some of which hold one item.
func TestMomentScaleScore(t *testing.T) {
	const n = 24
	train, val := plantedBaskets(n, 300, 3), plantedBaskets(n, 60, 8)
	opt := OfflineOptions{D: 4, Seed: 3, NextWeight: 0.2}.withDefaultsFor(n)
	p, err := NewParams(n, 4, false, 3, InitOptions{})
	require.NoError(t, err)
	b0 := append([]float64(nil), p.B...)
	set := func(kappa float64) {
		for i := range b0 {
			p.B[i] = math.Sqrt(kappa) * 4 * b0[i]
		}
	}
	var carriers [][]int
	var ts []int
	var negs [][]int
	var nd nextDraw
	for q, s := range val {
		if len(s) >= 2 {
			tpos, ng := nd.choice(opt.Seed, math.MaxInt32, q, s, n, opt.NextNegatives, true, opt.Key, nil)
			carriers, ts, negs = append(carriers, s), append(ts, tpos), append(negs, ng)
		}
	}
	require.Less(t, len(carriers), len(val))
	w := make([]float64, len(carriers))
	for i := range w {
		w[i] = nextBasketWeight(opt.NextWeight, opt.NextCarry, opt.NextMaxCarry, train) / float64(len(val))
	}
	direct := func(kappa float64) float64 {
		set(kappa)
		m, err := p.Model()
		require.NoError(t, err)
		ll, err := eval.LogLikelihoodEps(context.Background(), m, val, opt.Eps)
		require.NoError(t, err)
		return ll + nextBrute(p, carriers, ts, negs, opt.NextBeta, w, opt.Eps)
	}
	best, score, err := bestMomentScale(context.Background(), p, set, train, val, opt)
	require.NoError(t, err)
	require.InDelta(t, direct(best), score, 1e-9*math.Abs(score))
	var scores []float64
	for _, kappa := range momentScales {
		scores = append(scores, direct(kappa))
		require.LessOrEqual(t, scores[len(scores)-1], score+1e-9*math.Abs(score), "κ = %g", kappa)
	}
	require.Greater(t, score-min(scores[0], scores[len(scores)-1]), 1e-3, "the scales must score apart")
	_, none, err := bestMomentScale(context.Background(), p, set, train, nil, opt)
	require.NoError(t, err)
	require.True(t, math.IsInf(none, -1))
}
