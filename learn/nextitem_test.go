package learn

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/ndpp-go/ndpp/eval"
)

// denseKernel returns the n×n kernel L of p (model coordinates).
func denseKernel(p *Params) *mat.Dense {
	n, d := p.N, p.Dim
	c := p.CInto(nil)
	b := p.brows()
	L := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		di, si := p.diag(i)
		for j := 0; j < n; j++ {
			_, sj := p.diag(j)
			var x float64
			for k := 0; k < d; k++ {
				x += p.V[i*d+k] * p.V[j*d+k]
				for l := 0; l < d; l++ {
					x += b[i*d+k] * c[k*d+l] * b[j*d+l]
				}
			}
			x *= si * sj
			if i == j {
				x += di
			}
			L.Set(i, j, x)
		}
	}
	return L
}

// logDetSub returns log det(L_S + εI) by a fresh LU, and its sign.
func logDetSub(L *mat.Dense, s []int, eps float64) (float64, float64) {
	k := len(s)
	if k == 0 {
		return 0, 1
	}
	a := mat.NewDense(k, k, nil)
	for r, i := range s {
		for q, j := range s {
			a.Set(r, q, L.At(i, j))
		}
		a.Set(r, r, a.At(r, r)+eps)
	}
	var lu mat.LU
	lu.Factorize(a)
	return lu.LogDet()
}

// nextBrute is Σ_b w_b ℓ_b with every gain from fresh LU determinants.
func nextBrute(p *Params, baskets [][]int, ts []int, negs [][]int, beta float64, w []float64, eps float64) float64 {
	L := denseKernel(p)
	var total float64
	for q, s := range baskets {
		t := ts[q]
		var y []int
		y = append(y, s[:t]...)
		y = append(y, s[t+1:]...)
		ly, _ := logDetSub(L, y, eps)
		gain := func(j int) float64 {
			lj, sg := logDetSub(L, append(y[:len(y):len(y)], j), eps)
			return sg * math.Exp(lj-ly)
		}
		lt := math.Log(gain(s[t]))
		var v float64
		for _, j := range negs[q] {
			v += logSigmoid(beta * (lt - math.Log(gain(j))))
		}
		total += w[q] * v / float64(len(negs[q]))
	}
	return total
}

// nextFast is nextBrute through nextPrep and nextWork, with its gradient.
func nextFast(t *testing.T, p *Params, baskets [][]int, ts []int, negs [][]int, beta float64, w []float64, eps float64) (float64, *Grad) {
	t.Helper()
	c := p.CInto(nil)
	var pp nextPrep
	pp.prepare(p, c, eps, nil)
	acc := newAccum(p.N, p.Dim)
	var nw nextWork
	var total float64
	for q, s := range baskets {
		v, ok := nw.term(&pp, p, s, ts[q], negs[q], beta, acc, w[q])
		if !ok {
			t.Fatalf("basket %d: term failed", q)
		}
		total += w[q] * v
	}
	g := NewGrad(p)
	acc.finish(p, c, g, true)
	return total, g
}

func TestNextItemTermGradient(t *testing.T) {
	for _, tc := range []struct {
		name          string
		diag, shared  bool
		eps, deltaMul float64
	}{
		{"diag", true, false, 1e-5, 1},
		{"diag-shared", true, true, 1e-5, 1},
		{"lowrank", false, false, 1e-2, 1},
		{"diag-small-delta", true, false, 0, 1e-4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 11))
			n, d := 10, 3
			p, err := newParams(n, d, tc.shared, tc.diag, 3, InitOptions{Scale: 0.6, CScale: 0.8})
			if err != nil {
				t.Fatal(err)
			}
			for i := range p.Theta {
				p.Theta[i] = math.Log(tc.deltaMul * (0.05 + rng.Float64()))
			}
			baskets := [][]int{{0, 3, 5}, {1, 2}, {4, 6, 7, 8}, {9, 0, 2, 5, 7}}
			ts := []int{1, 0, 3, 2}
			negs := [][]int{{1, 2, 9}, {0, 5}, {1, 2, 3, 9}, {1}}
			w := []float64{0.5, 1.5, 1, 0.25}
			beta := 1.7
			val, g := nextFast(t, p, baskets, ts, negs, beta, w, tc.eps)
			want := nextBrute(p, baskets, ts, negs, beta, w, tc.eps)
			if math.Abs(val-want) > 1e-9*(1+math.Abs(want)) {
				t.Fatalf("value %v, brute force %v", val, want)
			}
			f := func() float64 { return nextBrute(p, baskets, ts, negs, beta, w, tc.eps) }
			fdCheckParams(t, tc.name, p, g, f, 1e-6)
		})
	}
}

