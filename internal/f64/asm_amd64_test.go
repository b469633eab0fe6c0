//go:build !noasm

package f64

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// Conformance of the assembly kernels: each is called directly on seeded
// random sizes (tails of every length, padded strides), with its arrays
// ending at an inaccessible page (so a lane read or written past the end
// faults), and compared bit for bit with the same sums written out with
// math.FMA in the kernel's order, and with its Go twin within the rounding
// bound of the sums.

func requireAsm(t *testing.T) {
	if !useAsm {
		t.Skip("no AVX2/FMA on this CPU: the Go twins run, the assembly kernels are not tested")
	}
}

// guardedCopy returns a guarded copy of s.
func guardedCopy(t *testing.T, s []float64) []float64 {
	g := guarded(t, len(s))
	copy(g, s)
	return g
}

func TestAsmAxpyUnitary(t *testing.T) {
	requireAsm(t)
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range append(seq(1, 70), 127, 128, 129, 1000) {
		alpha := entry(rng)
		x, y := randSlice(rng, n), randSlice(rng, n)
		gx, gy := guardedCopy(t, x), guardedCopy(t, y)
		axpyUnitaryAVX2(alpha, &gx[0], &gy[0], n)
		twin := append([]float64(nil), y...)
		axpyUnitaryGo(alpha, x, twin)
		for i := range n {
			if want := math.FMA(alpha, x[i], y[i]); math.Float64bits(gy[i]) != math.Float64bits(want) {
				t.Fatalf("n=%d: y[%d] = %v, want %v (FMA)", n, i, gy[i], want)
			}
			if !withinSum(twin[i], gy[i], math.Abs(y[i])+math.Abs(alpha*x[i]), 1) {
				t.Fatalf("n=%d: twin y[%d] = %v, assembly %v", n, i, twin[i], gy[i])
			}
		}
	}
}

// gemvN4FMA is GemvN4's order with fused multiply-adds.
func gemvN4FMA(a []float64, lda int, x []float64) (y [4]float64) {
	n := len(x)
	for q := range 4 {
		row := a[q*lda:]
		var s [8]float64
		j := 0
		for ; j+8 <= n; j += 8 {
			for l := range 8 {
				s[l] = math.FMA(row[j+l], x[j+l], s[l])
			}
		}
		for l := range 4 {
			s[l] += s[4+l]
		}
		if j+4 <= n {
			for l := range 4 {
				s[l] = math.FMA(row[j+l], x[j+l], s[l])
			}
			j += 4
		}
		sum := (s[0] + s[2]) + (s[1] + s[3])
		for ; j < n; j++ {
			sum = math.FMA(row[j], x[j], sum)
		}
		y[q] = sum
	}
	return y
}

func TestAsmGemvN4(t *testing.T) {
	requireAsm(t)
	rng := rand.New(rand.NewPCG(2, 2))
	for _, n := range append(seq(1, 70), 255, 256, 257) {
		lda := n + rng.IntN(2)*(1+rng.IntN(7))
		a := filled(3*lda+n, math.NaN())
		for q := range 4 {
			copy(a[q*lda:q*lda+n], randSlice(rng, n))
		}
		x := randSlice(rng, n)
		ga, gx := guardedCopy(t, a), guardedCopy(t, x)
		var y, twin [4]float64
		gemvN4AVX2(&ga[0], lda, &gx[0], n, &y[0])
		gemvN4Go(a, lda, x, &twin)
		want := gemvN4FMA(a, lda, x)
		for q := range 4 {
			if math.Float64bits(y[q]) != math.Float64bits(want[q]) {
				t.Fatalf("n=%d lda=%d: y[%d] = %v, want %v (FMA order)", n, lda, q, y[q], want[q])
			}
			mag := 0.0
			for j := range n {
				mag += math.Abs(a[q*lda+j] * x[j])
			}
			if !withinSum(twin[q], y[q], mag, n) {
				t.Fatalf("n=%d: twin y[%d] = %v, assembly %v", n, q, twin[q], y[q])
			}
		}
	}
}

