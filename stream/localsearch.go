package stream

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
)

// Defaults of LocalSearchOptions.
const (
	// DefaultLocalSearchEps is the default ε: a move must multiply f(S) by
	// more than 1 + ε.
	DefaultLocalSearchEps = 1e-3
	// DefaultPoolPerItem sets the default pool of pair-swap candidates to
	// DefaultPoolPerItem·k items.
	DefaultPoolPerItem = 4
	// DefaultMaxPasses bounds the sweeps of one search. Each accepted move
	// multiplies f(S) by more than 1 + ε, so a search stops long before in
	// practice; the bound guards against rounding cycles for tiny ε.
	DefaultMaxPasses = 10000
)

// PoolRank selects how LocalSearch ranks the items outside S for its pool
// of pair-swap candidates.
type PoolRank int

const (
	// PoolBySwap ranks an item t by the best value it reaches with one
	// swap, max_j f(S − S[j] + t). It is informative at every k, also when
	// k is the kernel's rank.
	PoolBySwap PoolRank = iota
	// PoolByGain ranks t by its conditional gain f(S + t)/f(S), the
	// next-item score (one more evaluation per item). It is zero for every
	// item when |S| has reached the kernel's rank (2d without a diagonal),
	// and the pool is then the first candidates in order.
	PoolByGain
)

// String returns "swap" or "gain".
func (p PoolRank) String() string {
	switch p {
	case PoolBySwap:
		return "swap"
	case PoolByGain:
		return "gain"
	}
	return fmt.Sprintf("PoolRank(%d)", int(p))
}

// LocalSearchOptions configures LocalSearch.
type LocalSearchOptions struct {
	// Eps is ε > 0 of the stopping rule: a move is applied when it
	// multiplies f(S) by more than 1 + ε, and the search stops at a
	// (1 + ε)-local optimum. Zero means DefaultLocalSearchEps.
	Eps float64
	// Pool is the number of items (outside S, ranked by PoolBy) among
	// which pair swaps are searched. Zero means DefaultPoolPerItem·k; a
	// negative Pool means every candidate, the whole 2-neighbourhood of
	// Anari and Vuong's guarantee (O(n²k²) values per pair round).
	Pool int
	// PoolBy ranks the items for the pool (default PoolBySwap).
	PoolBy PoolRank
	// SinglesOnly turns pair swaps off: the result is then a (1 + ε)-local
	// optimum for single swaps only, which carries no multiplicative
	// guarantee for nonsymmetric kernels.
	SinglesOnly bool
	// Items restricts the candidates (nil = all n items): validated
	// (non-empty, in range, no duplicates), visited in this order. The
	// start set must be among them.
	Items []int
	// MaxPasses bounds the sweeps (0 = DefaultMaxPasses).
	MaxPasses int
	// OracleOnly sends every candidate through the oracle's value methods:
	// no block scoring. Results are identical either way (for timing and
	// tests).
	OracleOnly bool
	// MaxEvals, when positive, bounds the work of the search in
	// determinant ratios: the values evaluated (as Result.Evals counts
	// them) plus |S|² for each value the oracle had to recompute with a
	// fresh LU (detcache.Stats.Fallbacks, O(|S|²·(|S| + d)) each). The search stops
	// once the work reaches MaxEvals, with LocalSearchResult.Budget set
	// and the set reached so far, which is never worse than the start. It
	// is checked after each candidate of a sweep and each position of a
	// pool pair, so a search may pass it by one visit's |S| values. A
	// sweep evaluates about |S|·N values for N candidates and a pair round
	// about P²·|S|²/4 for a pool of P: see LocalSearch.
	MaxEvals int64
	// Feasible, when not nil, restricts the moves to those that keep the
	// solution feasible: it is called with a solution in the oracle's
	// position order (without the fixed items; swaps replace items in
	// place, so positions are a list's order) and must not keep it. Only
	// single and pair swaps whose result it accepts are applied and count
	// as moves: the result is then a (1 + ε)-local optimum among feasible
	// swaps. The start set must be feasible (it is not checked) and must
	// have k items. A swap it rejects is still evaluated (its value counts
	// in Evals), except pair swaps, which are checked first.
	Feasible func(sol []int) bool
	// Fixed are items that stay in the set and are never swapped out
	// (validated: in range, distinct, not in the start set): the search
	// maximises det L_{F ∪ S} over sets S of k candidates outside F, i.e.
	// det L_S conditioned on F (det L_{F ∪ S} = det L_F · det of the
	// Schur complement). The oracle's capacity must hold k + |F| items,
	// and det L_F must be non-zero. Candidates in F are never chosen.
	Fixed []int
}

