package eval

import (
	"context"
	"errors"
	"fmt"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// Independent returns the independent-items model of training baskets over
// n items: item i is in a basket with probability pᵢ = (cᵢ + 1)/(m + 2),
// independently of the others, where cᵢ counts the m training baskets that
// hold it (add-one smoothing, so an item never seen in training keeps a
// small probability). It is an ndpp.Model with V = B = 0 (d = 1) and the
// diagonal δᵢ = pᵢ/(1 − pᵢ), so that
//
//	P(S) = det L_S / det(I + L) = Πᵢ∈S pᵢ · Πᵢ∉S (1 − pᵢ),
//
// and its conditional gains are δⱼ: Evaluate ranks items by training count.
// Evaluated like any model, it gives the two baselines an NDPP must beat:
// popularity (MPR, Prec@k, AUC) and the independent-items log-likelihood.
func Independent(train [][]int, n int) (*ndpp.Model, error) {
	if n <= 0 {
		return nil, fmt.Errorf("eval: n = %d items; need n ≥ 1", n)
	}
	if err := baskets.Check(train, n); err != nil {
		return nil, fmt.Errorf("eval: training %w", err)
	}
	counts := make([]float64, n)
	for _, s := range train {
		for _, i := range s {
			counts[i]++
		}
	}
	return independentModel(counts, float64(len(train)))
}

// IndependentOfCounts returns the independent-items model of m baskets in
// which item i occurs counts[i] times (Independent of baskets with those
// counts; an online learner keeps them as it streams). Each count must be
// in [0, m].
func IndependentOfCounts(counts []float64, m int64) (*ndpp.Model, error) {
	if len(counts) == 0 {
		return nil, errors.New("eval: independent-items model of no items")
	}
	if m < 0 {
		return nil, fmt.Errorf("eval: independent-items model of %d baskets", m)
	}
	for i, c := range counts {
		if !(c >= 0 && c <= float64(m)) {
			return nil, fmt.Errorf("eval: item %d counted %v times in %d baskets", i, c, m)
		}
	}
	return independentModel(counts, float64(m))
}

// independentModel is the independent-items model of item counts in m
// baskets.
func independentModel(counts []float64, m float64) (*ndpp.Model, error) {
	n := len(counts)
	delta := make([]float64, n)
	for i, c := range counts {
		delta[i] = (c + 1) / (m - c + 1) // pᵢ/(1 − pᵢ) with pᵢ = (c+1)/(m+2)
	}
	return ndpp.NewFromRows(n, 1, make([]float64, n), nil, []float64{0}, ndpp.WithDiag(delta))
}

// IndependentBaseline evaluates the independent-items model of train
// (Independent) on test with Evaluate: its MPR, Prec@k and AUC are the
// popularity baseline's, its TestLL and TestLLEps the independent-items
// log-likelihoods. ctx is as for Evaluate.
func IndependentBaseline(ctx context.Context, train, test [][]int, n int, opt Options) (*Metrics, error) {
	m, err := Independent(train, n)
	if err != nil {
		return nil, err
	}
	return Evaluate(ctx, m, test, opt)
}
