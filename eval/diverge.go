package eval

import (
	"context"
	"errors"
	"fmt"

	"github.com/ndpp-go/ndpp/ndpp"
)

// DivergedMargin is how far, in nats per basket beyond twice the
// independent-items log-likelihood, a learned model may fall before
// CheckDiverged takes its training for diverged.
const DivergedMargin = 20

// DivergedError is CheckDiverged's verdict that training diverged. Err says
// why: the kernel overflows (it wraps ndpp.ErrOverflow), the log-likelihood
// cannot be computed, or it is far below the independent-items model's.
type DivergedError struct {
	Err error
}

func (e *DivergedError) Error() string { return "eval: training diverged: " + e.Err.Error() }

func (e *DivergedError) Unwrap() error { return e.Err }

// CheckDiverged returns a *DivergedError when a learned model's training
// diverged: its kernel overflows float64 (ndpp.Model.CheckScale), or its
// mean log-likelihood (ε = 0) on the held-out baskets within its rank
// (ndpp.Model.MaxRank) is not at least 2·ℓ₀ − DivergedMargin, ℓ₀ < 0 being
// the mean log-likelihood of indep, the independent-items model (Independent),
// on the same baskets. Parameters blown up by a learning rate or an initial
// scale far too large give log-likelihoods tens of times ℓ₀, while a model
// that learned anything is near or above ℓ₀. Baskets beyond the rank are
// left out: their probability is ε's. With no held-out basket within the
// rank (or indep nil and held empty) only the kernel's scale is checked.
// Other errors (e.g. a basket that indep cannot score) are returned as they
// are, as is the error wrapping ctx.Err() once ctx is done (checked between
// chunks of the baskets scored, as LogLikelihoodEps does).
func CheckDiverged(ctx context.Context, model, indep *ndpp.Model, held [][]int) error {
	if model == nil {
		return errors.New("eval: CheckDiverged of a nil model")
	}
	if err := model.CheckScale(); err != nil {
		return &DivergedError{err}
	}
	var in [][]int
	for _, b := range held {
		if len(b) <= model.MaxRank() {
			in = append(in, b)
		}
	}
	if len(in) == 0 {
		return nil
	}
	if indep == nil {
		return errors.New("eval: CheckDiverged with held-out baskets needs the independent-items model")
	}
	ll, err := LogLikelihoodEps(ctx, model, in, 0)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return &DivergedError{err}
	}
	l0, err := LogLikelihoodEps(ctx, indep, in, 0)
	if err != nil {
		return err
	}
	if !(ll >= 2*l0-DivergedMargin) {
		return &DivergedError{fmt.Errorf("the learned model's mean log-likelihood (ε = %g, LogLikelihoodEps) on %d held-out baskets is %.4g, the independent-items model's %.4g", DefaultEps, len(in), ll, l0)}
	}
	return nil
}
