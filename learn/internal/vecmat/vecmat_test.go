package vecmat

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/f64"
)

// vecmatNUlp is the unit roundoff bound per term: a sum of rows products
// computed in any order, with or without fused multiply-adds, and then
// scaled, is within (rows+1)·u·Σ|terms| of the exact value (u = 2⁻⁵³), so
// two such computations differ by at most (rows+1)·2u·Σ|terms|.
const vecmatNUlp = 0x1p-52

// vecmatNSentinel marks entries of out that N must not touch.
const vecmatNSentinel = -7.25

// naiveVecmatN is the triple loop that N must match, with the bound
// Σ_l |alpha·x·m| on the rounding of each entry.
func naiveVecmatN(x []float64, ldx, nv int, m []float64, rows, cols, ld int, alpha float64) (want, mag []float64) {
	want = make([]float64, nv*cols)
	mag = make([]float64, nv*cols)
	for v := range nv {
		for j := range cols {
			var s, a float64
			for l := range rows {
				t := x[v*ldx+l] * m[l*ld+j]
				s += t
				a += math.Abs(t)
			}
			want[v*cols+j] = alpha * s
			mag[v*cols+j] = math.Abs(alpha) * a
		}
	}
	return want, mag
}

func TestVecmatN(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	nvs := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	rowss := []int{0, 1, 2, 3, 4, 5, 7, 30, 31, 60}
	colss := []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 30, 33, 60, 61}
	checked := 0
	for _, nv := range nvs {
		for _, rows := range rowss {
			for _, cols := range colss {
				// Padding of ld, ldo and ldx and alpha vary with the case.
				padM := rng.IntN(3) * rng.IntN(5)
				padO := rng.IntN(2) * (1 + rng.IntN(4))
				padX := rng.IntN(2) * (1 + rng.IntN(4))
				alpha := 1.0
				if rng.IntN(2) == 1 {
					alpha = -2
				}
				checkVecmatN(t, rng, nv, rows, cols, cols+padM, cols+padO, rows+padX, alpha)
				checked++
			}
		}
	}
	if checked != len(nvs)*len(rowss)*len(colss) {
		t.Fatalf("checked %d cases", checked)
	}
}

