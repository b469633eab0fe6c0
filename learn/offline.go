package learn

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/eval"
	"github.com/ndpp-go/ndpp/learn/internal/exactnorm"
	"github.com/ndpp-go/ndpp/learn/internal/vecmat"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// TracePoint is one point of a learning curve: the negative of the
// learners' objective, −(mean log det(L_S + εI) − log det(L + I)) (see
// eval.LogLikelihoodEps), on the trace baskets after Seconds of training (time spent
// computing the trace itself excluded) and Baskets processed.
type TracePoint struct {
	Seconds float64 `json:"seconds"`
	Baskets int     `json:"baskets"`
	NLL     float64 `json:"nll"`
}

// Result is what a learner returns.
type Result struct {
	Model      *ndpp.Model
	Params     *Params
	Seconds    float64 // training wall-clock time (validation and trace excluded)
	Iterations int     // parameter updates
	Passes     float64 // passes over the training baskets
	Baskets    int     // baskets processed (with repetitions)
	ValLLEps   float64 // validation mean log det(L_S + εI) − log det(L + I) of the returned model, the learners' objective (ε = the options' Eps; NaN without validation)
	// ValMPR estimates the returned model's micro MPR on the validation
	// baskets (in percent; offline learner, NaN without validation): the
	// share of DefaultValNegatives items drawn per basket that its
	// conditional gains rank below a held-out item of the basket.
	ValMPR float64
	// SelectedBy says what chose the returned model among the validation
	// checks (offline learner: SelectObjective, SelectRanking or
	// SelectLikelihood).
	SelectedBy Selection
	// NextWeight is the next-item term's weight training used
	// (OfflineOptions.NextWeight or OnlineOptions.NextWeight after
	// defaults, or the strong run's; 0 for none).
	NextWeight float64
	// RankStrong reports that the returned model is of the rank
	// objective's strong first run (OfflineOptions.RankStrong).
	RankStrong bool
	Trace      []TracePoint
}

