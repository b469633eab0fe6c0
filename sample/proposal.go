package sample

import (
	"context"
	"errors"
	"fmt"
	"math"

	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/ndpp"
)

// ErrDiagonal is returned for a model with a diagonal where the symmetric
// proposal needs a low-rank kernel (Proposal, TreeSampler): the DPP of
// D + L̂ is not a mixture of the r elementary DPPs the tree samples.
var ErrDiagonal = errors.New("sample: the tree sampler needs a kernel without a diagonal")

// Proposal is the symmetric kernel L̂ = S + |A| of a model without a
// diagonal, L = S + A with S = (L + Lᵀ)/2 (= VᵀV) and A its skew part
// (= BᵀCB; with B = V, VᵀCV): |A| = (AᵀA)^½, which replaces each pair
// σⱼ(xⱼyⱼᵀ − yⱼxⱼᵀ) of A's Youla decomposition by σⱼ(xⱼxⱼᵀ + yⱼyⱼᵀ). Every
// set has det L_Y ≤ det L̂_Y (docs/math.md, "The proposal"), so drawing Y
// from the DPP of L̂ and keeping it with probability det L_Y / det L̂_Y
// samples the NDPP of L; the mean number of proposals per sample is
// ExpectedTries = det(I + L̂)/det(I + L). L̂ has rank ρ ≤ r (r = 2d, or d
// when B = V); the proposal keeps its eigenvalues λⱼ and each item's
// coordinates φᵢ = T·zᵢ in its orthonormal eigenvectors (T is ρ×r).
// A Proposal is read-only once built.
type Proposal struct {
	m        *ndpp.Model
	r, rho   int
	t        []float64 // ρ×r
	lambda   []float64 // ρ
	sigma    []float64 // the singular values of A's ρ×ρ form M (each σⱼ twice), descending
	logTries float64
	orth     float64
	size     float64 // E|Y| under L
}

// gramTol is the relative size below which an eigenvalue of the Gram
// matrix G = Σᵢ zᵢzᵢᵀ is rounding noise: its direction holds no item's
// vector and is left out of L̂'s basis.
const gramTol = 1e-13

