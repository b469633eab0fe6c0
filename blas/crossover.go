package blas

// Size cut-offs for the auto backend: at or above each value the call goes to
// OpenBLAS, below it stays in pure Go. They are the one place where routing
// decisions live. Measured on the project's 2-core machines with
// `go test -tags openblas -bench . ./blas` (see BenchmarkDgemm,
// BenchmarkDgemv, BenchmarkDdot, BenchmarkLU, BenchmarkCholesky) and
// docs/blas.md in the repository; re-measure on new hardware.
const (
	// GemmMinFlops: Dgemm/Dsyrk/Dtrsm/Dsymm with m·n·k (or n·n·k) at least
	// this go native. Measured: OpenBLAS is 2x faster from n = 4, 5.6x at 8,
	// 9-13x at 16-64, 4-10x above.
	GemmMinFlops = 4 * 4 * 4
	// GemvMinSize: Dgemv/Dger with m·n at least this go native. Measured:
	// gonum wins 4x at n = 8 and 1.2x at n = 128, OpenBLAS 3.3x at n = 512.
	GemvMinSize = 256 * 256
	// Level1MinLen: Ddot/Daxpy/Dscal/Dnrm2 of at least this length go native
	// (the cgo call costs ~70 ns: gonum's SIMD Ddot wins 5x at n = 8, they
	// are level at 256, OpenBLAS wins 1.7x at 512 and 2-2.7x above).
	Level1MinLen = 512
	// GetrfMinN and PotrfMinN: LU and Cholesky factorisations of order at
	// least this go to LAPACKE. Measured up to n = 512, gonum's blocked
	// LAPACK with its level-3 calls routed to OpenBLAS beats LAPACKE through
	// netlib's wrapper (which copies and transposes every operand) at every
	// size: 1.1-2x for LU, 1.3-3x for Cholesky. So auto keeps the
	// factorisations in gonum's LAPACK (over OpenBLAS level 3); the cut-offs
	// stay here, set beyond any size ndpp factorises, for re-measurement on
	// other machines.
	GetrfMinN = 1 << 20
	PotrfMinN = 1 << 20
	// GemmGoMaxNK: on the pure-Go backend, Gemm products C = A·op(B)
	// whose op(B) has at most this many entries (n·k) run in Gemm's Go
	// kernel; larger ones go to gonum's Dgemm (see BenchmarkGemm).
	GemmGoMaxNK = 512
)

// Routine kinds for AutoChoice.
const (
	KindGemm   = "gemm"   // size n: an n×n×n product (also SYRK, TRSM)
	KindGemv   = "gemv"   // size n: an n×n matrix times a vector
	KindLevel1 = "level1" // size n: vectors of length n
	KindGetrf  = "getrf"  // size n: LU of an n×n matrix
	KindPotrf  = "potrf"  // size n: Cholesky of an n×n matrix
)

// AutoChoice reports the backend the auto router sends a routine of the
// given kind and size to: "openblas" or "gonum" (always "gonum" without
// OpenBLAS compiled in, and for unknown kinds).
func AutoChoice(kind string, n int) string {
	if nativeBLAS == nil {
		return Gonum
	}
	native := false
	switch kind {
	case KindGemm:
		native = n*n*n >= GemmMinFlops
	case KindGemv:
		native = n*n >= GemvMinSize
	case KindLevel1:
		native = n >= Level1MinLen
	case KindGetrf:
		native = n >= GetrfMinN
	case KindPotrf:
		native = n >= PotrfMinN
	}
	if native {
		return OpenBLAS
	}
	return Gonum
}