// OfflineOptions configures TrainOffline. Zero values select the defaults.
type OfflineOptions struct {
	D      int  // rank (default DefaultOfflineD)
	Shared bool // B = V
	// LowRank fits Gartrell et al.'s kernel L = VᵀV + BᵀCB. By default the
	// kernel has a learned diagonal, L = Δ + VᵀV + BᵀCB (see Params), with
	// θ = log δ started at the independent-items model of the training
	// counts (δᵢ = (cᵢ + 1)/(m − cᵢ + 1), see eval.Independent).
	LowRank bool
	Seed    uint64
	Init    InitOptions
	// LR is Adam's learning rate (default DefaultOfflineLR, whatever the
	// minibatch; FullBatch steps too).
	LR float64
	// DiagLR is the learning rate of θ = log δ (default: LR).
	DiagLR float64
	// RateScale, with a diagonal, scales the steps on item i's embeddings
	// by min(1, √(δᵢ/RateScale)), as OnlineOptions.RateScale (default 0.1;
	// negative: no scaling).
	RateScale float64
	// LRDecay multiplies the learning rate after each validation check
	// that makes no progress (see Tolerance; default 0.5; 1 keeps it).
	LRDecay float64
	// EarlyDecay multiplies the learning rate by LRDecay after each of
	// the first EarlyDecay checks as well, progress or not: training runs
	// at LR until the first check and then at a fraction of it (default
	// 0: none; learn/TRADEOFF.md measures it with the rank objective).
	EarlyDecay int
	// FullBatch takes every step on all training baskets (Batch is then
	// unused; a pass is a step): the gradient is a GradSum over the
	// baskets, computed by the workers' shares, plus the normaliser's and
	// the regulariser's terms, as FullBatch.Step, which a distributed
	// driver runs with the GradSums of its shards. Batch is set to the
	// number of training baskets.
	FullBatch bool
	// Batch is the minibatch size (default max(800, n/4) for n items: the
	// reference's 800 for catalogues up to 3,200 items, larger for larger
	// ones, whose every step pays an O(n·d²) normaliser; see
	// withDefaultsFor).
	Batch int
	// MaxEpochs bounds the passes over the data (default 100).
	MaxEpochs int
	// EvalEvery is the number of iterations between validation checks
	// (default: one pass, and at least DefaultMinEvalEvery iterations;
	// negative: one pass however few iterations it is).
	EvalEvery int
	// Patience stops training after this many validation checks without
	// progress (default 6); the best model seen is returned.
	Patience int
	// MaxStalls stops training after this many validation checks without
	// progress in all, consecutive or not (default DefaultMaxStalls;
	// negative: no bound): each has multiplied the learning rate by
	// LRDecay, and the best model seen is returned.
	MaxStalls int
	// RankRetries bounds, with SelectRanking, the runs again from the
	// start at half the previous NextWeight while no validation check has
	// qualified (FloorSE; Result.SelectedBy is then
	// SelectLikelihood): the weight was too strong for this catalogue.
	// Result.NextWeight is the returned run's; its Seconds, Passes,
	// Baskets and Trace cover every run. Default DefaultRankRetries;
	// negative: none.
	RankRetries int
	// FloorSE is, with SelectRanking, the margin by which a check's mean
	// validation log-likelihood must exceed the independent-items
	// model's, in standard errors of the mean of their per-basket
	// difference, for the check to qualify (default DefaultFloorSE;
	// negative: none, at least as likely).
	FloorSE float64
	// Tolerance is the least relative improvement on the best validation
	// check that counts as progress for Patience and LRDecay: a check
	// better than the best by at most Tolerance·|best| is kept as the
	// best model but does not reset the patience (default
	// DefaultAverageTolerance with ObjectiveLikelihood and its next-item
	// term on minibatches, else DefaultTolerance; negative: any
	// improvement).
	Tolerance float64
	// Eps is ε in the numerator log det(L_S + εI) (default eval.DefaultEps, the
	// reference's). It keeps the term finite: the symmetric part of L_S + εI
	// is ≥ εI, so L_S + εI is invertible. Negative means 0.
	Eps float64
	// Alpha, Beta weight the regulariser R = α Σ‖vᵢ‖²/μᵢᵖ + β Σ‖bᵢ‖²/μᵢᵖ
	// (μᵢ: occurrences of item i in the training baskets, at least 1; p:
	// RegPower; for B = V only α applies). Default 0, as in the
	// reference's flags.
	Alpha, Beta float64
	// RegPower is the regulariser's power p of the occurrences (default 1,
	// the reference's): 2 holds back rare items' embeddings and leaves
	// frequent items' nearly free.
	RegPower float64
	// Average, when positive, is the horizon in passes over the training
	// baskets of an exponential moving average of the parameters over the
	// steps: the validation checks score the average and the returned
	// model is one (it starts at the starting point and each step moves
	// it by 1 − a towards the parameters, a = exp(−Batch/(Average·m)) for
	// m training baskets). Zero selects the default: DefaultAverage with
	// ObjectiveLikelihood and its next-item term on (minibatch steps), none
	// otherwise; a negative horizon is none, the parameters of each check
	// (learn/RANKING.md and learn/TRADEOFF.md measure it).
	Average float64
	// FixC keeps C at its initial value (the reference's scalable code).
	FixC bool
	// Workers scores minibatch baskets in parallel (default GOMAXPROCS).
	// Each worker sums the gradient of its share of a minibatch, so the
	// order of the sums follows Workers: the same data, options and
	// Workers give the same model bit for bit; another Workers gives one
	// that differs at first by rounding, which training can amplify
	// (learn/RANKING.md measures it on the union of the categories).
	Workers int
	// Progress, when non-nil, is called after every iteration with the
	// iterations done and the most there can be (early stopping may end
	// training sooner), for progress bars; over RankRetries runs both
	// count on from the runs before.
	Progress func(iteration, maxIterations int)
	// TimeLimit stops training after this much training time (0: none).
	TimeLimit time.Duration
	// TraceSet, when non-nil, records the NLL on these baskets at every
	// validation check into Result.Trace.
	TraceSet [][]int
	// Start, when not nil, is where training starts (a copy; e.g.
	// ParamsFromModel of a saved model, to train it further with another
	// objective) instead of the initialisation: its N must be the
	// catalogue's, its Dim, B = V and diagonal those of D, Shared and
	// LowRank. InitMoments then still replaces its B and C.
	Start *Params
	// InitMoments starts B and C (B ≠ V) at the moment fit to the training
	// baskets' co-occurrences (FitMoments, with MomentSteps steps and the
	// learner's seed): C at d/2 rotation blocks, B at the fitted rows times
	// √κ, κ in {1e-4, 3e-4, …, 10}, the scale whose kernel has the best
	// validation objective (as SelectObjective scores it); V and the
	// diagonal start as without it.
	InitMoments bool
	// MomentSteps is the moment fit's number of steps (default
	// DefaultMomentSteps).
	MomentSteps int
	// Objective is what training maximises and how the returned model is
	// chosen (default ObjectiveLikelihood; see ObjectiveRank).
	Objective Objective
	// NextWeight weights the next-item term against the basket term, per
	// basket item: each training basket of two items or more adds
	// NextWeight·k̄ times the term of one of its items held out (see
	// NextRandom), k̄ the mean number of items of the training baskets, so
	// that the term keeps its share of the objective whatever the baskets'
	// size (the basket term grows with it); when fewer than a share
	// NextCarry of the baskets have two items, each of those adds
	// NextCarry over their share times as much (at most NextMaxCarry
	// times), so that the term keeps that share of its weight on
	// catalogues of mostly single-item baskets. The term is a smooth count
	// of the items its conditional gain ranks below the held-out item's,
	// the order the paper MPR scores (learn/nextitem.go; docs/math.md, "The
	// next-item objective"). Each basket then costs O(|S|(|S| + NextNegatives)d)
	// more. Zero selects the default: DefaultNextWeight with
	// ObjectiveLikelihood (none with FullBatch), DefaultRankNextWeight
	// with ObjectiveRank. A negative weight turns the term off: the
	// regularised log-likelihood alone.
	NextWeight float64
	// NextNegatives is the number of items drawn uniformly per basket
	// against which the held-out item is ranked (default
	// DefaultLikelihoodNextNegatives with ObjectiveLikelihood,
	// DefaultNextNegatives with ObjectiveRank): an unbiased estimate of
	// the term over the whole catalogue, which at least n − |S|
	// candidates make exact.
	NextNegatives int
	// NextBeta is the term's sharpness β (default DefaultNextBeta).
	NextBeta float64
	// NextShare is the share of a minibatch's baskets that add the
	// next-item term, drawn afresh at every step, their weight divided by
	// it so that the expected gradient is the same (0 < NextShare ≤ 1;
	// default DefaultNextShare with ObjectiveLikelihood, 1 with
	// ObjectiveRank). A smaller share trades the term's per-basket cost
	// for gradient noise.
	NextShare float64
	// NextCarry is the least share of the next-item term's weight that
	// the training baskets of two items or more carry when they are fewer
	// (NextWeight; 0 < NextCarry ≤ 1; default DefaultNextCarry with
	// ObjectiveLikelihood, none with ObjectiveRank; negative: none, each
	// carries NextWeight·k̄ whatever their share).
	NextCarry float64
	// NextMaxCarry bounds the factor by which NextCarry weighs each
	// basket that carries the next-item term (≥ 1; default
	// DefaultNextMaxCarry; +Inf: no bound).
	NextMaxCarry float64
	// NextRandom holds out an item of each training basket drawn
	// uniformly for the next-item term, instead of the basket's last item
	// in Key's order, the one the paper protocol holds out of test baskets.
	NextRandom bool
	// Key is the items' order of the paper protocol (eval.Options.Key; nil
	// is the row order): the validation ranking (Result.ValMPR) and the
	// next-item term's validation value hold out each basket's last item
	// in it, as eval.Evaluate does for test baskets.
	Key []int64
	// Select chooses the returned model among the validation checks, and
	// its progress ends the run (default: SelectLikelihood for
	// ObjectiveLikelihood, whose next-item term then shapes the path and
	// the likelihood chooses the check, SelectRanking for ObjectiveRank;
	// learn/RANKING.md).
	Select Selection
	// RankStrong, with SelectRanking and validation baskets, is the
	// setting of a first run before the one the options describe (the
	// plain run): when none of its checks qualifies (FloorSE),
	// the catalogue needs the full learning rate to get there, and
	// training starts again with the plain setting, followed by its
	// RankRetries halvings. nil selects DefaultRankStrong() when Objective
	// is ObjectiveRank and NextWeight, Alpha, Beta, EarlyDecay and
	// Average are all zero (the rank objective's defaults), none
	// otherwise; a setting whose NextWeight is not positive is none.
	RankStrong *RankSetting
}

