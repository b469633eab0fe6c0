package learn

import (
	"fmt"
	"math"
)

// Objective is what the offline learner maximises and, by default, how it
// chooses the model it returns (OfflineOptions.Objective).
type Objective int

const (
	// ObjectiveLikelihood maximises the regularised log-likelihood plus a
	// light next-item term (DefaultNextWeight, unless NextWeight sets
	// another weight or turns it off) and returns the model of the best
	// validation value of that objective.
	ObjectiveLikelihood Objective = iota
	// ObjectiveRank adds the next-item term and returns the model that
	// ranks the validation baskets' held-out items best among those whose
	// validation log-likelihood exceeds the independent-items model's
	// (eval.Independent of the training baskets) by OfflineOptions.FloorSE
	// standard errors. With the defaults it
	// trains first with a strong setting (RankStrong); while no check
	// qualifies, training starts again with the plain setting
	// (DefaultRankNextWeight times the term, unless NextWeight sets
	// another weight), then at half the weight (RankRetries).
	ObjectiveRank
)

// String names the objective as the --objective flag does.
func (o Objective) String() string {
	switch o {
	case ObjectiveLikelihood:
		return "likelihood"
	case ObjectiveRank:
		return "rank"
	}
	return fmt.Sprintf("Objective(%d)", int(o))
}

// ParseObjective returns the objective named by s ("likelihood" or "rank").
func ParseObjective(s string) (Objective, error) {
	switch s {
	case "likelihood":
		return ObjectiveLikelihood, nil
	case "rank":
		return ObjectiveRank, nil
	}
	return 0, fmt.Errorf("learn: unknown objective %q (want likelihood or rank)", s)
}

// Selection is how the offline learner chooses, among its validation
// checks, the model it returns (OfflineOptions.Select).
type Selection int

const (
	// SelectDefault is the objective's own: SelectLikelihood for
	// ObjectiveLikelihood, SelectRanking for ObjectiveRank.
	SelectDefault Selection = iota
	// SelectObjective returns the model of the best validation value of
	// the training objective per basket, weighted as training weighs it:
	// the mean log-likelihood plus the next-item term of each basket of
	// two items or more at its weight per basket (from NextWeight and
	// NextCarry), divided by the number of baskets.
	SelectObjective
	// SelectRanking returns the model of the best validation ranking
	// (Result.ValMPR) among those whose validation log-likelihood exceeds
	// the independent-items model's, the floor, by OfflineOptions.FloorSE
	// standard errors of the mean per-basket difference; when no check
	// qualifies, even after OfflineOptions.RankRetries runs at half the
	// weight, the model of the best validation log-likelihood, the
	// nearest to it (Result.SelectedBy is then SelectLikelihood).
	SelectRanking
	// SelectLikelihood returns the model of the best validation
	// log-likelihood (the objective's basket term alone).
	SelectLikelihood
)

// String names the selection as Result.SelectedBy reports it.
func (s Selection) String() string {
	switch s {
	case SelectDefault:
		return "default"
	case SelectObjective:
		return "objective"
	case SelectRanking:
		return "ranking"
	case SelectLikelihood:
		return "likelihood"
	}
	return fmt.Sprintf("Selection(%d)", int(s))
}

// ParseSelection returns the selection named by s ("objective",
// "likelihood" or "ranking", as String names them; "" is SelectDefault).
func ParseSelection(s string) (Selection, error) {
	switch s {
	case "":
		return SelectDefault, nil
	case "objective":
		return SelectObjective, nil
	case "likelihood":
		return SelectLikelihood, nil
	case "ranking":
		return SelectRanking, nil
	}
	return 0, fmt.Errorf("learn: unknown selection %q (want objective, likelihood or ranking)", s)
}

