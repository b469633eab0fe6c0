package sample

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/internal/f64"
	"github.com/ndpp-go/ndpp/ndpp"
)

// DefaultBlock is the number of items decided together when Options.Block
// is zero.
const DefaultBlock = 16

// MinGivenProb is the smallest conditional probability P(a ∈ Y | the given
// items before a ∈ Y) that Given accepts for each given item a; below it
// the event A ⊆ Y is treated as having probability zero (the probabilities
// are computed to within rounding errors of order 1e-16 times the sizes of
// the kernel's entries).
const MinGivenProb = 1e-12

// ErrZeroProb is returned by Given when the given items are (numerically)
// never all in Y.
var ErrZeroProb = errors.New("sample: the given items have probability zero of being in Y together")

// Options configures a Sampler.
type Options struct {
	// Block is the number of items decided together with matrix–matrix
	// products (0 = DefaultBlock; 1 = one item at a time, with
	// matrix–vector loops). Samples do not depend on it beyond rounding.
	Block int
}

// Sampler draws exact samples of an NDPP (see the package documentation).
// A Sampler is not safe for concurrent use (it owns scratch buffers);
// Clone returns an independent one sharing the precomputed state, one per
// goroutine.
type Sampler struct {
	m      *ndpp.Model
	n, d   int
	r      int  // rank of the low-rank part: 2d, or d when B = V
	shared bool // B = V: zᵢ = vᵢ, W = I + C
	// t scales the kernel: the sampler draws from the NDPP of t·L (1 for
	// New; the k-NDPP sampler's other scales, see KSampler).
	t float64

	x0      []float64 // r×r: X of the process over the items not given
	g2      []float64 // r×r: Σ ẑᵢẑᵢᵀ over the items not given
	kappa   float64   // Σ κᵢ over the items not given
	given   []int     // sorted
	logPGiv float64   // log P(given ⊆ Y)
	block   int

	// Scratch.
	x          []float64 // r×r
	zb, y, h   []float64 // block×r
	a          []float64 // block×block
	kap        []float64 // block: κ of the block's items
	items      []int     // block: the block's items
	zv, hv, yv []float64 // r: one-item steps
}

// New returns a sampler of the NDPP with kernel m: O(n·r²) to form the
// Gram matrices and O(r³) after. It returns an error for a nil model and
// for Block < 0, and one wrapping ctx.Err() once ctx is done (checked
// between chunks of items of the Gram products).
func New(ctx context.Context, m *ndpp.Model, opt Options) (*Sampler, error) {
	if m == nil {
		return nil, errors.New("sample: nil model")
	}
	if opt.Block < 0 {
		return nil, fmt.Errorf("sample: block size %d; need ≥ 0 (0 = default)", opt.Block)
	}
	block := opt.Block
	if block == 0 {
		block = DefaultBlock
	}
	s := newBare(m, 1, block)
	s.alloc()
	g1, g2, err := s.grams(ctx, nil)
	if err != nil {
		return nil, err
	}
	x0, err := s.initialX(g1, s.weight())
	if err != nil {
		return nil, err
	}
	s.x0, s.g2 = x0, g2
	for i := 0; i < s.n; i++ {
		s.kappa += s.kappaOf(i)
	}
	return s, nil
}

// newBare returns a sampler of the NDPP of t·L for m without its
// precomputed state (x0, g2, kappa) or scratch buffers.
func newBare(m *ndpp.Model, t float64, block int) *Sampler {
	s := &Sampler{m: m, n: m.N(), d: m.D(), shared: m.Shared(), block: block, t: t}
	s.r = 2 * s.d
	if s.shared {
		s.r = s.d
	}
	return s
}

// alloc sizes the scratch buffers.
func (s *Sampler) alloc() {
	r, b := s.r, s.block
	s.x = make([]float64, r*r)
	s.zb, s.y, s.h = make([]float64, b*r), make([]float64, b*r), make([]float64, b*r)
	s.a = make([]float64, b*b)
	s.kap = make([]float64, b)
	s.items = make([]int, 0, b)
	s.zv, s.hv, s.yv = make([]float64, r), make([]float64, r), make([]float64, r)
}

// Clone returns a sampler of the same distribution with its own scratch
// buffers (the precomputed state is shared, read-only).
func (s *Sampler) Clone() *Sampler {
	c := *s
	c.alloc()
	return &c
}

// Model returns the sampler's model.
func (s *Sampler) Model() *ndpp.Model { return s.m }

// GivenItems returns a copy of the items every sample contains (sorted).
func (s *Sampler) GivenItems() []int { return slices.Clone(s.given) }

