package rerank

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ndpp-go/ndpp/ndpp"
)

// BenchmarkRerank is the latency of one request: N candidates drawn from a
// catalogue of 10⁴ items (a model with a diagonal), quality scores, k
// chosen, no window; and, as "shown=20/window=10", the same with 20 shown
// items and a sliding window of 10; "polish" adds local search to the
// first ("polish-singles": single swaps only). One reused workspace (zero allocations without polish); -tags
// openblas for the native backend.
func BenchmarkRerank(b *testing.B) {
	const n = 10000
	for _, d := range []int{30, 100} {
		m := ndpp.Random(n, d, 1, ndpp.RandomOptions{Diag: 0.05})
		for _, nc := range []int{100, 500, 2000} {
			for _, k := range []int{10, 50} {
				rng := rand.New(rand.NewPCG(uint64(nc), uint64(k)))
				req := benchRequest(rng, n, nc, k)
				b.Run(fmt.Sprintf("N=%d/k=%d/d=%d", nc, k, d), func(b *testing.B) { benchRequestLoop(b, m, req) })
				if nc == 500 {
					pr := req
					pr.Polish = true
					b.Run(fmt.Sprintf("N=%d/k=%d/d=%d/polish", nc, k, d), func(b *testing.B) { benchRequestLoop(b, m, pr) })
					pr.PolishPool = 1
					b.Run(fmt.Sprintf("N=%d/k=%d/d=%d/polish-singles", nc, k, d), func(b *testing.B) { benchRequestLoop(b, m, pr) })
					req.Shown = rng.Perm(n)[:20]
					req.Window = 10
					b.Run(fmt.Sprintf("N=%d/k=%d/d=%d/shown=20/window=10", nc, k, d), func(b *testing.B) { benchRequestLoop(b, m, req) })
				}
			}
		}
	}
}

func benchRequest(rng *rand.Rand, n, nc, k int) Request {
	req := Request{Candidates: rng.Perm(n)[:nc], K: k, Quality: make([]float64, nc)}
	for i := range req.Quality {
		req.Quality[i] = 0.5 + rng.Float64()
	}
	return req
}

func benchRequestLoop(b *testing.B, m *ndpp.Model, req Request) {
	var ws Workspace
	if _, err := ws.Rerank(context.Background(), m, req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ws.Rerank(context.Background(), m, req); err != nil {
			b.Fatal(err)
		}
	}
}
