package learn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/eval"
	"github.com/ndpp-go/ndpp/internal/ndpptest"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// Tolerances of the online learner's checks.
const (
	gramTol    = 1e-9 // relative drift of the incremental Gram matrix
	stepTol    = 1e-6 // relative error of one SGD step against lr·(FD gradient)
	normLogTol = 1e-9 // relative, normaliser log-det against ndpp's
)

// sliceSource is baskets.SliceSource (tests name their baskets "baskets").
func sliceSource(b [][]int) baskets.Source { return baskets.SliceSource(b) }

// plantedBaskets is ndpptest.PlantedBaskets: items in groups of 4, a
// basket 1–3 items of one group, plus popular item 0 now and then. A
// learner should beat its initialisation on held-out data.
var plantedBaskets = ndpptest.PlantedBaskets

func TestOnlineCheckpointResumeIsIdentical(t *testing.T) {
	// With 24 items most snapshots recompute G from all columns; with 200
	// they update it by the few changed ones, from the values the
	// checkpoint keeps.
	for _, n := range []int{24, 200} {
		baskets := plantedBaskets(n, 300, 5)
		for _, norm := range []Normalizer{NormBasket, NormExact} {
			for _, optim := range []Optimizer{Adam, SGD} {
				for _, shared := range []bool{false, true} {
					if n > 24 && norm == NormBasket {
						continue
					}
					name := fmt.Sprintf("n=%d/norm=%v/opt=%v/shared=%v", n, norm, optim, shared)
					t.Run(name, func(t *testing.T) {
						// A lag shorter than the period with Adam.
						lag := 7
						if optim == Adam {
							lag = 3
						}
						testResumeIsIdentical(t, baskets, OnlineOptions{D: 4, Shared: shared, Seed: 3, Optimizer: optim,
							Normalizer: norm, CEvery: 3, Alpha: 0.01, Beta: 0.02, Schedule: Schedule{FactorEvery: 7, Lag: lag, RefreshEvery: 40}})
					})
				}
			}
		}
	}
}

// TestOnlineCheckpointResumeAcrossChunks resumes a learner whose rows
// span several chunks of its per-item state (itemRows), reserved (N) and
// grown one item at a time.
func TestOnlineCheckpointResumeAcrossChunks(t *testing.T) {
	n := 2*itemChunk + 300
	baskets := benchBaskets(n, 3000, 7) // about 5,000 distinct items
	for _, reserved := range []int{0, n} {
		t.Run(fmt.Sprintf("N=%d", reserved), func(t *testing.T) {
			opt := OnlineOptions{D: 4, N: reserved, Seed: 5, CEvery: 3, Schedule: Schedule{FactorEvery: 7, Lag: 3, RefreshEvery: 40}}
			if reserved == 0 {
				o, err := NewOnline(opt)
				require.NoError(t, err)
				_, err = o.Run(context.Background(), sliceSource(baskets), OnlineRun{})
				require.NoError(t, err)
				require.Greater(t, o.N(), itemChunk, "rows grown past the first chunk")
			}
			testResumeIsIdentical(t, baskets, opt)
		})
	}
}

func testResumeIsIdentical(t *testing.T, baskets [][]int, opt OnlineOptions) {
	whole, err := TrainOnline(context.Background(), sliceSource(baskets), opt, OnlineRun{})
	require.NoError(t, err)
	for _, cut := range []int64{1, 7, 123, 299} {
		o, err := NewOnline(opt)
		require.NoError(t, err)
		_, err = o.Run(context.Background(), sliceSource(baskets), OnlineRun{MaxBaskets: cut})
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "ck.bin")
		require.NoError(t, o.SaveFile(path))
		r, err := LoadOnlineFile(path)
		require.NoError(t, err)
		require.Equal(t, cut, r.Position())
		src := sliceSource(baskets)
		require.NoError(t, SkipBaskets(src, r.Position()))
		res, err := r.Run(context.Background(), src, OnlineRun{})
		require.NoError(t, err)
		require.Equal(t, whole.Params.V, res.Params.V, "cut %d", cut)
		require.Equal(t, whole.Params.B, res.Params.B, "cut %d", cut)
		require.Equal(t, whole.Params.D, res.Params.D, "cut %d", cut)
	}
}