// RankSetting is a setting of the rank objective's strong first run
// (OfflineOptions.RankStrong): the next-item term's weight, the
// regulariser's weights, the early decay and the moving average's
// horizon, as the OfflineOptions fields of those names; the other options
// are the plain run's.
type RankSetting struct {
	NextWeight  float64
	Alpha, Beta float64
	EarlyDecay  int
	Average     float64
}

// DefaultRankStrong returns the rank objective's strong first run: twice
// the plain run's next-item weight, the regulariser at α = β = 30, the
// learning rate halved after each of the first five checks and the
// parameters averaged over about the last half pass. On UK Retail
// and 3-category registries it qualifies (FloorSE) and ranks
// above the plain run; on catalogues of up to 100 items with two or three
// items a basket (the Amazon registry categories, apparel) it does not,
// and the plain run follows (learn/RANKING.md).
func DefaultRankStrong() RankSetting {
	return RankSetting{NextWeight: 1, Alpha: 30, Beta: 30, EarlyDecay: 5, Average: 0.5}
}

func (o OfflineOptions) withDefaults() OfflineOptions {
	return o.withDefaultsFor(0)
}

// DefaultOfflineLR is the offline learner's default learning rate, for
// every minibatch size and for FullBatch. From its start at the
// independent-items model the learner moves items' rates from δᵢ into their
// embeddings where the baskets call for repulsion; the rate lets it get
// there before validation stops it (learn/RESULTS.md compares rates on
// eighteen real basket sets).
const DefaultOfflineLR = 0.05

// withDefaultsFor fills in the defaults for a catalogue of n items: each
// step's normaliser costs O(n·d²) whatever the minibatch, so the default
// minibatch grows with the catalogue, max(800, n/4), keeping that cost at
// most about the baskets' own per basket; the default learning rate is
// DefaultOfflineLR.
func (o OfflineOptions) withDefaultsFor(n int) OfflineOptions {
	if o.D == 0 {
		o.D = DefaultOfflineD
	}
	if o.Batch == 0 {
		o.Batch = max(800, n/4)
	}
	if o.LR == 0 {
		o.LR = DefaultOfflineLR
	}
	if o.MaxEpochs == 0 {
		o.MaxEpochs = 100
	}
	if o.Patience == 0 {
		o.Patience = 6
	}
	if o.LRDecay == 0 {
		o.LRDecay = 0.5
	}
	switch {
	case o.MaxStalls == 0:
		o.MaxStalls = DefaultMaxStalls
	case o.MaxStalls < 0:
		o.MaxStalls = math.MaxInt
	}
	switch {
	case o.RankRetries == 0:
		o.RankRetries = DefaultRankRetries
	case o.RankRetries < 0:
		o.RankRetries = 0
	}
	switch {
	case o.NextCarry == 0 && o.Objective == ObjectiveLikelihood:
		o.NextCarry = DefaultNextCarry
	case o.NextCarry < 0 && !math.IsInf(o.NextCarry, -1):
		o.NextCarry = 0
	}
	if o.NextMaxCarry == 0 {
		o.NextMaxCarry = DefaultNextMaxCarry
	}
	switch {
	case o.FloorSE == 0:
		o.FloorSE = DefaultFloorSE
	case o.FloorSE < 0 && !math.IsInf(o.FloorSE, -1):
		o.FloorSE = 0
	}
	if o.RateScale == 0 {
		o.RateScale = DefaultRateScale
	}
	if o.RegPower == 0 {
		o.RegPower = 1
	}
	o.Eps = resolveEps(o.Eps)
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.NextWeight == 0 {
		switch {
		case o.Objective == ObjectiveRank:
			o.NextWeight = DefaultRankNextWeight
		case !o.FullBatch:
			o.NextWeight = DefaultNextWeight
		}
	}
	// The default objective with its next-item term on minibatches
	// validates averaged parameters (DefaultAverage) and takes the
	// coarser DefaultAverageTolerance.
	termDefaults := o.Objective == ObjectiveLikelihood && o.NextWeight > 0 && !o.FullBatch
	switch {
	case o.Average == 0 && termDefaults:
		o.Average = DefaultAverage
	case o.Average < 0 && !math.IsInf(o.Average, -1):
		o.Average = 0
	}
	switch {
	case o.Tolerance == 0 && termDefaults:
		o.Tolerance = DefaultAverageTolerance
	case o.Tolerance == 0:
		o.Tolerance = DefaultTolerance
	case o.Tolerance < 0:
		o.Tolerance = 0
	}
	if o.NextNegatives == 0 {
		o.NextNegatives = DefaultLikelihoodNextNegatives
		if o.Objective == ObjectiveRank {
			o.NextNegatives = DefaultNextNegatives
		}
	}
	if o.NextBeta == 0 {
		o.NextBeta = DefaultNextBeta
	}
	if o.NextShare == 0 {
		o.NextShare = DefaultNextShare
		if o.Objective == ObjectiveRank {
			o.NextShare = 1
		}
	}
	if o.Select == SelectDefault {
		o.Select = SelectLikelihood
		if o.Objective == ObjectiveRank {
			o.Select = SelectRanking
		}
	}
	return o
}

