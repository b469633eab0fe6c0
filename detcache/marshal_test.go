package detcache

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
)

// continueRun applies the same seeded sequence to an oracle and records
// every value it returns.
func continueRun(t *testing.T, o Oracle, seed uint64, steps int) []ndpp.Value {
	r := newOpRun(t, o, seed, logTolIll)
	var out []ndpp.Value
	for i := 0; i < steps; i++ {
		r.step()
		out = append(out, o.Value())
		out = append(out, r.dst[:o.Len()]...)
	}
	return out
}

func TestMarshalContinuesBitIdentically(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind int // -1: Gaussian; else illModel kind
		k, d int
		diag float64 // scale of a diagonal (0: none)
	}{{"gauss", -1, 6, 5, 0}, {"full", -1, 8, 4, 0}, {"near-dup", 0, 5, 4, 0}, {"span", 2, 6, 4, 0},
		{"diag", -1, 11, 4, 0.5}, {"diag-tiny", -1, 9, 4, 1e-8}, {"diag-near-dup", 0, 10, 4, 1e-3}} {
		for _, method := range []string{"fast", "naive"} {
			t.Run(tc.name+"/"+method, func(t *testing.T) {
				var m *ndpp.Model
				if tc.kind < 0 {
					m = ndpp.Random(40, tc.d, 7, ndpp.RandomOptions{})
				} else {
					m = illModel(t, 7, 40, tc.d, tc.kind)
				}
				if tc.diag > 0 {
					m = withDiag(t, m, tc.diag, 7, false)
				}
				mk := func() Oracle {
					var o Oracle
					var err error
					if method == "fast" {
						o, err = NewFast(m, tc.k)
					} else {
						o, err = NewNaive(m, tc.k)
					}
					require.NoError(t, err)
					return o
				}
				a := mk()
				continueRun(t, a, 1, 3*tc.k)
				data, err := a.MarshalBinary()
				require.NoError(t, err)
				b := mk()
				require.NoError(t, b.UnmarshalBinary(data))
				require.Empty(t, cmp.Diff(snapshot(a), snapshot(b)), "restored state (-saved +restored)")
				// Same continuation, bit for bit.
				va := continueRun(t, a, 2, 3*tc.k+20)
				vb := continueRun(t, b, 2, 3*tc.k+20)
				require.Empty(t, cmp.Diff(va, vb), "values after the restore (-saved +restored)")
				require.Empty(t, cmp.Diff(snapshot(a), snapshot(b)), "state after the continuation (-saved +restored)")
				// The state round-trips byte for byte.
				da, _ := a.MarshalBinary()
				db, _ := b.MarshalBinary()
				require.Equal(t, da, db)
			})
		}
	}
}

// oracleView is what an oracle shows of its state.
type oracleView struct {
	Items []int
	Value ndpp.Value
	Stats Stats
}

func snapshot(o Oracle) oracleView {
	return oracleView{append([]int(nil), o.Items()...), o.Value(), o.Stats()}
}

func TestUnmarshalRejectsCorruptState(t *testing.T) {
	m := ndpp.Random(30, 4, 3, ndpp.RandomOptions{})
	f, _ := NewFast(m, 5)
	nv, _ := NewNaive(m, 5)
	continueRun(t, f, 1, 8)
	continueRun(t, nv, 1, 8)
	fs, err := f.MarshalBinary()
	require.NoError(t, err)
	ns, err := nv.MarshalBinary()
	require.NoError(t, err)
	md := withDiag(t, m, 0.5, 1, false) // m with a diagonal

	for _, tc := range []struct {
		o    Oracle
		good []byte
	}{{mustFast(t, m, 5), fs}, {mustNaive(t, m, 5), ns}} {
		o := tc.o
		before, _ := o.MarshalBinary()
		bad := map[string][]byte{
			"empty":     nil,
			"truncated": tc.good[:len(tc.good)/2],
			"flipped":   flip(tc.good, len(tc.good)/2),
			"magic":     append([]byte("NDPPXXX1"), tc.good[8:]...),
			"version":   append(append([]byte(nil), tc.good[:8]...), append([]byte{1, 0, 0, 0}, tc.good[12:]...)...),
		}
		for name, data := range bad {
			require.Error(t, o.UnmarshalBinary(data), name)
		}
		// The other implementation's state.
		other := ns
		if _, ok := o.(*Naive); ok {
			other = fs
		}
		require.ErrorContains(t, o.UnmarshalBinary(other), "does not start with")
		// Same format, different model shape or capacity.
		m2 := ndpp.Random(31, 4, 3, ndpp.RandomOptions{})
		var o2 Oracle = mustFast(t, m2, 5)
		if _, ok := o.(*Naive); ok {
			o2 = mustNaive(t, m2, 5)
		}
		require.ErrorContains(t, o2.UnmarshalBinary(tc.good), "n = 30")
		var o3 Oracle = mustFast(t, m, 4)
		if _, ok := o.(*Naive); ok {
			o3 = mustNaive(t, m, 4)
		}
		require.ErrorContains(t, o3.UnmarshalBinary(tc.good), "capacity = 5")
		// Same shape, a diagonal.
		var o4 Oracle = mustFast(t, md, 5)
		if _, ok := o.(*Naive); ok {
			o4 = mustNaive(t, md, 5)
		}
		require.ErrorContains(t, o4.UnmarshalBinary(tc.good), "state is for a model without a diagonal; this oracle's model has one")
		after, _ := o.MarshalBinary()
		require.Equal(t, before, after, "a failed UnmarshalBinary changed the oracle")
		require.NoError(t, o.UnmarshalBinary(tc.good))
	}
}

