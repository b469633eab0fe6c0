package stream

import (
	"context"
	"fmt"
	"math"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
)

// OnlineLSS is the paper's Online-LSS (Alg. 2), online local search with a
// stash, with parameter α ≥ 1 (the paper uses α = 1.1).
//
// While |S| < k an arriving item t is added when f(S ∪ {t}) ≠ 0 and dropped
// otherwise. Once |S| = k, the best single swap of t for some j ∈ S (the
// lowest position on ties) is applied when f(S − j + t) > α·f(S), and j goes
// to the stash T. After an accepted swap, while some a ∈ S, b ∈ T give
// f(S − a + b) > α·f(S), the best such swap is applied (ties: stash order
// first, then position), a going to T and b leaving T.
type OnlineLSS struct{ local }

// Online2Neighbor is the paper's Online-2-neighbor (Alg. 3): Online-LSS whose
// arriving step also considers replacing two elements of S by {t−1, t}, t−1
// being the previous item of the stream (considered only when it is not in
// S), taking the best of all single and pair moves (singles first, then
// pairs by positions, on ties). Its stash search runs over the whole
// 2-neighbourhood — every S' ⊆ S ∪ T with |S'| = k and |S' ∖ S| ≤ 2 — best
// move first (singles before pairs on ties).
//
// That search costs O(|T|²·k²) values per round, so one arriving item can
// take long. Under a context — ObserveBatch, ObserveItems, Run, RunItems,
// RunItemsAll — the search looks at it before every round and every 16384
// values; once it is done, the item is rolled back: the solver returns to
// its state before the item, counters included (from a MarshalBinary
// snapshot taken before an arriving move is applied, only when the
// context can be done), and the call reports the item as not observed, so
// that feeding it again continues as an uninterrupted run. Observe and
// ObserveItem take no context and are never interrupted.
type Online2Neighbor struct{ local }

// OnlineGreedy is the paper's Online-Greedy (Alg. 5 in the appendix): fill S
// as Online-LSS does; once |S| = k, swap t for the best j ∈ S (lowest
// position on ties) when that strictly increases f(S). No stash.
type OnlineGreedy struct{ local }

// NewOnlineLSS returns an Online-LSS solver with solution size k. It resets
// the oracle, which it then owns.
func NewOnlineLSS(o detcache.Oracle, k int, opt Options) (*OnlineLSS, error) {
	l, err := newLocal(o, k, opt, NameOnlineLSS, true, false)
	if err != nil {
		return nil, err
	}
	return &OnlineLSS{l}, nil
}

// NewOnline2Neighbor returns an Online-2-neighbor solver with solution size
// k. It resets the oracle, which it then owns.
func NewOnline2Neighbor(o detcache.Oracle, k int, opt Options) (*Online2Neighbor, error) {
	l, err := newLocal(o, k, opt, NameOnline2Neighbor, true, true)
	if err != nil {
		return nil, err
	}
	return &Online2Neighbor{l}, nil
}

// NewOnlineGreedy returns an Online-Greedy solver with solution size k. Of
// opt only OracleOnly is used (α = 1, no stash). It resets the oracle, which
// it then owns.
func NewOnlineGreedy(o detcache.Oracle, k int, opt Options) (*OnlineGreedy, error) {
	l, err := newLocal(o, k, Options{Alpha: 1, OracleOnly: opt.OracleOnly}, NameOnlineGreedy, false, false)
	if err != nil {
		return nil, err
	}
	return &OnlineGreedy{l}, nil
}

// checkOptions validates α and the stash cap.
func checkOptions(opt *Options) error {
	if opt.Alpha == 0 {
		opt.Alpha = DefaultAlpha
	}
	if math.IsNaN(opt.Alpha) || math.IsInf(opt.Alpha, 0) || opt.Alpha < 1 {
		return fmt.Errorf("stream: α = %v; need a finite α ≥ 1", opt.Alpha)
	}
	if opt.StashCap < 0 {
		return fmt.Errorf("stream: stash cap %d; need ≥ 0 (0 = unbounded)", opt.StashCap)
	}
	return nil
}

type stashEntry struct {
	item ndpp.Item // for vector items, its vectors live in buf
	buf  []float64
	c    *detcache.Cand
	at   uint64 // value of changes when c was prepared
	ok   bool   // c is prepared (at is meaningful)
}

