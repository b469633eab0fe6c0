package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/jsonitem"
	"github.com/ndpp-go/ndpp/internal/ndpptest"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/npz"
	"github.com/ndpp-go/ndpp/rerank"
)

// smallModel is a model file of 60 items, d = 5, in the repository's
// test data.
const smallModel = "../testdata/small-model.npz"

// testServer serves the model at path on a loopback httptest server,
// after the setup functions have configured the server.
func testServer(t *testing.T, path string, lim Limits, setup ...func(*Handler)) (*Handler, string, *ndpptest.SyncBuffer) {
	t.Helper()
	var logs ndpptest.SyncBuffer
	o := DefaultOptions()
	o.Limits, o.Logger = lim, log.New(&logs, "", 0)
	s, err := New(context.Background(), File(path, npz.LoadOptions{}), o)
	require.NoError(t, err)
	for _, f := range setup {
		f(s)
	}
	ts := httptest.NewServer(s.handler())
	t.Cleanup(ts.Close)
	return s, ts.URL, &logs
}

// post sends body as JSON and decodes a 200 response into out (when not
// nil); it returns the status code and the raw response.
var post = ndpptest.PostJSON

// vocabModel saves a random model whose items are named by a vocabulary
// ("item-0", …) and returns its path.
func vocabModel(t testing.TB, dir string, n, d int, seed uint64, diag float64) string {
	t.Helper()
	base := ndpp.Random(n, d, seed, ndpp.RandomOptions{Diag: diag})
	toks := make([]string, n)
	for i := range toks {
		toks[i] = fmt.Sprintf("item-%d", i)
	}
	voc, err := ndpp.NewVocab(toks)
	require.NoError(t, err)
	v, b, _, c := base.Rows()
	m, err := ndpp.NewFromRows(n, d, v, b, c, ndpp.WithVocab(voc), ndpp.WithDiag(base.Diag()))
	require.NoError(t, err)
	path := filepath.Join(dir, fmt.Sprintf("vocab-%d.npz", seed))
	require.NoError(t, npz.Save(path, m))
	return path
}

// TestServeRerankMatchesLibrary: tokens of a vocabulary, quality, shown
// items and a window (or local-search polish) give the reranker's own
// result.
func TestServeRerankMatchesLibrary(t *testing.T) {
	path := vocabModel(t, t.TempDir(), 200, 6, 3, 0.1)
	s, url, _ := testServer(t, path, DefaultLimits())
	m := s.model().m
	var ws rerank.Workspace
	for seed := 0; seed < 20; seed++ {
		req := rerank.Request{Candidates: []int{}, K: 1 + seed%7, Window: seed % 4}
		if req.Window == 0 && seed%8 == 0 {
			req.Polish, req.PolishEps = true, 1e-9
		}
		var cands, quality, shown []string
		for i := 0; i < 30; i++ {
			x := (i*37 + seed*11) % 200
			req.Candidates = append(req.Candidates, x)
			req.Quality = append(req.Quality, 0.5+float64((i*seed)%7)/7)
			cands = append(cands, strconv.Quote(m.Token(x)))
			quality = append(quality, strconv.FormatFloat(req.Quality[i], 'g', -1, 64))
		}
		for i := 0; i < seed%5; i++ {
			x := (i*53 + seed) % 200
			req.Shown = append(req.Shown, x)
			shown = append(shown, strconv.Quote(m.Token(x)))
		}
		want, err := ws.Rerank(context.Background(), m, req)
		require.NoError(t, err)
		body := fmt.Sprintf(`{"candidates": [%s], "quality": [%s], "shown": [%s], "k": %d, "window": %d, "polish": %v, "polish_eps": %g}`,
			strings.Join(cands, ","), strings.Join(quality, ","), strings.Join(shown, ","), req.K, req.Window, req.Polish, req.PolishEps)
		var got struct {
			Items []string  `json:"items"`
			Gains []float64 `json:"gains"`
		}
		status, raw := post(t, url+"/v1/rerank", body, &got)
		require.Equal(t, http.StatusOK, status, raw)
		var wantTok []string
		for _, x := range want.Items {
			wantTok = append(wantTok, m.Token(x))
		}
		if diff := cmp.Diff(wantTok, got.Items); diff != "" {
			t.Fatalf("seed %d (-library +server):\n%s", seed, diff)
		}
		require.Equal(t, want.Gains, got.Gains)
	}
}