// TestOnlineSGDStepIsTheGradient checks one SGD step against lr·∇ψ with ψ
// computed directly (gonum determinants) and differentiated by finite
// differences, including the regulariser with the occurrence counts. For the
// basket normaliser ψ = log det(L_S+εI) − log det(I+L_S) − R; for the exact
// one (refactored at every step) the columns of item i get the full
// normaliser's gradient weighted by t/μᵢ and C gets it unweighted.
func TestOnlineSGDStepIsTheGradient(t *testing.T) {
	for seed := uint64(1); seed <= 16; seed++ {
		shared := seed%2 == 0
		norm := NormBasket
		if seed%8 > 4 || seed%8 == 0 {
			norm = NormExact
		}
		diag := seed > 8
		const lr, diagLR = 1e-3, 3e-3
		const alpha, beta = 0.3, 0.7
		opt := OnlineOptions{D: 3, N: 7, Shared: shared, Seed: seed, Optimizer: SGD, LR: lr, CEvery: 1,
			Alpha: alpha, Beta: beta, Init: InitOptions{Scale: 0.5, CScale: 0.5, Share: -1}, Normalizer: norm, LowRank: !diag, DiagLR: diagLR, Schedule: Schedule{FactorEvery: 1},
			NextWeight: -1} // the basket term's step (TestOnlineNextTermIsTheOfflineTerm: the next-item term's)
		o, err := NewOnline(opt)
		require.NoError(t, err)
		// Warm up so that counts μᵢ differ.
		for _, s := range [][]int{{0, 1}, {1}, {2, 1, 5}} {
			require.NoError(t, o.Observe(s))
		}
		mu := o.st.scalars(stMu)
		basket := []int{1, 4, 2}
		for _, i := range basket {
			mu[i]++
		}
		pos := float64(o.Position() + 1)
		// The parameters the step is taken at: a copy of the learner with
		// the basket begun (counts, first sight of item 4, log δ now).
		var ck bytes.Buffer
		require.NoError(t, o.Save(&ck))
		at, err := LoadOnline(&ck)
		require.NoError(t, err)
		at.beginBasket(basket)
		before := at.p.Clone()
		var phi0 []float64
		if diag {
			phi0 = at.st.scalars(stPhi)
		}
		require.NoError(t, o.Observe(basket))
		after := o.p.Clone()
		eps := opt.withDefaults().Eps
		// local: basket term and regulariser; full: − log det(I + L).
		local := func(p *Params) float64 {
			f := directObjective(p, [][]int{basket}, objSpec{eps: eps, restricted: norm == NormBasket})
			d := p.Dim
			for _, i := range basket {
				f -= alpha * blas.Dot(p.V[i*d:(i+1)*d], p.V[i*d:(i+1)*d]) / mu[i]
				if p.B != nil {
					f -= beta * blas.Dot(p.B[i*d:(i+1)*d], p.B[i*d:(i+1)*d]) / mu[i]
				}
			}
			return f
		}
		full := func(p *Params) float64 {
			if norm == NormBasket {
				return 0
			}
			return directObjective(p, nil, objSpec{full: true})
		}
		deriv := func(x []float64, i int, f func(*Params) float64) float64 {
			orig := x[i]
			at := func(h float64) float64 { x[i] = orig + h; defer func() { x[i] = orig }(); return f(before) }
			return (-at(2*fdStep) + 8*at(fdStep) - 8*at(-fdStep) + at(-2*fdStep)) / (12 * fdStep)
		}
		check := func(name string, x, xAfter []float64, rowWeight func(idx int) float64) {
			maxErr, scale := 0.0, 1e-12
			for i := range x {
				want := deriv(x, i, local) + rowWeight(i)*deriv(x, i, full)
				if w := rowWeight(i); w == 0 {
					want = 0 // columns outside the basket do not move
				}
				got := (xAfter[i] - x[i]) / lr
				maxErr = math.Max(maxErr, math.Abs(got-want))
				scale = math.Max(scale, math.Abs(want))
			}
			require.LessOrEqual(t, maxErr/scale, stepTol, "seed %d %s", seed, name)
		}
		row := func(idx int) float64 {
			if i := idx / before.Dim; slices.Contains(basket, i) {
				return pos / mu[i]
			}
			return 0
		}
		check("V", before.V, after.V, row)
		if !shared {
			check("B", before.B, after.B, row)
		}
		check("D", before.D, after.D, func(int) float64 { return 1 })
		if diag {
			// φᵢ moves by DiagLR times the derivative in θᵢ = log rᵢ + φᵢ.
			maxErr, scale := 0.0, 1e-12
			for i := range before.Theta {
				want := 0.0
				if slices.Contains(basket, i) {
					want = deriv(before.Theta, i, local) + pos/mu[i]*deriv(before.Theta, i, full)
				}
				got := (o.phi(i) - phi0[i]) / diagLR
				maxErr = math.Max(maxErr, math.Abs(got-want))
				scale = math.Max(scale, math.Abs(want))
			}
			require.LessOrEqual(t, maxErr/scale, stepTol, "seed %d Theta", seed)
		}
	}
}

