package npz

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// maxNPYHeader bounds the NPY header length we accept (numpy itself writes
// headers of a few hundred bytes and refuses ones above 10,000 by default).
const maxNPYHeader = 1 << 20

// NPY arrays are read and written here rather than with a general NPY
// library: errors must be values that name the problem (never panics on
// malformed headers, never truncated data read as zeros), and the written
// bytes must not change between versions.

// npyOut is one array to write: its dtype, shape and the values of the
// slice that matches the dtype ("<f8": f64, "<i8": i64, "|u1": u8), in
// row-major order.
type npyOut struct {
	descr string
	shape []int
	f64   []float64
	i64   []int64
	u8    []byte
}

// npyWriteVersion is the NPY format version npz writes: 2.0, whose header
// length is a uint32.
const npyWriteVersion = 2

// appendNPYHeader appends the NPY header of an array: the magic string,
// format version 2.0, the header length (uint32, little-endian) and the
// header, a Python dict literal such as
//
//	{'descr': '<f8', 'fortran_order': False, 'shape': (12, 3), }
//
// followed by p spaces and '\n', where p = (12 + len(dict) + 1) mod 16.
// This is the layout ndpp's model files have always had (p is not numpy's
// padding to a multiple of 64 bytes, which numpy.load does not require), so
// the bytes of a model file depend only on the model.
func appendNPYHeader(dst []byte, descr string, shape []int) []byte {
	dict := "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shapeString(shape) + ", }"
	const prefix = 12 // magic, version, header length
	pad := (prefix + len(dict) + 1) % 16
	dst = append(dst, npyMagic...)
	dst = append(dst, npyWriteVersion, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(dict)+pad+1))
	dst = append(dst, dict...)
	for range pad {
		dst = append(dst, ' ')
	}
	return append(dst, '\n')
}

// write writes the array as an NPY stream: the header, then the values
// little-endian, in pieces of at most 64 KiB.
func (a npyOut) write(w io.Writer) error {
	buf := appendNPYHeader(make([]byte, 0, 1<<16), a.descr, a.shape)
	flush := func() error {
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	const full = 1<<16 - 8
	for _, x := range a.f64 {
		if len(buf) > full {
			if err := flush(); err != nil {
				return err
			}
		}
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(x))
	}
	for _, x := range a.i64 {
		if len(buf) > full {
			if err := flush(); err != nil {
				return err
			}
		}
		buf = binary.LittleEndian.AppendUint64(buf, uint64(x))
	}
	if len(a.u8) > 0 {
		if err := flush(); err != nil {
			return err
		}
		if _, err := w.Write(a.u8); err != nil {
			return err
		}
	}
	if len(buf) > 0 {
		return flush()
	}
	return nil
}

// npyArray is one decoded .npy array: raw element bytes plus the metadata
// needed to convert them.
type npyArray struct {
	descr   string
	kind    byte // 'f', 'i', 'u' or 'b'
	size    int  // bytes per element
	order   binary.ByteOrder
	fortran bool
	shape   []int
	data    []byte
}

var npyMagic = []byte("\x93NUMPY")

func readNPYEntry(f *zip.File, reserve func(count, bytes uint64) error) (*npyArray, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("cannot open zip entry: %w", err)
	}
	defer rc.Close()
	return readNPY(rc, f.UncompressedSize64, reserve)
}

// NPYHeader is what the header of an .npy stream says about its data: the
// dtype (Descr as written; Kind 'f', 'i', 'u' or 'b' and Size bytes per
// element in byte order Order), the layout and the shape.
type NPYHeader struct {
	Descr   string
	Kind    byte
	Size    int
	Order   binary.ByteOrder
	Fortran bool
	Shape   []int
}

// ReadNPYHeader reads the magic, version and header of an .npy stream from
// r and leaves r at the first data byte, so that the data can be read
// sequentially (also from a pipe). Errors name the problem, as for arrays
// in model files.
func ReadNPYHeader(r io.Reader) (NPYHeader, error) {
	a, _, err := readNPYHeader(r, math.MaxUint64)
	if err != nil {
		return NPYHeader{}, err
	}
	return NPYHeader{Descr: a.descr, Kind: a.kind, Size: a.size, Order: a.order, Fortran: a.fortran, Shape: a.shape}, nil
}

