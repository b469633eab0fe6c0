package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
)

// TestServeReadyzSaturation: with every slot held by a request (blocked
// in a test hook), /readyz turns 503 "saturated" after the threshold while
// /healthz stays 200; once they finish it is 200 again. The gauges follow.
func TestServeReadyzSaturation(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxInflight = 2
	release := make(chan struct{})
	var entered atomic.Int32
	s, url, _ := testServer(t, smallModel, lim, func(s *Handler) {
		s.saturation = 30 * time.Millisecond
		s.hook = func(*http.Request) {
			entered.Add(1)
			<-release
		}
	})
	code, body := ndpptest.Get(t, url+"/readyz")
	require.Equal(t, http.StatusOK, code, body)
	codes := make(chan int, lim.MaxInflight)
	for i := 0; i < lim.MaxInflight; i++ {
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
	waitFor(t, func() bool { return entered.Load() == int32(lim.MaxInflight) })
	var rb readyBody
	waitFor(t, func() bool {
		code, body = ndpptest.Get(t, url+"/readyz")
		return code == http.StatusServiceUnavailable
	})
	require.NoError(t, json.Unmarshal([]byte(body), &rb), body)
	require.Equal(t, "saturated", rb.Status, body)
	require.GreaterOrEqual(t, rb.SaturatedSeconds, 0.03, body)
	require.Contains(t, rb.Reason, "--saturation-threshold")
	code, _ = ndpptest.Get(t, url+"/healthz")
	require.Equal(t, http.StatusOK, code)
	_, metrics := ndpptest.Get(t, url+"/metrics")
	for _, want := range []string{"ndpp_serve_ready 0", "ndpp_serve_slots_busy 2", "ndpp_serve_inflight_requests 2", "ndpp_serve_slot_waiting_requests 0"} {
		require.Contains(t, metrics, want)
	}
	require.NotContains(t, metrics, "ndpp_serve_saturated_seconds 0\n")

	close(release)
	for i := 0; i < lim.MaxInflight; i++ {
		require.Equal(t, http.StatusOK, <-codes)
	}
	code, body = ndpptest.Get(t, url+"/readyz")
	require.Equal(t, http.StatusOK, code, body)
	require.JSONEq(t, `{"status": "ready"}`, body)
	_, metrics = ndpptest.Get(t, url+"/metrics")
	for _, want := range []string{"ndpp_serve_ready 1", "ndpp_serve_slots_busy 0", "ndpp_serve_saturated_seconds 0\n"} {
		require.Contains(t, metrics, want)
	}
	_, _, _, d := s.slots.state()
	require.Zero(t, d)
}

// heldSlot starts a server with one computing slot and a rerank request
// that holds it (the test hook blocks the first computed request) until
// release is closed; first receives that request's status code. calls
// counts the requests computed.
func heldSlot(t *testing.T) (s *Handler, url string, release chan struct{}, first chan int, calls *atomic.Int32) {
	t.Helper()
	lim := DefaultLimits()
	lim.MaxInflight = 1
	release, first, calls = make(chan struct{}), make(chan int, 1), new(atomic.Int32)
	s, url, _ = testServer(t, smallModel, lim, func(s *Handler) {
		s.hook = func(*http.Request) {
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
	gone := sendCancelled(t, url+"/v1/rerank", body, func() bool { _, w, _, _ := s.slots.state(); return w == 1 })
	require.ErrorIs(t, gone, context.Canceled)
	waitFor(t, func() bool { _, w, _, _ := s.slots.state(); return w == 0 }) // the server saw the client go

	close(release)
	require.Equal(t, http.StatusOK, <-first)
	status, raw := post(t, url+"/v1/rerank", body, nil)
	require.Equal(t, http.StatusOK, status, raw)
	require.Equal(t, int32(2), calls.Load(), "the request of the client that went away was not computed")
}

// sendCancelled posts body to url with a context that it cancels once
// ready reports true, and returns the client's error.
func sendCancelled(t *testing.T, url, body string, ready func() bool) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
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
	waitFor(t, ready)
	cancel()
	return <-gone
}

// TestServeClientGoneIs499: a request whose client goes away — while it
// waits for a slot (rerank, recommend) or while it computes (rerank) — is
// counted with nginx's 499, not as a 5xx of the service.
func TestServeClientGoneIs499(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxInflight = 1
	var calls atomic.Int32
	held := make(chan struct{})
	release := make(chan struct{})
	s, url, _ := testServer(t, smallModel, lim, func(s *Handler) {
		s.hook = func(r *http.Request) {
			switch calls.Add(1) {
			case 1: // computing when its client goes away
				close(held)
				<-r.Context().Done()
			case 2: // holds the slot while two more wait
				<-release
			}
		}
	})
	rerankBody := `{"candidates": [1, 2, 3], "k": 2}`
	require.Error(t, sendCancelled(t, url+"/v1/rerank", rerankBody, func() bool { return calls.Load() == 1 }))
	<-held

	first := make(chan int, 1)
	go func() {
		code, _ := post(t, url+"/v1/rerank", rerankBody, nil)
		first <- code
	}()
	waitFor(t, func() bool { return calls.Load() == 2 })
	waiting := func(n int) func() bool { return func() bool { _, w, _, _ := s.slots.state(); return w == n } }
	require.Error(t, sendCancelled(t, url+"/v1/rerank", rerankBody, waiting(1)))
	waitFor(t, waiting(0))
	require.Error(t, sendCancelled(t, url+"/v1/recommend", `{"basket": [1]}`, waiting(1)))
	waitFor(t, waiting(0))
	close(release)
	require.Equal(t, http.StatusOK, <-first)

	waitFor(t, func() bool {
		_, metrics := ndpptest.Get(t, url+"/metrics")
		return strings.Contains(metrics, `ndpp_serve_requests_total{code="499",endpoint="rerank"} 2`) &&
			strings.Contains(metrics, `ndpp_serve_requests_total{code="499",endpoint="recommend"} 1`)
	})
	_, metrics := ndpptest.Get(t, url+"/metrics")
	require.NotContains(t, metrics, `code="503"`)
}

// TestServeRerankQueuedAnswersByDeadline: a rerank's deadline counts from
// its arrival and bounds its wait for a computing slot: with the only slot
// held for as long as the test lasts, a queued request is answered at its
// timeout_ms in relevance order, computed without a slot and flagged
// "slot_deadline" (counted in ndpp_serve_rerank_degraded_total), and with
// "degrade": false it is a 503 naming timeout_ms; the slot's holder is
// still computing when both have answered.
func TestServeRerankQueuedAnswersByDeadline(t *testing.T) {
	s, url, release, first, calls := heldSlot(t)
	type answer struct {
		code int
		raw  string
		res  rerankResponse
	}
	queued := func(body string) chan answer {
		ch := make(chan answer, 1)
		go func() {
			var res rerankResponse
			code, raw := post(t, url+"/v1/rerank", body, &res)
			ch <- answer{code, raw, res}
		}()
		return ch
	}
	wait := func(ch chan answer) answer {
		select {
		case a := <-ch:
			return a
		case <-time.After(20 * time.Second): // far past the request's deadline: it waits for the slot
			close(release)
			t.Fatal("a queued request was not answered while the slot stayed held")
			return answer{}
		}
	}
	a := wait(queued(`{"candidates": [1, 2, 3], "quality": [0.5, 2, 1], "k": 2, "timeout_ms": 50}`))
	require.Equal(t, http.StatusOK, a.code, a.raw)
	require.Equal(t, DegradedSlot, a.res.Degraded, a.raw)
	require.Len(t, a.res.Items, 2)
	require.JSONEq(t, "2", string(a.res.Items[0]), "relevance order: the candidate of the highest quality first")
	require.JSONEq(t, "3", string(a.res.Items[1]))
	require.Empty(t, a.res.Gains)
	require.Nil(t, a.res.LogValue)

	a = wait(queued(`{"candidates": [1, 2, 3], "k": 2, "timeout_ms": 50, "degrade": false}`))
	require.Equal(t, http.StatusServiceUnavailable, a.code, a.raw)
	require.Contains(t, a.raw, `"field":"timeout_ms"`)
	require.Contains(t, a.raw, "computing slot")

	require.Equal(t, int32(1), calls.Load(), "neither queued request took a slot")
	_, w, _, _ := s.slots.state()
	require.Zero(t, w, "no request is left waiting")
	_, metrics := ndpptest.Get(t, url+"/metrics")
	require.Contains(t, metrics, `ndpp_serve_rerank_degraded_total{kind="slot_deadline"} 1`)
	close(release)
	require.Equal(t, http.StatusOK, <-first)
}
