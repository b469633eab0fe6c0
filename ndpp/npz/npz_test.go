package npz

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
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/ndpp-go/ndpp/internal/memlimit"
	"github.com/ndpp-go/ndpp/ndpp"
)

var updateFixtures = flag.Bool("update-fixtures", false, "rewrite ../../testdata/small-model.npz")

const (
	smallModelFixture = "../../testdata/small-model.npz"
	numpyFixtureFile  = "../../testdata/numpy-model.npz"
)

// smallModel is the model stored in testdata/small-model.npz.
func smallModel() *ndpp.Model { return ndpp.Random(60, 4, 1, ndpp.RandomOptions{}) }

// negZero is −0.0 (the literal -0.0 is +0 in Go).
var negZero = math.Copysign(0, -1)

// bitsEqual compares float64s bit for bit: −0 differs from +0, and NaNs
// with the same payload are equal.
var bitsEqual = cmp.Comparer(func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) })

// modelView is what a model file determines, in comparable form.
type modelView struct {
	N, D        int
	Shared      bool
	V, B, BC, C []float64
	Diag        []float64
	IDs         []int64
	HasVocab    bool
	Tokens      []string
}

func view(m *ndpp.Model) modelView {
	v, b, bc, c := m.Rows()
	mv := modelView{N: m.N(), D: m.D(), Shared: m.Shared(), V: v, B: b, BC: bc, C: c, Diag: m.Diag(), IDs: m.IDs()}
	if voc := m.Vocab(); voc != nil {
		mv.HasVocab, mv.Tokens = true, voc.Tokens()
	}
	return mv
}

// requireSameModel fails unless got and want have bit-identical parameters,
// the same sharing, ids and vocabulary.
func requireSameModel(t testing.TB, want, got *ndpp.Model, what string) {
	t.Helper()
	if diff := cmp.Diff(view(want), view(got), bitsEqual); diff != "" {
		t.Fatalf("%s: model differs (-want +got):\n%s", what, diff)
	}
}

func encode(t testing.TB, m *ndpp.Model) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, m))
	return buf.Bytes()
}

func decodeBytes(data []byte) (*ndpp.Model, error) {
	return Read(bytes.NewReader(data), int64(len(data)))
}

// withMeta returns m with ids and a vocabulary of awkward tokens (an empty
// one, separators, quotes, UTF-8).
func withMeta(t testing.TB, m *ndpp.Model) *ndpp.Model {
	t.Helper()
	ids := make([]int64, m.N())
	tokens := make([]string, m.N())
	for i := range ids {
		ids[i] = int64(1000 - 7*i)
		tokens[i] = fmt.Sprintf("SKU-%03d é,\t\"x\"", i)
	}
	if m.N() > 2 {
		tokens[2] = "" // an empty token survives the '\n' join
	}
	voc, err := ndpp.NewVocab(tokens)
	require.NoError(t, err)
	v, b, _, c := m.Rows()
	if m.Shared() {
		b = nil
	}
	out, err := ndpp.NewFromRows(m.N(), m.D(), v, b, c, ndpp.WithIDs(ids), ndpp.WithVocab(voc))
	require.NoError(t, err)
	return out
}

func roundTripModels(t *testing.T) map[string]*ndpp.Model {
	t.Helper()
	ms := map[string]*ndpp.Model{
		"n=1/d=1":           ndpp.Random(1, 1, 3, ndpp.RandomOptions{}),
		"n=7/d=3/shared":    ndpp.Random(7, 3, 4, ndpp.RandomOptions{Shared: true}),
		"n=50/d=8":          ndpp.Random(50, 8, 5, ndpp.RandomOptions{}),
		"n=40/d=5/block":    ndpp.Random(40, 5, 6, ndpp.RandomOptions{BlockDiagonal: true}),
		"n=30/d=4/meta":     withMeta(t, ndpp.Random(30, 4, 7, ndpp.RandomOptions{})),
		"n=1/d=2/meta":      withMeta(t, ndpp.Random(1, 2, 8, ndpp.RandomOptions{})),
		"n=9/d=3/huge-val":  ndpp.Random(9, 3, 9, ndpp.RandomOptions{Scale: 1e300, CScale: 1e-300}),
		"n=20/d=3/diag":     ndpp.Random(20, 3, 10, ndpp.RandomOptions{Diag: 0.01}),
		"n=6/d=2/diag/meta": withMeta(t, ndpp.Random(6, 2, 11, ndpp.RandomOptions{Shared: true, Diag: 1e-200})),
	}
	ms["n=3/d=2/extremes"] = extremesModel(t)
	return ms
}

