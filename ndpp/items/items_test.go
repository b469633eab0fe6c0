package items

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
	"github.com/ndpp-go/ndpp/ndpp"
)

// readAll reads every item of r (copies), in chunks of varying sizes.
func readAll(t *testing.T, r *Reader) []ndpp.Item {
	t.Helper()
	return drain(t, r, 7)
}

// drain reads every item of a source (copies), in chunks of 1 to period
// items.
func drain(t *testing.T, src interface {
	Next(int) ([]ndpp.Item, error)
}, period int) []ndpp.Item {
	t.Helper()
	var out []ndpp.Item
	for step := 1; ; step++ {
		its, err := src.Next(1 + step%period)
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		for _, it := range its {
			c, _ := it.CopyTo(nil)
			out = append(out, c)
		}
	}
}

// modelItems returns m's items as vector items.
func modelItems(m *ndpp.Model) []ndpp.Item {
	out := make([]ndpp.Item, m.N())
	for i := range out {
		out[i] = ndpp.Item{ID: i, V: append([]float64(nil), m.ItemV(i)...), Delta: m.ItemDiag(i)}
		if !m.Shared() {
			out[i].B = append([]float64(nil), m.ItemB(i)...)
		}
	}
	return out
}

// synthItems reads every item of s (copies).
func synthItems(t *testing.T, s *Synthetic) []ndpp.Item {
	t.Helper()
	return drain(t, s, 5)
}

// TestSyntheticEqualsRandom: the synthetic stream is ndpp.Random's items
// and C, bit for bit.
func TestSyntheticEqualsRandom(t *testing.T) {
	for _, opt := range []ndpp.RandomOptions{{}, {Diag: 0.5}, {Shared: true}, {Shared: true, Diag: 2}, {BlockDiagonal: true}} {
		for _, nd := range [][2]int{{1, 1}, {7, 3}, {40, 5}} {
			m := ndpp.Random(nd[0], nd[1], 9, opt)
			s, err := NewSynthetic(context.Background(), nd[0], nd[1], 9, opt)
			require.NoError(t, err)
			require.Equal(t, ndpp.KernelOf(m).C, s.Kernel().C, "%+v %v: C", opt, nd)
			require.Equal(t, m.Shared(), s.Kernel().Shared)
			require.Equal(t, m.HasDiag(), s.Kernel().Diag)
			require.Equal(t, nd[0], s.Len())
			require.Equal(t, modelItems(m), synthItems(t, s), "%+v %v: items", opt, nd)
		}
	}
	_, err := NewSynthetic(context.Background(), 0, 3, 1, ndpp.RandomOptions{})
	require.ErrorContains(t, err, "n = 0")
	_, err = NewSynthetic(context.Background(), math.MaxInt/4, 3, 1, ndpp.RandomOptions{})
	require.ErrorContains(t, err, "overflows")
}

// TestSyntheticLongStream: a stream of 10⁵ items read in chunks of 4,096
// (as ndpp-bench items reads it) and of 1,000 is ndpp.Random's items, bit
// for bit.
func TestSyntheticLongStream(t *testing.T) {
	if testing.Short() {
		t.Skip("draws 4·10⁶ normals per stream")
	}
	const n, d = 100_000, 10
	for _, opt := range []ndpp.RandomOptions{{}, {Diag: 0.5}, {Shared: true}} {
		want := modelItems(ndpp.Random(n, d, 4, opt))
		for _, chunk := range []int{4096, 1000} {
			s, err := NewSynthetic(context.Background(), n, d, 4, opt)
			require.NoError(t, err)
			var got []ndpp.Item
			for {
				its, err := s.Next(chunk)
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				for _, it := range its {
					c, _ := it.CopyTo(nil)
					got = append(got, c)
				}
			}
			require.Equal(t, want, got, "%+v, chunks of %d", opt, chunk)
		}
	}
}

// TestSyntheticStopsWhenCancelled: positioning the generators of a stream
// of 10¹² items (10¹³ draws to discard) looks at the context as it goes:
// a context done before, or at its third look, stops it with an error
// wrapping context.Canceled.
func TestSyntheticStopsWhenCancelled(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, ctx := range []context.Context{done, ndpptest.CancelAfter(2)} {
		_, err := NewSynthetic(ctx, 1e12, 10, 1, ndpp.RandomOptions{Diag: 1})
		require.ErrorIs(t, err, context.Canceled)
	}
}