// TestUnmarshalChecksDiagonal: a state restores only onto a model with the
// same diagonal (none, or equal δ), and a state of format version 2 (which
// did not record the diagonal) restores onto a model without one, bit for
// bit, and is refused by a model with one.
func TestUnmarshalChecksDiagonal(t *testing.T) {
	base := ndpp.Random(30, 4, 3, ndpp.RandomOptions{})
	md := withDiag(t, base, 0.5, 1, false)
	mother := withDiag(t, base, 0.5, 2, false) // another diagonal
	mpart := withDiag(t, base, 0.5, 1, true)   // a partial diagonal
	type mk func(m *ndpp.Model) Oracle
	for _, mkO := range []mk{
		func(m *ndpp.Model) Oracle { return mustFast(t, m, 9) },
		func(m *ndpp.Model) Oracle { return mustNaive(t, m, 9) },
	} {
		src := mkO(md)
		continueRun(t, src, 1, 12)
		good, err := src.MarshalBinary()
		require.NoError(t, err)
		for _, m := range []*ndpp.Model{mother, mpart} {
			require.ErrorContains(t, mkO(m).UnmarshalBinary(good), "state is for a model with another diagonal")
		}
		// The model without a diagonal cannot take capacity 9 > 2d: use 8.
		lowState := func(m *ndpp.Model, k int) []byte {
			var o Oracle = mustFast(t, m, k)
			if _, ok := src.(*Naive); ok {
				o = mustNaive(t, m, k)
			}
			continueRun(t, o, 1, 12)
			b, err := o.MarshalBinary()
			require.NoError(t, err)
			return b
		}
		dstLike := func(m *ndpp.Model, k int) Oracle {
			if _, ok := src.(*Naive); ok {
				return mustNaive(t, m, k)
			}
			return mustFast(t, m, k)
		}
		dState := lowState(md, 8)
		require.ErrorContains(t, dstLike(base, 8).UnmarshalBinary(dState), "state is for a model with a diagonal; this oracle's model has none")
		require.NoError(t, dstLike(md, 8).UnmarshalBinary(dState))

		// Version 3: no vector flag; version 2: no vector flag and the
		// header without the diagonal's flag and fingerprint.
		good4 := lowState(base, 8)
		v3 := append([]byte(nil), good4[:12]...)
		v3 = append(v3, good4[13:len(good4)-4]...)
		binary.LittleEndian.PutUint32(v3[8:12], 3)
		v3 = withCRC(append(v3, 0, 0, 0, 0))
		v2 := append([]byte(nil), good4[:12]...)
		v2 = append(v2, good4[13:13+24]...)
		v2 = append(v2, good4[13+24+9:len(good4)-4]...)
		binary.LittleEndian.PutUint32(v2[8:12], 2)
		v2 = withCRC(append(v2, 0, 0, 0, 0))
		for _, old := range [][]byte{v3, v2} {
			a, b := dstLike(base, 8), dstLike(base, 8)
			require.NoError(t, a.UnmarshalBinary(good4))
			require.NoError(t, b.UnmarshalBinary(old))
			require.Empty(t, cmp.Diff(snapshot(a), snapshot(b)), "restored from version 4 and an older one (-v4 +old)")
			va, vb := continueRun(t, a, 2, 20), continueRun(t, b, 2, 20)
			require.Empty(t, cmp.Diff(va, vb), "values after the restore (-v4 +old)")
			sa, _ := a.MarshalBinary()
			sb, _ := b.MarshalBinary()
			require.Equal(t, sa, sb, "an older state is saved as version 4")
		}
		require.ErrorContains(t, dstLike(md, 8).UnmarshalBinary(v2), "format version 2")
	}
}

// flip returns a copy of data with one bit of byte i inverted.
func flip(data []byte, i int) []byte {
	out := append([]byte(nil), data...)
	out[i] ^= 0x10
	return out
}

func mustFast(t *testing.T, m *ndpp.Model, k int) *Fast {
	o, err := NewFast(m, k)
	require.NoError(t, err)
	return o
}

func mustNaive(t *testing.T, m *ndpp.Model, k int) *Naive {
	o, err := NewNaive(m, k)
	require.NoError(t, err)
	return o
}

