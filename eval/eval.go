package eval

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/ndpp-go/ndpp/ndpp"
)

// Options configures Evaluate.
type Options struct {
	// Seed seeds the random negative baskets of the AUC.
	Seed uint64
	// Key, when non-nil, gives each row's item id for the protocol's sort
	// ("baskets sorted by item id", hold out the highest id). Nil means
	// the row index is the id. The ids choose the held-out item, so MPR
	// and Prec@k compare with a published figure only under the ids the
	// publication used (on UK Online Retail, the reference loader's order
	// moves the paper MPR by about a point against the basket file's order
	// of first appearance; learn/RESULTS.md).
	Key []int64
	// Workers scores baskets in parallel (≤ 0: GOMAXPROCS).
	Workers int
	// Eps is ε of the basket term log det(L_S + εI) of Metrics.TestLLEps
	// and the AUC: 0 means DefaultEps, negative means none (TestLLEps is
	// then TestLL). TestLL never uses ε.
	Eps float64
	// MaxMemory is the memory budget in bytes of the co-occurrence counts
	// of CooccurrenceBaseline (NewCooccurrence; 0: three quarters of the
	// machine's or the process's memory limit).
	MaxMemory int64
}

// DefaultEps is the ε of the regularised basket term log det(L_S + εI)
// that the learners maximise and Evaluate reports (Gartrell et al.'s code
// uses the same value in training, validation, the test log-likelihood and
// the AUC). It makes the term finite for every basket, also for baskets
// larger than a low-rank kernel's rank 2d, whose probability under the
// model itself is 0; for other baskets it changes the value by O(ε).
const DefaultEps = 1e-5

// resolveEps applies the Eps convention of Options and the learners'
// options: 0 means DefaultEps, negative means 0.
func resolveEps(e float64) float64 {
	switch {
	case e == 0:
		return DefaultEps
	case e < 0:
		return 0
	}
	return e
}

// Metrics are the evaluation figures of a model on test baskets. The
// unsuffixed fields follow the reference code's ("paper") protocol, the
// Micro fields are plain means over the test baskets. MPR and Prec@k are in
// percent, AUC in [0, 1].
type Metrics struct {
	// TestLL is the test log-likelihood: the mean over the test baskets of
	// log P(S) = log det L_S − log det(L + I), the figure Model.LogLikelihood
	// returns. It is −Inf when a test basket has probability 0 under the
	// model (ZeroProb > 0, e.g. a basket beyond MaxRank).
	TestLL float64
	// TestLLEps is the learners' regularised figure: the mean of
	// log det(L_S + εI) − log det(L + I) over the test baskets (ε = Eps),
	// finite also for baskets beyond MaxRank; for other baskets it differs
	// from TestLL by O(ε).
	TestLLEps                                   float64
	MPR                                         float64
	AUC                                         float64
	Prec5                                       float64
	Prec10                                      float64
	MPRMicro, AUCMicro, Prec5Micro, Prec10Micro float64
	// AUCPaired is the share of test baskets that score above their own
	// random basket of the same size (ties count one half): the AUC's
	// comparison restricted to baskets of equal size. AUC and AUCMicro
	// also compare baskets of different sizes, whose scores differ by
	// about log δ per item, so they depend on how the test baskets' sizes
	// spread within (or across) the bins as much as on the model.
	AUCPaired float64
	// Standard errors of TestLL, TestLLEps, MPR, MPRMicro and AUCPaired over the test
	// baskets: the sample standard deviation of the per-basket values over
	// √count; for MPR the bins' means are taken as independent, √(Σ_b se_b²)
	// over the number of bins. NaN when a mean rests on fewer than two
	// values or is not finite. Two models scored on the same test baskets
	// err together, so their difference is usually known better than these
	// suggest: Paired measures it.
	TestLLSE, TestLLEpsSE, MPRSE, MPRMicroSE, AUCPairedSE float64

	Eps       float64 // ε of TestLLEps and of the AUC's basket scores
	Baskets   int     // test baskets scored (LL, AUC)
	Predicted int     // baskets with ≥ 2 items used for MPR and Prec@k
	Skipped   int     // baskets whose conditioning set had a zero determinant
	// BeyondRank counts the test baskets with more items than the model's
	// MaxRank (2d for a kernel without a diagonal): their probability under
	// the model is 0, and their term in TestLLEps is finite only through ε.
	BeyondRank int
	// ZeroProb counts the test baskets of probability 0 under the model,
	// det L_S = 0 (linearly dependent items or more than MaxRank of them);
	// any makes TestLL −Inf.
	ZeroProb int
	// ZeroProbEps counts the test baskets whose term det(L_S + εI) is zero
	// (only possible with Eps < 0); any makes TestLLEps −Inf.
	ZeroProbEps int

	// per holds the per-basket values behind the means, for Paired.
	per *perBasket
}

