package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/internal/outfile"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/stream"
)

func init() {
	register(&command{
		name:    "infer",
		globals: gBackend | gThreads | gJSON | gQuiet | gMaxMem,
		summary: "streaming/online MAP inference (the paper's four algorithms) and offline greedy",
		run:     runInfer,

		interruptible: true,
	})
}

// inferAlgos lists the algorithms of --algos all, in output order: the
// online solvers (stream.SolverNames) and the offline greedy.
var inferAlgos = append(stream.SolverNames(), stream.NameOfflineGreedy)

// inferExtraAlgos are the algorithms --algos accepts by name only: local
// search from the offline greedy's solution.
var inferExtraAlgos = []string{stream.NameLocalSearch}

// inferResult is one row of `infer --json`.
type inferResult struct {
	Algo     string `json:"algo"`
	K        int    `json:"k"`
	Solution []int  `json:"solution"` // rows of the model
	// SolutionItems are the solution's items as the model names them (its
	// vocabulary's tokens or its ids), for models that record either.
	SolutionItems []string `json:"solution_items,omitempty"`
	LogValue      *float64 `json:"log_value"` // null when f_k(S) = 0
	DetEvals      int64    `json:"det_evals"`
	Swaps         int64    `json:"swaps"`
	Stash         int      `json:"stash"`
	Items         int64    `json:"items"`
	Seconds       float64  `json:"seconds"`
	ItemsPerSec   float64  `json:"items_per_sec"`
}

type inferFlags struct {
	g          globals
	model      string
	synthetic  bool
	n, d       int
	diag       float64
	seed       uint64
	k          int
	alpha      float64
	stashCap   int
	algos      string
	order      string
	oracle     string
	trajectory string
	every      int
	ls         lsFlags
	items      string // --items: a stream of vector items (PATH or -)
	kernel     string // --kernel: the model file whose C the items share
	format     string // --format of --items
	readAhead  int    // --read-ahead of --items
	nSet       bool   // --n was given explicitly
}

