// Command ndpp-beam runs ndpp's batch work as Apache Beam pipelines:
//
//	ndpp-beam score --model M.npz --input GLOB --output PREFIX [--recommend N] [--summary S.json]
//	ndpp-beam learn --data GLOB --d D --steps T --out M.npz
//	ndpp-beam map --items GLOB --kernel M.npz --k K --shards S [--coreset K′] [--polish final|none|all] [--buffer B] --out F.json
//
// Outputs follow ndpp's output policy (package internal/outfile): an
// output that is one of the inputs (a file the input glob matches, through
// symbolic or hard links too) is refused before any work; local files are
// replaced atomically, a symbolic link's target is replaced and the link
// kept, a device or FIFO is written through (but not as score --summary,
// which the command reads back: a regular file is needed). learn
// --work-dir must be a directory the command can write in, checked before
// the job as the outputs are. learn --out - writes the model
// to standard output, and so does map --out - with the in-process runner;
// inputs are globs the workers read and cannot be standard input.
//
// Mistakes in the command line exit with status 2, other failures with 1.
//
// Beam's own flags select the runner: in process on Prism by default
// (--runner=prism), or --runner=universal --endpoint=HOST:PORT for a
// portable job server (Flink, Spark, an external Prism), --runner=dataflow
// for Google Cloud Dataflow. beam/README.md says which of them were run.
// Beam's and Prism's INFO logs are shown with --verbose only. Jobs whose
// workers run in this process (LOOPBACK, the in-process runner's default)
// leave nothing in the temporary directory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"

	"github.com/ndpp-go/ndpp/beam/pipelines"
	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/eval"
	"github.com/ndpp-go/ndpp/internal/cmdenv"
	"github.com/ndpp-go/ndpp/internal/memlimit"
	"github.com/ndpp-go/ndpp/internal/outfile"
	"github.com/ndpp-go/ndpp/learn"
	"github.com/ndpp-go/ndpp/ndpp/npz"
	"github.com/ndpp-go/ndpp/stream"
)

const usage = `usage: ndpp-beam <command> [flags] [Beam flags]

commands:
  score   score basket files with a model: the lines of ndpp-bench score, one output file per shard
  learn   the offline learner's full-batch mode, one pipeline run per step
  map     MAP inference over item files by composable core-sets: per-shard greedy, merge, final solve (JSON)

'ndpp-beam <command> -h' lists the command's flags, then Beam's runner flags: --runner
(prism, the default, in process; universal with --endpoint and --environment_type;
flink, spark, dataflow), --job_name, ... See beam/README.md for what was run where.
`

// beamFlags are the flags registered on flag.CommandLine before the
// command's own: the Beam SDK's and its runners'.
var beamFlags map[string]bool

// verbose shows the Beam SDK's and Prism's INFO logs.
var verbose bool

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) >= 2 && (args[1] == "-h" || args[1] == "-help" || args[1] == "--help") {
		fmt.Fprint(stderr, usage)
		return 0
	}
	// NDPP_BLAS chooses the backend of the driver and of every worker
	// process (the library reads no environment).
	if name := cmdenv.Backend(); name != "" {
		if err := blas.Use(name); err != nil {
			fmt.Fprintf(stderr, "ndpp-beam: %v\n", cmdenv.BackendError(name, err))
			return 2
		}
	}
	if len(args) < 2 || strings.HasPrefix(args[1], "-") {
		// Started as a Beam worker (the runner passes only flags): Init
		// runs the worker harness and does not return.
		flag.Parse()
		beam.Init()
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd := args[1]
	os.Args = append([]string{args[0] + " " + cmd}, args[2:]...)
	beamFlags = map[string]bool{}
	flag.VisitAll(func(f *flag.Flag) { beamFlags[f.Name] = true })
	flag.CommandLine.SetOutput(stderr)
	flag.Usage = func() { printUsage(stderr, os.Args[0]) }
	flag.BoolVar(&verbose, "verbose", false, "show the INFO logs of Beam and of the in-process Prism runner (default: warnings and errors only)")
	var err error
	switch cmd {
	case "score":
		err = runScore(stderr)
	case "learn":
		err = runLearn(stdout, stderr)
	case "map":
		err = runMap(stdout, stderr)
	case "help":
		fmt.Fprint(stderr, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "ndpp-beam: unknown command %q\n%s", cmd, usage)
		return 2
	}
	if processEnv != nil {
		processEnv.close()
	}
	if err != nil {
		fmt.Fprintf(stderr, "ndpp-beam %s: %v\n", cmd, err)
		if errors.Is(err, errUsage) || errors.Is(err, outfile.ErrUsage) {
			return 2
		}
		return 1
	}
	return 0
}

