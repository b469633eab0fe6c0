package eval

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ndpp-go/ndpp/internal/memlimit"
)

// DefaultLatentClasses is the number of components K of the latent class
// baseline (LatentClassBaseline).
const DefaultLatentClasses = 30

// DefaultLatentClassRounds is the number of EM rounds of FitLatentClass.
const DefaultLatentClassRounds = 30

// LatentClass is a latent class model of baskets: a mixture of K
// independent-items models (each a diagonal DPP),
//
//	P(S) = Σ_k π_k Π_{j∈S} θ_kj Π_{j∉S} (1 − θ_kj).
//
// It is the comparison model of learn/RANKING.md: baskets drawn mostly
// from a few latent groups of items, which it captures and one NDPP kernel
// does not. Its next-item score is the conditional gain an NDPP's MPR
// ranks by, P(Y+j)/P(Y) = Σ_k P(k | Y)·θ_kj/(1 − θ_kj). A LatentClass is
// safe for concurrent use once fitted.
type LatentClass struct {
	n, k   int
	logPi  []float64 // k: log π_k
	lodds  []float64 // n×k, item j's row j: log θ_kj/(1 − θ_kj)
	odds   []float64 // n×k: θ_kj/(1 − θ_kj)
	log1m  []float64 // k: Σ_j log(1 − θ_kj)
	counts []float64 // n: training baskets holding j (the ranking's tie-break)
}

// LatentClassOptions configures FitLatentClass. Zero values select the
// defaults.
type LatentClassOptions struct {
	// K is the number of components (default DefaultLatentClasses).
	K int
	// Rounds is the number of EM rounds (default
	// DefaultLatentClassRounds).
	Rounds int
	// Seed seeds the random soft assignment EM starts from.
	Seed uint64
	// MaxMemory is the budget in bytes of the model's tables
	// (LatentClassMemory; 0: three quarters of the machine's or the
	// process's memory limit).
	MaxMemory int64
}

// LatentClassMemory bounds the memory of FitLatentClass for n items and k
// components in bytes (two k×n tables of float64 and three of n), or -1
// when it overflows an int64.
func LatentClassMemory(n, k int) int64 {
	kn, vec := memlimit.Bytes(2, int64(n), int64(k), 8), memlimit.Bytes(3, int64(n), 8)
	if kn < 0 || vec < 0 || kn > math.MaxInt64-vec {
		return -1
	}
	return kn + vec
}

// FitLatentClass fits a latent class model to training baskets over n
// items by EM: a first M-step from a seeded random soft assignment of the
// baskets, then Rounds−1 rounds of an E-step and an M-step. Each θ_kj is
// the maximum a posteriori estimate under a Beta prior worth one basket at
// the item's overall rate (add-one smoothed), each π_k under a Dirichlet
// prior of one basket per component, so EM never decreases the posterior
// and no θ_kj is 0 or 1. A basket counts each of its items once. The cost
// is O(Rounds·(Σ|S|·K + n·K)) time and O(n·K) memory, whatever the number
// of baskets. It checks ctx every round and every 4096 baskets.
func FitLatentClass(ctx context.Context, train [][]int, n int, opt LatentClassOptions) (*LatentClass, error) {
	if opt.K == 0 {
		opt.K = DefaultLatentClasses
	}
	if opt.Rounds == 0 {
		opt.Rounds = DefaultLatentClassRounds
	}
	if n < 1 || opt.K < 1 || opt.Rounds < 1 {
		return nil, fmt.Errorf("eval: latent class model of %d items, K = %d, %d rounds; need each ≥ 1", n, opt.K, opt.Rounds)
	}
	if len(train) == 0 {
		return nil, errors.New("eval: latent class model: no training baskets")
	}
	k := opt.K
	budget := memlimit.Given(opt.MaxMemory, "LatentClassOptions.MaxMemory")
	if err := budget.Check(fmt.Sprintf("a latent class model of %d items and %d components", n, k), LatentClassMemory(n, k)); err != nil {
		return nil, err
	}
	m := &LatentClass{n: n, k: k, logPi: make([]float64, k), lodds: make([]float64, k*n), log1m: make([]float64, k), counts: make([]float64, n)}
	seen := make([]int, n) // 1 + the basket that last held j
	sets := 0
	for b, s := range train {
		for _, j := range s {
			if j < 0 || j >= n {
				return nil, fmt.Errorf("eval: latent class model: training basket %d: item %d out of range [0, %d)", b, j, n)
			}
			if seen[j] != b+1 {
				seen[j] = b + 1
				m.counts[j]++
			}
		}
		sets++
	}
	rate := make([]float64, n)
	for j := range rate {
		rate[j] = (m.counts[j] + 1) / (float64(sets) + 2)
	}
	clear(seen)
	theta, pi := make([]float64, k*n), make([]float64, k)
	w := make([]float64, k)
	rng := rand.New(rand.NewPCG(opt.Seed, 0x1a7e))
	for round := 0; round < opt.Rounds; round++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("eval: latent class model: stopped at round %d: %w", round, err)
		}
		clear(theta)
		clear(pi)
		for b, s := range train {
			if b%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, fmt.Errorf("eval: latent class model: stopped at round %d: %w", round, err)
				}
			}
			if round == 0 {
				sum := 0.0
				for c := range w {
					w[c] = rng.Float64()
					sum += w[c]
				}
				for c := range w {
					w[c] /= sum
				}
			} else {
				m.posterior(s, w, seen, round*len(train)+b+1)
			}
			for c, r := range w {
				pi[c] += r
			}
			stamp := (round+opt.Rounds)*len(train) + b + 1 // a stamp no posterior uses
			for _, j := range s {
				if seen[j] == stamp {
					continue
				}
				seen[j] = stamp
				row := theta[j*k : (j+1)*k]
				for c, r := range w {
					row[c] += r
				}
			}
		}
		clear(m.log1m)
		for j := 0; j < n; j++ {
			for c := 0; c < k; c++ {
				th := (theta[j*k+c] + rate[j]) / (pi[c] + 1)
				l1m := math.Log1p(-th)
				m.lodds[j*k+c] = math.Log(th) - l1m
				m.log1m[c] += l1m
			}
		}
		for c := 0; c < k; c++ {
			m.logPi[c] = math.Log((pi[c] + 1) / (float64(sets) + float64(k)))
		}
	}
	m.odds = theta[:k*n] // reuse: the accumulators are no longer needed
	for i, v := range m.lodds {
		m.odds[i] = math.Exp(v)
	}
	return m, nil
}

