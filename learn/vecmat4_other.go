//go:build !amd64

package learn

func vecmat4FMA(out *float64, ldo int, x *float64, ldx int, m *float64, rows, cols, ld, incx int) {
	panic("learn: vecmat4FMA without assembly")
}
