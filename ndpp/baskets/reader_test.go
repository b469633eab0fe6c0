package baskets

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
)

const (
	apparelFile  = "../../testdata/1_100_100_100_apparel_regs.csv"
	threeCatFile = "../../testdata/1_100_100_100_apparel-diaper-feeding_regs.csv"
	badFile      = "../../testdata/baskets-bad.txt"
)

// readAllLines reads every basket and the line of each; nil slices become
// empty ones, so that results compare with literals.
func readAllLines(t *testing.T, r *Reader) ([][]int, []int) {
	t.Helper()
	out, lines := [][]int{}, []int{}
	for {
		b, err := r.Next()
		if err == io.EOF {
			return out, lines
		}
		require.NoError(t, err)
		out = append(out, b)
		lines = append(lines, r.Line())
	}
}

func readTestFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

func TestLineReaderFormats(t *testing.T) {
	cases := []struct {
		name  string
		in    string
		opt   LineOptions
		want  [][]int
		lines []int
		stats Stats
	}{
		{"spaces base 0", "0 1 2\n3\n", LineOptions{}, [][]int{{0, 1, 2}, {3}}, []int{1, 2},
			Stats{Baskets: 2, Items: 4}},
		{"base 1", "1 2 3\n4\n", LineOptions{Base: 1}, [][]int{{0, 1, 2}, {3}}, []int{1, 2},
			Stats{Baskets: 2, Items: 4}},
		{"mixed separators", "1, 2\t3 ,4\n5,,6\n\t 7 \t\n", LineOptions{}, [][]int{{1, 2, 3, 4}, {5, 6}, {7}}, []int{1, 2, 3},
			Stats{Baskets: 3, Items: 7}},
		{"CRLF and blank lines", "1 2\r\n\r\n\n3\r\n , \t\r\n4", LineOptions{}, [][]int{{1, 2}, {3}, {4}}, []int{1, 4, 6},
			Stats{Baskets: 3, Items: 4, Empty: 3}},
		{"byte-order mark", "\ufeff1 2\n3\n", LineOptions{}, [][]int{{1, 2}, {3}}, []int{1, 2}, Stats{Baskets: 2, Items: 3}},
		{"no final newline", "5 6", LineOptions{}, [][]int{{5, 6}}, []int{1}, Stats{Baskets: 1, Items: 2}},
		{"empty input", "", LineOptions{}, [][]int{}, []int{}, Stats{}},
		{"duplicates keep first order", "3 1 3 2 1 3\n+4 04 4\n", LineOptions{}, [][]int{{3, 1, 2}, {4}}, []int{1, 2},
			Stats{Baskets: 2, Items: 4, Duplicates: 5}},
		{"max size", "1 2 3\n1 2\n1 1 1 2\n4 5 6 7\n", LineOptions{MaxSize: 2}, [][]int{{1, 2}, {1, 2}}, []int{2, 3},
			Stats{Baskets: 2, Items: 4, Skipped: 2, Duplicates: 2}},
		{"N bound ok", "0 9\n", LineOptions{N: 10}, [][]int{{0, 9}}, []int{1}, Stats{Baskets: 1, Items: 2}},
	}
	for _, tc := range cases {
		r := NewLineReader(strings.NewReader(tc.in), tc.opt)
		got, lines := readAllLines(t, r)
		require.Equal(t, tc.want, got, tc.name)
		require.Equal(t, tc.lines, lines, tc.name)
		require.Equal(t, tc.stats, r.Stats(), tc.name)
		// EOF is sticky.
		_, err := r.Next()
		require.Equal(t, io.EOF, err, "%s: Next after EOF", tc.name)
	}
}

// Baskets are fresh slices: modifying or extending one changes neither a
// later basket nor is changed by reading it.
func TestLineReaderFreshSlices(t *testing.T) {
	r := NewLineReader(strings.NewReader("1 2 3\n4 5 6\n"), LineOptions{})
	a, err := r.Next()
	require.NoError(t, err)
	a = append(a, 100) // would write into spare capacity shared with the reader
	a[0] = 99
	b, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, []int{4, 5, 6}, b)
	require.Equal(t, []int{99, 2, 3, 100}, a)
}

