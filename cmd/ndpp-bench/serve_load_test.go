package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
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

var (
	loadFull  = flag.Bool("load.full", false, "run TestServeLoad at full size (catalogue 10⁴, d = 30, N = 500 candidates, k = 10, 8 clients, 20 s); `make loadtest`")
	loadPlain = flag.Bool("load.plain", false, "TestServeLoad's requests with quality scores only (no relevance, θ or constraint)")
)

// loadConfig is the shape of a load test.
type loadConfig struct {
	items, d, cands, k, clients int
	duration                    time.Duration
	maxRequests                 int
	plain                       bool // quality scores only, no controls
}

// loadReport is what a load test measured.
type loadReport struct {
	requests, errors int
	seconds          float64
	p50, p99, p999   time.Duration
}

func (r loadReport) String() string {
	return fmt.Sprintf("%d requests in %.1fs: %.0f requests/s, p50 %v, p99 %v, p99.9 %v, %d errors",
		r.requests, r.seconds, float64(r.requests)/r.seconds, r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.p999.Round(time.Microsecond), r.errors)
}

// TestServeLoad drives `ndpp-bench serve` over loopback with concurrent
// clients sending /v1/rerank requests (N random candidates with quality
// scores, k; unless -load.plain, relevance scores with θ = 0.7 and a
// constraint, at most 2 items of a genre among 5 consecutive ones, over 20
// genres), bounded in time and in count, and reloads the model (SIGHUP,
// a new file of the same catalogue) half-way through. Every request must
// succeed — none lost or failed across the reload — and the server must
// then stop cleanly on SIGTERM. It logs throughput and latency
// percentiles; with -load.full it runs at the README's size.
func TestServeLoad(t *testing.T) {
	cfg := loadConfig{items: 2000, d: 10, cands: 100, k: 10, clients: 4, duration: 1500 * time.Millisecond, maxRequests: 4000}
	if *loadFull {
		cfg = loadConfig{items: 10000, d: 30, cands: 500, k: 10, clients: 8, duration: 20 * time.Second, maxRequests: 1 << 30}
	} else if testing.Short() {
		cfg.duration, cfg.maxRequests = 500*time.Millisecond, 1000
	}
	cfg.plain = *loadPlain
	rep := runLoad(t, cfg)
	what := "relevance, θ = 0.7, a constraint"
	if cfg.plain {
		what = "quality scores"
	}
	t.Logf("serve load (catalogue %d, d = %d, N = %d, k = %d, %s, %d clients): %v", cfg.items, cfg.d, cfg.cands, cfg.k, what, cfg.clients, rep)
	require.Zero(t, rep.errors)
	require.Positive(t, rep.requests)
}

func runLoad(t *testing.T, cfg loadConfig) loadReport {
	path := filepath.Join(t.TempDir(), "m.npz")
	require.NoError(t, npz.Save(path, ndpp.Random(cfg.items, cfg.d, 1, ndpp.RandomOptions{Diag: 0.05})))
	url, sigs, stderr, exit := startServe(t, "--model", path, "--max-candidates", strconv.Itoa(cfg.cands), "--drain-delay", "0")

	// A fixed set of request bodies, drawn once.
	rng := rand.New(rand.NewPCG(1, 2))
	bodies := make([]string, 64)
	for i := range bodies {
		var b strings.Builder
		b.WriteString(`{"candidates": [`)
		for j, x := range rng.Perm(cfg.items)[:cfg.cands] {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(x))
		}
		scores := `], "quality": [`
		if !cfg.plain {
			scores = `], "theta": 0.7, "relevance": [`
		}
		b.WriteString(scores)
		for j := 0; j < cfg.cands; j++ {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatFloat(0.5+rng.Float64(), 'f', 4, 64))
		}
		b.WriteByte(']')
		if !cfg.plain {
			b.WriteString(`, "attributes": {"genre": [`)
			for j := 0; j < cfg.cands; j++ {
				if j > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `"g%d"`, rng.IntN(20))
			}
			b.WriteString(`]}, "constraints": [{"attribute": "genre", "window": 5, "max_per_window": 2}]`)
		}
		fmt.Fprintf(&b, `, "k": %d}`, cfg.k)
		bodies[i] = b.String()
	}

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: cfg.clients, MaxConnsPerHost: cfg.clients}}
	defer client.CloseIdleConnections()
	var (
		mu        sync.Mutex
		latencies []time.Duration
		errs      []string
		issued    int
	)
	// The reload is triggered half-way through (by time or by count,
	// whichever comes first) and the clients keep the load on until the
	// server has logged it, so that the reload always happens under load
	// however fast the machine is.
	var reloaded atomic.Bool
	half := make(chan struct{})
	var halfOnce sync.Once
	start := time.Now()
	deadline := start.Add(cfg.duration)
	take := func() bool { // claims one request within the bounds
		mu.Lock()
		defer mu.Unlock()
		if issued >= cfg.maxRequests/2 || time.Since(start) >= cfg.duration/2 {
			halfOnce.Do(func() { close(half) })
		}
		if (issued >= cfg.maxRequests || !time.Now().Before(deadline)) && reloaded.Load() {
			return false
		}
		issued++
		return true
	}
	var wg sync.WaitGroup
	for c := 0; c < cfg.clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			var lat []time.Duration
			var bad []string
			for i := c; take(); i += cfg.clients {
				t0 := time.Now()
				resp, err := client.Post(url+"/v1/rerank", "application/json", strings.NewReader(bodies[i%len(bodies)]))
				if err != nil {
					bad = append(bad, err.Error())
					continue
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch {
				case err != nil:
					bad = append(bad, err.Error())
				case resp.StatusCode != http.StatusOK:
					bad = append(bad, resp.Status)
				default:
					lat = append(lat, time.Since(t0))
				}
			}
			mu.Lock()
			latencies = append(latencies, lat...)
			errs = append(errs, bad...)
			mu.Unlock()
		}(c)
	}
	// Reload half-way through, under load.
	select {
	case <-half:
	case <-time.After(cfg.duration):
	}
	require.NoError(t, npz.Save(path, ndpp.Random(cfg.items, cfg.d, 2, ndpp.RandomOptions{Diag: 0.05})))
	sigs <- syscall.SIGHUP
	reloadDeadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "reloaded") && time.Now().Before(reloadDeadline) {
		time.Sleep(5 * time.Millisecond)
	}
	reloaded.Store(true)
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	require.Contains(t, stderr.String(), "reloaded", "the reload happened during the load")
	sigs <- syscall.SIGTERM
	select {
	case code := <-exit:
		require.Equal(t, 0, code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}

	require.Empty(t, errs, "failed requests")
	require.Equal(t, issued, len(latencies), "requests sent vs answered")
	slices.Sort(latencies)
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[int(p*float64(len(latencies)-1))]
	}
	return loadReport{requests: len(latencies), errors: len(errs), seconds: elapsed, p50: pct(0.5), p99: pct(0.99), p999: pct(0.999)}
}
