package learn

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/eval"
)

// TestOfflineGradientMatchesFiniteDifferences checks the full minibatch
// objective's gradient (basket terms, exact normaliser, regulariser with
// the training counts μᵢ) for V ≠ B and B = V.
func TestOfflineGradientMatchesFiniteDifferences(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		shared := seed%2 == 0
		diag := seed > 4
		const alpha, beta = 0.2, 0.5
		n, d := 8, 3
		train := plantedBaskets(n, 40, seed)
		batch := train[:5]
		power := float64(2+seed%3) / 2 // RegPower 1, 1.5 and 2
		opt := OfflineOptions{D: d, Shared: shared, Alpha: alpha, Beta: beta, RegPower: power, Workers: 2, LowRank: !diag, NextWeight: -1}.withDefaults()
		p, tr := stepGradient(t, train, batch, n, seed, opt)
		mu := make([]float64, n)
		for _, s := range train {
			for _, i := range s {
				mu[i]++
			}
		}
		obj := func() float64 { return regularisedObjective(p, batch, opt.Eps, mu, alpha, beta, power) }
		fdCheckParams(t, fmt.Sprintf("seed %d", seed), p, tr.g, obj, fdRelTol)
	}
}

// stepGradient computes an offline step's gradient on batch at random
// parameters (from seed; with a diagonal unless opt.LowRank, θ at the
// training counts) for the options opt, after defaults.
func stepGradient(t *testing.T, train, batch [][]int, n int, seed uint64, opt OfflineOptions) (*Params, *offlineTrainer) {
	t.Helper()
	p, err := newParams(n, opt.D, opt.Shared, !opt.LowRank, seed, InitOptions{Scale: 0.5, CScale: 0.5, Share: -1})
	require.NoError(t, err)
	tr := newOfflineTrainer(p, train, opt)
	if !opt.LowRank {
		tr.initTheta()
	}
	require.True(t, tr.gradient(batch))
	return p, tr
}

// fdCheckParams compares g with central differences of obj in every
// parameter block p has (V, B unless shared, D, θ with a diagonal), to
// the relative tolerance tol (fdCheckFn).
func fdCheckParams(t *testing.T, label string, p *Params, g *Grad, obj func() float64, tol float64) {
	t.Helper()
	check := func(name string, x, analytic []float64) {
		fdCheckFn(t, label+" "+name, x, analytic, obj, tol)
	}
	check("V", p.V, g.V)
	if p.B != nil {
		check("B", p.B, g.B)
	}
	check("D", p.D, g.D)
	if p.Theta != nil {
		check("Theta", p.Theta, g.T)
	}
}

func TestOfflineLearnsAndStops(t *testing.T) {
	const minGain = 0.5 // nats per basket over the initial model
	data := plantedBaskets(40, 3000, 4)
	train, val, test := data[:2400], data[2400:2700], data[2700:]
	for _, shared := range []bool{false, true} {
		opt := OfflineOptions{D: 6, Shared: shared, Seed: 1, LR: 0.01, Batch: 100, MaxEpochs: 30, Patience: 2, TraceSet: test}
		p0, err := NewParams(40, 6, shared, 1, InitOptions{})
		require.NoError(t, err)
		m0, err := p0.Model()
		require.NoError(t, err)
		ll0, err := m0.LogLikelihood(test)
		require.NoError(t, err)
		res, err := TrainOffline(context.Background(), train, val, 40, opt)
		require.NoError(t, err)
		ll1, err := res.Model.LogLikelihood(test)
		require.NoError(t, err)
		require.Greater(t, ll1, ll0+minGain, "shared=%v", shared)
		vl, err := meanLogLikelihood(context.Background(), res.Model, val, eval.DefaultEps, 0) // the objective's convention
		require.NoError(t, err)
		require.InDelta(t, vl, res.ValLLEps, 1e-12)
		require.Equal(t, shared, res.Model.Shared())
		require.Greater(t, res.Iterations, 0)
		require.InDelta(t, float64(res.Iterations*100)/2400, res.Passes, 1e-12)
		require.NotEmpty(t, res.Trace)
		for i := 1; i < len(res.Trace); i++ {
			require.GreaterOrEqual(t, res.Trace[i].Seconds, res.Trace[i-1].Seconds)
			require.Greater(t, res.Trace[i].Baskets, res.Trace[i-1].Baskets)
		}
		// The returned model is the best on validation: its trace NLL
		// appears in the trace.
		tl, err := meanLogLikelihood(context.Background(), res.Model, test, eval.DefaultEps, 0)
		require.NoError(t, err)
		found := false
		for _, tp := range res.Trace {
			found = found || math.Abs(tp.NLL+tl) < 1e-12
		}
		require.True(t, found)
	}
}