// LocalSearchResult is the outcome of LocalSearch. Its Result has Algo
// NameLocalSearch, the solution (the k chosen items in the oracle's
// position order, without the fixed items) and its Value (log det L_S, or
// log det L_{F ∪ S} with fixed items F, recomputed by
// ndpp.Model.LogDet), Evals (determinant
// evaluations, counted as the oracle counts them, including those block
// scoring made unnecessary), Adds (items added to fill a start of fewer
// than k items), Swaps (single and pair swaps applied), Items (the
// number of candidates) and Seconds (the whole search).
type LocalSearchResult struct {
	Result
	Start       ndpp.Value // log det L of the start set after filling (Log 0 for ∅)
	Passes      int        // sweeps over the candidates
	PairRounds  int        // searches of the pool's pair swaps
	SingleSwaps int64      // single swaps applied
	PairSwaps   int64      // pair swaps applied
	Skipped     int64      // candidate visits decided by block scoring without the oracle
	// SkippedPairs counts pairs of pool items whose pair swaps block
	// scoring ruled out without the oracle.
	SkippedPairs int64
	Capped       bool // stopped at MaxPasses before reaching a local optimum
	Budget       bool // stopped at MaxEvals before reaching a local optimum
}

// LocalSearch improves a start set of at most k items (the offline greedy's
// or an online algorithm's solution, or any set; nil or short sets are
// first filled greedily) by single and pair swaps until it is a
// (1 + ε)-local optimum, after N. Anari and T.-D. Vuong, "Simple and
// Near-Optimal MAP Inference for Nonsymmetric DPPs", whose analysis gives
// a k^O(k) approximation for a (1 + ε)-local optimum over swaps of up to
// two items with every item (single swaps alone give none for
// nonsymmetric kernels); with a pool smaller than all items the pair swaps
// are a heuristic restriction of that neighbourhood. It resets the oracle (capacity ≥ k), which holds the solution
// as the search runs; every value comes from the oracle.
//
// The rules, exactly as implemented:
//
//   - Fill: while |S| < k, add the candidate with the largest f(S + t)
//     (the first in candidate order on ties; the first candidate outside S
//     if every gain is zero).
//   - Sweep: visit the candidates outside S in order; for each, find its
//     best swap f(S − S[j] + t) (lowest position on ties) and apply it at
//     once when it exceeds (1 + ε)·f(S). Sweep again while a sweep changed
//     S.
//   - Pair round, after a sweep that changed nothing: the pool is the Pool
//     candidates outside S with the largest scores in that sweep (PoolBy;
//     candidate order on ties); the best pair swap S − {S[a], S[b]} +
//     {x, y} over pool pairs x before y and positions a < b (the first
//     found on ties) is applied when it exceeds (1 + ε)·f(S), and the
//     sweeps resume. Otherwise S is a (1 + ε)-local optimum: no single swap
//     with any candidate and no pair swap within the pool improves f(S) by
//     more than the factor 1 + ε.
//
// Sweeps hand blocks of candidates to the oracle's block scoring (unless
// OracleOnly): a candidate whose swap values are proved not to exceed
// (1 + ε)·f(S) nor its pool's entry threshold is skipped, and so is a pair
// of pool items whose pair swaps are proved not to exceed (1 + ε)·f(S) nor
// the best pair value found before it; the evaluations they would have
// cost are counted, so that results and counters are those of visiting
// every candidate and pair. A sweep costs O(n(kd + k²)) with the fast
// oracle, a pair round O(P(kd + k²) + P²(d + k + k²)) for a pool of P
// items.
//
// # Cost and cancellation
//
// The work is counted in determinant ratios (Result.Evals): a sweep over N
// candidates evaluates k·N of them (k swap values per candidate), a pair
// round P·k for the pool's ranking plus P(P−1)/2 · k(k−1)/2 ≈ P²k²/4 pair
// swap values, and each applied swap starts another sweep. A value costs
// O(1) to O(k + d) from the oracle's identities, but O(k²(k + d)) when it
// must be recomputed with a fresh LU (near-singular sets,
// detcache.Stats.Fallbacks; frequent when k nears the kernel's rank),
// which MaxEvals counts as k² ratios. The number of rounds is not bounded
// by a small polynomial (each applied swap gains a factor 1 + ε only), so
// a caller with a latency budget sets LocalSearchOptions.MaxEvals and a
// deadline. The search looks at ctx every few thousand units of that work
// (a few milliseconds at most): once ctx is done it stops and returns the
// set reached so far (a valid solution, never worse than the start;
// Solution, Value and the counters as for a finished search) together with
// an error wrapping ctx.Err(). When ctx is done while a short start set is
// being filled, it returns no result, only the error.
func LocalSearch(ctx context.Context, o detcache.Oracle, k int, start []int, opt LocalSearchOptions) (LocalSearchResult, error) {
	t0 := time.Now()
	ls, err := newLocalSearch(o, k, start, opt)
	if err != nil {
		return LocalSearchResult{}, err
	}
	ls.ctx = ctx
	if err := ctx.Err(); err != nil {
		return LocalSearchResult{}, fmt.Errorf("stream: local search: %w", err)
	}
	runErr := ls.run(start)
	if runErr != nil && ls.ctxErr == nil {
		return LocalSearchResult{}, runErr
	}
	res := ls.res
	res.Algo, res.K = NameLocalSearch, k
	res.Solution = append([]int(nil), o.Items()[ls.nf:]...)
	res.Value = logDetValue(ls.m, o.Items())
	res.Evals = o.Evals() - ls.evalBase + ls.skippedEvals
	res.Swaps = res.SingleSwaps + res.PairSwaps
	res.Items = int64(len(ls.cands))
	res.Seconds = time.Since(t0).Seconds()
	return res, runErr
}

