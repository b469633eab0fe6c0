package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ndpp-go/ndpp/eval"
	"github.com/ndpp-go/ndpp/internal/memlimit"
	"github.com/ndpp-go/ndpp/internal/outfile"
	"github.com/ndpp-go/ndpp/learn"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
	"github.com/ndpp-go/ndpp/ndpp/npz"
)

func init() {
	register(&command{
		name:    "learn",
		globals: gBackend | gThreads | gJSON | gQuiet | gMaxMem,
		summary: "learn an NDPP from baskets (one-pass online or offline Adam) and evaluate it",
		run:     runLearn,

		interruptible: true,
	})
}

// metricsJSON is the output of `learn --json` and `eval --json`; the paper
// protocol is in the unsuffixed fields.
type metricsJSON struct {
	Mode string `json:"mode"`
	D    int    `json:"d"`
	// TestLL is the test log-likelihood, the mean of log P(S) =
	// log det L_S − log det(L + I) over the test baskets (the figure of
	// score, /v1/score and Model.LogLikelihood); null when a test basket
	// has probability 0 (beyond the model's rank).
	TestLL *float64 `json:"test_ll"`
	// TestLLEps is the learners' objective on the test baskets: the mean of
	// log det(L_S + εI) − log det(L + I), ε = eps.
	TestLLEps *float64 `json:"test_ll_eps"`
	MPR       *float64 `json:"mpr"`
	AUC       *float64 `json:"auc"`
	Prec5     *float64 `json:"prec5"`
	Prec10    *float64 `json:"prec10"`
	MPRMicro  *float64 `json:"mpr_micro"`
	AUCMicro  *float64 `json:"auc_micro"`
	// AUCPaired is the share of test baskets scoring above their own
	// random basket of the same size (the AUCs above also compare sizes).
	AUCPaired *float64 `json:"auc_paired"`
	// Standard errors over the test baskets (null when a figure rests on
	// fewer than two baskets or is not finite).
	TestLLSE    *float64 `json:"test_ll_se"`
	TestLLEpsSE *float64 `json:"test_ll_eps_se"`
	MPRSE       *float64 `json:"mpr_se"`
	MPRMicroSE  *float64 `json:"mpr_micro_se"`
	AUCPairedSE *float64 `json:"auc_paired_se"`
	Prec5Micro  *float64 `json:"prec5_micro"`
	Prec10Micro *float64 `json:"prec10_micro"`
	Seconds     float64  `json:"seconds"`
	Passes      float64  `json:"passes"`
	Baskets     int      `json:"baskets"`
	// PeakRSSBytes (learn only) is the process's peak resident set size
	// in bytes when training ends, reading the data included and the
	// evaluation not (getrusage's ru_maxrss; absent where the platform does
	// not report it, and in eval). The online pass also counts the
	// co-occurrence baseline as it streams (up to
	// eval.DefaultCooccurPairs pairs), so its figure includes the counts
	// unless --cooccurrence=false; the offline learner's does not (its
	// baselines are computed after training).
	PeakRSSBytes *int64 `json:"peak_rss_bytes,omitempty"`
	// Eps is ε of test_ll_eps and of the AUC's basket scores
	// log det(L_S + εI).
	Eps float64 `json:"eps"`
	// The offline learner's objective and next-item weight (learn
	// --objective, --next-weight), and the returned model's validation
	// figures: the objective's log-likelihood term (ε form) and an estimate
	// of its micro MPR (learn.Result.ValMPR), with what chose it among the
	// validation checks ("likelihood", "objective" or "ranking"; learn
	// --select). The online learner
	// reports val_ll_eps only.
	Objective  string   `json:"objective,omitempty"`
	NextWeight *float64 `json:"next_weight,omitempty"`
	ValLLEps   *float64 `json:"val_ll_eps,omitempty"`
	ValMPR     *float64 `json:"val_mpr,omitempty"`
	SelectedBy string   `json:"selected_by,omitempty"`
	// RankStrong (--objective rank) reports whether the returned model is
	// of the strong first run (learn.Result.RankStrong).
	RankStrong *bool `json:"rank_strong,omitempty"`
	// ItemOrder is how the paper protocol orders a basket's items to hold
	// out the last: "ids" (every token is an integer id) or "first
	// appearance" (of the tokens, in the vocabulary's order). The reference
	// code sorts by its loader's integer ids, so the paper figures of a
	// file of other tokens compare with published ones only when the file
	// is written with those ids (testdata/README.md: UK Online Retail).
	ItemOrder string `json:"item_order"`
	// BeyondRank counts the test baskets with more items than the model's
	// rank (2d, or d when B = V, without a diagonal): probability 0 under
	// the model (test_ll is then null), finite in test_ll_eps only through ε.
	BeyondRank int `json:"test_baskets_beyond_rank"`
	// The baselines on the same split (absent when there is no training
	// data to count items in): ranking by training count, and the
	// independent-items model's test log-likelihood (exact and ε forms, as
	// test_ll and test_ll_eps).
	BaselinePopularityMPR       *float64 `json:"baseline_popularity_mpr,omitempty"`
	BaselinePopularityMPRMicro  *float64 `json:"baseline_popularity_mpr_micro,omitempty"`
	BaselinePopularityAUC       *float64 `json:"baseline_popularity_auc,omitempty"`
	BaselinePopularityAUCPaired *float64 `json:"baseline_popularity_auc_paired,omitempty"`
	BaselinePopularityPrec5     *float64 `json:"baseline_popularity_prec5,omitempty"`
	BaselinePopularityPrec10    *float64 `json:"baseline_popularity_prec10,omitempty"`
	BaselineIndependentLL       *float64 `json:"baseline_independent_ll,omitempty"`
	BaselineIndependentLLEps    *float64 `json:"baseline_independent_ll_eps,omitempty"`
	// The co-occurrence baseline on the same split, ranked by the same
	// code (eval.Cooccurrence.Evaluate): candidate j given the rest Y of
	// the basket scores Σ_{y∈Y} c(j, y)/√(c(j)·c(y)), c counting training
	// baskets, ties (and candidates never seen with Y) ordered by c(j). It
	// scores candidates, not baskets, so it has no log-likelihood or AUC.
	BaselineCooccurrenceMPR      *float64 `json:"baseline_cooccurrence_mpr,omitempty"`
	BaselineCooccurrenceMPRMicro *float64 `json:"baseline_cooccurrence_mpr_micro,omitempty"`
	BaselineCooccurrencePrec5    *float64 `json:"baseline_cooccurrence_prec5,omitempty"`
	BaselineCooccurrencePrec10   *float64 `json:"baseline_cooccurrence_prec10,omitempty"`
	// The latent class baseline on the same split (offline learn and eval
	// with training data; eval.LatentClassBaseline): a mixture of
	// eval.DefaultLatentClasses independent-items models fitted by EM,
	// with its exact test log-likelihood and its ranking by P(Y+j)/P(Y).
	BaselineLatentClassLL       *float64 `json:"baseline_latent_class_ll,omitempty"`
	BaselineLatentClassMPR      *float64 `json:"baseline_latent_class_mpr,omitempty"`
	BaselineLatentClassMPRMicro *float64 `json:"baseline_latent_class_mpr_micro,omitempty"`
	BaselineLatentClassPrec5    *float64 `json:"baseline_latent_class_prec5,omitempty"`
	BaselineLatentClassPrec10   *float64 `json:"baseline_latent_class_prec10,omitempty"`
	// Paired differences on the same test baskets (eval.Paired): the
	// model's figure minus the baseline's, the mean of the per-basket
	// differences, with its standard error. The two figures err together
	// basket by basket, so this standard error is usually well below
	// the two figures' own combined.
	PairedIndependentLL     *float64 `json:"paired_independent_ll,omitempty"`
	PairedIndependentLLSE   *float64 `json:"paired_independent_ll_se,omitempty"`
	PairedCooccurrenceMPR   *float64 `json:"paired_cooccurrence_mpr,omitempty"`
	PairedCooccurrenceMPRSE *float64 `json:"paired_cooccurrence_mpr_se,omitempty"`
	// Against (learn --against) is the file of a model evaluated on the
	// same test baskets: its test log-likelihood and paper MPR, and the
	// learned model's paired differences from it (the learned model's
	// figure minus its), with their standard errors.
	Against               string   `json:"against,omitempty"`
	AgainstTestLL         *float64 `json:"against_test_ll,omitempty"`
	AgainstMPR            *float64 `json:"against_mpr,omitempty"`
	PairedAgainstTestLL   *float64 `json:"paired_against_test_ll,omitempty"`
	PairedAgainstTestLLSE *float64 `json:"paired_against_test_ll_se,omitempty"`
	PairedAgainstMPR      *float64 `json:"paired_against_mpr,omitempty"`
	PairedAgainstMPRSE    *float64 `json:"paired_against_mpr_se,omitempty"`
}

