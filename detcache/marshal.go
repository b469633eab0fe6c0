package detcache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"math"
	"strings"

	"github.com/ndpp-go/ndpp/internal/binfmt"
	"github.com/ndpp-go/ndpp/ndpp"
)

// Oracle states are binfmt states: a magic naming the implementation,
// format version stateVersion, the body below, and a CRC-32C. Version 2,
// the same body without the diagonal's record in the header, is read as a
// state of a model without a diagonal.
const (
	magicFast       = "NDPPDCFS"
	magicNaive      = "NDPPDCNS"
	stateVersion    = 3
	noDiagVersion   = 2 // the last version without the diagonal's record
	minStateVersion = noDiagVersion
)

// legacyMagics are the magics of the format before binfmt (version 1, an
// IEEE CRC-32), which is no longer read.
var legacyMagics = map[string]string{magicFast: "NDPPDCF1", magicNaive: "NDPPDCN1"}

// newStateDecoder opens a state of the given magic; what names it in
// errors. A state of the format before binfmt (version 1) is refused with
// its version named.
func newStateDecoder(data []byte, what, magic string) (*binfmt.Decoder, error) {
	if old := legacyMagics[magic]; strings.HasPrefix(string(data), old) {
		return nil, fmt.Errorf("%s: format version 1 (magic %q) is no longer read; this build reads versions %d to %d", what, old, minStateVersion, stateVersion)
	}
	return binfmt.NewDecoder(data, what, magic, minStateVersion, stateVersion)
}

// diagPrint is the fingerprint of a model's diagonal that a state records,
// so that it restores only onto a model with the same diagonal: a CRC-64
// (ECMA) of the bits of δ₀ … δₙ₋₁, computed once per oracle on first use.
type diagPrint struct {
	sum  uint64
	done bool
}

var crc64Table = crc64.MakeTable(crc64.ECMA)

// of returns the fingerprint of m's diagonal (0 without one, which the
// header tells apart by a flag).
func (p *diagPrint) of(m *ndpp.Model) uint64 {
	if !m.HasDiag() {
		return 0
	}
	if !p.done {
		h := crc64.New(crc64Table)
		var buf [8 * 512]byte
		for lo := 0; lo < m.N(); lo += 512 {
			b := buf[:0]
			for i := lo; i < min(lo+512, m.N()); i++ {
				b = binary.LittleEndian.AppendUint64(b, math.Float64bits(m.ItemDiag(i)))
			}
			h.Write(b)
		}
		p.sum, p.done = h.Sum64(), true
	}
	return p.sum
}

// The header records the model's n and d, the capacity and the diagonal
// (a flag and its fingerprint), which the restoring oracle must share.
func encodeHeader(e *binfmt.Encoder, m *ndpp.Model, p *diagPrint, capacity int) {
	e.Int(m.N())
	e.Int(m.D())
	e.Int(capacity)
	e.Bool(m.HasDiag())
	e.U64(p.of(m))
}

func decodeHeader(dec *binfmt.Decoder, m *ndpp.Model, p *diagPrint, capacity int) error {
	n, d := m.N(), m.D()
	gn, gd, gc := dec.I64(), dec.I64(), dec.I64()
	var hasDiag bool
	var sum uint64
	if dec.Version() > noDiagVersion {
		hasDiag, sum = dec.Bool(), dec.U64()
	}
	if err := dec.Err(); err != nil {
		return err
	}
	if gn != int64(n) || gd != int64(d) || gc != int64(capacity) {
		return fmt.Errorf("detcache: state is for n = %d, d = %d, capacity = %d; this oracle has n = %d, d = %d, capacity = %d",
			gn, gd, gc, n, d, capacity)
	}
	if !hasDiag && sum != 0 {
		return errors.New("detcache: corrupt state: a diagonal's fingerprint without a diagonal")
	}
	switch {
	case hasDiag == m.HasDiag() && sum == p.of(m):
		return nil
	case dec.Version() == noDiagVersion:
		return fmt.Errorf("detcache: state of format version %d (for models without a diagonal) cannot restore onto a model with a diagonal", noDiagVersion)
	case !hasDiag:
		return errors.New("detcache: state is for a model without a diagonal; this oracle's model has one")
	case !m.HasDiag():
		return errors.New("detcache: state is for a model with a diagonal; this oracle's model has none")
	}
	return fmt.Errorf("detcache: state is for a model with another diagonal (fingerprint %016x; this oracle's model has %016x)", sum, p.of(m))
}

// encodeItems writes |S| and the items; decodeItems reads them back (|S| at
// most capacity, every item in [0, n)) into a slice of that capacity.
func encodeItems(e *binfmt.Encoder, items []int) {
	e.Int(len(items))
	for _, it := range items {
		e.Int(it)
	}
}

func decodeItems(dec *binfmt.Decoder, n, capacity int) []int {
	k := dec.Int("|S|", 0, capacity)
	items := make([]int, k, capacity)
	for i := range items {
		items[i] = dec.Int("item", 0, n-1)
	}
	return items
}

func encodeValue(e *binfmt.Encoder, v Value) {
	e.F64(v.Log)
	e.Bool(v.Zero)
}

func decodeValue(dec *binfmt.Decoder) Value {
	return Value{Log: dec.F64(), Zero: dec.Bool()}
}

