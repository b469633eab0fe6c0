package items

import (
	"context"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/ndpp-go/ndpp/ndpp"
)

// BenchmarkSynthetic times the parts of ndpp-bench items --synthetic at
// d = 10, n = 10⁶: the 4·n·d bare steps of the generator that the stream
// takes at least (2·n·d normals replayed to position it, 2·n·d drawn),
// positioning the generators (NewSynthetic), drawing the items (Next),
// and drawing and writing them as NPY to io.Discard; items/s of each part;
// and the stream's best case on two cores (two-goroutines, with -cpu 2).
var sink uint64

func BenchmarkSynthetic(b *testing.B) {
	const n, d = 1_000_000, 10
	b.Run("steps", func(b *testing.B) { // 4·n·d bare steps of the generator: the stream's floor
		for range b.N {
			hi, lo, acc := uint64(1), uint64(2), uint64(0)
			for range 4 * n * d {
				var u uint64
				hi, lo, u = pcgStep(hi, lo)
				acc += u
			}
			sink = acc
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
	})
	b.Run("new", func(b *testing.B) {
		for range b.N {
			if _, err := NewSynthetic(context.Background(), n, d, 1, ndpp.RandomOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
	})
	// fresh returns a positioned stream, outside the timer.
	fresh := func(b *testing.B) *Synthetic {
		b.StopTimer()
		defer b.StartTimer()
		s, err := NewSynthetic(context.Background(), n, d, 1, ndpp.RandomOptions{})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	b.Run("next", func(b *testing.B) {
		for range b.N {
			s := fresh(b)
			for {
				_, err := s.Next(4096)
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
	})
	b.Run("write", func(b *testing.B) {
		for range b.N {
			s := fresh(b)
			w, err := NewNPYWriter(io.Discard, s.Kernel(), n, false)
			if err != nil {
				b.Fatal(err)
			}
			for {
				its, err := s.Next(4096)
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				if err := w.Write(its); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
	})
	// The stream's best case on two cores: positioning the generators,
	// then V's and B's draws on a goroutine each (the same bits as Next),
	// nothing checked or written.
	b.Run("two-goroutines", func(b *testing.B) {
		const chunk = 4096
		for range b.N {
			s, err := NewSynthetic(context.Background(), n, d, 1, ndpp.RandomOptions{})
			if err != nil {
				b.Fatal(err)
			}
			var wg sync.WaitGroup
			for _, g := range []struct {
				src *normals
				r   *rand.Rand
			}{{&s.rv, s.rvR}, {&s.rb, s.rbR}} {
				wg.Go(func() {
					rows := make([]float64, chunk*d)
					for pos := 0; pos < n; pos += chunk {
						g.src.fill(rows[:min(chunk, n-pos)*d], d, d, s.scale, g.r)
					}
				})
			}
			wg.Wait()
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
	})
}
