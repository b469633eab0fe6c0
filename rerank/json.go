package rerank

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/ndpp-go/ndpp/internal/jsonitem"
	"github.com/ndpp-go/ndpp/ndpp"
)

// JSONRequest is the JSON wire form of a Request, the one form of a
// rerank request as JSON: the body of package serve's POST /v1/rerank,
// and what a service of its own decodes (see the handler example). Items
// are named by the model's tokens, as in basket files (ndpp.Model.Row):
// JSON strings, or integers for a model's integer ids and rows; the JSON
// names are those of each field's tag. JSONRequest.Request maps it to a
// Request over a model.
type JSONRequest struct {
	// Candidates are the items to choose from (Request.Candidates), model
	// items or the ids of NewItems.
	Candidates []json.RawMessage `json:"candidates"`
	// K is required (Request.K).
	K *int `json:"k"`
	// Quality holds a number qᵢ ≥ 0 per candidate (Request.Quality).
	Quality []json.RawMessage `json:"quality"`
	// Relevance and Theta: Request.Relevance and Request.Theta.
	Relevance []float64 `json:"relevance"`
	Theta     float64   `json:"theta"`
	// Attributes and ShownAttributes hold, per attribute name, one value
	// per candidate / shown item, a JSON string or integer (3 and "3"
	// differ), for Constraints.
	Attributes      map[string][]json.RawMessage `json:"attributes"`
	ShownAttributes map[string][]json.RawMessage `json:"shown_attributes"`
	Constraints     []Constraint                 `json:"constraints"`
	// NewItems are items outside the model that Candidates may name by
	// their ids (Request.NewItems).
	NewItems []JSONItem `json:"new_items"`
	// Shown are the items already shown, oldest first (Request.Shown).
	Shown           []json.RawMessage `json:"shown"`
	Window          int               `json:"window"`
	Polish          bool              `json:"polish"`
	PolishEps       float64           `json:"polish_eps"`
	PolishPool      int               `json:"polish_pool"`
	PolishMaxRatios int64             `json:"polish_max_ratios"`
	// Sample draws the list at random (Request.Sample) from the PCG
	// stream of Seed, which it needs (the same seed gives the same list).
	Sample bool    `json:"sample"`
	Seed   *uint64 `json:"seed"`
	// TimeoutMs is the request's deadline in milliseconds, counted from
	// its arrival (0: the server's default). Request has no deadline of
	// its own: the server gives Rerank a context with it.
	TimeoutMs int64 `json:"timeout_ms"`
	// Degrade (absent: true) answers at the deadline with the best result
	// reached (Request.Degrade).
	Degrade *bool `json:"degrade"`
}

// JSONItem is an item of JSONRequest.NewItems, given by its vectors: an
// id like the model's items (a JSON string or integer, not one of the
// model's), v, b (absent for a model with B = V) and δ (absent or 0
// without a diagonal).
type JSONItem struct {
	ID    json.RawMessage `json:"id"`
	V     []float64       `json:"v"`
	B     []float64       `json:"b"`
	Delta float64         `json:"delta"`
}

// Request returns the Request of j over m: items mapped to m's rows, new
// items given the ids n, n+1, … (n = m.N()) in their order, attribute
// values as Workspace.Rerank compares them (a JSON string s as "s" + s, an
// integer as "i" + its digits). An entry that is not an item, an unknown
// or repeated item, a new item whose id is one of the model's or repeats
// another, a new item that does not fit the model's kernel
// (ndpp.CheckItem; the error names it by its id in j), a quality that is not a finite number ≥ 0, an attribute
// value that is neither a string nor an integer, and sample without a seed
// (or a seed without sample) are a *RequestError whose
// Field is the path of the entry in the JSON form ("candidates" with its
// Index, "attributes.brand" with its Index, "new_items[2].id"). Rerank
// validates the rest.
func (j *JSONRequest) Request(m *ndpp.Model) (Request, error) {
	if j.K == nil {
		return Request{}, &RequestError{Field: "k", Index: -1, Reason: "missing"}
	}
	rq := Request{K: *j.K, Window: j.Window, Polish: j.Polish, PolishEps: j.PolishEps, PolishPool: j.PolishPool,
		PolishMaxRatios: j.PolishMaxRatios, Degrade: j.Degrade == nil || *j.Degrade, Relevance: j.Relevance, Theta: j.Theta,
		Constraints: j.Constraints, Sample: j.Sample}
	switch {
	case j.Sample && j.Seed == nil:
		return Request{}, &RequestError{Field: "seed", Index: -1, Reason: "missing: sample needs a seed (the same seed gives the same list)"}
	case !j.Sample && j.Seed != nil:
		return Request{}, &RequestError{Field: "seed", Index: -1, Reason: "given without sample"}
	case j.Seed != nil:
		rq.Seed = *j.Seed
	}
	var err error
	if rq.Attributes, err = attributeValues("attributes", j.Attributes); err != nil {
		return Request{}, err
	}
	if rq.ShownAttributes, err = attributeValues("shown_attributes", j.ShownAttributes); err != nil {
		return Request{}, err
	}
	if len(j.NewItems) > 0 {
		if err := j.newItems(m, &rq); err != nil {
			return Request{}, err
		}
	} else if rq.Candidates, err = rows(m, "candidates", j.Candidates); err != nil {
		return Request{}, err
	}
	if rq.Shown, err = rows(m, "shown", j.Shown); err != nil {
		return Request{}, err
	}
	if j.Quality != nil {
		rq.Quality = make([]float64, len(j.Quality))
		for i, raw := range j.Quality {
			if len(raw) > 0 && raw[0] == '"' {
				var str string
				_ = json.Unmarshal(raw, &str)
				return Request{}, reqErr("quality", i, "%q is a string; want a finite number ≥ 0", jsonitem.Truncate(str))
			}
			q, err := strconv.ParseFloat(string(raw), 64)
			if err != nil || !(q >= 0) || math.IsInf(q, 0) {
				return Request{}, reqErr("quality", i, "%s; want a finite number ≥ 0", jsonitem.Truncate(string(raw)))
			}
			rq.Quality[i] = q
		}
	}
	return rq, nil
}

