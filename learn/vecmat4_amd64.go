package learn

// vecmat4FMA sets out[v·ldo+j] = Σ_{l<rows} x[v·ldx+l·incx]·m[l·ld+j] for
// v < 4, j < cols (rows ≥ 1, cols ≥ 1, incx ≥ 1): four vectors, whose
// entries are incx apart, times one row-major matrix in a single pass over
// the matrix (AVX2/FMA). Only the entries named are read or written. The
// caller checks the bounds.
//
//go:noescape
func vecmat4FMA(out *float64, ldo int, x *float64, ldx int, m *float64, rows, cols, ld, incx int)
