package stream

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
)

// refLS is LocalSearch's outcome computed directly.
type refLS struct {
	sol            []int
	evals          int64
	adds           int64
	singles, pairs int64
	passes, rounds int
	capped         bool
	pool           []int // the last pair round's pool, best first
}

// refLocalSearch is LocalSearch with a fresh determinant per value (sets
// are position-ordered slices changed in place, as the oracle does). pool
// is the resolved pool size (0: no pair swaps).
func refLocalSearch(m *ndpp.Model, k int, fixed, start, cands []int, eps float64, pool int, by PoolRank, maxPasses int) refLS {
	var out refLS
	le := math.Log1p(eps)
	nf := len(fixed)
	S := append(slices.Clone(fixed), start...)
	inS := func(t int) bool { return slices.Contains(S, t) }
	for len(S) < nf+k {
		best, bv := -1, ndpp.ZeroValue
		for _, t := range cands {
			if inS(t) {
				continue
			}
			out.evals++
			if v := direct(m, append(slices.Clone(S), t)); best < 0 || v.Greater(bv) {
				best, bv = t, v
			}
		}
		S = append(S, best)
		out.adds++
	}
	type scored struct {
		v    ndpp.Value
		c, t int
	}
	for {
		if out.passes == maxPasses {
			out.capped = true
			break
		}
		out.passes++
		changed := false
		var ranked []scored
		for c, t := range cands {
			if inS(t) {
				continue
			}
			fv := direct(m, S)
			bv, bj := ndpp.ZeroValue, -1
			out.evals += int64(nf) // the oracle prices the fixed positions too
			for j := nf; j < len(S); j++ {
				out.evals++
				if v := direct(m, with(S, j, t)); bj < 0 || v.Greater(bv) {
					bv, bj = v, j
				}
			}
			if pool > 0 && !changed {
				score := bv
				if by == PoolByGain {
					out.evals++
					score = direct(m, append(slices.Clone(S), t))
				}
				ranked = append(ranked, scored{score, c, t})
			}
			if beats(bv, fv, le) {
				S[bj] = t
				out.singles++
				changed = true
			}
		}
		if changed {
			continue
		}
		if pool == 0 {
			break
		}
		out.rounds++
		slices.SortStableFunc(ranked, func(a, b scored) int {
			switch {
			case a.v.Greater(b.v):
				return -1
			case b.v.Greater(a.v):
				return 1
			}
			return a.c - b.c
		})
		ranked = ranked[:min(pool, len(ranked))]
		out.pool = out.pool[:0]
		for _, r := range ranked {
			out.pool = append(out.pool, r.t)
		}
		fv := direct(m, S)
		bv := ndpp.ZeroValue
		bx, by2, ba, bb := -1, -1, -1, -1
		for x := range ranked {
			for y := x + 1; y < len(ranked); y++ {
				for a := nf; a < nf+k; a++ {
					for b := a + 1; b < nf+k; b++ {
						out.evals++
						if v := direct(m, with(with(S, a, ranked[x].t), b, ranked[y].t)); v.Greater(bv) {
							bv, bx, by2, ba, bb = v, x, y, a, b
						}
					}
				}
			}
		}
		if bx < 0 || !beats(bv, fv, le) {
			break
		}
		S[ba], S[bb] = ranked[bx].t, ranked[by2].t
		out.pairs++
	}
	out.sol = S[nf:]
	return out
}

// withDiagScale returns m with a random diagonal δᵢ = scale·e^{N(0,1)}.
func withDiagScale(m *ndpp.Model, seed uint64, scale float64) *ndpp.Model {
	rng := rand.New(rand.NewPCG(seed, 99))
	delta := make([]float64, m.N())
	for i := range delta {
		delta[i] = scale * math.Exp(rng.NormFloat64())
	}
	v, b, _, c := m.Rows()
	if m.Shared() {
		b = nil
	}
	mm, err := ndpp.NewFromRows(m.N(), m.D(), v, b, c, ndpp.WithDiag(delta))
	if err != nil {
		panic(err)
	}
	return mm
}

