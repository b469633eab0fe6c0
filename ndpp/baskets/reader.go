package baskets

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/ndpp-go/ndpp/ndpp"
)

// LineOptions configures NewLineReader and Open.
type LineOptions struct {
	// Base is used when Vocab is nil: tokens are integer ids and the row
	// is token − Base. It must be 0 or 1 (the Amazon registry files are
	// 1-based).
	Base int
	// Vocab, if non-nil, maps tokens (any string without separators) to
	// rows.
	Vocab *ndpp.Vocab
	// Grow adds tokens missing from Vocab instead of failing. Tokens of
	// baskets skipped for MaxSize are not added. The reader modifies Vocab,
	// which must not be used concurrently meanwhile.
	Grow bool
	// N, if > 0, is the number of items: rows must be < N.
	N int
	// MaxSize, if > 0, skips baskets with more items (after removing
	// duplicates); they are counted in Stats.Skipped.
	MaxSize int
	// Header skips the first line with tokens: a header naming the
	// columns, not a basket.
	Header bool
	// Tokens says which tokens a growing vocabulary takes as items (see
	// Tokens; the zero value takes any).
	Tokens Tokens
	// ReadAhead > 0 reads and parses the file on a goroutine of the
	// reader's own, up to ReadAhead chunks of 256 baskets ahead of Next
	// (DefaultReadAhead is a good value; 0: parse in Next). See Reader.
	ReadAhead int
}

// Stats counts what a Reader has seen so far.
type Stats struct {
	Baskets    int // baskets returned by Next
	Items      int // items in the returned baskets (after de-duplication)
	Skipped    int // baskets skipped because they exceed MaxSize
	Empty      int // lines without tokens (CSV: rows with an empty basket or item field)
	Duplicates int // repeated items removed from baskets
}

// maxLineBytes bounds one line of a basket file; a longer line is most
// likely a binary file read by mistake.
const maxLineBytes = 64 << 20

// Reader streams baskets (item rows) from a line-format file or a
// transaction CSV. It is not safe for concurrent use.
//
// With the ReadAhead option (LineOptions, CSVOptions), a goroutine of the
// reader's own reads, decompresses and parses the file ahead of Next, from
// the first call to Next on, so that on a machine with a second core the
// parsing overlaps the caller's work; Next, Line and Stats give the same
// baskets, lines, counts and errors as without it (tested), and Peek shows
// the next basket when it has been read. A growing vocabulary (Grow) then
// grows ahead of the baskets returned: use it only once Next has returned
// an error (io.EOF at the end) or Close has returned. Close stops the
// goroutine; call it when stopping before the end.
type Reader struct {
	name    string
	br      *bufio.Reader
	closers []io.Closer
	next    func() ([]int, error)
	err     error // sticky: io.EOF or the first error
	line    int   // lines consumed (line format)
	last    int   // line of the last basket returned
	stats   Stats
	lineBuf []byte
	header  bool // skip the first line with tokens (LineOptions.Header)
	tokens  tokenState

	// resolve state
	vocab   *ndpp.Vocab
	grow    bool
	base    int
	n       int
	maxSize int
	seen    map[int]struct{}
	rows    []int
	toks    [][]byte

	// Read-ahead (ReadAhead > 0): the goroutine decodes with the fields
	// above; Next hands out its chunks, with the line and the counts of
	// each basket given (givenLine, given).
	aheadChunks int
	ahead       *pump[readChunk]
	rc          *readChunk
	ri          int
	given       Stats
	givenLine   int
	closed      bool
}

