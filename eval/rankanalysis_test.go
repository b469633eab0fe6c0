package eval

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/ndpp-go/ndpp/ndpp/npz"
)

// lowRankScorer scores candidate j given Y by Σ_{y∈Y} M̂_jy for a
// symmetric M̂ = U diag(λ) Uᵀ (rows of U: items), popularity breaking ties
// as the co-occurrence baseline does.
type lowRankScorer struct {
	n, r  int
	u     []float64 // n×r
	lam   []float64
	count []float64
}

func (s *lowRankScorer) items() int   { return s.n }
func (s *lowRankScorer) hasTie() bool { return true }

func (s *lowRankScorer) scoreBatch(ys [][]int, dst, tie [][]float64, errs []error) error {
	w := make([]float64, s.r)
	for b, y := range ys {
		clear(w)
		for _, it := range y {
			for k := 0; k < s.r; k++ {
				w[k] += s.lam[k] * s.u[it*s.r+k]
			}
		}
		d, t := dst[b][:s.n], tie[b][:s.n]
		for j := 0; j < s.n; j++ {
			var v float64
			for k := 0; k < s.r; k++ {
				v += s.u[j*s.r+k] * w[k]
			}
			d[j] = v
		}
		popularityTie(d, t, s.count, y)
		errs[b] = nil
	}
	return nil
}