// lsCase is one randomized LocalSearch configuration.
type lsCase struct {
	k     int
	start []int
	opt   LocalSearchOptions
}

// randomLSCase draws k, a start set (greedy's, random, partial or empty),
// candidates and options.
func randomLSCase(m *ndpp.Model, seed uint64) lsCase {
	rng := rand.New(rand.NewPCG(seed, 13))
	n := m.N()
	k := 1 + rng.IntN(min(m.MaxRank(), 5, n-1))
	var cands []int
	if rng.IntN(3) == 0 {
		cands = RandomOrder(n, seed)[:k+1+rng.IntN(n-k)]
	}
	all := cands
	if all == nil {
		all = IDOrder(n)
	}
	var start []int
	switch rng.IntN(4) {
	case 0:
		g, err := OfflineGreedy(context.Background(), m, k, GreedyOptions{Items: cands})
		if err != nil {
			panic(err)
		}
		start = g.Solution
	case 1:
		p := rng.Perm(len(all))[:k]
		for _, i := range p {
			start = append(start, all[i])
		}
	case 2:
		p := rng.Perm(len(all))[:rng.IntN(k+1)]
		for _, i := range p {
			start = append(start, all[i])
		}
	}
	opt := LocalSearchOptions{
		Eps:         []float64{0, 1e-9, 0.05, 1}[rng.IntN(4)],
		Pool:        []int{0, -1, 2, 3, 1}[rng.IntN(5)],
		PoolBy:      PoolRank(rng.IntN(2)),
		SinglesOnly: rng.IntN(5) == 0,
		Items:       cands,
		OracleOnly:  rng.IntN(3) == 0,
	}
	// Fixed items (conditioning) in a third of the cases where the rank
	// leaves room: outside the start set, with det L_F ≠ 0 and at least
	// k + 1 candidates outside F.
	if nf := 1 + rng.IntN(2); rng.IntN(3) == 0 && k+nf <= min(m.MaxRank(), n) {
		var fixed []int
		for _, t := range rng.Perm(n) {
			if len(fixed) < nf && !slices.Contains(start, t) {
				fixed = append(fixed, t)
			}
		}
		free := 0
		for _, t := range all {
			if !slices.Contains(fixed, t) {
				free++
			}
		}
		if len(fixed) == nf && free > k && !direct(m, fixed).Zero {
			opt.Fixed = fixed
		}
	}
	return lsCase{k: k, start: start, opt: opt}
}

// checkAgainstRef runs LocalSearch on an oracle and compares everything
// with the direct implementation.
func checkAgainstRef(t *testing.T, m *ndpp.Model, ok oracleKind, c lsCase, label string) {
	t.Helper()
	eps := c.opt.Eps
	if eps == 0 {
		eps = DefaultLocalSearchEps
	}
	all := c.opt.Items
	if all == nil {
		all = IDOrder(m.N())
	}
	free := len(all)
	for _, f := range c.opt.Fixed {
		if slices.Contains(all, f) {
			free--
		}
	}
	want := refLocalSearch(m, c.k, c.opt.Fixed, c.start, all, eps, resolvePool(c.opt, c.k, free), c.opt.PoolBy, DefaultMaxPasses)
	o, err := ok.new(m, c.k+len(c.opt.Fixed))
	require.NoError(t, err, label)
	res, err := LocalSearch(context.Background(), o, c.k, c.start, c.opt)
	require.NoError(t, err, label)
	require.Equal(t, want.sol, res.Solution, "%s: solution (direct, oracle)", label)
	got := [6]int64{res.Evals, res.Adds, res.SingleSwaps, res.PairSwaps, int64(res.Passes), int64(res.PairRounds)}
	exp := [6]int64{want.evals, want.adds, want.singles, want.pairs, int64(want.passes), int64(want.rounds)}
	require.Empty(t, cmp.Diff(exp, got), "%s: evals, adds, singles, pairs, passes, rounds (-direct +oracle)", label)
	require.Equal(t, res.SingleSwaps+res.PairSwaps, res.Swaps, label)
	require.Equal(t, NameLocalSearch, res.Algo, label)
	require.False(t, res.Capped, label)
	require.Equal(t, int64(len(all)), res.Items, label)
	dv := direct(m, append(slices.Clone(c.opt.Fixed), res.Solution...))
	require.Equal(t, dv, res.Value, "%s: value is the fresh log det", label)
	if !res.Start.Zero {
		require.False(t, res.Value.Zero, "%s: a non-zero start ended at zero", label)
		require.GreaterOrEqual(t, res.Value.Log, res.Start.Log-logTol, "%s: the search lost value", label)
	}
}

