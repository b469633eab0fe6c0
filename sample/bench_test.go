package sample

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ndpp-go/ndpp/blas" // the default backend (auto with OpenBLAS)
	"github.com/ndpp-go/ndpp/ndpp"
)

// One OpenBLAS thread, as ndpp-bench runs it: the measurements are per core.
func init() { blas.SetThreads(1) }

// benchSizes returns the (n, d) grid of BenchmarkSample: n = 10⁴ and 10⁵
// with d = 10, 30, 100, and n = 10⁶ with d = 10 (d = 30 and 100 too when
// NDPP_BENCH_LARGE=1: a 10⁶×100 model holds 2.4 GB and a sample takes tens
// of seconds).
func benchSizes() [][2]int {
	sizes := [][2]int{{1e4, 10}, {1e4, 30}, {1e4, 100}, {1e5, 10}, {1e5, 30}, {1e5, 100}, {1e6, 10}}
	if os.Getenv("NDPP_BENCH_LARGE") == "1" {
		sizes = append(sizes, [2]int{1e6, 30}, [2]int{1e6, 100})
	}
	return sizes
}

// benchBlocks returns the block sizes to measure: NDPP_BENCH_BLOCKS (comma
// separated) or the default block and one item at a time.
func benchBlocks(b *testing.B) []int {
	env := os.Getenv("NDPP_BENCH_BLOCKS")
	if env == "" {
		return []int{DefaultBlock, 1}
	}
	var out []int
	for _, f := range strings.Split(env, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			b.Fatalf("NDPP_BENCH_BLOCKS: bad block size %q", f)
		}
		out = append(out, v)
	}
	return out
}

// BenchmarkSample draws samples from random models with a small diagonal
// (the learners' default kind) and reports samples/s and the mean size.
func BenchmarkSample(b *testing.B) {
	for _, sz := range benchSizes() {
		n, d := sz[0], sz[1]
		// Scale keeps E|Y| moderate (about 2d plus Σ κᵢ ≈ 0.001·n).
		m := ndpp.Random(n, d, 1, ndpp.RandomOptions{Diag: 1e-3})
		for _, block := range benchBlocks(b) {
			b.Run(fmt.Sprintf("n=%d/d=%d/block=%d", n, d, block), func(b *testing.B) {
				ctx := context.Background()
				s, err := New(ctx, m, Options{Block: block})
				if err != nil {
					b.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(1, 1))
				var buf []int
				size := 0
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if buf, err = s.SampleInto(ctx, rng, buf); err != nil {
						b.Fatal(err)
					}
					size += len(buf)
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
				b.ReportMetric(float64(size)/float64(b.N), "size")
			})
		}
	}
}

// BenchmarkNew measures the precomputation (the Gram matrices and X).
func BenchmarkNew(b *testing.B) {
	for _, sz := range [][2]int{{1e5, 10}, {1e5, 100}} {
		m := ndpp.Random(sz[0], sz[1], 1, ndpp.RandomOptions{Diag: 1e-3})
		b.Run(fmt.Sprintf("n=%d/d=%d", sz[0], sz[1]), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := New(context.Background(), m, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
