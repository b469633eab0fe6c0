package rerank

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
)

// TestRerankTheta: relevance with θ is the request with quality
// qᵢ = exp(α(rᵢ − r_max)), α = θ/(2(1 − θ)) (same items and gains), every
// step against the dense-determinant greedy; θ = 0 is the unweighted
// kernel's greedy; θ = 1 is relevance order; large relevance scores with θ
// near 1 do not overflow.
func TestRerankTheta(t *testing.T) {
	var ws, wq Workspace
	for seed := uint64(1); seed <= 60; seed++ {
		rng := rand.New(rand.NewPCG(seed, 91))
		n := 10 + rng.IntN(30)
		m := ndpp.Random(n, 1+rng.IntN(4), seed, ndpp.RandomOptions{Diag: 0.05 + 0.3*rng.Float64()})
		req := randomRequest(rng, n)
		req.Quality = nil
		req.Polish = seed%3 == 0 && req.Window == 0
		req.Relevance = make([]float64, len(req.Candidates))
		for i := range req.Relevance {
			req.Relevance[i] = 100 * rng.NormFloat64()
		}
		for _, theta := range []float64{0, 0.01, 0.3, 0.7, 0.999999} {
			req.Theta = theta
			res, err := ws.Rerank(context.Background(), m, req)
			require.NoError(t, err)
			alpha := theta / (2 * (1 - theta))
			rmax := slices.Max(req.Relevance)
			qreq := req
			qreq.Relevance, qreq.Theta = nil, 0
			qreq.Quality = make([]float64, len(req.Candidates))
			for i, r := range req.Relevance {
				qreq.Quality[i] = math.Exp(alpha * (r - rmax))
			}
			want, err := wq.Rerank(context.Background(), m, qreq)
			require.NoError(t, err)
			require.Equal(t, want.Items, res.Items, "seed %d θ %v", seed, theta)
			require.Equal(t, want.Gains, res.Gains, "seed %d θ %v", seed, theta)
			for _, g := range res.Gains {
				require.False(t, math.IsInf(g, 0) || math.IsNaN(g))
			}
			if theta == 0 {
				plain := req
				plain.Relevance, plain.Theta = nil, 0
				p, err := wq.Rerank(context.Background(), m, plain)
				require.NoError(t, err)
				require.Equal(t, p.Items, res.Items)
				require.Equal(t, p.Gains, res.Gains)
			}
			if !req.Polish && seed%4 == 0 {
				checkAgainstBrute(t, &wq, m, qreq, "theta")
			}
		}
		req.Theta = 1
		res, err := ws.Rerank(context.Background(), m, req)
		require.NoError(t, err)
		var pos []int
		for p, c := range req.Candidates {
			if !slices.Contains(req.Shown, c) {
				pos = append(pos, p)
			}
		}
		sort.SliceStable(pos, func(a, b int) bool { return req.Relevance[pos[a]] > req.Relevance[pos[b]] })
		var want []int
		for _, p := range pos[:min(req.K, len(pos))] {
			want = append(want, req.Candidates[p])
		}
		require.Equal(t, want, res.Items, "seed %d", seed)
		require.Empty(t, res.Gains)
	}
}

// TestRerankThetaErrors: θ outside [0, 1], θ without relevance, relevance
// with quality, of the wrong length or not finite are request errors.
func TestRerankThetaErrors(t *testing.T) {
	m := ndpp.Random(10, 3, 1, ndpp.RandomOptions{})
	var ws Workspace
	for _, c := range []struct {
		req   Request
		field string
	}{
		{Request{Candidates: []int{1, 2}, K: 1, Relevance: []float64{1, 2}, Theta: -0.1}, "theta"},
		{Request{Candidates: []int{1, 2}, K: 1, Relevance: []float64{1, 2}, Theta: 1.5}, "theta"},
		{Request{Candidates: []int{1, 2}, K: 1, Relevance: []float64{1, 2}, Theta: math.NaN()}, "theta"},
		{Request{Candidates: []int{1, 2}, K: 1, Theta: 0.5}, "theta"},
		{Request{Candidates: []int{1, 2}, K: 1, Relevance: []float64{1, 2}, Quality: []float64{1, 1}}, "relevance"},
		{Request{Candidates: []int{1, 2}, K: 1, Relevance: []float64{1}}, "relevance"},
		{Request{Candidates: []int{1, 2}, K: 1, Relevance: []float64{1, math.Inf(1)}}, "relevance"},
	} {
		_, err := ws.Rerank(context.Background(), m, c.req)
		var re *RequestError
		require.ErrorAs(t, err, &re, "%+v", c.req)
		require.Equal(t, c.field, re.Field)
	}
}

