package learn

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/ndpp-go/ndpp/eval"
	"github.com/ndpp-go/ndpp/internal/f64"
	"github.com/ndpp-go/ndpp/learn/internal/exactnorm"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// Normalizer selects the normaliser term of the online objective.
type Normalizer int

const (
	// NormExact is the full log det(I + L) through the 2d×2d Gram matrix,
	// kept up to date incrementally; its gradient is applied to the
	// basket's columns (weighted by t/μᵢ, see Observe) and to C. The
	// default: it is the normaliser of the likelihood.
	NormExact Normalizer = iota
	// NormBasket is the paper's basket-restricted normaliser
	// log det(I + L_{S_t}). Nothing in it penalises the growth of
	// log det(I + L), so the learned kernel ranks items but its likelihood
	// is poorly calibrated.
	NormBasket
)

// String returns "exact" or "basket".
func (k Normalizer) String() string {
	if k == NormExact {
		return "exact"
	}
	return "basket"
}

// OnlineOptions configures an online learner. Zero values select the
// defaults.
type OnlineOptions struct {
	D      int  // rank (default 30)
	Shared bool // B = V
	// LowRank learns Gartrell et al.'s kernel L = VᵀV + BᵀCB. By default
	// the kernel has a diagonal, L = Δ + VᵀV + BᵀCB (see Params), with
	//
	//	δᵢ(t) = rᵢ(t)·exp(φᵢ),  rᵢ(t) = (μᵢ + 1)/(t − μᵢ + 1),
	//
	// rᵢ the odds of the item's running frequency μᵢ/t (the
	// independent-items model of the baskets so far, known exactly at every
	// step) and φᵢ a learned correction: the diagonal tracks each item's rate
	// from the first basket, and the gradient only has to learn how the
	// embeddings share it.
	LowRank bool
	Seed    uint64
	Init    InitOptions
	// N reserves rows 0…N−1 for the item ids 0…N−1. Other items get rows
	// in order of first appearance: the catalogue grows with the distinct
	// items seen, not with the largest id. Each item is initialised from
	// the seed and its id, so the result does not depend on when it
	// appears.
	N         int
	Optimizer Optimizer
	// LR is the learning rate of the embeddings and C (default, Adam:
	// DefaultOnlineLR with a diagonal, DefaultOnlineLowRankLR without; SGD:
	// DefaultOnlineSGDLR).
	LR float64
	// RateScale, with a diagonal and Adam, scales the steps on item i's
	// embeddings by min(1, √(δᵢ/RateScale)) (default 0.1; negative: no
	// scaling). The embeddings of an item of rate δᵢ have squared norms of
	// order δᵢ, but Adam's steps are of order LR whatever the gradient, so
	// without it the first steps on a rare item (δᵢ ≪ LR²) would move its
	// embeddings far beyond its rate; on large catalogues, where most items
	// are rare, that makes the model worse than the independent-items
	// baseline (RESULTS.md).
	RateScale float64
	// DiagLR is the learning rate of the diagonal's corrections φᵢ
	// (default DefaultOnlineDiagLR).
	DiagLR float64
	// Alpha, Beta weight R(V_S, B_S) = α Σ‖vᵢ‖²/μᵢ + β Σ‖bᵢ‖²/μᵢ over the
	// basket, μᵢ the occurrences of item i so far (for B = V only α).
	Alpha, Beta float64
	// Eps is ε in log det(L_S + εI) (default eval.DefaultEps; negative
	// means 0).
	Eps float64
	// Normalizer is NormExact (default) or NormBasket.
	Normalizer Normalizer
	// Schedule sets when the exact normaliser is refactored (NormExact
	// only).
	Schedule Schedule
	// CEvery steps C every this many baskets with the mean of their
	// gradients (default 32 for Adam, 16 for SGD): C is shared by all
	// items, so its per-basket gradient is noisy, and its O(d²) optimiser
	// step would otherwise cost more than the basket's columns. On the
	// Amazon registries (means over three splits) Adam's test
	// log-likelihood is the same within 0.01 nats for 8, 16 and 32; SGD's
	// is 0.03 (apparel) and 0.5 (3-category) nats worse at 32 than at 16.
	// 1 steps C at every basket. It is an optimiser setting (C's step
	// averages CEvery baskets' gradients, whichever the normaliser), so it
	// is not part of Schedule.
	CEvery int
	// FixC keeps C at its initial value.
	FixC bool
	// NextWeight weights the next-item term per basket item, as the
	// offline learner's OfflineOptions.NextWeight: each basket of at
	// least two items adds NextWeight·|S| times the term of its last item
	// as given to Observe (order a basket's items so that the one to rank
	// comes last, as ndpp-bench learn does by the paper protocol's order;
	// learn/online_next.go), which moves the basket's rows and C. Zero or
	// negative: none (the default: the term makes a pass 2.5–6 times as
	// long; learn/RANKING.md measures 0.02, learn/TRADEOFF.md 0–0.16).
	NextWeight float64
	// NextNegatives is the number of items, drawn uniformly from those
	// seen, the held-out item is ranked against (default
	// DefaultNextNegatives).
	NextNegatives int
	// NextBeta is the term's sharpness β (default DefaultNextBeta).
	NextBeta float64
}

