package pipelines

import (
	"math"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/ndpp-go/ndpp/internal/binfmt"
	"github.com/ndpp-go/ndpp/learn"
)

// The elements and accumulators that travel between workers are encoded
// in the project's binary format (internal/binfmt): fixed-width and
// checksummed, float64s by their bits, so that sums move exactly.
func init() {
	beam.RegisterCoder(reflect.TypeOf(Chunk{}), encodeChunk, decodeChunk)
	beam.RegisterCoder(reflect.TypeOf(gradAcc{}), encodeGradAcc, decodeGradAcc)
	beam.RegisterCoder(reflect.TypeOf(vocabStats{}), encodeVocabStats, decodeVocabStats)
	beam.RegisterCoder(reflect.TypeOf(Scored{}), encodeScored, decodeScored)
}

const (
	chunkMagic      = "NDPBCHNK"
	gradMagic       = "NDPBGRAD"
	vocabStatsMagic = "NDPBVSTA"
	paramsMagic     = "NDPBPARM"
	vocabMagic      = "NDPBVOCB"
	scoredMagic     = "NDPBSCOR"
)

func encodeChunk(c Chunk) ([]byte, error) {
	e := binfmt.NewEncoder(chunkMagic, 1)
	e.Int(c.File)
	e.Ints(c.Lines)
	e.Int(len(c.Baskets))
	for _, b := range c.Baskets {
		e.Ints(b)
	}
	return e.Finish()
}

func decodeChunk(data []byte) (Chunk, error) {
	d, err := binfmt.NewDecoder(data, "pipelines: chunk", chunkMagic, 1, 1)
	if err != nil {
		return Chunk{}, err
	}
	c := Chunk{File: d.Int("file", 0, math.MaxInt32)}
	c.Lines = d.Ints("lines", 0, math.MaxInt)
	if len(c.Lines) == 0 {
		c.Lines = nil
	}
	nb := d.Int("baskets", 0, len(data))
	for range nb {
		if d.Err() != nil {
			break
		}
		c.Baskets = append(c.Baskets, d.Ints("basket", 0, math.MaxInt32))
	}
	return c, d.Done()
}

// gradAcc is the learn step's accumulator: a GradSum, nil before the
// first basket.
type gradAcc struct {
	S *learn.GradSum
}

func encodeGradSum(e *binfmt.Encoder, s *learn.GradSum) {
	e.Int(s.N)
	e.Int(s.Dim)
	e.Int(s.Baskets)
	e.F64(s.Value)
	for _, x := range [][]float64{s.Grad.V, s.Grad.B, s.Grad.D, s.Grad.T} {
		e.Bool(x != nil)
		e.F64s(x)
	}
}

func decodeGradSum(d *binfmt.Decoder) *learn.GradSum {
	s := &learn.GradSum{N: d.Int("n", 0, math.MaxInt32), Dim: d.Int("d", 0, math.MaxInt32), Baskets: d.Int("baskets", 0, math.MaxInt)}
	s.Value = d.F64()
	for _, x := range []*[]float64{&s.Grad.V, &s.Grad.B, &s.Grad.D, &s.Grad.T} {
		has := d.Bool()
		v := d.F64s("gradient")
		if has {
			*x = v
			if *x == nil {
				*x = []float64{}
			}
		}
	}
	return s
}

func encodeGradAcc(a gradAcc) ([]byte, error) {
	e := binfmt.NewEncoder(gradMagic, 1)
	e.Bool(a.S != nil)
	if a.S != nil {
		encodeGradSum(e, a.S)
	}
	return e.Finish()
}

func decodeGradAcc(data []byte) (gradAcc, error) {
	d, err := binfmt.NewDecoder(data, "pipelines: gradient sum", gradMagic, 1, 1)
	if err != nil {
		return gradAcc{}, err
	}
	var a gradAcc
	if d.Bool() {
		a.S = decodeGradSum(d)
	}
	return a, d.Done()
}

// tokStat is what the vocabulary pass knows of a token: where it first
// appears (file, line, position in its basket) and in how many baskets.
type tokStat struct {
	File, Line, Pos int
	Count           int
}

func (a tokStat) before(b tokStat) bool {
	if a.File != b.File {
		return a.File < b.File
	}
	if a.Line != b.Line {
		return a.Line < b.Line
	}
	return a.Pos < b.Pos
}

// vocabStats is the vocabulary pass's element and accumulator: the tokens
// of some read tasks and their number of baskets.
type vocabStats struct {
	Tokens  map[string]tokStat
	Baskets int
}

