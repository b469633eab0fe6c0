package f64

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The exported kernels against plain loops, in every build (with the
// assembly kernels where this build and CPU run them, else the Go twins).

// unitRound is 2u (u = 2⁻⁵³): a sum of t products computed in any order,
// with or without fused multiply-adds, is within t·u·Σ|terms| of the exact
// value, so two such computations differ by at most t·2u·Σ|terms|.
const unitRound = 0x1p-52

// sentinel marks entries a kernel must not touch.
const sentinel = -7.25

// entry draws a value of mixed sign and magnitude, so that sums cancel.
func entry(rng *rand.Rand) float64 { return rng.NormFloat64() * math.Exp2(float64(rng.IntN(9)-4)) }

// randSlice returns n entries drawn by entry.
func randSlice(rng *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = entry(rng)
	}
	return s
}

// filled returns n entries of fill.
func filled(n int, fill float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = fill
	}
	return s
}

// seq returns lo, lo+1, …, hi.
func seq(lo, hi int) []int {
	s := make([]int, 0, hi-lo+1)
	for i := lo; i <= hi; i++ {
		s = append(s, i)
	}
	return s
}

func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// withinSum reports whether got is within (terms+1)·2u·mag of want.
func withinSum(got, want, mag float64, terms int) bool {
	return !math.IsNaN(got) && math.Abs(got-want) <= float64(terms+1)*unitRound*mag
}

func TestAxpyUnitary(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	for n := 0; n <= 70; n++ {
		alpha := entry(rng)
		x, y := make([]float64, n), make([]float64, n+1)
		for i := range x {
			x[i], y[i] = entry(rng), entry(rng)
		}
		y[n] = sentinel
		want := append([]float64(nil), y...)
		AxpyUnitary(alpha, x, y)
		for i := range x {
			if w, mag := want[i]+alpha*x[i], math.Abs(want[i])+math.Abs(alpha*x[i]); !withinSum(y[i], w, mag, 1) {
				t.Fatalf("n=%d: y[%d] = %v, want %v", n, i, y[i], w)
			}
		}
		if y[n] != sentinel {
			t.Fatalf("n=%d: entry past x's length changed", n)
		}
	}
}

func TestGemvN4(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	for n := 0; n <= 70; n++ {
		lda := n + rng.IntN(2)*(1+rng.IntN(5))
		a := filled(3*lda+n, math.NaN()) // padding NaN: reading it shows
		for q := range 4 {
			for j := range n {
				a[q*lda+j] = entry(rng)
			}
		}
		x := make([]float64, n)
		for i := range x {
			x[i] = entry(rng)
		}
		y := [4]float64{math.NaN(), math.NaN(), math.NaN(), math.NaN()}
		GemvN4(a, lda, x, &y)
		for q := range 4 {
			var want, mag float64
			for j := range n {
				p := a[q*lda+j] * x[j]
				want += p
				mag += math.Abs(p)
			}
			if !withinSum(y[q], want, mag, n) {
				t.Fatalf("n=%d lda=%d: y[%d] = %v, want %v", n, lda, q, y[q], want)
			}
		}
	}
}

func TestGemvT(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 15))
	for _, m := range []int{0, 1, 2, 3, 4, 5, 7, 30, 31, 60} {
		for _, n := range []int{0, 1, 2, 3, 4, 5, 7, 15, 16, 17, 20, 21, 30, 33, 60, 61, 64, 65, 130} {
			lda := n + rng.IntN(2)*(1+rng.IntN(5))
			a := filled(max(0, (m-1)*lda+n), math.NaN())
			for i := range m {
				for j := range n {
					a[i*lda+j] = entry(rng)
				}
			}
			x := make([]float64, m)
			for i := range x {
				x[i] = entry(rng)
			}
			y := filled(n+1, math.NaN()) // overwritten, not accumulated
			y[n] = sentinel
			GemvT(a, lda, x, y[:n])
			for j := range n {
				var want, mag float64
				for i := range m {
					p := x[i] * a[i*lda+j]
					want += p
					mag += math.Abs(p)
				}
				if !withinSum(y[j], want, mag, m) {
					t.Fatalf("m=%d n=%d lda=%d: y[%d] = %v, want %v", m, n, lda, j, y[j], want)
				}
			}
			if y[n] != sentinel {
				t.Fatalf("m=%d n=%d: entry past y changed", m, n)
			}
		}
	}
}

