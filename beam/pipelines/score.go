package pipelines

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/ndpp-go/ndpp/internal/scorefmt"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/npz"
)

func init() {
	register.DoFn3x1[context.Context, int64, func(int64, Scored), error](&scoreFn{})
	register.Emitter2[int64, Scored]()
	register.DoFn4x1[context.Context, int64, func(*Scored) bool, func(ShardReport), error](&writeShardFn{})
	register.Iter1[Scored]()
	register.Emitter1[ShardReport]()
	register.DoFn2x0[int64, func(int64, Scored)](&shardMarkerFn{})
	register.DoFn3x1[context.Context, int, func(*ShardReport) bool, error](&writeSummaryFn{})
	register.Iter1[ShardReport]()
}

// ScoreOptions configures Score.
type ScoreOptions struct {
	// Model is the path of an .npz model on a Beam filesystem.
	Model string
	// Input is a glob of basket files.
	Input  string
	Format BasketFormat
	// Output is the prefix of the output files:
	// PREFIX-SSSSS-of-NNNNN, one per shard, written (empty when the shard
	// holds no basket) for every shard.
	Output string
	// FileColumn names the input file on every output line (a first
	// column file<TAB>, or a "file" field of the JSON lines;
	// scorefmt.FileLines) even when Input matches one file; with several
	// files it is always named.
	FileColumn bool
	// Summary, if set, is the path of a JSON summary of the run
	// (ScoreSummary) written by the pipeline once every shard is written.
	Summary string
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
// chunk's baskets, where the chunk starts (for the order of the output
// file) and its number of baskets. The zero Scored (no basket, no text) is
// the element that makes every shard's output file be written.
type Scored struct {
	File, Line int
	Baskets    int
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
	// FileColumn names the input file on every line.
	FileColumn bool
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
		file := ""
		if f.FileColumn {
			file = f.Reader.Files[c.File]
		}
		if out, serr = scorefmt.FileLines(ctx, file, sm.m, c.Baskets, c.Lines, f.Recommend, f.JSON, &gains); serr == nil {
			emit(int64(t.Part), Scored{File: c.File, Line: c.Lines[0], Baskets: len(c.Baskets), Text: string(out)})
		}
	})
	if err == nil {
		err = serr
	}
	return err
}

// shardMarkerFn emits an empty element for a shard, so that the shard's
// group exists, and its file is written, when it holds no basket.
type shardMarkerFn struct{}

func (shardMarkerFn) ProcessElement(shard int64, emit func(int64, Scored)) {
	emit(shard, Scored{})
}

// ShardReport is what a shard's writer wrote: its file, its lines and the
// baskets of each input file (by index in the sorted list of matches) it
// holds.
type ShardReport struct {
	Shard   int
	Name    string
	Lines   int
	Baskets []int
}

// writeShardFn writes one shard's output, its chunks in file and line
// order, to Prefix-SSSSS-of-NNNNN, and reports what it wrote.
type writeShardFn struct {
	Prefix string
	Shards int
	Files  int
}

