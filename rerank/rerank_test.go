package rerank

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/stream"
)

// bruteGreedy is the reranker's specification computed with dense
// determinants: at each step the conditioning set is the last Window items
// of shown-then-chosen (all without a window), kept in order while
// det L_{K+y} > 0 (ndpp.Model.LogDet's zero rule); the gain of a candidate
// is q²·det L_{K+x}/det L_K. follow, when not nil, is the fast
// reranker's choice at each step, taken instead of the brute-force
// argmax when the two are within near of each other (rounding ties).
type bruteStep struct {
	best  int       // argmax candidate item (−1: none positive)
	gains []float64 // per candidate position (0 when ineligible)
}

// bruteRatio returns det L_{K+x} / det L_K from dense determinants, or 0
// when it is zero: when LogDet's rule says so, or when it is below 1e-9 of
// the scale ‖vₓ‖² + ‖bₓ‖² + δₓ of x's kernel entries. (A 1×1 kernel is
// never zero under LogDet's rule, which looks at the condition number; the
// computed L_xx of an item with vₓ = 0 is the rounding of bₓᵀCbₓ = 0.)
func bruteRatio(t *testing.T, m *ndpp.Model, kept []int, base float64, x int) float64 {
	ld, sign, err := m.LogDet(append(slices.Clone(kept), x))
	require.NoError(t, err)
	if sign == 0 {
		return 0
	}
	r := math.Exp(ld - base)
	scale := m.ItemDiag(x)
	for _, f := range m.ItemV(x) {
		scale += f * f
	}
	for _, f := range m.ItemB(x) {
		scale += f * f
	}
	if r <= 1e-9*scale {
		return 0
	}
	return r
}

func keepSet(t *testing.T, m *ndpp.Model, seq []int) (kept []int, skipped int) {
	base := 0.0
	for _, y := range seq {
		if r := bruteRatio(t, m, kept, base, y); r > 0 {
			kept = append(kept, y)
			base += math.Log(r)
		} else {
			skipped++
		}
	}
	return kept, skipped
}

func bruteStepAt(t *testing.T, m *ndpp.Model, req Request, chosen []int) (bruteStep, int) {
	seq := append(slices.Clone(req.Shown), chosen...)
	if req.Window > 0 && len(seq) > req.Window {
		seq = seq[len(seq)-req.Window:]
	}
	kept, skipped := keepSet(t, m, seq)
	base := 0.0
	if len(kept) > 0 {
		base, _, _ = m.LogDet(kept)
	}
	st := bruteStep{best: -1, gains: make([]float64, len(req.Candidates))}
	bestG := 0.0
	for p, x := range req.Candidates {
		if slices.Contains(req.Shown, x) || slices.Contains(chosen, x) {
			continue
		}
		q2 := 1.0
		if req.Quality != nil {
			q2 = req.Quality[p] * req.Quality[p]
		}
		r := bruteRatio(t, m, kept, base, x)
		if r == 0 || q2 == 0 {
			continue
		}
		g := q2 * r
		st.gains[p] = g
		if g > bestG {
			st.best, bestG = p, g
		}
	}
	return st, skipped
}

// checkAgainstBrute runs req through ws and compares every step with the
// dense-determinant greedy. It returns the number of near ties followed.
func checkAgainstBrute(t *testing.T, ws *Workspace, m *ndpp.Model, req Request, name string) int {
	t.Helper()
	res, err := ws.Rerank(context.Background(), m, req)
	require.NoError(t, err, name)
	require.Equal(t, len(res.Items), len(res.Gains), name)
	pos := map[int]int{}
	for p, x := range req.Candidates {
		pos[x] = p
	}
	var chosen []int
	ties := 0
	for step := 0; ; step++ {
		if step == req.K {
			require.Len(t, res.Items, req.K, name)
			break
		}
		bs, skipped := bruteStepAt(t, m, req, chosen)
		if step == 0 {
			require.Equal(t, skipped, res.ShownSkipped, "%s: shown items left out", name)
		}
		if bs.best < 0 {
			require.Len(t, res.Items, step, "%s: the brute force stops at step %d", name, step)
			break
		}
		require.Greater(t, len(res.Items), step, "%s: stopped at step %d; brute force picks %d (gain %g)", name, step, req.Candidates[bs.best], bs.gains[bs.best])
		got := res.Items[step]
		want := bs.gains[bs.best]
		if got != req.Candidates[bs.best] {
			g := bs.gains[pos[got]]
			require.InDelta(t, want, g, 1e-9*want, "%s step %d: chose %d (brute gain %g), brute force %d (gain %g)", name, step, got, g, req.Candidates[bs.best], want)
			want = g
			ties++
		}
		require.InDelta(t, want, res.Gains[step], 1e-8*math.Max(want, 1e-300), "%s step %d: gain of %d", name, step, got)
		chosen = append(chosen, got)
	}
	return ties
}

