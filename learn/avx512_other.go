//go:build !amd64

package learn

// useAVX512 is false: only amd64 has the AVX-512 kernels.
const useAVX512 = false

func vecmat4AVX512(out *float64, ldo int, x *float64, ldx int, m *float64, rows, cols, ld, incx int) {
	panic("learn: vecmat4AVX512 without assembly")
}

func adamAVX512(x, m, v, gr, kz *float64, n int, x2, m2, v2, gr2, kz2 *float64, n2 int, k *float64) (sum float64) {
	panic("learn: adamAVX512 without assembly")
}
