package items

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp/npz"
)

// Formats of Options.Format and Reader.Format.
const (
	FormatAuto = "auto"
	FormatNPY  = "npy"
	FormatText = "text"
)

// Options configures Open.
type Options struct {
	// Format is FormatNPY, FormatText or FormatAuto (also ""): by the
	// stream's first bytes, after gzip detection.
	Format string
}

// Width returns the number of values of an item's row for the kernel:
// d (B = V) or 2d, plus one for a diagonal entry.
func Width(k detcache.Kernel) int {
	w := 2 * k.D
	if k.Shared {
		w = k.D
	}
	if k.Diag {
		w++
	}
	return w
}

// Reader reads items from a stream in one of the package's formats. It
// implements stream.ItemSource and stream.LenSource.
type Reader struct {
	kern   detcache.Kernel
	width  int
	format string
	gzip   bool
	br     *bufio.Reader
	gz     *gzip.Reader
	n      int // items in the stream (NPY), −1 unknown (text)
	pos    int // items read
	line   int // text: lines read

	// NPY
	size  int
	f32   bool
	order binary.ByteOrder
	raw   []byte

	vals  []float64
	items []detcache.Item
	done  bool
}

var npyMagic = []byte("\x93NUMPY")

// Open returns a reader of the items of r for the kernel k (validated with
// Kernel.Check). It reads the first bytes to detect gzip and the format,
// and for NPY the header, which must describe a 2-D float array of rows of
// Width(k) values in C order.
func Open(r io.Reader, k detcache.Kernel, opt Options) (*Reader, error) {
	if err := k.Check(); err != nil {
		return nil, fmt.Errorf("items: %w", err)
	}
	switch opt.Format {
	case "", FormatAuto, FormatNPY, FormatText:
	default:
		return nil, fmt.Errorf("items: unknown format %q (want npy, text or auto)", opt.Format)
	}
	rd := &Reader{kern: k, width: Width(k), n: -1, br: bufio.NewReaderSize(r, 1<<20)}
	if head, _ := rd.br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		gz, err := gzip.NewReader(rd.br)
		if err != nil {
			return nil, fmt.Errorf("items: gzip: %w", err)
		}
		rd.gz, rd.gzip = gz, true
		rd.br = bufio.NewReaderSize(gz, 1<<20)
	}
	format := opt.Format
	if format == "" || format == FormatAuto {
		format = FormatText
		if head, _ := rd.br.Peek(len(npyMagic)); bytes.Equal(head, npyMagic) {
			format = FormatNPY
		}
	}
	rd.format = format
	if format == FormatNPY {
		if err := rd.openNPY(); err != nil {
			return nil, err
		}
	}
	return rd, nil
}

func (r *Reader) openNPY() error {
	h, err := npz.ReadNPYHeader(r.br)
	if err != nil {
		return fmt.Errorf("items: NPY: %w", err)
	}
	switch {
	case h.Kind != 'f':
		return fmt.Errorf("items: NPY dtype %s; want float64 or float32", h.Descr)
	case len(h.Shape) != 2:
		return fmt.Errorf("items: NPY array of %d dimensions; want 2-D (n, %d), a row per item", len(h.Shape), r.width)
	case h.Shape[1] != r.width:
		return fmt.Errorf("items: NPY rows of %d values; want %d for the kernel (%s)", h.Shape[1], r.width, describe(r.kern))
	case h.Fortran && h.Shape[0] > 1 && h.Shape[1] > 1:
		return errors.New("items: NPY array in Fortran order cannot be read row by row; write it in C order")
	}
	r.n, r.size, r.f32, r.order = h.Shape[0], h.Size, h.Size == 4, h.Order
	return nil
}

// describe names the row layout of a kernel for messages.
func describe(k detcache.Kernel) string {
	s := fmt.Sprintf("d = %d, rows [v; b", k.D)
	if k.Shared {
		s = fmt.Sprintf("d = %d, B = V, rows [v", k.D)
	}
	if k.Diag {
		s += "; δ"
	}
	return s + "]"
}

// Format returns the stream's format (FormatNPY or FormatText).
func (r *Reader) Format() string { return r.format }

// Gzip reports whether the stream is gzip-compressed.
func (r *Reader) Gzip() bool { return r.gzip }

// Len returns the number of items of an NPY stream (from its header), or
// −1 for text.
func (r *Reader) Len() int { return r.n }

// Read returns the number of items read so far.
func (r *Reader) Read() int { return r.pos }

// Next returns the next items, at least one and at most max (≥ 1), or
// io.EOF after the last. The items and their vectors are valid until the
// next call.
func (r *Reader) Next(max int) ([]detcache.Item, error) {
	if max < 1 {
		return nil, fmt.Errorf("items: Next(%d); need max ≥ 1", max)
	}
	if r.done {
		return nil, io.EOF
	}
	if cap(r.vals) < max*r.width {
		r.vals = make([]float64, max*r.width)
		r.items = make([]detcache.Item, max)
	}
	var n int
	var err error
	if r.format == FormatNPY {
		n, err = r.nextNPY(max)
	} else {
		n, err = r.nextText(max)
	}
	if err == io.EOF {
		r.done = true
		if n == 0 {
			return nil, io.EOF
		}
		err = nil
	}
	if err != nil {
		return nil, err
	}
	return r.items[:n], nil
}

