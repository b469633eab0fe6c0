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
	"sync"
	"unsafe"

	"github.com/ndpp-go/ndpp/ndpp"
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
	// ReadAhead > 0 decodes the stream on a goroutine of its own, up to
	// ReadAhead chunks of Chunk rows ahead of the caller, into a pool of
	// ReadAhead + 2 reused chunks (memory (ReadAhead + 2)·Chunk·w values
	// and one chunk's bytes), so that
	// reading, decompressing, parsing and validating run on another core
	// while the caller scores. Next returns the same items and errors as
	// without it; call Close when stopping before the end. 0: decode in
	// Next.
	ReadAhead int
	// Chunk is the number of rows the read-ahead goroutine decodes at a
	// time (0: DefaultChunk). Without ReadAhead, Next decodes as many rows
	// as asked for.
	Chunk int
}

// DefaultChunk is the read-ahead's chunk size in rows (Options.Chunk).
const DefaultChunk = 4096

// Width returns the number of values of an item's row for the kernel:
// d (B = V) or 2d, plus one for a diagonal entry.
func Width(k ndpp.Kernel) int {
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
	kern   ndpp.Kernel
	ichk   ndpp.ItemCheck
	width  int
	format string
	gzip   bool
	n      int // items in the stream (NPY), −1 unknown (text)
	given  int // items returned by Next

	// The decoder: in Next, or on the read-ahead goroutine.
	br   *bufio.Reader
	gz   *gzip.Reader
	pos  int // rows decoded
	line int // text: lines read
	// NPY
	size  int
	f32   bool
	order binary.ByteOrder
	raw   []byte // the bytes of the rows being decoded

	cur     *chunk // the chunk Next serves from
	off     int    // its next item
	pending error  // the error after cur's items (io.EOF at the end)
	done    bool   // pending is final: returned by every later Next

	// Read-ahead (Options.ReadAhead > 0).
	rows       int
	free, full chan *chunk
	stop       chan struct{}
	exited     chan struct{} // closed when the goroutine has returned
	closeOnce  sync.Once
}

// chunk is a decoded run of rows: n valid items, then err (nil, io.EOF or
// the error of the row after them).
type chunk struct {
	vals  []float64
	items []ndpp.Item
	lines []int // text: the line of each item
	n     int
	err   error
}

var npyMagic = []byte("\x93NUMPY")

// littleEndian reports whether this machine stores numbers little-endian.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// Open returns a reader of the items of r for the kernel k (validated with
// Kernel.Check). It reads the first bytes to detect gzip and the format,
// and for NPY the header, which must describe a 2-D float array of rows of
// Width(k) values in C order.
func Open(r io.Reader, k ndpp.Kernel, opt Options) (*Reader, error) {
	if err := k.Check(); err != nil {
		return nil, fmt.Errorf("items: %w", err)
	}
	switch opt.Format {
	case "", FormatAuto, FormatNPY, FormatText:
	default:
		return nil, fmt.Errorf("items: unknown format %q (want npy, text or auto)", opt.Format)
	}
	if opt.ReadAhead < 0 || opt.Chunk < 0 {
		return nil, fmt.Errorf("items: read-ahead %d, chunk %d; need ≥ 0", opt.ReadAhead, opt.Chunk)
	}
	rd := &Reader{kern: k, ichk: ndpp.NewItemCheck(k), width: Width(k), n: -1, br: bufio.NewReaderSize(r, 1<<20)}
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
	rd.cur = &chunk{}
	if opt.ReadAhead > 0 {
		rd.rows = opt.Chunk
		if rd.rows == 0 {
			rd.rows = DefaultChunk
		}
		rd.startAhead(opt.ReadAhead)
	}
	return rd, nil
}

// startAhead starts the read-ahead goroutine with nahead chunks in flight.
func (r *Reader) startAhead(nahead int) {
	r.free = make(chan *chunk, nahead+2)
	r.full = make(chan *chunk, nahead)
	r.stop, r.exited = make(chan struct{}), make(chan struct{})
	for range nahead + 1 { // the current chunk is the last of the pool
		r.free <- &chunk{}
	}
	go func() {
		defer close(r.exited)
		for {
			var ch *chunk
			select {
			case ch = <-r.free:
			case <-r.stop:
				return
			}
			r.decode(ch, r.rows)
			select {
			case r.full <- ch:
			case <-r.stop:
				return
			}
			if ch.err != nil {
				return
			}
		}
	}()
}

