// Package scorefmt is the output of scoring and next-item recommendation
// shared by ndpp-bench score and the Beam score pipeline, so that both
// print the same lines.
package scorefmt

import (
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/ndpp-go/ndpp/ndpp"
)

// LL is a JSON line of scoring.
type LL struct {
	File string   `json:"file,omitempty"` // the input file, when named (FileLines)
	Line int      `json:"line"`
	LL   *float64 `json:"log_likelihood"` // null when det L_S = 0
}

// Rec is a JSON line of recommendation.
type Rec struct {
	File  string    `json:"file,omitempty"` // the input file, when named (FileLines)
	Line  int       `json:"line"`
	Items []string  `json:"items"`
	Gains []float64 `json:"gains"`
	Error string    `json:"error,omitempty"`
}

// RecBatch is the number of baskets whose recommendations are
// computed together (ndpp.Model.ConditionalGainsBatch), each needing a row
// of n gains.
const RecBatch = 32

// Lines formats the baskets (model rows) found on the given 1-based input
// lines as `ndpp-bench score` prints them: with topN = 0 the
// log-likelihood of each (line<TAB>value, or JSON LL), else the topN items
// with the largest conditional gains given the basket (line<TAB>tokens, or
// JSON Rec), computed RecBatch baskets at a time through
// ndpp.Model.ConditionalGainsBatch. gains holds the caller's reusable
// buffers (allocated on first use).
func Lines(m *ndpp.Model, baskets [][]int, lines []int, topN int, asJSON bool, gains *[][]float64) ([]byte, error) {
	return FileLines("", m, baskets, lines, topN, asJSON, gains)
}

// FileLines is Lines with every line naming the input file the baskets
// come from, so that the lines of several files can be told apart: text
// lines start with a column file<TAB> (file<TAB>line<TAB>value), JSON lines
// have a "file" field first. With file == "" it is Lines. The caller
// refuses names holding a tab or a line break (text lines could not be
// split back).
func FileLines(file string, m *ndpp.Model, baskets [][]int, lines []int, topN int, asJSON bool, gains *[][]float64) ([]byte, error) {
	var out []byte
	prefix := func() {
		if file != "" {
			out = append(append(out, file...), '\t')
		}
	}
	if topN == 0 {
		lds, err := m.LogDets(baskets, 1)
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
				r := LL{File: file, Line: lines[i]}
				if !math.IsInf(ll, -1) {
					r.LL = &ll
				}
				b, err := json.Marshal(r)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", lines[i], err)
				}
				out = append(append(out, b...), '\n')
				continue
			}
			prefix()
			out = strconv.AppendInt(out, int64(lines[i]), 10)
			out = append(out, '\t')
			out = strconv.AppendFloat(out, ll, 'g', 10, 64)
			out = append(out, '\n')
		}
		return out, nil
	}
	if *gains == nil {
		*gains = make([][]float64, RecBatch)
		for i := range *gains {
			(*gains)[i] = make([]float64, m.N())
		}
	}
	errs := make([]error, RecBatch)
	for i, y := range baskets {
		b := i % RecBatch
		if b == 0 {
			nb := min(RecBatch, len(baskets)-i)
			if err := m.ConditionalGainsBatch(baskets[i:i+nb], (*gains)[:nb], errs[:nb]); err != nil {
				return nil, err
			}
		}
		g := (*gains)[b]
		r := Rec{File: file, Line: lines[i], Items: []string{}, Gains: []float64{}}
		switch err := errs[b]; {
		case errors.Is(err, ndpp.ErrSingularCondition):
			r.Error = "query set has a zero determinant"
		case err != nil:
			return nil, fmt.Errorf("line %d: %w", lines[i], err)
		default:
			for _, j := range TopItems(g, y, topN) {
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
		prefix()
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

// TopItems returns the n items with the largest gains, excluding those in y,
// best first (ties: lower index first). The gains of y's items are 0, so
// only items with a zero gain are looked up in y.
func TopItems(gains []float64, y []int, n int) []int {
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