// local is the engine of the three local-search solvers.
type local struct {
	base
	name     string
	alpha    float64
	logAlpha float64
	stashCap int
	useStash bool
	pairs    bool
	direct   bool // Options.OracleOnly

	stash     []stashEntry
	stashed   map[int]struct{} // the ids of stash's items
	stashMask [16]uint64       // bit id mod 1024 of every stash item
	pool      []stashEntry     // free entries (Cand and buffer)
	peak      int
	evicted   int64
	capped    int64

	cur      *detcache.Cand
	prev     int // id of the previous item of the stream, −1 before the first
	prevItem ndpp.Item
	prevBuf  []float64 // prevItem's vectors (vector items)
	prevC    *detcache.Cand
	prevAt   uint64
	prevOK   bool

	vals       []ndpp.Value
	outA, outB []float64 // copies of items leaving S (vector items)

	blk      *detcache.Block // block scoring of ObserveBatch and the stash search (nil until used)
	cols     []int           // the ids of blk's items
	colItems []ndpp.Item     // blk's items (vector items)
	skipped  int64
	onSkip   skipFunc // nil but in tests
}

func newLocal(o detcache.Oracle, k int, opt Options, name string, useStash, pairs bool) (local, error) {
	if err := checkOptions(&opt); err != nil {
		return local{}, err
	}
	b, err := newBase(o, k)
	if err != nil {
		return local{}, err
	}
	l := local{
		base: b, name: name, alpha: opt.Alpha, logAlpha: math.Log(opt.Alpha), stashCap: opt.StashCap,
		useStash: useStash, pairs: pairs, direct: opt.OracleOnly, cur: o.NewCand(), prev: -1, vals: make([]ndpp.Value, k),
		stashed: map[int]struct{}{},
	}
	if pairs {
		l.prevC = o.NewCand()
	}
	return l, nil
}

// Name returns the algorithm's name.
func (l *local) Name() string { return l.name }

// Alpha returns the improvement factor α.
func (l *local) Alpha() float64 { return l.alpha }

// Stash returns a copy of the stash T (oldest first): item ids.
func (l *local) Stash() []int {
	out := make([]int, len(l.stash))
	for i, e := range l.stash {
		out[i] = e.item.ID
	}
	return out
}

// Stats returns the solver's counters.
func (l *local) Stats() Stats {
	st := l.stats()
	st.Stash, st.PeakStash, st.Evicted, st.Capped = len(l.stash), l.peak, l.evicted, l.capped
	return st
}

// inStash returns item's position in the stash, or −1: O(1) for most
// items (a mask of the stash's ids), O(|T|) for those in the stash.
func (l *local) inStash(item int) int {
	if h := uint(item) & 1023; l.stashMask[h>>6]&(1<<(h&63)) == 0 {
		return -1
	}
	if _, ok := l.stashed[item]; !ok {
		return -1
	}
	for i, e := range l.stash {
		if e.item.ID == item {
			return i
		}
	}
	return -1
}

// Observe processes the next item of the stream.
func (l *local) Observe(t int) error { return l.observeID(context.Background(), t) }

// ObserveItem processes the next item given by its vectors.
func (l *local) ObserveItem(it ndpp.Item) error { return l.observe(context.Background(), it) }

// observeID is Observe with a context (see observe).
func (l *local) observeID(ctx context.Context, t int) error {
	it, err := l.modelItem(t)
	if err != nil {
		return err
	}
	return l.observe(ctx, it)
}

// observeItem is ObserveItem with a context (see observe).
func (l *local) observeItem(ctx context.Context, it ndpp.Item) error { return l.observe(ctx, it) }