// vZeroModel is a model in which some items have vᵢ = 0 and no diagonal,
// so L_ii = 0: single items are singular while pairs with them are not
// (det [[L₁₁, L₁₂], [−L₁₂, 0]] = L₁₂² > 0), which exercises the rule for
// singular conditioning sets and the rebuilds of the window.
func vZeroModel(rng *rand.Rand, n, d int, seed uint64, diag float64) *ndpp.Model {
	base := ndpp.Random(n, d, seed, ndpp.RandomOptions{Diag: diag})
	v, b, _, c := base.Rows()
	v = slices.Clone(v)
	delta := base.Diag()
	for i := 0; i < n; i++ {
		if rng.IntN(4) == 0 {
			clear(v[i*d : (i+1)*d])
			if delta != nil {
				delta[i] = 0
			}
		}
	}
	m, err := ndpp.NewFromRows(n, d, v, b, c, ndpp.WithDiag(delta))
	if err != nil {
		panic(err)
	}
	return m
}

// randomRequest draws a request over n items.
func randomRequest(rng *rand.Rand, n int) Request {
	nc := 1 + rng.IntN(n)
	req := Request{Candidates: rng.Perm(n)[:nc]}
	if rng.IntN(2) == 0 {
		req.Quality = make([]float64, nc)
		for i := range req.Quality {
			req.Quality[i] = math.Exp(rng.NormFloat64())
			if rng.IntN(15) == 0 {
				req.Quality[i] = 0
			}
		}
	}
	if rng.IntN(3) > 0 {
		req.Shown = rng.Perm(n)[:rng.IntN(min(n, 12))]
	}
	req.K = 1 + rng.IntN(nc)
	if rng.IntN(2) == 0 {
		req.Window = 1 + rng.IntN(6)
	}
	return req
}

// TestRerankMatchesBruteForce: on many seeded instances (diagonal or not,
// B = V or not, items with L_ii = 0, quality scores with zeros, shown items
// overlapping the candidates, windows) every step of the reranker chooses
// the dense-determinant greedy's item with its gain q²·det L_{K+x}/det L_K,
// and the workspace is reused across all of them.
func TestRerankMatchesBruteForce(t *testing.T) {
	var ws Workspace
	ties, windows, skips := 0, 0, 0
	for seed := uint64(1); seed <= 400; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		d := 1 + rng.IntN(6)
		n := 6 + rng.IntN(40)
		diag := 0.0
		if rng.IntN(2) == 0 {
			diag = 0.05 + rng.Float64()
		}
		var m *ndpp.Model
		switch rng.IntN(4) {
		case 0:
			m = vZeroModel(rng, n, max(d, 2), seed, diag)
		case 1:
			m = ndpp.Random(n, d, seed, ndpp.RandomOptions{Shared: true, Diag: diag})
		default:
			m = ndpp.Random(n, d, seed, ndpp.RandomOptions{BlockDiagonal: rng.IntN(2) == 0, Diag: diag})
		}
		req := randomRequest(rng, n)
		ties += checkAgainstBrute(t, &ws, m, req, fmt.Sprint("seed ", seed))
		if req.Window > 0 && req.K > req.Window {
			windows++
		}
		skips += ws.shownSkipped
	}
	t.Logf("near ties followed: %d; requests sliding a window: %d; shown items left out: %d", ties, windows, skips)
	require.Less(t, ties, 5)
	require.Positive(t, windows)
	require.Positive(t, skips)
}

// TestRerankLongWindows: long runs of window slides (k up to 60 with
// windows of 2 to 8 on diagonal models), all by the rank-one downdate, so
// that its rounding would show in the gains.
func TestRerankLongWindows(t *testing.T) {
	var ws Workspace
	for seed := uint64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewPCG(seed, 5))
		d := 3 + rng.IntN(8)
		n := 80
		m := ndpp.Random(n, d, seed, ndpp.RandomOptions{Diag: 0.02 + 0.1*rng.Float64(), Shared: seed%3 == 0})
		req := Request{Candidates: rng.Perm(n)[:70], Shown: rng.Perm(n)[:5], K: 40 + rng.IntN(20), Window: 2 + rng.IntN(7)}
		ws.rebuilds = 0
		checkAgainstBrute(t, &ws, m, req, fmt.Sprint("seed ", seed))
		require.Zero(t, ws.rebuilds, "seed %d: a positive diagonal keeps every set nonsingular: every slide is a downdate", seed)
	}
}