// TestLocalSearchAgainstDirect: on hundreds of seeded random models (some
// near-singular), random starts, candidates and options, both oracles give
// the direct implementation's solution and counters.
func TestLocalSearchAgainstDirect(t *testing.T) {
	cases := 200
	if testing.Short() || raceEnabled {
		cases = 50
	}
	for seed := uint64(1); seed <= uint64(cases); seed++ {
		m := instance(seed)
		c := randomLSCase(m, seed)
		for _, ok := range oracleKinds() {
			checkAgainstRef(t, m, ok, c, fmtLSLabel(seed, ok.name, c))
		}
	}
}

// TestLocalSearchAgainstDirectDiag is TestLocalSearchAgainstDirect on
// models with a diagonal, L = D + VᵀV + BᵀCB.
func TestLocalSearchAgainstDirectDiag(t *testing.T) {
	cases := 120
	if testing.Short() || raceEnabled {
		cases = 30
	}
	for _, ok := range oracleKinds() {
		t.Run(ok.name, func(t *testing.T) {
			for seed := uint64(1); seed <= uint64(cases); seed++ {
				m := withDiagScale(instance(seed), seed, []float64{0.01, 0.3, 2}[seed%3])
				c := randomLSCase(m, seed)
				checkAgainstRef(t, m, ok, c, fmtLSLabel(seed, ok.name, c)+" diag")
			}
		})
	}
}

func fmtLSLabel(seed uint64, oracle string, c lsCase) string {
	return fmtLabel(seed, NameLocalSearch, oracle, c.k, c.opt.Eps) + " " + poolLabel(c)
}

func poolLabel(c lsCase) string {
	o := c.opt
	return "pool=" + strconv.Itoa(o.Pool) + "/" + o.PoolBy.String() + map[bool]string{true: " singles-only", false: ""}[o.SinglesOnly] +
		map[bool]string{true: " oracle-only", false: ""}[o.OracleOnly] + " start=" + strconv.Itoa(len(c.start)) + " cands=" + strconv.Itoa(len(o.Items)) + " fixed=" + strconv.Itoa(len(o.Fixed))
}

// ratioStats accumulates ratios f(S)/OPT.
type ratioStats struct {
	sum, worst float64
	optimal, n int
}

func (r *ratioStats) add(v, opt ndpp.Value) {
	q := 0.0
	if !v.Zero {
		q = math.Exp(v.Log - opt.Log)
	}
	if r.n == 0 {
		r.worst = q
	}
	r.sum, r.worst, r.n = r.sum+q, min(r.worst, q), r.n+1
	if q > 1-1e-9 {
		r.optimal++
	}
}

func (r *ratioStats) String() string {
	return fmt.Sprintf("mean %.4f worst %.4f optimal %d/%d", r.sum/float64(r.n), r.worst, r.optimal, r.n)
}