// Defaults of the next-item term (OfflineOptions.NextWeight and its
// companions; learn/TRADEOFF.md measures the trade-off).
const (
	// DefaultAverage is OfflineOptions.Average, in passes, and
	// DefaultAverageTolerance its Tolerance, with ObjectiveLikelihood and
	// its next-item term: validating and returning the parameters averaged
	// over about the last quarter pass, with progress at 2·10⁻⁴ of the best
	// check, the defaults without the carry (NextCarry) closed 28–45% of
	// the ranking gap to co-occurrence on the union of the Amazon registry
	// categories (seeds 1–4; 10–33% without the average), kept the
	// likelihood within 1% on all 30 splits of the fifteen categories,
	// and end UK Retail's runs after fewer passes at the same ranking
	// (learn/RANKING.md).
	DefaultAverage          = 0.25
	DefaultAverageTolerance = 2e-4
	// DefaultNextWeight is the next-item term's weight per basket item
	// under ObjectiveLikelihood: light enough that the test log-likelihood
	// stays within 1% of the likelihood alone's on UK Retail, apparel and
	// 3-category registries while a quarter or more of the ranking gap to
	// co-occurrence closes (learn/RANKING.md).
	DefaultNextWeight = 0.04
	// DefaultNextShare is the share of a minibatch's baskets that add the
	// term under ObjectiveLikelihood (OfflineOptions.NextShare), each
	// against DefaultLikelihoodNextNegatives candidates: a quarter of the
	// baskets against 8 candidates ranks UK Retail as an eighth against 32
	// does, at the same cost, and on small catalogues of small baskets,
	// where the candidates are most of a term's cost, keeps the
	// likelihood closer at two thirds of the time (learn/RANKING.md).
	DefaultNextShare = 0.25
	// DefaultNextCarry is OfflineOptions.NextCarry under
	// ObjectiveLikelihood: the baskets of two items or more carry at
	// least half the term's weight. On 11 of the fifteen Amazon registry
	// categories most baskets hold one item, and the term spread over the
	// others at the same weight per basket item as elsewhere ranked
	// little: with the carry the defaults meet their target (a quarter of
	// the ranking gap to co-occurrence, the likelihood within 1%) on 127
	// of 150 splits (seeds 1–10) instead of 117, and on average over the
	// seeds on every category (learn/RANKING.md). Catalogues where half
	// the baskets or more have two items are unchanged. ObjectiveRank,
	// whose weight is stronger, takes none: with a carry of 0.5 it meets
	// its own target on 2 fewer of the 120 splits of seeds 3–10.
	DefaultNextCarry = 0.5
	// DefaultNextMaxCarry is OfflineOptions.NextMaxCarry: on bath with 1%
	// of its baskets left at two items or more (a factor of 49 otherwise),
	// the unbounded carry cost 1.9% of the test log-likelihood and 2.5
	// times the passes, the bounded one 0.1%; with 5%, 0.75–1.2% against
	// 0.3–0.6%. Of the Amazon registry categories only decor (4%) reaches
	// it.
	DefaultNextMaxCarry = 4
	// DefaultLikelihoodNextNegatives is the number of candidates drawn per
	// basket under ObjectiveLikelihood (OfflineOptions.NextNegatives).
	DefaultLikelihoodNextNegatives = 8
	// DefaultRankNextWeight is the next-item term's weight per basket item
	// of ObjectiveRank's plain run (its strong run's is DefaultRankStrong's).
	DefaultRankNextWeight = 0.5
	// DefaultNextNegatives is the number of candidates drawn per basket
	// under ObjectiveRank and by the online learner
	// (OnlineOptions.NextNegatives).
	DefaultNextNegatives = 32
	// DefaultNextBeta is the term's sharpness β: a pair whose log-gains
	// differ by 1/β is scored as σ(1) ≈ 0.73 of a correct order.
	DefaultNextBeta = 20
	// DefaultValNegatives is the number of candidates drawn per validation
	// basket for Result.ValMPR.
	DefaultValNegatives = 128
)

// selector keeps, over the validation checks, the model that Selection
// chooses: the best objective value, the best log-likelihood and, with
// SelectRanking, the best ranking among the checks whose log-likelihood,
// less its margin, reaches floor.
type selector struct {
	sel   Selection
	floor float64 // SelectRanking: the least validation log-likelihood
	tol   float64 // progress: an improvement by more than tol·|best|

	score, ll, rank best
}

// best is the best check by one criterion: its value, parameters and
// validation log-likelihood and ranking.
type best struct {
	value, ll, rank float64
	p               *Params
}

// offer keeps p when value is better than the best's (better), and
// reports whether it is better by more than tol·|best| (progress; the
// first offer is).
func (b *best) offer(value float64, p *Params, ll, rank, tol float64) (better, progress bool) {
	if b.p != nil && !(value > b.value) {
		return false, false
	}
	progress = b.p == nil || value > b.value+tol*math.Abs(b.value)
	*b = best{value: value, ll: ll, rank: rank, p: p.Clone()}
	return true, progress
}

func newSelector(sel Selection, floor, tol float64) *selector {
	return &selector{sel: sel, floor: floor, tol: tol}
}

// observe records a check of p (validation log-likelihood ll, the margin
// by which it must exceed the floor, objective value score, ranking rank,
// NaN when not computed) and reports whether the model the selection
// would choose made progress: it improved by more than the tolerance (it
// is kept when it improves by less).
func (s *selector) observe(p *Params, ll, margin, score, rank float64) bool {
	_, byScore := s.score.offer(score, p, ll, rank, s.tol)
	_, byLL := s.ll.offer(ll, p, ll, rank, s.tol)
	switch s.sel {
	case SelectObjective:
		return byScore
	case SelectLikelihood:
		return byLL
	}
	if ll-margin >= s.floor && !math.IsNaN(rank) {
		if better, progress := s.rank.offer(rank, p, ll, rank, s.tol); better {
			return progress
		}
	}
	// Before any check qualifies, nearing the floor is progress.
	return s.rank.p == nil && byLL
}

// chosen returns the chosen model's parameters, its validation
// log-likelihood and ranking (NaN when not computed) and what chose it.
func (s *selector) chosen() (*Params, float64, float64, Selection) {
	b, by := s.score, SelectObjective
	switch {
	case s.sel == SelectLikelihood:
		b, by = s.ll, SelectLikelihood
	case s.sel == SelectRanking && s.rank.p != nil:
		b, by = s.rank, SelectRanking
	case s.sel == SelectRanking:
		b, by = s.ll, SelectLikelihood
	}
	return b.p, b.ll, b.rank, by
}