func TestOnlineExactNormalizerTracksGram(t *testing.T) {
	// FactorEvery 1 updates G by rank-1 steps of the few changed columns;
	// 20 changes enough columns between factorisations to recompute G.
	for _, fe := range []int{1, 20} {
		for _, lowRank := range []bool{false, true} {
			testTracksGram(t, fe, lowRank)
		}
	}
}

func testTracksGram(t *testing.T, factorEvery int, lowRank bool) {
	baskets := plantedBaskets(40, 400, 9)
	o, err := NewOnline(OnlineOptions{D: 5, Normalizer: NormExact, LR: 0.02, LowRank: lowRank, Schedule: Schedule{FactorEvery: factorEvery, RefreshEvery: 1 << 30}})
	require.NoError(t, err)
	for bi, s := range baskets {
		require.NoError(t, o.Observe(s))
		if bi%97 != 0 {
			continue
		}
		requireGramTracks(t, o, fmt.Sprintf("basket %d", bi))
	}
}

// requireGramTracks brings the exact normaliser's G up to date (a
// snapshot and its job, run at once) and compares it with a fresh Gram
// matrix of the parameters, and its log-determinant with ndpp's
// normaliser.
func requireGramTracks(t *testing.T, o *Online, where string) {
	t.Helper()
	o.np.State() // the job in flight, if any, finishes
	o.snapshot(true)
	st := o.np.State()
	require.True(t, st.PendOK, where)
	fresh := newNormWork(o.p.Dim)
	fresh.gram(o.p)
	scale := 0.0
	for _, x := range fresh.g {
		scale = math.Max(scale, math.Abs(x))
	}
	for i := range fresh.g {
		require.InDelta(t, fresh.g[i], st.Gram[i], gramTol*scale, "%s: G entry %d", where, i)
	}
	m, err := o.Model()
	require.NoError(t, err)
	// The Gram matrix's share of log det(I + L): the diagonal's terms
	// log(1 + δᵢ) are separate (see Params).
	want := m.LogNormalizer()
	for i := range m.N() {
		want -= math.Log1p(m.ItemDiag(i))
	}
	require.InDelta(t, want, st.PendLogDet, normLogTol*math.Max(1, math.Abs(want)), where)
	require.True(t, o.applyJob(), where) // in effect now: no result pending
}

