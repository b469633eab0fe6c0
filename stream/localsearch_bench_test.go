package stream

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/npz"
)

// reportLS reports a local search's gain over its start and its work.
func reportLS(b *testing.B, res LocalSearchResult, n int) {
	b.ReportMetric(res.Value.Log-res.Start.Log, "gain-log")
	b.ReportMetric(float64(res.Passes), "passes")
	b.ReportMetric(float64(res.SingleSwaps), "swaps")
	b.ReportMetric(float64(res.PairSwaps), "pair-swaps")
	b.ReportMetric(float64(res.Evals), "evals")
	if res.Passes > 0 {
		b.ReportMetric(100*float64(res.Skipped)/float64(int64(res.Passes)*int64(n)), "skipped%")
	}
}

// BenchmarkLocalSearch times local search from the offline greedy's
// solution on synthetic models (no diagonal: the fast oracle), with the
// default ε and pool, and reports the gain log f(LS) − log f(greedy).
func BenchmarkLocalSearch(b *testing.B) {
	for _, c := range []struct{ n, d, k int }{{1e4, 10, 8}, {1e5, 10, 8}, {1e6, 10, 8}, {1e5, 30, 20}} {
		m := ndpp.Random(c.n, c.d, 1, ndpp.RandomOptions{})
		g, err := OfflineGreedy(context.Background(), m, c.k, GreedyOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("n=%d/d=%d/k=%d", c.n, c.d, c.k), func(b *testing.B) {
			var res LocalSearchResult
			for i := 0; i < b.N; i++ {
				o, err := detcache.NewFast(m, c.k)
				if err != nil {
					b.Fatal(err)
				}
				if res, err = LocalSearch(context.Background(), o, c.k, g.Solution, LocalSearchOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			reportLS(b, res, c.n)
			b.ReportMetric(g.Seconds, "greedy-s")
		})
	}
}

// BenchmarkLocalSearchModels runs greedy and local search on the model
// files listed in NDPP_LS_MODELS (comma separated; skipped when unset) for
// k = 4, 8, 12, 16, 20 (up to the model's MaxRank): the offline greedy,
// then local search from its solution on the fast oracle. Metrics: the greedy's and the search's log f, the gain and the
// relative gain (log f(LS) − log f(greedy))/|log f(LS)|, and the search's
// work.
func BenchmarkLocalSearchModels(b *testing.B) {
	env := os.Getenv("NDPP_LS_MODELS")
	if env == "" {
		b.Skip("NDPP_LS_MODELS lists no model files")
	}
	for _, path := range strings.Split(env, ",") {
		m, err := npz.Load(path)
		if err != nil {
			b.Fatal(err)
		}
		for _, k := range []int{4, 8, 12, 16, 20} {
			if k > m.MaxRank() {
				continue
			}
			b.Run(fmt.Sprintf("%s/n=%d/d=%d/diag=%v/k=%d", filepath.Base(path), m.N(), m.D(), m.HasDiag(), k), func(b *testing.B) {
				var res LocalSearchResult
				var start ndpp.Value
				var greedySec float64
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					g, err := OfflineGreedy(context.Background(), m, k, GreedyOptions{})
					if err != nil {
						b.Fatal(err)
					}
					from := g.Solution
					start = g.Value
					o, err := detcache.NewFast(m, k)
					if err != nil {
						b.Fatal(err)
					}
					greedySec = time.Since(t0).Seconds()
					if res, err = LocalSearch(context.Background(), o, k, from, LocalSearchOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				reportLS(b, res, m.N())
				b.ReportMetric(start.Log, "greedy-log")
				b.ReportMetric(res.Value.Log, "ls-log")
				b.ReportMetric(100*(res.Value.Log-start.Log)/max(1e-300, abs(res.Value.Log)), "rel-gain%")
				b.ReportMetric(greedySec, "greedy-s")
			})
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
