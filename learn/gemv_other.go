//go:build !amd64

package learn

// useFMA is false: only amd64 has the assembly kernel.
const useFMA = false

func dot4FMA(a *float64, stride int, x *float64, n int, out *float64) {
	panic("learn: dot4FMA without assembly")
}

func axpyFMA(alpha float64, x *float64, y *float64, n int) {
	panic("learn: axpyFMA without assembly")
}

func vecmatFMA(out *float64, x *float64, m *float64, rows, cols, ld int) {
	panic("learn: vecmatFMA without assembly")
}

func adamAVX(x, m, v, gr *float64, n int, k *float64) (sum float64) {
	panic("learn: adamAVX without assembly")
}