// Schedule sets when the online learner's exact normaliser (NormExact) is
// refactored. Zero values select the defaults. Results never depend on
// scheduling: every result takes effect at a fixed position.
type Schedule struct {
	// FactorEvery refactors the exact normaliser's 2d×2d matrix
	// A = I + WG (O(d³), plus O(k·d²) to update G by the k changed
	// columns) every this many baskets, from a snapshot of the parameters;
	// the result takes effect Lag baskets after the snapshot. Between
	// results each item's normaliser gradient K zᵢ is computed once per
	// result and reused, so an item sees the normaliser of parameters Lag
	// to Lag + FactorEvery baskets old. 1 refactors at every basket: the
	// exact gradient, O(d³ + |S|d²) per basket. Default 25: on real
	// catalogues the normaliser's gradient must be fresh (RESULTS.md
	// measures the cost of staler ones).
	FactorEvery int
	// Lag is the number of baskets between a refactorisation's snapshot
	// and its result taking effect, 1 ≤ Lag ≤ FactorEvery (default
	// min(FactorEvery, 70); unused for FactorEvery 1). Run computes the
	// job on a second goroutine meanwhile; a shorter lag makes the learner
	// wait for it.
	Lag int
	// RefreshEvery recomputes the Gram matrix G from scratch, bounding
	// rounding drift of the incremental updates, once this many baskets
	// and as many column updates as there are items have passed since the
	// last recomputation (default 1000).
	RefreshEvery int
}

// DefaultOnlineDiagLR is the online learner's default learning rate of the
// diagonal's corrections φᵢ (log δᵢ = log rᵢ + φᵢ, rᵢ the rate of item i's
// running count). One pass takes one step on φᵢ per occurrence of item i, so
// the corrections of all but the most frequent items rest on a few steps;
// 0.03 lets them get where the embeddings need them within the pass
// (learn/RESULTS.md compares 0.003–0.1 on eighteen real sets and two
// synthetic catalogues).
const DefaultOnlineDiagLR = 0.03

// The online learner's default learning rates of the embeddings and C
// (OnlineOptions.LR).
const (
	// DefaultOnlineLR is Adam's on a kernel with a diagonal (the default
	// kernel).
	DefaultOnlineLR = 0.006
	// DefaultOnlineLowRankLR is Adam's on a kernel without a diagonal
	// (OnlineOptions.LowRank).
	DefaultOnlineLowRankLR = 0.002
	// DefaultOnlineSGDLR is SGD's, with or without a diagonal.
	DefaultOnlineSGDLR = 0.005
)

func (o OnlineOptions) withDefaults() OnlineOptions {
	if o.D == 0 {
		o.D = DefaultD
	}
	if o.LR == 0 {
		switch {
		case o.Optimizer == SGD:
			o.LR = DefaultOnlineSGDLR
		case o.LowRank:
			o.LR = DefaultOnlineLowRankLR
		default:
			o.LR = DefaultOnlineLR
		}
	}
	if o.DiagLR == 0 {
		o.DiagLR = DefaultOnlineDiagLR
	}
	if o.RateScale == 0 {
		o.RateScale = DefaultRateScale
	}
	if o.Init.Share == 0 && !o.LowRank {
		// An item's first δᵢ is a rate from one occurrence, 2/t (large for
		// the first baskets): its embeddings start at a small share of it.
		o.Init.Share = 0.01
	}
	o.Init = o.Init.withDefaultsFor(o.D, !o.LowRank)
	o.Eps = resolveEps(o.Eps)
	o.Schedule = o.Schedule.withDefaults()
	if o.CEvery == 0 {
		o.CEvery = 32
		if o.Optimizer == SGD {
			o.CEvery = 16
		}
	}
	if o.NextNegatives == 0 {
		o.NextNegatives = DefaultNextNegatives
	}
	if o.NextBeta == 0 {
		o.NextBeta = DefaultNextBeta
	}
	return o
}