// perBasket holds an evaluation's values of each test basket (in the
// order given), which Paired subtracts basket by basket.
type perBasket struct {
	// fp identifies the protocol's baskets (fingerprint): two evaluations
	// pair only over the same baskets in the same order.
	fp uint64
	// ll and llEps are log P(S) and its ε figure (nil when the evaluation
	// has no log-likelihood, as co-occurrence's).
	ll, llEps []float64
	// pr is the held-out item's percentile rank where predicted is true
	// (not for a basket of fewer than two items, or skipped); bin its MPR
	// bin (−1 for a basket of fewer than two items).
	pr        []float64
	predicted []bool
	bin       []int8
}

// Evaluate scores a model on test baskets under both protocols.
//
// Paper protocol (Gartrell et al.'s code): baskets are deduplicated and
// sorted by item id. For every basket with at least 2 items, the
// highest-id item t is held out, Y is the rest, and every item j gets the
// conditional gain s_j = L_jj − L_{j,Y} L_Y⁻¹ L_{Y,j} (items of Y get 0);
// the percentile rank is PR = 1 − #{j : s_j ≥ s_t} / #{j : s_j ≠ 0}, and
// Prec@k is 1 when fewer than k items score strictly above t. For the AUC
// each test basket is paired with a uniformly random basket of the same
// size (seeded), both scored by log det L_S (AUCPaired compares each basket
// with its own random basket only). The reported figure of each
// metric is the unweighted mean over three size buckets: log10 of the size
// cut into 3 equal-width bins (right-closed) over the test baskets, using the
// size after removing the held-out item for MPR and Prec@k and the full
// size for the AUC; the bins are cut from every test basket before any is
// scored (a basket skipped for a singular conditioning set does not move
// them). Micro figures are the plain means over all baskets.
//
// TestLL is the model's own log-likelihood (Model.LogLikelihood's figure);
// TestLLEps and the AUC score a basket by log det(L_S + εI) (opt.Eps:
// DefaultEps unless set), the convention of the learners.
// ctx is checked between chunks of the next-item ranking (its long part on
// large catalogues): once it is done, Evaluate returns an error wrapping
// ctx.Err().
func Evaluate(ctx context.Context, m *ndpp.Model, test [][]int, opt Options) (*Metrics, error) {
	n := m.N()
	baskets, err := protocolBaskets(test, n, opt.Key)
	if err != nil {
		return nil, err
	}
	key := sortKey(opt.Key)
	eps := resolveEps(opt.Eps)
	met := &Metrics{Baskets: len(baskets), Eps: eps}
	pos, err := LogDetsEps(ctx, m, baskets, eps, opt.Workers)
	if err != nil {
		return nil, err
	}
	exact := pos
	if eps != 0 {
		if exact, err = LogDetsEps(ctx, m, baskets, 0, opt.Workers); err != nil {
			return nil, err
		}
	}
	sizes := make([]int, len(baskets))
	for i, s := range baskets {
		sizes[i] = len(s)
		if len(s) > m.MaxRank() {
			met.BeyondRank++
		}
		if math.IsInf(exact[i], -1) {
			met.ZeroProb++
		}
		if math.IsInf(pos[i], -1) {
			met.ZeroProbEps++
		}
	}
	met.TestLL, met.TestLLSE = mean(exact)-m.LogNormalizer(), stdErr(exact)
	met.TestLLEps, met.TestLLEpsSE = mean(pos)-m.LogNormalizer(), stdErr(pos)
	met.per = &perBasket{ll: shifted(exact, -m.LogNormalizer()), llEps: shifted(pos, -m.LogNormalizer())}

	// Next-item prediction.
	if err := rankMetrics(ctx, met, modelScorer{m}, baskets, opt.Workers); err != nil {
		return nil, err
	}

	// AUC against random baskets of the same sizes.
	rng := rand.New(rand.NewPCG(opt.Seed, 0xa0c))
	neg := make([][]int, len(baskets))
	for i, s := range baskets {
		neg[i] = sampleDistinct(rng, n, min(len(s), n))
		// In the test baskets' order, so that a set drawn twice scores the same bits.
		slices.SortFunc(neg[i], func(a, b int) int { return cmpInt64(key(a), key(b)) })
	}
	negs, err := LogDetsEps(ctx, m, neg, eps, opt.Workers)
	if err != nil {
		return nil, err
	}
	met.AUCMicro = auc(pos, negs)
	met.AUCPaired, met.AUCPairedSE = pairedWins(pos, negs)
	bk := sizeBucketsIn(sizes, sizes)
	sum, cnt := 0.0, 0
	for b := 0; b < 3; b++ {
		var pb, nb []float64
		for i := range pos {
			if bk[i] == b {
				pb, nb = append(pb, pos[i]), append(nb, negs[i])
			}
		}
		if len(pb) > 0 {
			sum += auc(pb, nb)
			cnt++
		}
	}
	met.AUC = sum / float64(cnt)
	return met, nil
}

