package learn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ndpp-go/ndpp/ndpp"
)

// Params are the parameters a learner changes, in the row layout of
// embedding tables: row i of V (and B) is item i's vector. C is kept
// skew-symmetric through its generator: C = D − Dᵀ for a free d×d matrix D.
//
// With a diagonal (Theta not nil) the kernel is L = Δ + VᵀV + BᵀCB with
// Δ = diag(δᵢ), δᵢ = exp(θᵢ), and the rows held are the item vectors
// scaled by 1/sᵢ, sᵢ = √(1 + δᵢ): the model's vᵢ is sᵢ·V[i], its bᵢ is
// sᵢ·B[i]. In these coordinates I + L = S(I + ṼᵀWṼ)S with S = diag(sᵢ)
// (W = blockdiag(I, C), Ṽ the rows held), so the normaliser separates,
//
//	log det(I + L) = Σᵢ log(1 + δᵢ) + log det(I_2d + W G̃),  G̃ = Σᵢ z̃ᵢz̃ᵢᵀ,
//
// and the Gram matrix of the rows held is the one of the low-rank kernel:
// a change of δᵢ moves no other item's term. Without a diagonal (Theta
// nil) the rows are the model's vectors.
type Params struct {
	N   int       // number of items
	Dim int       // rank parameter d
	V   []float64 // N×Dim, row-major
	B   []float64 // N×Dim, row-major; nil for the shared variant B = V
	D   []float64 // Dim×Dim generator of C = D − Dᵀ
	// Theta holds θᵢ = log δᵢ of the diagonal (−Inf for δᵢ = 0), or is nil
	// for the low-rank kernel of Gartrell et al. (no diagonal).
	Theta []float64
}

// InitOptions sets the scale of the random initialisation.
type InitOptions struct {
	// Scale is the standard deviation of the entries of V and B (default
	// 0.25/√d for the low-rank kernel, so that ‖vᵢ‖² ≈ 1/16; 0.01/√d with a
	// diagonal, so that the kernel starts close to the diagonal, which
	// holds the items' rates, and the embeddings grow from there; see
	// RESULTS.md).
	Scale float64
	// CScale is the standard deviation of the entries of D
	// (default 0.1/√d).
	CScale float64
	// Share, with a diagonal, scales each item's rows after drawing so
	// that E‖ṽᵢ‖² = E‖b̃ᵢ‖² = Share·δᵢ for its initial δᵢ (default 0.5;
	// negative keeps the drawn scale): the embeddings start at a fixed
	// fraction of the item's rate, whatever the catalogue's size.
	Share float64
}

// withDefaultsFor fills in the defaults for a kernel with (diag) or without
// a diagonal.
func (o InitOptions) withDefaultsFor(d int, diag bool) InitOptions {
	if o.Scale == 0 {
		o.Scale = DefaultInitScaleLowRank / math.Sqrt(float64(d))
		if diag {
			o.Scale = DefaultInitScaleDiag / math.Sqrt(float64(d))
		}
	}
	if o.Share == 0 && diag {
		o.Share = DefaultOfflineInitShare
	}
	if o.CScale == 0 {
		o.CScale = 0.1 / math.Sqrt(float64(d))
	}
	return o
}

// NewParams returns Gaussian parameters for n items and rank d, without a
// diagonal (see WithDiag). Item i's vectors are drawn from a stream seeded
// by (seed, i), so an item's initial value does not depend on when it is
// first seen (learners that grow the catalogue stay reproducible). shared
// selects B = V.
func NewParams(n, d int, shared bool, seed uint64, opt InitOptions) (*Params, error) {
	return newParams(n, d, shared, false, seed, opt)
}

// newParams is NewParams with the defaults of a kernel with or without a
// diagonal; with one, θ starts at 0 (callers set it).
func newParams(n, d int, shared, diag bool, seed uint64, opt InitOptions) (*Params, error) {
	if n < 0 || d <= 0 {
		return nil, fmt.Errorf("learn: n = %d, d = %d; need n ≥ 0 and d ≥ 1", n, d)
	}
	opt = opt.withDefaultsFor(d, diag)
	if !(opt.Scale > 0) || !(opt.CScale >= 0) || math.IsInf(opt.Scale, 0) || math.IsInf(opt.CScale, 0) {
		return nil, fmt.Errorf("learn: initialisation scales %v, %v; want finite, Scale > 0, CScale ≥ 0", opt.Scale, opt.CScale)
	}
	p := &Params{Dim: d, D: make([]float64, d*d)}
	if !shared {
		p.B = []float64{}
	}
	if diag {
		p.Theta = []float64{}
	}
	rng := rand.New(rand.NewPCG(seed, 0x5bd1e995))
	for i := range p.D {
		p.D[i] = rng.NormFloat64() * opt.CScale
	}
	p.grow(n, seed, opt)
	return p, nil
}

// grow appends items until there are n, initialised as in NewParams (item
// i's vectors drawn for the id i).
func (p *Params) grow(n int, seed uint64, opt InitOptions) {
	ids := make([]int, 0, max(0, n-p.N))
	for i := p.N; i < n; i++ {
		ids = append(ids, i)
	}
	p.growIDs(p.N, ids, seed, opt)
}

// growIDs appends one item per id (p.N must be old), its vectors drawn
// from the seed and the id (drawRows); with a diagonal θ starts at 0.
func (p *Params) growIDs(old int, ids []int, seed uint64, opt InitOptions) {
	d := p.Dim
	for q, id := range ids {
		i := old + q
		p.V = extend(p.V, d)
		if p.B != nil {
			p.B = extend(p.B, d)
		}
		drawRows(p.V[i*d:(i+1)*d], p.B, i, id, seed, opt)
		if p.Theta != nil {
			p.Theta = extend(p.Theta, 1)
		}
	}
	p.N = old + len(ids)
}

