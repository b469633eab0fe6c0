package rerank

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
	"github.com/ndpp-go/ndpp/ndpp"
)

// sampleLaw enumerates the K-subsets Y of the candidates with a positive
// quality that are not shown, and returns them with their probabilities
// P(Y) ∝ det L′_{F ∪ Y} = (Π_{y∈Y} q_y²)·det L_{F ∪ Y} (F: the shown items
// conditioned on, all kept here).
func sampleLaw(t *testing.T, m *ndpp.Model, cands []int, q []float64, f []int, k int) (sets [][]int, probs []float64) {
	t.Helper()
	var pool []int
	q2 := map[int]float64{}
	for p, c := range cands {
		if slices.Contains(f, c) || q != nil && q[p] == 0 {
			continue
		}
		pool = append(pool, c)
		q2[c] = 1
		if q != nil {
			q2[c] = q[p] * q[p]
		}
	}
	var rec func(start int, cur []int)
	z := 0.0
	rec = func(start int, cur []int) {
		if len(cur) == k {
			items := append(slices.Clone(f), cur...)
			l, err := m.Kernel(items)
			require.NoError(t, err)
			v := math.Max(0, mat.Det(l))
			for _, c := range cur {
				v *= q2[c]
			}
			sets = append(sets, slices.Sorted(slices.Values(cur)))
			probs = append(probs, v)
			z += v
			return
		}
		for i := start; i < len(pool); i++ {
			rec(i+1, append(cur, pool[i]))
		}
	}
	rec(0, nil)
	for i := range probs {
		probs[i] /= z
	}
	return sets, probs
}