// observe is Observe and ObserveItem: the algorithm. For Online-2-neighbor
// under a context that can be done (ctx.Done() not nil), the stash search
// looks at ctx; once it is done the item is rolled back (see rollback) and
// the error wraps ctx.Err().
func (l *local) observe(ctx context.Context, it ndpp.Item) error {
	if err := l.checkItem(it); err != nil {
		return err
	}
	t := it.ID
	if l.inStash(t) >= 0 {
		return fmt.Errorf("stream: item %d is already in the stash", t)
	}
	items0, evals0 := l.items, l.o.Evals()
	l.items++
	o := l.o
	l.prepare(l.cur, it)
	curAt := l.changes
	if o.Len() < l.k {
		if v := o.AddValue(l.cur); !v.Zero {
			if err := o.Add(l.cur); err != nil {
				return fmt.Errorf("stream: adding item %d: %w", t, err)
			}
			l.adds++
			l.changes++
		}
		l.advance(it, curAt)
		return nil
	}
	fv := o.Value()
	k := o.Len()
	o.SwapValues(l.cur, l.vals)
	bv, bj, pa, pb := l.vals[0], 0, -1, -1
	for j := 1; j < k; j++ {
		if l.vals[j].Greater(bv) {
			bv, bj = l.vals[j], j
		}
	}
	if l.pairs && l.prev >= 0 && l.prev != t && l.inS(l.prev) < 0 {
		if !l.prevOK || l.prevAt != l.changes {
			l.prepare(l.prevC, l.prevIt())
			l.prevAt, l.prevOK = l.changes, true
		}
		for a := 0; a < k; a++ {
			for b := a + 1; b < k; b++ {
				if v := o.PairSwapValue(l.prevC, l.cur, a, b); v.Greater(bv) {
					bv, pa, pb = v, a, b
				}
			}
		}
	}
	if beats(bv, fv, l.logAlpha) {
		// The state to return to if the stash search is stopped.
		var undo []byte
		search := context.Background()
		if l.pairs && l.useStash && ctx.Done() != nil {
			var err error
			if undo, err = l.MarshalBinary(); err != nil {
				return err
			}
			search = ctx
		}
		undoEvals := l.o.Evals() - evals0 // the values computed for it so far
		if pa < 0 {
			var out ndpp.Item
			if l.useStash {
				out, l.outA = l.outItem(bj, l.outA)
			}
			if err := o.Swap(bj, l.cur); err != nil {
				return fmt.Errorf("stream: swapping item %d in: %w", t, err)
			}
			l.swaps++
			l.changes++
			l.push(out)
		} else {
			var outA, outB ndpp.Item
			if l.useStash {
				outA, l.outA = l.outItem(pa, l.outA)
				outB, l.outB = l.outItem(pb, l.outB)
			}
			if err := o.PairSwap(pa, pb, l.prevC, l.cur); err != nil {
				return fmt.Errorf("stream: swapping items %d, %d in: %w", l.prev, t, err)
			}
			l.swaps++
			l.changes++
			if i := l.inStash(l.prev); i >= 0 {
				l.drop(i)
			}
			l.push(outA)
			l.push(outB)
		}
		if l.useStash {
			if err := l.stashSearch(search); err != nil {
				if undo != nil && search.Err() != nil {
					return l.rollback(undo, items0, undoEvals, t, err)
				}
				return err
			}
		}
	}
	l.advance(it, curAt)
	return nil
}

// rollback returns the solver to the state saved in undo before item t's
// first change, when its stash search was stopped with err (wrapping the
// context's error): the snapshot restores S, the oracle, the stash and the
// counters as they were then; the items counter goes back to items0 and
// the evaluations made for t before the snapshot (evals) are taken off, so
// that the solver's Stats are those before t arrived. Fed t again, it
// continues as if t had not arrived before (snapshots continue with
// identical results).
func (l *local) rollback(undo []byte, items0, evals int64, t int, err error) error {
	if rerr := l.UnmarshalBinary(undo); rerr != nil {
		return fmt.Errorf("stream: restoring the state before item %d after %w: %v", t, err, rerr)
	}
	l.items = items0
	l.evalBase += evals
	return err
}

// advance makes it the previous item (its Cand prepared at version at).
func (l *local) advance(it ndpp.Item, at uint64) {
	if !l.pairs {
		return
	}
	l.setPrev(it)
	l.prevC, l.cur = l.cur, l.prevC
	l.prevAt, l.prevOK = at, true
}

// setPrev records it as the previous item (a copy of its vectors), its
// Cand not prepared.
func (l *local) setPrev(it ndpp.Item) {
	l.prev = it.ID
	if l.m == nil {
		l.prevItem, l.prevBuf = it.CopyTo(l.prevBuf)
	}
	l.prevOK = false
}

// prevIt returns the previous item (l.prev ≥ 0).
func (l *local) prevIt() ndpp.Item {
	if l.m != nil {
		return ndpp.ModelItem(l.m, l.prev)
	}
	return l.prevItem
}

// push puts an item swapped out of S into the stash (a copy of its
// vectors), evicting the oldest item beyond the cap.
func (l *local) push(it ndpp.Item) {
	if !l.useStash {
		return
	}
	var e stashEntry
	if n := len(l.pool); n > 0 {
		e, l.pool = l.pool[n-1], l.pool[:n-1]
	} else {
		e.c = l.o.NewCand()
	}
	e.item, e.buf = it.CopyTo(e.buf)
	e.at, e.ok = 0, false
	l.stash = append(l.stash, e)
	l.stashed[it.ID] = struct{}{}
	l.markStash(it.ID)
	if l.stashCap > 0 && len(l.stash) > l.stashCap {
		l.drop(0)
		l.evicted++
	}
	l.peak = max(l.peak, len(l.stash))
}

