package atomicfile

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Write replaces the file at path with the bytes produced by write, so that
// readers see either the old file or the complete new one, never a partial
// write.
//
// The data goes to a temporary file in the same directory (so that the final
// rename does not cross file systems), through a 64 KiB buffer that is
// flushed and fsynced before the temporary file is renamed over path; the
// directory is then synced (best effort) so the rename itself is durable. If
// write returns an error or panics, or any step fails, the temporary file is
// removed and the file at path is left untouched. An existing file's
// permission bits are kept; a new file gets 0644.
//
// Errors are *fs.PathError values with Op "write" and the path, wrapping the
// cause (write's own error included), in the style of package os. A nil
// write is a programmer error and panics.
func Write(path string, write func(w io.Writer) error) (err error) {
	if write == nil {
		panic("atomicfile: Write of " + path + " with a nil write function")
	}
	fail := func(err error) error { return &fs.PathError{Op: "write", Path: path, Err: err} }
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if base == "" {
		return fail(errors.New("not a file name"))
	}
	perm := fs.FileMode(0o644)
	if st, statErr := os.Stat(path); statErr == nil {
		if st.IsDir() {
			return fail(syscall.EISDIR)
		}
		perm = st.Mode().Perm()
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fail(err)
	}
	tmp := f.Name()
	done := false
	defer func() {
		// Runs on errors and on panics in write: never leave the
		// temporary file behind.
		if !done {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<16)
	if err := write(bw); err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	if err := f.Chmod(perm); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	done = true
	// Make the rename durable. Not every platform can sync a directory;
	// the data itself is already on disk, so failures here are ignored.
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