// gemvTFMA is GemvT's order with fused multiply-adds.
func gemvTFMA(a []float64, lda int, x, y []float64) {
	m := len(x)
	for j := range y {
		var s0, s1 float64
		i := 0
		for ; i+2 <= m; i += 2 {
			s0 = math.FMA(x[i], a[i*lda+j], s0)
			s1 = math.FMA(x[i+1], a[(i+1)*lda+j], s1)
		}
		if i < m {
			s0 = math.FMA(x[i], a[i*lda+j], s0)
		}
		y[j] = s0 + s1
	}
}

func TestAsmGemvT(t *testing.T) {
	requireAsm(t)
	rng := rand.New(rand.NewPCG(3, 3))
	for _, m := range []int{1, 2, 3, 4, 5, 8, 17, 30, 60} {
		for _, n := range append(seq(1, 40), 47, 48, 49, 60, 63, 64, 65, 100, 130) {
			lda := n + rng.IntN(2)*(1+rng.IntN(7))
			a := filled((m-1)*lda+n, math.NaN())
			for i := range m {
				copy(a[i*lda:i*lda+n], randSlice(rng, n))
			}
			x := randSlice(rng, m)
			ga, gx, gy := guardedCopy(t, a), guardedCopy(t, x), guarded(t, n)
			gemvTAVX2(&gy[0], &gx[0], &ga[0], m, n, lda)
			want, twin := make([]float64, n), make([]float64, n)
			gemvTFMA(a, lda, x, want)
			gemvTGo(a, lda, x, twin)
			for j := range n {
				if math.Float64bits(gy[j]) != math.Float64bits(want[j]) {
					t.Fatalf("m=%d n=%d lda=%d: y[%d] = %v, want %v (FMA order)", m, n, lda, j, gy[j], want[j])
				}
				mag := 0.0
				for i := range m {
					mag += math.Abs(x[i] * a[i*lda+j])
				}
				if !withinSum(twin[j], gy[j], mag, m) {
					t.Fatalf("m=%d n=%d: twin y[%d] = %v, assembly %v", m, n, j, twin[j], gy[j])
				}
			}
		}
	}
}

// TestAsmGemvT4 also puts a sentinel before the output rows and checks the
// entries between them (the masked tail writes only the columns named).
func TestAsmGemvT4(t *testing.T) {
	requireAsm(t)
	checkAsmGemvT4(t, rand.New(rand.NewPCG(4, 4)), false)
}

// TestAsmGemvT4Add checks the accumulating kernel as TestAsmGemvT4 checks
// GemvT4, from random starting values of y, and that GemvT4 over all rows
// gives the bits of GemvT4 over the first rows then GemvT4Add over the rest.
func TestAsmGemvT4Add(t *testing.T) {
	requireAsm(t)
	checkAsmGemvT4(t, rand.New(rand.NewPCG(5, 5)), true)
}

