package rerank

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ndpp-go/ndpp/ndpp"
)

// Request is one reranking request over a model's items (rows 0…n−1; map
// external ids or tokens to rows with ndpp.Model.TokenVocab, built once per
// model). Its JSON form is JSONRequest, whose items are the model's tokens;
// a Request itself refuses to be decoded from JSON.
type Request struct {
	// Candidates are the items to choose from: non-empty, model rows in
	// range or IDs of NewItems, distinct. Their order breaks ties (the earlier candidate wins).
	Candidates []int
	// NewItems are items outside the model, given by their vectors (v, b
	// — nil when the model has B = V — and δ, 0 without a diagonal), that
	// Candidates may name by their ID: IDs distinct and ≥ the model's n
	// (an ID in [0, n) would clash with a model row). They are scored
	// exactly as model rows, with the model's C, and validated as
	// ndpp.ItemCheck validates vector items (shape, finite values, the
	// scale bound that keeps kernel entries finite). They cannot be shown
	// items.
	NewItems []ndpp.Item
	// Quality, when not nil, holds a score qᵢ ≥ 0 per candidate (finite,
	// in the order of Candidates): the kernel becomes diag(q)·L·diag(q), so
	// a candidate's gain is multiplied by qᵢ². A candidate with qᵢ² = 0
	// (qᵢ = 0, or so small that qᵢ² underflows) is never chosen, nor is one
	// whose gain overflows.
	Quality []float64
	// Relevance, when not nil, holds a relevance score rᵢ per candidate
	// (finite, in the order of Candidates), turned into quality by Chen et
	// al.'s (2018) trade-off knob Theta: qᵢ = exp(α·(rᵢ − r_max)) with
	// α = θ / (2(1 − θ)) and r_max the largest score. The gain of a
	// candidate is then qᵢ²·sᵢ, so log gain = 2α(rᵢ − r_max) + log sᵢ: θ = 0
	// ignores relevance (pure diversity, qᵢ = 1), larger θ weighs relevance
	// more, and θ = 1 is pure relevance order (the K candidates with the
	// largest rᵢ, ties in candidate order; no kernel is used, and Gains is
	// empty). Shifting by r_max multiplies every gain of a step by the same
	// factor, so it changes no choice, and keeps qᵢ ≤ 1 (no overflow as
	// θ → 1): the result is that of Quality = q. A candidate whose qᵢ²
	// underflows to 0 (α(rᵢ − r_max) below about −373) is never chosen. Relevance
	// and Quality cannot both be given.
	Relevance []float64
	// Theta ∈ [0, 1] is the relevance–diversity knob of Relevance (it
	// needs Relevance unless 0).
	Theta float64
	// Shown are items already shown to the user, oldest first (in range,
	// distinct; they need not be candidates). The gains are conditioned on
	// them, and a candidate that was shown is never chosen.
	Shown []int
	// Attributes holds, per attribute name, one value per candidate (in
	// the order of Candidates), for Constraints.
	Attributes map[string][]string
	// ShownAttributes holds, per attribute name (one of Attributes), one
	// value per shown item (in the order of Shown); a shown item without
	// a value counts toward no constraint.
	ShownAttributes map[string][]string
	// Constraints limit repeated attribute values in the list (see
	// Constraint). Each step chooses the candidate with the largest gain
	// among those that may come next without breaking a constraint (given
	// the shown items and the items chosen before); when none may, the
	// result stops short with Result.Short = ShortConstraints. With
	// Polish, local search applies only swaps that keep the list
	// feasible (a swapped-in item takes the position of the one it
	// replaces), and the polished list keeps that order. With Theta = 1
	// (and for DegradedGreedy), each position takes the first candidate
	// in relevance order that may come next.
	Constraints []Constraint
	// K is the number of items to choose, 1 ≤ K ≤ len(Candidates).
	K int
	// Window, when positive, conditions each choice on the last Window
	// items of Shown followed by the items chosen so far (sliding-window
	// greedy); 0 conditions on all of them.
	Window int
	// Polish, without a window, improves the greedy result by local
	// search over single and pair swaps (stream.LocalSearch) on L′
	// conditioned on the shown items: the result is then a (1 + ε)-local
	// optimum of det L′ given them, within a pool of pair-swap candidates,
	// never below the greedy's value. It allocates per request (a model of
	// the candidates and an oracle), unlike the greedy path.
	Polish bool
	// PolishEps is the local search's ε (0: stream.DefaultLocalSearchEps):
	// a swap is applied when it multiplies the determinant by more than
	// 1 + ε.
	PolishEps float64
	// PolishPool is the number of candidates among which pair swaps are
	// searched (0: DefaultPolishPool; 1: single swaps only; at most
	// MaxPolishPool). A pair round costs about P²·K²/4 determinant ratios
	// for a pool of P, which dominates the polish at large K (see
	// PolishMaxRatios).
	PolishPool int
	// PolishMaxRatios bounds the determinant ratios the polish may
	// evaluate (0: DefaultPolishMaxRatios; stream.LocalSearchOptions'
	// MaxEvals). The cost model: a single-swap sweep evaluates about K·N
	// ratios for N choosable candidates, a pair round about P·K + P²·K²/4
	// for a pool of P, and each applied swap starts another sweep, so the
	// number of rounds is not known in advance; one ratio costs O(1) to
	// O(K + d) with the fast oracle (nanoseconds to tens of nanoseconds),
	// and one it must recompute with a fresh LU (near-singular sets, as
	// when K nears the kernel's rank) O(K²·(K + d)), counted as K² ratios.
	// When the budget is spent, the polish stops with the best set found
	// so far (never below the greedy's) and Result.PolishCapped is set.
	PolishMaxRatios int64
	// Sample, instead of the greedy, draws the list at random
	// (exploration): an exact sample of the k-NDPP of the choosable
	// candidates under L′ given the shown items F kept in the first
	// conditioning set (with a window, of the last Window shown items):
	// P(Y) ∝ det L′_{F ∪ Y} over the sets Y of K candidates (package
	// sample's KSampler: tries of the NDPP of t·L′ given F, kept when they
	// hold K items, about 1/P_t(|Y| = K) of them). A more diverse set, or
	// one of better quality, is the more likely. Items come in greedy order
	// given F, with their gains and LogValue, as for a polished set, and
	// Result.SampleTries counts the tries. The same Seed, request and model
	// give the same list. Not with Polish, Constraints (refused: an exact
	// sample of the lists that keep them would be a rejection with no
	// bound on its tries) or Theta = 1 (no kernel); a K that no set of
	// candidates reaches with a positive probability (more than the
	// choosable candidates, or than the kernel's rank given F) is a
	// RequestError on "k". It allocates per request (a model of F and the
	// candidates) and costs O(P·r²) per scale tried (about ten) and per
	// try, for P candidates and r = 2d (d when B = V).
	Sample bool
	// Seed seeds Sample's random numbers (a PCG stream).
	Seed uint64
	// Degrade lets Rerank answer when ctx's deadline passes before the
	// work is done, with the best result reached and Result.Degraded set
	// (see Rerank). Without it, or when ctx is cancelled rather than timed
	// out, Rerank returns an error wrapping ctx.Err(). With a deadline, a
	// polish that may degrade stops its search early by the estimated
	// time of what follows it (ordering the set, and the fresh LU the
	// search may be in), so that the answer comes by the deadline.
	Degrade bool
}

