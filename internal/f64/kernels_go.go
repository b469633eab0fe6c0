package f64

import (
	"math"
	"unsafe"
)

// The Go twins of the assembly kernels: the same contracts and summation
// orders, with separate multiplies and adds where the assembly fuses them
// (the compiler may still fuse them on targets where it does so). They are
// the kernels of builds without the assembly and references for its tests.
// Arguments are checked by the callers.

// axpyUnitaryGo is AxpyUnitary; len(y) = len(x).
func axpyUnitaryGo(alpha float64, x, y []float64) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

// gemvN4Go is GemvN4 for len(x) ≥ 1.
func gemvN4Go(a []float64, lda int, x []float64, y *[4]float64) {
	n := len(x)
	for q := range 4 {
		row := a[q*lda : q*lda+n]
		var s [8]float64
		j := 0
		for ; j+8 <= n; j += 8 {
			r, xs := row[j:j+8:j+8], x[j:j+8:j+8]
			for l := range 8 {
				s[l] += r[l] * xs[l]
			}
		}
		for l := range 4 {
			s[l] += s[4+l]
		}
		if j+4 <= n {
			for l := range 4 {
				s[l] += row[j+l] * x[j+l]
			}
			j += 4
		}
		sum := (s[0] + s[2]) + (s[1] + s[3])
		for ; j < n; j++ {
			sum += row[j] * x[j]
		}
		y[q] = sum
	}
}

// gemvTChunk is the number of columns gemvTGo sums at a time (the odd
// rows' sums are kept on the stack).
const gemvTChunk = 64

// gemvTGo is GemvT for len(x), len(y) ≥ 1.
func gemvTGo(a []float64, lda int, x, y []float64) {
	m, n := len(x), len(y)
	even := m &^ 1
	for j0 := 0; j0 < n; j0 += gemvTChunk {
		j1 := min(j0+gemvTChunk, n)
		ye := y[j0:j1]
		var odd [gemvTChunk]float64
		yo := odd[:j1-j0]
		clear(ye)
		i := 0
		for ; i < even; i += 2 {
			r0, r1 := a[i*lda+j0:i*lda+j1], a[(i+1)*lda+j0:(i+1)*lda+j1]
			x0, x1 := x[i], x[i+1]
			for j := range ye {
				ye[j] += x0 * r0[j]
				yo[j] += x1 * r1[j]
			}
		}
		if i < m {
			r0, x0 := a[i*lda+j0:i*lda+j1], x[i]
			for j := range ye {
				ye[j] += x0 * r0[j]
			}
		}
		for j := range ye {
			ye[j] += yo[j]
		}
	}
}

// gemvT4Go is GemvT4 for m, n ≥ 1.
func gemvT4Go(m, n int, a []float64, lda int, x []float64, ldx, incx int, y []float64, ldy int) {
	for v := range 4 {
		clear(y[v*ldy : v*ldy+n])
	}
	gemvT4AddGo(m, n, a, lda, x, ldx, incx, y, ldy)
}

// gemvT4AddGo is GemvT4Add for m, n ≥ 1.
func gemvT4AddGo(m, n int, a []float64, lda int, x []float64, ldx, incx int, y []float64, ldy int) {
	y0, y1, y2, y3 := y[:n], y[ldy:ldy+n], y[2*ldy:2*ldy+n], y[3*ldy:3*ldy+n]
	for i := range m {
		row := a[i*lda : i*lda+n]
		o := i * incx
		x0, x1, x2, x3 := x[o], x[ldx+o], x[2*ldx+o], x[3*ldx+o]
		for j, v := range row {
			y0[j] += x0 * v
			y1[j] += x1 * v
			y2[j] += x2 * v
			y3[j] += x3 * v
		}
	}
}

// gemmNNGo is GemmNN for m, n, k ≥ 1: four columns of a row of C at a
// time (then the last n mod 4 one by one), each summed in the order of l.
func gemmNNGo(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	for i := range m {
		ar := a[i*lda : i*lda+k : i*lda+k]
		cr := c[i*ldc : i*ldc+n : i*ldc+n]
		j := 0
		for ; j+4 <= n; j += 4 {
			var s0, s1, s2, s3 float64
			for l, x := range ar {
				br := b[l*ldb+j : l*ldb+j+4 : l*ldb+j+4]
				s0 += x * br[0]
				s1 += x * br[1]
				s2 += x * br[2]
				s3 += x * br[3]
			}
			cr[j], cr[j+1], cr[j+2], cr[j+3] = s0, s1, s2, s3
		}
		for ; j < n; j++ {
			var s float64
			for l, x := range ar {
				s += x * b[l*ldb+j]
			}
			cr[j] = s
		}
	}
}

