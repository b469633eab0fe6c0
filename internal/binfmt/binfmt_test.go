package binfmt

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

const testMagic = "NDPPTEST"

type sample struct {
	U    uint64
	I    int64
	N    int
	F    []float64
	B    bool
	S    string
	Is   []int
	I64s []int64
	Raw  []byte
}

func encodeSample(e *Encoder, s sample) {
	e.U64(s.U)
	e.I64(s.I)
	e.Int(s.N)
	e.F64s(s.F)
	e.Bool(s.B)
	e.String(s.S)
	e.Ints(s.Is)
	e.I64s(s.I64s)
	e.Bytes(s.Raw)
}

func decodeSample(d *Decoder) sample {
	return sample{
		U: d.U64(), I: d.I64(), N: d.Int("n", -10, 10), F: d.F64s("f"), B: d.Bool(), S: d.String("s"),
		Is: d.Ints("is", 0, 100), I64s: d.I64s("i64s"), Raw: d.Bytes("raw"),
	}
}

func testSample(nf int) sample {
	f := make([]float64, nf)
	for i := range f {
		f[i] = float64(i) * 0.1
	}
	if nf > 3 {
		f[0], f[1], f[2], f[3] = math.Copysign(0, -1), math.Inf(1), math.NaN(), math.SmallestNonzeroFloat64
	}
	raw := bytes.Repeat([]byte{7, 9}, nf)
	return sample{U: math.MaxUint64, I: -5, N: -3, F: f, B: true, S: "héllo", Is: []int{0, 99, 3}, I64s: []int64{math.MinInt64, 1}, Raw: raw}
}

// sameBits compares float64 slices bit for bit (NaN payloads and signed zeros included).
var sameBits = cmp.Comparer(func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) })

func TestRoundTripInMemoryAndStreamingAgree(t *testing.T) {
	for _, nf := range []int{0, 5, 100000} { // the last crosses the streaming buffer several times
		s := testSample(nf)
		e := NewEncoder(testMagic, 3)
		encodeSample(e, s)
		mem, err := e.Finish()
		require.NoError(t, err)

		var w bytes.Buffer
		se := NewStreamEncoder(&w, testMagic, 3)
		encodeSample(se, s)
		b, err := se.Finish()
		require.NoError(t, err)
		require.Nil(t, b)
		require.True(t, bytes.Equal(mem, w.Bytes()), "streamed and in-memory bytes differ (nf = %d)", nf)

		d, err := NewDecoder(mem, "test state", testMagic, 2, 3)
		require.NoError(t, err)
		require.EqualValues(t, 3, d.Version())
		got := decodeSample(d)
		require.NoError(t, d.Done())
		if diff := cmp.Diff(s, got, sameBits); diff != "" {
			t.Fatalf("round trip (nf = %d) differs (-want +got):\n%s", nf, diff)
		}
	}
}

func TestDecoderRefusesEveryCorruption(t *testing.T) {
	e := NewEncoder(testMagic, 1)
	encodeSample(e, testSample(8))
	good, _ := e.Finish()
	// Every single-bit flip anywhere is refused before any value is read.
	for i := range good {
		for bit := range 8 {
			bad := bytes.Clone(good)
			bad[i] ^= 1 << bit
			if _, err := NewDecoder(bad, "test state", testMagic, 1, 1); err == nil {
				t.Fatalf("flip of bit %d of byte %d accepted", bit, i)
			}
		}
	}
	// Every truncation too.
	for n := range len(good) {
		if _, err := NewDecoder(good[:n], "test state", testMagic, 1, 1); err == nil {
			t.Fatalf("truncation to %d bytes accepted", n)
		}
	}
}