// checkEvals is the number of determinant ratios between two looks at the
// context of a local search.
const checkEvals = 1 << 12

// lsearch is the state of one LocalSearch.
type lsearch struct {
	o      detcache.Oracle
	m      *ndpp.Model
	k      int // items to choose
	nf     int // fixed items, at the oracle's positions 0…nf−1
	fixed  []int
	cands  []int
	inS    []bool // by item: in the current solution
	logEps float64
	pool   int // pool capacity (0: no pair swaps)
	poolBy PoolRank
	maxP   int
	direct bool

	cur  *detcache.Cand
	vals []ndpp.Value
	blk  *detcache.Block
	heap poolHeap
	pc   []*detcache.Cand // the pool's Cands
	// ready[i]: pc[i] is prepared in this pair round
	ready []bool
	pblk  *detcache.Block // block scoring of the pool's pairs (nil until used)
	cols  []int           // the pool's items

	evalBase     int64
	skippedEvals int64
	res          LocalSearchResult

	feasible  func([]int) bool
	trial     []int       // scratch solution for feasible
	halt      func() bool // stop() as SwapValuesUntil's stop
	ctx       context.Context
	ctxErr    error // the wrapped ctx error once the search saw ctx done
	maxEvals  int64 // 0: unbounded
	nextCheck int64 // work at which ctx is looked at next
	fallBase  int64 // the oracle's fallbacks at the start
}

// evals returns the determinant ratios evaluated so far (Result.Evals).
func (ls *lsearch) evals() int64 { return ls.o.Evals() - ls.evalBase + ls.skippedEvals }

// work returns the work so far in ratios: evals plus |S|² per fresh-LU
// fallback of the oracle (see LocalSearchOptions.MaxEvals).
func (ls *lsearch) work() int64 {
	s := int64(ls.o.Len())
	return ls.evals() + s*s*(ls.o.Stats().Fallbacks-ls.fallBase)
}

// stop reports whether the search must stop: the budget is spent
// (res.Budget) or the context is done (ctxErr, also returned). The context
// is looked at every checkEvals units of work (a fresh LU counting |S|²,
// so that at most a few milliseconds pass between looks).
func (ls *lsearch) stop() (bool, error) {
	if ls.res.Budget || ls.ctxErr != nil { // stopped before
		return true, ls.ctxErr
	}
	e := ls.work()
	if ls.maxEvals > 0 && e >= ls.maxEvals {
		ls.res.Budget = true
		return true, nil
	}
	if e < ls.nextCheck {
		return false, nil
	}
	ls.nextCheck = e + checkEvals
	if err := ls.ctx.Err(); err != nil {
		ls.ctxErr = fmt.Errorf("stream: local search: %w", err)
		return true, ls.ctxErr
	}
	return false, nil
}