// printUsage lists the command's flags, then apart the Beam SDK's and its
// runners' (registered on the same flag set).
func printUsage(w io.Writer, name string) {
	own := flag.NewFlagSet(name, flag.ContinueOnError)
	runner := flag.NewFlagSet(name, flag.ContinueOnError)
	flag.VisitAll(func(f *flag.Flag) {
		fs := own
		if beamFlags[f.Name] {
			fs = runner
		}
		fs.Var(f.Value, f.Name, f.Usage)
		fs.Lookup(f.Name).DefValue = f.DefValue
	})
	own.SetOutput(w)
	runner.SetOutput(w)
	fmt.Fprintf(w, "Usage of %s:\n", name)
	own.PrintDefaults()
	fmt.Fprintf(w, "\nBeam runner flags:\n")
	runner.PrintDefaults()
}

// initBeam parses the flags and initialises Beam, its logs at level warn
// unless --verbose, and prepares a PROCESS environment (process.go).
func initBeam() error {
	flag.Parse()
	if !verbose {
		beamlog.LogLevel = "warn"
	}
	beam.Init()
	var err error
	processEnv, err = prepareProcessEnv()
	return err
}

// maxMemoryFlag adds --max-memory, the budget of the command's large
// allocations; budget resolves it.
func maxMemoryFlag() *string {
	return flag.String("max-memory", "", "memory budget that large allocations are checked against before they are made, e.g. 8G (default: $"+cmdenv.MemoryVar+", else 3/4 of the machine's or the process's memory limit, on the driver and on each worker)")
}

// budget returns the budget of --max-memory s, else of the environment
// (cmdenv.Budget).
func budget(s string) (memlimit.Budget, error) {
	if s == "" {
		return cmdenv.Budget("ndpp-beam")
	}
	b, err := memlimit.Parse(s)
	if err != nil {
		return memlimit.Budget{}, usageError("--max-memory: %v", err)
	}
	return memlimit.Budget{Bytes: b, Source: "--max-memory"}, nil
}

// Why the flags refuse "-" (outfile.File.Why).
const (
	whyGlob  = "the pipeline's workers read the files a glob matches; give a glob"
	whyModel = "the workers read the model file (.npz) by its path; give a file"
)

// inProcess reports whether the pipeline runs in this process (the Prism
// runner, the default), so that its workers share the driver's files.
func inProcess() bool {
	r := *runners.Runner
	return r == "" || r == "prism"
}

// formatFlags are the basket-file flags of ndpp-bench.
func formatFlags() *pipelines.BasketFormat {
	f := &pipelines.BasketFormat{}
	flag.StringVar(&f.Format, "format", "lines", "basket file format: lines (one basket per line) or csv (one row per item, with --basket-col and --item-col)")
	flag.StringVar(&f.BasketCol, "basket-col", "", "csv: header of the basket id column")
	flag.StringVar(&f.ItemCol, "item-col", "", "csv: header of the item column")
	flag.StringVar(&f.Comma, "comma", ",", "csv: field separator (one character)")
	flag.IntVar(&f.MaxSize, "max-size", 0, "skip baskets with more items (0 = no limit)")
	return f
}

// errUsage marks a mistake in the command line: exit status 2, as for
// the outputs that outfile.Check refuses.
var errUsage = errors.New("usage")

type usageErr struct{ msg string }

func (u usageErr) Error() string { return u.msg }
func (u usageErr) Unwrap() error { return errUsage }

func usageError(format string, a ...any) error {
	flag.Usage()
	return usageErr{fmt.Sprintf(format, a...)}
}

