package learn

import (
	"bytes"
	"context"
	"errors"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"

	"github.com/ndpp-go/ndpp/eval"
	"github.com/ndpp-go/ndpp/internal/ndpptest"
)

// TestOnlineRunCancel cancels Run mid-pass (from its Progress callback, so
// at a known basket): Run returns an error wrapping context.Canceled with
// no goroutine of its own (the normaliser's) left running,
// and the learner — saved and resumed, or run on as it is — ends with the
// parameters of an uninterrupted pass, bit for bit.
func TestOnlineRunCancel(t *testing.T) {
	baskets := plantedBaskets(50, 3500, 6)
	opt := OnlineOptions{D: 4, Seed: 2, Schedule: Schedule{FactorEvery: 10, Lag: 7}}
	whole, err := TrainOnline(context.Background(), sliceSource(baskets), opt, OnlineRun{})
	require.NoError(t, err)

	before := runtime.NumGoroutine()
	o, err := NewOnline(opt)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = o.Run(ctx, sliceSource(baskets), OnlineRun{Progress: func(n int) {
		if n == 2*ProgressEvery {
			cancel()
		}
	}})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, int64(2*ProgressEvery), o.Position(), "stopped at the basket it was cancelled after")
	require.False(t, o.np.Running())
	requireGoroutinesBack(t, before)

	var buf bytes.Buffer
	require.NoError(t, o.Save(&buf))
	resumed, err := LoadOnline(&buf)
	require.NoError(t, err)
	for _, l := range []*Online{resumed, o} {
		src := sliceSource(baskets)
		require.NoError(t, SkipBaskets(src, l.Position()))
		res, err := l.Run(context.Background(), src, OnlineRun{})
		require.NoError(t, err)
		require.True(t, sameBits(whole.Params.V, res.Params.V))
		require.True(t, sameBits(whole.Params.B, res.Params.B))
		require.True(t, sameBits(whole.Params.D, res.Params.D))
		require.True(t, sameBits(whole.Params.Theta, res.Params.Theta))
	}

	// A context done before the call: no basket is taken.
	o, err = NewOnline(opt)
	require.NoError(t, err)
	_, err = o.Run(ctx, sliceSource(baskets), OnlineRun{})
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, o.Position())
	requireGoroutinesBack(t, before)
}

// requireGoroutinesBack waits briefly for the number of goroutines to
// fall back to n (goroutines that have finished their work may take a
// moment to exit).
func requireGoroutinesBack(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), n, "goroutines left running")
}

// TestOfflineCancel checks that TrainOffline (minibatch and full batch),
// BasketGradient and FullBatch.Step stop with an error wrapping
// context.Canceled, and that a cancelled Step takes no step.
func TestOfflineCancel(t *testing.T) {
	train := plantedBaskets(30, 300, 3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, full := range []bool{false, true} {
		_, err := TrainOffline(ctx, train, nil, 30, OfflineOptions{D: 3, Seed: 1, FullBatch: full, MaxEpochs: 2})
		require.ErrorIs(t, err, context.Canceled, "full batch %v", full)
	}
	// Cancelled during training, from the progress callback.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	_, err := TrainOffline(ctx2, train, nil, 30, OfflineOptions{D: 3, Seed: 1, Batch: 50, MaxEpochs: 5,
		Progress: func(it, _ int) {
			if it == 3 {
				cancel2()
			}
		}})
	require.ErrorIs(t, err, context.Canceled)

	counts := make([]float64, 30)
	for _, s := range train {
		for _, i := range s {
			counts[i]++
		}
	}
	fb, err := NewFullBatch(counts, len(train), OfflineOptions{D: 3, Seed: 1})
	require.NoError(t, err)
	_, err = BasketGradient(ctx, fb.Params(), train, 0)
	require.ErrorIs(t, err, context.Canceled)
	sum, err := BasketGradient(context.Background(), fb.Params(), train, 0)
	require.NoError(t, err)
	v := append([]float64(nil), fb.Params().V...)
	err = fb.Step(ctx, sum)
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, errors.Is(err, context.Canceled))
	require.Equal(t, 0, fb.Steps())
	require.True(t, sameBits(v, fb.Params().V), "a cancelled step changes nothing")
}

// evalChunk is the number of baskets eval.LogDetsEps scores between two
// checks of the context.
const evalChunk = 32

// TestNextValidationCancel: the next-item term and the ranking of a
// validation check stop with an error wrapping context.Canceled between
// chunks of their baskets.
func TestNextValidationCancel(t *testing.T) {
	long := plantedBaskets(30, 4*evalChunk, 6)
	p, err := NewParams(30, 3, false, 1, InitOptions{})
	require.NoError(t, err)
	_, err = nextValuePerBasket(ndpptest.CancelAfter(1), p, long, 8, 1, nil, 1e-5, 1)
	require.ErrorIs(t, err, context.Canceled)
	_, err = valRanking(ndpptest.CancelAfter(1), p, long, 8, nil, 1e-5, 1)
	require.ErrorIs(t, err, context.Canceled)
}