func encodeStats(e *binfmt.Encoder, s Stats) {
	e.I64(s.Evals)
	e.I64(s.Updates)
	e.I64(s.Refactors)
	e.I64(s.Fallbacks)
	e.F64(s.MaxDrift)
	e.F64(s.MaxLogDetDrift)
}

func decodeStats(dec *binfmt.Decoder) Stats {
	var s Stats
	s.Evals = dec.I64()
	s.Updates = dec.I64()
	s.Refactors = dec.I64()
	s.Fallbacks = dec.I64()
	s.MaxDrift = dec.F64()
	s.MaxLogDetDrift = dec.F64()
	return s
}

// MarshalBinary saves the exact state (solution, M, M⁻¹, log det, mode and
// counters), so that a restored oracle continues bit-identically. The model
// is not saved: restore into an oracle built with the same model and
// capacity.
func (o *Fast) MarshalBinary() ([]byte, error) {
	e := binfmt.NewEncoder(magicFast, stateVersion)
	k, ld := len(o.items), o.cap
	encodeHeader(e, o.m, &o.dprint, o.cap)
	e.Int(o.since)
	e.Bool(o.direct)
	encodeItems(e, o.items)
	e.F64(o.logDet)
	e.F64(o.kacc)
	e.F64(o.einv)
	encodeValue(e, o.value)
	rows := make([]float64, 0, k*k)
	for i := 0; i < k; i++ {
		rows = append(rows, o.mk[i*ld:i*ld+k]...)
	}
	e.F64s(rows)
	rows = rows[:0]
	for i := 0; i < k; i++ {
		rows = append(rows, o.inv[i*ld:i*ld+k]...)
	}
	e.F64s(rows)
	encodeStats(e, o.stats)
	return e.Finish()
}

// UnmarshalBinary restores a state saved by MarshalBinary. It returns an
// error for corrupt data (bad magic, version, checksum, sizes, items,
// non-finite entries), for a state of the format before binfmt and for a
// state saved with a different n, d, capacity or diagonal; o is unchanged
// on error. Cands and Blocks prepared before must be prepared again.
func (o *Fast) UnmarshalBinary(data []byte) error {
	dec, err := newStateDecoder(data, "detcache: fast oracle state", magicFast)
	if err != nil {
		return err
	}
	if err := decodeHeader(dec, o.m, &o.dprint, o.cap); err != nil {
		return err
	}
	since := dec.Int("updates since refactor", 0, RefactorEvery)
	direct := dec.Bool()
	items := decodeItems(dec, o.m.N(), o.cap)
	k := len(items)
	logDet := dec.F64()
	kacc, einv := dec.F64(), dec.F64()
	v := decodeValue(dec)
	mk := dec.F64sLen("M", k*k)
	inv := dec.F64sLen("M⁻¹", k*k)
	stats := decodeStats(dec)
	if err := dec.Done(); err != nil {
		return err
	}
	if hasDup(items) {
		return fmt.Errorf("detcache: corrupt state: repeated item in S")
	}
	if !(kacc >= 1 && kacc <= math.MaxFloat64) || !(einv >= 0 && einv <= math.MaxFloat64) {
		return fmt.Errorf("detcache: corrupt state: condition record (%g, %g)", kacc, einv)
	}
	for _, x := range append(mk, inv...) {
		if !isFinite(x) {
			return fmt.Errorf("detcache: corrupt state: non-finite matrix entry")
		}
	}
	ld := o.cap
	o.items = items
	for p, it := range items {
		o.setRow(p, it)
		copy(o.mk[p*ld:p*ld+k], mk[p*k:(p+1)*k])
		copy(o.inv[p*ld:p*ld+k], inv[p*k:(p+1)*k])
	}
	o.logDet, o.value, o.direct, o.since, o.stats = logDet, v, direct, since, stats
	o.kacc, o.gamma, o.einv = kacc, GammaSafety*kacc*eps, einv
	o.setLogDetE()
	// Cands prepared before are refreshed on use. The version and stamps
	// only track this object's Cands, so they are not part of the state.
	o.version++
	o.chgN = -1
	return nil
}

// MarshalBinary saves the solution and the counters. The model is not
// saved: restore into an oracle built with the same model and capacity.
func (o *Naive) MarshalBinary() ([]byte, error) {
	e := binfmt.NewEncoder(magicNaive, stateVersion)
	encodeHeader(e, o.m, &o.dprint, o.cap)
	encodeItems(e, o.items)
	encodeValue(e, o.value)
	encodeStats(e, o.stats)
	return e.Finish()
}

// UnmarshalBinary restores a state saved by MarshalBinary. It returns an
// error for corrupt data, for a state of the format before binfmt and for a
// state saved with a different n, d, capacity or diagonal; o is unchanged
// on error. Cands prepared before must be prepared again.
func (o *Naive) UnmarshalBinary(data []byte) error {
	dec, err := newStateDecoder(data, "detcache: naive oracle state", magicNaive)
	if err != nil {
		return err
	}
	if err := decodeHeader(dec, o.m, &o.dprint, o.cap); err != nil {
		return err
	}
	items := decodeItems(dec, o.m.N(), o.cap)
	v := decodeValue(dec)
	stats := decodeStats(dec)
	if err := dec.Done(); err != nil {
		return err
	}
	if hasDup(items) {
		return fmt.Errorf("detcache: corrupt state: repeated item in S")
	}
	o.items, o.value, o.stats = items, v, stats
	// Cands prepared before are refreshed on use (the version is not part
	// of the state).
	o.version++
	return nil
}
