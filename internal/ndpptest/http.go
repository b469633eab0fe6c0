package ndpptest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// SyncBuffer is a bytes.Buffer safe for a writer (a logger, a command's
// standard error) and a reader at once.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p to the buffer.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what has been written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Get fetches url and returns the status and the body, failing t on a
// transport or read error.
func Get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	code, _, b := answer(t, "GET "+url, resp, err)
	return code, string(b)
}

// PostJSON posts body as JSON to url and returns the status and the raw
// response, failing t on a transport or read error or a response that is
// not JSON; a 200 response is decoded into out when out is not nil.
func PostJSON(t testing.TB, url, body string, out any) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	code, header, raw := answer(t, "POST "+url, resp, err)
	if ct := header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("POST %s: Content-Type %q, want application/json (body %s)", url, ct, raw)
	}
	if out != nil && code == http.StatusOK {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("POST %s: decoding %s: %v", url, raw, err)
		}
	}
	return code, string(raw)
}

// answer reads and closes the response of the request req (err its
// transport error), failing t on either error.
func answer(t testing.TB, req string, resp *http.Response, err error) (int, http.Header, []byte) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", req, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: reading the body: %v", req, err)
	}
	return resp.StatusCode, resp.Header, b
}
