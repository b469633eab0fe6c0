package learn

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
}