// GivenLogProb returns log P(A ⊆ Y) = log det K_A for the given items A
// under the unconditioned process (0 without conditioning).
func (s *Sampler) GivenLogProb() float64 { return s.logPGiv }

// ExpectedSize returns E|Y| of the sampled distribution: tr K =
// Σᵢ κᵢ + tr(X Σᵢ ẑᵢẑᵢᵀ) = tr(L(L + I)⁻¹) without conditioning, and
// |A| + tr K^A given A ⊆ Y.
func (s *Sampler) ExpectedSize() float64 {
	t := float64(len(s.given)) + s.kappa
	r := s.r
	for a := 0; a < r; a++ {
		for b := 0; b < r; b++ {
			t += s.x0[a*r+b] * s.g2[b*r+a]
		}
	}
	return t
}

// diagOf returns the diagonal entry of t·L's D: t·δᵢ.
func (s *Sampler) diagOf(i int) float64 {
	if s.t == 1 {
		return s.m.ItemDiag(i)
	}
	return s.t * s.m.ItemDiag(i)
}

// kappaOf returns κᵢ = tδᵢ/(1 + tδᵢ).
func (s *Sampler) kappaOf(i int) float64 {
	di := s.diagOf(i)
	return di / (1 + di)
}

// zhat writes ẑᵢ = zᵢ/(1 + tδᵢ) into dst (length r).
func (s *Sampler) zhat(i int, dst []float64) {
	d := s.d
	copy(dst[:d], s.m.ItemV(i))
	if !s.shared {
		copy(dst[d:2*d], s.m.ItemB(i))
	}
	if di := s.diagOf(i); di != 0 {
		f := 1 / (1 + di)
		for j := range dst[:s.r] {
			dst[j] *= f
		}
	}
}

// grams returns G₁ = Σᵢ zᵢzᵢᵀ/(1 + tδᵢ) and G₂ = Σᵢ ẑᵢẑᵢᵀ (r×r) over the
// items not in skip (sorted), in chunks of gramChunk items (rows) through
// blas.Syrk, checking ctx before each chunk.
func (s *Sampler) grams(ctx context.Context, skip []int) (g1, g2 []float64, err error) {
	r := s.r
	g1 = make([]float64, r*r)
	hasDiag := s.m.HasDiag()
	if hasDiag {
		g2 = make([]float64, r*r)
	}
	z1 := make([]float64, min(gramChunk, s.n)*r)
	var z2 []float64
	if hasDiag {
		z2 = make([]float64, min(gramChunk, s.n)*r)
	}
	for lo := 0; lo < s.n; lo += gramChunk {
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("sample: new sampler: %w", err)
		}
		hi := min(lo+gramChunk, s.n)
		nb := 0
		for i := lo; i < hi; i++ {
			if len(skip) > 0 && skip[0] == i {
				skip = skip[1:]
				continue
			}
			row := z1[nb*r : (nb+1)*r]
			s.zhat(i, row) // ẑᵢ = zᵢ/(1+tδᵢ)
			if hasDiag {
				copy(z2[nb*r:], row)
				f := math.Sqrt(1 + s.diagOf(i)) // zᵢ/√(1+tδᵢ) = √(1+tδᵢ)·ẑᵢ
				for j := range row {
					row[j] *= f
				}
			}
			nb++
		}
		if nb == 0 {
			continue
		}
		blas.Syrk(gblas.Trans, r, nb, 1, z1, r, 1, g1, r)
		if hasDiag {
			blas.Syrk(gblas.Trans, r, nb, 1, z2, r, 1, g2, r)
		}
	}
	fillLower(g1, r)
	if !hasDiag {
		return g1, g1, nil
	}
	fillLower(g2, r)
	return g1, g2, nil
}

// fillLower copies the upper triangle of a (n×n) into its lower one.
func fillLower(a []float64, n int) {
	for i := 0; i < n; i++ {
		for j := 0; j < i; j++ {
			a[i*n+j] = a[j*n+i]
		}
	}
}

// gramChunk is the number of items per Gram product in New.
const gramChunk = 4096

// weight returns W (r×r): blockdiag(I_d, C), or I_d + C when B = V.
func (s *Sampler) weight() []float64 {
	r, d := s.r, s.d
	_, _, _, c := s.m.Rows()
	w := make([]float64, r*r)
	for i := 0; i < d; i++ {
		w[i*r+i] = 1
	}
	off := d
	if s.shared {
		off = 0
	}
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			w[(off+i)*r+off+j] += c[i*d+j]
		}
	}
	return w
}

