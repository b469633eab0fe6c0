package ndpp

import (
	"container/heap"
	"context"
	"fmt"
	"slices"
)

// RecommendBatchSize is the number of baskets whose gains RecommendBatch
// computes together (ConditionalGainsBatch) when RecommendOptions.Gains
// gives no rows.
const RecommendBatchSize = 32

// Recommendation is a recommended next item: a row of the model and its
// conditional gain det L_{S+j}/det L_S given the basket S.
type Recommendation struct {
	Item int
	Gain float64
}

// RecommendOptions configures Recommend and RecommendBatch.
type RecommendOptions struct {
	// Gains, when not empty, are the caller's reusable rows of gains (each
	// of length ≥ N()): the baskets are taken len(Gains) at a time through
	// ConditionalGainsBatch. Without rows, RecommendBatchSize rows are
	// allocated for the call. Rows must not be shared by concurrent calls.
	Gains [][]float64
}

// Recommend returns the n items with the largest conditional gains
// det L_{S+j}/det L_S given the basket S (ConditionalGains), best first,
// ties broken by the lower row; the basket's own items are not
// recommended, and a catalogue with fewer other items gives fewer. It
// returns ErrSingularCondition when det L_S is zero under the numerical
// zero rule, the validation error of an invalid basket, an error wrapping
// ErrOverflow when a gain overflows, and the context's error (wrapped)
// when ctx is done.
func (m *Model) Recommend(ctx context.Context, basket []int, n int, opt RecommendOptions) ([]Recommendation, error) {
	recs, errs, err := m.RecommendBatch(ctx, [][]int{basket}, n, opt)
	if err != nil {
		return nil, err
	}
	return recs[0], errs[0]
}

// RecommendBatch is Recommend for many baskets: recs[b] are the
// recommendations given baskets[b] (empty, not nil, when errs[b] is not
// nil), errs[b] its outcome as Recommend's error. The gains of
// len(opt.Gains) (else RecommendBatchSize) baskets are computed together
// by ConditionalGainsBatch, whose gains agree with ConditionalGains to
// rounding. The returned error is that of a negative n, of rows of
// opt.Gains shorter than N(), or the context's (wrapped; ctx is checked
// before each group of baskets).
func (m *Model) RecommendBatch(ctx context.Context, baskets [][]int, n int, opt RecommendOptions) (recs [][]Recommendation, errs []error, err error) {
	if n < 0 {
		return nil, nil, fmt.Errorf("ndpp: Recommend of %d items; want n ≥ 0", n)
	}
	gains := opt.Gains
	if len(gains) == 0 {
		gains = make([][]float64, min(RecommendBatchSize, max(len(baskets), 1)))
		for i := range gains {
			gains[i] = make([]float64, m.n)
		}
	}
	recs = make([][]Recommendation, len(baskets))
	errs = make([]error, len(baskets))
	for b0 := 0; b0 < len(baskets); b0 += len(gains) {
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("ndpp: recommend: %w", err)
		}
		nb := min(len(gains), len(baskets)-b0)
		if err := m.ConditionalGainsBatch(baskets[b0:b0+nb], gains[:nb], errs[b0:b0+nb]); err != nil {
			return nil, nil, err
		}
		for i := range nb {
			b := b0 + i
			recs[b] = []Recommendation{}
			if errs[b] != nil {
				continue
			}
			g := gains[i]
			for _, j := range topItems(g[:m.n], baskets[b], n) {
				recs[b] = append(recs[b], Recommendation{Item: j, Gain: g[j]})
			}
		}
	}
	return recs, errs, nil
}

// topItems returns the n items with the largest gains, excluding those in
// y, best first (ties: lower index first). The gains of y's items are 0, so
// only items with a zero gain are looked up in y.
func topItems(gains []float64, y []int, n int) []int {
	h := &gainHeap{g: gains}
	for j := range gains {
		if gains[j] == 0 && slices.Contains(y, j) {
			continue
		}
		if h.Len() < n {
			heap.Push(h, j)
		} else if n > 0 && h.better(j, h.idx[0]) {
			h.idx[0] = j
			heap.Fix(h, 0)
		}
	}
	out := make([]int, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(h).(int)
	}
	return out
}

// gainHeap keeps the current best n items with the worst on top.
type gainHeap struct {
	g   []float64
	idx []int
}

func (h *gainHeap) better(a, b int) bool {
	if h.g[a] != h.g[b] {
		return h.g[a] > h.g[b]
	}
	return a < b
}
func (h *gainHeap) Len() int           { return len(h.idx) }
func (h *gainHeap) Less(i, j int) bool { return h.better(h.idx[j], h.idx[i]) }
func (h *gainHeap) Swap(i, j int)      { h.idx[i], h.idx[j] = h.idx[j], h.idx[i] }
func (h *gainHeap) Push(x any)         { h.idx = append(h.idx, x.(int)) }
func (h *gainHeap) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}
