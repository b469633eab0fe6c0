package pipelines

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/ndpp-go/ndpp/ndpp"
)

func init() {
	register.DoFn3x1[context.Context, int64, func(vocabStats), error](&vocabFn{})
	register.Emitter1[vocabStats]()
	register.Combiner2[vocabStats, vocabStats](&vocabCombineFn{})
	register.DoFn2x1[context.Context, vocabStats, error](&writeVocabFn{})
}

// vocabFn reads one task's baskets and emits the first appearance of each
// of their tokens and the number of baskets holding it.
type vocabFn struct {
	Reader reader
	Parts  int
}

func (f *vocabFn) ProcessElement(ctx context.Context, key int64, emit func(vocabStats)) error {
	t := keyTask(key, f.Parts)
	voc, err := ndpp.NewVocab(nil)
	if err != nil {
		return err
	}
	st := vocabStats{Tokens: map[string]tokStat{}}
	err = f.Reader.each(ctx, t, voc, true, 0, func(line int, b []int) error {
		st.Baskets++
		for pos, row := range b {
			tok := voc.Token(row)
			s, ok := st.Tokens[tok]
			if !ok {
				s = tokStat{File: t.File, Line: line, Pos: pos}
			}
			s.Count++
			st.Tokens[tok] = s
		}
		return nil
	})
	if err != nil {
		return err
	}
	emit(st)
	return nil
}

// vocabCombineFn merges token statistics: the earliest appearance and the
// sum of the counts.
type vocabCombineFn struct{}

func (vocabCombineFn) CreateAccumulator() vocabStats {
	return vocabStats{Tokens: map[string]tokStat{}}
}

func (vocabCombineFn) AddInput(a, in vocabStats) vocabStats { return mergeVocabStats(a, in) }

func (vocabCombineFn) MergeAccumulators(a, b vocabStats) vocabStats { return mergeVocabStats(a, b) }

func mergeVocabStats(a, b vocabStats) vocabStats {
	if a.Tokens == nil {
		a.Tokens = map[string]tokStat{}
	}
	for tok, s := range b.Tokens {
		if o, ok := a.Tokens[tok]; ok {
			if o.before(s) {
				s.File, s.Line, s.Pos = o.File, o.Line, o.Pos
			}
			s.Count += o.Count
		}
		a.Tokens[tok] = s
	}
	a.Baskets += b.Baskets
	return a
}

// writeVocabFn writes the vocabulary (tokens in order of first appearance)
// to Path.
type writeVocabFn struct {
	Path string
}

func (f *writeVocabFn) ProcessElement(ctx context.Context, st vocabStats) error {
	data, err := encodeVocabulary(st.vocabulary())
	if err != nil {
		return err
	}
	return writeFile(ctx, f.Path, data)
}

// vocabulary orders the tokens by first appearance.
func (v vocabStats) vocabulary() *Vocabulary {
	type entry struct {
		tok string
		s   tokStat
	}
	es := make([]entry, 0, len(v.Tokens))
	for tok, s := range v.Tokens {
		es = append(es, entry{tok, s})
	}
	slices.SortFunc(es, func(a, b entry) int {
		switch {
		case a.s.before(b.s):
			return -1
		case b.s.before(a.s):
			return 1
		}
		return 0
	})
	out := &Vocabulary{Baskets: v.Baskets}
	for _, e := range es {
		out.Tokens = append(out.Tokens, e.tok)
		out.Counts = append(out.Counts, e.s.Count)
	}
	return out
}

// addVocabulary adds to s the pass that writes the vocabulary of the
// baskets of r's files to path.
func addVocabulary(s beam.Scope, r reader, path string) {
	s = s.Scope("vocabulary")
	stats := beam.ParDo(s, &vocabFn{Reader: r, Parts: r.Parts}, readTasks(s, r))
	all := beam.Combine(s, &vocabCombineFn{}, stats)
	beam.ParDo0(s, &writeVocabFn{Path: path}, all)
}

// readTasks is the collection of r's read tasks, reshuffled so that a
// runner spreads them over its workers.
func readTasks(s beam.Scope, r reader) beam.PCollection {
	ts := tasks(len(r.Files), r.Parts)
	keys := make([]int64, len(ts))
	for i, t := range ts {
		keys[i] = taskKey(t, r.Parts)
	}
	return beam.Reshuffle(s, beam.CreateList(s, keys))
}

// BuildVocabulary runs the vocabulary pass over the baskets of files (in
// this order) and returns the tokens in order of first appearance — the
// rows the core's readers give them when they read the files one after the
// other with a growing vocabulary — with the number of baskets holding
// each. tmp is a path on a filesystem the workers and the caller share.
func BuildVocabulary(ctx context.Context, run Runner, files []string, format BasketFormat, shards, chunkSize int, tmp string) (*Vocabulary, error) {
	if err := format.Check(); err != nil {
		return nil, err
	}
	if shards < 1 {
		return nil, fmt.Errorf("pipelines: %d shards; need ≥ 1", shards)
	}
	r := reader{Files: files, Format: format, Parts: shards, ChunkSize: chunkSize}
	p, s := beam.NewPipelineWithRoot()
	addVocabulary(s, r, tmp)
	if err := run(ctx, p); err != nil {
		return nil, fmt.Errorf("pipelines: vocabulary pass: %w", err)
	}
	defer removeFile(ctx, tmp)
	v, err := loadVocabulary(ctx, tmp)
	if err != nil {
		return nil, err
	}
	if v.Baskets == 0 {
		return nil, errors.New("pipelines: the files hold no baskets")
	}
	return v, nil
}

// Runner runs a pipeline to completion (beamx.Run, or ptest.Run in
// tests).
type Runner func(context.Context, *beam.Pipeline) error
