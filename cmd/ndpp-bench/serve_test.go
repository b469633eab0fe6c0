package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
	"github.com/ndpp-go/ndpp/internal/scorefmt"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/npz"
	"github.com/ndpp-go/ndpp/serve"
)

// testServer serves the model at path with serve's handler on a loopback
// httptest server (for tests that compare its answers with other
// commands').
func testServer(t *testing.T, path string) string {
	t.Helper()
	s, err := serve.New(context.Background(), serve.File(path, npz.LoadOptions{}), serve.DefaultOptions())
	require.NoError(t, err)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts.URL
}

// The parts of the service's JSON answers that the command's tests read.
type (
	scoreResponse struct {
		LogLikelihoods []*float64 `json:"log_likelihoods"`
	}
	recommendation struct {
		Items  []json.RawMessage `json:"items"`
		Scores []float64         `json:"scores"`
		Error  string            `json:"error"`
	}
	recommendBatch struct {
		Results []recommendation `json:"results"`
	}
	rerankResponse struct {
		Items []json.RawMessage `json:"items"`
		Gains []float64         `json:"gains"`
	}
	modelInfo struct {
		Items   int   `json:"items"`
		Reloads int64 `json:"reloads"`
	}
	readyBody struct {
		Status string `json:"status"`
	}
)

// post sends body as JSON and decodes a 200 response into out (when not
// nil); it returns the status code and the raw response.
var post = ndpptest.PostJSON

// TestServeScoreMatchesScoreCommand: /v1/score gives the log-likelihoods
// of `ndpp-bench score` (null where it prints -Inf), items as JSON
// integers or strings.
func TestServeScoreMatchesScoreCommand(t *testing.T) {
	url := testServer(t, smallModel)
	baskets := [][]int{{1, 2, 3}, {5}, {10, 20, 30, 40}, {0, 1, 2, 3, 4, 5, 6, 7, 8}} // the last is beyond 2d
	var in strings.Builder
	var body []string
	for _, b := range baskets {
		var toks, js []string
		for i, x := range b {
			toks = append(toks, strconv.Itoa(x))
			if i%2 == 0 {
				js = append(js, strconv.Itoa(x))
			} else {
				js = append(js, strconv.Quote(strconv.Itoa(x)))
			}
		}
		in.WriteString(strings.Join(toks, " ") + "\n")
		body = append(body, "["+strings.Join(js, ",")+"]")
	}
	code, out, errs := runCmd(t, in.String(), "score", "--model", smallModel, "--quiet")
	require.Equal(t, 0, code, errs)
	var res scoreResponse
	status, raw := post(t, url+"/v1/score", `{"baskets": [`+strings.Join(body, ",")+`]}`, &res)
	require.Equal(t, http.StatusOK, status, raw)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, res.LogLikelihoods, len(lines))
	for i, line := range lines {
		want := strings.Split(line, "\t")[1]
		if want == "-Inf" {
			require.Nil(t, res.LogLikelihoods[i], "basket %d", i)
			continue
		}
		w, err := strconv.ParseFloat(want, 64)
		require.NoError(t, err)
		require.InDelta(t, w, *res.LogLikelihoods[i], 1e-9*math.Max(1, math.Abs(w)), "basket %d", i)
	}
	require.Contains(t, raw, "null")
}

// TestServeRecommendMatchesScoreCommand: /v1/recommend, for one basket and
// for a batch (with an empty and a singular basket), gives the items and
// gains of `ndpp-bench score --recommend`.
func TestServeRecommendMatchesScoreCommand(t *testing.T) {
	url := testServer(t, smallModel)
	queries := []string{"1 2 3", "5", "10 20"}
	code, out, errs := runCmd(t, strings.Join(queries, "\n")+"\n", "score", "--model", smallModel, "--recommend", "5", "--json")
	require.Equal(t, 0, code, errs)
	var want []scorefmt.Rec
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r scorefmt.Rec
		require.NoError(t, json.Unmarshal([]byte(line), &r))
		want = append(want, r)
	}
	check := func(w scorefmt.Rec, got recommendation) {
		t.Helper()
		require.Len(t, got.Items, len(w.Items))
		for i := range w.Items {
			require.JSONEq(t, w.Items[i], string(got.Items[i]))
			require.InDelta(t, w.Gains[i], got.Scores[i], 1e-9*math.Max(1, w.Gains[i]))
		}
	}
	for qi, q := range queries {
		var got recommendation
		body := `{"basket": [` + strings.Join(strings.Fields(q), ",") + `], "n": 5}`
		status, raw := post(t, url+"/v1/recommend", body, &got)
		require.Equal(t, http.StatusOK, status, raw)
		check(want[qi], got)
	}
	var batch recommendBatch
	status, raw := post(t, url+"/v1/recommend", `{"baskets": [[1,2,3],[5],[],[10,20],[0,1,2,3,4,5,6,7,8]], "n": 5}`, &batch)
	require.Equal(t, http.StatusOK, status, raw)
	require.Len(t, batch.Results, 5)
	check(want[0], batch.Results[0])
	check(want[1], batch.Results[1])
	check(want[2], batch.Results[3])
	require.Len(t, batch.Results[2].Items, 5) // the empty basket: the largest L_jj
	require.Contains(t, batch.Results[4].Error, "zero determinant")
	// The default n is 10; a singular basket on its own is a 422 naming it.
	var got recommendation
	status, _ = post(t, url+"/v1/recommend", `{"basket": [1]}`, &got)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, got.Items, 10)
	status, raw = post(t, url+"/v1/recommend", `{"basket": [0,1,2,3,4,5,6,7,8]}`, nil)
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Contains(t, raw, `"field":"basket"`)
}

