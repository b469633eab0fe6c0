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

	"github.com/ndpp-go/ndpp/ndpp"
)

// ErrSizeZeroProb is wrapped by the refusals of a k-NDPP whose sets of the
// requested size have (numerically) probability zero: k above the kernel's
// rank, its numerical rank, or the number of items.
var ErrSizeZeroProb = errors.New("sample: sets of the requested size have probability zero")

// MinSizeProb is the smallest probability P_t(|Y| = k | A ⊆ Y) that
// KSampler.ExpectedTries resolves (the size distribution is computed to
// about 1e-13 in absolute terms); below it the size is treated as having
// probability zero (at least 10⁹ expected tries).
const MinSizeProb = 1e-9

// KOptions configures a KSampler.
type KOptions struct {
	// Given are items every sample contains (they count toward k).
	Given []int
	// Block is Options.Block of the sampler each try runs.
	Block int
}

// KSampler draws exact samples of the k-NDPP of a model: Y with |Y| = k
// and P(Y) ∝ det L_Y, given that the items of KOptions.Given are in Y
// (docs/math.md, "Fixed-size samples"). Each try draws a sample of the
// NDPP of t·L given the items, whose law conditioned on |Y| = k is the
// k-NDPP for every t > 0, and returns it when it holds k items; t is
// chosen so that E|Y| = k, which maximises P_t(|Y| = k). The number of
// tries is geometric with mean ExpectedTries. A KSampler is not safe for
// concurrent use; Clone returns one for another goroutine.
type KSampler struct {
	s     *Sampler // the NDPP of t·L given the items; nil when k = |given|
	ck    *condKernel
	k, kk int // the size, and the size beyond the given items
	given []int
	pk    float64 // P_t(|Y| = k | given), 0 until computed
	stats Stats
}

// Stats counts a sampler's work: samples returned and tries (proposals)
// drawn for them; Tries − Samples are the rejected ones.
type Stats struct {
	Samples, Tries int64
}

// NewK returns a sampler of the k-NDPP of m given opt.Given. It returns an
// error for a nil model, k < |Given|, invalid given items, and ErrZeroProb
// when they cannot all be in Y; an error wrapping ErrSizeZeroProb when
// sets of k items have probability zero: k above n, above the rank bound
// m.MaxRank() (2d, or d when B = V, without a diagonal), or above the
// numerical rank of the kernel given the items (no scale t brings E|Y|
// within ½ of k). Choosing t costs O(r³) per trial scale
// without a diagonal and O(n·r²) with one (a few trials from the
// independent-items guess); it checks ctx in the Gram products.
func NewK(ctx context.Context, m *ndpp.Model, k int, opt KOptions) (*KSampler, error) {
	if m == nil {
		return nil, errors.New("sample: nil model")
	}
	if opt.Block < 0 {
		return nil, fmt.Errorf("sample: block size %d; need ≥ 0 (0 = default)", opt.Block)
	}
	given := slices.Sorted(slices.Values(opt.Given))
	if len(given) > 0 {
		if err := m.CheckItems(given); err != nil {
			return nil, fmt.Errorf("sample: given items: %w", err)
		}
	}
	switch {
	case k < len(given):
		return nil, fmt.Errorf("sample: size k = %d is below the %d given items", k, len(given))
	case k > m.N():
		return nil, fmt.Errorf("%w: k = %d exceeds the n = %d items", ErrSizeZeroProb, k, m.N())
	case k > m.MaxRank():
		return nil, fmt.Errorf("%w: k = %d exceeds the kernel's rank bound %d (%s)", ErrSizeZeroProb, k, m.MaxRank(), rankWhy(m))
	}
	block := opt.Block
	if block == 0 {
		block = DefaultBlock
	}
	ck, err := newCondKernel(m, given, block)
	if err != nil {
		return nil, err
	}
	ks := &KSampler{ck: ck, k: k, kk: k - len(given), given: given}
	if ks.kk == 0 {
		ks.pk = 1
		return ks, nil
	}
	s, err := ck.chooseScale(ctx, ks.kk)
	if err != nil {
		return nil, err
	}
	ks.s = s
	return ks, nil
}

