package learn

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// latentClass is a mixture of K independent-items models (a latent class
// model; each component is a diagonal DPP):
// P(S) = Σ_k π_k Π_{j∈S} θ_kj Π_{j∉S} (1 − θ_kj). It is the comparison
// of TestLatentClassAnalysis, not a learner of the package.
type latentClass struct {
	n, k   int
	logPi  []float64 // k
	lodds  []float64 // k×n, log θ_kj/(1 − θ_kj)
	odds   []float64 // k×n, θ_kj/(1 − θ_kj)
	log1m  []float64 // k, Σ_j log(1 − θ_kj)
	counts []float64 // training counts, the ranking's tie-break
}

// fitLatentClass fits K components to the training baskets by EM from a
// seeded random soft assignment, iters rounds; each θ_kj is smoothed by
// one pseudo-basket at the item's overall rate.
func fitLatentClass(train [][]int, n, k, iters int, seed uint64) *latentClass {
	rng := rand.New(rand.NewPCG(seed, 3))
	m := &latentClass{n: n, k: k, logPi: make([]float64, k), lodds: make([]float64, k*n), log1m: make([]float64, k), counts: make([]float64, n)}
	for _, s := range train {
		for _, it := range s {
			m.counts[it]++
		}
	}
	prior := make([]float64, n)
	for j := range prior {
		prior[j] = (m.counts[j] + 1) / (float64(len(train)) + 2)
	}
	resp := make([]float64, len(train)*k)
	for b := range train {
		r := resp[b*k : (b+1)*k]
		sum := 0.0
		for c := range r {
			r[c] = rng.Float64()
			sum += r[c]
		}
		for c := range r {
			r[c] /= sum
		}
	}
	theta, pi := make([]float64, k*n), make([]float64, k)
	for it := 0; it < iters; it++ {
		clear(theta)
		clear(pi)
		for b, s := range train {
			for c, r := range resp[b*k : (b+1)*k] {
				pi[c] += r
				for _, j := range s {
					theta[c*n+j] += r
				}
			}
		}
		for c := 0; c < k; c++ {
			m.log1m[c] = 0
			for j := 0; j < n; j++ {
				th := (theta[c*n+j] + prior[j]) / (pi[c] + 1)
				m.lodds[c*n+j] = math.Log(th / (1 - th))
				m.log1m[c] += math.Log1p(-th)
			}
			m.logPi[c] = math.Log((pi[c] + 1) / (float64(len(train)) + float64(k)))
		}
		for b, s := range train {
			m.posterior(s, resp[b*k:(b+1)*k])
		}
	}
	m.odds = make([]float64, len(m.lodds))
	for i, v := range m.lodds {
		m.odds[i] = math.Exp(v)
	}
	return m
}

// posterior writes P(k | the basket is exactly s) into w and returns
// log P(s).
func (m *latentClass) posterior(s []int, w []float64) float64 {
	mx := math.Inf(-1)
	for c := 0; c < m.k; c++ {
		v := m.logPi[c] + m.log1m[c]
		for _, j := range s {
			v += m.lodds[c*m.n+j]
		}
		w[c] = v
		mx = max(mx, v)
	}
	sum := 0.0
	for c := range w {
		w[c] = math.Exp(w[c] - mx)
		sum += w[c]
	}
	for c := range w {
		w[c] /= sum
	}
	return mx + math.Log(sum)
}

func (m *latentClass) items() int   { return m.n }
func (m *latentClass) hasTie() bool { return true }

// scoreBatch scores j given Y by P(Y+j)/P(Y) = Σ_k P(k | Y)·θ_kj/(1 − θ_kj),
// the conditional gain an NDPP's MPR ranks by.
func (m *latentClass) scoreBatch(ys [][]int, dst, tie [][]float64, errs []error) error {
	w := make([]float64, m.k)
	for b, y := range ys {
		m.posterior(y, w)
		d, t := dst[b][:m.n], tie[b][:m.n]
		clear(d)
		for c, wc := range w {
			for j, o := range m.odds[c*m.n : (c+1)*m.n] {
				d[j] += wc * o
			}
		}
		for j := range t {
			t[j] = m.counts[j] + 1
		}
		for _, it := range y {
			d[it], t[it] = 0, 0
		}
		errs[b] = nil
	}
	return nil
}