func (s Schedule) withDefaults() Schedule {
	if s.RefreshEvery == 0 {
		s.RefreshEvery = 1000
	}
	if s.FactorEvery == 0 {
		s.FactorEvery = 25
	}
	if s.Lag == 0 && s.FactorEvery > 1 {
		s.Lag = min(s.FactorEvery, defaultLag)
	}
	return s
}

// lag returns the pipeline's lag in baskets: 0 (synchronous) for
// FactorEvery 1, else Lag (set by withDefaults).
func (s Schedule) lag() int {
	if s.FactorEvery <= 1 {
		return 0
	}
	return s.Lag
}

// defaultLag is the default Schedule.Lag (at most FactorEvery).
const defaultLag = 70

func (o OnlineOptions) validate() error {
	sc := o.Schedule
	if o.D < 1 || o.N < 0 || sc.RefreshEvery < 1 || sc.FactorEvery < 1 || o.CEvery < 1 {
		return fmt.Errorf("learn: invalid online options (d = %d, n = %d, refresh = %d, factor = %d)", o.D, o.N, sc.RefreshEvery, sc.FactorEvery)
	}
	if sc.Lag < 0 || sc.Lag > sc.FactorEvery {
		return fmt.Errorf("learn: invalid online options: lag %d outside [1, factor-every = %d]", sc.Lag, sc.FactorEvery)
	}
	if !(o.LR > 0) || math.IsInf(o.LR, 0) || !(o.Alpha >= 0) || !(o.Beta >= 0) || math.IsInf(o.Alpha+o.Beta, 0) || math.IsNaN(o.Eps) {
		return fmt.Errorf("learn: invalid lr %v, alpha %v, beta %v or eps %v", o.LR, o.Alpha, o.Beta, o.Eps)
	}
	if !(o.DiagLR > 0) || math.IsInf(o.DiagLR, 0) || math.IsNaN(o.RateScale) || math.IsInf(o.RateScale, 0) {
		return fmt.Errorf("learn: invalid diagonal lr %v or rate scale %v", o.DiagLR, o.RateScale)
	}
	if !(o.Init.Scale > 0) || math.IsInf(o.Init.Scale, 0) || !(o.Init.CScale >= 0) || math.IsInf(o.Init.CScale, 0) || math.IsNaN(o.Init.Share) || math.IsInf(o.Init.Share, 0) {
		return fmt.Errorf("learn: invalid initialisation scales %v, %v, share %v", o.Init.Scale, o.Init.CScale, o.Init.Share)
	}
	if o.Optimizer != Adam && o.Optimizer != SGD {
		return fmt.Errorf("learn: unknown optimizer %d", o.Optimizer)
	}
	if o.Normalizer != NormBasket && o.Normalizer != NormExact {
		return fmt.Errorf("learn: unknown normalizer %d", o.Normalizer)
	}
	if math.IsNaN(o.NextWeight) || math.IsInf(o.NextWeight, 0) || o.NextNegatives < 1 || !(o.NextBeta > 0) || math.IsInf(o.NextBeta, 0) {
		return fmt.Errorf("learn: invalid next-item weight %v, negatives %d or sharpness %v; want a finite weight, negatives ≥ 1, 0 < sharpness < ∞", o.NextWeight, o.NextNegatives, o.NextBeta)
	}
	return nil
}