func newLocalSearch(o detcache.Oracle, k int, start []int, opt LocalSearchOptions) (*lsearch, error) {
	if o == nil {
		return nil, errNilOracle
	}
	m := o.Model()
	if m == nil {
		return nil, fmt.Errorf("stream: oracle without a model")
	}
	if len(opt.Fixed) > 0 {
		if err := m.CheckItems(opt.Fixed); err != nil {
			return nil, fmt.Errorf("stream: local search fixed items: %w", err)
		}
	}
	if k < 1 {
		return nil, fmt.Errorf("stream: k = %d; need k ≥ 1", k)
	}
	if err := checkK(m, k+len(opt.Fixed), o.Cap()); err != nil {
		return nil, err
	}
	eps := opt.Eps
	if eps == 0 {
		eps = DefaultLocalSearchEps
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return nil, fmt.Errorf("stream: local search ε = %v; need a finite ε > 0", opt.Eps)
	}
	if opt.PoolBy != PoolBySwap && opt.PoolBy != PoolByGain {
		return nil, fmt.Errorf("stream: local search pool ranking %v unknown", opt.PoolBy)
	}
	if opt.MaxEvals < 0 {
		return nil, fmt.Errorf("stream: local search MaxEvals = %d; need ≥ 0 (0: unbounded)", opt.MaxEvals)
	}
	if opt.MaxPasses < 0 {
		return nil, fmt.Errorf("stream: local search MaxPasses = %d; need ≥ 0", opt.MaxPasses)
	}
	cands := opt.Items
	if cands == nil {
		cands = IDOrder(m.N())
	} else if err := m.CheckItems(cands); err != nil {
		return nil, fmt.Errorf("stream: local search candidates: %w", err)
	}
	if k > len(cands) {
		return nil, fmt.Errorf("stream: k = %d exceeds the number of candidates %d", k, len(cands))
	}
	if len(start) > k {
		return nil, fmt.Errorf("stream: start set of %d items for k = %d", len(start), k)
	}
	if opt.Feasible != nil && len(start) != k {
		return nil, fmt.Errorf("stream: local search with Feasible needs a start set of k = %d items, not %d", k, len(start))
	}
	if len(start) > 0 {
		if err := m.CheckItems(start); err != nil {
			return nil, fmt.Errorf("stream: local search start set: %w", err)
		}
	}
	free := len(cands) // candidates outside the fixed items
	if len(opt.Fixed) > 0 {
		isFixed := make(map[int]bool, len(opt.Fixed))
		for _, f := range opt.Fixed {
			isFixed[f] = true
		}
		for _, s := range start {
			if isFixed[s] {
				return nil, fmt.Errorf("stream: start item %d is a fixed item", s)
			}
		}
		free = 0
		for _, c := range cands {
			if !isFixed[c] {
				free++
			}
		}
		if k > free {
			return nil, fmt.Errorf("stream: k = %d exceeds the %d candidates outside the fixed items", k, free)
		}
	}
	if opt.Items != nil {
		isCand := make(map[int]bool, len(cands))
		for _, c := range cands {
			isCand[c] = true
		}
		for _, s := range start {
			if !isCand[s] {
				return nil, fmt.Errorf("stream: start item %d is not a candidate", s)
			}
		}
	}
	pool := resolvePool(opt, k, free)
	maxP := opt.MaxPasses
	if maxP == 0 {
		maxP = DefaultMaxPasses
	}
	o.Reset()
	ls := &lsearch{
		o: o, m: m, k: k, nf: len(opt.Fixed), fixed: opt.Fixed, cands: cands, inS: make([]bool, m.N()), logEps: math.Log1p(eps),
		pool: pool, poolBy: opt.PoolBy, maxP: maxP, direct: opt.OracleOnly,
		cur: o.NewCand(), vals: make([]ndpp.Value, k+len(opt.Fixed)), evalBase: o.Evals(),
		maxEvals: opt.MaxEvals, fallBase: o.Stats().Fallbacks, feasible: opt.Feasible,
	}
	ls.heap.cap = pool
	ls.halt = func() bool { s, _ := ls.stop(); return s }
	return ls, nil
}