// NewProposal builds the proposal of m: the r×r Gram matrix of the item
// vectors, O(n·r²) (in chunks, checking ctx between them), and three r×r
// eigendecompositions, O(r³). It returns ErrDiagonal for a model with a
// diagonal.
func NewProposal(ctx context.Context, m *ndpp.Model) (*Proposal, error) {
	if m == nil {
		return nil, errors.New("sample: nil model")
	}
	if m.HasDiag() {
		return nil, ErrDiagonal
	}
	base := newBare(m, 1, DefaultBlock)
	r := base.r
	g, err := gram(ctx, m, r)
	if err != nil {
		return nil, err
	}
	p := &Proposal{m: m, r: r}
	if !m.Shared() {
		d := m.D()
		var vv, bb, vb float64
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				vv += g[i*r+j] * g[i*r+j]
				bb += g[(d+i)*r+d+j] * g[(d+i)*r+d+j]
				vb += g[i*r+d+j] * g[i*r+d+j]
			}
		}
		p.orth = math.Sqrt(vb) / math.Sqrt(math.Sqrt(vv)*math.Sqrt(bb))
		if vv == 0 || bb == 0 {
			p.orth = 0
		}
	} else {
		p.orth = 1
	}

	// G = E Γ Eᵀ; the basis yᵢ = Γ^−½ Eᵀ zᵢ of the directions kept is
	// orthonormal over the items (Σᵢ yᵢyᵢᵀ = I).
	var es mat.EigenSym
	if !es.Factorize(mat.NewSymDense(r, g), true) {
		return nil, errors.New("sample: proposal: the Gram matrix's eigendecomposition failed")
	}
	gam := es.Values(nil)
	var e mat.Dense
	es.VectorsTo(&e)
	gmax := 0.0
	for _, x := range gam {
		gmax = math.Max(gmax, x)
	}
	var keep []int
	for j, x := range gam {
		if x > gramTol*gmax {
			keep = append(keep, j)
		}
	}
	rho := len(keep)
	p.rho = rho
	if rho == 0 {
		return p, nil // L = 0: every sample is empty
	}
	// F = E_keep Γ^½ (r×ρ), P = Γ^−½ E_keepᵀ (ρ×r).
	f := make([]float64, r*rho)
	pm := make([]float64, rho*r)
	for c, j := range keep {
		s := math.Sqrt(gam[j])
		for i := 0; i < r; i++ {
			f[i*rho+c] = e.At(i, j) * s
			pm[c*r+i] = e.At(i, j) / s
		}
	}
	// W̃ = Fᵀ W F (ρ×ρ): L = U W̃ Uᵀ for the items' orthonormal
	// coordinates U (rows yᵢ).
	w := base.weight()
	impl := blas64.Implementation()
	wf := make([]float64, r*rho)
	impl.Dgemm(gblas.NoTrans, gblas.NoTrans, r, rho, r, 1, w, r, f, rho, 0, wf, rho)
	wt := make([]float64, rho*rho)
	impl.Dgemm(gblas.Trans, gblas.NoTrans, rho, rho, r, 1, f, rho, wf, rho, 0, wt, rho)
	// S′ and M, the symmetric and skew parts; |M| = (MᵀM)^½.
	sym := make([]float64, rho*rho)
	skew := make([]float64, rho*rho)
	for i := 0; i < rho; i++ {
		for j := 0; j < rho; j++ {
			sym[i*rho+j] = (wt[i*rho+j] + wt[j*rho+i]) / 2
			skew[i*rho+j] = (wt[i*rho+j] - wt[j*rho+i]) / 2
		}
	}
	// The SVD M = U diag(σ) Pᵀ gives |M| = P diag(σ) Pᵀ with σ to within
	// rounding of ‖M‖ (the square roots of MᵀM's eigenvalues would carry
	// errors of √ε·‖M‖).
	var svd mat.SVD
	if !svd.Factorize(mat.NewDense(rho, rho, skew), mat.SVDFull) {
		return nil, errors.New("sample: proposal: the skew part's SVD failed")
	}
	p.sigma = svd.Values(nil)
	var pv mat.Dense
	svd.VTo(&pv)
	hat := sym // P̂ = S′ + |M|
	for j, sg := range p.sigma {
		if sg == 0 {
			continue
		}
		for a := 0; a < rho; a++ {
			pa := pv.At(a, j) * sg
			for b := 0; b < rho; b++ {
				hat[a*rho+b] += pa * pv.At(b, j)
			}
		}
	}
	symmetrize(hat, rho)
	var eh mat.EigenSym
	if !eh.Factorize(mat.NewSymDense(rho, hat), true) {
		return nil, errors.New("sample: proposal: the proposal's eigendecomposition failed")
	}
	p.lambda = eh.Values(nil)
	var q mat.Dense
	eh.VectorsTo(&q)
	logHat := 0.0
	for j, x := range p.lambda {
		x = math.Max(x, 0)
		p.lambda[j] = x
		logHat += math.Log1p(x)
	}
	// T = Qᵀ P (ρ×r): φᵢ = T zᵢ = Qᵀ yᵢ.
	p.t = make([]float64, rho*r)
	qr := q.RawMatrix()
	impl.Dgemm(gblas.Trans, gblas.NoTrans, rho, r, rho, 1, qr.Data, qr.Stride, pm, r, 0, p.t, r)
	// log det(I + L) = log det(I + W̃).
	for i := 0; i < rho; i++ {
		wt[i*rho+i]++
	}
	var lu mat.LU
	lu.Factorize(mat.NewDense(rho, rho, wt))
	logL, sign := lu.LogDet()
	if !(sign > 0) {
		return nil, errors.New("sample: proposal: det(I + L) is not positive (the kernel's values overflow)")
	}
	p.logTries = logHat - logL
	// E|Y| = tr(L(I + L)⁻¹) = ρ − tr((I + W̃)⁻¹).
	var inv mat.Dense
	if err := lu.SolveTo(&inv, false, eye(rho)); err == nil {
		p.size = float64(rho) - mat.Trace(&inv)
	}
	return p, nil
}

// gram returns G = Σᵢ zᵢzᵢᵀ (r×r, both triangles) in chunks of gramChunk
// items through blas.Syrk, checking ctx before each chunk.
func gram(ctx context.Context, m *ndpp.Model, r int) ([]float64, error) {
	g := make([]float64, r*r)
	z := make([]float64, min(gramChunk, m.N())*r)
	n := m.N()
	for lo := 0; lo < n; lo += gramChunk {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("sample: proposal: %w", err)
		}
		hi := min(lo+gramChunk, n)
		for i := lo; i < hi; i++ {
			rawZ(m, i, z[(i-lo)*r:(i-lo+1)*r])
		}
		blas.Syrk(gblas.Trans, r, hi-lo, 1, z, r, 1, g, r)
	}
	fillLower(g, r)
	return g, nil
}

