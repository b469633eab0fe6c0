package learn

import "github.com/ndpp-go/ndpp/blas"

// rowTimes computes out = xᵀM for a row-major d×d M (out_k = Σ_l x_l M_lk),
// one axpy per non-zero x_l.
func rowTimes(out, x, m []float64, d int) {
	clear(out[:d])
	for l, xl := range x[:d] {
		if xl == 0 {
			continue
		}
		blas.Axpy(xl, m[l*d:(l+1)*d], out)
	}
}
