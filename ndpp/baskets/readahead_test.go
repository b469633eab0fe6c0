package baskets

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
)

// readStep is what a Reader showed after one call to Next.
type readStep struct {
	basket []int
	err    string
	line   int
	stats  Stats
}

// readAll records every call of Next until an error, with Line and Stats
// after each, and the vocabulary's tokens at the end.
func readSteps(t *testing.T, r *Reader, voc *ndpp.Vocab) ([]readStep, []string) {
	t.Helper()
	var steps []readStep
	for {
		b, err := r.Next()
		st := readStep{basket: b, line: r.Line(), stats: r.Stats()}
		if err != nil {
			st.err = err.Error()
			steps = append(steps, st)
			// The error is sticky, with or without read-ahead.
			_, again := r.Next()
			require.EqualError(t, again, st.err)
			break
		}
		steps = append(steps, st)
	}
	var toks []string
	if voc != nil {
		toks = voc.Tokens()
	}
	return steps, toks
}

// TestReaderReadAheadIsTheSame: with ReadAhead, a Reader gives the same
// baskets, lines, counts, errors and vocabulary as without, for line files
// and CSV, across chunk boundaries, skipped and empty lines, a header, and
// an error in the middle of the file.
func TestReaderReadAheadIsTheSame(t *testing.T) {
	var long strings.Builder
	for i := range 3*aheadBaskets + 11 {
		switch {
		case i%97 == 5:
			long.WriteString("\n") // empty: counted
		case i%31 == 7:
			fmt.Fprintf(&long, "%d %d %d %d %d\n", i%50, i%50+1, i%50+2, i%50+3, i%50+4) // beyond MaxSize
		default:
			fmt.Fprintf(&long, "%d %d %d\n", i%50, (i*7)%50, i%50) // a duplicate
		}
	}
	bad := long.String() + "1 2 x3\n4 5\n"
	files := map[string]string{"long": long.String(), "bad": bad, "empty": "", "blank": "\n\n"}
	dir := t.TempDir()
	for name, text := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".txt"), []byte(text), 0o644))
	}
	type opener func(ahead int, voc *ndpp.Vocab) (*Reader, error)
	cases := map[string]opener{}
	for name := range files {
		path := filepath.Join(dir, name+".txt")
		cases[name] = func(ahead int, _ *ndpp.Vocab) (*Reader, error) {
			return Open(path, LineOptions{MaxSize: 4, ReadAhead: ahead})
		}
		cases[name+"/vocab"] = func(ahead int, voc *ndpp.Vocab) (*Reader, error) {
			return Open(path, LineOptions{Vocab: voc, Grow: true, Header: true, MaxSize: 4, ReadAhead: ahead})
		}
	}
	cases["apparel"] = func(ahead int, _ *ndpp.Vocab) (*Reader, error) {
		return Open("../../testdata/1_100_100_100_apparel_regs.csv", LineOptions{Base: 1, N: 100, ReadAhead: ahead})
	}
	cases["bad token"] = func(ahead int, _ *ndpp.Vocab) (*Reader, error) {
		return Open("../../testdata/baskets-bad.txt", LineOptions{ReadAhead: ahead})
	}
	cases["csv"] = func(ahead int, voc *ndpp.Vocab) (*Reader, error) {
		return OpenCSV("../../testdata/transactions.csv", CSVOptions{BasketColumn: "InvoiceNo", ItemColumn: "StockCode", Vocab: voc, Grow: true, ReadAhead: ahead})
	}
	cases["stdin-like"] = func(ahead int, _ *ndpp.Vocab) (*Reader, error) {
		return NewLineReader(strings.NewReader(bad), LineOptions{ReadAhead: ahead}), nil
	}
	for name, open := range cases {
		var want []readStep
		var wantToks []string
		for _, ahead := range []int{0, 1, DefaultReadAhead} {
			voc, err := ndpp.NewVocab(nil)
			require.NoError(t, err)
			r, err := open(ahead, voc)
			require.NoError(t, err, name)
			steps, toks := readSteps(t, r, voc)
			require.NoError(t, r.Close())
			if ahead == 0 {
				want, wantToks = steps, toks
				require.NotEmpty(t, want)
				continue
			}
			require.Equal(t, want, steps, "%s, read-ahead %d", name, ahead)
			require.Equal(t, wantToks, toks, "%s, read-ahead %d", name, ahead)
		}
	}
}

// TestReaderReadAheadFreshSlices: baskets read ahead are the caller's to
// keep, as without read-ahead (a HoldOut keeps them).
func TestReaderReadAheadFreshSlices(t *testing.T) {
	r, err := Open("../../testdata/1_100_100_100_apparel_regs.csv", LineOptions{Base: 1, ReadAhead: 2})
	require.NoError(t, err)
	defer r.Close()
	var kept [][]int
	for range 3 * aheadBaskets {
		b, err := r.Next()
		require.NoError(t, err)
		kept = append(kept, b)
	}
	want, err := ReadFile("../../testdata/1_100_100_100_apparel_regs.csv", LineOptions{Base: 1})
	require.NoError(t, err)
	require.Equal(t, want[:len(kept)], kept)
}