// initialX returns X = (I_r + tW G₁)⁻¹ tW for the weight w (r×r).
func (s *Sampler) initialX(g1, w []float64) ([]float64, error) {
	r := s.r
	if s.t != 1 {
		w = slices.Clone(w)
		for i := range w {
			w[i] *= s.t
		}
	}
	a := make([]float64, r*r)
	blas64.Implementation().Dgemm(gblas.NoTrans, gblas.NoTrans, r, r, r, 1, w, r, g1, r, 0, a, r)
	for i := 0; i < r; i++ {
		a[i*r+i]++
	}
	var lu mat.LU
	lu.Factorize(mat.NewDense(r, r, a))
	var x mat.Dense
	if err := lu.SolveTo(&x, false, mat.NewDense(r, r, w)); err != nil {
		return nil, fmt.Errorf("sample: I + W·G is singular: %w", err)
	}
	out := make([]float64, r*r)
	raw := x.RawMatrix()
	for i := 0; i < r; i++ {
		copy(out[i*r:(i+1)*r], raw.Data[i*raw.Stride:i*raw.Stride+r])
	}
	return out, nil
}

// Given returns a sampler of the distribution of Y given items ⊆ Y (and the
// items s is already conditioned on). It returns an error for invalid items
// (out of range, repeated, already given) and ErrZeroProb when the items
// cannot all be in Y. O(|items|·r²).
//
// Once ctx is done it stops (ctx is checked before every givenCheckEvery
// items) and returns an error wrapping ctx.Err(). s is never changed (the
// conditioning works on a copy of its state), so it stays usable, and a
// later Given on it returns what an uninterrupted call would have.
func (s *Sampler) Given(ctx context.Context, items []int) (*Sampler, error) {
	if len(items) == 0 {
		return s.Clone(), nil
	}
	if err := s.m.CheckItems(items); err != nil {
		return nil, fmt.Errorf("sample: given items: %w", err)
	}
	for _, it := range items {
		if _, found := slices.BinarySearch(s.given, it); found {
			return nil, fmt.Errorf("sample: item %d is already given", it)
		}
	}
	c := s.Clone()
	c.x0, c.g2 = slices.Clone(s.x0), slices.Clone(s.g2)
	add := slices.Sorted(slices.Values(items))
	r := s.r
	for k, it := range add {
		if k%givenCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("sample: given items: stopped after %d of %d: %w", k, len(add), err)
			}
		}
		c.zhat(it, c.zv)
		p := c.pivot(c.x0, c.kappaOf(it))
		if !(p >= MinGivenProb) {
			return nil, fmt.Errorf("%w (item %d: conditional probability %.3g)", ErrZeroProb, it, p)
		}
		c.update(c.x0, p)
		c.logPGiv += math.Log(p)
		c.kappa -= c.kappaOf(it)
		blas.Ger(-1, c.zv, c.zv, c.g2, r)
	}
	c.given = append(slices.Clone(s.given), add...)
	slices.Sort(c.given)
	return c, nil
}

// givenCheckEvery is the number of given items Given conditions on between
// two checks of the context (O(givenCheckEvery·r²) work).
const givenCheckEvery = 16

// pivot computes, for ẑ in s.zv, h = Xẑ (s.hv), yᵀ = ẑᵀX (s.yv) and
// returns p = κ + ẑᵀXẑ, O(r²).
func (s *Sampler) pivot(x []float64, kappa float64) float64 {
	r := s.r
	z, h := s.zv, s.hv
	for a := 0; a < r; a++ {
		h[a] = blas.Dot(x[a*r:(a+1)*r], z)
	}
	f64.GemvT(x, r, z, s.yv)
	return kappa + blas.Dot(z, h)
}

// update applies X ← X − h yᵀ/π for the h, y of the last pivot, O(r²).
func (s *Sampler) update(x []float64, pi float64) {
	r := s.r
	for a := 0; a < r; a++ {
		f64.AxpyUnitary(-s.hv[a]/pi, s.yv, x[a*r:(a+1)*r])
	}
}

// Sample draws one sample, Y sorted ascending, using one rng.Float64() per
// item not given, in item order.
//
// Once ctx is done it stops (ctx is checked before each block of items)
// and returns no items and an error wrapping ctx.Err(); rng has then
// advanced by the items decided so far, and the sampler stays usable (each
// sample starts afresh from the precomputed state).
func (s *Sampler) Sample(ctx context.Context, rng *rand.Rand) ([]int, error) {
	return s.SampleInto(ctx, rng, nil)
}

// SampleInto is Sample appending to dst[:0].
func (s *Sampler) SampleInto(ctx context.Context, rng *rand.Rand, dst []int) ([]int, error) {
	out, _, err := s.sampleInto(ctx, rng, dst, -1)
	return out, err
}