// protocolBaskets validates test baskets over n items and returns them as
// the paper protocol takes them: deduplicated and sorted by item id (key,
// nil for the row index), so that the last item is the one held out.
func protocolBaskets(test [][]int, n int, keys []int64) ([][]int, error) {
	if len(test) == 0 {
		return nil, fmt.Errorf("eval: no test baskets")
	}
	if keys != nil && len(keys) != n {
		return nil, fmt.Errorf("eval: %d sort keys for %d items", len(keys), n)
	}
	key := sortKey(keys)
	baskets := make([][]int, len(test))
	for bi, s := range test {
		if len(s) == 0 {
			return nil, fmt.Errorf("eval: test basket %d: %w", bi, ndpp.ErrEmptySet)
		}
		for _, it := range s {
			if it < 0 || it >= n {
				return nil, fmt.Errorf("eval: test basket %d: item %d out of range [0, %d)", bi, it, n)
			}
		}
		u := slices.Clone(s)
		slices.SortFunc(u, func(a, b int) int { return cmpInt64(key(a), key(b)) })
		baskets[bi] = slices.Compact(u)
	}
	return baskets, nil
}

// sortKey returns the protocol's item id of a row: keys[i], or i when keys
// is nil (Options.Key).
func sortKey(keys []int64) func(int) int64 {
	return func(i int) int64 {
		if keys != nil {
			return keys[i]
		}
		return int64(i)
	}
}

// rankMetrics sets the next-item prediction figures of met (MPR, Prec@k,
// both protocols, their standard errors, Predicted, Skipped) from the
// ranks of the held-out items of baskets (protocolBaskets) under the
// candidates' scores of sc (nextItemRanks). MPR's bins are cut from the
// sizes |Y| of every basket that can be predicted.
func rankMetrics(ctx context.Context, met *Metrics, sc candidateScorer, baskets [][]int, workers int) error {
	var prAll, at []int // the sizes MPR's bins are cut from: every basket that can be predicted; their indices
	for i, s := range baskets {
		if len(s) >= 2 {
			prAll, at = append(prAll, len(s)-1), append(at, i)
		}
	}
	pr, p5, p10, prSizes, which, skipped, err := nextItemRanks(ctx, sc, baskets, workers)
	if err != nil {
		return err
	}
	if met.per == nil {
		met.per = &perBasket{}
	}
	met.per.fp = fingerprint(baskets)
	met.per.pr, met.per.predicted, met.per.bin = make([]float64, len(baskets)), make([]bool, len(baskets)), make([]int8, len(baskets))
	for i := range baskets {
		met.per.bin[i] = -1
	}
	for j, b := range sizeBucketsIn(prAll, prAll) {
		met.per.bin[at[j]] = int8(b)
	}
	for j, i := range which {
		met.per.pr[i], met.per.predicted[i] = pr[j], true
	}
	met.Skipped += skipped
	met.Predicted = len(pr)
	if len(pr) > 0 {
		bk := sizeBucketsIn(prSizes, prAll)
		met.MPR, met.MPRMicro = 100*bucketMean(pr, bk), 100*mean(pr)
		met.MPRSE, met.MPRMicroSE = 100*bucketStdErr(pr, bk), 100*stdErr(pr)
		met.Prec5, met.Prec5Micro = 100*bucketMean(p5, bk), 100*mean(p5)
		met.Prec10, met.Prec10Micro = 100*bucketMean(p10, bk), 100*mean(p10)
	} else {
		met.MPR, met.MPRMicro, met.Prec5, met.Prec5Micro, met.Prec10, met.Prec10Micro = nan6()
		met.MPRSE, met.MPRMicroSE = math.NaN(), math.NaN()
	}
	return nil
}

