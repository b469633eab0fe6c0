//go:build unix

package ndpptest

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// FIFO makes a named pipe in a private temporary directory and reads it
// on a goroutine until the writer closes it; the bytes read arrive on the
// channel (nil if the pipe could not be opened). The machine's own
// devices are never touched.
func FIFO(t testing.TB) (path string, read <-chan []byte) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "pipe")
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	ch := make(chan []byte, 1)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			ch <- nil
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		ch <- b
	}()
	return path, ch
}

// NullDevice makes a private character device with /dev/null's numbers
// (1, 3) in a temporary directory, or skips the test when the process may
// not (not root). The machine's own /dev is never touched.
func NullDevice(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making a device node needs root")
	}
	path := filepath.Join(t.TempDir(), "null")
	if err := unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Skipf("mknod: %v", err)
	}
	return path
}

// ReleaseFIFO lets a reader that FIFO started and that still waits for a
// writer (the code under test never opened the pipe) end: it opens the
// pipe for writing without blocking and closes it at once, so that the
// reader reads end of file. Without a waiting reader it does nothing.
func ReleaseFIFO(path string) {
	if f, err := os.OpenFile(path, os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
}

// Socket makes a listening Unix domain socket in a private temporary
// directory (closed when the test ends) and returns its path.
func Socket(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatalf("listen on a Unix socket: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	return path
}