// TestServeRerankIsOfflineGreedy: the whole catalogue as candidates
// without quality gives the set of `ndpp-bench infer --algos
// offline-greedy`.
func TestServeRerankIsOfflineGreedy(t *testing.T) {
	url := testServer(t, smallModel)
	code, out, errs := runCmd(t, "", "infer", "--model", smallModel, "--algos", "offline-greedy", "--k", "8", "--json", "--quiet")
	require.Equal(t, 0, code, errs)
	var inf struct {
		Results []inferResult `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &inf))
	var all []string
	for i := 0; i < 60; i++ {
		all = append(all, strconv.Itoa(i))
	}
	var res struct {
		Items []int     `json:"items"`
		Gains []float64 `json:"gains"`
	}
	status, raw := post(t, url+"/v1/rerank", `{"candidates": [`+strings.Join(all, ",")+`], "k": 8}`, &res)
	require.Equal(t, http.StatusOK, status, raw)
	require.Equal(t, inf.Results[0].Solution, res.Items)
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

// startServe runs `ndpp-bench serve` on a free loopback port with signals
// sent through the returned channel, and returns its base URL, its
// stderr, and a channel with its exit status.
func startServe(t *testing.T, args ...string) (url string, sigs chan os.Signal, stderr *ndpptest.SyncBuffer, exit chan int) {
	t.Helper()
	sigs = make(chan os.Signal, 4)
	old := serveSignals
	serveSignals = func(c chan<- os.Signal) func() {
		go func() {
			for s := range sigs {
				c <- s
			}
		}()
		return func() {}
	}
	t.Cleanup(func() { serveSignals = old })
	stderr = &ndpptest.SyncBuffer{}
	exit = make(chan int, 1)
	e := &env{stdout: io.Discard, stderr: stderr, stdin: strings.NewReader("")}
	go func() { exit <- run(e, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)) }()
	re := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			return "http://" + m[1], sigs, stderr, exit
		}
		select {
		case code := <-exit:
			t.Fatalf("serve exited with %d: %s", code, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("serve did not start: %s", stderr.String())
	return
}

// TestServeCommandSignals: the command serves, reloads on SIGHUP (a
// broken file is logged and the old model kept), and on SIGTERM finishes
// the request in flight, turns not ready and exits 0.
func TestServeCommandSignals(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.npz")
	require.NoError(t, npz.Save(path, ndpp.Random(40, 4, 1, ndpp.RandomOptions{})))
	url, sigs, stderr, exit := startServe(t, "--model", path, "--drain-delay", "0")
	var info modelInfo
	resp, err := http.Get(url + "/v1/model")
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&info))
	resp.Body.Close()
	require.Equal(t, 40, info.Items)

	require.NoError(t, npz.Save(path, ndpp.Random(45, 4, 2, ndpp.RandomOptions{})))
	sigs <- syscall.SIGHUP
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "reloaded") })
	require.NoError(t, os.WriteFile(path, []byte("garbage"), 0o644))
	sigs <- syscall.SIGHUP
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "reload: keeping the model") })
	resp, err = http.Get(url + "/v1/model")
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&info))
	resp.Body.Close()
	require.Equal(t, 45, info.Items)
	require.Equal(t, int64(1), info.Reloads)

	// A slow request (a large body sent in two parts) is in flight at SIGTERM.
	pr, pw := io.Pipe()
	reqDone := make(chan int, 1)
	go func() {
		resp, err := http.Post(url+"/v1/rerank", "application/json", pr)
		if err != nil {
			reqDone <- -1
			return
		}
		resp.Body.Close()
		reqDone <- resp.StatusCode
	}()
	fmt.Fprint(pw, `{"candidates": [`+seqList(45)+`],`)
	time.Sleep(100 * time.Millisecond) // the request has been accepted
	sigs <- syscall.SIGTERM
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "closing the listener") })
	fmt.Fprint(pw, ` "k": 5}`)
	pw.Close()
	require.Equal(t, http.StatusOK, <-reqDone)
	select {
	case code := <-exit:
		require.Equal(t, 0, code, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	require.Contains(t, stderr.String(), "stopped")
	_, err = http.Get(url + "/healthz")
	require.Error(t, err, "the listener is closed")
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

func TestServeFlags(t *testing.T) {
	code, _, errs := runCmd(t, "", "serve")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--model is required")
	code, _, errs = runCmd(t, "", "serve", "--model", smallModel, "--max-k", "0")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "limits")
	for _, bad := range [][]string{{"--drain-delay", "-1s"}, {"--saturation-threshold", "-1ms"}, {"--shutdown-timeout", "0"}, {"--shutdown-timeout", "2s", "--max-rerank-timeout", "2s"}} {
		code, _, errs = runCmd(t, "", append([]string{"serve", "--model", smallModel}, bad...)...)
		require.Equal(t, 2, code, bad)
		require.Contains(t, errs, bad[0], bad)
	}
	code, _, errs = runCmd(t, "", "serve", "--model", filepath.Join(t.TempDir(), "none.npz"))
	require.Equal(t, 1, code)
	require.Contains(t, errs, "none.npz")
	code, _, errs = runCmd(t, "", "serve", "--model", smallModel, "--addr", "256.0.0.1:99999")
	require.Equal(t, 1, code, errs)
}
