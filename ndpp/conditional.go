package ndpp

import (
	"errors"
	"fmt"
	"math"

	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/ndpp-go/ndpp/blas"
)

// ErrSingularCondition is returned when the conditioning set Y of
// ConditionalGains has a zero determinant, so L_Y⁻¹ does not exist.
var ErrSingularCondition = errors.New("ndpp: conditioning set has a zero determinant")

// ConditionalGains writes into dst (len ≥ N()) the conditional gain of every
// item j given the set Y:
//
//	s_j = det L_{Y+j} / det L_Y = L_jj − L_{j,Y} L_Y⁻¹ L_{Y,j}
//
// (a Schur complement), with s_j = 0 for j ∈ Y. It is the next-item score
// of NDPP recommenders and of the MPR metric. For the empty Y, s_j = L_jj.
// The cost is two BLAS-3 products of a |Y|×d block with the d×n item
// matrices plus O(n|Y|²): O(n·|Y|·(d + |Y|)).
//
// It returns ErrSingularCondition when det L_Y is zero under the numerical
// zero rule, an error wrapping ErrOverflow when L_Y or a gain overflows
// float64 (see Model.CheckScale), and an error for invalid Y.
func (m *Model) ConditionalGains(y []int, dst []float64) error {
	if len(dst) < m.n {
		return fmt.Errorf("ndpp: ConditionalGains needs dst of length %d, got %d", m.n, len(dst))
	}
	dst = dst[:m.n]
	for j := range dst {
		dst[j] = blas.Dot(m.ItemV(j), m.ItemV(j)) + m.ItemDiag(j) // bⱼᵀCbⱼ = 0
	}
	if len(y) == 0 {
		return nil
	}
	if err := m.CheckItems(y); err != nil {
		return err
	}
	if _, sign, err := m.LogDet(y); err != nil {
		return err
	} else if sign == 0 {
		return ErrSingularCondition
	}
	k, d, n := len(y), m.d, m.n
	vy := make([]float64, k*d)  // rows vᵢ, i ∈ Y
	bcy := make([]float64, k*d) // rows bᵢᵀC, i ∈ Y
	for a, i := range y {
		copy(vy[a*d:], m.ItemV(i))
		copy(bcy[a*d:], m.ItemBC(i))
	}
	// A[a, j] = v_{y_a}·v_j,  Cb[a, j] = b_{y_a}ᵀ C b_j  (k×n each).
	impl := blas64.Implementation()
	aa := make([]float64, k*n)
	cb := make([]float64, k*n)
	impl.Dgemm(gblas.NoTrans, gblas.Trans, k, n, d, 1, vy, d, m.v, d, 0, aa, n)
	impl.Dgemm(gblas.NoTrans, gblas.Trans, k, n, d, 1, bcy, d, m.b, d, 0, cb, n)
	// u_j = L_{Y,j} = A + Cb (columns), w_j = L_{j,Y} = A − Cb (as C is skew).
	u := mat.NewDense(k, n, nil)
	for idx := range aa {
		u.RawMatrix().Data[idx] = aa[idx] + cb[idx]
	}
	ly, _ := m.Kernel(y)
	var lu mat.LU
	lu.Factorize(ly)
	var p mat.Dense // P = L_Y⁻¹ U, k×n
	if err := lu.SolveTo(&p, false, u); err != nil {
		return ErrSingularCondition
	}
	praw := p.RawMatrix()
	for a := 0; a < k; a++ {
		prow := praw.Data[a*praw.Stride : a*praw.Stride+n]
		arow, crow := aa[a*n:(a+1)*n], cb[a*n:(a+1)*n]
		for j := range dst {
			dst[j] -= (arow[j] - crow[j]) * prow[j]
		}
	}
	for _, i := range y {
		dst[i] = 0
	}
	for j, s := range dst {
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return fmt.Errorf("%w: the conditional gain of item %d is %v", ErrOverflow, j, s)
		}
	}
	return nil
}