// rankStrong sets RankStrong to the strong first run's setting the
// options select before defaults, nil for none.
func (o *OfflineOptions) rankStrong() {
	if o.RankStrong == nil && o.Objective == ObjectiveRank && o.NextWeight == 0 &&
		o.Alpha == 0 && o.Beta == 0 && o.EarlyDecay == 0 && o.Average == 0 {
		s := DefaultRankStrong()
		o.RankStrong = &s
	}
	if o.RankStrong != nil && !(o.RankStrong.NextWeight > 0) {
		o.RankStrong = nil
	}
}

// validate checks options after withDefaultsFor.
func (opt OfflineOptions) validate() error {
	if opt.D < 1 || opt.Batch < 1 || opt.MaxEpochs < 1 || opt.Patience < 1 || opt.EarlyDecay < 0 {
		return fmt.Errorf("learn: invalid options (d = %d, batch = %d, epochs = %d, patience = %d, early decay = %d)", opt.D, opt.Batch, opt.MaxEpochs, opt.Patience, opt.EarlyDecay)
	}
	if !(opt.LR > 0) || math.IsInf(opt.LR, 0) || opt.Alpha < 0 || opt.Beta < 0 || math.IsNaN(opt.Alpha+opt.Beta) || math.IsInf(opt.Alpha+opt.Beta, 0) || math.IsNaN(opt.Eps) {
		return fmt.Errorf("learn: invalid lr %v, alpha %v, beta %v or eps %v", opt.LR, opt.Alpha, opt.Beta, opt.Eps)
	}
	if !(opt.RegPower >= 0) || math.IsInf(opt.RegPower, 0) {
		return fmt.Errorf("learn: invalid regulariser power %v; want a finite value ≥ 0", opt.RegPower)
	}
	if !(opt.Average >= 0) || math.IsInf(opt.Average, 0) {
		return fmt.Errorf("learn: invalid average horizon %v; want a finite value ≥ 0", opt.Average)
	}
	if !(opt.FloorSE >= 0) || math.IsInf(opt.FloorSE, 0) {
		return fmt.Errorf("learn: invalid floor margin %v; want a finite number of standard errors", opt.FloorSE)
	}
	if math.IsNaN(opt.Tolerance) || math.IsInf(opt.Tolerance, 0) {
		return fmt.Errorf("learn: invalid tolerance %v; want a finite value", opt.Tolerance)
	}
	if !(opt.LRDecay > 0 && opt.LRDecay <= 1) {
		return fmt.Errorf("learn: invalid lr decay %v; want 0 < decay ≤ 1", opt.LRDecay)
	}
	if opt.Objective != ObjectiveLikelihood && opt.Objective != ObjectiveRank {
		return fmt.Errorf("learn: invalid objective %v", opt.Objective)
	}
	if opt.Select != SelectObjective && opt.Select != SelectRanking && opt.Select != SelectLikelihood {
		return fmt.Errorf("learn: invalid selection %v", opt.Select)
	}
	if math.IsNaN(opt.NextWeight) || math.IsInf(opt.NextWeight, 0) || opt.NextNegatives < 1 || !(opt.NextBeta > 0) || math.IsInf(opt.NextBeta, 0) {
		return fmt.Errorf("learn: invalid next-item weight %v, negatives %d or sharpness %v; want a finite weight, negatives ≥ 1, 0 < sharpness < ∞", opt.NextWeight, opt.NextNegatives, opt.NextBeta)
	}
	if !(opt.NextShare > 0 && opt.NextShare <= 1) {
		return fmt.Errorf("learn: invalid next-item share %v; want 0 < share ≤ 1", opt.NextShare)
	}
	if !(opt.NextCarry >= 0 && opt.NextCarry <= 1) {
		return fmt.Errorf("learn: invalid next-item carry %v; want a share ≤ 1 (negative: none)", opt.NextCarry)
	}
	if !(opt.NextMaxCarry >= 1) {
		return fmt.Errorf("learn: invalid next-item carry bound %v; want a factor ≥ 1", opt.NextMaxCarry)
	}
	if opt.InitMoments && (opt.Shared || opt.FullBatch) {
		return errors.New("learn: the moment initialisation (InitMoments) needs B ≠ V and minibatch training")
	}
	if opt.NextWeight > 0 && opt.FullBatch {
		return errors.New("learn: the next-item term (NextWeight) applies to minibatch training, not FullBatch")
	}
	if s := opt.RankStrong; s != nil {
		if math.IsInf(s.NextWeight, 0) || !(s.Alpha >= 0 && s.Beta >= 0) || math.IsInf(s.Alpha+s.Beta, 0) || s.EarlyDecay < 0 || !(s.Average >= 0) || math.IsInf(s.Average, 0) {
			return fmt.Errorf("learn: invalid strong rank setting %+v; want a finite weight, 0 ≤ α, β, average < ∞ and early decay ≥ 0", *s)
		}
		if opt.FullBatch {
			return errors.New("learn: the strong rank run (RankStrong) applies to minibatch training, not FullBatch")
		}
	}
	if math.IsNaN(opt.DiagLR) || opt.DiagLR < 0 || math.IsInf(opt.DiagLR, 0) || math.IsNaN(opt.RateScale) || math.IsInf(opt.RateScale, 0) {
		return fmt.Errorf("learn: invalid diagonal lr %v or rate scale %v", opt.DiagLR, opt.RateScale)
	}
	return nil
}

// checkBaskets validates baskets against n items (baskets.Check), naming
// the set in the error.
func checkBaskets(name string, b [][]int, n int) error {
	if err := baskets.Check(b, n); err != nil {
		return fmt.Errorf("learn: %s %w", name, err)
	}
	return nil
}

