package eval_test

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/eval"
	"github.com/ndpp-go/ndpp/learn"
	"github.com/ndpp-go/ndpp/ndpp"
)

// ndppMixture is P(S) = Σ_k π_k det(L_k,S)/det(I + L_k), a mixture of
// NDPPs: the prototype of eval/MIXTURES.md, for TestNDPPMixtureAnalysis.
// Its next-item score is P(Y+j)/P(Y) = Σ_k P(k | Y)·g_kj(Y), with g_k the
// components' conditional gains.
type ndppMixture struct {
	n      int
	logPi  []float64
	ms     []*ndpp.Model
	counts []float64 // the ranking's tie-break
}

// logJoint returns log π_k P_k(S) for every component.
func (m *ndppMixture) logJoint(s []int) []float64 {
	lw := make([]float64, len(m.ms))
	for k, mod := range m.ms {
		ld := 0.0
		if len(s) > 0 {
			var sign float64
			var err error
			ld, sign, err = mod.LogDet(s)
			if err != nil || sign <= 0 {
				ld = math.Inf(-1)
			}
		}
		lw[k] = m.logPi[k] + ld - mod.LogNormalizer()
	}
	return lw
}

// logProb returns log P(S).
func (m *ndppMixture) logProb(s []int) float64 {
	lw := m.logJoint(s)
	mx := math.Inf(-1)
	for _, v := range lw {
		mx = max(mx, v)
	}
	sum := 0.0
	for _, v := range lw {
		sum += math.Exp(v - mx)
	}
	return mx + math.Log(sum)
}

// scorer ranks candidates by the mixture's score (eval's ranking).
func (m *ndppMixture) scorer() eval.TestScorer { return eval.TestScorer{N: m.n, Score: m.scoreBatch} }

func (m *ndppMixture) scoreBatch(ys [][]int, dst, tie [][]float64, errs []error) error {
	g := make([]float64, m.n)
	for b, y := range ys {
		lw := m.logJoint(y)
		lp := m.logProb(y)
		d, t := dst[b][:m.n], tie[b][:m.n]
		clear(d)
		for k, mod := range m.ms {
			wk := math.Exp(lw[k] - lp)
			if wk == 0 {
				continue
			}
			if err := mod.ConditionalGains(y, g); err != nil {
				return err
			}
			for j := range d {
				d[j] += wk * g[j]
			}
		}
		eval.PopularityTie(d, t, m.counts, y)
		errs[b] = nil
	}
	return nil
}

// TestNDPPMixtureExact checks the mixture's score against the ratio of its
// probabilities from determinants, on random small components.
func TestNDPPMixtureExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 10; trial++ {
		n, d, k := 6+rng.IntN(4), 1+rng.IntN(3), 1+rng.IntN(3)
		m := &ndppMixture{n: n, counts: make([]float64, n)}
		for c := 0; c < k; c++ {
			m.ms = append(m.ms, ndpp.Random(n, d, uint64(10*trial+c), ndpp.RandomOptions{Diag: 0.3}))
			m.logPi = append(m.logPi, math.Log(1/float64(k)))
		}
		y := rng.Perm(n)[:1+rng.IntN(3)]
		dst, tie := [][]float64{make([]float64, n)}, [][]float64{make([]float64, n)}
		require.NoError(t, m.scoreBatch([][]int{y}, dst, tie, make([]error, 1)))
		for j := 0; j < n; j++ {
			in := false
			for _, i := range y {
				in = in || i == j
			}
			if in {
				require.Zero(t, dst[0][j])
				continue
			}
			want := math.Exp(m.logProb(append(append([]int(nil), y...), j)) - m.logProb(y))
			require.InDelta(t, want, dst[0][j], 1e-9*math.Max(1, want), "trial %d j %d", trial, j)
		}
	}
}

// TestNDPPMixtureAnalysis measures a first mixture of NDPPs (eval/MIXTURES.md):
// the training and validation baskets are split by their most likely
// component under the latent class baseline of K components
// (NDPP_MIX_K, default 30), an NDPP with the defaults is learned on each
// part of at least 30 baskets, and π_k is the part's share. It reports the
// paper MPR and the exact test LL beside the latent class model's. It runs
// only when NDPP_MIX_DATA names a basket file (NDPP_MIX_SEED: the split's
// seed).
func TestNDPPMixtureAnalysis(t *testing.T) {
	train, val, test, n, keys, seed := eval.AnalysisSplit(t, "NDPP_MIX_DATA", "NDPP_MIX_SEED")
	k := 30
	if v := os.Getenv("NDPP_MIX_K"); v != "" {
		x, err := strconv.Atoi(v)
		require.NoError(t, err)
		k = x
	}
	ctx := context.Background()
	lc, err := eval.FitLatentClass(ctx, train, n, eval.LatentClassOptions{K: k, Seed: seed})
	require.NoError(t, err)
	w := make([]float64, k)
	split := func(bs [][]int) [][][]int {
		parts := make([][][]int, k)
		for _, s := range bs {
			lc.Posterior(s, w)
			best := 0
			for c := range w {
				if w[c] > w[best] {
					best = c
				}
			}
			parts[best] = append(parts[best], s)
		}
		return parts
	}
	tp, vp := split(train), split(val)
	mix := &ndppMixture{n: n, counts: lc.Counts()}
	total := 0
	for c := 0; c < k; c++ {
		if len(tp[c]) < 30 {
			continue
		}
		res, err := learn.TrainOffline(ctx, tp[c], vp[c], n, learn.OfflineOptions{Seed: seed})
		require.NoError(t, err)
		m, err := res.Params.Model()
		require.NoError(t, err)
		mix.ms = append(mix.ms, m)
		mix.logPi = append(mix.logPi, float64(len(tp[c])))
		total += len(tp[c])
	}
	for c := range mix.logPi {
		mix.logPi[c] = math.Log(mix.logPi[c] / float64(total))
	}
	pb, err := eval.ProtocolBaskets(test, n, keys)
	require.NoError(t, err)
	ll := 0.0
	for _, s := range pb {
		ll += mix.logProb(s)
	}
	met, err := eval.RankMetrics(ctx, mix.scorer(), pb)
	require.NoError(t, err)
	lcm, err := lc.Evaluate(ctx, test, eval.Options{Seed: seed, Key: keys})
	require.NoError(t, err)
	t.Logf("mixture of %d NDPPs: paper MPR %.2f, micro %.2f, Prec@5 %.1f, test LL %.3f; latent class (K = %d): MPR %.2f, test LL %.3f",
		len(mix.ms), met.MPR, met.MPRMicro, met.Prec5, ll/float64(len(pb)), k, lcm.MPR, lcm.TestLL)
}
