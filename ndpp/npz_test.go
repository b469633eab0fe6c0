package ndpp

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var updateFixtures = flag.Bool("update-fixtures", false, "rewrite ../testdata/small-model.npz")

const smallModelFixture = "../testdata/small-model.npz"

// smallModel is the model stored in testdata/small-model.npz.
func smallModel() *Model { return Random(60, 4, 1, RandomOptions{}) }

// sameModel fails unless a and b have bit-identical parameters, the same
// sharing, ids and vocabulary.
func sameModel(t *testing.T, what string, got, want *Model) {
	t.Helper()
	if got.N() != want.N() || got.D() != want.D() {
		t.Fatalf("%s: got %d×%d, want %d×%d", what, got.N(), got.D(), want.N(), want.D())
	}
	if got.Shared() != want.Shared() {
		t.Errorf("%s: Shared() = %v, want %v", what, got.Shared(), want.Shared())
	}
	gv, gb, gbc, gc := got.Rows()
	wv, wb, wbc, wc := want.Rows()
	for _, p := range []struct {
		name string
		g, w []float64
	}{{"V", gv, wv}, {"B", gb, wb}, {"BC", gbc, wbc}, {"C", gc, wc}} {
		if !bitsEqual(p.g, p.w) {
			t.Errorf("%s: %s differs", what, p.name)
		}
	}
	gi, wi := got.IDs(), want.IDs()
	if (gi == nil) != (wi == nil) || fmt.Sprint(gi) != fmt.Sprint(wi) {
		t.Errorf("%s: ids %v, want %v", what, gi, wi)
	}
	gw, ww := got.Vocab(), want.Vocab()
	if (gw == nil) != (ww == nil) {
		t.Errorf("%s: vocab presence %v, want %v", what, gw != nil, ww != nil)
	} else if gw != nil && strings.Join(gw.Tokens(), "\x00") != strings.Join(ww.Tokens(), "\x00") {
		t.Errorf("%s: vocab %q, want %q", what, gw.Tokens(), ww.Tokens())
	}
}

func encodeNPZ(t testing.TB, m *Model) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteNPZ(&buf, m); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func decodeNPZBytes(data []byte) (*Model, error) {
	return ReadNPZ(bytes.NewReader(data), int64(len(data)))
}

