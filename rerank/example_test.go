package rerank_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/rerank"
)

// An HTTP handler that reranks over one shared model, with a pool of
// workspaces so that requests in parallel each have their own and the
// steady state allocates nothing in the reranker. The body is the JSON
// form of a request, JSONRequest (items named as the model names them:
// here rows), which Request maps to the model. Package serve is the full
// service (limits, deadlines, metrics, readiness).
func Example_handler() {
	m := ndpp.Random(1000, 30, 1, ndpp.RandomOptions{Diag: 0.05}) // or npz.Load

	pool := sync.Pool{New: func() any { return new(rerank.Workspace) }}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var jr rerank.JSONRequest
		if err := json.NewDecoder(r.Body).Decode(&jr); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req, err := jr.Request(m)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ws := pool.Get().(*rerank.Workspace)
		defer pool.Put(ws)
		// The client's context: a client that goes away stops the work.
		res, err := ws.Rerank(r.Context(), m, req) // res aliases ws: encode it before Put
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnprocessableEntity)
			return
		}
		json.NewEncoder(w).Encode(res)
	})

	srv := httptest.NewServer(handler)
	defer srv.Close()
	for _, body := range []string{
		`{"candidates": [3, 17, 42, 99, 500, 731], "quality": [1, 0.5, 2, 1, 1, 0.1], "shown": [17], "k": 3}`,
		`{"candidates": [3, 3], "k": 1}`,
		`{"candidates": [3, 17], "k": 3}`,
	} {
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var res rerank.Result
		if json.Unmarshal(out, &res) == nil {
			fmt.Printf("%d items %v gains %.4f\n", resp.StatusCode, res.Items, res.Gains)
		} else {
			fmt.Print(resp.StatusCode, " ", string(out))
		}
	}
	// Output:
	// 200 items [42 500 3] gains [5.5179 1.2681 1.2176]
	// 400 rerank: candidates[1]: item "3" repeats candidates[0]
	// 422 rerank: k: k = 3; want 1 ≤ k ≤ 2 (the number of candidates)
}