// setAgainst sets the Against fields: the figures of the model of file
// path (its evaluation b) and the paired differences of a from them.
func (r *metricsJSON) setAgainst(path string, a, b *eval.Metrics) error {
	d, err := eval.Paired(a, b)
	if err != nil {
		return err
	}
	r.Against, r.AgainstTestLL, r.AgainstMPR = path, num(b.TestLL), num(b.MPR)
	r.PairedAgainstTestLL, r.PairedAgainstTestLLSE = num(d.TestLL), num(d.TestLLSE)
	r.PairedAgainstMPR, r.PairedAgainstMPRSE = num(d.MPR), num(d.MPRSE)
	return nil
}

// num maps non-finite values (a zero-determinant basket makes LL −Inf) to
// JSON null.
func num(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// toMetricsJSON puts a model's metrics and the baselines' evaluated beside
// them (cmp; those that are nil are left out) into the output record.
func toMetricsJSON(mode string, d int, m *eval.Metrics, cmp *eval.Comparison, seconds, passes float64, baskets int) metricsJSON {
	base, cooc, lc := cmp.Independent, cmp.Cooccurrence, cmp.LatentClass
	r := metricsJSON{Mode: mode, D: d, TestLL: num(m.TestLL), TestLLEps: num(m.TestLLEps), MPR: num(m.MPR), AUC: num(m.AUC),
		Prec5: num(m.Prec5), Prec10: num(m.Prec10), MPRMicro: num(m.MPRMicro), AUCMicro: num(m.AUCMicro), AUCPaired: num(m.AUCPaired),
		TestLLSE: num(m.TestLLSE), TestLLEpsSE: num(m.TestLLEpsSE), MPRSE: num(m.MPRSE), MPRMicroSE: num(m.MPRMicroSE), AUCPairedSE: num(m.AUCPairedSE),
		Prec5Micro: num(m.Prec5Micro), Prec10Micro: num(m.Prec10Micro), Seconds: seconds, Passes: passes, Baskets: baskets,
		Eps: m.Eps, BeyondRank: m.BeyondRank}
	if base != nil {
		r.BaselinePopularityMPR, r.BaselinePopularityMPRMicro = num(base.MPR), num(base.MPRMicro)
		r.BaselinePopularityAUC, r.BaselinePopularityPrec5, r.BaselinePopularityPrec10 = num(base.AUC), num(base.Prec5), num(base.Prec10)
		r.BaselinePopularityAUCPaired = num(base.AUCPaired)
		r.BaselineIndependentLL, r.BaselineIndependentLLEps = num(base.TestLL), num(base.TestLLEps)
		if d, err := eval.Paired(m, base); err == nil {
			r.PairedIndependentLL, r.PairedIndependentLLSE = num(d.TestLL), num(d.TestLLSE)
		}
	}
	if lc != nil {
		r.BaselineLatentClassLL, r.BaselineLatentClassMPR, r.BaselineLatentClassMPRMicro = num(lc.TestLL), num(lc.MPR), num(lc.MPRMicro)
		r.BaselineLatentClassPrec5, r.BaselineLatentClassPrec10 = num(lc.Prec5), num(lc.Prec10)
	}
	if cooc != nil {
		r.BaselineCooccurrenceMPR, r.BaselineCooccurrenceMPRMicro = num(cooc.MPR), num(cooc.MPRMicro)
		r.BaselineCooccurrencePrec5, r.BaselineCooccurrencePrec10 = num(cooc.Prec5), num(cooc.Prec10)
		if d, err := eval.Paired(m, cooc); err == nil {
			r.PairedCooccurrenceMPR, r.PairedCooccurrenceMPRSE = num(d.MPR), num(d.MPRSE)
		}
	}
	return r
}

func writeMetrics(e *env, g *globals, r metricsJSON, extra [][2]string) error {
	if g.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	f := func(p *float64, format string) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf(format, *p)
	}
	// pm is f with the standard error se, when known, after a ±.
	pm := func(p, se *float64, format string) string {
		if p == nil || se == nil {
			return f(p, format)
		}
		return fmt.Sprintf(format+" ± "+format, *p, *se)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "mode\t%s\n", r.Mode)
	fmt.Fprintf(tw, "d\t%d\n", r.D)
	for _, kv := range extra {
		fmt.Fprintf(tw, "%s\t%s\n", kv[0], kv[1])
	}
	base := r.BaselineIndependentLL != nil
	fmt.Fprintf(tw, "test log-likelihood\t%s", pm(r.TestLL, r.TestLLSE, "%.4f"))
	if base {
		fmt.Fprintf(tw, "\t\tindependent items %s", f(r.BaselineIndependentLL, "%.4f"))
	}
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "test log-likelihood, ε = %g (objective)\t%s", r.Eps, pm(r.TestLLEps, r.TestLLEpsSE, "%.4f"))
	if base {
		fmt.Fprintf(tw, "\t\tindependent items %s", f(r.BaselineIndependentLLEps, "%.4f"))
	}
	fmt.Fprintln(tw)
	if base {
		// The co-occurrence baseline has no AUC: "-" in its column.
		fmt.Fprintf(tw, "\tpaper\tmicro\tpopularity (paper)\tco-occurrence (paper)\n")
		fmt.Fprintf(tw, "MPR\t%s\t%s\t%s\t%s\n", pm(r.MPR, r.MPRSE, "%.2f"), pm(r.MPRMicro, r.MPRMicroSE, "%.2f"), f(r.BaselinePopularityMPR, "%.2f"), f(r.BaselineCooccurrenceMPR, "%.2f"))
		fmt.Fprintf(tw, "AUC\t%s\t%s\t%s\t-\n", f(r.AUC, "%.4f"), f(r.AUCMicro, "%.4f"), f(r.BaselinePopularityAUC, "%.4f"))
		fmt.Fprintf(tw, "AUC, same-size pairs\t%s\t\t%s\t-\n", pm(r.AUCPaired, r.AUCPairedSE, "%.4f"), f(r.BaselinePopularityAUCPaired, "%.4f"))
		fmt.Fprintf(tw, "Prec@5\t%s\t%s\t%s\t%s\n", f(r.Prec5, "%.2f"), f(r.Prec5Micro, "%.2f"), f(r.BaselinePopularityPrec5, "%.2f"), f(r.BaselineCooccurrencePrec5, "%.2f"))
		fmt.Fprintf(tw, "Prec@10\t%s\t%s\t%s\t%s\n", f(r.Prec10, "%.2f"), f(r.Prec10Micro, "%.2f"), f(r.BaselinePopularityPrec10, "%.2f"), f(r.BaselineCooccurrencePrec10, "%.2f"))
	} else {
		fmt.Fprintf(tw, "\tpaper\tmicro\n")
		fmt.Fprintf(tw, "MPR\t%s\t%s\n", pm(r.MPR, r.MPRSE, "%.2f"), pm(r.MPRMicro, r.MPRMicroSE, "%.2f"))
		fmt.Fprintf(tw, "AUC\t%s\t%s\n", f(r.AUC, "%.4f"), f(r.AUCMicro, "%.4f"))
		fmt.Fprintf(tw, "AUC, same-size pairs\t%s\n", pm(r.AUCPaired, r.AUCPairedSE, "%.4f"))
		fmt.Fprintf(tw, "Prec@5\t%s\t%s\n", f(r.Prec5, "%.2f"), f(r.Prec5Micro, "%.2f"))
		fmt.Fprintf(tw, "Prec@10\t%s\t%s\n", f(r.Prec10, "%.2f"), f(r.Prec10Micro, "%.2f"))
	}
	// sd is a paired difference ± its standard error.
	sd := func(p, se *float64, format string) string {
		if p == nil || se == nil {
			return f(p, format)
		}
		return fmt.Sprintf("%+"+format[1:]+" ± "+format, *p, *se)
	}
	if r.PairedIndependentLL != nil {
		fmt.Fprintf(tw, "test log-likelihood − independent items (paired)\t%s\n", sd(r.PairedIndependentLL, r.PairedIndependentLLSE, "%.4f"))
	}
	if r.PairedCooccurrenceMPR != nil {
		fmt.Fprintf(tw, "MPR − co-occurrence (paired)\t%s\n", sd(r.PairedCooccurrenceMPR, r.PairedCooccurrenceMPRSE, "%.2f"))
	}
	if r.Against != "" {
		fmt.Fprintf(tw, "against %s: test log-likelihood, MPR\t%s, %s\n", r.Against, f(r.AgainstTestLL, "%.4f"), f(r.AgainstMPR, "%.2f"))
		fmt.Fprintf(tw, "test log-likelihood − against (paired)\t%s\n", sd(r.PairedAgainstTestLL, r.PairedAgainstTestLLSE, "%.4f"))
		fmt.Fprintf(tw, "MPR − against (paired)\t%s\n", sd(r.PairedAgainstMPR, r.PairedAgainstMPRSE, "%.2f"))
	}
	if r.BeyondRank > 0 {
		fmt.Fprintf(tw, "test baskets beyond the rank\t%d\n", r.BeyondRank)
	}
	fmt.Fprintf(tw, "item order (paper)\t%s\n", r.ItemOrder)
	fmt.Fprintf(tw, "seconds\t%.3f\n", r.Seconds)
	fmt.Fprintf(tw, "passes\t%.2f\n", r.Passes)
	fmt.Fprintf(tw, "baskets\t%d\n", r.Baskets)
	if r.PeakRSSBytes != nil {
		fmt.Fprintf(tw, "peak resident memory (training)\t%.1f MiB\n", float64(*r.PeakRSSBytes)/(1<<20))
	}
	return tw.Flush()
}