// A line longer than the reader's buffer is read whole.
func TestLineReaderLongLine(t *testing.T) {
	var sb strings.Builder
	const k = 30000 // ~170 KB, several buffer fills
	long := make([]int, k)
	for i := range long {
		fmt.Fprintf(&sb, "%d ", i)
		long[i] = i
	}
	got, err := readAll(NewLineReader(strings.NewReader("7\n"+sb.String()+"\r\n8"), LineOptions{}))
	require.NoError(t, err)
	require.Equal(t, [][]int{{7}, long, {8}}, got)
}

func TestLineReaderErrors(t *testing.T) {
	voc, err := ndpp.NewVocab([]string{"a", "b"})
	require.NoError(t, err)
	cases := []struct {
		name string
		in   string
		opt  LineOptions
		want string
	}{
		{"junk", "1 2\n\n3 x 4\n", LineOptions{}, `baskets: input:3: bad item token "x": not an integer`},
		{"byte-order mark inside", "\ufeff1\n\ufeff3\n", LineOptions{}, `baskets: input:2: bad item token "\ufeff3": not an integer`},
		{"float", "1.5\n", LineOptions{}, `baskets: input:1: bad item token "1.5": not an integer`},
		{"sign only", "1 -\n", LineOptions{}, `baskets: input:1: bad item token "-": not an integer`},
		{"negative", "1 -3\n", LineOptions{}, `baskets: input:1: bad item token "-3": row -3 is negative (ids are 0-based)`},
		{"zero base 1", "2\r\n1 0\r\n", LineOptions{Base: 1}, `baskets: input:2: bad item token "0": row -1 is negative (ids are 1-based)`},
		{"out of range", "1 2\n3 101\n", LineOptions{Base: 1, N: 100}, `baskets: input:2: bad item token "101": row 100 out of range [0, 100)`},
		{"out of range 0", "10\n", LineOptions{N: 10}, `baskets: input:1: bad item token "10": row 10 out of range [0, 10)`},
		{"huge", "123456789012345678901234567890\n", LineOptions{}, `bad item token "123456789012345678901234567890": integer too large`},
		{"unicode junk", "1 ２\n", LineOptions{}, `bad item token "２": not an integer`},
		{"junk in skipped basket", "1 2 3 y\n", LineOptions{MaxSize: 2}, `baskets: input:1: bad item token "y": not an integer`},
		{"vocab unknown", "a b\nb c\n", LineOptions{Vocab: voc}, `baskets: input:2: bad item token "c": not in the vocabulary (2 tokens)`},
		{"vocab N", "a b\n", LineOptions{Vocab: voc, N: 1}, `baskets: input:1: bad item token "b": row 1 out of range [0, 1)`},
		{"grow beyond N", "a b\nc\n", LineOptions{Vocab: voc.Clone(), Grow: true, N: 2}, `baskets: input:2: bad item token "c": new token would be row 2; N = 2`},
		{"base 2", "1\n", LineOptions{Base: 2}, "LineOptions.Base = 2; want 0 or 1"},
		{"negative N", "1\n", LineOptions{N: -1}, "N = -1"},
		{"negative MaxSize", "1\n", LineOptions{MaxSize: -1}, "MaxSize = -1"},
		{"grow without vocab", "1\n", LineOptions{Grow: true}, "Grow needs a Vocab"},
	}
	for _, tc := range cases {
		r := NewLineReader(strings.NewReader(tc.in), tc.opt)
		_, err := readAll(r)
		require.ErrorContains(t, err, tc.want, tc.name)
		// Errors are sticky.
		_, err2 := r.Next()
		require.EqualError(t, err2, err.Error(), "%s: Next after an error", tc.name)
	}
}