// TestReaderReadAheadPeekAndClose: Peek shows the basket Next returns
// next once it has been read; Close before the end stops the goroutine,
// and Next then returns the closed reader's error.
func TestReaderReadAheadPeekAndClose(t *testing.T) {
	before := runtime.NumGoroutine()
	r, err := Open("../../testdata/1_100_100_100_apparel_regs.csv", LineOptions{Base: 1, ReadAhead: 2})
	require.NoError(t, err)
	require.Nil(t, r.Peek(), "nothing read before the first Next")
	for range 10 {
		_, err := r.Next()
		require.NoError(t, err)
		next := r.Peek()
		require.NotNil(t, next)
		b, err := r.Next()
		require.NoError(t, err)
		require.Equal(t, next, b)
	}
	require.NoError(t, r.Close())
	_, err = r.Next()
	require.ErrorContains(t, err, "reader is closed")
	require.Nil(t, r.Peek())
	waitGoroutines(t, before)

	plain, err := Open("../../testdata/1_100_100_100_apparel_regs.csv", LineOptions{Base: 1})
	require.NoError(t, err)
	defer plain.Close()
	_, err = plain.Next()
	require.NoError(t, err)
	require.Nil(t, plain.Peek(), "no read-ahead: nothing to show")

	_, err = Open("../../testdata/1_100_100_100_apparel_regs.csv", LineOptions{ReadAhead: -1})
	require.ErrorContains(t, err, "ReadAhead = -1")
}

// waitGoroutines waits briefly for the number of goroutines to fall back
// to n.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), n, "goroutines left running")
}

// reusing is a Source that returns every basket in the same buffer, then
// err (or panics when err is nil).
type reusing struct {
	b   [][]int
	i   int
	buf []int
	err error
}

func (s *reusing) Next() ([]int, error) {
	if s.i == len(s.b) {
		if s.err == nil {
			panic("reusing: no more baskets")
		}
		return nil, s.err
	}
	s.buf = append(s.buf[:0], s.b[s.i]...)
	s.i++
	return s.buf, nil
}

// TestReadAhead: NewReadAhead gives a source's baskets (copied: the
// source may reuse its buffer) and then its error; a panic in the source
// is raised again after the baskets before it; Peek shows the next basket;
// Close stops the goroutine before the end, without reading much further.
func TestReadAhead(t *testing.T) {
	data := make([][]int, 3*aheadBaskets+17)
	for i := range data {
		data[i] = []int{i, i + 1, i + 2}[:1+i%3]
	}
	before := runtime.NumGoroutine()
	bad := errors.New("bad source")
	for _, end := range []error{io.EOF, bad} {
		a := NewReadAhead(&reusing{b: data, err: end})
		for i, want := range data {
			if i > 0 && i%aheadBaskets != 0 { // within a chunk: at hand
				require.Equal(t, want, a.Peek())
			}
			b, err := a.Next()
			require.NoError(t, err)
			require.Equal(t, want, b, "basket %d", i)
		}
		_, err := a.Next()
		require.ErrorIs(t, err, end)
		_, err = a.Next()
		require.ErrorIs(t, err, end)
		require.NoError(t, a.Close())
		_, err = a.Next()
		require.Equal(t, io.EOF, err)
	}

	a := NewReadAhead(&reusing{b: data[:20]})
	for range 20 {
		_, err := a.Next()
		require.NoError(t, err)
	}
	require.PanicsWithValue(t, "reusing: no more baskets", func() { _, _ = a.Next() })
	require.NoError(t, a.Close())

	long := make([][]int, 50*aheadBaskets)
	for i := range long {
		long[i] = []int{i}
	}
	src := &reusing{b: long, err: io.EOF}
	a = NewReadAhead(src)
	_, err := a.Next()
	require.NoError(t, err)
	require.NoError(t, a.Close())
	require.NoError(t, a.Close(), "twice")
	require.LessOrEqual(t, src.i, (DefaultReadAhead+3)*aheadBaskets, "read on after Close")
	require.Nil(t, a.Peek())
	waitGoroutines(t, before)

	require.Panics(t, func() { NewReadAhead(nil) })

	s := SliceSource([][]int{{1}, {2}}).(Peeker)
	require.Equal(t, []int{1}, s.Peek())
	_, _ = s.Next()
	require.Equal(t, []int{2}, s.Peek())
	_, _ = s.Next()
	require.Nil(t, s.Peek())
}