// Online is the one-pass online learner. Each Observe takes one gradient
// step on
//
//	ψ_t = log det(L_{S_t} + εI) − log det(I + L_{S_t}) − R(V_{S_t}, B_{S_t})
//
// (or with the full normaliser log det(I + L) for NormExact), updating only
// the columns of the basket's items and C = D − Dᵀ. Its memory is O(nd + d²)
// whatever the number of baskets. After every Observe, Model returns a valid
// model. An Online is not safe for concurrent use.
type Online struct {
	opt OnlineOptions
	p   *Params
	// ids[r] is the item id of row r. The first prefix rows hold ids equal
	// to the row (at least the N reserved ones); rowOf maps the ids of the
	// others.
	ids    []int
	prefix int
	rowOf  rowIndex
	// p.Theta holds log δᵢ of the rows of the basket being learned from
	// (refreshed for all rows by Params and Model).
	rows []int // the current basket's rows
	tc   int64 // step count of D
	pos  int64 // baskets consumed
	mom  *Grad // first and second moments of D (Adam)
	sq   *Grad
	// st holds each item's counts, optimiser state and cached normaliser
	// gradient in one row of st.stride floats (itemRow), so that a basket's
	// item costs a few cache lines of one row instead of lines of as many
	// arrays: the scalars stMu… (μᵢ, the occurrences so far; with a
	// diagonal φᵢ, the learned correction of δᵢ = rᵢ(t)·exp(φᵢ), and its
	// Adam moments; Adam's step count; …); Adam's first and second moments of vᵢ, then of bᵢ (without
	// B = V); then, for the exact normaliser, K zᵢ (Online.kzRow).
	st itemRows
	ss stepScratch
	c  []float64
	w  basketWork
	np *exactnorm.Pipe // NormExact only
	// kzOff is the offset of K zᵢ in an item's row of st; kz is the
	// scratch of kzBatch.
	kzOff int
	kz    kzScratch
	// redo is redoRow as a value made once.
	redo func(dst []float64, i int)
	// factored reports that np holds a factorisation (it is redone every
	// FactorEvery baskets, counted by position so that resuming from a
	// checkpoint refactors at the same steps).
	factored bool
	// Columns changed since the last snapshot (their values then are
	// np's columns; marked at stDirty in st).
	dirtyList []int
	pendC     []float64 // C's gradient accumulated since D's last step (normaliser part)
	// pendBW holds the basket terms' share of C's gradient since D's last
	// step as pairs: rows 2t and 2t+1 are wₜ and bₜ of the term bₜwₜᵀ
	// (see stepD).
	pendBW []float64
	cstep  cStepScratch
	// normCount counts the baskets since the exact normaliser's C gradient
	// (the same for every basket between two factorisations) was last added
	// to pendC.
	normCount int64
	// diverged records that a step returned ErrDiverged.
	diverged bool
	// coef and coefPhi cache adamCoef(LR, t) and adamCoef(DiagLR, t)
	// (coefLookup; derived from the options, so not checkpointed).
	coef, coefPhi []float64

	// consumed is the fingerprint of the baskets consumed (see
	// fingerprintBasket), recorded in checkpoints.
	consumed uint64

	// nx is the next-item term's scratch (nil without the term).
	nx *onlineNext
}

// NewOnline returns a learner with freshly initialised parameters.
func NewOnline(opt OnlineOptions) (*Online, error) {
	opt = opt.withDefaults()
	if err := opt.validate(); err != nil {
		return nil, err
	}
	p, err := newParams(0, opt.D, opt.Shared, !opt.LowRank, opt.Seed, opt.Init)
	if err != nil {
		return nil, err
	}
	o := &Online{opt: opt, p: p}
	o.alloc()
	o.growTo(opt.N)
	return o, nil
}

func (o *Online) alloc() {
	d := o.p.Dim
	if o.st.stride == 0 {
		o.st.stride = stScalars + 2*d
		if o.p.B != nil {
			o.st.stride += 2 * d
		}
		if o.opt.Normalizer == NormExact {
			o.st.stride += 2 * d // K zᵢ
		}
	}
	o.c = o.p.CInto(o.c)
	if o.mom == nil {
		o.mom, o.sq = &Grad{D: make([]float64, d*d)}, &Grad{D: make([]float64, d*d)}
	}
	if o.pendC == nil {
		o.pendC = make([]float64, d*d)
	}
	if o.opt.Normalizer == NormExact && o.np == nil {
		o.np = exactnorm.NewPipe(d, o.opt.Schedule.lag(), o.opt.Schedule.RefreshEvery)
		o.np.SetColumns(o.p.N, func(dst []float64, i int) { zRow(dst, o.p, i) })
		o.kzOff = o.st.stride - 2*d
		o.kz = kzScratch{zq: make([]float64, 8*d), kzq: make([]float64, 8*d)}
		o.redo = o.redoRow
	}
	if o.opt.NextWeight > 0 && o.nx == nil {
		o.nx = &onlineNext{}
	}
}

// growTo extends the catalogue to n rows, for the ids that follow the last
// row's (ids equal to the rows while the catalogue is N rows or fewer; see
// rowFor). With a diagonal the new rows are zero until the item's first
// basket (firstSight); without one they are drawn now.
func (o *Online) growTo(n int) {
	o.growIDs(n, nil)
}