// rankWhy says where a model's rank bound comes from.
func rankWhy(m *ndpp.Model) string {
	switch {
	case m.HasDiag():
		return "n, with a diagonal"
	case m.Shared():
		return "d, without a diagonal and with B = V"
	}
	return "2d, without a diagonal"
}

// Clone returns a sampler of the same distribution with its own scratch
// buffers and zero Stats.
func (ks *KSampler) Clone() *KSampler {
	c := *ks
	if ks.s != nil {
		c.s = ks.s.Clone()
	}
	c.stats = Stats{}
	return &c
}

// K returns the size of the samples.
func (ks *KSampler) K() int { return ks.k }

// Scale returns t: each try samples the NDPP of t·L (1 when k equals the
// number of given items, which needs no try).
func (ks *KSampler) Scale() float64 {
	if ks.s == nil {
		return 1
	}
	return ks.s.t
}

// ExpectedSize returns E|Y| of one try, given the items (within about
// 0.05 of k unless k is near the kernel's numerical rank).
func (ks *KSampler) ExpectedSize() float64 {
	if ks.s == nil {
		return float64(ks.k)
	}
	return ks.s.ExpectedSize()
}

// Stats returns the samples and tries of this sampler (not of its clones).
func (ks *KSampler) Stats() Stats { return ks.stats }

// Sample draws one sample (sorted, k items, the given ones among them).
// Each try uses one rng.Float64() per item not given, in item order, up to
// the item at which it is rejected (it holds more than k items, or too few
// items are left to reach k); the same generator state gives the same
// sample. Once ctx is done it stops (ctx is checked between tries and
// within them as Sampler.Sample checks it) with no items and an error
// wrapping ctx.Err().
func (ks *KSampler) Sample(ctx context.Context, rng *rand.Rand) ([]int, error) {
	return ks.SampleInto(ctx, rng, nil)
}

// SampleInto is Sample appending to dst[:0].
func (ks *KSampler) SampleInto(ctx context.Context, rng *rand.Rand, dst []int) ([]int, error) {
	if ks.s == nil {
		ks.stats.Samples++
		return append(dst[:0], ks.given...), nil
	}
	for {
		out, ok, err := ks.s.sampleInto(ctx, rng, dst, ks.kk)
		if err != nil {
			return out, err
		}
		ks.stats.Tries++
		if ok {
			ks.stats.Samples++
			return out, nil
		}
		dst = out
	}
}

// ExpectedTries returns 1/P_t(|Y| = k | A ⊆ Y), the mean number of tries
// per sample (docs/math.md: the size distribution is the discrete Fourier
// transform of the generating function det(I − (1 − s)K) on a circle,
// exact without a diagonal and with a diagonal to a relative 1e-6 bounded
// by a Chernoff tail). It costs O(M·r³) without a diagonal and O(M·n·r²)
// with one, for M of some 16 to 256 points; it is computed once and kept.
// It returns an error wrapping ErrSizeZeroProb when the probability is
// below MinSizeProb, and one wrapping ctx.Err() once ctx is done.
func (ks *KSampler) ExpectedTries(ctx context.Context) (float64, error) {
	if ks.pk == 0 {
		p, err := ks.s.sizeProb(ctx, ks.kk)
		if err != nil {
			return 0, err
		}
		if !(p >= MinSizeProb) {
			return 0, fmt.Errorf("%w: P(|Y| = %d) = %.3g at the best scale t = %.4g (below %g)", ErrSizeZeroProb, ks.k, p, ks.Scale(), MinSizeProb)
		}
		ks.pk = min(p, 1)
	}
	return 1 / ks.pk, nil
}

// condKernel is the kernel of the process over the items R not given
// (docs/math.md, "Conditioning on given items"): L^A = D_R + Z_Rᵀ W^A Z_R with
// W^A = W − W Z_A L_A⁻¹ Z_Aᵀ W.
type condKernel struct {
	m     *ndpp.Model
	given []int     // sorted
	w     []float64 // W^A, r×r
	r     int
	block int
	g     []float64 // without a diagonal: Σ_{i∈R} zᵢzᵢᵀ (scale-free), once computed
	scale float64   // a size of t·L's entries at t = 1, for the range of scales
}