// TestRerankSampleChiSquare: the sampled lists, as sets, follow
// det L′_{F ∪ Y} over the K-sets of choosable candidates (chi-square over
// seeds), with quality, shown items and a window, on kernels with and
// without a diagonal; each list is in greedy order given F with the gains
// of that order, LogValue = log det L′_{F∪Y} − log det L′_F.
func TestRerankSampleChiSquare(t *testing.T) {
	const samples = 4000
	ctx := context.Background()
	for _, c := range []struct {
		name string
		m    *ndpp.Model
		req  Request
		f    []int // the shown items conditioned on
	}{
		{"diag, quality, shown", ndpp.Random(14, 3, 4, ndpp.RandomOptions{Diag: 0.3}),
			Request{Candidates: []int{0, 1, 2, 3, 4, 5, 6, 12}, Quality: []float64{1, 0.5, 2, 1, 0, 1.5, 0.8, 1}, Shown: []int{12, 9}, K: 3}, []int{12, 9}},
		{"diag, window 1", ndpp.Random(14, 3, 5, ndpp.RandomOptions{Diag: 0.3}),
			Request{Candidates: []int{0, 1, 2, 3, 4, 5, 6, 7}, Shown: []int{10, 11}, Window: 1, K: 4}, []int{11}},
		{"no diagonal, relevance", ndpp.Random(14, 3, 6, ndpp.RandomOptions{}),
			Request{Candidates: []int{0, 1, 2, 3, 4, 5, 6, 7, 8}, Relevance: []float64{1, 2, 3, 1, 2, 3, 1, 2, 3}, Theta: 0.4, Shown: []int{13}, K: 3}, []int{13}},
	} {
		req := c.req
		req.Sample = true
		var q []float64
		switch {
		case req.Quality != nil:
			q = req.Quality
		case req.Relevance != nil:
			alpha := req.Theta / (2 * (1 - req.Theta))
			for _, r := range req.Relevance {
				q = append(q, math.Exp(alpha*(r-3)))
			}
		}
		sets, probs := sampleLaw(t, c.m, req.Candidates, q, c.f, req.K)
		index := map[string]int{}
		for i, s := range sets {
			b, _ := json.Marshal(s)
			index[string(b)] = i
		}
		counts := make([]int, len(sets))
		var ws Workspace
		tries := 0
		ldF := 0.0
		if len(c.f) > 0 {
			ldF, _, _ = c.m.LogDet(c.f)
		}
		for seed := uint64(0); seed < samples; seed++ {
			req.Seed = seed
			res, err := ws.Rerank(ctx, c.m, req)
			require.NoError(t, err, c.name)
			require.Len(t, res.Items, req.K)
			require.Len(t, res.Gains, req.K)
			set := slices.Sorted(slices.Values(res.Items))
			b, _ := json.Marshal(set)
			i, ok := index[string(b)]
			require.True(t, ok, "%s: %v is not a K-set of choosable candidates", c.name, set)
			counts[i]++
			tries += res.SampleTries
			if seed < 20 {
				// Greedy order given F, and LogValue the set's conditional log det.
				ld, _, err := c.m.LogDet(append(slices.Clone(c.f), set...))
				require.NoError(t, err)
				for _, it := range set {
					p := slices.Index(req.Candidates, it)
					if q != nil {
						ld += 2 * math.Log(q[p])
					}
				}
				require.InDelta(t, ld-ldF, res.LogValue, 1e-8, c.name)
				// Each step takes the remaining item of the set with the
				// largest gain given F and the items before it.
				prefix := slices.Clone(c.f)
				logQ2 := func(it int) float64 {
					if q == nil {
						return 0
					}
					return 2 * math.Log(q[slices.Index(req.Candidates, it)])
				}
				for s, it := range res.Items {
					base := 0.0
					if len(prefix) > 0 {
						base, _, _ = c.m.LogDet(prefix)
					}
					gain := func(x int) float64 {
						l, _, err := c.m.LogDet(append(slices.Clone(prefix), x))
						require.NoError(t, err)
						return math.Exp(l - base + logQ2(x))
					}
					g := gain(it)
					require.InDelta(t, g, res.Gains[s], 1e-8*g, c.name)
					for _, other := range res.Items[s+1:] {
						require.LessOrEqual(t, gain(other), g*(1+1e-9), "%s: step %d is not the greedy's", c.name, s)
					}
					prefix = append(prefix, it)
				}
			}
		}
		stat, df, p := ndpptest.ChiSquare(counts, probs, samples)
		t.Logf("%-24s %d sets: chi-square %.2f, df %d, p = %.3f; %.2f tries per sample", c.name, len(sets), stat, df, p, float64(tries)/samples)
		require.Greater(t, p, 1e-3, c.name)
	}
}

// TestRerankSampleSeed: the same seed gives the same list, other seeds
// other lists; new items can be drawn.
func TestRerankSampleSeed(t *testing.T) {
	m := ndpp.Random(200, 5, 2, ndpp.RandomOptions{Diag: 0.05})
	rng := rand.New(rand.NewPCG(1, 1))
	cands := slices.Clone(rng.Perm(200)[:60])
	newItem := ndpp.Item{ID: 1000, V: make([]float64, 5), B: make([]float64, 5), Delta: 5}
	cands = append(cands, 1000)
	req := Request{Candidates: cands, NewItems: []ndpp.Item{newItem}, K: 8, Shown: []int{cands[0], cands[1]}, Sample: true, Seed: 42}
	var ws Workspace
	a, err := ws.Rerank(context.Background(), m, req)
	require.NoError(t, err)
	first := slices.Clone(a.Items)
	var ws2 Workspace
	b, err := ws2.Rerank(context.Background(), m, req)
	require.NoError(t, err)
	require.Equal(t, first, b.Items)
	distinct := map[string]bool{}
	sawNew := false
	for seed := uint64(0); seed < 40; seed++ {
		req.Seed = seed
		res, err := ws.Rerank(context.Background(), m, req)
		require.NoError(t, err)
		require.NotContains(t, res.Items, cands[0])
		sawNew = sawNew || slices.Contains(res.Items, 1000)
		js, _ := json.Marshal(slices.Sorted(slices.Values(res.Items)))
		distinct[string(js)] = true
	}
	require.Greater(t, len(distinct), 30)
	require.True(t, sawNew, "the new item (δ = 5) was never drawn")
}