func runInfer(e *env, args []string) error {
	var f inferFlags
	fs := newFlagSet(e, "infer", "streaming/online MAP inference over a model's items (the stream is the items in order) or over a stream of item vectors (--items)",
		"ndpp-bench infer --synthetic --n 1000000 --d 10 --k 8 --algos online-lss,offline-greedy\n  ndpp-bench items --synthetic --n 1000000 --d 10 --kernel-out K.npz | ndpp-bench infer --items - --kernel K.npz --algos online-lss", &f.g)
	fs.StringVar(&f.model, "model", "", "model file (.npz)")
	fs.BoolVar(&f.synthetic, "synthetic", false, "use a seeded random model (--n, --d, --diag, --seed) instead of --model")
	fs.StringVar(&f.items, "items", "", "read the stream of items from this file or - (stdin), as vectors: .npy (float64/float32, rows [v; b; δ]) or text (id v… b… [δ]), optionally gzip; needs --kernel; runs the online algorithms side by side in one pass")
	fs.StringVar(&f.kernel, "kernel", "", "with --items: model file (.npz) giving the kernel's C, whether B = V and whether items carry a diagonal entry (its items are not read)")
	fs.StringVar(&f.format, "format", "auto", "with --items: npy, text or auto (by the stream's first bytes)")
	fs.IntVar(&f.readAhead, "read-ahead", 2, "with --items: chunks of 4096 items decoded ahead on a goroutine of their own, so that reading overlaps scoring on a second core (0: decode between the solvers' steps)")
	fs.IntVar(&f.n, "n", 100000, "synthetic: number of items; with --items: the stream's length for stream-partition when the stream does not say (text)")
	fs.IntVar(&f.d, "d", 10, "synthetic: rank parameter d")
	fs.Float64Var(&f.diag, "diag", 0, "synthetic: add a diagonal δᵢ = X·e^{N(0,1)} to the kernel (0 = none; sets larger than 2d then have non-zero determinants)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the synthetic model and of --order random")
	fs.IntVar(&f.k, "k", 8, "solution size (1 ≤ k ≤ n; k ≤ 2d, or d when B = V, for a model without a diagonal)")
	fs.Float64Var(&f.alpha, "alpha", stream.DefaultAlpha, "improvement factor α ≥ 1 of online-lss and online-2neighbor")
	fs.IntVar(&f.stashCap, "stash-cap", 0, "cap on the stash size (0 = unbounded, the paper's algorithms)")
	fs.StringVar(&f.algos, "algos", "all", "comma-separated algorithms or all: "+strings.Join(inferAlgos, " ")+"; also "+strings.Join(inferExtraAlgos, " ")+" (from the offline greedy's solution; the row counts the search alone)")
	fs.StringVar(&f.order, "order", "id", "stream order: id (the model's item order) or random (seeded by --seed)")
	fs.StringVar(&f.oracle, "oracle", "fast", "determinant oracle of the online algorithms: fast (with block scoring) or naive (every value through a fresh LU, for timing)")
	fs.StringVar(&f.trajectory, "trajectory", "", "write the online algorithms' trajectories to this CSV file, or - for standard output (the results then go to standard error)")
	fs.IntVar(&f.every, "every", 1000, "trajectory sample interval in items")
	f.ls.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fs.Visit(func(fl *flag.Flag) { f.nSet = f.nSet || fl.Name == "n" })
	if err := f.g.apply(); err != nil {
		return err
	}
	algos, err := f.check()
	if err != nil {
		return err
	}
	inputs := []outfile.File{modelFile("--model", f.model), modelFile("--kernel", f.kernel), stdFile("--items", f.items)}
	if err := checkFiles(inputs, []outfile.File{stdFile("--trajectory", f.trajectory)}); err != nil {
		return err
	}
	if f.items != "" {
		return f.runItems(e, algos)
	}
	m, err := f.loadModel()
	if err != nil {
		return err
	}
	if f.k > m.N() {
		return usagef("--k %d exceeds the number of items n = %d", f.k, m.N())
	}
	if r := m.MaxRank(); f.k > r {
		// r < n: a model without a diagonal, whose rank bounds every set.
		if m.Shared() {
			return usagef("--k %d exceeds d = %d, the rank of a model with B = V and no diagonal (every larger set has determinant 0)", f.k, r)
		}
		return usagef("--k %d exceeds 2d = %d, the rank of a model without a diagonal (every larger set has determinant 0)", f.k, r)
	}
	order := stream.IDOrder(m.N())
	if f.order == "random" {
		order = stream.RandomOrder(m.N(), f.seed)
	}
	if !f.g.quiet {
		diag := ""
		if m.HasDiag() {
			diag = ", with a diagonal"
		}
		fmt.Fprintf(e.stderr, "infer: n = %d items, d = %d%s, k = %d, order %s, oracle %s\n", m.N(), m.D(), diag, f.k, f.order, f.oracle)
	}
	var results []stream.Result
	var traj [][]string
	online := 0
	for _, name := range algos {
		if name != stream.NameOfflineGreedy && name != stream.NameLocalSearch {
			online++
		}
	}
	var bar *progress
	if len(order) >= 100000 {
		bar = newProgress(e, &f.g, int64(online*len(order)), "infer")
	}
	start := time.Now()
	for _, name := range algos {
		var res stream.Result
		switch name {
		case stream.NameOfflineGreedy:
			res, err = stream.OfflineGreedy(e.context(), m, f.k, stream.GreedyOptions{Workers: f.g.threads})
			if err != nil {
				return greedyError(e, name, err)
			}
		case stream.NameLocalSearch:
			g, err := stream.OfflineGreedy(e.context(), m, f.k, stream.GreedyOptions{Workers: f.g.threads})
			if err != nil {
				return greedyError(e, name, err)
			}
			ls, err := localSearch(e.context(), f.oracle, m, f.k, g.Solution, f.ls, name)
			if err != nil {
				return err
			}
			if !f.g.quiet {
				logLocalSearch(e.stderr, ls, g.Seconds)
			}
			res = ls.Result
		default:
			s, err := f.newSolver(name, m)
			if err != nil {
				return err
			}
			opt := stream.RunOptions{}
			if f.trajectory != "" {
				opt.Every = f.every
				opt.Trajectory = func(p stream.Point) { traj = append(traj, trajectoryRow(name, p)) }
			} else if bar != nil {
				// Samples only drive the progress bar (their time is not
				// counted in the run's seconds).
				opt.Every = max(1, len(order)/200)
				opt.Trajectory = func(stream.Point) {}
			}
			if bar != nil {
				sample, seen := opt.Trajectory, int64(0)
				opt.Trajectory = func(p stream.Point) {
					sample(p)
					bar.Add(int(p.Items - seen))
					seen = p.Items
				}
			}
			if res, err = stream.Run(e.context(), s, order, opt); err != nil {
				return err
			}
		}
		results = append(results, res)
		if f.ls.polish && name != stream.NameOfflineGreedy && name != stream.NameLocalSearch {
			ls, err := localSearch(e.context(), f.oracle, m, f.k, res.Solution, f.ls, name+polishSuffix)
			if err != nil {
				return err
			}
			if !f.g.quiet {
				logLocalSearch(e.stderr, ls, res.Seconds)
			}
			results = append(results, ls.Result)
		}
	}
	bar.Finish()
	if !f.g.quiet {
		fmt.Fprintf(e.stderr, "infer: %d algorithms over %d items in %.2fs (backend %s)\n", len(algos), len(order), time.Since(start).Seconds(), blas.Backend())
	}
	return f.writeInferResults(e, results, traj, m)
}

