package learn

// Defaults of the learners' options that commands print in their help
// (a zero option selects them). The learning rates (DefaultOfflineLR,
// DefaultOnlineLR, DefaultOnlineLowRankLR, DefaultOnlineSGDLR,
// DefaultOnlineDiagLR) are with the options they belong to.
const (
	// DefaultD is the rank d of OnlineOptions.D.
	DefaultD = 30
	// DefaultOfflineD is the rank d of OfflineOptions.D: above DefaultD,
	// where the offline learner's likelihood leaves room for its default
	// next-item term (learn/RANKING.md).
	DefaultOfflineD = 40
	// DefaultRateScale is OnlineOptions.RateScale and
	// OfflineOptions.RateScale.
	DefaultRateScale = 0.1
	// DefaultOfflineInitShare is the offline learner's InitOptions.Share.
	DefaultOfflineInitShare = 0.5
	// DefaultInitScaleLowRank and DefaultInitScaleDiag times 1/√d are
	// InitOptions.Scale without and with a diagonal.
	DefaultInitScaleLowRank = 0.25
	DefaultInitScaleDiag    = 0.01
	// DefaultTolerance is OfflineOptions.Tolerance: a validation check is
	// progress when it improves on the best by more than 10⁻⁴ of it (0.01
	// nats of a log-likelihood near −100, 0.008 points of an MPR near
	// 80), so that a run ends when its gains have become that small
	// instead of creeping on at decayed learning rates. The default
	// objective with its next-item term takes DefaultAverageTolerance.
	DefaultTolerance = 1e-4
	// DefaultMaxStalls is OfflineOptions.MaxStalls: after seven checks
	// without progress the learning rate is LR/128 with the default
	// LRDecay, and the remaining checks on UK Retail and the Amazon
	// registries gain under 0.02 nats (learn/RANKING.md).
	DefaultMaxStalls = 7
	// DefaultMinEvalEvery is the fewest iterations between the validation
	// checks of OfflineOptions.EvalEvery's default, one pass: on the
	// smallest Amazon registry categories a pass is 2–8 minibatches, and a
	// check at each halved the learning rate on the plateau of the first
	// steps and ended runs there, 0.75 nats a basket below the runs that
	// left it (learn/RANKING.md).
	DefaultMinEvalEvery = 10
	// DefaultRankRetries is OfflineOptions.RankRetries: with the rank
	// objective's plain weight 0.5, two halvings (to 0.125) bring every
	// run on the fifteen Amazon registry categories, seeds 1 and 2, to a
	// check that qualifies (FloorSE; learn/RANKING.md).
	DefaultRankRetries = 2
	// DefaultFloorSE is OfflineOptions.FloorSE: the check SelectRanking
	// returns sits at the likelihood floor, where its test log-likelihood
	// falls below the independent-items model's about as often as not;
	// one standard error of margin on the 300 validation baskets keeps it
	// above on all but 4 of 120 Amazon registry category splits (seeds
	// 3–10; 16 without), for 0.25 MPR points on average, and leaves UK
	// Retail's at d = 100 ranking as it was (learn/RANKING.md).
	DefaultFloorSE = 1
)