// LogLikelihoodEps returns the mean over baskets of log det(L_S + εI) −
// log det(I + L), the learners' objective and Evaluate's TestLLEps, with the
// Eps convention of Options (0: DefaultEps, negative: none). ctx is
// checked between chunks of baskets (LogDetsEps): once it is done,
// LogLikelihoodEps returns an error wrapping ctx.Err().
func LogLikelihoodEps(ctx context.Context, m *ndpp.Model, baskets [][]int, eps float64) (float64, error) {
	if len(baskets) == 0 {
		return 0, fmt.Errorf("eval: no baskets to score")
	}
	lds, err := LogDetsEps(ctx, m, baskets, resolveEps(eps), 0)
	if err != nil {
		return 0, err
	}
	return mean(lds) - m.LogNormalizer(), nil
}

// logDetsChunk is the number of baskets LogDetsEps scores between two
// checks of the context (a worker's share of work of well under a
// millisecond on typical baskets).
const logDetsChunk = 32

// LogDetsEps is Model.LogDetsEps with a context: log det(L_S + εI) of each
// basket, for ε ≥ 0 as given (no default applies; the learners' validation
// and Evaluate score through it). The baskets are scored in chunks of 32
// shared out to workers (≤ 0: GOMAXPROCS), each worker checking ctx before
// each chunk, as the next-item ranking does; once ctx is done it returns
// an error wrapping ctx.Err(). The values are those of Model.LogDetsEps,
// bit for bit, whatever the number of workers, and an error names the
// basket's index in baskets.
func LogDetsEps(ctx context.Context, m *ndpp.Model, baskets [][]int, eps float64, workers int) ([]float64, error) {
	if _, err := m.LogDetsEps(nil, 1, eps); err != nil { // ε's validation
		return nil, err
	}
	out := make([]float64, len(baskets))
	nChunks := (len(baskets) + logDetsChunk - 1) / logDetsChunk
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, nChunks))
	errs := make([]error, nChunks)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c := int(next.Add(1)) - 1
				if c >= nChunks {
					return
				}
				lo, hi := c*logDetsChunk, min((c+1)*logDetsChunk, len(baskets))
				if err := ctx.Err(); err != nil {
					errs[c] = fmt.Errorf("eval: scoring baskets stopped at basket %d of %d: %w", lo, len(baskets), err)
					return
				}
				lds, err := m.LogDetsEps(baskets[lo:hi], 1, eps)
				if err != nil {
					errs[c] = basketError(m, baskets[lo:hi], lo, eps, err)
					return
				}
				copy(out[lo:hi], lds)
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return nil, e
		}
	}
	return out, nil
}

// basketError is the error of the first basket of chunk (whose first
// basket is baskets[lo]) that Model.LogDetEps refuses, named by its index
// lo+j in baskets, for a valid ε; err, the chunk's error, when none is.
func basketError(m *ndpp.Model, chunk [][]int, lo int, eps float64, err error) error {
	for j, s := range chunk {
		if _, _, e := m.LogDetEps(s, eps); e != nil {
			return fmt.Errorf("basket %d: %w", lo+j, e)
		}
	}
	return err
}