// gemvT4Layout draws the strides of GemvT4's four vectors of length m: one
// after the other, with strided entries, or interleaved (ldx < incx).
func gemvT4Layout(rng *rand.Rand, m int) (ldx, incx int) {
	switch rng.IntN(3) {
	case 0:
		return m + rng.IntN(2)*(1+rng.IntN(3)), 1
	case 1:
		incx = 2 + rng.IntN(3)
		return max(0, (m-1)*incx) + 1 + rng.IntN(3), incx
	default:
		ldx = 1 + rng.IntN(2)
		return ldx, 4*ldx + rng.IntN(5)
	}
}

// gemvT4Case is a random GemvT4 problem: an m×n matrix a (row stride lda)
// and four vectors x (gemvT4Layout's ldx, incx), with NaN in every entry
// not named, and an output stride ldy.
type gemvT4Case struct {
	name                string
	a, x                []float64
	lda, ldx, incx, ldy int
}

func newGemvT4Case(rng *rand.Rand, m, n int) gemvT4Case {
	c := gemvT4Case{lda: n + rng.IntN(2)*(1+rng.IntN(9)), ldy: n + rng.IntN(2)*(1+rng.IntN(9))}
	c.ldx, c.incx = gemvT4Layout(rng, m)
	c.name = fmt.Sprintf("m=%d/n=%d/lda=%d/ldy=%d/ldx=%d/incx=%d", m, n, c.lda, c.ldy, c.ldx, c.incx)
	c.a = filled(max(0, (m-1)*c.lda+n), math.NaN())
	for i := range m {
		for j := range n {
			c.a[i*c.lda+j] = entry(rng)
		}
	}
	c.x = filled(3*c.ldx+max(0, (m-1)*c.incx)+1, math.NaN())
	for v := range 4 {
		for i := range m {
			c.x[v*c.ldx+i*c.incx] = entry(rng)
		}
	}
	return c
}

func TestGemvT4(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, m := range []int{0, 1, 2, 3, 5, 17, 30, 60} {
		for n := 0; n <= 70; n++ {
			c := newGemvT4Case(rng, m, n)
			name, a, lda, x, ldx, incx, ldy := c.name, c.a, c.lda, c.x, c.ldx, c.incx, c.ldy
			ybuf := filled(1+3*ldy+n+1, sentinel)
			y := ybuf[1 : 1+3*ldy+n]
			for v := range 4 {
				for j := range n {
					y[v*ldy+j] = math.NaN()
				}
			}
			GemvT4(m, n, a, lda, x, ldx, incx, y, ldy)
			for v := range 4 {
				for j := range n {
					var want, mag float64
					for i := range m {
						p := x[v*ldx+i*incx] * a[i*lda+j]
						want += p
						mag += math.Abs(p)
					}
					if got := y[v*ldy+j]; !withinSum(got, want, mag, m) {
						t.Fatalf("%s: y[%d][%d] = %v, want %v", name, v, j, got, want)
					}
				}
			}
			for i, o := range ybuf {
				if r := i - 1; r >= 0 && r < 3*ldy+n && r%ldy < n {
					continue
				}
				if o != sentinel {
					t.Fatalf("%s: entry %d outside the output rows changed to %v", name, i-1, o)
				}
			}
		}
	}
}

// TestGemvT4Add checks, in every build, that GemvT4Add continues GemvT4's
// sums: GemvT4 over the first k rows then GemvT4Add over the rest gives the
// bits of GemvT4 over all rows, for every k; and that it touches only the
// output entries named.
func TestGemvT4Add(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for _, m := range []int{1, 2, 3, 5, 17, 30, 60} {
		for n := 1; n <= 70; n += 1 + n/8 {
			c := newGemvT4Case(rng, m, n)
			name, a, lda, x, ldx, incx, ldy := c.name, c.a, c.lda, c.x, c.ldx, c.incx, c.ldy
			whole := filled(3*ldy+n, sentinel)
			GemvT4(m, n, a, lda, x, ldx, incx, whole, ldy)
			for k := 0; k <= m; k++ {
				ybuf := filled(1+3*ldy+n+1, sentinel)
				y := ybuf[1 : 1+3*ldy+n]
				GemvT4(k, n, a, lda, x, ldx, incx, y, ldy)
				GemvT4Add(m-k, n, a[min(k*lda, len(a)):], lda, x[min(k*incx, len(x)):], ldx, incx, y, ldy)
				if !sameBits(y, whole) {
					t.Fatalf("%s: rows split at %d: %v, one pass %v", name, k, y, whole)
				}
				if ybuf[0] != sentinel || ybuf[len(ybuf)-1] != sentinel {
					t.Fatalf("%s: an entry outside y changed", name)
				}
			}
		}
	}
}