// AppendNPYHeader appends the header of a C-order array of the given dtype
// (e.g. "<f8", "<f4") and shape as npz writes them (NPY format version 2.0),
// for writers that stream the data after it.
func AppendNPYHeader(dst []byte, descr string, shape []int) []byte {
	return appendNPYHeader(dst, descr, shape)
}

// readNPYHeader reads an .npy header from a stream of at most size bytes
// and returns the array's metadata and the header's length in bytes.
func readNPYHeader(r io.Reader, size uint64) (*npyArray, uint64, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, 0, fmt.Errorf("truncated NPY header: %w", err)
	}
	if !bytes.Equal(pre[:6], npyMagic) {
		return nil, 0, errors.New("not an NPY array (bad magic bytes)")
	}
	major, minor := pre[6], pre[7]
	var hlen, prefix uint64
	switch major {
	case 1:
		var l [2]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return nil, 0, fmt.Errorf("truncated NPY header: %w", err)
		}
		hlen, prefix = uint64(binary.LittleEndian.Uint16(l[:])), 10
	case 2, 3:
		var l [4]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return nil, 0, fmt.Errorf("truncated NPY header: %w", err)
		}
		hlen, prefix = uint64(binary.LittleEndian.Uint32(l[:])), 12
	default:
		return nil, 0, fmt.Errorf("unsupported NPY format version %d.%d", major, minor)
	}
	if hlen > maxNPYHeader {
		return nil, 0, fmt.Errorf("NPY header of %d bytes is too long", hlen)
	}
	if prefix+hlen > size {
		return nil, 0, fmt.Errorf("truncated NPY header: %d bytes declared, entry has %d", prefix+hlen, size)
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, 0, fmt.Errorf("truncated NPY header: %w", err)
	}
	a, err := parseNPYHeader(string(hdr))
	if err != nil {
		return nil, 0, fmt.Errorf("bad NPY header: %w", err)
	}
	return a, prefix + hlen, nil
}

// readNPY decodes an .npy stream whose total length is declared as size
// bytes. It never allocates more than the data actually present. reserve,
// when not nil, is called with the element count and data bytes that the
// header declares before any data is read; its error stops the reading.
func readNPY(r io.Reader, size uint64, reserve func(count, bytes uint64) error) (*npyArray, error) {
	a, hl, err := readNPYHeader(r, size)
	if err != nil {
		return nil, err
	}
	const maxElems = 1 << 52
	count := uint64(1)
	for _, s := range a.shape {
		if s != 0 && count > maxElems/uint64(s) {
			return nil, fmt.Errorf("shape %s is too large", shapeString(a.shape))
		}
		count *= uint64(s)
	}
	want := count * uint64(a.size)
	if avail := size - hl; want > avail {
		return nil, fmt.Errorf("truncated data: shape %s of %s needs %d bytes, entry has %d", shapeString(a.shape), a.descr, want, avail)
	}
	if reserve != nil {
		if err := reserve(count, want); err != nil {
			return nil, err
		}
	}
	// Read one byte more than needed so that the zip reader reaches the end
	// of the entry (and verifies its CRC) and trailing garbage is detected.
	data, err := io.ReadAll(io.LimitReader(r, int64(want)+1))
	if err != nil {
		return nil, fmt.Errorf("reading data: %w", err)
	}
	switch {
	case uint64(len(data)) < want:
		return nil, fmt.Errorf("truncated data: %d of %d bytes", len(data), want)
	case uint64(len(data)) > want:
		return nil, fmt.Errorf("unexpected bytes after the %d data bytes of shape %s", want, shapeString(a.shape))
	}
	a.data = data
	return a, nil
}

