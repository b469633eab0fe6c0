package exactnorm

import (
	"sync"

	gblas "gonum.org/v1/gonum/blas"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/internal/f64"
	"github.com/ndpp-go/ndpp/learn/internal/vecmat"
)

// Work holds a Gram matrix G = Σᵢ zᵢzᵢᵀ (2d×2d) and evaluates the
// normaliser from it: Factor forms A = I + WG, W = blockdiag(I, C), and
// gives
//
//	log det(I + L) = log det A,
//	∂/∂zᵢ = K zᵢ,  K = A⁻¹W + WᵀA⁻ᵀ,
//	∂/∂C  = (G[d:, :] A⁻¹[:, d:])ᵀ.
//
// A Work is used by one goroutine at a time.
type Work struct {
	d int
	// G is the Gram matrix (row-major, symmetric).
	G []float64
	// K, GC and LogDet are the results of the last successful Factor.
	K, GC  []float64
	LogDet float64

	a    []float64 // A, then A⁻¹
	y    []float64 // Factor's scratch (Y = G[d:, :] A⁻¹[:, d:])
	piv  []int
	work []float64 // the inverse's scratch (f64.InverseWork)
	// z and kz are the n×2d item matrix of the last Z and its image under K
	// (ApplyAll).
	z, kz []float64
}

// NewWork returns a Work for rank d with G = 0.
func NewWork(d int) *Work {
	m := 2 * d
	return &Work{d: d, G: make([]float64, m*m), K: make([]float64, m*m), GC: make([]float64, d*d),
		a: make([]float64, m*m), y: make([]float64, d*d), piv: make([]int, m), work: make([]float64, f64.InverseWork(m))}
}

// Dim returns d.
func (w *Work) Dim() int { return w.d }

// Z returns an n×2d buffer for the rows zᵢ of n items, to be filled by the
// caller and passed to Gram; ApplyAll reads it.
func (w *Work) Z(n int) []float64 {
	m := 2 * w.d
	w.z, w.kz = resize(w.z, n*m), resize(w.kz, n*m)
	return w.z
}

// Gram recomputes G = ZᵀZ from the n×2d row-major Z: the backend's
// symmetric rank-n product on the upper triangle (blas.Syrk), mirrored.
func (w *Work) Gram(z []float64, n int) {
	m := 2 * w.d
	if n == 0 {
		clear(w.G)
		return
	}
	blas.Syrk(gblas.Trans, m, n, 1, z, m, 0, w.G, m)
	w.symmetrize()
}

// update adds Z₁ᵀZ₁ − ZₛᵀZₛ to G (k rows each): two symmetric rank-k
// products on the upper triangle, then mirrored.
func (w *Work) update(zold, z1 []float64, k int) {
	m := 2 * w.d
	blas.Syrk(gblas.Trans, m, k, -1, zold, m, 1, w.G, m)
	blas.Syrk(gblas.Trans, m, k, 1, z1, m, 1, w.G, m)
	w.symmetrize()
}

// symmetrize copies the upper triangle of G to the lower.
func (w *Work) symmetrize() {
	m := 2 * w.d
	for r := 0; r < m; r++ {
		for s := r + 1; s < m; s++ {
			w.G[s*m+r] = w.G[r*m+s]
		}
	}
}

// Factor computes A = I + WG for the d×d skew C, A⁻¹, log det A, K and
// ∂/∂C into K, GC and LogDet. It reports false, leaving them unspecified,
// when det A is not positive (not possible in exact arithmetic: the
// eigenvalues of WG are those of L plus zeros, with non-negative real
// part). The O(d³) products are row-times-matrix products (vecmat.N):
//
//	A[d+r, :]  = G[d:, :]ᵀ C[r, :]ᵀ       (A[d:, :] = C G[d:, :], G symmetric)
//	X[r, d:]   = Cᵀ A⁻¹[r, d:]ᵀ           (X = A⁻¹W, X[:, :d] = A⁻¹[:, :d])
//	Y[r, :]    = A⁻¹[:, d:]ᵀ G[d+r, :]ᵀ   (∂/∂C = Yᵀ)
func (w *Work) Factor(c []float64) bool {
	d, m := w.d, 2*w.d
	a, g, k := w.a, w.G, w.K
	copy(a[:d*m], g[:d*m])
	vecmat.N(a[d*m:], m, c, d, d, g[d*m:], d, m, m, 1)
	for r := 0; r < m; r++ {
		a[r*m+r]++
	}
	ld, sg := f64.Inverse(a, m, m, w.piv, w.work)
	if sg <= 0 {
		return false
	}
	w.LogDet = ld
	for r := 0; r < m; r++ {
		copy(k[r*m:r*m+d], a[r*m:r*m+d])
	}
	vecmat.N(k[d:], m, a[d:], m, m, c, d, d, d, 1)
	for r := 0; r < m; r++ {
		for s := r; s < m; s++ {
			x := k[r*m+s] + k[s*m+r]
			k[r*m+s], k[s*m+r] = x, x
		}
	}
	y := w.y
	vecmat.N(y, d, g[d*m:], m, d, a[d:], m, d, m, 1)
	for r := 0; r < d; r++ {
		for s := 0; s < d; s++ {
			w.GC[s*d+r] = y[r*d+s]
		}
	}
	return true
}

// ApplyAll adds scale·K zᵢ for each of the n items of the last Z to the
// gradient rows (n×d each): (K zᵢ)[:d] to gv's row i and (K zᵢ)[d:] to
// gb's, or to gv's too when gb is nil (B = V). K is symmetric, so the rows
// are those of ZK (four-vector products). Rows are split between two
// goroutines when there are many.
func (w *Work) ApplyAll(n int, gv, gb []float64, scale float64) {
	d, m := w.d, 2*w.d
	rows := func(lo, hi int) {
		vecmat.N(w.kz[lo*m:], m, w.z[lo*m:], m, hi-lo, w.K, m, m, m, scale)
		for i := lo; i < hi; i++ {
			kz := w.kz[i*m : (i+1)*m]
			f64.AxpyUnitary(1, kz[:d], gv[i*d:(i+1)*d])
			if gb != nil {
				f64.AxpyUnitary(1, kz[d:], gb[i*d:(i+1)*d])
			} else {
				f64.AxpyUnitary(1, kz[d:], gv[i*d:(i+1)*d])
			}
		}
	}
	if n < applyAllSplit {
		rows(0, n)
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { rows(n/2, n) })
	rows(0, n/2)
	wg.Wait()
}

// applyAllSplit is the number of items from which ApplyAll uses two
// goroutines.
const applyAllSplit = 2048

// resize returns s with length n, reallocated if its capacity is short.
func resize(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}
