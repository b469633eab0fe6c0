package rerank

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
)

// longPolish is a request whose polish runs for minutes without bounds:
// k = 100 of N = 2000 candidates, a pool of MaxPolishPool, no ratio budget
// to speak of.
func longPolish() (*ndpp.Model, Request) {
	m := ndpp.Random(5000, 30, 7, ndpp.RandomOptions{Diag: 0.05})
	rng := rand.New(rand.NewPCG(7, 8))
	req := benchRequest(rng, m.N(), 2000, 100)
	req.Polish, req.PolishPool, req.PolishMaxRatios, req.PolishEps = true, MaxPolishPool, math.MaxInt64, 1e-12
	return m, req
}

// logValue is log det L′_S of the request's kernel for the set s (no shown
// items), from a dense LU.
func logValue(t *testing.T, m *ndpp.Model, req Request, s []int) float64 {
	v, ok := polishLogDet(t, m, req, nil, s)
	require.True(t, ok)
	return v
}

// TestRerankCancelMidPolish: a context cancelled ~50 ms into a request
// whose polish would run for minutes makes Rerank return soon (a generous
// 2 s bound) with an error wrapping context.Canceled — also with Degrade,
// which applies to deadlines only — and the workspace then serves a
// request exactly (against the dense-determinant greedy).
func TestRerankCancelMidPolish(t *testing.T) {
	if testing.Short() {
		t.Skip("long instance")
	}
	m, req := longPolish()
	var ws Workspace
	for _, degrade := range []bool{false, true} {
		req.Degrade = degrade
		ctx, cancel := context.WithCancel(context.Background())
		timer := time.AfterFunc(50*time.Millisecond, cancel)
		t0 := time.Now()
		_, err := ws.Rerank(ctx, m, req)
		el := time.Since(t0)
		timer.Stop()
		cancel()
		require.ErrorIs(t, err, context.Canceled)
		require.Less(t, el, 2*time.Second, "returned %v after the cancel", el)
		t.Logf("degrade %v: returned after %v", degrade, el)
	}
	small := ndpp.Random(30, 4, 3, ndpp.RandomOptions{Diag: 0.1})
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 20; i++ {
		checkAgainstBrute(t, &ws, small, randomRequest(rng, small.N()), "after a cancelled request")
	}
}

// TestRerankDegradedPolish: at a deadline mid-polish, a request with
// Degrade gets the best set the polish reached (DegradedPolish, never
// below the greedy's value) or, if the greedy itself was not done,
// relevance order (DegradedGreedy); without Degrade it gets an error
// wrapping context.DeadlineExceeded.
func TestRerankDegradedPolish(t *testing.T) {
	if testing.Short() {
		t.Skip("long instance")
	}
	m, req := longPolish()
	var ws, wg Workspace
	greq := req
	greq.Polish = false
	g, err := wg.Rerank(context.Background(), m, greq)
	require.NoError(t, err)
	gv := logValue(t, m, req, g.Items)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err = ws.Rerank(ctx, m, req)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)

	req.Degrade = true
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	t0 := time.Now()
	res, err := ws.Rerank(ctx, m, req)
	el := time.Since(t0)
	cancel()
	require.NoError(t, err)
	require.Less(t, el, 3*time.Second)
	t.Logf("degraded %q after %v, %d swaps", res.Degraded, el, res.PolishSwaps)
	switch res.Degraded {
	case DegradedPolish:
		require.Len(t, res.Items, req.K)
		require.Len(t, res.Gains, req.K)
		require.GreaterOrEqual(t, logValue(t, m, req, res.Items), gv-1e-9*math.Abs(gv))
		sum := 0.0
		for _, x := range res.Gains {
			sum += math.Log(x)
		}
		require.InDelta(t, logValue(t, m, req, res.Items), sum, 1e-8*math.Abs(sum))
	case DegradedGreedy: // a slow machine: checked below
	default:
		t.Fatalf("Degraded = %q; want a deadline", res.Degraded)
	}
}

// TestRerankDegradedGreedy: a deadline already passed gives relevance
// order: the choosable candidates (not shown, quality not zero) by
// decreasing quality, ties in candidate order, K of them, no gains.
func TestRerankDegradedGreedy(t *testing.T) {
	m := ndpp.Random(40, 4, 1, ndpp.RandomOptions{Diag: 0.1})
	req := Request{Candidates: []int{5, 6, 7, 8, 9, 10, 11}, Quality: []float64{1, 3, 0, 2, 3, 1, 5}, Shown: []int{11, 2}, K: 4, Degrade: true}
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	var ws Workspace
	res, err := ws.Rerank(ctx, m, req)
	require.NoError(t, err)
	require.Equal(t, DegradedGreedy, res.Degraded)
	require.Equal(t, []int{6, 9, 8, 5}, res.Items)
	require.Empty(t, res.Gains)
	// Not a deadline: an error.
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	_, err = ws.Rerank(cctx, m, req)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, errors.Is(err, context.DeadlineExceeded))
	// Without Degrade: an error.
	req.Degrade = false
	_, err = ws.Rerank(ctx, m, req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// The workspace is reusable.
	req.Degrade = true
	checkAgainstBrute(t, &ws, m, req, "after a degraded request")
}

// TestRerankPolishBudget: a small ratio budget stops the polish
// (PolishCapped) with a set never below the greedy's, whose gains are its
// own; a larger budget goes at least as far.
func TestRerankPolishBudget(t *testing.T) {
	m := ndpp.Random(400, 8, 2, ndpp.RandomOptions{Diag: 0.05})
	rng := rand.New(rand.NewPCG(2, 2))
	req := benchRequest(rng, m.N(), 200, 12)
	req.Polish, req.PolishEps = true, 1e-9
	var ws Workspace
	greq := req
	greq.Polish = false
	g, err := ws.Rerank(context.Background(), m, greq)
	require.NoError(t, err)
	gv := logValue(t, m, req, slices.Clone(g.Items))
	prev := gv
	capped := 0
	for _, budget := range []int64{1, 500, 5000, 50000, 1 << 40} {
		req.PolishMaxRatios = budget
		res, err := ws.Rerank(context.Background(), m, req)
		require.NoError(t, err)
		v := logValue(t, m, req, res.Items)
		require.GreaterOrEqual(t, v, gv-1e-9*math.Abs(gv), "budget %d", budget)
		require.GreaterOrEqual(t, v, prev-1e-9*math.Abs(prev), "budget %d", budget)
		prev = v
		if res.PolishCapped {
			capped++
		}
		t.Logf("budget %d: capped %v, swaps %d, log det %.6f (greedy %.6f)", budget, res.PolishCapped, res.PolishSwaps, v, gv)
	}
	require.GreaterOrEqual(t, capped, 2)
}
