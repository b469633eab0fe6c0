package main

import (
	"fmt"
	"strconv"

	"github.com/ndpp-go/ndpp/eval"
	"github.com/ndpp-go/ndpp/internal/outfile"
	"github.com/ndpp-go/ndpp/ndpp"
)

func init() {
	register(&command{
		name:    "eval",
		globals: gBackend | gThreads | gJSON | gQuiet | gMaxMem,
		summary: "evaluate a model on test baskets: log-likelihood, MPR, AUC, Prec@k (paper and micro protocols)",
		run:     runEval,

		interruptible: true,
	})
}

type evalFlags struct {
	g     globals
	model string
	test  string
	train string
	bf    basketFlags
	seed  uint64
}

func runEval(e *env, args []string) error {
	var f evalFlags
	fs := newFlagSet(e, "eval", "evaluate a model (.npz, trained anywhere) on a test basket file; tokens are the model's item ids when it carries ids or a vocabulary, else 0-based rows",
		"ndpp-bench eval --model apparel.npz --test testdata/1_100_100_100_apparel_regs.csv --json", &f.g)
	fs.StringVar(&f.model, "model", "", "model file (.npz, required)")
	fs.StringVar(&f.test, "test", "", "test basket file, or - for standard input (required)")
	fs.StringVar(&f.train, "train", "", "training basket file, or - for standard input: adds the baselines (popularity ranking, the independent-items model and item co-occurrence ranking, counted on it)")
	f.bf.register(fs)
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the AUC's random baskets")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.g.apply(); err != nil {
		return err
	}
	if f.model == "" || f.test == "" {
		return usagef("--model and --test are required")
	}
	if err := f.bf.check(); err != nil {
		return err
	}
	if err := checkFiles([]outfile.File{modelFile("--model", f.model), stdFile("--test", f.test), stdFile("--train", f.train)}, nil); err != nil {
		return err
	}
	m, err := loadModel(f.model, f.g.budget)
	if err != nil {
		return err
	}
	voc := m.TokenVocab()
	baskets, err := f.bf.read(f.test, e.stdin, voc, false, m.N())
	if err != nil {
		return err
	}
	if len(baskets) == 0 {
		return fmt.Errorf("%s holds no baskets", f.test)
	}
	var train [][]int // nil: no baselines
	if f.train != "" {
		if train, err = f.bf.read(f.train, e.stdin, voc, false, m.N()); err != nil {
			return err
		}
		if train == nil {
			train = [][]int{} // an empty file still names the baselines' data
		}
	}
	keys := eval.Keys(voc)
	cmp, err := eval.Compare(e.context(), []*ndpp.Model{m}, baskets, eval.Training{Baskets: train},
		eval.CompareOptions{Options: eval.Options{Seed: f.seed, Key: keys, Workers: f.g.threads, MaxMemory: f.g.budget.Bytes}})
	if err != nil {
		return f.g.budget.Rename(err)
	}
	met, secs := cmp.Models[0], cmp.ModelSeconds[0]
	if !f.g.quiet && met.Skipped > 0 {
		fmt.Fprintf(e.stderr, "eval: %d baskets skipped for MPR/Prec@k (conditioning set with zero determinant)\n", met.Skipped)
	}
	if !f.g.quiet {
		rankNote(e, "eval", met, m)
	}
	extra := [][2]string{{"items", strconv.Itoa(m.N())}, {"predicted baskets", strconv.Itoa(met.Predicted)}}
	r := toMetricsJSON("eval", m.D(), met, cmp, secs, 0, len(baskets))
	r.ItemOrder = itemOrder(voc, keys)
	return writeMetrics(e, &f.g, r, extra)
}