func runScore(stderr io.Writer) error {
	var opt pipelines.ScoreOptions
	flag.StringVar(&opt.Model, "model", "", "model file (.npz) on a filesystem the workers read (required)")
	flag.StringVar(&opt.Input, "input", "", "glob of basket files (required)")
	flag.StringVar(&opt.Output, "output", "", "output prefix: files PREFIX-SSSSS-of-NNNNN, one per shard, empty when the shard holds no basket (required)")
	flag.BoolVar(&opt.FileColumn, "file-column", false, "name the input file on every line (file<TAB>line<TAB>…, or a JSON \"file\" field) also when --input matches one file (with several it is always named)")
	flag.StringVar(&opt.Summary, "summary", "", "write a JSON summary here: the baskets read per input file, the lines written per shard, the totals and whether they agree (the run fails when they do not)")
	flag.IntVar(&opt.Recommend, "recommend", 0, "emit the top N next-item recommendations instead of log-likelihoods")
	flag.BoolVar(&opt.JSON, "json", false, "JSON lines, as ndpp-bench --json")
	flag.IntVar(&opt.Shards, "shards", 1, "parts each file is read in, and output files")
	flag.IntVar(&opt.ChunkSize, "chunk-size", pipelines.DefaultChunkSize, "baskets scored together")
	maxMem := maxMemoryFlag()
	format := formatFlags()
	if err := initBeam(); err != nil {
		return err
	}
	if opt.Model == "" || opt.Input == "" || opt.Output == "" {
		return usageError("--model, --input and --output are required")
	}
	if opt.Shards < 1 || opt.ChunkSize < 1 || opt.Recommend < 0 {
		return usageError("--shards and --chunk-size must be ≥ 1, --recommend ≥ 0")
	}
	b, err := budget(*maxMem)
	if err != nil {
		return err
	}
	opt.MaxMemory = b.Option()
	opt.Format = *format
	outputs := []outfile.File{{Flag: "--output", Path: opt.Output, Why: "the output is one file per shard, PREFIX-SSSSS-of-NNNNN"}}
	if opt.Output != outfile.Std {
		outputs = outputs[:0]
		for i := range opt.Shards {
			outputs = append(outputs, outfile.File{Flag: "--output", Path: pipelines.ShardName(opt.Output, i, opt.Shards)})
		}
	}
	if opt.Summary != "" {
		outputs = append(outputs, outfile.File{Flag: "--summary", Path: opt.Summary, Regular: true,
			Why: "the pipeline writes the summary by its path, and the command reads it back; give a file"})
	}
	inputs := []outfile.File{{Flag: "--model", Path: opt.Model, Why: whyModel}, {Flag: "--input", Path: opt.Input, Glob: true, Why: whyGlob}}
	if err := outfile.Check(inputs, outputs); err != nil {
		return err
	}
	ctx := context.Background()
	p, s := beam.NewPipelineWithRoot()
	if _, err := pipelines.Score(ctx, s, opt); err != nil {
		return err
	}
	start := time.Now()
	if err := runPipeline(ctx, p); err != nil {
		return err
	}
	el := time.Since(start).Seconds()
	if opt.Summary == "" {
		fmt.Fprintf(stderr, "ndpp-beam score: done in %.2fs, output %s … %s\n", el, pipelines.ShardName(opt.Output, 0, opt.Shards), pipelines.ShardName(opt.Output, opt.Shards-1, opt.Shards))
		return nil
	}
	sum, err := pipelines.ReadScoreSummary(ctx, opt.Summary)
	if err != nil {
		return err
	}
	if !sum.Complete {
		return fmt.Errorf("incomplete output: %d baskets read, %d lines written in %d of %d shard files (summary %s)", sum.Baskets, sum.Lines, len(sum.Shards), opt.Shards, opt.Summary)
	}
	fmt.Fprintf(stderr, "ndpp-beam score: %d baskets from %d files, %d lines in %d shard files %s … %s in %.2fs; summary %s\n",
		sum.Baskets, len(sum.Files), sum.Lines, len(sum.Shards), pipelines.ShardName(opt.Output, 0, opt.Shards), pipelines.ShardName(opt.Output, opt.Shards-1, opt.Shards), el, opt.Summary)
	return nil
}