// checkVecmatN runs N on one random instance and compares it with the
// triple loop. Unused entries of m and x (the padding and a tail past the
// last row) hold NaN, so reading them spoils the result; out is NaN before
// the call in the written region and a sentinel elsewhere.
func checkVecmatN(t *testing.T, rng *rand.Rand, nv, rows, cols, ld, ldo, ldx int, alpha float64) {
	t.Helper()
	name := fmt.Sprintf("nv=%d/rows=%d/cols=%d/ld=%d/ldo=%d/ldx=%d/alpha=%g", nv, rows, cols, ld, ldo, ldx, alpha)
	nan := math.NaN()
	// Entries of mixed sign and magnitude, so that sums cancel.
	entry := func() float64 { return rng.NormFloat64() * math.Exp2(float64(rng.IntN(9)-4)) }

	mbuf := make([]float64, rows*ld+8)
	for i := range mbuf {
		mbuf[i] = nan
	}
	for l := range rows {
		for j := range cols {
			mbuf[l*ld+j] = entry()
		}
	}
	mlen := 0
	if rows > 0 {
		mlen = (rows-1)*ld + cols
	}
	m := mbuf[:mlen]

	xbuf := make([]float64, nv*ldx+8)
	for i := range xbuf {
		xbuf[i] = nan
	}
	for v := range nv {
		for l := range rows {
			xbuf[v*ldx+l] = entry()
		}
	}
	xlen := 0
	if nv > 0 {
		xlen = (nv-1)*ldx + rows
	}
	x := xbuf[:xlen]

	obuf := make([]float64, nv*ldo+8)
	for i := range obuf {
		obuf[i] = vecmatNSentinel
	}
	for v := range nv {
		for j := range cols {
			obuf[v*ldo+j] = nan
		}
	}
	olen := 0
	if nv > 0 {
		olen = (nv-1)*ldo + cols
	}
	out := obuf[:olen]

	mcopy := append([]float64(nil), mbuf...)
	xcopy := append([]float64(nil), xbuf...)
	want, mag := naiveVecmatN(xbuf, ldx, nv, mbuf, rows, cols, ld, alpha)

	N(out, ldo, x, ldx, nv, m, rows, cols, ld, alpha)

	for v := range nv {
		for j := range cols {
			got, w := obuf[v*ldo+j], want[v*cols+j]
			tol := float64(rows+1) * vecmatNUlp * mag[v*cols+j]
			if math.IsNaN(got) || math.Abs(got-w) > tol {
				t.Fatalf("%s: out[%d][%d] = %v, want %v (tolerance %.3g)", name, v, j, got, w, tol)
			}
		}
	}
	for i, o := range obuf {
		v, j := i/max(ldo, 1), i%max(ldo, 1)
		if v < nv && j < cols {
			continue
		}
		if o != vecmatNSentinel {
			t.Fatalf("%s: out[%d] outside the output rows changed to %v", name, i, o)
		}
	}
	if !sameBits(mbuf, mcopy) || !sameBits(xbuf, xcopy) {
		t.Fatalf("%s: m or x modified", name)
	}
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

// TestVecmatNKernels checks which kernel computes each of N's rows,
// bit for bit: the four-vector kernel (f64.GemvT4, whose entries depend
// only on their own vector) for the vectors of groups of four, for the
// overlapping last group when three are left, and for two or three
// vectors padded to four; the one-vector kernel (f64.GemvT) for the one or
// two left and for a single vector; then scaled by alpha.
func TestVecmatNKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for nv := 1; nv <= 9; nv++ {
		for _, rows := range []int{1, 2, 5, 17, 33} {
			for _, cols := range []int{1, 3, 4, 7, 12, 13, 30, 33, 41} {
				ld, ldo, ldx := cols+rng.IntN(3), cols+rng.IntN(2), rows+rng.IntN(2)
				alpha := []float64{1, -0.5}[rng.IntN(2)]
				m := make([]float64, (rows-1)*ld+cols)
				for i := range m {
					m[i] = rng.NormFloat64()
				}
				x := make([]float64, (nv-1)*ldx+rows)
				for i := range x {
					x[i] = rng.NormFloat64()
				}
				out := make([]float64, (nv-1)*ldo+cols)
				N(out, ldo, x, ldx, nv, m, rows, cols, ld, alpha)
				grouped := nv - nv%4
				switch {
				case nv%4 == 3 && nv > 4, nv < 4 && nv > 1 && rows <= vecmatPadRows && cols <= vecmatPadCols:
					grouped = nv
				}
				for v := range nv {
					want := make([]float64, 4*cols)
					if v < grouped {
						xs := make([]float64, 4*rows)
						copy(xs, x[v*ldx:v*ldx+rows])
						f64.GemvT4(rows, cols, m, ld, xs, rows, 1, want, cols)
					} else {
						f64.GemvT(m, ld, x[v*ldx:v*ldx+rows], want[:cols])
					}
					for j := range cols {
						w := want[j]
						if alpha != 1 {
							w *= alpha
						}
						if got := out[v*ldo+j]; math.Float64bits(got) != math.Float64bits(w) {
							t.Fatalf("nv=%d rows=%d cols=%d: out[%d][%d] = %v, want %v (grouped %v)", nv, rows, cols, v, j, got, w, v < grouped)
						}
					}
				}
			}
		}
	}
}

