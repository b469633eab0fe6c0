package ndpp

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/ndpp-go/ndpp/internal/atomicfile"
	"github.com/sbinet/npyio/npy"
	"gonum.org/v1/gonum/mat"
)

// maxNPYHeader bounds the NPY header length we accept (numpy itself writes
// headers of a few hundred bytes and refuses ones above 10,000 by default).
const maxNPYHeader = 1 << 20

// Load reads a model from an .npz file. Errors name the file and the
// problem (missing array, wrong dtype or shape, truncated or corrupt
// archive, invalid model such as a C that is not skew-symmetric).
//
// Model files are NumPy .npz archives (a zip of .npy arrays), the format
// numpy.savez writes and numpy.load reads, so that models move freely
// between this package and PyTorch/NumPy reference code:
//
//	V      float64, n×d   row i is vᵢ (the embedding-table layout)
//	B      float64, n×d   row i is bᵢ
//	C      float64, d×d   skew-symmetric
//	ids    int64, (n,)    optional external item ids (Model.IDs)
//	vocab  uint8, (len,)  optional item tokens (Model.Vocab) joined by '\n'
//
// Reading accepts float32 as well as float64 (converted exactly), ids of any
// integer width, little- and big-endian data, C and Fortran order, NPY
// format versions 1.0 to 3.0, and stored or deflated zip entries
// (numpy.savez and numpy.savez_compressed). Entries may be named "V.npy" or
// "V"; arrays with other names are ignored.
//
// A file without B loads as the shared B = V model, and so does a file whose
// B is bit-for-bit equal to V: Save always writes B, and this rule makes a
// shared model come back shared. Model.Shared is the only observable
// difference, as the kernels are identical.
func Load(path string) (*Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ndpp: load model: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("ndpp: load model: %w", err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("ndpp: %s: is a directory, not an .npz model file", path)
	}
	return readNPZ(path, f, st.Size())
}

// ReadNPZ reads a model from an .npz archive of the given size (see Load).
func ReadNPZ(r io.ReaderAt, size int64) (*Model, error) {
	return readNPZ("npz", r, size)
}

// Save writes m to path as an .npz file, atomically (see internal/atomicfile): on
// failure an existing file at path is left unchanged.
func Save(path string, m *Model) error {
	if m == nil {
		return errors.New("ndpp: Save of a nil model")
	}
	if err := checkVocabWritable(m); err != nil {
		return &fileError{path, err}
	}
	return atomicfile.Write(path, func(w io.Writer) error { return WriteNPZ(w, m) })
}

// WriteNPZ writes m as an .npz archive (see Load for the arrays) with
// uncompressed zip entries, as numpy.savez does, and NPY 2.0 array headers
// (readable by numpy.load). B is always written, ids and vocab when the
// model has them. Values are written bit for bit, so ReadNPZ returns an
// identical model. Vocabulary tokens must not contain '\n'.
func WriteNPZ(w io.Writer, m *Model) error {
	if m == nil {
		return errors.New("ndpp: WriteNPZ of a nil model")
	}
	if err := checkVocabWritable(m); err != nil {
		return err
	}
	vRows, bRows, _, c := m.Rows()
	zw := zip.NewWriter(w)
	entry := func(name string, val any) error {
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: zip.Store})
		if err != nil {
			return fmt.Errorf("ndpp: write npz entry %s: %w", name, err)
		}
		bw := bufio.NewWriterSize(fw, 1<<16)
		if err := npy.Write(bw, val); err != nil {
			return fmt.Errorf("ndpp: write npz entry %s: %w", name, err)
		}
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("ndpp: write npz entry %s: %w", name, err)
		}
		return nil
	}
	n, d := m.N(), m.D()
	if err := entry("V", mat.NewDense(n, d, vRows)); err != nil {
		return err
	}
	if err := entry("B", mat.NewDense(n, d, bRows)); err != nil {
		return err
	}
	if err := entry("C", mat.NewDense(d, d, c)); err != nil {
		return err
	}
	if ids := m.IDs(); ids != nil {
		if err := entry("ids", ids); err != nil {
			return err
		}
	}
	if v := m.Vocab(); v != nil {
		if err := entry("vocab", []uint8(strings.Join(v.tokens, "\n"))); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("ndpp: write npz: %w", err)
	}
	return nil
}