// adamTestVec draws n entries spread over 2⁻¹⁰…2¹⁰ in magnitude (all
// non-negative when abs is set, as second moments are).
func adamTestVec(rng *rand.Rand, n int, abs bool) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = rng.NormFloat64() * math.Exp2(float64(rng.IntN(21)-10))
		if abs {
			s[i] = math.Abs(s[i])
		}
	}
	return s
}

// testAdamCoef returns Adam's coefficients at step t with learning rate lr
// (β₁ = 0.9, β₂ = 0.999, ε = 1e-8, bias-corrected).
func testAdamCoef(lr float64, t int) AdamCoef {
	c1 := 1 - math.Pow(0.9, float64(t))
	sc2 := math.Sqrt(1 - math.Pow(0.999, float64(t)))
	return AdamCoef{Beta1: 0.9, Beta1c: 1 - 0.9, Beta2: 0.999, Beta2c: 1 - 0.999, Step: lr * sc2 / c1, Eps: 1e-8 * sc2}
}

// TestAdam checks Adam bit for bit against the update written out entry by
// entry, in every build (no fused multiply-adds anywhere), and its sum
// against the plain sum of the new x.
func TestAdam(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for n := 0; n <= 70; n++ {
		for _, step := range []int{1, 2, 17, 5000} {
			c := testAdamCoef([]float64{0.01, 0.1, 3e-4}[rng.IntN(3)], step)
			x, m, v, g := adamTestVec(rng, n, false), adamTestVec(rng, n, false), adamTestVec(rng, n, true), adamTestVec(rng, n, false)
			if n > 0 && step == 1 {
				v[0], g[0] = 0, 0 // the denominator's ε alone
			}
			wx, wm, wv := append([]float64(nil), x...), append([]float64(nil), m...), append([]float64(nil), v...)
			var want, mag float64
			for i, gi := range g {
				wm[i] = float64(c.Beta1*wm[i]) + float64(c.Beta1c*gi)
				wv[i] = float64(c.Beta2*wv[i]) + float64(float64(c.Beta2c*gi)*gi)
				wx[i] += float64(c.Step*wm[i]) / (math.Sqrt(wv[i]) + c.Eps)
				want += wx[i]
				mag += math.Abs(wx[i])
			}
			g0 := append([]float64(nil), g...)
			sum := Adam(x, m, v, g, &c)
			name := fmt.Sprintf("n=%d t=%d", n, step)
			if !sameBits(x, wx) || !sameBits(m, wm) || !sameBits(v, wv) {
				t.Fatalf("%s: x, m or v differ from the update entry by entry", name)
			}
			if !sameBits(g, g0) {
				t.Fatalf("%s: g modified", name)
			}
			if !withinSum(sum, want, mag, n) {
				t.Fatalf("%s: sum %v, want %v", name, sum, want)
			}
		}
	}
}

// panicCase is a call that must panic with a message starting with
// "f64: " and the name of the routine.
type panicCase struct {
	name string
	f    func()
}

// expectPanics runs the cases.
func expectPanics(t *testing.T, cases []panicCase) {
	t.Helper()
	for _, tc := range cases {
		func() {
			defer func() {
				r := recover()
				s, ok := r.(string)
				if !ok || !strings.HasPrefix(s, "f64: "+tc.name+": ") {
					t.Errorf("%s: panic %v, want one starting with %q", tc.name, r, "f64: "+tc.name+": ")
				}
			}()
			tc.f()
		}()
	}
}

