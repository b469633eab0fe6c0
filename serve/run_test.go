package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
	"github.com/ndpp-go/ndpp/ndpp"
)

// startRun runs h's service (or srv, when not nil) with Run on a loopback
// listener under ctx, and returns its base URL and Run's result.
func startRun(t *testing.T, ctx context.Context, h *Handler, o RunOptions) (string, chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ran := make(chan error, 1)
	go func() { ran <- Run(ctx, ln, h, o) }()
	return "http://" + ln.Addr().String(), ran
}

// testHandler is the service over a random model of 40 items with opts
// changed by set, logging to the returned buffer.
func testHandler(t *testing.T, set func(*Options)) (*Handler, *ndpptest.SyncBuffer) {
	t.Helper()
	var logs ndpptest.SyncBuffer
	o := DefaultOptions()
	o.Logger = log.New(&logs, "", 0)
	if set != nil {
		set(&o)
	}
	h, err := New(context.Background(), Static("random", ndpp.Random(40, 4, 1, ndpp.RandomOptions{Diag: 0.1})), o)
	require.NoError(t, err)
	return h, &logs
}

// halfRequest sends a /v1/rerank request whose body ends only when the
// returned function is called; the answer comes on the channel.
func halfRequest(t *testing.T, url string) (finish func(), answer chan rerankResponse) {
	t.Helper()
	pr, pw := io.Pipe()
	answer = make(chan rerankResponse, 1)
	go func() {
		var res rerankResponse
		resp, err := http.Post(url+"/v1/rerank", "application/json", pr)
		if err == nil {
			if resp.StatusCode == http.StatusOK {
				err = json.NewDecoder(resp.Body).Decode(&res)
			} else {
				err = errors.New(resp.Status)
			}
			resp.Body.Close()
		}
		if err != nil {
			res.Degraded = "error: " + err.Error() // seen by the test as a wrong answer
		}
		answer <- res
	}()
	fmt.Fprint(pw, `{"candidates": [`+seqList(40)+`],`)
	t.Cleanup(func() { pw.Close() })
	return func() { fmt.Fprint(pw, ` "k": 5}`); pw.Close() }, answer
}