// TrainOffline fits an NDPP to training baskets over n items by maximising
//
//	(1/m) Σᵢ log det(L_{Sᵢ} + εI) − log det(L + I) − R(V, B)
//
// (plus NextWeight times a next-item term per basket) with minibatch
// Adam: each minibatch's basket gradients are computed in parallel (one
// accumulator per worker), the normaliser and its gradient exactly through
// the 2d×2d identity det(I + L) = det(I_2d + WG) (never C⁻¹), C = D − Dᵀ
// learned unless FixC. Every EvalEvery iterations the validation baskets
// are scored — the objective, and with SelectRanking the ranking ValMPR —
// and the model that Select chooses among the checks is returned
// (validation-based stopping with Patience). val may be empty, in which case
// the last model is returned after MaxEpochs (or TimeLimit). ctx is checked
// before every iteration, within full-batch gradients and between chunks
// of the validation and trace baskets being scored: once it is done,
// TrainOffline returns an error wrapping ctx.Err().
func TrainOffline(ctx context.Context, train, val [][]int, n int, opt OfflineOptions) (*Result, error) {
	if opt.FullBatch {
		opt.Batch = len(train)
	}
	opt.rankStrong()
	opt = opt.withDefaultsFor(n)
	if n <= 0 {
		return nil, fmt.Errorf("learn: n = %d items; need n ≥ 1", n)
	}
	if len(train) == 0 {
		return nil, errors.New("learn: no training baskets")
	}
	if err := opt.validate(); err != nil {
		return nil, err
	}
	if opt.Key != nil && len(opt.Key) != n {
		return nil, fmt.Errorf("learn: %d keys for %d items", len(opt.Key), n)
	}
	for _, set := range []struct {
		name string
		b    [][]int
	}{{"training", train}, {"validation", val}, {"trace", opt.TraceSet}} {
		if err := checkBaskets(set.name, set.b, n); err != nil {
			return nil, err
		}
	}
	if opt.Start != nil {
		if err := opt.checkStart(n); err != nil {
			return nil, err
		}
	}
	// With retries, Progress counts on across the runs.
	var offset, last int
	if progress := opt.Progress; progress != nil {
		opt.Progress = func(it, maxIt int) {
			last = offset + it
			progress(offset+it, offset+maxIt)
		}
	}
	// SelectRanking: the strong run first, if any; while no validation
	// check qualified, the plain run, then again from
	// the start at half the weight.
	run, retries := opt, opt.RankRetries
	strong := opt.RankStrong != nil && opt.Select == SelectRanking && len(val) > 0
	if strong {
		st := opt.RankStrong
		run.NextWeight, run.Alpha, run.Beta, run.EarlyDecay, run.Average = st.NextWeight, st.Alpha, st.Beta, st.EarlyDecay, st.Average
		retries++
	}
	res, err := trainOffline(ctx, train, val, n, run)
	if err == nil {
		res.RankStrong = strong
	}
	limit := opt.TimeLimit
	for r := 0; err == nil && opt.Select == SelectRanking && res.SelectedBy == SelectLikelihood &&
		run.NextWeight > 0 && r < retries; r++ {
		if limit > 0 {
			if run.TimeLimit = limit - time.Duration(res.Seconds*float64(time.Second)); run.TimeLimit <= 0 {
				break
			}
		}
		if strong && r == 0 {
			run.NextWeight, run.Alpha, run.Beta, run.EarlyDecay, run.Average = opt.NextWeight, opt.Alpha, opt.Beta, opt.EarlyDecay, opt.Average
		} else {
			run.NextWeight /= 2
		}
		offset = last
		var next *Result
		if next, err = trainOffline(ctx, train, val, n, run); err == nil {
			for i := range next.Trace {
				next.Trace[i].Seconds += res.Seconds
				next.Trace[i].Baskets += res.Baskets
			}
			next.Trace = append(res.Trace, next.Trace...)
			next.Seconds += res.Seconds
			next.Passes += res.Passes
			next.Baskets += res.Baskets
			res = next
		}
	}
	return res, err
}

