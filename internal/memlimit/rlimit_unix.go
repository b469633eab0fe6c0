//go:build linux || darwin || freebsd || netbsd

package memlimit

import (
	"math"
	"syscall"
)

// rlimits returns the soft address-space and data size limits.
func rlimits() []rlimit {
	var out []rlimit
	for _, r := range []struct {
		res  int
		name string
	}{{syscall.RLIMIT_AS, "address-space limit (ulimit -v)"}, {syscall.RLIMIT_DATA, "data size limit (ulimit -d)"}} {
		var rl syscall.Rlimit
		if syscall.Getrlimit(r.res, &rl) == nil && rl.Cur < math.MaxInt64 {
			out = append(out, rlimit{int64(rl.Cur), r.name})
		}
	}
	return out
}