func (ls *lsearch) run(start []int) error {
	o := ls.o
	for _, f := range ls.fixed {
		o.Prepare(ls.cur, f)
		if err := o.Add(ls.cur); err != nil {
			return fmt.Errorf("stream: local search: adding fixed item %d: %w", f, err)
		}
		ls.inS[f] = true
	}
	if ls.nf > 0 && o.Value().Zero {
		return fmt.Errorf("stream: local search: the fixed items' determinant is zero")
	}
	for _, s := range start {
		o.Prepare(ls.cur, s)
		if err := o.Add(ls.cur); err != nil {
			return fmt.Errorf("stream: local search: adding start item %d: %w", s, err)
		}
		ls.inS[s] = true
	}
	if err := ls.fill(); err != nil {
		return err
	}
	ls.res.Start = logDetValue(ls.m, o.Items())
	for {
		if ls.res.Passes == ls.maxP {
			ls.res.Capped = true
			return nil
		}
		ls.res.Passes++
		changed, stopped, err := ls.sweep()
		if err != nil || stopped {
			return err
		}
		if changed {
			continue
		}
		if ls.pool == 0 {
			return nil
		}
		ls.res.PairRounds++
		if changed, stopped, err = ls.pairRound(); err != nil || stopped || !changed {
			return err
		}
	}
}

// fill adds the best candidate while |S| < k.
func (ls *lsearch) fill() error {
	o := ls.o
	for o.Len() < ls.nf+ls.k {
		best, bv := -1, ndpp.ZeroValue
		for _, t := range ls.cands {
			if ls.inS[t] {
				continue
			}
			o.Prepare(ls.cur, t)
			if v := o.AddValue(ls.cur); best < 0 || v.Greater(bv) {
				best, bv = t, v
			}
		}
		if ls.nextCheck <= ls.evals() {
			ls.nextCheck = ls.evals() + checkEvals
			if err := ls.ctx.Err(); err != nil {
				// Not a solution yet: LocalSearch returns no result.
				return fmt.Errorf("stream: local search: filling the start set: %w", err)
			}
		}
		o.Prepare(ls.cur, best)
		if err := o.Add(ls.cur); err != nil {
			return fmt.Errorf("stream: local search: adding item %d: %w", best, err)
		}
		ls.inS[best] = true
		ls.res.Adds++
	}
	return nil
}

// ranking reports whether the current sweep ranks candidates for the pool
// (pair swaps on, and S unchanged since the sweep began).
func (ls *lsearch) ranking(changed bool) bool { return ls.pool > 0 && !changed }

// sweep visits every candidate outside S once, applying each improving
// single swap at once, and reports whether S changed. While S is unchanged
// it ranks the candidates for the pool. It stops early (stopped) when the
// budget is spent or the context is done (err).
func (ls *lsearch) sweep() (changed, stopped bool, err error) {
	o := ls.o
	ls.heap.reset()
	if !ls.direct && ls.blk == nil {
		ls.blk = o.NewBlock(blockSize)
	}
	cands := ls.cands
	for start := 0; start < len(cands); {
		end := min(start+blockSize, len(cands))
		fv := o.Value()
		scored := !ls.direct && !fv.Zero && o.ScoreBlock(ls.blk, cands[start:end])
		bar := fv.Log + ls.logEps
		c := start
		for ; c < end; c++ {
			t := cands[c]
			if ls.inS[t] {
				continue
			}
			if scored && ls.provedIdle(c-start, bar, ls.ranking(changed)) {
				ls.res.Skipped++
				ls.skippedEvals += int64(o.Len())
				if ls.ranking(changed) && ls.poolBy == PoolByGain {
					ls.skippedEvals++
				}
				if stopped, err = ls.stop(); stopped {
					return changed, true, err
				}
				continue
			}
			moved, err := ls.visit(t, c, fv, ls.ranking(changed))
			if err != nil {
				return changed, false, err
			}
			if stopped, err = ls.stop(); stopped {
				return changed || moved, true, err
			}
			if moved {
				changed = true
				c++
				break // score the rest of the block against the new S
			}
		}
		start = c
	}
	return changed, false, nil
}