func nan6() (a, b, c, d, e, f float64) {
	x := math.NaN()
	return x, x, x, x, x, x
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// sizeBucketsIn assigns each of sizes to one of 3 equal-width, right-closed
// bins of log10(size) cut over [min, max] of the sizes in edges (the first
// bin also holds the minimum; sizes outside the range go to the end bins).
func sizeBucketsIn(sizes, edges []int) []int {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range edges {
		x := math.Log10(float64(s))
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	out := make([]int, len(sizes))
	if !(hi > lo) {
		return out
	}
	w := (hi - lo) / 3
	for i, s := range sizes {
		x := math.Log10(float64(s))
		b := int(math.Ceil((x-lo)/w)) - 1
		out[i] = max(0, min(2, b))
	}
	return out
}

// bucketMean is the unweighted mean of the non-empty buckets' means.
func bucketMean(x []float64, bk []int) float64 {
	var sum [3]float64
	var cnt [3]int
	for i, v := range x {
		sum[bk[i]] += v
		cnt[bk[i]]++
	}
	tot, nb := 0.0, 0
	for b := range sum {
		if cnt[b] > 0 {
			tot += sum[b] / float64(cnt[b])
			nb++
		}
	}
	return tot / float64(nb)
}

// pairedWins returns the share of i with pos[i] > neg[i], ties counting one
// half, and its standard error (stdErr of the per-pair wins).
func pairedWins(pos, neg []float64) (share, se float64) {
	w := make([]float64, len(pos))
	for i, p := range pos {
		switch {
		case p > neg[i]:
			w[i] = 1
		case p == neg[i]:
			w[i] = 0.5
		}
	}
	return mean(w), stdErr(w)
}

// stdErr returns the standard error of the mean of x, the sample standard
// deviation over √len(x): NaN for fewer than two values or a mean that is
// not finite.
func stdErr(x []float64) float64 {
	n := len(x)
	m := mean(x)
	if n < 2 || math.IsNaN(m) || math.IsInf(m, 0) {
		return math.NaN()
	}
	ss := 0.0
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return math.Sqrt(ss / float64(n-1) / float64(n))
}

// bucketStdErr returns the standard error of bucketMean(x, bk) with the
// bins' means taken as independent: √(Σ_b stdErr(bin b)²) over the number of
// non-empty bins (NaN when one holds a single value).
func bucketStdErr(x []float64, bk []int) float64 {
	var bins [3][]float64
	for i, v := range x {
		bins[bk[i]] = append(bins[bk[i]], v)
	}
	ss, nb := 0.0, 0
	for _, b := range bins {
		if len(b) > 0 {
			se := stdErr(b)
			ss += se * se
			nb++
		}
	}
	return math.Sqrt(ss) / float64(nb)
}

// auc is the area under the ROC curve of separating pos from neg by score
// (the Mann–Whitney statistic, ties counted one half).
func auc(pos, neg []float64) float64 {
	type sc struct {
		s   float64
		pos bool
	}
	all := make([]sc, 0, len(pos)+len(neg))
	for _, s := range pos {
		all = append(all, sc{s, true})
	}
	for _, s := range neg {
		all = append(all, sc{s, false})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].s < all[j].s })
	rankSum := 0.0
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].s == all[i].s {
			j++
		}
		r := float64(i+j+1) / 2 // average 1-based rank of the tie block
		for t := i; t < j; t++ {
			if all[t].pos {
				rankSum += r
			}
		}
		i = j
	}
	np, nn := float64(len(pos)), float64(len(neg))
	return (rankSum - np*(np+1)/2) / (np * nn)
}

// sampleDistinct draws k distinct items of [0, n) uniformly.
func sampleDistinct(rng *rand.Rand, n, k int) []int {
	out := make([]int, 0, k)
	seen := make(map[int]bool, k)
	for len(out) < k {
		j := rng.IntN(n)
		if !seen[j] {
			seen[j] = true
			out = append(out, j)
		}
	}
	return out
}

// candidateScorer scores every item as the next item of conditioning sets:
// an NDPP's conditional gains (modelScorer) or a co-occurrence count
// (cooccurScorer).
// popularityTie finishes one basket's scores d for a scorer that breaks
// ties by popularity: t[j] = count[j] + 1, and d and t are 0 for the items
// of y (the conditioning set, which no candidate can be).
func popularityTie(d, t, count []float64, y []int) {
	for j, c := range count {
		t[j] = c + 1
	}
	for _, it := range y {
		d[it], t[it] = 0, 0
	}
}

type candidateScorer interface {
	// items is n, the number of items scored.
	items() int
	// hasTie says whether scoreBatch writes a second key.
	hasTie() bool
	// scoreBatch writes into dst[b][:n] the score of every item given
	// ys[b] (0 for the items of ys[b]) and, when tie is not nil, into
	// tie[b][:n] a second key that orders equal scores (0 for the items of
	// ys[b]); errs[b] is ndpp.ErrSingularCondition when ys[b] cannot be
	// conditioned on, another error of that set, or nil. The returned
	// error is one of the batch as a whole.
	scoreBatch(ys [][]int, dst, tie [][]float64, errs []error) error
}

// modelScorer scores by an NDPP's conditional gains
// (ndpp.Model.ConditionalGainsBatch); it has no second key.
type modelScorer struct{ m *ndpp.Model }

func (s modelScorer) items() int   { return s.m.N() }
func (s modelScorer) hasTie() bool { return false }

