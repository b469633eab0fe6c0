package learn

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/ndpp"
)

// BasketSource yields baskets one at a time; Next returns io.EOF at the end.
// *baskets.Reader (package ndpp/baskets) satisfies it, so files are streamed, never loaded.
type BasketSource interface {
	Next() ([]int, error)
}

// SliceSource returns a BasketSource over in-memory baskets.
func SliceSource(baskets [][]int) BasketSource { return &sliceSource{b: baskets} }

type sliceSource struct {
	b [][]int
	i int
}

// Next returns the next basket or io.EOF.
func (s *sliceSource) Next() ([]int, error) {
	if s.i >= len(s.b) {
		return nil, io.EOF
	}
	s.i++
	return s.b[s.i-1], nil
}

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
	Seed   uint64
	Init   InitOptions
	// N is the initial number of items; the catalogue grows when a basket
	// holds a larger row (new items are initialised from the seed and their
	// row, so the result does not depend on when they appear).
	N         int
	Optimizer Optimizer
	// LR is the learning rate (default 0.002 for Adam, 0.005 for SGD).
	LR float64
	// Alpha, Beta weight R(V_S, B_S) = α Σ‖vᵢ‖²/μᵢ + β Σ‖bᵢ‖²/μᵢ over the
	// basket, μᵢ the occurrences of item i so far (for B = V only α).
	Alpha, Beta float64
	// Eps is ε in log det(L_S + εI) (default 1e-5; negative means 0).
	Eps float64
	// Normalizer is NormExact (default) or NormBasket.
	Normalizer Normalizer
	// RefreshEvery recomputes the exact normaliser's Gram matrix from
	// scratch every this many baskets, bounding rounding drift of the
	// incremental updates (default 1000).
	RefreshEvery int
	// FactorEvery refactors the exact normaliser's 2d×2d matrix
	// A = I + WG (O(d³ + nd²)) every this many baskets, from a snapshot of
	// the parameters, on a worker goroutine; the result takes effect Lag
	// baskets after the snapshot (the learner waits for it there if need
	// be, so results never depend on scheduling). Between results each
	// item's normaliser gradient K zᵢ is computed once per result and
	// reused (see online_norm.go), so an item sees the normaliser of
	// parameters Lag to Lag + FactorEvery baskets old. 1 refactors
	// synchronously at every basket: the exact gradient, O(d³ + |S|d²) per
	// basket. Default 200 for Adam, with Lag 70: each result costs the
	// learner about the same whatever the period (copying the changed
	// columns, every item's K zᵢ, fetching the new K from the other core),
	// so fewer results make the pass faster, and the short lag keeps the
	// gradients as fresh as refactoring every 100 baskets with lag 100 did
	// (test log-likelihood, means over three splits: apparel −9.811
	// against −9.806, 3-category −16.787 against −16.750; the pass 6–10%
	// and 14% faster). Default 25 for SGD, whose unnormalised steps make it
	// sensitive to the lag (apparel, lag = FactorEvery: −10.00 at 25,
	// −10.12 at 50, −10.99 at 100).
	FactorEvery int
	// Lag is the number of baskets between a refactorisation's snapshot
	// and its result taking effect, 1 ≤ Lag ≤ FactorEvery (default
	// min(FactorEvery, 70)). The worker has that long to finish the job:
	// at d = 30 and a few hundred items it takes about as long as 40
	// baskets on the learner; a shorter lag makes the learner wait for it.
	Lag int
	// CEvery steps C every this many baskets with the mean of their
	// gradients (default 32 for Adam, 16 for SGD): C is shared by all
	// items, so its per-basket gradient is noisy, and its O(d²) optimiser
	// step would otherwise cost more than the basket's columns. On the
	// Amazon registries (means over three splits) Adam's test
	// log-likelihood is the same within 0.01 nats for 8, 16 and 32; SGD's
	// is 0.03 (apparel) and 0.5 (3-category) nats worse at 32 than at 16.
	// 1 steps C at every basket.
	CEvery int
	// FixC keeps C at its initial value.
	FixC bool
}