// TestLocalSearchExact compares local search from the greedy's solution
// with exact MAP on n ≤ 16, with and without a diagonal: over the whole
// 2-neighbourhood (Pool −1, ε = 10⁻⁶) it never beats the optimum, never
// loses the start's value and ends at a (1 + ε)-local optimum checked with
// fresh determinants over every single and pair swap. The ratios to the
// optimum of the greedy (direct values), of that search, of the default
// options and of single swaps only are logged.
func TestLocalSearchExact(t *testing.T) {
	instances := 60
	if testing.Short() || raceEnabled {
		instances = 20
	}
	for _, diag := range []float64{0, 0.2} {
		for _, ok := range oracleKinds() {
			name := ok.name
			if diag > 0 {
				name += "/diag"
			}
			t.Run(name, func(t *testing.T) {
				var greedy, full, def, singles ratioStats
				for seed := uint64(500); seed < 500+uint64(instances); seed++ {
					rng := rand.New(rand.NewPCG(seed, 17))
					d := 2 + rng.IntN(3)
					n := 10 + rng.IntN(7)
					m := ndpp.Random(n, d, seed, ndpp.RandomOptions{Diag: diag, Shared: seed%5 == 0, BlockDiagonal: seed%2 == 0})
					k := 2 + rng.IntN(min(m.MaxRank(), 2*d, 5)-1)
					opt, err := ExactMAP(context.Background(), m, k, nil)
					require.NoError(t, err)
					require.False(t, opt.Value.Zero, "seed %d: zero optimum", seed)
					g := refGreedy(m, k, nil)
					gv := direct(m, g)
					if len(g) < k {
						gv = ndpp.ZeroValue
					}
					greedy.add(gv, opt.Value)
					o, err := ok.new(m, k)
					require.NoError(t, err)
					const eps = 1e-6
					res, err := LocalSearch(context.Background(), o, k, g, LocalSearchOptions{Eps: eps, Pool: -1})
					require.NoError(t, err)
					require.Len(t, res.Solution, k)
					require.False(t, res.Value.Zero, "seed %d: zero local search value", seed)
					require.LessOrEqual(t, res.Value.Log, opt.Value.Log+logTol, "seed %d: beats the optimum", seed)
					if !gv.Zero {
						require.GreaterOrEqual(t, res.Value.Log, gv.Log-logTol, "seed %d: below its greedy start", seed)
					}
					checkLocalOptimum(t, m, res.Solution, eps, seed)
					full.add(res.Value, opt.Value)
					for _, c := range []struct {
						st  *ratioStats
						opt LocalSearchOptions
					}{{&def, LocalSearchOptions{}}, {&singles, LocalSearchOptions{SinglesOnly: true}}} {
						r, err := LocalSearch(context.Background(), o, k, g, c.opt)
						require.NoError(t, err)
						require.LessOrEqual(t, r.Value.Log, opt.Value.Log+logTol, "seed %d: beats the optimum", seed)
						c.st.add(r.Value, opt.Value)
					}
				}
				t.Logf("n=10..16, k=2..5, d=2..4, diag %g, f/OPT: greedy %v; local search (whole 2-neighbourhood, ε = 1e-6) %v; default options %v; single swaps only %v",
					diag, &greedy, &full, &def, &singles)
				require.GreaterOrEqual(t, full.sum, greedy.sum-1e-9, "local search below greedy on average")
			})
		}
	}
}

// checkLocalOptimum checks with fresh determinants that no single swap and
// no pair swap with items outside S multiplies f(S) by more than 1 + ε.
func checkLocalOptimum(t *testing.T, m *ndpp.Model, S []int, eps float64, seed uint64) {
	t.Helper()
	f := direct(m, S)
	require.False(t, f.Zero, "seed %d: zero local optimum", seed)
	bar := f.Log + math.Log1p(eps) + logTol
	var out []int
	for i := 0; i < m.N(); i++ {
		if !slices.Contains(S, i) {
			out = append(out, i)
		}
	}
	for _, x := range out {
		for j := range S {
			if v := direct(m, with(S, j, x)); !v.Zero {
				require.LessOrEqual(t, v.Log, bar, "seed %d: swapping %d for S[%d] improves %v", seed, x, j, S)
			}
		}
	}
	for xi, x := range out {
		for _, y := range out[xi+1:] {
			for a := range S {
				for b := a + 1; b < len(S); b++ {
					if v := direct(m, with(with(S, a, x), b, y)); !v.Zero {
						require.LessOrEqual(t, v.Log, bar, "seed %d: swapping %d, %d for S[%d], S[%d] improves %v", seed, x, y, a, b, S)
					}
				}
			}
		}
	}
}