// TestNextItemTermGradientLarger checks the term at sizes where its
// products run every path of the small-product kernel (blocks of four rows
// and twelve, eight and four columns): baskets of up to 16 items and 21
// candidates at d = 13, the value against fresh determinants and the
// gradient against finite differences at a sample of coordinates.
func TestNextItemTermGradientLarger(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	n, d := 60, 13
	p, err := newParams(n, d, false, true, 9, InitOptions{Scale: 0.5, CScale: 0.8})
	require.NoError(t, err)
	for i := range p.Theta {
		p.Theta[i] = math.Log(0.05 + rng.Float64())
	}
	perm := rng.Perm(n)
	baskets := [][]int{perm[:16], perm[16:22], perm[22:35], perm[35:37]}
	ts := []int{15, 2, 0, 1}
	var negs [][]int
	for _, s := range baskets {
		var ng []int
		for _, j := range rng.Perm(n) {
			if len(ng) < 21 && !contains(s, j) {
				ng = append(ng, j)
			}
		}
		negs = append(negs, ng)
	}
	w := []float64{1, 0.5, 2, 1}
	beta := 3.0
	val, g := nextFast(t, p, baskets, ts, negs, beta, w, 1e-5)
	want := nextBrute(p, baskets, ts, negs, beta, w, 1e-5)
	require.InDelta(t, want, val, 1e-9*(1+math.Abs(want)))
	f := func() float64 { return nextBrute(p, baskets, ts, negs, beta, w, 1e-5) }
	check := func(name string, x, grad []float64) {
		idx := make([]int, 25)
		for q := range idx {
			idx[q] = rng.IntN(len(x))
		}
		fdCheckAt(t, name, x, grad, f, 1e-6, idx)
	}
	check("V", p.V, g.V)
	check("B", p.B, g.B)
	check("D", p.D, g.D)
	check("theta", p.Theta, g.T)
}

// TestValRankingIsExactWithEveryCandidate: with at least n candidates the
// validation ranking is the exact share of items ranked below each
// basket's held-out item by the model's conditional gains (ndpp's fresh
// computation), averaged; with fewer it is an estimate close to it.
func TestValRankingIsExactWithEveryCandidate(t *testing.T) {
	n := 30
	train, val := plantedBaskets(n, 400, 3), plantedBaskets(n, 120, 4)
	res, err := TrainOffline(context.Background(), train, nil, n, OfflineOptions{D: 4, Seed: 2, MaxEpochs: 3})
	require.NoError(t, err)
	p, m := res.Params, res.Model
	key := make([]int64, n)
	for i := range key {
		key[i] = int64((i * 7) % n) // another order than the rows'
	}
	got, err := valRanking(context.Background(), p, val, n, key, 0, 9)
	require.NoError(t, err)
	var sum float64
	var cnt int
	var negs []int
	var nd nextDraw
	gains := make([]float64, n)
	for q, s := range val {
		if len(s) < 2 {
			continue
		}
		tpos, ng := nd.choice(9, math.MaxInt32, q, s, n, n, true, key, negs)
		for _, i := range s {
			require.LessOrEqual(t, key[i], key[s[tpos]])
		}
		negs = ng
		var y []int
		y = append(y, s[:tpos]...)
		y = append(y, s[tpos+1:]...)
		require.NoError(t, m.ConditionalGains(y, gains))
		var below float64
		for _, j := range negs {
			switch {
			case gains[j] < gains[s[tpos]]*(1-1e-9):
				below++
			case gains[j] <= gains[s[tpos]]*(1+1e-9):
				below += 0.5
			}
		}
		sum += below / float64(len(negs))
		cnt++
	}
	require.Positive(t, cnt)
	require.InDelta(t, 100*sum/float64(cnt), got, 1e-6)
	est, err := valRanking(context.Background(), p, val, n/2, key, 0, 9)
	require.NoError(t, err)
	require.InDelta(t, got, est, 5)
}

// TestSelectorRanking: SelectRanking returns the best-ranking check among
// those at least as likely as the floor, the most likely check while none
// is; SelectObjective and SelectLikelihood the best by their criterion.
func TestSelectorRanking(t *testing.T) {
	p := &Params{N: 1, Dim: 1, V: []float64{0}, D: []float64{0}}
	mark := func(x float64) *Params { q := p.Clone(); q.V[0] = x; return q }
	s := newSelector(SelectRanking, -10, 0)
	require.True(t, s.observe(mark(1), -12, 0, -11, 90)) // below the floor
	require.False(t, s.observe(mark(2), -13, 0, -10, 95))
	q, ll, rank, by := s.chosen()
	require.Equal(t, []float64{1}, q.V)
	require.Equal(t, SelectLikelihood, by)
	require.Equal(t, -12.0, ll)
	require.Equal(t, 90.0, rank)
	require.True(t, s.observe(mark(3), -9, 0, -9, 70)) // the first to qualify
	require.False(t, s.observe(mark(4), -11, 0, -11, 99))
	require.True(t, s.observe(mark(5), -9.5, 0, -9.5, 80))
	require.False(t, s.observe(mark(6), -8, 0, -8, 75)) // more likely is no progress now
	q, ll, rank, by = s.chosen()
	require.Equal(t, []float64{5}, q.V)
	require.Equal(t, SelectRanking, by)
	require.Equal(t, -9.5, ll)
	require.Equal(t, 80.0, rank)
	// A check must exceed the floor by its margin: -9.8 with a margin of
	// 0.5 does not qualify, however well it ranks; -9.6 with 0.3 does.
	s = newSelector(SelectRanking, -10, 0)
	require.True(t, s.observe(mark(7), -9.8, 0.5, -9.8, 99))
	_, _, _, by = s.chosen()
	require.Equal(t, SelectLikelihood, by, "below the floor by its margin")
	require.True(t, s.observe(mark(8), -9.6, 0.3, -9.6, 60))
	q, _, rank, by = s.chosen()
	require.Equal(t, []float64{8}, q.V)
	require.Equal(t, SelectRanking, by)
	require.Equal(t, 60.0, rank)

	for _, c := range []struct {
		sel  Selection
		want float64
	}{{SelectObjective, 1}, {SelectLikelihood, 2}} {
		o := newSelector(c.sel, math.Inf(-1), 0)
		require.True(t, o.observe(mark(1), -3, 0, -2, math.NaN()))
		o.observe(mark(2), -1, 0, -2.5, math.NaN())
		q, _, _, by = o.chosen()
		require.Equal(t, []float64{c.want}, q.V)
		require.Equal(t, c.sel, by)
	}
}