func TestVecmatNPanics(t *testing.T) {
	m := make([]float64, 12) // 3×4
	x := make([]float64, 6)  // 2×3
	out := make([]float64, 8)
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"negative nv", func() { N(out, 4, x, 3, -1, m, 3, 4, 4, 1) }},
		{"negative rows", func() { N(out, 4, x, 3, 2, m, -1, 4, 4, 1) }},
		{"ld below cols", func() { N(out, 4, x, 3, 2, m, 3, 4, 3, 1) }},
		{"ldo below cols", func() { N(out, 3, x, 3, 2, m, 3, 4, 4, 1) }},
		{"ldx below rows", func() { N(out, 4, x, 2, 2, m, 3, 4, 4, 1) }},
		{"out short", func() { N(out[:7], 4, x, 3, 2, m, 3, 4, 4, 1) }},
		{"x short", func() { N(out, 4, x[:5], 3, 2, m, 3, 4, 4, 1) }},
		{"m short", func() { N(out, 4, x, 3, 2, m[:11], 3, 4, 4, 1) }},
	} {
		func() {
			defer func() {
				r := recover()
				s, ok := r.(string)
				if !ok || !strings.HasPrefix(s, "vecmat: N: ") {
					t.Errorf("%s: panic %v, want one starting with \"vecmat: N: \"", c.name, r)
				}
			}()
			c.f()
		}()
	}
}

// BenchmarkVecmatN compares nv vectors times one matrix through N
// with nv separate vecmatLD calls.
func BenchmarkVecmatN(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ nv, n int }{{4, 60}, {4, 30}, {8, 60}, {7, 60}, {6, 60}, {5, 60}} {
		nv, rows, cols := c.nv, c.n, c.n
		m := make([]float64, rows*cols)
		for i := range m {
			m[i] = rng.NormFloat64()
		}
		x := make([]float64, nv*rows)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		out := make([]float64, nv*cols)
		prefix := fmt.Sprintf("nv=%d/rows=%d/cols=%d/method=", nv, rows, cols)
		b.Run(prefix+"N", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				N(out, cols, x, rows, nv, m, rows, cols, cols, 1)
			}
		})
		b.Run(prefix+"vecmat", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for v := range nv {
					LD(out[v*cols:(v+1)*cols], m, rows, cols, cols, x[v*rows:(v+1)*rows], 1)
				}
			}
		})
	}
}

// TestVecmatRoom checks that Room gives N's bits in the nv rows
// wanted (with the portable and the assembly kernels), leaves out alone past
// the fourth row, and refuses buffers without room for four vectors.
func TestVecmatRoom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, rows := range []int{1, 2, 3, 7, 30} {
		for _, cols := range []int{1, 5, 30, 33} {
			for nv := 1; nv <= 5; nv++ {
				ld, ldx, ldo := cols+rng.IntN(3), rows+rng.IntN(3), cols+rng.IntN(3)
				room := max(nv, 4)
				m := make([]float64, (rows-1)*ld+cols)
				x := make([]float64, (room-1)*ldx+rows)
				for i := range m {
					m[i] = rng.NormFloat64()
				}
				for i := range x {
					x[i] = rng.NormFloat64()
				}
				alpha := []float64{1, -1, 0.5}[rng.IntN(3)]
				want := make([]float64, (nv-1)*ldo+cols)
				N(want, ldo, x, ldx, nv, m, rows, cols, ld, alpha)
				got := make([]float64, room*ldo+1)
				for i := range got {
					got[i] = vecmatNSentinel
				}
				Room(got, ldo, x, ldx, nv, m, rows, cols, ld, alpha)
				for v := range nv {
					for j := range cols {
						if g, w := got[v*ldo+j], want[v*ldo+j]; math.Float64bits(g) != math.Float64bits(w) {
							t.Fatalf("rows %d cols %d nv %d: out[%d][%d] = %v, N %v", rows, cols, nv, v, j, g, w)
						}
					}
				}
				if got[len(got)-1] != vecmatNSentinel {
					t.Fatalf("rows %d cols %d nv %d: entry past the fourth row written", rows, cols, nv)
				}
			}
		}
	}
	m, x := make([]float64, 30*30), make([]float64, 30*4)
	require.Panics(t, func() { Room(make([]float64, 2*30), 30, x, 30, 2, m, 30, 30, 30, 1) }, "out without room")
	require.Panics(t, func() { Room(make([]float64, 4*30), 30, x[:2*30], 30, 2, m, 30, 30, 30, 1) }, "x without room")
}