// extremesModel holds extreme float64 values: denormals, negative zeros,
// the largest finite values.
func extremesModel(t testing.TB) *ndpp.Model {
	v := []float64{math.SmallestNonzeroFloat64, negZero, math.MaxFloat64, -math.MaxFloat64, 1, 2}
	b := []float64{1, 2, negZero, 4, 5, 6}
	c := []float64{negZero, 5e-324, -5e-324, 0}
	m, err := ndpp.NewFromRows(3, 2, v, b, c)
	require.NoError(t, err)
	return m
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for name, m := range roundTripModels(t) {
		got, err := decodeBytes(encode(t, m))
		require.NoError(t, err, name)
		requireSameModel(t, m, got, name+" (bytes)")

		path := filepath.Join(dir, strings.ReplaceAll(name, "/", "_")+".npz")
		require.NoError(t, Save(path, m), name)
		got, err = Load(path)
		require.NoError(t, err, name)
		requireSameModel(t, m, got, name+" (file)")
	}
}

// The comparison sees the sign of zero, so a writer or reader that loses it
// fails TestRoundTrip.
func TestRoundTripKeepsNegativeZero(t *testing.T) {
	m := extremesModel(t)
	got, err := decodeBytes(encode(t, m))
	require.NoError(t, err)
	require.True(t, math.Signbit(got.ItemV(0)[1]), "V[0][1] = −0 came back as +0")
	require.True(t, math.Signbit(got.ItemB(1)[0]), "B[1][0] = −0 came back as +0")
	require.True(t, math.Signbit(got.C().At(0, 0)), "C[0][0] = −0 came back as +0")

	plus, err := ndpp.NewFromRows(3, 2, []float64{math.SmallestNonzeroFloat64, 0, math.MaxFloat64, -math.MaxFloat64, 1, 2},
		[]float64{1, 2, negZero, 4, 5, 6}, []float64{negZero, 5e-324, -5e-324, 0})
	require.NoError(t, err)
	require.NotEmpty(t, cmp.Diff(view(m), view(plus), bitsEqual), "the model comparison does not tell −0 from +0")
}

func TestSharedRule(t *testing.T) {
	m := ndpp.Random(10, 3, 11, ndpp.RandomOptions{})
	// A file without B loads as the shared model.
	v, _, _, c := m.Rows()
	got, err := decodeBytes(makeZip(t, []zipEntry{
		{"V.npy", npyF64([]int{10, 3}, v)},
		{"C.npy", npyF64([]int{3, 3}, c)},
	}))
	require.NoError(t, err)
	require.True(t, got.Shared(), "file without B: want a shared model")
	want, err := ndpp.NewFromRows(10, 3, v, nil, c)
	require.NoError(t, err)
	requireSameModel(t, want, got, "no B")
	// B bit-identical to V: shared. One bit off: not shared.
	b := append([]float64(nil), v...)
	got, err = decodeBytes(makeZip(t, []zipEntry{
		{"V.npy", npyF64([]int{10, 3}, v)},
		{"B.npy", npyF64([]int{10, 3}, b)},
		{"C.npy", npyF64([]int{3, 3}, c)},
	}))
	require.NoError(t, err)
	require.True(t, got.Shared(), "B == V: want shared")
	b[17] = math.Nextafter(b[17], 2)
	got, err = decodeBytes(makeZip(t, []zipEntry{
		{"V.npy", npyF64([]int{10, 3}, v)},
		{"B.npy", npyF64([]int{10, 3}, b)},
		{"C.npy", npyF64([]int{3, 3}, c)},
	}))
	require.NoError(t, err)
	require.False(t, got.Shared(), "B one ulp from V: want unshared")
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
	m, err := Load(numpyFixtureFile)
	require.NoError(t, err)
	v, b, c := numpyFixture()
	want, err := ndpp.NewFromRows(12, 3, v, b, c)
	require.NoError(t, err)
	requireSameModel(t, want, m, "numpy-model.npz")
	// Spot values, written out, so that a wrong formula on both sides
	// cannot hide a layout error.
	require.Equal(t, []float64{-1.375, -1.125, 1.5, 2.0 / 16, 4.0 / 16, 1.5},
		[]float64{m.ItemV(0)[0], m.ItemV(0)[2], m.ItemV(11)[1], m.ItemB(1)[0], m.ItemB(2)[2], m.C().At(1, 2)})
	require.Equal(t, plainDot(m.ItemV(0), m.ItemV(1))+bilinearBCB(m, 0, 1), m.Entry(0, 1))
}