// TestOfflineMaxStalls: a run bounded to k checks without progress in
// all is the unbounded run up to its k-th such check, consecutive or not,
// and returns the best check of that prefix.
func TestOfflineMaxStalls(t *testing.T) {
	data := plantedBaskets(30, 1600, 9)
	train, val := data[:1300], data[1300:]
	opt := OfflineOptions{D: 5, Seed: 2, LR: 0.05, Batch: 100, MaxEpochs: 25, Patience: 100, Tolerance: -1,
		Workers: 1, TraceSet: val, MaxStalls: -1}
	ctx := context.Background()
	full, err := TrainOffline(ctx, train, val, 30, opt)
	require.NoError(t, err)
	// The checks without progress: no better than the best before them.
	var stalls []int
	best := math.Inf(1)
	for i, tp := range full.Trace {
		if tp.NLL < best {
			best = tp.NLL
		} else {
			stalls = append(stalls, i)
		}
	}
	require.GreaterOrEqual(t, len(stalls), 3, "the unbounded run stalls too seldom to test the bound")
	// Progress comes between them, so the bound counts checks that no
	// count in a row (Patience) would add up.
	require.Greater(t, stalls[1], stalls[0]+1, "checks without progress %v", stalls)
	require.Greater(t, stalls[2], stalls[1]+1, "checks without progress %v", stalls)
	require.Equal(t, len(full.Trace), 25, "the unbounded run ends at MaxEpochs")
	for k := 1; k <= 3; k++ {
		opt.MaxStalls = k
		res, err := TrainOffline(ctx, train, val, 30, opt)
		require.NoError(t, err)
		end := stalls[k-1] + 1
		require.Len(t, res.Trace, end, "k = %d", k)
		best := math.Inf(1)
		for i, tp := range res.Trace {
			require.Equal(t, full.Trace[i].NLL, tp.NLL, "k = %d, check %d", k, i)
			require.Equal(t, full.Trace[i].Baskets, tp.Baskets, "k = %d, check %d", k, i)
			best = math.Min(best, tp.NLL)
		}
		require.Equal(t, -best, res.ValLLEps, "k = %d: the best check of the prefix", k)
	}
}

func TestOfflineDeterministicAndFixC(t *testing.T) {
	data := plantedBaskets(20, 600, 8)
	opt := OfflineOptions{D: 4, Seed: 3, Batch: 50, MaxEpochs: 3, LR: 0.01, Workers: 1}
	a, err := TrainOffline(context.Background(), data, nil, 20, opt)
	require.NoError(t, err)
	b, err := TrainOffline(context.Background(), data, nil, 20, opt)
	require.NoError(t, err)
	require.Equal(t, a.Params.V, b.Params.V)
	require.True(t, math.IsNaN(a.ValLLEps))
	// Parallel workers sum in another order: equal up to rounding.
	opt.Workers = 3
	c, err := TrainOffline(context.Background(), data, nil, 20, opt)
	require.NoError(t, err)
	for i := range a.Params.V {
		require.InDelta(t, a.Params.V[i], c.Params.V[i], 1e-8)
	}
	// The same number of workers sums in the same order: bit for bit.
	c2, err := TrainOffline(context.Background(), data, nil, 20, opt)
	require.NoError(t, err)
	require.Equal(t, c.Params.V, c2.Params.V)
	require.Equal(t, c.Params.Theta, c2.Params.Theta)
	opt.FixC = true
	f, err := TrainOffline(context.Background(), data, nil, 20, opt)
	require.NoError(t, err)
	p0, err := NewParams(20, 4, false, 3, InitOptions{})
	require.NoError(t, err)
	require.Equal(t, p0.D, f.Params.D)
	require.NotEqual(t, p0.V, f.Params.V)
}

