//go:build amd64 && linux

package learn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/cpu"
)

// hasAVX512 reports whether this CPU runs the AVX-512 kernels.
func hasAVX512() bool {
	return cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasAVX512F
}

// withAVX512 runs f with the AVX2/FMA kernels and, where the CPU has it,
// with the AVX-512 ones (useAVX512), restoring both switches afterwards.
func withAVX512(t *testing.T, f func(t *testing.T)) {
	savedFMA, saved512 := useFMA, useAVX512
	defer func() { useFMA, useAVX512 = savedFMA, saved512 }()
	if !(cpu.X86.HasAVX2 && cpu.X86.HasFMA) {
		t.Skip("no AVX2/FMA on this CPU")
	}
	for _, avx := range []bool{false, true} {
		if avx && !hasAVX512() {
			t.Log("no AVX-512 on this CPU: AVX-512 kernels not tested")
			continue
		}
		useFMA, useAVX512 = true, avx
		t.Run(fmt.Sprintf("avx512=%v", avx), f)
	}
}

// guarded returns a slice of n float64 that ends exactly at the start of
// an inaccessible page, so a read or write one entry past it faults. The
// mapping is released when the test ends.
func guarded(t *testing.T, n int) []float64 {
	t.Helper()
	page := syscall.Getpagesize()
	size := (n*8+page-1)/page*page + page
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[size-page:], syscall.PROT_NONE); err != nil {
		t.Fatalf("mprotect: %v", err)
	}
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(&mem[size-page-n*8])), n)
}

