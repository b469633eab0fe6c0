package pipelines

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/ndpp-go/ndpp/internal/memlimit"
	"github.com/ndpp-go/ndpp/learn"
	"github.com/ndpp-go/ndpp/ndpp"
)

func init() {
	register.DoFn4x1[context.Context, int64, string, func(int64, gradAcc), error](&gradFn{})
	register.Emitter2[int64, gradAcc]()
	register.Combiner2[gradAcc, gradAcc](&gradSumFn{})
	register.DoFn2x1[context.Context, gradAcc, error](&writeGradFn{})
}

// gradFn computes the basket terms of one read task at the current
// parameters: the GradSum of each chunk of its baskets
// (learn.BasketGradient), added up and emitted once, keyed by the task's
// shard, so that what leaves the task is one sum of the model's size. The
// parameters come as a side input — the path of the file the driver wrote
// for this step — and are loaded once per worker and step.
type gradFn struct {
	Reader    reader
	VocabPath string
	N         int
	Eps       float64
}

func (f *gradFn) ProcessElement(ctx context.Context, key int64, paramsPath string, emit func(int64, gradAcc)) error {
	t := keyTask(key, f.Reader.Parts)
	p, err := paramsCache.get(ctx, paramsPath, loadParams)
	if err != nil {
		return err
	}
	voc, err := vocabCache.get(ctx, f.VocabPath, loadVocab)
	if err != nil {
		return err
	}
	if p.N != f.N || voc.Len() != f.N {
		return fmt.Errorf("pipelines: parameters of %d items and a vocabulary of %d tokens; the learner has %d items", p.N, voc.Len(), f.N)
	}
	var total *learn.GradSum
	var gerr error
	err = f.Reader.chunks(ctx, t, voc, f.N, false, func(c Chunk) {
		if gerr != nil {
			return
		}
		s, err := learn.BasketGradient(ctx, p, c.Baskets, f.Eps)
		switch {
		case err != nil:
			gerr = err
		case total == nil:
			total = s
		default:
			gerr = total.Add(s)
		}
	})
	if err == nil {
		err = gerr
	}
	if err != nil {
		return err
	}
	if total != nil {
		emit(int64(t.Part), gradAcc{S: total})
	}
	return nil
}

// gradSumFn adds GradSums: the per-shard sums (CombinePerKey) and their
// total (Combine).
type gradSumFn struct{}

func (gradSumFn) CreateAccumulator() gradAcc { return gradAcc{} }

func (gradSumFn) AddInput(a, in gradAcc) (gradAcc, error) { return addGrad(a, in) }

func (gradSumFn) MergeAccumulators(a, b gradAcc) (gradAcc, error) { return addGrad(a, b) }

// addGrad adds b into a (a copy of b when a is empty).
func addGrad(a, b gradAcc) (gradAcc, error) {
	if b.S == nil {
		return a, nil
	}
	if a.S == nil {
		c := *b.S
		g := learn.Grad{}
		for _, pr := range [][2]*[]float64{{&g.V, &c.Grad.V}, {&g.B, &c.Grad.B}, {&g.D, &c.Grad.D}, {&g.T, &c.Grad.T}} {
			if *pr[1] != nil {
				*pr[0] = append([]float64{}, *pr[1]...)
			}
		}
		c.Grad = g
		return gradAcc{S: &c}, nil
	}
	if err := a.S.Add(b.S); err != nil {
		return a, err
	}
	return a, nil
}

// writeGradFn writes the step's total to Path.
type writeGradFn struct {
	Path string
}

func (f *writeGradFn) ProcessElement(ctx context.Context, a gradAcc) error {
	data, err := encodeGradAcc(a)
	if err != nil {
		return err
	}
	return writeFile(ctx, f.Path, data)
}