// drawRows draws the initial vectors of the item with the given id into v
// and, when b is not nil, into row i of b: Gaussian entries of standard
// deviation opt.Scale from a stream seeded by (seed, id).
func drawRows(v, b []float64, i, id int, seed uint64, opt InitOptions) {
	d := len(v)
	rng := rand.New(rand.NewPCG(seed^0x9e3779b97f4a7c15, uint64(id)+1))
	for k := range v {
		v[k] = rng.NormFloat64() * opt.Scale
	}
	if b != nil {
		for k := 0; k < d; k++ {
			b[i*d+k] = rng.NormFloat64() * opt.Scale
		}
	}
}

// Shared reports whether B = V.
func (p *Params) Shared() bool { return p.B == nil }

// HasDiag reports whether the kernel has a diagonal.
func (p *Params) HasDiag() bool { return p.Theta != nil }

// diag returns δᵢ and sᵢ = √(1 + δᵢ) (0 and 1 without a diagonal).
func (p *Params) diag(i int) (delta, s float64) {
	if p.Theta == nil {
		return 0, 1
	}
	delta = math.Exp(p.Theta[i])
	return delta, math.Sqrt(1 + delta)
}

// brows returns the rows of B (V when shared).
func (p *Params) brows() []float64 {
	if p.B == nil {
		return p.V
	}
	return p.B
}

// CInto writes C = D − Dᵀ into c (d×d) and returns it (allocating when c is
// too short).
func (p *Params) CInto(c []float64) []float64 {
	d := p.Dim
	if cap(c) < d*d {
		c = make([]float64, d*d)
	}
	c = c[:d*d]
	for r := 0; r < d; r++ {
		for s := 0; s < d; s++ {
			c[r*d+s] = p.D[r*d+s] - p.D[s*d+r]
		}
	}
	return c
}

// Clone returns a deep copy.
func (p *Params) Clone() *Params {
	q := &Params{N: p.N, Dim: p.Dim, V: append([]float64(nil), p.V...), D: append([]float64(nil), p.D...)}
	if p.B != nil {
		q.B = append([]float64{}, p.B...)
	}
	if p.Theta != nil {
		q.Theta = append([]float64{}, p.Theta...)
	}
	return q
}

// moveToward moves p a share w of the way towards q (same shape): each
// parameter x becomes x + w(x_q − x); a θ that is infinite on either side
// takes q's value.
func (p *Params) moveToward(q *Params, w float64) {
	toward := func(x, y []float64) {
		for i, v := range y {
			x[i] += w * (v - x[i])
		}
	}
	toward(p.V, q.V)
	toward(p.B, q.B)
	toward(p.D, q.D)
	for i, x := range q.Theta {
		if math.IsInf(x, 0) || math.IsInf(p.Theta[i], 0) {
			p.Theta[i] = x
			continue
		}
		p.Theta[i] += w * (x - p.Theta[i])
	}
}

// Model builds the immutable ndpp.Model of the current parameters (with a
// diagonal: the rows scaled by sᵢ and δ = exp(θ)).
func (p *Params) Model(opts ...ndpp.Option) (*ndpp.Model, error) {
	if p.N == 0 {
		return nil, fmt.Errorf("learn: no items yet")
	}
	if p.Theta == nil {
		return ndpp.NewFromRows(p.N, p.Dim, p.V, p.B, p.CInto(nil), opts...)
	}
	d := p.Dim
	v := make([]float64, len(p.V))
	var b []float64
	if p.B != nil {
		b = make([]float64, len(p.B))
	}
	delta := make([]float64, p.N)
	for i := range delta {
		dl, s := p.diag(i)
		delta[i] = dl
		for k := i * d; k < (i+1)*d; k++ {
			v[k] = s * p.V[k]
			if b != nil {
				b[k] = s * p.B[k]
			}
		}
	}
	return ndpp.NewFromOwnedRows(p.N, d, v, b, p.CInto(nil), append(opts, ndpp.WithDiag(delta))...)
}

// ParamsFromModel returns learner parameters equal to a model's (D = C/2,
// so that D − Dᵀ = C; with a diagonal, θ = log δ and the rows divided by
// √(1 + δᵢ)).
func ParamsFromModel(m *ndpp.Model) *Params {
	v, b, _, c := m.Rows()
	p := &Params{N: m.N(), Dim: m.D(), V: append([]float64(nil), v...), D: make([]float64, len(c))}
	if !m.Shared() {
		p.B = append([]float64{}, b...)
	}
	for i, x := range c {
		p.D[i] = x / 2
	}
	if delta := m.Diag(); delta != nil {
		d := p.Dim
		p.Theta = make([]float64, p.N)
		for i, dl := range delta {
			p.Theta[i] = math.Log(dl)
			s := math.Sqrt(1 + dl)
			for k := i * d; k < (i+1)*d; k++ {
				p.V[k] /= s
				if p.B != nil {
					p.B[k] /= s
				}
			}
		}
	}
	return p
}

// finite reports whether every parameter is finite (θᵢ may be −Inf: δᵢ = 0;
// it may not exceed maxTheta, beyond which δᵢ overflows).
func (p *Params) finite() bool {
	for _, s := range [][]float64{p.V, p.B, p.D} {
		for _, x := range s {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return false
			}
		}
	}
	for _, x := range p.Theta {
		if math.IsNaN(x) || x > maxTheta {
			return false
		}
	}
	return true
}

// maxTheta bounds θᵢ = log δᵢ: an item with δᵢ > e³⁰⁰ is a divergence.
const maxTheta = 300
