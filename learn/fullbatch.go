package learn

import (
	"context"
	"errors"
	"fmt"
	"github.com/ndpp-go/ndpp/learn/internal/vecmat"
	"math"
	"sync"
)

// GradSum is a sum over baskets of the basket term of the offline
// objective, log det(L_S + εI), and of its gradient with respect to the
// parameters (V, B, the generator D of C, θ; Params' coordinates). Sums over
// disjoint sets of baskets add (Add), so a shard of the training baskets
// can be summed on one machine and the sums combined on another: the
// full-batch objective's gradient is
//
//	(1/m)·Σ_S ∂ log det(L_S + εI) − ∂ log det(I + L) − ∂R,
//
// the first term a GradSum over all m training baskets, the others
// computed once per step by FullBatch.Step.
type GradSum struct {
	N, Dim  int     // the parameters' shape
	Baskets int     // baskets summed
	Value   float64 // Σ log det(L_S + εI)
	Grad    Grad    // Σ ∂ log det(L_S + εI)
}

// NewGradSum returns a zero sum shaped like p.
func NewGradSum(p *Params) *GradSum {
	return &GradSum{N: p.N, Dim: p.Dim, Grad: *NewGrad(p)}
}

// Add adds o into s. Both must have the same shape.
func (s *GradSum) Add(o *GradSum) error {
	if s.N != o.N || s.Dim != o.Dim || len(s.Grad.V) != len(o.Grad.V) || len(s.Grad.B) != len(o.Grad.B) ||
		len(s.Grad.D) != len(o.Grad.D) || len(s.Grad.T) != len(o.Grad.T) {
		return fmt.Errorf("learn: adding a gradient sum of shape n = %d, d = %d to one of n = %d, d = %d (or B, θ differ)", o.N, o.Dim, s.N, s.Dim)
	}
	for _, pr := range [][2][]float64{{s.Grad.V, o.Grad.V}, {s.Grad.B, o.Grad.B}, {s.Grad.D, o.Grad.D}, {s.Grad.T, o.Grad.T}} {
		for i, x := range pr[1] {
			pr[0][i] += x
		}
	}
	s.Baskets += o.Baskets
	s.Value += o.Value
	return nil
}

// BasketGradient returns the GradSum of baskets at p, with ε as in
// OfflineOptions.Eps (0: eval.DefaultEps; negative: none). Baskets are
// validated against p's items. ctx is checked every gradientCheckEvery
// baskets: once it is done, BasketGradient returns an error wrapping
// ctx.Err().
func BasketGradient(ctx context.Context, p *Params, baskets [][]int, eps float64) (*GradSum, error) {
	if err := checkBaskets("training", baskets, p.N); err != nil {
		return nil, err
	}
	return basketGradient(ctx, p, baskets, resolveEps(eps))
}

// gradientCheckEvery is the number of baskets between two checks of the
// context in basketGradient (well under a millisecond of work).
const gradientCheckEvery = 64

// basketGradient is BasketGradient for validated baskets and a resolved
// ε ≥ 0.
func basketGradient(ctx context.Context, p *Params, baskets [][]int, eps float64) (*GradSum, error) {
	d := p.Dim
	acc := newAccum(p.N, d)
	var w basketWork
	c := p.CInto(nil)
	sum := NewGradSum(p)
	brows := p.brows()
	var bS, bcS []float64
	for bi, s := range baskets {
		if bi%gradientCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("learn: basket gradient stopped after %d of %d baskets: %w", bi, len(baskets), err)
			}
		}
		k := len(s)
		bS, bcS = resize(bS, k*d), resize(bcS, k*d)
		for r, i := range s {
			copy(bS[r*d:(r+1)*d], brows[i*d:(i+1)*d])
		}
		vecmat.N(bcS, d, bS, d, k, c, d, d, d, 1) // rows bᵢᵀC
		if _, ok := w.basketTerm(p, bcS, s, eps, false, true, acc, 1); !ok {
			return nil, fmt.Errorf("learn: a basket's L_S + εI has no positive determinant (parameters overflowed, or ε = 0 and the basket is singular)")
		}
	}
	acc.finish(p, c, &sum.Grad, true)
	sum.Value, sum.Baskets = acc.value, len(baskets)
	return sum, nil
}

// FullBatch is the offline learner's full-batch mode: every step takes
// the gradient over all m training baskets (a GradSum, computed wherever
// the baskets are), adds the normaliser's and the regulariser's terms and
// takes one Adam step. TrainOffline with OfflineOptions.FullBatch runs it
// over in-memory baskets; a distributed driver computes the GradSums of
// shards with BasketGradient at Params() and adds them.
type FullBatch struct {
	tr *offlineTrainer
}

