// Package scorefmt is the output of scoring and next-item recommendation
// shared by ndpp-bench score and the Beam score pipeline, so that both
// print the same lines.
package scorefmt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
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

// Lines formats the baskets (model rows) found on the given 1-based input
// lines as `ndpp-bench score` prints them: with topN = 0 the
// log-likelihood of each (line<TAB>value, or JSON LL), else the topN items
// with the largest conditional gains given the basket (line<TAB>tokens, or
// JSON Rec), by ndpp.Model.RecommendBatch (ndpp.RecommendBatchSize baskets
// at a time). gains holds the caller's reusable rows of gains (allocated on
// first use). ctx is checked by the recommendations (before each group of
// baskets): once it is done, Lines returns an error wrapping ctx.Err().
func Lines(ctx context.Context, m *ndpp.Model, baskets [][]int, lines []int, topN int, asJSON bool, gains *[][]float64) ([]byte, error) {
	return FileLines(ctx, "", m, baskets, lines, topN, asJSON, gains)
}

// FileLines is Lines with every line naming the input file the baskets
// come from, so that the lines of several files can be told apart: text
// lines start with a column file<TAB> (file<TAB>line<TAB>value), JSON lines
// have a "file" field first. With file == "" it is Lines. The caller
// refuses names holding a tab or a line break (text lines could not be
// split back).
func FileLines(ctx context.Context, file string, m *ndpp.Model, baskets [][]int, lines []int, topN int, asJSON bool, gains *[][]float64) ([]byte, error) {
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
		*gains = make([][]float64, ndpp.RecommendBatchSize)
		for i := range *gains {
			(*gains)[i] = make([]float64, m.N())
		}
	}
	recs, errs, err := m.RecommendBatch(ctx, baskets, topN, ndpp.RecommendOptions{Gains: *gains})
	if err != nil {
		return nil, err
	}
	for i := range baskets {
		r := Rec{File: file, Line: lines[i], Items: []string{}, Gains: []float64{}}
		switch err := errs[i]; {
		case errors.Is(err, ndpp.ErrSingularCondition):
			r.Error = "query set has a zero determinant"
		case err != nil:
			return nil, fmt.Errorf("line %d: %w", lines[i], err)
		default:
			for _, rec := range recs[i] {
				r.Items = append(r.Items, m.Token(rec.Item))
				r.Gains = append(r.Gains, rec.Gain)
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
