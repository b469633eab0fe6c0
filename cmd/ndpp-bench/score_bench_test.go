package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
	"github.com/ndpp-go/ndpp/ndpp/npz"
)

// writeBenchModel saves ndpp.Random(n, d, seed) with a diagonal (as the
// learners produce) under dir and returns its path.
func writeBenchModel(tb testing.TB, dir string, n, d int, seed uint64) string {
	tb.Helper()
	path := filepath.Join(dir, fmt.Sprintf("random-%d-%d.npz", n, d))
	if err := npz.Save(path, ndpp.Random(n, d, seed, ndpp.RandomOptions{Diag: 0.05})); err != nil {
		tb.Fatal(err)
	}
	return path
}

// writeBenchBaskets writes count synthetic baskets over n items (rows,
// mean size 8) under dir and returns the path.
func writeBenchBaskets(tb testing.TB, dir string, n int, count int64, seed uint64) string {
	tb.Helper()
	src, err := baskets.NewSynthetic(baskets.SyntheticOptions{N: n, Count: count, Seed: seed})
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	for {
		b, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			tb.Fatal(err)
		}
		for i, x := range b {
			if i > 0 {
				buf.WriteByte(' ')
			}
			buf.WriteString(strconv.Itoa(x))
		}
		buf.WriteByte('\n')
	}
	path := filepath.Join(dir, "baskets.txt")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// BenchmarkScoreRecommend runs `ndpp-bench score --recommend 10` over 1,024
// synthetic baskets on a random model with n = 10⁴ items and d = 30 (a
// diagonal included), on one worker, and reports baskets/s.
func BenchmarkScoreRecommend(b *testing.B) {
	const n, d, count = 10000, 30, 1024
	dir := b.TempDir()
	model := writeBenchModel(b, dir, n, d, 1)
	input := writeBenchBaskets(b, dir, n, count, 2)
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			e := &env{stdout: io.Discard, stderr: io.Discard}
			args := []string{"score", "--model", model, "--input", input, "--recommend", "10", "--quiet", "--threads", strconv.Itoa(threads)}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if code := run(e, args); code != 0 {
					b.Fatalf("exit status %d", code)
				}
			}
			b.ReportMetric(float64(count)*float64(b.N)/b.Elapsed().Seconds(), "baskets/s")
		})
	}
}
