//go:build linux

package rerank

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/ndpp-go/ndpp/ndpp"
)

var numbers = flag.Bool("numbers", false, "run TestRerankNumbers: the latency tables of BENCHMARKS.md (make bench-rerank)")

// TestRerankPolishDeadline: a deadline-bounded polish at K = 100 of
// N = 2000 candidates (a search that would run for minutes) answers with
// DegradedPolish within its deadline + 10% (+ 20 ms of slack for a loaded
// machine) in at least 4 of 5 tries: the search looks at the deadline
// after every fresh LU and the polished set is ordered in O(K²(K + d)).
func TestRerankPolishDeadline(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("timing test")
	}
	m, req := longPolish()
	req.Degrade = true
	var ws Workspace
	const deadline = 200 * time.Millisecond
	late := 0
	for range 5 {
		el, res := timedPolish(t, &ws, m, req, deadline)
		t.Logf("deadline %v: answered after %v (%q, %d swaps)", deadline, el, res.Degraded, res.PolishSwaps)
		if el > deadline+deadline/10+20*time.Millisecond {
			late++
		}
	}
	if late > 1 {
		t.Fatalf("%d of 5 answers later than the deadline + 10%% + 20 ms", late)
	}
}

func timedPolish(t *testing.T, ws *Workspace, m *ndpp.Model, req Request, deadline time.Duration) (time.Duration, Result) {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	t0 := time.Now()
	res, err := ws.Rerank(ctx, m, req)
	el := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	return el, res
}

// TestRerankNumbers prints the tables of BENCHMARKS.md (with -numbers):
// in-process latency p50/p99 of the greedy (wall time and the thread's
// CPU time) for N ∈ {100, 500, 2000}, k ∈ {10, 50}, d = 30, plain (quality
// scores) and with relevance, θ = 0.7 and a constraint; and the answer
// time of a deadline-bounded polish at K = 100, N = 2000 over 20 requests
// per deadline.
func TestRerankNumbers(t *testing.T) {
	if !*numbers {
		t.Skip("no -numbers")
	}
	const n, d, nreq, reps = 10000, 30, 20, 25
	m := ndpp.Random(n, d, 1, ndpp.RandomOptions{Diag: 0.05})
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fmt.Printf("| N | k | plain p50 / p99 µs (CPU p50 / p99) | θ + constraint p50 / p99 µs (CPU p50 / p99) | overhead (CPU p50) |\n|---|---|---|---|---|\n")
	for _, nc := range []int{100, 500, 2000} {
		for _, k := range []int{10, 50} {
			rng := rand.New(rand.NewPCG(uint64(nc), uint64(k)))
			plain := make([]Request, nreq)
			ctl := make([]Request, nreq)
			for i := range plain {
				plain[i] = benchRequest(rng, n, nc, k)
				c := benchRequest(rng, n, nc, k) // other candidates: none cache-warm
				c.Quality, c.Relevance, c.Theta = nil, c.Quality, 0.7
				genre := make([]string, nc)
				for j := range genre {
					genre[j] = fmt.Sprintf("g%d", rng.IntN(20))
				}
				c.Attributes = map[string][]string{"genre": genre}
				c.Constraints = []Constraint{{Attribute: "genre", Window: 5, MaxPerWindow: 2}}
				ctl[i] = c
			}
			var ws Workspace
			// Alternate the two kinds request by request.
			var pw, pc, cw, cc []float64
			for range reps {
				for i := range plain {
					w, c := timeOne(t, &ws, m, plain[i])
					pw, pc = append(pw, w), append(pc, c)
					w, c = timeOne(t, &ws, m, ctl[i])
					cw, cc = append(cw, w), append(cc, c)
				}
			}
			p, q, r, s := pcts(pw), pcts(pc), pcts(cw), pcts(cc)
			fmt.Printf("| %d | %d | %.0f / %.0f (%.0f / %.0f) | %.0f / %.0f (%.0f / %.0f) | %+.0f%% |\n",
				nc, k, p[0], p[1], q[0], q[1], r[0], r[1], s[0], s[1], 100*(s[0]/q[0]-1))
		}
	}
	pm, preq := longPolish()
	preq.Degrade = true
	var ws Workspace
	fmt.Printf("\n| deadline | answer p50 | p90 | max | over deadline + 10%% |\n|---|---|---|---|---|\n")
	for _, dl := range []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond} {
		var over []float64
		late := 0
		for range 20 {
			el, res := timedPolish(t, &ws, pm, preq, dl)
			if res.Degraded != DegradedPolish {
				t.Logf("deadline %v: %q", dl, res.Degraded)
			}
			over = append(over, float64(el.Microseconds())/1e3)
			if el > dl+dl/10 {
				late++
			}
		}
		slices.Sort(over)
		fmt.Printf("| %v | %.1f ms | %.1f ms | %.1f ms | %d of 20 |\n", dl, over[10], over[17], over[19], late)
	}
}

func timeOne(t *testing.T, ws *Workspace, m *ndpp.Model, req Request) (wall, cpu float64) {
	c0, t0 := threadCPU(), time.Now()
	if _, err := ws.Rerank(context.Background(), m, req); err != nil {
		t.Fatal(err)
	}
	el, c1 := time.Since(t0), threadCPU()
	return float64(el.Nanoseconds()) / 1e3, float64(c1-c0) / 1e3
}

// pcts returns the 50th and 99th percentiles of x (sorting it).
func pcts(x []float64) [2]float64 {
	slices.Sort(x)
	return [2]float64{x[len(x)/2], x[len(x)*99/100]}
}

// TestRerankSampleNumbers prints the sampling table of BENCHMARKS.md (with
// -numbers): the latency of Request.Sample (p50 and p99 of wall time) and
// its mean tries for N ∈ {100, 500, 2000}, k ∈ {10, 50}, d = 30, quality
// scores and two shown items, 20 requests × 5 seeds, alternating with the
// greedy on the same requests.
func TestRerankSampleNumbers(t *testing.T) {
	if !*numbers {
		t.Skip("no -numbers")
	}
	const n, d, nreq, reps = 10000, 30, 20, 5
	m := ndpp.Random(n, d, 1, ndpp.RandomOptions{Diag: 0.05})
	fmt.Printf("| N | k | sample p50 / p99 ms | tries | greedy p50 ms |\n|---|---|---|---|---|\n")
	for _, nc := range []int{100, 500, 2000} {
		for _, k := range []int{10, 50} {
			rng := rand.New(rand.NewPCG(uint64(nc), uint64(k)))
			reqs := make([]Request, nreq)
			for i := range reqs {
				reqs[i] = benchRequest(rng, n, nc, k)
				reqs[i].Shown = []int{rng.IntN(n), rng.IntN(n)}
			}
			var ws Workspace
			var sw, gw []float64
			tries := 0
			for rep := range reps {
				for i := range reqs {
					req := reqs[i]
					w, _ := timeOne(t, &ws, m, req)
					gw = append(gw, w)
					req.Sample, req.Seed = true, uint64(rep*nreq+i)
					t0 := time.Now()
					res, err := ws.Rerank(context.Background(), m, req)
					if err != nil {
						t.Fatal(err)
					}
					sw = append(sw, float64(time.Since(t0).Microseconds()))
					tries += res.SampleTries
				}
			}
			p, g := pcts(sw), pcts(gw)
			fmt.Printf("| %d | %d | %.1f / %.1f | %.1f | %.2f |\n", nc, k, p[0]/1e3, p[1]/1e3, float64(tries)/float64(len(sw)), g[0]/1e3)
		}
	}
}
