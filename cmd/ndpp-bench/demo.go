package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/eval"
	"github.com/ndpp-go/ndpp/internal/outfile"
	"github.com/ndpp-go/ndpp/learn"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
	"github.com/ndpp-go/ndpp/ndpp/npz"
	"github.com/ndpp-go/ndpp/stream"
)

// bundledApparel is the Amazon apparel registry file (testdata/README.md),
// built into the binary so that demo runs from any directory; the copy in
// the repository's testdata/ is the same file (TestBundledDataIsTestdata).
//
//go:embed data/1_100_100_100_apparel_regs.csv
var bundledApparel []byte

// bundledApparelName names the bundled data in messages.
const bundledApparelName = "1_100_100_100_apparel_regs.csv (bundled)"

type demoFlags struct {
	g              globals
	data, out      string
	base           int
	k              int
	alpha          float64
	orders         int
	d              int
	seed           uint64
	nVal, nTest    int
	maxBaskets     int
	offlineSeconds float64
}

// demoInferRow is one algorithm's line of the demo's inference table.
type demoInferRow struct {
	Algo       string   `json:"algo"`
	LogValue   *float64 `json:"log_value"`                   // id order; null when f_k(S) = 0
	Ratio      float64  `json:"ratio_to_greedy"`             // f(S)/f(greedy), id order
	MeanRatio  *float64 `json:"mean_ratio_random,omitempty"` // over the random orders (none: left out)
	MinRatio   *float64 `json:"min_ratio_random,omitempty"`  // over the random orders
	DetEvals   int64    `json:"det_evals"`                   // id order
	Swaps      int64    `json:"swaps"`                       // id order
	PeakStash  int      `json:"peak_stash"`                  // id order
	ItemsPerS  float64  `json:"items_per_sec"`               // over all runs
	RandomRuns int      `json:"random_orders"`
}

func init() {
	register(&command{
		name:    "demo",
		globals: gBackend | gJSON | gQuiet | gMaxMem,
		summary: "learn on the bundled Amazon apparel data, run every MAP algorithm, write the paper's figures",
		run:     runDemo,

		interruptible: true,
	})
}