// checkAsmGemvT4 runs the assembly kernel (gemvT4AddAVX2 with add, from
// random values of y; else gemvT4AVX2) on random layouts against the FMA
// order bit for bit and against its Go twin within the sum's rounding,
// with guarded inputs and a sentinel around the output rows; with add it
// also checks that a split pass gives the bits of one pass.
func checkAsmGemvT4(t *testing.T, rng *rand.Rand, add bool) {
	t.Helper()
	for _, m := range []int{1, 2, 3, 5, 17, 30, 60} {
		for n := 1; n <= 70; n++ {
			lda := n + rng.IntN(2)*(1+rng.IntN(9))
			ldy := n + rng.IntN(2)*(1+rng.IntN(9))
			ldx, incx := gemvT4Layout(rng, m)
			name := fmt.Sprintf("m=%d/n=%d/lda=%d/ldy=%d/ldx=%d/incx=%d", m, n, lda, ldy, ldx, incx)
			a := filled((m-1)*lda+n, math.NaN())
			for i := range m {
				copy(a[i*lda:i*lda+n], randSlice(rng, n))
			}
			x := filled(3*ldx+(m-1)*incx+1, math.NaN())
			for v := range 4 {
				for i := range m {
					x[v*ldx+i*incx] = entry(rng)
				}
			}
			ga, gx := guardedCopy(t, a), guardedCopy(t, x)
			ybuf := guarded(t, 1+3*ldy+n)
			for i := range ybuf {
				ybuf[i] = sentinel
			}
			y := ybuf[1:]
			y0 := make([]float64, len(y)) // the starting values of the sums
			terms := m
			var twin []float64
			if add {
				for v := range 4 {
					for j := range n {
						y0[v*ldy+j] = entry(rng)
						y[v*ldy+j] = y0[v*ldy+j]
					}
				}
				terms++
				twin = append([]float64(nil), y...)
				gemvT4AddAVX2(&y[0], ldy, &gx[0], ldx, &ga[0], m, n, lda, incx)
				gemvT4AddGo(m, n, a, lda, x, ldx, incx, twin, ldy)
			} else {
				twin = make([]float64, 3*ldy+n)
				gemvT4AVX2(&y[0], ldy, &gx[0], ldx, &ga[0], m, n, lda, incx)
				gemvT4Go(m, n, a, lda, x, ldx, incx, twin, ldy)
			}
			for v := range 4 {
				for j := range n {
					want, mag := y0[v*ldy+j], math.Abs(y0[v*ldy+j])
					for i := range m {
						xi := x[v*ldx+i*incx]
						want = math.FMA(xi, a[i*lda+j], want)
						mag += math.Abs(xi * a[i*lda+j])
					}
					got := y[v*ldy+j]
					if math.Float64bits(got) != math.Float64bits(want) {
						t.Fatalf("%s: y[%d][%d] = %v, want %v (FMA order)", name, v, j, got, want)
					}
					if tw := twin[v*ldy+j]; !withinSum(tw, got, mag, terms) {
						t.Fatalf("%s: twin y[%d][%d] = %v, assembly %v", name, v, j, tw, got)
					}
				}
			}
			if ybuf[0] != sentinel {
				t.Fatalf("%s: entry before y changed to %v", name, ybuf[0])
			}
			for i, o := range y {
				if i%ldy >= n && o != sentinel {
					t.Fatalf("%s: y[%d] between the rows changed to %v", name, i, o)
				}
			}
			if !add {
				continue
			}
			// Split at k: the same bits as one pass, in both builds' kernels.
			k := rng.IntN(m + 1)
			whole, split := make([]float64, 3*ldy+n), make([]float64, 3*ldy+n)
			GemvT4(m, n, a, lda, x, ldx, incx, whole, ldy)
			GemvT4(k, n, a, lda, x, ldx, incx, split, ldy)
			if k < m {
				GemvT4Add(m-k, n, a[k*lda:], lda, x[k*incx:], ldx, incx, split, ldy)
			}
			if !sameBits(whole, split) {
				t.Fatalf("%s: split at %d differs from one pass", name, k)
			}
			gw, gs := make([]float64, 3*ldy+n), make([]float64, 3*ldy+n)
			gemvT4Go(m, n, a, lda, x, ldx, incx, gw, ldy)
			if k > 0 {
				gemvT4Go(k, n, a, lda, x, ldx, incx, gs, ldy)
			}
			if k < m {
				gemvT4AddGo(m-k, n, a[k*lda:], lda, x[k*incx:], ldx, incx, gs, ldy)
			}
			if !sameBits(gw, gs) {
				t.Fatalf("%s: twin split at %d differs from one pass", name, k)
			}
		}
	}
}

