package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/npz"
)

// TestServeDrain: on SIGTERM /readyz turns 503 "draining" at once while
// /healthz stays 200 and new requests are still served during the drain
// delay; a second SIGTERM skips the rest of the delay; the request in
// flight at the first SIGTERM gets its full answer after the listener has
// closed, and serve exits 0.
func TestServeDrain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.npz")
	require.NoError(t, npz.Save(path, ndpp.Random(40, 4, 1, ndpp.RandomOptions{})))
	// The drain delay is long: the second signal ends it.
	url, sigs, stderr, exit := startServe(t, "--model", path, "--drain-delay", "10m", "--shutdown-timeout", "20s")

	// A request in flight (its body sent in two parts).
	pr, pw := io.Pipe()
	defer pw.Close()
	type answer struct {
		code int
		res  rerankResponse
		err  error
	}
	inflight := make(chan answer, 1)
	go func() {
		resp, err := http.Post(url+"/v1/rerank", "application/json", pr)
		if err != nil {
			inflight <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		var a answer
		a.code = resp.StatusCode
		a.err = json.NewDecoder(resp.Body).Decode(&a.res)
		inflight <- a
	}()
	fmt.Fprint(pw, `{"candidates": [`+seqList(40)+`],`)
	waitFor(t, func() bool {
		_, metrics := ndpptest.Get(t, url+"/metrics")
		return strings.Contains(metrics, "ndpp_serve_inflight_requests 1")
	})

	sigs <- syscall.SIGTERM
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "not ready") })
	code, body := ndpptest.Get(t, url+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	var rb readyBody
	require.NoError(t, json.Unmarshal([]byte(body), &rb), body)
	require.Equal(t, "draining", rb.Status)
	code, _ = ndpptest.Get(t, url+"/healthz")
	require.Equal(t, http.StatusOK, code)
	var res rerankResponse
	status, raw := post(t, url+"/v1/rerank", `{"candidates": [1, 2, 3, 4], "k": 2}`, &res)
	require.Equal(t, http.StatusOK, status, raw)
	require.Len(t, res.Items, 2)
	_, metrics := ndpptest.Get(t, url+"/metrics")
	require.Contains(t, metrics, "ndpp_serve_ready 0")

	sigs <- syscall.SIGTERM
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "closing the listener") })
	require.Contains(t, stderr.String(), "skipping the rest of the drain delay")
	waitFor(t, func() bool { _, err := http.Get(url + "/healthz"); return err != nil }) // closed
	fmt.Fprint(pw, ` "k": 5}`)
	pw.Close()
	a := <-inflight
	require.NoError(t, a.err)
	require.Equal(t, http.StatusOK, a.code)
	require.Len(t, a.res.Items, 5)
	require.Len(t, a.res.Gains, 5)
	select {
	case code := <-exit:
		require.Equal(t, 0, code, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
	require.Contains(t, stderr.String(), "stopped")
}

// TestServeShutdownTimeout: a request still running --shutdown-timeout
// after the listener closed makes serve exit 1, saying how many ran.
func TestServeShutdownTimeout(t *testing.T) {
	url, sigs, stderr, exit := startServe(t, "--model", smallModel, "--drain-delay", "0", "--shutdown-timeout", "50ms",
		"--rerank-timeout", "10ms", "--max-rerank-timeout", "20ms")
	pr, pw := io.Pipe()
	defer pw.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.Post(url+"/v1/rerank", "application/json", pr); err == nil {
			resp.Body.Close()
		}
	}()
	fmt.Fprint(pw, `{"candidates": [1, 2, 3],`) // never finished
	waitFor(t, func() bool {
		_, metrics := ndpptest.Get(t, url+"/metrics")
		return strings.Contains(metrics, "ndpp_serve_inflight_requests 1")
	})
	sigs <- syscall.SIGTERM
	select {
	case code := <-exit:
		require.Equal(t, 1, code, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
	require.Contains(t, stderr.String(), "1 request still running after --shutdown-timeout 50ms")
	pw.Close()
	<-done
}
