//go:build !(linux || darwin || freebsd || netbsd)

package memlimit

// rlimits returns nothing where the limits are not read.
func rlimits() []rlimit { return nil }