func TestAsmGer4(t *testing.T) {
	requireAsm(t)
	rng := rand.New(rand.NewPCG(5, 5))
	for _, m := range append(seq(1, 9), 16, 17, 33) {
		for _, n := range append(seq(1, 21), 32, 33, 60, 61) {
			lda := n + rng.IntN(2)*(1+rng.IntN(5))
			ldy := n + rng.IntN(2)*(1+rng.IntN(5))
			a := filled((m-1)*lda+n, math.NaN())
			for i := range m {
				copy(a[i*lda:i*lda+n], randSlice(rng, n))
			}
			x := randSlice(rng, 4*m)
			y := filled(3*ldy+n, math.NaN())
			for s := range 4 {
				copy(y[s*ldy:s*ldy+n], randSlice(rng, n))
			}
			ga, gx, gy := guardedCopy(t, a), guardedCopy(t, x), guardedCopy(t, y)
			ger4AVX2(&ga[0], lda, &gx[0], m, &gy[0], ldy, n)
			twin := append([]float64(nil), a...)
			ger4Go(m, n, x, y, ldy, twin, lda)
			for i := range m {
				for j := range n {
					want, mag := a[i*lda+j], math.Abs(a[i*lda+j])
					for s := range 4 {
						want = math.FMA(x[4*i+s], y[s*ldy+j], want)
						mag += math.Abs(x[4*i+s] * y[s*ldy+j])
					}
					got := ga[i*lda+j]
					if math.Float64bits(got) != math.Float64bits(want) {
						t.Fatalf("m=%d n=%d: a[%d][%d] = %v, want %v (FMA order)", m, n, i, j, got, want)
					}
					if tw := twin[i*lda+j]; !withinSum(tw, got, mag, 4) {
						t.Fatalf("m=%d n=%d: twin a[%d][%d] = %v, assembly %v", m, n, i, j, tw, got)
					}
				}
			}
			for i := range a {
				if i%lda >= n && !math.IsNaN(ga[i]) {
					t.Fatalf("m=%d n=%d: padding a[%d] written", m, n, i)
				}
			}
		}
	}
}

// TestAsmGJPanel4 runs the panel step on random panels for every step s,
// pivot row skip and search start from, and compares the panel, the
// multipliers and the pivot search with the step written out (the lanes
// other than s one FMA each).
func TestAsmGJPanel4(t *testing.T) {
	requireAsm(t)
	rng := rand.New(rand.NewPCG(6, 6))
	for _, m := range append(seq(1, 12), 31, 60) {
		for s := range 4 {
			for trial := range 4 {
				lda := 4 + rng.IntN(3)
				skip := rng.IntN(m)
				from := m // no search
				if s < 3 && trial%2 == 0 && skip+1 < m {
					from = skip + 1
				}
				p := randSlice(rng, (m-1)*lda+4)
				x := filled(4*m, sentinel)
				if trial == 3 && from < m {
					p[(m-1)*lda+s+1] = math.NaN() // a NaN is never the largest
				}
				var pc [4]float64
				for l := range pc {
					pc[l] = entry(rng)
				}
				inv := entry(rng)
				gp, gx := guardedCopy(t, p), guardedCopy(t, x)
				next, best := gjPanel4AVX2(&gp[0], lda, m, s, skip, &gx[s], &pc[0], inv, from)
				tp, tx := append([]float64(nil), p...), append([]float64(nil), x...)
				tnext, tbest := gjPanel4Go(tp, lda, m, s, skip, tx[s:], &pc, inv, from)
				wp, wx := append([]float64(nil), p...), append([]float64(nil), x...)
				wnext, wbest := -1, 0.0
				for r := range m {
					if r == skip {
						continue
					}
					q := wp[r*lda : r*lda+4]
					f := 0 - q[s]
					wx[4*r+s] = f
					for l := range 4 {
						if l == s {
							q[l] = f * inv
						} else {
							q[l] = math.FMA(f, pc[l], q[l])
						}
					}
					if r >= from {
						if v := math.Abs(q[s+1]); r == from || v > wbest {
							wnext, wbest = r, v
						}
					}
				}
				name := fmt.Sprintf("m=%d s=%d skip=%d from=%d", m, s, skip, from)
				if !sameBits(gp, wp) || !sameBits(gx, wx) {
					t.Fatalf("%s: panel or multipliers differ from the step written out", name)
				}
				if next != wnext || math.Float64bits(best) != math.Float64bits(wbest) {
					t.Fatalf("%s: pivot search %d %v, want %d %v", name, next, best, wnext, wbest)
				}
				if tnext != next || !sameBits(tx, gx) {
					t.Fatalf("%s: twin's pivot row %d or multipliers differ from the assembly's (%d)", name, tnext, next)
				}
				for r := range m {
					for l := range 4 {
						i := r*lda + l
						mag := math.Abs(p[i]) + math.Abs(p[r*lda+s]*pc[l])
						if !withinSum(tp[i], gp[i], mag, 1) && !(math.IsNaN(tp[i]) && math.IsNaN(gp[i])) {
							t.Fatalf("%s: twin p[%d][%d] = %v, assembly %v", name, r, l, tp[i], gp[i])
						}
					}
				}
				if next >= 0 && !withinSum(tbest, best, math.Abs(p[next*lda+s+1])+math.Abs(p[next*lda+s]*pc[s+1]), 1) && !(math.IsNaN(tbest) && math.IsNaN(best)) {
					t.Fatalf("%s: twin's best %v, assembly %v", name, tbest, best)
				}
			}
		}
	}
}

