package rerank

import (
	"context"
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
