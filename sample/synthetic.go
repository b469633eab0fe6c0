package sample

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/mat"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/internal/memlimit"
	"github.com/ndpp-go/ndpp/ndpp"
)

// DefaultSyntheticRejections is the expected number of rejections of the
// tree sampler on a Synthetic kernel when SyntheticOptions.Rejections is
// 0: enough that the tree sampler is measured on a kernel whose proposals
// it mostly rejects, not on one it samples directly.
const DefaultSyntheticRejections = 50

// SyntheticOptions configures Synthetic.
type SyntheticOptions struct {
	// Rejections is the expected number of rejections per sample of the
	// tree sampler, ExpectedTries − 1 = Πⱼ(1 + 2σⱼ/(1 + σⱼ²)) − 1 (0 =
	// DefaultSyntheticRejections). Each pair of the skew part contributes
	// a factor of at most 2 (at σⱼ = 1); when the target is out of reach
	// with the drawn uⱼ (c·max uⱼ = 1 leaves the product below it), every
	// σⱼ is 1 and the expected number of rejections is 2^⌊d/2⌋ − 1 (for the
	// default, at d ≤ 11 and some seeds at d = 12).
	Rejections float64
	// MaxMemory is the memory budget in bytes that SyntheticMemory is
	// checked against (0: 3/4 of the machine's or the process's memory
	// limit).
	MaxMemory int64
}

// SyntheticMemory returns the estimated bytes of a Synthetic model of n
// items and rank d: the model's V, B and BC rows (3·n·d float64s) and a
// chunk of the generator; −1 when it overflows.
func SyntheticMemory(n, d int) int64 {
	return memlimit.Sum(memlimit.Bytes(int64(n), int64(d), 3*8), memlimit.Bytes(gramChunk, 4*int64(d), 8))
}

