package learn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
)

// TestOnlineRunCancel cancels Run mid-pass (from its Progress callback, so
// at a known basket) with the source read ahead: Run returns an error
// wrapping context.Canceled with no goroutine of its own left running,
// and the learner — saved and resumed, or run on as it is — ends with the
// parameters of an uninterrupted pass, bit for bit.
func TestOnlineRunCancel(t *testing.T) {
	baskets := plantedBaskets(50, 3500, 6)
	opt := OnlineOptions{D: 4, Seed: 2, Schedule: Schedule{FactorEvery: 10, Lag: 7}}
	whole, err := TrainOnline(context.Background(), SliceSource(baskets), opt, OnlineRun{})
	require.NoError(t, err)

	before := runtime.NumGoroutine()
	o, err := NewOnline(opt)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = o.Run(ctx, SliceSource(baskets), OnlineRun{Progress: func(n int) {
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
		src := SliceSource(baskets)
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
	_, err = o.Run(ctx, SliceSource(baskets), OnlineRun{})
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

// TestEvaluateCancel checks that Evaluate and Baselines stop with an error
// wrapping context.Canceled.
func TestEvaluateCancel(t *testing.T) {
	train, test := plantedBaskets(30, 200, 4), plantedBaskets(30, 100, 5)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m, err := Independent(train, 30)
	require.NoError(t, err)
	_, err = Evaluate(ctx, m, test, EvalOptions{Seed: 1})
	require.ErrorIs(t, err, context.Canceled)
	_, err = Baselines(ctx, train, test, 30, EvalOptions{Seed: 1})
	require.ErrorIs(t, err, context.Canceled)
	// Cancelled within the test baskets' log-likelihoods (their second
	// chunk), before the ranking starts.
	long := plantedBaskets(30, 4*logDetsChunk, 6)
	_, err = Evaluate(ndpptest.CancelAfter(1), m, long, EvalOptions{Seed: 1, Workers: 1})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "scoring baskets stopped")
	// The next-item term of a validation score stops the same way.
	_, err = meanCondValue(ndpptest.CancelAfter(1), m, long, OfflineOptions{Seed: 1, CondWeight: 1, Workers: 1}.withDefaults())
	require.ErrorIs(t, err, context.Canceled)
}

// TestMeanLogLikelihoodCancel checks that the scoring of validation and
// trace baskets stops between chunks of baskets: cancelled at its fourth
// check of the context, it returns an error wrapping context.Canceled;
// uncancelled, its value is LogDetsEps's, bit for bit, and a bad basket's
// error names its index among all the baskets.
func TestMeanLogLikelihoodCancel(t *testing.T) {
	train, val := plantedBaskets(30, 200, 4), plantedBaskets(30, 40*logDetsChunk, 5)
	m, err := Independent(train, 30)
	require.NoError(t, err)
	for _, workers := range []int{1, 3} {
		_, err := meanLogLikelihood(ndpptest.CancelAfter(3), m, val, DefaultEps, workers)
		require.ErrorIs(t, err, context.Canceled, "workers %d", workers)

		got, err := meanLogLikelihood(context.Background(), m, val, DefaultEps, workers)
		require.NoError(t, err)
		lds, err := m.LogDetsEps(val, workers, DefaultEps)
		require.NoError(t, err)
		require.Equal(t, math.Float64bits(mean(lds)-m.LogNormalizer()), math.Float64bits(got))
	}
	bad := slices.Clone(val)
	bad[3*logDetsChunk+5] = []int{1, 30}
	_, err = meanLogLikelihood(context.Background(), m, bad, DefaultEps, 2)
	require.ErrorContains(t, err, fmt.Sprintf("basket %d: ", 3*logDetsChunk+5))
	_, err = meanLogLikelihood(context.Background(), m, val, math.NaN(), 2)
	require.Error(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = LogLikelihoodEps(ctx, m, val, 0)
	require.ErrorIs(t, err, context.Canceled)
	err = CheckDiverged(ctx, m, m, val)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, errors.As(err, new(*DivergedError)), "a cancelled check is no verdict")
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
	traceSet := plantedBaskets(40, 10*logDetsChunk, 8)
	opt := OnlineOptions{D: 3, Seed: 4}
	run := OnlineRun{TraceSet: traceSet, TraceEvery: ProgressEvery}
	whole, err := TrainOnline(context.Background(), SliceSource(baskets), opt, run)
	require.NoError(t, err)

	o, err := NewOnline(opt)
	require.NoError(t, err)
	_, err = o.Run(ndpptest.CancelAfter(0), SliceSource(baskets), run)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, int64(ProgressEvery), o.Position())

	src := SliceSource(baskets)
	require.NoError(t, SkipBaskets(src, o.Position()))
	res, err := o.Run(context.Background(), src, run)
	require.NoError(t, err)
	require.True(t, sameBits(whole.Params.V, res.Params.V))
	require.True(t, sameBits(whole.Params.B, res.Params.B))
	require.True(t, sameBits(whole.Params.D, res.Params.D))
}