// parseNPYHeader parses the Python dict literal of an NPY header, e.g.
// {'descr': '<f8', 'fortran_order': False, 'shape': (12, 3), }.
func parseNPYHeader(s string) (*npyArray, error) {
	p := &pyParser{s: s}
	p.ws()
	if !p.eat('{') {
		return nil, errors.New("header is not a dict")
	}
	var (
		a                   npyArray
		haveD, haveF, haveS bool
		descrVal            string
		fortranVal          bool
		shapeVal            []int
		seen                = map[string]bool{}
	)
	errWant := func(k, what string) error { return fmt.Errorf("%s must be %s", k, what) }
	for {
		p.ws()
		if p.eat('}') {
			break
		}
		key, err := p.str()
		if err != nil {
			return nil, fmt.Errorf("dict key: %w", err)
		}
		if seen[key] {
			return nil, fmt.Errorf("key %q repeated", key)
		}
		seen[key] = true
		p.ws()
		if !p.eat(':') {
			return nil, fmt.Errorf("missing ':' after key %q", key)
		}
		p.ws()
		switch key {
		case "descr":
			if descrVal, err = p.str(); err != nil {
				if p.peek() == '[' {
					return nil, errors.New("structured dtypes are not supported; want a plain float array")
				}
				return nil, errWant("descr", "a dtype string")
			}
			haveD = true
		case "fortran_order":
			if fortranVal, err = p.boolean(); err != nil {
				return nil, errWant("fortran_order", "True or False")
			}
			haveF = true
		case "shape":
			if shapeVal, err = p.tuple(); err != nil {
				return nil, fmt.Errorf("shape: %w", err)
			}
			haveS = true
		default:
			return nil, fmt.Errorf("unexpected key %q", key)
		}
		p.ws()
		if p.eat(',') {
			continue
		}
		p.ws()
		if p.eat('}') {
			break
		}
		return nil, fmt.Errorf("expected ',' or '}' at offset %d", p.i)
	}
	if strings.TrimSpace(p.s[p.i:]) != "" {
		return nil, errors.New("text after the header dict")
	}
	if !haveD || !haveF || !haveS {
		return nil, errors.New("header lacks one of 'descr', 'fortran_order', 'shape'")
	}
	if err := a.setDescr(descrVal); err != nil {
		return nil, err
	}
	a.fortran = fortranVal
	a.shape = shapeVal
	return &a, nil
}

func (a *npyArray) setDescr(s string) error {
	a.descr = s
	if len(s) < 2 {
		return fmt.Errorf("unsupported dtype %q", s)
	}
	body := s
	order := binary.ByteOrder(binary.LittleEndian)
	switch s[0] {
	case '<', '=': // '=' is native; numpy writes '<' or '>' explicitly
		body = s[1:]
	case '>':
		body, order = s[1:], binary.BigEndian
	case '|':
		body = s[1:]
	}
	if len(body) < 2 {
		return fmt.Errorf("unsupported dtype %q", s)
	}
	kind := body[0]
	var size int
	switch body[1:] {
	case "1":
		size = 1
	case "2":
		size = 2
	case "4":
		size = 4
	case "8":
		size = 8
	default:
		return fmt.Errorf("unsupported dtype %q", s)
	}
	switch {
	case kind == 'f' && (size == 4 || size == 8):
	case kind == 'i' || kind == 'u':
	case kind == 'b' && size == 1:
	default:
		return fmt.Errorf("unsupported dtype %q", s)
	}
	a.kind, a.size, a.order = kind, size, order
	return nil
}

// index maps a row-major element index to its position in the data.
func (a *npyArray) index(k int) int {
	if !a.fortran || len(a.shape) < 2 {
		return k
	}
	if len(a.shape) != 2 {
		// Only 1-D and 2-D arrays reach conversion.
		panic("npz: internal: Fortran index of an array with more than 2 dimensions")
	}
	r, c := a.shape[0], a.shape[1]
	i, j := k/c, k%c
	return j*r + i
}

func (a *npyArray) count() int { return len(a.data) / a.size }

func (a *npyArray) float64s() ([]float64, error) {
	if a.kind != 'f' {
		return nil, fmt.Errorf("dtype %s is not a float array; want float64 ('<f8') or float32 ('<f4')", a.descr)
	}
	n := a.count()
	out := make([]float64, n)
	if !a.fortran && a.size == 8 && a.order == binary.LittleEndian {
		// The common case (numpy on little-endian machines): a straight copy.
		for k := range out {
			out[k] = math.Float64frombits(binary.LittleEndian.Uint64(a.data[8*k:]))
		}
		return out, nil
	}
	for k := range out {
		p := a.index(k) * a.size
		if a.size == 8 {
			out[k] = math.Float64frombits(a.order.Uint64(a.data[p:]))
		} else {
			out[k] = float64(math.Float32frombits(a.order.Uint32(a.data[p:])))
		}
	}
	return out, nil
}