// TestRunDrainsOnContextCancel: when Run's context is cancelled, /readyz
// turns 503 "draining" at once while /healthz stays 200 and new requests
// are still served during the drain delay; SkipDelay ends the delay; the
// request in flight gets its full answer after the listener has closed,
// and Run returns nil. The causes are logged.
func TestRunDrainsOnContextCancel(t *testing.T) {
	h, logs := testHandler(t, func(o *Options) { o.DrainDelay = 10 * time.Minute })
	ctx, cancel := context.WithCancelCause(context.Background())
	skip, hurry := context.WithCancelCause(context.Background())
	defer cancel(nil)
	defer hurry(nil)
	url, ran := startRun(t, ctx, h, RunOptions{SkipDelay: skip})
	waitFor(t, func() bool { code, _ := ndpptest.Get(t, url+"/healthz"); return code == http.StatusOK })

	finish, inflight := halfRequest(t, url)
	waitFor(t, func() bool { return h.active.Load() == 1 })
	cancel(errors.New("deploy"))
	waitFor(t, func() bool { return strings.Contains(logs.String(), "deploy: not ready; still serving") })
	code, body := ndpptest.Get(t, url+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	var rb readyBody
	require.NoError(t, json.Unmarshal([]byte(body), &rb))
	require.Equal(t, "draining", rb.Status)
	code, _ = ndpptest.Get(t, url+"/healthz")
	require.Equal(t, http.StatusOK, code)
	var res rerankResponse
	status, raw := post(t, url+"/v1/rerank", `{"candidates": [1, 2, 3, 4], "k": 2}`, &res)
	require.Equal(t, http.StatusOK, status, raw)
	require.Len(t, res.Items, 2)
	select {
	case err := <-ran:
		t.Fatalf("Run returned during the drain delay: %v", err)
	default:
	}

	hurry(errors.New("hurry"))
	waitFor(t, func() bool {
		return strings.Contains(logs.String(), "closing the listener; finishing the 1 request in flight")
	})
	require.Contains(t, logs.String(), "hurry: skipping the rest of the drain delay")
	waitFor(t, func() bool { _, err := http.Get(url + "/healthz"); return err != nil }) // closed
	finish()
	a := <-inflight
	require.Empty(t, a.Degraded)
	require.Len(t, a.Items, 5)
	require.Len(t, a.Gains, 5)
	select {
	case err := <-ran:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return")
	}
	require.Contains(t, logs.String(), "stopped")
}

// TestRunShutdownTimeout: a request still running ShutdownTimeout after
// the listener closed makes Run return an error saying how many ran; a
// listener that fails before the context is done is Run's error.
func TestRunShutdownTimeout(t *testing.T) {
	h, _ := testHandler(t, func(o *Options) {
		o.DrainDelay, o.ShutdownTimeout = 0, 50*time.Millisecond
		o.Limits.RerankTimeout, o.Limits.MaxRerankTimeout = 10*time.Millisecond, 20*time.Millisecond
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, ran := startRun(t, ctx, h, RunOptions{})
	_, _ = halfRequest(t, url) // never finished
	waitFor(t, func() bool { return h.active.Load() == 1 })
	cancel()
	select {
	case err := <-ran:
		require.EqualError(t, err, "shutdown: 1 request still running after --shutdown-timeout 50ms")
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, ln.Close())
	require.Error(t, Run(context.Background(), ln, h, RunOptions{}))
}

// TestHandlerInAForeignMux: the handler mounted under a prefix of a
// service's own mux, beside the service's own endpoints, served by the
// service's own http.Server through Run: the endpoints answer under the
// prefix, the service's own routes are untouched, and the drain turns the
// mounted /readyz to 503.
func TestHandlerInAForeignMux(t *testing.T) {
	h, _ := testHandler(t, func(o *Options) { o.DrainDelay = 10 * time.Minute })
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") })
	mux.Handle("/ndpp/", http.StripPrefix("/ndpp", h))
	ctx, cancel := context.WithCancel(context.Background())
	skip, hurry := context.WithCancel(context.Background())
	defer cancel()
	url, ran := startRun(t, ctx, h, RunOptions{Server: &http.Server{Handler: mux, ReadHeaderTimeout: time.Second}, SkipDelay: skip})
	waitFor(t, func() bool { code, _ := ndpptest.Get(t, url+"/ndpp/readyz"); return code == http.StatusOK })

	code, body := ndpptest.Get(t, url+"/hello")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "hello", body)
	var res rerankResponse
	status, raw := post(t, url+"/ndpp/v1/rerank", `{"candidates": [3, 1, 4, 15, 9], "k": 3}`, &res)
	require.Equal(t, http.StatusOK, status, raw)
	require.Len(t, res.Items, 3)
	code, body = ndpptest.Get(t, url+"/ndpp/v1/model")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `"file":"random"`)
	code, body = ndpptest.Get(t, url+"/ndpp/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `ndpp_serve_requests_total{code="200",endpoint="rerank"} 1`)
	code, _ = ndpptest.Get(t, url+"/v1/rerank") // not mounted there
	require.Equal(t, http.StatusNotFound, code)

	cancel()
	waitFor(t, func() bool {
		code, _ := ndpptest.Get(t, url+"/ndpp/readyz")
		return code == http.StatusServiceUnavailable
	})
	code, _ = ndpptest.Get(t, url+"/hello")
	require.Equal(t, http.StatusOK, code, "the service's own routes still answer while draining")
	hurry()
	require.NoError(t, <-ran)
}

// TestOptionsCheck: every setting out of its range is refused by Check and
// by New, naming it; the defaults pass.
func TestOptionsCheck(t *testing.T) {
	require.NoError(t, DefaultOptions().Check())
	for _, c := range []struct {
		set  func(*Options)
		want string
	}{
		{func(o *Options) { o.Limits.MaxBody = 0 }, "limits must be ≥ 1"},
		{func(o *Options) { o.Limits.MaxShown = -1 }, "limits must be ≥ 1 (--max-shown ≥ 0)"},
		{func(o *Options) { o.Limits.MaxInflight = 0 }, "limits must be ≥ 1"},
		{func(o *Options) { o.Limits.RerankTimeout = 0 }, "--rerank-timeout"},
		{func(o *Options) { o.Limits.MaxRerankTimeout = o.Limits.RerankTimeout / 2 }, "--max-rerank-timeout"},
		{func(o *Options) { o.Limits.MaxPolishPool = 257 }, "--max-polish-pool ≤ 256"},
		{func(o *Options) { o.Limits.MaxPolishRatios = 0 }, "--max-polish-ratios ≥ 1"},
		{func(o *Options) { o.ShutdownTimeout = o.Limits.MaxRerankTimeout }, "--shutdown-timeout 10s must be longer than --max-rerank-timeout 10s"},
		{func(o *Options) { o.DrainDelay = -time.Second }, "--drain-delay must be ≥ 0"},
		{func(o *Options) { o.SaturationThreshold = -time.Millisecond }, "--saturation-threshold must be ≥ 0"},
	} {
		o := DefaultOptions()
		c.set(&o)
		require.ErrorContains(t, o.Check(), c.want)
		_, err := New(context.Background(), Static("m", ndpp.Random(5, 2, 1, ndpp.RandomOptions{})), o)
		require.ErrorContains(t, err, c.want)
	}
	require.Error(t, Options{}.Check(), "the zero Options")
}
