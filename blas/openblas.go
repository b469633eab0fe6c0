//go:build openblas && cgo

package blas

/*
#cgo pkg-config: openblas lapacke
void openblas_set_num_threads(int);

// blas_thread_shutdown_ stops OpenBLAS's pool of worker threads (threaded
// builds; weak, so that a build without it still links). The pool is
// started again on demand by a call that wants more than one thread.
extern int blas_thread_shutdown_(void) __attribute__((weak));

static void ndpp_openblas_threads(int n) {
	openblas_set_num_threads(n);
	if (n == 1 && blas_thread_shutdown_) {
		blas_thread_shutdown_();
	}
}
*/
import "C"

import (
	netblas "gonum.org/v1/netlib/blas/netlib"
	netlapack "gonum.org/v1/netlib/lapack/netlib"
)

// Registered during package variable initialisation, which precedes every
// init function, so the backend choice in blas.go's init sees it.
var _ = func() bool {
	nativeBLAS = netblas.Implementation{}
	nativeLAPACK = netlapack.Implementation{}
	nativeThreads = func(n int) { C.ndpp_openblas_threads(C.int(n)) }
	return true
}()
