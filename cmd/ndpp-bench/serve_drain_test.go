package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/npz"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestServeSlotPool: the pool is saturated from the moment its last free
// slot is taken until one is free again — a slot handed straight to a
// waiting request does not end it — waiters are served in order, and a
// waiter whose context is done never gets a slot.
func TestServeSlotPool(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	p := newSlotPool(2)
	p.now = clk.now
	check := func(busy, waiting int, sat time.Duration) {
		t.Helper()
		b, w, d := p.state()
		require.Equal(t, []any{busy, waiting, sat}, []any{b, w, d})
	}
	ctx := context.Background()
	require.NoError(t, p.acquire(ctx))
	clk.advance(time.Second)
	check(1, 0, 0)
	require.NoError(t, p.acquire(ctx))
	clk.advance(3 * time.Second)
	check(2, 0, 3*time.Second)

	// Two waiters, the second one cancelled; a third waits behind them.
	order := make(chan int, 3)
	var wg sync.WaitGroup
	waitFor := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for _, w, _ := p.state(); w != n; _, w, _ = p.state() {
			require.True(t, time.Now().Before(deadline), "waiting for %d waiters", n)
			time.Sleep(time.Millisecond)
		}
	}
	gone, cancel := context.WithCancel(ctx)
	errs := make([]error, 3)
	for i, c := range []context.Context{ctx, gone, ctx} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.acquire(c)
			if errs[i] == nil {
				order <- i
			}
		}()
		waitFor(i + 1)
	}
	cancel()
	waitFor(2)
	clk.advance(time.Second)
	check(2, 2, 4*time.Second)
	p.release() // handed to waiter 0: still saturated
	require.Equal(t, 0, <-order)
	clk.advance(time.Second)
	check(2, 1, 5*time.Second)
	p.release() // handed to waiter 2, not to the cancelled 1
	require.Equal(t, 2, <-order)
	wg.Wait()
	require.ErrorIs(t, errs[1], context.Canceled)
	check(2, 0, 5*time.Second)
	p.release() // now a slot is free
	check(1, 0, 0)
	clk.advance(time.Second)
	require.NoError(t, p.acquire(ctx)) // full again: a new stretch starts
	clk.advance(time.Second)
	check(2, 0, time.Second)
	// A request whose context is done takes no free slot either.
	p.release()
	require.ErrorIs(t, p.acquire(gone), context.Canceled)
	check(1, 0, 0)
	p.release()
	check(0, 0, 0)
}

