package rerank

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
)

// vocabModel is a random model of n items named "item-0", "item-1", ….
func vocabModel(t *testing.T, n, d int) *ndpp.Model {
	t.Helper()
	toks := make([]string, n)
	for i := range toks {
		toks[i] = fmt.Sprintf("item-%d", i)
	}
	voc, err := ndpp.NewVocab(toks)
	require.NoError(t, err)
	base := ndpp.Random(n, d, 1, ndpp.RandomOptions{Diag: 0.1})
	v, b, _, c := base.Rows()
	m, err := ndpp.NewFromRows(n, d, v, b, c, ndpp.WithVocab(voc), ndpp.WithDiag(base.Diag()))
	require.NoError(t, err)
	return m
}

func decodeJSON(t *testing.T, body string) JSONRequest {
	t.Helper()
	var j JSONRequest
	require.NoError(t, json.Unmarshal([]byte(body), &j), body)
	return j
}

// TestJSONRequest: the wire form maps tokens to rows, new items to the ids
// after the model's, attribute values to tagged strings (3 and "3"
// differ) and quality to numbers, with degrade on unless false; and the
// request reranks as the Request written by hand.
func TestJSONRequest(t *testing.T) {
	m := vocabModel(t, 20, 3)
	j := decodeJSON(t, `{"candidates": ["item-4", "fresh", "item-2", "item-9"], "k": 2, "quality": [1, 0.5, 2, 1e-3],
		"shown": ["item-7"], "window": 0, "polish": true, "polish_eps": 1e-9, "polish_pool": 3, "polish_max_ratios": 1000,
		"attributes": {"c": ["x", 3, "3", "x"]}, "shown_attributes": {"c": [3]},
		"constraints": [{"attribute": "c", "max_run": 1}], "timeout_ms": 40,
		"new_items": [{"id": "fresh", "v": [0.1, 0.2, 0.3], "b": [0.3, 0.2, 0.1], "delta": 0.5}]}`)
	rq, err := j.Request(m)
	require.NoError(t, err)
	want := Request{Candidates: []int{4, 20, 2, 9}, K: 2, Quality: []float64{1, 0.5, 2, 1e-3}, Shown: []int{7},
		Polish: true, PolishEps: 1e-9, PolishPool: 3, PolishMaxRatios: 1000, Degrade: true,
		Attributes: map[string][]string{"c": {"sx", "i3", "s3", "sx"}}, ShownAttributes: map[string][]string{"c": {"i3"}},
		Constraints: []Constraint{{Attribute: "c", MaxRun: 1}},
		NewItems:    []ndpp.Item{{ID: 20, V: []float64{0.1, 0.2, 0.3}, B: []float64{0.3, 0.2, 0.1}, Delta: 0.5}}}
	require.Equal(t, want, rq)
	require.Equal(t, int64(40), j.TimeoutMs)
	var ws1, ws2 Workspace
	got, err := ws1.Rerank(t.Context(), m, rq)
	require.NoError(t, err)
	direct, err := ws2.Rerank(t.Context(), m, want)
	require.NoError(t, err)
	require.Equal(t, direct, got)

	j = decodeJSON(t, `{"candidates": [1, 2], "k": 1, "degrade": false, "relevance": [1, 2], "theta": 0.5}`)
	rq, err = j.Request(ndpp.Random(5, 2, 1, ndpp.RandomOptions{}))
	require.NoError(t, err)
	require.Equal(t, Request{Candidates: []int{1, 2}, K: 1, Relevance: []float64{1, 2}, Theta: 0.5}, rq)
}