func plainDot(x, y []float64) float64 {
	s := 0.0
	for i := range x {
		s += x[i] * y[i]
	}
	return s
}

func bilinearBCB(m *ndpp.Model, i, j int) float64 {
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
		require.NoError(t, Save(smallModelFixture, smallModel()))
	}
	m, err := Load(smallModelFixture)
	require.NoError(t, err)
	requireSameModel(t, smallModel(), m, "small-model.npz")
}

// Variants that numpy and PyTorch code produce: float32, Fortran order, big
// endian, NPY 2.0 headers, deflated entries (numpy.savez_compressed), entry
// names without ".npy", extra arrays.
func TestReadVariants(t *testing.T) {
	const n, d = 5, 3
	m := ndpp.Random(n, d, 21, ndpp.RandomOptions{})
	v, b, _, c := m.Rows()
	f32 := func(x []float64) []float64 {
		out := make([]float64, len(x))
		for i, f := range x {
			out[i] = float64(float32(f))
		}
		return out
	}
	want32, err := ndpp.NewFromRows(n, d, f32(v), f32(b), f32(c))
	require.NoError(t, err)
	wantMixed, err := ndpp.NewFromRows(n, d, f32(v), b, f32(c))
	require.NoError(t, err)
	cases := []struct {
		name    string
		entries []zipEntry
		want    *ndpp.Model
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
		}, wantMixed, zip.Store},
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
		got, err := decodeBytes(makeZipMethod(t, tc.entries, tc.method))
		require.NoError(t, err, tc.name)
		requireSameModel(t, tc.want, got, tc.name)
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
		got, err := decodeBytes(makeZip(t, []zipEntry{
			{"V.npy", npyRaw(1, "<f8", false, []int{n, d}, le64(v))},
			{"C.npy", npyRaw(1, "<f8", false, []int{d, d}, le64(c))},
			{"ids.npy", npyRaw(1, descr, false, []int{n}, raw)},
			{"vocab.npy", npyRaw(1, "|u1", false, []int{9}, []byte("a\nb\nc\nd\ne"))},
		}))
		require.NoError(t, err, "ids %s", descr)
		require.Equal(t, ids, got.IDs(), "ids %s", descr)
		require.NotNil(t, got.Vocab())
		require.Equal(t, []string{"a", "b", "c", "d", "e"}, got.Vocab().Tokens())
	}
	// Negative ids from a signed narrow type are sign-extended.
	got, err := decodeBytes(makeZip(t, []zipEntry{
		{"V.npy", npyRaw(1, "<f8", false, []int{2, 1}, le64([]float64{1, 2}))},
		{"C.npy", npyRaw(1, "<f8", false, []int{1, 1}, le64([]float64{0}))},
		{"ids.npy", npyRaw(1, "<i2", false, []int{2}, []byte{0xff, 0xff, 0x02, 0x80})},
	}))
	require.NoError(t, err)
	require.Equal(t, []int64{-1, -32766}, got.IDs(), "int16 ids")
}