// TestServeRerankSample: "sample" with a "seed" answers the library's
// sample for that seed (the same list for the same seed), with its tries.
func TestServeRerankSample(t *testing.T) {
	path := vocabModel(t, t.TempDir(), 200, 6, 4, 0.1)
	s, url, _ := testServer(t, path, DefaultLimits())
	m := s.model().m
	var ws rerank.Workspace
	var cands []string
	req := rerank.Request{K: 5, Shown: []int{7}, Sample: true}
	for i := 0; i < 40; i++ {
		x := (i*37 + 5) % 200
		req.Candidates = append(req.Candidates, x)
		cands = append(cands, strconv.Quote(m.Token(x)))
	}
	distinct := map[string]bool{}
	for seed := uint64(0); seed < 10; seed++ {
		req.Seed = seed
		want, err := ws.Rerank(context.Background(), m, req)
		require.NoError(t, err)
		var wantTok []string
		for _, x := range want.Items {
			wantTok = append(wantTok, m.Token(x))
		}
		body := fmt.Sprintf(`{"candidates": [%s], "shown": ["item-7"], "k": 5, "sample": true, "seed": %d}`, strings.Join(cands, ","), seed)
		var got struct {
			Items       []string  `json:"items"`
			Gains       []float64 `json:"gains"`
			SampleTries int       `json:"sample_tries"`
		}
		status, raw := post(t, url+"/v1/rerank", body, &got)
		require.Equal(t, http.StatusOK, status, raw)
		require.Equal(t, wantTok, got.Items)
		require.Equal(t, want.Gains, got.Gains)
		require.Equal(t, want.SampleTries, got.SampleTries)
		require.Positive(t, got.SampleTries)
		distinct[strings.Join(got.Items, " ")] = true
	}
	require.Greater(t, len(distinct), 5)
}