// basketFlags are the data-file flags shared by learn and eval.
type basketFlags struct {
	format    string
	basketCol string
	itemCol   string
	comma     string
	maxSize   int
	tokens    string
	header    bool
}

func (b *basketFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.format, "format", "lines", "basket file format: lines (one basket per line) or csv (one row per item, with --basket-col and --item-col)")
	fs.StringVar(&b.basketCol, "basket-col", "", "csv: header of the basket id column")
	fs.StringVar(&b.itemCol, "item-col", "", "csv: header of the item column")
	fs.StringVar(&b.comma, "comma", ",", "csv: field separator (one character)")
	fs.IntVar(&b.maxSize, "max-size", 0, "skip baskets with more items (0 = no limit)")
	fs.BoolVar(&b.header, "header", false, "lines format: skip the first line (a header)")
	b.tokens = "any"
}

// registerTokens adds --tokens, the rule of a growing vocabulary (learn).
func (b *basketFlags) registerTokens(fs *flag.FlagSet) {
	fs.StringVar(&b.tokens, "tokens", "auto", "which tokens are items: int (non-negative integer ids only), any (every token, kept as strings), auto (int when the first basket's tokens are all integers; a first line of words before integer lines is reported as a header). With int, or auto over integer ids, the model records integer ids (served as JSON numbers); otherwise a vocabulary of string tokens")
}

// tokenHint adds to an error of the token rule the flag that changes it.
func tokenHint(err error) error {
	switch {
	case errors.Is(err, baskets.ErrHeader):
		return fmt.Errorf("%w (--header skips it)", err)
	case errors.Is(err, baskets.ErrNotInteger):
		return fmt.Errorf("%w (--tokens any takes every token as an item)", err)
	}
	return err
}

// inFile prefixes err with the basket file's path, unless its message
// already names the file (the readers' errors give path:line).
func inFile(path string, err error) error {
	if strings.Contains(err.Error(), path+":") {
		return err
	}
	return fmt.Errorf("%s: %w", path, err)
}

// tokenRule returns the baskets.Tokens of --tokens.
func (b *basketFlags) tokenRule() (baskets.Tokens, bool) {
	for _, t := range []baskets.Tokens{baskets.AnyTokens, baskets.IntTokens, baskets.AutoTokens} {
		if t.String() == b.tokens {
			return t, true
		}
	}
	return 0, false
}

func (b *basketFlags) check() error {
	switch b.format {
	case "lines":
		if b.basketCol != "" || b.itemCol != "" {
			return usagef("--basket-col and --item-col need --format csv")
		}
	case "csv":
		if b.basketCol == "" || b.itemCol == "" {
			return usagef("--format csv needs --basket-col and --item-col")
		}
		if len([]rune(b.comma)) != 1 {
			return usagef("--comma must be one character")
		}
	default:
		return usagef("--format must be lines or csv, not %q", b.format)
	}
	if b.maxSize < 0 {
		return usagef("--max-size must be ≥ 0")
	}
	if _, ok := b.tokenRule(); !ok {
		return usagef("--tokens must be int, any or auto, not %q", b.tokens)
	}
	if b.header && b.format != "lines" {
		return usagef("--header applies to --format lines (csv files always have a header)")
	}
	return nil
}

// read loads a basket file (path "-" reads stdin) whose tokens are mapped
// by voc (grown when grow is set); with voc nil, tokens are 0-based rows
// below n.
func (b *basketFlags) read(path string, stdin io.Reader, voc *ndpp.Vocab, grow bool, n int) ([][]int, error) {
	r, err := b.open(path, stdin, voc, grow, n)
	if err != nil {
		return nil, err
	}
	return drain(r)
}