func (s modelScorer) scoreBatch(ys [][]int, dst, _ [][]float64, errs []error) error {
	return s.m.ConditionalGainsBatch(ys, dst, errs)
}

// nextItemRanks holds out the last item t of every basket with at least 2
// items and ranks it by the candidates' scores s_j given the rest Y (see
// Evaluate): per predicted basket, in basket order, the percentile rank
// 1 − #{j : s_j ≥ s_t}/#{j : s_j ≠ 0}, Prec@5 and Prec@10 as 0/1, |Y| and
// the basket's index;
// baskets whose Y is singular, or whose scores are all zero, are counted
// in skipped. A scorer with a second key u_j (hasTie) compares the pairs
// (s_j, u_j) lexicographically, and counts j in the denominator when
// s_j ≠ 0 or u_j ≠ 0. The scores come from the scorer over chunks of
// baskets (at most 2²² scores, 32 MB, per chunk), chunks shared out to
// workers (≤ 0: GOMAXPROCS) that each keep their buffers.
func nextItemRanks(ctx context.Context, sc candidateScorer, baskets [][]int, workers int) (pr, p5, p10 []float64, sizes, which []int, skipped int, err error) {
	n := sc.items()
	withTie := sc.hasTie()
	var idx []int // baskets that hold an item out
	for i, s := range baskets {
		if len(s) >= 2 {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil, nil, nil, nil, nil, 0, nil
	}
	chunk := max(1, min(32, (1<<22)/max(1, n)))
	nChunks := (len(idx) + chunk - 1) / chunk
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, nChunks))
	const (
		ok = iota
		singular
		allZero
	)
	state := make([]uint8, len(idx))
	rank := make([]float64, len(idx))
	above := make([]int, len(idx)) // items strictly above the held-out one
	errs := make([]error, nChunks)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ys := make([][]int, chunk)
			dst := make([][]float64, chunk)
			for i := range dst {
				dst[i] = make([]float64, n)
			}
			var tie [][]float64
			if withTie {
				tie = make([][]float64, chunk)
				for i := range tie {
					tie[i] = make([]float64, n)
				}
			}
			cerr := make([]error, chunk)
			for {
				c := int(next.Add(1)) - 1
				if c >= nChunks {
					return
				}
				if err := ctx.Err(); err != nil {
					errs[c] = fmt.Errorf("eval: evaluation: %w", err)
					return
				}
				lo, hi := c*chunk, min((c+1)*chunk, len(idx))
				nb := hi - lo
				for j := 0; j < nb; j++ {
					s := baskets[idx[lo+j]]
					ys[j] = s[:len(s)-1]
				}
				var tb [][]float64
				if withTie {
					tb = tie[:nb]
				}
				if err := sc.scoreBatch(ys[:nb], dst[:nb], tb, cerr[:nb]); err != nil {
					errs[c] = err
					return
				}
				for j := 0; j < nb; j++ {
					if cerr[j] != nil {
						if errors.Is(cerr[j], ndpp.ErrSingularCondition) {
							state[lo+j] = singular
							continue
						}
						errs[c] = cerr[j]
						return
					}
					s := baskets[idx[lo+j]]
					gains := dst[j][:n]
					t := s[len(s)-1]
					st := gains[t]
					ge, gt, nz := 0, 0, 0
					if withTie {
						u := tie[j][:n]
						ut := u[t]
						for i, g := range gains {
							if g != 0 || u[i] != 0 {
								nz++
							}
							if g > st || (g == st && u[i] >= ut) {
								ge++
							}
							if g > st || (g == st && u[i] > ut) {
								gt++
							}
						}
					} else {
						for _, g := range gains {
							if g != 0 {
								nz++
							}
							if g >= st {
								ge++
							}
							if g > st {
								gt++
							}
						}
					}
					if nz == 0 {
						state[lo+j] = allZero
						continue
					}
					rank[lo+j] = 1 - float64(ge)/float64(nz)
					above[lo+j] = gt
				}
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return nil, nil, nil, nil, nil, 0, e
		}
	}
	for j, i := range idx {
		if state[j] != ok {
			skipped++
			continue
		}
		pr = append(pr, rank[j])
		p5 = append(p5, b2f(above[j] < 5))
		p10 = append(p10, b2f(above[j] < 10))
		sizes = append(sizes, len(baskets[i])-1)
		which = append(which, i)
	}
	return pr, p5, p10, sizes, which, skipped, nil
}
