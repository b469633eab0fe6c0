package npz

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/ndpp-go/ndpp/ndpp"
)

// BenchmarkNPZ measures writing and reading model files (in memory, so the
// disk does not count).
func BenchmarkNPZ(b *testing.B) {
	for _, sz := range []struct{ n, d int }{{1000, 30}, {10000, 50}} {
		m := ndpp.Random(sz.n, sz.d, 1, ndpp.RandomOptions{})
		data := encode(b, m)
		b.Run(fmt.Sprintf("n=%d/d=%d/op=write", sz.n, sz.d), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := Write(io.Discard, m); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("n=%d/d=%d/op=read", sz.n, sz.d), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Read(bytes.NewReader(data), int64(len(data))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
