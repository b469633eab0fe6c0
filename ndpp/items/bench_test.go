package items

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/ndpp-go/ndpp/ndpp"
)

// BenchmarkRead decodes an in-memory stream of 200,000 synthetic items
// (d = 10) in each format, without and with read-ahead, and reports
// items/s.
func BenchmarkRead(b *testing.B) {
	const n, d = 200000, 10
	for _, format := range []string{FormatNPY, FormatText} {
		var buf bytes.Buffer
		src, err := NewSynthetic(context.Background(), n, d, 1, ndpp.RandomOptions{})
		if err != nil {
			b.Fatal(err)
		}
		kern := src.Kernel()
		var w *Writer
		if format == FormatNPY {
			w, err = NewNPYWriter(&buf, kern, n, false)
			if err != nil {
				b.Fatal(err)
			}
		} else {
			w = NewTextWriter(&buf, kern)
		}
		for {
			its, err := src.Next(1024)
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
		data := buf.Bytes()
		for _, ahead := range []int{0, 2} {
			b.Run(fmt.Sprintf("format=%s/read-ahead=%d", format, ahead), func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					r, err := Open(bytes.NewReader(data), kern, Options{ReadAhead: ahead})
					if err != nil {
						b.Fatal(err)
					}
					var got int
					for {
						its, err := r.Next(4096)
						if err == io.EOF {
							break
						}
						if err != nil {
							b.Fatal(err)
						}
						got += len(its)
					}
					r.Close()
					if got != n {
						b.Fatalf("%d items, want %d", got, n)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
			})
		}
	}
}