// trainOffline is one training run of TrainOffline, from the start (the
// initialisation or opt.Start), with checked options and baskets.
func trainOffline(ctx context.Context, train, val [][]int, n int, opt OfflineOptions) (*Result, error) {
	var p *Params
	var err error
	if opt.Start != nil {
		p = opt.Start.Clone()
	} else if p, err = newParams(n, opt.D, opt.Shared, !opt.LowRank, opt.Seed, opt.Init); err != nil {
		return nil, err
	}
	tr := newOfflineTrainer(p, train, opt)
	if p.Theta != nil && opt.Start == nil {
		tr.initTheta()
	}
	if opt.InitMoments {
		if err := initMoments(ctx, p, train, val, opt); err != nil {
			return nil, err
		}
	}
	evalEvery := opt.EvalEvery
	if evalEvery <= 0 {
		pass := (len(train) + opt.Batch - 1) / opt.Batch
		evalEvery = pass
		switch {
		case opt.FullBatch:
			evalEvery = 1
		case opt.EvalEvery == 0:
			evalEvery = max(DefaultMinEvalEvery, pass)
		}
	}
	res := &Result{ValLLEps: math.NaN(), ValMPR: math.NaN(), SelectedBy: opt.Select, NextWeight: max(opt.NextWeight, 0)}
	nextW := tr.nextW
	var sel *selector
	var floorLds []float64 // the floor's per-basket terms
	if len(val) > 0 {
		// SelectRanking keeps to models whose validation log-likelihood is
		// at least the independent-items model's (of the training counts),
		// by FloorSE standard errors of the per-basket difference.
		floor := math.Inf(-1)
		if opt.Select == SelectRanking {
			m, err := eval.IndependentOfCounts(tr.counts, int64(len(train)))
			if err != nil {
				return nil, err
			}
			if floor, floorLds, err = logLikelihoods(ctx, m, val, opt.Eps, opt.Workers); err != nil {
				return nil, err
			}
		}
		sel = newSelector(opt.Select, floor, opt.Tolerance)
	}
	// With Average, the checks score (and training returns) avg, the
	// moving average of the parameters over the steps.
	var avg *Params
	avgW, scored := 0.0, p
	if opt.Average > 0 {
		avg = p.Clone()
		avgW, scored = -math.Expm1(-float64(opt.Batch)/(opt.Average*float64(len(train)))), avg
	}
	bad, stalls, checks := 0, 0, 0
	var elapsed time.Duration
	// Validation and the trace use the objective's convention: the basket
	// term log det(L_S + εI), finite for every basket.
	check := func() (stop bool, err error) {
		if checks++; checks <= opt.EarlyDecay {
			tr.lr *= opt.LRDecay
		}
		p := scored
		m, err := p.Model()
		if err != nil {
			return true, fmt.Errorf("learn: offline training diverged: %w", err)
		}
		if opt.TraceSet != nil {
			ll, err := meanLogLikelihood(ctx, m, opt.TraceSet, opt.Eps, opt.Workers)
			if err != nil {
				return true, err
			}
			res.Trace = append(res.Trace, TracePoint{Seconds: elapsed.Seconds(), Baskets: res.Baskets, NLL: -ll})
		}
		if len(val) == 0 {
			return false, nil
		}
		ll, lds, err := logLikelihoods(ctx, m, val, opt.Eps, opt.Workers)
		if err != nil {
			return true, err
		}
		if math.IsNaN(ll) {
			return true, errors.New("learn: offline training diverged: validation log-likelihood is NaN (lower the learning rate)")
		}
		// The objective's value, next-item term included, matters only to
		// SelectObjective; the other selections read ll and rank.
		score, rank := ll, math.NaN()
		if opt.NextWeight > 0 && opt.Select == SelectObjective {
			v, err := nextValuePerBasket(ctx, p, val, opt.NextNegatives, opt.NextBeta, opt.Key, opt.Eps, opt.Seed)
			if err != nil {
				return true, err
			}
			score += nextW * v
		}
		var margin float64
		if opt.Select == SelectRanking {
			if rank, err = valRanking(ctx, p, val, DefaultValNegatives, opt.Key, opt.Eps, opt.Seed); err != nil {
				return true, err
			}
			if opt.FloorSE > 0 && len(lds) > 1 {
				margin = opt.FloorSE * pairedStdErr(lds, floorLds)
			}
		}
		if sel.observe(p, ll, margin, score, rank) {
			bad = 0
			return false, nil
		}
		bad++
		stalls++
		tr.lr *= opt.LRDecay
		return bad >= opt.Patience || stalls >= opt.MaxStalls, nil
	}
	draw := newMinibatches(train, opt.Seed)
	maxIter := max(1, opt.MaxEpochs*len(train)/opt.Batch) // at most MaxEpochs passes
	batch := make([][]int, 0, opt.Batch)
	for it := 0; it < maxIter; it++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("learn: offline training stopped after %d iterations: %w", it, err)
		}
		start := time.Now()
		batch = batch[:0]
		if opt.FullBatch {
			sum, err := tr.fullBatchGradient(ctx, train)
			if err != nil {
				return nil, err
			}
			if err := (&FullBatch{tr: tr}).Step(ctx, sum); err != nil {
				return nil, err
			}
			batch = train
		} else {
			batch = draw.next(batch, opt.Batch)
			if !tr.step(batch) {
				return nil, errors.New("learn: offline training produced non-finite parameters (lower the learning rate)")
			}
		}
		if avg != nil {
			avg.moveToward(p, avgW)
		}
		res.Iterations++
		res.Baskets += len(batch)
		elapsed += time.Since(start)
		if opt.Progress != nil {
			opt.Progress(it+1, maxIter)
		}
		if (it+1)%evalEvery == 0 || it+1 == maxIter || (opt.TimeLimit > 0 && elapsed >= opt.TimeLimit) {
			stop, err := check()
			if err != nil {
				return nil, err
			}
			if stop || (opt.TimeLimit > 0 && elapsed >= opt.TimeLimit) {
				break
			}
		}
	}
	best := scored
	if sel != nil && sel.score.p != nil {
		best, res.ValLLEps, res.ValMPR, res.SelectedBy = sel.chosen()
		if math.IsNaN(res.ValMPR) {
			if res.ValMPR, err = valRanking(ctx, best, val, DefaultValNegatives, opt.Key, opt.Eps, opt.Seed); err != nil {
				return nil, err
			}
		}
	}
	res.Params = best
	res.Seconds = elapsed.Seconds()
	res.Passes = float64(res.Baskets) / float64(len(train))
	res.Model, err = best.Model()
	if err != nil {
		return nil, err
	}
	return res, nil
}

// minibatches draws the training baskets in passes, each in a fresh
// random order.
type minibatches struct {
	train [][]int
	rng   *rand.Rand
	order []int
	pos   int
}

func newMinibatches(train [][]int, seed uint64) *minibatches {
	b := &minibatches{train: train, rng: rand.New(rand.NewPCG(seed, 0x0ff11e)), order: make([]int, len(train)), pos: len(train)}
	for i := range b.order {
		b.order[i] = i
	}
	return b
}

// next appends the next size baskets to dst.
func (b *minibatches) next(dst [][]int, size int) [][]int {
	for range size {
		if b.pos == len(b.order) {
			b.rng.Shuffle(len(b.order), func(i, j int) { b.order[i], b.order[j] = b.order[j], b.order[i] })
			b.pos = 0
		}
		dst = append(dst, b.train[b.order[b.pos]])
		b.pos++
	}
	return dst
}

// offlineTrainer holds the state of minibatch Adam.
type offlineTrainer struct {
	p        *Params
	opt      OfflineOptions
	m        int       // training baskets
	lr       float64   // the learning rate, decayed on plateaus
	rowScale []float64 // the items' step factors (RateScale)
	counts   []float64 // training occurrences of each item
	invMu    []float64
	c, bc    []float64
	workers  []*offlineWorker
	nw       *exactnorm.Work
	next     nextPrep
	nextW    float64 // the next-item term's weight per basket that carries it (nextBasketWeight)
	g        *Grad
	mom      *Grad // Adam first moments
	sq       *Grad // Adam second moments
	t        int
}

