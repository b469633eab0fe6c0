// Package blas selects the BLAS and LAPACK implementation that the rest of
// ndpp runs on.
//
// Every numeric routine in ndpp calls gonum's blas64, lapack64 and mat
// packages. This package decides which implementation stands behind them:
//
//   - "gonum": gonum's pure-Go BLAS and LAPACK. Always compiled; the only
//     choice in a binary built without the openblas tag.
//   - "openblas": OpenBLAS and LAPACKE through gonum.org/v1/netlib (cgo).
//     Compiled in with the build tag openblas (go build -tags openblas);
//     link flags come from pkg-config (packages openblas and lapacke) or
//     CGO_LDFLAGS.
//   - "auto": each call goes to the backend that is faster for its size.
//     Level-3 calls (GEMM, SYRK, TRSM) above a tiny size go to OpenBLAS,
//     level-1/2 calls and small factorisations stay in pure Go, because a
//     cgo call costs tens of nanoseconds and gonum's netlib LAPACK wrapper
//     copies its operands. The cut-offs live in crossover.go and are
//     measured by the benchmarks in this package. auto is the default when
//     OpenBLAS is compiled in.
//
// The backend is chosen with Use (the package reads no environment;
// ndpp's commands take NDPP_BLAS as the default of --backend). Switching replaces process-wide
// state (blas64.Use, lapack64.Use): it is not safe for concurrent use with
// running computations. Choose the backend once at start-up.
//
// OpenBLAS spawns one thread per core by default, and its idle workers poll
// for work for a while after each threaded call (and after start-up). Code
// that parallelises across goroutines should call SetThreads(1), which also
// stops them (ndpp-bench does).
//
// Gemm is blas64's Dgemm through the backend in use, except that small
// products on the pure-Go backend run in a Go kernel (the cut-off is in
// crossover.go); algorithm code calls it for its matrix–matrix products
// instead of choosing a path by backend itself.
//
// The conformance suite in this package runs the same numeric checks through
// every available backend.
package blas