func encodeVocabStats(v vocabStats) ([]byte, error) {
	e := binfmt.NewEncoder(vocabStatsMagic, 1)
	e.Int(v.Baskets)
	e.Int(len(v.Tokens))
	keys := make([]string, 0, len(v.Tokens))
	for t := range v.Tokens {
		keys = append(keys, t)
	}
	slices.Sort(keys) // the same bytes for the same stats
	for _, t := range keys {
		s := v.Tokens[t]
		e.String(t)
		e.Int(s.File)
		e.Int(s.Line)
		e.Int(s.Pos)
		e.Int(s.Count)
	}
	return e.Finish()
}

func decodeVocabStats(data []byte) (vocabStats, error) {
	d, err := binfmt.NewDecoder(data, "pipelines: vocabulary statistics", vocabStatsMagic, 1, 1)
	if err != nil {
		return vocabStats{}, err
	}
	v := vocabStats{Baskets: d.Int("baskets", 0, math.MaxInt)}
	n := d.Int("tokens", 0, len(data))
	v.Tokens = make(map[string]tokStat, n)
	for range n {
		if d.Err() != nil {
			break
		}
		t := d.String("token")
		v.Tokens[t] = tokStat{File: d.Int("file", 0, math.MaxInt32), Line: d.Int("line", 0, math.MaxInt),
			Pos: d.Int("position", 0, math.MaxInt32), Count: d.Int("count", 0, math.MaxInt)}
	}
	return v, d.Done()
}

// encodeParams and decodeParams are the file the learn driver writes
// before each step.
func encodeParams(p *learn.Params) ([]byte, error) {
	e := binfmt.NewEncoder(paramsMagic, 1)
	e.Int(p.N)
	e.Int(p.Dim)
	for _, x := range [][]float64{p.V, p.B, p.D, p.Theta} {
		e.Bool(x != nil)
		e.F64s(x)
	}
	return e.Finish()
}

func decodeParams(data []byte) (*learn.Params, error) {
	d, err := binfmt.NewDecoder(data, "pipelines: learner parameters", paramsMagic, 1, 1)
	if err != nil {
		return nil, err
	}
	p := &learn.Params{N: d.Int("n", 1, math.MaxInt32), Dim: d.Int("d", 1, math.MaxInt32)}
	for i, x := range []*[]float64{&p.V, &p.B, &p.D, &p.Theta} {
		has := d.Bool()
		want := []int{p.N * p.Dim, p.N * p.Dim, p.Dim * p.Dim, p.N}[i]
		v := d.F64s("parameters")
		if has {
			if d.Err() == nil && len(v) != want {
				d.Fail("parameter block %d has %d entries, want %d", i, len(v), want)
			}
			*x = v
		} else if i != 1 && i != 3 {
			d.Fail("parameter block %d missing", i)
		}
	}
	if err := d.Done(); err != nil {
		return nil, err
	}
	return p, nil
}

// Vocabulary is the vocabulary pass's result: the tokens in order of first
// appearance (rows), the number of baskets holding each, and the number of
// baskets.
type Vocabulary struct {
	Tokens  []string
	Counts  []int
	Baskets int
}

func encodeVocabulary(v *Vocabulary) ([]byte, error) {
	e := binfmt.NewEncoder(vocabMagic, 1)
	e.Int(v.Baskets)
	e.Int(len(v.Tokens))
	for i, t := range v.Tokens {
		e.String(t)
		e.Int(v.Counts[i])
	}
	return e.Finish()
}

func decodeVocabulary(data []byte) (*Vocabulary, error) {
	d, err := binfmt.NewDecoder(data, "pipelines: vocabulary", vocabMagic, 1, 1)
	if err != nil {
		return nil, err
	}
	v := &Vocabulary{Baskets: d.Int("baskets", 0, math.MaxInt)}
	n := d.Int("tokens", 0, len(data))
	for range n {
		if d.Err() != nil {
			break
		}
		v.Tokens = append(v.Tokens, d.String("token"))
		v.Counts = append(v.Counts, d.Int("count", 0, math.MaxInt))
	}
	if err := d.Done(); err != nil {
		return nil, err
	}
	return v, nil
}

func encodeScored(s Scored) ([]byte, error) {
	e := binfmt.NewEncoder(scoredMagic, 2)
	e.Int(s.File)
	e.Int(s.Line)
	e.Int(s.Baskets)
	e.String(s.Text)
	return e.Finish()
}

func decodeScored(data []byte) (Scored, error) {
	d, err := binfmt.NewDecoder(data, "pipelines: scored chunk", scoredMagic, 2, 2)
	if err != nil {
		return Scored{}, err
	}
	s := Scored{File: d.Int("file", 0, math.MaxInt32), Line: d.Int("line", 0, math.MaxInt), Baskets: d.Int("baskets", 0, math.MaxInt)}
	s.Text = d.String("text")
	return s, d.Done()
}