// TestRankAnalysis measures what rank the co-occurrence baseline's score
// matrix needs (the paper MPR of its best rank-r approximations) and the
// share of test baskets with |Y| = 1, on the split of `ndpp-bench learn`.
// It runs only when NDPP_RANK_DATA names a basket file (NDPP_RANK_SEED,
// NDPP_RANK_MODEL: a model learned on the same split, to compare by |Y|;
// NDPP_RANK_ON_TRAIN: rank 2,000 training baskets instead, in-sample;
// NDPP_RANK_NO_SPECTRAL: skip the approximations).
func TestRankAnalysis(t *testing.T) {
	a := loadAnalysisSplit(t, "NDPP_RANK_DATA", "NDPP_RANK_SEED")
	train, test, n, keys, seed := a.train, a.test, a.n, a.keys, a.seed
	if os.Getenv("NDPP_RANK_ON_TRAIN") != "" {
		// In-sample: the "test" baskets are 2,000 of the training baskets.
		test = train[:min(2000, len(train))]
	}
	ctx := context.Background()
	opt := Options{Seed: seed, Key: keys}
	co, err := CountCooccurrence(train, n, DefaultCooccurPairs, 0)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := protocolBaskets(test, n, keys)
	if err != nil {
		t.Fatal(err)
	}
	hist := map[int]int{}
	pred := 0
	for _, s := range pb {
		if len(s) >= 2 {
			hist[min(len(s)-1, 10)]++
			pred++
		}
	}
	var hs []string
	for k := 1; k <= 10; k++ {
		hs = append(hs, fmt.Sprintf("%d:%.3f", k, float64(hist[k])/float64(pred)))
	}
	t.Logf("n = %d, %d train, %d predictable test baskets; |Y| shares (10 = ≥10): %s", n, len(train), pred, strings.Join(hs, " "))
	bySize := func(name string, sc candidateScorer) {
		for _, cut := range [][2]int{{1, 1}, {2, 4}, {5, 1 << 30}} {
			var sub [][]int
			for _, s := range pb {
				if len(s) >= 2 && len(s)-1 >= cut[0] && len(s)-1 <= cut[1] {
					sub = append(sub, s)
				}
			}
			met := &Metrics{}
			if err := rankMetrics(ctx, met, sc, sub, 0); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s |Y| in [%d, %d] (%d baskets): micro MPR %.2f", name, cut[0], min(cut[1], 999), len(sub), met.MPRMicro)
		}
	}
	cs, err := co.scorer(n, DefaultCooccurNorm)
	if err != nil {
		t.Fatal(err)
	}
	met := &Metrics{}
	if err := rankMetrics(ctx, met, cs, pb, 0); err != nil {
		t.Fatal(err)
	}
	t.Logf("co-occurrence: paper MPR %.2f, micro %.2f", met.MPR, met.MPRMicro)
	bySize("popularity", &lowRankScorer{n: n, count: cs.count})
	bySize("co-occurrence", cs)
	if mp := os.Getenv("NDPP_RANK_MODEL"); mp != "" {
		m, err := npz.Load(mp)
		if err != nil {
			t.Fatal(err)
		}
		mm, err := Evaluate(ctx, m, test, opt)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("model %s: paper MPR %.2f, micro %.2f", mp, mm.MPR, mm.MPRMicro)
		bySize("model", modelScorer{m})
	}
	if os.Getenv("NDPP_RANK_NO_SPECTRAL") != "" {
		return
	}
	// The top eigenpairs (by |λ|) of the cosine matrix (zero diagonal), by
	// subspace iteration on a block of 300 with 8 multiplications and a
	// Rayleigh–Ritz step.
	block, iters := min(300, n), 8
	mulM := func(x *mat.Dense) *mat.Dense {
		y := mat.NewDense(n, block, nil)
		for i := 0; i < n; i++ {
			yi := y.RawRowView(i)
			for p := cs.start[i]; p < cs.start[i+1]; p++ {
				j := int(cs.nbr[p])
				w := cs.weight(cs.w[p], cs.count[i], cs.count[j])
				for k, v := range x.RawRowView(j) {
					yi[k] += w * v
				}
			}
		}
		return y
	}
	rng := rand.New(rand.NewPCG(1, 2))
	x := mat.NewDense(n, block, nil)
	for i := 0; i < n; i++ {
		for k := 0; k < block; k++ {
			x.Set(i, k, rng.NormFloat64())
		}
	}
	orth := func(y *mat.Dense) *mat.Dense {
		var qr mat.QR
		qr.Factorize(y)
		var q mat.Dense
		qr.QTo(&q)
		return mat.DenseCopyOf(q.Slice(0, n, 0, block))
	}
	x = orth(x)
	for it := 0; it < iters; it++ {
		x = orth(mulM(x))
	}
	var tm mat.Dense
	tm.Mul(x.T(), mulM(x))
	ts := mat.NewSymDense(block, nil)
	for i := 0; i < block; i++ {
		for j := i; j < block; j++ {
			ts.SetSym(i, j, (tm.At(i, j)+tm.At(j, i))/2)
		}
	}
	var es mat.EigenSym
	if !es.Factorize(ts, true) {
		t.Fatal("eigendecomposition failed")
	}
	vals := es.Values(nil)
	var ev, vecs mat.Dense
	es.VectorsTo(&ev)
	vecs.Mul(x, &ev)
	order := make([]int, block)
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(x, y int) bool { return math.Abs(vals[order[x]]) > math.Abs(vals[order[y]]) })
	pos := 0
	for _, v := range vals {
		if v > 0 {
			pos++
		}
	}
	n2 := block
	at := func(k int) float64 { return math.Abs(vals[order[min(k, n2-1)]]) }
	t.Logf("Ritz values: %d positive of %d; largest |λ| %.3g, 30th %.3g, 100th %.3g, 200th %.3g", pos, n2, at(0), at(29), at(99), at(199))
	for _, mode := range []string{"abs", "pos"} {
		sel := order
		if mode == "pos" {
			sel = nil
			for _, k := range order {
				if vals[k] > 0 {
					sel = append(sel, k)
				}
			}
		}
		for _, r := range []int{10, 30, 60, 100, 200} {
			if r > len(sel) {
				break
			}
			s := &lowRankScorer{n: n, r: r, u: make([]float64, n*r), lam: make([]float64, r), count: cs.count}
			for k := 0; k < r; k++ {
				s.lam[k] = vals[sel[k]]
				for i := 0; i < n; i++ {
					s.u[i*r+k] = vecs.At(i, sel[k])
				}
			}
			met := &Metrics{}
			if err := rankMetrics(ctx, met, s, pb, 0); err != nil {
				t.Fatal(err)
			}
			t.Logf("rank %d (%s): paper MPR %.2f, micro %.2f", r, mode, met.MPR, met.MPRMicro)
			if r == 30 || r == 100 {
				bySize(fmt.Sprintf("rank %d (%s)", r, mode), s)
			}
		}
	}
}
