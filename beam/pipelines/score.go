package pipelines

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/ndpp-go/ndpp/internal/scorefmt"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/npz"
)

func init() {
	register.DoFn3x1[context.Context, int64, func(int64, Scored), error](&scoreFn{})
	register.Emitter2[int64, Scored]()
	register.DoFn3x1[context.Context, int64, func(*Scored) bool, error](&writeShardFn{})
	register.Iter1[Scored]()
}

// ScoreOptions configures Score.
type ScoreOptions struct {
	// Model is the path of an .npz model on a Beam filesystem.
	Model string
	// Input is a glob of basket files.
	Input  string
	Format BasketFormat
	// Output is the prefix of the output files:
	// PREFIX-SSSSS-of-NNNNN, one per shard that holds baskets.
	Output string
	// Recommend, if > 0, writes the top Recommend next-item
	// recommendations of each basket instead of its log-likelihood.
	Recommend int
	// JSON writes JSON lines (ndpp-bench's --json).
	JSON bool
	// Shards is the number of parts each file is read in, and of output
	// files (default 1).
	Shards int
	// ChunkSize is the number of baskets scored together
	// (DefaultChunkSize if 0).
	ChunkSize int
	// MaxMemory is the memory budget in bytes of loading the model on each
	// worker (npz.LoadOptions.MaxBytes; 0: three quarters of the worker's
	// machine or process memory limit).
	MaxMemory int64
}

// Scored is a chunk's output: the lines of `ndpp-bench score` for the
// chunk's baskets, and where the chunk starts (for the order of the output
// file).
type Scored struct {
	File, Line int
	Text       string
}

// scoringModel is a loaded model and the vocabulary its input files are
// read with.
type scoringModel struct {
	m   *ndpp.Model
	voc *ndpp.Vocab
}

func loadScoringModel(ctx context.Context, path string, maxMemory int64) (*scoringModel, error) {
	m, err := LoadModel(ctx, path, npz.LoadOptions{MaxBytes: maxMemory})
	if err != nil {
		return nil, err
	}
	// As ndpp-bench does, a model whose kernel overflows is refused.
	if err := m.CheckScale(); err != nil {
		return nil, fmt.Errorf("pipelines: %s: %w", path, err)
	}
	return &scoringModel{m: m, voc: m.TokenVocab()}, nil
}

var scoringCache cached[*scoringModel]

// scoreFn scores one read task's baskets with the model at ModelPath,
// loaded once per worker.
type scoreFn struct {
	Reader    reader
	ModelPath string
	Recommend int
	JSON      bool
	MaxMemory int64
}

func (f *scoreFn) ProcessElement(ctx context.Context, key int64, emit func(int64, Scored)) error {
	t := keyTask(key, f.Reader.Parts)
	sm, err := scoringCache.get(ctx, f.ModelPath, func(ctx context.Context, path string) (*scoringModel, error) {
		return loadScoringModel(ctx, path, f.MaxMemory)
	})
	if err != nil {
		return err
	}
	if f.Recommend > sm.m.N() {
		return fmt.Errorf("pipelines: %d recommendations asked of a model of %d items", f.Recommend, sm.m.N())
	}
	var gains [][]float64
	var serr error
	err = f.Reader.chunks(ctx, t, sm.voc, sm.m.N(), true, func(c Chunk) {
		if serr != nil {
			return
		}
		var out []byte
		if out, serr = scorefmt.Lines(sm.m, c.Baskets, c.Lines, f.Recommend, f.JSON, &gains); serr == nil {
			emit(int64(t.Part), Scored{File: c.File, Line: c.Lines[0], Text: string(out)})
		}
	})
	if err == nil {
		err = serr
	}
	return err
}

// writeShardFn writes one shard's output, its chunks in file and line
// order, to Prefix-SSSSS-of-NNNNN.
type writeShardFn struct {
	Prefix string
	Shards int
}

func (f *writeShardFn) ProcessElement(ctx context.Context, shard int64, iter func(*Scored) bool) error {
	var all []Scored
	var s Scored
	for iter(&s) {
		all = append(all, s)
	}
	slices.SortFunc(all, func(a, b Scored) int {
		if a.File != b.File {
			return a.File - b.File
		}
		return a.Line - b.Line
	})
	size := 0
	for _, s := range all {
		size += len(s.Text)
	}
	out := make([]byte, 0, size)
	for _, s := range all {
		out = append(out, s.Text...)
	}
	return writeFile(ctx, ShardName(f.Prefix, int(shard), f.Shards), out)
}

// ShardName is the name of shard i of n of an output prefix.
func ShardName(prefix string, i, n int) string {
	return fmt.Sprintf("%s-%05d-of-%05d", prefix, i, n)
}

// Score adds the scoring pipeline to s: the basket files of opt.Input
// scored by the model (loaded once per worker from its path), written as
// the lines of `ndpp-bench score` on each file — `line<TAB>value`, or the
// recommended items, or JSON lines — one output file per shard, in file
// and line order within it. It returns the scored chunks (a PCollection of
// Scored) for inspection.
func Score(ctx context.Context, s beam.Scope, opt ScoreOptions) (beam.PCollection, error) {
	if err := opt.Format.Check(); err != nil {
		return beam.PCollection{}, err
	}
	if opt.Model == "" || opt.Output == "" {
		return beam.PCollection{}, errors.New("pipelines: scoring needs a model and an output prefix")
	}
	if opt.Recommend < 0 || opt.Shards < 0 || opt.ChunkSize < 0 {
		return beam.PCollection{}, fmt.Errorf("pipelines: recommend %d, shards %d, chunk size %d; want ≥ 0", opt.Recommend, opt.Shards, opt.ChunkSize)
	}
	files, err := MatchFiles(ctx, opt.Input)
	if err != nil {
		return beam.PCollection{}, err
	}
	shards := max(opt.Shards, 1)
	r := reader{Files: files, Format: opt.Format, Parts: shards, ChunkSize: opt.ChunkSize}
	s = s.Scope("score")
	scored := beam.ParDo(s, &scoreFn{Reader: r, ModelPath: opt.Model, Recommend: opt.Recommend, JSON: opt.JSON, MaxMemory: opt.MaxMemory}, readTasks(s, r))
	beam.ParDo0(s, &writeShardFn{Prefix: opt.Output, Shards: shards}, beam.GroupByKey(s, scored))
	return beam.DropKey(s, scored), nil
}