func runDemo(e *env, args []string) error {
	var f demoFlags
	fs := newFlagSet(e, "demo", "learn an NDPP online (and offline, for comparison) on basket data — by default the bundled Amazon apparel registries — then run Stream-Partition, Online-LSS, Online-2-neighbor, Online-Greedy and the offline greedy baseline on the learned model in id order and in random orders and local search from the greedy's solution, print the comparison and write the paper's figures (PNG, SVG) and their CSV data to --out",
		"ndpp-bench demo --out ndpp-out", &f.g)
	fs.StringVar(&f.data, "data", "", "basket file, one basket per line, or - for standard input (default: the Amazon apparel registries built into the binary, testdata/1_100_100_100_apparel_regs.csv)")
	fs.IntVar(&f.base, "base", 1, "first item id in --data (0 or 1)")
	fs.StringVar(&f.out, "out", "ndpp-out", "output directory for figures and CSV files")
	fs.IntVar(&f.k, "k", 8, "solution size")
	fs.Float64Var(&f.alpha, "alpha", stream.DefaultAlpha, "improvement factor α ≥ 1 of the local-search algorithms")
	fs.IntVar(&f.orders, "orders", 100, "number of random stream orders")
	fs.IntVar(&f.d, "d", 30, "model rank d")
	fs.Uint64Var(&f.seed, "seed", 1, "seed for the split, initialisation and random orders")
	fs.IntVar(&f.nVal, "val", 300, "validation baskets")
	fs.IntVar(&f.nTest, "test", 2000, "test baskets")
	fs.IntVar(&f.maxBaskets, "baskets", 0, "use only the first N baskets of the file (0 = all)")
	fs.Float64Var(&f.offlineSeconds, "offline-seconds", 20, "training-time limit of the offline learner")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.g.apply(); err != nil {
		return err
	}
	switch {
	case f.k < 1:
		return usagef("--k must be ≥ 1")
	case f.alpha < 1 || math.IsNaN(f.alpha):
		return usagef("--alpha must be ≥ 1")
	case f.orders < 0:
		return usagef("--orders must be ≥ 0")
	case f.d < 1:
		return usagef("--d must be ≥ 1")
	case f.k > 2*f.d:
		return usagef("--k %d is more than 2d = %d: every set of that size has determinant zero", f.k, 2*f.d)
	case f.base != 0 && f.base != 1:
		return usagef("--base must be 0 or 1")
	case f.offlineSeconds <= 0:
		return usagef("--offline-seconds must be positive")
	}
	if err := refuseStd("--out", f.out); err != nil {
		return err
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	var outPaths []outfile.File
	for _, name := range []string{trajectoryCSV, greedyCSV, nllCSV, "model.npz"} {
		outPaths = append(outPaths, outfile.File{Flag: "--out", Path: filepath.Join(f.out, name)})
	}
	var ins []outfile.File
	if f.data != "" {
		ins = append(ins, stdFile("--data", f.data))
	}
	if err := checkFiles(ins, outPaths); err != nil {
		return err
	}
	start := time.Now()
	logf := func(format string, a ...any) {
		if !f.g.quiet {
			fmt.Fprintf(e.stderr, "demo: "+format+"\n", a...)
		}
	}

	// Data.
	var data [][]int
	var err error
	dataName := filepath.Base(f.data)
	switch f.data {
	case "":
		dataName = bundledApparelName
		data, err = drain(baskets.NewLineReader(bytes.NewReader(bundledApparel), baskets.LineOptions{Base: f.base}))
	case outfile.Std:
		data, err = drain(baskets.NewLineReader(e.stdin, baskets.LineOptions{Base: f.base}))
	default:
		data, err = baskets.ReadFile(f.data, baskets.LineOptions{Base: f.base})
	}
	if err != nil {
		return err
	}
	if f.maxBaskets > 0 && f.maxBaskets < len(data) {
		data = data[:f.maxBaskets]
	}
	n := 0
	for _, b := range data {
		for _, i := range b {
			n = max(n, i+1)
		}
	}
	// The hold-out rule of every command (package eval): the same file
	// and seed hold out the same baskets as ndpp-bench learn.
	train, val, test, err := baskets.HoldOutSlice(data, f.nVal, f.nTest, f.seed)
	if err != nil {
		return usagef("%v", err)
	}
	logf("%s: %d baskets over %d items (train %d, validation %d, test %d); backend %s",
		dataName, len(data), n, len(train), len(val), len(test), blas.Backend())

	// Learning: one online pass, and the offline baseline for comparison.
	learnRows, nll, model, err := f.learn(e.context(), train, val, test, n, logf)
	if err != nil {
		return err
	}

	// Inference on the online-learned model.
	inferRows, traj, greedyLog, err := f.infer(e.context(), model, logf)
	if err != nil {
		return err
	}

	// The CSV files and the model replace their files together; the
	// figures are drawn from the CSV files.
	var outs outfile.Set
	defer outs.Discard()
	if err := writeTrajectories(outs.Add, f.out, traj); err != nil {
		return err
	}
	if err := writeGreedy(outs.Add, f.out, greedyLog); err != nil {
		return err
	}
	if err := writeNLL(outs.Add, f.out, nll); err != nil {
		return err
	}
	// The saved model records the file's item ids (row + --base), so that
	// eval, score, infer and serve read the same file as the demo did.
	saved, err := withIDs(model, f.base)
	if err != nil {
		return err
	}
	if err := outs.Add(filepath.Join(f.out, "model.npz"), func(w io.Writer) error { return npz.Write(w, saved) }); err != nil {
		return err
	}
	if err := outs.Commit(); err != nil {
		return err
	}
	figs, err := drawFigures(e.context(), f.out)
	if err != nil {
		return err
	}
	if f.g.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Learning  []metricsJSON  `json:"learning"`
			Inference []demoInferRow `json:"inference"`
			Figures   []string       `json:"figures"`
		}{learnRows, inferRows, figs})
	}
	printDemoTables(e.stdout, f, learnRows, inferRows)
	fmt.Fprintf(e.stdout, "\nFigures and CSV data in %s/ (model: %s/model.npz)\n", f.out, f.out)
	logf("done in %.1fs", time.Since(start).Seconds())
	return nil
}

