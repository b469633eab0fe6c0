package blas

import (
	"fmt"
	"strings"
	"sync"

	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	gonumblas "gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/lapack"
	gonumlapack "gonum.org/v1/gonum/lapack/gonum"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// Backend names accepted by Use.
const (
	Gonum    = "gonum"
	OpenBLAS = "openblas"
	Auto     = "auto"
)

// native holds the cgo implementations when the binary is built with the
// openblas tag; they are nil otherwise.
var (
	nativeBLAS    gblas.Float64
	nativeLAPACK  lapack.Float64
	nativeThreads func(int)
)

var (
	mu      sync.Mutex
	current = Gonum
)

// init selects the default backend: auto when OpenBLAS is compiled in,
// else gonum. The package reads no environment; a program chooses another
// backend with Use.
func init() {
	if nativeBLAS != nil {
		_ = Use(Auto)
	}
}

// Available lists the backends compiled into this binary, in the order
// gonum, openblas, auto. Without the openblas build tag it is just gonum.
func Available() []string {
	if nativeBLAS == nil {
		return []string{Gonum}
	}
	return []string{Gonum, OpenBLAS, Auto}
}

// HasOpenBLAS reports whether OpenBLAS is compiled into this binary.
func HasOpenBLAS() bool { return nativeBLAS != nil }

// Backend returns the name of the backend in use.
func Backend() string {
	mu.Lock()
	defer mu.Unlock()
	return current
}

// Use selects the backend by name ("gonum", "openblas" or "auto"). It returns
// an error, and changes nothing, for an unknown name or for a backend that is
// not compiled into this binary.
//
// Use replaces the implementations behind gonum's blas64 and lapack64
// packages for the whole process. Call it at start-up, not while other
// goroutines are computing.
func Use(name string) error {
	mu.Lock()
	defer mu.Unlock()
	var (
		b gblas.Float64
		l lapack.Float64
	)
	switch strings.ToLower(name) {
	case Gonum:
		b, l = gonumblas.Implementation{}, gonumlapack.Implementation{}
	case OpenBLAS:
		if nativeBLAS == nil {
			return fmt.Errorf("blas: backend %q is not compiled in (build with -tags openblas)", name)
		}
		b, l = nativeBLAS, nativeLAPACK
	case Auto:
		if nativeBLAS == nil {
			// Without OpenBLAS, auto has only one choice.
			b, l = gonumblas.Implementation{}, gonumlapack.Implementation{}
		} else {
			b, l = router{native: nativeBLAS}, lapackRouter{native: nativeLAPACK}
		}
	default:
		return fmt.Errorf("blas: unknown backend %q (want gonum, openblas or auto)", name)
	}
	blas64.Use(b)
	lapack64.Use(l)
	current = strings.ToLower(name)
	return nil
}

// SetThreads sets the number of threads OpenBLAS may use (n ≥ 1). It is a
// no-op without OpenBLAS. The pure-Go backend is single-threaded per call.
//
// With n = 1 it also stops OpenBLAS's pool of worker threads, which the
// library starts when it is loaded: after start-up and after each threaded
// call they poll for work for a while (OpenBLAS 0.3.21: about 2²⁸ cycles,
// a tenth of a second or more), taking a core from the goroutines of a
// program that parallelises itself. A later SetThreads(n > 1) lets OpenBLAS
// start the pool again when a call wants it.
func SetThreads(n int) {
	if n < 1 {
		n = 1
	}
	if nativeThreads != nil {
		nativeThreads(n)
	}
}

// Impl returns the BLAS implementation for the named backend, for tests and
// benchmarks that compare backends side by side without switching the
// process-wide choice. ok is false when the backend is not compiled in.
func Impl(name string) (impl gblas.Float64, ok bool) {
	switch name {
	case Gonum:
		return gonumblas.Implementation{}, true
	case OpenBLAS:
		return nativeBLAS, nativeBLAS != nil
	case Auto:
		if nativeBLAS == nil {
			return gonumblas.Implementation{}, true
		}
		return router{native: nativeBLAS}, true
	}
	return nil, false
}

// LAPACKImpl is Impl for LAPACK.
func LAPACKImpl(name string) (impl lapack.Float64, ok bool) {
	switch name {
	case Gonum:
		return gonumlapack.Implementation{}, true
	case OpenBLAS:
		return nativeLAPACK, nativeLAPACK != nil
	case Auto:
		if nativeLAPACK == nil {
			return gonumlapack.Implementation{}, true
		}
		return lapackRouter{native: nativeLAPACK}, true
	}
	return nil, false
}