// Defaults and bounds of the polish.
const (
	// DefaultPolishPool is the default Request.PolishPool: pair swaps
	// among the 16 best candidates, a latency-bound choice
	// (stream.LocalSearch's own default, stream.DefaultPoolPerItem·K,
	// costs seconds at K = 50).
	DefaultPolishPool = 16
	// MaxPolishPool is the largest Request.PolishPool: a pair round over
	// a pool of 256 at K = 100 is already about 1.6·10⁸ ratios.
	MaxPolishPool = 256
	// DefaultPolishMaxRatios is the default Request.PolishMaxRatios,
	// 2²⁰ ≈ 10⁶ ratios: a few milliseconds to some tens of milliseconds
	// for K ≤ 50, d = 30, and about 0.15 s in a bad case (K = 100 beyond
	// the rank 2d = 60 of a model with a small diagonal, pool 256, where
	// most values need a fresh LU).
	DefaultPolishMaxRatios = 1 << 20
)

// Values of Result.Degraded.
const (
	// DegradedPolish: the deadline passed during the polish; the result
	// is the best set the local search had reached (never below the
	// greedy's value), ordered and scored as a finished polish.
	DegradedPolish = "polish_deadline"
	// DegradedGreedy: the deadline passed before the greedy finished; the
	// result is the first K choosable candidates in relevance order (see
	// Result.Degraded), without gains.
	DegradedGreedy = "greedy_deadline"
	// DegradedSample: the deadline passed before a sample (Request.Sample)
	// was drawn; the result is relevance order as for DegradedGreedy.
	DegradedSample = "sample_deadline"
)

