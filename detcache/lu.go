package detcache

import "math"

// Small dense determinants and condition numbers of the oracle's math;
// its inverses with log|det| are internal/f64's (f64.Inverse).

// exactRcond returns the reciprocal 1-norm condition number 1/(‖A‖₁‖A⁻¹‖₁)
// of the row-major k×k matrix a, given its inverse.
func exactRcond(a, inv []float64, k int) float64 {
	n1, n2 := 0.0, 0.0
	for j := 0; j < k; j++ {
		c1, c2 := 0.0, 0.0
		for i := 0; i < k; i++ {
			c1 += math.Abs(a[i*k+j])
			c2 += math.Abs(inv[i*k+j])
		}
		n1, n2 = math.Max(n1, c1), math.Max(n2, c2)
	}
	return 1 / (n1 * n2)
}