func TestOnlineTouchesOnlyBasketColumns(t *testing.T) {
	for _, norm := range []Normalizer{NormBasket, NormExact} {
		o, err := NewOnline(OnlineOptions{D: 4, N: 10, Normalizer: norm, CEvery: 2})
		require.NoError(t, err)
		before := o.Params()
		require.NoError(t, o.Observe([]int{3, 7}))
		after := o.Params()
		d := 4
		for i := 0; i < 10; i++ {
			same := i != 3 && i != 7
			rowEq := func(a, b []float64) bool {
				for k := 0; k < d; k++ {
					if a[i*d+k] != b[i*d+k] {
						return false
					}
				}
				return true
			}
			require.Equal(t, same, rowEq(before.V, after.V), "V row %d", i)
			require.Equal(t, same, rowEq(before.B, after.B), "B row %d", i)
		}
		require.Equal(t, before.D, after.D, "C steps every 2 baskets")
		require.NoError(t, o.Observe([]int{1}))
		require.NotEqual(t, before.D, o.Params().D)
		m, err := o.Model()
		require.NoError(t, err)
		require.Equal(t, 10, m.N())
	}
}

func TestOnlineGrowsAndRejectsBadBaskets(t *testing.T) {
	o, err := NewOnline(OnlineOptions{D: 3, LowRank: true})
	require.NoError(t, err)
	_, err = o.Model()
	require.Error(t, err, "no items yet")
	// The catalogue grows with the distinct items seen, in order of first
	// appearance, not with the largest id.
	require.NoError(t, o.Observe([]int{4, 1}))
	require.NoError(t, o.Observe([]int{1_000_000_000, 4}))
	require.Equal(t, 3, o.N())
	require.Equal(t, []int{4, 1, 1_000_000_000}, o.IDs())
	m, err := o.Model()
	require.NoError(t, err)
	require.Equal(t, []int64{4, 1, 1_000_000_000}, m.IDs(), "the model records its rows' ids")
	_, err = o.ModelOver(10)
	require.ErrorContains(t, err, "item ids up to 1000000000 were seen")
	// An item starts where a learner that reserved its row starts it: its
	// vectors come from the seed and its id.
	fresh, err := NewOnline(OnlineOptions{D: 3, N: 9, LowRank: true})
	require.NoError(t, err)
	r, ok := o.rowFor(8) // the row, before any step on it
	require.True(t, ok)
	require.Equal(t, 3, r)
	require.Equal(t, fresh.p.V[8*3:9*3], o.p.V[3*3:4*3])
	// Ids that follow the rows keep rows equal to ids, and the model
	// records no ids then.
	dense, err := NewOnline(OnlineOptions{D: 3})
	require.NoError(t, err)
	for _, s := range [][]int{{0}, {1, 2}, {3, 0}} {
		require.NoError(t, dense.Observe(s))
	}
	m, err = dense.Model()
	require.NoError(t, err)
	require.Nil(t, m.IDs())
	// ModelOver: the ids as rows, an unseen item with zero vectors and the
	// independent-items model's rate of an unseen item.
	over, err := dense.ModelOver(6)
	require.NoError(t, err)
	require.Equal(t, 6, over.N())
	require.Equal(t, make([]float64, 3), over.ItemV(5))
	require.InDelta(t, 1/float64(dense.Position()+1), over.ItemDiag(5), 1e-15)
	require.Equal(t, m.ItemV(2), over.ItemV(2))
	for _, bad := range [][]int{{}, {1, 1}, {-1}, {2, 3, 2}} {
		pos := o.Position()
		require.Error(t, o.Observe(bad), "%v", bad)
		require.Equal(t, pos, o.Position())
	}
	_, err = NewOnline(OnlineOptions{LR: -1})
	require.Error(t, err)
	_, err = NewOnline(OnlineOptions{Alpha: math.NaN()})
	require.Error(t, err)
	_, err = NewOnline(OnlineOptions{Schedule: Schedule{FactorEvery: 10, Lag: 11}})
	require.ErrorContains(t, err, "lag 11")
	_, err = NewOnline(OnlineOptions{Schedule: Schedule{Lag: -1}})
	require.ErrorContains(t, err, "lag -1")
	o, err = NewOnline(OnlineOptions{Schedule: Schedule{FactorEvery: 40}})
	require.NoError(t, err)
	require.Equal(t, 40, o.Options().Schedule.Lag, "the default lag is at most FactorEvery")
	o, err = NewOnline(OnlineOptions{})
	require.NoError(t, err)
	require.Equal(t, 25, o.Options().Schedule.FactorEvery)
	require.Equal(t, 25, o.Options().Schedule.Lag)
	_, err = TrainOnline(context.Background(), sliceSource(nil), OnlineOptions{}, OnlineRun{})
	require.Error(t, err)
}