type offlineWorker struct {
	acc      *accum
	w        basketWork
	bcS      []float64
	next     nextWork
	fuse     nextFusion
	nextNegs []int
	draw     nextDraw
}

func newOfflineTrainer(p *Params, train [][]int, opt OfflineOptions) *offlineTrainer {
	counts := make([]float64, p.N)
	for _, s := range train {
		for _, i := range s {
			counts[i]++
		}
	}
	tr := newTrainerCounts(p, counts, len(train), opt)
	tr.nextW = nextBasketWeight(opt.NextWeight, opt.NextCarry, opt.NextMaxCarry, train)
	return tr
}

// newTrainerCounts is newOfflineTrainer from the training baskets' item
// counts and number (m).
func newTrainerCounts(p *Params, counts []float64, m int, opt OfflineOptions) *offlineTrainer {
	n, d := p.N, p.Dim
	tr := &offlineTrainer{p: p, opt: opt, lr: opt.LR, invMu: make([]float64, n), bc: make([]float64, n*d),
		g: NewGrad(p), mom: NewGrad(p), sq: NewGrad(p), m: m}
	tr.nw = exactnorm.NewWork(d)
	tr.counts = counts
	for i, c := range tr.counts {
		tr.invMu[i] = 1 / max(c, 1)
		if opt.RegPower != 1 {
			tr.invMu[i] = math.Pow(max(c, 1), -opt.RegPower)
		}
	}
	for w := 0; w < opt.Workers; w++ {
		tr.workers = append(tr.workers, &offlineWorker{acc: newAccum(n, d)})
	}
	return tr
}

// initTheta starts the diagonal at the independent-items model of the
// training counts: δᵢ = pᵢ/(1 − pᵢ), pᵢ = (cᵢ + 1)/(m + 2) (eval.Independent).
func (tr *offlineTrainer) initTheta() {
	m := float64(tr.m)
	p, d := tr.p, tr.p.Dim
	init := tr.opt.Init.withDefaultsFor(d, true)
	sc, rho := init.Scale, init.Share
	for i, c := range tr.counts {
		delta := (c + 1) / (m - c + 1)
		p.Theta[i] = math.Log(delta)
		if rho > 0 {
			// Rows of expected squared norm ρ·δᵢ (entries drawn with
			// variance Scale²).
			f := math.Sqrt(rho*delta/float64(d)) / sc
			scaleVec(f, p.V[i*d:(i+1)*d])
			if p.B != nil {
				scaleVec(f, p.B[i*d:(i+1)*d])
			}
		}
	}
}

// step performs one Adam ascent step on a minibatch and reports whether the
// parameters stay finite.
func (tr *offlineTrainer) step(batch [][]int) bool {
	if !tr.gradient(batch) {
		return false
	}
	return tr.applyStep()
}

// applyStep takes the Adam step with the gradient in tr.g and reports
// whether the parameters stay finite.
func (tr *offlineTrainer) applyStep() bool {
	p, g := tr.p, tr.g
	tr.t++
	var f []float64
	if p.Theta != nil && tr.opt.RateScale > 0 {
		// As the online learner (OnlineOptions.RateScale): item i's
		// embedding steps scale by min(1, √(δᵢ/RateScale)).
		tr.rowScale = resize(tr.rowScale, p.N)
		f = tr.rowScale
		for i, th := range p.Theta {
			f[i] = math.Min(1, math.Sqrt(math.Exp(th)/tr.opt.RateScale))
		}
	}
	adamStepRows(p.V, tr.mom.V, tr.sq.V, g.V, tr.lr, tr.t, p.Dim, f)
	if p.B != nil {
		adamStepRows(p.B, tr.mom.B, tr.sq.B, g.B, tr.lr, tr.t, p.Dim, f)
	}
	if !tr.opt.FixC {
		adamStep(p.D, tr.mom.D, tr.sq.D, g.D, tr.lr, tr.t)
	}
	if p.Theta != nil {
		dlr := tr.lr
		if tr.opt.DiagLR > 0 {
			dlr *= tr.opt.DiagLR / tr.opt.LR
		}
		adamStep(p.Theta, tr.mom.T, tr.sq.T, g.T, dlr, tr.t)
	}
	return p.finite()
}

// gradient computes tr.g, the gradient of the minibatch objective
// (1/|batch|) Σ log det(L_S + εI) − log det(I + L) − R(V, B) (each basket's
// term plus NextWeight times its next-item term when set), and
// reports whether the normaliser could be factored.
func (tr *offlineTrainer) gradient(batch [][]int) bool {
	p, d, n := tr.p, tr.p.Dim, tr.p.N
	tr.c = p.CInto(tr.c)
	b := p.brows()
	vecmat.N(tr.bc, d, b, d, n, tr.c, d, d, d, 1) // rows bᵢᵀC
	scale := 1 / float64(len(batch))
	if tr.nextW > 0 {
		tr.next.prepare(p, tr.c, tr.opt.Eps, tr.bc)
	}
	nw := len(tr.workers)
	chunk := (len(batch) + nw - 1) / nw
	var wg sync.WaitGroup
	// The normaliser depends only on the parameters: factor it while the
	// workers score the minibatch.
	normOK := true
	wg.Add(1)
	go func() {
		defer wg.Done()
		normOK = tr.factorNorm()
	}()
	for wi, wk := range tr.workers {
		lo, hi := wi*chunk, min((wi+1)*chunk, len(batch))
		if lo >= hi {
			continue
		}
		wg.Add(1)
		go func(wk *offlineWorker, lo int, part [][]int) {
			defer wg.Done()
			for q, s := range part {
				k := len(s)
				if cap(wk.bcS) < k*d {
					wk.bcS = make([]float64, k*d)
				}
				bcS := wk.bcS[:k*d]
				for r, i := range s {
					copy(bcS[r*d:(r+1)*d], tr.bc[i*d:(i+1)*d])
				}
				// The step needs the gradient only (the objective's
				// value is tracked on the validation set). A next-item
				// term rides on the basket term's products (nextFusion).
				if tr.nextW > 0 && k >= 2 && nextTakes(tr.opt.Seed, tr.t, lo+q, tr.opt.NextShare) {
					t, negs := wk.draw.choice(tr.opt.Seed, tr.t, lo+q, s, n, tr.opt.NextNegatives, !tr.opt.NextRandom, tr.opt.Key, wk.nextNegs)
					wk.nextNegs = negs
					f := tr.nextW / tr.opt.NextShare
					wk.fuse = nextFusion{w: &wk.next, pp: &tr.next, t: t, negs: negs, beta: tr.opt.NextBeta, acc: wk.acc, scale: scale * f, f: f, khat: wk.fuse.khat}
					wk.w.next = &wk.fuse
				}
				wk.w.basketTerm(p, bcS, s, tr.opt.Eps, false, false, wk.acc, scale)
				wk.w.next = nil
			}
		}(wk, lo, batch[lo:hi])
	}
	wg.Wait()
	// The first worker's sums take the others' (the same sums in the same
	// order as an empty total would) and are cleared once used.
	acc := tr.workers[0].acc
	defer acc.reset()
	for _, wk := range tr.workers[1:] {
		acc.merge(wk.acc)
		wk.acc.reset()
	}
	if !normOK {
		return false
	}
	g := tr.g
	clear(g.V)
	clear(g.B)
	clear(g.D)
	clear(g.T)
	acc.finish(p, tr.c, g, true)
	tr.restOfGradient(g)
	return true
}