// NewFullBatch starts a full-batch learner for training baskets over n
// items whose item counts are counts (len n) and whose number is m: the
// initialisation (with a diagonal, θ at the independent-items model of the
// counts) and the regulariser's weights depend on them. opt is as for
// TrainOffline (Batch, MaxEpochs, Patience, MaxStalls, Tolerance,
// EvalEvery, Workers, Progress, TimeLimit and TraceSet do not apply to
// single steps).
func NewFullBatch(counts []float64, m int, opt OfflineOptions) (*FullBatch, error) {
	n := len(counts)
	opt.FullBatch, opt.Batch = true, m
	opt = opt.withDefaultsFor(n)
	if n == 0 || m <= 0 {
		return nil, fmt.Errorf("learn: full batch of %d baskets over %d items; need both ≥ 1", m, n)
	}
	for i, c := range counts {
		if !(c >= 0) || c > float64(m) || c != math.Trunc(c) {
			return nil, fmt.Errorf("learn: item %d's count %v is not a whole number in [0, %d]", i, c, m)
		}
	}
	if err := opt.validate(); err != nil {
		return nil, err
	}
	p, err := newParams(n, opt.D, opt.Shared, !opt.LowRank, opt.Seed, opt.Init)
	if err != nil {
		return nil, err
	}
	tr := newTrainerCounts(p, append([]float64(nil), counts...), m, opt)
	if p.Theta != nil {
		tr.initTheta()
	}
	return &FullBatch{tr: tr}, nil
}

// Params returns the current parameters (shared, not copied: do not
// change them; BasketGradient reads them).
func (f *FullBatch) Params() *Params { return f.tr.p }

// Steps returns the number of steps taken.
func (f *FullBatch) Steps() int { return f.tr.t }

// Step takes one step with the GradSum of all m training baskets at
// Params(). It reports an error for a sum of another shape or another
// number of baskets, and when the parameters stop being finite. If ctx is
// done before the step is applied, Step returns an error wrapping
// ctx.Err() and takes no step.
func (f *FullBatch) Step(ctx context.Context, sum *GradSum) error {
	tr := f.tr
	p := tr.p
	ref := NewGradSum(p)
	if sum.N != p.N || sum.Dim != p.Dim || len(sum.Grad.V) != len(ref.Grad.V) || len(sum.Grad.B) != len(ref.Grad.B) ||
		len(sum.Grad.D) != len(ref.Grad.D) || len(sum.Grad.T) != len(ref.Grad.T) {
		return fmt.Errorf("learn: full-batch step with a gradient sum of shape n = %d, d = %d for parameters of n = %d, d = %d", sum.N, sum.Dim, p.N, p.Dim)
	}
	if sum.Baskets != tr.m {
		return fmt.Errorf("learn: full-batch step with a sum over %d baskets; the batch has %d", sum.Baskets, tr.m)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("learn: full-batch step: %w", err)
	}
	tr.c = p.CInto(tr.c)
	if !tr.factorNorm() {
		return errors.New("learn: full-batch step: the normaliser's matrix is singular (parameters overflowed)")
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("learn: full-batch step: %w", err)
	}
	g := tr.g
	scale := 1 / float64(tr.m)
	for _, pr := range [][2][]float64{{g.V, sum.Grad.V}, {g.B, sum.Grad.B}, {g.D, sum.Grad.D}, {g.T, sum.Grad.T}} {
		for i, x := range pr[1] {
			pr[0][i] = scale * x
		}
	}
	tr.restOfGradient(g)
	if !tr.applyStep() {
		return errors.New("learn: full-batch step produced non-finite parameters (lower the learning rate)")
	}
	return nil
}

// DecayLR multiplies the learning rate by the options' LRDecay (what
// TrainOffline does after a validation check without improvement).
func (f *FullBatch) DecayLR() { f.tr.lr *= f.tr.opt.LRDecay }

// fullBatchGradient is the GradSum of all of train at the trainer's
// parameters, over the workers' shares (each a BasketGradient, added in
// order, so the result does not depend on scheduling).
func (tr *offlineTrainer) fullBatchGradient(ctx context.Context, train [][]int) (*GradSum, error) {
	nw := len(tr.workers)
	chunk := (len(train) + nw - 1) / nw
	sums := make([]*GradSum, nw)
	errs := make([]error, nw)
	var wg sync.WaitGroup
	for wi := range nw {
		lo, hi := wi*chunk, min((wi+1)*chunk, len(train))
		if lo >= hi {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[wi], errs[wi] = basketGradient(ctx, tr.p, train[lo:hi], tr.opt.Eps)
		}()
	}
	wg.Wait()
	total := NewGradSum(tr.p)
	for wi, s := range sums {
		if errs[wi] != nil {
			return nil, errs[wi]
		}
		if s != nil {
			if err := total.Add(s); err != nil {
				return nil, err
			}
		}
	}
	return total, nil
}
