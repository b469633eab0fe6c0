package pipelines

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/ndpp-go/ndpp/ndpp"
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

func loadScoringModel(ctx context.Context, path string) (*scoringModel, error) {
	m, err := LoadModel(ctx, path)
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
}

func (f *scoreFn) ProcessElement(ctx context.Context, key int64, emit func(int64, Scored)) error {
	t := keyTask(key, f.Reader.Parts)
	sm, err := scoringCache.get(ctx, f.ModelPath, loadScoringModel)
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
		if out, serr = scoreChunk(c, sm.m, f.Recommend, f.JSON, &gains); serr == nil {
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
	scored := beam.ParDo(s, &scoreFn{Reader: r, ModelPath: opt.Model, Recommend: opt.Recommend, JSON: opt.JSON}, readTasks(s, r))
	beam.ParDo0(s, &writeShardFn{Prefix: opt.Output, Shards: shards}, beam.GroupByKey(s, scored))
	return beam.DropKey(s, scored), nil
}

// The rest is the output of `ndpp-bench score` (cmd/ndpp-bench/score.go),
// line for line.

type scoreLL struct {
	Line int      `json:"line"`
	LL   *float64 `json:"log_likelihood"` // null when det L_S = 0
}

type scoreRec struct {
	Line  int       `json:"line"`
	Items []string  `json:"items"`
	Gains []float64 `json:"gains"`
	Error string    `json:"error,omitempty"`
}

// scoreRecBatch is the number of baskets whose recommendations are
// computed together (ndpp.Model.ConditionalGainsBatch).
const scoreRecBatch = 32

func scoreChunk(c Chunk, m *ndpp.Model, topN int, asJSON bool, gains *[][]float64) ([]byte, error) {
	var out []byte
	if topN == 0 {
		lds, err := m.LogDets(c.Baskets, 1)
		if err != nil {
			return nil, err
		}
		norm := m.LogNormalizer()
		if math.IsNaN(norm) || math.IsInf(norm, 0) {
			return nil, fmt.Errorf("%w: log det(I + L) = %v", ndpp.ErrOverflow, norm)
		}
		for i, ld := range lds {
			ll := ld - norm
			if asJSON {
				r := scoreLL{Line: c.Lines[i]}
				if !math.IsInf(ll, -1) {
					r.LL = &ll
				}
				b, err := json.Marshal(r)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", c.Lines[i], err)
				}
				out = append(append(out, b...), '\n')
				continue
			}
			out = strconv.AppendInt(out, int64(c.Lines[i]), 10)
			out = append(out, '\t')
			out = strconv.AppendFloat(out, ll, 'g', 10, 64)
			out = append(out, '\n')
		}
		return out, nil
	}
	if *gains == nil {
		*gains = make([][]float64, scoreRecBatch)
		for i := range *gains {
			(*gains)[i] = make([]float64, m.N())
		}
	}
	errs := make([]error, scoreRecBatch)
	for i, y := range c.Baskets {
		b := i % scoreRecBatch
		if b == 0 {
			nb := min(scoreRecBatch, len(c.Baskets)-i)
			if err := m.ConditionalGainsBatch(c.Baskets[i:i+nb], (*gains)[:nb], errs[:nb]); err != nil {
				return nil, err
			}
		}
		g := (*gains)[b]
		r := scoreRec{Line: c.Lines[i], Items: []string{}, Gains: []float64{}}
		switch err := errs[b]; {
		case errors.Is(err, ndpp.ErrSingularCondition):
			r.Error = "query set has a zero determinant"
		case err != nil:
			return nil, fmt.Errorf("line %d: %w", c.Lines[i], err)
		default:
			for _, j := range topItems(g, y, topN) {
				r.Items = append(r.Items, m.Token(j))
				r.Gains = append(r.Gains, g[j])
			}
		}
		if asJSON {
			b, err := json.Marshal(r)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", r.Line, err)
			}
			out = append(append(out, b...), '\n')
			continue
		}
		out = strconv.AppendInt(out, int64(r.Line), 10)
		out = append(out, '\t')
		if r.Error != "" {
			out = append(out, "error: "+r.Error...)
		}
		for k, it := range r.Items {
			if k > 0 {
				out = append(out, ' ')
			}
			out = append(out, it...)
		}
		out = append(out, '\n')
	}
	return out, nil
}

// topItems returns the n items with the largest gains, excluding those in y,
// best first (ties: lower index first).
func topItems(gains []float64, y []int, n int) []int {
	h := &minHeap{g: gains}
	for j := range gains {
		if gains[j] == 0 && slices.Contains(y, j) {
			continue
		}
		if h.Len() < n {
			heap.Push(h, j)
		} else if n > 0 && h.better(j, h.idx[0]) {
			h.idx[0] = j
			heap.Fix(h, 0)
		}
	}
	out := make([]int, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(h).(int)
	}
	return out
}

// minHeap keeps the current best n items with the worst on top.
type minHeap struct {
	g   []float64
	idx []int
}

func (h *minHeap) better(a, b int) bool {
	if h.g[a] != h.g[b] {
		return h.g[a] > h.g[b]
	}
	return a < b
}
func (h *minHeap) Len() int           { return len(h.idx) }
func (h *minHeap) Less(i, j int) bool { return h.better(h.idx[j], h.idx[i]) }
func (h *minHeap) Swap(i, j int)      { h.idx[i], h.idx[j] = h.idx[j], h.idx[i] }
func (h *minHeap) Push(x any)         { h.idx = append(h.idx, x.(int)) }
func (h *minHeap) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}