// Result is the outcome of a request: the chosen items (rows) in the order
// they were chosen and the gain of each, the determinant ratio
// det L'_{S+i} / det L'_S of the quality-weighted kernel L' given the
// conditioning set S at that step. The slices belong to the Workspace that
// produced them and are overwritten by its next request: copy them to keep
// them.
//
// Items holds fewer than K items when no remaining candidate has a positive
// gain (under the numerical zero rule), as with the offline greedy.
type Result struct {
	Items []int     `json:"items"`
	Gains []float64 `json:"gains"`
	// ShownSkipped counts the shown items of the first conditioning set
	// that were left out of it because their Schur complement given the
	// shown items kept before them was zero (see the package
	// documentation).
	ShownSkipped int `json:"shown_skipped,omitempty"`
	// PolishSwaps counts the swaps local search applied (Request.Polish).
	// When it is positive, Items is the polished set in greedy order given
	// the shown items, and Gains are the determinant ratios of that order.
	PolishSwaps int `json:"polish_swaps,omitempty"`
	// Short says why Items holds fewer than K items: ShortZeroGain or
	// ShortConstraints (empty when it holds K).
	Short string `json:"short_reason,omitempty"`
	// LogValue is the sum of the logs of Gains. Without a window it is
	// log det L′_{F ∪ Y} − log det L′_F for the chosen set Y and F the
	// shown items kept in the first conditioning set (ShownSkipped counts
	// the others), L′ the request's quality-weighted kernel: the log
	// determinant of Y's kernel conditioned on what was shown (log det L′_Y
	// when nothing is shown). With a window it is the sum of the
	// windowed gains, not one determinant. It is 0 when Gains is empty
	// (Theta = 1, DegradedGreedy).
	LogValue float64 `json:"log_value"`
	// PolishCapped reports that the polish stopped at its ratio budget
	// (Request.PolishMaxRatios) before reaching a local optimum.
	PolishCapped bool `json:"polish_capped,omitempty"`
	// SampleTries counts the tries Request.Sample drew (one kept).
	SampleTries int `json:"sample_tries,omitempty"`
	// Degraded is empty for a complete result. With Request.Degrade and a
	// context whose deadline passed, it says how far the work got:
	// DegradedPolish (the greedy finished, the polish did not: Items and
	// Gains as above for the best set reached) or DegradedGreedy (the
	// greedy did not finish: Items are the choosable candidates — not
	// shown, quality not zero — sorted by decreasing quality, ties in
	// candidate order, the first K of them; Gains is empty), or with
	// Request.Sample DegradedSample (no sample drawn: the same relevance
	// order).
	Degraded string `json:"degraded,omitempty"`
}

// RequestError is a request that cannot be served, naming the field
// ("candidates", "quality", "relevance", "theta", "shown", "k", "window",
// "attributes", "shown_attributes", "constraints", "polish", "polish_eps",
// "polish_pool", "polish_max_ratios" or "seed"; in the errors of
// JSONRequest.Request, the path of the entry in the JSON form, such as
// "attributes.brand" or "new_items[2].id") and, for an entry of a list,
// its position (Index ≥ 0; −1 otherwise).
type RequestError struct {
	Field  string
	Index  int
	Reason string
}

func (e *RequestError) Error() string {
	if e.Index >= 0 {
		return fmt.Sprintf("rerank: %s[%d]: %s", e.Field, e.Index, e.Reason)
	}
	return fmt.Sprintf("rerank: %s: %s", e.Field, e.Reason)
}

func reqErr(field string, index int, format string, args ...any) error {
	return &RequestError{Field: field, Index: index, Reason: fmt.Sprintf(format, args...)}
}