// TestLocalSearchNeedsPairs: two items whose kernel is the skew block
// [[0, x], [−x, 0]] (det x², every singleton 0) and two with
// L = diag(y², y²), y < x, unrelated to the first two. Greedy takes the
// latter pair, and no single swap leaves it (every mixed pair has
// determinant 0), so single swaps stay at y⁴ = f(greedy) while a pair swap
// reaches the optimum x².
func TestLocalSearchNeedsPairs(t *testing.T) {
	const x, y = 1.5, 0.5
	// d = 2, items: 0, 1 skew (v = 0, b = e₁, e₂); 2, 3 with v = y·e₁, y·e₂.
	v := []float64{0, 0, 0, 0, y, 0, 0, y}
	b := []float64{1, 0, 0, 1, 0, 0, 0, 0}
	c := []float64{0, x, -x, 0}
	m, err := ndpp.NewFromRows(4, 2, v, b, c)
	require.NoError(t, err)
	const k = 2
	opt, err := ExactMAP(context.Background(), m, k, nil)
	require.NoError(t, err)
	require.Equal(t, []int{0, 1}, opt.Solution)
	g, err := OfflineGreedy(context.Background(), m, k, GreedyOptions{})
	require.NoError(t, err)
	require.ElementsMatch(t, []int{2, 3}, g.Solution)
	for _, ok := range oracleKinds() {
		o, err := ok.new(m, k)
		require.NoError(t, err)
		single, err := LocalSearch(context.Background(), o, k, g.Solution, LocalSearchOptions{SinglesOnly: true})
		require.NoError(t, err)
		require.ElementsMatch(t, []int{2, 3}, single.Solution, "%s: single swaps", ok.name)
		require.Zero(t, single.Swaps, ok.name)
		both, err := LocalSearch(context.Background(), o, k, g.Solution, LocalSearchOptions{})
		require.NoError(t, err)
		require.ElementsMatch(t, []int{0, 1}, both.Solution, "%s: single and pair swaps", ok.name)
		require.Equal(t, int64(1), both.PairSwaps, ok.name)
		require.InDelta(t, 2*math.Log(x), both.Value.Log, logTol, ok.name)
	}
}

// TestLocalSearchBlockIdentical: with the fast oracle, block scoring skips
// most candidates on larger models and changes nothing else.
func TestLocalSearchBlockIdentical(t *testing.T) {
	sizes := []int{3000, 20000}
	if testing.Short() || raceEnabled {
		sizes = []int{3000}
	}
	for i, n := range sizes {
		for _, pool := range []int{0, -2, 24} {
			seed := uint64(i + 1)
			m := ndpp.Random(n, 6, seed, ndpp.RandomOptions{})
			k := 8
			g, err := OfflineGreedy(context.Background(), m, k, GreedyOptions{})
			require.NoError(t, err)
			var out [2]LocalSearchResult
			for j, oracleOnly := range []bool{false, true} {
				o, err := detcache.NewFast(m, k)
				require.NoError(t, err)
				opt := LocalSearchOptions{Pool: pool, OracleOnly: oracleOnly, PoolBy: PoolRank(i % 2)}
				if pool == -2 {
					opt = LocalSearchOptions{SinglesOnly: true, OracleOnly: oracleOnly}
				}
				// Start from a poor set so that sweeps apply swaps.
				start := g.Solution
				if pool != 24 {
					start = RandomOrder(n, seed)[:k]
				}
				out[j], err = LocalSearch(context.Background(), o, k, start, opt)
				require.NoError(t, err)
			}
			blk, one := out[0], out[1]
			require.Positive(t, blk.Skipped, "n=%d pool=%d: block scoring skipped nothing", n, pool)
			require.Zero(t, one.Skipped)
			if pool != -2 {
				require.Positive(t, blk.SkippedPairs, "n=%d pool=%d: block scoring skipped no pair", n, pool)
			}
			require.Zero(t, one.SkippedPairs)
			blk.Skipped, blk.SkippedPairs, blk.Seconds, one.Seconds = 0, 0, 0, 0
			require.Empty(t, cmp.Diff(one, blk), "n=%d pool=%d (-oracle only +block scoring)", n, pool)
			t.Logf("n=%d pool=%d: %d passes, %d swaps (%d pairs), %d evals, %.1f%% of candidate visits skipped", n, pool,
				one.Passes, one.Swaps, one.PairSwaps, one.Evals, 100*float64(out[0].Skipped)/float64(int64(one.Passes)*int64(n-k)))
		}
	}
}

