package learn

import (
	"context"
	"errors"

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
	if len(baskets) == 0 {
		return 0, errors.New("learn: no baskets to score")
	}
	lds, err := eval.LogDetsEps(ctx, m, baskets, eps, workers)
	if err != nil {
		return 0, err
	}
	s := 0.0
	for _, v := range lds {
		s += v
	}
	return s/float64(len(lds)) - m.LogNormalizer(), nil
}