// TestOnlineLearns checks that one pass beats the initial model on
// held-out data: with the exact normaliser the likelihood rises by a clear
// margin; with the paper's basket-restricted normaliser the likelihood is
// not controlled (nothing penalises the growth of log det(I + L)), so only
// the next-item ranking is required to improve, and the exact normaliser
// must give the better likelihood.
func TestOnlineLearns(t *testing.T) {
	const minGain = 0.5    // nats per basket
	const minMPRGain = 5.0 // percentile points
	data := plantedBaskets(40, 4000, 21)
	train, test := data[:3600], data[3600:]
	ll, mpr := map[string]float64{}, map[string]float64{}
	for _, norm := range []Normalizer{NormBasket, NormExact} {
		for _, optim := range []Optimizer{Adam, SGD} {
			opt := OnlineOptions{D: 6, N: 40, Seed: 2, Normalizer: norm, Optimizer: optim}
			o, err := NewOnline(opt)
			require.NoError(t, err)
			m0, err := o.Model()
			require.NoError(t, err)
			e0, err := eval.Evaluate(context.Background(), m0, test, eval.Options{})
			require.NoError(t, err)
			res, err := o.Run(context.Background(), sliceSource(train), OnlineRun{TraceSet: test, TraceEvery: 1200})
			require.NoError(t, err)
			e1, err := eval.Evaluate(context.Background(), res.Model, test, eval.Options{}) // the trace's convention (ε)
			require.NoError(t, err)
			name := fmt.Sprintf("norm=%v opt=%v", norm, optim)
			if norm == NormExact {
				require.Greater(t, e1.TestLLEps, e0.TestLLEps+minGain, "%s: LL %.3f → %.3f", name, e0.TestLLEps, e1.TestLLEps)
			}
			require.Greater(t, e1.MPRMicro, e0.MPRMicro+minMPRGain, "%s: MPR %.1f → %.1f", name, e0.MPRMicro, e1.MPRMicro)
			require.Len(t, res.Trace, 3)
			require.InDelta(t, -e1.TestLLEps, res.Trace[2].NLL, 1e-9)
			ll[fmt.Sprintf("%v%v", norm, optim)] = e1.TestLLEps
			mpr[fmt.Sprintf("%v%v", norm, optim)] = e1.MPRMicro
		}
	}
	require.Greater(t, ll["exactadam"], ll["basketadam"])
	// The default learner (diagonal, exact normaliser, Adam) beats the
	// simplest models that could win.
	base, err := eval.IndependentBaseline(context.Background(), train, test, 40, eval.Options{})
	require.NoError(t, err)
	require.Greater(t, ll["exactadam"], base.TestLLEps, "LL above independent items")
	require.Greater(t, mpr["exactadam"], base.MPRMicro, "MPR above popularity")
	require.Greater(t, ll["exactsgd"], ll["basketsgd"])
}