// TestSelectorTolerance: a check better than the best by at most
// tol·|best| becomes the chosen model but is not progress, under every
// selection.
func TestSelectorTolerance(t *testing.T) {
	p := &Params{N: 1, Dim: 1, V: []float64{0}, D: []float64{0}}
	mark := func(x float64) *Params { q := p.Clone(); q.V[0] = x; return q }
	for _, sel := range []Selection{SelectObjective, SelectLikelihood, SelectRanking} {
		s := newSelector(sel, -200, 1e-3)
		require.True(t, s.observe(mark(1), -100, 0, -100, 80), "%v: the first check", sel)
		require.False(t, s.observe(mark(2), -99.95, 0, -99.95, 80.05), "%v: within the tolerance", sel)
		q, _, _, _ := s.chosen()
		require.Equal(t, []float64{2}, q.V, "%v: kept", sel)
		require.True(t, s.observe(mark(3), -99.8, 0, -99.8, 80.2), "%v: beyond it", sel)
		require.False(t, s.observe(mark(4), -101, 0, -101, 79), "%v: worse", sel)
		q, _, _, _ = s.chosen()
		require.Equal(t, []float64{3}, q.V, "%v", sel)
	}
}

// TestRankObjective: the rank objective trains with the next-item term,
// returns a model chosen by its validation ranking whose validation
// log-likelihood is at least the starting model's, and ranks the planted
// pairs at least as well as the likelihood objective; with InitMoments
// too. Both stop when ctx is done.
func TestRankObjective(t *testing.T) {
	n := 40
	train, val := plantedBaskets(n, 1500, 5), plantedBaskets(n, 200, 6)
	ctx := context.Background()
	lik, err := TrainOffline(ctx, train, val, n, OfflineOptions{D: 6, Seed: 3, MaxEpochs: 15, NextWeight: -1})
	require.NoError(t, err)
	require.Equal(t, SelectLikelihood, lik.SelectedBy)
	require.Zero(t, lik.NextWeight)
	for _, moments := range []bool{false, true} {
		opt := OfflineOptions{D: 6, Seed: 3, MaxEpochs: 15, Objective: ObjectiveRank, NextWeight: 0.25, InitMoments: moments}
		rank, err := TrainOffline(ctx, train, val, n, opt)
		require.NoError(t, err)
		t.Logf("moments %v: val LL %.3f MPR %.2f by %v; likelihood objective: val LL %.3f MPR %.2f", moments, rank.ValLLEps, rank.ValMPR, rank.SelectedBy, lik.ValLLEps, lik.ValMPR)
		require.Equal(t, 0.25, rank.NextWeight)
		require.Equal(t, SelectRanking, rank.SelectedBy, "moments %v", moments)
		require.GreaterOrEqual(t, rank.ValMPR, lik.ValMPR-1, "moments %v", moments)
		require.False(t, math.IsNaN(rank.ValLLEps))

		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err = TrainOffline(cctx, train, val, n, opt)
		require.ErrorIs(t, err, context.Canceled)
	}
}

// TestRankFloorMargin: the rank objective returns a check whose
// validation log-likelihood exceeds the independent-items model's by
// FloorSE standard errors of the per-basket difference (computed here
// directly); without the margin it returns one nearer the floor.
func TestRankFloorMargin(t *testing.T) {
	n := 40
	train, val := plantedBaskets(n, 1500, 5), plantedBaskets(n, 200, 6)
	ctx := context.Background()
	ind, err := eval.Independent(train, n)
	require.NoError(t, err)
	indLL, indLds, err := logLikelihoods(ctx, ind, val, eval.DefaultEps, 1)
	require.NoError(t, err)
	margin := map[float64]float64{} // FloorSE: the returned check's margin in standard errors
	for _, se := range []float64{-1, 2} {
		res, err := TrainOffline(ctx, train, val, n, OfflineOptions{D: 6, Seed: 3, MaxEpochs: 15, Objective: ObjectiveRank, NextWeight: 0.4, FloorSE: se, RankRetries: -1, Workers: 1})
		require.NoError(t, err)
		require.Equal(t, SelectRanking, res.SelectedBy, "FloorSE %v", se)
		ll, lds, err := logLikelihoods(ctx, res.Model, val, eval.DefaultEps, 1)
		require.NoError(t, err)
		require.InDelta(t, res.ValLLEps, ll, 1e-9)
		diffs := make([]float64, len(val))
		for i := range diffs {
			diffs[i] = lds[i] - indLds[i]
		}
		margin[se] = (ll - indLL) / (stat.StdDev(diffs, nil) / math.Sqrt(float64(len(diffs))))
	}
	t.Logf("margins in standard errors: %v", margin)
	require.GreaterOrEqual(t, margin[2], 2.0)
	require.GreaterOrEqual(t, margin[-1], 0.0)
	require.Less(t, margin[-1], 2.0, "the margin changed nothing")
}