// TestAsmAdam checks the Adam kernel bit for bit against its twin,
// including the sum.
func TestAsmAdam(t *testing.T) {
	requireAsm(t)
	rng := rand.New(rand.NewPCG(7, 7))
	for n := 1; n <= 70; n++ {
		for _, step := range []int{1, 3, 1000} {
			c := testAdamCoef(0.01, step)
			x, m, v, g := adamTestVec(rng, n, false), adamTestVec(rng, n, false), adamTestVec(rng, n, true), adamTestVec(rng, n, false)
			gx, gm, gv, gg := guardedCopy(t, x), guardedCopy(t, m), guardedCopy(t, v), guardedCopy(t, g)
			sum := adamAVX2(&gx[0], &gm[0], &gv[0], &gg[0], n, &c)
			tsum := adamGo(x, m, v, g, &c)
			if !sameBits(gx, x) || !sameBits(gm, m) || !sameBits(gv, v) || !sameBits(gg, g) {
				t.Fatalf("n=%d t=%d: assembly and twin differ", n, step)
			}
			if math.Float64bits(sum) != math.Float64bits(tsum) {
				t.Fatalf("n=%d t=%d: sum %v, twin %v", n, step, sum, tsum)
			}
		}
	}
}

func TestAsmPrefetch(t *testing.T) {
	// Prefetch changes nothing the program can see, as its Go twin (which
	// does nothing): every length and alignment up to a few lines, the
	// slice ending at an inaccessible page (a prefetch does not fault).
	rng := rand.New(rand.NewPCG(8, 8))
	for n := 1; n <= 40; n++ {
		for off := range 8 {
			g := guarded(t, n+off)[off:]
			for i := range g {
				g[i] = rng.NormFloat64()
			}
			want := append([]float64(nil), g...)
			prefetchAsm(unsafe.Pointer(&g[0]), uintptr(8*n))
			prefetchGo(unsafe.Pointer(&want[0]), uintptr(8*n))
			if !sameBits(g, want) {
				t.Fatalf("n=%d off=%d: prefetch changed the slice", n, off)
			}
		}
	}
}

// gemmNNCase is a random GemmNN problem: A (m×k, row stride lda) and B
// (k×n, ldb) with NaN in the padding of their rows, and C's row stride ldc.
type gemmNNCase struct {
	name          string
	m, n, k       int
	a, b          []float64
	lda, ldb, ldc int
}