// TestServeBadRequests: every malformed request is a 4xx with a JSON
// error naming the field, and the server keeps serving.
func TestServeBadRequests(t *testing.T) {
	path := vocabModel(t, t.TempDir(), 50, 4, 1, 0.1)
	lim := DefaultLimits()
	lim.MaxBody = 2000
	lim.MaxCandidates = 40
	lim.MaxK = 5
	lim.MaxShown = 3
	lim.MaxItems = 4
	lim.MaxBaskets = 3
	lim.MaxN = 7
	_, url, _ := testServer(t, path, lim)
	big := `{"candidates": [` + strings.Repeat(`"item-1",`, 300) + `"item-2"], "k": 1}`
	cases := []struct {
		path, body string
		code       int
		field      string
	}{
		{"/v1/rerank", `{"candidates": ["item-1", "nope"], "k": 1}`, 400, "candidates[1]"},
		{"/v1/rerank", `{"candidates": ["item-1", 7], "k": 1}`, 400, "candidates[1]"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2", "item-1"], "k": 1}`, 400, "candidates[2]"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 3}`, 400, "k"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 0}`, 400, "k"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"]}`, 400, "k"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1.5}`, 400, "k"},
		{"/v1/rerank", `{"k": 1}`, 400, "candidates"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "quality": [1, "NaN"]}`, 400, "quality[1]"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "quality": [1, NaN]}`, 400, "body"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "quality": [-1, 1]}`, 400, "quality[0]"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "quality": [1e400, 1]}`, 400, "quality[0]"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "quality": [1]}`, 400, "quality"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "shown": ["item-3", "item-3"]}`, 400, "shown[1]"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "shown": ["x"]}`, 400, "shown[0]"},
		{"/v1/rerank", `{"candidates": ["item-1"], "k": 1, "shown": ["item-2", "item-3", "item-4", "item-5"]}`, 400, "shown"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "window": -2}`, 400, "window"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "window": 2, "polish": true}`, 400, "window"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "polish": true, "polish_pool": -1}`, 400, "polish_pool"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "polish": true, "polish_pool": 257}`, 400, "polish_pool"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "polish": true, "polish_max_ratios": -1}`, 400, "polish_max_ratios"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "polish": true, "polish_max_ratios": 1e12}`, 400, "polish_max_ratios"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "timeout_ms": -1}`, 400, "timeout_ms"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "attributes": {"c": ["x", 1.5]}, "constraints": [{"attribute": "c", "max_run": 1}]}`, 400, "attributes.c[1]"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "attributes": {"c": ["x", 1]}, "constraints": [{"attribute": "d", "max_run": 1}]}`, 400, "constraints[0]"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "relevance": [1, 2], "quality": [1, 1]}`, 400, "relevance"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "relevance": [1, 2], "theta": 2}`, 400, "theta"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "timeout_ms": 10001}`, 400, "timeout_ms"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "windows": 2}`, 400, "windows"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1} {}`, 400, "body"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1`, 400, "body"},
		{"/v1/rerank", ``, 400, "body"},
		{"/v1/rerank", `[1, 2]`, 400, "body"},
		{"/v1/rerank", `{"candidates": "item-1", "k": 1}`, 400, "candidates"},
		{"/v1/rerank", `{"candidates": [["item-1"]], "k": 1}`, 400, "candidates[0]"},
		{"/v1/rerank", `{"candidates": [null], "k": 1}`, 400, "candidates[0]"},
		{"/v1/rerank", big, 413, "body"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "sample": true}`, 400, "seed"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "seed": 3}`, 400, "seed"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "sample": true, "seed": -3}`, 400, "seed"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "sample": true, "seed": 3, "polish": true}`, 400, "polish"},
		{"/v1/score", `{"baskets": [["item-1"], []]}`, 400, "baskets[1]"},
		{"/v1/score", `{"baskets": [["item-1", "item-1"]]}`, 400, "baskets[0][1]"},
		{"/v1/score", `{"baskets": [["item-1", "item-99"]]}`, 400, "baskets[0][1]"},
		{"/v1/score", `{"baskets": [["item-1", "item-2", "item-3", "item-4", "item-5"]]}`, 400, "baskets[0]"},
		{"/v1/score", `{"baskets": [["item-1"], ["item-1"], ["item-1"], ["item-1"]]}`, 400, "baskets"},
		{"/v1/score", `{"baskets": [[1.5]]}`, 400, "baskets[0][0]"},
		{"/v1/score", `{}`, 400, "baskets"},
		{"/v1/recommend", `{"basket": ["item-1"], "n": 8}`, 400, "n"},
		{"/v1/recommend", `{"basket": ["item-1"], "n": 0}`, 400, "n"},
		{"/v1/recommend", `{"basket": ["item-1", "item-1"]}`, 400, "basket[1]"},
		{"/v1/recommend", `{"basket": ["zzz"]}`, 400, "basket[0]"},
		{"/v1/recommend", `{"baskets": [["item-1"], ["zzz"]]}`, 400, "baskets[1][0]"},
		{"/v1/recommend", `{"basket": ["item-1"], "baskets": [["item-1"]]}`, 400, "baskets"},
		{"/v1/recommend", `{"n": 3}`, 400, "basket"},
		{"/v1/nothing", `{}`, 404, "path"},
		// Field names are exact: no case folding, no repeats.
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "K": 1}`, 400, "K"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "k": 2}`, 400, "k"},
		{"/v1/score", `{"baskets": [["item-1"]], "Baskets": [["item-2"]]}`, 400, "Baskets"},
		{"/v1/recommend", `{"basket": ["item-1"], "N": 2}`, 400, "N"},
		{"/v1/recommend", `{"basket": ["item-1"], "": 2}`, 400, `""`},
		{"/v1/rerank", `{"candidates": ["item-1", "new-1"], "k": 1, "new_items": [{"id": "new-1", "": 0}]}`, 400, `new_items[0].""`},
		{"/v1/rerank", `{"candidates": ["item-1", "new-1"], "k": 1, "new_items": [{"id": "new-1", "v": [0, 0, 0, 0], "b": [0, 0, 0, 0], "Delta": 1}]}`, 400, "new_items[0].Delta"},
		{"/v1/rerank", `{"candidates": ["item-1", "new-1"], "k": 1, "new_items": [{"id": "new-1", "id": "new-2", "v": [0, 0, 0, 0], "b": [0, 0, 0, 0]}]}`, 400, "new_items[0].id"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1, "attributes": {"a": [1, 2]}, "constraints": [{"attribute": "a", "Max_Run": 1}]}`, 400, "constraints[0].Max_Run"},
		// A long value is not echoed whole.
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": ` + strings.Repeat("9", 1500) + `}`, 400, "k"},
	}
	for _, c := range cases {
		var e errorBody
		status, raw := post(t, url+c.path, c.body, nil)
		require.Equal(t, c.code, status, "%s %s: %s", c.path, jsonitem.Truncate(c.body), raw)
		require.NoError(t, json.Unmarshal([]byte(raw), &e), raw)
		require.Equal(t, c.field, e.Field, "%s %s: %s", c.path, jsonitem.Truncate(c.body), raw)
		require.True(t, strings.HasPrefix(e.Error, c.field+": "), raw)
		require.Less(t, len(raw), 300, "the error echoes too much: %s", raw)
	}
	// Content type and method.
	resp, err := http.Post(url+"/v1/rerank", "text/plain", strings.NewReader(`{"candidates": ["item-1"], "k": 1}`))
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
	require.Contains(t, string(raw), `"field":"Content-Type"`)
	resp, err = http.Get(url + "/v1/rerank")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, "POST", resp.Header.Get("Allow"))
	resp, err = http.Post(url+"/healthz", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	// A charset parameter is fine, and the server still serves.
	resp, err = http.Post(url+"/v1/rerank", "application/json; charset=utf-8", strings.NewReader(`{"candidates": ["item-1", "item-2"], "k": 2, "quality": [1, 0.5]}`))
	require.NoError(t, err)
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
}

