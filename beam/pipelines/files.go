package pipelines

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// BasketFormat says how basket files are read: the data-file flags of
// ndpp-bench (--format, --basket-col, --item-col, --comma, --max-size).
type BasketFormat struct {
	// Format is "lines" (one basket per line; the default when empty) or
	// "csv" (one row per item, with BasketCol and ItemCol).
	Format    string `json:"format"`
	BasketCol string `json:"basket_col"`
	ItemCol   string `json:"item_col"`
	// Comma is the CSV field separator, one character (default ",").
	Comma string `json:"comma"`
	// MaxSize, if > 0, skips baskets with more items.
	MaxSize int `json:"max_size"`
}

// Check reports options that make no sense.
func (f BasketFormat) Check() error {
	switch f.Format {
	case "", "lines":
		if f.BasketCol != "" || f.ItemCol != "" {
			return errors.New("pipelines: basket and item columns need the csv format")
		}
	case "csv":
		if f.BasketCol == "" || f.ItemCol == "" {
			return errors.New("pipelines: the csv format needs a basket column and an item column")
		}
		if f.Comma != "" && utf8.RuneCountInString(f.Comma) != 1 {
			return fmt.Errorf("pipelines: CSV separator %q is not one character", f.Comma)
		}
	default:
		return fmt.Errorf("pipelines: basket file format %q; want lines or csv", f.Format)
	}
	if f.MaxSize < 0 {
		return fmt.Errorf("pipelines: MaxSize = %d; want ≥ 0", f.MaxSize)
	}
	return nil
}

func (f BasketFormat) csv() bool { return f.Format == "csv" }

// MatchFiles expands glob on its Beam filesystem into the matching files,
// sorted by name. It is an error when nothing matches.
func MatchFiles(ctx context.Context, glob string) ([]string, error) {
	fs, err := filesystem.New(ctx, glob)
	if err != nil {
		return nil, fmt.Errorf("pipelines: %s: %w", glob, err)
	}
	defer fs.Close()
	files, err := fs.List(ctx, glob)
	if err != nil {
		return nil, fmt.Errorf("pipelines: %s: %w", glob, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("pipelines: no file matches %s", glob)
	}
	slices.Sort(files)
	return files, nil
}

// DefaultChunkSize is the number of baskets in a chunk (and of lines in a
// block of a line-format file's part) unless configured.
const DefaultChunkSize = 512

// Chunk is a block of baskets of one file read by one task: their rows
// and (for scoring) their line numbers.
type Chunk struct {
	File    int // index in the task's file list
	Lines   []int
	Baskets [][]int
}

// task is one read task: part Part of Parts of file File.
type task struct {
	File, Part int
}

// tasks lists the read tasks of nfiles files split into parts parts each.
func tasks(nfiles, parts int) []task {
	out := make([]task, 0, nfiles*parts)
	for f := range nfiles {
		for p := range parts {
			out = append(out, task{File: f, Part: p})
		}
	}
	return out
}

// taskKey encodes a task as the int64 that travels in the pipeline.
func taskKey(t task, parts int) int64 { return int64(t.File)*int64(parts) + int64(t.Part) }

func keyTask(k int64, parts int) task {
	return task{File: int(k / int64(parts)), Part: int(k % int64(parts))}
}

// reader reads the baskets of one task.
type reader struct {
	Files     []string
	Format    BasketFormat
	Parts     int
	ChunkSize int
}

func (r reader) chunkSize() int {
	if r.ChunkSize <= 0 {
		return DefaultChunkSize
	}
	return r.ChunkSize
}

// each calls fn with every basket of task t (its line and rows) mapped by
// voc (grown when grow is set; nil: tokens are 0-based rows below n when
// n > 0), in file order.
func (r reader) each(ctx context.Context, t task, voc *ndpp.Vocab, grow bool, n int, fn func(line int, b []int) error) error {
	if t.File < 0 || t.File >= len(r.Files) || t.Part < 0 || t.Part >= r.Parts {
		return fmt.Errorf("pipelines: read task %+v outside %d files and %d parts", t, len(r.Files), r.Parts)
	}
	path := r.Files[t.File]
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return fmt.Errorf("pipelines: %s: %w", path, err)
	}
	defer fs.Close()
	rc, err := fs.OpenRead(ctx, path)
	if err != nil {
		return fmt.Errorf("pipelines: %s: %w", path, err)
	}
	defer rc.Close()
	src := bufio.NewReaderSize(rc, 1<<16)
	magic, err := src.Peek(2)
	if err != nil && err != io.EOF {
		return fmt.Errorf("pipelines: %s: %w", path, err)
	}
	var in io.Reader = src
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(src)
		if err != nil {
			return fmt.Errorf("pipelines: %s: bad gzip data: %w", path, err)
		}
		defer zr.Close()
		in = zr
	}
	block := r.chunkSize()
	var br *baskets.Reader
	if r.Format.csv() {
		comma := ','
		if r.Format.Comma != "" {
			comma = []rune(r.Format.Comma)[0]
		}
		br, err = baskets.NewCSVReader(named{in, path}, baskets.CSVOptions{BasketColumn: r.Format.BasketCol, ItemColumn: r.Format.ItemCol,
			Vocab: voc, Grow: grow, N: n, MaxSize: r.Format.MaxSize, Comma: comma})
		if err != nil {
			return err
		}
	} else {
		if r.Parts > 1 {
			in = &blankReader{r: bufio.NewReaderSize(in, 1<<16), part: t.Part, parts: r.Parts, block: block}
		}
		br = baskets.NewLineReader(named{in, path}, baskets.LineOptions{Vocab: voc, Grow: grow, N: n, MaxSize: r.Format.MaxSize})
	}
	for ord := 0; ; ord++ {
		if ord%block == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		b, err := br.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		// Line-format parts were cut by the blanking; CSV parts are
		// every Parts-th block of baskets.
		if r.Format.csv() && (ord/block)%r.Parts != t.Part {
			continue
		}
		if err := fn(br.Line(), b); err != nil {
			return err
		}
	}
}