func newGemmNNCase(rng *rand.Rand, m, n, k int) gemmNNCase {
	c := gemmNNCase{m: m, n: n, k: k, lda: k + rng.IntN(2)*(1+rng.IntN(5)),
		ldb: n + rng.IntN(2)*(1+rng.IntN(5)), ldc: n + rng.IntN(2)*(1+rng.IntN(5))}
	c.name = fmt.Sprintf("m=%d/n=%d/k=%d/lda=%d/ldb=%d/ldc=%d", m, n, k, c.lda, c.ldb, c.ldc)
	c.a = filled((m-1)*c.lda+k, math.NaN())
	for i := range m {
		copy(c.a[i*c.lda:i*c.lda+k], randSlice(rng, k))
	}
	c.b = filled((k-1)*c.ldb+n, math.NaN())
	for l := range k {
		copy(c.b[l*c.ldb:l*c.ldb+n], randSlice(rng, n))
	}
	return c
}

// check runs the kernel through gemmNN (rows in fours, and m < 4 as rows
// of stride 0) on guarded copies of the case, with a sentinel around and
// between C's rows, and compares every entry with the sum in the order of
// l written out with math.FMA (bit for bit; NaN for NaN) and with the Go
// twin (within the sum's rounding, where the sum is finite).
func (c gemmNNCase) check(t *testing.T) {
	t.Helper()
	m, n, k, lda, ldb, ldc := c.m, c.n, c.k, c.lda, c.ldb, c.ldc
	ga, gb := guardedCopy(t, c.a), guardedCopy(t, c.b)
	cbuf := guarded(t, 1+(m-1)*ldc+n)
	for i := range cbuf {
		cbuf[i] = sentinel
	}
	out := cbuf[1:]
	gemmNN(m, n, k, ga, lda, gb, ldb, out, ldc)
	twin := make([]float64, (m-1)*ldc+n)
	gemmNNGo(m, n, k, c.a, lda, c.b, ldb, twin, ldc)
	for i := range m {
		for j := range n {
			var want, mag float64
			for l := range k {
				x, y := c.a[i*lda+l], c.b[l*ldb+j]
				want = math.FMA(x, y, want)
				mag += math.Abs(x * y)
			}
			got := out[i*ldc+j]
			if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("%s: c[%d][%d] = %v, want %v (FMA order)", c.name, i, j, got, want)
			}
			tw := twin[i*ldc+j]
			switch {
			case math.IsNaN(mag) || math.IsInf(mag, 0):
				if math.IsNaN(tw) != math.IsNaN(got) || !math.IsNaN(got) && tw != got {
					t.Fatalf("%s: twin c[%d][%d] = %v, assembly %v", c.name, i, j, tw, got)
				}
			case !withinSum(tw, got, mag, k):
				t.Fatalf("%s: twin c[%d][%d] = %v, assembly %v", c.name, i, j, tw, got)
			}
		}
	}
	if cbuf[0] != sentinel {
		t.Fatalf("%s: entry before C changed to %v", c.name, cbuf[0])
	}
	for i, o := range out {
		if i%ldc >= n && o != sentinel {
			t.Fatalf("%s: c[%d] between the rows changed to %v", c.name, i, o)
		}
	}
}

// TestAsmGemmNN runs the kernel on every n = 1…40 and k = 1…64 (tails of
// every length of the 12-, 8- and masked column chunks), with row counts
// that are and are not multiples of four (the last group overlapping the
// one before) and below four, and on a block's size.
func TestAsmGemmNN(t *testing.T) {
	requireAsm(t)
	rng := rand.New(rand.NewPCG(9, 9))
	ms := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13, 16}
	i := 0
	for n := 1; n <= 40; n++ {
		for k := 1; k <= 64; k++ {
			newGemmNNCase(rng, ms[i%len(ms)], n, k).check(t)
			i++
		}
	}
	for _, m := range append(seq(1, 21), 64, 255, 256, 257) {
		for _, n := range []int{1, 3, 4, 7, 8, 9, 12, 13, 16, 20, 24, 32, 33} {
			newGemmNNCase(rng, m, n, 1+rng.IntN(64)).check(t)
		}
	}
}