// NewLineReader returns a reader of the line format over r. When r is an
// *os.File its name is used in error messages, otherwise "input". Baskets
// are read one at a time, in one pass, so files larger than memory can feed
// online learners; ReadFile loads a whole file.
//
// Line format: one basket per line; tokens are separated by any mix of
// spaces, commas and tabs (a run counts as one separator, so "1,,2" is the
// basket {1, 2}); '\r' counts as a separator, so CRLF files read like LF
// files; a UTF-8 byte-order mark at the start is ignored; lines without
// tokens are skipped (Stats.Empty). Duplicate items inside a basket are
// removed, keeping the order of first occurrence (Stats.Duplicates). A
// token that is not an item (not an integer when there is no vocabulary, a
// negative row, a row ≥ N, a token missing from the vocabulary) is an error
// naming the file, line and token:
//
//	baskets: baskets.txt:17: bad item token "x7": not an integer
//
// Options that make no sense (Base other than 0 or 1, negative N or
// MaxSize, Grow without Vocab) are reported by the first call to Next.
// NewLineReader panics if r is nil.
func NewLineReader(r io.Reader, opt LineOptions) *Reader {
	if r == nil {
		panic("baskets: NewLineReader with a nil io.Reader")
	}
	br := newReader(readerName(r), opt.Vocab, opt.Grow, opt.Base, opt.N, opt.MaxSize)
	br.br = bufio.NewReaderSize(r, 1<<16)
	br.next = br.nextLine
	br.header = opt.Header
	br.tokens.rule = opt.Tokens
	br.aheadChunks = opt.ReadAhead
	if opt.Vocab == nil && opt.Base != 0 && opt.Base != 1 {
		br.err = fmt.Errorf("baskets: %s: LineOptions.Base = %d; want 0 or 1", br.name, opt.Base)
	}
	if err := br.checkOptions(); err != nil {
		br.err = err
	}
	return br
}

func newReader(name string, voc *ndpp.Vocab, grow bool, base, n, maxSize int) *Reader {
	return &Reader{name: name, vocab: voc, grow: grow, base: base, n: n, maxSize: maxSize}
}

func (r *Reader) checkOptions() error {
	switch {
	case r.n < 0:
		return fmt.Errorf("baskets: %s: N = %d; want N ≥ 0 (0: no limit)", r.name, r.n)
	case r.maxSize < 0:
		return fmt.Errorf("baskets: %s: MaxSize = %d; want MaxSize ≥ 0 (0: no limit)", r.name, r.maxSize)
	case r.grow && r.vocab == nil:
		return fmt.Errorf("baskets: %s: Grow needs a Vocab (use ndpp.NewVocab(nil) for an empty one)", r.name)
	case r.tokens.rule < AnyTokens || r.tokens.rule > AutoTokens:
		return fmt.Errorf("baskets: %s: Tokens = %d; want AnyTokens, IntTokens or AutoTokens", r.name, int(r.tokens.rule))
	case r.aheadChunks < 0:
		return fmt.Errorf("baskets: %s: ReadAhead = %d; want ReadAhead ≥ 0 (0: none)", r.name, r.aheadChunks)
	}
	return nil
}

func readerName(r io.Reader) string {
	if f, ok := r.(interface{ Name() string }); ok && f.Name() != "" {
		return f.Name()
	}
	return "input"
}

// Open opens a line-format basket file, decompressing it when it starts
// with the gzip magic bytes. Close the reader when done.
func Open(path string, opt LineOptions) (*Reader, error) {
	src, closers, err := openMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	r := NewLineReader(src, opt) // named after path by namedReader
	r.closers = closers
	if r.err != nil {
		err := r.err
		r.Close()
		return nil, err
	}
	return r, nil
}

// ReadFile reads a whole line-format file (gzip transparent).
func ReadFile(path string, opt LineOptions) ([][]int, error) {
	r, err := Open(path, opt)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out, err := readAll(r)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readAll reads every basket of r; with an error, it returns the baskets
// before it and the error (nil at EOF).
func readAll(r *Reader) ([][]int, error) {
	var out [][]int
	for {
		b, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, b)
	}
}

// openMaybeGzip opens path, wrapping it in a gzip reader when the file
// starts with the gzip magic bytes 1f 8b.
func openMaybeGzip(path string) (io.Reader, []io.Closer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("baskets: %w", err)
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, nil, fmt.Errorf("baskets: %s: is a directory", path)
	}
	br := bufio.NewReaderSize(f, 1<<16)
	magic, err := br.Peek(2)
	if err != nil && err != io.EOF {
		f.Close()
		return nil, nil, fmt.Errorf("baskets: %s: %w", path, err)
	}
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("baskets: %s: bad gzip data: %w", path, err)
		}
		return namedReader{zr, path}, []io.Closer{zr, f}, nil
	}
	return namedReader{br, path}, []io.Closer{f}, nil
}

// namedReader carries the file name to readerName.
type namedReader struct {
	io.Reader
	name string
}

func (n namedReader) Name() string { return n.name }