func gz(t *testing.T, b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return out.Bytes()
}

// TestRoundTrip: items written in either format (float64) read back
// identical, plain and gzip-compressed, also through a pipe; float32 NPY
// reads back the float32 roundings; the format is detected.
func TestRoundTrip(t *testing.T) {
	for _, opt := range []ndpp.RandomOptions{{}, {Diag: 0.5}, {Shared: true}, {Shared: true, Diag: 1}} {
		m := ndpp.Random(50, 4, 2, opt)
		k := ndpp.KernelOf(m)
		want := modelItems(m)
		for _, format := range []string{FormatNPY, FormatText, "npy32"} {
			var buf bytes.Buffer
			var w *Writer
			var err error
			if format == FormatText {
				w = NewTextWriter(&buf, k)
			} else {
				w, err = NewNPYWriter(&buf, k, len(want), format == "npy32")
				require.NoError(t, err)
			}
			require.NoError(t, w.Write(want[:20]))
			require.NoError(t, w.Write(want[20:]))
			require.NoError(t, w.Close())
			exp := want
			if format == "npy32" {
				exp = modelItems(m)
				for _, it := range exp {
					for i := range it.V {
						it.V[i] = float64(float32(it.V[i]))
					}
					for i := range it.B {
						it.B[i] = float64(float32(it.B[i]))
					}
				}
				for i := range exp {
					exp[i].Delta = float64(float32(exp[i].Delta))
				}
			}
			for i, data := range [][]byte{buf.Bytes(), gz(t, buf.Bytes()), buf.Bytes(), gz(t, buf.Bytes())} {
				pr, pw := io.Pipe()
				go func() { _, _ = pw.Write(data); pw.Close() }()
				ropt := Options{}
				if i >= 2 { // read ahead, in chunks that do not divide n
					ropt = Options{ReadAhead: i - 1, Chunk: 3 + 4*(i-2)}
				}
				r, err := Open(pr, k, ropt)
				require.NoError(t, err)
				require.Equal(t, format != FormatText, r.Format() == FormatNPY)
				require.Equal(t, len(data) != buf.Len(), r.Gzip())
				if format == FormatText {
					require.Equal(t, -1, r.Len())
				} else {
					require.Equal(t, len(want), r.Len())
				}
				require.Equal(t, exp, readAll(t, r), "%v %s %+v", opt, format, ropt)
				require.Equal(t, len(want), r.Read())
				require.NoError(t, r.Close())
			}
		}
	}
}