func (f *writeShardFn) ProcessElement(ctx context.Context, shard int64, iter func(*Scored) bool, report func(ShardReport)) error {
	var all []Scored
	var s Scored
	rep := ShardReport{Shard: int(shard), Name: ShardName(f.Prefix, int(shard), f.Shards), Baskets: make([]int, f.Files)}
	for iter(&s) {
		if s.File >= f.Files {
			return fmt.Errorf("pipelines: scored chunk of file %d of %d", s.File, f.Files)
		}
		rep.Baskets[s.File] += s.Baskets
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
	rep.Lines = bytes.Count(out, []byte{'\n'})
	if err := writeFile(ctx, rep.Name, out); err != nil {
		return err
	}
	report(rep)
	return nil
}

// ScoreSummary is the JSON summary of a score run (ScoreOptions.Summary):
// the baskets read from each input file, the lines written to each shard's
// file, and their totals. A complete run has Complete set: one report per
// shard, and as many lines written as baskets read.
type ScoreSummary struct {
	Files    []FileCount  `json:"files"`
	Shards   []ShardCount `json:"shards"`
	Baskets  int          `json:"baskets"`
	Lines    int          `json:"lines"`
	Complete bool         `json:"complete"`
}

// FileCount is the number of baskets scored from an input file.
type FileCount struct {
	File    string `json:"file"`
	Baskets int    `json:"baskets"`
}

// ShardCount is the number of lines written to a shard's output file.
type ShardCount struct {
	File  string `json:"file"`
	Lines int    `json:"lines"`
}

// writeSummaryFn gathers the shards' reports into the run's summary.
type writeSummaryFn struct {
	Path   string
	Files  []string
	Shards int
}

func (f *writeSummaryFn) ProcessElement(ctx context.Context, _ int, iter func(*ShardReport) bool) error {
	sum := ScoreSummary{Files: make([]FileCount, len(f.Files)), Shards: make([]ShardCount, f.Shards)}
	for i, name := range f.Files {
		sum.Files[i].File = name
	}
	seen := make([]bool, f.Shards)
	var r ShardReport
	for iter(&r) {
		if r.Shard < 0 || r.Shard >= f.Shards || seen[r.Shard] || len(r.Baskets) != len(f.Files) {
			return fmt.Errorf("pipelines: unexpected report of shard %d of %d", r.Shard, f.Shards)
		}
		seen[r.Shard] = true
		sum.Shards[r.Shard] = ShardCount{File: r.Name, Lines: r.Lines}
		sum.Lines += r.Lines
		for i, b := range r.Baskets {
			sum.Files[i].Baskets += b
			sum.Baskets += b
		}
	}
	sum.Complete = !slices.Contains(seen, false) && sum.Lines == sum.Baskets
	data, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(ctx, f.Path, append(data, '\n'))
}

// ReadScoreSummary reads the summary a score run wrote to path.
func ReadScoreSummary(ctx context.Context, path string) (*ScoreSummary, error) {
	data, err := readFile(ctx, path)
	if err != nil {
		return nil, err
	}
	var sum ScoreSummary
	if err := json.Unmarshal(data, &sum); err != nil {
		return nil, fmt.Errorf("pipelines: %s: %w", path, err)
	}
	return &sum, nil
}

// ShardName is the name of shard i of n of an output prefix.
func ShardName(prefix string, i, n int) string {
	return fmt.Sprintf("%s-%05d-of-%05d", prefix, i, n)
}

// Score adds the scoring pipeline to s: the basket files of opt.Input
// scored by the model (loaded once per worker from its path), written as
// the lines of `ndpp-bench score` on each file — `line<TAB>value`, or the
// recommended items, or JSON lines — each line naming its input file
// (file<TAB>line<TAB>…, or a "file" field) when Input matches several
// files or opt.FileColumn is set. Every shard gets its output file, empty
// when the shard holds no basket; within a file the lines are in file and
// line order. With opt.Summary the pipeline also writes a ScoreSummary. It
// returns the scored chunks (a PCollection of Scored) for inspection.
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
	fileColumn := opt.FileColumn || len(files) > 1
	if fileColumn {
		for _, f := range files {
			if strings.ContainsAny(f, "\t\n\r") {
				return beam.PCollection{}, fmt.Errorf("pipelines: input file name %q holds a tab or a line break: it cannot name the output lines", f)
			}
		}
	}
	shards := max(opt.Shards, 1)
	r := reader{Files: files, Format: opt.Format, Parts: shards, ChunkSize: opt.ChunkSize}
	s = s.Scope("score")
	scored := beam.ParDo(s, &scoreFn{Reader: r, ModelPath: opt.Model, Recommend: opt.Recommend, JSON: opt.JSON, MaxMemory: opt.MaxMemory, FileColumn: fileColumn}, readTasks(s, r))
	keys := make([]int64, shards)
	for i := range keys {
		keys[i] = int64(i)
	}
	markers := beam.ParDo(s, &shardMarkerFn{}, beam.CreateList(s, keys))
	reports := beam.ParDo(s, &writeShardFn{Prefix: opt.Output, Shards: shards, Files: len(files)}, beam.GroupByKey(s, beam.Flatten(s, scored, markers)))
	if opt.Summary != "" {
		beam.ParDo0(s, &writeSummaryFn{Path: opt.Summary, Files: files, Shards: shards}, beam.GroupByKey(s, beam.AddFixedKey(s, reports)))
	}
	return beam.DropKey(s, scored), nil
}