// provedIdle reports whether block scoring proves that the candidate in
// column col neither has a swap above bar nor enters the pool.
func (ls *lsearch) provedIdle(col int, bar float64, ranking bool) bool {
	if !ranking {
		return ls.blk.SwapsBelow(col, bar)
	}
	if !ls.heap.full() {
		return false
	}
	floor := ls.heap.min().v
	if floor.Zero {
		return false
	}
	if ls.poolBy == PoolBySwap {
		return ls.blk.SwapsBelow(col, min(bar, floor.Log))
	}
	return ls.blk.SwapsBelow(col, bar) && ls.blk.AddBelow(col, floor.Log)
}

// visit prices candidate t (position c in the candidates) against S,
// offers it to the pool when ranking, and applies its best swap if it
// beats (1 + ε)·f(S).
func (ls *lsearch) visit(t, c int, fv ndpp.Value, ranking bool) (bool, error) {
	o := ls.o
	k := o.Len()
	o.Prepare(ls.cur, t)
	if !o.SwapValuesUntil(ls.cur, ls.vals, ls.halt) {
		return false, nil // the caller's stop() says why
	}
	bj := ls.nf
	for j := ls.nf + 1; j < k; j++ {
		if ls.vals[j].Greater(ls.vals[bj]) {
			bj = j
		}
	}
	if ls.feasible != nil {
		bj = -1
		for j := ls.nf; j < k; j++ {
			if (bj < 0 || ls.vals[j].Greater(ls.vals[bj])) && ls.allowed(j, -1, t, -1) {
				bj = j
			}
		}
		if bj < 0 {
			if ranking {
				ls.heap.offer(poolEntry{v: ndpp.ZeroValue, c: c, item: t})
			}
			return false, nil
		}
	}
	bv := ls.vals[bj]
	if ranking {
		score := bv
		if ls.poolBy == PoolByGain {
			score = o.AddValue(ls.cur)
		}
		ls.heap.offer(poolEntry{v: score, c: c, item: t})
	}
	if !beats(bv, fv, ls.logEps) {
		return false, nil
	}
	out := o.Items()[bj]
	if err := o.Swap(bj, ls.cur); err != nil {
		return false, fmt.Errorf("stream: local search: swapping item %d in: %w", t, err)
	}
	ls.inS[out], ls.inS[t] = false, true
	ls.res.SingleSwaps++
	return true, nil
}

// allowed reports whether the solution with S[a] replaced by x (and S[b]
// by y when b ≥ 0) is feasible.
func (ls *lsearch) allowed(a, b, x, y int) bool {
	ls.trial = append(ls.trial[:0], ls.o.Items()[ls.nf:]...)
	ls.trial[a-ls.nf] = x
	if b >= 0 {
		ls.trial[b-ls.nf] = y
	}
	return ls.feasible(ls.trial)
}

// maxPairBlock is the largest pool whose pairs are block scored (a Block
// holds O(size·k) numbers).
const maxPairBlock = 4096

// pairRound searches the pair swaps within the pool ranked by the last
// sweep (which left S unchanged) and applies the best if it beats
// (1 + ε)·f(S). With block scoring, a pair of pool items whose values are
// proved not to exceed max((1 + ε)·f(S), the best value so far) is
// skipped (it can neither be applied nor be the first best), its
// evaluations counted. It stops without a swap (stopped) when the budget
// is spent or the context is done (err).
func (ls *lsearch) pairRound() (changed, stopped bool, err error) {
	o := ls.o
	pool := ls.heap.sorted()
	for len(ls.pc) < len(pool) {
		ls.pc = append(ls.pc, o.NewCand())
		ls.ready = append(ls.ready, false)
	}
	clear(ls.ready)
	prep := func(i int) *detcache.Cand {
		if !ls.ready[i] {
			o.Prepare(ls.pc[i], pool[i].item)
			ls.ready[i] = true
		}
		return ls.pc[i]
	}
	fv := o.Value()
	k := o.Len()
	scored := false
	if !ls.direct && !fv.Zero && len(pool) <= maxPairBlock {
		if ls.pblk == nil {
			ls.pblk = o.NewBlock(min(ls.pool, maxPairBlock))
		}
		ls.cols = ls.cols[:0]
		for _, e := range pool {
			ls.cols = append(ls.cols, e.item)
		}
		scored = o.ScoreBlock(ls.pblk, ls.cols)
	}
	free := k - ls.nf
	npairs := int64(free * (free - 1) / 2)
	bar := fv.Log + ls.logEps
	bv := ndpp.ZeroValue
	bx, by, ba, bb := -1, -1, -1, -1
	for x := range pool {
		for y := x + 1; y < len(pool); y++ {
			if scored {
				L := bar
				if !bv.Zero && bv.Log > L {
					L = bv.Log
				}
				if ls.pblk.PairsBelow(x, y, L) {
					ls.res.SkippedPairs++
					ls.skippedEvals += npairs
					if stopped, err = ls.stop(); stopped {
						return false, true, err
					}
					continue
				}
			}
			cx, cy := prep(x), prep(y)
			for a := ls.nf; a < k; a++ {
				for b := a + 1; b < k; b++ {
					if ls.feasible != nil && !ls.allowed(a, b, pool[x].item, pool[y].item) {
						continue
					}
					if v := o.PairSwapValue(cx, cy, a, b); v.Greater(bv) {
						bv, bx, by, ba, bb = v, x, y, a, b
					}
					// Values the identity cannot give reliably cost
					// a fresh LU each: look at the budget and ctx per
					// pair.
					if stopped, err = ls.stop(); stopped {
						return false, true, err
					}
				}
			}
		}
	}
	if bx < 0 || !beats(bv, fv, ls.logEps) {
		return false, false, nil
	}
	items := o.Items()
	outA, outB := items[ba], items[bb]
	if err := o.PairSwap(ba, bb, prep(bx), prep(by)); err != nil {
		return false, false, fmt.Errorf("stream: local search: swapping items %d, %d in: %w", pool[bx].item, pool[by].item, err)
	}
	ls.inS[outA], ls.inS[outB] = false, false
	ls.inS[pool[bx].item], ls.inS[pool[by].item] = true, true
	ls.res.PairSwaps++
	return true, false, nil
}

