package eval

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/memlimit"
	"github.com/ndpp-go/ndpp/internal/ndpptest"
)

// subset returns the items of mask's bits.
func subset(mask, n int) []int {
	var s []int
	for j := 0; j < n; j++ {
		if mask&(1<<j) != 0 {
			s = append(s, j)
		}
	}
	return s
}

// TestLatentClassExact checks the latent class model against enumeration
// on small catalogues: its probabilities sum to one over all subsets, and
// its ranking score is P(Y+j)/P(Y) from those probabilities.
func TestLatentClassExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	ctx := context.Background()
	for trial := 0; trial < 12; trial++ {
		n, k := 4+rng.IntN(5), 1+rng.IntN(4)
		train := plantedBaskets(n, 60, uint64(trial))
		m, err := FitLatentClass(ctx, train, n, LatentClassOptions{K: k, Rounds: 1 + trial%6, Seed: uint64(trial)})
		require.NoError(t, err)
		logP := func(mask int) float64 {
			v, err := m.LogProb(subset(mask, n))
			require.NoError(t, err)
			return v
		}
		total := 0.0
		for mask := 0; mask < 1<<n; mask++ {
			total += math.Exp(logP(mask))
		}
		require.InDelta(t, 1, total, 1e-12, "trial %d", trial)
		y := []int{0, 2}
		dst, tie := [][]float64{make([]float64, n)}, [][]float64{make([]float64, n)}
		require.NoError(t, m.scoreBatch([][]int{y}, dst, tie, make([]error, 1)))
		for j := 0; j < n; j++ {
			if j == 0 || j == 2 {
				require.Zero(t, dst[0][j])
				continue
			}
			want := math.Exp(logP(1|4|1<<j) - logP(1|4))
			require.InDelta(t, want, dst[0][j], 1e-12*math.Max(1, want), "trial %d j %d", trial, j)
		}
	}
}

// TestLatentClassEMAscends checks that no EM round lowers the posterior
// EM maximises (the training log-likelihood plus the log densities of the
// Beta and Dirichlet priors of FitLatentClass), and that a repeated item
// in a training basket counts once.
func TestLatentClassEMAscends(t *testing.T) {
	ctx := context.Background()
	n, k := 12, 3
	train := plantedBaskets(n, 300, 4)
	objective := func(m *LatentClass) float64 {
		v := 0.0
		for _, s := range train {
			lp, err := m.LogProb(s)
			require.NoError(t, err)
			v += lp
		}
		cnt := make([]float64, n)
		for _, s := range train {
			for _, j := range s {
				cnt[j]++
			}
		}
		for c := 0; c < k; c++ {
			v += m.logPi[c] // Dirichlet(2, …, 2)
			for j := 0; j < n; j++ {
				a := (cnt[j] + 1) / (float64(len(train)) + 2) // Beta(1 + a, 2 − a)
				lo := m.lodds[j*k+c]
				lth, l1m := -math.Log1p(math.Exp(-lo)), -math.Log1p(math.Exp(lo))
				v += a*lth + (1-a)*l1m
			}
		}
		return v
	}
	prev := math.Inf(-1)
	for rounds := 1; rounds <= 12; rounds++ {
		m, err := FitLatentClass(ctx, train, n, LatentClassOptions{K: k, Rounds: rounds, Seed: 7})
		require.NoError(t, err)
		o := objective(m)
		if rounds > 1 {
			require.GreaterOrEqual(t, o, prev-1e-9*math.Abs(prev), "round %d", rounds)
		}
		prev = o
	}
	dup := make([][]int, len(train))
	for i, s := range train {
		dup[i] = append(append([]int(nil), s...), s[0])
	}
	a, err := FitLatentClass(ctx, train, n, LatentClassOptions{K: k, Rounds: 5, Seed: 7})
	require.NoError(t, err)
	b, err := FitLatentClass(ctx, dup, n, LatentClassOptions{K: k, Rounds: 5, Seed: 7})
	require.NoError(t, err)
	require.Equal(t, a.lodds, b.lodds)
}

// TestLatentClassErrors: bad input is an error, a budget too small is
// refused before anything is allocated, and a cancelled context stops the
// fit and the evaluation with an error wrapping context.Canceled.
func TestLatentClassErrors(t *testing.T) {
	ctx := context.Background()
	train := plantedBaskets(12, 100, 1)
	_, err := FitLatentClass(ctx, train, 12, LatentClassOptions{K: -1})
	require.Error(t, err)
	_, err = FitLatentClass(ctx, nil, 12, LatentClassOptions{})
	require.Error(t, err)
	_, err = FitLatentClass(ctx, [][]int{{0, 12}}, 12, LatentClassOptions{})
	require.ErrorContains(t, err, "out of range")
	_, err = FitLatentClass(ctx, train, 1<<20, LatentClassOptions{K: 1 << 12, MaxMemory: 1 << 30})
	var me *memlimit.Error
	require.ErrorAs(t, err, &me)
	require.Equal(t, int64(-1), LatentClassMemory(math.MaxInt64/4, 8))

	_, err = FitLatentClass(ndpptest.CancelAfter(3), train, 12, LatentClassOptions{Rounds: 10})
	require.ErrorIs(t, err, context.Canceled)
	m, err := FitLatentClass(ctx, train, 12, LatentClassOptions{K: 2})
	require.NoError(t, err)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = m.Evaluate(cancelled, plantedBaskets(12, 50, 2), Options{Seed: 1})
	require.ErrorIs(t, err, context.Canceled)
	_, err = m.Evaluate(ctx, [][]int{{0, 12}}, Options{Seed: 1})
	require.ErrorContains(t, err, "out of range")
	_, err = m.LogProb([]int{1, 1})
	require.Error(t, err)
	_, err = m.LogProb([]int{12})
	require.Error(t, err)

	met, err := LatentClassBaseline(ctx, train, plantedBaskets(12, 200, 3), 12, Options{Seed: 1})
	require.NoError(t, err)
	require.True(t, met.MPR > 50 && met.TestLL < 0, "MPR %v, LL %v", met.MPR, met.TestLL)
}

// TestLatentClassAnalysis compares the NDPPs with latent class models of
// K = 10, 30 and 100 components on the split of `ndpp-bench learn`
// (eval/MIXTURES.md). It runs only when NDPP_MIX_DATA names a basket file
// (NDPP_MIX_SEED: the split's seed).
func TestLatentClassAnalysis(t *testing.T) {
	a := loadAnalysisSplit(t, "NDPP_MIX_DATA", "NDPP_MIX_SEED")
	train, test, n, keys, seed := a.train, a.test, a.n, a.keys, a.seed
	ctx := context.Background()
	for _, k := range []int{10, 30, 100} {
		m, err := FitLatentClass(ctx, train, n, LatentClassOptions{K: k, Seed: seed})
		require.NoError(t, err)
		met, err := m.Evaluate(ctx, test, Options{Seed: seed, Key: keys})
		require.NoError(t, err)
		t.Logf("K = %d: paper MPR %.2f, micro %.2f, Prec@5 %.1f; test LL %.3f", k, met.MPR, met.MPRMicro, met.Prec5, met.TestLL)
	}
}