func roundTripModels(t *testing.T) map[string]*Model {
	t.Helper()
	withMeta := func(m *Model) *Model {
		ids := make([]int64, m.N())
		tokens := make([]string, m.N())
		for i := range ids {
			ids[i] = int64(1000 - 7*i)
			tokens[i] = fmt.Sprintf("SKU-%03d é,\t\"x\"", i)
		}
		if m.N() > 2 {
			tokens[2] = "" // an empty token survives the '\n' join
		}
		voc, err := NewVocab(tokens)
		if err != nil {
			t.Fatal(err)
		}
		out, err := NewFromRows(m.N(), m.D(), m.v, unsharedRows(m), m.c, WithIDs(ids), WithVocab(voc))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	ms := map[string]*Model{
		"n=1/d=1":          Random(1, 1, 3, RandomOptions{}),
		"n=7/d=3/shared":   Random(7, 3, 4, RandomOptions{Shared: true}),
		"n=50/d=8":         Random(50, 8, 5, RandomOptions{}),
		"n=40/d=5/block":   Random(40, 5, 6, RandomOptions{BlockDiagonal: true}),
		"n=30/d=4/meta":    withMeta(Random(30, 4, 7, RandomOptions{})),
		"n=1/d=2/meta":     withMeta(Random(1, 2, 8, RandomOptions{})),
		"n=9/d=3/huge-val": Random(9, 3, 9, RandomOptions{Scale: 1e300, CScale: 1e-300}),
	}
	// Extreme float64 values: denormals, negative zero, the largest finite.
	v := []float64{math.SmallestNonzeroFloat64, -0.0, math.MaxFloat64, -math.MaxFloat64, 1, 2}
	c := []float64{0, 5e-324, -5e-324, 0}
	m, err := NewFromRows(3, 2, v, []float64{1, 2, 3, 4, 5, 6}, c)
	if err != nil {
		t.Fatal(err)
	}
	ms["n=3/d=2/extremes"] = m
	return ms
}

func unsharedRows(m *Model) []float64 {
	if m.Shared() {
		return nil
	}
	return m.b
}

func TestNPZRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for name, m := range roundTripModels(t) {
		got, err := decodeNPZBytes(encodeNPZ(t, m))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sameModel(t, name+" (bytes)", got, m)

		path := filepath.Join(dir, strings.ReplaceAll(name, "/", "_")+".npz")
		if err := Save(path, m); err != nil {
			t.Fatal(err)
		}
		got, err = Load(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sameModel(t, name+" (file)", got, m)
	}
}

func TestNPZSharedRule(t *testing.T) {
	m := Random(10, 3, 11, RandomOptions{})
	// A file without B loads as the shared model.
	v, _, _, c := m.Rows()
	data := makeZip(t, []zipEntry{
		{"V.npy", npyF64(t, []int{10, 3}, v)},
		{"C.npy", npyF64(t, []int{3, 3}, c)},
	})
	got, err := decodeNPZBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Shared() {
		t.Error("file without B: want a shared model")
	}
	want, _ := NewFromRows(10, 3, v, nil, c)
	sameModel(t, "no B", got, want)
	// B bit-identical to V: shared. One bit off: not shared.
	b := append([]float64(nil), v...)
	data = makeZip(t, []zipEntry{
		{"V.npy", npyF64(t, []int{10, 3}, v)},
		{"B.npy", npyF64(t, []int{10, 3}, b)},
		{"C.npy", npyF64(t, []int{3, 3}, c)},
	})
	if got, err = decodeNPZBytes(data); err != nil || !got.Shared() {
		t.Fatalf("B == V: shared = %v, err = %v; want shared", got != nil && got.Shared(), err)
	}
	b[17] = math.Nextafter(b[17], 2)
	data = makeZip(t, []zipEntry{
		{"V.npy", npyF64(t, []int{10, 3}, v)},
		{"B.npy", npyF64(t, []int{10, 3}, b)},
		{"C.npy", npyF64(t, []int{3, 3}, c)},
	})
	if got, err = decodeNPZBytes(data); err != nil || got.Shared() {
		t.Fatalf("B one ulp from V: shared = %v, err = %v; want unshared", got != nil && got.Shared(), err)
	}
}

// numpyFixture recomputes the values documented in testdata/gen/numpy_savez.py.
func numpyFixture() (v, b, c []float64) {
	const n, d = 12, 3
	for i := 0; i < n; i++ {
		for k := 0; k < d; k++ {
			v = append(v, (float64(i)-5.5)/4+float64(k)/8)
			b = append(b, float64((7*i+3*k)%11-5)/16)
		}
	}
	c = []float64{0, 0.5, -0.25, -0.5, 0, 1.5, 0.25, -1.5, 0}
	return v, b, c
}

func TestNumpySavezFile(t *testing.T) {
	m, err := Load("../testdata/numpy-model.npz")
	if err != nil {
		t.Fatal(err)
	}
	v, b, c := numpyFixture()
	want, err := NewFromRows(12, 3, v, b, c)
	if err != nil {
		t.Fatal(err)
	}
	sameModel(t, "numpy-model.npz", m, want)
	// Spot values, written out, so that a wrong formula on both sides
	// cannot hide a layout error.
	for _, x := range []struct {
		got, want float64
	}{
		{m.ItemV(0)[0], -1.375}, {m.ItemV(0)[2], -1.125}, {m.ItemV(11)[1], 1.5},
		{m.ItemB(1)[0], 2.0 / 16}, {m.ItemB(2)[2], 4.0 / 16}, {m.C().At(1, 2), 1.5},
	} {
		if x.got != x.want {
			t.Errorf("got %v, want %v", x.got, x.want)
		}
	}
	if e, want := m.Entry(0, 1), plainDot(m.ItemV(0), m.ItemV(1))+bilinearBCB(m, 0, 1); e != want {
		t.Errorf("Entry(0,1) = %v, want %v", e, want)
	}
}

func plainDot(x, y []float64) float64 {
	s := 0.0
	for i := range x {
		s += x[i] * y[i]
	}
	return s
}

func bilinearBCB(m *Model, i, j int) float64 {
	c := m.C()
	s := 0.0
	for k := 0; k < m.D(); k++ {
		for l := 0; l < m.D(); l++ {
			s += m.ItemB(i)[k] * c.At(k, l) * m.ItemB(j)[l]
		}
	}
	return s
}

func TestSmallModelFixture(t *testing.T) {
	if *updateFixtures {
		if err := Save(smallModelFixture, smallModel()); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Load(smallModelFixture)
	if err != nil {
		t.Fatal(err)
	}
	sameModel(t, "small-model.npz", m, smallModel())
}

// Variants that numpy and PyTorch code produce: float32, Fortran order, big
// endian, NPY 2.0 headers, deflated entries (numpy.savez_compressed), entry
// names without ".npy", extra arrays.
func TestNPZVariants(t *testing.T) {
	const n, d = 5, 3
	m := Random(n, d, 21, RandomOptions{})
	v, b, _, c := m.Rows()
	f32 := func(x []float64) []float64 {
		out := make([]float64, len(x))
		for i, f := range x {
			out[i] = float64(float32(f))
		}
		return out
	}
	want32, err := NewFromRows(n, d, f32(v), f32(b), f32(c))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		entries []zipEntry
		want    *Model
		method  uint16
	}{
		{"float32", []zipEntry{
			{"V.npy", npyRaw(1, "<f4", false, []int{n, d}, le32(v))},
			{"B.npy", npyRaw(1, "<f4", false, []int{n, d}, le32(b))},
			{"C.npy", npyRaw(1, "<f4", false, []int{d, d}, le32(c))},
		}, want32, zip.Store},
		{"fortran", []zipEntry{
			{"V.npy", npyRaw(1, "<f8", true, []int{n, d}, le64(fortranOrder(v, n, d)))},
			{"B.npy", npyRaw(1, "<f8", true, []int{n, d}, le64(fortranOrder(b, n, d)))},
			{"C.npy", npyRaw(1, "<f8", true, []int{d, d}, le64(fortranOrder(c, d, d)))},
		}, m, zip.Store},
		{"fortran-float32-bigendian", []zipEntry{
			{"V.npy", npyRaw(1, ">f4", true, []int{n, d}, be32(fortranOrder(v, n, d)))},
			{"B.npy", npyRaw(1, ">f8", false, []int{n, d}, be64(b))},
			{"C.npy", npyRaw(1, ">f4", false, []int{d, d}, be32(c))},
		}, mustModelRows(t, n, d, f32(v), b, f32(c)), zip.Store},
		{"npy-v2-and-v3", []zipEntry{
			{"V.npy", npyRaw(2, "<f8", false, []int{n, d}, le64(v))},
			{"B.npy", npyRaw(3, "<f8", false, []int{n, d}, le64(b))},
			{"C.npy", npyRaw(2, "<f8", false, []int{d, d}, le64(c))},
		}, m, zip.Store},
		{"deflate", []zipEntry{
			{"V.npy", npyRaw(1, "<f8", false, []int{n, d}, le64(v))},
			{"B.npy", npyRaw(1, "<f8", false, []int{n, d}, le64(b))},
			{"C.npy", npyRaw(1, "<f8", false, []int{d, d}, le64(c))},
		}, m, zip.Deflate},
		{"names-without-suffix-and-extras", []zipEntry{
			{"alpha.npy", npyRaw(1, "<f8", false, []int{}, le64([]float64{0.5}))},
			{"C", npyRaw(1, "<f8", false, []int{d, d}, le64(c))},
			{"B", npyRaw(1, "<f8", false, []int{n, d}, le64(b))},
			{"V", npyRaw(1, "<f8", false, []int{n, d}, le64(v))},
			{"junk.txt", []byte("not an array")},
		}, m, zip.Store},
	}
	for _, tc := range cases {
		got, err := decodeNPZBytes(makeZipMethod(t, tc.entries, tc.method))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		sameModel(t, tc.name, got, tc.want)
	}

	// ids of any integer width, vocab as uint8.
	for _, descr := range []string{"<i8", "<i4", "<u2", "|i1", ">i8", "<u8"} {
		ids := []int64{3, 1, 4, 15, 9}
		var raw []byte
		size := int(descr[2] - '0')
		order := binary.ByteOrder(binary.LittleEndian)
		if descr[0] == '>' {
			order = binary.BigEndian
		}
		for _, id := range ids {
			buf := make([]byte, 8)
			order.PutUint64(buf, uint64(id))
			if order == binary.BigEndian {
				raw = append(raw, buf[8-size:]...)
			} else {
				raw = append(raw, buf[:size]...)
			}
		}
		got, err := decodeNPZBytes(makeZip(t, []zipEntry{
			{"V.npy", npyRaw(1, "<f8", false, []int{n, d}, le64(v))},
			{"C.npy", npyRaw(1, "<f8", false, []int{d, d}, le64(c))},
			{"ids.npy", npyRaw(1, descr, false, []int{n}, raw)},
			{"vocab.npy", npyRaw(1, "|u1", false, []int{9}, []byte("a\nb\nc\nd\ne"))},
		}))
		if err != nil {
			t.Errorf("ids %s: %v", descr, err)
			continue
		}
		if fmt.Sprint(got.IDs()) != fmt.Sprint(ids) {
			t.Errorf("ids %s: got %v, want %v", descr, got.IDs(), ids)
		}
		if got.Vocab() == nil || strings.Join(got.Vocab().Tokens(), ",") != "a,b,c,d,e" {
			t.Errorf("vocab: got %v", got.Vocab())
		}
	}
	// Negative ids from a signed narrow type are sign-extended.
	got, err := decodeNPZBytes(makeZip(t, []zipEntry{
		{"V.npy", npyRaw(1, "<f8", false, []int{2, 1}, le64([]float64{1, 2}))},
		{"C.npy", npyRaw(1, "<f8", false, []int{1, 1}, le64([]float64{0}))},
		{"ids.npy", npyRaw(1, "<i2", false, []int{2}, []byte{0xff, 0xff, 0x02, 0x80})},
	}))
	if err != nil || fmt.Sprint(got.IDs()) != "[-1 -32766]" {
		t.Errorf("int16 ids: %v, %v; want [-1 -32766]", got, err)
	}
}

func mustModelRows(t *testing.T, n, d int, v, b, c []float64) *Model {
	t.Helper()
	m, err := NewFromRows(n, d, v, b, c)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestNPZBadInputs(t *testing.T) {
	const n, d = 3, 4
	m := Random(n, d, 31, RandomOptions{})
	v, b, _, c := m.Rows()
	V := func() zipEntry { return zipEntry{"V.npy", npyRaw(1, "<f8", false, []int{n, d}, le64(v))} }
	B := func() zipEntry { return zipEntry{"B.npy", npyRaw(1, "<f8", false, []int{n, d}, le64(b))} }
	C := func() zipEntry { return zipEntry{"C.npy", npyRaw(1, "<f8", false, []int{d, d}, le64(c))} }
	with := func(name string, shape []int, descr string, data []byte) zipEntry {
		return zipEntry{name + ".npy", npyRaw(1, descr, false, shape, data)}
	}
	nanV := append([]float64(nil), v...)
	nanV[5] = math.NaN()
	infB := append([]float64(nil), b...)
	infB[11] = math.Inf(-1)
	nonSkew := append([]float64(nil), c...)
	nonSkew[1] += 1e-3
	hdr := func(h string) []byte { // an NPY stream with a hand-written header
		p := append([]byte("\x93NUMPY\x01\x00"), byte(len(h)+1), byte((len(h)+1)>>8))
		return append(append(p, h...), '\n')
	}
	cases := []struct {
		name    string
		entries []zipEntry
		want    string
	}{
		{"missing V", []zipEntry{B(), C()}, "missing array V (model arrays present: B, C"},
		{"missing C", []zipEntry{V(), B()}, "missing array C"},
		{"empty archive", nil, "missing array V (model arrays present: none"},
		{"V int", []zipEntry{with("V", []int{n, d}, "<i8", make([]byte, 8*n*d)), C()}, "V: dtype <i8 is not a float array"},
		{"V complex", []zipEntry{with("V", []int{n, d}, "<c16", make([]byte, 16*n*d)), C()}, `unsupported dtype "<c16"`},
		{"V float16", []zipEntry{with("V", []int{n, d}, "<f2", make([]byte, 2*n*d)), C()}, `unsupported dtype "<f2"`},
		{"V 1-D", []zipEntry{with("V", []int{n * d}, "<f8", le64(v)), C()}, "V has shape (12,); want 2-D (n, d)"},
		{"V 3-D", []zipEntry{with("V", []int{1, n, d}, "<f8", le64(v)), C()}, "V has shape (1, 3, 4)"},
		{"V empty", []zipEntry{with("V", []int{0, d}, "<f8", nil), C()}, "V is 0×4; need n ≥ 1"},
		{"B shape", []zipEntry{V(), with("B", []int{3, 5}, "<f8", make([]byte, 8*15)), C()}, "V is 3×4 but B is 3×5"},
		{"B 1-D", []zipEntry{V(), with("B", []int{12}, "<f8", le64(b)), C()}, "V is 3×4 but B is of shape (12,)"},
		{"B dtype", []zipEntry{V(), with("B", []int{n, d}, "<i8", make([]byte, 8*n*d)), C()}, "B: dtype <i8 is not a float array"},
		{"C shape", []zipEntry{V(), B(), with("C", []int{3, 3}, "<f8", make([]byte, 72))}, "C is 3×3 but V is 3×4; want C 4×4"},
		{"C non-skew", []zipEntry{V(), B(), with("C", []int{d, d}, "<f8", le64(nonSkew))}, "C is not skew-symmetric"},
		{"V NaN", []zipEntry{with("V", []int{n, d}, "<f8", le64(nanV)), B(), C()}, "V has a non-finite value NaN at row 1, column 1"},
		{"B Inf", []zipEntry{V(), with("B", []int{n, d}, "<f8", le64(infB)), C()}, "B has a non-finite value -Inf at row 2, column 3"},
		{"ids length", []zipEntry{V(), C(), with("ids", []int{2}, "<i8", make([]byte, 16))}, "ids has shape (2,) for 3 items"},
		{"ids float", []zipEntry{V(), C(), with("ids", []int{3}, "<f8", make([]byte, 24))}, "ids: dtype <f8 is not an integer array"},
		{"ids dup", []zipEntry{V(), C(), with("ids", []int{3}, "<i8", append(append(le64i(7), le64i(8)...), le64i(7)...))}, "duplicate id 7 at rows 0 and 2"},
		{"ids uint64 overflow", []zipEntry{V(), C(), with("ids", []int{3}, "<u8", bytes.Repeat([]byte{0xff}, 24))}, "does not fit in int64"},
		{"vocab count", []zipEntry{V(), C(), with("vocab", []int{3}, "|u1", []byte("a\nb"))}, "vocab has 2 tokens for 3 items"},
		{"vocab dup", []zipEntry{V(), C(), with("vocab", []int{5}, "|u1", []byte("a\nb\na"))}, `duplicate vocabulary token "a"`},
		{"vocab dtype", []zipEntry{V(), C(), with("vocab", []int{3}, "<U1", make([]byte, 12))}, `unsupported dtype "<U1"`},
		{"vocab 2-D", []zipEntry{V(), C(), with("vocab", []int{1, 3}, "|u1", []byte("a\nb"))}, "vocab has shape (1, 3)"},
		{"duplicate entry", []zipEntry{V(), V(), C()}, "array V appears twice"},
		{"bad magic", []zipEntry{{"V.npy", []byte("PK not numpy at all")}, C()}, "array V: not an NPY array (bad magic bytes)"},
		{"short header", []zipEntry{{"V.npy", []byte("\x93NU")}, C()}, "array V: truncated NPY header"},
		{"version", []zipEntry{{"V.npy", []byte("\x93NUMPY\x09\x00\x10\x00{}")}, C()}, "unsupported NPY format version 9.0"},
		{"header length beyond entry", []zipEntry{{"V.npy", []byte("\x93NUMPY\x01\x00\xff\x00{}")}, C()}, "truncated NPY header: 265 bytes declared, entry has 12"},
		{"header not a dict", []zipEntry{{"V.npy", hdr("['<f8']")}, C()}, "bad NPY header: header is not a dict"},
		{"header no newline garbage", []zipEntry{{"V.npy", hdr("{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), } x")}, C()}, "text after the header dict"},
		{"header missing key", []zipEntry{{"V.npy", hdr("{'descr': '<f8', 'shape': (3, 4)}")}, C()}, "lacks one of"},
		{"header extra key", []zipEntry{{"V.npy", hdr("{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), 'x': 1}")}, C()}, `unexpected key "x"`},
		{"header repeated key", []zipEntry{{"V.npy", hdr("{'descr': '<f8', 'descr': '<f8'}")}, C()}, `key "descr" repeated`},
		{"header structured", []zipEntry{{"V.npy", hdr("{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (3,)}")}, C()}, "structured dtypes are not supported"},
		{"header fortran", []zipEntry{{"V.npy", hdr("{'descr': '<f8', 'fortran_order': 0, 'shape': (3, 4)}")}, C()}, "fortran_order must be True or False"},
		{"header shape", []zipEntry{{"V.npy", hdr("{'descr': '<f8', 'fortran_order': False, 'shape': (3, -4)}")}, C()}, "shape: expected a non-negative integer"},
		{"header huge shape", []zipEntry{{"V.npy", hdr("{'descr': '<f8', 'fortran_order': False, 'shape': (999999999999999, 999999999999999)}")}, C()}, "is too large"},
		{"header unterminated", []zipEntry{{"V.npy", hdr("{'descr: <f8}")}, C()}, "unterminated string"},
		{"data truncated", []zipEntry{{"V.npy", npyRaw(1, "<f8", false, []int{n, d}, le64(v[:7]))}, C()}, "array V: truncated data: shape (3, 4) of <f8 needs 96 bytes, entry has 56"},
		{"data trailing", []zipEntry{{"V.npy", npyRaw(1, "<f8", false, []int{n, d}, le64(append(v, 1)))}, C()}, "unexpected bytes after the 96 data bytes"},
	}
	dir := t.TempDir()
	for _, tc := range cases {
		data := makeZip(t, tc.entries)
		_, err := decodeNPZBytes(data)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "ndpp: npz: ") {
			t.Errorf("%s: error %v; want one starting \"ndpp: npz: \" containing %q", tc.name, err, tc.want)
		}
		path := filepath.Join(dir, "bad model.npz")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err = Load(path)
		if err == nil || !strings.HasPrefix(err.Error(), "ndpp: "+path+": ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Load error %v; want it to name %s", tc.name, err, path)
		}
		if strings.Count(fmt.Sprint(err), "ndpp:") != 1 {
			t.Errorf("%s: repeated prefix in %v", tc.name, err)
		}
	}
	for _, p := range []string{filepath.Join(dir, "missing.npz"), dir} {
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("Load(%s): %v; want an error naming it", p, err)
		}
	}
	if _, err := decodeNPZBytes([]byte("hello, not a zip")); err == nil || !strings.Contains(err.Error(), "not a valid .npz (zip) archive") {
		t.Errorf("not a zip: %v", err)
	}
}