func TestReadBadInputs(t *testing.T) {
	const n, d = 3, 4
	m := ndpp.Random(n, d, 31, ndpp.RandomOptions{})
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
		{"D wrong length", []zipEntry{V(), B(), C(), with("D", []int{n + 1}, "<f8", le64(make([]float64, n+1)))}, "array D has shape (4,) for 3 items"},
		{"D 2-D", []zipEntry{V(), B(), C(), with("D", []int{n, 1}, "<f8", le64(make([]float64, n)))}, "array D has shape (3, 1)"},
		{"D negative", []zipEntry{V(), B(), C(), with("D", []int{n}, "<f8", le64([]float64{0, -1, 0}))}, "diagonal entry 1 is -1"},
		{"D NaN", []zipEntry{V(), B(), C(), with("D", []int{n}, "<f8", le64([]float64{0, 0, math.NaN()}))}, "diagonal entry 2 is NaN"},
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
		_, err := decodeBytes(data)
		require.ErrorContains(t, err, tc.want, tc.name)
		require.True(t, strings.HasPrefix(err.Error(), "npz: "), "%s: %v lacks the package prefix", tc.name, err)
		path := filepath.Join(dir, "bad model.npz")
		require.NoError(t, os.WriteFile(path, data, 0o644))
		_, err = Load(path)
		require.ErrorContains(t, err, tc.want, tc.name)
		msg, ok := strings.CutPrefix(err.Error(), "npz: "+path+": ")
		require.True(t, ok, "%s: %v does not name the file", tc.name, err)
		require.NotContains(t, msg, "npz:", "%s: repeated prefix", tc.name)
		require.NotContains(t, msg, "ndpp:", "%s: repeated prefix", tc.name)
	}
	for _, p := range []string{filepath.Join(dir, "missing.npz"), dir} {
		_, err := Load(p)
		require.ErrorContains(t, err, p)
	}
	_, err := decodeBytes([]byte("hello, not a zip"))
	require.ErrorContains(t, err, "not a valid .npz (zip) archive")
}

// Every truncation of a valid file is an error; no byte flip panics, and a
// flip that goes unnoticed (zip metadata such as timestamps) leaves the
// parameters intact.
func TestReadTruncatedAndCorrupt(t *testing.T) {
	voc, err := ndpp.NewVocab([]string{"a", "b", "c", "d", "e", "f"})
	require.NoError(t, err)
	m0 := ndpp.Random(6, 3, 41, ndpp.RandomOptions{})
	v, b, _, c := m0.Rows()
	m, err := ndpp.NewFromRows(6, 3, v, b, c, ndpp.WithIDs([]int64{5, 6, 7, 8, 9, 10}), ndpp.WithVocab(voc))
	require.NoError(t, err)
	numpyFile, err := os.ReadFile(numpyFixtureFile)
	require.NoError(t, err)
	// A flip in the zip's central directory can rename B.npy unnoticed
	// (names carry no checksum); the model then loads as shared, which is
	// what a file without B means.
	params := func(m *ndpp.Model, withB bool) modelView {
		v, b, _, c := m.Rows()
		if !withB {
			b = nil
		}
		return modelView{V: v, B: b, C: c}
	}
	for _, data := range [][]byte{encode(t, m), numpyFile} {
		want, err := decodeBytes(data)
		require.NoError(t, err)
		for k := 0; k < len(data); k++ {
			_, err := decodeBytes(data[:k])
			require.Error(t, err, "file cut at %d of %d bytes loaded without error", k, len(data))
		}
		for k := 0; k < len(data); k++ {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				bad := append([]byte(nil), data...)
				bad[k] ^= x
				got, err := decodeBytes(bad)
				if err != nil {
					continue
				}
				if diff := cmp.Diff(params(want, !got.Shared()), params(got, !got.Shared()), bitsEqual); diff != "" {
					t.Fatalf("flip 0x%02x at byte %d changed the parameters without an error (-want +got):\n%s", x, k, diff)
				}
			}
		}
	}
	// A truncated .npy inside a well-formed zip.
	full := npyRaw(1, "<f8", false, []int{6, 3}, le64(v))
	for _, cut := range []int{0, 5, 9, 60, len(full) - 8, len(full) - 1} {
		_, err := decodeBytes(makeZip(t, []zipEntry{{"V.npy", full[:cut]}, {"C.npy", npyRaw(1, "<f8", false, []int{3, 3}, le64(c))}}))
		require.ErrorContains(t, err, "truncated", "V.npy cut at %d", cut)
	}
}

