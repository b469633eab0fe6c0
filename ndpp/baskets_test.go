package ndpp

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
)

const (
	apparelFile  = "../testdata/1_100_100_100_apparel_regs.csv"
	threeCatFile = "../testdata/1_100_100_100_apparel-diaper-feeding_regs.csv"
)

func readAllLines(t *testing.T, r *BasketReader) ([][]int, []int) {
	t.Helper()
	var out [][]int
	var lines []int
	for {
		b, err := r.Next()
		if err == io.EOF {
			return out, lines
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
		lines = append(lines, r.Line())
	}
}

func TestLineReaderFormats(t *testing.T) {
	cases := []struct {
		name  string
		in    string
		opt   LineOptions
		want  string // fmt of [][]int
		lines string // fmt of the Line() values
		stats ReadStats
	}{
		{"spaces base 0", "0 1 2\n3\n", LineOptions{}, "[[0 1 2] [3]]", "[1 2]",
			ReadStats{Baskets: 2, Items: 4}},
		{"base 1", "1 2 3\n4\n", LineOptions{Base: 1}, "[[0 1 2] [3]]", "[1 2]",
			ReadStats{Baskets: 2, Items: 4}},
		{"mixed separators", "1, 2\t3 ,4\n5,,6\n\t 7 \t\n", LineOptions{}, "[[1 2 3 4] [5 6] [7]]", "[1 2 3]",
			ReadStats{Baskets: 3, Items: 7}},
		{"CRLF and blank lines", "1 2\r\n\r\n\n3\r\n , \t\r\n4", LineOptions{}, "[[1 2] [3] [4]]", "[1 4 6]",
			ReadStats{Baskets: 3, Items: 4, Empty: 3}},
		{"byte-order mark", "\ufeff1 2\n3\n", LineOptions{}, "[[1 2] [3]]", "[1 2]", ReadStats{Baskets: 2, Items: 3}},
		{"no final newline", "5 6", LineOptions{}, "[[5 6]]", "[1]", ReadStats{Baskets: 1, Items: 2}},
		{"empty input", "", LineOptions{}, "[]", "[]", ReadStats{}},
		{"duplicates keep first order", "3 1 3 2 1 3\n+4 04 4\n", LineOptions{}, "[[3 1 2] [4]]", "[1 2]",
			ReadStats{Baskets: 2, Items: 4, Duplicates: 5}},
		{"max size", "1 2 3\n1 2\n1 1 1 2\n4 5 6 7\n", LineOptions{MaxSize: 2}, "[[1 2] [1 2]]", "[2 3]",
			ReadStats{Baskets: 2, Items: 4, Skipped: 2, Duplicates: 2}},
		{"N bound ok", "0 9\n", LineOptions{N: 10}, "[[0 9]]", "[1]", ReadStats{Baskets: 1, Items: 2}},
	}
	for _, tc := range cases {
		r := NewLineReader(strings.NewReader(tc.in), tc.opt)
		got, lines := readAllLines(t, r)
		if got == nil {
			got = [][]int{}
		}
		if fmt.Sprint(got) != tc.want || fmt.Sprint(intsOrEmpty(lines)) != tc.lines {
			t.Errorf("%s: got %v lines %v, want %s lines %s", tc.name, got, lines, tc.want, tc.lines)
		}
		if r.Stats() != tc.stats {
			t.Errorf("%s: stats %+v, want %+v", tc.name, r.Stats(), tc.stats)
		}
		// EOF is sticky.
		if _, err := r.Next(); err != io.EOF {
			t.Errorf("%s: Next after EOF: %v", tc.name, err)
		}
	}
}

func intsOrEmpty(x []int) []int {
	if x == nil {
		return []int{}
	}
	return x
}

// Baskets are fresh slices: modifying one does not change later ones.
func TestLineReaderFreshSlices(t *testing.T) {
	r := NewLineReader(strings.NewReader("1 2 3\n4 5 6\n"), LineOptions{})
	a, _ := r.Next()
	a[0], a = 99, append(a, 100)
	b, _ := r.Next()
	if fmt.Sprint(b) != "[4 5 6]" {
		t.Errorf("second basket %v after modifying the first", b)
	}
}

// A line longer than the reader's buffer is read whole.
func TestLineReaderLongLine(t *testing.T) {
	var sb strings.Builder
	const k = 30000 // ~170 KB, several buffer fills
	for i := 0; i < k; i++ {
		fmt.Fprintf(&sb, "%d ", i)
	}
	in := "7\n" + sb.String() + "\r\n8"
	got, err := readAll(NewLineReader(strings.NewReader(in), LineOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || len(got[1]) != k || got[1][k-1] != k-1 || got[2][0] != 8 {
		t.Errorf("long line: %d baskets, middle of %d items", len(got), len(got[1]))
	}
}

func TestLineReaderErrors(t *testing.T) {
	voc, _ := NewVocab([]string{"a", "b"})
	cases := []struct {
		name string
		in   string
		opt  LineOptions
		want string
	}{
		{"junk", "1 2\n\n3 x 4\n", LineOptions{}, `ndpp: input:3: bad item token "x": not an integer`},
		{"byte-order mark inside", "\ufeff1\n\ufeff3\n", LineOptions{}, `ndpp: input:2: bad item token "\ufeff3": not an integer`},
		{"float", "1.5\n", LineOptions{}, `ndpp: input:1: bad item token "1.5": not an integer`},
		{"sign only", "1 -\n", LineOptions{}, `ndpp: input:1: bad item token "-": not an integer`},
		{"negative", "1 -3\n", LineOptions{}, `ndpp: input:1: bad item token "-3": row -3 is negative (ids are 0-based)`},
		{"zero base 1", "2\r\n1 0\r\n", LineOptions{Base: 1}, `ndpp: input:2: bad item token "0": row -1 is negative (ids are 1-based)`},
		{"out of range", "1 2\n3 101\n", LineOptions{Base: 1, N: 100}, `ndpp: input:2: bad item token "101": row 100 out of range [0, 100)`},
		{"out of range 0", "10\n", LineOptions{N: 10}, `ndpp: input:1: bad item token "10": row 10 out of range [0, 10)`},
		{"huge", "123456789012345678901234567890\n", LineOptions{}, `bad item token "123456789012345678901234567890": integer too large`},
		{"unicode junk", "1 ２\n", LineOptions{}, `bad item token "２": not an integer`},
		{"junk in skipped basket", "1 2 3 y\n", LineOptions{MaxSize: 2}, `ndpp: input:1: bad item token "y": not an integer`},
		{"vocab unknown", "a b\nb c\n", LineOptions{Vocab: voc}, `ndpp: input:2: bad item token "c": not in the vocabulary (2 tokens)`},
		{"vocab N", "a b\n", LineOptions{Vocab: voc, N: 1}, `ndpp: input:1: bad item token "b": row 1 out of range [0, 1)`},
		{"grow beyond N", "a b\nc\n", LineOptions{Vocab: voc.Clone(), Grow: true, N: 2}, `ndpp: input:2: bad item token "c": new token would be row 2; N = 2`},
		{"base 2", "1\n", LineOptions{Base: 2}, "LineOptions.Base = 2; want 0 or 1"},
		{"negative N", "1\n", LineOptions{N: -1}, "N = -1"},
		{"negative MaxSize", "1\n", LineOptions{MaxSize: -1}, "MaxSize = -1"},
		{"grow without vocab", "1\n", LineOptions{Grow: true}, "Grow needs a Vocab"},
	}
	for _, tc := range cases {
		r := NewLineReader(strings.NewReader(tc.in), tc.opt)
		_, err := readAll(r)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v; want %q", tc.name, err, tc.want)
			continue
		}
		// Errors are sticky.
		if _, err2 := r.Next(); err2 == nil || err2.Error() != err.Error() {
			t.Errorf("%s: Next after error: %v", tc.name, err2)
		}
	}
}

func TestLineReaderVocab(t *testing.T) {
	voc, _ := NewVocab([]string{"milk", "bread"})
	in := "milk eggs bread\r\nSKU-1,milk,eggs\n huge a b c d e\nbread\n"
	r := NewLineReader(strings.NewReader(in), LineOptions{Vocab: voc, Grow: true, MaxSize: 3})
	got, lines := readAllLines(t, r)
	if fmt.Sprint(got) != "[[0 2 1] [3 0 2] [1]]" || fmt.Sprint(lines) != "[1 2 4]" {
		t.Errorf("got %v at lines %v", got, lines)
	}
	// The skipped basket (6 tokens > MaxSize) added nothing.
	if fmt.Sprint(voc.Tokens()) != "[milk bread eggs SKU-1]" {
		t.Errorf("vocab %v", voc.Tokens())
	}
	if s := r.Stats(); s.Skipped != 1 || s.Baskets != 3 || s.Items != 7 {
		t.Errorf("stats %+v", s)
	}
	// Without Grow the same vocabulary reads known tokens; numbers are
	// tokens like any other, Base is ignored.
	voc2, _ := NewVocab([]string{"10", "20"})
	got2, err := readAll(NewLineReader(strings.NewReader("20 10 20\n"), LineOptions{Vocab: voc2, Base: 1}))
	if err != nil || fmt.Sprint(got2) != "[[1 0]]" {
		t.Errorf("numeric tokens with vocab: %v %v", got2, err)
	}
	// Many tokens take the map-based de-duplication path.
	var sb strings.Builder
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&sb, "t%d t%d ", i%40, i%40)
	}
	v3 := &Vocab{}
	r3 := NewLineReader(strings.NewReader(sb.String()), LineOptions{Vocab: v3, Grow: true})
	b3, err := r3.Next()
	if err != nil || len(b3) != 40 || v3.Len() != 40 || r3.Stats().Duplicates != 160 {
		t.Errorf("long vocab basket: %d items, vocab %d, %+v, %v", len(b3), v3.Len(), r3.Stats(), err)
	}
	for i, x := range b3 {
		if x != i {
			t.Fatalf("long vocab basket order: %v", b3)
		}
	}
}