// writeInferResults writes the trajectory (--trajectory; "-" for standard
// output, the results then going to standard error) and prints the
// results as JSON or a table; with a model m (nil for item streams) the
// solutions name its items as printInferTable does.
func (f *inferFlags) writeInferResults(e *env, results []stream.Result, traj [][]string, m *ndpp.Model) error {
	if f.trajectory != "" {
		if err := outfile.WriteStd(f.trajectory, e.stdout, csvContent(trajectoryHeader, traj)); err != nil {
			return fmt.Errorf("writing the trajectory: %w", err)
		}
	}
	e = reportTo(e, f.trajectory)
	if f.g.json {
		return printInferJSON(e.stdout, results, m)
	}
	printInferTable(e.stdout, results, m)
	return nil
}

// check validates the flags and returns the algorithms to run.
// greedyError is the error of the offline greedy of algorithm name: the
// command's context's error when it stopped the greedy, else a usage error
// (the greedy refuses only its arguments).
func greedyError(e *env, name string, err error) error {
	if ctxErr := e.context().Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return fmt.Errorf("%s: %w", name, err)
	}
	return usagef("%s: %v", name, err)
}

func (f *inferFlags) check() ([]string, error) {
	sources := 0
	for _, on := range []bool{f.synthetic, f.model != "", f.items != ""} {
		if on {
			sources++
		}
	}
	if sources != 1 {
		return nil, usagef("give exactly one of --model FILE, --synthetic and --items PATH")
	}
	if (f.kernel != "") != (f.items != "") {
		return nil, usagef("--kernel M.npz goes with --items (the kernel of the stream's items), and --items needs it")
	}
	if f.format != "auto" && f.items == "" {
		return nil, usagef("--format applies to --items only")
	}
	if f.readAhead < 0 || f.readAhead > 1024 {
		return nil, usagef("--read-ahead must be in [0, 1024] chunks (got %d)", f.readAhead)
	}
	if f.synthetic && (f.n < 1 || f.d < 1) {
		return nil, usagef("--n and --d must be ≥ 1 (got %d, %d)", f.n, f.d)
	}
	if !(f.diag >= 0) || math.IsInf(f.diag, 0) {
		return nil, usagef("--diag must be a finite number ≥ 0 (got %v)", f.diag)
	}
	if f.diag != 0 && !f.synthetic {
		return nil, usagef("--diag applies to --synthetic models only (a model file carries its own diagonal)")
	}
	if f.k < 1 {
		return nil, usagef("--k must be ≥ 1 (got %d)", f.k)
	}
	if math.IsNaN(f.alpha) || math.IsInf(f.alpha, 0) || f.alpha < 1 {
		return nil, usagef("--alpha must be a finite number ≥ 1 (got %v)", f.alpha)
	}
	if f.stashCap < 0 {
		return nil, usagef("--stash-cap must be ≥ 0 (got %d)", f.stashCap)
	}
	if f.order != "id" && f.order != "random" {
		return nil, usagef("--order must be id or random (got %q)", f.order)
	}
	if f.oracle != "fast" && f.oracle != "naive" {
		return nil, usagef("--oracle must be fast or naive (got %q)", f.oracle)
	}
	if f.every < 1 {
		return nil, usagef("--every must be ≥ 1 (got %d)", f.every)
	}
	if err := f.ls.check(); err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, a := range strings.Split(f.algos, ",") {
		a = strings.TrimSpace(a)
		if a == "all" { // the online algorithms and offline greedy, in their order
			for _, b := range inferAlgos {
				if !seen[b] {
					seen[b] = true
					out = append(out, b)
				}
			}
			continue
		}
		known := false
		for _, b := range append(inferAlgos, inferExtraAlgos...) {
			known = known || a == b
		}
		if !known {
			return nil, usagef("unknown algorithm %q in --algos (known: all, %s)", a, strings.Join(append(inferAlgos, inferExtraAlgos...), ", "))
		}
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out, nil
}

func (f *inferFlags) loadModel() (*ndpp.Model, error) {
	if f.synthetic {
		if err := f.g.budget.Check(fmt.Sprintf("a synthetic model of n = %d items and d = %d", f.n, f.d), ndpp.RandomMemory(f.n, f.d)); err != nil {
			return nil, err
		}
		return ndpp.Random(f.n, f.d, f.seed, ndpp.RandomOptions{Diag: f.diag}), nil
	}
	m, err := loadModel(f.model, f.g.budget)
	if err != nil {
		return nil, modelFileError(err)
	}
	return m, nil
}

// newOracle returns the oracle selected by --oracle with capacity k.
func newOracle(kind string, m *ndpp.Model, k int) (detcache.Oracle, error) {
	if kind == "naive" {
		return detcache.NewNaive(m, k)
	}
	return detcache.NewFast(m, k)
}

func (f *inferFlags) newSolver(name string, m *ndpp.Model) (stream.Solver, error) {
	o, err := newOracle(f.oracle, m, f.k)
	if err != nil {
		return nil, usagef("%v", err)
	}
	// The naive oracle is for side-by-side timing of the oracles: every
	// candidate value goes through it.
	opt := stream.Options{Alpha: f.alpha, StashCap: f.stashCap, OracleOnly: f.oracle == "naive"}
	s, err := stream.NewSolver(name, o, f.k, m.N(), opt)
	if errors.Is(err, stream.ErrUnknownSolver) {
		return nil, usagef("unknown algorithm %q", name)
	}
	if err != nil {
		return nil, usagef("%s: %v", name, err)
	}
	return s, nil
}

func trajectoryRow(algo string, p stream.Point) []string {
	return []string{algo, strconv.FormatInt(p.Items, 10), strconv.FormatFloat(p.Value.Log, 'g', -1, 64),
		strconv.FormatBool(p.Value.Zero), strconv.Itoa(p.Size), strconv.FormatInt(p.Evals, 10),
		strconv.FormatInt(p.Swaps, 10), strconv.Itoa(p.Stash)}
}

func toInferResult(r stream.Result, m *ndpp.Model) inferResult {
	out := inferResult{
		Algo: r.Algo, K: r.K, Solution: r.Solution, DetEvals: r.Evals, Swaps: r.Swaps, Stash: r.Stash,
		Items: r.Items, Seconds: r.Seconds, ItemsPerSec: r.ItemsPerSec(),
	}
	if out.Solution == nil {
		out.Solution = []int{}
	}
	if named(m) {
		out.SolutionItems = itemNames(m, r.Solution)
	}
	if ob := r.Objective(); !ob.Zero {
		v := ob.Log
		out.LogValue = &v
	}
	return out
}

// named reports whether m records the names of its items (a vocabulary
// or ids), so that its rows are not what users call the items. Without a
// model (infer --items) the items are named by the stream's ids.
func named(m *ndpp.Model) bool { return m != nil && (m.Vocab() != nil || m.IDs() != nil) }

// itemNames returns the model's names of rows (see ndpp.Model.Token).
func itemNames(m *ndpp.Model, rows []int) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = m.Token(r)
	}
	return out
}