// TestRerankLogValue: without a window, LogValue is log det L′_{F∪Y} −
// log det L′_F from a fresh LU (F the shown items, all kept with a
// diagonal; L′ weighted by quality), also after a polish.
func TestRerankLogValue(t *testing.T) {
	var ws Workspace
	for seed := uint64(1); seed <= 80; seed++ {
		rng := rand.New(rand.NewPCG(seed, 5))
		n := 8 + rng.IntN(25)
		m := ndpp.Random(n, 1+rng.IntN(4), seed, ndpp.RandomOptions{Diag: 0.05 + 0.3*rng.Float64()})
		req := randomRequest(rng, n)
		req.Window = 0
		req.Polish = seed%2 == 0
		res, err := ws.Rerank(context.Background(), m, req)
		require.NoError(t, err)
		require.Zero(t, res.ShownSkipped)
		if len(res.Items) == 0 {
			require.Zero(t, res.LogValue)
			continue
		}
		full, ok := polishLogDet(t, m, req, req.Shown, res.Items)
		require.True(t, ok)
		base := 0.0
		if len(req.Shown) > 0 {
			base, ok = polishLogDet(t, m, req, req.Shown, nil)
			require.True(t, ok)
		}
		require.InDelta(t, full-base, res.LogValue, 1e-8*math.Max(1, math.Abs(full)), "seed %d", seed)
	}
}

// bruteFeasible checks from the definitions whether the list seq (shown
// then chosen, with per-position attribute values; "" for none) followed
// by value v keeps every constraint.
func bruteFeasible(cs []Constraint, seqVals map[string][]string, vals map[string]string) bool {
	for _, c := range cs {
		seq := append(slices.Clone(seqVals[c.Attribute]), vals[c.Attribute])
		n := len(seq)
		v := seq[n-1]
		if v == "" {
			continue
		}
		if c.MaxRun > 0 {
			run := 0
			for i := n - 1; i >= 0 && seq[i] == v; i-- {
				run++
			}
			if run > c.MaxRun {
				return false
			}
			continue
		}
		cnt := 0
		for i := max(0, n-c.Window); i < n; i++ {
			if seq[i] == v {
				cnt++
			}
		}
		if cnt > c.MaxPerWindow {
			return false
		}
	}
	return true
}

// TestRerankConstraints: with attribute constraints (windows and runs,
// shown items with and without values), every step's choice is the argmax
// of the dense-determinant gains among the candidates that keep every
// constraint, checked from the definitions; a result short of K says why,
// and ShortConstraints only when a candidate of positive gain was blocked.
func TestRerankConstraints(t *testing.T) {
	var ws Workspace
	shortC := 0
	for seed := uint64(1); seed <= 150; seed++ {
		rng := rand.New(rand.NewPCG(seed, 77))
		n := 8 + rng.IntN(25)
		m := ndpp.Random(n, 1+rng.IntN(4), seed, ndpp.RandomOptions{Diag: 0.05 + 0.3*rng.Float64()})
		req := randomRequest(rng, n)
		req.Polish = false
		nv := 1 + rng.IntN(3)
		req.Attributes = map[string][]string{"a": make([]string, len(req.Candidates)), "b": make([]string, len(req.Candidates))}
		for p := range req.Candidates {
			req.Attributes["a"][p] = fmt.Sprint(rng.IntN(nv))
			req.Attributes["b"][p] = fmt.Sprint(rng.IntN(2))
		}
		if len(req.Shown) > 0 && rng.IntN(2) == 0 {
			req.ShownAttributes = map[string][]string{"a": make([]string, len(req.Shown))}
			for s := range req.Shown {
				req.ShownAttributes["a"][s] = fmt.Sprint(rng.IntN(nv + 1))
			}
		}
		req.Constraints = []Constraint{{Attribute: "a", Window: 1 + rng.IntN(4), MaxPerWindow: 1 + rng.IntN(2)}}
		if rng.IntN(2) == 0 {
			req.Constraints = append(req.Constraints, Constraint{Attribute: "b", MaxRun: 1 + rng.IntN(2)})
		}
		res, err := ws.Rerank(context.Background(), m, req)
		require.NoError(t, err)
		label := fmt.Sprintf("seed %d %+v", seed, req.Constraints)
		seqVals := map[string][]string{}
		for name := range req.Attributes {
			for s := range req.Shown {
				v := ""
				if sv := req.ShownAttributes[name]; sv != nil {
					v = sv[s]
				}
				seqVals[name] = append(seqVals[name], v)
			}
		}
		valsOf := func(p int) map[string]string {
			return map[string]string{"a": req.Attributes["a"][p], "b": req.Attributes["b"][p]}
		}
		var chosen []int
		for step := 0; ; step++ {
			if step == req.K {
				require.Empty(t, res.Short, label)
				break
			}
			bs, _ := bruteStepAt(t, m, req, chosen)
			best, bestG, blocked := -1, 0.0, false
			for p, g := range bs.gains {
				if g <= 0 {
					continue
				}
				if !bruteFeasible(req.Constraints, seqVals, valsOf(p)) {
					blocked = true
					continue
				}
				if g > bestG {
					best, bestG = p, g
				}
			}
			if best < 0 {
				require.Len(t, res.Items, step, label)
				if blocked {
					require.Equal(t, ShortConstraints, res.Short, label)
					shortC++
				} else {
					require.Equal(t, ShortZeroGain, res.Short, label)
				}
				break
			}
			require.Greater(t, len(res.Items), step, label)
			got := slices.Index(req.Candidates, res.Items[step])
			require.True(t, bruteFeasible(req.Constraints, seqVals, valsOf(got)), "%s step %d: infeasible choice", label, step)
			if got != best {
				require.InDelta(t, bestG, bs.gains[got], 1e-9*bestG, "%s step %d", label, step)
			}
			require.InDelta(t, bs.gains[got], res.Gains[step], 1e-8*bs.gains[got], label)
			for name, v := range valsOf(got) {
				seqVals[name] = append(seqVals[name], v)
			}
			chosen = append(chosen, res.Items[step])
		}
	}
	t.Logf("short for constraints: %d of 150", shortC)
	require.Greater(t, shortC, 0)
}

