package sample

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"math/cmplx"

	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/ndpp-go/ndpp/blas"
)

// sizeAliasLog2 bounds, in bits, the aliasing of the size distribution's
// discrete Fourier transform: with a diagonal the number of points is
// chosen so that the Chernoff bound on the aliased mass is below 2⁻⁵⁰,
// ≤ 1e-6·MinSizeProb (docs/math.md, "Fixed-size samples").
const sizeAliasLog2 = 50

// maxSizePoints caps the points of the transform (a diagonal kernel whose
// size distribution is that wide is refused).
const maxSizePoints = 1 << 14

// sizeProb returns P(|Y \ A| = kk) for the process s samples, by the
// discrete Fourier transform of its generating function
// φ(s) = E[s^|Y\A|] = det(I − (1 − s)K) at M points of the unit circle,
// shifted by half a step: the transform gives Σ_l (−1)^l P(kk + lM), exact
// when M exceeds the largest size (r without a diagonal, else the number
// of items), and otherwise within the Chernoff bound φ(2)·2^−(kk+M) on
// P(|Y \ A| ≥ kk + M).
func (s *Sampler) sizeProb(ctx context.Context, kk int) (float64, error) {
	nR := s.n - len(s.given)
	maxSize := nR
	if !s.m.HasDiag() {
		maxSize = min(nR, s.r)
	}
	if kk > maxSize {
		return 0, nil
	}
	m := nextPow2(maxSize + 1) // exact
	if s.m.HasDiag() {
		l2, err := s.logPGF(ctx, 2)
		if err != nil {
			return 0, err
		}
		need := int(math.Ceil(real(l2)/math.Ln2)) - kk + sizeAliasLog2
		m = min(m, max(nextPow2(kk+1), nextPow2(need)))
	}
	if m > maxSizePoints {
		return 0, fmt.Errorf("%w: the size distribution is too wide to resolve (%d points)", ErrSizeZeroProb, m)
	}
	sum := 0.0
	for j := 0; j < m/2; j++ {
		th := 2 * math.Pi * (float64(j) + 0.5) / float64(m)
		l, err := s.logPGF(ctx, cmplx.Rect(1, th))
		if err != nil {
			return 0, err
		}
		sum += real(cmplx.Exp(l - complex(0, float64(kk)*th)))
	}
	return 2 * sum / float64(m), nil
}

// nextPow2 returns the smallest power of two ≥ x (x ≥ 1).
func nextPow2(x int) int {
	if x <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(x-1))
}

// logPGF returns log φ(z) = log det(I − cK), c = 1 − z, for the process s
// samples (the items not given), by Sylvester's identity on
// K = diag(κ) + ẐXẐᵀ:
//
//	det(I − cK) = Πᵢ(1 − cκᵢ) · det(I_r − c·X·Σᵢ ẑᵢẑᵢᵀ/(1 − cκᵢ)).
//
// Without a diagonal κ = 0 and the sum is the sampler's G₂, O(r³); with
// one the sum is two weighted Gram products (its real and imaginary
// parts), O(n·r²), checking ctx between chunks.
func (s *Sampler) logPGF(ctx context.Context, z complex128) (complex128, error) {
	r := s.r
	c := 1 - z
	hre, him := s.g2, []float64(nil)
	var logProd complex128
	if s.m.HasDiag() {
		hre, him = make([]float64, r*r), make([]float64, r*r)
		zc := make([]float64, min(gramChunk, s.n)*r)
		za := make([]float64, min(gramChunk, s.n)*r)
		zb := make([]float64, min(gramChunk, s.n)*r)
		given := s.given
		for lo := 0; lo < s.n; lo += gramChunk {
			if err := ctx.Err(); err != nil {
				return 0, fmt.Errorf("sample: size distribution: %w", err)
			}
			hi := min(lo+gramChunk, s.n)
			nb := 0
			for i := lo; i < hi; i++ {
				if len(given) > 0 && given[0] == i {
					given = given[1:]
					continue
				}
				den := 1 - c*complex(s.kappaOf(i), 0)
				logProd += cmplx.Log(den)
				w := 1 / den
				row := zc[nb*r : (nb+1)*r]
				s.zhat(i, row)
				ra, rb := za[nb*r:(nb+1)*r], zb[nb*r:(nb+1)*r]
				for j, x := range row {
					ra[j], rb[j] = real(w)*x, imag(w)*x
				}
				nb++
			}
			if nb == 0 {
				continue
			}
			blas.Gemm(gblas.Trans, gblas.NoTrans, r, r, nb, 1, za, r, zc, r, 1, hre, r)
			blas.Gemm(gblas.Trans, gblas.NoTrans, r, r, nb, 1, zb, r, zc, r, 1, him, r)
		}
	}
	// A = I − c·X·H.
	impl := blas64.Implementation()
	xre := make([]float64, r*r)
	impl.Dgemm(gblas.NoTrans, gblas.NoTrans, r, r, r, 1, s.x0, r, hre, r, 0, xre, r)
	var xim []float64
	if him != nil {
		xim = make([]float64, r*r)
		impl.Dgemm(gblas.NoTrans, gblas.NoTrans, r, r, r, 1, s.x0, r, him, r, 0, xim, r)
	}
	a := make([]complex128, r*r)
	for i := range a {
		xh := complex(xre[i], 0)
		if xim != nil {
			xh = complex(xre[i], xim[i])
		}
		a[i] = -c * xh
	}
	for i := 0; i < r; i++ {
		a[i*r+i]++
	}
	return logProd + cLogDet(a, r), nil
}

// cLogDet returns log det A for a complex n×n row-major A (overwritten),
// by LU with partial pivoting; −Inf for a singular A.
func cLogDet(a []complex128, n int) complex128 {
	var l complex128
	for k := 0; k < n; k++ {
		p, best := k, cmplx.Abs(a[k*n+k])
		for i := k + 1; i < n; i++ {
			if v := cmplx.Abs(a[i*n+k]); v > best {
				p, best = i, v
			}
		}
		if best == 0 {
			return complex(math.Inf(-1), 0)
		}
		if p != k {
			for j := 0; j < n; j++ {
				a[k*n+j], a[p*n+j] = a[p*n+j], a[k*n+j]
			}
			l += complex(0, math.Pi)
		}
		piv := a[k*n+k]
		l += cmplx.Log(piv)
		for i := k + 1; i < n; i++ {
			f := a[i*n+k] / piv
			if f == 0 {
				continue
			}
			row, prow := a[i*n+k+1:(i+1)*n], a[k*n+k+1:(k+1)*n]
			for j := range row {
				row[j] -= f * prow[j]
			}
		}
	}
	return l
}