// item builds item c of the chunk from its values and validates it.
func (r *Reader) item(c, id int) (detcache.Item, error) {
	d, w := r.kern.D, r.width
	row := r.vals[c*w : (c+1)*w : (c+1)*w]
	it := detcache.Item{ID: id, V: row[:d:d]}
	if !r.kern.Shared {
		it.B = row[d : 2*d : 2*d]
	}
	if r.kern.Diag {
		it.Delta = row[w-1]
	}
	return it, detcache.CheckItem(r.kern, it)
}

func (r *Reader) nextNPY(max int) (int, error) {
	n := min(max, r.n-r.pos)
	if n == 0 {
		// The end of the rows: the stream must end too.
		if _, err := r.br.ReadByte(); err == nil {
			return 0, fmt.Errorf("items: unexpected bytes after the %d rows of the NPY array", r.n)
		} else if err != io.EOF {
			return 0, fmt.Errorf("items: after row %d: %w", r.pos-1, err)
		}
		return 0, r.closeGzip()
	}
	rowBytes := r.width * r.size
	need := n * rowBytes
	if cap(r.raw) < need {
		r.raw = make([]byte, need)
	}
	raw := r.raw[:need]
	got, err := io.ReadFull(r.br, raw)
	if err != nil {
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			return 0, fmt.Errorf("items: NPY data truncated in row %d of %d (%d of its %d bytes)", r.pos+got/rowBytes, r.n, got%rowBytes, rowBytes)
		}
		return 0, fmt.Errorf("items: reading row %d: %w", r.pos+got/rowBytes, err)
	}
	vals := r.vals[:n*r.width]
	if r.f32 {
		for i := range vals {
			vals[i] = float64(math.Float32frombits(r.order.Uint32(raw[4*i:])))
		}
	} else if r.order == binary.LittleEndian {
		for i := range vals {
			vals[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
		}
	} else {
		for i := range vals {
			vals[i] = math.Float64frombits(r.order.Uint64(raw[8*i:]))
		}
	}
	for c := 0; c < n; c++ {
		it, err := r.item(c, r.pos+c)
		if err != nil {
			return 0, fmt.Errorf("items: row %d: %w", r.pos+c, trimItem(err))
		}
		r.items[c] = it
	}
	r.pos += n
	return n, nil
}

// trimItem drops CheckItem's "item N: " prefix (the row or line names it).
func trimItem(err error) error {
	s := err.Error()
	if strings.HasPrefix(s, "item ") {
		if i := strings.Index(s, ": "); i > 0 {
			return errors.New(s[i+2:])
		}
	}
	return err
}

func (r *Reader) closeGzip() error {
	if r.gz != nil {
		if err := r.gz.Close(); err != nil {
			return fmt.Errorf("items: gzip: %w", err)
		}
	}
	return io.EOF
}

func (r *Reader) nextText(max int) (int, error) {
	n := 0
	for n < max {
		line, err := r.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = r.br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && err != io.EOF {
			return 0, fmt.Errorf("items: line %d: %w", r.line+1, err)
		}
		if len(line) == 0 && err == io.EOF {
			if n == 0 {
				return 0, r.closeGzip()
			}
			return n, nil
		}
		r.line++
		if perr := r.parseLine(line, n); perr != nil {
			if perr == errSkip {
				if err == io.EOF {
					if n == 0 {
						return 0, r.closeGzip()
					}
					return n, nil
				}
				continue
			}
			return 0, fmt.Errorf("items: line %d: %w", r.line, perr)
		}
		n++
		r.pos++
		if err == io.EOF {
			return n, nil
		}
	}
	return n, nil
}

var errSkip = errors.New("skip")

// parseLine parses one text line into item c of the chunk.
func (r *Reader) parseLine(line []byte, c int) error {
	s := strings.TrimSpace(string(line))
	if s == "" || s[0] == '#' {
		return errSkip
	}
	var fields []string
	if strings.Contains(s, ",") {
		fields = strings.Split(s, ",")
		for i, f := range fields {
			fields[i] = strings.TrimSpace(f)
			if fields[i] == "" {
				return fmt.Errorf("empty field %d", i+1)
			}
		}
	} else {
		fields = strings.Fields(s)
	}
	if len(fields) != 1+r.width {
		return fmt.Errorf("%d fields; want %d: the id and %d values (%s)", len(fields), 1+r.width, r.width, describe(r.kern))
	}
	id, err := strconv.Atoi(fields[0])
	if err != nil || id < 0 {
		return fmt.Errorf("id %q is not an integer ≥ 0", fields[0])
	}
	row := r.vals[c*r.width : (c+1)*r.width]
	for i, f := range fields[1:] {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return fmt.Errorf("value %d (%q) is not a number", i+1, f)
		}
		row[i] = x
	}
	it, err := r.item(c, id)
	if err != nil {
		return trimItem(err)
	}
	r.items[c] = it
	return nil
}
