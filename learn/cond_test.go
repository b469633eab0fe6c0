package learn

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// directCond is the next-item term of condTerm written out with gonum
// determinants: log det(L_S + εI) − log Σ_c det(L_{Y+c} + εI) over the
// held-out item and the negatives.
func directCond(p *Params, s []int, t int, negs []int, eps float64) float64 {
	var y []int
	y = append(y, s[:t]...)
	y = append(y, s[t+1:]...)
	vals := []float64{}
	for _, c := range append([]int{s[t]}, negs...) {
		vals = append(vals, directLogDet(directKernel(p, append(append([]int(nil), y...), c), eps)))
	}
	mx := math.Inf(-1)
	for _, v := range vals {
		mx = math.Max(mx, v)
	}
	sum := 0.0
	for _, v := range vals {
		sum += math.Exp(v - mx)
	}
	return vals[0] - mx - math.Log(sum)
}

// The offline gradient with the next-item term matches finite differences
// of the objective written out (the held-out items and negatives drawn as
// the trainer draws them), with and without a diagonal, B = V or not.
func TestOfflineCondGradientMatchesFiniteDifferences(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		shared := seed%2 == 0
		diag := seed > 2
		const w = 0.7
		n, d := 10, 3
		train := plantedBaskets(n, 40, seed)
		batch := train[:6]
		opt := OfflineOptions{D: d, Shared: shared, Workers: 2, LowRank: !diag, Seed: seed, CondWeight: w, CondNegatives: 4}.withDefaults()
		p, err := newParams(n, d, shared, diag, seed, InitOptions{Scale: 0.5, CScale: 0.5, Share: -1})
		require.NoError(t, err)
		tr := newOfflineTrainer(p, train, opt)
		if diag {
			tr.initTheta()
		}
		require.True(t, tr.gradient(batch))
		mu := tr.counts
		conds := 0
		obj := func() float64 {
			f := regularisedObjective(p, batch, opt.Eps, mu, 0, 0)
			for q, s := range batch {
				if len(s) < 2 {
					continue
				}
				tt, negs := condChoice(opt.Seed, 0, q, s, n, opt.CondNegatives, nil)
				f += w * directCond(p, s, tt, negs, opt.Eps) / float64(len(batch))
			}
			return f
		}
		for _, s := range batch {
			if len(s) >= 2 {
				conds++
			}
		}
		require.Positive(t, conds)
		check := func(name string, x, analytic []float64) {
			fdCheckFn(t, fmt.Sprintf("seed %d %s", seed, name), x, analytic, obj, fdRelTol)
		}
		check("V", p.V, tr.g.V)
		if !shared {
			check("B", p.B, tr.g.B)
		}
		check("D", p.D, tr.g.D)
		if diag {
			check("Theta", p.Theta, tr.g.T)
		}
	}
}

// condChoice draws distinct negatives outside the basket, and all of them
// when fewer remain than asked for.
func TestCondChoice(t *testing.T) {
	s := []int{3, 1, 4}
	for step := 0; step < 50; step++ {
		tt, negs := condChoice(7, step, 2, s, 10, 5, nil)
		require.True(t, tt >= 0 && tt < len(s))
		require.Len(t, negs, 5)
		seen := map[int]bool{}
		for _, j := range negs {
			require.False(t, contains(s, j))
			require.False(t, seen[j])
			seen[j] = true
		}
		t2, negs2 := condChoice(7, step, 2, s, 10, 5, nil)
		require.Equal(t, tt, t2)
		require.Equal(t, negs, negs2)
	}
	_, negs := condChoice(1, 0, 0, s, 5, 8, nil)
	require.ElementsMatch(t, []int{0, 2}, negs)
}

// Without a weight the next-item options change nothing (the default path
// is the plain likelihood, bit for bit); with one the learner runs, stays
// finite and is deterministic.
func TestOfflineCondOffByDefault(t *testing.T) {
	data := plantedBaskets(20, 400, 8)
	opt := OfflineOptions{D: 4, Seed: 3, Batch: 50, MaxEpochs: 3, Workers: 2}
	a, err := TrainOffline(context.Background(), data, nil, 20, opt)
	require.NoError(t, err)
	opt.CondNegatives = 5
	b, err := TrainOffline(context.Background(), data, nil, 20, opt)
	require.NoError(t, err)
	require.Equal(t, a.Params, b.Params)
	opt.CondWeight = 1
	c, err := TrainOffline(context.Background(), data, nil, 20, opt)
	require.NoError(t, err)
	require.NotEqual(t, a.Params.V, c.Params.V)
	require.True(t, c.Params.finite())
	opt.Workers = 1
	e, err := TrainOffline(context.Background(), data, nil, 20, opt)
	require.NoError(t, err)
	for i := range c.Params.V {
		require.InDelta(t, c.Params.V[i], e.Params.V[i], 1e-8)
	}
}

// The validation score's next-item term is the mean of the term written
// out, with the validation draws.
func TestMeanCondValue(t *testing.T) {
	n := 12
	val := plantedBaskets(n, 30, 4)
	for _, diag := range []bool{false, true} {
		p, err := newParams(n, 3, false, diag, 2, InitOptions{Scale: 0.5, CScale: 0.5, Share: -1})
		require.NoError(t, err)
		for i := range p.Theta {
			p.Theta[i] = -1
		}
		m, err := p.Model()
		require.NoError(t, err)
		opt := OfflineOptions{Seed: 5, CondWeight: 1, CondNegatives: 3}.withDefaults()
		got, err := meanCondValue(context.Background(), m, val, opt)
		require.NoError(t, err)
		want, k := 0.0, 0
		for q, s := range val {
			if len(s) < 2 {
				continue
			}
			tt, negs := condChoice(opt.Seed, condValStep, q, s, n, 3, nil)
			want += directCond(p, s, tt, negs, opt.Eps)
			k++
		}
		require.InDelta(t, want/float64(k), got, 1e-9)
	}
}

// The full-batch learner (and the distributed driver built on it) refuses
// the next-item term rather than ignoring it.
func TestFullBatchRefusesCond(t *testing.T) {
	_, err := NewFullBatch([]float64{1, 2, 1}, 3, OfflineOptions{D: 2, CondWeight: 1})
	require.ErrorContains(t, err, "next-item")
}