// Every truncation of a valid file is an error; no byte flip panics, and a
// flip that goes unnoticed (zip metadata such as timestamps) leaves the
// parameters intact.
func TestNPZTruncatedAndCorrupt(t *testing.T) {
	ids := []int64{5, 6, 7, 8, 9, 10}
	voc, _ := NewVocab([]string{"a", "b", "c", "d", "e", "f"})
	m0 := Random(6, 3, 41, RandomOptions{})
	m, err := NewFromRows(6, 3, m0.v, m0.b, m0.c, WithIDs(ids), WithVocab(voc))
	if err != nil {
		t.Fatal(err)
	}
	for _, data := range [][]byte{encodeNPZ(t, m), readTestFile(t, "../testdata/numpy-model.npz")} {
		want, err := decodeNPZBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < len(data); k++ {
			if _, err := decodeNPZBytes(data[:k]); err == nil {
				t.Fatalf("file cut at %d of %d bytes loaded without error", k, len(data))
			}
		}
		for k := 0; k < len(data); k++ {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				bad := append([]byte(nil), data...)
				bad[k] ^= x
				got, err := decodeNPZBytes(bad)
				if err != nil {
					continue
				}
				wv, _, _, wc := want.Rows()
				gv, _, _, gc := got.Rows()
				if !bitsEqual(gv, wv) || !bitsEqual(gc, wc) || (!got.Shared() && !bitsEqual(got.b, want.b)) {
					t.Fatalf("flip 0x%02x at byte %d changed the parameters without an error", x, k)
				}
			}
		}
	}
	// A truncated .npy inside a well-formed zip.
	v, _, _, c := m.Rows()
	full := npyRaw(1, "<f8", false, []int{6, 3}, le64(v))
	for _, cut := range []int{0, 5, 9, 60, len(full) - 8, len(full) - 1} {
		_, err := decodeNPZBytes(makeZip(t, []zipEntry{{"V.npy", full[:cut]}, {"C.npy", npyRaw(1, "<f8", false, []int{3, 3}, le64(c))}}))
		if err == nil || !strings.Contains(err.Error(), "truncated") {
			t.Errorf("V.npy cut at %d: %v; want a truncation error", cut, err)
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

func TestNPZWriteErrors(t *testing.T) {
	voc, _ := NewVocab([]string{"a", "b\nc"})
	m, err := NewFromRows(2, 1, []float64{1, 2}, nil, []float64{0}, WithVocab(voc))
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteNPZ(io.Discard, m); err == nil || !strings.Contains(err.Error(), "contains a newline") {
		t.Errorf("newline token: %v", err)
	}
	path := filepath.Join(t.TempDir(), "m.npz")
	if err := Save(path, m); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Save newline token: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("failed Save left a file: %v", err)
	}
	if err := WriteNPZ(io.Discard, nil); err == nil {
		t.Error("WriteNPZ(nil) succeeded")
	}
	if err := Save(path, nil); err == nil {
		t.Error("Save(nil) succeeded")
	}
	wErr := errors.New("disk full")
	if err := WriteNPZ(npzFailWriter{wErr}, Random(3, 2, 1, RandomOptions{})); !errors.Is(err, wErr) {
		t.Errorf("failing writer: %v", err)
	}
}

type npzFailWriter struct{ err error }

func (w npzFailWriter) Write([]byte) (int, error) { return 0, w.err }

// ---- helpers that build .npy streams and zip archives byte by byte ----

type zipEntry struct {
	name string
	data []byte
}

// makeZip stores the entries uncompressed, as numpy.savez does.
func makeZip(t testing.TB, entries []zipEntry) []byte { return makeZipMethod(t, entries, zip.Store) }

func makeZipMethod(t testing.TB, entries []zipEntry, method uint16) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// npyRaw encodes an NPY stream of the given format version, aligned to 64
// bytes as numpy does.
func npyRaw(major byte, descr string, fortran bool, shape []int, data []byte) []byte {
	dims := make([]string, len(shape))
	for i, s := range shape {
		dims[i] = fmt.Sprint(s)
	}
	tuple := "(" + strings.Join(dims, ", ") + ")"
	if len(shape) == 1 {
		tuple = "(" + dims[0] + ",)"
	}
	order := "False"
	if fortran {
		order = "True"
	}
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", descr, order, tuple)
	prefix := 10
	if major > 1 {
		prefix = 12
	}
	for (prefix+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	out := append([]byte("\x93NUMPY"), major, 0)
	if major == 1 {
		out = binary.LittleEndian.AppendUint16(out, uint16(len(h)))
	} else {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(h)))
	}
	return append(append(out, h...), data...)
}