// growIDs is growTo with the ids of the new rows (nil: the rows
// themselves).
func (o *Online) growIDs(n int, ids []int) {
	old := o.p.N
	if n <= old {
		return
	}
	d := o.p.Dim
	for r := old; r < n; r++ {
		id := r
		if ids != nil {
			id = ids[r-old]
		}
		o.ids = append(o.ids, id)
		if id == r && o.prefix == r {
			o.prefix++
		}
	}
	k, extra := n-old, (n-old)*d
	if o.p.Theta != nil {
		o.p.V = extend(o.p.V, extra)
		if o.p.B != nil {
			o.p.B = extend(o.p.B, extra)
		}
		o.p.Theta = extend(o.p.Theta, k)
		o.p.N = n
	} else {
		o.p.growIDs(old, o.ids[old:n], o.opt.Seed, o.opt.Init)
	}
	o.st.grow(n)
	if o.np != nil {
		// New columns enter G at the next snapshot, as changed ones do:
		// the job in flight keeps G and its rows of zs.
		o.np.Grow(n)
		if o.p.Theta == nil { // drawn now (with a diagonal: at first sight)
			for i := old; i < n; i++ {
				o.markDirty(i)
			}
		}
	}
}

// extend returns s with k zero elements appended, doubling the capacity
// when it is short: a catalogue that grows one item at a time copies each
// array a bounded number of times.
func extend[T any](s []T, k int) []T {
	n := len(s) + k
	if cap(s) < n {
		t := make([]T, len(s), max(n, 2*cap(s)))
		copy(t, s)
		s = t
	}
	s = s[:n]
	clear(s[n-k:])
	return s
}

// Position returns the number of baskets consumed.
func (o *Online) Position() int64 { return o.pos }

// N returns the current number of items (rows).
func (o *Online) N() int { return o.p.N }

// IDs returns the item id of each row.
func (o *Online) IDs() []int { return append([]int(nil), o.ids...) }

// identityIDs reports whether every row's id is the row.
func (o *Online) identityIDs() bool { return o.prefix == o.p.N }

// rowFor returns the row of item id, adding one for an id not seen
// before; ok is false for a negative id.
func (o *Online) rowFor(id int) (int, bool) {
	if id < 0 {
		return 0, false
	}
	if id < o.prefix {
		return id, true
	}
	if r, found := o.rowOf.get(id); found {
		return r, true
	}
	r := o.p.N
	if id == r && o.identityIDs() {
		o.growTo(r + 1) // ids keep matching rows
		return r, true
	}
	o.growIDs(r+1, []int{id})
	o.rowOf.set(id, r)
	return r, true
}

// itemRows holds rows of stride floats in chunks of itemChunk rows: a
// large catalogue that grows allocates a chunk at a time, and its rows are
// not copied (a single array would be copied at each doubling, with both
// copies in memory at once). The first chunk grows by doubling up to
// itemChunk rows, so that small catalogues stay small.
type itemRows struct {
	chunks [][]float64
	stride int
	n      int // rows
}

// itemChunk is the number of rows of a chunk of itemRows.
const itemChunk = 1 << 12

// row returns row i.
func (s *itemRows) row(i int) []float64 {
	c, r := s.chunks[i/itemChunk], (i%itemChunk)*s.stride
	return c[r : r+s.stride : r+s.stride]
}

// grow extends s to n rows (new rows zero).
func (s *itemRows) grow(n int) {
	if n <= s.n {
		return
	}
	if len(s.chunks) <= 1 && n <= itemChunk {
		var c []float64
		if len(s.chunks) == 1 {
			c = s.chunks[0]
		} else {
			s.chunks = make([][]float64, 1)
		}
		s.chunks[0] = extend(c, (n-s.n)*s.stride)
		s.n = n
		return
	}
	if len(s.chunks) == 1 && len(s.chunks[0]) < itemChunk*s.stride {
		s.chunks[0] = extend(s.chunks[0], itemChunk*s.stride-len(s.chunks[0]))
	}
	for len(s.chunks)*itemChunk < n {
		s.chunks = append(s.chunks, make([]float64, itemChunk*s.stride))
	}
	s.n = n
}

// itemRow returns row i of st (see Online.st).
func (o *Online) itemRow(i int) []float64 {
	return o.st.row(i)
}

// moments returns item i's Adam moments of vᵢ and of bᵢ (nil for B = V)
// in st.
func (o *Online) moments(i int) (mv, sv, mb, sb []float64) {
	d, row := o.p.Dim, o.itemRow(i)
	row = row[stScalars:]
	mv, sv = row[:d:d], row[d:2*d:2*d]
	if o.p.B != nil {
		mb, sb = row[2*d:3*d:3*d], row[3*d:4*d:4*d]
	}
	return mv, sv, mb, sb
}