func checkVocabWritable(m *Model) error {
	v := m.Vocab()
	if v == nil {
		return nil
	}
	for i, t := range v.tokens {
		if strings.IndexByte(t, '\n') >= 0 {
			return fmt.Errorf("ndpp: vocabulary token %d (%q) contains a newline and cannot be saved", i, t)
		}
	}
	return nil
}

// fileError prefixes an error with the file it came from, keeping a single
// "ndpp: " prefix.
type fileError struct {
	file string
	err  error
}

func (e *fileError) Error() string {
	return "ndpp: " + e.file + ": " + strings.TrimPrefix(e.err.Error(), "ndpp: ")
}

func (e *fileError) Unwrap() error { return e.err }

func readNPZ(name string, r io.ReaderAt, size int64) (*Model, error) {
	m, err := decodeNPZ(r, size)
	if err != nil {
		return nil, &fileError{name, err}
	}
	return m, nil
}

func decodeNPZ(r io.ReaderAt, size int64) (*Model, error) {
	if size < 0 {
		return nil, fmt.Errorf("negative size %d", size)
	}
	zr, err := zip.NewReader(r, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, fmt.Errorf("not a valid .npz (zip) archive: %w", err)
	}
	entries := make(map[string]*zip.File)
	var names []string
	for _, f := range zr.File {
		key := strings.TrimSuffix(f.Name, ".npy")
		switch key {
		case "V", "B", "C", "ids", "vocab":
		default:
			continue
		}
		if _, dup := entries[key]; dup {
			return nil, fmt.Errorf("array %s appears twice in the archive", key)
		}
		entries[key] = f
		names = append(names, key)
	}
	get := func(key string) (*npyArray, error) {
		f, ok := entries[key]
		if !ok {
			return nil, nil
		}
		a, err := readNPYEntry(f)
		if err != nil {
			return nil, fmt.Errorf("array %s: %w", key, err)
		}
		return a, nil
	}
	for _, key := range []string{"V", "C"} {
		if _, ok := entries[key]; !ok {
			have := "none"
			if len(names) > 0 {
				have = strings.Join(names, ", ")
			}
			return nil, fmt.Errorf("missing array %s (model arrays present: %s; want V, C and optionally B, ids, vocab)", key, have)
		}
	}

	va, err := get("V")
	if err != nil {
		return nil, err
	}
	if len(va.shape) != 2 {
		return nil, fmt.Errorf("V has shape %s; want 2-D (n, d), a row per item", shapeString(va.shape))
	}
	n, d := va.shape[0], va.shape[1]
	if n == 0 || d == 0 {
		return nil, fmt.Errorf("V is %d×%d; need n ≥ 1 items and d ≥ 1", n, d)
	}
	v, err := va.float64s()
	if err != nil {
		return nil, fmt.Errorf("V: %w", err)
	}

	var b []float64
	ba, err := get("B")
	if err != nil {
		return nil, err
	}
	if ba != nil {
		if len(ba.shape) != 2 || ba.shape[0] != n || ba.shape[1] != d {
			return nil, fmt.Errorf("V is %d×%d but B is %s; want equal shapes", n, d, shapeDims(ba.shape))
		}
		if b, err = ba.float64s(); err != nil {
			return nil, fmt.Errorf("B: %w", err)
		}
		if bitsEqual(b, v) {
			b = nil // shared B = V (see the file-format comment)
		}
	}

	ca, err := get("C")
	if err != nil {
		return nil, err
	}
	if len(ca.shape) != 2 || ca.shape[0] != d || ca.shape[1] != d {
		return nil, fmt.Errorf("C is %s but V is %d×%d; want C %d×%d", shapeDims(ca.shape), n, d, d, d)
	}
	c, err := ca.float64s()
	if err != nil {
		return nil, fmt.Errorf("C: %w", err)
	}

	var opts []Option
	ia, err := get("ids")
	if err != nil {
		return nil, err
	}
	if ia != nil {
		if len(ia.shape) != 1 || ia.shape[0] != n {
			return nil, fmt.Errorf("ids has shape %s for %d items; want (%d,)", shapeString(ia.shape), n, n)
		}
		ids, err := ia.int64s()
		if err != nil {
			return nil, fmt.Errorf("ids: %w", err)
		}
		opts = append(opts, WithIDs(ids))
	}
	wa, err := get("vocab")
	if err != nil {
		return nil, err
	}
	if wa != nil {
		if len(wa.shape) != 1 {
			return nil, fmt.Errorf("vocab has shape %s; want 1-D bytes (tokens joined by '\\n')", shapeString(wa.shape))
		}
		raw, err := wa.bytes()
		if err != nil {
			return nil, fmt.Errorf("vocab: %w", err)
		}
		tokens := strings.Split(string(raw), "\n")
		if len(tokens) != n {
			return nil, fmt.Errorf("vocab has %d tokens for %d items", len(tokens), n)
		}
		voc, err := NewVocab(tokens)
		if err != nil {
			return nil, err // names the duplicate vocabulary token
		}
		opts = append(opts, WithVocab(voc))
	}
	// v, b and c are fresh arrays: hand them to the model without copying.
	return build(n, d, v, b, c, opts)
}

func bitsEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// The .npy arrays are decoded here rather than with npyio's reader, which
// panics on malformed headers and reads truncated data as zeros; errors must
// be values that name the problem.

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

func readNPYEntry(f *zip.File) (*npyArray, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("cannot open zip entry: %w", err)
	}
	defer rc.Close()
	return readNPY(rc, f.UncompressedSize64)
}

// readNPY decodes an .npy stream whose total length is declared as size
// bytes. It never allocates more than the data actually present.
func readNPY(r io.Reader, size uint64) (*npyArray, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, fmt.Errorf("truncated NPY header: %w", err)
	}
	if !bytes.Equal(pre[:6], npyMagic) {
		return nil, errors.New("not an NPY array (bad magic bytes)")
	}
	major, minor := pre[6], pre[7]
	var hlen, prefix uint64
	switch major {
	case 1:
		var l [2]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return nil, fmt.Errorf("truncated NPY header: %w", err)
		}
		hlen, prefix = uint64(binary.LittleEndian.Uint16(l[:])), 10
	case 2, 3:
		var l [4]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return nil, fmt.Errorf("truncated NPY header: %w", err)
		}
		hlen, prefix = uint64(binary.LittleEndian.Uint32(l[:])), 12
	default:
		return nil, fmt.Errorf("unsupported NPY format version %d.%d", major, minor)
	}
	if hlen > maxNPYHeader {
		return nil, fmt.Errorf("NPY header of %d bytes is too long", hlen)
	}
	if prefix+hlen > size {
		return nil, fmt.Errorf("truncated NPY header: %d bytes declared, entry has %d", prefix+hlen, size)
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, fmt.Errorf("truncated NPY header: %w", err)
	}
	a, err := parseNPYHeader(string(hdr))
	if err != nil {
		return nil, fmt.Errorf("bad NPY header: %w", err)
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
	if avail := size - prefix - hlen; want > avail {
		return nil, fmt.Errorf("truncated data: shape %s of %s needs %d bytes, entry has %d", shapeString(a.shape), a.descr, want, avail)
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
		panic("ndpp: internal: Fortran index of an array with more than 2 dimensions")
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