// get fetches url and returns the status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestServeReadyzSaturation: with every slot held by a request (blocked
// in a test hook), /readyz turns 503 "saturated" after the threshold while
// /healthz stays 200; once they finish it is 200 again. The gauges follow.
func TestServeReadyzSaturation(t *testing.T) {
	lim := defaultServeLimits()
	lim.maxInflight = 2
	release := make(chan struct{})
	var entered atomic.Int32
	s, url, _ := testServer(t, smallModel, lim, func(s *server) {
		s.saturation = 30 * time.Millisecond
		s.hook = func(string) {
			entered.Add(1)
			<-release
		}
	})
	code, body := get(t, url+"/readyz")
	require.Equal(t, http.StatusOK, code, body)
	codes := make(chan int, lim.maxInflight)
	for i := 0; i < lim.maxInflight; i++ {
		go func() {
			resp, err := http.Post(url+"/v1/rerank", "application/json", strings.NewReader(`{"candidates": [1, 2, 3], "k": 2}`))
			if err != nil {
				codes <- -1
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	waitFor(t, func() bool { return entered.Load() == int32(lim.maxInflight) })
	var rb readyBody
	waitFor(t, func() bool {
		code, body = get(t, url+"/readyz")
		return code == http.StatusServiceUnavailable
	})
	require.NoError(t, json.Unmarshal([]byte(body), &rb), body)
	require.Equal(t, "saturated", rb.Status, body)
	require.GreaterOrEqual(t, rb.SaturatedSeconds, 0.03, body)
	require.Contains(t, rb.Reason, "--saturation-threshold")
	code, _ = get(t, url+"/healthz")
	require.Equal(t, http.StatusOK, code)
	_, metrics := get(t, url+"/metrics")
	for _, want := range []string{"ndpp_serve_ready 0", "ndpp_serve_slots_busy 2", "ndpp_serve_inflight_requests 2", "ndpp_serve_slot_waiting_requests 0"} {
		require.Contains(t, metrics, want)
	}
	require.NotContains(t, metrics, "ndpp_serve_saturated_seconds 0\n")

	close(release)
	for i := 0; i < lim.maxInflight; i++ {
		require.Equal(t, http.StatusOK, <-codes)
	}
	code, body = get(t, url+"/readyz")
	require.Equal(t, http.StatusOK, code, body)
	require.JSONEq(t, `{"status": "ready"}`, body)
	_, metrics = get(t, url+"/metrics")
	for _, want := range []string{"ndpp_serve_ready 1", "ndpp_serve_slots_busy 0", "ndpp_serve_saturated_seconds 0\n"} {
		require.Contains(t, metrics, want)
	}
	_, _, d := s.slots.state()
	require.Zero(t, d)
}

// heldSlot starts a server with one computing slot and a rerank request
// that holds it (the test hook blocks the first computed request) until
// release is closed; first receives that request's status code. calls
// counts the requests computed.
func heldSlot(t *testing.T) (s *server, url string, release chan struct{}, first chan int, calls *atomic.Int32) {
	t.Helper()
	lim := defaultServeLimits()
	lim.maxInflight = 1
	release, first, calls = make(chan struct{}), make(chan int, 1), new(atomic.Int32)
	s, url, _ = testServer(t, smallModel, lim, func(s *server) {
		s.hook = func(string) {
			if calls.Add(1) == 1 {
				<-release
			}
		}
	})
	go func() {
		resp, err := http.Post(url+"/v1/rerank", "application/json", strings.NewReader(`{"candidates": [1, 2, 3], "k": 2}`))
		if err != nil {
			first <- -1
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	waitFor(t, func() bool { return calls.Load() == 1 })
	return s, url, release, first, calls
}

// TestServeQueuedClientGone: a client that disconnects while its request
// waits for a slot is not computed later; the requests behind it are.
func TestServeQueuedClientGone(t *testing.T) {
	s, url, release, first, calls := heldSlot(t)
	body := `{"candidates": [1, 2, 3], "k": 2}`

	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/rerank", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	gone := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		gone <- err
	}()
	waitFor(t, func() bool { _, w, _ := s.slots.state(); return w == 1 })
	cancel()
	require.ErrorIs(t, <-gone, context.Canceled)
	waitFor(t, func() bool { _, w, _ := s.slots.state(); return w == 0 }) // the server saw the client go

	close(release)
	require.Equal(t, http.StatusOK, <-first)
	status, raw := post(t, url+"/v1/rerank", body, nil)
	require.Equal(t, http.StatusOK, status, raw)
	require.Equal(t, int32(2), calls.Load(), "the request of the client that went away was not computed")
	waitFor(t, func() bool {
		_, metrics := get(t, url+"/metrics")
		return strings.Contains(metrics, `ndpp_serve_requests_total{code="503",endpoint="rerank"} 1`)
	})
}

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
		_, metrics := get(t, url+"/metrics")
		return strings.Contains(metrics, "ndpp_serve_inflight_requests 1")
	})

	sigs <- syscall.SIGTERM
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "not ready") })
	code, body := get(t, url+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	var rb readyBody
	require.NoError(t, json.Unmarshal([]byte(body), &rb), body)
	require.Equal(t, "draining", rb.Status)
	code, _ = get(t, url+"/healthz")
	require.Equal(t, http.StatusOK, code)
	var res rerankResponse
	status, raw := post(t, url+"/v1/rerank", `{"candidates": [1, 2, 3, 4], "k": 2}`, &res)
	require.Equal(t, http.StatusOK, status, raw)
	require.Len(t, res.Items, 2)
	_, metrics := get(t, url+"/metrics")
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
		_, metrics := get(t, url+"/metrics")
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

// TestServeRerankDeadlineCountsQueue: a rerank's deadline counts from its
// arrival, so a request that waited for a computing slot past its
// timeout_ms is answered at once in relevance order, flagged
// "greedy_deadline", instead of starting its work late.
func TestServeRerankDeadlineCountsQueue(t *testing.T) {
	s, url, release, first, _ := heldSlot(t)
	type answer struct {
		code int
		res  rerankResponse
	}
	queued := make(chan answer, 1)
	go func() {
		var res rerankResponse
		code, _ := post(t, url+"/v1/rerank", `{"candidates": [1, 2, 3], "quality": [0.5, 2, 1], "k": 2, "timeout_ms": 20}`, &res)
		queued <- answer{code, res}
	}()
	waitFor(t, func() bool { _, w, _ := s.slots.state(); return w == 1 })
	time.Sleep(60 * time.Millisecond) // past the queued request's deadline
	close(release)
	require.Equal(t, http.StatusOK, <-first)
	a := <-queued
	require.Equal(t, http.StatusOK, a.code)
	require.Equal(t, "greedy_deadline", a.res.Degraded)
	require.Len(t, a.res.Items, 2)
	require.JSONEq(t, "2", string(a.res.Items[0]), "relevance order: the candidate of the highest quality first")
	require.JSONEq(t, "3", string(a.res.Items[1]))
}