// drain reads every basket of r and closes it.
func drain(r *baskets.Reader) ([][]int, error) {
	defer r.Close()
	var out [][]int
	for {
		s, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
}

// open streams a basket file in the chosen format (path "-" reads stdin).
func (b *basketFlags) open(path string, stdin io.Reader, voc *ndpp.Vocab, grow bool, n int) (*baskets.Reader, error) {
	rule, _ := b.tokenRule()
	if b.format == "csv" {
		opt := baskets.CSVOptions{BasketColumn: b.basketCol, ItemColumn: b.itemCol,
			Vocab: voc, Grow: grow, N: n, MaxSize: b.maxSize, Comma: []rune(b.comma)[0], Tokens: rule}
		if path == "-" {
			return baskets.NewCSVReader(stdin, opt)
		}
		return baskets.OpenCSV(path, opt)
	}
	opt := baskets.LineOptions{Vocab: voc, Grow: grow, N: n, MaxSize: b.maxSize, Tokens: rule, Header: b.header}
	if path == "-" {
		return baskets.NewLineReader(stdin, opt), nil
	}
	return baskets.Open(path, opt)
}

// itemNames returns the option that records in a learned model how the
// data names its items (voc, grown while reading): integer ids (WithIDs)
// when --tokens is int or auto and every token is an integer id written
// canonically, so that the model's items stay integers in every tool; else
// the vocabulary of string tokens (--tokens any, or other tokens).
func (b *basketFlags) itemNames(voc *ndpp.Vocab) ndpp.Option {
	if rule, _ := b.tokenRule(); rule != baskets.AnyTokens {
		if ids, ok := voc.IDs(); ok {
			return ndpp.WithIDs(ids)
		}
	}
	return ndpp.WithVocab(voc)
}

// itemOrder names the order eval.Keys(voc) = keys gives the rows of voc
// (metricsJSON.ItemOrder): without a vocabulary the tokens are the rows.
func itemOrder(voc *ndpp.Vocab, keys []int64) string {
	if voc != nil && keys == nil {
		return "first appearance"
	}
	return "ids"
}

type learnFlags struct {
	g          globals
	data       string
	bf         basketFlags
	mode       string
	d          int
	seed       uint64
	out        string
	shared     bool
	lr         float64
	batch      int
	epochs     int
	patience   int
	stalls     int
	tolerance  float64
	retries    int
	floorSE    float64
	nextCarry  float64
	nextMaxC   float64
	evalEvery  int
	alpha      float64
	beta       float64
	average    float64
	regPower   float64
	earlyDecay int
	strong     bool
	optimizer  string
	normalizer string
	fixC       bool
	nVal       int
	nTest      int
	timeLimit  time.Duration
	trace      string
	checkpoint string
	resume     string
	initScale  float64
	initShare  float64
	diag       bool
	diagLR     float64
	rateScale  float64
	factorEv   int
	lag        int
	cEvery     int
	objective  string
	sel        string
	nextWeight float64
	moments    bool
	start      string
	against    string
	nextRandom bool
	nextShare  float64
	nextNegs   int
	cooc       bool
	latent     bool
	set        map[string]bool // the flags given on the command line
}

func runLearn(e *env, args []string) error {
	var f learnFlags
	fs := newFlagSet(e, "learn", "learn an NDPP from a basket file (300 validation / 2000 test baskets held out) and evaluate it",
		"ndpp-bench learn --data testdata/1_100_100_100_apparel_regs.csv --mode offline --d 30 --seed 1 --out apparel.npz", &f.g)
	fs.StringVar(&f.data, "data", "", "basket file, or - for standard input (required)")
	f.bf.register(fs)
	f.bf.registerTokens(fs)
	fs.StringVar(&f.mode, "mode", "offline", "online (one pass, constant memory) or offline (minibatch Adam with validation-based stopping)")
	fs.IntVar(&f.d, "d", 0, fmt.Sprintf("rank parameter d (default %d offline, %d online)", learn.DefaultOfflineD, learn.DefaultD))
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the split, the initialisation and the minibatch order")
	fs.StringVar(&f.out, "out", "", "write the learned model to this .npz file, or - for standard output (the report then goes to standard error)")
	fs.BoolVar(&f.shared, "shared", false, "B = V (the reference code's setting)")
	fs.BoolVar(&f.diag, "diag", true, "learn the kernel with a diagonal, L = D + VᵀV + BᵀCB (false: Gartrell et al.'s L = VᵀV + BᵀCB)")
	fs.Float64Var(&f.lr, "lr", 0, fmt.Sprintf("learning rate (default: offline %g; online adam %g with --diag, %g without; sgd %g)",
		learn.DefaultOfflineLR, learn.DefaultOnlineLR, learn.DefaultOnlineLowRankLR, learn.DefaultOnlineSGDLR))
	fs.Float64Var(&f.diagLR, "diag-lr", 0, fmt.Sprintf("with --diag: learning rate of the diagonal (default: online %g, offline --lr)", learn.DefaultOnlineDiagLR))
	fs.Float64Var(&f.rateScale, "rate-scale", 0, "with --diag and adam: scale item i's embedding steps by min(1, √(δᵢ/rate-scale)) (default 0.1; negative: off)")
	fs.IntVar(&f.batch, "batch", 0, "offline: minibatch size (default max(800, items/4))")
	fs.IntVar(&f.epochs, "epochs", 0, "offline: maximum passes over the training baskets (default 100)")
	fs.IntVar(&f.evalEvery, "eval-every", 0, "offline: minibatch steps between validation checks (default: one pass, and at least "+strconv.Itoa(learn.DefaultMinEvalEvery)+"; negative: one pass)")
	fs.IntVar(&f.patience, "patience", 0, "offline: stop after this many validation checks without progress (default 6)")
	fs.IntVar(&f.stalls, "stalls", 0, "offline: stop after this many validation checks without progress in all, consecutive or not (default "+strconv.Itoa(learn.DefaultMaxStalls)+"; negative: no bound)")
	fs.Float64Var(&f.floorSE, "floor-se", 0, "offline, --select ranking: a validation check qualifies when its log-likelihood exceeds the independent-items model's by this many standard errors of their mean per-basket difference (default "+strconv.FormatFloat(learn.DefaultFloorSE, 'g', -1, 64)+"; 0: at least as likely)")
	fs.IntVar(&f.retries, "rank-retries", 0, "offline, --objective rank: train again from the start at half the weight while no validation check qualifies (--floor-se), at most this many times (default "+strconv.Itoa(learn.DefaultRankRetries)+"; negative: none)")
	fs.Float64Var(&f.tolerance, "tolerance", 0, "offline: the least relative improvement on the best validation check that counts as progress (default "+strconv.FormatFloat(learn.DefaultAverageTolerance, 'g', -1, 64)+" with the default objective's next-item term, else "+strconv.FormatFloat(learn.DefaultTolerance, 'g', -1, 64)+"; negative: any improvement)")
	fs.Float64Var(&f.alpha, "alpha", 0, "regulariser weight α of Σ‖vᵢ‖²/μᵢᵖ (μᵢ: item i's training occurrences)")
	fs.Float64Var(&f.beta, "beta", 0, "regulariser weight β of Σ‖bᵢ‖²/μᵢᵖ")
	fs.Float64Var(&f.regPower, "reg-power", 0, "offline: the regulariser's power p of the occurrences μᵢ (default 1; 2 holds back rare items' embeddings)")
	fs.BoolVar(&f.strong, "rank-strong", true, "offline, --objective rank with no --next-weight, --alpha, --beta, --early-decay or --average: train first with the strong setting (next-item weight "+strconv.FormatFloat(learn.DefaultRankStrong().NextWeight, 'g', -1, 64)+", --alpha and --beta "+strconv.FormatFloat(learn.DefaultRankStrong().Alpha, 'g', -1, 64)+", --early-decay "+strconv.Itoa(learn.DefaultRankStrong().EarlyDecay)+", --average "+strconv.FormatFloat(learn.DefaultRankStrong().Average, 'g', -1, 64)+"), and with the plain one only when no validation check of it qualifies (--floor-se) (false: the plain one alone)")
	fs.IntVar(&f.earlyDecay, "early-decay", 0, "offline: halve the learning rate after each of the first this many validation checks as well, progress or not (0: only after checks without progress)")
	fs.Float64Var(&f.average, "average", 0, "offline: validate and return the parameters averaged over the steps of about this many passes (an exponential moving average; default "+strconv.FormatFloat(learn.DefaultAverage, 'g', -1, 64)+" with the default objective's next-item term, else none; 0: none, each check's parameters)")
	fs.StringVar(&f.optimizer, "optimizer", "adam", "online: adam or sgd")
	fs.StringVar(&f.normalizer, "normalizer", "exact", "online: exact (log det(I+L) via the 2d×2d Gram matrix) or basket (the paper's log det(I+L_S))")
	fs.BoolVar(&f.fixC, "fix-c", false, "keep C at its initial value")
	fs.IntVar(&f.nVal, "val", 300, "validation baskets held out")
	fs.IntVar(&f.nTest, "test", 2000, "test baskets held out")
	fs.DurationVar(&f.timeLimit, "time-limit", 0, "offline: stop training after this long (0 = no limit)")
	fs.StringVar(&f.trace, "trace", "", "write the learning curve to this CSV file (mode,seconds,baskets,nll_eps: the negative of the learners' objective, the validation log-likelihood with ε = 1e-5, over training time), or - for standard output (the report then goes to standard error)")
	fs.StringVar(&f.checkpoint, "checkpoint", "", "online: save the learner state to this file (atomically, every 10000 baskets and at the end)")
	fs.StringVar(&f.resume, "resume", "", "online: resume from this checkpoint, or - for standard input, skipping the baskets it has seen, which must be those it was trained on (the checkpoint records their fingerprint); the checkpoint's learning options and seed apply, and a flag that sets one to another value is refused")
	fs.Float64Var(&f.initScale, "init-scale", 0, "standard deviation of the initial entries of V and B (default 0.25/√d; with --diag 0.01/√d)")
	fs.Float64Var(&f.initShare, "init-share", 0, "with --diag: initial E‖vᵢ‖² as a share of the item's initial δᵢ (default: offline 0.5, online 0.01; negative: --init-scale as drawn)")
	fs.IntVar(&f.factorEv, "factor-every", 0, "online, exact normaliser: refactor every this many baskets (on a second goroutine); 1 = synchronously at every basket, the exact gradient (default 25)")
	fs.IntVar(&f.lag, "lag", 0, "online, exact normaliser: a refactorisation takes effect this many baskets after its snapshot, at most --factor-every (default min(factor-every, 70))")
	fs.StringVar(&f.objective, "objective", "likelihood", "offline: likelihood (maximise the log-likelihood, return the best validation value) or rank (add the next-item term, return the model that ranks validation baskets best among those more likely than the independent-items model (--floor-se); first with the strong setting (--rank-strong), then, while no check is, with weight "+strconv.FormatFloat(learn.DefaultRankNextWeight, 'g', -1, 64)+" and again at half the weight: --rank-retries)")
	fs.BoolVar(&f.cooc, "cooccurrence", true, "evaluate the co-occurrence baseline (false: none; the online pass then keeps no pair counts, so its time and peak memory are the learner's alone)")
	fs.BoolVar(&f.latent, "latent-class", true, fmt.Sprintf("offline: evaluate the latent class baseline (a mixture of %d independent-items models fitted by EM; false: none)", eval.DefaultLatentClasses))
	fs.StringVar(&f.sel, "select", "", "offline: which validation check to return, whose progress also ends the run: likelihood (the best validation log-likelihood; the default with --objective likelihood), objective (the best validation value of the training objective per basket, the next-item term weighted as training weighs it) or ranking (the best validation ranking among the checks more likely than the independent-items model by --floor-se standard errors; the default with --objective rank)")
	fs.StringVar(&f.start, "start", "", "offline: start training from this model (.npz, learned on the same file: the same items in the same order, the same --d and kernel) instead of the initialisation, e.g. to train a likelihood model further with --objective rank")
	fs.StringVar(&f.against, "against", "", "a model (.npz) learned on the same file (the same items in the same order) to evaluate on the same test baskets beside the learned one: the report adds its figures and the learned model's paired differences from it (per-basket differences, whose standard errors are well below the two models' own combined), e.g. to tell whether an option's gain is beyond the test baskets' noise")
	fs.BoolVar(&f.moments, "init-moments", false, "offline: start B and C at the fit of their squared couplings to the training baskets' co-occurrence cosines (learn.FitMoments), scaled to the best validation objective")
	fs.BoolVar(&f.nextRandom, "next-random", false, "offline, with a next-item term: hold out an item of each training basket drawn at random instead of its last in the paper protocol's order (the order of item_order, whose last item the test baskets hold out)")
	fs.IntVar(&f.nextNegs, "next-negatives", 0, "with a next-item term: the items drawn per basket that its held-out item is ranked against (default: offline "+strconv.Itoa(learn.DefaultLikelihoodNextNegatives)+" with --objective likelihood, "+strconv.Itoa(learn.DefaultNextNegatives)+" with rank; online "+strconv.Itoa(learn.DefaultNextNegatives)+"; more is closer to the whole catalogue and costs more)")
	fs.Float64Var(&f.nextCarry, "next-carry", 0, "offline, with a next-item term: the least share of its weight that the training baskets of two items or more carry when they are fewer, each then weighted more (default "+strconv.FormatFloat(learn.DefaultNextCarry, 'g', -1, 64)+" with --objective likelihood, none with rank; 0: none, the same weight per basket item whatever their share)")
	fs.Float64Var(&f.nextMaxC, "next-max-carry", 0, "offline, with --next-carry: the largest factor by which the carry weighs each basket of two items or more (default "+strconv.FormatFloat(learn.DefaultNextMaxCarry, 'g', -1, 64)+"; ≥ 1, +Inf: no bound)")
	fs.Float64Var(&f.nextShare, "next-share", 0, "offline, with a next-item term: the share of each minibatch's baskets that add it, drawn at every step and weighted by its inverse so that the expected gradient is the same (default "+strconv.FormatFloat(learn.DefaultNextShare, 'g', -1, 64)+" with --objective likelihood, 1 with rank)")
	fs.Float64Var(&f.nextWeight, "next-weight", 0, "weight per basket item of the next-item term, which ranks the last item of each training basket in the paper protocol's order by its conditional gain against sampled items, the order the paper MPR scores (default: offline "+strconv.FormatFloat(learn.DefaultNextWeight, 'g', -1, 64)+" with --objective likelihood, "+strconv.FormatFloat(learn.DefaultRankNextWeight, 'g', -1, 64)+" with rank; online none, and 0.02 ranks (learn/RANKING.md); 0: none, the likelihood alone)")
	fs.IntVar(&f.cEvery, "c-every", 0, "online: step C every this many baskets (default 32 for adam, 16 for sgd)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	if !f.set["d"] {
		f.d = learn.DefaultOfflineD
		if f.mode == "online" {
			f.d = learn.DefaultD
		}
	}
	if err := f.g.apply(); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	// --checkpoint may be the --resume file (the run goes on saving where
	// it resumed from); every other output is distinct from every input.
	data, resume := stdFile("--data", f.data), stdFile("--resume", f.resume)
	out, trace := stdFile("--out", f.out), stdFile("--trace", f.trace)
	checkpoint := outfile.File{Flag: "--checkpoint", Path: f.checkpoint, Why: whyCheckpoint, Regular: true}
	start, againstFile := modelFile("--start", f.start), modelFile("--against", f.against)
	if err := checkFiles([]outfile.File{data, resume, start, againstFile}, []outfile.File{out, trace}); err != nil {
		return err
	}
	if err := checkFiles([]outfile.File{data}, []outfile.File{out, trace, checkpoint}); err != nil {
		return err
	}
	// The d-sized state is checked before the data is read, the item
	// vectors as soon as the number of items is known (offline).
	if err := f.checkMemory(0); err != nil {
		return err
	}
	voc, err := ndpp.NewVocab(nil)
	if err != nil {
		return err
	}
	// The --against model is read before training, so that a bad file
	// fails at once; its items are checked when the vocabulary is known.
	var against *ndpp.Model
	if f.against != "" {
		if against, err = loadModel(f.against, f.g.budget); err != nil {
			return fmt.Errorf("--against: %w", err)
		}
	}
	// Both modes hold out the same validation and test baskets (seeded
	// reservoir sampling as the file is read, baskets.HoldOut); the online
	// learner streams the rest, so its memory does not grow with the file.
	var res *learn.Result
	var train, val, test [][]int
	var model, baseModel *ndpp.Model
	var coCounts *eval.Cooccurrence // the training baskets' co-occurrence counts
	if f.mode == "offline" {
		data, err := f.bf.read(f.data, e.stdin, voc, true, 0)
		if err != nil {
			return tokenHint(err)
		}
		if train, val, test, err = baskets.HoldOutSlice(data, f.nVal, f.nTest, f.seed); err != nil {
			return inFile(f.data, err)
		}
		n := voc.Len()
		if err := f.checkMemory(n); err != nil {
			return err
		}
		if !f.g.quiet {
			fmt.Fprintf(e.stderr, "learn: %d baskets over %d items (%d train, %d validation, %d test), mode %s, d = %d\n",
				len(data), n, len(train), len(val), len(test), f.mode, f.d)
		}
		// The reading's garbage is collected before the learner's clock
		// starts, so that it is not timed collecting it.
		runtime.GC()
		var start *learn.Params
		if f.start != "" {
			if start, err = startParams(f.start, voc, f.g.budget); err != nil {
				return err
			}
		}
		var bar *progress
		progressFn := func(it, maxIt int) {
			if bar == nil {
				bar = newProgress(e, &f.g, int64(maxIt), "offline learning (iterations)")
			}
			bar.Set(int64(it), int64(maxIt))
		}
		opt := f.offlineOptions()
		opt.Progress, opt.TraceSet, opt.Key, opt.Start = progressFn, traceSet(f.trace, val), eval.Keys(voc), start
		res, err = learn.TrainOffline(e.context(), train, val, n, opt)
		bar.Finish()
		if err != nil {
			return err
		}
		if model, err = res.Params.Model(f.bf.itemNames(voc)); err != nil {
			return err
		}
	} else {
		restore := setOnlineGC()
		res, model, baseModel, coCounts, test, err = f.runOnline(e, voc)
		restore()
		if err != nil {
			return err
		}
	}
	// The learner's working state (the online pass's optimiser, normaliser
	// and read-ahead; the offline trainer) is garbage now. Collecting it
	// before the evaluation allocates sets the heap's next target from what
	// the evaluation keeps rather than from the learner's live set: without
	// it, an online pass over 10⁵ items left a target twice its 500 MB and
	// the run's peak at 1.0 GiB instead of 0.7 GiB (learn/RESULTS.md).
	runtime.GC()
	// The peak resident memory of training (and reading), before the
	// evaluation allocates.
	rss, rssOK := peakRSS()
	n := voc.Len()
	keys := eval.Keys(voc)
	// The baselines: of the training baskets (offline), or of what the
	// online pass counted as the stream went by (no latent class model:
	// the stream was not kept).
	training := eval.Training{Baskets: train, Independent: baseModel, Cooccurrence: coCounts}
	models := []*ndpp.Model{model}
	if against != nil {
		if !sameItems(against, voc) {
			return fmt.Errorf("--against %s: the model's items are not the data file's (%d items, in the order of first appearance): learn it on the same file", f.against, voc.Len())
		}
		models = append(models, against)
	}
	cmp, err := eval.Compare(e.context(), models, test, training, eval.CompareOptions{
		Options:        eval.Options{Seed: f.seed, Key: keys, Workers: f.g.threads, MaxMemory: f.g.budget.Bytes},
		NoCooccurrence: !f.cooc, NoLatentClass: !f.latent})
	if err != nil {
		return f.g.budget.Rename(err)
	}
	met := cmp.Models[0]
	if !f.g.quiet && cmp.CooccurrenceEvictions > 0 {
		fmt.Fprintf(e.stderr, "learn: the co-occurrence baseline reached its budget of %d pairs (%d evictions): the rarest pairs are dropped, and its figures are lower than exact counts would give\n",
			eval.DefaultCooccurPairs, cmp.CooccurrenceEvictions)
	}
	if !f.g.quiet {
		rankNote(e, "learn", met, model)
	}
	indep := baseModel
	if indep == nil {
		if indep, err = eval.Independent(train, n); err != nil {
			return err
		}
	}
	if err := checkDiverged(e.context(), model, indep, test); err != nil {
		return err
	}
	// The model and the trace replace their files together, after
	// everything else has succeeded.
	outs := outfile.Set{Stdout: e.stdout}
	defer outs.Discard()
	if err := outs.Add(f.out, func(w io.Writer) error { return npz.Write(w, model) }); err != nil {
		return err
	}
	if err := outs.Add(f.trace, func(w io.Writer) error { return writeTraceTo(w, f.mode, res.Trace) }); err != nil {
		return err
	}
	if err := outs.Commit(); err != nil {
		return err
	}
	valLL := "none (--val 0)"
	if f.nVal > 0 {
		valLL = fmt.Sprintf("%.4f", res.ValLLEps)
	}
	extra := [][2]string{{"items", strconv.Itoa(n)}, {"validation log-likelihood, ε (objective)", valLL}}
	r := toMetricsJSON(f.mode, model.D(), met, cmp, res.Seconds, res.Passes, res.Baskets)
	r.ItemOrder = itemOrder(voc, keys)
	if against != nil {
		if err := r.setAgainst(f.against, met, cmp.Models[1]); err != nil {
			return err
		}
	}
	if f.nVal > 0 {
		r.ValLLEps = num(res.ValLLEps)
	}
	r.NextWeight = &res.NextWeight
	if f.mode == "offline" {
		r.Objective = f.objective
		if f.nVal > 0 {
			r.ValMPR = num(res.ValMPR)
			r.SelectedBy = res.SelectedBy.String()
			if f.objective == "rank" {
				r.RankStrong = &res.RankStrong
			}
			extra = append(extra, [2]string{"validation MPR (estimate)", fmt.Sprintf("%.2f", res.ValMPR)}, [2]string{"model selected by", res.SelectedBy.String()})
		}
	}
	if rssOK {
		r.PeakRSSBytes = &rss
	}
	return writeMetrics(reportTo(e, f.out, f.trace), &f.g, r, extra)
}

// startParams loads the model of --start and returns its parameters,
// refusing a model over other items than the data file's vocabulary voc
// (the same tokens in the same rows).
func startParams(path string, voc *ndpp.Vocab, budget memlimit.Budget) (*learn.Params, error) {
	m, err := loadModel(path, budget)
	if err != nil {
		return nil, fmt.Errorf("--start: %w", err)
	}
	if !sameItems(m, voc) {
		return nil, fmt.Errorf("--start %s: the model's items are not the data file's (%d items, in the order of first appearance): learn it on the same file", path, voc.Len())
	}
	return learn.ParamsFromModel(m), nil
}

// sameItems reports whether m's items are those of the data file's
// vocabulary voc: the same ids, or the same tokens, in the same rows.
func sameItems(m *ndpp.Model, voc *ndpp.Vocab) bool {
	if ids := m.IDs(); ids != nil {
		vids, ok := voc.IDs()
		return ok && slices.Equal(ids, vids)
	}
	if mv := m.Vocab(); mv != nil {
		return slices.Equal(mv.Tokens(), voc.Tokens())
	}
	return false
}

// checkMemory refuses a learner whose estimated memory for n items
// (learn.OfflineMemory, learn.OnlineMemory with a worker per thread)
// exceeds the budget.
func (f *learnFlags) checkMemory(n int) error {
	opt := f.offlineOptions()
	opt.Workers = max(opt.Workers, 1)
	need := learn.OfflineMemory(opt, n)
	if f.mode == "online" {
		need = learn.OnlineMemory(learn.OnlineOptions{D: f.d}, n, f.g.threads)
	}
	what := fmt.Sprintf("learning with d = %d", f.d)
	if n > 0 {
		what = fmt.Sprintf("learning %d items with d = %d", n, f.d)
	}
	return f.g.budget.Check(what, need)
}

// checkDiverged refuses a learned model whose training diverged
// (eval.CheckDiverged), with the flags that help.
func checkDiverged(ctx context.Context, model, indep *ndpp.Model, held [][]int) error {
	err := eval.CheckDiverged(ctx, model, indep, held)
	if de, ok := errors.AsType[*eval.DivergedError](err); ok {
		return fmt.Errorf("training diverged (lower --lr or --init-scale); no model saved: %w", de.Err)
	}
	return err
}

// rankNote says on stderr how many test baskets have probability 0 under
// the model (beyond its rank, or of dependent items), which makes the test
// log-likelihood −Inf while the ε figure stays finite, and why the ε figure
// is −Inf if it is.
func rankNote(e *env, cmd string, met *eval.Metrics, m *ndpp.Model) {
	if met.BeyondRank > 0 {
		bound := "2d"
		if m.Shared() {
			bound = "d (B = V)"
		}
		fmt.Fprintf(e.stderr, "%s: %d of %d test baskets have more items than the model's rank %s = %d: probability 0 under the model, so the test log-likelihood is -Inf (shown as - or null); the ε figure is finite only through ε = %g\n",
			cmd, met.BeyondRank, met.Baskets, bound, m.MaxRank(), met.Eps)
	}
	if other := met.ZeroProb - met.BeyondRank; other > 0 {
		fmt.Fprintf(e.stderr, "%s: %d of %d test baskets have det L_S = 0 (probability 0), so the test log-likelihood is -Inf (shown as - or null)\n", cmd, other, met.Baskets)
	}
	if met.ZeroProbEps > 0 {
		fmt.Fprintf(e.stderr, "%s: %d of %d test baskets have det(L_S + εI) = 0, so the ε test log-likelihood is -Inf\n", cmd, met.ZeroProbEps, met.Baskets)
	}
}

// offlineOptions is the offline learner's options as the flags set them
// (the caller adds the progress, trace, keys and start).
func (f *learnFlags) offlineOptions() learn.OfflineOptions {
	obj, _ := learn.ParseObjective(f.objective) // checked with the flags
	sel, _ := learn.ParseSelection(f.sel)
	return learn.OfflineOptions{Select: sel, D: f.d, Shared: f.shared, LowRank: !f.diag, Seed: f.seed, DiagLR: f.diagLR, RateScale: f.rateScale,
		LR: f.lr, Batch: f.batch, MaxEpochs: f.epochs, EvalEvery: f.evalEvery, Patience: f.patience, MaxStalls: f.stalls, Tolerance: f.tolerance, RankRetries: f.retries, FloorSE: f.lib("floor-se", f.floorSE),
		Alpha: f.alpha, Beta: f.beta, Average: f.lib("average", f.average), RegPower: f.regPower, EarlyDecay: f.earlyDecay, FixC: f.fixC,
		Workers: f.g.threads, TimeLimit: f.timeLimit, Objective: obj, NextWeight: f.lib("next-weight", f.nextWeight), NextShare: f.nextShare, NextCarry: f.lib("next-carry", f.nextCarry), NextMaxCarry: f.nextMaxC,
		NextNegatives: f.nextNegs, Init: learn.InitOptions{Scale: f.initScale, Share: f.initShare}, InitMoments: f.moments,
		NextRandom: f.nextRandom, RankStrong: f.rankStrong()}
}

// rankStrong is --rank-strong as learn.OfflineOptions.RankStrong takes
// it: nil for the library's rule, a setting of no weight for none.
func (f *learnFlags) rankStrong() *learn.RankSetting {
	if f.strong {
		return nil
	}
	return &learn.RankSetting{}
}

// lib is a float flag as the learn options take it, where 0 selects the
// default: 0 when the flag is unset, negative for an explicit 0 (none:
// --average no average, --floor-se no margin, --next-carry no carry,
// --next-weight no next-item term).
func (f *learnFlags) lib(name string, v float64) float64 {
	if f.set[name] && v == 0 {
		return -1
	}
	return v
}

func (f *learnFlags) check() error {
	if f.data == "" {
		return usagef("--data is required")
	}
	if err := f.bf.check(); err != nil {
		return err
	}
	if f.mode != "online" && f.mode != "offline" {
		return usagef("--mode must be online or offline, not %q", f.mode)
	}
	if f.d < 1 {
		return usagef("--d must be ≥ 1")
	}
	if f.lr < 0 || math.IsNaN(f.lr) || math.IsInf(f.lr, 0) {
		return usagef("--lr must be a positive number")
	}
	if f.batch < 0 || f.epochs < 0 || f.patience < 0 || f.nVal < 0 || f.nTest < 1 || f.timeLimit < 0 {
		return usagef("--batch, --epochs, --patience, --val and --time-limit must be ≥ 0, --test ≥ 1")
	}
	if math.IsNaN(f.tolerance) || math.IsInf(f.tolerance, 0) {
		return usagef("--tolerance must be a finite number")
	}
	if math.IsNaN(f.floorSE) || math.IsInf(f.floorSE, 0) {
		return usagef("--floor-se must be a finite number")
	}
	if !(f.nextCarry >= 0 && f.nextCarry <= 1) {
		return usagef("--next-carry must be a share between 0 and 1")
	}
	if f.set["next-max-carry"] && !(f.nextMaxC >= 1) {
		return usagef("--next-max-carry must be ≥ 1")
	}
	if f.initScale < 0 || math.IsNaN(f.initScale) || math.IsInf(f.initScale, 0) {
		return usagef("--init-scale must be ≥ 0")
	}
	if f.alpha < 0 || f.beta < 0 || f.average < 0 || f.regPower < 0 || math.IsNaN(f.alpha+f.beta+f.average+f.regPower) || math.IsInf(f.alpha+f.beta+f.average+f.regPower, 0) {
		return usagef("--alpha, --beta, --reg-power and --average must be finite numbers ≥ 0")
	}
	if f.earlyDecay < 0 {
		return usagef("--early-decay must be ≥ 0")
	}
	if f.factorEv < 0 || f.cEvery < 0 || f.lag < 0 {
		return usagef("--factor-every, --lag and --c-every must be ≥ 0")
	}
	if f.mode == "offline" && (f.factorEv != 0 || f.cEvery != 0 || f.lag != 0) {
		return usagef("--factor-every, --lag and --c-every apply to --mode online")
	}
	if _, ok := learn.ParseOptimizer(f.optimizer); !ok {
		return usagef("--optimizer must be adam or sgd, not %q", f.optimizer)
	}
	if _, ok := learn.ParseNormalizer(f.normalizer); !ok {
		return usagef("--normalizer must be exact or basket, not %q", f.normalizer)
	}
	if !(f.nextShare >= 0 && f.nextShare <= 1) || f.set["next-share"] && f.nextShare == 0 {
		return usagef("--next-share must be in (0, 1]")
	}
	if f.nextNegs < 0 || f.set["next-negatives"] && f.nextNegs == 0 {
		return usagef("--next-negatives must be ≥ 1")
	}
	if f.nextWeight < 0 || math.IsNaN(f.nextWeight) || math.IsInf(f.nextWeight, 0) {
		return usagef("--next-weight must be ≥ 0")
	}
	if _, err := learn.ParseObjective(f.objective); err != nil {
		return usagef("--objective must be likelihood or rank, not %q", f.objective)
	}
	if _, err := learn.ParseSelection(f.sel); err != nil {
		return usagef("--select must be likelihood, objective or ranking, not %q", f.sel)
	}
	if f.mode == "online" && (f.objective != "likelihood" || f.sel != "" || f.start != "" || f.moments || f.nextRandom || f.nextShare != 0 || f.average != 0 || f.regPower != 0 || f.earlyDecay != 0 || !f.strong || f.set["floor-se"] || f.set["eval-every"] || f.set["next-carry"] || f.set["next-max-carry"]) {
		return usagef("--objective, --select, --next-random, --next-share, --next-carry, --next-max-carry, --average, --reg-power, --early-decay, --rank-strong, --floor-se, --eval-every, --start and --init-moments apply to --mode offline")
	}
	if f.mode == "offline" && (f.checkpoint != "" || f.resume != "") {
		return usagef("--checkpoint and --resume apply to --mode online")
	}
	if f.mode == "online" && f.nVal == 0 && f.trace != "" {
		return usagef("--trace needs validation baskets (--val > 0)")
	}
	return nil
}

func traceSet(path string, val [][]int) [][]int {
	if path == "" || len(val) == 0 {
		return nil
	}
	return val
}

// onlineGCPercent is the collector's GOGC during an online pass (when
// the environment sets none): a heap target 1.5 times the live set instead
// of twice. The pass's live memory is mostly per-item state without
// pointers (the learner's rows, the normaliser's snapshot, the pair
// counts), which grows as the stream brings new items and costs the
// collector little to mark; the default headroom then mostly holds
// garbage. Over 10⁶ synthetic baskets of 10⁵ items the pass peaks at 763–797
// MiB instead of 893–937, in the same time (learn/RESULTS.md).
const onlineGCPercent = 50

// setOnlineGC sets the collector's GOGC to onlineGCPercent unless the
// environment sets GOGC, and returns the function that restores it. The
// setting is the process's: a command may make it, as it owns the
// process; the library does not.
func setOnlineGC() (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	old := debug.SetGCPercent(onlineGCPercent)
	return func() { debug.SetGCPercent(old) }
}

// runOnline streams the data file through the hold-out and the online
// learner in one pass, and returns the result, the model over the
// vocabulary, the independent-items model and, with --cooccurrence, the
// co-occurrence counts of the training baskets (counted as they stream by,
// in memory bounded by eval.DefaultCooccurPairs pairs), and the test
// baskets.
func (f *learnFlags) runOnline(e *env, voc *ndpp.Vocab) (res *learn.Result, model, base *ndpp.Model, cooc *eval.Cooccurrence, test [][]int, err error) {
	optim, _ := learn.ParseOptimizer(f.optimizer)
	norm, _ := learn.ParseNormalizer(f.normalizer)
	r, err := f.bf.open(f.data, e.stdin, voc, true, 0)
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	defer r.Close()
	hold, err := baskets.NewHoldOut(r, f.nVal, f.nTest, f.seed)
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	var o *learn.Online
	// The training baskets are counted as the learner reads them (and as
	// a resumed run skips them, so the counts cover every one).
	var src baskets.Source = hold
	if f.cooc {
		if cooc, err = eval.NewCooccurrence(eval.DefaultCooccurPairs, f.g.budget.Bytes); err != nil {
			return nil, nil, nil, nil, nil, f.g.budget.Rename(err)
		}
		src = cooc.Counting(hold)
	}
	if f.resume != "" {
		if f.resume == outfile.Std {
			o, err = learn.LoadOnline(e.stdin)
		} else {
			o, err = learn.LoadOnlineFile(f.resume)
		}
		if err != nil {
			return nil, nil, nil, nil, nil, err
		}
		if err := f.resumeConflicts(o.Options()); err != nil {
			return nil, nil, nil, nil, nil, err
		}
		if o.Options().NextWeight > 0 {
			src = eval.NewLastSource(src, voc)
		}
		// The checkpoint's fingerprint of the baskets it consumed must
		// match the first baskets of this run's training stream.
		if err := o.SkipConsumed(e.context(), src); err != nil {
			if errors.Is(err, learn.ErrOtherBaskets) {
				err = fmt.Errorf("%w; give the --data, --val and --test of the run that wrote it", err)
			}
			return nil, nil, nil, nil, nil, fmt.Errorf("--resume %s: %w", f.resume, err)
		}
	} else {
		o, err = learn.NewOnline(learn.OnlineOptions{D: f.d, Shared: f.shared, LowRank: !f.diag, Seed: f.seed, Optimizer: optim,
			LR: f.lr, DiagLR: f.diagLR, RateScale: f.rateScale, Alpha: f.alpha, Beta: f.beta, Normalizer: norm, FixC: f.fixC,
			Init: learn.InitOptions{Scale: f.initScale, Share: f.initShare}, CEvery: f.cEvery,
			Schedule: learn.Schedule{FactorEvery: f.factorEv, Lag: f.lag}, NextWeight: f.lib("next-weight", f.nextWeight), NextNegatives: f.nextNegs})
		if err != nil {
			return nil, nil, nil, nil, nil, err
		}
		if o.Options().NextWeight > 0 {
			src = eval.NewLastSource(src, voc)
		}
	}
	// The file's length is not known ahead: the bar counts baskets read.
	bar := newProgress(e, &f.g, -1, "online learning (baskets)")
	done := 0
	run := learn.OnlineRun{Checkpoint: f.checkpoint, Progress: func(b int) { bar.Add(b - done); done = b }}
	// The stream (reading, the hold-out, the pair counts) is read ahead of
	// the learner on another goroutine, unless the trace reads the
	// hold-out's validation baskets as they fill.
	var ahead *baskets.ReadAhead
	if f.trace != "" {
		run.TraceSource = hold.Validation
	} else {
		ahead = baskets.NewReadAhead(src)
		defer ahead.Close()
		src = ahead
	}
	res, err = o.Run(e.context(), src, run)
	bar.Finish()
	if err != nil {
		return nil, nil, nil, nil, nil, tokenHint(inFile(f.data, err))
	}
	if ahead != nil {
		ahead.Close() // the hold-out and the vocabulary are the learner's again
	}
	var val [][]int
	if val, test, err = hold.Held(); err != nil {
		return nil, nil, nil, nil, nil, inFile(f.data, err)
	}
	if !f.g.quiet {
		fmt.Fprintf(e.stderr, "learn: %d baskets over %d items (%d train, %d validation, %d test), mode %s, d = %d\n",
			hold.Read(), voc.Len(), o.Position(), len(val), len(test), f.mode, f.d)
	}
	if model, err = o.ModelOver(voc.Len(), f.bf.itemNames(voc)); err != nil {
		return nil, nil, nil, nil, nil, err
	}
	if len(val) > 0 {
		if res.ValLLEps, err = eval.LogLikelihoodEps(e.context(), model, val, 0); err != nil {
			return nil, nil, nil, nil, nil, err
		}
	}
	if base, err = o.Independent(voc.Len()); err != nil {
		return nil, nil, nil, nil, nil, err
	}
	return res, model, base, cooc, test, nil
}

// resumeConflicts refuses a learning-option flag given on the command
// line with a value other than the checkpoint's: a resumed run goes on with
// the checkpoint's options (and its seed's split), so such a flag would be
// silently ignored.
func (f *learnFlags) resumeConflicts(opt learn.OnlineOptions) error {
	optim, _ := learn.ParseOptimizer(f.optimizer)
	norm, _ := learn.ParseNormalizer(f.normalizer)
	checks := []struct {
		flag       string
		same       bool
		ckpt, here any
	}{
		{"d", f.d == opt.D, opt.D, f.d},
		{"seed", f.seed == opt.Seed, opt.Seed, f.seed},
		{"shared", f.shared == opt.Shared, opt.Shared, f.shared},
		{"diag", f.diag == !opt.LowRank, !opt.LowRank, f.diag},
		{"optimizer", optim == opt.Optimizer, opt.Optimizer, f.optimizer},
		{"normalizer", norm == opt.Normalizer, opt.Normalizer, f.normalizer},
		{"lr", f.lr == opt.LR, opt.LR, f.lr},
		{"diag-lr", f.diagLR == opt.DiagLR, opt.DiagLR, f.diagLR},
		{"rate-scale", f.rateScale == opt.RateScale, opt.RateScale, f.rateScale},
		{"alpha", f.alpha == opt.Alpha, opt.Alpha, f.alpha},
		{"beta", f.beta == opt.Beta, opt.Beta, f.beta},
		{"fix-c", f.fixC == opt.FixC, opt.FixC, f.fixC},
		{"init-scale", f.initScale == opt.Init.Scale, opt.Init.Scale, f.initScale},
		{"init-share", f.initShare == opt.Init.Share, opt.Init.Share, f.initShare},
		{"factor-every", f.factorEv == opt.Schedule.FactorEvery, opt.Schedule.FactorEvery, f.factorEv},
		{"lag", f.lag == opt.Schedule.Lag, opt.Schedule.Lag, f.lag},
		{"c-every", f.cEvery == opt.CEvery, opt.CEvery, f.cEvery},
		{"next-weight", f.nextWeight == max(opt.NextWeight, 0), max(opt.NextWeight, 0), f.nextWeight},
		{"next-negatives", f.nextNegs == opt.NextNegatives, opt.NextNegatives, f.nextNegs},
	}
	for _, c := range checks {
		if f.set[c.flag] && !c.same {
			return usagef("--%s %v conflicts with the checkpoint %s, which has %v: a resumed run keeps the checkpoint's learning options (drop --%s)", c.flag, c.here, f.resume, c.ckpt, c.flag)
		}
	}
	return nil
}

// writeTraceTo writes a learning curve in the format of nllHeader.
func writeTraceTo(w io.Writer, mode string, tr []learn.TracePoint) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(nllHeader)
	for _, p := range tr {
		_ = cw.Write([]string{mode, strconv.FormatFloat(p.Seconds, 'g', 6, 64), strconv.Itoa(p.Baskets), strconv.FormatFloat(p.NLL, 'g', 8, 64)})
	}
	cw.Flush()
	return cw.Error()
}
