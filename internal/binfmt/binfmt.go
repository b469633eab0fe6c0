// Package binfmt is the one binary format behind every state ndpp saves
// (oracle and solver snapshots, learner checkpoints): an 8-byte magic that
// names the kind of state, a 4-byte format version, the body, and a CRC-32C
// (Castagnoli) of everything before it. Values are little-endian and
// fixed-width; float64s are stored by their bits, so a round trip is exact.
//
// An Encoder appends to memory or streams to an io.Writer, keeping the
// checksum as it goes; a Decoder checks the magic, the version range and the
// checksum before it returns any value, so a corrupt or truncated state is
// refused as a whole rather than read in part. Decoding errors are sticky:
// after the first one every read returns a zero value, and Err or Done
// reports it.
package binfmt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
)

// MagicLen is the length of every magic.
const MagicLen = 8

// headerLen is the magic and the version; trailerLen the checksum.
const (
	headerLen  = MagicLen + 4
	trailerLen = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encoder writes one state. Create it with NewEncoder (in memory) or
// NewStreamEncoder (to an io.Writer); finish it with Finish.
type Encoder struct {
	buf  []byte
	w    io.Writer   // nil: in memory
	crc  hash.Hash32 // streaming only
	err  error       // first write error (streaming only)
	done bool
}

// flushAt is the buffer size at which a streaming encoder writes out.
const flushAt = 1 << 16

// NewEncoder starts an in-memory state with the given magic (MagicLen
// bytes) and version. It panics on a magic of another length (a programmer
// error).
func NewEncoder(magic string, version uint32) *Encoder {
	e := &Encoder{}
	e.header(magic, version)
	return e
}

// NewStreamEncoder starts a state written to w as it is encoded, in pieces of
// about 64 KiB; Finish writes the rest and the checksum.
func NewStreamEncoder(w io.Writer, magic string, version uint32) *Encoder {
	e := &Encoder{w: w, crc: crc32.New(castagnoli)}
	e.header(magic, version)
	return e
}

func (e *Encoder) header(magic string, version uint32) {
	if len(magic) != MagicLen {
		panic(fmt.Sprintf("binfmt: magic %q is not %d bytes", magic, MagicLen))
	}
	e.buf = append(e.buf, magic...)
	e.buf = binary.LittleEndian.AppendUint32(e.buf, version)
}

func (e *Encoder) grew() {
	if e.w != nil && len(e.buf) >= flushAt {
		e.flush()
	}
}

func (e *Encoder) flush() {
	if e.err == nil && len(e.buf) > 0 {
		e.crc.Write(e.buf)
		_, e.err = e.w.Write(e.buf)
	}
	e.buf = e.buf[:0]
}

// U64 appends x.
func (e *Encoder) U64(x uint64) {
	e.buf = binary.LittleEndian.AppendUint64(e.buf, x)
	e.grew()
}

// I64 appends x.
func (e *Encoder) I64(x int64) { e.U64(uint64(x)) }

// Int appends x as an int64.
func (e *Encoder) Int(x int) { e.U64(uint64(int64(x))) }

// F64 appends the bits of x.
func (e *Encoder) F64(x float64) { e.U64(math.Float64bits(x)) }

// Bool appends one byte, 1 or 0.
func (e *Encoder) Bool(b bool) {
	if b {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
	e.grew()
}

// Bytes appends len(x) and x.
func (e *Encoder) Bytes(x []byte) {
	e.Int(len(x))
	for len(x) > 0 {
		n := min(len(x), flushAt)
		e.buf = append(e.buf, x[:n]...)
		x = x[n:]
		e.grew()
	}
}

// String appends len(s) and s.
func (e *Encoder) String(s string) { e.Bytes([]byte(s)) }

// F64s appends len(x) and the bits of every entry.
func (e *Encoder) F64s(x []float64) {
	e.Int(len(x))
	for _, v := range x {
		e.F64(v)
	}
}

// Ints appends len(x) and every entry as an int64.
func (e *Encoder) Ints(x []int) {
	e.Int(len(x))
	for _, v := range x {
		e.Int(v)
	}
}

// I64s appends len(x) and every entry.
func (e *Encoder) I64s(x []int64) {
	e.Int(len(x))
	for _, v := range x {
		e.I64(v)
	}
}

// Finish appends the checksum. In memory it returns the whole state (and a
// nil error); streaming, it writes what is buffered and the checksum and
// returns nil bytes and the first write error. An Encoder is finished once.
func (e *Encoder) Finish() ([]byte, error) {
	if e.done {
		return nil, errors.New("binfmt: Finish called twice")
	}
	e.done = true
	if e.w == nil {
		return binary.LittleEndian.AppendUint32(e.buf, crc32.Checksum(e.buf, castagnoli)), nil
	}
	e.flush()
	if e.err != nil {
		return nil, e.err
	}
	var sum [trailerLen]byte
	binary.LittleEndian.PutUint32(sum[:], e.crc.Sum32())
	_, e.err = e.w.Write(sum[:])
	return nil, e.err
}

// Decoder reads a state written by an Encoder.
type Decoder struct {
	what    string // names the state in errors, e.g. "detcache: oracle state"
	buf     []byte
	version uint32
	err     error
}

// NewDecoder checks data's magic, its version (minVersion ≤ version ≤
// maxVersion) and its checksum, and returns a Decoder positioned at the
// body. what names the state in error messages ("learn: online
// checkpoint"). The Decoder reads from data without copying it.
func NewDecoder(data []byte, what, magic string, minVersion, maxVersion uint32) (*Decoder, error) {
	if len(data) < headerLen+trailerLen {
		return nil, fmt.Errorf("%s: %d bytes is too short to be one", what, len(data))
	}
	if string(data[:MagicLen]) != magic {
		return nil, fmt.Errorf("%s: does not start with %q (another kind of state, or not a state)", what, magic)
	}
	v := binary.LittleEndian.Uint32(data[MagicLen:headerLen])
	if v < minVersion || v > maxVersion {
		return nil, fmt.Errorf("%s: format version %d; this build reads versions %d to %d", what, v, minVersion, maxVersion)
	}
	body, sum := data[:len(data)-trailerLen], binary.LittleEndian.Uint32(data[len(data)-trailerLen:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, fmt.Errorf("%s: checksum mismatch (corrupt or truncated)", what)
	}
	return &Decoder{what: what, buf: body[headerLen:], version: v}, nil
}

// Version is the format version of the state.
func (d *Decoder) Version() uint32 { return d.version }

// Err is the first error met, or nil.
func (d *Decoder) Err() error { return d.err }

// Fail records err (formatted with what's prefix) unless an error is
// already recorded; callers use it for their own consistency checks.
func (d *Decoder) Fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%s: corrupt: %s", d.what, fmt.Sprintf(format, args...))
	}
}

func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.buf) {
		d.err = fmt.Errorf("%s: corrupt: truncated", d.what)
		return nil
	}
	b := d.buf[:n:n]
	d.buf = d.buf[n:]
	return b
}

