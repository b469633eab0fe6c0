package items

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/ndpp-go/ndpp/ndpp"
)

// Synthetic streams the items of ndpp.Random(n, d, seed, opt) in order,
// bit for bit, without holding them (opt.Shared and opt.BlockDiagonal as
// Random). It implements stream.ItemSource and stream.LenSource.
type Synthetic struct {
	n, d       int
	scale      float64
	diag       float64
	kern       ndpp.Kernel
	rv, rb, rd normals // V's, B's and the diagonal's draws
	// rand.Rands drawing from rv, rb and rd (normals.norm's rare paths)
	rvR, rbR, rdR *rand.Rand
	hasB, hasD    bool
	pos           int
	vals          []float64
	items         []ndpp.Item
}

// NewSynthetic prepares the stream: it replays Random's generator once
// over the 2·n·d draws of V and B (O(n·d) time, O(d²) memory) to reach C
// and the diagonal's draws — a normal draw takes a data-dependent number
// of the generator's steps, so there is no shortcut that keeps Random's
// bits. It looks at ctx every skipCheck draws and returns an error
// wrapping ctx.Err() once ctx is done. It returns an error for n, d < 1
// and for n·d beyond the int range.
func NewSynthetic(ctx context.Context, n, d int, seed uint64, opt ndpp.RandomOptions) (*Synthetic, error) {
	if n < 1 || d < 1 {
		return nil, fmt.Errorf("items: synthetic stream with n = %d, d = %d; both must be ≥ 1", n, d)
	}
	if n > math.MaxInt/(2*d) {
		return nil, fmt.Errorf("items: synthetic stream with n = %d, d = %d; 2·n·d overflows", n, d)
	}
	if opt.Scale == 0 {
		opt.Scale = 1 / math.Sqrt(float64(d))
	}
	if opt.CScale == 0 {
		opt.CScale = 1 / math.Sqrt(float64(d))
	}
	// The same generator as ndpp.Random (normals: its draws, bit for bit),
	// copied at three positions.
	g := newNormals(seed, 0x9e3779b97f4a7c15)
	r := rand.New(&g)
	skip := func(k int) error { // draws and discards k normals
		for k > 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("items: positioning the synthetic stream's generators: %w", err)
			}
			g.skip(min(k, skipCheck), r)
			k -= min(k, skipCheck)
		}
		return nil
	}
	s := &Synthetic{n: n, d: d, scale: opt.Scale, diag: opt.Diag}
	s.rv = g
	if err := skip(n * d); err != nil {
		return nil, err
	}
	if !opt.Shared {
		s.rb, s.hasB = g, true
		if err := skip(n * d); err != nil {
			return nil, err
		}
	}
	c := make([]float64, d*d)
	if opt.BlockDiagonal {
		for j := 0; j+1 < d; j += 2 {
			x := math.Abs(r.NormFloat64()) * opt.CScale
			c[j*d+j+1], c[(j+1)*d+j] = x, -x
		}
	} else {
		for i := 0; i < d; i++ {
			for j := i + 1; j < d; j++ {
				x := r.NormFloat64() * opt.CScale
				c[i*d+j], c[j*d+i] = x, -x
			}
		}
	}
	if opt.Diag > 0 {
		s.rd, s.hasD = g, true
	}
	s.rvR, s.rbR, s.rdR = rand.New(&s.rv), rand.New(&s.rb), rand.New(&s.rd)
	s.kern = ndpp.Kernel{D: d, C: c, Shared: opt.Shared, Diag: opt.Diag > 0}
	return s, nil
}

// skipCheck is the number of draws NewSynthetic discards between two looks
// at its context (about a millisecond).
const skipCheck = 1 << 16

// Kernel returns the stream's kernel (C as Random draws it).
func (s *Synthetic) Kernel() ndpp.Kernel { return s.kern }

// Len returns n.
func (s *Synthetic) Len() int { return s.n }

// Next returns the next items (ids 0, 1, …), at most max, or io.EOF; they
// are valid until the next call.
func (s *Synthetic) Next(max int) ([]ndpp.Item, error) {
	if max < 1 {
		return nil, fmt.Errorf("items: Next(%d); need max ≥ 1", max)
	}
	if s.pos >= s.n {
		return nil, io.EOF
	}
	n, d := min(max, s.n-s.pos), s.d
	if cap(s.vals) < 2*d*n {
		s.vals = make([]float64, 2*d*n)
		s.items = make([]ndpp.Item, n)
	}
	vals := s.vals[:2*d*n]
	if s.hasB {
		fillPair(&s.rv, &s.rb, vals, d, 2*d, s.scale, s.rvR, s.rbR)
	} else {
		s.rv.fill(vals, d, 2*d, s.scale, s.rvR)
	}
	for c := range n {
		row := vals[2*d*c : 2*d*(c+1)]
		it := ndpp.Item{ID: s.pos + c, V: row[:d:d]}
		if s.hasB {
			it.B = row[d : 2*d : 2*d]
		}
		if s.hasD {
			it.Delta = s.diag * math.Exp(s.rd.norm(s.rdR))
		}
		s.items[c] = it
	}
	s.pos += n
	return s.items[:n], nil
}