// TestServeTypeErrors: a value of the wrong JSON type is refused with an
// error that names the field, the JSON type sent and the JSON type wanted
// (integer, number, boolean, string, array, object), for every kind of
// field of the requests.
func TestServeTypeErrors(t *testing.T) {
	path := vocabModel(t, t.TempDir(), 50, 4, 1, 0.1)
	_, url, _ := testServer(t, path, DefaultLimits())
	const base = `{"candidates": ["item-1", "item-2"], "k": 1, `
	for _, c := range []struct{ path, body, want string }{
		{"/v1/rerank", base + `"timeout_ms": "100"}`, "timeout_ms: got a JSON string, want an integer"},
		{"/v1/rerank", base + `"timeout_ms": 1.5}`, "timeout_ms: got a JSON number 1.5, want an integer"},
		{"/v1/rerank", base + `"polish_max_ratios": "5"}`, "polish_max_ratios: got a JSON string, want an integer"},
		{"/v1/rerank", base + `"polish": "yes"}`, "polish: got a JSON string, want a boolean"},
		{"/v1/rerank", base + `"degrade": 0}`, "degrade: got a JSON number, want a boolean"},
		{"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": "1"}`, "k: got a JSON string, want an integer"},
		{"/v1/rerank", base + `"window": true}`, "window: got a JSON boolean, want an integer"},
		{"/v1/rerank", base + `"polish_eps": "1e-9"}`, "polish_eps: got a JSON string, want a number"},
		{"/v1/rerank", base + `"theta": [0.5]}`, "theta: got a JSON array, want a number"},
		{"/v1/rerank", base + `"relevance": {"a": 1}}`, "relevance: got a JSON object, want an array"},
		{"/v1/rerank", base + `"relevance": [1, "2"]}`, "relevance[1]: got a JSON string, want a number"},
		{"/v1/rerank", base + `"attributes": ["c"]}`, "attributes: got a JSON array, want an object"},
		{"/v1/rerank", base + `"constraints": {"attribute": "c"}}`, "constraints: got a JSON object, want an array"},
		{"/v1/rerank", base + `"constraints": [{"attribute": 3, "max_run": 1}]}`, "constraints[0].attribute: got a JSON number, want a string"},
		{"/v1/rerank", base + `"constraints": [{"attribute": "c", "max_run": "1"}]}`, "constraints[0].max_run: got a JSON string, want an integer"},
		{"/v1/rerank", base + `"new_items": [{"id": "n", "v": "x"}]}`, "new_items[0].v: got a JSON string, want an array"},
		{"/v1/rerank", base + `"new_items": [{"id": "n", "delta": "0.5"}]}`, "new_items[0].delta: got a JSON string, want a number"},
		{"/v1/recommend", `{"basket": ["item-1"], "n": "3"}`, "n: got a JSON string, want an integer"},
		{"/v1/score", `{"baskets": {"a": 1}}`, "baskets: got a JSON object, want an array"},
	} {
		var e errorBody
		status, raw := post(t, url+c.path, c.body, nil)
		require.Equal(t, http.StatusBadRequest, status, "%s %s: %s", c.path, c.body, raw)
		require.NoError(t, json.Unmarshal([]byte(raw), &e), raw)
		require.Equal(t, c.want, e.Error, c.body)
	}
}

// TestServeInfoAndMetrics: /v1/model, /healthz, /readyz and the
// Prometheus exposition with request counts and latency histograms.
func TestServeInfoAndMetrics(t *testing.T) {
	path := vocabModel(t, t.TempDir(), 50, 4, 1, 0.1)
	_, url, _ := testServer(t, path, DefaultLimits())
	get := func(p string) (int, string) {
		resp, err := http.Get(url + p)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/v1/model")
	require.Equal(t, 200, code)
	var info modelInfo
	require.NoError(t, json.Unmarshal([]byte(body), &info))
	require.Equal(t, modelInfo{File: path, Items: 50, D: 4, Diagonal: true, MaxRank: 50, ItemNames: "vocabulary",
		LogNormalizer: info.LogNormalizer, LoadedAt: info.LoadedAt, Backend: info.Backend}, info)
	code, _ = get("/healthz")
	require.Equal(t, 200, code)
	code, _ = get("/readyz")
	require.Equal(t, 200, code)
	post(t, url+"/v1/rerank", `{"candidates": ["item-1", "item-2"], "k": 1}`, nil)
	post(t, url+"/v1/rerank", `{"candidates": ["item-1", "item-1"], "k": 1}`, nil)
	code, body = get("/metrics")
	require.Equal(t, 200, code)
	for _, want := range []string{
		`ndpp_serve_requests_total{code="200",endpoint="rerank"} 1`,
		`ndpp_serve_requests_total{code="400",endpoint="rerank"} 1`,
		`ndpp_serve_requests_total{code="200",endpoint="model"} 1`,
		`ndpp_serve_request_duration_seconds_bucket{endpoint="rerank",le="+Inf"} 2`,
		`ndpp_serve_request_duration_seconds_count{endpoint="rerank"} 2`,
		`ndpp_serve_model_reloads_total{result="error"} 0`,
		`ndpp_serve_model_items 50`,
		`go_goroutines`,
	} {
		require.Contains(t, body, want)
	}
}

// TestServeReload: a reload swaps the model atomically — a request that
// took the old model finishes with it, later ones get the new one — and a
// broken file keeps the old model, with the reason logged.
func TestServeReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.npz")
	require.NoError(t, npz.Save(path, ndpp.Random(80, 5, 1, ndpp.RandomOptions{Diag: 0.1})))
	s, url, logs := testServer(t, path, DefaultLimits())
	body := `{"candidates": [` + seqList(80) + `], "k": 6}`
	var before, during, after rerankResponse
	post(t, url+"/v1/rerank", body, &before)

	entered, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	s.hook = func(*http.Request) {
		if first.CompareAndSwap(false, true) {
			close(entered)
			<-release
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		post(t, url+"/v1/rerank", body, &during)
	}()
	<-entered
	require.NoError(t, npz.Save(path, ndpp.Random(80, 5, 2, ndpp.RandomOptions{Diag: 0.1})))
	require.NoError(t, s.Reload(context.Background()))
	post(t, url+"/v1/rerank", body, &after) // not blocked: the hook runs once
	close(release)
	<-done
	require.Equal(t, before, during, "the request in flight finishes on the old model")
	require.NotEqual(t, before.Items, after.Items, "later requests get the new model")

	require.NoError(t, os.WriteFile(path, []byte("not a model"), 0o644))
	require.Error(t, s.Reload(context.Background()))
	var again rerankResponse
	post(t, url+"/v1/rerank", body, &again)
	require.Equal(t, after, again)
	require.Equal(t, int64(1), s.reloads.Load())
	require.Contains(t, logs.String(), "reloaded "+path)
}

func seqList(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
	}
	return b.String()
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestServeRerankDeadline: a request whose polish would run for minutes
// answers at its timeout_ms with the best result reached and "degraded"
// set (counted in ndpp_serve_rerank_degraded_total), or 503 with
// "degrade": false; a request that finishes in time has no "degraded".
func TestServeRerankDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("long instance")
	}
	path := vocabModel(t, t.TempDir(), 2000, 30, 3, 0.05)
	lim := DefaultLimits()
	lim.MaxPolishRatios = 1 << 62
	_, url, _ := testServer(t, path, lim)
	var b strings.Builder
	b.WriteString(`{"candidates": [`)
	for i := 0; i < 2000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"item-%d"`, i)
	}
	long := b.String() + `], "k": 100, "polish": true, "polish_pool": 256, "polish_eps": 1e-12, "polish_max_ratios": 4611686018427387904, "timeout_ms": 200`
	var res rerankResponse
	t0 := time.Now()
	code, raw := post(t, url+"/v1/rerank", long+`}`, &res)
	el := time.Since(t0)
	require.Equal(t, 200, code, raw)
	require.Less(t, el, 5*time.Second)
	require.Contains(t, []string{rerank.DegradedPolish, rerank.DegradedGreedy}, res.Degraded, raw)
	require.Len(t, res.Items, 100)
	t.Logf("degraded %q after %v", res.Degraded, el)
	mresp, err := http.Get(url + "/metrics")
	require.NoError(t, err)
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	require.Contains(t, string(metrics), fmt.Sprintf(`ndpp_serve_rerank_degraded_total{kind=%q} 1`, res.Degraded))

	code, raw = post(t, url+"/v1/rerank", long+`, "degrade": false}`, nil)
	require.Equal(t, 503, code, raw)
	require.Contains(t, raw, "timeout_ms")

	res = rerankResponse{}
	code, raw = post(t, url+"/v1/rerank", `{"candidates": ["item-1", "item-2", "item-3"], "k": 2, "polish": true}`, &res)
	require.Equal(t, 200, code, raw)
	require.NotContains(t, raw, "degraded")
	require.Len(t, res.Items, 2)
}

