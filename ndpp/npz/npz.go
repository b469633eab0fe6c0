package npz

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/ndpp-go/ndpp/internal/memlimit"
	"github.com/ndpp-go/ndpp/internal/outfile"
	"github.com/ndpp-go/ndpp/ndpp"
)

// LoadOptions configures LoadOptions.Load and LoadOptions.Read.
type LoadOptions struct {
	// MaxBytes is the memory budget of decoding: an archive whose arrays,
	// as their NPY headers declare them, would need more memory decoded
	// into a model (the sum of ArrayMemory over its arrays) is refused
	// before the data of the array that crosses it is inflated, with an
	// error wrapping a refusal that names the need and the budget. Zero
	// selects three quarters of the smallest of the machine's physical
	// memory, the control group's memory limit and the process's
	// address-space and data size limits.
	MaxBytes int64
	// CheckScale refuses a model whose kernel overflows float64
	// (ndpp.Model.CheckScale): its determinants, normaliser and gains
	// would be NaN or infinite. The error names the file and wraps
	// ndpp.ErrOverflow. Commands and services that score with the model
	// they load set it.
	CheckScale bool
}

// Load reads a model from an .npz file (see the package documentation for
// the arrays) with the default LoadOptions. Errors name the file and the
// problem: a missing array, a wrong dtype or shape, a truncated or corrupt
// archive, an invalid model such as a C that is not skew-symmetric, an
// archive beyond the memory budget (LoadOptions.MaxBytes).
//
// No entry is inflated beyond the size its zip header declares. An entry
// whose name in the zip central directory differs from the one in its
// local header is refused, so that a corrupt name cannot drop an optional
// array (the zip CRC-32 covers the entries' data, not their names).
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
func Load(path string) (*ndpp.Model, error) { return LoadOptions{}.Load(path) }