// TestAsmGemmNNNonFinite puts NaN, +Inf and −Inf into random entries of A
// and B (and a product Inf·0) and checks that they reach C as the sums
// written out with math.FMA say.
func TestAsmGemmNNNonFinite(t *testing.T) {
	requireAsm(t)
	rng := rand.New(rand.NewPCG(10, 10))
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0}
	for trial := range 400 {
		c := newGemmNNCase(rng, 1+rng.IntN(12), 1+rng.IntN(40), 1+rng.IntN(20))
		for range 1 + rng.IntN(3) {
			v := special[rng.IntN(len(special))]
			if rng.IntN(2) == 0 {
				i, l := rng.IntN(c.m), rng.IntN(c.k)
				c.a[i*c.lda+l] = v
			} else {
				l, j := rng.IntN(c.k), rng.IntN(c.n)
				c.b[l*c.ldb+j] = v
			}
		}
		c.name = fmt.Sprintf("trial %d: %s", trial, c.name)
		c.check(t)
	}
}

// TestAsmSchurRows runs the kernel directly on guarded copies (n ≥ 4: the
// groups of four rows and the overlapping last group; k = 1…40: every
// column tail), with a sentinel between out's rows, against the loop of
// SchurRows's contract and the Go twin, bit for bit (NaN for NaN), also
// with NaN, ±Inf, ±0 and huge entries.
func TestAsmSchurRows(t *testing.T) {
	requireAsm(t)
	rng := rand.New(rand.NewPCG(11, 11))
	for _, n := range append(seq(4, 13), 16, 17, 64, 255, 256) {
		for k := 1; k <= 40; k++ {
			for _, special := range []bool{false, true, true} {
				c := newSchurRowsCase(rng, n, k, special)
				ga, gw, gp := guardedCopy(t, c.a), guardedCopy(t, c.w), guardedCopy(t, c.p)
				gz, gi := guardedCopy(t, c.zn), guardedCopy(t, c.iz)
				out := guardedCopy(t, filled(4*c.ldo+n, sentinel))
				schurRowsAVX2(&out[0], c.ldo, &ga[0], &gw[0], &gp[0], c.ld, &gz[0], &gi[0], n, k)
				c.check(t, out, "assembly")
				twin := filled(4*c.ldo+n, sentinel)
				schurRowsGo(n, k, c.a, c.w, c.p, c.ld, c.zn, c.iz, twin, c.ldo)
				c.check(t, twin, "twin")
			}
		}
	}
}

// TestAsmDet4Rows runs the kernel directly on guarded copies of n = 1…64
// entries (groups of four and the masked last 1–3) against Det4Rows's
// expression written out and the Go twin, bit for bit (NaN for NaN), also
// with NaN, ±Inf and ±0 entries, and checks that the entry after r is
// not written.
func TestAsmDet4Rows(t *testing.T) {
	requireAsm(t)
	rng := rand.New(rand.NewPCG(13, 13))
	for n := 1; n <= 64; n++ {
		for trial := range 8 {
			sc, in := newDet4RowsCase(rng, n, trial%2 == 1)
			var g [9][]float64
			for i := range in {
				g[i] = guardedCopy(t, in[i][:n])
			}
			rbuf := guardedCopy(t, filled(n+1, sentinel))
			r := rbuf[:n]
			det4RowsAVX2(&r[0], sc, &g[0][0], &g[1][0], &g[2][0], &g[3][0], &g[4][0], &g[5][0], &g[6][0], &g[7][0], &g[8][0], n)
			twin := make([]float64, n)
			det4RowsGo(twin, sc, in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], in[8])
			for j := range n {
				want := det4RowsWant(sc, in, j)
				for _, got := range []float64{r[j], twin[j]} {
					if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
						t.Fatalf("n=%d trial %d: r[%d] = %v (assembly %v), want %v", n, trial, j, got, r[j], want)
					}
				}
			}
			if rbuf[n] != sentinel {
				t.Fatalf("n=%d: entry past r written", n)
			}
		}
	}
}
