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
// format version stateVersion, the body below, and a CRC-32C. Version 4
// starts with a flag telling a vector kernel's state (which records d, the
// capacity, B = V, the diagonal flag and a CRC-64 of C in its header and
// the vectors of S after the items) from a model's; versions 2 and 3 are
// states of model-backed oracles (version 2 without the diagonal's record,
// read as a state of a model without a diagonal), read by model-backed
// oracles only.
const (
	magicFast       = "NDPPDCFS"
	magicNaive      = "NDPPDCNS"
	stateVersion    = 4
	noDiagVersion   = 2 // the last version without the diagonal's record
	noVecVersion    = 3 // the last version without vector kernels
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

// kernelPrint is a CRC-64 (ECMA) of the bits of a kernel's C.
func kernelPrint(c []float64) uint64 {
	h := crc64.New(crc64Table)
	b := make([]byte, 0, 8*len(c))
	for _, x := range c {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	h.Write(b)
	return h.Sum64()
}

// encodeStateHeader writes the vector flag and the header: the kernel's
// for a vector oracle (m nil), the model's otherwise.
func encodeStateHeader(e *binfmt.Encoder, m *ndpp.Model, k *ndpp.Kernel, p *diagPrint, capacity int) {
	e.Bool(m == nil)
	if m != nil {
		encodeHeader(e, m, p, capacity)
		return
	}
	e.Int(k.D)
	e.Int(capacity)
	e.Bool(k.Shared)
	e.Bool(k.Diag)
	e.U64(kernelPrint(k.C))
}

// decodeStateHeader reads what encodeStateHeader wrote (or a header of
// version 2 or 3) and checks it against the restoring oracle.
func decodeStateHeader(dec *binfmt.Decoder, m *ndpp.Model, k *ndpp.Kernel, p *diagPrint, capacity int) error {
	vec := false
	if dec.Version() > noVecVersion {
		vec = dec.Bool()
	}
	if err := dec.Err(); err != nil {
		return err
	}
	switch {
	case !vec && m == nil:
		return fmt.Errorf("detcache: state is of a model-backed oracle (format version %d); this oracle reads vector items", dec.Version())
	case vec && m != nil:
		return errors.New("detcache: state is of an oracle of vector items; this oracle is model-backed")
	case !vec:
		return decodeHeader(dec, m, p, capacity)
	}
	gd, gc := dec.I64(), dec.I64()
	shared, diag, sum := dec.Bool(), dec.Bool(), dec.U64()
	if err := dec.Err(); err != nil {
		return err
	}
	if gd != int64(k.D) || gc != int64(capacity) || shared != k.Shared || diag != k.Diag {
		return fmt.Errorf("detcache: state is for d = %d, capacity = %d, B = V %v, diagonal %v; this oracle has d = %d, capacity = %d, B = V %v, diagonal %v",
			gd, gc, shared, diag, k.D, capacity, k.Shared, k.Diag)
	}
	if sum != kernelPrint(k.C) {
		return fmt.Errorf("detcache: state is for another kernel C (fingerprint %016x; this oracle's C has %016x)", sum, kernelPrint(k.C))
	}
	return nil
}

// encodeRows writes the vectors of S of a vector oracle: k×d V rows, k×d
// B rows (omitted when B = V) and k diagonal entries.
func encodeRows(e *binfmt.Encoder, k *ndpp.Kernel, rows func(i int) row, n int) {
	buf := make([]float64, 0, n*k.D)
	for i := 0; i < n; i++ {
		buf = append(buf, rows(i).v...)
	}
	e.F64s(buf)
	if !k.Shared {
		buf = buf[:0]
		for i := 0; i < n; i++ {
			buf = append(buf, rows(i).b...)
		}
		e.F64s(buf)
	}
	buf = buf[:0]
	for i := 0; i < n; i++ {
		buf = append(buf, rows(i).delta)
	}
	e.F64s(buf)
}

// decodeRows reads encodeRows' vectors of n items as Items (validated with
// ndpp.CheckItem).
func decodeRows(dec *binfmt.Decoder, k *ndpp.Kernel, ids []int) ([]ndpp.Item, error) {
	n, d := len(ids), k.D
	v := dec.F64sLen("V rows", n*d)
	var b []float64
	if !k.Shared {
		b = dec.F64sLen("B rows", n*d)
	}
	delta := dec.F64sLen("diagonal", n)
	if err := dec.Err(); err != nil {
		return nil, err
	}
	out := make([]ndpp.Item, n)
	for i, id := range ids {
		out[i] = ndpp.Item{ID: id, V: v[i*d : (i+1)*d], Delta: delta[i]}
		if b != nil {
			out[i].B = b[i*d : (i+1)*d]
		}
		if err := ndpp.CheckItem(*k, out[i]); err != nil {
			return nil, fmt.Errorf("detcache: corrupt state: %w", err)
		}
	}
	return out, nil
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
	hi := n - 1
	if n < 0 { // vector items: any id
		hi = math.MaxInt
	}
	for i := range items {
		items[i] = dec.Int("item", 0, hi)
	}
	return items
}

func encodeValue(e *binfmt.Encoder, v ndpp.Value) {
	e.F64(v.Log)
	e.Bool(v.Zero)
}

func decodeValue(dec *binfmt.Decoder) ndpp.Value {
	return ndpp.Value{Log: dec.F64(), Zero: dec.Bool()}
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
//
// MarshalBinary saves the solution, M, M⁻¹, log det M, the conditioning
// record and the counters in the project's binary format (internal/binfmt:
// magic, version 4, CRC-32C). A model-backed oracle's state records the
// model's n, d, the capacity and whether it has a diagonal with a CRC-64 of
// δ (not the model), and restores only onto an oracle of the same model and
// capacity; a vector oracle's state records d, the capacity, B = V, the
// diagonal flag and a CRC-64 of C, and carries the vectors of S (v, b, δ),
// so that it restores onto a fresh oracle of the same kernel. Either
// continues bit-identically. Corrupt input (bad magic, version, checksum,
// sizes, items, non-finite entries), states of the other kind, and states
// of the format before binfmt (version 1) are errors; states of versions 3
// and 2 (model-backed oracles; version 2 did not record the diagonal and is
// read as a state of a model without one) are read by model-backed oracles.
func (o *Fast) MarshalBinary() ([]byte, error) {
	e := binfmt.NewEncoder(magicFast, stateVersion)
	k, ld := len(o.items), o.cap
	encodeStateHeader(e, o.m, &o.kern, &o.dprint, o.cap)
	e.Int(o.since)
	e.Bool(o.direct)
	encodeItems(e, o.items)
	if o.m == nil {
		encodeRows(e, &o.kern, o.sRow, k)
	}
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
	if err := decodeStateHeader(dec, o.m, &o.kern, &o.dprint, o.cap); err != nil {
		return err
	}
	since := dec.Int("updates since refactor", 0, RefactorEvery)
	direct := dec.Bool()
	items := decodeItems(dec, o.N(), o.cap)
	k := len(items)
	var vecs []ndpp.Item
	if o.m == nil {
		if vecs, err = decodeRows(dec, &o.kern, items); err != nil {
			return err
		}
	}
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
	var buf []float64
	if o.m == nil {
		buf = make([]float64, 3*o.d)
	}
	for p, it := range items {
		if o.m != nil {
			o.setRow(p, modelRow(o.m, it))
		} else {
			o.setRow(p, itemRow(&o.kern, vecs[p], buf))
		}
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
	encodeStateHeader(e, o.m, &o.kern, &o.dprint, o.cap)
	encodeItems(e, o.items)
	if o.m == nil {
		encodeRows(e, &o.kern, func(i int) row { return o.rows[i] }, len(o.items))
	}
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
	if err := decodeStateHeader(dec, o.m, &o.kern, &o.dprint, o.cap); err != nil {
		return err
	}
	items := decodeItems(dec, o.N(), o.cap)
	var vecs []ndpp.Item
	if o.m == nil {
		if vecs, err = decodeRows(dec, &o.kern, items); err != nil {
			return err
		}
	}
	v := decodeValue(dec)
	stats := decodeStats(dec)
	if err := dec.Done(); err != nil {
		return err
	}
	if hasDup(items) {
		return fmt.Errorf("detcache: corrupt state: repeated item in S")
	}
	o.items, o.value, o.stats = items, v, stats
	o.rows = o.rows[:0]
	var buf []float64
	if o.m == nil {
		buf = make([]float64, 3*o.kern.D)
	}
	for p, it := range items {
		if o.m != nil {
			o.setRow(p, modelRow(o.m, it))
		} else {
			o.setRow(p, itemRow(&o.kern, vecs[p], buf))
		}
	}
	// Cands prepared before are refreshed on use (the version is not part
	// of the state).
	o.version++
	return nil
}