// posterior writes P(k | the basket is exactly s) into w and returns
// log P(s). With seen (len n) and a stamp not in it, a repeated item of s
// counts once; a nil seen assumes s has none.
func (m *LatentClass) posterior(s []int, w []float64, seen []int, stamp int) float64 {
	mx := math.Inf(-1)
	for c := 0; c < m.k; c++ {
		w[c] = m.logPi[c] + m.log1m[c]
	}
	for _, j := range s {
		if seen != nil {
			if seen[j] == stamp {
				continue
			}
			seen[j] = stamp
		}
		for c, v := range m.lodds[j*m.k : (j+1)*m.k] {
			w[c] += v
		}
	}
	for _, v := range w {
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

// N returns the number of items.
func (m *LatentClass) N() int { return m.n }

// K returns the number of components.
func (m *LatentClass) K() int { return m.k }

// LogProb returns log P(S) for a set of distinct items S.
func (m *LatentClass) LogProb(s []int) (float64, error) {
	for p, j := range s {
		if j < 0 || j >= m.n {
			return 0, fmt.Errorf("eval: latent class model: item %d out of range [0, %d)", j, m.n)
		}
		for _, i := range s[:p] {
			if i == j {
				return 0, fmt.Errorf("eval: latent class model: item %d repeated", j)
			}
		}
	}
	return m.posterior(s, make([]float64, m.k), nil, 0), nil
}

func (m *LatentClass) items() int   { return m.n }
func (m *LatentClass) hasTie() bool { return true }

// scoreBatch scores candidate j given Y by P(Y+j)/P(Y), training counts
// breaking ties (rankMetrics).
func (m *LatentClass) scoreBatch(ys [][]int, dst, tie [][]float64, errs []error) error {
	w := make([]float64, m.k)
	for b, y := range ys {
		m.posterior(y, w, nil, 0)
		d, t := dst[b][:m.n], tie[b][:m.n]
		for j := range d {
			v := 0.0
			for c, o := range m.odds[j*m.k : (j+1)*m.k] {
				v += w[c] * o
			}
			d[j] = v
		}
		popularityTie(d, t, m.counts, y)
		errs[b] = nil
	}
	return nil
}

// Evaluate scores the model on test baskets by the protocol of Evaluate:
// the exact test log-likelihood (TestLL, its standard error; TestLLEps
// equals it) and the next-item ranking (MPR, MPRMicro, Prec5, Prec10,
// their micro means). It computes no AUC.
func (m *LatentClass) Evaluate(ctx context.Context, test [][]int, opt Options) (*Metrics, error) {
	baskets, err := protocolBaskets(test, m.n, opt.Key)
	if err != nil {
		return nil, err
	}
	met := &Metrics{Baskets: len(baskets)}
	lls := make([]float64, len(baskets))
	w := make([]float64, m.k)
	for i, s := range baskets {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("eval: latent class model: scoring stopped at basket %d of %d: %w", i, len(baskets), err)
			}
		}
		lls[i] = m.posterior(s, w, nil, 0)
	}
	met.TestLL, met.TestLLSE = mean(lls), stdErr(lls)
	met.TestLLEps, met.TestLLEpsSE = met.TestLL, met.TestLLSE
	if err := rankMetrics(ctx, met, m, baskets, opt.Workers); err != nil {
		return nil, err
	}
	met.per.ll, met.per.llEps = lls, lls
	return met, nil
}

// LatentClassBaseline fits the latent class baseline to the training
// baskets over n items (FitLatentClass with K = DefaultLatentClasses and
// seed opt.Seed, within opt.MaxMemory) and evaluates it on test.
func LatentClassBaseline(ctx context.Context, train, test [][]int, n int, opt Options) (*Metrics, error) {
	m, err := FitLatentClass(ctx, train, n, LatentClassOptions{Seed: opt.Seed, MaxMemory: opt.MaxMemory})
	if err != nil {
		return nil, err
	}
	return m.Evaluate(ctx, test, opt)
}