// TestKernelPanics checks that the exported kernels refuse short slices
// and bad strides with a panic naming the kernel.
func TestKernelPanics(t *testing.T) {
	a, x, y := make([]float64, 40), make([]float64, 10), make([]float64, 40)
	var y4 [4]float64
	c := testAdamCoef(0.01, 1)
	expectPanics(t, []panicCase{
		{"AxpyUnitary", func() { AxpyUnitary(1, x, y[:9]) }},
		{"GemvN4", func() { GemvN4(a, 9, x, &y4) }},
		{"GemvN4", func() { GemvN4(a[:39], 10, x, &y4) }},
		{"GemvT", func() { GemvT(a, 3, x[:2], y[:4]) }},
		{"GemvT", func() { GemvT(a[:35], 4, x, y[:4]) }},
		{"GemvT4", func() { GemvT4(2, 4, a, 3, x, 2, 1, y, 4) }},
		{"GemvT4", func() { GemvT4(2, 4, a, 4, x, 2, 0, y, 4) }},
		{"GemvT4", func() { GemvT4(2, 4, a, 4, x, 2, 1, y, 3) }},
		{"GemvT4", func() { GemvT4(2, 4, a, 4, x[:7], 2, 1, y, 4) }},
		{"GemvT4", func() { GemvT4(2, 4, a, 4, x, 2, 1, y[:15], 4) }},
		{"GemvT4", func() { GemvT4(11, 4, a, 4, x, 0, 1, y, 4) }},
		{"GemvT4Add", func() { GemvT4Add(2, 4, a, 3, x, 2, 1, y, 4) }},
		{"GemvT4Add", func() { GemvT4Add(2, 4, a, 4, x, 2, 1, y[:15], 4) }},
		{"GemvT4Add", func() { GemvT4Add(11, 4, a, 4, x, 0, 1, y, 4) }},
		{"GemmNN", func() { GemmNN(-1, 4, 2, a, 2, x, 4, y, 4) }},
		{"GemmNN", func() { GemmNN(2, 4, 3, a, 2, x, 4, y, 4) }},
		{"GemmNN", func() { GemmNN(2, 4, 2, a, 2, x, 3, y, 4) }},
		{"GemmNN", func() { GemmNN(2, 4, 2, a, 2, x, 4, y, 3) }},
		{"GemmNN", func() { GemmNN(5, 4, 2, a[:9], 2, x, 4, y, 4) }},
		{"GemmNN", func() { GemmNN(2, 4, 3, a, 3, x[:9], 4, y, 4) }},
		{"GemmNN", func() { GemmNN(2, 4, 2, a, 2, x, 4, y[:7], 4) }},
		{"Adam", func() { Adam(x[:3], y, y, x, &c) }},
	})
}

func TestPrefetch(t *testing.T) {
	// Whatever the build, Prefetch leaves the values as they were.
	x := []float64{1, -2, math.Inf(1), math.NaN(), 5, 6, 7, 8, 9}
	want := append([]float64(nil), x...)
	for lo := 0; lo <= len(x); lo++ {
		Prefetch(x[lo:])
		Prefetch(x[lo:lo])
	}
	Prefetch([]float64(nil))
	b := []bool{true, false, true}
	Prefetch(b)
	Prefetch(b[1:2])
	if !b[0] || b[1] || !b[2] {
		t.Fatalf("Prefetch changed a []bool: %v", b)
	}
	if !sameBits(x, want) {
		t.Fatalf("Prefetch changed its slice: %v, want %v", x, want)
	}
}

// TestGemmNN checks GemmNN against the plain sum in every build, on every
// small shape (empty ones included), with NaN in the padding of A's and
// B's rows and a sentinel around and between C's rows.
func TestGemmNN(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for _, m := range append(seq(0, 9), 17, 64) {
		for _, n := range append(seq(0, 13), 16, 24, 31, 32, 40) {
			for _, k := range []int{0, 1, 2, 3, 5, 8, 10, 17, 50} {
				lda, ldb, ldc := k+rng.IntN(3), n+rng.IntN(3), n+rng.IntN(3)
				a := filled(max(0, (m-1)*lda+k), math.NaN())
				for i := range m {
					copy(a[i*lda:i*lda+k], randSlice(rng, k))
				}
				b := filled(max(0, (k-1)*ldb+n), math.NaN())
				for l := range k {
					copy(b[l*ldb:l*ldb+n], randSlice(rng, n))
				}
				size := max(0, (m-1)*ldc+n)
				cbuf := filled(size+2, sentinel)
				c := cbuf[1 : 1+size]
				for i := range m {
					for j := range n {
						c[i*ldc+j] = math.NaN() // overwritten, not accumulated
					}
				}
				GemmNN(m, n, k, a, lda, b, ldb, c, ldc)
				name := fmt.Sprintf("m=%d/n=%d/k=%d/lda=%d/ldb=%d/ldc=%d", m, n, k, lda, ldb, ldc)
				for i := range m {
					for j := range n {
						var want, mag float64
						for l := range k {
							p := a[i*lda+l] * b[l*ldb+j]
							want += p
							mag += math.Abs(p)
						}
						if got := c[i*ldc+j]; !withinSum(got, want, mag, k) {
							t.Fatalf("%s: c[%d][%d] = %v, want %v", name, i, j, got, want)
						}
					}
				}
				for i, o := range cbuf {
					if r := i - 1; r >= 0 && r < size && r%ldc < n {
						continue
					}
					if o != sentinel {
						t.Fatalf("%s: entry %d outside C's rows changed to %v", name, i-1, o)
					}
				}
			}
		}
	}
}

