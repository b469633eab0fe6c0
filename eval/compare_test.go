package eval

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// TestCompareIsTheBaselines: Compare's figures are those of Evaluate and
// of each baseline's own call, whether the training data is in memory or
// was counted as a stream went by; options leave baselines out.
func TestCompareIsTheBaselines(t *testing.T) {
	ctx := context.Background()
	const n = 30
	train, test := plantedBaskets(n, 400, 4), plantedBaskets(n, 120, 5)
	m1 := ndpp.Random(n, 3, 1, ndpp.RandomOptions{})
	m2 := ndpp.Random(n, 4, 2, ndpp.RandomOptions{Diag: 0.2})
	opt := Options{Seed: 3}
	cmp, err := Compare(ctx, []*ndpp.Model{m1, m2}, test, Training{Baskets: train}, CompareOptions{Options: opt})
	require.NoError(t, err)
	for i, m := range []*ndpp.Model{m1, m2} {
		want, err := Evaluate(ctx, m, test, opt)
		require.NoError(t, err)
		sameMetrics(t, want, cmp.Models[i])
	}
	require.Len(t, cmp.ModelSeconds, 2)
	ind, err := IndependentBaseline(ctx, train, test, n, opt)
	require.NoError(t, err)
	sameMetrics(t, ind, cmp.Independent)
	co, err := CooccurrenceBaseline(ctx, train, test, n, opt)
	require.NoError(t, err)
	sameMetrics(t, co, cmp.Cooccurrence)
	require.Zero(t, cmp.CooccurrenceEvictions)
	lc, err := LatentClassBaseline(ctx, train, test, n, opt)
	require.NoError(t, err)
	sameMetrics(t, lc, cmp.LatentClass)

	// A stream that was not kept: its independent-items model and counts.
	counts, err := NewCooccurrence(DefaultCooccurPairs, 0)
	require.NoError(t, err)
	src := counts.Counting(baskets.SliceSource(train))
	for {
		if _, err := src.Next(); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
	}
	indep, err := Independent(train, n)
	require.NoError(t, err)
	streamed, err := Compare(ctx, []*ndpp.Model{m1}, test, Training{Independent: indep, Cooccurrence: counts}, CompareOptions{Options: opt})
	require.NoError(t, err)
	sameMetrics(t, cmp.Models[0], streamed.Models[0])
	sameMetrics(t, cmp.Independent, streamed.Independent)
	sameMetrics(t, cmp.Cooccurrence, streamed.Cooccurrence)
	require.Nil(t, streamed.LatentClass, "no latent class model without the baskets")

	some, err := Compare(ctx, []*ndpp.Model{m1}, test, Training{Baskets: train}, CompareOptions{Options: opt, NoCooccurrence: true, NoLatentClass: true})
	require.NoError(t, err)
	sameMetrics(t, cmp.Independent, some.Independent)
	require.Nil(t, some.Cooccurrence)
	require.Nil(t, some.LatentClass)

	none, err := Compare(ctx, []*ndpp.Model{m1}, test, Training{}, CompareOptions{Options: opt})
	require.NoError(t, err)
	sameMetrics(t, cmp.Models[0], none.Models[0])
	require.Nil(t, none.Independent)
	require.Nil(t, none.Cooccurrence)
	require.Nil(t, none.LatentClass)
}

// sameMetrics requires a and b to hold the same figures (NaN equal to NaN).
func sameMetrics(t *testing.T, a, b *Metrics) {
	t.Helper()
	require.NotNil(t, a)
	require.NotNil(t, b)
	x, y := *a, *b
	require.Equal(t, x.per, y.per) // the per-basket values, finite or −Inf
	x.per, y.per = nil, nil
	require.Equal(t, fmt.Sprintf("%#v", x), fmt.Sprintf("%#v", y))
}

func TestCompareErrors(t *testing.T) {
	ctx := context.Background()
	test := plantedBaskets(20, 30, 1)
	m := ndpp.Random(20, 2, 1, ndpp.RandomOptions{})
	_, err := Compare(ctx, nil, test, Training{}, CompareOptions{})
	require.ErrorContains(t, err, "no models")
	_, err = Compare(ctx, []*ndpp.Model{m, nil}, test, Training{}, CompareOptions{})
	require.ErrorContains(t, err, "model 1 is nil")
	_, err = Compare(ctx, []*ndpp.Model{m, ndpp.Random(21, 2, 1, ndpp.RandomOptions{})}, test, Training{}, CompareOptions{})
	require.ErrorContains(t, err, "model 1 has 21 items")
	other, err := Independent(plantedBaskets(24, 30, 2), 24)
	require.NoError(t, err)
	_, err = Compare(ctx, []*ndpp.Model{m}, test, Training{Independent: other}, CompareOptions{})
	require.ErrorContains(t, err, "independent-items model has 24 items")
	_, err = Compare(ctx, []*ndpp.Model{m}, test, Training{Baskets: [][]int{{0, 20}}}, CompareOptions{})
	require.ErrorContains(t, err, "out of range")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = Compare(cancelled, []*ndpp.Model{m}, test, Training{}, CompareOptions{})
	require.ErrorIs(t, err, context.Canceled)
}