func TestOfflineRejectsBadInput(t *testing.T) {
	good := [][]int{{0, 1}, {2}}
	cases := []struct {
		name  string
		train [][]int
		n     int
		opt   OfflineOptions
	}{
		{"no items", good, 0, OfflineOptions{}},
		{"no baskets", nil, 3, OfflineOptions{}},
		{"empty basket", [][]int{{0}, {}}, 3, OfflineOptions{}},
		{"out of range", [][]int{{0, 3}}, 3, OfflineOptions{}},
		{"duplicate", [][]int{{1, 1}}, 3, OfflineOptions{}},
		{"negative lr", good, 3, OfflineOptions{LR: -1}},
		{"NaN alpha", good, 3, OfflineOptions{Alpha: math.NaN()}},
		{"infinite beta", good, 3, OfflineOptions{Beta: math.Inf(1)}},
		{"NaN average", good, 3, OfflineOptions{Average: math.NaN()}},
		{"negative regulariser power", good, 3, OfflineOptions{RegPower: -1}},
		{"NaN regulariser power", good, 3, OfflineOptions{RegPower: math.NaN()}},
		{"negative infinite average", good, 3, OfflineOptions{Average: math.Inf(-1)}},
		{"negative early decay", good, 3, OfflineOptions{EarlyDecay: -1}},
		{"infinite average", good, 3, OfflineOptions{Average: math.Inf(1)}},
		{"negative batch", good, 3, OfflineOptions{Batch: -2}},
		{"infinite next-item weight", good, 3, OfflineOptions{NextWeight: math.Inf(1)}},
		{"negative next-item share", good, 3, OfflineOptions{NextShare: -0.5}},
		{"next-item share above 1", good, 3, OfflineOptions{NextShare: 2}},
		{"NaN next-item weight", good, 3, OfflineOptions{NextWeight: math.NaN()}},
		{"negative negatives", good, 3, OfflineOptions{NextWeight: 1, NextNegatives: -1}},
		{"negative sharpness", good, 3, OfflineOptions{NextWeight: 1, NextBeta: -1}},
		{"NaN tolerance", good, 3, OfflineOptions{Tolerance: math.NaN()}},
		{"NaN floor margin", good, 3, OfflineOptions{FloorSE: math.NaN()}},
		{"infinite floor margin", good, 3, OfflineOptions{FloorSE: math.Inf(1)}},
		{"negative infinite floor margin", good, 3, OfflineOptions{FloorSE: math.Inf(-1)}},
		{"infinite tolerance", good, 3, OfflineOptions{Tolerance: math.Inf(1)}},
		{"unknown objective", good, 3, OfflineOptions{Objective: 7}},
		{"unknown selection", good, 3, OfflineOptions{Select: 9}},
		{"next-item term with full batch", good, 3, OfflineOptions{NextWeight: 1, FullBatch: true}},
		{"rank objective with full batch", good, 3, OfflineOptions{Objective: ObjectiveRank, FullBatch: true}},
	}
	for _, c := range cases {
		_, err := TrainOffline(context.Background(), c.train, nil, c.n, c.opt)
		require.Error(t, err, c.name)
	}
	_, err := TrainOffline(context.Background(), good, [][]int{{5}}, 3, OfflineOptions{})
	require.ErrorContains(t, err, "validation basket 0")
}

// TestOfflineRateScaleScalesItemSteps: one offline step with RateScale
// moves each item's embeddings by Adam's step times min(1, √(δᵢ/RateScale))
// (compared with the same step taken without scaling).
func TestOfflineRateScaleScalesItemSteps(t *testing.T) {
	train := plantedBaskets(16, 200, 4)
	steps := map[float64][]float64{}
	var theta []float64
	for _, rs := range []float64{-1, 0.5} {
		opt := OfflineOptions{D: 3, Seed: 2, RateScale: rs, Init: InitOptions{Share: 0.5}}.withDefaults()
		p, err := newParams(16, 3, false, true, 2, opt.Init)
		require.NoError(t, err)
		tr := newOfflineTrainer(p, train, opt)
		tr.initTheta()
		v0 := append([]float64(nil), p.V...)
		theta = append([]float64(nil), p.Theta...)
		require.True(t, tr.step(train[:50]))
		for k := range v0 {
			v0[k] = p.V[k] - v0[k]
		}
		steps[rs] = v0
	}
	scaled := 0
	for i, th := range theta {
		f := math.Min(1, math.Sqrt(math.Exp(th)/0.5))
		if f < 1 {
			scaled++
		}
		for k := i * 3; k < (i+1)*3; k++ {
			require.InDelta(t, f*steps[-1][k], steps[0.5][k], 1e-12, "item %d", i)
		}
	}
	require.Positive(t, scaled)
}

// TestOfflineEarlyDecay replays the learner's steps on a trainer of its
// own, multiplying the learning rate by LRDecay after each of the first
// EarlyDecay checks (a pass each; without validation no check decays it
// otherwise), and checks the result bit for bit.
func TestOfflineEarlyDecay(t *testing.T) {
	n := 30
	train := plantedBaskets(n, 400, 11)
	ctx := context.Background()
	opt := OfflineOptions{D: 4, Seed: 2, Batch: 100, MaxEpochs: 4, EvalEvery: 4, Workers: 1, EarlyDecay: 2, LRDecay: 0.3, Average: -1} // a check a pass
	got, err := TrainOffline(ctx, train, nil, n, opt)
	require.NoError(t, err)
	plain := opt
	plain.EarlyDecay = 0
	ref, err := TrainOffline(ctx, train, nil, n, plain)
	require.NoError(t, err)
	require.Equal(t, ref.Iterations, got.Iterations)
	require.NotEqual(t, ref.Params.V, got.Params.V, "the decay changed nothing")

	p, err := newParams(n, opt.D, false, true, opt.Seed, opt.Init)
	require.NoError(t, err)
	def := opt.withDefaultsFor(n)
	tr := newOfflineTrainer(p, train, def)
	tr.initTheta()
	draw := newMinibatches(train, opt.Seed)
	perPass := len(train) / opt.Batch
	require.Equal(t, opt.EvalEvery, perPass)
	var batch [][]int
	for it := range got.Iterations {
		batch = draw.next(batch[:0], opt.Batch)
		require.True(t, tr.step(batch))
		if (it+1)%perPass == 0 && (it+1)/perPass <= opt.EarlyDecay {
			tr.lr *= opt.LRDecay
		}
	}
	require.Equal(t, got.Params, p)
	require.Equal(t, def.LR*0.3*0.3, tr.lr)
}