// TestOnlinePipelineTakesSnapshotFactorisation checks the exact normaliser's
// schedule against direct computations: snapshots are taken at baskets 1,
// F+1, 2F+1, …; the first result takes effect at once, the others F baskets
// after their snapshot (at once for F = 1); the factorisation in effect is
// that of the snapshot's parameters; and every stored K zᵢ of the active
// result is K times zᵢ halfway to the result's position (precomputed for
// the changed columns) or just before one of the baskets since the result
// took effect (computed on demand).
func TestOnlinePipelineTakesSnapshotFactorisation(t *testing.T) {
	for _, tc := range []struct{ n, fe, lag, refresh int }{{12, 5, 5, 1000}, {60, 5, 5, 1000}, {60, 4, 4, 23},
		{30, 1, 0, 1000}, {60, 8, 3, 1000}, {12, 6, 1, 1000}, {60, 9, 4, 23}} {
		t.Run(fmt.Sprintf("n=%d/factor=%d/lag=%d/refresh=%d", tc.n, tc.fe, tc.lag, tc.refresh), func(t *testing.T) {
			d, m := 4, 8
			baskets := plantedBaskets(tc.n, 120, uint64(tc.n+tc.fe))
			o, err := NewOnline(OnlineOptions{D: d, N: tc.n, Seed: 2,
				CEvery: 3, LR: 0.02, Init: InitOptions{CScale: 0.5}, LowRank: true, Schedule: Schedule{FactorEvery: tc.fe, Lag: tc.lag, RefreshEvery: tc.refresh}})
			require.NoError(t, err)
			lag := int64(tc.lag)
			fe := int64(tc.fe)
			var before []*Params // before[q−1]: parameters before basket q
			var src, since int64 // snapshot in effect, basket it took effect at
			gen := o.np.Gen()
			for bi, s := range baskets {
				pos := int64(bi + 1)
				before = append(before, o.Params())
				require.NoError(t, o.Observe(s))
				// Expected schedule.
				wantSrc := int64(1)
				for q := int64(1); q <= pos; q += fe {
					if q == 1 || q+lag <= pos {
						wantSrc = q
					}
				}
				if o.np.Gen() != gen {
					gen, since = o.np.Gen(), pos
				}
				if wantSrc != src {
					require.Equal(t, pos, since, "basket %d: result of snapshot %d took effect elsewhere", pos, wantSrc)
					src = wantSrc
				}
				ps := before[src-1]
				ref := newNormWork(d)
				ref.gram(ps)
				require.True(t, ref.factor(ps.CInto(nil)))
				require.LessOrEqual(t, maxRelDiff(ref.k, o.np.K()), fastPieceTol, "basket %d: K from snapshot %d", pos, src)
				require.LessOrEqual(t, maxRelDiff(ref.gc, o.np.GC()), fastPieceTol, "basket %d: dC", pos)
				mod, err := ps.Model()
				require.NoError(t, err)
				want := mod.LogNormalizer()
				require.InDelta(t, want, o.np.LogDet(), normLogTol*math.Max(1, math.Abs(want)), "basket %d", pos)
				z, kz := make([]float64, m), make([]float64, m)
				for i := 0; i < tc.n; i++ {
					if !o.kzCurrent(i) {
						continue
					}
					got := o.kzRow(i)
					// Computed when the item first occurred since the
					// result took effect, from its column then.
					match := false
					for _, p := range before[since-1:] {
						copy(z[:d], p.V[i*d:(i+1)*d])
						copy(z[d:], p.brows()[i*d:(i+1)*d])
						for r := range kz {
							kz[r] = blas.Dot(ref.k[r*m:(r+1)*m], z)
						}
						match = match || maxRelDiff(kz, got) <= fastPieceTol
					}
					require.True(t, match, "basket %d item %d: K zᵢ not from a column since the result took effect", pos, i)
				}
			}
		})
	}
}

// TestOnlineIndependentOfScheduling trains with one and with several
// processors: the background factorisation takes effect at fixed positions,
// so the parameters are identical.
func TestOnlineIndependentOfScheduling(t *testing.T) {
	baskets := plantedBaskets(30, 400, 11)
	var results []*Params
	for _, procs := range []int{1, 2, 4} {
		prev := runtime.GOMAXPROCS(procs)
		res, err := TrainOnline(context.Background(), sliceSource(baskets), OnlineOptions{D: 5, Seed: 4, Schedule: Schedule{FactorEvery: 6, Lag: 4}}, OnlineRun{})
		runtime.GOMAXPROCS(prev)
		require.NoError(t, err)
		results = append(results, res.Params)
	}
	for _, p := range results[1:] {
		require.Equal(t, results[0].V, p.V)
		require.Equal(t, results[0].B, p.B)
		require.Equal(t, results[0].D, p.D)
	}
}