// Load reads a model from an .npz file as the function Load does, within
// o.MaxBytes.
func (o LoadOptions) Load(path string) (*ndpp.Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("npz: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("npz: %w", err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("npz: %s: is a directory, not an .npz model file", path)
	}
	m, err := decode(f, st.Size(), o)
	if err != nil {
		return nil, &fileError{path, err}
	}
	if o.CheckScale {
		if err := m.CheckScale(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return m, nil
}

// Read reads a model from an .npz archive of the given size (see Load)
// with the default LoadOptions.
func Read(r io.ReaderAt, size int64) (*ndpp.Model, error) { return LoadOptions{}.Read(r, size) }

// Read reads a model from an .npz archive of the given size (see Load),
// within o.MaxBytes.
func (o LoadOptions) Read(r io.ReaderAt, size int64) (*ndpp.Model, error) {
	m, err := decode(r, size, o)
	if err != nil {
		return nil, &fileError{"", err}
	}
	if o.CheckScale {
		if err := m.CheckScale(); err != nil {
			return nil, fmt.Errorf("npz: %w", err)
		}
	}
	return m, nil
}

// ArrayMemory returns the memory that loading a model reserves for its
// array key ("V", "B", "C", "D", "ids" or "vocab") of count elements stored
// in bytes bytes: the stored bytes and, per element, the decoded float64
// and the model's copies (three in all for V and B: the decoded array, the
// model's rows, B's rows times C; two for the others). It returns -1 when
// the size overflows an int64.
func ArrayMemory(key string, count, bytes uint64) int64 {
	copies := int64(2)
	if key == "V" || key == "B" {
		copies = 3
	}
	if count > math.MaxInt64/32 || bytes > math.MaxInt64/2 {
		return -1
	}
	return memlimit.Sum(int64(bytes), memlimit.Bytes(int64(count), 8, copies))
}

// Save writes m to path as an .npz file (see Write), atomically: on failure
// an existing file at path is left unchanged.
func Save(path string, m *ndpp.Model) error {
	if m == nil {
		return errors.New("npz: Save of a nil model")
	}
	if err := checkVocab(m); err != nil {
		return &fileError{path, err}
	}
	if err := outfile.Write(path, func(w io.Writer) error { return write(w, m) }); err != nil {
		return fmt.Errorf("npz: %w", err)
	}
	return nil
}

// Write writes m as an .npz archive: the arrays V, B, C, and ids and vocab
// when the model has them (B is always written, also for a shared model).
// Values are written bit for bit, so Read returns an identical model, and
// the bytes depend only on the model (see the package documentation for
// the layout). Vocabulary tokens must not contain '\n'.
func Write(w io.Writer, m *ndpp.Model) error {
	if m == nil {
		return errors.New("npz: Write of a nil model")
	}
	if err := checkVocab(m); err != nil {
		return &fileError{"", err}
	}
	if err := write(w, m); err != nil {
		return &fileError{"", err}
	}
	return nil
}

// write writes the archive of a model whose vocabulary has been checked.
func write(w io.Writer, m *ndpp.Model) error {
	vRows, bRows, _, c := m.Rows()
	n, d := m.N(), m.D()
	zw := zip.NewWriter(w)
	entry := func(name string, a npyOut) error {
		// A zero Modified time leaves the zip timestamps zero, so the
		// archive's bytes do not depend on the clock.
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: zip.Store})
		if err == nil {
			err = a.write(fw)
		}
		if err != nil {
			return fmt.Errorf("write entry %s: %w", name, err)
		}
		return nil
	}
	if err := entry("V", npyOut{descr: "<f8", shape: []int{n, d}, f64: vRows}); err != nil {
		return err
	}
	if err := entry("B", npyOut{descr: "<f8", shape: []int{n, d}, f64: bRows}); err != nil {
		return err
	}
	if err := entry("C", npyOut{descr: "<f8", shape: []int{d, d}, f64: c}); err != nil {
		return err
	}
	if diag := m.Diag(); diag != nil {
		if err := entry("D", npyOut{descr: "<f8", shape: []int{n}, f64: diag}); err != nil {
			return err
		}
	}
	if ids := m.IDs(); ids != nil {
		if err := entry("ids", npyOut{descr: "<i8", shape: []int{n}, i64: ids}); err != nil {
			return err
		}
	}
	if v := m.Vocab(); v != nil {
		raw := []byte(strings.Join(v.Tokens(), "\n"))
		if err := entry("vocab", npyOut{descr: "|u1", shape: []int{len(raw)}, u8: raw}); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	return nil
}

// checkVocab refuses vocabularies that the '\n'-joined vocab array cannot
// hold.
func checkVocab(m *ndpp.Model) error {
	v := m.Vocab()
	if v == nil {
		return nil
	}
	for i := range v.Len() {
		if t := v.Token(i); strings.IndexByte(t, '\n') >= 0 {
			return fmt.Errorf("vocabulary token %d (%q) contains a newline and cannot be saved", i, t)
		}
	}
	return nil
}

// fileError prefixes an error with "npz: " and the file it came from, if
// any. Errors of the model package (ndpp.NewFromRows, ndpp.NewVocab) lose
// their own "ndpp: " prefix, so that a message has one prefix.
type fileError struct {
	file string
	err  error
}

func (e *fileError) Error() string {
	msg := strings.TrimPrefix(e.err.Error(), "ndpp: ")
	if e.file == "" {
		return "npz: " + msg
	}
	return "npz: " + e.file + ": " + msg
}

func (e *fileError) Unwrap() error { return e.err }

// arrayError prefixes an error with the array it came from. Like fileError
// it builds its message when asked, so that a caller that renames the
// budget of a refusal it wraps (memlimit.Budget.Rename) sees the new name.
type arrayError struct {
	key string
	err error
}

func (e *arrayError) Error() string { return "array " + e.key + ": " + e.err.Error() }

func (e *arrayError) Unwrap() error { return e.err }

func decode(r io.ReaderAt, size int64, o LoadOptions) (*ndpp.Model, error) {
	if size < 0 {
		return nil, fmt.Errorf("negative size %d", size)
	}
	zr, err := zip.NewReader(r, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, fmt.Errorf("not a valid .npz (zip) archive: %w", err)
	}
	for _, f := range zr.File {
		if err := checkLocalName(r, f); err != nil {
			return nil, err
		}
	}
	entries := make(map[string]*zip.File)
	var names []string
	for _, f := range zr.File {
		key := strings.TrimSuffix(f.Name, ".npy")
		switch key {
		case "V", "B", "C", "D", "ids", "vocab":
		default:
			continue
		}
		if _, dup := entries[key]; dup {
			return nil, fmt.Errorf("array %s appears twice in the archive", key)
		}
		entries[key] = f
		names = append(names, key)
	}
	// Each entry is inflated no further than its declared size (readNPY),
	// and before its data is read, the memory of the arrays so far
	// (ArrayMemory) is checked against the budget.
	budget := memlimit.Given(o.MaxBytes, "npz.LoadOptions.MaxBytes")
	need := int64(0)
	reserve := func(key string) func(count, bytes uint64) error {
		return func(count, bytes uint64) error {
			need = memlimit.Sum(need, ArrayMemory(key, count, bytes))
			return budget.Check(fmt.Sprintf("decoding the model's arrays (up to %s)", key), need)
		}
	}
	get := func(key string) (*npyArray, error) {
		f, ok := entries[key]
		if !ok {
			return nil, nil
		}
		a, err := readNPYEntry(f, reserve(key))
		if err != nil {
			return nil, &arrayError{key, err}
		}
		return a, nil
	}
	for _, key := range []string{"V", "C"} {
		if _, ok := entries[key]; !ok {
			have := "none"
			if len(names) > 0 {
				have = strings.Join(names, ", ")
			}
			return nil, fmt.Errorf("missing array %s (model arrays present: %s; want V, C and optionally B, D, ids, vocab)", key, have)
		}
	}

	va, err := get("V")
	if err != nil {
		return nil, err
	}
	if len(va.shape) != 2 {
		return nil, fmt.Errorf("array V has shape %s; want 2-D (n, d), a row per item", shapeString(va.shape))
	}
	n, d := va.shape[0], va.shape[1]
	if n == 0 || d == 0 {
		return nil, fmt.Errorf("array V is %d×%d; need n ≥ 1 items and d ≥ 1", n, d)
	}
	v, err := va.float64s()
	if err != nil {
		return nil, fmt.Errorf("array V: %w", err)
	}

	var b []float64
	ba, err := get("B")
	if err != nil {
		return nil, err
	}
	if ba != nil {
		if len(ba.shape) != 2 || ba.shape[0] != n || ba.shape[1] != d {
			return nil, fmt.Errorf("array V is %d×%d but B is %s; want equal shapes", n, d, shapeDims(ba.shape))
		}
		if b, err = ba.float64s(); err != nil {
			return nil, fmt.Errorf("array B: %w", err)
		}
		if slices.EqualFunc(b, v, sameBits) {
			b = nil // shared B = V (see Load)
		}
	}

	ca, err := get("C")
	if err != nil {
		return nil, err
	}
	if len(ca.shape) != 2 || ca.shape[0] != d || ca.shape[1] != d {
		return nil, fmt.Errorf("array C is %s but V is %d×%d; want C %d×%d", shapeDims(ca.shape), n, d, d, d)
	}
	c, err := ca.float64s()
	if err != nil {
		return nil, fmt.Errorf("array C: %w", err)
	}

	var opts []ndpp.Option
	da, err := get("D")
	if err != nil {
		return nil, err
	}
	if da != nil {
		if len(da.shape) != 1 || da.shape[0] != n {
			return nil, fmt.Errorf("array D has shape %s for %d items; want (%d,), the diagonal δ", shapeString(da.shape), n, n)
		}
		diag, err := da.float64s()
		if err != nil {
			return nil, fmt.Errorf("array D: %w", err)
		}
		opts = append(opts, ndpp.WithDiag(diag))
	}
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
		opts = append(opts, ndpp.WithIDs(ids))
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
		voc, err := ndpp.NewVocab(tokens)
		if err != nil {
			return nil, err // names the duplicate vocabulary token
		}
		opts = append(opts, ndpp.WithVocab(voc))
	}
	// v, b and c are fresh arrays: the model takes them without copying.
	return ndpp.NewFromOwnedRows(n, d, v, b, c, opts...)
}