func (o OnlineOptions) withDefaults() OnlineOptions {
	if o.D == 0 {
		o.D = 30
	}
	if o.LR == 0 {
		o.LR = 0.002
		if o.Optimizer == SGD {
			o.LR = 0.005
		}
	}
	if o.Eps == 0 {
		o.Eps = 1e-5
	} else if o.Eps < 0 {
		o.Eps = 0
	}
	if o.RefreshEvery == 0 {
		o.RefreshEvery = 1000
	}
	if o.FactorEvery == 0 {
		o.FactorEvery = 200
		if o.Optimizer == SGD {
			o.FactorEvery = 25
		}
	}
	if o.Lag == 0 && o.FactorEvery > 1 {
		o.Lag = min(o.FactorEvery, defaultLag)
	}
	if o.CEvery == 0 {
		o.CEvery = 32
		if o.Optimizer == SGD {
			o.CEvery = 16
		}
	}
	return o
}

// lag returns the pipeline's lag in baskets: 0 (synchronous) for
// FactorEvery 1, else Lag (set by withDefaults).
func (o OnlineOptions) lag() int {
	if o.FactorEvery <= 1 {
		return 0
	}
	return o.Lag
}

// defaultLag is the default OnlineOptions.Lag (at most FactorEvery).
const defaultLag = 70

