package learn

import "golang.org/x/sys/cpu"

// useFMA selects the AVX2/FMA kernel of gemv: four 4-wide fused
// multiply-add chains, about twice the throughput of the SSE2 kernels of
// gonum's GEMV at the 2d×2d and d×d sizes of the online step.
var useFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dot4FMA sets out[q] = Σ_{j<n} a[q·stride+j]·x[j] for q = 0..3. The
// caller checks the bounds.
//
//go:noescape
func dot4FMA(a *float64, stride int, x *float64, n int, out *float64)

// axpyFMA sets y[j] += alpha·x[j] for j < n. The caller checks the bounds.
//
//go:noescape
func axpyFMA(alpha float64, x *float64, y *float64, n int)

// vecmatFMA sets out[j] = Σ_{l<rows} x[l]·m[l·ld+j] for j < cols (rows ≥
// 1). The caller checks the bounds.
//
//go:noescape
func vecmatFMA(out *float64, x *float64, m *float64, rows, cols, ld int)

// adamAVX is adamApply on n entries with k = [β₁, 1−β₁, β₂, 1−β₂, step,
// ε], with identical results; it returns the sum of the new x. The caller
// checks the bounds.
//
//go:noescape
func adamAVX(x, m, v, gr *float64, n int, k *float64) (sum float64)
