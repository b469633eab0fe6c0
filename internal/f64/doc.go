// Package f64 holds the small dense float64 kernels that ndpp's learners
// and oracle run at the sizes of one basket, one item or one 2d×2d
// normaliser (vectors of tens to a few hundred entries): where a call into
// a BLAS costs more than the operation, and where fused multiply-adds on
// 4-wide vectors are about twice as fast as gonum's SSE2 kernels.
//
// # Kernels
//
// Named after the BLAS operation each computes; matrices are row-major
// slices with a row stride (lda, ldy), and each kernel's doc comment states
// its summation order:
//
//	AxpyUnitary  y += alpha·x
//	GemvN4       four dot products: y = A x for a 4×n A
//	GemvT        y = Aᵀ x (x times a row-major A)
//	GemvT4       four vectors times one A, in one pass over A
//	GemvT4Add    the same, added to y (sums continued, for A in blocks)
//	GemmNN       C = A·B for a B of few columns (many rows of A at a time)
//	SchurRows    per row of W and P: a − Σ w_i p_i and its error sums
//	             (Σ|w_i p_i|, max |p_i|·zn_i, Σ |w_i|·izn_i, Σ |p_i|·zn_i)
//	Det4Rows     a row of 4×4 determinants by Laplace expansion, the
//	             bottom rows' minors given
//	Adam         Adam's update of an optimiser's block, returning Σ x
//	Prefetch     a hint to bring a slice's cache lines into the caches
//
// and, inside the package, the two kernels of the blocked inverse: ger4,
// a rank-4 update A += X Y (X m×4, Y 4×n), and gjPanel4, one Gauss–Jordan
// step on a panel of four columns with the next pivot search.
//
// Arguments are checked: sizes, strides and slice lengths that do not fit
// the contract are programmer errors and panic ("f64: Kernel: …"). Only
// the entries a contract names are read or written.
//
// # Inverse
//
// Inverse overwrites a small k×k matrix with its inverse (Gauss–Jordan
// elimination with partial pivoting) and returns log|det| and its sign;
// InverseSign does the same without the logarithm. From BlockedMin on the
// elimination is blocked (panels of four columns, the other columns
// updated by one rank-4 pass per panel); below, it goes one column at a
// time. Both choose the same pivots, so log|det| and sign agree with an
// LU's; the inverse agrees up to rounding. Which one runs depends only on
// the order.
//
// # Selection
//
// Every kernel has an amd64 assembly implementation (AVX2 and FMA) and a
// Go twin with the same contract and summation order. The assembly is
// chosen once, at start-up, when the CPU has AVX2 and FMA; otherwise, on
// other architectures, and in builds with the tag noasm, the Go twins run.
// The twins round each product before adding it where the assembly fuses
// the two (the compiler may fuse them on targets where it does so), so
// results differ between the two by rounding; within one build on one
// kind of CPU they are deterministic. Adam, SchurRows and Det4Rows
// have no fused operation: their twins give the same bits (the latter two
// take many rows or entries at a time in the assembly and
// give each one's bits of the one-row loop, so a caller may mix one-row
// and many-row calls). Prefetch's assembly (PREFETCHT0, on every amd64
// CPU) runs in every amd64 build without noasm; its twin does nothing. Code outside this package calls the kernels
// and never asks which implementation runs.
package f64