func newCondKernel(m *ndpp.Model, given []int, block int) (*condKernel, error) {
	base := newBare(m, 1, block)
	r := base.r
	w := base.weight()
	if len(given) > 0 {
		_, sign, err := m.LogDet(given)
		if err != nil {
			return nil, fmt.Errorf("sample: given items: %w", err)
		}
		if sign == 0 {
			return nil, fmt.Errorf("%w (det L_A = 0 for the %d given items)", ErrZeroProb, len(given))
		}
		na := len(given)
		la := make([]float64, na*na)
		m.KernelInto(la, given)
		za := make([]float64, na*r) // rows zₐ
		for p, a := range given {
			rawZ(m, a, za[p*r:(p+1)*r])
		}
		impl := blas64.Implementation()
		wz := make([]float64, r*na) // W Z_A
		impl.Dgemm(gblas.NoTrans, gblas.Trans, r, na, r, 1, w, r, za, r, 0, wz, na)
		zw := make([]float64, na*r) // Z_Aᵀ W
		impl.Dgemm(gblas.NoTrans, gblas.NoTrans, na, r, r, 1, za, r, w, r, 0, zw, r)
		var lu mat.LU
		lu.Factorize(mat.NewDense(na, na, la))
		var sol mat.Dense
		if err := lu.SolveTo(&sol, false, mat.NewDense(na, r, zw)); err != nil {
			return nil, fmt.Errorf("%w (L_A is singular: %v)", ErrZeroProb, err)
		}
		raw := sol.RawMatrix()
		impl.Dgemm(gblas.NoTrans, gblas.NoTrans, r, r, na, -1, wz, na, raw.Data, raw.Stride, 1, w, r)
	}
	ck := &condKernel{m: m, given: given, w: w, r: r, block: block}
	// The scale of L: ‖W^A‖·Σᵢ‖zᵢ‖² and max δᵢ bound its entries.
	var zz, wmax, dmax float64
	v, b, _, _ := m.Rows()
	for _, x := range v {
		zz += x * x
	}
	if !m.Shared() {
		for _, x := range b {
			zz += x * x
		}
	}
	for _, x := range w {
		wmax = math.Max(wmax, math.Abs(x))
	}
	for _, x := range m.Diag() {
		dmax = math.Max(dmax, x)
	}
	ck.scale = math.Max(zz*wmax*float64(r), dmax)
	if !(ck.scale > 0) || math.IsInf(ck.scale, 0) {
		ck.scale = 1
	}
	return ck, nil
}

// rawZ writes zᵢ = [vᵢ; bᵢ] (or vᵢ when B = V) into dst.
func rawZ(m *ndpp.Model, i int, dst []float64) {
	d := m.D()
	copy(dst[:d], m.ItemV(i))
	if !m.Shared() {
		copy(dst[d:2*d], m.ItemB(i))
	}
}

// sampler returns a sampler of the NDPP of t·L given the items.
func (c *condKernel) sampler(ctx context.Context, t float64) (*Sampler, error) {
	s := newBare(c.m, t, c.block)
	s.given = c.given
	var g1, g2 []float64
	if !c.m.HasDiag() {
		if c.g == nil {
			g, _, err := s.grams(ctx, c.given)
			if err != nil {
				return nil, err
			}
			c.g = g
		}
		g1, g2 = c.g, c.g
	} else {
		var err error
		if g1, g2, err = s.grams(ctx, c.given); err != nil {
			return nil, err
		}
		gi := 0
		for i := 0; i < s.n; i++ {
			if gi < len(c.given) && c.given[gi] == i {
				gi++
				continue
			}
			s.kappa += s.kappaOf(i)
		}
	}
	x0, err := s.initialX(g1, c.w)
	if err != nil {
		return nil, err
	}
	s.x0, s.g2 = x0, g2
	s.alloc()
	return s, nil
}

