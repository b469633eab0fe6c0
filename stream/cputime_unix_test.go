//go:build unix

package stream

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) the process has used:
// on the shared machines the benchmarks run on, a steadier measure of the
// work than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