func TestLineReaderManyDuplicatesInts(t *testing.T) {
	var sb strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&sb, "%d,", (i*7)%50)
	}
	r := NewLineReader(strings.NewReader(sb.String()), LineOptions{})
	b, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	want := refDedup(func() []int {
		var x []int
		for i := 0; i < 200; i++ {
			x = append(x, (i*7)%50)
		}
		return x
	}())
	if fmt.Sprint(b) != fmt.Sprint(want) || r.Stats().Duplicates != 150 {
		t.Errorf("got %v (%+v), want %v", b, r.Stats(), want)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenBasketsGzipAndErrors(t *testing.T) {
	dir := t.TempDir()
	plain := readTestFile(t, apparelFile)
	gz := filepath.Join(dir, "apparel.txt.gz")
	writeGzip(t, gz, plain)
	want, err := ReadBaskets(apparelFile, LineOptions{Base: 1, N: 100})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadBaskets(gz, LineOptions{Base: 1, N: 100})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Error("gzip file reads differently from the plain file")
	}
	// Truncated gzip: an error naming the file, never a silent short read.
	cut := filepath.Join(dir, "cut.gz")
	full := readTestFile(t, gz)
	if err := os.WriteFile(cut, full[:len(full)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadBaskets(cut, LineOptions{Base: 1}); err == nil || !strings.Contains(err.Error(), cut) {
		t.Errorf("truncated gzip: %v", err)
	}
	// A gzip header alone, broken.
	bad := filepath.Join(dir, "bad.gz")
	if err := os.WriteFile(bad, []byte{0x1f, 0x8b, 0, 0}, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadBaskets(bad, LineOptions{}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("bad gzip: %v", err)
	}
	// Missing file, directory, bad options.
	for _, p := range []string{filepath.Join(dir, "missing.txt"), dir} {
		if _, err := OpenBaskets(p, LineOptions{}); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("OpenBaskets(%s): %v", p, err)
		}
	}
	if _, err := OpenBaskets(apparelFile, LineOptions{Base: 5}); err == nil || !strings.Contains(err.Error(), apparelFile) {
		t.Errorf("bad Base: %v", err)
	}
	// A one-byte file and an empty file are fine.
	for _, c := range []string{"", "3"} {
		p := filepath.Join(dir, "tiny.txt")
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := ReadBaskets(p, LineOptions{})
		if err != nil || len(b) != len(c) {
			t.Errorf("file %q: %v %v", c, b, err)
		}
	}
}

func TestBasketReaderCloseAndNames(t *testing.T) {
	r, err := OpenBaskets("../testdata/baskets-bad.txt", LineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Next()
	if err != nil || fmt.Sprint(b) != "[1 2 3]" {
		t.Fatalf("%v %v", b, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Next after Close: %v", err)
	}
	// An *os.File passed to NewLineReader lends its name to errors.
	f, err := os.Open("../testdata/baskets-bad.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r2 := NewLineReader(f, LineOptions{})
	got, err := readAll(r2)
	want := `ndpp: ../testdata/baskets-bad.txt:5: bad item token "x9": not an integer`
	if err == nil || err.Error() != want {
		t.Errorf("error %v; want %s", err, want)
	}
	if got != nil {
		t.Errorf("readAll returned baskets with an error: %v", got)
	}
	if s := r2.Stats(); s.Baskets != 3 || s.Empty != 1 || s.Duplicates != 1 {
		t.Errorf("stats before the error: %+v", s)
	}
	if r2.Line() != 4 {
		t.Errorf("Line() = %d, want 4 (the last basket returned)", r2.Line())
	}
	if err := r2.Close(); err != nil {
		t.Errorf("Close of a NewLineReader: %v", err)
	}
}

// refParseFile is an independent reading of the Amazon registry format
// (README of the data set: strip '\r', split on the separator, subtract 1).
func refParseFile(t *testing.T, path string) [][]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		var b []int
		for _, tok := range strings.Split(line, " ") {
			v, err := strconv.Atoi(tok)
			if err != nil {
				t.Fatalf("reference parse: %q", line)
			}
			b = append(b, v-1)
		}
		out = append(out, b)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAmazonRegistryFiles(t *testing.T) {
	for _, tc := range []struct {
		path                 string
		baskets, items       int
		minSize, maxSize     int
		meanSizeX100         int // mean basket size × 100, rounded
		firstBasket, lastRow string
	}{
		{apparelFile, 14970, 100, 1, 21, 233, "[0]", ""},
		{threeCatFile, 31218, 300, 2, 23, 349, "", ""},
	} {
		r, err := OpenBaskets(tc.path, LineOptions{Base: 1, N: tc.items})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := readAllLines(t, r)
		r.Close()
		if len(got) != tc.baskets {
			t.Errorf("%s: %d baskets, want %d", tc.path, len(got), tc.baskets)
		}
		st := r.Stats()
		if st.Baskets != tc.baskets || st.Skipped != 0 || st.Empty != 0 || st.Duplicates != 0 || r.Line() != tc.baskets {
			t.Errorf("%s: stats %+v, last line %d", tc.path, st, r.Line())
		}
		seen := make([]bool, tc.items)
		total, lo, hi := 0, 1<<30, 0
		for _, b := range got {
			total += len(b)
			lo, hi = min(lo, len(b)), max(hi, len(b))
			for _, x := range b {
				seen[x] = true // in range, or N would have failed
			}
		}
		for i, s := range seen {
			if !s {
				t.Errorf("%s: item %d never appears", tc.path, i)
			}
		}
		if lo != tc.minSize || hi != tc.maxSize || (200*total/len(got)+1)/2 != tc.meanSizeX100 || st.Items != total {
			t.Errorf("%s: sizes %d..%d, mean×100 %d, items %d", tc.path, lo, hi, (200*total/len(got)+1)/2, st.Items)
		}
		if tc.firstBasket != "" && fmt.Sprint(got[0]) != tc.firstBasket {
			t.Errorf("%s: first basket %v", tc.path, got[0])
		}
		if ref := refParseFile(t, tc.path); fmt.Sprint(ref) != fmt.Sprint(got) {
			t.Errorf("%s: differs from the reference parse", tc.path)
		}
	}
	// The 3-category file's item blocks: 1-100 apparel, 101-200 diaper,
	// 201-300 feeding; the apparel file with N = 99 must fail, naming a line.
	if _, err := ReadBaskets(apparelFile, LineOptions{Base: 1, N: 99}); err == nil || !strings.Contains(err.Error(), `bad item token "100": row 99 out of range [0, 99)`) {
		t.Errorf("N too small: %v", err)
	}
	// Base 0 on a 1-based file reads rows 1..100; N = 100 rejects row 100.
	_, err := ReadBaskets(apparelFile, LineOptions{Base: 0, N: 100})
	if err == nil || !strings.Contains(err.Error(), apparelFile+":") {
		t.Errorf("base 0 with N = 100: %v", err)
	}
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

func readTestFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