// Synthetic returns a random model of the form the tree sampler is for,
// the orthogonal NDPP (ONDPP) of Han et al.: L = VᵀV + BᵀCB with
// Σᵢ vᵢbᵢᵀ = 0 (to rounding), no diagonal, drawn from PCG streams seeded
// with seed (the same arguments give the same model):
//
//   - the 2d columns of a Gaussian n×2d matrix, orthonormalised through
//     their Gram matrix's Cholesky factor, give V's and B's rows in two
//     orthogonal subspaces of the items;
//   - VᵀV has eigenvalues λⱼ log-uniform on [0.02, 2] (E|Y| from the
//     symmetric part Σⱼ λⱼ/(1 + λⱼ), about d/4), in a random basis;
//   - B's rows are orthonormal (Σᵢ bᵢbᵢᵀ = I) and C = P·blockdiag(σⱼ J)·Pᵀ
//     for a random rotation P and J = [[0, 1], [−1, 0]], so that the skew
//     part's Youla values are the σⱼ = c·uⱼ, uⱼ uniform on [½, 3/2], with c
//     set so that Πⱼ(1 + 2σⱼ/(1 + σⱼ²)) − 1 = opt.Rejections.
//
// It costs two passes of O(n·d²) and checks ctx between chunks of items;
// the budget (opt.MaxMemory) is checked before anything is allocated.
func Synthetic(ctx context.Context, n, d int, seed uint64, opt SyntheticOptions) (*ndpp.Model, error) {
	if n < 1 || d < 1 {
		return nil, fmt.Errorf("sample: synthetic model with n = %d, d = %d; both must be ≥ 1", n, d)
	}
	if 2*d > n {
		return nil, fmt.Errorf("sample: synthetic model with n = %d < 2d = %d: V and B need 2d orthogonal directions", n, 2*d)
	}
	rej := opt.Rejections
	if rej == 0 {
		rej = DefaultSyntheticRejections
	}
	if !(rej > 0) || math.IsInf(rej, 0) {
		return nil, fmt.Errorf("sample: synthetic rejections %v; want a finite number > 0", rej)
	}
	budget := memlimit.Given(opt.MaxMemory, "sample.SyntheticOptions.MaxMemory")
	if err := budget.Check(fmt.Sprintf("a synthetic model of n = %d items and d = %d", n, d), SyntheticMemory(n, d)); err != nil {
		return nil, err
	}
	r := 2 * d
	rng := rand.New(rand.NewPCG(seed, 0x5eed5a3b1e))
	// Pass 1: the Gram matrix of the Gaussian rows.
	g := make([]float64, r*r)
	z := make([]float64, min(gramChunk, n)*r)
	rows := func(lo, hi int) {
		cr := rand.New(rand.NewPCG(seed, uint64(lo)))
		for i := range z[:(hi-lo)*r] {
			z[i] = cr.NormFloat64()
		}
	}
	for lo := 0; lo < n; lo += gramChunk {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("sample: synthetic model: %w", err)
		}
		hi := min(lo+gramChunk, n)
		rows(lo, hi)
		blas.Syrk(gblas.Trans, r, hi-lo, 1, z, r, 1, g, r)
	}
	var ch mat.Cholesky
	if !ch.Factorize(mat.NewSymDense(r, g)) {
		return nil, errors.New("sample: synthetic model: the Gaussian rows' Gram matrix is not positive definite")
	}
	var rf mat.TriDense
	ch.UTo(&rf)
	var rinv mat.TriDense
	if err := rinv.InverseTri(&rf); err != nil {
		return nil, fmt.Errorf("sample: synthetic model: %w", err)
	}
	// λⱼ and the rotations.
	lam := make([]float64, d)
	for j := range lam {
		lam[j] = 0.02 * math.Pow(100, rng.Float64())
	}
	pv, pb := rotation(rng, d), rotation(rng, d)
	sig := make([]float64, d/2)
	for j := range sig {
		sig[j] = 0.5 + rng.Float64()
	}
	c, ok := youlaScale(sig, rej)
	for j := range sig {
		sig[j] *= c
		if !ok {
			sig[j] = 1 // each pair's largest factor, 2
		}
	}
	cm := mat.NewDense(d, d, nil)
	for j, s := range sig {
		cm.Set(2*j, 2*j+1, s)
		cm.Set(2*j+1, 2*j, -s)
	}
	var pc, cfull mat.Dense
	pc.Mul(pb, cm)
	cfull.Mul(&pc, pb.T())
	cs := make([]float64, d*d)
	for i := 0; i < d; i++ {
		for j := i + 1; j < d; j++ {
			x := (cfull.At(i, j) - cfull.At(j, i)) / 2
			cs[i*d+j], cs[j*d+i] = x, -x
		}
	}
	// M = R⁻¹·[diag(√λ)·P_Vᵀ  0; 0  I] (r×r): row i's [vᵢ bᵢ] = gᵢᵀ M.
	blk := mat.NewDense(r, r, nil)
	for a := 0; a < d; a++ {
		for b := 0; b < d; b++ {
			blk.Set(a, b, math.Sqrt(lam[a])*pv.At(b, a))
		}
		blk.Set(d+a, d+a, 1)
	}
	var mm mat.Dense
	mm.Mul(&rinv, blk)
	mraw := make([]float64, r*r)
	for i := 0; i < r; i++ {
		for j := 0; j < r; j++ {
			mraw[i*r+j] = mm.At(i, j)
		}
	}
	// Pass 2: the same rows, mapped.
	v, b := make([]float64, n*d), make([]float64, n*d)
	out := make([]float64, min(gramChunk, n)*r)
	for lo := 0; lo < n; lo += gramChunk {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("sample: synthetic model: %w", err)
		}
		hi := min(lo+gramChunk, n)
		rows(lo, hi)
		blas.Gemm(gblas.NoTrans, gblas.NoTrans, hi-lo, r, r, 1, z, r, mraw, r, 0, out, r)
		for i := lo; i < hi; i++ {
			copy(v[i*d:(i+1)*d], out[(i-lo)*r:(i-lo)*r+d])
			copy(b[i*d:(i+1)*d], out[(i-lo)*r+d:(i-lo+1)*r])
		}
	}
	return ndpp.NewFromOwnedRows(n, d, v, b, cs)
}

// rotation returns a random d×d orthogonal matrix (the Q of a Gaussian
// matrix's QR factorisation).
func rotation(rng *rand.Rand, d int) *mat.Dense {
	a := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			a.Set(i, j, rng.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(a)
	var q mat.Dense
	qr.QTo(&q)
	return &q
}

// youlaScale returns c such that Πⱼ(1 + 2cuⱼ/(1 + c²uⱼ²)) − 1 = rej, with
// c·max uⱼ ≤ 1 (each factor increases in σ on [0, 1] to 2), and false
// when the product stays below rej at that bound.
func youlaScale(u []float64, rej float64) (float64, bool) {
	umax := 0.0
	for _, x := range u {
		umax = math.Max(umax, x)
	}
	if umax == 0 {
		return 0, false
	}
	f := func(c float64) float64 {
		l := 0.0
		for _, x := range u {
			s := c * x
			l += math.Log1p(2 * s / (1 + s*s))
		}
		return math.Expm1(l)
	}
	lo, hi := 0.0, 1/umax
	if f(hi) <= rej {
		return hi, false
	}
	for it := 0; it < 200; it++ {
		mid := (lo + hi) / 2
		if f(mid) < rej {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2, true
}