func TestLineReaderVocab(t *testing.T) {
	voc, err := ndpp.NewVocab([]string{"milk", "bread"})
	require.NoError(t, err)
	in := "milk eggs bread\r\nSKU-1,milk,eggs\n huge a b c d e\nbread\n"
	r := NewLineReader(strings.NewReader(in), LineOptions{Vocab: voc, Grow: true, MaxSize: 3})
	got, lines := readAllLines(t, r)
	require.Equal(t, [][]int{{0, 2, 1}, {3, 0, 2}, {1}}, got)
	require.Equal(t, []int{1, 2, 4}, lines)
	// The skipped basket (6 tokens > MaxSize) added nothing.
	require.Equal(t, []string{"milk", "bread", "eggs", "SKU-1"}, voc.Tokens())
	require.Equal(t, Stats{Baskets: 3, Items: 7, Skipped: 1}, r.Stats())
	// Without Grow the same vocabulary reads known tokens; numbers are
	// tokens like any other, Base is ignored.
	voc2, err := ndpp.NewVocab([]string{"10", "20"})
	require.NoError(t, err)
	got2, err := readAll(NewLineReader(strings.NewReader("20 10 20\n"), LineOptions{Vocab: voc2, Base: 1}))
	require.NoError(t, err)
	require.Equal(t, [][]int{{1, 0}}, got2)
	// Many tokens take the map-based de-duplication path.
	var sb strings.Builder
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&sb, "t%d t%d ", i%40, i%40)
	}
	v3 := &ndpp.Vocab{}
	r3 := NewLineReader(strings.NewReader(sb.String()), LineOptions{Vocab: v3, Grow: true})
	b3, err := r3.Next()
	require.NoError(t, err)
	want := make([]int, 40)
	for i := range want {
		want[i] = i
	}
	require.Equal(t, want, b3, "long vocabulary basket")
	require.Equal(t, 40, v3.Len())
	require.Equal(t, 160, r3.Stats().Duplicates)
}

func TestLineReaderManyDuplicatesInts(t *testing.T) {
	var sb strings.Builder
	var all []int
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&sb, "%d,", (i*7)%50)
		all = append(all, (i*7)%50)
	}
	r := NewLineReader(strings.NewReader(sb.String()), LineOptions{})
	b, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, refDedup(all), b)
	require.Equal(t, 150, r.Stats().Duplicates)
}

func refDedup(x []int) []int {
	seen := map[int]bool{}
	var out []int
	for _, v := range x {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

func writeGzip(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	zw := gzip.NewWriter(f)
	_, err = zw.Write(data)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
}

func TestOpenGzipAndErrors(t *testing.T) {
	dir := t.TempDir()
	gz := filepath.Join(dir, "apparel.txt.gz")
	writeGzip(t, gz, readTestFile(t, apparelFile))
	want, err := ReadFile(apparelFile, LineOptions{Base: 1, N: 100})
	require.NoError(t, err)
	got, err := ReadFile(gz, LineOptions{Base: 1, N: 100})
	require.NoError(t, err)
	require.Equal(t, want, got, "the gzip file reads differently from the plain file")
	// Truncated gzip: an error naming the file, never a silent short read.
	cut := filepath.Join(dir, "cut.gz")
	full := readTestFile(t, gz)
	require.NoError(t, os.WriteFile(cut, full[:len(full)/2], 0o644))
	_, err = ReadFile(cut, LineOptions{Base: 1})
	require.ErrorContains(t, err, cut)
	// A gzip header alone, broken.
	bad := filepath.Join(dir, "bad.gz")
	require.NoError(t, os.WriteFile(bad, []byte{0x1f, 0x8b, 0, 0}, 0o644))
	_, err = ReadFile(bad, LineOptions{})
	require.ErrorContains(t, err, bad)
	// Missing file, directory, bad options.
	for _, p := range []string{filepath.Join(dir, "missing.txt"), dir} {
		_, err := Open(p, LineOptions{})
		require.ErrorContains(t, err, p)
	}
	_, err = Open(apparelFile, LineOptions{Base: 5})
	require.ErrorContains(t, err, apparelFile)
	// A one-byte file and an empty file are fine.
	for _, c := range []struct {
		in   string
		want [][]int
	}{{"", nil}, {"3", [][]int{{3}}}} {
		p := filepath.Join(dir, "tiny.txt")
		require.NoError(t, os.WriteFile(p, []byte(c.in), 0o644))
		b, err := ReadFile(p, LineOptions{})
		require.NoError(t, err, "file %q", c.in)
		require.Equal(t, c.want, b, "file %q", c.in)
	}
}

func TestReaderCloseAndNames(t *testing.T) {
	r, err := Open(badFile, LineOptions{})
	require.NoError(t, err)
	b, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, []int{1, 2, 3}, b)
	require.NoError(t, r.Close())
	_, err = r.Next()
	require.ErrorContains(t, err, "closed", "Next after Close")
	// An *os.File passed to NewLineReader lends its name to errors.
	f, err := os.Open(badFile)
	require.NoError(t, err)
	defer f.Close()
	r2 := NewLineReader(f, LineOptions{})
	got, err := readAll(r2)
	require.EqualError(t, err, `baskets: `+badFile+`:5: bad item token "x9": not an integer`)
	require.Equal(t, [][]int{{1, 2, 3}, {4, 5, 6}, {7, 8}}, got, "readAll: the baskets before the error")
	require.Equal(t, Stats{Baskets: 3, Items: 8, Empty: 1, Duplicates: 1}, r2.Stats(), "stats before the error")
	require.Equal(t, 4, r2.Line(), "the line of the last basket returned")
	require.NoError(t, r2.Close(), "Close of a NewLineReader")
	all, err := ReadFile(badFile, LineOptions{})
	require.ErrorContains(t, err, `bad item token "x9"`)
	require.Nil(t, all, "ReadFile returns no baskets with an error")
}

// refParseFile is an independent reading of the Amazon registry format
// (README of the data set: strip '\r', split on the separator, subtract 1).
func refParseFile(t *testing.T, path string) [][]int {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out [][]int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		var b []int
		for _, tok := range strings.Split(line, " ") {
			v, err := strconv.Atoi(tok)
			require.NoError(t, err, "reference parse: %q", line)
			b = append(b, v-1)
		}
		out = append(out, b)
	}
	require.NoError(t, sc.Err())
	return out
}