func (f *demoFlags) learn(ctx context.Context, train, val, test [][]int, n int, logf func(string, ...any)) ([]metricsJSON, []nllRow, *ndpp.Model, error) {
	var rows []metricsJSON
	var nll []nllRow
	on, err := learn.TrainOnline(ctx, baskets.SliceSource(train), learn.OnlineOptions{D: f.d, Seed: f.seed, N: n},
		learn.OnlineRun{TraceSet: val, TraceEvery: max(1, len(train)/40)})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("online learning: %w", err)
	}
	logf("online learning: one pass over %d baskets in %.2fs", len(train), on.Seconds)
	off, err := learn.TrainOffline(ctx, train, val, n, learn.OfflineOptions{D: f.d, Seed: f.seed, TraceSet: val,
		TimeLimit: time.Duration(f.offlineSeconds * float64(time.Second))})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("offline learning: %w", err)
	}
	logf("offline learning: %.1f passes in %.2fs", off.Passes, off.Seconds)
	cmp, err := eval.Compare(ctx, []*ndpp.Model{on.Model, off.Model}, test, eval.Training{Baskets: train},
		eval.CompareOptions{Options: eval.Options{Seed: f.seed, MaxMemory: f.g.budget.Bytes}})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("evaluating the models and the baselines: %w", f.g.budget.Rename(err))
	}
	for i, r := range []struct {
		mode string
		res  *learn.Result
	}{{"online", on}, {"offline", off}} {
		row := toMetricsJSON(r.mode, f.d, cmp.Models[i], cmp, r.res.Seconds, r.res.Passes, r.res.Baskets)
		row.ItemOrder = "ids" // rows are the file's integer ids (minus --base)
		rows = append(rows, row)
		for _, p := range r.res.Trace {
			nll = append(nll, nllRow{mode: r.mode, seconds: p.Seconds, baskets: p.Baskets, nll: p.NLL})
		}
	}
	return rows, nll, on.Model, nil
}

var demoAlgos = stream.SolverNames()

func (f *demoFlags) infer(ctx context.Context, m *ndpp.Model, logf func(string, ...any)) ([]demoInferRow, []trajRow, float64, error) {
	if f.k > m.N() {
		return nil, nil, 0, usagef("--k %d is more than the %d items", f.k, m.N())
	}
	greedy, err := stream.OfflineGreedy(ctx, m, f.k, stream.GreedyOptions{})
	if err != nil {
		return nil, nil, 0, err
	}
	gv := greedy.Objective()
	if gv.Zero {
		return nil, nil, 0, errors.New("offline greedy found no set with a non-zero determinant")
	}
	ratio := func(v ndpp.Value) float64 {
		if v.Zero {
			return 0
		}
		return math.Exp(v.Log - gv.Log)
	}
	inf := inferFlags{k: f.k, alpha: f.alpha, oracle: "fast"}
	var rows []demoInferRow
	var traj []trajRow
	for _, algo := range demoAlgos {
		s, err := inf.newSolver(algo, m)
		if err != nil {
			return nil, nil, 0, err
		}
		res, err := stream.Run(ctx, s, stream.IDOrder(m.N()), stream.RunOptions{Every: 1, Trajectory: func(p stream.Point) {
			lv := p.Value.Log
			if p.Value.Zero || p.Size < f.k {
				lv = math.Inf(-1)
			}
			traj = append(traj, trajRow{algo: algo, items: p.Items, logValue: lv, size: p.Size, evals: p.Evals, swaps: p.Swaps, stash: p.Stash})
		}})
		if err != nil {
			return nil, nil, 0, err
		}
		row := demoInferRow{Algo: algo, Ratio: ratio(res.Objective()), DetEvals: res.Evals, Swaps: res.Swaps,
			PeakStash: res.PeakStash, RandomRuns: f.orders}
		if ob := res.Objective(); !ob.Zero {
			v := ob.Log
			row.LogValue = &v
		}
		items, secs := float64(res.Items), res.Seconds
		sum, lo := 0.0, math.Inf(1)
		for o := 0; o < f.orders; o++ {
			s, err := inf.newSolver(algo, m)
			if err != nil {
				return nil, nil, 0, err
			}
			r, err := stream.Run(ctx, s, stream.RandomOrder(m.N(), f.seed+uint64(o)+1), stream.RunOptions{})
			if err != nil {
				return nil, nil, 0, err
			}
			q := ratio(r.Objective())
			sum += q
			lo = math.Min(lo, q)
			items += float64(r.Items)
			secs += r.Seconds
		}
		if f.orders > 0 {
			row.MeanRatio, row.MinRatio = num(sum/float64(f.orders)), num(lo)
		}
		if secs > 0 {
			row.ItemsPerS = items / secs
		}
		rows = append(rows, row)
		logf("%s: ratio to offline greedy %.3f (id order), %s mean over %d random orders", algo, row.Ratio, fmtRatio(row.MeanRatio), f.orders)
	}
	gl := gv.Log
	rows = append(rows, demoInferRow{Algo: stream.NameOfflineGreedy, LogValue: &gl, Ratio: 1, MeanRatio: num(1), MinRatio: num(1),
		DetEvals: greedy.Evals, ItemsPerS: greedy.ItemsPerSec()})
	// Local search from the greedy's solution (order-independent, like
	// the greedy: its ratio fills the random-order columns).
	ls, err := localSearch(ctx, "fast", m, f.k, greedy.Solution, lsFlags{eps: stream.DefaultLocalSearchEps}, stream.NameLocalSearch)
	if err != nil {
		return nil, nil, 0, err
	}
	lr := ratio(ls.Objective())
	row := demoInferRow{Algo: stream.NameLocalSearch, Ratio: lr, MeanRatio: num(lr), MinRatio: num(lr), DetEvals: ls.Evals, Swaps: ls.Swaps,
		ItemsPerS: ls.ItemsPerSec()}
	if ob := ls.Objective(); !ob.Zero {
		v := ob.Log
		row.LogValue = &v
	}
	rows = append(rows, row)
	logf("%s: ratio to offline greedy %.3f (%d passes, %d swaps, %.3fs)", stream.NameLocalSearch, lr, ls.Passes, ls.Swaps, ls.Seconds)
	return rows, traj, gv.Log, nil
}