// TestRankRetries: with a weight too strong for any validation check to
// reach the likelihood floor, the rank objective trains again at half the
// weight until one does (the returned weight halved that often, the
// passes and the progress of every run counted), and not at all with
// RankRetries < 0.
func TestRankRetries(t *testing.T) {
	n := 40
	train, val := plantedBaskets(n, 1500, 5), plantedBaskets(n, 200, 6)
	ctx := context.Background()
	opt := OfflineOptions{D: 6, Seed: 3, MaxEpochs: 6, Objective: ObjectiveRank, NextWeight: 64, RankRetries: -1}
	once, err := TrainOffline(ctx, train, val, n, opt)
	require.NoError(t, err)
	require.Equal(t, SelectLikelihood, once.SelectedBy)
	require.Equal(t, 64.0, once.NextWeight)
	opt.RankRetries = 12
	var calls, maxSeen int
	opt.Progress = func(it, maxIt int) {
		calls++
		require.Equal(t, calls, it, "the count goes on across the runs")
		require.LessOrEqual(t, it, maxIt)
		require.GreaterOrEqual(t, maxIt, maxSeen)
		maxSeen = maxIt
	}
	again, err := TrainOffline(ctx, train, val, n, opt)
	require.NoError(t, err)
	require.Equal(t, SelectRanking, again.SelectedBy)
	require.Less(t, again.NextWeight, 64.0)
	halvings := math.Log2(64 / again.NextWeight)
	require.Equal(t, math.Round(halvings), halvings)
	t.Logf("%v halvings, weight %v, %.1f passes", halvings, again.NextWeight, again.Passes)
	require.Greater(t, again.Passes, once.Passes)
	require.GreaterOrEqual(t, again.ValLLEps, once.ValLLEps)
}

// TestRankStrong: the rank objective's strong first run is returned when
// one of its checks reaches the likelihood floor, bit for bit the run of
// its setting alone; when none does, the plain run follows and is
// returned bit for bit, its RankRetries halvings after it. The defaults
// select DefaultRankStrong only when the rank objective's weight,
// regulariser, early decay and average are left zero, and bad settings
// are refused.
func TestRankStrong(t *testing.T) {
	n := 40
	train, val := plantedBaskets(n, 1500, 5), plantedBaskets(n, 200, 6)
	ctx := context.Background()
	none, strong := &RankSetting{}, DefaultRankStrong()
	base := OfflineOptions{D: 6, Seed: 3, MaxEpochs: 6, Objective: ObjectiveRank}
	alone := func(w, a float64, ed int, avg float64) *Result {
		o := base
		o.NextWeight, o.Alpha, o.Beta, o.EarlyDecay, o.Average, o.RankStrong = w, a, a, ed, avg, none
		r, err := TrainOffline(ctx, train, val, n, o)
		require.NoError(t, err)
		require.False(t, r.RankStrong)
		return r
	}

	// The strong run reaches the floor: it is returned.
	o := base
	o.NextWeight, o.RankStrong = 0.05, &RankSetting{NextWeight: 0.1, Alpha: 0.1, Beta: 0.1, EarlyDecay: 1, Average: 0.5}
	got, err := TrainOffline(ctx, train, val, n, o)
	require.NoError(t, err)
	want := alone(0.1, 0.1, 1, 0.5)
	require.Equal(t, SelectRanking, want.SelectedBy)
	require.True(t, got.RankStrong)
	require.Equal(t, 0.1, got.NextWeight)
	require.Equal(t, want.Params, got.Params)
	require.Equal(t, want.Passes, got.Passes)

	// It does not: the plain run follows and is returned.
	o.RankStrong = &RankSetting{NextWeight: 64, Alpha: 1, Beta: 1, EarlyDecay: 2, Average: 0.5}
	require.Equal(t, SelectLikelihood, alone(64, 1, 2, 0.5).SelectedBy, "the strong setting must miss the floor")
	got, err = TrainOffline(ctx, train, val, n, o)
	require.NoError(t, err)
	want = alone(0.05, 0, 0, 0)
	require.Equal(t, SelectRanking, want.SelectedBy)
	require.False(t, got.RankStrong)
	require.Equal(t, 0.05, got.NextWeight)
	require.Equal(t, want.Params, got.Params)
	require.Greater(t, got.Passes, want.Passes, "the passes of both runs")

	// Neither does: the plain run's halvings follow.
	o.NextWeight, o.RankRetries = 64, 12
	got, err = TrainOffline(ctx, train, val, n, o)
	require.NoError(t, err)
	require.Equal(t, SelectRanking, got.SelectedBy)
	require.False(t, got.RankStrong)
	halvings := math.Log2(64 / got.NextWeight)
	require.Greater(t, halvings, 0.0)
	require.Equal(t, math.Round(halvings), halvings)

	// The default rule.
	for _, c := range []struct {
		name string
		o    OfflineOptions
		want *RankSetting
	}{
		{"rank defaults", OfflineOptions{Objective: ObjectiveRank}, &strong},
		{"likelihood", OfflineOptions{}, nil},
		{"weight", OfflineOptions{Objective: ObjectiveRank, NextWeight: 0.5}, nil},
		{"alpha", OfflineOptions{Objective: ObjectiveRank, Alpha: 1}, nil},
		{"beta", OfflineOptions{Objective: ObjectiveRank, Beta: 1}, nil},
		{"early decay", OfflineOptions{Objective: ObjectiveRank, EarlyDecay: 1}, nil},
		{"average", OfflineOptions{Objective: ObjectiveRank, Average: 1}, nil},
		{"none", OfflineOptions{Objective: ObjectiveRank, RankStrong: none}, nil},
		{"NaN weight", OfflineOptions{Objective: ObjectiveRank, RankStrong: &RankSetting{NextWeight: math.NaN()}}, nil},
		{"given", OfflineOptions{NextWeight: 2, RankStrong: &RankSetting{NextWeight: 3}}, &RankSetting{NextWeight: 3}},
	} {
		c.o.rankStrong()
		require.Equal(t, c.want, c.o.RankStrong, c.name)
	}

	for name, s := range map[string]RankSetting{
		"negative alpha": {NextWeight: 1, Alpha: -1},
		"NaN beta":       {NextWeight: 1, Beta: math.NaN()},
		"infinite":       {NextWeight: math.Inf(1)},
		"early decay":    {NextWeight: 1, EarlyDecay: -1},
		"NaN average":    {NextWeight: 1, Average: math.NaN()},
	} {
		o := base
		o.RankStrong = &s
		_, err := TrainOffline(ctx, train, val, n, o)
		require.ErrorContains(t, err, "strong rank setting", name)
	}
	_, err = TrainOffline(ctx, train, val, n, OfflineOptions{D: 6, FullBatch: true, NextWeight: -1, Objective: ObjectiveRank, RankStrong: &strong})
	require.ErrorContains(t, err, "FullBatch")
}