// drop removes stash entry i, keeping the order of the others.
func (l *local) drop(i int) {
	e := l.stash[i]
	l.pool = append(l.pool, stashEntry{c: e.c, buf: e.buf})
	delete(l.stashed, e.item.ID)
	copy(l.stash[i:], l.stash[i+1:])
	l.stash[len(l.stash)-1] = stashEntry{}
	l.stash = l.stash[:len(l.stash)-1]
	l.stashMask = [16]uint64{}
	for _, e := range l.stash {
		l.markStash(e.item.ID)
	}
}

// markStash sets id's bit of the stash mask.
func (l *local) markStash(id int) {
	h := uint(id) & 1023
	l.stashMask[h>>6] |= 1 << (h & 63)
}

// stashCheckEvery is the number of candidate values the stash search
// computes between two looks at its context (a few milliseconds at most).
const stashCheckEvery = 1 << 14

// stashSearch applies the best improving stash move while one beats α·f(S).
// It looks at ctx before every round and every stashCheckEvery values of
// the pair moves, and once ctx is done it stops, with the moves of the
// rounds before applied, returning an error wrapping ctx.Err() (observe
// then rolls the item back).
func (l *local) stashSearch(ctx context.Context) error {
	o := l.o
	var work, nextCheck int64
	for round := 0; ; round++ {
		if len(l.stash) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("stream: stash search stopped: %w", err)
		}
		if round == MaxStashRounds {
			l.capped++
			return nil
		}
		if l.stashRejected() {
			return nil
		}
		for i := range l.stash {
			e := &l.stash[i]
			switch {
			case !e.ok:
				l.prepare(e.c, e.item)
			case e.at != l.changes:
				o.Refresh(e.c) // O(d + k²) after one change, identical to Prepare
			}
			e.at, e.ok = l.changes, true
		}
		fv := o.Value()
		k := o.Len()
		bv := ndpp.ZeroValue
		b1, b2, a1, a2 := -1, -1, -1, -1
		for i := range l.stash {
			o.SwapValues(l.stash[i].c, l.vals)
			for a := 0; a < k; a++ {
				if l.vals[a].Greater(bv) {
					bv, b1, a1 = l.vals[a], i, a
				}
			}
		}
		if l.pairs {
			for i := range l.stash {
				for j := i + 1; j < len(l.stash); j++ {
					if work += int64(k * (k - 1) / 2); work >= nextCheck {
						nextCheck = work + stashCheckEvery
						if err := ctx.Err(); err != nil {
							return fmt.Errorf("stream: stash search stopped: %w", err)
						}
					}
					for a := 0; a < k; a++ {
						for b := a + 1; b < k; b++ {
							if v := o.PairSwapValue(l.stash[i].c, l.stash[j].c, a, b); v.Greater(bv) {
								bv, b1, b2, a1, a2 = v, i, j, a, b
							}
						}
					}
				}
			}
		}
		if b1 < 0 || !beats(bv, fv, l.logAlpha) {
			return nil
		}
		if b2 < 0 {
			in := l.stash[b1].item.ID
			var out ndpp.Item
			out, l.outA = l.outItem(a1, l.outA)
			if err := o.Swap(a1, l.stash[b1].c); err != nil {
				return fmt.Errorf("stream: swapping stash item %d in: %w", in, err)
			}
			l.drop(b1)
			l.push(out)
		} else {
			var outA, outB ndpp.Item
			outA, l.outA = l.outItem(a1, l.outA)
			outB, l.outB = l.outItem(a2, l.outB)
			x, y := l.stash[b1], l.stash[b2]
			if err := o.PairSwap(a1, a2, x.c, y.c); err != nil {
				return fmt.Errorf("stream: swapping stash items %d, %d in: %w", x.item.ID, y.item.ID, err)
			}
			l.drop(b2) // b2 > b1: drop the later one first
			l.drop(b1)
			l.push(outA)
			l.push(outB)
		}
		l.swaps++
		l.changes++
	}
}