func TestWriteErrors(t *testing.T) {
	voc, err := ndpp.NewVocab([]string{"a", "b\nc"})
	require.NoError(t, err)
	m, err := ndpp.NewFromRows(2, 1, []float64{1, 2}, nil, []float64{0}, ndpp.WithVocab(voc))
	require.NoError(t, err)
	require.ErrorContains(t, Write(io.Discard, m), "npz: vocabulary token 1 (\"b\\nc\") contains a newline")
	path := filepath.Join(t.TempDir(), "m.npz")
	require.ErrorContains(t, Save(path, m), "npz: "+path+": vocabulary token 1")
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "a failed Save left a file")
	require.Error(t, Write(io.Discard, nil))
	require.Error(t, Save(path, nil))
	// Write errors are returned, wrapped, from Write and from Save.
	wErr := errors.New("disk full")
	err = Write(failWriter{wErr}, ndpp.Random(3, 2, 1, ndpp.RandomOptions{}))
	require.ErrorIs(t, err, wErr)
	require.True(t, strings.HasPrefix(err.Error(), "npz: write "), "%v", err)
	err = Save(filepath.Join(t.TempDir(), "no-such-dir", "m.npz"), ndpp.Random(3, 2, 1, ndpp.RandomOptions{}))
	require.ErrorContains(t, err, "npz: write ")
	require.ErrorIs(t, err, os.ErrNotExist)
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// Save over an existing model keeps the old file when the new model cannot
// be written.
func TestSaveKeepsOldOnFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.npz")
	old := ndpp.Random(8, 2, 1, ndpp.RandomOptions{})
	require.NoError(t, Save(path, old))
	voc, err := ndpp.NewVocab([]string{"ok", "bad\ntoken"})
	require.NoError(t, err)
	bad, err := ndpp.NewFromRows(2, 1, []float64{1, 2}, nil, []float64{0}, ndpp.WithVocab(voc))
	require.NoError(t, err)
	require.Error(t, Save(path, bad), "saving an unwritable vocabulary succeeded")
	got, err := Load(path)
	require.NoError(t, err)
	requireSameModel(t, old, got, "after a failed Save")
}

// Files written by Save pass numpy.load's header checks and decode to the
// same values, as read by testdata/gen/npz_check.py (standard-library
// Python following numpy.lib.format). Skipped when python3 is missing.
func TestReadableByNumpyRules(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	type array struct {
		Shape   []int
		Descr   string
		Fortran bool `json:"fortran_order"`
		Data    []float64
	}
	dir := t.TempDir()
	for name, m := range roundTripModels(t) {
		path := filepath.Join(dir, "m.npz")
		require.NoError(t, Save(path, m))
		out, err := exec.Command(py, "../../testdata/gen/npz_check.py", path).Output()
		require.NoError(t, err, "%s: npz_check.py", name)
		var arrays map[string]array
		require.NoError(t, json.Unmarshal(out, &arrays), name)
		v, b, _, c := m.Rows()
		n, d := m.N(), m.D()
		want := map[string]array{
			"V": {Shape: []int{n, d}, Descr: "<f8", Data: v},
			"B": {Shape: []int{n, d}, Descr: "<f8", Data: b},
			"C": {Shape: []int{d, d}, Descr: "<f8", Data: c},
		}
		if diag := m.Diag(); diag != nil {
			want["D"] = array{Shape: []int{n}, Descr: "<f8", Data: diag}
		}
		if ids := m.IDs(); ids != nil {
			a := array{Shape: []int{n}, Descr: "<i8"}
			for _, id := range ids {
				a.Data = append(a.Data, float64(id))
			}
			want["ids"] = a
		}
		if voc := m.Vocab(); voc != nil {
			raw := strings.Join(voc.Tokens(), "\n")
			a := array{Shape: []int{len(raw)}, Descr: "|u1", Data: []float64{}}
			for i := 0; i < len(raw); i++ {
				a.Data = append(a.Data, float64(raw[i]))
			}
			want["vocab"] = a
		}
		// Python's json writes floats with repr, which round-trips: the
		// values compare bit for bit, −0 included.
		if diff := cmp.Diff(want, arrays, bitsEqual); diff != "" {
			t.Fatalf("%s: arrays read by numpy's rules differ (-want +got):\n%s", name, diff)
		}
	}
}

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
		require.NoError(t, err)
		_, err = w.Write(e.data)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
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

func npyF64(shape []int, x []float64) []byte { return npyRaw(1, "<f8", false, shape, le64(x)) }

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

// fortranOrder returns the column-major (Fortran) order of a row-major r×c
// array.
func fortranOrder(x []float64, r, c int) []float64 {
	out := make([]float64, len(x))
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			out[j*r+i] = x[i*c+j]
		}
	}
	return out
}