// TestLocalSearchValidation: bad arguments are errors naming them.
func TestLocalSearchValidation(t *testing.T) {
	m := ndpp.Random(20, 3, 1, ndpp.RandomOptions{})
	o, err := detcache.NewNaive(m, 4)
	require.NoError(t, err)
	// A model whose item 0 is the zero vector: det L_{0} = 0.
	v, b, _, cm := m.Rows()
	v, b = slices.Clone(v), slices.Clone(b)
	clear(v[:3])
	clear(b[:3])
	mz, err := ndpp.NewFromRows(20, 3, v, b, cm)
	require.NoError(t, err)
	oz, err := detcache.NewNaive(mz, 4)
	require.NoError(t, err)
	for _, c := range []struct {
		name  string
		o     detcache.Oracle
		k     int
		start []int
		opt   LocalSearchOptions
		want  string
	}{
		{"nil oracle", nil, 2, nil, LocalSearchOptions{}, "nil oracle"},
		{"k 0", o, 0, nil, LocalSearchOptions{}, "k = 0"},
		{"k above capacity", o, 5, nil, LocalSearchOptions{}, "capacity"},
		{"negative eps", o, 2, nil, LocalSearchOptions{Eps: -1}, "ε"},
		{"NaN eps", o, 2, nil, LocalSearchOptions{Eps: math.NaN()}, "ε"},
		{"pool ranking", o, 2, nil, LocalSearchOptions{PoolBy: 7}, "pool ranking"},
		{"max passes", o, 2, nil, LocalSearchOptions{MaxPasses: -1}, "MaxPasses"},
		{"long start", o, 2, []int{1, 2, 3}, LocalSearchOptions{}, "start set of 3"},
		{"duplicate start", o, 3, []int{1, 1}, LocalSearchOptions{}, "duplicate"},
		{"start out of range", o, 3, []int{1, 20}, LocalSearchOptions{}, "out of range"},
		{"start not a candidate", o, 2, []int{1, 2}, LocalSearchOptions{Items: []int{1, 3, 4}}, "not a candidate"},
		{"bad candidates", o, 2, nil, LocalSearchOptions{Items: []int{1, 1, 4}}, "duplicate"},
		{"too few candidates", o, 3, nil, LocalSearchOptions{Items: []int{1, 4}}, "exceeds the number of candidates"},
		{"fixed out of range", o, 2, nil, LocalSearchOptions{Fixed: []int{-1}}, "fixed items"},
		{"fixed twice", o, 2, nil, LocalSearchOptions{Fixed: []int{3, 3}}, "fixed items"},
		{"fixed beyond capacity", o, 3, nil, LocalSearchOptions{Fixed: []int{3, 4}}, "capacity"},
		{"fixed in start", o, 2, []int{3}, LocalSearchOptions{Fixed: []int{3}}, "is a fixed item"},
		{"too few free candidates", o, 2, nil, LocalSearchOptions{Items: []int{1, 3, 4}, Fixed: []int{3, 4}}, "outside the fixed items"},
		{"singular fixed", oz, 1, nil, LocalSearchOptions{Fixed: []int{0}}, "fixed items' determinant is zero"},
	} {
		_, err := LocalSearch(context.Background(), c.o, c.k, c.start, c.opt)
		require.ErrorContains(t, err, c.want, c.name)
	}
}

// TestLocalSearchMaxPasses: a search stopped by MaxPasses says so.
func TestLocalSearchMaxPasses(t *testing.T) {
	m := ndpp.Random(200, 4, 3, ndpp.RandomOptions{})
	o, err := detcache.NewFast(m, 6)
	require.NoError(t, err)
	res, err := LocalSearch(context.Background(), o, 6, RandomOrder(200, 3)[:6], LocalSearchOptions{MaxPasses: 1})
	require.NoError(t, err)
	require.Equal(t, 1, res.Passes)
	require.True(t, res.Capped, "one pass from a random start should not reach a local optimum")
	require.Positive(t, res.SingleSwaps)
}