// Next returns the next basket as a fresh slice of item rows, or io.EOF
// after the last one. After an error every call returns the same error.
func (r *Reader) Next() ([]int, error) {
	if r.aheadChunks > 0 {
		return r.nextAhead()
	}
	return r.decode()
}

// decode is Next without read-ahead: it parses the next basket (on the
// read-ahead goroutine when there is one).
func (r *Reader) decode() ([]int, error) {
	if r.err != nil {
		return nil, r.err
	}
	b, err := r.next()
	if err != nil {
		r.err = err
		return nil, err
	}
	r.stats.Baskets++
	r.stats.Items += len(b)
	return b, nil
}

// Line returns the line number (1-based) of the last basket returned by
// Next; for CSV input, the line of the basket's first row.
func (r *Reader) Line() int {
	if r.ahead != nil {
		return r.givenLine
	}
	return r.last
}

// Stats returns the counts so far: of the baskets Next has returned and
// the lines before them (after an error, of every line read).
func (r *Reader) Stats() Stats {
	if r.ahead != nil {
		return r.given
	}
	return r.stats
}

// Close stops the read-ahead goroutine, if any, and closes the file opened
// by Open or OpenCSV; for readers made by NewLineReader or NewCSVReader
// without read-ahead it does nothing. Next returns an error after Close.
func (r *Reader) Close() error {
	if r.ahead != nil {
		r.ahead.stop() // the goroutine no longer uses r
	}
	r.closed = true
	var first error
	for _, c := range r.closers {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	r.closers = nil
	if r.err == nil || r.err == io.EOF {
		r.err = fmt.Errorf("baskets: %s: reader is closed", r.name)
	}
	return first
}

// nextLine implements Next for the line format.
func (r *Reader) nextLine() ([]int, error) {
	for {
		raw, err := r.readLine()
		if err != nil {
			return nil, err
		}
		r.line++
		if r.line == 1 {
			raw = bytes.TrimPrefix(raw, utf8BOM)
		}
		r.toks = splitTokens(r.toks[:0], raw)
		if len(r.toks) == 0 {
			r.stats.Empty++
			continue
		}
		if r.header {
			r.header = false
			continue
		}
		if err := r.checkTokens(r.toks, r.line, nil); err != nil {
			return nil, err
		}
		b, bad, reason := r.resolve(r.toks)
		if reason != "" {
			return nil, fmt.Errorf("baskets: %s:%d: bad item token %q: %s", r.name, r.line, r.toks[bad], reason)
		}
		if b == nil {
			continue // too large
		}
		r.last = r.line
		return b, nil
	}
}

// readLine returns the next line without its '\n' (valid until the next
// call), or io.EOF when there is none.
func (r *Reader) readLine() ([]byte, error) {
	r.lineBuf = r.lineBuf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		switch {
		case err == nil:
			if len(r.lineBuf) == 0 {
				return chunk[:len(chunk)-1], nil
			}
			r.lineBuf = append(r.lineBuf, chunk[:len(chunk)-1]...)
			return r.lineBuf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			r.lineBuf = append(r.lineBuf, chunk...)
			if len(r.lineBuf) > maxLineBytes {
				return nil, fmt.Errorf("baskets: %s:%d: line longer than %d bytes", r.name, r.line+1, maxLineBytes)
			}
		case err == io.EOF:
			r.lineBuf = append(r.lineBuf, chunk...)
			if len(r.lineBuf) == 0 {
				return nil, io.EOF
			}
			return r.lineBuf, nil
		default:
			return nil, fmt.Errorf("baskets: %s:%d: read: %w", r.name, r.line+1, err)
		}
	}
}

var utf8BOM = []byte("\ufeff")

func isSep(c byte) bool { return c == ' ' || c == ',' || c == '\t' || c == '\r' }

// splitTokens appends the tokens of line to dst (sub-slices of line).
func splitTokens(dst [][]byte, line []byte) [][]byte {
	i := 0
	for i < len(line) {
		for i < len(line) && isSep(line[i]) {
			i++
		}
		j := i
		for j < len(line) && !isSep(line[j]) {
			j++
		}
		if j > i {
			dst = append(dst, line[i:j])
		}
		i = j
	}
	return dst
}