// TestRerankConstraintsInfeasible: constraints no candidate order can
// meet give fewer than K items with Short = ShortConstraints — also in
// relevance order (θ = 1) — and malformed constraints are request errors.
func TestRerankConstraintsInfeasible(t *testing.T) {
	m := ndpp.Random(20, 3, 1, ndpp.RandomOptions{Diag: 0.2})
	var ws Workspace
	req := Request{Candidates: []int{1, 2, 3, 4}, K: 4, Attributes: map[string][]string{"c": {"x", "x", "x", "y"}},
		Constraints: []Constraint{{Attribute: "c", MaxRun: 1}}}
	res, err := ws.Rerank(context.Background(), m, req)
	require.NoError(t, err)
	require.Len(t, res.Items, 3) // x y x, then only x is left
	require.Equal(t, ShortConstraints, res.Short)
	req.Relevance, req.Theta = []float64{4, 3, 2, 1}, 1
	res, err = ws.Rerank(context.Background(), m, req)
	require.NoError(t, err)
	require.Equal(t, []int{1, 4, 2}, res.Items)
	require.Equal(t, ShortConstraints, res.Short)
	// The shown items count: the last shown "y" blocks y first.
	req = Request{Candidates: []int{1, 2}, K: 1, Shown: []int{5}, Attributes: map[string][]string{"c": {"y", "x"}},
		ShownAttributes: map[string][]string{"c": {"y"}}, Constraints: []Constraint{{Attribute: "c", Window: 2, MaxPerWindow: 1}},
		Relevance: []float64{2, 1}, Theta: 1}
	res, err = ws.Rerank(context.Background(), m, req)
	require.NoError(t, err)
	require.Equal(t, []int{2}, res.Items)
	for _, c := range []struct {
		req   Request
		field string
	}{
		{Request{Candidates: []int{1, 2}, K: 1, Constraints: []Constraint{{Attribute: "c", MaxRun: 1}}}, "constraints"},
		{Request{Candidates: []int{1, 2}, K: 1, Attributes: map[string][]string{"c": {"x"}}, Constraints: []Constraint{{Attribute: "c", MaxRun: 1}}}, "attributes"},
		{Request{Candidates: []int{1, 2}, K: 1, Attributes: map[string][]string{"c": {"x", "y"}}, Constraints: []Constraint{{Attribute: "c", Window: 2}}}, "constraints"},
		{Request{Candidates: []int{1, 2}, K: 1, Attributes: map[string][]string{"c": {"x", "y"}}, Constraints: []Constraint{{Attribute: "c", MaxRun: 1, Window: 2, MaxPerWindow: 1}}}, "constraints"},
		{Request{Candidates: []int{1, 2}, K: 1, Attributes: map[string][]string{"c": {"x", "y"}}}, "constraints"},
		{Request{Candidates: []int{1, 2}, K: 1, Shown: []int{3}, Attributes: map[string][]string{"c": {"x", "y"}}, ShownAttributes: map[string][]string{"c": {}}, Constraints: []Constraint{{Attribute: "c", MaxRun: 1}}}, "shown_attributes"},
	} {
		_, err := ws.Rerank(context.Background(), m, c.req)
		var re *RequestError
		require.ErrorAs(t, err, &re, "%+v", c.req)
		require.Equal(t, c.field, re.Field)
	}
}