// TestRerankSampleRefusals: sample with polish, constraints or θ = 1 is
// refused, as is a K no set of candidates reaches.
func TestRerankSampleRefusals(t *testing.T) {
	m := ndpp.Random(30, 2, 3, ndpp.RandomOptions{})
	base := Request{Candidates: []int{0, 1, 2, 3, 4, 5}, K: 2, Sample: true}
	var ws Workspace
	for _, c := range []struct {
		edit  func(*Request)
		field string
	}{
		{func(r *Request) { r.Polish = true }, "polish"},
		{func(r *Request) {
			r.Attributes = map[string][]string{"a": {"x", "x", "y", "y", "z", "z"}}
			r.Constraints = []Constraint{{Attribute: "a", MaxRun: 1}}
		}, "constraints"},
		{func(r *Request) { r.Relevance, r.Theta = []float64{1, 2, 3, 4, 5, 6}, 1 }, "theta"},
		{func(r *Request) { r.K = 5 }, "k"},                                         // rank 2d = 4
		{func(r *Request) { r.K, r.Shown = 3, []int{10, 11} }, "k"},                 // rank 4 given 2 shown: 2
		{func(r *Request) { r.K, r.Quality = 2, []float64{1, 0, 0, 0, 0, 0} }, "k"}, // one choosable
	} {
		req := base
		c.edit(&req)
		_, err := ws.Rerank(context.Background(), m, req)
		var re *RequestError
		require.ErrorAs(t, err, &re, c.field)
		require.Equal(t, c.field, re.Field, "%v", err)
		t.Log(err)
	}
}

// TestRerankSampleDeadline: a sample whose deadline has passed answers in
// relevance order with DegradedSample (or fails without Degrade); a
// cancelled context is an error.
func TestRerankSampleDeadline(t *testing.T) {
	m := ndpp.Random(200, 5, 2, ndpp.RandomOptions{Diag: 0.05})
	req := Request{Candidates: []int{5, 6, 7, 8, 9, 10}, Quality: []float64{0.1, 0.9, 0.5, 0.2, 0.8, 0.3}, K: 3, Sample: true, Seed: 1, Degrade: true}
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	var ws Workspace
	res, err := ws.Rerank(ctx, m, req)
	require.NoError(t, err)
	require.Equal(t, DegradedSample, res.Degraded)
	require.Equal(t, []int{6, 9, 7}, res.Items)
	require.Empty(t, res.Gains)
	req.Degrade = false
	_, err = ws.Rerank(ctx, m, req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	req.Degrade = true
	_, err = ws.Rerank(cctx, m, req)
	require.ErrorIs(t, err, context.Canceled)
}

// TestRerankSampleJSON: "sample" needs a "seed" and a "seed" needs
// "sample"; both reach the Request.
func TestRerankSampleJSON(t *testing.T) {
	m := ndpp.Random(20, 2, 3, ndpp.RandomOptions{})
	for _, c := range []struct {
		body, err string
	}{
		{`{"candidates": [1, 2, 3], "k": 2, "sample": true}`, "seed: missing"},
		{`{"candidates": [1, 2, 3], "k": 2, "seed": 4}`, "seed: given without sample"},
		{`{"candidates": [1, 2, 3], "k": 2, "sample": true, "seed": 18446744073709551615}`, ""},
	} {
		var j JSONRequest
		require.NoError(t, json.Unmarshal([]byte(c.body), &j))
		rq, err := j.Request(m)
		if c.err != "" {
			require.ErrorContains(t, err, c.err)
			continue
		}
		require.NoError(t, err)
		require.True(t, rq.Sample)
		require.Equal(t, uint64(math.MaxUint64), rq.Seed)
	}
}
