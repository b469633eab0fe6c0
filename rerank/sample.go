package rerank

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/sample"
)

// sampleStream is the second word of the PCG state of Request.Sample
// (the first is Request.Seed).
const sampleStream = 0x72657261_6e6b0001

// sample answers a validated request with Sample (see Request.Sample):
// the working rows and the conditioning on the shown items as for the
// greedy, a model of the kept shown rows and the choosable candidates
// (candidateModel), a k-NDPP sample of the candidates given the shown
// rows, ordered greedily given them (orderSolution).
func (w *Workspace) sample(ctx context.Context, m *ndpp.Model, req *Request) (Result, error) {
	degrade := func(err error) (Result, error) {
		if !mayDegrade(ctx, req) {
			return Result{}, fmt.Errorf("rerank: sample: %w", err)
		}
		w.relevanceOrder(req)
		return Result{Items: w.outItems, Gains: w.outGains[:0], Short: w.short, Degraded: DegradedSample}, nil
	}
	if err := w.setup(ctx, m, req); err != nil {
		return degrade(err)
	}
	if w.nc < req.K {
		return Result{}, reqErr("k", -1, "%d with sample, but %d candidates can be chosen (not shown, quality above 0)", req.K, w.nc)
	}
	pm, fixedRows, err := w.candidateModel(m, req)
	if err != nil {
		return Result{}, fmt.Errorf("rerank: sample: %w", err)
	}
	nf := len(fixedRows)
	given := make([]int, nf)
	for i := range given {
		given[i] = i
	}
	ks, err := sample.NewK(ctx, pm, nf+req.K, sample.KOptions{Given: given})
	switch {
	case err == nil:
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return degrade(err)
	case errors.Is(err, sample.ErrSizeZeroProb):
		return Result{}, reqErr("k", -1, "%d with sample: no set of %d candidates has a positive probability given the %d shown items kept (the kernel's rank given them is below k)", req.K, req.K, nf)
	case errors.Is(err, sample.ErrZeroProb):
		return Result{}, reqErr("shown", -1, "the shown items kept have det L_F = 0 under the sampler's zero rule; sample cannot condition on them")
	default:
		return Result{}, fmt.Errorf("rerank: sample: %w", err)
	}
	y, err := ks.Sample(ctx, rand.New(rand.NewPCG(req.Seed, sampleStream)))
	if err != nil {
		return degrade(err)
	}
	sol := make([]int, 0, req.K)
	for _, r := range y {
		if r >= nf {
			sol = append(sol, r)
		}
	}
	if err := w.orderSolution(m, pm, nil, sol, fixedRows, false); err != nil {
		return Result{}, err
	}
	lv := 0.0
	for _, g := range w.outGains {
		lv += math.Log(g)
	}
	return Result{Items: w.outItems, Gains: w.outGains, LogValue: lv, ShownSkipped: w.shownSkipped, SampleTries: int(ks.Stats().Tries)}, nil
}