// The scalars at the start of an item's row of st (counts are exact in
// float64 up to 2⁵³).
const (
	stMu      = iota // μᵢ
	stPhi            // φᵢ
	stPhiM           // φᵢ's Adam moments
	stPhiV           //
	stT              // Adam's step count of the item (advanced only when touched)
	stKZGen          // the normaliser result K zᵢ is of (exactnorm.Pipe.Gen)
	stDirty          // 1 if the column changed since the last snapshot, else 0
	stScalars        // their number
)

// mu returns μᵢ, the occurrences of row i so far.
func (o *Online) mu(i int) float64 { return o.st.row(i)[stMu] }

// phi returns φᵢ of row i (0 without a diagonal).
func (o *Online) phi(i int) float64 { return o.st.row(i)[stPhi] }

// scalars returns the scalar at offset off (stMu, …) of every row.
func (s *itemRows) scalars(off int) []float64 {
	out := make([]float64, s.n)
	for i := range out {
		out[i] = s.row(i)[off]
	}
	return out
}

// counts returns the count at offset off (stT or stKZGen) of every row.
func (s *itemRows) counts(off int) []int64 {
	out := make([]int64, s.n)
	for i := range out {
		out[i] = int64(s.row(i)[off])
	}
	return out
}

// setCounts sets the count at offset off of every row from x.
func (s *itemRows) setCounts(off int, x []int64) {
	for i, v := range x {
		s.row(i)[off] = float64(v)
	}
}

// setScalars sets the scalar at offset off of every row from x.
func (s *itemRows) setScalars(off int, x []float64) {
	for i, v := range x {
		s.row(i)[off] = v
	}
}

// knownRow returns the row of item id if it has one.
func (o *Online) knownRow(id int) (int, bool) {
	if id < 0 {
		return 0, false
	}
	if id < o.prefix {
		return id, true
	}
	return o.rowOf.get(id)
}

// prefetchItems asks the processor to bring the state of the items of ids
// that have rows into its caches (f64.Prefetch), ahead of the basket that
// holds them: at large catalogues most of an item's state is in memory,
// not in cache, and a basket's items are otherwise fetched one miss at a
// time.
func (o *Online) prefetchItems(ids []int) {
	p, d := o.p, o.p.Dim
	for _, id := range ids {
		i, ok := o.knownRow(id)
		if !ok || i >= p.N {
			continue
		}
		r := i * d
		f64.Prefetch(p.V[r : r+d])
		if p.B != nil {
			f64.Prefetch(p.B[r : r+d])
		}
		f64.Prefetch(o.itemRow(i))
		if p.Theta != nil {
			f64.Prefetch(p.Theta[i : i+1])
		}
	}
}

// setIDs rebuilds prefix and rowOf from ids.
func (o *Online) setIDs() {
	o.prefix = len(o.ids)
	for r, id := range o.ids {
		if id != r {
			o.prefix = r
			break
		}
	}
	o.rowOf = rowIndex{}
	for r := o.prefix; r < len(o.ids); r++ {
		o.rowOf.set(o.ids[r], r)
	}
}

// rowIndex maps item ids to rows: through dense (row + 1, 0 for none) or
// a map. An id is held densely
// when it is below max(2¹⁶, 8·(rows mapped)): the slice stays within a
// constant factor of the catalogue, and large or scattered ids fall back to
// the map.
type rowIndex struct {
	dense  []int32
	sparse map[int]int
	n      int // ids mapped
}

// get returns the row of id (≥ 0) and whether it is mapped.
func (x *rowIndex) get(id int) (int, bool) {
	if id < len(x.dense) && x.dense[id] != 0 {
		return int(x.dense[id]) - 1, true
	}
	// An id mapped before the slice grew past it is in the map.
	r, ok := x.sparse[id]
	return r, ok
}

// set maps id (≥ 0, not mapped yet) to row r.
func (x *rowIndex) set(id, r int) {
	x.n++
	if id < max(1<<16, 8*x.n) && r < math.MaxInt32 {
		if id >= len(x.dense) {
			x.dense = extend(x.dense, id+1-len(x.dense))
		}
		x.dense[id] = int32(r + 1)
		return
	}
	if x.sparse == nil {
		x.sparse = map[int]int{}
	}
	x.sparse[id] = r
}

// odds returns rᵢ(t) = (μᵢ + 1)/(t − μᵢ + 1) of row i at the current
// position.
func (o *Online) odds(i int) float64 {
	t := float64(o.pos)
	mu := o.mu(i)
	return (mu + 1) / (t - mu + 1)
}

