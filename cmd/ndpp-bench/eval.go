package main

import (
	"fmt"
	"slices"
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
	g       globals
	model   string
	against string
	test    string
	train   string
	bf      basketFlags
	seed    uint64
}

func runEval(e *env, args []string) error {
	var f evalFlags
	fs := newFlagSet(e, "eval", "evaluate a model (.npz, trained anywhere) on a test basket file; tokens are the model's item ids when it carries ids or a vocabulary, else 0-based rows",
		"ndpp-bench eval --model apparel.npz --test testdata/1_100_100_100_apparel_regs.csv --json", &f.g)
	fs.StringVar(&f.model, "model", "", "model file (.npz, required)")
	fs.StringVar(&f.test, "test", "", "test basket file, or - for standard input (required)")
	fs.StringVar(&f.against, "against", "", "a second model (.npz) of the same items to evaluate on the same baskets: the report adds its figures and the --model's paired differences from it (per-basket differences, whose standard errors are well below the two models' own combined)")
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
	if err := checkFiles([]outfile.File{modelFile("--model", f.model), stdFile("--test", f.test), stdFile("--train", f.train), modelFile("--against", f.against)}, nil); err != nil {
		return err
	}
	m, err := loadModel(f.model, f.g.budget)
	if err != nil {
		return err
	}
	models := []*ndpp.Model{m}
	if f.against != "" {
		a, err := loadModel(f.against, f.g.budget)
		if err != nil {
			return fmt.Errorf("--against: %w", err)
		}
		if !sameModelItems(m, a) {
			return fmt.Errorf("--against %s: its items are not --model's (%d and %d items; the same ids, tokens or rows are needed)", f.against, a.N(), m.N())
		}
		models = append(models, a)
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
	cmp, err := eval.Compare(e.context(), models, baskets, eval.Training{Baskets: train},
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
	if f.against != "" {
		if err := r.setAgainst(f.against, met, cmp.Models[1]); err != nil {
			return err
		}
	}
	return writeMetrics(e, &f.g, r, extra)
}

// sameModelItems reports whether a and b are models of the same items:
// the same ids, or the same tokens, in the same rows, or (neither
// recording either) the same number of rows.
func sameModelItems(a, b *ndpp.Model) bool {
	if ai, bi := a.IDs(), b.IDs(); ai != nil || bi != nil {
		return slices.Equal(ai, bi)
	}
	av, bv := a.Vocab(), b.Vocab()
	switch {
	case av != nil && bv != nil:
		return slices.Equal(av.Tokens(), bv.Tokens())
	case av != nil || bv != nil:
		return false
	}
	return a.N() == b.N()
}
