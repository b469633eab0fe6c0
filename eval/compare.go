package eval

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ndpp-go/ndpp/ndpp"
)

// Training is the training data the baselines of Compare are fitted on:
// the training baskets when they are held in memory, or what was counted
// as a training stream went by when they are not.
type Training struct {
	// Baskets are the training baskets, rows of the models' items. With
	// them Compare fits every baseline that Independent and Cooccurrence do
	// not give.
	Baskets [][]int
	// Independent, when not nil, is the independent-items model of the
	// training data (an online learner's, learn.Online.Independent), used
	// instead of Independent(Baskets).
	Independent *ndpp.Model
	// Cooccurrence, when not nil, holds the training data's co-occurrence
	// counts (Cooccurrence.Counting on the training stream), used instead
	// of counting Baskets.
	Cooccurrence *Cooccurrence
}

// CompareOptions configures Compare: the evaluation's Options (Seed, Key,
// Workers, Eps; MaxMemory bounds the baselines' counts and tables), and
// which baselines to leave out.
type CompareOptions struct {
	Options
	// NoCooccurrence leaves out the co-occurrence baseline, NoLatentClass
	// the latent class baseline.
	NoCooccurrence, NoLatentClass bool
}

// Comparison is the figures of models beside the baselines', all on the
// same test baskets by the same protocol (Evaluate). A baseline that was
// not evaluated is nil.
type Comparison struct {
	// Models holds each model's figures, in the order given, and
	// ModelSeconds the wall time each one's evaluation took.
	Models       []*Metrics
	ModelSeconds []float64
	// Independent is the independent-items model's (IndependentBaseline):
	// its log-likelihoods are the independent items', its ranking
	// popularity's.
	Independent *Metrics
	// Cooccurrence is the co-occurrence baseline's (CooccurrenceBaseline):
	// ranking figures only.
	Cooccurrence *Metrics
	// CooccurrenceEvictions is Cooccurrence.Evictions of its counts: 0 when
	// they are exact, else the budget of pairs was reached and the rarest
	// pairs were dropped.
	CooccurrenceEvictions int64
	// LatentClass is the latent class baseline's (LatentClassBaseline).
	LatentClass *Metrics
}

// Compare evaluates models (at least one, all over the same n items) on
// test and, beside them, the baselines that train allows: the
// independent-items model (train.Independent, or Independent of
// train.Baskets), the co-occurrence baseline (train.Cooccurrence, or
// CountCooccurrence of train.Baskets with DefaultCooccurPairs) and the
// latent class baseline (of train.Baskets; a stream that was not kept has
// none), unless opt leaves them out. Every figure is Evaluate's protocol
// with opt.Options. It is the one call of the commands that put a model
// beside the baselines (ndpp-bench learn, demo and eval).
//
// ctx is checked as the evaluations check it: once it is done, Compare
// returns an error wrapping ctx.Err(). A baseline's counts or tables over
// opt.MaxMemory are refused with the budget's error.
func Compare(ctx context.Context, models []*ndpp.Model, test [][]int, train Training, opt CompareOptions) (*Comparison, error) {
	if len(models) == 0 {
		return nil, errors.New("eval: Compare of no models")
	}
	n := 0
	for i, m := range models {
		if m == nil {
			return nil, fmt.Errorf("eval: Compare: model %d is nil", i)
		}
		if i == 0 {
			n = m.N()
		} else if m.N() != n {
			return nil, fmt.Errorf("eval: Compare: model %d has %d items, model 0 %d", i, m.N(), n)
		}
	}
	c := &Comparison{}
	for _, m := range models {
		start := time.Now()
		met, err := Evaluate(ctx, m, test, opt.Options)
		if err != nil {
			return nil, err
		}
		c.Models = append(c.Models, met)
		c.ModelSeconds = append(c.ModelSeconds, time.Since(start).Seconds())
	}
	var err error
	switch {
	case train.Independent != nil:
		if train.Independent.N() != n {
			return nil, fmt.Errorf("eval: Compare: the independent-items model has %d items, the models %d", train.Independent.N(), n)
		}
		c.Independent, err = Evaluate(ctx, train.Independent, test, opt.Options)
	case train.Baskets != nil:
		c.Independent, err = IndependentBaseline(ctx, train.Baskets, test, n, opt.Options)
	}
	if err != nil {
		return nil, err
	}
	if !opt.NoCooccurrence {
		counts := train.Cooccurrence
		if counts == nil && train.Baskets != nil {
			if counts, err = CountCooccurrence(train.Baskets, n, DefaultCooccurPairs, opt.MaxMemory); err != nil {
				return nil, err
			}
		}
		if counts != nil {
			if c.Cooccurrence, err = counts.Evaluate(ctx, test, n, DefaultCooccurNorm, opt.Options); err != nil {
				return nil, err
			}
			c.CooccurrenceEvictions = counts.Evictions()
		}
	}
	if !opt.NoLatentClass && train.Baskets != nil {
		if c.LatentClass, err = LatentClassBaseline(ctx, train.Baskets, test, n, opt.Options); err != nil {
			return nil, err
		}
	}
	return c, nil
}