// TestRerankWindowPaths checks that both ways of sliding the window
// run in the tests: the rank-one downdate, and the rebuild after a zero
// pivot (the vZero models).
func TestRerankWindowPaths(t *testing.T) {
	var ws Workspace
	rebuilds := 0
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 17))
		m := vZeroModel(rng, 30, 3, seed, 0)
		req := Request{Candidates: rng.Perm(30)[:25], Shown: rng.Perm(30)[:4], K: 12, Window: 3}
		ws.rebuilds = 0
		checkAgainstBrute(t, &ws, m, req, fmt.Sprint("seed ", seed))
		rebuilds += ws.rebuilds
	}
	require.Positive(t, rebuilds)
}

// TestRerankFullCatalogueIsOfflineGreedy: all items as candidates, no
// quality, nothing shown, no window: the offline greedy's solution
// (stream.OfflineGreedy). Models without a diagonal only: stream's greedy
// starts from s_x = ‖v_x‖², leaving out δ_x (TestRerankMatchesBruteForce
// covers diagonal models).
func TestRerankFullCatalogueIsOfflineGreedy(t *testing.T) {
	var ws Workspace
	for seed := uint64(1); seed <= 30; seed++ {
		d := 2 + int(seed%9)
		n := 50 + int(seed*37%400)
		m := ndpp.Random(n, d, seed, ndpp.RandomOptions{Shared: seed%3 == 0, BlockDiagonal: seed%4 == 0})
		k := min(m.MaxRank(), 3+int(seed%10))
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		res, err := ws.Rerank(context.Background(), m, Request{Candidates: all, K: k})
		require.NoError(t, err)
		want, err := stream.OfflineGreedy(context.Background(), m, k, stream.GreedyOptions{})
		require.NoError(t, err)
		if diff := cmp.Diff(want.Solution, res.Items); diff != "" {
			t.Fatalf("seed %d: reranker vs offline greedy (-want +got):\n%s", seed, diff)
		}
		// The product of the gains is det L_S.
		ld, _, _ := m.LogDet(res.Items)
		sum := 0.0
		for _, g := range res.Gains {
			sum += math.Log(g)
		}
		require.InDelta(t, ld, sum, 1e-8*math.Max(1, math.Abs(ld)), "seed %d", seed)
	}
}

func TestRerankRequestErrors(t *testing.T) {
	m := ndpp.Random(10, 3, 1, ndpp.RandomOptions{})
	var ws Workspace
	cases := []struct {
		req          Request
		field        string
		index        int
		reasonSubstr string
	}{
		{Request{K: 1}, "candidates", -1, "no candidates"},
		{Request{Candidates: []int{1, 2}, K: 3}, "k", -1, "k = 3"},
		{Request{Candidates: []int{1, 2}, K: 0}, "k", -1, "k = 0"},
		{Request{Candidates: []int{1, 10}, K: 1}, "candidates", 1, "out of range"},
		{Request{Candidates: []int{-1}, K: 1}, "candidates", 0, "out of range"},
		{Request{Candidates: []int{4, 5, 4}, K: 1}, "candidates", 2, "repeats candidates[0]"},
		{Request{Candidates: []int{4, 5}, K: 1, Quality: []float64{1}}, "quality", -1, "1 scores for 2"},
		{Request{Candidates: []int{4, 5}, K: 1, Quality: []float64{1, math.NaN()}}, "quality", 1, "NaN"},
		{Request{Candidates: []int{4, 5}, K: 1, Quality: []float64{math.Inf(1), 1}}, "quality", 0, "+Inf"},
		{Request{Candidates: []int{4, 5}, K: 1, Quality: []float64{1, -2}}, "quality", 1, "-2"},
		{Request{Candidates: []int{4, 5}, K: 1, Shown: []int{3, 3}}, "shown", 1, "shown twice"},
		{Request{Candidates: []int{4, 5}, K: 1, Shown: []int{11}}, "shown", 0, "out of range"},
		{Request{Candidates: []int{4, 5}, K: 1, Window: -1}, "window", -1, "window = -1"},
	}
	for _, c := range cases {
		_, err := ws.Rerank(context.Background(), m, c.req)
		var re *RequestError
		require.ErrorAs(t, err, &re, "%+v", c.req)
		require.Equal(t, c.field, re.Field, "%+v", c.req)
		require.Equal(t, c.index, re.Index, "%+v", c.req)
		require.Contains(t, re.Reason, c.reasonSubstr)
		require.Contains(t, err.Error(), "rerank: "+c.field)
	}
	_, err := ws.Rerank(context.Background(), nil, Request{Candidates: []int{1}, K: 1})
	require.Error(t, err)
	// A huge window costs no more than none.
	res, err := ws.Rerank(context.Background(), m, Request{Candidates: []int{4, 5, 6}, K: 2, Window: math.MaxInt})
	require.NoError(t, err)
	require.Len(t, res.Items, 2)
	require.LessOrEqual(t, cap(ws.A), 100)
	// After errors the workspace still serves requests.
	res, err = ws.Rerank(context.Background(), m, Request{Candidates: []int{4, 5, 6}, K: 2})
	require.NoError(t, err)
	require.Len(t, res.Items, 2)
}