// TestRerankNewItems: a request whose candidates include model rows
// re-given as new items (their v, b and δ under new ids) gives the same
// items (up to the ids) and the same gains as the rows, with and without
// polish, shown items and a window; bad new items are request errors.
func TestRerankNewItems(t *testing.T) {
	var ws, wn Workspace
	for seed := uint64(1); seed <= 80; seed++ {
		rng := rand.New(rand.NewPCG(seed, 13))
		n := 10 + rng.IntN(25)
		m := ndpp.Random(n, 1+rng.IntN(4), seed, ndpp.RandomOptions{Diag: []float64{0, 0.05 + 0.3*rng.Float64()}[seed%2], Shared: seed%3 == 0})
		req := randomRequest(rng, n)
		req.Polish = seed%2 == 0 && req.Window == 0
		want, err := ws.Rerank(context.Background(), m, req)
		require.NoError(t, err)
		nreq := req
		nreq.Candidates = slices.Clone(req.Candidates)
		toNew := map[int]int{}
		for p, it := range req.Candidates {
			if rng.IntN(2) == 0 && !slices.Contains(req.Shown, it) {
				id := n + 1000 + p
				ni := ndpp.Item{ID: id, V: slices.Clone(m.ItemV(it)), Delta: m.ItemDiag(it)}
				if !m.Shared() {
					ni.B = slices.Clone(m.ItemB(it))
				}
				nreq.NewItems = append(nreq.NewItems, ni)
				nreq.Candidates[p] = id
				toNew[it] = id
			}
		}
		got, err := wn.Rerank(context.Background(), m, nreq)
		require.NoError(t, err)
		wantItems := slices.Clone(want.Items)
		for i, it := range wantItems {
			if id, ok := toNew[it]; ok {
				wantItems[i] = id
			}
		}
		require.Equal(t, wantItems, got.Items, "seed %d", seed)
		require.Equal(t, want.Gains, got.Gains, "seed %d", seed)
	}
	m := ndpp.Random(10, 3, 1, ndpp.RandomOptions{})
	v := []float64{1, 2, 3}
	for _, c := range []struct {
		req   Request
		field string
	}{
		{Request{Candidates: []int{1, 12}, K: 1, NewItems: []ndpp.Item{{ID: 3, V: v, B: v}}}, "new_items"},
		{Request{Candidates: []int{1, 12}, K: 1, NewItems: []ndpp.Item{{ID: 12, V: v, B: v}, {ID: 12, V: v, B: v}}}, "new_items"},
		{Request{Candidates: []int{1, 12}, K: 1, NewItems: []ndpp.Item{{ID: 12, V: v}}}, "new_items"},
		{Request{Candidates: []int{1, 12}, K: 1, NewItems: []ndpp.Item{{ID: 12, V: []float64{1, math.NaN(), 1}, B: v}}}, "new_items"},
		{Request{Candidates: []int{1, 12}, K: 1, NewItems: []ndpp.Item{{ID: 12, V: []float64{1e200, 1, 1}, B: v}}}, "new_items"},
		{Request{Candidates: []int{1, 13}, K: 1, NewItems: []ndpp.Item{{ID: 12, V: v, B: v}}}, "candidates"},
		{Request{Candidates: []int{12, 12}, K: 1, NewItems: []ndpp.Item{{ID: 12, V: v, B: v}}}, "candidates"},
		{Request{Candidates: []int{1, 12}, K: 1, Shown: []int{12}, NewItems: []ndpp.Item{{ID: 12, V: v, B: v}}}, "shown"},
	} {
		_, err := ws.Rerank(context.Background(), m, c.req)
		var re *RequestError
		require.ErrorAs(t, err, &re, "%+v", c.req)
		require.Equal(t, c.field, re.Field, "%v", err)
	}
}