// TestUnmarshalRejectsAnyChangedByte: changing any one byte of a state
// (magic, version, body or checksum) is refused, and leaves the oracle as
// it was.
func TestUnmarshalRejectsAnyChangedByte(t *testing.T) {
	m := ndpp.Random(30, 4, 3, ndpp.RandomOptions{})
	for _, mk := range []func() Oracle{
		func() Oracle { return mustFast(t, m, 5) },
		func() Oracle { return mustNaive(t, m, 5) },
	} {
		src := mk()
		continueRun(t, src, 1, 8)
		good, err := src.MarshalBinary()
		require.NoError(t, err)
		o := mk()
		before, _ := o.MarshalBinary()
		for i := range good {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				bad := append([]byte(nil), good...)
				bad[i] ^= x
				require.Error(t, o.UnmarshalBinary(bad), "byte %d ^ %#x of %d accepted", i, x, len(good))
			}
		}
		after, _ := o.MarshalBinary()
		require.Equal(t, before, after, "a refused state changed the oracle")
		require.NoError(t, o.UnmarshalBinary(good))
	}
}

// TestUnmarshalRefusesOldFormat: a state of the format before binfmt
// (version 1) is refused with an error naming the version.
func TestUnmarshalRefusesOldFormat(t *testing.T) {
	m := ndpp.Random(30, 4, 3, ndpp.RandomOptions{})
	for _, tc := range []struct {
		o     Oracle
		magic string
	}{{mustFast(t, m, 5), "NDPPDCF1"}, {mustNaive(t, m, 5), "NDPPDCN1"}} {
		old := []byte(tc.magic)
		for _, x := range []int64{30, 4, 5, 0} { // n, d, capacity, |S|
			old = binary.LittleEndian.AppendUint64(old, uint64(x))
		}
		old = binary.LittleEndian.AppendUint32(old, crc32.ChecksumIEEE(old))
		require.ErrorContains(t, tc.o.UnmarshalBinary(old), "format version 1")
	}
}

// withCRC returns data with its trailing CRC-32C recomputed, so that
// corrupt fields reach the structural checks.
func withCRC(data []byte) []byte {
	if len(data) < 4 {
		return data
	}
	body := append([]byte(nil), data[:len(data)-4]...)
	return binary.LittleEndian.AppendUint32(body, crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
}

func TestUnmarshalRejectsBadFields(t *testing.T) {
	m := ndpp.Random(30, 4, 3, ndpp.RandomOptions{})
	f := mustFast(t, m, 5)
	continueRun(t, f, 1, 8)
	good, _ := f.MarshalBinary()
	// Field offsets after the 8-byte magic, the 4-byte version and the
	// vector flag (1 byte): n, d,
	// capacity (8 bytes each), the diagonal's flag (1 byte) and fingerprint
	// (8 bytes), since (8 bytes), direct (1 byte), |S|, then the items.
	set := func(off int, v uint64) []byte {
		b := append([]byte(nil), good...)
		binary.LittleEndian.PutUint64(b[off:], v)
		return withCRC(b)
	}
	setByte := func(off int, v byte) []byte {
		b := append([]byte(nil), good...)
		b[off] = v
		return withCRC(b)
	}
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"vec":    {setByte(12, 7), "flag byte 7"},
		"diag":   {setByte(37, 7), "flag byte 7"},
		"print":  {set(38, 1), "fingerprint without a diagonal"},
		"since":  {set(46, 1000), "updates since refactor"},
		"direct": {setByte(54, 7), "flag byte 7"},
		"size":   {set(55, 6), "|S| = 6"},
		"item":   {set(63, 30), "item = 30"},
		"neg":    {set(63, ^uint64(0)), "item = -1"},
		"short":  {withCRC(good[:60]), "truncated"},
		"long":   {withCRC(append(append([]byte(nil), good[:len(good)-4]...), make([]byte, 12)...)), "trailing"},
	} {
		require.ErrorContains(t, mustFast(t, m, 5).UnmarshalBinary(tc.data), tc.want, name)
	}
}

// FuzzUnmarshalBinary: arbitrary input never panics, and an accepted state
// can be used.
func FuzzUnmarshalBinary(f *testing.F) {
	m := ndpp.Random(30, 4, 3, ndpp.RandomOptions{})
	fast, _ := NewFast(m, 5)
	naive, _ := NewNaive(m, 5)
	for _, o := range []Oracle{fast, naive} {
		r := newOpRun(f, o, 1, logTolIll)
		for i := 0; i < 8; i++ {
			r.step()
		}
		b, _ := o.MarshalBinary()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, mk := range []func() Oracle{
			func() Oracle { o, _ := NewFast(m, 5); return o },
			func() Oracle { o, _ := NewNaive(m, 5); return o },
		} {
			for _, d := range [][]byte{data, withCRC(data)} {
				o := mk()
				if o.UnmarshalBinary(d) != nil {
					continue
				}
				c := o.NewCand()
				o.Prepare(c, 0)
				_ = o.AddValue(c)
				dst := make([]ndpp.Value, o.Cap())
				o.SwapValues(c, dst)
			}
		}
	})
}