// TestRerankShownAndQualityZeroNeverChosen, and a result shorter than k
// when every remaining gain is zero (a model of rank 2 without diagonal).
func TestRerankStopsAndExclusions(t *testing.T) {
	m := ndpp.Random(20, 2, 3, ndpp.RandomOptions{Shared: true}) // rank 2
	var ws Workspace
	res, err := ws.Rerank(context.Background(), m, Request{Candidates: []int{0, 1, 2, 3, 4, 5}, K: 5})
	require.NoError(t, err)
	require.Len(t, res.Items, 2)
	res, err = ws.Rerank(context.Background(), m, Request{Candidates: []int{0, 1, 2, 3, 4, 5}, K: 5, Shown: []int{0, 1}, Quality: []float64{1, 1, 0, 1, 1, 1}})
	require.NoError(t, err)
	for _, x := range res.Items {
		require.NotContains(t, []int{0, 1, 2}, x)
	}
	// Two shown items span the rank: no candidate has a positive gain.
	require.Empty(t, res.Items)
	// A window of one frees all but the last shown item.
	res, err = ws.Rerank(context.Background(), m, Request{Candidates: []int{0, 1, 2, 3, 4, 5}, K: 4, Shown: []int{0, 1}, Window: 1})
	require.NoError(t, err)
	require.Len(t, res.Items, 4)
}

// TestRerankZeroAllocs: once a workspace has served a request, requests of
// the same or smaller shapes allocate nothing (quality, shown items and a
// sliding window included).
func TestRerankZeroAllocs(t *testing.T) {
	m := ndpp.Random(2000, 30, 1, ndpp.RandomOptions{Diag: 0.05})
	rng := rand.New(rand.NewPCG(1, 2))
	reqs := []Request{
		{Candidates: rng.Perm(2000)[:500], K: 10},
		{Candidates: rng.Perm(2000)[:300], K: 20, Window: 5, Shown: rng.Perm(2000)[:8]},
	}
	reqs[1].Quality = make([]float64, 300)
	for i := range reqs[1].Quality {
		reqs[1].Quality[i] = rng.Float64()
	}
	var ws Workspace
	for _, req := range reqs {
		_, err := ws.Rerank(context.Background(), m, req)
		require.NoError(t, err)
	}
	for i, req := range reqs {
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := ws.Rerank(context.Background(), m, req); err != nil {
				panic(err)
			}
		})
		require.Zero(t, allocs, "request %d", i)
	}
}

// TestRerankConcurrent: goroutines with their own workspaces over one
// shared model get the results of serial runs (run with -race).
func TestRerankConcurrent(t *testing.T) {
	m := ndpp.Random(300, 8, 2, ndpp.RandomOptions{Diag: 0.1})
	rng := rand.New(rand.NewPCG(3, 4))
	reqs := make([]Request, 40)
	want := make([]Result, len(reqs))
	var ws Workspace
	for i := range reqs {
		reqs[i] = randomRequest(rng, 300)
		res, err := ws.Rerank(context.Background(), m, reqs[i])
		require.NoError(t, err)
		want[i] = Result{Items: slices.Clone(res.Items), Gains: slices.Clone(res.Gains), LogValue: res.LogValue, ShownSkipped: res.ShownSkipped}
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			var ws Workspace
			for r := 0; r < 2; r++ {
				for i := range reqs {
					i := (i + g*5) % len(reqs)
					res, err := ws.Rerank(context.Background(), m, reqs[i])
					if err != nil {
						errs <- err.Error()
						return
					}
					if diff := cmp.Diff(want[i], res); diff != "" {
						errs <- diff
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}
