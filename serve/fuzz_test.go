package serve

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ndpp-go/ndpp/ndpp/npz"
)

// FuzzRequests: whatever body a client posts to an endpoint, the handler
// answers without panicking, never with a 5xx, always with JSON; an
// answer other than 200 is an error that names its field.
func FuzzRequests(f *testing.F) {
	paths := []string{"/v1/score", "/v1/recommend", "/v1/rerank"}
	for _, s := range []struct {
		path uint8
		body string
	}{
		{0, `{"baskets": [["item-1", "item-2"], ["item-3"]]}`},
		{0, `{"baskets": [[1, 2]]}`},
		{1, `{"basket": ["item-1"], "n": 3}`},
		{1, `{"baskets": [["item-1"], ["item-2", "item-4"]], "n": 2}`},
		{2, `{"candidates": ["item-1", "item-2", "item-3"], "k": 2, "quality": [1, 0.5, 2]}`},
		{2, `{"candidates": ["item-1", "item-2", "item-3"], "k": 2, "shown": ["item-4"], "window": 2}`},
		{2, `{"candidates": ["item-1", "item-2", "item-3"], "k": 2, "polish": true, "polish_pool": 3}`},
		{2, `{"candidates": ["item-1", "item-2", "item-3"], "k": 2, "sample": true, "seed": 7}`},
		{2, `{"candidates": ["item-1", "item-2", "item-3"], "k": 2, "relevance": [3, 2, 1], "theta": 0.5}`},
		{2, `{"candidates": ["item-1", "item-2", "item-3"], "k": 3, "attributes": {"c": ["x", "x", "y"]}, "constraints": [{"attribute": "c", "max_run": 1}]}`},
		{2, `{"candidates": ["item-1", "new-1"], "k": 2, "new_items": [{"id": "new-1", "v": [1e300, 0, 0, 0], "b": [0, 1e-300, 0, 0], "delta": 1}]}`},
		{2, `{"candidates": ["item-1", "item-2"], "k": 1, "quality": [1e308, 1e-308]}`},
	} {
		f.Add(s.path, s.body)
	}
	path := vocabModel(f, f.TempDir(), 50, 4, 1, 0.1)
	o := DefaultOptions()
	o.Limits.MaxBody = 4000
	o.Limits.MaxCandidates = 40
	o.Limits.MaxK = 8
	o.Limits.MaxItems = 12
	o.Limits.MaxBaskets = 6
	o.Logger = log.New(io.Discard, "", 0)
	h, err := New(context.Background(), File(path, npz.LoadOptions{}), o)
	if err != nil {
		f.Fatal(err)
	}
	handler := h.handler()
	f.Fuzz(func(t *testing.T, p uint8, body string) {
		req := httptest.NewRequest(http.MethodPost, paths[int(p)%len(paths)], strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q: status %d: %s", req.URL.Path, body, rec.Code, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %q: Content-Type %q", req.URL.Path, body, ct)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %q: the answer is not JSON: %s", req.URL.Path, body, rec.Body)
		}
		if rec.Code != http.StatusOK {
			var e errorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Field == "" || !strings.HasPrefix(e.Error, e.Field+": ") {
				t.Fatalf("%s %q: status %d without an error naming its field: %s", req.URL.Path, body, rec.Code, rec.Body)
			}
		}
	})
}
