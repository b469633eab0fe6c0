package items

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/npz"
)

// Writer writes items in one of the package's formats as they come.
type Writer struct {
	w      *bufio.Writer
	kern   ndpp.Kernel
	check  ndpp.ItemCheck // of kern, its scale computed once
	format string
	f32    bool
	n, pos int // NPY: rows declared and written
	buf    []byte
}

// NewNPYWriter starts an NPY stream of n items of the kernel k: the header
// (shape (n, Width(k)), "<f8", or "<f4" with float32), then rows as they
// are written. Close checks that n rows were written.
func NewNPYWriter(w io.Writer, k ndpp.Kernel, n int, float32 bool) (*Writer, error) {
	descr := "<f8"
	if float32 {
		descr = "<f4"
	}
	wr := &Writer{w: bufio.NewWriterSize(w, 1<<20), kern: k, check: ndpp.NewItemCheck(k), format: FormatNPY, f32: float32, n: n}
	if _, err := wr.w.Write(npz.AppendNPYHeader(nil, descr, []int{n, Width(k)})); err != nil {
		return nil, err
	}
	return wr, nil
}

// NewTextWriter starts a text stream of items of the kernel k: one line
// per item, "id v… b… [δ]" separated by spaces, values in the shortest
// form that reads back to the same float64.
func NewTextWriter(w io.Writer, k ndpp.Kernel) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 1<<20), kern: k, check: ndpp.NewItemCheck(k), format: FormatText, n: -1}
}

// Write writes items (validated against the kernel: ndpp.CheckItem). The
// items before an invalid one are written.
func (wr *Writer) Write(items []ndpp.Item) error {
	valid, err := wr.check.CheckAll(items)
	if wr.n >= 0 && wr.pos+valid > wr.n { // before the invalid item, if any
		valid, err = wr.n-wr.pos, fmt.Errorf("more than the %d rows declared in the NPY header", wr.n)
	}
	for _, it := range items[:valid] {
		b := wr.buf[:0]
		if wr.format == FormatText {
			b = strconv.AppendInt(b, int64(it.ID), 10)
			b = appendText(b, it.V)
			if !wr.kern.Shared {
				b = appendText(b, it.B)
			}
			if wr.kern.Diag {
				b = append(b, ' ')
				b = strconv.AppendFloat(b, it.Delta, 'g', -1, 64)
			}
			b = append(b, '\n')
		} else {
			b = wr.appendNPY(b, it.V)
			if !wr.kern.Shared {
				b = wr.appendNPY(b, it.B)
			}
			if wr.kern.Diag {
				b = wr.appendNPY(b, []float64{it.Delta})
			}
		}
		wr.buf = b
		if _, err := wr.w.Write(b); err != nil {
			return err
		}
		wr.pos++
	}
	if err != nil {
		return fmt.Errorf("items: %w", err)
	}
	return nil
}

// appendText appends the values, each after a space, in the shortest form
// that reads back to the same float64.
func appendText(b []byte, xs []float64) []byte {
	for _, x := range xs {
		b = append(b, ' ')
		b = strconv.AppendFloat(b, x, 'g', -1, 64)
	}
	return b
}

// appendNPY appends the values as little-endian float64 (float32 with f32).
func (wr *Writer) appendNPY(b []byte, xs []float64) []byte {
	if wr.f32 {
		for _, x := range xs {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(x)))
		}
		return b
	}
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

// Close flushes the stream; for NPY it checks that the declared number of
// rows was written.
func (wr *Writer) Close() error {
	if err := wr.w.Flush(); err != nil {
		return err
	}
	if wr.n >= 0 && wr.pos != wr.n {
		return fmt.Errorf("items: %d rows written; the NPY header declares %d", wr.pos, wr.n)
	}
	return nil
}