// TestOfflineStart: training can start from given parameters (left as
// they were), which must fit the catalogue and the options' kernel.
func TestOfflineStart(t *testing.T) {
	n := 40
	train, val := plantedBaskets(n, 600, 7), plantedBaskets(n, 100, 8)
	ctx := context.Background()
	first, err := TrainOffline(ctx, train, val, n, OfflineOptions{D: 5, Seed: 1, MaxEpochs: 3})
	require.NoError(t, err)
	start := first.Params.Clone()
	again, err := TrainOffline(ctx, train, val, n, OfflineOptions{D: 5, Seed: 1, MaxEpochs: 3, Objective: ObjectiveRank, NextWeight: 1, Start: start})
	require.NoError(t, err)
	require.Equal(t, first.Params, start, "the start parameters changed")
	require.NotEqual(t, first.Params.V, again.Params.V)
	for name, opt := range map[string]OfflineOptions{
		"other d":     {D: 6, Start: start},
		"shared":      {D: 5, Shared: true, Start: start},
		"no diagonal": {D: 5, LowRank: true, Start: start},
	} {
		_, err := TrainOffline(ctx, train, val, n, opt)
		require.ErrorContains(t, err, "start parameters", name)
	}
	_, err = TrainOffline(ctx, train, val, n+1, OfflineOptions{D: 5, Start: start})
	require.ErrorContains(t, err, "start parameters")
	bad := start.Clone()
	bad.V = bad.V[:len(bad.V)-1]
	_, err = TrainOffline(ctx, train, val, n, OfflineOptions{D: 5, Start: bad})
	require.ErrorContains(t, err, "lengths")
	bad = start.Clone()
	bad.D[0] = math.NaN()
	_, err = TrainOffline(ctx, train, val, n, OfflineOptions{D: 5, Start: bad})
	require.ErrorContains(t, err, "not finite")
}

// TestParseSelection: every selection's name parses back to it, "" is the
// objective's default, and other names are refused.
func TestParseSelection(t *testing.T) {
	for _, sel := range []Selection{SelectObjective, SelectLikelihood, SelectRanking} {
		got, err := ParseSelection(sel.String())
		require.NoError(t, err)
		require.Equal(t, sel, got)
	}
	got, err := ParseSelection("")
	require.NoError(t, err)
	require.Equal(t, SelectDefault, got)
	for _, bad := range []string{"default", "best", "Likelihood"} {
		_, err := ParseSelection(bad)
		require.Error(t, err, bad)
	}
	require.Equal(t, SelectLikelihood, OfflineOptions{NextWeight: 0.5}.withDefaults().Select)
	require.Equal(t, SelectRanking, OfflineOptions{Objective: ObjectiveRank}.withDefaults().Select)
}

// TestNextFusionMatchesSeparate: a next-item term carried by the basket
// term's products (nextFusion, as offline steps evaluate it) adds the same
// value and gradient as the basket term and the term evaluated apart, on
// seeded random instances — baskets of 2 to 16 items with the held-out item
// first, inside and last, near-singular kernels (tiny δ, ε = 0) included.
// The two build K by different products, and a K of 16 items at rank 12
// plus ε = 0.01 amplifies their rounding: the gradients agree to 1e-7 of
// their largest entry.
func TestNextFusionMatchesSeparate(t *testing.T) {
	for _, tc := range []struct {
		name         string
		diag, shared bool
		eps, delta   float64
		d            int
	}{
		{"diag", true, false, 1e-5, 1, 5},
		{"diag-shared", true, true, 1e-5, 1, 4},
		{"lowrank", false, false, 1e-2, 1, 6},
		{"near-singular", true, false, 0, 1e-7, 13},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(17, 3))
			n := 40
			p, err := newParams(n, tc.d, tc.shared, tc.diag, 5, InitOptions{Scale: 0.6, CScale: 0.8})
			require.NoError(t, err)
			for i := range p.Theta {
				p.Theta[i] = math.Log(tc.delta * (0.05 + rng.Float64()))
			}
			c := p.CInto(nil)
			var pp, ppBC nextPrep
			pp.prepare(p, c, tc.eps, nil)
			// The rows C bᵢ from the rows bᵢᵀC an offline step has formed.
			all := make([]int, n)
			for i := range all {
				all[i] = i
			}
			bcAll := make([]float64, n*tc.d)
			bcRows(bcAll, p, c, all)
			ppBC.prepare(p, c, tc.eps, bcAll)
			for x := range pp.cb {
				require.InDelta(t, pp.cb[x], ppBC.cb[x], 1e-13*(1+math.Abs(pp.cb[x])))
			}
			sep, fused := newAccum(n, tc.d), newAccum(n, tc.d)
			var bw, bwf basketWork
			var nw, nwf nextWork
			bc := make([]float64, 16*tc.d)
			for q, k := range []int{2, 3, 4, 5, 9, 16, 2, 7} {
				perm := rng.Perm(n)
				s, negs := perm[:k], perm[k:k+1+rng.IntN(12)]
				tt := []int{0, k - 1, rng.IntN(k)}[q%3]
				scale, f := 0.5+rng.Float64(), 0.1+3*rng.Float64()
				bcRows(bc, p, c, s)
				_, ok := bw.basketTerm(p, bc, s, tc.eps, false, false, sep, scale)
				require.True(t, ok)
				_, ok = nw.term(&pp, p, s, tt, negs, 2.5, sep, scale*f)
				require.True(t, ok, "basket %d", q)
				nf := nextFusion{w: &nwf, pp: &pp, t: tt, negs: negs, beta: 2.5, acc: fused, scale: scale * f, f: f}
				bwf.next = &nf
				_, ok = bwf.basketTerm(p, bc, s, tc.eps, false, false, fused, scale)
				bwf.next = nil
				require.True(t, ok)
				require.True(t, nf.ok, "basket %d", q)
			}
			require.InDelta(t, sep.value, fused.value, 1e-12*(1+math.Abs(sep.value)))
			gradsNear(t, p, c, sep, fused, 1e-7)
		})
	}
}