// restOfGradient adds to g (the basket terms' share, already scaled) the
// full normaliser's −∂ log det(I + L) — every item's −K zᵢ, C's through
// C = D − Dᵀ, the diagonal's −δᵢ/(1 + δᵢ) — and the regulariser's −∂R,
// and clears D's share for FixC. The normaliser must be factored at p
// (factorNorm).
func (tr *offlineTrainer) restOfGradient(g *Grad) {
	p, d := tr.p, tr.p.Dim
	tr.nw.ApplyAll(p.N, g.V, g.B, -1)
	gc := tr.nw.GC
	for r := 0; r < d; r++ {
		for s := 0; s < d; s++ {
			g.D[r*d+s] -= gc[r*d+s] - gc[s*d+r]
		}
	}
	for i := range g.T {
		_, dt := diagNorm(p, i)
		g.T[i] -= dt
	}
	tr.regularize(g)
	if tr.opt.FixC {
		clear(g.D)
	}
}

// factorNorm evaluates the full normaliser at the current parameters:
// G = ZᵀZ over all items, then A = I + WG factored (exactnorm.Work), C in
// tr.c. It reports false if A is singular.
func (tr *offlineTrainer) factorNorm() bool {
	p, m := tr.p, 2*tr.p.Dim
	z := tr.nw.Z(p.N)
	for i := range p.N {
		zRow(z[i*m:], p, i)
	}
	tr.nw.Gram(z, p.N)
	return tr.nw.Factor(tr.c)
}

// regularize adds −∂R to g.
func (tr *offlineTrainer) regularize(g *Grad) {
	p, d := tr.p, tr.p.Dim
	if tr.opt.Alpha == 0 && tr.opt.Beta == 0 {
		return
	}
	for i := 0; i < p.N; i++ {
		r := i * d
		blas.Axpy(-2*tr.opt.Alpha*tr.invMu[i], p.V[r:r+d], g.V[r:r+d])
		if p.B != nil {
			blas.Axpy(-2*tr.opt.Beta*tr.invMu[i], p.B[r:r+d], g.B[r:r+d])
		}
	}
}

// checkStart checks that opt.Start fits a catalogue of n items and the
// options' kernel.
func (opt OfflineOptions) checkStart(n int) error {
	p := opt.Start
	if p.N != n || p.Dim != opt.D || p.Shared() != opt.Shared || p.HasDiag() == opt.LowRank {
		return fmt.Errorf("learn: start parameters of %d items, d = %d, shared %v, diagonal %v; the options want %d items, d = %d, shared %v, diagonal %v",
			p.N, p.Dim, p.Shared(), p.HasDiag(), n, opt.D, opt.Shared, !opt.LowRank)
	}
	d := p.Dim
	if len(p.V) != n*d || (p.B != nil && len(p.B) != n*d) || len(p.D) != d*d || (p.Theta != nil && len(p.Theta) != n) {
		return fmt.Errorf("learn: start parameters with arrays of lengths %d, %d, %d, %d for %d items at d = %d", len(p.V), len(p.B), len(p.D), len(p.Theta), n, d)
	}
	if !p.finite() {
		return errors.New("learn: start parameters are not finite")
	}
	return nil
}

// nextBasketWeight is the next-item term's weight for each training basket
// that carries it (two items or more), for weight w per basket item
// (OfflineOptions.NextWeight; 0 for w ≤ 0): w·k̄, k̄ the baskets' mean
// size, and when fewer than a share carry of the baskets carry the term,
// times carry/f₂ up to maxCarry, f₂ the share that do, so that on
// catalogues of mostly single-item baskets the term keeps that share of
// the weight it has where every basket carries it
// (OfflineOptions.NextCarry; docs/math.md, "The next-item objective").
func nextBasketWeight(w, carry, maxCarry float64, baskets [][]int) float64 {
	if !(w > 0) {
		return 0
	}
	m2 := 0
	for _, s := range baskets {
		if len(s) >= 2 {
			m2++
		}
	}
	wk := w * meanSize(baskets)
	if f2 := float64(m2) / float64(len(baskets)); m2 > 0 && f2 < carry {
		wk *= min(carry/f2, maxCarry)
	}
	return wk
}

// meanSize is the mean number of items of the baskets (0 for none).
func meanSize(baskets [][]int) float64 {
	if len(baskets) == 0 {
		return 0
	}
	var k int
	for _, s := range baskets {
		k += len(s)
	}
	return float64(k) / float64(len(baskets))
}
