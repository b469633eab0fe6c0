//go:build !amd64

package learn

func rank4FMA(a *float64, lda int, x *float64, m int, y *float64, ldy int, n int) {
	panic("learn: rank4FMA without assembly")
}

func gjPanelFMA(p *float64, lda int, m int, s int, skip int, x *float64, pc *float64, inv float64, from int) (next int, best float64) {
	panic("learn: gjPanelFMA without assembly")
}