// sampleInto is SampleInto; with limit ≥ 0 it stops after the block at
// which the sample (beyond the given items) holds more than limit items
// or can no longer reach limit, and reports ok = false (the items
// returned are then not a sample). ok reports a sample of limit items,
// and is always true for limit < 0.
func (s *Sampler) sampleInto(ctx context.Context, rng *rand.Rand, dst []int, limit int) (out []int, ok bool, err error) {
	out = dst[:0]
	copy(s.x, s.x0)
	gi := 0 // next given item
	left := s.n - len(s.given)
	items := s.items[:0]
	for i := 0; i < s.n; i++ {
		if gi < len(s.given) && s.given[gi] == i {
			gi++
			continue
		}
		items = append(items, i)
		if len(items) == s.block {
			if err := ctx.Err(); err != nil {
				s.items = items
				return out[:0], false, fmt.Errorf("sample: stopped at item %d: %w", items[0], err)
			}
			out = s.decide(items, rng, out)
			left -= len(items)
			items = items[:0]
			if limit >= 0 && (len(out) > limit || len(out)+left < limit) {
				s.items = items
				return out, false, nil
			}
		}
	}
	if len(items) > 0 {
		if err := ctx.Err(); err != nil {
			s.items = items
			return out[:0], false, fmt.Errorf("sample: stopped at item %d: %w", items[0], err)
		}
		out = s.decide(items, rng, out)
	}
	s.items = items[:0]
	if limit >= 0 && len(out) != limit {
		return out, false, nil
	}
	if len(s.given) > 0 {
		out = append(out, s.given...)
		slices.Sort(out)
	}
	return out, true, nil
}

// decide decides the items of one block (ascending), appending the
// included ones to out, and updates s.x.
func (s *Sampler) decide(items []int, rng *rand.Rand, out []int) []int {
	if s.block == 1 {
		for _, it := range items {
			s.zhat(it, s.zv)
			p := s.pivot(s.x, s.kappaOf(it))
			pi := p
			if rng.Float64() < p {
				out = append(out, it)
			} else {
				pi = p - 1
			}
			s.update(s.x, pi)
		}
		return out
	}
	r, nb, ld := s.r, len(items), len(items)
	zb, y, h, a := s.zb[:nb*r], s.y[:nb*r], s.h[:nb*r], s.a[:nb*nb]
	for c, it := range items {
		s.zhat(it, zb[c*r:(c+1)*r])
		s.kap[c] = s.kappaOf(it)
	}
	// Y = Ẑ_b X (rows ẑᵀX), H = Ẑ_b Xᵀ (rows (Xẑ)ᵀ), K_b = Y Ẑ_bᵀ + diag(κ).
	blas.Gemm(gblas.NoTrans, gblas.NoTrans, nb, r, r, 1, zb, r, s.x, r, 0, y, r)
	blas.Gemm(gblas.NoTrans, gblas.Trans, nb, r, r, 1, zb, r, s.x, r, 0, h, r)
	blas.Gemm(gblas.NoTrans, gblas.Trans, nb, nb, r, 1, y, r, zb, r, 0, a, ld)
	for c := range items {
		a[c*ld+c] += s.kap[c]
	}
	// Decide in order, factorising M = K_b − J_b = LU without pivoting:
	// the pivot of item j is its conditional probability p (minus one if
	// it is left out).
	for j := 0; j < nb; j++ {
		p := a[j*ld+j]
		pi := p
		if rng.Float64() < p {
			out = append(out, items[j])
		} else {
			pi = p - 1
		}
		a[j*ld+j] = pi
		urow := a[j*ld+j+1 : (j+1)*ld]
		for l := j + 1; l < nb; l++ {
			f := a[l*ld+j] / pi
			a[l*ld+j] = f
			f64.AxpyUnitary(-f, urow, a[l*ld+j+1:(l+1)*ld])
		}
	}
	// X ← X − Hᵀ M⁻¹ Y: Y ← U⁻¹ L⁻¹ Y, then X −= Hᵀ Y.
	impl := blas64.Implementation()
	impl.Dtrsm(gblas.Left, gblas.Lower, gblas.NoTrans, gblas.Unit, nb, r, 1, a, ld, y, r)
	impl.Dtrsm(gblas.Left, gblas.Upper, gblas.NoTrans, gblas.NonUnit, nb, r, 1, a, ld, y, r)
	blas.Gemm(gblas.Trans, gblas.NoTrans, r, r, nb, -1, h, r, y, r, 1, s.x, r)
	return out
}