// ger4Go is ger4: a[i·lda+j] += x[4i]·y[j] + x[4i+1]·y[ldy+j] +
// x[4i+2]·y[2·ldy+j] + x[4i+3]·y[3·ldy+j], added to a[i·lda+j] one term at
// a time in that order, for i < m, j < n (m, n ≥ 1).
func ger4Go(m, n int, x, y []float64, ldy int, a []float64, lda int) {
	y0, y1, y2, y3 := y[:n], y[ldy:ldy+n], y[2*ldy:2*ldy+n], y[3*ldy:3*ldy+n]
	for i := range m {
		row := a[i*lda : i*lda+n]
		xr := x[4*i : 4*i+4]
		x0, x1, x2, x3 := xr[0], xr[1], xr[2], xr[3]
		for j, v := range row {
			v += x0 * y0[j]
			v += x1 * y1[j]
			v += x2 * y2[j]
			v += x3 * y3[j]
			row[j] = v
		}
	}
}

// gjPanel4Go is gjPanel4.
func gjPanel4Go(p []float64, lda, m, s, skip int, x []float64, pc *[4]float64, inv float64, from int) (next int, best float64) {
	next = -1
	for r := range m {
		if r == skip {
			continue
		}
		q := p[r*lda : r*lda+4]
		f := 0 - q[s]
		x[4*r] = f
		for l := range 4 {
			if l == s {
				q[l] = f * inv
			} else {
				q[l] += f * pc[l]
			}
		}
		if r >= from {
			if v := math.Abs(q[s+1]); r == from || v > best {
				next, best = r, v
			}
		}
	}
	return next, best
}

// adamGo is Adam for len(g) ≥ 1 (x, m, v as long as g). The explicit
// conversions keep the compiler from fusing multiply-adds.
func adamGo(x, m, v, g []float64, c *AdamCoef) float64 {
	n := len(g)
	x, m, v = x[:n], m[:n], v[:n]
	entry := func(i int) float64 {
		gi := g[i]
		mi := float64(c.Beta1*m[i]) + float64(c.Beta1c*gi)
		vi := float64(c.Beta2*v[i]) + float64(float64(c.Beta2c*gi)*gi)
		m[i], v[i] = mi, vi
		xi := x[i] + float64(c.Step*mi)/(math.Sqrt(vi)+c.Eps)
		x[i] = xi
		return xi
	}
	var s [4]float64
	i := 0
	for ; i+4 <= n; i += 4 {
		for l := range 4 {
			s[l] += entry(i + l)
		}
	}
	sum := (s[0] + s[2]) + (s[1] + s[3])
	for ; i < n; i++ {
		sum += entry(i)
	}
	return sum
}

// prefetchGo is prefetch of the n bytes at p: Go has no prefetch
// instruction, so it does nothing.
func prefetchGo(unsafe.Pointer, uintptr) {}

// schurRowsGo is SchurRows for n, k ≥ 1: one row at a time. The explicit
// conversions keep the compiler from fusing multiply-adds.
func schurRowsGo(n, k int, a, w, p []float64, ld int, zn, izn []float64, out []float64, ldo int) {
	zn, izn = zn[:k], izn[:k]
	for r := range n {
		wr, pr := w[r*ld:r*ld+k], p[r*ld:r*ld+k]
		pr = pr[:len(wr)]
		s := a[r]
		mag := math.Abs(s)
		var w1, zp float64
		var pnBits uint64
		for i, wi := range wr {
			t := float64(wi * pr[i])
			s -= t
			mag += math.Abs(t)
			ap := float64(math.Abs(pr[i]) * zn[i])
			pnBits = max(pnBits, math.Float64bits(ap))
			w1 += float64(math.Abs(wi) * izn[i])
			zp += ap
		}
		out[r], out[ldo+r], out[2*ldo+r], out[3*ldo+r], out[4*ldo+r] = s, mag, math.Float64frombits(pnBits), w1, zp
	}
}

// det4RowsGo is Det4Rows (inputs at least len(r) long).
func det4RowsGo(r []float64, sc *[8]float64, m1, m4, m5, m6, m7, m9, m13, c13, c12 []float64) {
	m0, m2, m3, m8, m12, b03, b02, b23 := sc[0], sc[1], sc[2], sc[3], sc[4], sc[5], sc[6], sc[7]
	for j := range r {
		n1, n4, n5, n6, n7 := m1[j], m4[j], m5[j], m6[j], m7[j]
		t01 := float64(m0*n5) - float64(n1*n4)
		t02 := float64(m0*n6) - float64(m2*n4)
		t03 := float64(m0*n7) - float64(m3*n4)
		t12 := float64(n1*n6) - float64(m2*n5)
		t13 := float64(n1*n7) - float64(m3*n5)
		t23 := float64(m2*n7) - float64(m3*n6)
		b01 := float64(m8*m13[j]) - float64(m9[j]*m12)
		s := 0 + float64(t01*b23)
		s -= float64(t02 * c13[j])
		s += float64(t03 * c12[j])
		s += float64(t12 * b03)
		s -= float64(t13 * b02)
		s += float64(t23 * b01)
		r[j] = s
	}
}