// TestOfflineGradientWithNextTermMatchesFiniteDifferences checks an
// offline step's gradient with the next-item term on a share of the
// baskets (the term carried by the basket term's products) against
// central differences of the objective the step's draws define: the
// minibatch's basket terms and normaliser plus NextWeight/NextShare times
// the term, from fresh determinants, of each basket the step takes.
func TestOfflineGradientWithNextTermMatchesFiniteDifferences(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		shared, diag := seed%2 == 0, seed > 2
		n, d := 9, 3
		train := plantedBaskets(n, 40, seed)
		batch := train[:8]
		opt := OfflineOptions{D: d, Shared: shared, Workers: 2, LowRank: !diag, NextWeight: 0.7, NextShare: 0.6, NextNegatives: 3, NextBeta: 1.5, Seed: seed}.withDefaults()
		p, tr := stepGradient(t, train, batch, n, seed, opt)
		var held [][]int
		var ts []int
		var negs [][]int
		var w []float64
		var nd nextDraw
		for q, s := range batch {
			if len(s) < 2 || !nextTakes(opt.Seed, 0, q, opt.NextShare) {
				continue
			}
			tt, ng := nd.choice(opt.Seed, 0, q, s, n, opt.NextNegatives, true, nil, nil)
			held, ts, negs = append(held, s), append(ts, tt), append(negs, ng)
			w = append(w, tr.nextW/opt.NextShare/float64(len(batch))) // NextWeight·k̄
		}
		require.NotEmpty(t, held, "seed %d: no basket takes the term", seed)
		obj := func() float64 {
			return regularisedObjective(p, batch, opt.Eps, tr.counts, 0, 0, 1) + nextBrute(p, held, ts, negs, opt.NextBeta, w, opt.Eps)
		}
		fdCheckParams(t, fmt.Sprintf("seed %d", seed), p, tr.g, obj, fdRelTol)
	}
}

// TestNextFusionDowndate: the held-out item's K⁻¹ comes from the basket's
// A⁻¹ by a downdate that matches a fresh inverse of K, and is refused —
// K left for a fresh inversion — where A is near-singular through the
// held-out item (a copy of another basket item, both with δ = 10⁻⁸,
// ε = 0) while K is not; the fused term then still matches the term
// apart, to the rounding that A's conditioning leaves in the basket
// term's own gradient.
func TestNextFusionDowndate(t *testing.T) {
	n, d := 12, 4
	p, err := newParams(n, d, false, true, 3, InitOptions{Scale: 0.6, CScale: 0.8})
	require.NoError(t, err)
	s := []int{2, 5, 7, 9, 11}
	negs := []int{0, 1, 3}
	for _, tc := range []struct {
		name    string
		copyOf  int // the held-out item s[tt] made a copy of s[copyOf], or −1
		tt      int
		eps     float64
		accepts bool
	}{
		{"well-conditioned", -1, 2, 1e-5, true},
		{"held-out last", -1, 4, 1e-5, true},
		{"held-out copies another item", 0, 3, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := p.Clone()
			for i := range q.Theta {
				q.Theta[i] = math.Log(0.3)
			}
			if tc.copyOf >= 0 {
				nearCopy(q, s[tc.tt], s[tc.copyOf])
			}
			L := denseKernel(q)
			k := len(s)
			a := make([]float64, k*k)
			for r, i := range s {
				for c, j := range s {
					a[r*k+c] = L.At(i, j)
				}
				a[r*k+r] += tc.eps
			}
			var pp nextPrep
			pp.prepare(q, q.CInto(nil), tc.eps, nil)
			var nw nextWork
			nf := nextFusion{w: &nw, pp: &pp, t: tc.tt, negs: negs}
			nf.fromA(s, a)
			kk := append([]float64(nil), nw.kk...)
			var ai mat.Dense
			require.NoError(t, ai.Inverse(mat.NewDense(k, k, append([]float64(nil), a...))))
			pm := append([]float64(nil), ai.RawMatrix().Data...)
			require.Equal(t, tc.accepts, nf.downdate(pm, k))
			var ki mat.Dense
			require.NoError(t, ki.Inverse(mat.NewDense(k-1, k-1, append([]float64(nil), kk...))))
			if !tc.accepts {
				require.Equal(t, kk, nw.kk, "refused: K kept")
				return
			}
			want := ki.RawMatrix().Data
			for x := range want {
				require.InDelta(t, want[x], nw.kk[x], 1e-9*(1+math.Abs(want[x])))
			}
		})
	}
	// Through the step's path, the refused downdate still gives the term.
	q := p.Clone()
	nearCopy(q, s[3], s[0])
	c := q.CInto(nil)
	var pp nextPrep
	pp.prepare(q, c, 0, nil)
	sep, fused := newAccum(n, d), newAccum(n, d)
	var bw, bwf basketWork
	var nw, nwf nextWork
	bc := make([]float64, len(s)*d)
	bcRows(bc, q, c, s)
	_, ok := bw.basketTerm(q, bc, s, 0, false, false, sep, 1)
	require.True(t, ok)
	_, ok = nw.term(&pp, q, s, 3, negs, 2, sep, 0.5)
	require.True(t, ok)
	nf := nextFusion{w: &nwf, pp: &pp, t: 3, negs: negs, beta: 2, acc: fused, scale: 0.5, f: 0.5}
	bwf.next = &nf
	_, ok = bwf.basketTerm(q, bc, s, 0, false, false, fused, 1)
	require.True(t, ok)
	require.True(t, nf.ok)
	gradsNear(t, q, c, sep, fused, 1e-6)
}

