package detcache

import "math"

// Small dense determinants and condition numbers of the oracle's math;
// its inverses with log|det| are internal/f64's (f64.Inverse).

// det4 returns the determinant of the 4×4 row-major matrix a by Laplace
// expansion along its first two rows; size, the magnitude of the terms that
// cancel in it: the same expansion on mag (entrywise magnitudes of a, or
// larger ones for entries that are themselves computed sums) with every
// product taken in absolute value; and err, a first-order bound on the
// change of the determinant when each entry moves by at most e (the
// expansion on mag + e minus size), plus the rounding of the expansion.
func det4(a, mag, e *[16]float64) (det, size, err float64) {
	// Pairs of columns (i, j), i < j, and their complements (k, l), with the
	// Laplace sign (−1)^(1+i+j) (rows 0 and 1, 0-indexed).
	type pc struct {
		i, j, k, l int
		sign       float64
	}
	pairs := [6]pc{
		{0, 1, 2, 3, 1}, {0, 2, 1, 3, -1}, {0, 3, 1, 2, 1},
		{1, 2, 0, 3, 1}, {1, 3, 0, 2, -1}, {2, 3, 0, 1, 1},
	}
	var me [16]float64
	for i := range me {
		me[i] = mag[i] + e[i]
	}
	sizeE := 0.0
	for _, p := range pairs {
		top := a[p.i]*a[4+p.j] - a[p.j]*a[4+p.i]
		bot := a[8+p.k]*a[12+p.l] - a[8+p.l]*a[12+p.k]
		det += p.sign * top * bot
		mt := mag[p.i]*mag[4+p.j] + mag[p.j]*mag[4+p.i]
		mb := mag[8+p.k]*mag[12+p.l] + mag[8+p.l]*mag[12+p.k]
		size += mt * mb
		et := me[p.i]*me[4+p.j] + me[p.j]*me[4+p.i]
		eb := me[8+p.k]*me[12+p.l] + me[8+p.l]*me[12+p.k]
		sizeE += et * eb
	}
	return det, size, (sizeE - size) + 8*eps*size
}

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