// TestServeRerankControls: relevance with θ = 1 is relevance order without
// gains or log_value; attributes given as strings and integers (3 and "3"
// differ) with a max_run constraint; infeasible constraints answer fewer
// items with "short_reason".
func TestServeRerankControls(t *testing.T) {
	path := vocabModel(t, t.TempDir(), 50, 4, 1, 0.1)
	_, url, _ := testServer(t, path, DefaultLimits())
	var res rerankResponse
	code, raw := post(t, url+"/v1/rerank", `{"candidates": ["item-1", "item-2", "item-3"], "k": 2, "relevance": [1, 3, 2], "theta": 1}`, &res)
	require.Equal(t, 200, code, raw)
	require.Equal(t, `["item-2","item-3"]`, string(must(json.Marshal(res.Items))))
	require.NotContains(t, raw, "log_value")
	res = rerankResponse{}
	code, raw = post(t, url+"/v1/rerank", `{"candidates": ["item-1", "item-2", "item-3"], "k": 3, "relevance": [3, 2, 1], "theta": 1,
		"attributes": {"c": [3, 3, "3"]}, "constraints": [{"attribute": "c", "max_run": 1}]}`, &res)
	require.Equal(t, 200, code, raw)
	require.Equal(t, `["item-1","item-3","item-2"]`, string(must(json.Marshal(res.Items))))
	res = rerankResponse{}
	code, raw = post(t, url+"/v1/rerank", `{"candidates": ["item-1", "item-2", "item-3"], "k": 3,
		"attributes": {"c": [3, 3, 3]}, "constraints": [{"attribute": "c", "window": 2, "max_per_window": 1}]}`, &res)
	require.Equal(t, 200, code, raw)
	require.Len(t, res.Items, 1)
	require.Equal(t, "constraints", res.ShortReason)
	require.NotNil(t, res.LogValue)
	require.InDelta(t, math.Log(res.Gains[0]), *res.LogValue, 1e-12)
}