func runLearn(stdout, stderr io.Writer) error {
	var opt pipelines.LearnOptions
	l := &opt.Learner
	var out string
	var diag, quiet bool
	flag.StringVar(&opt.Data, "data", "", "glob of basket files, all training baskets (required)")
	flag.IntVar(&l.D, "d", learn.DefaultD, "rank parameter d")
	flag.IntVar(&opt.Steps, "steps", 0, "full-batch steps, one pipeline run each (required)")
	flag.StringVar(&out, "out", "", "write the learned model to this .npz file, or - for standard output (required)")
	flag.Uint64Var(&l.Seed, "seed", 1, "seed of the initialisation")
	flag.BoolVar(&l.Shared, "shared", false, "B = V")
	flag.BoolVar(&diag, "diag", true, "learn the kernel with a diagonal, L = D + VᵀV + BᵀCB (false: L = VᵀV + BᵀCB)")
	flag.Float64Var(&l.LR, "lr", 0, fmt.Sprintf("learning rate (default %g)", learn.DefaultOfflineLR))
	flag.Float64Var(&l.DiagLR, "diag-lr", 0, "with --diag: learning rate of the diagonal (default --lr)")
	flag.Float64Var(&l.RateScale, "rate-scale", 0, fmt.Sprintf("with --diag: scale item i's embedding steps by min(1, √(δᵢ/rate-scale)) (default %g; negative: off)", learn.DefaultRateScale))
	flag.Float64Var(&l.Alpha, "alpha", 0, "regulariser weight α of Σ‖vᵢ‖²/μᵢ")
	flag.Float64Var(&l.Beta, "beta", 0, "regulariser weight β of Σ‖bᵢ‖²/μᵢ")
	flag.BoolVar(&l.FixC, "fix-c", false, "keep C at its initial value")
	flag.Float64Var(&l.Init.Scale, "init-scale", 0, fmt.Sprintf("standard deviation of the initial entries of V and B (default %g/√d; with --diag %g/√d)", learn.DefaultInitScaleLowRank, learn.DefaultInitScaleDiag))
	flag.Float64Var(&l.Init.Share, "init-share", 0, fmt.Sprintf("with --diag: initial E‖vᵢ‖² as a share of the item's initial δᵢ (default %g; negative: --init-scale as drawn)", learn.DefaultOfflineInitShare))
	flag.IntVar(&opt.Shards, "shards", 1, "parts each file is read in (the gradient is summed per shard, then in total)")
	flag.IntVar(&opt.ChunkSize, "chunk-size", pipelines.DefaultChunkSize, "baskets per chunk")
	flag.StringVar(&opt.WorkDir, "work-dir", "", "directory shared by the driver and the workers for the vocabulary, the parameters and the gradients of each step (default with the in-process Prism runner: a new local temporary directory; required with other runners)")
	flag.BoolVar(&quiet, "quiet", false, "no progress lines")
	maxMem := maxMemoryFlag()
	format := formatFlags()
	if err := initBeam(); err != nil {
		return err
	}
	if opt.Data == "" || out == "" || opt.Steps < 1 {
		return usageError("--data, --out and --steps ≥ 1 are required")
	}
	if l.D < 1 || opt.Shards < 1 || opt.ChunkSize < 1 {
		return usageError("--d, --shards and --chunk-size must be ≥ 1")
	}
	l.LowRank = !diag
	opt.Format = *format
	inputs := []outfile.File{{Flag: "--data", Path: opt.Data, Glob: true, Why: whyGlob}}
	if err := outfile.Check(inputs, []outfile.File{{Flag: "--out", Path: out, Stream: true}}); err != nil {
		return err
	}
	if opt.WorkDir == outfile.Std {
		return usageError("--work-dir cannot be standard input or output (-): it names a directory")
	}
	// The work directory is checked as the outputs are, before any job
	// (not one on an object store).
	if opt.WorkDir != "" {
		if err := outfile.CheckDir(opt.WorkDir); err != nil {
			if pe, ok := errors.AsType[*fs.PathError](err); ok {
				err = pe.Err
			}
			return fmt.Errorf("--work-dir: cannot write in %s: %w", opt.WorkDir, err)
		}
	}
	// The d-sized state is checked before the data is read, the items'
	// once the vocabulary is built (LearnOptions.MaxMemory).
	b, err := budget(*maxMem)
	if err != nil {
		return err
	}
	opt.MaxMemory = b.Bytes
	if err := pipelines.CheckLearnMemory(opt.Learner, 0, b.Bytes); err != nil {
		return b.Rename(err)
	}
	if opt.WorkDir == "" {
		if r := *runners.Runner; r != "" && r != "prism" {
			return usageError("--work-dir is required with --runner=%s: a directory the driver and the workers share", r)
		}
		dir, err := os.MkdirTemp("", "ndpp-beam-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		opt.WorkDir = dir
	}
	start := time.Now()
	if !quiet {
		opt.Progress = func(step int, sum *learn.GradSum) {
			fmt.Fprintf(stderr, "ndpp-beam learn: step %d/%d: mean basket term %.6f over %d baskets (%.1fs)\n",
				step, opt.Steps, sum.Value/float64(sum.Baskets), sum.Baskets, time.Since(start).Seconds())
		}
	}
	ctx := context.Background()
	res, err := pipelines.Learn(ctx, runPipeline, opt)
	if err != nil {
		return b.Rename(err)
	}
	// All baskets are training baskets: of eval.CheckDiverged's rule only
	// the kernel's scale applies.
	if err := eval.CheckDiverged(ctx, res.Model, nil, nil); err != nil {
		if de, ok := errors.AsType[*eval.DivergedError](err); ok {
			return fmt.Errorf("training diverged (lower --lr or --init-scale); no model saved: %w", de.Err)
		}
		return err
	}
	if out == outfile.Std {
		err = outfile.WriteStd(out, stdout, func(w io.Writer) error { return npz.Write(w, res.Model) })
	} else {
		err = pipelines.SaveModel(ctx, out, res.Model)
	}
	if err != nil {
		return err
	}
	if !quiet {
		fmt.Fprintf(stderr, "ndpp-beam learn: %d baskets over %d items, %d steps in %.1fs; model written to %s\n",
			res.Baskets, res.Params.N, opt.Steps, time.Since(start).Seconds(), out)
	}
	return nil
}

func runMap(stdout, stderr io.Writer) error {
	var opt pipelines.MapOptions
	flag.StringVar(&opt.Items, "items", "", "glob of item files, NPY or text, optionally gzip (required); NPY ids are row positions offset by the rows of the files before (in name order), text ids are as written")
	flag.StringVar(&opt.Kernel, "kernel", "", "model file (.npz) giving the items' kernel, on a filesystem the workers read (required)")
	flag.IntVar(&opt.K, "k", 0, "size of the solution (required)")
	flag.IntVar(&opt.Shards, "shards", 1, "shards: item id mod shards (also the read tasks per file)")
	flag.IntVar(&opt.Coreset, "coreset", 0, fmt.Sprintf("candidates k′ ≥ k kept per shard and by the merge (default %dk; beyond the kernel's rank bound picked in rounds of greedy on the items earlier rounds left)", stream.DefaultCoresetFactor))
	polish := flag.String("polish", "final", "local search after greedy: final (the final solution, over the union of the shards' candidates), none, or all (also every core-set)")
	flag.IntVar(&opt.Buffer, "buffer", 0, fmt.Sprintf("items an accumulator holds before it is reduced to k′ candidates (0: each shard's items held whole when a bound on their number is known, from NPY headers or uncompressed text sizes, and they fit the memory budget, --max-memory; else %d)", pipelines.DefaultMapBuffer))
	flag.IntVar(&opt.ChunkSize, "chunk-size", 8*pipelines.DefaultChunkSize, "items that travel together")
	flag.StringVar(&opt.Out, "out", "", "write the JSON result to this file, or - for standard output (with the in-process runner) (required)")
	maxMem := maxMemoryFlag()
	if err := initBeam(); err != nil {
		return err
	}
	if opt.Items == "" || opt.Kernel == "" || opt.Out == "" || opt.K < 1 {
		return usageError("--items, --kernel, --out and --k ≥ 1 are required")
	}
	if opt.Shards < 1 || opt.Buffer < 0 || opt.ChunkSize < 1 {
		return usageError("--shards and --chunk-size must be ≥ 1, --buffer ≥ 0")
	}
	b, err := budget(*maxMem)
	if err != nil {
		return err
	}
	opt.MaxMemory = b.Option()
	if opt.Polish, err = pipelines.ParsePolish(*polish); err != nil {
		return usageError("%v", err)
	}
	inputs := []outfile.File{{Flag: "--items", Path: opt.Items, Glob: true, Why: whyGlob}, {Flag: "--kernel", Path: opt.Kernel, Why: whyModel}}
	result := outfile.File{Flag: "--out", Path: opt.Out, Stream: inProcess(),
		Why: fmt.Sprintf("with --runner=%s a worker writes the result; give a path", *runners.Runner)}
	if err := outfile.Check(inputs, []outfile.File{result}); err != nil {
		return err
	}
	if opt.Out == outfile.Std {
		// The in-process worker writes the result to a temporary file,
		// copied to stdout after the run.
		dir, err := os.MkdirTemp("", "ndpp-beam-map-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		opt.Out = filepath.Join(dir, "result.json")
	}
	ctx := context.Background()
	p, s := beam.NewPipelineWithRoot()
	if _, err := pipelines.Map(ctx, s, opt); err != nil {
		return err
	}
	start := time.Now()
	if err := runPipeline(ctx, p); err != nil {
		return err
	}
	if result.Path == outfile.Std {
		data, err := os.ReadFile(opt.Out)
		if err != nil {
			return err
		}
		if err := outfile.WriteStd(outfile.Std, stdout, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "ndpp-beam map: done in %.2fs, result %s\n", time.Since(start).Seconds(), result.Path)
	return nil
}