// TestOnlineDivergenceStopsTheLearner drives learners to blown-up
// parameters — an absurd SGD learning rate, and a column set to 1e300 (L_S
// overflows although every parameter is finite) — and checks the
// ErrDiverged contract: the step reports it, later baskets are refused, and
// saving fails without replacing the checkpoint on disk.
func TestOnlineDivergenceStopsTheLearner(t *testing.T) {
	for _, norm := range []Normalizer{NormExact, NormBasket} {
		for _, optz := range []Optimizer{Adam, SGD} {
			for _, how := range []string{"lr", "column"} {
				if how == "lr" && optz == Adam {
					continue // Adam's steps are lr-sized: 1e300 per step stays finite
				}
				lr := 0.0
				if how == "lr" {
					lr = 1e300
				}
				o, err := NewOnline(OnlineOptions{D: 3, N: 4, Seed: 1, Normalizer: norm, Optimizer: optz, LR: lr})
				require.NoError(t, err)
				path := filepath.Join(t.TempDir(), "ck.bin")
				require.NoError(t, o.SaveFile(path))
				var stepErr error
				for i := 0; i < 50 && stepErr == nil; i++ {
					if how == "column" && i == 10 {
						for j := 0; j < 3; j++ {
							o.p.V[j] = 1e300
						}
					}
					stepErr = o.Observe([]int{i % 4, (i + 1) % 4})
				}
				require.ErrorIs(t, stepErr, ErrDiverged, "%v %v %s: no divergence", norm, optz, how)
				require.ErrorIs(t, o.Observe([]int{0}), ErrDiverged, "%v %v %s: basket after divergence", norm, optz, how)
				require.ErrorIs(t, o.SaveFile(path), ErrDiverged)
				var buf bytes.Buffer
				require.ErrorIs(t, o.Save(&buf), ErrDiverged)
				require.Zero(t, buf.Len(), "Save wrote a diverged learner")
				back, err := LoadOnlineFile(path)
				require.NoError(t, err, "the checkpoint on disk was replaced")
				require.Zero(t, back.Position())
			}
		}
	}
}

// failingSource yields n baskets, then an error.
type failingSource struct {
	b [][]int
	n int
}

func (f *failingSource) Next() ([]int, error) {
	if f.n == 0 {
		return nil, errors.New("read failed")
	}
	f.n--
	s := f.b[0]
	f.b = f.b[1:]
	return s, nil
}

// TestOnlineRunLeavesNoJobRunning stops Run between a snapshot and its
// result, by MaxBaskets and by a failing source: no normaliser job may
// still run after it returns, and the pending result takes effect at its
// position when the learner goes on.
func TestOnlineRunLeavesNoJobRunning(t *testing.T) {
	baskets := plantedBaskets(30, 80, 4)
	o, err := NewOnline(OnlineOptions{D: 4, Seed: 2, Schedule: Schedule{FactorEvery: 10, Lag: 8}})
	require.NoError(t, err)
	_, err = o.Run(context.Background(), sliceSource(baskets), OnlineRun{MaxBaskets: 23})
	require.NoError(t, err)
	require.False(t, o.np.Running())
	require.Equal(t, int64(29), o.np.SwapAt(), "a result pending")
	_, err = o.Run(context.Background(), &failingSource{b: baskets[23:], n: 10}, OnlineRun{})
	require.ErrorContains(t, err, "read failed")
	require.False(t, o.np.Running())
	require.Equal(t, int64(33), o.Position())
	require.Equal(t, int64(39), o.np.SwapAt())
	// Going on gives what one uninterrupted run gives.
	src := sliceSource(baskets)
	require.NoError(t, SkipBaskets(src, 33))
	res, err := o.Run(context.Background(), src, OnlineRun{})
	require.NoError(t, err)
	whole, err := TrainOnline(context.Background(), sliceSource(baskets), OnlineOptions{D: 4, Seed: 2, Schedule: Schedule{FactorEvery: 10, Lag: 8}}, OnlineRun{})
	require.NoError(t, err)
	require.True(t, sameBits(whole.Params.V, res.Params.V))
	require.True(t, sameBits(whole.Params.D, res.Params.D))
}