// eye returns the n×n identity.
func eye(n int) *mat.Dense {
	a := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		a.Set(i, i, 1)
	}
	return a
}

// symmetrize replaces a (n×n) by (a + aᵀ)/2.
func symmetrize(a []float64, n int) {
	for i := 0; i < n; i++ {
		for j := 0; j < i; j++ {
			x := (a[i*n+j] + a[j*n+i]) / 2
			a[i*n+j], a[j*n+i] = x, x
		}
	}
}

// Model returns the proposal's model.
func (p *Proposal) Model() *ndpp.Model { return p.m }

// Rank returns ρ, the rank of L̂ (at most r: 2d, or d when B = V).
func (p *Proposal) Rank() int { return p.rho }

// Eigenvalues returns a copy of L̂'s nonzero eigenvalues λⱼ (ascending).
func (p *Proposal) Eigenvalues() []float64 { return append([]float64(nil), p.lambda...) }

// ExpectedTries returns det(I + L̂)/det(I + L), the mean number of
// proposals per sample (the acceptance probability is its inverse).
func (p *Proposal) ExpectedTries() float64 { return math.Exp(p.logTries) }

// ExpectedRejections returns ExpectedTries − 1, the mean number of
// proposals rejected before one is kept.
func (p *Proposal) ExpectedRejections() float64 { return math.Expm1(p.logTries) }

// ExpectedSize returns E|Y| of the NDPP sampled, tr(L(I + L)⁻¹).
func (p *Proposal) ExpectedSize() float64 { return p.size }

// ProposalSize returns E|Y| under L̂, Σⱼ λⱼ/(1 + λⱼ): the mean size of a
// proposal, which sets the cost of one.
func (p *Proposal) ProposalSize() float64 {
	s := 0.0
	for _, x := range p.lambda {
		s += x / (1 + x)
	}
	return s
}

// Theorem2 returns Han et al.'s closed form Πⱼ (1 + 2σⱼ/(1 + σⱼ²)) over
// the Youla values σⱼ of the skew part (one per pair). It equals
// ExpectedTries when V ⊥ B (Σᵢ vᵢbᵢᵀ = 0; see Orthogonality), where L's
// symmetric and skew parts act on orthogonal subspaces of the items; in
// general it is not a bound.
func (p *Proposal) Theorem2() float64 {
	l := 0.0
	for _, s := range p.sigma { // each σⱼ twice: half of log((1+σ)²/(1+σ²)) each
		l += math.Log1p(s) - math.Log1p(s*s)/2
	}
	return math.Exp(l)
}

// Youla returns a copy of the skew part's Youla values σⱼ, one per pair,
// descending.
func (p *Proposal) Youla() []float64 {
	var out []float64
	for j := 0; j+1 < len(p.sigma); j += 2 {
		if p.sigma[j] > 0 {
			out = append(out, p.sigma[j])
		}
	}
	return out
}

// Orthogonality returns ‖Σᵢ vᵢbᵢᵀ‖_F / (‖Σᵢ vᵢvᵢᵀ‖_F·‖Σᵢ bᵢbᵢᵀ‖_F)^½: 0 when
// V ⊥ B (Han et al.'s ONDPP), where Theorem2 is exact; 1 for a model with
// B = V.
func (p *Proposal) Orthogonality() float64 { return p.orth }

// phi writes φᵢ = T zᵢ (ρ) for the row z (r) into dst.
func (p *Proposal) phi(z, dst []float64) {
	for a := 0; a < p.rho; a++ {
		dst[a] = blas.Dot(p.t[a*p.r:(a+1)*p.r], z)
	}
}

// logDetHat returns log det L̂_Y = log det(Φ_Y Λ Φ_Yᵀ) for the coordinates
// of Y's items (rows of ρ in phis), using buf (k²), and false when it is
// not positive.
func (p *Proposal) logDetHat(phis []float64, k int, buf []float64) (float64, bool) {
	rho := p.rho
	a := buf[:k*k]
	for i := 0; i < k; i++ {
		pi := phis[i*rho : (i+1)*rho]
		for j := i; j < k; j++ {
			pj := phis[j*rho : (j+1)*rho]
			s := 0.0
			for c, x := range pi {
				s += x * p.lambda[c] * pj[c]
			}
			a[i*k+j], a[j*k+i] = s, s
		}
	}
	var lu mat.LU
	lu.Factorize(mat.NewDense(k, k, a))
	ld, sign := lu.LogDet()
	if !(sign > 0) || math.IsInf(ld, 0) || math.IsNaN(ld) {
		return math.Inf(-1), false
	}
	return ld, true
}