// TestLoadRefusesArchivesBeyondTheMemoryBudget: an archive whose declared
// sizes exceed the memory budget (a deflated array of zeros inflating to
// gigabytes, here a small budget) is refused before it is inflated.
func TestLoadRefusesArchivesBeyondTheMemoryBudget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.npz")
	m := ndpp.Random(2000, 20, 1, ndpp.RandomOptions{})
	require.NoError(t, Save(path, m))
	_, err := LoadOptions{MaxBytes: 512 << 10}.Load(path)
	// Callers outside the module see the refusal through package ndpp.
	require.ErrorIs(t, err, ndpp.ErrMemoryBudget)
	need, limit, ok := ndpp.MemoryBudget(err)
	require.True(t, ok)
	require.Equal(t, int64(512<<10), limit)
	require.Greater(t, need, limit)
	_, _, ok = ndpp.MemoryBudget(errors.New("other"))
	require.False(t, ok)
	require.Contains(t, err.Error(), "m.npz")
	require.Contains(t, err.Error(), "more than the limit of 512 KiB (from npz.LoadOptions.MaxBytes)")
	got, err := LoadOptions{MaxBytes: 64 << 20}.Load(path)
	require.NoError(t, err)
	require.Equal(t, m.N(), got.N())
}

// TestCheckScaleRefusesOverflowingModels: with LoadOptions.CheckScale a
// model whose kernel overflows float64 (finite but huge entries) is
// refused by Load, naming the file, and by Read, with errors wrapping
// ndpp.ErrOverflow; without it the model loads, and a model of ordinary
// scale loads either way.
func TestCheckScaleRefusesOverflowingModels(t *testing.T) {
	base := ndpp.Random(30, 3, 1, ndpp.RandomOptions{Diag: 0.1})
	bv, bb, _, c := base.Rows()
	v, b := slices.Clone(bv), slices.Clone(bb)
	for i := range v {
		v[i] *= 1e200
		b[i] *= 1e200
	}
	huge, err := ndpp.NewFromRows(30, 3, v, b, c, ndpp.WithDiag(base.Diag()))
	require.NoError(t, err)
	dir := t.TempDir()
	hugePath, okPath := filepath.Join(dir, "huge.npz"), filepath.Join(dir, "ok.npz")
	require.NoError(t, Save(hugePath, huge))
	require.NoError(t, Save(okPath, base))
	checked := LoadOptions{CheckScale: true}

	_, err = checked.Load(hugePath)
	require.ErrorIs(t, err, ndpp.ErrOverflow)
	require.True(t, strings.HasPrefix(err.Error(), hugePath+": "), err.Error())
	raw, err := os.ReadFile(hugePath)
	require.NoError(t, err)
	_, err = checked.Read(bytes.NewReader(raw), int64(len(raw)))
	require.ErrorIs(t, err, ndpp.ErrOverflow)
	m, err := Load(hugePath)
	require.NoError(t, err)
	require.ErrorIs(t, m.CheckScale(), ndpp.ErrOverflow)

	m, err = checked.Load(okPath)
	require.NoError(t, err)
	require.Equal(t, base.N(), m.N())
}

// TestArrayMemory: the reservation of an array is its stored bytes and
// three float64 per element for V and B, two for the others; it grows with
// the element count and the stored bytes, and overflows to -1. A model
// within the sum of its arrays' reservations loads, and one byte less is
// refused.
func TestArrayMemory(t *testing.T) {
	require.Equal(t, int64(4*100+8*3*100), ArrayMemory("V", 100, 4*100))
	require.Equal(t, int64(8*100+8*3*100), ArrayMemory("B", 100, 8*100))
	require.Equal(t, int64(8*9+8*2*9), ArrayMemory("C", 9, 8*9))
	require.Equal(t, int64(-1), ArrayMemory("V", math.MaxInt64/16, 8))
	prev := int64(-1)
	for _, count := range []uint64{0, 1, 10, 1000, 1 << 30} {
		m := ArrayMemory("V", count, 8*count)
		require.Greater(t, m, prev)
		prev = m
	}

	const n, d = 50, 4
	m := ndpp.Random(n, d, 1, ndpp.RandomOptions{Diag: 0.5})
	path := filepath.Join(t.TempDir(), "m.npz")
	require.NoError(t, Save(path, m))
	need := ArrayMemory("V", n*d, 8*n*d) + ArrayMemory("B", n*d, 8*n*d) + ArrayMemory("C", d*d, 8*d*d) + ArrayMemory("D", n, 8*n)
	_, err := LoadOptions{MaxBytes: need}.Load(path)
	require.NoError(t, err)
	_, err = LoadOptions{MaxBytes: need - 1}.Load(path)
	var me *memlimit.Error
	require.ErrorAs(t, err, &me)
	require.Equal(t, need, me.Need)
}