// addGradientStep adds one learning step's pipeline: the read tasks, their
// basket terms at the parameters in paramsPath (a side input), summed per
// shard and in total, written to outPath.
func addGradientStep(s beam.Scope, r reader, vocabPath string, n int, eps float64, paramsPath, outPath string) {
	s = s.Scope("gradient")
	params := beam.Create(s, paramsPath)
	terms := beam.ParDo(s, &gradFn{Reader: r, VocabPath: vocabPath, N: n, Eps: eps}, readTasks(s, r), beam.SideInput{Input: params})
	shards := beam.CombinePerKey(s, &gradSumFn{}, terms)
	total := beam.Combine(s, &gradSumFn{}, beam.DropKey(s, shards))
	beam.ParDo0(s, &writeGradFn{Path: outPath}, total)
}

// LearnOptions configures Learn.
type LearnOptions struct {
	// Data is a glob of basket files on a Beam filesystem; all their
	// baskets are training baskets (hold out validation and test baskets
	// beforehand).
	Data   string
	Format BasketFormat
	// Learner holds the offline learner's options (FullBatch is implied;
	// Batch, MaxEpochs, Patience, MaxStalls, Tolerance, EvalEvery,
	// Workers, Progress, TimeLimit and TraceSet do not apply).
	Learner learn.OfflineOptions
	// Steps is the number of full-batch steps (≥ 1).
	Steps int
	// Shards is the number of parts each file is read in (default 1).
	Shards int
	// ChunkSize is the number of baskets in a chunk (DefaultChunkSize if
	// 0).
	ChunkSize int
	// WorkDir holds the vocabulary, the parameters of each step and the
	// step's gradient: a directory on a filesystem the driver and the
	// workers share.
	WorkDir string
	// Progress, when non-nil, is called after every step.
	Progress func(step int, sum *learn.GradSum)
	// MaxMemory is the driver's memory budget in bytes: once the
	// vocabulary is built, a learner whose estimate (learn.OfflineMemory
	// with one gradient sum) exceeds it is refused (0: three quarters of
	// the driver's machine or process memory limit).
	MaxMemory int64
}

// LearnResult is what Learn returns.
type LearnResult struct {
	Params *learn.Params
	Vocab  *ndpp.Vocab
	// Model is Params over Vocab: with the vocabulary's integer ids
	// (ndpp.WithIDs) when every token is an integer id written canonically
	// (ndpp.Vocab.IDs), as ndpp-bench learn records them, else with the
	// vocabulary of string tokens.
	Model *ndpp.Model
	// Baskets is the number of training baskets.
	Baskets int
	// Value is (1/m)·Σ log det(L_S + εI) at the parameters of the last
	// step (before it).
	Value float64
}

