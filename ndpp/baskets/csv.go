package baskets

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/ndpp-go/ndpp/ndpp"
)

// CSVOptions configures NewCSVReader and OpenCSV.
type CSVOptions struct {
	// BasketColumn and ItemColumn name the header columns holding the
	// basket id (e.g. "InvoiceNo") and the item token (e.g. "StockCode").
	BasketColumn, ItemColumn string
	// Vocab, if non-nil, maps item tokens to rows (see LineOptions). If
	// nil, item tokens must be non-negative integers used as rows directly
	// (0-based).
	Vocab *ndpp.Vocab
	// Grow adds unknown tokens to Vocab (see LineOptions.Grow).
	Grow bool
	// N, if > 0, is the number of items: rows must be < N.
	N int
	// MaxSize, if > 0, skips baskets with more distinct items.
	MaxSize int
	// Comma is the field separator (default ',').
	Comma rune
	// Tokens says which item tokens a growing vocabulary takes as items
	// (see Tokens; the zero value takes any).
	Tokens Tokens
	// ReadAhead > 0 parses the file on a goroutine of the reader's own
	// (see LineOptions.ReadAhead and Reader).
	ReadAhead int
}

type csvState struct {
	cr         *csv.Reader
	bcol, icol int
	nfields    int
	done       map[string]int // finished basket ids → line of their first row
	have       bool           // a basket is open
	cur        string         // its id
	curLine    int            // line of its first row
	toks       [][]byte       // its item tokens
	lines      []int          // line of each token
	eof        bool
}

// NewCSVReader reads the header of a transaction CSV from r and returns a
// reader of its baskets. When r is an *os.File its name is used in error
// messages, otherwise "input".
//
// A transaction CSV has a header line naming the columns, then one row per
// (basket, item) pair, as in invoice exports such as the UCI Online Retail
// data:
//
//	InvoiceNo,StockCode,Description,Quantity,...
//	536365,85123A,WHITE HANGING HEART T-LIGHT HOLDER,6,...
//	536365,71053,WHITE METAL LANTERN,6,...
//	536366,22633,HAND WARMER UNION JACK,6,...
//
// The rows of one basket must be contiguous: a basket id that re-appears
// after another basket has started is an error naming the line (sort the
// file by the basket column first). Fields are parsed by encoding/csv
// (quotes, embedded separators and newlines); every row must have as many
// fields as the header. Header names, basket ids and item tokens are
// trimmed of spaces (and a leading byte-order mark); rows where the basket
// or item field is empty are skipped and counted in Stats.Empty.
// Duplicate items in a basket are removed as in the line format.
// NewCSVReader panics if r is nil.
func NewCSVReader(r io.Reader, opt CSVOptions) (*Reader, error) {
	if r == nil {
		panic("baskets: NewCSVReader with a nil io.Reader")
	}
	br := newReader(readerName(r), opt.Vocab, opt.Grow, 0, opt.N, opt.MaxSize)
	br.tokens.rule = opt.Tokens
	br.aheadChunks = opt.ReadAhead
	if err := br.checkOptions(); err != nil {
		return nil, err
	}
	if opt.BasketColumn == "" || opt.ItemColumn == "" {
		return nil, fmt.Errorf("baskets: %s: CSVOptions needs both BasketColumn and ItemColumn", br.name)
	}
	if opt.BasketColumn == opt.ItemColumn {
		return nil, fmt.Errorf("baskets: %s: BasketColumn and ItemColumn are both %q", br.name, opt.BasketColumn)
	}
	comma := opt.Comma
	if comma == 0 {
		comma = ','
	}
	if comma == '"' || comma == '\r' || comma == '\n' || comma == utf8.RuneError || !utf8.ValidRune(comma) {
		return nil, fmt.Errorf("baskets: %s: invalid CSV separator %q", br.name, comma)
	}
	cr := csv.NewReader(r)
	cr.Comma = comma
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("baskets: %s: empty file; want a header line naming %q and %q", br.name, opt.BasketColumn, opt.ItemColumn)
	}
	if err != nil {
		return nil, br.csvError(err)
	}
	cols := make([]string, len(header))
	for i, h := range header {
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff") // byte-order mark of spreadsheet exports
		}
		cols[i] = strings.TrimSpace(h)
	}
	find := func(name string) (int, error) {
		at := -1
		for i, c := range cols {
			if c == name {
				if at >= 0 {
					return 0, fmt.Errorf("baskets: %s: column %q appears twice in the header %q", br.name, name, cols)
				}
				at = i
			}
		}
		if at < 0 {
			return 0, fmt.Errorf("baskets: %s: no column %q in the header %q", br.name, name, cols)
		}
		return at, nil
	}
	st := &csvState{cr: cr, nfields: len(header), done: make(map[string]int)}
	if st.bcol, err = find(opt.BasketColumn); err != nil {
		return nil, err
	}
	if st.icol, err = find(opt.ItemColumn); err != nil {
		return nil, err
	}
	br.next = func() ([]int, error) { return br.nextCSV(st) }
	return br, nil
}

// OpenCSV opens a transaction CSV file (gzip transparent) and reads
// its header. Close the reader when done.
func OpenCSV(path string, opt CSVOptions) (*Reader, error) {
	src, closers, err := openMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	r, err := NewCSVReader(src, opt)
	if err != nil {
		for _, c := range closers {
			c.Close()
		}
		return nil, err
	}
	r.closers = closers
	return r, nil
}

func (r *Reader) csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("baskets: %s:%d: bad CSV: %w", r.name, pe.Line, pe.Err)
	}
	return fmt.Errorf("baskets: %s: read: %w", r.name, err)
}

// nextCSV implements Next for transaction CSV.
func (r *Reader) nextCSV(st *csvState) ([]int, error) {
	for {
		if st.eof {
			if !st.have {
				return nil, io.EOF
			}
			st.have = false
			if b, err := r.finishCSV(st); b != nil || err != nil {
				return b, err
			}
			continue
		}
		rec, err := st.cr.Read()
		if err == io.EOF {
			st.eof = true
			continue
		}
		if err != nil {
			return nil, r.csvError(err)
		}
		line, _ := st.cr.FieldPos(st.bcol)
		id := strings.TrimSpace(rec[st.bcol])
		item := strings.TrimSpace(rec[st.icol])
		if id == "" || item == "" {
			r.stats.Empty++
			continue
		}
		if st.have && id == st.cur {
			st.toks = append(st.toks, []byte(item))
			st.lines = append(st.lines, line)
			continue
		}
		if first, ok := st.done[id]; ok {
			return nil, fmt.Errorf("baskets: %s:%d: basket %q re-appears after other baskets (its rows began at line %d); the rows of a basket must be contiguous", r.name, line, id, first)
		}
		var out []int
		if st.have {
			if out, err = r.finishCSV(st); err != nil {
				return nil, err
			}
		}
		st.have, st.cur, st.curLine = true, id, line
		st.done[id] = line
		st.toks = append(st.toks[:0], []byte(item))
		st.lines = append(st.lines[:0], line)
		if out != nil {
			return out, nil
		}
	}
}

// finishCSV resolves the open basket; nil, nil means it was skipped.
func (r *Reader) finishCSV(st *csvState) ([]int, error) {
	if err := r.checkTokens(st.toks, st.curLine, st.lines); err != nil {
		return nil, err
	}
	b, bad, reason := r.resolve(st.toks)
	if reason != "" {
		return nil, fmt.Errorf("baskets: %s:%d: bad item token %q: %s", r.name, st.lines[bad], st.toks[bad], reason)
	}
	if b != nil {
		r.last = st.curLine
	}
	return b, nil
}