// resolve maps a basket's tokens to rows, removing duplicates. It returns a
// fresh slice, or nil when the basket is skipped for MaxSize; on a bad token
// it returns its index and the reason.
func (r *Reader) resolve(toks [][]byte) (rows []int, bad int, reason string) {
	if r.vocab != nil {
		return r.resolveVocab(toks)
	}
	r.rows = r.rows[:0]
	for i, t := range toks {
		row, why := parseRow(t, r.base)
		if why == "" && r.n > 0 && row >= r.n {
			why = fmt.Sprintf("row %d out of range [0, %d)", row, r.n)
		}
		if why != "" {
			return nil, i, why
		}
		r.rows = append(r.rows, row)
	}
	k := r.dedupRows()
	if r.maxSize > 0 && k > r.maxSize {
		r.stats.Skipped++
		return nil, 0, ""
	}
	return append(make([]int, 0, k), r.rows[:k]...), 0, ""
}

// dedupRows removes repeated rows from r.rows in place (first occurrence
// kept) and returns the new length.
func (r *Reader) dedupRows() int {
	rows := r.rows
	k := 0
	if len(rows) <= 32 {
	outer:
		for _, x := range rows {
			for _, y := range rows[:k] {
				if x == y {
					continue outer
				}
			}
			rows[k] = x
			k++
		}
	} else {
		if r.seen == nil {
			r.seen = make(map[int]struct{}, len(rows))
		}
		clear(r.seen)
		for _, x := range rows {
			if _, dup := r.seen[x]; dup {
				continue
			}
			r.seen[x] = struct{}{}
			rows[k] = x
			k++
		}
	}
	r.stats.Duplicates += len(rows) - k
	return k
}

func (r *Reader) resolveVocab(toks [][]byte) ([]int, int, string) {
	// De-duplicate by token first, so that a skipped basket adds nothing
	// to a growing vocabulary.
	uniq := toks[:0:0]
	if len(toks) <= 32 {
	outer:
		for _, t := range toks {
			for _, u := range uniq {
				if bytes.Equal(t, u) {
					continue outer
				}
			}
			uniq = append(uniq, t)
		}
	} else {
		seen := make(map[string]struct{}, len(toks))
		for _, t := range toks {
			if _, dup := seen[string(t)]; dup {
				continue
			}
			seen[string(t)] = struct{}{}
			uniq = append(uniq, t)
		}
	}
	skip := r.maxSize > 0 && len(uniq) > r.maxSize
	rows := make([]int, 0, len(uniq))
	for _, t := range uniq {
		row, ok := r.vocab.Lookup(string(t))
		if !ok {
			if !r.grow {
				return nil, indexOf(toks, t), fmt.Sprintf("not in the vocabulary (%d tokens)", r.vocab.Len())
			}
			if skip {
				continue
			}
			row = r.vocab.Len()
			if r.n > 0 && row >= r.n {
				return nil, indexOf(toks, t), fmt.Sprintf("new token would be row %d; N = %d", row, r.n)
			}
			r.vocab.Add(string(t))
		}
		if r.n > 0 && row >= r.n {
			return nil, indexOf(toks, t), fmt.Sprintf("row %d out of range [0, %d)", row, r.n)
		}
		rows = append(rows, row)
	}
	r.stats.Duplicates += len(toks) - len(uniq)
	if skip {
		r.stats.Skipped++
		return nil, 0, ""
	}
	return rows, 0, ""
}

func indexOf(toks [][]byte, t []byte) int {
	for i, u := range toks {
		if bytes.Equal(u, t) {
			return i
		}
	}
	return 0
}

// maxRowToken bounds integer tokens so that rows always fit an int.
const maxRowToken = 1<<31 - 1 // fits an int on 32- and 64-bit platforms

// parseRow parses a decimal integer token (optional sign) and subtracts
// base.
func parseRow(t []byte, base int) (int, string) {
	s := t
	neg := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if len(s) == 0 {
		return 0, "not an integer"
	}
	v := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, "not an integer"
		}
		v = v*10 + int(c-'0')
		if v > maxRowToken {
			return 0, "integer too large"
		}
	}
	if neg {
		v = -v
	}
	row := v - base
	if row < 0 {
		return 0, "row " + strconv.Itoa(row) + " is negative (ids are " + strconv.Itoa(base) + "-based)"
	}
	return row, ""
}