// newItems sets rq's new items and its candidates, which may name them.
func (j *JSONRequest) newItems(m *ndpp.Model, rq *Request) error {
	n := m.N()
	newTok := make(map[string]int, len(j.NewItems)) // new item token → its id in rq (n + index)
	rq.NewItems = make([]ndpp.Item, len(j.NewItems))
	chk := ndpp.NewItemCheck(ndpp.KernelOf(m))
	for i, ni := range j.NewItems {
		f := fmt.Sprintf("new_items[%d].id", i)
		tok, ok := jsonitem.Text(ni.ID)
		if !ok {
			return reqErr(f, -1, "%s is not an item id (a JSON string or integer)", jsonitem.Truncate(string(ni.ID)))
		}
		if _, clash := m.Row(tok); clash {
			return reqErr(f, -1, "%q is one of the model's items", jsonitem.Truncate(tok))
		}
		if k, dup := newTok[tok]; dup {
			return reqErr(f, -1, "%q repeats new_items[%d]", jsonitem.Truncate(tok), k-n)
		}
		newTok[tok] = n + i
		rq.NewItems[i] = ndpp.Item{ID: n + i, V: ni.V, B: ni.B, Delta: ni.Delta}
		// Checked here, so that the error names the item by the client's
		// id rather than by the id n + i it gets in rq.
		if err := chk.Check(rq.NewItems[i]); err != nil {
			reason := err.Error()
			var ie *ndpp.ItemError
			if errors.As(err, &ie) {
				reason = ie.Reason
			}
			return reqErr("new_items", i, "item %q: %s", jsonitem.Truncate(tok), reason)
		}
	}
	rq.Candidates = make([]int, len(j.Candidates))
	at := make(map[int]int, len(j.Candidates)) // row or new item id → its first position
	for i, raw := range j.Candidates {
		tok, ok := jsonitem.Text(raw)
		if !ok {
			return reqErr("candidates", i, "%s is not an item (a JSON string or integer)", jsonitem.Truncate(string(raw)))
		}
		id, isNew := newTok[tok]
		if !isNew {
			row, known := m.Row(tok)
			if !known {
				return reqErr("candidates", i, "unknown item %q", jsonitem.Truncate(tok))
			}
			id = row
		}
		if p, dup := at[id]; dup {
			return reqErr("candidates", i, "item %q repeats candidates[%d]", jsonitem.Truncate(tok), p)
		}
		at[id] = i
		rq.Candidates[i] = id
	}
	return nil
}

// rows maps the JSON items of the list field to m's rows (nil for none).
func rows(m *ndpp.Model, field string, items []json.RawMessage) ([]int, error) {
	out, e := jsonitem.Rows(m, field, items, nil)
	if e != nil {
		return nil, reqErr(field, e.Index, "%s", e.Msg)
	}
	return out, nil
}

// attributeValues turns JSON attribute values (strings or integers) into
// the strings Rerank compares: a string s as "s" + s, an integer as "i" +
// its decimal digits (so that "3" and 3 differ).
func attributeValues(field string, in map[string][]json.RawMessage) (map[string][]string, error) {
	if in == nil {
		return nil, nil
	}
	out := make(map[string][]string, len(in))
	for name, raws := range in {
		vals := make([]string, len(raws))
		for i, raw := range raws {
			var str string
			if json.Unmarshal(raw, &str) == nil {
				vals[i] = "s" + str
				continue
			}
			n, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil {
				return nil, reqErr(field+"."+name, i, "%s; want a string or an integer", jsonitem.Truncate(string(raw)))
			}
			vals[i] = "i" + strconv.FormatInt(n, 10)
		}
		out[name] = vals
	}
	return out, nil
}

// errJSONForm is the error of decoding a Request from JSON.
var errJSONForm = errors.New("rerank: a Request has no JSON form: decode a JSONRequest and map it to a model's Request with its Request method")

// UnmarshalJSON refuses: the JSON form of a request is JSONRequest, whose
// items are the model's tokens, not rows.
func (*Request) UnmarshalJSON([]byte) error { return errJSONForm }