// stashRejected reports whether the oracle's block scoring proves that no
// stash move beats α·f(S) in this round; the evaluations the oracle would
// have made are then counted without it. Skipping the oracle here changes
// nothing else: stash Cands are prepared again after the next change anyway.
func (l *local) stashRejected() bool {
	nt := len(l.stash)
	fv := l.o.Value()
	if l.direct || l.o.Len() != l.k || nt > blockSize+1 || fv.Zero {
		return false
	}
	if l.blk == nil {
		l.initBlock()
	}
	cols, its := l.cols[:0], l.colItems[:0]
	for _, e := range l.stash {
		cols = append(cols, e.item.ID)
		if l.m == nil {
			its = append(its, e.item)
		}
	}
	l.cols, l.colItems = cols, its
	if !l.scoreBlock(l.blk, cols, its) {
		return false
	}
	bar := fv.Log + l.logAlpha
	for c := range cols {
		if !l.blk.SwapsBelow(c, bar) {
			return false
		}
	}
	if l.pairs {
		for cx := range cols {
			for cy := cx + 1; cy < len(cols); cy++ {
				if !l.blk.PairsBelow(cx, cy, bar) {
					return false
				}
			}
		}
	}
	k := int64(l.k)
	evals := int64(nt) * k
	if l.pairs {
		evals += int64(nt*(nt-1)/2) * (k * (k - 1) / 2)
	}
	l.evalBase -= evals
	if l.onSkip != nil {
		l.onSkip(-1, -1, bar)
	}
	return true
}

// MarshalBinary saves the solver's state (including the oracle's). A
// solver of vector items saves the vectors of its stash and of the previous
// item with their ids.
func (l *local) MarshalBinary() ([]byte, error) {
	e, err := l.marshalBase(l.name)
	if err != nil {
		return nil, err
	}
	e.F64(l.alpha)
	e.Int(l.stashCap)
	e.Ints(l.Stash())
	if l.m == nil {
		for _, en := range l.stash {
			encodeVectors(e, &l.kern, en.item)
		}
	}
	e.Int(l.peak)
	e.I64(l.evicted)
	e.I64(l.capped)
	e.Int(l.prev)
	if l.m == nil && l.prev >= 0 {
		encodeVectors(e, &l.kern, l.prevIt())
	}
	return e.Finish()
}

// UnmarshalBinary restores a state saved by MarshalBinary of a solver of the
// same algorithm. Candidate products are prepared again on demand, so the
// restored solver continues exactly as the saved one would have.
func (l *local) UnmarshalBinary(data []byte) error {
	nb, ob, d, err := l.unmarshalBase(data, l.name)
	if err != nil {
		return err
	}
	hi := math.MaxInt // ids of vector items
	if l.m != nil {
		hi = l.m.N() - 1
	}
	opt := Options{Alpha: d.F64(), StashCap: d.Int("stash cap", 0, math.MaxInt)}
	stash := d.Ints("stash", 0, hi)
	var items []ndpp.Item
	if l.m == nil {
		items = decodeVectors(d, &l.kern, stash)
	}
	peak := d.Int("peak stash", 0, math.MaxInt)
	evicted := d.I64()
	capped := d.I64()
	prev := d.Int("previous item", -1, hi)
	var prevItem []ndpp.Item
	if l.m == nil && prev >= 0 {
		prevItem = decodeVectors(d, &l.kern, []int{prev})
	}
	if err := d.Done(); err != nil {
		return err
	}
	if err := checkOptions(&opt); err != nil {
		return fmt.Errorf("stream: snapshot: %w", err)
	}
	if !l.useStash && len(stash) > 0 || opt.StashCap > 0 && len(stash) > opt.StashCap || peak < len(stash) {
		return fmt.Errorf("stream: snapshot has a stash of %d items (cap %d, peak %d)", len(stash), opt.StashCap, peak)
	}
	if err := checkIDs(l.o.N(), stash); err != nil {
		return err
	}
	if err := commitOracle(l.o, ob, nb.k, stash); err != nil {
		return err
	}
	l.base = nb
	l.alpha, l.logAlpha, l.stashCap = opt.Alpha, math.Log(opt.Alpha), opt.StashCap
	for len(l.stash) > 0 {
		l.drop(len(l.stash) - 1)
	}
	for i, id := range stash {
		it := ndpp.Item{}
		if l.m != nil {
			it = ndpp.ModelItem(l.m, id)
		} else {
			it = items[i]
		}
		l.push(it)
	}
	l.peak, l.evicted, l.capped = peak, evicted, capped
	l.prev, l.prevOK = prev, false
	switch {
	case prev < 0:
	case l.m != nil:
		l.setPrev(ndpp.ModelItem(l.m, prev))
	default:
		l.setPrev(prevItem[0])
	}
	if len(l.vals) < nb.k {
		l.vals = make([]ndpp.Value, nb.k)
	}
	return nil
}
