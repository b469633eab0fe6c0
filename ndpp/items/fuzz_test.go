package items

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/ndpp-go/ndpp/ndpp"
)

// FuzzReader: on any stream the reader returns only items that fit the
// kernel and pass ndpp.CheckItem, ends with io.EOF or an error (never a
// panic), and reads the same items and error with and without reading
// ahead.
func FuzzReader(f *testing.F) {
	k := ndpp.KernelOf(ndpp.Random(5, 2, 1, ndpp.RandomOptions{Diag: 0.1})) // rows of 5
	var text, npy, gz bytes.Buffer
	tw := NewTextWriter(&text, k)
	nw, err := NewNPYWriter(&npy, k, 3, false)
	if err != nil {
		f.Fatal(err)
	}
	var its []ndpp.Item
	for id := 0; id < 3; id++ {
		its = append(its, ndpp.Item{ID: id, V: []float64{1, float64(id)}, B: []float64{-2, 0.5}, Delta: float64(id)})
	}
	if err := tw.Write(its); err != nil {
		f.Fatal(err)
	}
	if err := nw.Write(its); err != nil {
		f.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		f.Fatal(err)
	}
	if err := nw.Close(); err != nil {
		f.Fatal(err)
	}
	zw := gzip.NewWriter(&gz)
	zw.Write(text.Bytes())
	zw.Close()
	for _, s := range [][]byte{text.Bytes(), npy.Bytes(), gz.Bytes(), []byte("# c\n0, 1, 2, 3, 4, 0.5\n\n7 1 1 1 1 1e300\n"), []byte("\x93NUMPY\x01\x00")} {
		f.Add(s)
	}
	type read struct {
		items []ndpp.Item
		err   string
	}
	readAll := func(t *testing.T, data []byte, ahead int) read {
		r, err := Open(bytes.NewReader(data), k, Options{ReadAhead: ahead, Chunk: 2})
		if err != nil {
			return read{err: err.Error()}
		}
		defer r.Close()
		var out read
		for len(out.items) <= 1000 {
			its, err := r.Next(3)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				out.err = err.Error()
				break
			}
			if len(its) == 0 {
				t.Fatal("Next returned no items and no error")
			}
			for _, it := range its {
				if !k.Fits(&it) {
					t.Fatalf("item %+v does not fit the kernel", it)
				}
				if err := ndpp.CheckItem(k, it); err != nil {
					t.Fatalf("item %+v returned: %v", it, err)
				}
				it.V, it.B = slices.Clone(it.V), slices.Clone(it.B)
				out.items = append(out.items, it)
			}
		}
		return out
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, b := readAll(t, data, 0), readAll(t, data, 2)
		if a.err != b.err || len(a.items) != len(b.items) {
			t.Fatalf("without reading ahead %d items, %q; with %d, %q", len(a.items), a.err, len(b.items), b.err)
		}
		for i := range a.items {
			x, y := a.items[i], b.items[i]
			if x.ID != y.ID || x.Delta != y.Delta || !slices.Equal(x.V, y.V) || !slices.Equal(x.B, y.B) {
				t.Fatalf("item %d: %+v without reading ahead, %+v with", i, x, y)
			}
		}
	})
}