// nearCopy makes item i a copy of item j, both with δ = 10⁻⁸: a basket
// holding both is near-singular.
func nearCopy(p *Params, i, j int) {
	d := p.Dim
	copy(p.V[i*d:(i+1)*d], p.V[j*d:(j+1)*d])
	copy(p.B[i*d:(i+1)*d], p.B[j*d:(j+1)*d])
	p.Theta[i], p.Theta[j] = math.Log(1e-8), math.Log(1e-8)
}

// gradsNear finishes the sums want and got at p (C in c) and requires
// every entry of each parameter block's gradient to agree within rel
// times the block's largest entry in want.
func gradsNear(t *testing.T, p *Params, c []float64, want, got *accum, rel float64) {
	t.Helper()
	gw, gg := NewGrad(p), NewGrad(p)
	want.finish(p, c, gw, true)
	got.finish(p, c, gg, true)
	for _, b := range []struct {
		name      string
		want, got []float64
	}{{"V", gw.V, gg.V}, {"B", gw.B, gg.B}, {"D", gw.D, gg.D}, {"theta", gw.T, gg.T}} {
		var scale float64
		for _, x := range b.want {
			scale = math.Max(scale, math.Abs(x))
		}
		for i := range b.want {
			require.InDelta(t, b.want[i], b.got[i], rel*scale, "%s[%d]", b.name, i)
		}
	}
}

