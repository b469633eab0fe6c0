//go:build openblas && cgo && linux

package blas

import (
	"syscall"
	"testing"
	"time"

	gblas "gonum.org/v1/gonum/blas"
)

// cpuTime returns the process's user + system CPU time so far.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestSetThreadsOneStopsThePool checks that SetThreads(1) leaves no
// OpenBLAS worker thread polling for work: right after a threaded product
// (whose workers would otherwise poll for about 2²⁸ cycles, a tenth of a
// second or more), the process stays idle while it sleeps.
func TestSetThreadsOneStopsThePool(t *testing.T) {
	impl, ok := Impl(OpenBLAS)
	if !ok {
		t.Skip("OpenBLAS not compiled in")
	}
	defer SetThreads(1)
	const n = 400
	a, b, c := make([]float64, n*n), make([]float64, n*n), make([]float64, n*n)
	for i := range a {
		a[i], b[i] = float64(i%7), float64(i%5)
	}
	for round := 0; round < 3; round++ {
		SetThreads(2)
		impl.Dgemm(gblas.NoTrans, gblas.NoTrans, n, n, n, 1, a, n, b, n, 0, c, n)
		SetThreads(1)
		before := cpuTime(t)
		time.Sleep(200 * time.Millisecond)
		if used := cpuTime(t) - before; used > 40*time.Millisecond {
			t.Fatalf("round %d: %v of CPU time used while sleeping 200ms after SetThreads(1): OpenBLAS threads still polling", round, used)
		}
	}
}
