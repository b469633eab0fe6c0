//go:build linux

package items

import (
	"os"

	"golang.org/x/sys/unix"
)

// GrowPipe asks the system to give the pipe f reads from (or writes to) a
// buffer of size bytes, so that the process at its other end can run up to
// that far ahead instead of the default 64 KiB: a reader that decodes and
// scores in one goroutine then waits less for its writer. It reports
// whether the buffer was set; nothing changes when f is not a pipe, on
// other systems, or when size exceeds what the system allows an
// unprivileged process (/proc/sys/fs/pipe-max-size, 1 MiB by default).
func GrowPipe(f *os.File, size int) bool {
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		return false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { _, ferr = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, size) }); err != nil {
		return false
	}
	return ferr == nil
}