// Rerank chooses up to req.K of req.Candidates greedily (see the package
// documentation) using w's buffers, and returns them with their gains. The
// model is only read, so many workspaces may rerank over one model at
// once; a Workspace itself serves one request at a time.
//
// ctx bounds the work: the greedy looks at it before each step (O(P·(d +
// w)) for P working rows) and the polish every few thousand determinant
// ratios, so a call returns within about a millisecond of ctx being done.
// What it returns then:
//
//   - With req.Degrade and ctx's deadline passed (ctx.Err() is
//     context.DeadlineExceeded): a Result with Degraded set and a nil
//     error — DegradedPolish with the best set the polish reached,
//     DegradedGreedy with relevance order when the greedy itself did not
//     finish (see Result.Degraded).
//   - Otherwise (no req.Degrade, or ctx cancelled, as when an HTTP client
//     goes away): an error wrapping ctx.Err() (errors.Is(err,
//     context.Canceled) or context.DeadlineExceeded) and no result.
//
// Either way w stays usable for the next request.
func (w *Workspace) Rerank(ctx context.Context, m *ndpp.Model, req Request) (Result, error) {
	if m == nil {
		return Result{}, fmt.Errorf("rerank: nil model")
	}
	if err := w.validate(m, &req); err != nil {
		return Result{}, err
	}
	if err := w.setupConstraints(&req); err != nil {
		return Result{}, err
	}
	w.polishSwaps, w.polishCapped, w.degraded, w.short = 0, false, "", ""
	if req.Relevance != nil && req.Theta == 1 {
		w.relevanceOrder(&req)
		return Result{Items: w.outItems, Gains: w.outGains[:0], Short: w.short}, nil
	}
	if err := ctx.Err(); err != nil { // done before the greedy starts: nothing to compute
		if !mayDegrade(ctx, &req) {
			return Result{}, fmt.Errorf("rerank: greedy: %w", err)
		}
		w.relevanceOrder(&req)
		kind := DegradedGreedy
		if req.Sample {
			kind = DegradedSample
		}
		return Result{Items: w.outItems, Gains: w.outGains[:0], Short: w.short, Degraded: kind}, nil
	}
	if req.Sample {
		return w.sample(ctx, m, &req)
	}
	t0 := time.Now()
	if err := w.run(ctx, m, &req); err != nil {
		if !mayDegrade(ctx, &req) {
			return Result{}, err
		}
		if err := w.setupConstraints(&req); err != nil { // the greedy moved them
			return Result{}, err
		}
		w.relevanceOrder(&req)
		return Result{Items: w.outItems, Gains: w.outGains[:0], Short: w.short, Degraded: DegradedGreedy}, nil
	}
	if req.Polish {
		if err := w.polish(ctx, m, &req, time.Since(t0)); err != nil {
			return Result{}, err
		}
	}
	lv := 0.0
	for _, g := range w.outGains {
		lv += math.Log(g)
	}
	return Result{Items: w.outItems, Gains: w.outGains, Short: w.short, LogValue: lv, ShownSkipped: w.shownSkipped, PolishSwaps: w.polishSwaps,
		PolishCapped: w.polishCapped, Degraded: w.degraded}, nil
}

// mayDegrade reports whether a request whose context is done gets a
// degraded result rather than an error.
func mayDegrade(ctx context.Context, req *Request) bool {
	return req.Degrade && errors.Is(ctx.Err(), context.DeadlineExceeded)
}