// TestLatentClassExact checks the comparison model against enumeration on
// small catalogues: its probabilities sum to one over all subsets, and its
// ranking score is P(Y+j)/P(Y).
func TestLatentClassExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for trial := 0; trial < 10; trial++ {
		n, k := 4+rng.IntN(5), 1+rng.IntN(4)
		train := plantedBaskets(n, 60, uint64(trial))
		m := fitLatentClass(train, n, k, 5, uint64(trial))
		w := make([]float64, k)
		logP := func(mask int) float64 {
			var s []int
			for j := 0; j < n; j++ {
				if mask&(1<<j) != 0 {
					s = append(s, j)
				}
			}
			return m.posterior(s, w)
		}
		total := 0.0
		for mask := 0; mask < 1<<n; mask++ {
			total += math.Exp(logP(mask))
		}
		require.InDelta(t, 1, total, 1e-12, "trial %d", trial)
		y := []int{0, 2}
		dst, tie := [][]float64{make([]float64, n)}, [][]float64{make([]float64, n)}
		require.NoError(t, m.scoreBatch([][]int{y}, dst, tie, make([]error, 1)))
		for j := 0; j < n; j++ {
			if j == 0 || j == 2 {
				require.Zero(t, dst[0][j])
				continue
			}
			want := math.Exp(logP(1|4|1<<j) - logP(1|4))
			require.InDelta(t, want, dst[0][j], 1e-12*math.Max(1, want), "trial %d j %d", trial, j)
		}
	}
}

// TestLatentClassAnalysis compares the NDPPs with a latent class model, a
// mixture of K independent-items models fitted by EM, on the split of
// `ndpp-bench learn` (paper MPR, Prec@5 and the exact test log-likelihood
// over the same test baskets as Evaluate). It runs only when
// NDPP_MIX_DATA names a basket file (NDPP_MIX_SEED: the split's seed).
func TestLatentClassAnalysis(t *testing.T) {
	path := os.Getenv("NDPP_MIX_DATA")
	if path == "" {
		t.Skip("NDPP_MIX_DATA not set")
	}
	seed := uint64(1)
	if v := os.Getenv("NDPP_MIX_SEED"); v != "" {
		x, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err)
		seed = x
	}
	voc, _ := ndpp.NewVocab(nil)
	data, err := baskets.ReadFile(path, baskets.LineOptions{Vocab: voc, Grow: true, Tokens: baskets.AutoTokens})
	require.NoError(t, err)
	train, _, test, err := baskets.HoldOutSlice(data, 300, 2000, seed)
	require.NoError(t, err)
	n := voc.Len()
	keys := make([]int64, 0, n)
	for i := 0; i < n; i++ {
		k, err := strconv.ParseInt(voc.Token(i), 10, 64)
		if err != nil {
			keys = nil
			break
		}
		keys = append(keys, k)
	}
	pb, err := protocolBaskets(test, n, keys)
	require.NoError(t, err)
	for _, k := range []int{10, 30, 100} {
		m := fitLatentClass(train, n, k, 30, seed)
		met := &Metrics{}
		require.NoError(t, rankMetrics(context.Background(), met, m, pb, 0))
		w := make([]float64, k)
		ll := 0.0
		for _, s := range pb {
			ll += m.posterior(s, w)
		}
		t.Logf("K = %d: paper MPR %.2f, micro %.2f, Prec@5 %.1f; test LL %.3f", k, met.MPR, met.MPRMicro, met.Prec5, ll/float64(len(pb)))
	}
}