// schurRowsCase is a random SchurRows problem: W and P (n×k, row stride
// ld) with NaN in the padding of their rows, starting values a and column
// weights zn, izn (nonnegative, as norms are), out's row stride ldo.
type schurRowsCase struct {
	name            string
	n, k, ld, ldo   int
	a, w, p, zn, iz []float64
}

func newSchurRowsCase(rng *rand.Rand, n, k int, special bool) schurRowsCase {
	c := schurRowsCase{n: n, k: k, ld: k + rng.IntN(2)*(1+rng.IntN(5)), ldo: n + rng.IntN(2)*(1+rng.IntN(5))}
	c.name = fmt.Sprintf("n=%d/k=%d/ld=%d/ldo=%d", n, k, c.ld, c.ldo)
	c.a = randSlice(rng, n)
	size := max(0, (n-1)*c.ld+k)
	c.w, c.p = filled(size, math.NaN()), filled(size, math.NaN())
	for r := range n {
		copy(c.w[r*c.ld:r*c.ld+k], randSlice(rng, k))
		copy(c.p[r*c.ld:r*c.ld+k], randSlice(rng, k))
	}
	c.zn, c.iz = make([]float64, k), make([]float64, k)
	for i := range k {
		c.zn[i] = math.Abs(entry(rng))
		c.iz[i] = 1 / c.zn[i]
	}
	if special && n > 0 && k > 0 {
		vals := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), math.MaxFloat64}
		for range 1 + rng.IntN(3) {
			v, r, i := vals[rng.IntN(len(vals))], rng.IntN(n), rng.IntN(k)
			switch rng.IntN(4) {
			case 0:
				c.w[r*c.ld+i] = v
			case 1:
				c.p[r*c.ld+i] = v
			case 2:
				c.a[r] = v
			default:
				c.zn[i] = math.Abs(v)
			}
		}
		c.name += "/special"
	}
	return c
}

// want returns the five results of row r written out as SchurRows
// documents them.
func (c schurRowsCase) want(r int) [5]float64 {
	s, mag := c.a[r], math.Abs(c.a[r])
	var pn, w1, zp float64
	for i := range c.k {
		w, p := c.w[r*c.ld+i], c.p[r*c.ld+i]
		t := float64(w * p)
		s = s - t
		mag = mag + math.Abs(t)
		ap := float64(math.Abs(p) * c.zn[i])
		if math.Float64bits(ap) > math.Float64bits(pn) {
			pn = ap
		}
		w1 = w1 + float64(math.Abs(w)*c.iz[i])
		zp = zp + ap
	}
	return [5]float64{s, mag, pn, w1, zp}
}

// check compares out (five rows of stride ldo) with want, bit for bit
// (NaN for NaN), and that the entries between its rows kept the sentinel.
func (c schurRowsCase) check(t *testing.T, out []float64, who string) {
	t.Helper()
	for r := range c.n {
		want := c.want(r)
		for q, x := range want {
			got := out[q*c.ldo+r]
			if math.Float64bits(got) != math.Float64bits(x) && !(math.IsNaN(got) && math.IsNaN(x)) {
				t.Fatalf("%s: %s: result %d of row %d = %v, want %v", c.name, who, q, r, got, x)
			}
		}
	}
	for i, o := range out {
		if i%c.ldo >= c.n && o != sentinel {
			t.Fatalf("%s: %s: out[%d] between the rows changed to %v", c.name, who, i, o)
		}
	}
}