// relevanceOrder writes relevance order into w's output (Theta = 1, or a
// greedy that did not finish): the first K candidates that are not shown
// (nor of quality 0) by decreasing relevance (Relevance) or quality
// (Quality; candidate order without either), ties in candidate order.
func (w *Workspace) relevanceOrder(req *Request) {
	key := req.Relevance
	if key == nil {
		key = req.Quality
	}
	w.order = w.order[:0]
	for p, it := range req.Candidates {
		if w.shown(it, w.nModel) || req.Quality != nil && req.Quality[p] == 0 {
			continue
		}
		w.order = append(w.order, p)
	}
	if key != nil {
		slices.SortStableFunc(w.order, func(x, y int) int {
			switch {
			case key[x] > key[y]:
				return -1
			case key[x] < key[y]:
				return 1
			}
			return 0
		})
	}
	w.outItems = w.outItems[:0]
	if len(w.cons) == 0 {
		for _, p := range w.order[:min(req.K, len(w.order))] {
			w.outItems = append(w.outItems, req.Candidates[p])
		}
		if len(w.outItems) < req.K {
			w.short = ShortZeroGain
		}
		return
	}
	// Each position takes the first feasible candidate left.
	for len(w.outItems) < req.K {
		at := -1
		for i, p := range w.order {
			if w.feasible(p) {
				at = i
				break
			}
		}
		if at < 0 {
			w.short = ShortConstraints
			if len(w.order) == 0 {
				w.short = ShortZeroGain
			}
			return
		}
		p := w.order[at]
		w.place(p)
		w.outItems = append(w.outItems, req.Candidates[p])
		w.order = append(w.order[:at], w.order[at+1:]...)
	}
}

// relevanceQ2 fills w.relQ2 with the squared quality of each candidate
// under Relevance and Theta < 1: qᵢ² with qᵢ = exp(α(rᵢ − r_max)).
func (w *Workspace) relevanceQ2(req *Request) {
	w.relQ2 = grow(w.relQ2, len(req.Relevance))
	if req.Theta == 0 {
		for p := range w.relQ2 {
			w.relQ2[p] = 1
		}
		return
	}
	alpha := req.Theta / (2 * (1 - req.Theta))
	rmax := math.Inf(-1)
	for _, r := range req.Relevance {
		rmax = math.Max(rmax, r)
	}
	for p, r := range req.Relevance {
		q := math.Exp(alpha * (r - rmax)) // squared as Quality's are
		w.relQ2[p] = q * q
	}
}

// validate checks req against the model and marks the candidates and shown
// items in w's per-item stamps.
func (w *Workspace) validate(m *ndpp.Model, req *Request) error {
	n := m.N()
	nc := len(req.Candidates)
	if nc == 0 {
		return reqErr("candidates", -1, "no candidates")
	}
	if req.K < 1 || req.K > nc {
		return reqErr("k", -1, "k = %d; want 1 ≤ k ≤ %d (the number of candidates)", req.K, nc)
	}
	if req.Window < 0 {
		return reqErr("window", -1, "window = %d; want ≥ 0", req.Window)
	}
	if req.Polish && req.Window > 0 {
		return reqErr("window", -1, "window = %d with polish; local search maximises one determinant, which needs window = 0", req.Window)
	}
	if req.PolishPool < 0 || req.PolishPool > MaxPolishPool {
		return reqErr("polish_pool", -1, "%d; want 0 ≤ polish_pool ≤ %d (0: the default, 1: single swaps only)", req.PolishPool, MaxPolishPool)
	}
	if req.PolishMaxRatios < 0 {
		return reqErr("polish_max_ratios", -1, "%d; want ≥ 0 (0: the default, %d)", req.PolishMaxRatios, DefaultPolishMaxRatios)
	}
	if !(req.PolishEps >= 0) || math.IsInf(req.PolishEps, 0) {
		return reqErr("polish_eps", -1, "%v; want a finite ε ≥ 0 (0: the default)", req.PolishEps)
	}
	if req.Quality != nil && len(req.Quality) != nc {
		return reqErr("quality", -1, "%d scores for %d candidates", len(req.Quality), nc)
	}
	for p, q := range req.Quality {
		if !(q >= 0) || math.IsInf(q, 0) {
			return reqErr("quality", p, "%v; want finite and ≥ 0", q)
		}
	}
	if req.Relevance != nil {
		if req.Quality != nil {
			return reqErr("relevance", -1, "given with quality; give one of them")
		}
		if len(req.Relevance) != nc {
			return reqErr("relevance", -1, "%d scores for %d candidates", len(req.Relevance), nc)
		}
		for p, r := range req.Relevance {
			if math.IsNaN(r) || math.IsInf(r, 0) {
				return reqErr("relevance", p, "%v; want finite", r)
			}
		}
	}
	if !(req.Theta >= 0 && req.Theta <= 1) {
		return reqErr("theta", -1, "%v; want 0 ≤ θ ≤ 1", req.Theta)
	}
	if req.Sample {
		switch {
		case req.Polish:
			return reqErr("polish", -1, "with sample; polish is a local search for the largest determinant, sample draws a set at random")
		case len(req.Constraints) > 0:
			return reqErr("constraints", -1, "with sample: not supported (an exact sample of the lists that keep the constraints would be a rejection with no bound on its tries); sample without constraints, or use the greedy")
		case req.Theta == 1:
			return reqErr("theta", -1, "1 with sample: relevance order uses no kernel to sample from")
		}
	}
	if req.Theta != 0 && req.Relevance == nil {
		return reqErr("theta", -1, "%v without relevance scores", req.Theta)
	}
	if err := w.validateNew(m, req); err != nil {
		return err
	}
	w.newStamps(n)
	w.nModel = n
	for p, it := range req.Candidates {
		if it >= n && len(req.NewItems) > 0 {
			ni, ok := w.newPos[it]
			if !ok {
				return reqErr("candidates", p, "item %d is neither in range [0, %d) nor the id of a new item", it, n)
			}
			if w.newUsed[ni] >= 0 {
				return reqErr("candidates", p, "item %d repeats candidates[%d]", it, w.newUsed[ni])
			}
			w.newUsed[ni] = int32(p)
			continue
		}
		if it < 0 || it >= n {
			return reqErr("candidates", p, "item %d out of range [0, %d)", it, n)
		}
		if w.candStamp[it] == w.gen {
			return reqErr("candidates", p, "item %d repeats candidates[%d]", it, w.candPos[it])
		}
		w.candStamp[it], w.candPos[it] = w.gen, int32(p)
	}
	for p, it := range req.Shown {
		if it < 0 || it >= n {
			return reqErr("shown", p, "item %d out of range [0, %d)", it, n)
		}
		if w.shownStamp[it] == w.gen {
			return reqErr("shown", p, "item %d is shown twice", it)
		}
		w.shownStamp[it] = w.gen
	}
	return nil
}

