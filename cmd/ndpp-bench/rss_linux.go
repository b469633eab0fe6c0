//go:build linux

package main

import "syscall"

// peakRSS returns the process's peak resident set size in bytes
// (getrusage(RUSAGE_SELF).ru_maxrss, which Linux gives in KiB).
func peakRSS() (bytes int64, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil || ru.Maxrss <= 0 {
		return 0, false
	}
	return int64(ru.Maxrss) * 1024, true
}