func TestAmazonRegistryFiles(t *testing.T) {
	for _, tc := range []struct {
		path             string
		baskets, items   int
		minSize, maxSize int
		meanSizeX100     int // mean basket size × 100, rounded
		firstBasket      []int
	}{
		{apparelFile, 14970, 100, 1, 21, 233, []int{0}},
		{threeCatFile, 31218, 300, 2, 23, 349, nil},
	} {
		r, err := Open(tc.path, LineOptions{Base: 1, N: tc.items})
		require.NoError(t, err)
		got, _ := readAllLines(t, r)
		require.NoError(t, r.Close())
		require.Len(t, got, tc.baskets, tc.path)
		st := r.Stats()
		require.Equal(t, Stats{Baskets: tc.baskets, Items: st.Items}, st, tc.path)
		require.Equal(t, tc.baskets, r.Line(), tc.path)
		seen := make([]bool, tc.items)
		total, lo, hi := 0, 1<<30, 0
		for _, b := range got {
			total += len(b)
			lo, hi = min(lo, len(b)), max(hi, len(b))
			for _, x := range b {
				seen[x] = true // in range, or N would have failed
			}
		}
		require.NotContains(t, seen, false, "%s: an item never appears", tc.path)
		require.Equal(t, []int{tc.minSize, tc.maxSize, tc.meanSizeX100, total},
			[]int{lo, hi, (200*total/len(got) + 1) / 2, st.Items}, "%s: min, max, mean×100 of the sizes, items", tc.path)
		if tc.firstBasket != nil {
			require.Equal(t, tc.firstBasket, got[0], tc.path)
		}
		require.Equal(t, refParseFile(t, tc.path), got, "%s: differs from the reference parse", tc.path)
	}
	// The 3-category file's item blocks: 1-100 apparel, 101-200 diaper,
	// 201-300 feeding; the apparel file with N = 99 must fail, naming a line.
	_, err := ReadFile(apparelFile, LineOptions{Base: 1, N: 99})
	require.ErrorContains(t, err, `bad item token "100": row 99 out of range [0, 99)`)
	// Base 0 on a 1-based file reads rows 1..100; N = 100 rejects row 100.
	_, err = ReadFile(apparelFile, LineOptions{Base: 0, N: 100})
	require.ErrorContains(t, err, apparelFile+":")
}

func BenchmarkLineReader(b *testing.B) {
	data := readTestFile(b, threeCatFile)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewLineReader(strings.NewReader(string(data)), LineOptions{Base: 1, N: 300})
		for {
			if _, err := r.Next(); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				b.Fatal(err)
			}
		}
	}
}