// TestMeanLogLikelihoodIsEvals: the validation and trace figure is
// eval.LogLikelihoodEps's, bit for bit, and stops when ctx is done.
func TestMeanLogLikelihoodIsEvals(t *testing.T) {
	train, val := plantedBaskets(30, 200, 4), plantedBaskets(30, 40*evalChunk, 5)
	m, err := eval.Independent(train, 30)
	require.NoError(t, err)
	want, err := eval.LogLikelihoodEps(context.Background(), m, val, 0)
	require.NoError(t, err)
	for _, workers := range []int{1, 3} {
		got, err := meanLogLikelihood(context.Background(), m, val, eval.DefaultEps, workers)
		require.NoError(t, err)
		require.Equal(t, math.Float64bits(want), math.Float64bits(got))
		_, err = meanLogLikelihood(ndpptest.CancelAfter(3), m, val, eval.DefaultEps, workers)
		require.ErrorIs(t, err, context.Canceled, "workers %d", workers)
	}
	_, err = meanLogLikelihood(context.Background(), m, nil, eval.DefaultEps, 1)
	require.Error(t, err)
}

// TestFloorMargin: logLikelihoods' per-basket terms differ between two
// models as their per-basket log-likelihoods do (eval.LogLikelihoodEps of
// each basket alone), and pairedStdErr is the standard error of the mean
// of those differences, computed directly.
func TestFloorMargin(t *testing.T) {
	val := plantedBaskets(30, 50, 6)
	a, err := eval.Independent(plantedBaskets(30, 200, 4), 30)
	require.NoError(t, err)
	b, err := eval.Independent(plantedBaskets(30, 20, 7), 30)
	require.NoError(t, err)
	llA, ldA, err := logLikelihoods(context.Background(), a, val, eval.DefaultEps, 2)
	require.NoError(t, err)
	_, ldB, err := logLikelihoods(context.Background(), b, val, eval.DefaultEps, 2)
	require.NoError(t, err)
	want, err := eval.LogLikelihoodEps(context.Background(), a, val, 0)
	require.NoError(t, err)
	require.Equal(t, math.Float64bits(want), math.Float64bits(llA))
	diffs := make([]float64, len(val))
	for i, s := range val {
		x, err := eval.LogLikelihoodEps(context.Background(), a, [][]int{s}, 0)
		require.NoError(t, err)
		y, err := eval.LogLikelihoodEps(context.Background(), b, [][]int{s}, 0)
		require.NoError(t, err)
		diffs[i] = x - y
		require.InDelta(t, diffs[i], ldA[i]-ldB[i]-a.LogNormalizer()+b.LogNormalizer(), 1e-9)
	}
	se := stat.StdDev(diffs, nil) / math.Sqrt(float64(len(diffs)))
	require.Greater(t, se, 0.0)
	require.InDelta(t, se, pairedStdErr(ldA, ldB), 1e-9*se)
	require.True(t, math.IsNaN(pairedStdErr(ldA[:1], ldB[:1])), "one pair")
}

// TestOfflineCancelInValidation cancels TrainOffline from its progress
// callback after its last iteration, so that only the validation (or
// trace) scoring that follows can see it: the run ends with an error
// wrapping context.Canceled instead of a result.
func TestOfflineCancelInValidation(t *testing.T) {
	train, val := plantedBaskets(30, 300, 3), plantedBaskets(30, 200, 6)
	for _, trace := range []bool{false, true} {
		opt := OfflineOptions{D: 3, Seed: 1, Batch: 100, MaxEpochs: 1}
		v := val
		if trace {
			opt.TraceSet, v = val, nil
		}
		_, err := TrainOffline(context.Background(), train, v, 30, opt)
		require.NoError(t, err, "trace %v", trace)
		ctx, cancel := context.WithCancel(context.Background())
		opt.Progress = func(it, maxIter int) {
			if it == maxIter {
				cancel()
			}
		}
		_, err = TrainOffline(ctx, train, v, 30, opt)
		cancel()
		require.ErrorIs(t, err, context.Canceled, "trace %v", trace)
	}
}

// TestOnlineRunCancelInTrace cancels Run within its first trace point
// (Run itself only selects on Done between baskets, so the context's first
// Err call is the trace's): the trace stops with an error wrapping
// context.Canceled, the learner is between two baskets, and running on
// gives the parameters of an uninterrupted pass, bit for bit.
func TestOnlineRunCancelInTrace(t *testing.T) {
	baskets := plantedBaskets(40, 2500, 7)
	traceSet := plantedBaskets(40, 10*evalChunk, 8)
	opt := OnlineOptions{D: 3, Seed: 4}
	run := OnlineRun{TraceSet: traceSet, TraceEvery: ProgressEvery}
	whole, err := TrainOnline(context.Background(), sliceSource(baskets), opt, run)
	require.NoError(t, err)

	o, err := NewOnline(opt)
	require.NoError(t, err)
	_, err = o.Run(ndpptest.CancelAfter(0), sliceSource(baskets), run)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, int64(ProgressEvery), o.Position())

	src := sliceSource(baskets)
	require.NoError(t, SkipBaskets(src, o.Position()))
	res, err := o.Run(context.Background(), src, run)
	require.NoError(t, err)
	require.True(t, sameBits(whole.Params.V, res.Params.V))
	require.True(t, sameBits(whole.Params.B, res.Params.B))
	require.True(t, sameBits(whole.Params.D, res.Params.D))
}