// TestSchurRows checks SchurRows against the loop its contract writes out,
// bit for bit, in every build: every n = 0…13 and more rows (the assembly's
// groups of four rows and the overlapping last group), k = 0…40 (chunks of
// four columns and every tail), padded strides, and NaN, ±Inf, ±0 and huge
// entries in W, P, a and zn.
func TestSchurRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	for _, n := range append(seq(0, 13), 16, 31, 64, 257) {
		for k := 0; k <= 40; k++ {
			for _, special := range []bool{false, true} {
				c := newSchurRowsCase(rng, n, k, special)
				out := filled(4*c.ldo+n, sentinel)
				SchurRows(n, k, c.a, c.w, c.p, c.ld, c.zn, c.iz, out, c.ldo)
				c.check(t, out, "SchurRows")
			}
		}
	}
	z := make([]float64, 10)
	expectPanics(t, []panicCase{
		{"SchurRows", func() { SchurRows(-1, 1, z, z, z, 1, z, z, z, 0) }},
		{"SchurRows", func() { SchurRows(1, 2, z, z, z, 1, z, z, z, 1) }},
		{"SchurRows", func() { SchurRows(1, 2, z, z, z, 2, z[:1], z, z, 1) }},
		{"SchurRows", func() { SchurRows(2, 2, z, z[:3], z, 2, z, z, z, 2) }},
		{"SchurRows", func() { SchurRows(2, 2, z, z, z, 2, z, z, z[:9], 2) }},
	})
}

// det4RowsWant is Det4Rows's expression written out for entry j.
func det4RowsWant(sc *[8]float64, in [9][]float64, j int) float64 {
	m0, m2, m3, m8, m12, b03, b02, b23 := sc[0], sc[1], sc[2], sc[3], sc[4], sc[5], sc[6], sc[7]
	m1, m4, m5, m6, m7, m9, m13, c13, c12 := in[0][j], in[1][j], in[2][j], in[3][j], in[4][j], in[5][j], in[6][j], in[7][j], in[8][j]
	t01 := float64(m0*m5) - float64(m1*m4)
	t02 := float64(m0*m6) - float64(m2*m4)
	t03 := float64(m0*m7) - float64(m3*m4)
	t12 := float64(m1*m6) - float64(m2*m5)
	t13 := float64(m1*m7) - float64(m3*m5)
	t23 := float64(m2*m7) - float64(m3*m6)
	b01 := float64(m8*m13) - float64(m9*m12)
	r := 0 + float64(t01*b23)
	r = r - float64(t02*c13)
	r = r + float64(t03*c12)
	r = r + float64(t12*b03)
	r = r - float64(t13*b02)
	return r + float64(t23*b01)
}

// newDet4RowsCase returns random scalars and nine inputs of length n (one
// entry longer, NaN, past the end), with NaN, ±Inf and ±0 put in some.
func newDet4RowsCase(rng *rand.Rand, n int, special bool) (*[8]float64, [9][]float64) {
	var sc [8]float64
	for i := range sc {
		sc[i] = entry(rng)
	}
	var in [9][]float64
	for i := range in {
		in[i] = append(randSlice(rng, n), math.NaN())
	}
	if special {
		vals := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1)}
		for range 1 + rng.IntN(3) {
			v := vals[rng.IntN(len(vals))]
			if rng.IntN(4) == 0 || n == 0 {
				sc[rng.IntN(8)] = v
			} else {
				in[rng.IntN(9)][rng.IntN(n)] = v
			}
		}
	}
	return &sc, in
}

// TestDet4Rows checks Det4Rows against its expression written out, bit
// for bit (NaN for NaN), for n = 0…40 (the assembly's groups of four and
// every tail), with NaN, ±Inf and ±0 among the entries, in every build.
func TestDet4Rows(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	for n := 0; n <= 40; n++ {
		for trial := range 6 {
			sc, in := newDet4RowsCase(rng, n, trial%2 == 1)
			r := filled(n+1, sentinel)
			Det4Rows(r[:n], sc, in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], in[8])
			for j := range n {
				want := det4RowsWant(sc, in, j)
				if math.Float64bits(r[j]) != math.Float64bits(want) && !(math.IsNaN(r[j]) && math.IsNaN(want)) {
					t.Fatalf("n=%d trial %d: r[%d] = %v, want %v", n, trial, j, r[j], want)
				}
			}
			if r[n] != sentinel {
				t.Fatalf("n=%d: entry past r written", n)
			}
		}
	}
	z := make([]float64, 4)
	expectPanics(t, []panicCase{
		{"Det4Rows", func() { Det4Rows(make([]float64, 5), &[8]float64{}, z, z, z, z, z, z, z, z, z) }},
	})
}