// npyBytes builds an NPY stream by hand (float64 little-endian rows).
func npyBytes(shape string, vals []float64) []byte {
	dict := "{'descr': '<f8', 'fortran_order': False, 'shape': " + shape + ", }"
	b := append([]byte("\x93NUMPY\x01\x00"), byte(len(dict)+1), 0)
	b = append(b, dict...)
	b = append(b, '\n')
	for _, x := range vals {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

// TestBadRows: every bad row is an error naming its row or line.
func TestBadRows(t *testing.T) {
	k := ndpp.KernelOf(ndpp.Random(5, 2, 1, ndpp.RandomOptions{})) // rows of 4
	kd := k
	kd.Diag = true // rows of 5
	row := []float64{1, 2, 3, 4}
	for name, tc := range map[string]struct {
		k    ndpp.Kernel
		data []byte
		want string
	}{
		"npy width":      {k, npyBytes("(2, 3)", make([]float64, 6)), "rows of 3 values; want 4"},
		"npy 1-D":        {k, npyBytes("(8,)", make([]float64, 8)), "want 2-D"},
		"npy NaN":        {k, npyBytes("(3, 4)", append(append(append([]float64{}, row...), 1, math.NaN(), 0, 0), row...)), "row 1: v_2 = NaN is not finite"},
		"npy Inf b":      {k, npyBytes("(2, 4)", append(append([]float64{}, row...), 1, 1, 1, math.Inf(-1))), "row 1: b_2 = -Inf"},
		"npy negative δ": {kd, npyBytes("(1, 5)", []float64{1, 2, 3, 4, -1}), "row 0: diagonal entry δ = -1"},
		"npy truncated":  {k, npyBytes("(3, 4)", append(append([]float64{}, row...), 1, 2)), "truncated in row 1 of 3"},
		"npy trailing":   {k, npyBytes("(1, 4)", append(append([]float64{}, row...), 5)), "unexpected bytes after the 1 rows"},
		"npy bad magic":  {k, []byte("\x93NUMPY\x09\x00"), "unsupported NPY format version"},
		"text fields":    {k, []byte("0 1 2 3 4\n1 1 2 3\n"), "line 2: 4 fields; want 5"},
		"text number":    {k, []byte("# c\n\n0 1 2 3 x4\n"), `line 3: value 4 ("x4") is not a number`},
		"text NaN":       {k, []byte("0 1 2 3 4\n1 1 NaN 3 4\n"), "line 2: v_2 = NaN is not finite"},
		"text id":        {k, []byte("-3 1 2 3 4\n"), `line 1: id "-3" is not an integer ≥ 0`},
		"text comma":     {k, []byte("0, 1, 2,, 4\n"), "line 1: empty field 4"},
		"text δ":         {kd, []byte("0 1 2 3 4 -0.5\n"), "line 1: diagonal entry δ = -0.5"},
		"npy scale":      {k, npyBytes("(3, 4)", append(append(append([]float64{}, row...), 1e80, 0, 0, 0), row...)), "row 1: ndpp: the kernel's values overflow float64: its scale"},
		"text scale":     {k, []byte("0 1 2 3 4\n\n1 1 2 3 1e100\n"), "line 3: ndpp: the kernel's values overflow float64: its scale"},
	} {
		for _, opt := range []Options{{}, {ReadAhead: 2, Chunk: 2}} {
			var err error
			r, oerr := Open(bytes.NewReader(tc.data), tc.k, opt)
			if oerr != nil {
				err = oerr
			} else {
				for err == nil {
					_, err = r.Next(2)
				}
				_, again := r.Next(2)
				require.Equal(t, err, again, "%s: the error again", name)
			}
			require.ErrorContains(t, err, tc.want, name)
			require.NotErrorIs(t, err, io.EOF, name)
			if strings.Contains(name, "scale") {
				require.ErrorIs(t, err, ndpp.ErrOverflow, name)
			}
		}
	}
	// Commas with spaces, comments and blank lines are fine; ids are the
	// file's.
	r, err := Open(strings.NewReader("# items\n7, 1, 2, 3, 4\n\n9 5 6 7 8"), k, Options{Format: FormatText})
	require.NoError(t, err)
	got := readAll(t, r)
	require.Equal(t, []ndpp.Item{{ID: 7, V: []float64{1, 2}, B: []float64{3, 4}}, {ID: 9, V: []float64{5, 6}, B: []float64{7, 8}}}, got)
	_, err = Open(strings.NewReader(""), k, Options{Format: "csv"})
	require.ErrorContains(t, err, `unknown format "csv"`)
}

// TestErrorMidChunk: a bad row in the middle of a chunk comes after the
// valid rows before it, with and without read-ahead, whatever the chunk
// sizes; nothing after it is returned.
func TestErrorMidChunk(t *testing.T) {
	m := ndpp.Random(40, 3, 4, ndpp.RandomOptions{})
	k := ndpp.KernelOf(m)
	want := modelItems(m)
	for _, format := range []string{FormatNPY, FormatText} {
		for _, bad := range []int{0, 5, 17, 39} {
			var buf bytes.Buffer
			w := NewTextWriter(&buf, k)
			if format == FormatNPY {
				var err error
				w, err = NewNPYWriter(&buf, k, len(want), false)
				require.NoError(t, err)
			}
			require.NoError(t, w.Write(want[:bad]))
			require.NoError(t, w.Write(want[bad:]))
			require.NoError(t, w.Close())
			data := buf.Bytes()
			// Overwrite v_2 of row bad with NaN in place.
			if format == FormatNPY {
				off := len(data) - (len(want)-bad)*6*8 + 8
				binary.LittleEndian.PutUint64(data[off:], math.Float64bits(math.NaN()))
			} else {
				lines := strings.Split(string(data), "\n")
				f := strings.Fields(lines[bad])
				f[2] = "NaN"
				lines[bad] = strings.Join(f, " ")
				data = []byte(strings.Join(lines, "\n"))
			}
			for _, opt := range []Options{{}, {ReadAhead: 1, Chunk: 7}, {ReadAhead: 3, Chunk: 4096}} {
				r, err := Open(bytes.NewReader(data), k, opt)
				require.NoError(t, err)
				got := []ndpp.Item{}
				for step := 1; ; step++ {
					its, err := r.Next(1 + step%5)
					if err != nil {
						what := "row"
						if format == FormatText {
							what = "line"
						}
						at := bad
						if format == FormatText {
							at = bad + 1
						}
						require.ErrorContains(t, err, fmt.Sprintf("%s %d: v_2 = NaN is not finite", what, at), "%s %+v", format, opt)
						break
					}
					for _, it := range its {
						got = append(got, ndpp.Item{ID: it.ID, V: append([]float64(nil), it.V...), B: append([]float64(nil), it.B...)})
					}
				}
				require.Equal(t, want[:bad], got, "%s bad %d %+v", format, bad, opt)
				require.Equal(t, bad, r.Read())
				require.NoError(t, r.Close())
			}
		}
	}
}

// TestReadAheadClose: Close before the end stops the read-ahead goroutine
// (it exits without reading the rest), and Next then returns io.EOF; the
// reader holds at most its pool of chunks.
func TestReadAheadClose(t *testing.T) {
	m := ndpp.Random(1000, 2, 5, ndpp.RandomOptions{})
	k := ndpp.KernelOf(m)
	var buf bytes.Buffer
	w, err := NewNPYWriter(&buf, k, m.N(), false)
	require.NoError(t, err)
	require.NoError(t, w.Write(modelItems(m)))
	require.NoError(t, w.Close())
	src := &countingReader{r: bytes.NewReader(buf.Bytes())}
	r, err := Open(src, k, Options{ReadAhead: 2, Chunk: 10})
	require.NoError(t, err)
	its, err := r.Next(5)
	require.NoError(t, err)
	require.Len(t, its, 5)
	require.NoError(t, r.Close())
	select {
	case <-r.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the read-ahead goroutine did not stop")
	}
	_, err = r.Next(5)
	require.Equal(t, io.EOF, err)
	require.NoError(t, r.Close())
	// It stopped after at most its pool of chunks (and one bufio fill).
	require.Less(t, src.n, buf.Len(), "read the whole stream")
	require.Equal(t, 5, r.Read())
}

type countingReader struct {
	r *bytes.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	if len(p) > 256 {
		p = p[:256]
	}
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestGrowPipe: a pipe's buffer grows (on Linux) and its data pass as
// before; a regular file is left alone.
func TestGrowPipe(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	grown := GrowPipe(r, 1<<20)
	if runtime.GOOS == "linux" {
		require.True(t, grown)
		// The writer now fits 1 MiB without a reader.
		_, err = w.Write(make([]byte, 1<<20))
		require.NoError(t, err)
		buf := make([]byte, 1<<20)
		_, err = io.ReadFull(r, buf)
		require.NoError(t, err)
	} else {
		require.False(t, grown)
	}
	f, err := os.CreateTemp(t.TempDir(), "x")
	require.NoError(t, err)
	defer f.Close()
	require.False(t, GrowPipe(f, 1<<20))
}

// TestWriterRefusals: a chunk with an invalid item writes the items before
// it and reports the item; an NPY stream refuses rows beyond those its
// header declares, after writing those it can hold.
func TestWriterRefusals(t *testing.T) {
	m := ndpp.Random(10, 3, 4, ndpp.RandomOptions{})
	k := ndpp.KernelOf(m)
	its := modelItems(m)
	bad := slices.Clone(its)
	bad[6].V = []float64{1, math.NaN(), 0}
	var buf bytes.Buffer
	w := NewTextWriter(&buf, k)
	err := w.Write(bad)
	require.ErrorContains(t, err, "not finite")
	require.NoError(t, w.Close())
	require.Equal(t, 6, bytes.Count(buf.Bytes(), []byte("\n")), "the items before the invalid one")

	buf.Reset()
	w, err = NewNPYWriter(&buf, k, 8, false)
	require.NoError(t, err)
	require.NoError(t, w.Write(its[:5]))
	late := slices.Clone(its)
	late[9].V = []float64{1, math.NaN(), 0}
	err = w.Write(late[5:]) // the 9th row is beyond the header, before the invalid item
	require.ErrorContains(t, err, "more than the 8 rows")
	require.NoError(t, w.Close(), "8 rows written")
	r, err := Open(&buf, k, Options{})
	require.NoError(t, err)
	require.Equal(t, 8, r.Len())
}
