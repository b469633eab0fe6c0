package eval

import (
	"context"
	"testing"
)

// Exported for the external tests of package eval_test: the NDPP-mixture
// analysis learns NDPPs with package learn, which imports eval, so it
// cannot be a test of package eval itself.

// TestScorer is a candidate scorer for RankMetrics: Score writes every
// item's score given each conditioning set of ys into dst and a second key
// that orders equal scores into tie (as the package's scorers do).
type TestScorer struct {
	N     int
	Score func(ys [][]int, dst, tie [][]float64, errs []error) error
}

func (s TestScorer) items() int   { return s.N }
func (s TestScorer) hasTie() bool { return true }
func (s TestScorer) scoreBatch(ys [][]int, dst, tie [][]float64, errs []error) error {
	return s.Score(ys, dst, tie, errs)
}

// RankMetrics returns the next-item ranking figures of sc on baskets
// prepared by ProtocolBaskets.
func RankMetrics(ctx context.Context, sc TestScorer, baskets [][]int) (*Metrics, error) {
	met := &Metrics{}
	if err := rankMetrics(ctx, met, sc, baskets, 0); err != nil {
		return nil, err
	}
	return met, nil
}

// ProtocolBaskets is protocolBaskets.
var ProtocolBaskets = protocolBaskets

// PopularityTie is popularityTie.
var PopularityTie = popularityTie

// Posterior writes P(k | s) into w.
func (m *LatentClass) Posterior(s []int, w []float64) { m.posterior(s, w, nil, 0) }

// Counts returns the training counts that break the model's ties.
func (m *LatentClass) Counts() []float64 { return m.counts }

// AnalysisSplit is loadAnalysisSplit's split.
func AnalysisSplit(t *testing.T, dataVar, seedVar string) (train, val, test [][]int, n int, keys []int64, seed uint64) {
	a := loadAnalysisSplit(t, dataVar, seedVar)
	return a.train, a.val, a.test, a.n, a.keys, a.seed
}