func sameBits(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// checkLocalName compares the name of a zip entry in the central directory
// (which archive/zip reads) with the one in the entry's local header, which
// the archive repeats: a corrupt name in the central directory would
// otherwise turn an array such as D or ids into an ignored entry, and the
// file would load as a different model. The local header is found by its
// signature and lengths just before the entry's data; an archive in which
// it cannot be found is not checked.
func checkLocalName(r io.ReaderAt, f *zip.File) error {
	data, err := f.DataOffset()
	if err != nil {
		return fmt.Errorf("zip entry %q: %w", f.Name, err)
	}
	const hdr = 30 // local header without name and extra field
	window := min(data, int64(hdr+len(f.Name)+1024))
	buf := make([]byte, window)
	if _, err := r.ReadAt(buf, data-window); err != nil {
		return fmt.Errorf("zip entry %q: %w", f.Name, err)
	}
	for h := int(window) - hdr; h >= 0; h-- {
		if !bytes.Equal(buf[h:h+4], []byte("PK\x03\x04")) {
			continue
		}
		n := int(binary.LittleEndian.Uint16(buf[h+26:]))
		m := int(binary.LittleEndian.Uint16(buf[h+28:]))
		if h+hdr+n+m != int(window) {
			continue
		}
		if local := string(buf[h+hdr : h+hdr+n]); local != f.Name {
			return fmt.Errorf("corrupt archive: an entry is named %q in the central directory but %q in its local header", f.Name, local)
		}
		return nil
	}
	return nil
}