// chunks calls emit with the task's baskets in chunks of at most
// ChunkSize (with line numbers when lines is set).
func (r reader) chunks(ctx context.Context, t task, voc *ndpp.Vocab, n int, lines bool, emit func(Chunk)) error {
	size := r.chunkSize()
	c := Chunk{File: t.File}
	err := r.each(ctx, t, voc, false, n, func(line int, b []int) error {
		if lines {
			c.Lines = append(c.Lines, line)
		}
		c.Baskets = append(c.Baskets, b)
		if len(c.Baskets) == size {
			emit(c)
			c = Chunk{File: t.File}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(c.Baskets) > 0 {
		emit(c)
	}
	return nil
}

// named gives the core's readers the file's name for their messages.
type named struct {
	io.Reader
	name string
}

func (n named) Name() string { return n.name }

// blankReader passes through the lines of blocks part, part+parts, … (of
// block lines each) and replaces every other line by an empty one, so that
// a line reader sees only the part's baskets at their own line numbers.
type blankReader struct {
	r                  *bufio.Reader
	part, parts, block int
	line               int  // lines completed
	mid, keep          bool // inside a line; whether it is passed through
	buf, pend          []byte
	err                error
}

func (b *blankReader) Read(p []byte) (int, error) {
	for len(b.pend) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		chunk, err := b.r.ReadSlice('\n')
		complete := err == nil
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			b.err = err
		}
		if !b.mid {
			b.keep = (b.line/b.block)%b.parts == b.part
		}
		switch {
		case b.keep:
			b.buf = append(b.buf[:0], chunk...)
		case complete:
			b.buf = append(b.buf[:0], '\n')
		default:
			b.buf = b.buf[:0]
		}
		b.pend = b.buf
		b.mid = !complete
		if complete {
			b.line++
		}
	}
	n := copy(p, b.pend)
	b.pend = b.pend[n:]
	return n, nil
}
