package eval

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
)

// plantedBaskets is ndpptest.PlantedBaskets.
var plantedBaskets = ndpptest.PlantedBaskets

// TestEvaluateCancel checks that Evaluate and IndependentBaseline stop with an error
// wrapping context.Canceled.
func TestEvaluateCancel(t *testing.T) {
	train, test := plantedBaskets(30, 200, 4), plantedBaskets(30, 100, 5)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m, err := Independent(train, 30)
	require.NoError(t, err)
	_, err = Evaluate(ctx, m, test, Options{Seed: 1})
	require.ErrorIs(t, err, context.Canceled)
	_, err = IndependentBaseline(ctx, train, test, 30, Options{Seed: 1})
	require.ErrorIs(t, err, context.Canceled)
	// Cancelled within the test baskets' log-likelihoods (their second
	// chunk), before the ranking starts.
	long := plantedBaskets(30, 4*logDetsChunk, 6)
	_, err = Evaluate(ndpptest.CancelAfter(1), m, long, Options{Seed: 1, Workers: 1})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "scoring baskets stopped")
}

// TestLogDetsEpsCancel checks that the scoring of baskets (test,
// validation and trace baskets) stops between chunks of baskets: cancelled
// at its fourth check of the context, it returns an error wrapping
// context.Canceled; uncancelled, its values are Model.LogDetsEps's, bit for
// bit, and a bad basket's error names its index among all the baskets.
func TestLogDetsEpsCancel(t *testing.T) {
	train, val := plantedBaskets(30, 200, 4), plantedBaskets(30, 40*logDetsChunk, 5)
	m, err := Independent(train, 30)
	require.NoError(t, err)
	for _, workers := range []int{1, 3} {
		_, err := LogDetsEps(ndpptest.CancelAfter(3), m, val, DefaultEps, workers)
		require.ErrorIs(t, err, context.Canceled, "workers %d", workers)

		got, err := LogDetsEps(context.Background(), m, val, DefaultEps, workers)
		require.NoError(t, err)
		want, err := m.LogDetsEps(val, workers, DefaultEps)
		require.NoError(t, err)
		require.Equal(t, len(want), len(got))
		for i := range want {
			require.Equal(t, math.Float64bits(want[i]), math.Float64bits(got[i]))
		}
	}
	ll, err := LogLikelihoodEps(context.Background(), m, val, 0)
	require.NoError(t, err)
	lds, err := m.LogDetsEps(val, 1, DefaultEps)
	require.NoError(t, err)
	require.Equal(t, math.Float64bits(mean(lds)-m.LogNormalizer()), math.Float64bits(ll))
	bad := slices.Clone(val)
	bad[3*logDetsChunk+5] = []int{1, 30}
	_, err = LogDetsEps(context.Background(), m, bad, DefaultEps, 2)
	require.ErrorContains(t, err, fmt.Sprintf("basket %d: ", 3*logDetsChunk+5))
	_, err = LogDetsEps(context.Background(), m, val, math.NaN(), 2)
	require.Error(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = LogLikelihoodEps(ctx, m, val, 0)
	require.ErrorIs(t, err, context.Canceled)
	err = CheckDiverged(ctx, m, m, val)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, errors.As(err, new(*DivergedError)), "a cancelled check is no verdict")
}