// validateNew checks req.NewItems against m and indexes them (w.newPos,
// w.newUsed, and bᵀC of each in w.newBC, computed as the model computes
// its rows).
func (w *Workspace) validateNew(m *ndpp.Model, req *Request) error {
	if len(req.NewItems) == 0 {
		return nil
	}
	n, d := m.N(), m.D()
	chk := ndpp.NewItemCheck(ndpp.KernelOf(m))
	if i, err := chk.CheckAll(req.NewItems); err != nil {
		return reqErr("new_items", i, "%v", err)
	}
	w.newPos = make(map[int]int, len(req.NewItems))
	w.newUsed = make([]int32, len(req.NewItems))
	w.newBC = make([]float64, len(req.NewItems)*d)
	_, _, _, c := m.Rows()
	for i, it := range req.NewItems {
		if it.ID < n {
			return reqErr("new_items", i, "id %d clashes with the model's item %d (new ids must be ≥ n = %d)", it.ID, it.ID, n)
		}
		if j, dup := w.newPos[it.ID]; dup {
			return reqErr("new_items", i, "id %d repeats new_items[%d]", it.ID, j)
		}
		w.newPos[it.ID] = i
		w.newUsed[i] = -1
		b := it.B
		if b == nil {
			b = it.V
		}
		ndpp.RowTimesC(w.newBC[i*d:(i+1)*d], b, c)
	}
	return nil
}

// shown reports whether item it (a model row or a new item's id) is shown.
func (w *Workspace) shown(it, n int) bool { return it < n && w.shownStamp[it] == w.gen }

// diagOf returns δ of item it (a model row or a new item's id).
func (w *Workspace) diagOf(m *ndpp.Model, req *Request, it int) float64 {
	if it >= m.N() {
		return req.NewItems[w.newPos[it]].Delta
	}
	return m.ItemDiag(it)
}

// newStamps starts a new generation of the per-item stamps (sized to n).
func (w *Workspace) newStamps(n int) {
	if len(w.candStamp) < n {
		w.candStamp = make([]uint32, n)
		w.shownStamp = make([]uint32, n)
		w.candPos = make([]int32, n)
		w.gen = 0
	}
	w.gen++
	if w.gen == 0 { // wrapped: old stamps could match again
		clear(w.candStamp)
		clear(w.shownStamp)
		w.gen = 1
	}
}