// U64 reads a uint64.
func (d *Decoder) U64() uint64 {
	b := d.take(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// I64 reads an int64.
func (d *Decoder) I64() int64 { return int64(d.U64()) }

// F64 reads a float64.
func (d *Decoder) F64() float64 { return math.Float64frombits(d.U64()) }

// Bool reads a byte that must be 0 or 1.
func (d *Decoder) Bool() bool {
	b := d.take(1)
	if b == nil {
		return false
	}
	if b[0] > 1 {
		d.Fail("flag byte %d", b[0])
		return false
	}
	return b[0] == 1
}

// Int reads an int64 that must lie in [lo, hi]; what names it in the error.
// On error it returns lo.
func (d *Decoder) Int(what string, lo, hi int) int {
	x := d.I64()
	if d.err == nil && (x < int64(lo) || x > int64(hi)) {
		d.Fail("%s = %d outside [%d, %d]", what, x, lo, hi)
	}
	if d.err != nil {
		return lo
	}
	return int(x)
}

// length reads a length prefix for entries of size bytes each, bounded by
// what is left.
func (d *Decoder) length(what string, size int) int {
	return d.Int(what+" length", 0, max(len(d.buf)-8, 0)/size)
}

// Bytes reads a length-prefixed byte string (a sub-slice of the data).
func (d *Decoder) Bytes(what string) []byte {
	n := d.Int(what+" length", 0, max(len(d.buf)-8, 0))
	return d.take(n)
}

// String reads a length-prefixed string.
func (d *Decoder) String(what string) string { return string(d.Bytes(what)) }

// F64s reads a length-prefixed float64 slice into a new slice.
func (d *Decoder) F64s(what string) []float64 {
	n := d.length(what, 8)
	if d.err != nil {
		return nil
	}
	x := make([]float64, n)
	for i := range x {
		x[i] = d.F64()
	}
	return x
}

// F64sLen is F64s for a slice whose length must be n.
func (d *Decoder) F64sLen(what string, n int) []float64 {
	x := d.F64s(what)
	if d.err == nil && len(x) != n {
		d.Fail("%s has %d entries, want %d", what, len(x), n)
	}
	if d.err != nil {
		return nil
	}
	return x
}

// Ints reads a length-prefixed slice of ints, each in [lo, hi].
func (d *Decoder) Ints(what string, lo, hi int) []int {
	n := d.length(what, 8)
	if d.err != nil {
		return nil
	}
	x := make([]int, n)
	for i := range x {
		x[i] = d.Int(what, lo, hi)
	}
	return x
}

// I64s reads a length-prefixed int64 slice.
func (d *Decoder) I64s(what string) []int64 {
	n := d.length(what, 8)
	if d.err != nil {
		return nil
	}
	x := make([]int64, n)
	for i := range x {
		x[i] = d.I64()
	}
	return x
}

// Done returns the first error, or an error if bytes are left unread.
func (d *Decoder) Done() error {
	if d.err == nil && len(d.buf) != 0 {
		d.Fail("%d unexpected trailing bytes", len(d.buf))
	}
	return d.err
}

// ReadAll reads a whole state from r, refusing more than limit bytes (so a
// wrong or hostile file cannot exhaust memory); what names it in errors.
func ReadAll(r io.Reader, what string, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than the limit of %d bytes", what, limit)
	}
	return data, nil
}