// TestOnlineRedoesFailedJob makes a finished job report a singular A (as
// rounding drift of G could) and checks the redo at the result's position:
// the factorisation is that of the parameters there, every column's
// snapshot value is current and none is pending, and G keeps tracking the
// parameters afterwards.
func TestOnlineRedoesFailedJob(t *testing.T) {
	baskets := plantedBaskets(60, 120, 8)
	o, err := NewOnline(OnlineOptions{D: 4, N: 60, Seed: 3, LR: 0.02, Init: InitOptions{CScale: 0.5}, LowRank: true, Schedule: Schedule{FactorEvery: 10, Lag: 6}})
	require.NoError(t, err)
	_, err = o.Run(context.Background(), sliceSource(baskets[:44]), OnlineRun{}) // snapshot at 41, result at 47
	require.NoError(t, err)
	require.Equal(t, int64(47), o.np.SwapAt())
	o.np.FailPending()
	_, err = o.Run(context.Background(), sliceSource(baskets[44:46]), OnlineRun{})
	require.NoError(t, err)
	before := o.Params() // the parameters basket 47 starts from
	gen := o.np.Gen()
	require.NoError(t, o.Observe(baskets[46]))
	require.Equal(t, gen+1, o.np.Gen())
	ref := newNormWork(4)
	ref.gram(before)
	require.True(t, ref.factor(before.CInto(nil)))
	require.LessOrEqual(t, maxRelDiff(ref.k, o.np.K()), fastPieceTol, "K of the parameters at the redo")
	// Only basket 47's items changed since the redo.
	require.ElementsMatch(t, baskets[46], o.dirtyList)
	for i := 0; i < before.N; i++ {
		z := make([]float64, 8)
		zRow(z, before, i)
		require.Equal(t, z, o.np.Column(i), "snapshot value of column %d", i)
	}
	_, err = o.Run(context.Background(), sliceSource(baskets[47:]), OnlineRun{})
	require.NoError(t, err)
	requireGramTracks(t, o, "after the redo")
}

// TestOnlineRateScaleScalesItemSteps: with a diagonal and Adam, an item's
// embedding step is Adam's times min(1, √(δᵢ/RateScale)): two copies of a
// learner, one with RateScale < 0 (no scaling), take the same step on the
// same basket up to that factor.
func TestOnlineRateScaleScalesItemSteps(t *testing.T) {
	o, err := NewOnline(OnlineOptions{D: 3, Seed: 5, RateScale: -1, Init: InitOptions{Share: -1, Scale: 0.3}})
	require.NoError(t, err)
	for _, s := range plantedBaskets(12, 40, 3) {
		require.NoError(t, o.Observe(s))
	}
	var ck bytes.Buffer
	require.NoError(t, o.Save(&ck))
	scaled := 0
	for _, rs := range []float64{0.1, 10, 1e4} {
		a, err := LoadOnline(bytes.NewReader(ck.Bytes()))
		require.NoError(t, err)
		b, err := LoadOnline(bytes.NewReader(ck.Bytes()))
		require.NoError(t, err)
		a.opt.RateScale = rs
		v0 := slices.Clone(a.p.V)
		basket := []int{0, 4, 8}
		require.NoError(t, a.Observe(basket))
		require.NoError(t, b.Observe(basket))
		d := 3
		for _, id := range basket {
			i, _ := a.rowFor(id)
			f := math.Min(1, math.Sqrt(math.Exp(a.p.Theta[i])/rs))
			if f < 1 {
				scaled++
			}
			for k := i * d; k < (i+1)*d; k++ {
				want := f * (b.p.V[k] - v0[k])
				require.InDelta(t, want, a.p.V[k]-v0[k], 1e-12*math.Max(1e-3, math.Abs(want)), "rate scale %g item %d", rs, id)
			}
		}
	}
	require.Positive(t, scaled, "some steps were scaled down")
}