func printInferJSON(w io.Writer, results []stream.Result, m *ndpp.Model) error {
	out := struct {
		Results []inferResult `json:"results"`
	}{Results: []inferResult{}}
	for _, r := range results {
		out.Results = append(out.Results, toInferResult(r, m))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// printInferTable prints the results and each solution: the items' names
// for a model that records them (see named), else its rows.
func printInferTable(w io.Writer, results []stream.Result, m *ndpp.Model) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "algo\tk\t|S|\tlog f(S)\tdet evals\tswaps\tstash (peak)\titems\tseconds\titems/s\t")
	for _, r := range results {
		lv := "f=0"
		if ob := r.Objective(); !ob.Zero {
			lv = strconv.FormatFloat(ob.Log, 'f', 4, 64)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d\t%d (%d)\t%d\t%.3f\t%.4g\t\n", r.Algo, r.K, len(r.Solution), lv,
			r.Evals, r.Swaps, r.Stash, r.PeakStash, r.Items, r.Seconds, r.ItemsPerSec())
	}
	tw.Flush()
	for _, r := range results {
		if named(m) {
			fmt.Fprintf(w, "%s: items %s\n", r.Algo, strings.Join(itemNames(m, r.Solution), " "))
		} else {
			fmt.Fprintf(w, "%s: %v\n", r.Algo, r.Solution)
		}
	}
}