// TestJSONRequestErrors: each bad entry is a *RequestError at its path in
// the JSON form.
func TestJSONRequestErrors(t *testing.T) {
	m := vocabModel(t, 20, 3)
	for _, c := range []struct{ body, field, reason string }{
		{`{"candidates": ["item-1"]}`, "k", "missing"},
		{`{"candidates": ["item-1", "nope"], "k": 1}`, "candidates[1]", `unknown item "nope"`},
		{`{"candidates": ["item-1", 7], "k": 1}`, "candidates[1]", `unknown item "7"`},
		{`{"candidates": ["item-1", 1.5], "k": 1}`, "candidates[1]", "1.5 is not an item (a JSON string or integer)"},
		{`{"candidates": ["item-1", "item-1"], "k": 1}`, "candidates[1]", `item "item-1" repeats candidates[0]`},
		{`{"candidates": ["item-1"], "k": 1, "shown": ["item-2", "x"]}`, "shown[1]", `unknown item "x"`},
		{`{"candidates": ["item-1", "item-2"], "k": 1, "quality": [1, "NaN"]}`, "quality[1]", `"NaN" is a string; want a finite number ≥ 0`},
		{`{"candidates": ["item-1", "item-2"], "k": 1, "quality": [-1, 1]}`, "quality[0]", "-1; want a finite number ≥ 0"},
		{`{"candidates": ["item-1", "item-2"], "k": 1, "quality": [1, 1e400]}`, "quality[1]", "1e400; want a finite number ≥ 0"},
		{`{"candidates": ["item-1"], "k": 1, "attributes": {"c": [1.5]}}`, "attributes.c[0]", "1.5; want a string or an integer"},
		{`{"candidates": ["item-1"], "k": 1, "shown_attributes": {"c": [true]}}`, "shown_attributes.c[0]", "true; want a string or an integer"},
		{`{"candidates": ["item-1", "x"], "k": 1, "new_items": [{"id": "item-3", "v": [1, 2, 3]}]}`, "new_items[0].id", `"item-3" is one of the model's items`},
		{`{"candidates": ["item-1", "x"], "k": 1, "new_items": [{"id": "x", "v": [1, 2, 3], "b": [1, 2, 3]}, {"id": "x"}]}`, "new_items[1].id", `"x" repeats new_items[0]`},
		{`{"candidates": ["item-1", "x"], "k": 1, "new_items": [{"id": null}]}`, "new_items[0].id", "null is not an item id (a JSON string or integer)"},
		{`{"candidates": ["item-1", "y"], "k": 1, "new_items": [{"id": "x", "v": [1, 2, 3], "b": [1, 2, 3]}]}`, "candidates[1]", `unknown item "y"`},
		// New items are named by the client's ids, never by the rows they get.
		{`{"candidates": ["item-1", 5000], "k": 1, "new_items": [{"id": 5000, "v": [1, 2], "b": [1, 2, 3]}]}`, "new_items[0]", `item "5000": v has 2 entries; want d = 3`},
		{`{"candidates": ["item-1", "x"], "k": 1, "new_items": [{"id": "w", "v": [1, 2, 3], "b": [1, 2, 3]}, {"id": "x", "v": [1, 2, 3], "b": [1, 2, 3], "delta": -1}]}`, "new_items[1]", `item "x": diagonal entry δ = -1; need finite and ≥ 0`},
		{`{"candidates": ["x", "item-1", "x"], "k": 1, "new_items": [{"id": "x", "v": [1, 2, 3], "b": [1, 2, 3]}]}`, "candidates[2]", `item "x" repeats candidates[0]`},
		{`{"candidates": ["item-1", "x", "item-1"], "k": 1, "new_items": [{"id": "x", "v": [1, 2, 3], "b": [1, 2, 3]}]}`, "candidates[2]", `item "item-1" repeats candidates[0]`},
	} {
		j := decodeJSON(t, c.body)
		_, err := j.Request(m)
		var re *RequestError
		require.ErrorAs(t, err, &re, c.body)
		f := re.Field
		if re.Index >= 0 {
			f = fmt.Sprintf("%s[%d]", re.Field, re.Index)
		}
		require.Equal(t, c.field, f, c.body)
		require.Equal(t, c.reason, re.Reason, c.body)
	}
}

// TestOneJSONForm: a Request refuses to be decoded from JSON (its JSON
// form is JSONRequest), and JSONRequest has a field for every field of
// Request, so that the wire form cannot fall behind the library's.
func TestOneJSONForm(t *testing.T) {
	var rq Request
	err := json.Unmarshal([]byte(`{"candidates": [1, 2], "k": 1}`), &rq)
	require.ErrorContains(t, err, "JSONRequest")
	jt := reflect.TypeFor[JSONRequest]()
	for f := range reflect.TypeFor[Request]().Fields() {
		_, ok := jt.FieldByName(f.Name)
		require.True(t, ok, "JSONRequest has no field %s", f.Name)
	}
}