func npyF64(t testing.TB, shape []int, x []float64) []byte {
	return npyRaw(1, "<f8", false, shape, le64(x))
}

func le64(x []float64) []byte {
	var out []byte
	for _, f := range x {
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(f))
	}
	return out
}

func be64(x []float64) []byte {
	var out []byte
	for _, f := range x {
		out = binary.BigEndian.AppendUint64(out, math.Float64bits(f))
	}
	return out
}

func le32(x []float64) []byte {
	var out []byte
	for _, f := range x {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(f)))
	}
	return out
}

func be32(x []float64) []byte {
	var out []byte
	for _, f := range x {
		out = binary.BigEndian.AppendUint32(out, math.Float32bits(float32(f)))
	}
	return out
}

func le64i(x int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(x)) }

// transpose returns the column-major (Fortran) order of a row-major r×c array.
func fortranOrder(x []float64, r, c int) []float64 {
	out := make([]float64, len(x))
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			out[j*r+i] = x[i*c+j]
		}
	}
	return out
}

// Files written by Save pass numpy.load's header checks and decode to the
// same values, as read by testdata/gen/npz_check.py (standard-library
// Python following numpy.lib.format). Skipped when python3 is missing.
func TestNPZReadableByNumpyRules(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	dir := t.TempDir()
	for name, m := range roundTripModels(t) {
		path := filepath.Join(dir, "m.npz")
		if err := Save(path, m); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(py, "../testdata/gen/npz_check.py", path).Output()
		if err != nil {
			t.Fatalf("%s: npz_check.py: %v", name, err)
		}
		var arrays map[string]struct {
			Shape   []int
			Descr   string
			Fortran bool `json:"fortran_order"`
			Data    []float64
		}
		if err := json.Unmarshal(out, &arrays); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		v, b, _, c := m.Rows()
		n, d := m.N(), m.D()
		for _, want := range []struct {
			key   string
			shape []int
			descr string
			data  []float64
		}{{"V", []int{n, d}, "<f8", v}, {"B", []int{n, d}, "<f8", b}, {"C", []int{d, d}, "<f8", c}} {
			a, ok := arrays[want.key]
			if !ok || fmt.Sprint(a.Shape) != fmt.Sprint(want.shape) || a.Descr != want.descr || a.Fortran || !bitsEqual(a.Data, want.data) {
				t.Errorf("%s: array %s read by numpy's rules as %v %s fortran=%v; want %v %s with the same bits",
					name, want.key, a.Shape, a.Descr, a.Fortran, want.shape, want.descr)
			}
		}
		if ids := m.IDs(); ids != nil {
			a := arrays["ids"]
			got := make([]int64, len(a.Data))
			for i, x := range a.Data {
				got[i] = int64(x)
			}
			if a.Descr != "<i8" || fmt.Sprint(got) != fmt.Sprint(ids) {
				t.Errorf("%s: ids %s %v, want <i8 %v", name, a.Descr, got, ids)
			}
		}
		if voc := m.Vocab(); voc != nil {
			a := arrays["vocab"]
			raw := make([]byte, len(a.Data))
			for i, x := range a.Data {
				raw[i] = byte(x)
			}
			if a.Descr != "|u1" || string(raw) != strings.Join(voc.Tokens(), "\n") {
				t.Errorf("%s: vocab %s %q", name, a.Descr, raw)
			}
		}
	}
}

// Save over an existing model keeps the old file when the new model cannot
// be written.
func TestSaveAtomicKeepsOld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.npz")
	old := Random(8, 2, 1, RandomOptions{})
	if err := Save(path, old); err != nil {
		t.Fatal(err)
	}
	voc, _ := NewVocab([]string{"ok", "bad\ntoken"})
	bad, err := NewFromRows(2, 1, []float64{1, 2}, nil, []float64{0}, WithVocab(voc))
	if err != nil {
		t.Fatal(err)
	}
	if err := Save(path, bad); err == nil {
		t.Fatal("saving an unwritable vocabulary succeeded")
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	sameModel(t, "after failed Save", got, old)
}