// guess returns a first log t for E|Y \ A| = kk: the scale at which
// items drawn independently, each with probability t·L_ii/(1 + t·L_ii),
// would number kk on average (bisection in log t within [lo, hi]).
func (c *condKernel) guess(kk int, lo, hi float64) float64 {
	var diag []float64
	gi := 0
	for i := 0; i < c.m.N(); i++ {
		if gi < len(c.given) && c.given[gi] == i {
			gi++
			continue
		}
		if l := c.m.Entry(i, i); l > 0 {
			diag = append(diag, l)
		}
	}
	if len(diag) <= kk {
		return hi
	}
	for it := 0; it < 60; it++ {
		u := (lo + hi) / 2
		t, e := math.Exp(u), 0.0
		for _, l := range diag {
			e += t * l / (1 + t*l)
		}
		if e < float64(kk) {
			lo = u
		} else {
			hi = u
		}
	}
	return (lo + hi) / 2
}

// Range of the scales tried: t·scale within [scaleLo, scaleHi], beyond
// which the marginal kernel's computation loses its accuracy (t·L's
// entries then span more than about eight orders of magnitude against 1).
const (
	scaleLo = 1e-8
	scaleHi = 1e8
)

// chooseScale returns the sampler of the NDPP of t·L given the items with
// E|Y \ A| = kk (to within 0.05, or the best t at the end of the range).
// E_t is increasing in t (the mean of the size distribution, an
// exponential family in log t); the root is bracketed in log t and found
// by regula falsi (Illinois).
func (c *condKernel) chooseScale(ctx context.Context, kk int) (*Sampler, error) {
	na := float64(len(c.given))
	eval := func(u float64) (*Sampler, float64, error) {
		s, err := c.sampler(ctx, math.Exp(u))
		if err != nil {
			return nil, 0, err
		}
		return s, s.ExpectedSize() - na - float64(kk), nil
	}
	lo, hi := math.Log(scaleLo/c.scale), math.Log(scaleHi/c.scale)
	u := math.Max(lo, math.Min(hi, c.guess(kk, lo, hi)))
	s, f, err := eval(u)
	if err != nil {
		return nil, err
	}
	const tol = 0.05
	if math.Abs(f) <= tol {
		return s, nil
	}
	// Bracket [ua, ub] with f(ua) < 0 < f(ub), by steps of 1, 2, 4, … in
	// log t from the guess.
	ua, fa, ub, fb := u, f, u, f
	var sa, sb *Sampler = s, s
	step := 1.0
	for fa > 0 {
		if ua <= lo {
			return sa, nil // E|Y| above k even at the smallest scale: take it
		}
		ub, fb, sb = ua, fa, sa
		ua = math.Max(lo, ua-step)
		step *= 2
		if sa, fa, err = eval(ua); err != nil {
			return nil, err
		}
	}
	for fb < 0 {
		if ub >= hi {
			if fb < -0.5 {
				return nil, fmt.Errorf("%w: k = %d, but E|Y| ≤ %.3g at every scale t ≤ %.3g: the kernel's numerical rank given the items is about %d",
					ErrSizeZeroProb, kk+len(c.given), fb+float64(kk)+na, math.Exp(hi), int(math.Floor(fb+float64(kk)+na+0.5)))
			}
			return sb, nil
		}
		ua, fa, sa = ub, fb, sb
		ub = math.Min(hi, ub+step)
		step *= 2
		if sb, fb, err = eval(ub); err != nil {
			return nil, err
		}
	}
	if math.Abs(fa) <= tol {
		return sa, nil
	}
	if math.Abs(fb) <= tol {
		return sb, nil
	}
	// Illinois: fa, fb are the interpolation's values (halved on a
	// repeated side), ta, tb the true ones.
	ta, tb, side := fa, fb, 0
	for it := 0; it < 60 && ub-ua > 1e-9; it++ {
		u := (ua*fb - ub*fa) / (fb - fa)
		if !(u > ua && u < ub) {
			u = (ua + ub) / 2
		}
		s, f, err := eval(u)
		if err != nil {
			return nil, err
		}
		if math.Abs(f) <= tol {
			return s, nil
		}
		if f < 0 {
			ua, fa, ta, sa = u, f, f, s
			if side == -1 {
				fb /= 2
			}
			side = -1
		} else {
			ub, fb, tb, sb = u, f, f, s
			if side == 1 {
				fa /= 2
			}
			side = 1
		}
	}
	if -ta < tb {
		return sa, nil
	}
	return sb, nil
}