// TestServeRerankNewItems: a model row re-given as a new item (its v, b,
// δ under a new id) gives the row's gains, the new id in items; an id of
// the model's, a repeated id or a bad vector is a 400.
func TestServeRerankNewItems(t *testing.T) {
	path := vocabModel(t, t.TempDir(), 50, 4, 1, 0.1)
	s, url, _ := testServer(t, path, DefaultLimits())
	m := s.model().m
	var want, got rerankResponse
	code, raw := post(t, url+"/v1/rerank", `{"candidates": ["item-1", "item-2", "item-3", "item-4"], "k": 3, "shown": ["item-7"]}`, &want)
	require.Equal(t, 200, code, raw)
	ni := map[string]any{"id": "fresh", "v": m.ItemV(3), "b": m.ItemB(3), "delta": m.ItemDiag(3)}
	nj := must(json.Marshal([]any{ni}))
	code, raw = post(t, url+"/v1/rerank", `{"candidates": ["item-1", "item-2", "fresh", "item-4"], "k": 3, "shown": ["item-7"], "new_items": `+string(nj)+`}`, &got)
	require.Equal(t, 200, code, raw)
	require.Equal(t, want.Gains, got.Gains)
	for i := range want.Items {
		w := string(want.Items[i])
		if w == `"item-3"` {
			w = `"fresh"`
		}
		require.Equal(t, w, string(got.Items[i]))
	}
	// Errors name the client's items and positions, never the rows the
	// new items get inside (50, 51, …).
	for _, c := range []struct{ body, err string }{
		{`{"candidates": ["item-1", "item-2"], "k": 1, "new_items": [{"id": "item-2", "v": [1, 2, 3, 4], "b": [1, 2, 3, 4], "delta": 0.1}]}`, `new_items[0].id: "item-2" is one of the model's items`},
		{`{"candidates": ["item-1", "x"], "k": 1, "new_items": [{"id": "x", "v": [1, 2, 3, 4], "b": [1, 2, 3, 4]}, {"id": "x", "v": [1, 2, 3, 4], "b": [1, 2, 3, 4]}]}`, `new_items[1].id: "x" repeats new_items[0]`},
		{`{"candidates": ["item-1", 5000], "k": 1, "new_items": [{"id": 5000, "v": [1, 2], "b": [1, 2, 3, 4]}]}`, `new_items[0]: item "5000": v has 2 entries; want d = 4`},
		{`{"candidates": ["item-1", "y"], "k": 1, "new_items": [{"id": "x", "v": [1, 2, 3, 4], "b": [1, 2, 3, 4]}]}`, `candidates[1]: unknown item "y"`},
		{`{"candidates": ["x", "item-1", "x"], "k": 1, "new_items": [{"id": "x", "v": [1, 2, 3, 4], "b": [1, 2, 3, 4]}]}`, `candidates[2]: item "x" repeats candidates[0]`},
	} {
		var e errorBody
		code, raw := post(t, url+"/v1/rerank", c.body, nil)
		require.Equal(t, 400, code, raw)
		require.NoError(t, json.Unmarshal([]byte(raw), &e), raw)
		require.Equal(t, c.err, e.Error)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// failingSource serves its model until broken is set.
type failingSource struct {
	m      *ndpp.Model
	broken atomic.Bool
}

func (f *failingSource) Name() string { return "memory" }

func (f *failingSource) Load(ctx context.Context) (*ndpp.Model, error) {
	if f.broken.Load() {
		return nil, errors.New("gone")
	}
	return f.m, nil
}

// TestServeSources: a model from any Source is served under its name; one
// whose kernel overflows is refused (whatever the Source), and so is none;
// a Source that fails on reload keeps the old model, and the failure is
// counted and logged.
func TestServeSources(t *testing.T) {
	ctx := context.Background()
	m := ndpp.Random(30, 3, 1, ndpp.RandomOptions{Diag: 0.1})
	_, err := New(ctx, Static("nothing", nil), DefaultOptions())
	require.ErrorContains(t, err, "nothing: no model")
	v, b, _, c := m.Rows()
	huge, err := ndpp.NewFromRows(30, 3, scaled(v, 1e200), scaled(b, 1e200), c)
	require.NoError(t, err)
	_, err = New(ctx, Static("huge", huge), DefaultOptions())
	require.ErrorIs(t, err, ndpp.ErrOverflow)
	require.True(t, strings.HasPrefix(err.Error(), "huge: "), err.Error())

	src := &failingSource{m: m}
	var logs ndpptest.SyncBuffer
	o := DefaultOptions()
	o.Logger = log.New(&logs, "", 0)
	h, err := New(ctx, src, o)
	require.NoError(t, err)
	require.Same(t, m, h.Model())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/model", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	var info modelInfo
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &info))
	require.Equal(t, "memory", info.File)
	require.Equal(t, 30, info.Items)
	src.broken.Store(true)
	require.ErrorContains(t, h.Reload(ctx), "gone")
	require.Same(t, m, h.Model())
	require.Contains(t, logs.String(), "reload: keeping the model loaded at ")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Contains(t, rec.Body.String(), `ndpp_serve_model_reloads_total{result="error"} 1`)
}

func scaled(x []float64, f float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * f
	}
	return out
}