// TestNextBasketWeight: each basket that carries the next-item term (two
// items or more) weighs NextWeight·k̄, and when fewer than a share
// NextCarry of the baskets carry it, times NextCarry over their share up to
// NextMaxCarry, so that the term's total weight, summed over the baskets,
// is at least NextCarry times NextWeight·k̄ per basket while the factor is
// below the cap; NextCarry 0 (an explicit negative) leaves NextWeight·k̄.
func TestNextBasketWeight(t *testing.T) {
	const w = 0.04
	fifth := [][]int{{0}, {1}, {2}, {3}, {0, 1, 2}}
	tenth := [][]int{{0}, {1}, {2}, {3}, {4}, {0}, {1}, {2}, {3}, {0, 1}}
	const maxC = DefaultNextMaxCarry
	for _, tc := range []struct {
		name        string
		carry, maxC float64
		baskets     [][]int
		want        float64
	}{
		{"every basket carries it", 0.5, maxC, [][]int{{0, 1}, {0, 1, 2}, {1, 2, 3, 4}}, w * 3},
		{"half carry it", 0.5, maxC, [][]int{{0}, {0, 1, 2}}, w * 2},
		{"a fifth carry it", 0.5, maxC, fifth, w * 7.0 / 5 * 0.5 / 0.2},
		{"a fifth carry it, carry 0.75", 0.75, maxC, fifth, w * 7.0 / 5 * 0.75 / 0.2},
		{"a fifth carry it, carry 1, capped", 1, maxC, fifth, w * 7.0 / 5 * maxC},
		{"a fifth carry it, carry 0.2", 0.2, maxC, fifth, w * 7.0 / 5},
		{"a fifth carry it, no carry", 0, maxC, fifth, w * 7.0 / 5},
		{"a fifth carry it, bound 2", 0.5, 2, fifth, w * 7.0 / 5 * 2},
		{"a fifth carry it, bound 1", 0.5, 1, fifth, w * 7.0 / 5},
		{"a tenth carry it, capped", 0.5, maxC, tenth, w * 1.1 * maxC},
		{"a tenth carry it, unbounded", 0.5, math.Inf(1), tenth, w * 1.1 * 5},
		{"none carries it", 0.5, maxC, [][]int{{0}, {1}}, w},
		{"no baskets", 0.5, maxC, nil, 0},
	} {
		got := nextBasketWeight(w, tc.carry, tc.maxC, tc.baskets)
		require.InDelta(t, tc.want, got, 1e-15, tc.name)
		carry := 0
		for _, s := range tc.baskets {
			if len(s) >= 2 {
				carry++
			}
		}
		if carry > 0 && float64(carry)/float64(len(tc.baskets)) >= tc.carry/tc.maxC {
			// The term's total weight over the baskets against w·k̄ per basket.
			total := got * float64(carry)
			require.GreaterOrEqual(t, total, tc.carry*w*meanSize(tc.baskets)*float64(len(tc.baskets))-1e-12, tc.name)
		}
	}
	for _, bad := range []float64{0, -1, math.NaN()} {
		require.Zero(t, nextBasketWeight(bad, 0.5, maxC, [][]int{{0, 1}}), "weight %v", bad)
	}
	// The offline trainer takes it, with the default carry or none.
	for _, c := range []struct{ opt, want float64 }{{0, DefaultNextCarry}, {-1, 0}, {1, 1}} {
		opt := OfflineOptions{D: 2, NextWeight: w, NextCarry: c.opt, Seed: 1}.withDefaults()
		require.NoError(t, opt.validate())
		require.Equal(t, c.want, opt.NextCarry)
		p, err := newParams(5, opt.D, false, true, 1, InitOptions{Scale: 0.5, CScale: 0.5, Share: -1})
		require.NoError(t, err)
		require.Equal(t, nextBasketWeight(w, c.want, maxC, fifth), newOfflineTrainer(p, fifth, opt).nextW, "carry %v", c.opt)
	}
	// Its bound: DefaultNextMaxCarry unless set; below 1 (or NaN) is an
	// error, +Inf no bound.
	for _, c := range []struct{ opt, want float64 }{{0, maxC}, {2, 2}, {math.Inf(1), math.Inf(1)}} {
		opt := OfflineOptions{D: 2, NextWeight: w, NextCarry: 1, NextMaxCarry: c.opt, Seed: 1}.withDefaults()
		require.NoError(t, opt.validate())
		require.Equal(t, c.want, opt.NextMaxCarry)
		p, err := newParams(5, opt.D, false, true, 1, InitOptions{Scale: 0.5, CScale: 0.5, Share: -1})
		require.NoError(t, err)
		require.InDelta(t, w*7.0/5*min(5, c.want), newOfflineTrainer(p, fifth, opt).nextW, 1e-15, "bound %v", c.opt)
	}
	for _, bad := range []float64{0.5, -1, math.NaN(), math.Inf(-1)} {
		require.Error(t, OfflineOptions{D: 2, NextMaxCarry: bad}.withDefaults().validate(), "bound %v", bad)
	}
	// ObjectiveRank takes none unless set.
	for _, c := range []struct{ opt, want float64 }{{0, 0}, {0.5, 0.5}} {
		opt := OfflineOptions{D: 2, Objective: ObjectiveRank, NextCarry: c.opt}.withDefaults()
		require.NoError(t, opt.validate())
		require.Equal(t, c.want, opt.NextCarry, "rank objective, carry %v", c.opt)
	}
	for _, bad := range []float64{1.5, math.NaN(), math.Inf(1), math.Inf(-1)} {
		require.Error(t, OfflineOptions{D: 2, NextCarry: bad}.withDefaults().validate(), "carry %v", bad)
	}
}

// TestNextValuePerBasket: the validation figure of the next-item term is
// the fresh-LU term of each basket of two items or more (its held-out
// last item and candidates as validation draws them), summed and divided
// by the number of all the baskets, as training weighs the term against
// the mean basket log-likelihood; single-item baskets add nothing.
func TestNextValuePerBasket(t *testing.T) {
	const n, beta, eps, seed = 24, 20.0, 1e-5, 7
	p, err := NewParams(n, 4, false, 3, InitOptions{})
	require.NoError(t, err)
	val := plantedBaskets(n, 60, 8)
	key := make([]int64, n)
	for i := range key {
		key[i] = int64((i * 5) % n)
	}
	var carriers [][]int
	var ts []int
	var negs [][]int
	var nd nextDraw
	for q, s := range val {
		if len(s) < 2 {
			continue
		}
		tpos, ng := nd.choice(seed, math.MaxInt32, q, s, n, 8, true, key, nil)
		carriers, ts, negs = append(carriers, s), append(ts, tpos), append(negs, ng)
	}
	require.Greater(t, len(carriers), 10)
	require.Less(t, len(carriers), len(val), "the set must hold single-item baskets")
	w := make([]float64, len(carriers))
	for i := range w {
		w[i] = 1 / float64(len(val))
	}
	want := nextBrute(p, carriers, ts, negs, beta, w, eps)
	got, err := nextValuePerBasket(context.Background(), p, val, 8, beta, key, eps, seed)
	require.NoError(t, err)
	require.InDelta(t, want, got, 1e-9*math.Abs(want))

	// More single-item baskets after the others dilute the figure.
	more := append(val[:len(val):len(val)], [][]int{{1}, {2}, {3}, {5}}...)
	diluted, err := nextValuePerBasket(context.Background(), p, more, 8, beta, key, eps, seed)
	require.NoError(t, err)
	require.InDelta(t, got*float64(len(val))/float64(len(more)), diluted, 1e-12*math.Abs(got))
	none, err := nextValuePerBasket(context.Background(), p, [][]int{{1}, {2}}, 8, beta, key, eps, seed)
	require.NoError(t, err)
	require.Zero(t, none)
}