// Close stops the read-ahead goroutine (a read in progress on the
// underlying reader finishes first); Next then returns io.EOF. It is a
// no-op without read-ahead, and safe to call more than once.
func (r *Reader) Close() error {
	if r.stop != nil {
		r.closeOnce.Do(func() { close(r.stop) })
	}
	r.pending, r.done, r.cur, r.off = io.EOF, true, &chunk{}, 0
	return nil
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
func describe(k ndpp.Kernel) string {
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

// Read returns the number of items Next has returned so far.
func (r *Reader) Read() int { return r.given }

// Next returns the next items, at least one and at most max (≥ 1), or
// io.EOF after the last. The items and their vectors are valid until the
// next call. A bad row is an error naming it, returned after the valid
// rows before it; every later call returns the same error.
func (r *Reader) Next(max int) ([]ndpp.Item, error) {
	if max < 1 {
		return nil, fmt.Errorf("items: Next(%d); need max ≥ 1", max)
	}
	for r.off >= r.cur.n {
		if r.done {
			return nil, r.pending
		}
		if r.pending != nil {
			r.done = true
			continue
		}
		if r.free == nil {
			r.decode(r.cur, max)
		} else {
			r.free <- r.cur
			r.cur = <-r.full
		}
		r.off, r.pending = 0, r.cur.err
	}
	n := min(max, r.cur.n-r.off)
	out := r.cur.items[r.off : r.off+n]
	r.off += n
	r.given += n
	return out, nil
}

// decode reads up to max rows into ch: ch.n valid items, then ch.err.
func (r *Reader) decode(ch *chunk, max int) {
	if cap(ch.vals) < max*r.width {
		ch.vals = make([]float64, max*r.width)
		ch.items = make([]ndpp.Item, max)
	}
	if r.format == FormatNPY {
		ch.n, ch.err = r.nextNPY(ch, max)
	} else {
		ch.n, ch.err = r.nextText(ch, max)
	}
	// Validate the rows (a NaN, an infinity or a scale beyond the kernel's
	// bound): the valid ones before a bad one are returned first.
	good, err := r.ichk.CheckAll(ch.items[:ch.n])
	if err != nil {
		what := "row"
		at := r.pos - ch.n + good
		if r.format == FormatText {
			what, at = "line", ch.lineOf(good)
		}
		ch.n, ch.err = good, fmt.Errorf("items: %s %d: %w", what, at, trimItem(err))
	}
}

// lineOf returns the text line of item c of a chunk.
func (ch *chunk) lineOf(c int) int { return ch.lines[c] }

// item sets item c of the chunk from its values (validated afterwards):
// its id and δ, and its views of the row where they are not those already
// (a chunk's items keep them from one decode to the next).
func (r *Reader) item(ch *chunk, c, id int) {
	d, w := r.kern.D, r.width
	row := ch.vals[c*w : (c+1)*w : (c+1)*w]
	it := &ch.items[c]
	if len(it.V) != d || &it.V[0] != &row[0] || !r.kern.Shared && (len(it.B) != d || &it.B[0] != &row[d]) {
		*it = ndpp.Item{V: row[:d:d]}
		if !r.kern.Shared {
			it.B = row[d : 2*d : 2*d]
		}
	}
	it.ID = id
	if r.kern.Diag {
		it.Delta = row[w-1]
	}
}

// nextNPY reads up to max rows into ch.
func (r *Reader) nextNPY(ch *chunk, max int) (int, error) {
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
		full := got / rowBytes // complete rows before the failure
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			err = fmt.Errorf("items: NPY data truncated in row %d of %d (%d of its %d bytes)", r.pos+full, r.n, got%rowBytes, rowBytes)
		} else {
			err = fmt.Errorf("items: reading row %d: %w", r.pos+full, err)
		}
		r.decodeNPY(ch, raw[:full*rowBytes], full)
		return full, err
	}
	r.decodeNPY(ch, raw, n)
	return n, nil
}

// decodeNPY decodes n rows of raw into ch's items.
func (r *Reader) decodeNPY(ch *chunk, raw []byte, n int) {
	vals := ch.vals[:n*r.width]
	if r.f32 {
		for i := range vals {
			vals[i] = float64(math.Float32frombits(r.order.Uint32(raw[4*i:])))
		}
	} else if r.order == binary.LittleEndian && littleEndian && len(vals) > 0 {
		// The bytes are this machine's float64s (raw is a fresh
		// allocation's start, aligned for them): one copy.
		copy(vals, unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(raw))), len(vals)))
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
		r.item(ch, c, r.pos+c)
	}
	r.pos += n
}

// trimItem drops CheckItem's "item N: " prefix (the row or line names it),
// keeping what err wraps.
func trimItem(err error) error {
	s := err.Error()
	if strings.HasPrefix(s, "item ") {
		if i := strings.Index(s, ": "); i > 0 {
			return &trimmed{msg: s[i+2:], err: err}
		}
	}
	return err
}

// trimmed is an error with a shorter message than the error it wraps.
type trimmed struct {
	msg string
	err error
}

func (e *trimmed) Error() string { return e.msg }
func (e *trimmed) Unwrap() error { return e.err }

func (r *Reader) closeGzip() error {
	if r.gz != nil {
		if err := r.gz.Close(); err != nil {
			return fmt.Errorf("items: gzip: %w", err)
		}
	}
	return io.EOF
}

// nextText reads up to max lines' items into ch: the items parsed, and
// the error of a line that cannot be parsed, after them.
func (r *Reader) nextText(ch *chunk, max int) (int, error) {
	if cap(ch.lines) < max {
		ch.lines = make([]int, max)
	}
	ch.lines = ch.lines[:max]
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
			return n, fmt.Errorf("items: line %d: %w", r.line+1, err)
		}
		if len(line) == 0 && err == io.EOF {
			if n == 0 {
				return 0, r.closeGzip()
			}
			return n, nil
		}
		r.line++
		if perr := r.parseLine(ch, line, n); perr != nil {
			if perr == errSkip {
				if err == io.EOF {
					if n == 0 {
						return 0, r.closeGzip()
					}
					return n, nil
				}
				continue
			}
			return n, fmt.Errorf("items: line %d: %w", r.line, perr)
		}
		ch.lines[n] = r.line
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
func (r *Reader) parseLine(ch *chunk, line []byte, c int) error {
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
	row := ch.vals[c*r.width : (c+1)*r.width]
	for i, f := range fields[1:] {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return fmt.Errorf("value %d (%q) is not a number", i+1, f)
		}
		row[i] = x
	}
	r.item(ch, c, id)
	return nil
}