// TestRerankPolishConstraints: with constraints, the polished list keeps
// them (checked from the definitions), is never below the greedy's value,
// no feasible single swap in place improves it by more than 1 + ε (dense
// determinants), its value is at most the best feasible list's by
// enumeration, and its gains are those of its own order.
func TestRerankPolishConstraints(t *testing.T) {
	var ws, wg Workspace
	moved := 0
	for seed := uint64(1); seed <= 120; seed++ {
		rng := rand.New(rand.NewPCG(seed, 44))
		n := 8 + rng.IntN(6)
		m := ndpp.Random(n, 1+rng.IntN(3), seed, ndpp.RandomOptions{Diag: 0.05 + 0.3*rng.Float64()})
		nc := 5 + rng.IntN(n-5)
		req := Request{Candidates: rng.Perm(n)[:nc], K: 2 + rng.IntN(2), Polish: true, PolishEps: 1e-9, PolishPool: []int{0, 1, 4}[seed%3]}
		req.Shown = nil
		if rng.IntN(2) == 0 {
			for _, it := range rng.Perm(n)[:2] {
				if !slices.Contains(req.Candidates, it) {
					req.Shown = append(req.Shown, it)
				}
			}
		}
		req.Attributes = map[string][]string{"a": make([]string, nc)}
		for p := range req.Attributes["a"] {
			req.Attributes["a"][p] = fmt.Sprint(rng.IntN(2))
		}
		req.Constraints = []Constraint{{Attribute: "a", MaxRun: 1}}
		if seed%2 == 0 {
			req.Constraints = []Constraint{{Attribute: "a", Window: 3, MaxPerWindow: 2}}
		}
		greq := req
		greq.Polish = false
		g, err := wg.Rerank(context.Background(), m, greq)
		require.NoError(t, err)
		res, err := ws.Rerank(context.Background(), m, req)
		require.NoError(t, err)
		label := fmt.Sprintf("seed %d", seed)
		if len(g.Items) < req.K {
			require.Equal(t, g.Items, res.Items, label)
			continue
		}
		shownVals := func() map[string][]string {
			vals := map[string][]string{}
			for range req.Shown {
				vals["a"] = append(vals["a"], "")
			}
			return vals
		}
		feasibleList := func(list []int) bool {
			vals := shownVals()
			for _, it := range list {
				v := map[string]string{"a": req.Attributes["a"][slices.Index(req.Candidates, it)]}
				if !bruteFeasible(req.Constraints, vals, v) {
					return false
				}
				vals["a"] = append(vals["a"], v["a"])
			}
			return true
		}
		require.True(t, feasibleList(res.Items), label)
		gl, ok := polishLogDet(t, m, req, req.Shown, g.Items)
		require.True(t, ok)
		pl, ok := polishLogDet(t, m, req, req.Shown, res.Items)
		require.True(t, ok)
		require.GreaterOrEqual(t, pl, gl-1e-9*math.Abs(gl), label)
		if res.PolishSwaps > 0 {
			moved++
		}
		best := math.Inf(-1)
		var rec func(list []int)
		rec = func(list []int) {
			if !feasibleList(list) {
				return
			}
			if len(list) == req.K {
				if v, ok := polishLogDet(t, m, req, req.Shown, list); ok {
					best = math.Max(best, v)
				}
				return
			}
			for _, c := range req.Candidates {
				if !slices.Contains(list, c) && !slices.Contains(req.Shown, c) {
					rec(append(slices.Clone(list), c))
				}
			}
		}
		rec(nil)
		require.LessOrEqual(t, pl, best+1e-9*math.Abs(best), label)
		for j := range res.Items {
			for _, c := range req.Candidates {
				if slices.Contains(res.Items, c) || slices.Contains(req.Shown, c) {
					continue
				}
				sw := slices.Clone(res.Items)
				sw[j] = c
				if !feasibleList(sw) {
					continue
				}
				if v, ok := polishLogDet(t, m, req, req.Shown, sw); ok {
					require.LessOrEqual(t, v, pl+math.Log1p(1e-9)+1e-9, "%s: swapping %d for %d", label, res.Items[j], c)
				}
			}
		}
		base := 0.0
		if len(req.Shown) > 0 {
			base, _ = polishLogDet(t, m, req, req.Shown, nil)
		}
		require.InDelta(t, pl-base, res.LogValue, 1e-8*math.Max(1, math.Abs(pl)), label)
	}
	t.Logf("polish moved in %d of 120", moved)
	require.Greater(t, moved, 0)
}