// TestVecmat4Kernels calls the four-vector kernels (vecmat4FMA and, where
// the CPU has it, vecmat4AVX512) directly: bitwise equal to the sum in the
// kernels' order (row by row, math.FMA), within the rounding bound of the
// plain triple loop, with padded strides whose unused entries hold NaN,
// vectors stored one after the other (incx = 1), with strided entries, or
// interleaved (ldx < incx, as in Online.pendProduct), sentinels around the
// output rows, and m, x and out each ending at an inaccessible page (so a
// masked lane that is read or written faults).
func TestVecmat4Kernels(t *testing.T) {
	if !(cpu.X86.HasAVX2 && cpu.X86.HasFMA) {
		t.Skip("no AVX2/FMA on this CPU")
	}
	kernels := map[string]func(out *float64, ldo int, x *float64, ldx int, m *float64, rows, cols, ld, incx int){
		"fma": vecmat4FMA,
	}
	if hasAVX512() {
		kernels["avx512"] = vecmat4AVX512
	} else {
		t.Log("no AVX-512 on this CPU: vecmat4AVX512 not tested")
	}
	rng := rand.New(rand.NewPCG(31, 32))
	nan := math.NaN()
	entry := func() float64 { return rng.NormFloat64() * math.Exp2(float64(rng.IntN(9)-4)) }
	for _, rows := range []int{1, 2, 3, 5, 17, 30, 60} {
		for cols := 1; cols <= 70; cols++ {
			ld := cols + rng.IntN(2)*(1+rng.IntN(9))
			ldo := cols + rng.IntN(2)*(1+rng.IntN(9))
			var ldx, incx int
			switch rng.IntN(3) {
			case 0: // one vector after the other
				ldx, incx = rows+rng.IntN(2)*(1+rng.IntN(3)), 1
			case 1: // strided entries
				incx = 2 + rng.IntN(3)
				ldx = (rows-1)*incx + 1 + rng.IntN(3)
			default: // interleaved
				ldx = 1 + rng.IntN(2)
				incx = 4*ldx + rng.IntN(5)
			}
			xlen := 3*ldx + (rows-1)*incx + 1
			name := fmt.Sprintf("rows=%d/cols=%d/ld=%d/ldo=%d/ldx=%d/incx=%d", rows, cols, ld, ldo, ldx, incx)

			m := guarded(t, (rows-1)*ld+cols)
			for i := range m {
				m[i] = nan
			}
			for l := range rows {
				for j := range cols {
					m[l*ld+j] = entry()
				}
			}
			x := guarded(t, xlen)
			for i := range x {
				x[i] = nan
			}
			for v := range 4 {
				for l := range rows {
					x[v*ldx+l*incx] = entry()
				}
			}
			for kname, kernel := range kernels {
				// out: a sentinel before the first row, the rows, and the
				// guard page right after the last row's cols entries.
				obuf := guarded(t, 1+3*ldo+cols)
				for i := range obuf {
					obuf[i] = vecmatNSentinel
				}
				out := obuf[1:]
				kernel(&out[0], ldo, &x[0], ldx, &m[0], rows, cols, ld, incx)
				for v := range 4 {
					for j := range cols {
						var s, naive, mag float64
						for l := range rows {
							xl := x[v*ldx+l*incx]
							p := xl * m[l*ld+j]
							s = math.FMA(xl, m[l*ld+j], s)
							naive += p
							mag += math.Abs(p)
						}
						got := out[v*ldo+j]
						if math.Float64bits(got) != math.Float64bits(s) {
							t.Fatalf("%s/%s: out[%d][%d] = %v, want %v (FMA order)", kname, name, v, j, got, s)
						}
						if tol := float64(rows+1) * vecmatNUlp * mag; math.Abs(got-naive) > tol {
							t.Fatalf("%s/%s: out[%d][%d] = %v, naive %v (tolerance %.3g)", kname, name, v, j, got, naive, tol)
						}
					}
				}
				if obuf[0] != vecmatNSentinel {
					t.Fatalf("%s/%s: entry before out changed to %v", kname, name, obuf[0])
				}
				for i, o := range out {
					if i%ldo < cols {
						continue
					}
					if o != vecmatNSentinel {
						t.Fatalf("%s/%s: out[%d] between the rows changed to %v", kname, name, i, o)
					}
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

// TestAdamAVX512TwoSets checks the kernel on two sets of entries (of
// lengths 0..70 and others), with gradients gr + sc·kz assembled in it, bit
// for bit against adamApplyGo on each set given the fused gr + sc·kz
// (math.FMA), with every array ending at an inaccessible page, and that its
// sum is that of both sets up to rounding.
func TestAdamAVX512TwoSets(t *testing.T) {
	if !hasAVX512() {
		t.Skip("no AVX-512 on this CPU")
	}
	rng := rand.New(rand.NewPCG(43, 44))
	mk := func(n int, abs bool) []float64 { return adamTestVec(rng, n, abs) }
	var dummy [1]float64
	ptr := func(s []float64) *float64 {
		if len(s) == 0 {
			return &dummy[0]
		}
		return &s[0]
	}
	for n := 0; n <= 70; n++ {
		for _, n2 := range []int{n, 0, (7*n + 3) % 71} {
			step := []int64{1, 17, adamTableLen + 5}[rng.IntN(3)]
			st, eps := adamCoef(0.01, step)
			// The gradient is gr + sc·kz: sc 0 half the time.
			sc := 0.0
			if rng.IntN(2) == 0 {
				sc = rng.NormFloat64() * math.Exp2(float64(rng.IntN(11)-5))
			}
			k := [7]float64{adamBeta1, 1 - adamBeta1, adamBeta2, 1 - adamBeta2, st, eps, sc}
			lens := [2]int{n, n2}
			var sets [2][5][]float64 // x, m, v, gr, kz per set: guarded copies
			var refs [2][3][]float64 // x, m, v after adamApplyGo
			var inits [2][5][]float64
			refSum := 0.0
			for q := range sets {
				init := [5][]float64{mk(lens[q], false), mk(lens[q], false), mk(lens[q], true), mk(lens[q], false), mk(lens[q], false)}
				for a := range init {
					sets[q][a] = guarded(t, lens[q])
					copy(sets[q][a], init[a])
				}
				inits[q] = init
				g := make([]float64, lens[q])
				for i := range g {
					g[i] = math.FMA(sc, init[4][i], init[3][i])
				}
				x, m, v := append([]float64(nil), init[0]...), append([]float64(nil), init[1]...), append([]float64(nil), init[2]...)
				refSum += adamApplyGo(x, m, v, g, st, eps)
				refs[q] = [3][]float64{x, m, v}
			}
			a, b := sets[0], sets[1]
			sum := adamAVX512(ptr(a[0]), ptr(a[1]), ptr(a[2]), ptr(a[3]), ptr(a[4]), n,
				ptr(b[0]), ptr(b[1]), ptr(b[2]), ptr(b[3]), ptr(b[4]), n2, &k[0])
			for q := range sets {
				for i, what := range []string{"x", "m", "v"} {
					if !sameBits(sets[q][i], refs[q][i]) {
						t.Fatalf("n=%d n2=%d t=%d sc=%g set %d: %s = %v, adamApplyGo %v", n, n2, step, sc, q, what, sets[q][i], refs[q][i])
					}
				}
				if !sameBits(sets[q][3], inits[q][3]) || !sameBits(sets[q][4], inits[q][4]) {
					t.Fatalf("n=%d n2=%d set %d: gr or kz modified", n, n2, q)
				}
			}
			mag := 0.0
			for q := range refs {
				for _, x := range refs[q][0] {
					mag += math.Abs(x)
				}
			}
			if math.Abs(sum-refSum) > 1e-14*mag+1e-300 {
				t.Fatalf("n=%d n2=%d t=%d: sum %v, want %v", n, n2, step, sum, refSum)
			}
		}
	}
}

// TestVecmatNAVX512 runs the vecmatN tests with and without the AVX-512
// kernel.
func TestVecmatNAVX512(t *testing.T) {
	withAVX512(t, func(t *testing.T) {
		t.Run("VecmatN", TestVecmatN)
		t.Run("KernelOrder", TestVecmatNKernelOrder)
	})
}

// TestAdamAVX512 checks the AVX-512 Adam kernel bit for bit against
// adamApplyGo and adamAVX for n = 0..70, at step counts inside and past
// the table of adamCoef, with every array ending at an inaccessible page
// (the masked tail reads and writes nothing past entry n−1).
func TestAdamAVX512(t *testing.T) {
	if !hasAVX512() {
		t.Skip("no AVX-512 on this CPU")
	}
	rng := rand.New(rand.NewPCG(41, 42))
	for n := 0; n <= 70; n++ {
		for _, step := range []int64{1, 2, 3, 17, 1000, adamTableLen + 5} {
			lr := []float64{0.01, 0.1, 3e-4}[rng.IntN(3)]
			st, eps := adamCoef(lr, step)
			name := fmt.Sprintf("n=%d/t=%d/lr=%g", n, step, lr)
			mk := func(abs bool) []float64 { return adamTestVec(rng, n, abs) }
			x0, m0, v0, g0 := mk(false), mk(false), mk(true), mk(false)
			if n > 0 && step == 1 {
				// A zero second moment and gradient: the ε of the
				// denominator alone.
				v0[0], g0[0] = 0, 0
			}
			arrays := make([][]float64, 4)
			for i, s := range [][]float64{x0, m0, v0, g0} {
				arrays[i] = guarded(t, n)
				copy(arrays[i], s)
			}
			x, m, v, g := arrays[0], arrays[1], arrays[2], arrays[3]
			x1, m1, v1 := append([]float64(nil), x0...), append([]float64(nil), m0...), append([]float64(nil), v0...)
			x2, m2, v2 := append([]float64(nil), x0...), append([]float64(nil), m0...), append([]float64(nil), v0...)

			// The gradient as gr + 0·gr (adamApply's call).
			k := [7]float64{adamBeta1, 1 - adamBeta1, adamBeta2, 1 - adamBeta2, st, eps, 0}
			var sum float64
			if n == 0 {
				var dummy [1]float64
				d := &dummy[0]
				sum = adamAVX512(d, d, d, d, d, 0, d, d, d, d, d, 0, &k[0])
			} else {
				sum = adamAVX512(&x[0], &m[0], &v[0], &g[0], &g[0], n, &x[0], &m[0], &v[0], &g[0], &g[0], 0, &k[0])
			}
			sumGo := adamApplyGo(x1, m1, v1, g0, st, eps)
			if n > 0 {
				adamAVX(&x2[0], &m2[0], &v2[0], &g0[0], n, &k[0])
			}
			for _, c := range []struct {
				what          string
				got, go_, avx []float64
			}{{"x", x, x1, x2}, {"m", m, m1, m2}, {"v", v, v1, v2}} {
				if !sameBits(c.got, c.go_) {
					t.Fatalf("%s: %s = %v, adamApplyGo %v", name, c.what, c.got, c.go_)
				}
				if !sameBits(c.got, c.avx) {
					t.Fatalf("%s: %s = %v, adamAVX %v", name, c.what, c.got, c.avx)
				}
			}
			if !sameBits(g, g0) {
				t.Fatalf("%s: g modified", name)
			}
			mag := 0.0
			for _, xi := range x1 {
				mag += math.Abs(xi)
			}
			if !finite(sum) || math.Abs(sum-sumGo) > float64(n+1)*0x1p-52*mag {
				t.Fatalf("%s: sum %v, adamApplyGo %v", name, sum, sumGo)
			}
		}
	}
}

// TestAdamApplyAVX512 runs the adamApply test with and without AVX-512.
func TestAdamApplyAVX512(t *testing.T) {
	withAVX512(t, func(t *testing.T) {
		t.Run("AdamApplyIsAdamStep", TestAdamApplyIsAdamStep)
	})
}

// BenchmarkAVX512 compares the AVX2 and AVX-512 kernels at the shapes of
// the online learner (d = 30: 2d = 60), each AVX2 case followed by its
// AVX-512 twin, and then Online.Observe at d = 30 with useAVX512 off and
// on (the kernels the switch reaches).
func BenchmarkAVX512(b *testing.B) {
	if !hasAVX512() {
		b.Skip("no AVX-512 on this CPU")
	}
	rng := rand.New(rand.NewPCG(51, 52))
	isas := []string{"avx2", "avx512"}
	for _, c := range []struct{ rows, cols int }{{30, 30}, {60, 60}, {4, 60}} {
		rows, cols := c.rows, c.cols
		m := make([]float64, rows*cols)
		for i := range m {
			m[i] = rng.NormFloat64()
		}
		x := make([]float64, 4*rows)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		out := make([]float64, 4*cols)
		for _, isa := range isas {
			kernel := vecmat4FMA
			if isa == "avx512" {
				kernel = vecmat4AVX512
			}
			b.Run(fmt.Sprintf("kernel=vecmat4/rows=%d/cols=%d/isa=%s", rows, cols, isa), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					kernel(&out[0], cols, &x[0], rows, &m[0], rows, cols, cols, 1)
				}
			})
		}
	}
	for _, n := range []int{30, 900} {
		st, eps := adamCoef(0.01, 10)
		k := [7]float64{adamBeta1, 1 - adamBeta1, adamBeta2, 1 - adamBeta2, st, eps, 0}
		x, m, v, g := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range g {
			x[i], m[i], v[i], g[i] = rng.NormFloat64(), rng.NormFloat64(), math.Abs(rng.NormFloat64()), rng.NormFloat64()
		}
		for _, isa := range isas {
			kernel := adamAVX
			if isa == "avx512" {
				kernel = func(x, m, v, g *float64, n int, k *float64) float64 {
					return adamAVX512(x, m, v, g, g, n, x, m, v, g, g, 0, k)
				}
			}
			b.Run(fmt.Sprintf("kernel=adam/n=%d/isa=%s", n, isa), func(b *testing.B) {
				b.ReportAllocs()
				var s float64
				for b.Loop() {
					s += kernel(&x[0], &m[0], &v[0], &g[0], n, &k[0])
				}
				if !finite(s) {
					b.Fatal("sum not finite")
				}
			})
		}
	}
	for _, norm := range []Normalizer{NormBasket, NormExact} {
		for _, isa := range isas {
			b.Run(fmt.Sprintf("kernel=observe/d=30/norm=%v/isa=%s", norm, isa), func(b *testing.B) {
				saved := useAVX512
				defer func() { useAVX512 = saved }()
				useAVX512 = isa == "avx512"
				baskets := benchBaskets(100, 4096, 1)
				o, err := NewOnline(OnlineOptions{D: 30, N: 100, Normalizer: norm})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if err := o.Observe(baskets[i%len(baskets)]); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// TestOnlineSameWithAVX512 trains the online learner with the AVX2 kernels
// and with the AVX-512 ones — where, with Adam, V ≠ B, the exact
// normaliser and no regulariser, the kernel also assembles each item's
// gradient (adamGrad2) — and requires the same parameters bit for bit, for
// that configuration and the ones that take the separate assembly.
func TestOnlineSameWithAVX512(t *testing.T) {
	if !hasAVX512() {
		t.Skip("no AVX-512 on this CPU")
	}
	baskets := plantedBaskets(40, 400, 17)
	for _, opt := range []OnlineOptions{
		{D: 7, Seed: 5, FactorEvery: 9, Lag: 5},
		{D: 7, Seed: 5, FactorEvery: 9, Lag: 5, Shared: true},
		{D: 7, Seed: 5, FactorEvery: 9, Lag: 5, Alpha: 0.01, Beta: 0.02},
		{D: 30, Seed: 6, FactorEvery: 20},
	} {
		var got []*Params
		withAVX512(t, func(t *testing.T) {
			o, err := NewOnline(opt)
			require.NoError(t, err)
			// Run returns with no job in flight (a job would read the
			// kernel switches that withAVX512 resets).
			res, err := o.Run(SliceSource(baskets), OnlineRun{})
			require.NoError(t, err)
			got = append(got, res.Params)
		})
		require.Len(t, got, 2)
		require.True(t, sameBits(got[0].V, got[1].V), "%+v: V", opt)
		require.True(t, sameBits(got[0].B, got[1].B), "%+v: B", opt)
		require.True(t, sameBits(got[0].D, got[1].D), "%+v: D", opt)
	}
}
