package learn

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/eval"
)

// TestBasketGradientMatchesFiniteDifferences: a GradSum's value and
// gradient are those of Σ log det(L_S + εI), with and without a diagonal,
// V ≠ B and B = V.
func TestBasketGradientMatchesFiniteDifferences(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		shared, diag := seed%2 == 0, seed > 4
		n, d := 9, 3
		p, err := newParams(n, d, shared, diag, seed, InitOptions{Scale: 0.5, CScale: 0.5, Share: -1})
		require.NoError(t, err)
		if diag {
			for i := range p.Theta {
				p.Theta[i] = -2 + 0.3*float64(i)
			}
		}
		baskets := plantedBaskets(n, 6, seed)
		sum, err := BasketGradient(context.Background(), p, baskets, 0)
		require.NoError(t, err)
		require.Equal(t, len(baskets), sum.Baskets)
		o := objSpec{eps: eval.DefaultEps}
		require.InDelta(t, directObjective(p, baskets, o), sum.Value, valueTol*math.Max(1, math.Abs(sum.Value)))
		fdCheck(t, "V", p, p.V, sum.Grad.V, baskets, o, fdRelTol)
		if !shared {
			fdCheck(t, "B", p, p.B, sum.Grad.B, baskets, o, fdRelTol)
		}
		fdCheck(t, "D", p, p.D, sum.Grad.D, baskets, o, fdRelTol)
		if diag {
			fdCheck(t, "Theta", p, p.Theta, sum.Grad.T, baskets, o, fdRelTol)
		}
		// Shards add up to the whole.
		a, err := BasketGradient(context.Background(), p, baskets[:2], 0)
		require.NoError(t, err)
		b, err := BasketGradient(context.Background(), p, baskets[2:], 0)
		require.NoError(t, err)
		require.NoError(t, a.Add(b))
		require.Equal(t, sum.Baskets, a.Baskets)
		require.InDelta(t, sum.Value, a.Value, 1e-12*math.Abs(sum.Value))
		for _, pr := range [][2][]float64{{sum.Grad.V, a.Grad.V}, {sum.Grad.B, a.Grad.B}, {sum.Grad.D, a.Grad.D}, {sum.Grad.T, a.Grad.T}} {
			require.LessOrEqual(t, maxRelDiff(pr[0], pr[1]), 1e-12)
		}
	}
}

// TestFullBatchStepIsTheFullGradient: the gradient FullBatch.Step applies
// is that of (1/m) Σ log det(L_S + εI) − log det(I + L) − R, by finite
// differences on the parameters the step was taken at.
func TestFullBatchStepIsTheFullGradient(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		const alpha, beta = 0.2, 0.4
		n, d := 8, 3
		train := plantedBaskets(n, 30, seed)
		counts := make([]float64, n)
		for _, s := range train {
			for _, i := range s {
				counts[i]++
			}
		}
		fb, err := NewFullBatch(counts, len(train), OfflineOptions{D: d, Seed: seed, Shared: seed%2 == 0, LowRank: seed == 3,
			Alpha: alpha, Beta: beta, Init: InitOptions{Share: 4}})
		require.NoError(t, err)
		p := fb.Params()
		before := p.Clone()
		sum, err := BasketGradient(context.Background(), p, train, 0)
		require.NoError(t, err)
		require.NoError(t, fb.Step(context.Background(), sum))
		g := fb.tr.g
		obj := func() float64 { return regularisedObjective(before, train, eval.DefaultEps, counts, alpha, beta, 1) }
		fdCheckParams(t, fmt.Sprintf("seed %d", seed), before, g, obj, fdRelTol)
		require.Equal(t, 1, fb.Steps())
	}
}

// TestTrainOfflineFullBatchIsFullBatchSteps: TrainOffline's full-batch
// mode is FullBatch.Step on BasketGradient sums: a driver that computes
// the sums itself (as a distributed one would) ends with the same
// parameters, bit for bit with one worker and to rounding with shards.
func TestTrainOfflineFullBatchIsFullBatchSteps(t *testing.T) {
	n := 12
	train := plantedBaskets(n, 120, 7)
	opt := OfflineOptions{D: 3, Seed: 2, FullBatch: true, MaxEpochs: 6, Workers: 1}
	res, err := TrainOffline(context.Background(), train, nil, n, opt)
	require.NoError(t, err)
	require.Equal(t, 6, res.Iterations)
	counts := make([]float64, n)
	for _, s := range train {
		for _, i := range s {
			counts[i]++
		}
	}
	for _, shards := range []int{1, 3} {
		fb, err := NewFullBatch(counts, len(train), opt)
		require.NoError(t, err)
		for range 6 {
			total := NewGradSum(fb.Params())
			for s := range shards {
				lo, hi := s*len(train)/shards, (s+1)*len(train)/shards
				part, err := BasketGradient(context.Background(), fb.Params(), train[lo:hi], 0)
				require.NoError(t, err)
				require.NoError(t, total.Add(part))
			}
			require.NoError(t, fb.Step(context.Background(), total))
		}
		got := fb.Params()
		if shards == 1 {
			require.True(t, sameBits(res.Params.V, got.V))
			require.True(t, sameBits(res.Params.Theta, got.Theta))
		} else {
			require.LessOrEqual(t, maxRelDiff(res.Params.V, got.V), 1e-9)
			require.LessOrEqual(t, maxRelDiff(res.Params.D, got.D), 1e-9)
		}
	}
}

func TestFullBatchRejectsBadInput(t *testing.T) {
	_, err := NewFullBatch(nil, 3, OfflineOptions{})
	require.Error(t, err)
	_, err = NewFullBatch([]float64{1, 2}, 0, OfflineOptions{})
	require.Error(t, err)
	_, err = NewFullBatch([]float64{1, 5}, 3, OfflineOptions{})
	require.ErrorContains(t, err, "count 5")
	_, err = NewFullBatch([]float64{1, 0.5}, 3, OfflineOptions{})
	require.ErrorContains(t, err, "whole number")
	fb, err := NewFullBatch([]float64{1, 2, 0}, 3, OfflineOptions{D: 2})
	require.NoError(t, err)
	other, err := NewParams(4, 2, false, 1, InitOptions{})
	require.NoError(t, err)
	require.ErrorContains(t, fb.Step(context.Background(), NewGradSum(other)), "shape")
	sum, err := BasketGradient(context.Background(), fb.Params(), [][]int{{0, 1}}, 0)
	require.NoError(t, err)
	require.ErrorContains(t, fb.Step(context.Background(), sum), "sum over 1 baskets; the batch has 3")
	_, err = BasketGradient(context.Background(), fb.Params(), [][]int{{0, 7}}, 0)
	require.ErrorContains(t, err, "out of range")
	require.ErrorContains(t, sum.Add(NewGradSum(other)), "shape")
}
