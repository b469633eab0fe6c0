package learn

import "golang.org/x/sys/cpu"

// useAVX512 selects the AVX-512 variants of the four-vector vecmat kernel
// (vecmatN) and of Adam's update: zmm registers of 8 doubles and opmask
// tails. They use AVX-512F instructions only (cpu.X86.HasAVX512F also
// means the OS saves the zmm and opmask state). They are only reached on
// paths that already take the AVX2/FMA kernels (useFMA), so clearing
// useFMA turns both off.
//
// Measured on a 2-core Sapphire Rapids Xeon (BenchmarkAVX512, medians of
// six interleaved runs, AVX2 time / AVX-512 time): vecmat4 30×30 1.66,
// 60×60 1.43, 4×60 1.46; Adam n = 30 1.12, n = 900 0.99 (both bound by
// the divider: the square roots and divisions of 8 lanes cost about what
// two 4-lane ones do); Online.Observe at d = 30 with only vecmatN
// switched, 1.08 (basket normaliser) and 0.98 (exact), within the noise of
// the shared machine. No loss from a lower AVX-512 clock shows, so the
// switch is on wherever the CPU has AVX-512F.
var useAVX512 = useFMA && cpu.X86.HasAVX512F

// vecmat4AVX512 is vecmat4FMA with AVX-512: the same contract (out[v·ldo+j]
// = Σ_{l<rows} x[v·ldx+l·incx]·m[l·ld+j] for v < 4, j < cols; rows, cols,
// incx ≥ 1;
// only the entries named are read or written; the caller checks the
// bounds) and the same summation order (row by row, fused multiply-adds),
// so the same bits.
//
//go:noescape
func vecmat4AVX512(out *float64, ldo int, x *float64, ldx int, m *float64, rows, cols, ld, incx int)

// adamAVX512 is adamAVX with AVX-512 on one or two sets of entries, with
// the gradient assembled in the kernel: Adam's update on n entries of x, m,
// v with gradient g = gr + sc·kz (one fused multiply-add, as axpyFMA), then
// on n2 entries of x2, m2, v2 with g = gr2 + sc·kz2 (n2 = 0: one set; the
// second pointers are then not dereferenced), k = [β₁, 1−β₁, β₂, 1−β₂,
// step, ε, sc], each entry bit for bit as adamApplyGo on g. With sc = 0
// and kz = gr the gradient is gr itself (for finite gr). It returns the sum
// of the new x of both sets, summed in another order than adamApplyGo's, so
// only its finiteness is exact. The caller checks the bounds; n and n2 may
// be 0.
//
//go:noescape
func adamAVX512(x, m, v, gr, kz *float64, n int, x2, m2, v2, gr2, kz2 *float64, n2 int, k *float64) (sum float64)