// setTheta writes log δᵢ = log rᵢ(t) + φᵢ into p.Theta for rows.
func (o *Online) setTheta(rows []int) {
	for _, i := range rows {
		o.p.Theta[i] = math.Log(o.odds(i)) + o.phi(i)
	}
}

// refreshTheta sets p.Theta of every row (see setTheta).
func (o *Online) refreshTheta() {
	if o.p.Theta == nil {
		return
	}
	for i := range o.p.Theta {
		o.p.Theta[i] = math.Log(o.odds(i)) + o.phi(i)
	}
}

// firstSight draws row i's vectors at its first basket (diagonal only):
// Gaussian, from the seed and the item's id as NewParams draws them, scaled
// so that E‖ṽᵢ‖² = E‖b̃ᵢ‖² = Init.Share·δᵢ⁰ for the current δᵢ⁰ (Share < 0:
// as drawn).
func (o *Online) firstSight(i int) {
	p, d := o.p, o.p.Dim
	drawRows(p.V[i*d:(i+1)*d], p.B, i, o.ids[i], o.opt.Seed, o.opt.Init)
	if sh := o.opt.Init.Share; sh > 0 {
		delta := o.odds(i) * math.Exp(o.phi(i))
		f := math.Sqrt(sh*delta/float64(d)) / o.opt.Init.Scale
		scaleVec(f, p.V[i*d:(i+1)*d])
		if p.B != nil {
			scaleVec(f, p.B[i*d:(i+1)*d])
		}
	}
}

// Params returns a copy of the current parameters (rows in the learner's
// order, see IDs).
func (o *Online) Params() *Params {
	o.refreshTheta()
	return o.p.Clone()
}

// Model returns the current model, its rows in the learner's order: when
// a row's id differs from the row, the model records the ids (WithIDs).
func (o *Online) Model(opts ...ndpp.Option) (*ndpp.Model, error) {
	o.refreshTheta()
	if !o.identityIDs() {
		ids := make([]int64, len(o.ids))
		for r, id := range o.ids {
			ids[r] = int64(id)
		}
		opts = append([]ndpp.Option{ndpp.WithIDs(ids)}, opts...)
	}
	return o.p.Model(opts...)
}

// Independent returns the independent-items model of the baskets seen so
// far (eval.Independent of them) over the item ids 0…n−1: the baseline
// beside the learned model, from the learner's running counts.
func (o *Online) Independent(n int) (*ndpp.Model, error) {
	if n <= 0 {
		return nil, fmt.Errorf("learn: Independent(%d): need n ≥ 1", n)
	}
	counts := make([]float64, n)
	for r, id := range o.ids {
		if id >= n {
			return nil, fmt.Errorf("learn: Independent(%d): item ids up to %d were seen", n, slices.Max(o.ids))
		}
		counts[id] = o.mu(r)
	}
	return eval.IndependentOfCounts(counts, o.pos)
}

// ModelOver returns the current model over the item ids 0…n−1, row i for
// id i (for callers whose ids are rows of their own catalogue, such as a
// vocabulary). Items not seen in training get zero vectors and, with a
// diagonal, δᵢ = rᵢ(t) with μᵢ = 0: the independent-items model's rate of
// an unseen item. It is an error if an id n or larger was seen.
func (o *Online) ModelOver(n int, opts ...ndpp.Option) (*ndpp.Model, error) {
	p := o.paramsOver(n)
	if p == nil {
		return nil, fmt.Errorf("learn: ModelOver(%d): item ids up to %d were seen", n, slices.Max(o.ids))
	}
	return p.Model(opts...)
}

// paramsOver returns the parameters over ids 0…n−1 (nil if an id ≥ n was
// seen).
func (o *Online) paramsOver(n int) *Params {
	if n <= 0 {
		return nil
	}
	for _, id := range o.ids {
		if id >= n {
			return nil
		}
	}
	o.refreshTheta()
	src, d := o.p, o.p.Dim
	p := &Params{N: n, Dim: d, V: make([]float64, n*d), D: slices.Clone(src.D)}
	if src.B != nil {
		p.B = make([]float64, n*d)
	}
	if src.Theta != nil {
		p.Theta = make([]float64, n)
		unseen := math.Log(1 / (float64(o.pos) + 1))
		for i := range p.Theta {
			p.Theta[i] = unseen
		}
	}
	for r, id := range o.ids {
		if o.mu(r) == 0 && src.Theta != nil {
			continue // reserved (N) but never seen: as unseen
		}
		copy(p.V[id*d:(id+1)*d], src.V[r*d:(r+1)*d])
		if p.B != nil {
			copy(p.B[id*d:(id+1)*d], src.B[r*d:(r+1)*d])
		}
		if p.Theta != nil {
			p.Theta[id] = src.Theta[r]
		}
	}
	return p
}