// Learn fits an NDPP by the offline learner's full-batch mode on the
// baskets of opt.Data: one pipeline run builds the vocabulary (rows in
// order of first appearance over the files in name order) and the item
// counts, then every step is one pipeline run whose CombineFn sums the
// baskets' GradSums (learn.BasketGradient at the current parameters),
// after which the driver takes the step (learn.FullBatch.Step: the
// normaliser's and the regulariser's terms and Adam). The result is that
// of learn.TrainOffline with FullBatch, no validation baskets and
// MaxEpochs = Steps on the same baskets, up to the order of the floating
// point additions of the sums.
func Learn(ctx context.Context, run Runner, opt LearnOptions) (*LearnResult, error) {
	if opt.Steps < 1 {
		return nil, fmt.Errorf("pipelines: %d learning steps; need ≥ 1", opt.Steps)
	}
	if opt.WorkDir == "" {
		return nil, errors.New("pipelines: Learn needs a work directory")
	}
	shards := max(opt.Shards, 1)
	files, err := MatchFiles(ctx, opt.Data)
	if err != nil {
		return nil, err
	}
	// The files of a run carry its id: workers keep what they loaded by
	// path, and a later run must not find an earlier run's parameters.
	work := fmt.Sprintf("%s/run-%016x-", strings.TrimSuffix(opt.WorkDir, "/"), rand.Uint64())
	vocabPath := work + "vocabulary.bin"
	v, err := BuildVocabulary(ctx, run, files, opt.Format, shards, opt.ChunkSize, work+"vocabulary-stats.bin")
	if err != nil {
		return nil, err
	}
	vdata, err := encodeVocabulary(v)
	if err != nil {
		return nil, err
	}
	if err := writeFile(ctx, vocabPath, vdata); err != nil {
		return nil, err
	}
	defer removeFile(ctx, vocabPath)
	voc, err := ndpp.NewVocab(v.Tokens)
	if err != nil {
		return nil, err
	}
	if err := CheckLearnMemory(opt.Learner, len(v.Tokens), opt.MaxMemory); err != nil {
		return nil, err
	}
	counts := make([]float64, len(v.Counts))
	for i, c := range v.Counts {
		counts[i] = float64(c)
	}
	fb, err := learn.NewFullBatch(counts, v.Baskets, opt.Learner)
	if err != nil {
		return nil, err
	}
	n := len(v.Tokens)
	r := reader{Files: files, Format: opt.Format, Parts: shards, ChunkSize: opt.ChunkSize}
	res := &LearnResult{Vocab: voc, Baskets: v.Baskets}
	for step := range opt.Steps {
		paramsPath := fmt.Sprintf("%sparams-%06d.bin", work, step)
		gradPath := fmt.Sprintf("%sgradient-%06d.bin", work, step)
		data, err := encodeParams(fb.Params())
		if err != nil {
			return nil, err
		}
		if err := writeFile(ctx, paramsPath, data); err != nil {
			return nil, err
		}
		p, s := beam.NewPipelineWithRoot()
		addGradientStep(s, r, vocabPath, n, opt.Learner.Eps, paramsPath, gradPath)
		err = run(ctx, p)
		removeFile(ctx, paramsPath)
		if err != nil {
			return nil, fmt.Errorf("pipelines: learning step %d: %w", step+1, err)
		}
		sum, err := readGradient(ctx, gradPath)
		removeFile(ctx, gradPath)
		if err != nil {
			return nil, err
		}
		if err := fb.Step(ctx, sum); err != nil {
			return nil, fmt.Errorf("pipelines: learning step %d: %w", step+1, err)
		}
		res.Value = sum.Value / float64(sum.Baskets)
		if opt.Progress != nil {
			opt.Progress(step+1, sum)
		}
	}
	res.Params = fb.Params()
	names := ndpp.WithVocab(voc)
	if ids, ok := voc.IDs(); ok {
		names = ndpp.WithIDs(ids)
	}
	if res.Model, err = res.Params.Model(names); err != nil {
		return nil, err
	}
	return res, nil
}

// CheckLearnMemory refuses Learn's driver for n items (n = 0: the part that
// does not grow with the catalogue, known before the data is read) when its
// estimate, learn.OfflineMemory with one gradient sum (the step's total),
// exceeds maxMemory bytes (LearnOptions.MaxMemory; 0: three quarters of the
// machine or process memory limit). The error names the need and the
// budget.
func CheckLearnMemory(opt learn.OfflineOptions, n int, maxMemory int64) error {
	opt.Workers = 1
	opt.FullBatch = true // the driver's full-batch steps: no next-item term
	d := opt.D
	if d <= 0 {
		d = learn.DefaultOfflineD
	}
	what := fmt.Sprintf("learning with d = %d", d)
	if n > 0 {
		what = fmt.Sprintf("learning %d items with d = %d", n, d)
	}
	return memlimit.Given(maxMemory, "LearnOptions.MaxMemory").Check(what, learn.OfflineMemory(opt, n))
}

func readGradient(ctx context.Context, path string) (*learn.GradSum, error) {
	data, err := readFile(ctx, path)
	if err != nil {
		return nil, err
	}
	a, err := decodeGradAcc(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	if a.S == nil {
		return nil, errors.New("pipelines: a learning step summed no baskets")
	}
	return a.S, nil
}