func printDemoTables(w io.Writer, f demoFlags, learnRows []metricsJSON, inferRows []demoInferRow) {
	fmt.Fprintf(w, "Learning (d = %d; test metrics, paper protocol; baseline: independent items' LL, popularity's ranking; co-occurrence: ranking by item co-occurrence; latent class: a mixture of %d independent-items models)\n", f.d, eval.DefaultLatentClasses)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tseconds\ttest LL\tMPR\tAUC\tPrec@5\t")
	for _, r := range learnRows {
		fmt.Fprintf(tw, "%s\t%.2f\t%s\t%s\t%s\t%s\t\n", r.Mode, r.Seconds, fmtNum(r.TestLL, 3), fmtNum(r.MPR, 2), fmtNum(r.AUC, 3), fmtNum(r.Prec5, 2))
	}
	if len(learnRows) > 0 && learnRows[0].BaselineIndependentLL != nil {
		// The baselines: the independent-items model's LL, popularity's ranking.
		r := learnRows[0]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", "baseline", "-", fmtNum(r.BaselineIndependentLL, 3), fmtNum(r.BaselinePopularityMPR, 2),
			fmtNum(r.BaselinePopularityAUC, 3), fmtNum(r.BaselinePopularityPrec5, 2))
	}
	if len(learnRows) > 0 && learnRows[0].BaselineCooccurrenceMPR != nil {
		// Co-occurrence ranks candidates only: no LL, no AUC.
		r := learnRows[0]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", "co-occurrence", "-", "-", fmtNum(r.BaselineCooccurrenceMPR, 2), "-", fmtNum(r.BaselineCooccurrencePrec5, 2))
	}
	if len(learnRows) > 0 && learnRows[0].BaselineLatentClassMPR != nil {
		// The latent class model's AUC is not computed.
		r := learnRows[0]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", "latent class", "-", fmtNum(r.BaselineLatentClassLL, 3), fmtNum(r.BaselineLatentClassMPR, 2), "-", fmtNum(r.BaselineLatentClassPrec5, 2))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nMAP inference on the online model (k = %d, α = %g; ratios f(S)/f(greedy), random orders: %d)\n", f.k, f.alpha, f.orders)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "algo\tlog f(S)\tratio (id order)\tmean ratio\tmin ratio\tdet evals\tswaps\tpeak stash\titems/s\t")
	for _, r := range inferRows {
		lv := "f=0"
		if r.LogValue != nil {
			lv = fmt.Sprintf("%.4f", *r.LogValue)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%s\t%s\t%d\t%d\t%d\t%.3g\t\n", r.Algo, lv, r.Ratio, fmtRatio(r.MeanRatio), fmtRatio(r.MinRatio), r.DetEvals, r.Swaps, r.PeakStash, r.ItemsPerS)
	}
	tw.Flush()
}

// fmtNum formats an optional number ("−Inf" for a missing one: a test
// basket with a zero determinant makes the log-likelihood −Inf).
func fmtNum(x *float64, prec int) string {
	if x == nil {
		return "-Inf"
	}
	return strconv.FormatFloat(*x, 'f', prec, 64)
}

// withIDs returns m with the item ids row + base.
func withIDs(m *ndpp.Model, base int) (*ndpp.Model, error) {
	ids := make([]int64, m.N())
	for i := range ids {
		ids[i] = int64(i + base)
	}
	v, b, _, c := m.Rows()
	if m.Shared() {
		b = nil
	}
	return ndpp.NewFromRows(m.N(), m.D(), v, b, c, ndpp.WithDiag(m.Diag()), ndpp.WithIDs(ids))
}

// fmtRatio prints a ratio over the random orders, "–" when there were none.
func fmtRatio(x *float64) string {
	if x == nil {
		return "–"
	}
	return fmt.Sprintf("%.3f", *x)
}