// Options returns the learner's options (defaults filled in).
func (o *Online) Options() OnlineOptions { return o.opt }

// ErrDiverged is returned when a step makes parameters non-finite, or meets
// a basket whose kernel L_S + εI overflows (ε > 0; see basketTerm). The step
// has been applied, so the learner's parameters are no longer usable: from
// then on it refuses baskets and refuses to be saved (a good checkpoint is
// not overwritten). Resume from the last checkpoint with a lower learning
// rate.
var ErrDiverged = errors.New("learn: online step diverged: non-finite parameters or an overflowing kernel (lower the learning rate)")

// Observe takes one learning step on a basket of item rows. Empty baskets,
// negative rows and duplicates are errors and leave the learner unchanged.
// Outside Run, the exact normaliser's jobs run on the caller's goroutine,
// when their results are due (the same bits as Run's).
func (o *Online) Observe(basket []int) error {
	if o.diverged {
		return ErrDiverged
	}
	if len(basket) == 0 {
		return fmt.Errorf("learn: basket %d is empty", o.pos)
	}
	for p, it := range basket {
		if it < 0 {
			return fmt.Errorf("learn: basket %d: negative item %d", o.pos, it)
		}
		for q := 0; q < p; q++ {
			if basket[q] == it {
				return fmt.Errorf("learn: basket %d: duplicate item %d", o.pos, it)
			}
		}
	}
	o.consumed = fingerprintBasket(o.consumed, basket)
	o.rows = o.rows[:0]
	for _, it := range basket {
		r, _ := o.rowFor(it)
		o.rows = append(o.rows, r)
	}
	basket = o.rows
	o.beginBasket(basket)
	if !o.basketTerm(basket) && o.opt.Eps > 0 {
		o.diverged = true
		return ErrDiverged
	}
	if o.np != nil {
		if !o.normStep() {
			o.diverged = true
			return ErrDiverged
		}
		// The item's share of −∂ log det(I + L), applied in stepItems: the
		// full gradient acts on every column at every step, but only the
		// basket's columns are updated, item i on a fraction μᵢ/t of the
		// steps. Weighting by t/μᵢ makes the expected update equal to the
		// full objective's gradient (without it the normaliser is
		// under-weighted by the item's frequency and L grows without
		// bound).
		o.normCount++ // C's share: −∂/∂C, added to pendC in bulk (flushNormC)
	}
	if o.nx != nil {
		o.nextTerm(basket)
	}
	ok := o.stepItems(basket)
	if !o.stepD() || !ok {
		o.diverged = true
		return ErrDiverged
	}
	return nil
}

// beginBasket advances the position and the counts for a basket of rows
// and, with a diagonal, draws the rows of items seen for the first time
// and sets log δ of the basket's rows at the new position: the state at
// which the basket's gradient is taken.
func (o *Online) beginBasket(rows []int) {
	o.pos++
	for _, i := range rows {
		o.st.row(i)[stMu]++
	}
	if o.p.Theta == nil {
		return
	}
	for _, i := range rows {
		if o.mu(i) == 1 {
			o.firstSight(i)
			if o.np != nil {
				o.markDirty(i)
			}
		}
	}
	o.setTheta(rows)
}

// SkipBaskets reads and discards k baskets from src without looking at
// them. It returns io.ErrUnexpectedEOF if src has fewer. A nil src panics.
// To resume a checkpoint, use Online.SkipConsumed instead: it checks that
// the baskets skipped are those the checkpoint consumed.
func SkipBaskets(src baskets.Source, k int64) error {
	if src == nil {
		panic("learn: SkipBaskets with a nil baskets.Source")
	}
	for i := int64(0); i < k; i++ {
		if _, err := src.Next(); err != nil {
			if err == io.EOF {
				return fmt.Errorf("learn: stream ended after %d of %d baskets to skip: %w", i, k, io.ErrUnexpectedEOF)
			}
			return err
		}
	}
	return nil
}

// ParseNormalizer maps "exact" and "basket" to a Normalizer.
func ParseNormalizer(s string) (Normalizer, bool) {
	switch s {
	case "exact":
		return NormExact, true
	case "basket":
		return NormBasket, true
	}
	return 0, false
}