func (o OnlineOptions) validate() error {
	if o.D < 1 || o.N < 0 || o.RefreshEvery < 1 || o.FactorEvery < 1 || o.CEvery < 1 {
		return fmt.Errorf("learn: invalid online options (d = %d, n = %d, refresh = %d, factor = %d)", o.D, o.N, o.RefreshEvery, o.FactorEvery)
	}
	if o.Lag < 0 || o.Lag > o.FactorEvery {
		return fmt.Errorf("learn: invalid online options: lag %d outside [1, factor-every = %d]", o.Lag, o.FactorEvery)
	}
	if !(o.LR > 0) || math.IsInf(o.LR, 0) || !(o.Alpha >= 0) || !(o.Beta >= 0) || math.IsInf(o.Alpha+o.Beta, 0) || math.IsNaN(o.Eps) {
		return fmt.Errorf("learn: invalid lr %v, alpha %v, beta %v or eps %v", o.LR, o.Alpha, o.Beta, o.Eps)
	}
	if o.Optimizer != Adam && o.Optimizer != SGD {
		return fmt.Errorf("learn: unknown optimizer %d", o.Optimizer)
	}
	if o.Normalizer != NormBasket && o.Normalizer != NormExact {
		return fmt.Errorf("learn: unknown normalizer %d", o.Normalizer)
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
	mu  []float64 // occurrences so far
	t   []int64   // per-item Adam step counts (lazy: advanced only when touched)
	tc  int64     // step count of D
	pos int64     // baskets consumed
	mom *Grad     // first moments (Adam)
	sq  *Grad     // second moments (Adam)
	ss  stepScratch
	c   []float64
	w   basketWork
	np  *normPipe // NormExact only
	// factored reports that np holds a factorisation (it is redone every
	// FactorEvery baskets, counted by position so that resuming from a
	// checkpoint refactors at the same steps).
	factored bool
	// Columns changed since the last snapshot (their values then are
	// np.zs's rows).
	dirty       []bool
	dirtyList   []int
	lastRefresh int64     // position of the last full Gram recomputation
	pendC       []float64 // C's gradient accumulated since D's last step (normaliser part)
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
	// coef[2t], coef[2t+1] cache adamCoef(LR, t) for the step counts met so
	// far below adamTableLen (derived from LR, so not checkpointed).
	coef []float64
}

// NewOnline returns a learner with freshly initialised parameters.
func NewOnline(opt OnlineOptions) (*Online, error) {
	opt = opt.withDefaults()
	if err := opt.validate(); err != nil {
		return nil, err
	}
	p, err := NewParams(0, opt.D, opt.Shared, opt.Seed, opt.Init)
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
	o.c = o.p.CInto(o.c)
	if o.mom == nil {
		o.mom, o.sq = &Grad{D: make([]float64, d*d)}, &Grad{D: make([]float64, d*d)}
	}
	if o.pendC == nil {
		o.pendC = make([]float64, d*d)
	}
	if o.opt.Normalizer == NormExact && o.np == nil {
		o.np = newNormPipe(d, o.opt.lag())
		o.np.setColumns(o.p)
		o.dirty = make([]bool, o.p.N)
	}
}

// growTo extends the catalogue to n items.
func (o *Online) growTo(n int) {
	old := o.p.N
	if n <= old {
		return
	}
	d := o.p.Dim
	o.p.grow(n, o.opt.Seed, o.opt.Init.withDefaults(d))
	extra := (n - old) * d
	o.mu = append(o.mu, make([]float64, n-old)...)
	o.t = append(o.t, make([]int64, n-old)...)
	o.mom.V = append(o.mom.V, make([]float64, extra)...)
	o.sq.V = append(o.sq.V, make([]float64, extra)...)
	if o.p.B != nil {
		o.mom.B = append(o.mom.B, make([]float64, extra)...)
		o.sq.B = append(o.sq.B, make([]float64, extra)...)
	}
	if o.np != nil {
		// The job in flight owns G and zs; its result stays pending.
		np := o.np
		np.wait()
		np.grow(n)
		for i := old; i < n; i++ {
			np.nw.rank1(o.p.V[i*d:(i+1)*d], o.p.brows()[i*d:(i+1)*d], 1)
			zRow(np.zs[2*i*d:], o.p, i)
		}
		np.nw.symmetrize()
		o.dirty = append(o.dirty, make([]bool, n-old)...)
	}
}

// Position returns the number of baskets consumed.
func (o *Online) Position() int64 { return o.pos }

// N returns the current number of items.
func (o *Online) N() int { return o.p.N }

// Params returns a copy of the current parameters.
func (o *Online) Params() *Params { return o.p.Clone() }

// Model returns the current model.
func (o *Online) Model(opts ...ndpp.Option) (*ndpp.Model, error) { return o.p.Model(opts...) }

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
func (o *Online) Observe(basket []int) error {
	if o.diverged {
		return ErrDiverged
	}
	if len(basket) == 0 {
		return fmt.Errorf("learn: basket %d is empty", o.pos)
	}
	mx := -1
	for p, it := range basket {
		if it < 0 {
			return fmt.Errorf("learn: basket %d: negative item %d", o.pos, it)
		}
		for q := 0; q < p; q++ {
			if basket[q] == it {
				return fmt.Errorf("learn: basket %d: duplicate item %d", o.pos, it)
			}
		}
		mx = max(mx, it)
	}
	o.growTo(mx + 1)
	o.pos++
	for _, i := range basket {
		o.mu[i]++
	}
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
	ok := o.stepItems(basket)
	if !o.stepD() || !ok {
		o.diverged = true
		return ErrDiverged
	}
	return nil
}

// quiesce waits for the exact normaliser's job in flight, if any (its
// result stays pending).
func (o *Online) quiesce() {
	if o.np != nil {
		o.np.wait()
	}
}

// markDirty records that item i's column changes, for the next snapshot.
func (o *Online) markDirty(i int) {
	if !o.dirty[i] {
		o.dirty[i] = true
		o.dirtyList = append(o.dirtyList, i)
	}
}

// flushNormC adds the exact normaliser's C gradient of the baskets since the
// last flush to pendC.
func (o *Online) flushNormC() {
	if o.np != nil && o.normCount > 0 {
		blas.Axpy(-float64(o.normCount), o.np.gc, o.pendC)
		o.normCount = 0
	}
}

// OnlineRun configures TrainOnline.
type OnlineRun struct {
	// MaxBaskets stops after this many baskets (0: the whole source).
	MaxBaskets int64
	// TraceSet, when non-nil, records the NLL on these baskets every
	// TraceEvery baskets (default 500) and at the end.
	TraceSet   [][]int
	TraceEvery int
	// Checkpoint, when non-empty, saves the learner atomically to this
	// path every CheckpointEvery baskets (default 10000) and at the end.
	Checkpoint      string
	CheckpointEvery int
	// Progress, when non-nil, is called with the number of baskets
	// processed every ProgressEvery baskets and at the end (for progress
	// bars).
	Progress func(baskets int)
}

// ProgressEvery is the interval, in baskets, of OnlineRun.Progress calls.
const ProgressEvery = 1000

// TrainOnline makes one pass over src with a new learner (opt) and returns
// the final model. It is Run on NewOnline.
func TrainOnline(src BasketSource, opt OnlineOptions, run OnlineRun) (*Result, error) {
	o, err := NewOnline(opt)
	if err != nil {
		return nil, err
	}
	return o.Run(src, run)
}

// Run feeds the learner baskets from src until io.EOF (or MaxBaskets) and
// returns the result. It returns when the learner's background work (the
// exact normaliser's job on its worker goroutine) has finished, so none of
// it runs after the call; a pending result still takes effect at its
// position in a later Observe. To resume from a checkpoint, load it
// (LoadOnline), skip Position() baskets of the stream (SkipBaskets) and
// call Run.
func (o *Online) Run(src BasketSource, run OnlineRun) (*Result, error) {
	if run.TraceEvery == 0 {
		run.TraceEvery = 500
	}
	if run.CheckpointEvery == 0 {
		run.CheckpointEvery = 10000
	}
	if run.TraceEvery < 0 || run.CheckpointEvery < 0 || run.MaxBaskets < 0 {
		return nil, errors.New("learn: negative run option")
	}
	defer o.quiesce()
	res := &Result{ValLL: math.NaN()}
	// Training time excludes tracing and checkpointing: the clock is read
	// around those (every TraceEvery or CheckpointEvery baskets), not around
	// every basket.
	begin := time.Now()
	var excluded time.Duration
	elapsed := func() time.Duration { return time.Since(begin) - excluded }
	trace := func() error {
		if run.TraceSet == nil {
			return nil
		}
		t0 := time.Now()
		defer func() { excluded += time.Since(t0) }()
		now := elapsed()
		m, err := o.Model()
		if err != nil {
			return err
		}
		for bi, s := range run.TraceSet {
			for _, it := range s {
				if it >= m.N() {
					return fmt.Errorf("learn: trace basket %d: item %d not seen in training", bi, it)
				}
			}
		}
		ll, err := m.LogLikelihood(run.TraceSet)
		if err != nil {
			return err
		}
		res.Trace = append(res.Trace, TracePoint{Seconds: now.Seconds(), Baskets: res.Baskets, NLL: -ll})
		return nil
	}
	for run.MaxBaskets == 0 || int64(res.Baskets) < run.MaxBaskets {
		s, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if err := o.Observe(s); err != nil {
			return nil, err
		}
		res.Baskets++
		if run.Progress != nil && res.Baskets%ProgressEvery == 0 {
			run.Progress(res.Baskets)
		}
		if res.Baskets%run.TraceEvery == 0 {
			if err := trace(); err != nil {
				return nil, err
			}
		}
		if run.Checkpoint != "" && res.Baskets%run.CheckpointEvery == 0 {
			t0 := time.Now()
			if err := o.SaveFile(run.Checkpoint); err != nil {
				return nil, err
			}
			excluded += time.Since(t0)
		}
	}
	o.quiesce() // the pass ends when its last normaliser job does
	seconds := elapsed().Seconds()
	if run.Progress != nil {
		run.Progress(res.Baskets)
	}
	if res.Baskets == 0 && o.p.N == 0 {
		return nil, errors.New("learn: no baskets to learn from")
	}
	if len(res.Trace) == 0 || res.Trace[len(res.Trace)-1].Baskets != res.Baskets {
		if err := trace(); err != nil {
			return nil, err
		}
	}
	if run.Checkpoint != "" {
		if err := o.SaveFile(run.Checkpoint); err != nil {
			return nil, err
		}
	}
	res.Seconds = seconds
	res.Iterations = res.Baskets
	res.Passes = 1
	res.Params = o.Params()
	m, err := o.Model()
	if err != nil {
		return nil, err
	}
	res.Model = m
	return res, nil
}

// SkipBaskets reads and discards k baskets from src (to resume a stream at
// a checkpoint's Position). It returns io.ErrUnexpectedEOF if src has fewer.
func SkipBaskets(src BasketSource, k int64) error {
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
