package learn

import (
	"context"
	"errors"
	"math"

	"gonum.org/v1/gonum/stat"

	"github.com/ndpp-go/ndpp/eval"
	"github.com/ndpp-go/ndpp/ndpp"
)

// resolveEps applies the Eps convention of the learners' options (as of
// eval.Options): 0 means eval.DefaultEps, negative means 0.
func resolveEps(e float64) float64 {
	switch {
	case e == 0:
		return eval.DefaultEps
	case e < 0:
		return 0
	}
	return e
}

// meanLogLikelihood is the mean of log det(L_S + εI) − log det(I + L) over
// baskets, for a resolved ε ≥ 0 (the learners' options after defaults):
// the validation and trace figure, scored by eval.LogDetsEps (ctx is
// checked between its chunks), as eval.LogLikelihoodEps scores it.
func meanLogLikelihood(ctx context.Context, m *ndpp.Model, baskets [][]int, eps float64, workers int) (float64, error) {
	ll, _, err := logLikelihoods(ctx, m, baskets, eps, workers)
	return ll, err
}

// logLikelihoods is meanLogLikelihood with the baskets' terms
// log det(L_S + εI), whose differences between two models on the same
// baskets are those of their log-likelihoods.
func logLikelihoods(ctx context.Context, m *ndpp.Model, baskets [][]int, eps float64, workers int) (float64, []float64, error) {
	if len(baskets) == 0 {
		return 0, nil, errors.New("learn: no baskets to score")
	}
	lds, err := eval.LogDetsEps(ctx, m, baskets, eps, workers)
	if err != nil {
		return 0, nil, err
	}
	s := 0.0
	for _, v := range lds {
		s += v
	}
	return s/float64(len(lds)) - m.LogNormalizer(), lds, nil
}

// pairedStdErr is the standard error of the mean of a[i] − b[i] (NaN for
// fewer than two pairs).
func pairedStdErr(a, b []float64) float64 {
	if len(a) < 2 {
		return math.NaN()
	}
	d := make([]float64, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	return stat.StdDev(d, nil) / math.Sqrt(float64(len(d)))
}