func TestDecoderErrorsNameTheProblem(t *testing.T) {
	e := NewEncoder(testMagic, 5)
	e.Int(42)
	data, _ := e.Finish()
	_, err := NewDecoder(data, "test state", "OTHERMAG", 5, 5)
	require.ErrorContains(t, err, "does not start with")
	_, err = NewDecoder(data, "test state", testMagic, 1, 4)
	require.ErrorContains(t, err, "format version 5; this build reads versions 1 to 4")

	d, err := NewDecoder(data, "test state", testMagic, 5, 5)
	require.NoError(t, err)
	require.Equal(t, 0, d.Int("count", 0, 10))
	require.ErrorContains(t, d.Done(), "count = 42 outside [0, 10]")
	require.True(t, strings.HasPrefix(d.Err().Error(), "test state: corrupt"))

	// A well-formed state read as a longer one: truncated, sticky.
	d, _ = NewDecoder(data, "test state", testMagic, 5, 5)
	d.I64()
	require.Zero(t, d.F64())
	require.Nil(t, d.F64s("x"))
	require.ErrorContains(t, d.Err(), "truncated")

	// Left-over bytes.
	d, _ = NewDecoder(data, "test state", testMagic, 5, 5)
	require.ErrorContains(t, d.Done(), "trailing bytes")
}

func TestLengthPrefixesAreBoundedByTheData(t *testing.T) {
	// A length far beyond the data is refused without allocating it.
	e := NewEncoder(testMagic, 1)
	e.Int(1 << 60)
	data, _ := e.Finish()
	for _, read := range []func(d *Decoder){
		func(d *Decoder) { d.F64s("v") }, func(d *Decoder) { d.Ints("v", 0, 1) },
		func(d *Decoder) { d.I64s("v") }, func(d *Decoder) { d.Bytes("v") },
	} {
		d, err := NewDecoder(data, "test state", testMagic, 1, 1)
		require.NoError(t, err)
		read(d)
		require.ErrorContains(t, d.Err(), "length")
	}
	d, _ := NewDecoder(func() []byte { e := NewEncoder(testMagic, 1); e.F64s([]float64{1, 2}); b, _ := e.Finish(); return b }(), "test state", testMagic, 1, 1)
	d.F64sLen("v", 3)
	require.ErrorContains(t, d.Err(), "v has 2 entries, want 3")
	require.ErrorContains(t, func() error {
		e := NewEncoder(testMagic, 1)
		e.Bool(true)
		b, _ := e.Finish()
		b[headerLen] = 2
		// Re-checksum the edited body so only the flag is wrong.
		b = append(b[:len(b)-trailerLen:len(b)-trailerLen], 0, 0, 0, 0)
		e2 := NewEncoder(testMagic, 1)
		e2.buf = b[:len(b)-trailerLen]
		fixed, _ := e2.Finish()
		d, err := NewDecoder(fixed, "test state", testMagic, 1, 1)
		require.NoError(t, err)
		d.Bool()
		return d.Err()
	}(), "flag byte 2")
}

type failWriter struct{ after int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.after <= 0 {
		return 0, errors.New("disk full")
	}
	f.after--
	return len(p), nil
}

func TestStreamEncoderReportsWriteErrors(t *testing.T) {
	for after := range 3 {
		e := NewStreamEncoder(&failWriter{after: after}, testMagic, 1)
		e.F64s(make([]float64, 3*flushAt/8))
		_, err := e.Finish()
		require.ErrorContains(t, err, "disk full", "after = %d", after)
	}
	e := NewEncoder(testMagic, 1)
	_, _ = e.Finish()
	_, err := e.Finish()
	require.Error(t, err)
}

func TestReadAllLimit(t *testing.T) {
	_, err := ReadAll(bytes.NewReader(make([]byte, 11)), "test state", 10)
	require.ErrorContains(t, err, "larger than the limit of 10 bytes")
	b, err := ReadAll(bytes.NewReader(make([]byte, 10)), "test state", 10)
	require.NoError(t, err)
	require.Len(t, b, 10)
}

func TestBadMagicLengthPanics(t *testing.T) {
	require.PanicsWithValue(t, `binfmt: magic "SHORT" is not 8 bytes`, func() { NewEncoder("SHORT", 1) })
}