// TestOfflineEvalEvery: by default the checks come once a pass, but at
// least DefaultMinEvalEvery minibatches apart; EvalEvery sets the spacing.
func TestOfflineEvalEvery(t *testing.T) {
	n := 30
	ctx := context.Background()
	for _, c := range []struct {
		baskets, epochs, every int
		want                   []int // the baskets seen at each check
	}{
		{400, 10, 0, []int{1000, 2000, 3000, 4000}}, // 4 steps a pass: every 10
		{400, 2, 4, []int{400, 800}},                // every pass, as set
		{400, 2, -1, []int{400, 800}},               // every pass, however short
		{2400, 2, 0, []int{2400, 4800}},             // 24 steps a pass: every pass
	} {
		train := plantedBaskets(n, c.baskets, 11)
		opt := OfflineOptions{D: 3, Seed: 2, Batch: 100, MaxEpochs: c.epochs, EvalEvery: c.every, Workers: 1, TraceSet: train[:50]}
		res, err := TrainOffline(ctx, train, nil, n, opt)
		require.NoError(t, err)
		var got []int
		for _, tp := range res.Trace {
			got = append(got, tp.Baskets)
		}
		require.Equal(t, c.want, got, "%d baskets, EvalEvery %d", c.baskets, c.every)
	}
}

// TestOfflineAverage: with Average the learner validates and returns the
// moving average of its parameters over the steps, which a replay of the
// same steps without it reproduces; without validation the average over
// the last steps is returned.
func TestOfflineAverage(t *testing.T) {
	n := 30
	train := plantedBaskets(n, 400, 11)
	ctx := context.Background()
	base := OfflineOptions{D: 4, Seed: 2, Batch: 100, MaxEpochs: 3, Workers: 1, Average: -1}
	// Without validation the steps are the same with and without the
	// average: replay them on a trainer of their own, averaging as they go.
	avgOpt := base
	avgOpt.Average = 0.5
	got, err := TrainOffline(ctx, train, nil, n, avgOpt)
	require.NoError(t, err)
	plain, err := TrainOffline(ctx, train, nil, n, base)
	require.NoError(t, err)
	require.Equal(t, plain.Iterations, got.Iterations)
	require.NotEqual(t, plain.Params.V, got.Params.V, "the average is not the last step")

	w := -math.Expm1(-float64(base.Batch) / (avgOpt.Average * float64(len(train))))
	p, err := newParams(n, base.D, false, true, base.Seed, base.Init)
	require.NoError(t, err)
	tr := newOfflineTrainer(p, train, base.withDefaultsFor(n))
	tr.initTheta()
	want := p.Clone()
	draw := newMinibatches(train, base.Seed)
	var batch [][]int
	for range plain.Iterations {
		batch = draw.next(batch[:0], base.Batch)
		require.True(t, tr.step(batch))
		want.moveToward(p, w)
	}
	require.Equal(t, plain.Params, p, "the replay takes the learner's steps")
	require.Equal(t, want, got.Params)

	// moveToward is x + w(y − x) entry by entry.
	a, b := want.Clone(), plain.Params.Clone()
	c := a.Clone()
	c.moveToward(b, 0.25)
	for i := range c.V {
		require.InDelta(t, a.V[i]+0.25*(b.V[i]-a.V[i]), c.V[i], 1e-15)
	}
	for i := range c.Theta {
		require.InDelta(t, a.Theta[i]+0.25*(b.Theta[i]-a.Theta[i]), c.Theta[i], 1e-15)
	}

	// With validation the checks score averages: the reported validation
	// value is the returned model's, which is none of the plain run's.
	val := plantedBaskets(n, 80, 12)
	res, err := TrainOffline(ctx, train, val, n, avgOpt)
	require.NoError(t, err)
	plainVal, err := TrainOffline(ctx, train, val, n, base)
	require.NoError(t, err)
	require.NotEqual(t, plainVal.ValLLEps, res.ValLLEps)
	ll, err := meanLogLikelihood(ctx, res.Model, val, eval.DefaultEps, 1)
	require.NoError(t, err)
	require.InDelta(t, ll, res.ValLLEps, 1e-9)
}
