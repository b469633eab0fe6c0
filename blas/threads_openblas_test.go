//go:build openblas && cgo && linux

package blas

import (
	"os"
	"runtime"
	"runtime/pprof"
	"testing"

	gblas "gonum.org/v1/gonum/blas"
)

// foreignThreads returns the number of the process's OS threads (in
// /proc/self/task) minus the number of threads of the Go runtime (the
// threadcreate profile's count, which may include threads prepared for
// cgo callbacks without an OS thread yet, so only differences count): it
// changes by the number of OpenBLAS's worker threads started or stopped.
// The two are read until the runtime's count is the same before and after
// the listing.
func foreignThreads(t *testing.T) int {
	t.Helper()
	goThreads := pprof.Lookup("threadcreate")
	for {
		before := goThreads.Count()
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Fatal(err)
		}
		if after := goThreads.Count(); after == before {
			return len(tasks) - after
		}
	}
}

// TestSetThreadsOneStopsThePool checks that SetThreads(1) leaves no
// OpenBLAS worker thread (which would otherwise poll for work for a while
// after each threaded call, taking a core from the goroutines): each round
// starts the pool with a threaded product, and SetThreads(1) must bring the
// number of threads the Go runtime did not create down, to the same number
// every round.
func TestSetThreadsOneStopsThePool(t *testing.T) {
	impl, ok := Impl(OpenBLAS)
	if !ok {
		t.Skip("OpenBLAS not compiled in")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: OpenBLAS starts no worker threads")
	}
	defer SetThreads(1)
	const n = 400
	a, b, c := make([]float64, n*n), make([]float64, n*n), make([]float64, n*n)
	for i := range a {
		a[i], b[i] = float64(i%7), float64(i%5)
	}
	stopped, first := 0, true // foreignThreads after the first SetThreads(1)
	for round := range 3 {
		SetThreads(2)
		impl.Dgemm(gblas.NoTrans, gblas.NoTrans, n, n, n, 1, a, n, b, n, 0, c, n)
		started := foreignThreads(t)
		SetThreads(1)
		// The workers are joined before SetThreads returns, but a joined
		// thread may still be listed for an instant while the kernel
		// releases it.
		left := foreignThreads(t)
		for try := 0; (left >= started || !first && left != stopped) && try < 10000; try++ {
			runtime.Gosched()
			left = foreignThreads(t)
		}
		if left >= started {
			t.Fatalf("round %d: SetThreads(1) stopped no thread (foreignThreads %d before and after): OpenBLAS workers still running", round, started)
		}
		if !first && left != stopped {
			t.Fatalf("round %d: foreignThreads %d after SetThreads(1), %d after the first round's", round, left, stopped)
		}
		stopped, first = left, false
	}
}
