package detcache

import (
	"math"
	"math/big"

	"github.com/ndpp-go/ndpp/ndpp"
)

// bigLogDet is the exact reference: L_S (with the diagonal) built from the
// float64 parameters in 256-bit arithmetic and eliminated with partial pivoting in the same
// precision. It returns −Inf for an exactly singular set.
func bigLogDet(m *ndpp.Model, set []int) float64 {
	const prec = 256
	k := len(set)
	nf := func(x float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(x) }
	bigDot := func(x, y []float64) *big.Float {
		s := nf(0)
		for i := range x {
			s.Add(s, new(big.Float).SetPrec(prec).Mul(nf(x[i]), nf(y[i])))
		}
		return s
	}
	_, _, _, c := m.Rows()
	d := m.D()
	a := make([]*big.Float, k*k)
	for r, i := range set {
		// bᵢᵀC in big precision.
		bi := m.ItemB(i)
		bc := make([]*big.Float, d)
		for col := 0; col < d; col++ {
			s := nf(0)
			for l := 0; l < d; l++ {
				s.Add(s, new(big.Float).SetPrec(prec).Mul(nf(bi[l]), nf(c[l*d+col])))
			}
			bc[col] = s
		}
		for s, j := range set {
			e := bigDot(m.ItemV(i), m.ItemV(j))
			bj := m.ItemB(j)
			for l := 0; l < d; l++ {
				e.Add(e, new(big.Float).SetPrec(prec).Mul(bc[l], nf(bj[l])))
			}
			if i == j {
				e.Add(e, nf(m.ItemDiag(i)))
			}
			a[r*k+s] = e
		}
	}
	logAbs := 0.0
	for col := 0; col < k; col++ {
		p := -1
		for r := col; r < k; r++ {
			if a[r*k+col].Sign() != 0 && (p < 0 || new(big.Float).Abs(a[r*k+col]).Cmp(new(big.Float).Abs(a[p*k+col])) > 0) {
				p = r
			}
		}
		if p < 0 {
			return math.Inf(-1)
		}
		for j := 0; j < k; j++ {
			a[col*k+j], a[p*k+j] = a[p*k+j], a[col*k+j]
		}
		piv := a[col*k+col]
		mant := new(big.Float)
		exp := piv.MantExp(mant)
		mf, _ := mant.Float64()
		logAbs += math.Log(math.Abs(mf)) + float64(exp)*math.Ln2
		for r := col + 1; r < k; r++ {
			q := new(big.Float).SetPrec(prec).Quo(a[r*k+col], piv)
			for j := col; j < k; j++ {
				a[r*k+j].Sub(a[r*k+j], new(big.Float).SetPrec(prec).Mul(q, a[col*k+j]))
			}
		}
	}
	return logAbs
}