// poolEntry is a candidate's pool score: its value v, its position c in the
// candidates and its item.
type poolEntry struct {
	v       ndpp.Value
	c, item int
}

// worse orders pool entries: a lower score, or an equal one later in the
// candidates.
func (e poolEntry) worse(f poolEntry) bool {
	if f.v.Greater(e.v) {
		return true
	}
	return !e.v.Greater(f.v) && e.c > f.c
}

// poolHeap keeps the cap best entries offered (a min-heap by worse).
type poolHeap struct {
	cap int
	h   []poolEntry
}

func (p *poolHeap) reset()             { p.h = p.h[:0] }
func (p *poolHeap) full() bool         { return len(p.h) >= p.cap }
func (p *poolHeap) min() poolEntry     { return p.h[0] }
func (p *poolHeap) less(i, j int) bool { return p.h[i].worse(p.h[j]) }

// offer adds e if the heap has room or e is better than its worst entry.
func (p *poolHeap) offer(e poolEntry) {
	if p.cap == 0 {
		return
	}
	if len(p.h) < p.cap {
		p.h = append(p.h, e)
		for i := len(p.h) - 1; i > 0; {
			parent := (i - 1) / 2
			if !p.less(i, parent) {
				break
			}
			p.h[i], p.h[parent] = p.h[parent], p.h[i]
			i = parent
		}
		return
	}
	if !p.h[0].worse(e) {
		return
	}
	p.h[0] = e
	for i := 0; ; {
		l, r, s := 2*i+1, 2*i+2, i
		if l < len(p.h) && p.less(l, s) {
			s = l
		}
		if r < len(p.h) && p.less(r, s) {
			s = r
		}
		if s == i {
			return
		}
		p.h[i], p.h[s] = p.h[s], p.h[i]
		i = s
	}
}

// sorted returns the entries best first.
func (p *poolHeap) sorted() []poolEntry {
	out := slices.Clone(p.h)
	slices.SortFunc(out, func(a, b poolEntry) int {
		switch {
		case b.worse(a):
			return -1
		case a.worse(b):
			return 1
		}
		return 0
	})
	return out
}

// resolvePool is the number of candidates outside S that LocalSearch tries
// in pairs for the options, k and the free candidates (those not fixed):
// 0 for singles only or when fewer than two items lie outside S.
func resolvePool(opt LocalSearchOptions, k, free int) int {
	pool := opt.Pool
	switch {
	case opt.SinglesOnly:
		pool = 0
	case pool == 0:
		pool = DefaultPoolPerItem * k
	case pool < 0:
		pool = free
	}
	pool = min(pool, free-k)
	if pool < 2 {
		pool = 0 // no pair of items outside S
	}
	return pool
}