func (a *npyArray) int64s() ([]int64, error) {
	if a.kind != 'i' && a.kind != 'u' {
		return nil, fmt.Errorf("dtype %s is not an integer array; want int64 ('<i8')", a.descr)
	}
	out := make([]int64, a.count())
	for k := range out {
		p := a.data[a.index(k)*a.size:]
		var u uint64
		switch a.size {
		case 1:
			u = uint64(p[0])
		case 2:
			u = uint64(a.order.Uint16(p))
		case 4:
			u = uint64(a.order.Uint32(p))
		case 8:
			u = a.order.Uint64(p)
		}
		if a.kind == 'i' {
			shift := 64 - 8*uint(a.size)
			out[k] = int64(u<<shift) >> shift // sign-extend
		} else {
			if u > math.MaxInt64 {
				return nil, fmt.Errorf("value %d at index %d does not fit in int64", u, k)
			}
			out[k] = int64(u)
		}
	}
	return out, nil
}

func (a *npyArray) bytes() ([]byte, error) {
	if a.size != 1 || (a.kind != 'u' && a.kind != 'i') {
		return nil, fmt.Errorf("dtype %s is not a byte array; want uint8 ('|u1')", a.descr)
	}
	return a.data, nil
}

func shapeString(shape []int) string {
	var sb strings.Builder
	sb.WriteByte('(')
	for i, s := range shape {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprint(&sb, s)
	}
	if len(shape) == 1 {
		sb.WriteByte(',')
	}
	sb.WriteByte(')')
	return sb.String()
}

// shapeDims renders a 2-D shape as "r×c" and anything else as a tuple.
func shapeDims(shape []int) string {
	if len(shape) == 2 {
		return fmt.Sprintf("%d×%d", shape[0], shape[1])
	}
	return "of shape " + shapeString(shape)
}

// pyParser reads the small subset of Python literals used in NPY headers.
type pyParser struct {
	s string
	i int
}

func (p *pyParser) ws() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *pyParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *pyParser) eat(c byte) bool {
	if p.peek() == c && p.i < len(p.s) {
		p.i++
		return true
	}
	return false
}

func (p *pyParser) str() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", errors.New("expected a quoted string")
	}
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", errors.New("unterminated string")
	}
	v := p.s[p.i+1 : p.i+1+end]
	if strings.IndexByte(v, '\\') >= 0 {
		return "", errors.New("escapes in strings are not supported")
	}
	p.i += end + 2
	return v, nil
}

func (p *pyParser) boolean() (bool, error) {
	switch {
	case strings.HasPrefix(p.s[p.i:], "True"):
		p.i += 4
		return true, nil
	case strings.HasPrefix(p.s[p.i:], "False"):
		p.i += 5
		return false, nil
	}
	return false, errors.New("expected True or False")
}

// tuple parses (), (n,), (n, m) and so on; Python 2's "3L" is accepted.
func (p *pyParser) tuple() ([]int, error) {
	if !p.eat('(') {
		return nil, errors.New("expected a tuple")
	}
	out := []int{}
	for {
		p.ws()
		if p.eat(')') {
			return out, nil
		}
		start := p.i
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		digits := p.s[start:p.i]
		if digits == "" {
			return nil, errors.New("expected a non-negative integer")
		}
		if len(digits) > 15 {
			return nil, fmt.Errorf("dimension %s is too large", digits)
		}
		v := 0
		for _, ch := range digits {
			v = v*10 + int(ch-'0')
		}
		out = append(out, v)
		if len(out) > 32 {
			return nil, errors.New("more than 32 dimensions")
		}
		p.eat('L')
		p.ws()
		if p.eat(',') {
			continue
		}
		p.ws()
		if p.eat(')') {
			// "(n)" is an int in Python, not a tuple; numpy never writes
			// it, and reading it as (n,) is harmless.
			return out, nil
		}
		return nil, errors.New("expected ',' or ')'")
	}
}