// TestLoadRefusesADeflatedArrayOfZerosBeyondTheBudget: a small archive
// whose deflated float32 array of zeros would decode to hundreds of
// megabytes is refused from its header, before the data is inflated.
func TestLoadRefusesADeflatedArrayOfZerosBeyondTheBudget(t *testing.T) {
	const n, d = 8192, 1024 // 32 MiB of float32, 192 MiB decoded with the model's copies
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "V.npy", Method: zip.Deflate})
	require.NoError(t, err)
	_, err = w.Write(appendNPYHeader(nil, "<f4", []int{n, d}))
	require.NoError(t, err)
	_, err = w.Write(make([]byte, n*d*4))
	require.NoError(t, err)
	w, err = zw.CreateHeader(&zip.FileHeader{Name: "C.npy", Method: zip.Deflate})
	require.NoError(t, err)
	_, err = w.Write(appendNPYHeader(nil, "<f4", []int{d, d}))
	require.NoError(t, err)
	_, err = w.Write(make([]byte, d*d*4))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.Less(t, buf.Len(), 1<<20)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = LoadOptions{MaxBytes: 64 << 20}.Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	runtime.ReadMemStats(&after)
	var me *memlimit.Error
	require.ErrorAs(t, err, &me)
	require.Contains(t, err.Error(), "more than the limit of 64 MiB")
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8<<20), "inflated before refusing")
}

// TestLoadNeverReturnsAChangedModelAfterAByteFlip: every single-byte change
// of a model file (with a diagonal and ids; shared, with a vocabulary) is
// refused or loads the same model (a byte that no reader looks at, such as
// a timestamp). A changed entry name in the zip central directory, which
// would drop an optional array, is caught by the local header's copy.
func TestLoadNeverReturnsAChangedModelAfterAByteFlip(t *testing.T) {
	ids := make([]int64, 6)
	for i := range ids {
		ids[i] = int64(10 + i)
	}
	m0 := ndpp.Random(6, 2, 3, ndpp.RandomOptions{Diag: 0.5})
	v, b, _, c := m0.Rows()
	withIDs, err := ndpp.NewFromRows(6, 2, v, b, c, ndpp.WithDiag(m0.Diag()), ndpp.WithIDs(ids))
	require.NoError(t, err)
	voc, err := ndpp.NewVocab([]string{"a", "bb", "c", "dd", "e", "ff"})
	require.NoError(t, err)
	shared, err := ndpp.NewFromRows(6, 2, v, nil, c, ndpp.WithVocab(voc))
	require.NoError(t, err)
	for _, m := range []*ndpp.Model{withIDs, shared} {
		var buf bytes.Buffer
		require.NoError(t, Write(&buf, m))
		data := buf.Bytes()
		same := func(got *ndpp.Model) bool {
			sameVocab := (got.Vocab() == nil) == (m.Vocab() == nil)
			if sameVocab && m.Vocab() != nil {
				sameVocab = slices.Equal(got.Vocab().Tokens(), m.Vocab().Tokens())
			}
			return mat.Equal(got.V(), m.V()) && mat.Equal(got.B(), m.B()) && mat.Equal(got.C(), m.C()) &&
				got.Shared() == m.Shared() && slices.Equal(got.Diag(), m.Diag()) && slices.Equal(got.IDs(), m.IDs()) && sameVocab
		}
		silent := 0
		for k := range data {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				bad := bytes.Clone(data)
				bad[k] ^= x
				got, err := Read(bytes.NewReader(bad), int64(len(bad)))
				if err == nil && !same(got) {
					silent++
					t.Errorf("byte %d of %d flipped by 0x%02x loads a different model", k, len(data), x)
				}
			}
		}
		require.Zero(t, silent)
	}
}
